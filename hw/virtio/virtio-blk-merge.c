/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * virtio-blk: adjacent requests of one queue pass run as one host request.
 *
 * A guest that reads or writes sequentially at a deep queue hands the
 * device runs of small requests, each starting where the one before ended.
 * One blk_pwritev of a whole run costs one hand-off to a worker and one
 * system call instead of one of each per request (QEMU's virtio-blk merges
 * the same way; issue 39, docs/benchmarks.md "Disks").
 *
 * What merges (virtio_blk_run_add): IN after IN and OUT after OUT, with
 * equal flags (a FUA write never rides with a cached one), each starting
 * at the byte where the run ends, within VIRTIO_BLK_MERGE_MAX_IOV and
 * _BYTES. In the order they arrived, unsorted: a guest's block layer
 * already hands its requests over in ascending order within a plug, so a
 * sort would rarely find more, and the pass keeps one run instead of a
 * list. Requests answered at once (a bad sector, GET_ID) do not end a run:
 * they touch no storage.
 *
 * Order: FLUSH, DISCARD and WRITE_ZEROES never merge; one ends the run
 * before it, which goes to a worker first. So requests reach the workers
 * in the order they arrived, as without merging. That is all the device
 * ever promised: workers run in parallel, a FLUSH may run while writes
 * submitted before it still run, and a driver waits for the writes a flush
 * must cover to complete before it sends the flush.
 *
 * Failure: when the host request fails, each member runs again alone
 * (virtio_blk_run_one), so each gets its own status and its own
 * werror/rerror action: a bad range fails only the requests on it, and
 * werror=stop holds exactly those, one by one, as it would unmerged (and
 * retries them alone). A read that failed may have filled part of the
 * buffers; the retry fills them again.
 *
 * Accounting: the block layer counts the host request (one operation, all
 * the bytes); blk_account_merged() adds the members merged into it, so
 * query-blockstats counts guest requests and their rd_merged/wr_merged as
 * QEMU does. A failed merged attempt stays counted as the one failed host
 * request it was; the members' retries are counted each.
 */
#include "qemu/osdep.h"
#include "virtio-blk-int.h"
#include <linux/virtio_blk.h>

static bool virtio_blk_is_data(const VirtIOBlockReq *r)
{
    return r->type == VIRTIO_BLK_T_IN || r->type == VIRTIO_BLK_T_OUT;
}

static bool virtio_blk_run_extends(const VirtIOBlkRun *run, const VirtIOBlockReq *r)
{
    const VirtIOBlockReq *tail = run->tail;

    return r->type == tail->type && r->flags == tail->flags &&
           r->offset == tail->offset + tail->bytes &&
           run->niov + r->niov <= VIRTIO_BLK_MERGE_MAX_IOV &&
           run->bytes + r->bytes <= VIRTIO_BLK_MERGE_MAX_BYTES;
}

void virtio_blk_run_add(VirtIOBlock *b, VirtIOBlkRun *run, VirtIOBlockReq *r)
{
    bool data = virtio_blk_is_data(r);

    if (run->head && !(data && virtio_blk_run_extends(run, r))) {
        virtio_blk_run_submit(b, run);
    }
    if (!data) {
        run->ops->submit(b, r);
        return;
    }
    if (run->head) {
        run->tail->merged_next = r;
    } else {
        run->head = r;
    }
    run->tail = r;
    run->n++;
    run->niov += r->niov;
    run->bytes += r->bytes;
}

void virtio_blk_run_submit(VirtIOBlock *b, VirtIOBlkRun *run)
{
    if (run->head) {
        run->ops->submit(b, run->head);
    }
    *run = (VirtIOBlkRun) { .ops = run->ops };
}

/* ---- Workers ---- */

void virtio_blk_run_merged(VirtIOBlock *b, VirtIOBlockReq *head, const VirtIOBlkJobOps *ops)
{
    bool is_read = head->type == VIRTIO_BLK_T_IN;
    unsigned int qidx = head->vq->index;
    g_autofree struct iovec *iov = NULL;
    VirtIOBlockReq *m, *next;
    unsigned int n = 0;
    int niov = 0;
    int64_t t0;
    uint64_t ns;
    int ret;

    for (m = head; m; m = m->merged_next) {
        niov += m->niov;
    }
    iov = g_new(struct iovec, MAX(niov, 1));
    niov = 0;
    for (m = head; m; m = m->merged_next) {
        memcpy(iov + niov, m->iov, m->niov * sizeof(*iov));
        niov += m->niov;
        n++;
    }
    t0 = get_clock_ns();
    ret = is_read ? blk_preadv(b->blk, head->offset, iov, niov)
                  : blk_pwritev(b->blk, head->offset, iov, niov, head->flags);
    ns = get_clock_ns() - t0;
    if (ret < 0) {
        /* Each alone: its own status and error action (see the top). */
        for (m = head; m; m = next) {
            next = m->merged_next;
            m->merged_next = NULL;
            ops->run_one(b, m);
        }
        return;
    }
    /* Each member waited for the whole host request. */
    blk_account_merged(b->blk, is_read ? BLOCK_ACCT_READ : BLOCK_ACCT_WRITE, n - 1,
                       (n - 1) * ns);
    __atomic_fetch_add(is_read ? &b->reads : &b->writes, n, __ATOMIC_RELAXED);
    virtio_blk_lock(b);
    for (m = head; m; m = next) {
        next = m->merged_next;
        m->merged_next = NULL;
        m->in_written = is_read ? m->bytes : 0;
        m->status = VIRTIO_BLK_S_OK;
        g_queue_push_tail(&b->done, m);
    }
    virtio_blk_unlock(b);
    /* After the unlock the members may be gone (pushed, freed): only locals from here. */
    virtio_queue_kick(&b->vdev, qidx);
}

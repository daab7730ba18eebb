/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What virtio-blk.c (requests one by one: check, run, complete) shares
 * with virtio-blk-merge.c (adjacent requests of one queue pass run as one
 * host request):
 *
 *   device thread   virtio_blk_queue_notify(): each request that needs I/O
 *                   goes to virtio_blk_run_add() with the pass's run; the
 *                   run goes to a worker (virtio_blk_run_submit) when the
 *                   next request does not extend it, when it is full, and
 *                   at the end of the pass
 *   worker          virtio_blk_worker_run(): a request with merged_next set
 *                   leads a merged job (virtio_blk_run_merged), else
 *                   virtio_blk_run_one()
 *
 * A run is a local of one pass, never left over when the pass returns:
 * so every popped request is in a worker's queue (alone or behind the
 * head of its merged job), the done list or the held list once the device
 * thread is joined, and the stop hook's drain (wait for the workers) still
 * leaves no request in flight.
 */
#ifndef HW_VIRTIO_VIRTIO_BLK_INT_H
#define HW_VIRTIO_VIRTIO_BLK_INT_H

#include "qemu/tsan.h"
#include "hw/virtio/virtio-blk.h"

/*
 * A merged job's bounds. IOV_MAX segments: what one preadv/pwritev takes
 * (the file driver would split a longer iovec into several calls). 1 MiB:
 * the merge is there to share one call's cost among many small requests,
 * and 256 of 4 KiB per call already make that cost small next to the
 * copy; every member waits for the whole job, so a larger job only adds
 * latency to its first members and holds one worker longer while the
 * others idle. QEMU bounds it by the drive's max_transfer, which our
 * block layer does not have.
 */
#define VIRTIO_BLK_MERGE_MAX_IOV        1024
#define VIRTIO_BLK_MERGE_MAX_BYTES      (1024 * 1024)

#define VIRTIO_BLK_HDR_LEN      16      /* type (le32), ioprio (le32), sector (le64) */

struct VirtIOBlockReq {
    VirtIOBlock *b;
    VirtQueue *vq;
    VirtQueueElement *elem;
    uint32_t type;
    uint64_t offset;            /* bytes, checked against the capacity */
    uint64_t bytes;
    uint32_t flags;             /* BDRV_REQ_*: FUA (writethrough), MAY_UNMAP */
    struct iovec *iov;          /* the data part of the chain (IN, OUT) */
    int niov;
    uint32_t in_written;        /* data bytes written into the chain's in_sg */
    uint8_t status;             /* VIRTIO_BLK_S_* */
    /*
     * The next member of the merged job this request leads or belongs to,
     * or NULL (the last, or a request alone). Set by the device thread
     * before the head is submitted, then the worker's that runs the head;
     * NULL again before a member reaches the done or held list.
     */
    VirtIOBlockReq *merged_next;
};

/*
 * What the device (virtio-blk.c) does with a job, handed down to the
 * merging (virtio-blk-merge.c), which never calls up into the device.
 */
typedef struct VirtIOBlkJobOps {
    /* Device thread: @r to a worker, alone (or as a merged job's head). */
    void (*submit)(VirtIOBlock *b, VirtIOBlockReq *r);
    /* Worker: @r alone, its own werror/rerror decision, then done or held. */
    void (*run_one)(VirtIOBlock *b, VirtIOBlockReq *r);
} VirtIOBlkJobOps;

/* The run being gathered by one pass of the device thread (its local). */
typedef struct VirtIOBlkRun {
    const VirtIOBlkJobOps *ops;         /* fixed for the run's life */
    VirtIOBlockReq *head, *tail;        /* linked by merged_next; NULL: empty */
    unsigned int n;                     /* members */
    unsigned int niov;                  /* their iovecs, together */
    uint64_t bytes;                     /* their data, together */
} VirtIOBlkRun;

static inline void virtio_blk_lock(VirtIOBlock *b)
{
    tsan_g_mutex_lock(&b->lock);
}

static inline void virtio_blk_unlock(VirtIOBlock *b)
{
    tsan_g_mutex_unlock(&b->lock);
}

/* A chain a migration brought in flight (VirtIOBlock.loaded). */
typedef struct VirtIOBlkLoaded {
    VirtQueue *vq;
    VirtQueueElement *elem;
} VirtIOBlkLoaded;

/* Any thread: a request leaves the device (in_flight counted down). */
static inline void virtio_blk_req_free(VirtIOBlockReq *r)
{
    __atomic_fetch_sub(&r->b->in_flight, 1, __ATOMIC_RELEASE);
    g_free(r->iov);
    g_free(r->elem);
    g_free(r);
}

/*
 * virtio-blk-held.c. Device thread: the loaded chains (VirtIOBlkLoaded,
 * the caller's), to be handled before any popped one.
 */
GQueue virtio_blk_loaded_take(VirtIOBlock *b);
/* BQL, device thread stopped: drops the loaded chains (a reset: they are the old driver's). */
void virtio_blk_loaded_free_all(VirtIOBlock *b);

/* virtio-blk-merge.c. Device thread: @r needs I/O; it joins @run or opens the next one. */
void virtio_blk_run_add(VirtIOBlock *b, VirtIOBlkRun *run, VirtIOBlockReq *r);
/* Device thread: @run to a worker (one job), and empty again. */
void virtio_blk_run_submit(VirtIOBlock *b, VirtIOBlkRun *run);
/* Worker: the merged job led by @head (@ops->run_one for each member if it fails). */
void virtio_blk_run_merged(VirtIOBlock *b, VirtIOBlockReq *head, const VirtIOBlkJobOps *ops);

#endif

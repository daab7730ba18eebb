/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * virtio-blk: the data path and the control plane. See
 * include/hw/virtio/virtio-blk.h for the picture, docs/devel/virtio.md
 * ("virtio-blk") for the reasoning; options and creation are in
 * virtio-blk-conf.c.
 *
 * Who runs what:
 *   device thread   virtio_blk_queue_notify(): pushes what the workers
 *                   finished, pops and checks new chains, hands each
 *                   request to a worker, adjacent ones merged into one job
 *                   (virtio-blk-merge.c), or answers it at once (a bad
 *                   sector, an unsupported type, GET_ID)
 *   workers         virtio_blk_worker_run(): one blocking blk_* call
 *   main loop (BQL) virtio_blk_doorbell() (error actions), start, stop
 *                   (the drain), reset, config reads, migration
 * b->lock guards the done, held and events lists; it is a leaf: nothing is
 * taken and no call that blocks is made while it is held.
 *
 * The invariant that makes a saved state complete: once the stop hook has
 * returned, no worker touches guest RAM and every finished request is in
 * the used ring (or was dropped because the driver reset the device), so
 * the RAM and the ring indices the migration sends say everything; only
 * requests held for a retry (werror=stop) are left, and the device state
 * carries them (virtio-blk-held.c).
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "virtio-blk-int.h"
#include <glib-unix.h>
#include <sys/eventfd.h>
#include <linux/virtio_ids.h>
#include <linux/virtio_config.h>
#include <linux/virtio_blk.h>

#define VIRTIO_BLK_SEG_LEN      16      /* discard/write zeroes: sector, num_sectors, flags */

/* An error action for the main loop (blk_error_action needs the BQL). */
typedef struct VirtIOBlkEvent {
    BlockErrorAction action;
    bool is_read;
    int err;
} VirtIOBlkEvent;

/*
 * The bytes of @src from @skip on, @len of them, as iovecs into @dst
 * (room for @n). The core checked every iovec against guest RAM.
 */
static int iov_slice(const struct iovec *src, unsigned int n, size_t skip, size_t len,
                     struct iovec *dst)
{
    int out = 0;

    for (unsigned int i = 0; i < n && len; i++) {
        size_t l = src[i].iov_len;

        if (skip >= l) {
            skip -= l;
            continue;
        }
        dst[out].iov_base = (uint8_t *)src[i].iov_base + skip;
        dst[out].iov_len = MIN(l - skip, len);
        len -= dst[out].iov_len;
        skip = 0;
        out++;
    }
    return out;
}

/* ---- Completion: the device thread, or the BQL holder while it is joined ---- */

/* The status byte is the chain's last writable byte; the used length counts it. */
static void virtio_blk_push(VirtIOBlockReq *r)
{
    virtqueue_elem_write(r->elem, r->elem->in_len - 1, &r->status, 1);
    virtqueue_push(r->vq, r->elem, r->in_written + 1);
}

/* Pushes every finished request; a bit per queue that got one in *@pushed. */
static void virtio_blk_complete_done(VirtIOBlock *b, uint32_t *pushed)
{
    for (;;) {
        VirtIOBlockReq *r;

        virtio_blk_lock(b);
        r = g_queue_pop_head(&b->done);
        virtio_blk_unlock(b);
        if (!r) {
            return;
        }
        virtio_blk_push(r);
        *pushed |= 1u << r->vq->index;
        virtio_blk_req_free(r);
    }
}

static void virtio_blk_notify_queues(VirtIOBlock *b, uint32_t pushed)
{
    for (unsigned int i = 0; pushed; i++, pushed >>= 1) {
        if (pushed & 1) {
            virtio_notify(&b->vdev, virtio_get_queue(&b->vdev, i));
        }
    }
}

/* ---- Workers ---- */

static void virtio_blk_ring_doorbell(VirtIOBlock *b)
{
    uint64_t one = 1;

    /* EAGAIN: the counter is full, and so the fd readable already. */
    while (write(b->doorbell_fd, &one, sizeof(one)) < 0 && errno == EINTR) {
    }
}

static bool virtio_blk_is_read(uint32_t type)
{
    return type == VIRTIO_BLK_T_IN;
}

/*
 * The blk_* call of @r. The block layer counts it for query-blockstats
 * (one host request, one operation): the device counts nothing there but
 * the requests it merged into another (virtio-blk-merge.c).
 */
static int virtio_blk_do(VirtIOBlockReq *r)
{
    BlockBackend *blk = r->b->blk;

    switch (r->type) {
    case VIRTIO_BLK_T_IN:
        r->in_written = r->bytes;
        return blk_preadv(blk, r->offset, r->iov, r->niov);
    case VIRTIO_BLK_T_OUT:
        return blk_pwritev(blk, r->offset, r->iov, r->niov, r->flags);
    case VIRTIO_BLK_T_FLUSH:
        return blk_flush(blk);
    case VIRTIO_BLK_T_DISCARD:
        return blk_pdiscard(blk, r->offset, r->bytes);
    case VIRTIO_BLK_T_WRITE_ZEROES:
        return blk_pwrite_zeroes(blk, r->offset, r->bytes, r->flags);
    default:
        g_assert_not_reached();
    }
}

/*
 * One request alone, in a worker. A failure goes through werror/rerror:
 * REPORT and IGNORE complete it (IOERR or OK) and tell the main loop for
 * the event; STOP keeps it for a retry when the VM runs again and has the
 * main loop stop the VM.
 */
static void virtio_blk_run_one(VirtIOBlock *b, VirtIOBlockReq *r)
{
    int ret = virtio_blk_do(r);
    bool is_read = virtio_blk_is_read(r->type);
    VirtIOBlkEvent *ev = NULL;
    unsigned int qidx = r->vq->index;
    bool held = false;

    __atomic_fetch_add(is_read ? &b->reads : r->type == VIRTIO_BLK_T_FLUSH ? &b->flushes
                                                                           : &b->writes,
                       1, __ATOMIC_RELAXED);
    r->status = VIRTIO_BLK_S_OK;
    if (ret < 0) {
        __atomic_fetch_add(&b->errors, 1, __ATOMIC_RELAXED);
        ev = g_new(VirtIOBlkEvent, 1);
        *ev = (VirtIOBlkEvent) {
            .action = blk_get_error_action(b->blk, is_read, -ret),
            .is_read = is_read,
            .err = -ret,
        };
        r->in_written = 0;
        r->status = ev->action == BLOCK_ERROR_ACTION_IGNORE ? VIRTIO_BLK_S_OK
                                                            : VIRTIO_BLK_S_IOERR;
    }
    held = ev && ev->action == BLOCK_ERROR_ACTION_STOP;
    virtio_blk_lock(b);
    if (ev) {
        g_queue_push_tail(&b->events, ev);
    }
    g_queue_push_tail(held ? &b->held : &b->done, r);
    virtio_blk_unlock(b);
    /* After the unlock @r and @ev may be gone (pushed, handled): only locals from here. */
    if (ev) {
        virtio_blk_ring_doorbell(b);
    }
    if (!held) {
        virtio_queue_kick(&b->vdev, qidx);
    }
}

static void virtio_blk_submit(VirtIOBlock *b, VirtIOBlockReq *r)
{
    worker_pool_submit(b->pool, b->next_worker++ % VIRTIO_BLK_WORKERS, r);
}

static const VirtIOBlkJobOps virtio_blk_job_ops = {
    .submit = virtio_blk_submit,
    .run_one = virtio_blk_run_one,
};

/* A job: a request alone, or the head of a merged job (virtio-blk-merge.c). */
static int virtio_blk_worker_run(void *opaque, int index, void *job, Error **errp)
{
    VirtIOBlock *b = opaque;
    VirtIOBlockReq *r = job;

    if (r->merged_next) {
        virtio_blk_run_merged(b, r, &virtio_blk_job_ops);
    } else {
        virtio_blk_run_one(b, r);
    }
    return 0;
}

static const WorkerPoolOps virtio_blk_pool_ops = {
    .run = virtio_blk_worker_run,
};

/* ---- Device thread: requests ---- */

/*
 * Writethrough, so every write is on storage at its completion, when the
 * driver cleared writeback (CONFIG_WCE) or never took VIRTIO_BLK_F_FLUSH:
 * such a driver has no way to make earlier writes durable, so it counts
 * on each one being so (QEMU's device runs writethrough for it too). A
 * writeback device under such a driver acknowledged writes that only
 * reached the host's cache, and the migration's handover then flushed
 * all of them inside the downtime (issue 39's disk benchmark: 646 ms).
 * guest_features is fixed while the device thread runs.
 */
static int virtio_blk_write_flags(VirtIOBlock *b)
{
    bool writeback = __atomic_load_n(&b->writeback, __ATOMIC_RELAXED) &&
                     virtio_has_feature(&b->vdev, VIRTIO_BLK_F_FLUSH);

    return writeback ? 0 : BDRV_REQ_FUA;
}

/* A checked range of whole logical blocks inside the disk, or false. */
static bool virtio_blk_range_ok(VirtIOBlock *b, uint64_t sector, uint64_t bytes)
{
    uint64_t capacity = __atomic_load_n(&b->capacity, __ATOMIC_RELAXED);
    uint32_t lbs = b->conf.logical_block_size;

    if (bytes % lbs || (sector * BDRV_SECTOR_SIZE) % lbs) {
        return false;
    }
    return sector <= capacity && bytes / BDRV_SECTOR_SIZE <= capacity - sector;
}

/* DISCARD and WRITE_ZEROES: one segment, as config's max_*_seg = 1 says. */
static uint8_t virtio_blk_parse_segment(VirtIOBlock *b, VirtIOBlockReq *r)
{
    VirtQueueElement *e = r->elem;
    uint8_t seg[VIRTIO_BLK_SEG_LEN];
    uint64_t sector;
    uint32_t num, flags;
    uint32_t allowed = r->type == VIRTIO_BLK_T_WRITE_ZEROES ? VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP
                                                            : 0;

    if (e->out_len - VIRTIO_BLK_HDR_LEN != VIRTIO_BLK_SEG_LEN) {
        /* None, several, or a torn one: more than max_*_seg is unsupported. */
        return VIRTIO_BLK_S_UNSUPP;
    }
    virtqueue_elem_read(e, VIRTIO_BLK_HDR_LEN, seg, sizeof(seg));
    memcpy(&sector, seg, 8);
    memcpy(&num, seg + 8, 4);
    memcpy(&flags, seg + 12, 4);
    sector = le64toh(sector);
    num = le32toh(num);
    flags = le32toh(flags);
    if (flags & ~allowed) {
        return VIRTIO_BLK_S_UNSUPP;
    }
    if (num > VIRTIO_BLK_MAX_DISCARD_SECTORS ||
        !virtio_blk_range_ok(b, sector, (uint64_t)num * BDRV_SECTOR_SIZE)) {
        return VIRTIO_BLK_S_IOERR;
    }
    r->offset = sector * BDRV_SECTOR_SIZE;
    r->bytes = (uint64_t)num * BDRV_SECTOR_SIZE;
    r->flags = (flags & VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP ? BDRV_REQ_MAY_UNMAP : 0) |
               virtio_blk_write_flags(b);
    return VIRTIO_BLK_S_OK;
}

/* GET_ID: the serial, up to 20 bytes, zero-padded to what the buffer holds. */
static void virtio_blk_get_id(VirtIOBlock *b, VirtIOBlockReq *r)
{
    char id[VIRTIO_BLK_ID_BYTES] = { 0 };
    size_t room = MIN(r->elem->in_len - 1, sizeof(id));

    if (b->conf.serial) {
        memcpy(id, b->conf.serial, MIN(strlen(b->conf.serial), sizeof(id)));
    }
    r->in_written = virtqueue_elem_write(r->elem, 0, id, room);
    r->status = VIRTIO_BLK_S_OK;
}

/*
 * Checks a chain and either answers it now (returns true, r->status set)
 * or prepares it for a worker (false). The chain is the guest's: only what
 * was read into @r once is used.
 */
static bool virtio_blk_prepare(VirtIOBlock *b, VirtIOBlockReq *r)
{
    VirtQueueElement *e = r->elem;
    uint8_t hdr[VIRTIO_BLK_HDR_LEN];
    uint64_t sector;
    size_t len;

    virtqueue_elem_read(e, 0, hdr, sizeof(hdr));
    memcpy(&r->type, hdr, 4);
    memcpy(&sector, hdr + 8, 8);
    r->type = le32toh(r->type);
    sector = le64toh(sector);
    r->status = VIRTIO_BLK_S_IOERR;
    switch (r->type) {
    case VIRTIO_BLK_T_IN:
    case VIRTIO_BLK_T_OUT:
        if (r->type == VIRTIO_BLK_T_IN) {
            len = e->in_len - 1;
            r->iov = g_new(struct iovec, MAX(e->in_num, 1));
            r->niov = iov_slice(e->in_sg, e->in_num, 0, len, r->iov);
        } else {
            len = e->out_len - VIRTIO_BLK_HDR_LEN;
            r->iov = g_new(struct iovec, MAX(e->out_num, 1));
            r->niov = iov_slice(e->out_sg, e->out_num, VIRTIO_BLK_HDR_LEN, len, r->iov);
        }
        if ((r->type == VIRTIO_BLK_T_OUT && b->read_only) ||
            !virtio_blk_range_ok(b, sector, len)) {
            return true;
        }
        r->offset = sector * BDRV_SECTOR_SIZE;
        r->bytes = len;
        r->flags = virtio_blk_write_flags(b);
        return false;
    case VIRTIO_BLK_T_FLUSH:
        return false;
    case VIRTIO_BLK_T_GET_ID:
        virtio_blk_get_id(b, r);
        return true;
    case VIRTIO_BLK_T_DISCARD:
    case VIRTIO_BLK_T_WRITE_ZEROES:
        r->status = virtio_blk_parse_segment(b, r);
        if (r->status == VIRTIO_BLK_S_OK && b->read_only) {
            r->status = VIRTIO_BLK_S_IOERR;
        }
        return r->status != VIRTIO_BLK_S_OK;
    default:
        r->status = VIRTIO_BLK_S_UNSUPP;
        return true;
    }
}

/*
 * One popped chain: answered now, or into @run (which may send the run
 * before it to a worker). A chain without room for the header or the
 * status byte is no request at all: the device is broken (virtio_error),
 * as the spec allows and QEMU does. Returns false then.
 */
static bool virtio_blk_handle(VirtIOBlock *b, VirtQueue *vq, VirtQueueElement *e,
                              VirtIOBlkRun *run, uint32_t *pushed)
{
    VirtIOBlockReq *r;

    if (e->out_len < VIRTIO_BLK_HDR_LEN || e->in_len < 1) {
        virtio_error(&b->vdev, "request of %zu bytes out and %zu in has no room for the "
                     "%d-byte header and the status byte", e->out_len, e->in_len,
                     VIRTIO_BLK_HDR_LEN);
        g_free(e);
        return false;
    }
    r = g_new0(VirtIOBlockReq, 1);
    r->b = b;
    r->vq = vq;
    r->elem = e;
    __atomic_fetch_add(&b->in_flight, 1, __ATOMIC_RELAXED);
    if (virtio_blk_prepare(b, r)) {
        virtio_blk_push(r);
        *pushed |= 1u << vq->index;
        virtio_blk_req_free(r);
        return true;
    }
    virtio_blk_run_add(b, run, r);
    return true;
}

static void virtio_blk_queue_notify(VirtIODevice *vdev, VirtQueue *vq)
{
    VirtIOBlock *b = container_of(vdev, VirtIOBlock, vdev);
    VirtIOBlkRun run = { .ops = &virtio_blk_job_ops };
    uint32_t pushed = 0;
    VirtIOBlkLoaded *ld;
    GQueue loaded;

    virtio_blk_complete_done(b, &pushed);
    /* Chains a migration brought in flight (once, as the thread starts): before new ones. */
    loaded = virtio_blk_loaded_take(b);
    while ((ld = g_queue_pop_head(&loaded))) {
        /* Checked at load as a pop checks a chain; the element is the handler's now. */
        virtio_blk_handle(b, ld->vq, ld->elem, &run, &pushed);
        g_free(ld);
    }
    /*
     * No kicks while we take chains; after, look once more for what came
     * meanwhile. What one pass takes may merge (virtio-blk-merge.c); the
     * pass sends its last run before it sleeps, so no request waits for a
     * kick that may never come.
     */
    do {
        VirtQueueElement *e;

        virtqueue_set_notification(vq, false);
        while ((e = virtqueue_pop(vq))) {
            if (!virtio_blk_handle(b, vq, e, &run, &pushed)) {
                goto out;       /* broken: every queue is stopped now */
            }
        }
        virtio_blk_run_submit(b, &run);
        virtqueue_set_notification(vq, true);
    } while (!virtqueue_empty(vq));
out:
    /* Popped before the break: run, as unmerged they would have been; the drain waits for them. */
    virtio_blk_run_submit(b, &run);
    virtio_blk_notify_queues(b, pushed);
}

/* ---- Main loop (BQL) ---- */

/* The doorbell: error actions the workers met (the event, and the VM stop for STOP). */
static gboolean virtio_blk_doorbell(gint fd, GIOCondition cond, gpointer opaque)
{
    VirtIOBlock *b = opaque;
    uint64_t cnt;

    while (read(fd, &cnt, sizeof(cnt)) < 0 && errno == EINTR) {
    }
    for (;;) {
        g_autofree VirtIOBlkEvent *ev = NULL;

        virtio_blk_lock(b);
        ev = g_queue_pop_head(&b->events);
        virtio_blk_unlock(b);
        if (!ev) {
            break;
        }
        blk_error_action(b->blk, ev->action, ev->is_read, ev->err);
    }
    return G_SOURCE_CONTINUE;
}

/* ---- Control plane (BQL, device thread not running) ---- */

static void virtio_blk_refresh_capacity(VirtIOBlock *b)
{
    int64_t len = blk_getlength(b->blk);

    if (len >= 0) {
        __atomic_store_n(&b->capacity, (uint64_t)len / BDRV_SECTOR_SIZE, __ATOMIC_RELAXED);
    }
}

/* struct virtio_blk_config, as QEMU fills it (docs/devel/virtio.md). */
void virtio_blk_mig_config(VirtIODevice *vdev, uint8_t *config)
{
    VirtIOBlock *b = container_of(vdev, VirtIOBlock, vdev);
    uint32_t lbs = b->conf.logical_block_size;

    virtio_blk_refresh_capacity(b);
    memset(config, 0, VIRTIO_BLK_CONFIG_SIZE);
    stq_le_p(config + 0, __atomic_load_n(&b->capacity, __ATOMIC_RELAXED));
    uint64_t cyls = __atomic_load_n(&b->capacity, __ATOMIC_RELAXED) /
                    (VIRTIO_BLK_HEADS * VIRTIO_BLK_SECS);

    stl_le_p(config + 12, VIRTIO_BLK_SEG_MAX);                  /* seg_max */
    /* geometry: what QEMU guesses for a raw disk of no partition table */
    stw_le_p(config + 16, MIN(cyls, VIRTIO_BLK_MAX_CYLS));
    config[18] = VIRTIO_BLK_HEADS;
    config[19] = VIRTIO_BLK_SECS;
    stl_le_p(config + 20, lbs);                                  /* blk_size */
    config[24] = (uint8_t)(__builtin_ctz(b->conf.physical_block_size) - __builtin_ctz(lbs));
    config[32] = __atomic_load_n(&b->writeback, __ATOMIC_RELAXED);       /* writeback */
    stw_le_p(config + 34, b->conf.num_queues);
    stl_le_p(config + 36, VIRTIO_BLK_MAX_DISCARD_SECTORS);
    stl_le_p(config + 40, 1);                                    /* max_discard_seg */
    stl_le_p(config + 44, lbs / BDRV_SECTOR_SIZE);               /* discard_sector_alignment */
    stl_le_p(config + 48, VIRTIO_BLK_MAX_DISCARD_SECTORS);       /* max_write_zeroes_sectors */
    stl_le_p(config + 52, 1);                                    /* max_write_zeroes_seg */
    config[56] = 1;                                              /* write_zeroes_may_unmap */
}

static void virtio_blk_get_config(VirtIODevice *vdev, uint8_t *config)
{
    virtio_blk_mig_config(vdev, config);
}

/* Only writeback is the driver's to change (CONFIG_WCE); the rest is read-only. */
static void virtio_blk_set_config(VirtIODevice *vdev, const uint8_t *config)
{
    virtio_blk_mig_set_writeback(vdev, config[32] != 0);
}

void virtio_blk_mig_set_writeback(VirtIODevice *vdev, bool on)
{
    VirtIOBlock *b = container_of(vdev, VirtIOBlock, vdev);

    __atomic_store_n(&b->writeback, on, __ATOMIC_RELAXED);
}

/* Requests held for a retry go to the workers again as the VM runs. */
static bool virtio_blk_start(VirtIODevice *vdev, Error **errp)
{
    VirtIOBlock *b = container_of(vdev, VirtIOBlock, vdev);
    GQueue retry = G_QUEUE_INIT;
    VirtIOBlockReq *r;

    virtio_blk_refresh_capacity(b);
    virtio_blk_lock(b);
    retry = b->held;
    g_queue_init(&b->held);
    virtio_blk_unlock(b);
    while ((r = g_queue_pop_head(&retry))) {
        virtio_blk_submit(b, r);
    }
    return true;
}

/*
 * The device thread is joined (VM stop, reset, migration). The drain: every
 * worker finishes, and what they finished goes into the used ring now if
 * the driver still runs the device, else it is dropped (the driver reset
 * it: the rings are no longer its). After this no thread of ours touches
 * guest RAM until the next start.
 */
static void virtio_blk_stop(VirtIODevice *vdev)
{
    VirtIOBlock *b = container_of(vdev, VirtIOBlock, vdev);
    uint32_t pushed = 0;

    worker_pool_wait_idle(b->pool);
    if ((vdev->status & VIRTIO_CONFIG_S_DRIVER_OK) && !virtio_device_is_broken(vdev)) {
        virtio_blk_complete_done(b, &pushed);
        virtio_blk_notify_queues(b, pushed);
        return;
    }
    for (;;) {
        VirtIOBlockReq *r;

        virtio_blk_lock(b);
        r = g_queue_pop_head(&b->done);
        virtio_blk_unlock(b);
        if (!r) {
            break;
        }
        virtio_blk_req_free(r);
    }
}

/* After stop: the held requests are the old driver's; they go. */
static void virtio_blk_reset(VirtIODevice *vdev)
{
    VirtIOBlock *b = container_of(vdev, VirtIOBlock, vdev);
    VirtIOBlockReq *r;

    virtio_blk_lock(b);
    while ((r = g_queue_pop_head(&b->held))) {
        virtio_blk_unlock(b);
        virtio_blk_req_free(r);
        virtio_blk_lock(b);
    }
    virtio_blk_unlock(b);
    virtio_blk_loaded_free_all(b);
    b->next_worker = 0;
    /* The drive's cache mode again, as a fresh driver finds it. */
    __atomic_store_n(&b->writeback, blk_enable_write_cache(b->blk), __ATOMIC_RELAXED);
}

static const VirtIODeviceOps virtio_blk_ops_template = {
    .name = "virtio-blk-device",
    .thread_name = "virtio-blk",
    .device_id = VIRTIO_ID_BLOCK,
    .num_queues = 1,
    .queue_size = VIRTIO_BLK_QUEUE_SIZE,
    .config_size = VIRTIO_BLK_CONFIG_SIZE,
    /* QEMU 7.2's, but VIRTIO_F_RING_RESET (bit 40), which our core lacks. */
    .features = 1ULL << VIRTIO_BLK_F_SEG_MAX | 1ULL << VIRTIO_BLK_F_GEOMETRY |
                1ULL << VIRTIO_BLK_F_BLK_SIZE | 1ULL << VIRTIO_BLK_F_FLUSH |
                1ULL << VIRTIO_BLK_F_TOPOLOGY | 1ULL << VIRTIO_BLK_F_CONFIG_WCE |
                1ULL << VIRTIO_BLK_F_DISCARD | 1ULL << VIRTIO_BLK_F_WRITE_ZEROES,
    .get_config = virtio_blk_get_config,
    .set_config = virtio_blk_set_config,
    .register_mmio_state = virtio_blk_mmio_state_register,
    .reset = virtio_blk_reset,
    .start = virtio_blk_start,
    .stop = virtio_blk_stop,
    .queue_notify = virtio_blk_queue_notify,
};

/* ---- Creation (BQL), with the options of virtio-blk-conf.c ---- */

bool virtio_blk_init(VirtIOBlock *b, Error **errp)
{
    b->ops = virtio_blk_ops_template;
    b->ops.num_queues = b->conf.num_queues;
    if (b->conf.num_queues > 1) {
        b->ops.features |= 1ULL << VIRTIO_BLK_F_MQ;
    }
    if (b->read_only) {
        b->ops.features |= 1ULL << VIRTIO_BLK_F_RO;
    }
    if (!virtio_device_init(&b->vdev, &b->ops, errp)) {
        return false;
    }
    b->doorbell_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (b->doorbell_fd < 0) {
        error_setg_errno(errp, errno, "virtio-blk-device: cannot create an eventfd");
        virtio_device_cleanup(&b->vdev);
        return false;
    }
    g_mutex_init(&b->lock);
    g_queue_init(&b->done);
    g_queue_init(&b->held);
    g_queue_init(&b->loaded);
    g_queue_init(&b->events);
    b->pool = worker_pool_new("vblk-w%d", VIRTIO_BLK_WORKERS, &virtio_blk_pool_ops, b);
    for (int i = 0; i < VIRTIO_BLK_WORKERS; i++) {
        /* A worker whose thread cannot start runs its jobs inline: slower, not wrong. */
        g_autoptr(Error) err = NULL;

        worker_pool_start(b->pool, i, &err);
    }
    b->doorbell_watch = g_unix_fd_add(b->doorbell_fd, G_IO_IN, virtio_blk_doorbell, b);
    virtio_blk_refresh_capacity(b);
    b->writeback = blk_enable_write_cache(b->blk);
    return true;
}

void virtio_blk_fini(VirtIOBlock *b)
{
    VirtIOBlkEvent *ev;
    VirtIOBlockReq *r;

    /*
     * No worker may kick the device once its notifiers are closed: they
     * finish first (the stop hook, run by the cleanup when the device ran,
     * waits for them too, so the pool lives until after it).
     */
    worker_pool_wait_idle(b->pool);
    virtio_device_cleanup(&b->vdev);
    worker_pool_free(b->pool);
    while ((r = g_queue_pop_head(&b->done))) {
        virtio_blk_req_free(r);
    }
    while ((r = g_queue_pop_head(&b->held))) {
        virtio_blk_req_free(r);
    }
    virtio_blk_loaded_free_all(b);
    while ((ev = g_queue_pop_head(&b->events))) {
        g_free(ev);
    }
    g_source_remove(b->doorbell_watch);
    close(b->doorbell_fd);
    g_mutex_clear(&b->lock);
}

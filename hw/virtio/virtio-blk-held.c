/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * virtio-blk's requests in flight across a migration: those held for a
 * retry after werror=stop or rerror=stop (the VM stopped on an I/O error),
 * in the list QEMU 7.2 and 10.0 send after the queues (learned from their
 * streams: docs/devel/qemu-interop.md, "virtio-blk").
 *
 *   list    := (1 [queue index, be32, when the device has more than one
 *               queue] record)* 0
 *   record  := 49168 bytes, little-endian: head index, out_num, in_num
 *              (u32 each), 4 bytes of padding, 1024 in addresses, 1024 out
 *              addresses (u64), 1024 in iovecs, 1024 out iovecs (a host
 *              pointer, sent as 0, and a length: u64 each)
 *
 * Why they can move: a held request's chain is taken (the source's
 * last_avail_idx is past it) and not returned (the used ring's idx does
 * not count it), and it did not reach the disk, or reached it in a state
 * the retry overwrites. The destination takes its chain as in use, so it
 * is neither offered again (run twice) nor forgotten (never completed):
 * taken = returned + carried on every queue, checked at load against the
 * used ring's idx (virtio-mmio-qemu.c).
 *
 * A save sends the requests held (prepared) and those a stream brought
 * and that have not run yet; a load checks every value of every record
 * against the queues and guest RAM before anything is applied, and hands
 * the chains to the device thread, which takes them as freshly popped
 * chains before it pops new ones (virtio_blk_loaded_take): their header
 * is read from guest RAM there, outside the BQL, where a postcopy fault
 * may wait. BQL held, device thread stopped, for all but the replay.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qapi/error.h"
#include "migration/qemu-file.h"
#include "qemu/bitmap.h"
#include "virtio-blk-int.h"

#define QEMU_BLK_REQ_SLOTS      1024    /* QEMU's iovec arrays: VIRTQUEUE_MAX_SIZE each */
#define QEMU_BLK_REQ_HEAD       16
#define QEMU_BLK_REQ_IN_ADDR    QEMU_BLK_REQ_HEAD
#define QEMU_BLK_REQ_OUT_ADDR   (QEMU_BLK_REQ_IN_ADDR + 8 * QEMU_BLK_REQ_SLOTS)
#define QEMU_BLK_REQ_IN_SG      (QEMU_BLK_REQ_OUT_ADDR + 8 * QEMU_BLK_REQ_SLOTS)
#define QEMU_BLK_REQ_OUT_SG     (QEMU_BLK_REQ_IN_SG + 16 * QEMU_BLK_REQ_SLOTS)
#define QEMU_BLK_REQ_LEN        (QEMU_BLK_REQ_OUT_SG + 16 * QEMU_BLK_REQ_SLOTS)

QEMU_BUILD_BUG_ON(QEMU_BLK_REQ_LEN != 49168);
QEMU_BUILD_BUG_ON(QEMU_BLK_REQ_SLOTS != VIRTQUEUE_MAX_SIZE);

/* One record as read, not yet checked against the queues (staging). */
typedef struct VirtIOBlkRecord {
    uint32_t queue;
    uint32_t index, out_num, in_num;
    uint64_t *addr;             /* out_num + in_num, out first */
    uint64_t *len;
} VirtIOBlkRecord;

static void record_free(gpointer p)
{
    VirtIOBlkRecord *rec = p;

    g_free(rec->addr);
    g_free(rec->len);
    g_free(rec);
}

static void loaded_free(gpointer p)
{
    VirtIOBlkLoaded *l = p;

    g_free(l->elem);
    g_free(l);
}

void virtio_blk_inflight_init(VirtIOBlkInFlight *s, VirtIOBlock *b, const uint32_t *num_queues)
{
    s->b = b;
    s->num_queues = num_queues;
    s->records = g_ptr_array_new_with_free_func(record_free);
    s->checked = g_ptr_array_new_with_free_func(loaded_free);
}

void virtio_blk_inflight_reset(VirtIOBlkInFlight *s)
{
    g_ptr_array_set_size(s->records, 0);
    g_ptr_array_set_size(s->checked, 0);
}

/* ---- Save ---- */

/* The chains in flight, held ones first, into @out (VirtQueue *, VirtQueueElement * pairs). */
static void inflight_chains(VirtIOBlock *b, GPtrArray *out)
{
    virtio_blk_lock(b);
    for (GList *l = b->held.head; l; l = l->next) {
        VirtIOBlockReq *r = l->data;

        g_ptr_array_add(out, r->vq);
        g_ptr_array_add(out, r->elem);
    }
    for (GList *l = b->loaded.head; l; l = l->next) {
        VirtIOBlkLoaded *ld = l->data;

        g_ptr_array_add(out, ld->vq);
        g_ptr_array_add(out, ld->elem);
    }
    virtio_blk_unlock(b);
}

bool virtio_blk_inflight_count(VirtIOBlkInFlight *s, uint16_t *inuse, Error **errp)
{
    VirtIOBlock *b = s->b;
    g_autoptr(GPtrArray) chains = g_ptr_array_new();
    unsigned int nq = b->vdev.ops->num_queues;

    inflight_chains(b, chains);
    memset(inuse, 0, nq * sizeof(*inuse));
    for (guint i = 0; i < chains->len; i += 2) {
        inuse[((VirtQueue *)chains->pdata[i])->index]++;
    }
    /* After the drain only held (or loaded) requests own chains; any other would be lost. */
    for (unsigned int i = 0; i < nq; i++) {
        if (b->vdev.vq[i].inuse != inuse[i]) {
            error_setg(errp, "%s: queue %u has %u chains in use but %u requests held",
                       b->vdev.name, i, b->vdev.vq[i].inuse, inuse[i]);
            return false;
        }
    }
    return true;
}

static void record_put(QEMUFile *f, uint8_t *buf, const VirtQueueElement *e)
{
    memset(buf, 0, QEMU_BLK_REQ_LEN);
    stl_le_p(buf, e->index);
    stl_le_p(buf + 4, e->out_num);
    stl_le_p(buf + 8, e->in_num);
    for (unsigned int i = 0; i < e->in_num; i++) {
        stq_le_p(buf + QEMU_BLK_REQ_IN_ADDR + 8 * i, e->in_addr[i]);
        stq_le_p(buf + QEMU_BLK_REQ_IN_SG + 16 * i + 8, e->in_sg[i].iov_len);
    }
    for (unsigned int i = 0; i < e->out_num; i++) {
        stq_le_p(buf + QEMU_BLK_REQ_OUT_ADDR + 8 * i, e->out_addr[i]);
        stq_le_p(buf + QEMU_BLK_REQ_OUT_SG + 16 * i + 8, e->out_sg[i].iov_len);
    }
    qemu_put_buffer(f, buf, QEMU_BLK_REQ_LEN);
}

static bool inflight_put(QEMUFile *f, void *p, Error **errp)
{
    VirtIOBlkInFlight *s = p;
    g_autoptr(GPtrArray) chains = g_ptr_array_new();
    g_autofree uint8_t *buf = NULL;
    bool multi = s->b->vdev.ops->num_queues > 1;

    inflight_chains(s->b, chains);
    if (chains->len) {
        buf = g_malloc(QEMU_BLK_REQ_LEN);
    }
    for (guint i = 0; i < chains->len; i += 2) {
        qemu_put_byte(f, 1);
        if (multi) {
            qemu_put_be32(f, ((VirtQueue *)chains->pdata[i])->index);
        }
        record_put(f, buf, chains->pdata[i + 1]);
    }
    qemu_put_byte(f, 0);
    return true;
}

/* ---- Load ---- */

/* One record from @buf: its counts bounded by the record's arrays, the rest later. */
static VirtIOBlkRecord *record_parse(const uint8_t *buf, uint32_t queue, Error **errp)
{
    g_autoptr(GPtrArray) hold = NULL;
    VirtIOBlkRecord *rec;
    uint32_t out_num = ldl_le_p(buf + 4), in_num = ldl_le_p(buf + 8);

    if (out_num > QEMU_BLK_REQ_SLOTS || in_num > QEMU_BLK_REQ_SLOTS) {
        error_setg(errp, "request at head %u: %u buffers out and %u in, more than a "
                   "record holds (%d)", ldl_le_p(buf), out_num, in_num, QEMU_BLK_REQ_SLOTS);
        return NULL;
    }
    rec = g_new0(VirtIOBlkRecord, 1);
    rec->queue = queue;
    rec->index = ldl_le_p(buf);
    rec->out_num = out_num;
    rec->in_num = in_num;
    rec->addr = g_new(uint64_t, MAX(out_num + in_num, 1));
    rec->len = g_new(uint64_t, MAX(out_num + in_num, 1));
    /* The iovecs' bases are the source's host pointers (sent as 0): never used. */
    for (uint32_t i = 0; i < out_num; i++) {
        rec->addr[i] = ldq_le_p(buf + QEMU_BLK_REQ_OUT_ADDR + 8 * i);
        rec->len[i] = ldq_le_p(buf + QEMU_BLK_REQ_OUT_SG + 16 * i + 8);
    }
    for (uint32_t i = 0; i < in_num; i++) {
        rec->addr[out_num + i] = ldq_le_p(buf + QEMU_BLK_REQ_IN_ADDR + 8 * i);
        rec->len[out_num + i] = ldq_le_p(buf + QEMU_BLK_REQ_IN_SG + 16 * i + 8);
    }
    return rec;
}

static bool inflight_get(QEMUFile *f, void *p, Error **errp)
{
    VirtIOBlkInFlight *s = p;
    g_autofree uint8_t *buf = NULL;
    uint32_t nq = *s->num_queues;
    /* No queue holds more chains than its size: a longer list is no device's. */
    guint max = MIN(nq, VIRTIO_BLK_MAX_QUEUES) * VIRTIO_BLK_QUEUE_SIZE;

    virtio_blk_inflight_reset(s);
    for (;;) {
        int marker = qemu_get_byte(f);
        uint32_t queue = 0;
        VirtIOBlkRecord *rec;

        if (qemu_file_get_error(f)) {
            return false;
        }
        if (marker == 0) {
            return true;
        }
        if (marker != 1) {
            error_setg(errp, "request %u: marker 0x%x (1: a request follows, 0: the end)",
                       s->records->len, marker);
            return false;
        }
        if (s->records->len >= max) {
            error_setg(errp, "more than %u requests in flight on %u queues", max, nq);
            return false;
        }
        if (nq > 1) {
            queue = qemu_get_be32(f);
        }
        if (queue >= nq) {
            error_setg(errp, "request %u names queue %u of %u", s->records->len, queue, nq);
            return false;
        }
        buf = buf ?: g_malloc(QEMU_BLK_REQ_LEN);
        qemu_get_buffer(f, buf, QEMU_BLK_REQ_LEN);
        if (qemu_file_get_error(f)) {
            return false;
        }
        rec = record_parse(buf, queue, errp);
        if (!rec) {
            error_prepend(errp, "request %u: ", s->records->len);
            return false;
        }
        g_ptr_array_add(s->records, rec);
    }
}

const VMStateCustom virtio_blk_vmstate_inflight = {
    .put = inflight_put,
    .get = inflight_get,
};

bool virtio_blk_inflight_check(VirtIOBlkInFlight *s, const uint32_t *queue_num,
                               uint16_t *inuse, Error **errp)
{
    VirtIOBlock *b = s->b;
    unsigned int nq = b->vdev.ops->num_queues;
    g_autofree unsigned long *seen = bitmap_new((size_t)nq * VIRTIO_BLK_QUEUE_SIZE);

    g_ptr_array_set_size(s->checked, 0);
    memset(inuse, 0, nq * sizeof(*inuse));
    for (guint k = 0; k < s->records->len; k++) {
        const VirtIOBlkRecord *rec = s->records->pdata[k];
        uint32_t num = rec->queue < nq ? queue_num[rec->queue] : 0;
        VirtQueueElement *e;
        VirtIOBlkLoaded *ld;

        if (rec->queue >= nq || !num || num > b->vdev.vq[rec->queue].num_max) {
            error_setg(errp, "%s: request %u is on queue %u, which the device lacks or the "
                       "stream does not set up (size %u)", b->vdev.name, k, rec->queue, num);
            return false;
        }
        e = virtqueue_elem_load(num, rec->index, rec->out_num, rec->in_num, rec->addr,
                                rec->len, errp);
        if (!e) {
            error_prepend(errp, "%s: request %u on queue %u: ", b->vdev.name, k, rec->queue);
            return false;
        }
        ld = g_new(VirtIOBlkLoaded, 1);
        *ld = (VirtIOBlkLoaded) { .vq = &b->vdev.vq[rec->queue], .elem = e };
        g_ptr_array_add(s->checked, ld);
        /* What the device thread would refuse at the pop, refused here. */
        if (e->out_len < VIRTIO_BLK_HDR_LEN || e->in_len < 1) {
            error_setg(errp, "%s: request %u on queue %u: %zu bytes out and %zu in, no room "
                       "for the %d-byte header and the status byte", b->vdev.name, k,
                       rec->queue, e->out_len, e->in_len, VIRTIO_BLK_HDR_LEN);
            return false;
        }
        if (test_and_set_bit((size_t)rec->queue * VIRTIO_BLK_QUEUE_SIZE + rec->index, seen)) {
            error_setg(errp, "%s: request %u on queue %u: head %u is in flight twice",
                       b->vdev.name, k, rec->queue, rec->index);
            return false;
        }
        inuse[rec->queue]++;
    }
    return true;
}

void virtio_blk_inflight_apply(VirtIOBlkInFlight *s)
{
    VirtIOBlock *b = s->b;
    GQueue stale = G_QUEUE_INIT, stale_loaded = G_QUEUE_INIT;
    VirtIOBlockReq *r;
    VirtIOBlkLoaded *ld;

    /* What this device held before the load was the old state's: its chains are gone. */
    virtio_blk_lock(b);
    stale = b->held;
    stale_loaded = b->loaded;
    g_queue_init(&b->held);
    g_queue_init(&b->loaded);
    for (guint k = 0; k < s->checked->len; k++) {
        g_queue_push_tail(&b->loaded, s->checked->pdata[k]);
    }
    virtio_blk_unlock(b);
    /* Handed over: emptied without freeing. */
    g_ptr_array_set_free_func(s->checked, NULL);
    g_ptr_array_set_size(s->checked, 0);
    g_ptr_array_set_free_func(s->checked, loaded_free);
    while ((r = g_queue_pop_head(&stale))) {
        virtio_blk_req_free(r);
    }
    while ((ld = g_queue_pop_head(&stale_loaded))) {
        loaded_free(ld);
    }
    virtio_blk_inflight_reset(s);
}

void virtio_blk_loaded_free_all(VirtIOBlock *b)
{
    VirtIOBlkLoaded *ld;

    virtio_blk_lock(b);
    while ((ld = g_queue_pop_head(&b->loaded))) {
        virtio_blk_unlock(b);
        loaded_free(ld);
        virtio_blk_lock(b);
    }
    virtio_blk_unlock(b);
}

/* ---- Device thread ---- */

GQueue virtio_blk_loaded_take(VirtIOBlock *b)
{
    GQueue todo;

    virtio_blk_lock(b);
    todo = b->loaded;
    g_queue_init(&b->loaded);
    virtio_blk_unlock(b);
    return todo;
}

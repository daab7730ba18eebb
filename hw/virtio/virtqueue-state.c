/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A virtqueue as a migration stream states it (virtqueue.h). A loaded
 * queue is held to what the device checks when a driver programs it
 * (virtqueue_enable): what comes from the stream alone and is wrong is
 * refused at load, naming the field (virtqueue_check_state). The rings in
 * guest RAM are the guest's to write, so what they say against the stream
 * (virtqueue_check_rings) only breaks the device, as the first kick would.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/virtio/virtqueue.h"
#include "system/memory.h"
#include "virtqueue-int.h"

void virtqueue_get_state(const VirtQueue *vq, VirtQueueState *st)
{
    *st = (VirtQueueState) {
        .num = vq->num,
        .ready = vq->ready,
        .desc_addr = vq->desc_addr,
        .avail_addr = vq->avail_addr,
        .used_addr = vq->used_addr,
        /*
         * Chains taken but not returned are offered again on the other side
         * (in-order devices, which return what they take in order). So a
         * saved queue always has last_avail_idx == used_idx.
         */
        .last_avail_idx = vq->last_avail_idx - vq->inuse,
        .used_idx = vq->used_idx,
        .signalled_used = vq->signalled_used,
        .signalled_used_valid = vq->signalled_used_valid,
    };
}

void virtqueue_state_keep_inuse(const VirtQueue *vq, VirtQueueState *st, uint16_t kept)
{
    if (!kept) {
        return;                 /* all rewound, as virtqueue_get_state() left them */
    }
    assert(kept == vq->inuse);
    if (st->ready) {
        st->last_avail_idx = vq->last_avail_idx;
        st->inuse = kept;
    }
}

/* A scratch queue's error callback: keeps the first reason. */
static void virtqueue_state_capture(void *opaque, VirtQueue *vq, const char *msg)
{
    char **why = opaque;

    if (!*why) {
        *why = g_strdup(msg);
    }
}

/*
 * The rings in guest RAM against @st, as the device would find them at its
 * first kick: the used ring's idx is the used_idx we would go on from (the
 * device wrote it last, and the stream's RAM carried it), the driver is at
 * most a queue ahead, and every chain it offers has a head inside the queue
 * and walks as virtqueue_pop() would walk it. Reads the rings, writes nothing.
 * The guest may have written any of it: the caller breaks the device on a
 * false return, it does not refuse the stream.
 */
bool virtqueue_check_rings(const VirtQueue *vq, const VirtQueueState *st, bool indirect,
                           Error **errp)
{
    g_autofree VirtQueue *t = NULL;
    g_autofree char *why = NULL;
    unsigned int heads = 0;
    uint16_t ram_used;

    if (!st->ready) {
        return true;
    }
    t = g_new0(VirtQueue, 1);
    /* A scratch copy, so a bad ring breaks nothing of the live device. */
    virtqueue_init(t, vq->index, vq->num_max, virtqueue_state_capture, &why);
    t->num = st->num;
    t->desc_addr = st->desc_addr;
    t->avail_addr = st->avail_addr;
    t->used_addr = st->used_addr;
    virtqueue_map(t, false, indirect);
    t->last_avail_idx = st->last_avail_idx;
    t->used_idx = st->used_idx;

    ram_used = ring_load16_acquire(t->used + 2);
    if (ram_used != st->used_idx) {
        error_setg(errp, "queue %u: used_idx %u, but the device ring at 0x%" PRIx64 " in "
                   "guest RAM says %u", vq->index, st->used_idx, st->used_addr, ram_used);
        return false;
    }
    if (!virtqueue_num_heads(t, &heads)) {
        error_setg(errp, "%s", why);
        return false;
    }
    for (unsigned int k = 0; k < heads; k++) {
        uint16_t slot = (uint16_t)(st->last_avail_idx + k) & (st->num - 1);
        unsigned int head = ring_load16(t->avail + 4 + 2 * (size_t)slot);
        ChainWalk w = { 0 };

        if (head >= st->num) {
            error_setg(errp, "queue %u: avail ring names head %u, beyond the queue size %u",
                       vq->index, head, st->num);
            return false;
        }
        if (!virtqueue_walk_chain(t, &w, head)) {
            error_setg(errp, "%s", why);
            return false;
        }
    }
    return true;
}

bool virtqueue_check_state(const VirtQueue *vq, const VirtQueueState *st, Error **errp)
{
    g_autofree char *why = NULL;

    if (!st->ready) {
        return true;            /* only registers; QueueReady will check them */
    }
    why = virtqueue_config_problem(vq, st->num, st->desc_addr, st->avail_addr, st->used_addr);
    if (why) {
        error_setg(errp, "%s", why);
        return false;
    }
    /*
     * virtqueue_get_state() rewinds every chain the device held but those
     * its own state carries: taken = returned + carried, or a chain would
     * be taken twice (rewound and carried) or never returned.
     */
    if (st->inuse > st->num || (uint16_t)(st->last_avail_idx - st->used_idx) != st->inuse) {
        error_setg(errp, "queue %u: last_avail_idx %u is %u past used_idx %u, but %u chains "
                   "in use come with the device", vq->index, st->last_avail_idx,
                   (uint16_t)(st->last_avail_idx - st->used_idx), st->used_idx, st->inuse);
        return false;
    }
    return true;
}

VirtQueueElement *virtqueue_elem_load(uint16_t num, unsigned int index, unsigned int out_num,
                                      unsigned int in_num, const uint64_t *addr,
                                      const uint64_t *len, Error **errp)
{
    unsigned int n = out_num + in_num;
    VirtQueueElement *elem;

    if (index >= num) {
        error_setg(errp, "head %u is beyond the queue size %u", index, num);
        return NULL;
    }
    if (out_num > VIRTQUEUE_MAX_SIZE || in_num > VIRTQUEUE_MAX_SIZE || !n ||
        n > VIRTQUEUE_MAX_SIZE) {
        error_setg(errp, "chain at head %u: %u buffers out and %u in (1 to %d together)",
                   index, out_num, in_num, VIRTQUEUE_MAX_SIZE);
        return NULL;
    }
    elem = g_malloc0(sizeof(*elem) + n * (sizeof(struct iovec) + sizeof(uint64_t)));
    elem->index = index;
    elem->out_num = out_num;
    elem->in_num = in_num;
    elem->out_sg = (struct iovec *)(elem + 1);
    elem->in_sg = elem->out_sg + out_num;
    elem->out_addr = (uint64_t *)(elem->out_sg + n);
    elem->in_addr = elem->out_addr + out_num;
    for (unsigned int i = 0; i < n; i++) {
        /* As a descriptor: a 32-bit length, not empty, inside one RAM range. */
        void *host = len[i] && len[i] <= UINT32_MAX && addr[i] + len[i] > addr[i] ?
                     guest_phys_to_host(addr[i], len[i]) : NULL;

        if (!host) {
            error_setg(errp, "chain at head %u: buffer %u (0x%" PRIx64 "+0x%" PRIx64 ") is %s",
                       index, i, addr[i], len[i],
                       !len[i] || len[i] > UINT32_MAX ? "not a descriptor's length"
                                                      : "outside guest RAM");
            g_free(elem);
            return NULL;
        }
        elem->out_sg[i] = (struct iovec) { .iov_base = host, .iov_len = len[i] };
        elem->out_addr[i] = addr[i];
        if (i < out_num) {
            elem->out_len += len[i];
        } else {
            elem->in_len += len[i];
        }
    }
    return elem;
}

void virtqueue_set_state(VirtQueue *vq, const VirtQueueState *st, bool event_idx,
                         bool indirect)
{
    virtqueue_disable(vq);
    vq->num = st->num;
    vq->desc_addr = st->desc_addr;
    vq->avail_addr = st->avail_addr;
    vq->used_addr = st->used_addr;
    if (!st->ready) {
        return;
    }
    vq->last_avail_idx = st->last_avail_idx;
    vq->used_idx = st->used_idx;
    /*
     * The index of the last interrupt cannot be checked against anything:
     * a wrong one could make the first interrupt after the load be skipped,
     * and a driver waiting for it would wait forever. Forgotten, as QEMU
     * forgets it, it costs at most one interrupt the driver did not need.
     */
    vq->signalled_used = st->used_idx;
    vq->signalled_used_valid = false;
    vq->inuse = st->inuse;
    virtqueue_map(vq, event_idx, indirect);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMU's generic part of a virtio-mmio device's section: see
 * virtio-mmio-qemu.h. BQL held, device thread stopped, for all of it.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/virtio/virtio-mmio.h"
#include "system/memory.h"
#include "virtio-mmio-qemu.h"
#include <linux/virtio_config.h>

void qemu_virtio_image_init(QemuVirtioImage *q, VirtIOMMIOState *mmio, uint32_t config_len)
{
    q->mmio = mmio;
    q->vdev = virtio_mmio_vdev(mmio);
    q->config_len = config_len;
    /* The VBUFFER needs a pointer even for 0 bytes. */
    q->config = g_malloc0(MAX(config_len, 1));
}

void qemu_virtio_image_pre_load(QemuVirtioImage *q)
{
    q->got_features = q->got_rings = q->got_mmio = false;
    memset(q->inuse, 0, sizeof(q->inuse));
    q->features = 0;
    q->started = 0;
}

/* ---- Save ---- */

static void image_queues(QemuVirtioImage *q, const VirtIOMMIOMigState *m, unsigned int qemu_nq,
                         uint32_t extra_num)
{
    q->num_queues = qemu_nq;
    for (unsigned int i = 0; i < qemu_nq; i++) {
        const VirtQueueState *st = &m->vq[i];
        bool ours = i < m->num_queues;
        /* A queue the driver never touched has QueueNum 0 in QEMU's transport. */
        bool touched = ours && (st->ready || st->desc_addr || st->avail_addr || st->used_addr);

        q->vq[i] = (QemuVirtQueue) {
            .num = ours ? st->num : extra_num,
            .align = QEMU_VRING_ALIGN,
            .desc = ours ? st->desc_addr : 0,
            .last_avail_idx = ours && st->ready ? st->last_avail_idx : 0,
        };
        if (!ours) {
            continue;
        }
        q->rings[i] = (QemuVirtQueueRings) { st->avail_addr, st->used_addr };
        q->mq[i] = (QemuMMIOQueue) {
            .num = touched ? st->num : 0,
            .ready = st->ready,
            .desc = { (uint32_t)st->desc_addr, st->desc_addr >> 32 },
            .avail = { (uint32_t)st->avail_addr, st->avail_addr >> 32 },
            .used = { (uint32_t)st->used_addr, st->used_addr >> 32 },
        };
    }
}

bool qemu_virtio_image_save(QemuVirtioImage *q, unsigned int qemu_nq, uint32_t extra_num,
                            Error **errp)
{
    g_autofree VirtIOMMIOMigState *m = g_new0(VirtIOMMIOMigState, 1);

    assert(qemu_nq <= VIRTIO_MMIO_MAX_QUEUES);
    virtio_mmio_mig_save(q->mmio, m);
    for (unsigned int i = 0; i < m->num_queues; i++) {
        virtqueue_state_keep_inuse(&q->vdev->vq[i], &m->vq[i], q->inuse[i]);
    }
    if (m->dev.broken) {
        /* QEMU's "virtio/broken" subsection is not learned yet. */
        error_setg(errp, "%s: the device is broken (NEEDS_RESET); its state cannot be sent "
                   "in QEMU's layout", q->vdev->name);
        return false;
    }
    q->host_features_sel = m->host_features_sel;
    q->guest_features_sel = m->guest_features_sel;
    q->guest_page_shift = 0;
    q->status = m->dev.status;
    q->isr = m->isr;
    q->queue_sel = m->queue_sel > UINT16_MAX ? UINT16_MAX : m->queue_sel;
    q->features = m->dev.guest_features;
    q->features_lo = (uint32_t)m->dev.guest_features;
    memset(q->vq, 0, sizeof(q->vq));
    memset(q->rings, 0, sizeof(q->rings));
    memset(q->mq, 0, sizeof(q->mq));
    image_queues(q, m, qemu_nq, extra_num);
    q->mmio_guest_features[0] = (uint32_t)m->dev.guest_features;
    q->mmio_guest_features[1] = m->dev.guest_features >> 32;
    q->started = !!(m->dev.status & VIRTIO_CONFIG_S_DRIVER_OK);
    return true;
}

/* ---- Load ---- */

static uint64_t halves(const uint32_t h[2])
{
    return (uint64_t)h[1] << 32 | h[0];
}

/*
 * One queue from QEMU's three views of it: the core's (num, desc,
 * last_avail_idx), "virtio/virtqueues" (ring addresses) and the
 * transport's (QueueNum, QueueReady, the addresses as registers).
 */
static bool image_queue_to_state(const QemuVirtioImage *q, unsigned int i, VirtQueueState *st,
                                 Error **errp)
{
    const QemuMMIOQueue *mq = &q->mq[i];
    const QemuVirtQueue *vq = &q->vq[i];
    uint16_t ram_used;

    *st = (VirtQueueState) {
        .num = mq->num ? mq->num : q->vdev->vq[i].num_max,
        .ready = mq->ready,
        .desc_addr = halves(mq->desc),
        .avail_addr = halves(mq->avail),
        .used_addr = halves(mq->used),
    };
    if (!st->ready) {
        if (q->inuse[i]) {
            error_setg(errp, "%s: queue %u: %u requests in flight on a queue not ready",
                       q->vdev->name, i, q->inuse[i]);
            return false;
        }
        return true;
    }
    if (vq->desc != st->desc_addr || q->rings[i].avail != st->avail_addr ||
        q->rings[i].used != st->used_addr || vq->num != st->num) {
        error_setg(errp, "%s: queue %u: the core's and the transport's views differ (num %u/%u, "
                   "desc 0x%" PRIx64 "/0x%" PRIx64 ")", q->vdev->name, i, vq->num, st->num,
                   vq->desc, st->desc_addr);
        return false;
    }
    /*
     * QEMU does not send the used index: it is the device ring's, in guest
     * RAM (loaded before the device sections). Chains the source had taken
     * and not returned are offered again, but those the device's part
     * carries (q->inuse): they stay taken. Under postcopy or a lazy restore
     * that page may not be here yet: then only those are taken to be in
     * flight (what a drained source leaves), and the device's own checks
     * at its first kick remain.
     */
    st->inuse = q->inuse[i];
    st->last_avail_idx = vq->last_avail_idx;
    if (guest_ram_reads_may_wait()) {
        st->used_idx = vq->last_avail_idx - q->inuse[i];
        return true;
    }
    if (!guest_phys_rw(st->used_addr + 2, &ram_used, sizeof(ram_used), false)) {
        error_setg(errp, "%s: queue %u: device ring 0x%" PRIx64 " is outside guest RAM",
                   q->vdev->name, i, st->used_addr);
        return false;
    }
    ram_used = le16toh(ram_used);
    if ((uint16_t)(vq->last_avail_idx - ram_used) > st->num) {
        error_setg(errp, "%s: queue %u: last_avail_idx %u is more than a queue (%u) ahead of "
                   "the used ring's idx %u", q->vdev->name, i, vq->last_avail_idx, st->num,
                   ram_used);
        return false;
    }
    if (!q->inuse[i]) {
        st->last_avail_idx = ram_used;
    } else if ((uint16_t)(vq->last_avail_idx - ram_used) != q->inuse[i]) {
        /*
         * Each taken chain is either returned (counted by the used ring's
         * idx) or carried: else one would run twice or never complete.
         */
        error_setg(errp, "%s: queue %u: %u requests in flight in the stream, but "
                   "last_avail_idx %u is %u past the used ring's idx %u", q->vdev->name, i,
                   q->inuse[i], vq->last_avail_idx, (uint16_t)(vq->last_avail_idx - ram_used),
                   ram_used);
        return false;
    }
    st->used_idx = ram_used;
    return true;
}

static bool queue_set_up(const QemuVirtioImage *q, unsigned int i)
{
    return q->mq[i].ready || q->mq[i].num || halves(q->mq[i].desc) || halves(q->mq[i].avail) ||
           halves(q->mq[i].used) || q->rings[i].avail || q->rings[i].used ||
           (i < q->num_queues && (q->vq[i].desc || q->vq[i].last_avail_idx));
}

bool qemu_virtio_image_load(QemuVirtioImage *q, unsigned int qemu_nq_max, Error **errp)
{
    g_autofree VirtIOMMIOMigState *m = g_new0(VirtIOMMIOMigState, 1);
    unsigned int nq = q->vdev->ops->num_queues;

    if (!q->got_rings || !q->got_mmio) {
        error_setg(errp, "%s: the stream lacks the %s subsection (a legacy virtio-mmio "
                   "transport: start QEMU with -global virtio-mmio.force-legacy=false)",
                   q->vdev->name, !q->got_rings ? "virtio/virtqueues" : "virtio_mmio/state");
        return false;
    }
    if (q->guest_page_shift) {
        error_setg(errp, "%s: guest_page_shift %u: a legacy transport's", q->vdev->name,
                   q->guest_page_shift);
        return false;
    }
    if (q->got_features && (uint32_t)q->features != q->features_lo) {
        error_setg(errp, "%s: features 0x%" PRIx64 " and their low word 0x%x differ",
                   q->vdev->name, q->features, q->features_lo);
        return false;
    }
    if (q->num_queues < nq || q->num_queues > qemu_nq_max) {
        error_setg(errp, "%s: %u queues in the stream, the device has %u", q->vdev->name,
                   q->num_queues, nq);
        return false;
    }
    for (unsigned int i = nq; i < QEMU_VIRTIO_QUEUE_MAX; i++) {
        if (queue_set_up(q, i)) {
            error_setg(errp, "%s: queue %u is set up in the stream, but the device has %u "
                       "queues", q->vdev->name, i, nq);
            return false;
        }
    }
    m->host_features_sel = q->host_features_sel;
    m->guest_features_sel = q->guest_features_sel;
    m->queue_sel = q->queue_sel;
    m->isr = q->isr;
    m->dev.status = q->status;
    m->dev.guest_features = q->got_features ? q->features : q->features_lo;
    m->num_queues = nq;
    for (unsigned int i = 0; i < nq; i++) {
        if (!image_queue_to_state(q, i, &m->vq[i], errp)) {
            return false;
        }
    }
    return virtio_mmio_mig_load(q->mmio, m, errp);
}

/* ---- QEMU's layout ---- */

static bool features_loaded(void *opaque, int version_id, Error **errp)
{
    ((QemuVirtioImage *)opaque)->got_features = true;
    return true;
}

static bool rings_loaded(void *opaque, int version_id, Error **errp)
{
    ((QemuVirtioImage *)opaque)->got_rings = true;
    return true;
}

static bool mmio_loaded(void *opaque, int version_id, Error **errp)
{
    ((QemuVirtioImage *)opaque)->got_mmio = true;
    return true;
}

const VMStateDescription qemu_vmstate_virtqueue = {
    .name = "virtqueue",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(num, QemuVirtQueue),
        VMSTATE_UINT32(align, QemuVirtQueue),
        VMSTATE_UINT64(desc, QemuVirtQueue),
        VMSTATE_UINT16(last_avail_idx, QemuVirtQueue),
        VMSTATE_END_OF_LIST()
    },
};

/*
 * A modern transport's section always has the first three subsections,
 * even for a guest that never ran (QEMU 7.2 with -S); "virtio/started"
 * only once the driver set DRIVER_OK.
 * QEMU sends it whenever the device offers a feature above bit 31 (VERSION_1: always). */
const VMStateDescription qemu_vmstate_64bit_features = {
    .name = "virtio/64bit_features",
    .version_id = 1,
    .minimum_version_id = 1,
    .post_load = features_loaded,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(features, QemuVirtioImage),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rings = {
    .name = "virtqueue_state",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(avail, QemuVirtQueueRings),
        VMSTATE_UINT64(used, QemuVirtQueueRings),
        VMSTATE_END_OF_LIST()
    },
};

const VMStateDescription qemu_vmstate_virtqueues = {
    .name = "virtio/virtqueues",
    .version_id = 1,
    .minimum_version_id = 1,
    .post_load = rings_loaded,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT_ARRAY(rings, QemuVirtioImage, QEMU_VIRTIO_QUEUE_MAX, vmstate_rings,
                             QemuVirtQueueRings),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_mmio_queue = {
    .name = "virtio_mmio/queue_state",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT16(num, QemuMMIOQueue),
        VMSTATE_BOOL(ready, QemuMMIOQueue),
        VMSTATE_UINT32_ARRAY(desc, QemuMMIOQueue, 2),
        VMSTATE_UINT32_ARRAY(avail, QemuMMIOQueue, 2),
        VMSTATE_UINT32_ARRAY(used, QemuMMIOQueue, 2),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_mmio_state = {
    .name = "virtio_mmio/state",
    .version_id = 1,
    .minimum_version_id = 1,
    .post_load = mmio_loaded,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32_ARRAY(mmio_guest_features, QemuVirtioImage, 2),
        VMSTATE_STRUCT_ARRAY(mq, QemuVirtioImage, QEMU_VIRTIO_QUEUE_MAX, vmstate_mmio_queue,
                             QemuMMIOQueue),
        VMSTATE_END_OF_LIST()
    },
};

/* The transport's extra state: no fields, its registers in a subsection. */
static const VMStateDescription vmstate_mmio = {
    .name = "virtio_mmio",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription *const[]) {
        &vmstate_mmio_state,
        NULL
    },
};

const VMStateDescription qemu_vmstate_extra_state = {
    .name = "virtio/extra_state",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        {
            .name = "extra_state", .type = VMS_STRUCT, .offset = 0,
            .size = sizeof(QemuVirtioImage), .vmsd = &vmstate_mmio,
        },
        VMSTATE_END_OF_LIST()
    },
};

static bool started_needed(void *opaque)
{
    return ((QemuVirtioImage *)opaque)->started;
}

const VMStateDescription qemu_vmstate_started = {
    .name = "virtio/started",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = started_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(started, QemuVirtioImage),
        VMSTATE_END_OF_LIST()
    },
};

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A virtio-net behind virtio-mmio, in the section QEMU 7.2 and 10.0 send
 * for it: "virtio-mmio@<base, 16 hex digits>/virtio-net", instance 0,
 * version 11, one field "virtio" holding the transport's config, the
 * virtio core's state, the queues, the device's own fields and QEMU's
 * "virtio/..." subsections (the layout, learned from QEMU's streams, is
 * in docs/devel/qemu-interop.md). Everything loads into a staging image;
 * post_load checks it all, the device's part first, then hands plain
 * values to virtio_mmio_mig_load() and virtio_net_mig_apply(), so a
 * refused section leaves the device as it was.
 *
 * What QEMU carries that this device does not have (the MAC filter
 * table, a vnet-header backend, mergeable receive buffers, promiscuous
 * mode off, VLAN filtering, multiqueue) must be at QEMU's defaults in
 * an incoming stream, or the section is refused naming the field; we
 * send those defaults. BQL held, device thread stopped, for both.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/virtio/virtio-mmio.h"
#include "hw/virtio/virtio-net.h"
#include "migration/vmstate.h"
#include "system/memory.h"
#include "virtio-mmio-mig.h"
#include <linux/virtio_config.h>
#include <linux/virtio_ids.h>
#include <linux/virtio_net.h>

/* QEMU's virtqueue arrays in the subsections: VIRTIO_QUEUE_MAX entries each. */
#define QEMU_VIRTIO_QUEUE_MAX   1024
/* virtio-net without multiqueue: rx, tx and the control queue (64 entries). */
#define QEMU_NET_QUEUES         3
#define QEMU_NET_CTRL_QUEUE_NUM 64
/* The vring alignment QEMU sends for every queue of a modern transport. */
#define QEMU_VRING_ALIGN        4096
#define QEMU_NET_CONFIG_LEN     8       /* mac[6], status (le16) */
#define QEMU_NET_VLAN_BYTES     512     /* a bit per VLAN id */
#define QEMU_NET_TAIL_BYTES     11      /* has_vnet_hdr and six filter flags, all 0 here */

/* The queue as virtio's core part has it ("legacy" fields, also for modern). */
typedef struct QemuVirtQueue {
    uint32_t num;
    uint32_t align;
    uint64_t desc;
    uint16_t last_avail_idx;
} QemuVirtQueue;

/* "virtio/virtqueues": the driver and device rings of each queue. */
typedef struct QemuVirtQueueRings {
    uint64_t avail;
    uint64_t used;
} QemuVirtQueueRings;

/* "virtio_mmio/state": the transport's registers of each queue, 32-bit halves. */
typedef struct QemuMMIOQueue {
    uint16_t num;
    bool ready;
    uint32_t desc[2];
    uint32_t avail[2];
    uint32_t used[2];
} QemuMMIOQueue;

struct VirtIONetMMIOQemu {
    VirtIOMMIOState *mmio;      /* fixed */
    VirtIODevice *vdev;         /* fixed */

    /* The wire image (staging, BQL). */
    uint32_t host_features_sel;
    uint32_t guest_features_sel;
    uint32_t guest_page_shift;  /* legacy transports only: 0 */
    uint8_t status;
    uint8_t isr;
    uint16_t queue_sel;
    uint32_t features_lo;
    uint32_t config_len;
    uint8_t *config;            /* QEMU_NET_CONFIG_LEN bytes (a cache of QEMU's; not used) */
    uint32_t num_queues;
    QemuVirtQueue vq[VIRTIO_MMIO_MAX_QUEUES];
    uint8_t mac[6];
    uint32_t tx_waiting;
    uint32_t mergeable_rx_bufs;
    uint16_t net_status;
    uint8_t promisc;
    uint8_t allmulti;
    uint32_t mac_table_len;     /* entries in QEMU's MAC filter table: 0 */
    uint8_t *mac_table;         /* never written: its bound is 0 */
    uint8_t vlans[QEMU_NET_VLAN_BYTES];
    uint8_t tail[QEMU_NET_TAIL_BYTES];
    uint64_t features;
    QemuVirtQueueRings rings[QEMU_VIRTIO_QUEUE_MAX];
    uint32_t mmio_guest_features[2];
    QemuMMIOQueue mq[QEMU_VIRTIO_QUEUE_MAX];
    uint8_t started;

    /* Which subsections a load brought (staging, BQL). */
    bool got_features, got_rings, got_mmio;
};

/* ---- Save: our state in QEMU's image ---- */

static void qemu_image_queues(VirtIONetMMIOQemu *q, const VirtIOMMIOMigState *m)
{
    q->num_queues = QEMU_NET_QUEUES;
    for (unsigned int i = 0; i < QEMU_NET_QUEUES; i++) {
        const VirtQueueState *st = &m->vq[i];
        bool ours = i < m->num_queues;
        /* A queue the driver never touched has QueueNum 0 in QEMU's transport. */
        bool touched = ours && (st->ready || st->desc_addr || st->avail_addr || st->used_addr);

        q->vq[i] = (QemuVirtQueue) {
            .num = ours ? st->num : QEMU_NET_CTRL_QUEUE_NUM,
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

static bool virtio_net_qemu_pre_save(void *opaque, Error **errp)
{
    VirtIONetMMIOQemu *q = opaque;
    g_autofree VirtIOMMIOMigState *m = g_new0(VirtIOMMIOMigState, 1);
    VirtIONetMigState net;
    uint8_t *config = q->config, *mac_table = q->mac_table;
    VirtIOMMIOState *mmio = q->mmio;
    VirtIODevice *vdev = q->vdev;

    virtio_mmio_mig_save(mmio, m);
    virtio_net_mig_save(vdev, &net);
    if (m->dev.broken) {
        /* QEMU's "virtio/broken" subsection is not learned yet. */
        error_setg(errp, "%s: the device is broken (NEEDS_RESET); its state cannot be sent "
                   "in QEMU's layout", vdev->name);
        return false;
    }
    memset(q, 0, sizeof(*q));
    q->mmio = mmio;
    q->vdev = vdev;
    q->config = config;
    q->mac_table = mac_table;
    q->host_features_sel = m->host_features_sel;
    q->guest_features_sel = m->guest_features_sel;
    q->status = m->dev.status;
    q->isr = m->isr;
    q->queue_sel = m->queue_sel > UINT16_MAX ? UINT16_MAX : m->queue_sel;
    q->features = m->dev.guest_features;
    q->features_lo = (uint32_t)m->dev.guest_features;
    q->config_len = QEMU_NET_CONFIG_LEN;
    memcpy(q->config, net.mac, 6);
    q->config[6] = net.status & 0xff;
    q->config[7] = net.status >> 8;
    qemu_image_queues(q, m);
    memcpy(q->mac, net.mac, 6);
    q->net_status = net.status;
    q->promisc = 1;                 /* QEMU's default; we filter nothing */
    memset(q->vlans, 0xff, sizeof(q->vlans));
    q->mmio_guest_features[0] = (uint32_t)m->dev.guest_features;
    q->mmio_guest_features[1] = m->dev.guest_features >> 32;
    q->started = !!(m->dev.status & VIRTIO_CONFIG_S_DRIVER_OK);
    return true;
}

/* ---- Load: QEMU's image checked, then ours ---- */

static bool virtio_net_qemu_pre_load(void *opaque, Error **errp)
{
    VirtIONetMMIOQemu *q = opaque;

    q->got_features = q->got_rings = q->got_mmio = false;
    q->features = 0;
    q->started = 0;
    return true;
}

static bool all_bytes(const uint8_t *p, size_t n, uint8_t v)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != v) {
            return false;
        }
    }
    return true;
}

/* QEMU's device fields that this device has no counterpart for, at their defaults. */
static bool qemu_net_check_defaults(const VirtIONetMMIOQemu *q, Error **errp)
{
    const char *what = NULL;

    if (q->mergeable_rx_bufs) {
        what = "mergeable_rx_bufs";
    } else if (q->promisc != 1) {
        what = "promisc (off)";
    } else if (q->allmulti) {
        what = "allmulti";
    } else if (!all_bytes(q->vlans, sizeof(q->vlans), 0xff)) {
        what = "vlans (a VLAN filter)";
    } else if (!all_bytes(q->tail, sizeof(q->tail), 0)) {
        what = "has_vnet_hdr or a MAC filter flag";
    } else if (q->tx_waiting) {
        what = "tx_waiting";
    }
    if (what) {
        error_setg(errp, "%s: the stream's %s is not what this device supports",
                   q->vdev->name, what);
        return false;
    }
    return true;
}

static uint64_t halves(const uint32_t h[2])
{
    return (uint64_t)h[1] << 32 | h[0];
}

/*
 * One queue from QEMU's three views of it: the core's (num, desc,
 * last_avail_idx), "virtio/virtqueues" (ring addresses) and the
 * transport's (QueueNum, QueueReady, the addresses as registers).
 */
static bool qemu_queue_to_state(const VirtIONetMMIOQemu *q, unsigned int i, VirtQueueState *st,
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
     * and not returned are offered again, as our own streams do. Under
     * postcopy or a lazy restore that page may not be here, and a read
     * would wait with the BQL for a fault only the source or the file can
     * serve: then no buffer is taken to be in flight (what QEMU's
     * virtio-net leaves at a stop, and our sources always), and the
     * device's own checks at its first kick remain.
     */
    if (guest_ram_reads_may_wait()) {
        st->last_avail_idx = st->used_idx = vq->last_avail_idx;
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
    st->last_avail_idx = st->used_idx = ram_used;
    return true;
}

static bool qemu_image_to_state(const VirtIONetMMIOQemu *q, VirtIOMMIOMigState *m, Error **errp)
{
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
    if (q->num_queues < nq || q->num_queues > QEMU_NET_QUEUES) {
        error_setg(errp, "%s: %u queues in the stream, the device has %u (and QEMU's a "
                   "control queue)", q->vdev->name, q->num_queues, nq);
        return false;
    }
    /* The control queue: we have none, so the driver must never have set it up. */
    for (unsigned int i = nq; i < QEMU_VIRTIO_QUEUE_MAX; i++) {
        if (q->mq[i].ready || q->mq[i].num || halves(q->mq[i].desc) || halves(q->mq[i].avail) ||
            halves(q->mq[i].used) || q->rings[i].avail || q->rings[i].used ||
            (i < q->num_queues && (q->vq[i].desc || q->vq[i].last_avail_idx))) {
            error_setg(errp, "%s: queue %u is set up in the stream, but the device has %u "
                       "queues", q->vdev->name, i, nq);
            return false;
        }
    }
    memset(m, 0, sizeof(*m));
    m->host_features_sel = q->host_features_sel;
    m->guest_features_sel = q->guest_features_sel;
    m->queue_sel = q->queue_sel;
    m->isr = q->isr;
    m->dev.status = q->status;
    m->dev.guest_features = q->got_features ? q->features : q->features_lo;
    m->num_queues = nq;
    for (unsigned int i = 0; i < nq; i++) {
        if (!qemu_queue_to_state(q, i, &m->vq[i], errp)) {
            return false;
        }
    }
    return true;
}

static bool virtio_net_qemu_post_load(void *opaque, int version_id, Error **errp)
{
    VirtIONetMMIOQemu *q = opaque;
    g_autofree VirtIOMMIOMigState *m = g_new0(VirtIOMMIOMigState, 1);
    VirtIONetMigState net = { .status = q->net_status };

    memcpy(net.mac, q->mac, 6);
    if (!qemu_net_check_defaults(q, errp) || !virtio_net_mig_check(q->vdev, &net, errp) ||
        !qemu_image_to_state(q, m, errp) || !virtio_mmio_mig_load(q->mmio, m, errp)) {
        return false;
    }
    virtio_net_mig_apply(q->vdev, &net);
    return true;
}

/* ---- QEMU's layout ---- */

static bool qemu_features_loaded(void *opaque, int version_id, Error **errp)
{
    ((VirtIONetMMIOQemu *)opaque)->got_features = true;
    return true;
}

static bool qemu_rings_loaded(void *opaque, int version_id, Error **errp)
{
    ((VirtIONetMMIOQemu *)opaque)->got_rings = true;
    return true;
}

static bool qemu_mmio_loaded(void *opaque, int version_id, Error **errp)
{
    ((VirtIONetMMIOQemu *)opaque)->got_mmio = true;
    return true;
}

/* QEMU sends it whenever the device offers a feature above bit 31 (VERSION_1: always). */
static const VMStateDescription vmstate_qemu_64bit_features = {
    .name = "virtio/64bit_features",
    .version_id = 1,
    .minimum_version_id = 1,
    .post_load = qemu_features_loaded,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(features, VirtIONetMMIOQemu),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_qemu_rings = {
    .name = "virtqueue_state",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(avail, QemuVirtQueueRings),
        VMSTATE_UINT64(used, QemuVirtQueueRings),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_qemu_virtqueues = {
    .name = "virtio/virtqueues",
    .version_id = 1,
    .minimum_version_id = 1,
    .post_load = qemu_rings_loaded,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT_ARRAY(rings, VirtIONetMMIOQemu, QEMU_VIRTIO_QUEUE_MAX,
                             vmstate_qemu_rings, QemuVirtQueueRings),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_qemu_mmio_queue = {
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

static const VMStateDescription vmstate_qemu_mmio_state = {
    .name = "virtio_mmio/state",
    .version_id = 1,
    .minimum_version_id = 1,
    .post_load = qemu_mmio_loaded,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32_ARRAY(mmio_guest_features, VirtIONetMMIOQemu, 2),
        VMSTATE_STRUCT_ARRAY(mq, VirtIONetMMIOQemu, QEMU_VIRTIO_QUEUE_MAX,
                             vmstate_qemu_mmio_queue, QemuMMIOQueue),
        VMSTATE_END_OF_LIST()
    },
};

/* The transport's extra state: no fields, its registers in a subsection. */
static const VMStateDescription vmstate_qemu_mmio = {
    .name = "virtio_mmio",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription *const[]) {
        &vmstate_qemu_mmio_state,
        NULL
    },
};

static const VMStateDescription vmstate_qemu_extra_state = {
    .name = "virtio/extra_state",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        {
            .name = "extra_state", .type = VMS_STRUCT, .offset = 0,
            .size = sizeof(VirtIONetMMIOQemu), .vmsd = &vmstate_qemu_mmio,
        },
        VMSTATE_END_OF_LIST()
    },
};

static bool qemu_started_needed(void *opaque)
{
    return ((VirtIONetMMIOQemu *)opaque)->started;
}

static const VMStateDescription vmstate_qemu_started = {
    .name = "virtio/started",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = qemu_started_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(started, VirtIONetMMIOQemu),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_qemu_vq = {
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

/* The field QEMU's vmdesc calls "virtio" (type "virtio"): its inside. */
static const VMStateDescription vmstate_qemu_virtio = {
    .name = "virtio",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_load = virtio_net_qemu_pre_load,
    .fields = (const VMStateField[]) {
        /* The transport's config (virtio-mmio) */
        VMSTATE_UINT32(host_features_sel, VirtIONetMMIOQemu),
        VMSTATE_UINT32(guest_features_sel, VirtIONetMMIOQemu),
        VMSTATE_UINT32(guest_page_shift, VirtIONetMMIOQemu),
        /* The core */
        VMSTATE_UINT8(status, VirtIONetMMIOQemu),
        VMSTATE_UINT8(isr, VirtIONetMMIOQemu),
        VMSTATE_UINT16(queue_sel, VirtIONetMMIOQemu),
        VMSTATE_UINT32(features_lo, VirtIONetMMIOQemu),
        VMSTATE_UINT32(config_len, VirtIONetMMIOQemu),
        VMSTATE_VBUFFER_UINT32(config, VirtIONetMMIOQemu, config_len, QEMU_NET_CONFIG_LEN),
        VMSTATE_UINT32(num_queues, VirtIONetMMIOQemu),
        VMSTATE_STRUCT_VARRAY_UINT32(vq, VirtIONetMMIOQemu, num_queues, QEMU_NET_QUEUES,
                                     vmstate_qemu_vq, QemuVirtQueue),
        /* virtio-net's own */
        VMSTATE_UINT8_ARRAY(mac, VirtIONetMMIOQemu, 6),
        VMSTATE_UINT32(tx_waiting, VirtIONetMMIOQemu),
        VMSTATE_UINT32(mergeable_rx_bufs, VirtIONetMMIOQemu),
        VMSTATE_UINT16(net_status, VirtIONetMMIOQemu),
        VMSTATE_UINT8(promisc, VirtIONetMMIOQemu),
        VMSTATE_UINT8(allmulti, VirtIONetMMIOQemu),
        VMSTATE_UINT32(mac_table_len, VirtIONetMMIOQemu),
        /* 6 bytes an entry in QEMU's; we take none (bound 0) */
        VMSTATE_VBUFFER_UINT32(mac_table, VirtIONetMMIOQemu, mac_table_len, 0),
        VMSTATE_BUFFER(vlans, VirtIONetMMIOQemu),
        VMSTATE_BUFFER(tail, VirtIONetMMIOQemu),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription *const[]) {
        &vmstate_qemu_64bit_features,
        &vmstate_qemu_virtqueues,
        &vmstate_qemu_extra_state,
        &vmstate_qemu_started,
        NULL
    },
};

static const VMStateDescription vmstate_virtio_net_mmio = {
    .name = "virtio-net",
    .size = sizeof(VirtIONetMMIOQemu),
    .version_id = 11,
    .minimum_version_id = 11,
    .pre_save = virtio_net_qemu_pre_save,
    .post_load = virtio_net_qemu_post_load,
    .fields = (const VMStateField[]) {
        {
            .name = "virtio", .type = VMS_STRUCT, .offset = 0,
            .size = sizeof(VirtIONetMMIOQemu), .vmsd = &vmstate_qemu_virtio,
        },
        VMSTATE_END_OF_LIST()
    },
};

VirtIONetMMIOQemu *virtio_net_mmio_state_register(VirtIOMMIOState *mmio)
{
    VirtIONetMMIOQemu *q = g_new0(VirtIONetMMIOQemu, 1);
    g_autofree char *idstr = g_strdup_printf("virtio-mmio@%016" PRIx64 "/virtio-net",
                                             (uint64_t)virtio_mmio_base(mmio));

    q->mmio = mmio;
    q->vdev = virtio_mmio_vdev(mmio);
    assert(q->vdev->ops->device_id == VIRTIO_ID_NET);
    q->config = g_malloc0(QEMU_NET_CONFIG_LEN);
    /* The VBUFFER needs a pointer even for its 0 bytes. */
    q->mac_table = g_malloc0(1);
    /* QEMU's instance: 0, the address makes the name unique. */
    vmstate_register(idstr, 0, &vmstate_virtio_net_mmio, q);
    return q;
}

void virtio_net_mmio_state_unregister(VirtIONetMMIOQemu *q)
{
    vmstate_unregister(&vmstate_virtio_net_mmio, q);
    g_free(q->config);
    g_free(q->mac_table);
    g_free(q);
}

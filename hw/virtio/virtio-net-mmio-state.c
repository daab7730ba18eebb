/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A virtio-net behind virtio-mmio, in the section QEMU 7.2 and 10.0 send
 * for it: "virtio-mmio@<base, 16 hex digits>/virtio-net", instance 0,
 * version 11, one field "virtio" holding the transport's config, the
 * virtio core's state, the queues (QEMU's generic frame, shared in
 * virtio-mmio-qemu.c), the device's own fields and QEMU's "virtio/..."
 * subsections (the layout, learned from QEMU's streams, is in
 * docs/devel/qemu-interop.md). Everything loads into a staging image;
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
#include "virtio-mmio-qemu.h"
#include <linux/virtio_config.h>
#include <linux/virtio_ids.h>
#include <linux/virtio_net.h>

/* virtio-net without multiqueue: rx, tx and the control queue (64 entries). */
#define QEMU_NET_QUEUES         3
#define QEMU_NET_CTRL_QUEUE_NUM 64
#define QEMU_NET_CONFIG_LEN     8       /* mac[6], status (le16) */
#define QEMU_NET_VLAN_BYTES     512     /* a bit per VLAN id */
#define QEMU_NET_TAIL_BYTES     11      /* has_vnet_hdr and six filter flags, all 0 here */

struct VirtIONetMMIOQemu {
    QemuVirtioImage img;        /* first: the shared fields address it at offset 0 */

    /* virtio-net's own part of the wire image (staging, BQL). */
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
};

QEMU_BUILD_BUG_ON(offsetof(VirtIONetMMIOQemu, img) != 0);

/* ---- Save: our state in QEMU's image ---- */

static bool virtio_net_qemu_pre_save(void *opaque, Error **errp)
{
    VirtIONetMMIOQemu *q = opaque;
    VirtIODevice *vdev = q->img.vdev;
    VirtIONetMigState net;

    if (!qemu_virtio_image_save(&q->img, QEMU_NET_QUEUES, QEMU_NET_CTRL_QUEUE_NUM, errp)) {
        return false;
    }
    virtio_net_mig_save(vdev, &net);
    q->img.config_len = QEMU_NET_CONFIG_LEN;
    memcpy(q->img.config, net.mac, 6);
    q->img.config[6] = net.status & 0xff;
    q->img.config[7] = net.status >> 8;
    memcpy(q->mac, net.mac, 6);
    q->tx_waiting = 0;
    q->mergeable_rx_bufs = 0;
    q->net_status = net.status;
    q->promisc = 1;                 /* QEMU's default; we filter nothing */
    q->allmulti = 0;
    q->mac_table_len = 0;
    memset(q->vlans, 0xff, sizeof(q->vlans));
    memset(q->tail, 0, sizeof(q->tail));
    return true;
}

/* ---- Load: QEMU's image checked, then ours ---- */

static bool virtio_net_qemu_pre_load(void *opaque, Error **errp)
{
    qemu_virtio_image_pre_load(&((VirtIONetMMIOQemu *)opaque)->img);
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
    }
    /*
     * tx_waiting is not refused: QEMU sets it while a TX pass is owed (its
     * bottom half scheduled when the VM stopped), and QEMU's destination
     * runs that pass when the VM starts. Ours does so for every queue
     * anyway: the device thread looks at each one once as it starts
     * (virtio.c), so whatever the guest put in the TX ring goes out.
     */
    if (what) {
        error_setg(errp, "%s: the stream's %s is not what this device supports",
                   q->img.vdev->name, what);
        return false;
    }
    return true;
}

static bool virtio_net_qemu_post_load(void *opaque, int version_id, Error **errp)
{
    VirtIONetMMIOQemu *q = opaque;
    VirtIONetMigState net = { .status = q->net_status };

    memcpy(net.mac, q->mac, 6);
    if (!qemu_net_check_defaults(q, errp) || !virtio_net_mig_check(q->img.vdev, &net, errp) ||
        !qemu_virtio_image_load(&q->img, QEMU_NET_QUEUES, errp)) {
        return false;
    }
    virtio_net_mig_apply(q->img.vdev, &net);
    return true;
}

/* ---- QEMU's layout ---- */

/* The field QEMU's vmdesc calls "virtio" (type "virtio"): its inside. */
static const VMStateDescription vmstate_qemu_virtio = {
    .name = "virtio",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_load = virtio_net_qemu_pre_load,
    .fields = (const VMStateField[]) {
        /* The transport's config, the core, the queues (virtio-mmio-qemu.h) */
        QEMU_VIRTIO_HEAD_FIELDS(QEMU_NET_CONFIG_LEN, QEMU_NET_QUEUES),
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
        &qemu_vmstate_64bit_features,
        &qemu_vmstate_virtqueues,
        &qemu_vmstate_extra_state,
        &qemu_vmstate_started,
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

VirtIONetMMIOQemu *virtio_net_mmio_state_add(VirtIOMMIOState *mmio)
{
    VirtIONetMMIOQemu *q = g_new0(VirtIONetMMIOQemu, 1);
    g_autofree char *idstr = g_strdup_printf("virtio-mmio@%016" PRIx64 "/virtio-net",
                                             (uint64_t)virtio_mmio_base(mmio));

    qemu_virtio_image_init(&q->img, mmio, QEMU_NET_CONFIG_LEN);
    assert(q->img.vdev->ops->device_id == VIRTIO_ID_NET);
    /* The VBUFFER needs a pointer even for its 0 bytes. */
    q->mac_table = g_malloc0(1);
    /* QEMU's instance: 0, the address makes the name unique. */
    vmstate_register(idstr, 0, &vmstate_virtio_net_mmio, q);
    return q;
}

void virtio_net_mmio_state_register(VirtIOMMIOState *mmio)
{
    virtio_net_mmio_state_add(mmio);
}

void virtio_net_mmio_state_unregister(VirtIONetMMIOQemu *q)
{
    vmstate_unregister(&vmstate_virtio_net_mmio, q);
    g_free(q->img.config);
    g_free(q->mac_table);
    g_free(q);
}

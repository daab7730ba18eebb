/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The part of QEMU's "virtio" field that every virtio device behind
 * virtio-mmio sends the same way (learned from QEMU 7.2's and 10.0's
 * streams, docs/devel/qemu-interop.md): the transport's config, the core
 * (status, ISR, queue_sel, the low feature word, a cached config space,
 * the queues), then, after the device's own fields, the subsections
 * "virtio/64bit_features", "virtio/virtqueues", "virtio/extra_state"
 * (the transport's queue registers) and "virtio/started".
 *
 * A device's section embeds QemuVirtioImage as its first member (offset
 * 0, so the shared subsections apply to the device's struct), lists the
 * head fields with QEMU_VIRTIO_HEAD_FIELDS, its own, and the shared
 * subsections. Its pre_save calls qemu_virtio_image_save(); its post_load
 * checks its own fields, then qemu_virtio_image_load() checks everything
 * and applies the transport's and the core's part. virtio-net and
 * virtio-blk use it (virtio-net-mmio-state.c, virtio-blk-mmio-state.c).
 */
#ifndef HW_VIRTIO_VIRTIO_MMIO_QEMU_H
#define HW_VIRTIO_VIRTIO_MMIO_QEMU_H

#include "migration/vmstate.h"
#include "virtio-mmio-mig.h"

/* QEMU's virtqueue arrays in the subsections: VIRTIO_QUEUE_MAX entries each. */
#define QEMU_VIRTIO_QUEUE_MAX   1024
/* The vring alignment QEMU sends for every queue of a modern transport. */
#define QEMU_VRING_ALIGN        4096

typedef struct QemuVirtQueue {
    uint32_t num;
    uint32_t align;
    uint64_t desc;
    uint16_t last_avail_idx;
} QemuVirtQueue;

typedef struct QemuVirtQueueRings {
    uint64_t avail;
    uint64_t used;
} QemuVirtQueueRings;

typedef struct QemuMMIOQueue {
    uint16_t num;
    bool ready;
    uint32_t desc[2];
    uint32_t avail[2];
    uint32_t used[2];
} QemuMMIOQueue;

typedef struct QemuVirtioImage {
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
    uint8_t *config;            /* the device's config bytes (QEMU's cache; not used on load) */
    uint32_t num_queues;
    QemuVirtQueue vq[VIRTIO_MMIO_MAX_QUEUES];
    uint64_t features;
    QemuVirtQueueRings rings[QEMU_VIRTIO_QUEUE_MAX];
    uint32_t mmio_guest_features[2];
    QemuMMIOQueue mq[QEMU_VIRTIO_QUEUE_MAX];
    uint8_t started;

    /* Which subsections a load brought (staging, BQL). */
    bool got_features, got_rings, got_mmio;
    /*
     * Chains in use that the device's own part carries, per queue (staging,
     * BQL): a save keeps them in last_avail_idx, a load takes them as in
     * use (not offered again). Set by the device before _save and _load.
     */
    uint16_t inuse[VIRTIO_MMIO_MAX_QUEUES];
} QemuVirtioImage;

/*
 * The head of the "virtio" field, up to the queues, for a device struct
 * that embeds QemuVirtioImage at offset 0 (so the offsets are the image's,
 * and the fields keep QEMU's plain names in our vmdesc).
 */
#define QEMU_VIRTIO_HEAD_FIELDS(_config_max, _queues_max)                           \
    VMSTATE_UINT32(host_features_sel, QemuVirtioImage),                             \
    VMSTATE_UINT32(guest_features_sel, QemuVirtioImage),                            \
    VMSTATE_UINT32(guest_page_shift, QemuVirtioImage),                              \
    VMSTATE_UINT8(status, QemuVirtioImage),                                         \
    VMSTATE_UINT8(isr, QemuVirtioImage),                                            \
    VMSTATE_UINT16(queue_sel, QemuVirtioImage),                                     \
    VMSTATE_UINT32(features_lo, QemuVirtioImage),                                   \
    VMSTATE_UINT32(config_len, QemuVirtioImage),                                    \
    VMSTATE_VBUFFER_UINT32(config, QemuVirtioImage, config_len, _config_max),       \
    VMSTATE_UINT32(num_queues, QemuVirtioImage),                                    \
    VMSTATE_STRUCT_VARRAY_UINT32(vq, QemuVirtioImage, num_queues, _queues_max,      \
                                 qemu_vmstate_virtqueue, QemuVirtQueue)

extern const VMStateDescription qemu_vmstate_virtqueue;
/* The four subsections, in QEMU's order. */
extern const VMStateDescription qemu_vmstate_64bit_features;
extern const VMStateDescription qemu_vmstate_virtqueues;
extern const VMStateDescription qemu_vmstate_extra_state;
extern const VMStateDescription qemu_vmstate_started;

/* Binds @q to its transport and device, @config_len bytes of config cache. Once. */
void qemu_virtio_image_init(QemuVirtioImage *q, VirtIOMMIOState *mmio, uint32_t config_len);
/* pre_load: forget what a previous load brought. */
void qemu_virtio_image_pre_load(QemuVirtioImage *q);
/*
 * Save: the transport's and the core's state into @q, with @qemu_nq
 * queues in QEMU's list (the device's, then unset ones QEMU would have of
 * size @extra_num). The caller fills q->config and q->inuse. False (errp
 * set) if the state cannot be said in QEMU's layout (a broken device).
 */
bool qemu_virtio_image_save(QemuVirtioImage *q, unsigned int qemu_nq, uint32_t extra_num,
                            Error **errp);
/*
 * Load: checks @q against the device (up to @qemu_nq_max queues in the
 * stream, the ones the device lacks never set up; q->inuse chains in use
 * on each, no more, no fewer) and applies it through
 * virtio_mmio_mig_load(); nothing is applied on failure.
 */
bool qemu_virtio_image_load(QemuVirtioImage *q, unsigned int qemu_nq_max, Error **errp);

#endif

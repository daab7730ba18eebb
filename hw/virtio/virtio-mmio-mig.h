/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What a virtio-mmio transport and its device migrate, as plain values:
 * virtio_mmio_mig_save() gathers them, virtio_mmio_mig_load() checks them
 * all and only then applies them, so a refused load leaves the device as
 * it was. The stream layout is not here: virtio-net-mmio-state.c writes
 * and reads QEMU's. BQL held, device thread stopped (VM stopped).
 */
#ifndef HW_VIRTIO_VIRTIO_MMIO_MIG_H
#define HW_VIRTIO_VIRTIO_MMIO_MIG_H

#include "hw/virtio/virtio.h"
#include "hw/virtio/virtio-mmio.h"

/* Queues a migratable device may have (the staging arrays' bound). */
#define VIRTIO_MMIO_MAX_QUEUES 16

typedef struct VirtIOMMIOMigState {
    uint32_t host_features_sel;
    uint32_t guest_features_sel;
    uint32_t queue_sel;
    uint32_t isr;
    VirtIODeviceState dev;
    uint32_t num_queues;
    VirtQueueState vq[VIRTIO_MMIO_MAX_QUEUES];
} VirtIOMMIOMigState;

void virtio_mmio_mig_save(VirtIOMMIOState *s, VirtIOMMIOMigState *m);
/* Checks @m against the device (queue count, ISR bits, virtio_device_check_state), then applies. */
bool virtio_mmio_mig_load(VirtIOMMIOState *s, const VirtIOMMIOMigState *m, Error **errp);
VirtIODevice *virtio_mmio_vdev(const VirtIOMMIOState *s);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * virtio-mmio (version 2) and split-ring definitions the firmware's
 * drivers share: the virtio-net driver (virtio-net.c) and the hostile one
 * that misprograms it on purpose (virtio-bad.c). Numbers from virtio 1.x,
 * sections 2.1 (status), 2.7 (split rings), 4.2.2 (the registers), 6
 * (reserved feature bits).
 */
#ifndef GUEST_VIRTIO_H
#define GUEST_VIRTIO_H

#include <stdint.h>

/* virtio-mmio registers */
#define VMMIO_MAGIC             0x000
#define VMMIO_VERSION           0x004
#define VMMIO_DEVICE_ID         0x008
#define VMMIO_DEVICE_FEATURES   0x010
#define VMMIO_DEVICE_FEATURES_SEL 0x014
#define VMMIO_DRIVER_FEATURES   0x020
#define VMMIO_DRIVER_FEATURES_SEL 0x024
#define VMMIO_QUEUE_SEL         0x030
#define VMMIO_QUEUE_NUM_MAX     0x034
#define VMMIO_QUEUE_NUM         0x038
#define VMMIO_QUEUE_READY       0x044
#define VMMIO_QUEUE_NOTIFY      0x050
#define VMMIO_STATUS            0x070
#define VMMIO_QUEUE_DESC        0x080   /* low, high at +4 */
#define VMMIO_QUEUE_DRIVER      0x090
#define VMMIO_QUEUE_DEVICE      0x0a0
#define VMMIO_CONFIG            0x100   /* virtio_net_config: mac[6] first */

#define VMMIO_MAGIC_VALUE       0x74726976      /* "virt" */
#define VIRTIO_ID_NET           1

#define STATUS_ACKNOWLEDGE      1
#define STATUS_DRIVER           2
#define STATUS_DRIVER_OK        4
#define STATUS_FEATURES_OK      8
#define STATUS_NEEDS_RESET      64
#define STATUS_FAILED           128

#define VIRTIO_NET_F_MAC        (1ULL << 5)
#define VIRTIO_RING_F_INDIRECT_DESC (1ULL << 28)
#define VIRTIO_F_VERSION_1      (1ULL << 32)

#define VQ_RX                   0
#define VQ_TX                   1
#define VRING_DESC_F_NEXT       1
#define VRING_DESC_F_WRITE      2
#define VRING_DESC_F_INDIRECT   4
#define VRING_AVAIL_F_NO_INTERRUPT 1
#define VRING_USED_F_NO_NOTIFY  1

struct vq_desc {
    uint64_t addr;
    uint32_t len;
    uint16_t flags;
    uint16_t next;
};

/* 32-bit register accesses, the only width virtio-mmio's control registers take. */
static inline uint32_t mmio_read(uint64_t base, unsigned reg)
{
    return *(volatile uint32_t *)(base + reg);
}

static inline void mmio_write(uint64_t base, unsigned reg, uint32_t v)
{
    *(volatile uint32_t *)(base + reg) = v;
}

static inline void mmio_write64(uint64_t base, unsigned reg, uint64_t v)
{
    mmio_write(base, reg, (uint32_t)v);
    mmio_write(base, reg + 4, (uint32_t)(v >> 32));
}

#endif /* GUEST_VIRTIO_H */

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The firmware's virtio-blk driver (virtio-blk.c) and its modes:
 * blkverify (blk.c), blkbench (blkbench.c) and blkhostile (blk-bad.c). Numbers from virtio 1.x,
 * section 5.2.
 */
#ifndef GUEST_VBLK_H
#define GUEST_VBLK_H

#include <stdbool.h>
#include <stdint.h>

#define VIRTIO_ID_BLOCK         2
#define VBLK_QSIZE              256
#define VBLK_MAX_SLOTS          64      /* requests in flight at most (3 descriptors each) */
#define VBLK_SLOT_BYTES         4096    /* a slot's data buffer */
#define VBLK_CONFIG_BYTES       60      /* struct virtio_blk_config up to unused1[3] */
#define VBLK_SECTOR             512

#define VBLK_T_IN               0
#define VBLK_T_OUT              1
#define VBLK_T_FLUSH            4
#define VBLK_T_GET_ID           8
#define VBLK_T_DISCARD          11
#define VBLK_T_WRITE_ZEROES     13

#define VBLK_S_OK               0
#define VBLK_S_IOERR            1
#define VBLK_S_UNSUPP           2

#define VBLK_F_FLUSH            (1ULL << 9)

struct vblk_info {
    uint64_t want;              /* features asked for besides VERSION_1 (in) */
    uint64_t base;              /* the transport in use */
    uint64_t offered, features;
    uint32_t num_max;
    uint16_t qsize;
    unsigned slots;             /* request slots the queue holds */
    uint64_t capacity;          /* sectors */
    uint8_t config[VBLK_CONFIG_BYTES];
    bool probed;
};

extern struct vblk_info g_vblk;

/* CPL3. vblk_setup: (re)initialize the device, its queue 0 empty. */
enum vnet_error vblk_setup(uint64_t want);
uint8_t *vblk_buf(unsigned slot);
void vblk_submit(unsigned slot, uint32_t type, uint64_t sector, uint32_t len);
void vblk_submit_buf(unsigned slot, uint32_t type, uint64_t sector, void *buf, uint32_t len);
void vblk_offer(uint16_t head);
void vblk_kick(void);
bool vblk_poll(uint16_t *head, uint32_t *len, uint8_t *status);
uint32_t vblk_device_status(void);
/* Raw access for blkhostile's chains. */
struct vq_desc *vblk_desc_table(void);
uint8_t *vblk_status_byte(unsigned slot);
void *vblk_hdr(unsigned slot);

/* The sector image blkverify writes and the host checks (tests/functional). */
#define VBLK_MAGIC              0x31544b5342564c42ULL   /* "BLVBSKT1" */
#define VBLK_WORDS              (VBLK_SECTOR / 8)

#endif /* GUEST_VBLK_H */

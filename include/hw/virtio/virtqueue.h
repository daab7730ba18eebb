/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Split virtqueues (virtio 1.x, section 2.7): the descriptor table, the
 * driver ("avail") ring and the device ("used") ring live in guest RAM at
 * addresses the driver programs. The guest is hostile: every address,
 * length and index read from those rings is checked before use, each
 * descriptor is read once into a local copy (no double fetch), and any
 * violation marks the queue broken (virtqueue_pop() returns NULL from then
 * on) and reports once through the queue's error callback. Nothing a guest
 * writes can make us touch memory outside guest RAM.
 */
#ifndef HW_VIRTIO_VIRTQUEUE_H
#define HW_VIRTIO_VIRTQUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <glib.h>
#include "qemu/typedefs.h"

/* The largest queue a device may offer (QueueNumMax), and so the longest chain. */
#define VIRTQUEUE_MAX_SIZE 1024

typedef struct VirtQueue VirtQueue;

/*
 * One descriptor chain taken from the avail ring. out_sg are the buffers
 * the device reads (driver to device), in_sg those it writes. The iovecs
 * point straight into guest RAM; in_addr keeps their guest-physical
 * addresses so that virtqueue_push() can mark what was written dirty, and
 * out_addr theirs, so that a migration can name a held chain's buffers.
 * Allocated by virtqueue_pop() (or virtqueue_elem_load()) in one block;
 * free it with g_free() after virtqueue_push() (or virtqueue_unpop()).
 */
typedef struct VirtQueueElement {
    unsigned int index;         /* head descriptor: the used ring's id */
    unsigned int out_num;
    unsigned int in_num;
    size_t out_len;             /* bytes in out_sg */
    size_t in_len;              /* bytes in in_sg */
    struct iovec *out_sg;
    struct iovec *in_sg;
    uint64_t *in_addr;
    uint64_t *out_addr;
} VirtQueueElement;

/* Called once per queue, the first time the guest breaks it; any thread. */
typedef void VirtQueueErrorFn(void *opaque, VirtQueue *vq, const char *msg);

/*
 * Ownership of a queue's fields:
 *  - config (size, addresses, ready, negotiated ring features): written with
 *    the BQL held while no handler runs (the device is stopped), read by the
 *    handler afterwards;
 *  - the ring state (last_avail_idx, used_idx, inuse, signalled_used*): the
 *    queue's handler: the device thread while the device runs, else
 *    whoever holds the BQL (reset, migration);
 *  - broken: atomic; any thread sets it, the BQL holder clears it on reset.
 */
struct VirtQueue {
    /* Config (BQL, device stopped). */
    unsigned int index;
    uint16_t num_max;           /* QueueNumMax, a power of two */
    uint16_t num;               /* QueueNum the driver chose */
    bool ready;                 /* rings validated and mapped */
    bool event_idx;             /* VIRTIO_RING_F_EVENT_IDX negotiated */
    bool indirect;              /* VIRTIO_RING_F_INDIRECT_DESC negotiated */
    uint64_t desc_addr;
    uint64_t avail_addr;
    uint64_t used_addr;
    /* Host views of the three rings, valid while ready. */
    uint8_t *desc;
    uint8_t *avail;
    uint8_t *used;
    RAMBlock *used_rb;          /* where the used ring lives, for dirty marking */
    uint64_t used_ram_offset;

    /* Ring state (the queue's handler). */
    uint16_t last_avail_idx;    /* next avail ring slot to take */
    uint16_t used_idx;          /* our copy of used->idx */
    uint16_t signalled_used;    /* used_idx at the last interrupt (event idx) */
    bool signalled_used_valid;
    unsigned int inuse;         /* popped, not yet pushed */
    bool notification;          /* kicks wanted (virtqueue_set_notification) */

    int broken;                 /* atomic */
    VirtQueueErrorFn *error_fn;
    void *error_opaque;

    /* Scratch for one chain being walked (the queue's handler). */
    struct iovec scratch_iov[VIRTQUEUE_MAX_SIZE];
    uint64_t scratch_addr[VIRTQUEUE_MAX_SIZE];
};

/* Sets the constant part: index, QueueNumMax and where errors go. */
void virtqueue_init(VirtQueue *vq, unsigned int index, uint16_t num_max,
                    VirtQueueErrorFn *error_fn, void *opaque);
/* Back to the state after device reset: not ready, num = num_max, no addresses. */
void virtqueue_reset(VirtQueue *vq);

/*
 * virtqueue_enable: check the driver's size and ring addresses (power-of-two
 * size up to num_max, alignment, each ring wholly inside one guest RAM
 * range) and map the rings. On failure the queue is left not ready and
 * broken, and the reason is reported through the error callback. BQL,
 * device stopped.
 */
bool virtqueue_enable(VirtQueue *vq, bool event_idx, bool indirect);
void virtqueue_disable(VirtQueue *vq);

/*
 * A queue as migrated: its registers, and for a ready queue the ring
 * indices. Chains the device holds are rewound (offered again on load),
 * but those a device's own state carries (virtio-blk's requests held for
 * a retry): inuse of them, taken and not returned, so last_avail_idx ==
 * used_idx + inuse.
 */
typedef struct VirtQueueState {
    uint16_t num;
    bool ready;
    uint64_t desc_addr;
    uint64_t avail_addr;
    uint64_t used_addr;
    uint16_t last_avail_idx;
    uint16_t used_idx;
    uint16_t inuse;             /* chains the device's state carries (0: none) */
    uint16_t signalled_used;
    bool signalled_used_valid;
} VirtQueueState;

/* BQL, device stopped. Every chain in use is rewound (inuse 0). */
void virtqueue_get_state(const VirtQueue *vq, VirtQueueState *st);
/*
 * For a device whose state carries its chains in use: @st from
 * virtqueue_get_state() with them kept (last_avail_idx where the device
 * took them to). @kept must be 0 (all rewound) or vq->inuse: a chain in
 * use that the device's state does not carry would be lost. BQL, device
 * stopped.
 */
void virtqueue_state_keep_inuse(const VirtQueue *vq, VirtQueueState *st, uint16_t kept);
/*
 * virtqueue_check_state: would @st (from a stream) be a queue we can run?
 * The checks of virtqueue_enable() and no chain in flight but the inuse
 * the device's state carries (last_avail_idx == used_idx + inuse: the
 * save rewinds the others). Reads no guest RAM.
 */
bool virtqueue_check_state(const VirtQueue *vq, const VirtQueueState *st, Error **errp);
/*
 * virtqueue_check_rings: the rings in guest RAM as virtqueue_pop() would
 * find them from a checked @st: the used ring's idx equal to used_idx, the
 * driver at most a queue ahead, every offered chain good (@indirect:
 * VIRTIO_RING_F_INDIRECT_DESC negotiated). Reads guest RAM (the caller
 * knows it is all there), writes none. The guest writes all of it: false
 * means the device breaks (as at the first kick), not that @st is wrong.
 */
bool virtqueue_check_rings(const VirtQueue *vq, const VirtQueueState *st, bool indirect,
                           Error **errp);
/*
 * Applies a checked @st: the queue resumes where the other side stopped.
 * signalled_used is not taken (a wrong one could lose an interrupt): the
 * next used buffer interrupts.
 */
void virtqueue_set_state(VirtQueue *vq, const VirtQueueState *st, bool event_idx,
                         bool indirect);

/*
 * virtqueue_elem_load: a chain in use as a stream names it, for a queue of
 * @num entries: head @index, @out_num buffers the device reads then
 * @in_num it writes, addresses in @addr and lengths in @len (out first).
 * Each is checked as virtqueue_pop() checks a descriptor (a head inside
 * the queue, at most VIRTQUEUE_MAX_SIZE buffers, none empty, each inside
 * one guest RAM range) and mapped; reads no guest RAM. NULL with @errp
 * set (naming the first bad value) if any is wrong. BQL.
 */
VirtQueueElement *virtqueue_elem_load(uint16_t num, unsigned int index, unsigned int out_num,
                                      unsigned int in_num, const uint64_t *addr,
                                      const uint64_t *len, Error **errp);

/* Marks the queue broken and reports @fmt once. Any thread. */
void virtqueue_error(VirtQueue *vq, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* Marks the queue broken without a report (its device broke elsewhere). */
void virtqueue_set_broken(VirtQueue *vq);
bool virtqueue_is_broken(VirtQueue *vq);

/* ---- Data path: the queue's handler only ---- */

/* True if the driver has made no buffer available (or the queue is broken). */
bool virtqueue_empty(VirtQueue *vq);
/*
 * virtqueue_pop: take the next available chain. Returns NULL if there is
 * none, or if the queue is (or just became) broken.
 */
VirtQueueElement *virtqueue_pop(VirtQueue *vq);
/* Gives the last popped element back: the next pop returns it again. */
void virtqueue_unpop(VirtQueue *vq, VirtQueueElement *elem);
/*
 * virtqueue_fill: put @elem in the used ring at offset @idx from used_idx,
 * having written @len bytes into its in_sg (marked dirty for migration).
 * virtqueue_flush: publish @count filled entries (used->idx). The guest
 * sees nothing until the flush.
 */
void virtqueue_fill(VirtQueue *vq, const VirtQueueElement *elem, uint32_t len,
                    unsigned int idx);
void virtqueue_flush(VirtQueue *vq, unsigned int count);
/* virtqueue_fill() at 0 and virtqueue_flush(1). */
void virtqueue_push(VirtQueue *vq, const VirtQueueElement *elem, uint32_t len);
/*
 * virtqueue_should_notify: does the driver want an interrupt for what was
 * flushed since the last one (VIRTQ_AVAIL_F_NO_INTERRUPT, or used_event
 * with event idx)? Records the interrupt as sent when it says yes.
 */
bool virtqueue_should_notify(VirtQueue *vq);
/*
 * virtqueue_set_notification: ask the driver to kick (@enable) or not to
 * kick (VIRTQ_USED_F_NO_NOTIFY, or avail_event with event idx) when it
 * adds buffers. After enabling, check virtqueue_empty() again: a buffer
 * added just before is not kicked.
 */
void virtqueue_set_notification(VirtQueue *vq, bool enable);

/* Copy between a flat buffer and an element's in_sg / out_sg, from byte @offset. */
size_t virtqueue_elem_write(const VirtQueueElement *elem, size_t offset, const void *buf,
                            size_t len);
size_t virtqueue_elem_read(const VirtQueueElement *elem, size_t offset, void *buf,
                           size_t len);

#endif

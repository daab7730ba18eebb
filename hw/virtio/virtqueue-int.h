/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What virtqueue.c (the rings at run time) shares with virtqueue-state.c
 * (the rings as a migration stream states them): the checks a queue's
 * configuration must pass and the chain walk, so that a loaded queue is
 * held to exactly the rules a driver's is.
 */
#ifndef HW_VIRTIO_VIRTQUEUE_INT_H
#define HW_VIRTIO_VIRTQUEUE_INT_H

#include "hw/virtio/virtqueue.h"

#define DESC_SIZE 16

/* A chain being walked: counts into the queue's scratch arrays. */
typedef struct ChainWalk {
    unsigned int out_num, in_num;
    size_t out_len, in_len;
} ChainWalk;

static inline uint16_t ring_load16(const uint8_t *p)
{
    return GUINT16_FROM_LE(__atomic_load_n((const uint16_t *)p, __ATOMIC_RELAXED));
}

static inline uint16_t ring_load16_acquire(const uint8_t *p)
{
    return GUINT16_FROM_LE(__atomic_load_n((const uint16_t *)p, __ATOMIC_ACQUIRE));
}

/*
 * NULL if a queue of @num entries with these rings is one we can run; else
 * why not (the caller frees it). Looks up guest RAM but reads none of it.
 */
char *virtqueue_config_problem(const VirtQueue *vq, uint32_t num, uint64_t desc,
                               uint64_t avail, uint64_t used);
/* Maps the rings the config names; virtqueue_config_problem() said they fit. */
void virtqueue_map(VirtQueue *vq, bool event_idx, bool indirect);
/* Chains the driver offers (avail idx - last_avail_idx); false (reported) if garbage. */
bool virtqueue_num_heads(VirtQueue *vq, unsigned int *heads);
/* Walks the chain at @head into the scratch arrays; false (reported) if it is bad. */
bool virtqueue_walk_chain(VirtQueue *vq, ChainWalk *w, unsigned int head);

#endif

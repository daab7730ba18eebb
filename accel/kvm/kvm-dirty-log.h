/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to accel/kvm: what the dirty-log clients (kvm-dirty-clients.c)
 * need from the mode table (kvm-dirty.c), and the client itself, which the
 * unit tests look into.
 */
#ifndef ACCEL_KVM_DIRTY_LOG_H
#define ACCEL_KVM_DIRTY_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"
#include "system/kvm-dirty-client.h"

/* The mode's work before a sync reads its slots (ring: harvest). 0 or -errno. */
int kvm_dirty_log_sync_prepare(KVMState *s);
/* slot->dirty_bmap := what KVM has for @slot (the mode's read). 0 or -errno. */
int kvm_dirty_log_read_slot(KVMState *s, KVMSlot *slot);
/*
 * Re-arms the pages [first, first+npages) of @slot whose bits are in
 * slot->dirty_bmap (never others) and drops those bits. 0 (also when the
 * mode needs no clear) or -errno.
 */
int kvm_dirty_log_clear_slot(KVMState *s, KVMSlot *slot, uint64_t first, uint64_t npages);
/*
 * @slot gains its first bitmap client (@on) or loses its last: its
 * dirty_bmap (and the mode's own bitmaps) are allocated or freed.
 * Before the slot starts logging for the client, after it stopped.
 */
void kvm_dirty_log_track_slot(KVMState *s, KVMSlot *slot, bool on);

/* One slot of a client. All fields: kvm-dirty-clients.c's clients_lock. */
typedef struct KVMDirtyClientSlot {
    /*
     * Set: handed to this client by another client's sync or clear and not
     * taken yet. NULL: the slot is not tracked. Allocated at start.
     */
    unsigned long *untaken;
    bool pending;               /* untaken may hold a set bit (clear: it is all zero) */
    bool read;                  /* a sync of this client read the slot: it may clear */
    /*
     * The client holds a logging reference on the slot: at start, or (a
     * deferred client) from kvm_dirty_client_arm() on. Written under
     * log_lock too, by the client's own thread; read by its syncs and stop.
     */
    bool armed;
} KVMDirtyClientSlot;

struct KVMDirtyClient {
    KVMState *s;
    const char *name;
    KVMDirtyClientSlot *slots;  /* one per KVMSlot, indexed like s->slots; immutable array */
    int ntracked;               /* immutable */
};

#endif

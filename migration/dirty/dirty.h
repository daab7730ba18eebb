/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The migration's dirty bitmaps: one bit per page per RAMBlock, fed a word
 * at a time from the KVM slot bitmaps and the VMM's software bitmap, with an
 * incremental count of the pages still to send. Only dirty.c changes a
 * DirtyTracker; its one user is the precopy page source (dirty-scan.c) in
 * mig/src, so nothing here takes a lock until postcopy shares the tracker
 * (dirty_tracker_share: then mig/src-rp claims pages too, and every claim
 * holds claim_lock). query-migrate reads the counters from the main
 * thread: single aligned words, a torn read is impossible.
 */
#ifndef MIGRATION_DIRTY_H
#define MIGRATION_DIRTY_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include "qemu/typedefs.h"
#include "system/kvm-dirty-client.h"

typedef struct RAMBlockDirty {
    RAMBlock *rb;
    uint64_t npages;
    /* Set: the page changed since it was last sent (all set at start). Cleared by a claim. */
    unsigned long *send_bmap;
    /* Set: the chunk's KVM bits were read but not re-armed (clear-log). Cleared by a claim. */
    unsigned long *clear_bmap;
    /*
     * Clear: the page reads as zero without being read: the kernel showed
     * it empty (qemu_pagemap_data_pages) at a moment after which every
     * write to it is caught (dirty.c says when that is in each mode), and
     * no sync since harvested a write to it. Set by syncs for the pages
     * they harvest, and by the sender once it sent the page
     * (dirty_tracker_known_zero), so any later send reads it. All set for
     * memory the kernel cannot vouch for (shared, file-backed).
     */
    unsigned long *data_bmap;
    /* clear-log: set once the chunk was re-armed (and its pages scanned). */
    unsigned long *armed_bmap;
    unsigned long *vmm_taken;   /* scratch of dirty_tracker_sync */
    /* Postcopy: set once the page was claimed (sent); NULL unless dirty_tracker_track_sent(). */
    unsigned long *sent_bmap;
    KVMSlot **slots;            /* KVM slots that map this block */
    int nslots;
    /* Deferred logging: the block's pages [armed_lo, armed_hi) are in a slot armed already. */
    uint64_t armed_lo, armed_hi;
} RAMBlockDirty;

typedef struct DirtyTracker {
    KVMState *kvm;
    KVMDirtyClient *kvm_client; /* the migration's client of the KVM dirty log */
    RAMBlockDirty *blocks;
    int nblocks;
    RAMBlockDirty **slot_block; /* per KVM slot (kvm->slots index): its block, or NULL */
    bool logging;               /* KVM + software dirty logging on */
    bool clear_log;             /* lazy KVM_CLEAR_DIRTY_LOG per chunk */
    unsigned clear_shift;       /* log2 pages per chunk */
    /*
     * get-log and the dirty ring: a slot starts to log only when the first
     * page of it is claimed (kvm_dirty_client_start_deferred), so the
     * guest takes no write fault on memory the first pass has not reached,
     * and a write there before the pass does not send the page twice.
     * clear-log write-protects nothing before a chunk's clear anyway.
     */
    bool deferred;
    bool *slot_armed;           /* deferred: per KVM slot (kvm->slots index), armed yet */
    int unarmed;                /* deferred: slots of migrated blocks not armed yet */
    int arm_error;              /* -errno of the first slot that refused to log: syncs fail */
    uint64_t total_pages;

    /* The remaining counter: set bits over all send_bmaps. Never recounted. */
    uint64_t dirty_pages;

    /* Statistics: the owner's query-migrate reads them (single aligned words). */
    uint64_t syncs;
    uint64_t sync_ns_total;
    uint64_t sync_ns_max;
    uint64_t pages_merged;
    uint64_t last_sync_new;     /* pages newly dirty at the last sync */
    uint64_t unpopulated_pages; /* clear in the data_bmaps at init */

    /*
     * Postcopy with preempt (dirty_tracker_share): mig/src-rp claims the
     * pages the destination asks for while mig/src claims the rest, and a
     * page must go exactly once (a QEMU destination fails on a second
     * copy). From then on whoever reads or changes the send_bmaps, the
     * sent_bmaps or dirty_pages holds claim_lock (dirty_tracker_lock).
     * Set by mig/src with the guest stopped for good, never cleared.
     */
    bool shared;
    GMutex claim_lock;
} DirtyTracker;

/*
 * dirty_tracker_init: every page starts dirty (the first pass sends all);
 * KVM and software dirty logging start. @ignore_shared (x-ignore-shared):
 * blocks another process maps by name (ram_block_shared_by_name) are left
 * out: blocks of no pages, no slots, not in the counts.
 */
bool dirty_tracker_init(DirtyTracker *dt, KVMState *kvm, unsigned clear_shift, bool ignore_shared,
                        Error **errp);
void dirty_tracker_cleanup(DirtyTracker *dt);
/*
 * Right after init: remember which pages were ever claimed (postcopy
 * discards only pages the destination got and that changed since).
 */
void dirty_tracker_track_sent(DirtyTracker *dt);
/*
 * The guest stopped here for good (postcopy's switchover): the pages read
 * from now on are final, so slots not logging yet need not start to.
 */
static inline void dirty_tracker_guest_stopped(DirtyTracker *dt)
{
    dt->unarmed = 0;
}
/* Pull new dirty pages from KVM and the VMM; returns how many were new. */
int64_t dirty_tracker_sync(DirtyTracker *dt);
/*
 * dirty_tracker_claim_page: about to send (read) @page of @b: start its
 * slot's logging if deferred, re-arm KVM tracking for its chunk if pending
 * (clear-log), then clear its bit. Returns false if the page was not dirty
 * (it may be read all the same: its slot logs).
 */
bool dirty_tracker_claim_page(DirtyTracker *dt, RAMBlockDirty *b, uint64_t page);
/*
 * dirty_tracker_share: from now on another thread may claim pages
 * (dirty_tracker_claim_urgent). Only once the guest stopped for good:
 * there are no syncs after it, and no slot needs to start logging.
 */
void dirty_tracker_share(DirtyTracker *dt);
/* Around a find and a claim of mig/src's once shared; no-ops before. */
static inline void dirty_tracker_lock(DirtyTracker *dt)
{
    if (dt->shared) {
        g_mutex_lock(&dt->claim_lock);
    }
}
static inline void dirty_tracker_unlock(DirtyTracker *dt)
{
    if (dt->shared) {
        g_mutex_unlock(&dt->claim_lock);
    }
}
/*
 * dirty_tracker_claim_urgent: any thread, shared trackers only: claims
 * @page of @b if still to send (the caller then sends it); false if mig/src
 * claimed it already (it is on the main channel, or about to be).
 */
bool dirty_tracker_claim_urgent(DirtyTracker *dt, RAMBlockDirty *b, uint64_t page);
/*
 * dirty_tracker_claim_word: the same for the up to BITS_PER_LONG pages of
 * send_bmap word @word at once (one clear-log chunk holds a whole word).
 * Returns the claimed bits: page word * BITS_PER_LONG + bit.
 */
unsigned long dirty_tracker_claim_word(DirtyTracker *dt, RAMBlockDirty *b, uint64_t word);
/*
 * dirty_tracker_skip_pages: the pages set in @skip (a bitmap of the block's
 * size) need not be sent (postcopy recovery: the destination has them).
 * No KVM re-arming: the guest is stopped whenever this is used.
 */
void dirty_tracker_skip_pages(DirtyTracker *dt, RAMBlockDirty *b, const unsigned long *skip);
/*
 * dirty_tracker_mark_pages: [first, first+n) of @b must be sent (again);
 * returns how many were not to send before. Postcopy discards a range
 * whole and re-sends its good pages rather than cut it into many.
 */
uint64_t dirty_tracker_mark_pages(DirtyTracker *dt, RAMBlockDirty *b, uint64_t first, uint64_t n);
/*
 * Of the @claimed pages of word @word, those known to read as zero (see
 * data_bmap); from now on they are read like any other page.
 */
static inline unsigned long dirty_tracker_known_zero(RAMBlockDirty *b, uint64_t word,
                                                     unsigned long claimed)
{
    unsigned long zero = claimed & ~b->data_bmap[word];

    b->data_bmap[word] |= claimed;
    return zero;
}

#endif

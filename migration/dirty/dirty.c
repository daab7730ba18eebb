/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The dirty-page pipeline, stage 2 (ARCHITECTURE section 4):
 *
 *   a slot's bits, taken      --OR word-wise, popcount new--> RAMBlockDirty.send_bmap
 *   RAMBlock.vmm_dirty_bmap   --atomic take, same merge----/
 *
 * The migration is one client of the KVM dirty log (kvm-dirty-client.h),
 * tracking every slot: a sync hands over each slot's new bits (KVM's
 * words themselves while no other client shares the slot). A slot maps
 * into its block at a page offset; a block may have several slots. With
 * clear-log, a sync marks the chunks (2^clear_shift pages) whose slot bits
 * it took; the first send from a marked chunk re-arms KVM for exactly the
 * bits some sync read (kvm_dirty_client_clear) before the page is copied,
 * so a write after that point is caught by the next sync. With get-log and
 * the dirty ring, which write-protect a slot when it starts to log, each
 * slot starts to log only when its first page is claimed (deferred), for
 * the same reason clear-log re-arms lazily: no write fault on memory the
 * first pass has not reached, and no second send of a page written before
 * the pass got to it.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "qemu/pagemap.h"
#include "system/kvm.h"
#include "system/kvm-dirty-client.h"
#include "system/memory.h"
#include "dirty.h"
#include "migration/trace.h"

/*
 * The data_bmaps (dirty.h). A page may be sent as zero unread only if the
 * kernel showed it empty at a moment after which every write to it is
 * caught: a write before that moment makes it populated, one after is
 * logged, and the sync that harvests it sets its data bit (if it is not
 * sent yet) or dirties it again (if it was). get-log and the dirty ring
 * log a slot's writes from its arm on (deferred): its pages are scanned
 * then (dirty_data_scan_range) and all count as data until. clear-log
 * starts with every bit set and nothing write-protected (KVM's
 * INITIALLY_SET): a chunk's writes are caught only once it is re-armed,
 * so its pages are scanned then (dirty_data_scan_chunk) and all count as
 * data until.
 */
static bool dirty_data_scannable(RAMBlockDirty *b)
{
    return b->rb->host && b->rb->kind == RAM_BACKEND_ANON && !b->rb->shared;
}

static void dirty_data_init(DirtyTracker *dt)
{
    for (int i = 0; i < dt->nblocks; i++) {
        RAMBlockDirty *b = &dt->blocks[i];

        b->data_bmap = bitmap_new(b->npages);
        b->vmm_taken = bitmap_new(b->npages);
        bitmap_fill(b->data_bmap, b->npages);
        if (dt->clear_log) {
            b->armed_bmap = bitmap_new(DIV_ROUND_UP(b->npages, 1ULL << dt->clear_shift));
        }
    }
}

/* clear-log: chunk @chunk was just re-armed for the first time: what is empty now reads as zero. */
static void dirty_data_scan_chunk(DirtyTracker *dt, RAMBlockDirty *b, uint64_t chunk)
{
    uint64_t start = chunk << dt->clear_shift;
    uint64_t n = MIN(1ULL << dt->clear_shift, b->npages - start);
    g_autofree unsigned long *scan = NULL;

    if (!dirty_data_scannable(b)) {
        return;
    }
    scan = bitmap_new(n);
    qemu_pagemap_data_pages(b->rb->host + (start << TARGET_PAGE_BITS), n, scan);
    /*
     * Chunks start on a word (clear_shift >= 6). What the scan shows
     * empty reads as zero until a write, which the re-armed log catches.
     */
    memcpy(b->data_bmap + start / BITS_PER_LONG, scan, BITS_TO_LONGS(n) * sizeof(long));
    if (n % BITS_PER_LONG) {
        /* Bits past the block's end stay as they were (set). */
        b->data_bmap[(start + n) / BITS_PER_LONG] |= ~BITMAP_LAST_WORD_MASK(n);
    }
    dt->unpopulated_pages += n - bitmap_count_one(scan, n);
}

/*
 * Deferred logging: [first, first+n) of @b just started to log: what is
 * empty now reads as zero until a write, which the log catches. Its data
 * bits were all set until now.
 */
static void dirty_data_scan_range(DirtyTracker *dt, RAMBlockDirty *b, uint64_t first, uint64_t n)
{
    g_autofree unsigned long *scan = NULL;
    uint64_t empty = 0;

    if (!dirty_data_scannable(b) || !n) {
        return;
    }
    scan = bitmap_new(n);
    qemu_pagemap_data_pages(b->rb->host + (first << TARGET_PAGE_BITS), n, scan);
    for (uint64_t p = find_next_zero_bit(scan, n, 0); p < n; p = find_next_zero_bit(scan, n, p + 1)) {
        clear_bit(first + p, b->data_bmap);
        empty++;
    }
    dt->unpopulated_pages += empty;
}

/*
 * A sync harvested @bits (of slot pages from @base on, or the VMM's):
 * those pages were written, so they hold data. clear-log: only for chunks
 * already re-armed; the others' bits are KVM's initial ones and their
 * data bits are all set anyway.
 */
static void dirty_data_harvest(DirtyTracker *dt, RAMBlockDirty *b, uint64_t base,
                               const unsigned long *bits, uint64_t npages)
{
    if (!dt->clear_log) {
        bitmap_or_count_new_at(b->data_bmap, base, bits, npages);
        return;
    }
    for (uint64_t p = 0; p < npages;) {
        uint64_t page = base + p, chunk = page >> dt->clear_shift;
        uint64_t next = MIN(((chunk + 1) << dt->clear_shift) - base, npages);

        if (test_bit(chunk, b->armed_bmap)) {
            for (uint64_t q = find_next_bit(bits, next, p); q < next;
                 q = find_next_bit(bits, next, q + 1)) {
                set_bit(base + q, b->data_bmap);
            }
        }
        p = next;
    }
}

bool dirty_tracker_init(DirtyTracker *dt, KVMState *kvm, unsigned clear_shift, bool ignore_shared,
                        Error **errp)
{
    GPtrArray *rbs = ram_blocks();

    memset(dt, 0, sizeof(*dt));
    dt->kvm = kvm;
    dt->clear_shift = clear_shift;
    dt->nblocks = rbs->len;
    dt->blocks = g_new0(RAMBlockDirty, dt->nblocks);
    dt->slot_block = g_new0(RAMBlockDirty *, kvm->nr_slots);
    for (int i = 0; i < dt->nblocks; i++) {
        RAMBlockDirty *b = &dt->blocks[i];

        b->rb = g_ptr_array_index(rbs, i);
        b->slots = g_new0(KVMSlot *, kvm->nr_slots);
        /*
         * x-ignore-shared: the other side maps this memory itself. As a
         * block of no pages, with no slots, no scan, sync or count sees it
         * and its slots never arm (deferred logging).
         */
        if (ignore_shared && ram_block_shared_by_name(b->rb)) {
            continue;
        }
        b->npages = b->rb->used_length >> TARGET_PAGE_BITS;
        b->send_bmap = bitmap_new(b->npages);
        bitmap_fill(b->send_bmap, b->npages);
        dt->total_pages += b->npages;
        for (int s = 0; s < kvm->nr_slots; s++) {
            if (kvm->slots[s].rb == b->rb) {
                b->slots[b->nslots++] = &kvm->slots[s];
                dt->slot_block[s] = b;
            }
        }
    }
    dt->dirty_pages = dt->total_pages;
    dt->clear_log = kvm_dirty_log_needs_clear(kvm);
    dt->deferred = !dt->clear_log;
    if (dt->deferred) {
        dt->slot_armed = g_new0(bool, kvm->nr_slots);
        for (int s = 0; s < kvm->nr_slots; s++) {
            dt->unarmed += dt->slot_block[s] != NULL;
        }
    }
    for (int i = 0; dt->clear_log && i < dt->nblocks; i++) {
        RAMBlockDirty *b = &dt->blocks[i];
        b->clear_bmap = bitmap_new(DIV_ROUND_UP(b->npages, 1ULL << clear_shift));
    }
    /* Pages the VMM wrote before logging are in the all-ones bitmap already. */
    for (int i = 0; i < dt->nblocks; i++) {
        bitmap_zero(dt->blocks[i].rb->vmm_dirty_bmap, dt->blocks[i].npages);
    }
    ram_vmm_dirty_log_start();
    dt->kvm_client = dt->deferred ? kvm_dirty_client_start_deferred(kvm, "migration", NULL, errp)
                                  : kvm_dirty_client_start(kvm, "migration", NULL, errp);
    if (!dt->kvm_client) {
        ram_vmm_dirty_log_stop();
        dirty_tracker_cleanup(dt);      /* not logging: frees the bitmaps only */
        return false;
    }
    dt->logging = true;
    dirty_data_init(dt);
    return true;
}

void dirty_tracker_track_sent(DirtyTracker *dt)
{
    for (int i = 0; i < dt->nblocks; i++) {
        dt->blocks[i].sent_bmap = bitmap_new(dt->blocks[i].npages);
    }
}

void dirty_tracker_share(DirtyTracker *dt)
{
    if (!dt->shared) {
        dirty_tracker_guest_stopped(dt);
        g_mutex_init(&dt->claim_lock);
        dt->shared = true;
    }
}

bool dirty_tracker_claim_urgent(DirtyTracker *dt, RAMBlockDirty *b, uint64_t page)
{
    bool mine;

    assert(dt->shared && page < b->npages);
    /* No arming and no clear-log re-arm: the guest never runs here again. */
    g_mutex_lock(&dt->claim_lock);
    mine = test_and_clear_bit(page, b->send_bmap);
    if (mine) {
        dt->dirty_pages--;
        if (b->sent_bmap) {
            set_bit(page, b->sent_bmap);
        }
    }
    g_mutex_unlock(&dt->claim_lock);
    return mine;
}

void dirty_tracker_cleanup(DirtyTracker *dt)
{
    if (dt->logging) {
        g_clear_pointer(&dt->kvm_client, kvm_dirty_client_stop);
        ram_vmm_dirty_log_stop();
        dt->logging = false;
    }
    for (int i = 0; i < dt->nblocks; i++) {
        g_free(dt->blocks[i].send_bmap);
        g_free(dt->blocks[i].clear_bmap);
        g_free(dt->blocks[i].data_bmap);
        g_free(dt->blocks[i].armed_bmap);
        g_free(dt->blocks[i].vmm_taken);
        g_free(dt->blocks[i].sent_bmap);
        g_free(dt->blocks[i].slots);
    }
    g_clear_pointer(&dt->blocks, g_free);
    g_clear_pointer(&dt->slot_block, g_free);
    g_clear_pointer(&dt->slot_armed, g_free);
    dt->nblocks = 0;
    if (dt->shared) {
        g_mutex_clear(&dt->claim_lock);
        dt->shared = false;
    }
}

/* Marks the chunks of @b that hold a bit of @bits, taken from @slot (clear-log). */
static void dirty_mark_chunks(DirtyTracker *dt, RAMBlockDirty *b, KVMSlot *slot,
                              const unsigned long *bits)
{
    uint64_t base = slot->ram_offset >> TARGET_PAGE_BITS;
    uint64_t p = 0;

    for (;;) {
        uint64_t chunk;

        p = find_next_bit(bits, slot->npages, p);
        if (p >= slot->npages) {
            break;
        }
        chunk = (base + p) >> dt->clear_shift;
        set_bit(chunk, b->clear_bmap);
        /* Skip to the first page of the next chunk, in slot coordinates. */
        p = ((chunk + 1) << dt->clear_shift) - base;
    }
}

typedef struct DirtyTake {
    DirtyTracker *dt;
    uint64_t new_pages;
} DirtyTake;

/* KVMDirtyTakeFn: merges one slot's new bits into its block's bitmaps. */
static void dirty_take_slot(void *opaque, KVMSlot *slot, const unsigned long *bits)
{
    DirtyTake *take = opaque;
    DirtyTracker *dt = take->dt;
    RAMBlockDirty *b = dt->slot_block[slot - dt->kvm->slots];
    uint64_t base = slot->ram_offset >> TARGET_PAGE_BITS;

    if (!b) {
        return;                 /* a block we do not migrate */
    }
    dirty_data_harvest(dt, b, base, bits, slot->npages);
    take->new_pages += bitmap_or_count_new_at(b->send_bmap, base, bits, slot->npages);
    if (dt->clear_log) {
        dirty_mark_chunks(dt, b, slot, bits);
    }
}

int64_t dirty_tracker_sync(DirtyTracker *dt)
{
    int64_t t0 = get_clock_ns(), dt_ns;
    DirtyTake take = { .dt = dt };
    uint64_t new_pages;
    int ret;

    assert(dt->logging);    /* only between a successful init and the cleanup */
    if (dt->arm_error) {
        return dt->arm_error;   /* writes to that slot were never caught */
    }
    trace_dirty_sync_start(dt->syncs + 1, dt->dirty_pages);
    ret = kvm_dirty_client_sync(dt->kvm_client, dirty_take_slot, &take);
    if (ret < 0) {
        return ret;
    }
    new_pages = take.new_pages;
    for (int i = 0; i < dt->nblocks; i++) {
        RAMBlockDirty *b = &dt->blocks[i];

        /*
         * Taken word by word into a scratch map first: the pages the VMM
         * wrote hold data, and must be marked so before they can be sent.
         */
        bitmap_zero(b->vmm_taken, b->npages);
        if (bitmap_or_count_new_take(b->vmm_taken, b->rb->vmm_dirty_bmap,
                                     BITS_TO_LONGS(b->npages))) {
            bitmap_or_count_new(b->data_bmap, b->vmm_taken, BITS_TO_LONGS(b->npages));
            new_pages += bitmap_or_count_new(b->send_bmap, b->vmm_taken,
                                             BITS_TO_LONGS(b->npages));
        }
    }
    dt->dirty_pages += new_pages;
    dt->pages_merged += new_pages;
    dt->last_sync_new = new_pages;
    dt->syncs++;
    dt_ns = get_clock_ns() - t0;
    dt->sync_ns_total += dt_ns;
    dt->sync_ns_max = MAX(dt->sync_ns_max, (uint64_t)dt_ns);
    trace_dirty_sync_end(dt->syncs, new_pages, dt->dirty_pages, dt_ns / 1000);
    return new_pages;
}

/* Re-arms KVM tracking for chunk @chunk of @b across the slots it overlaps. */
static bool dirty_clear_chunk(DirtyTracker *dt, RAMBlockDirty *b, uint64_t chunk)
{
    uint64_t cstart = chunk << dt->clear_shift;
    uint64_t cend = MIN(cstart + (1ULL << dt->clear_shift), b->npages);

    for (int s = 0; s < b->nslots; s++) {
        KVMSlot *slot = b->slots[s];
        uint64_t sstart = slot->ram_offset >> TARGET_PAGE_BITS;
        uint64_t send = sstart + slot->npages;
        uint64_t lo = MAX(cstart, sstart), hi = MIN(cend, send);
        int ret;

        if (lo >= hi) {
            continue;
        }
        ret = kvm_dirty_client_clear(dt->kvm_client, slot, lo - sstart, hi - lo);
        if (ret < 0) {
            /*
             * KVM re-protected nothing and kept its bits, so the next sync
             * reads them again, re-marks the chunk and the pages are sent
             * again. Do not keep the chunk marked: a retry before that sync
             * would re-arm pages copied since, losing writes made after
             * their copy.
             */
            warn_report("KVM_CLEAR_DIRTY_LOG failed: %s", g_strerror(-ret));
            return false;
        }
        trace_dirty_clear(slot->slot, lo - sstart, hi - lo);
    }
    return true;
}

/* Re-arms chunk @chunk of @b; the first time, looks which of its pages are empty. */
static void dirty_rearm_chunk(DirtyTracker *dt, RAMBlockDirty *b, uint64_t chunk)
{
    if (dirty_clear_chunk(dt, b, chunk) && !test_and_set_bit(chunk, b->armed_bmap)) {
        dirty_data_scan_chunk(dt, b, chunk);
    }
}

/* Deferred logging: slot @slot of @b starts to log, then its pages are scanned. */
static void dirty_arm_slot(DirtyTracker *dt, RAMBlockDirty *b, KVMSlot *slot)
{
    int i = slot - dt->kvm->slots;
    int ret;

    if (dt->slot_armed[i]) {
        return;
    }
    dt->slot_armed[i] = true;
    dt->unarmed--;
    ret = kvm_dirty_client_arm(dt->kvm_client, slot);
    if (ret < 0) {
        /* The pages are sent all the same; the next sync fails the migration. */
        warn_report("dirty logging on KVM slot %d could not start: %s", i, g_strerror(-ret));
        if (!dt->arm_error) {
            dt->arm_error = ret;
        }
        return;
    }
    dirty_data_scan_range(dt, b, slot->ram_offset >> TARGET_PAGE_BITS, slot->npages);
}

/* Deferred logging: the slot holding @page of @b logs before the page is read. */
static void dirty_arm_page(DirtyTracker *dt, RAMBlockDirty *b, uint64_t page)
{
    if (!dt->unarmed || (page >= b->armed_lo && page < b->armed_hi)) {
        return;
    }
    for (int s = 0; s < b->nslots; s++) {
        KVMSlot *slot = b->slots[s];
        uint64_t lo = slot->ram_offset >> TARGET_PAGE_BITS;

        if (page >= lo && page < lo + slot->npages) {
            dirty_arm_slot(dt, b, slot);
            b->armed_lo = lo;
            b->armed_hi = lo + slot->npages;
            return;
        }
    }
}

bool dirty_tracker_claim_page(DirtyTracker *dt, RAMBlockDirty *b, uint64_t page)
{
    dirty_arm_page(dt, b, page);
    if (dt->clear_log) {
        uint64_t chunk = page >> dt->clear_shift;

        if (test_and_clear_bit(chunk, b->clear_bmap)) {
            dirty_rearm_chunk(dt, b, chunk);
        }
    }
    if (test_and_clear_bit(page, b->send_bmap)) {
        dt->dirty_pages--;
        if (b->sent_bmap) {
            set_bit(page, b->sent_bmap);
        }
        return true;
    }
    return false;
}

unsigned long dirty_tracker_claim_word(DirtyTracker *dt, RAMBlockDirty *b, uint64_t word)
{
    unsigned long bits = b->send_bmap[word];

    if (!bits) {
        return 0;
    }
    /* A word may span slots: each logs before any of its pages is read. */
    for (uint64_t p = word * BITS_PER_LONG, end = MIN(p + BITS_PER_LONG, b->npages);
         dt->unarmed && p < end; p = MAX(p + 1, b->armed_hi)) {
        dirty_arm_page(dt, b, p);
    }
    /* clear_shift >= MIN_CLEAR_BITMAP_SHIFT (6): the word lies in one chunk. */
    if (dt->clear_log) {
        uint64_t chunk = (word * BITS_PER_LONG) >> dt->clear_shift;

        if (test_and_clear_bit(chunk, b->clear_bmap)) {
            dirty_rearm_chunk(dt, b, chunk);
        }
    }
    b->send_bmap[word] = 0;
    dt->dirty_pages -= __builtin_popcountl(bits);
    if (b->sent_bmap) {
        b->sent_bmap[word] |= bits;
    }
    return bits;
}

void dirty_tracker_skip_pages(DirtyTracker *dt, RAMBlockDirty *b, const unsigned long *skip)
{
    uint64_t words = BITS_TO_LONGS(b->npages);

    /* The guest is stopped for good whenever this is used: no slot need start to log. */
    dirty_tracker_guest_stopped(dt);

    for (uint64_t w = 0; w < words; w++) {
        unsigned long drop = b->send_bmap[w] & skip[w];

        b->send_bmap[w] &= ~drop;
        dt->dirty_pages -= __builtin_popcountl(drop);
    }
}

uint64_t dirty_tracker_mark_pages(DirtyTracker *dt, RAMBlockDirty *b, uint64_t first, uint64_t n)
{
    uint64_t added = 0;

    for (uint64_t p = first; p < first + n; p++) {
        if (!test_and_set_bit(p, b->send_bmap)) {
            added++;
        }
    }
    dt->dirty_pages += added;
    return added;
}

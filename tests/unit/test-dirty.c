/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for migration/dirty/dirty.c against a model guest. A fake KVM dirty
 * log (dirty-fake.c: the migration's client of kvm-dirty-client.h, alone) keeps, per
 * slot, the kernel's "written since last get/clear" bitmap (clear-log:
 * initially set, GET copies, CLEAR resets what was read; get-log: GET copies
 * and resets); every page carries a version bumped on each write. Direct
 * checks pin down sync, chunk marking and claims; seeded random migrations
 * then assert the ARCHITECTURE section 4 invariant: every write after a
 * page's last send is sent again, the remaining counter always equals the
 * bitmaps' popcount, and no page is sent without a write to justify it.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "system/kvm.h"
#include "system/kvm-dirty-client.h"
#include "system/memory.h"
#include "trace/trace.h"
#include "migration/dirty/dirty.h"
#include "dirty-fake.h"

#define SEED 0xd1297

/* ---- Sim configurations ---- */

typedef struct SimConfig {
    const Layout *layout;
    bool clear_mode;
    unsigned shift;
    int steps;
    int clear_fail_pct;
} SimConfig;

/* ---- Naive references (the test may recount; the product must not) ---- */

static bool ref_get(const unsigned long *map, uint64_t i)
{
    return (map[i / 64] >> (i % 64)) & 1;
}

/* Popcount of every bmap; bits past npages would be a bug too. */
static uint64_t naive_dirty(DirtyTracker *dt)
{
    uint64_t n = 0;

    for (int i = 0; i < dt->nblocks; i++) {
        RAMBlockDirty *b = &dt->blocks[i];

        for (uint64_t w = 0; w < BITS_TO_LONGS(b->npages); w++) {
            n += __builtin_popcountl(b->send_bmap[w]);
        }
        if (b->npages % 64) {
            g_assert_cmphex(b->send_bmap[b->npages / 64] & ~BITMAP_LAST_WORD_MASK(b->npages), ==, 0);
        }
    }
    return n;
}

/* The slot of @dt's block @b mapping page @p, or -1 (VMM-only page). */
static int slot_of(DirtyTracker *dt, int b, uint64_t p, uint64_t *sp)
{
    KVMState *s = fake.kvm;

    *sp = 0;
    for (int i = 0; i < s->nr_slots; i++) {
        uint64_t base = s->slots[i].ram_offset >> TARGET_PAGE_BITS;

        if (s->slots[i].rb == dt->blocks[b].rb && p >= base && p < base + s->slots[i].npages) {
            *sp = p - base;
            return i;
        }
    }
    return -1;
}

/* ---- Direct checks ---- */

static void test_init(void)
{
    DirtyTracker *dt = setup(&pc_layout, true, 12);

    g_assert_cmpint(dt->nblocks, ==, 3);
    g_assert_cmpuint(dt->total_pages, ==, 917504 + 1000 + 300);
    g_assert_cmpuint(dt->dirty_pages, ==, dt->total_pages);
    g_assert_cmpuint(naive_dirty(dt), ==, dt->total_pages);
    g_assert_true(dt->logging && dt->clear_log && fake.kvm_logging && fake.vmm_logging);
    /* Slots go to the block they map, in slot order. */
    g_assert_cmpint(dt->blocks[0].nslots, ==, 2);
    g_assert_true(dt->blocks[0].slots[1] == &fake.kvm->slots[1]);
    g_assert_cmpint(dt->blocks[1].nslots, ==, 1);
    g_assert_cmpint(dt->blocks[2].nslots, ==, 0);
    for (int i = 0; i < dt->nblocks; i++) {
        g_assert_true(bitmap_empty(dt->blocks[i].rb->vmm_dirty_bmap, dt->blocks[i].npages));
        g_assert_true(bitmap_empty(dt->blocks[i].clear_bmap,
                                   DIV_ROUND_UP(dt->blocks[i].npages, 1 << 12)));
    }
    teardown(dt);

    /* get-log: no chunk bitmaps. */
    dt = setup(&small_layout, false, 6);
    g_assert_false(dt->clear_log);
    g_assert_null(dt->blocks[0].clear_bmap);
    teardown(dt);
}

/* Claims every page so all bitmaps (and, clear-log, the kernel's) are empty. */
static void drain(DirtyTracker *dt)
{
    for (int i = 0; i < dt->nblocks; i++) {
        for (uint64_t p = 0; p < dt->blocks[i].npages; p++) {
            dirty_tracker_claim_page(dt, &dt->blocks[i], p);
        }
    }
    g_assert_cmpuint(dt->dirty_pages, ==, 0);
    g_array_set_size(fake.clears, 0);
}

static void test_sync_counts_new(void)
{
    DirtyTracker *dt = setup(&pc_layout, false, 6);
    RAMBlockDirty *b = &dt->blocks[0];

    /* The first get-log sync after start finds nothing new: all pages are dirty. */
    set_bit(5, fake.kernel[0]);
    g_assert_cmpint(dirty_tracker_sync(dt), ==, 0);
    g_assert_cmpuint(dt->dirty_pages, ==, dt->total_pages);

    g_assert_true(dirty_tracker_claim_page(dt, b, 10));
    g_assert_true(dirty_tracker_claim_page(dt, b, 786432 + 7));
    g_assert_true(dirty_tracker_claim_page(dt, b, 917503));
    g_assert_false(dirty_tracker_claim_page(dt, b, 10));
    g_assert_cmpuint(dt->dirty_pages, ==, dt->total_pages - 3);

    /* Slot 1 pages land at its offset (3 GiB = page 786432) in the block. */
    set_bit(10, fake.kernel[0]);
    set_bit(11, fake.kernel[0]);        /* still dirty: not new */
    set_bit(7, fake.kernel[1]);
    set_bit(131071, fake.kernel[1]);
    g_assert_cmpint(dirty_tracker_sync(dt), ==, 3);
    g_assert_cmpuint(dt->last_sync_new, ==, 3);
    g_assert_cmpuint(dt->dirty_pages, ==, dt->total_pages);
    g_assert_cmpuint(naive_dirty(dt), ==, dt->total_pages);
    g_assert_cmpuint(dt->syncs, ==, 2);

    /* Same bits again (get-log cleared them in the kernel): nothing new. */
    g_assert_cmpint(dirty_tracker_sync(dt), ==, 0);
    teardown(dt);
}

static void test_sync_vmm_dirty(void)
{
    DirtyTracker *dt = setup(&gaps_layout, false, 6);
    RAMBlockDirty *b = &dt->blocks[0];
    unsigned long *sw = b->rb->vmm_dirty_bmap;

    drain(dt);
    set_bit(110, sw);                   /* a hole: only the VMM writes there */
    set_bit(999, sw);
    set_bit(200, sw);
    set_bit(200 - 128, fake.kernel[1]); /* the same page via KVM counts once */
    set_bit(0, fake.kernel[0]);
    g_assert_cmpint(dirty_tracker_sync(dt), ==, 4);
    g_assert_true(bitmap_empty(sw, 1000));
    for (uint64_t p = 0; p < 1000; p++) {
        g_assert_cmpint(ref_get(b->send_bmap, p), ==, p == 0 || p == 110 || p == 200 || p == 999);
    }
    /* Drained: a second sync adds nothing. */
    g_assert_cmpint(dirty_tracker_sync(dt), ==, 0);
    g_assert_cmpuint(dt->dirty_pages, ==, 4);
    teardown(dt);
}

/* Chunk marks after a sync equal the chunks holding a bit of some slot bitmap. */
static void check_marks(unsigned shift, const Layout *l, const uint64_t (*bits)[2], int nbits)
{
    DirtyTracker *dt = setup(l, true, shift);
    RAMBlockDirty *b = &dt->blocks[0];
    uint64_t nchunks = DIV_ROUND_UP(b->npages, 1ULL << shift);
    g_autofree bool *want = g_new0(bool, nchunks);

    /* Initially set: the first sync marks every chunk that has a slot page. */
    g_assert_cmpint(dirty_tracker_sync(dt), ==, 0);
    g_assert_true(ref_get(b->clear_bmap, 0) && ref_get(b->clear_bmap, nchunks - 1));
    drain(dt);
    g_assert_true(bitmap_empty(b->clear_bmap, nchunks));
    for (int i = 0; i < fake.kvm->nr_slots; i++) {
        g_assert_true(bitmap_empty(fake.kernel[i], fake.kvm->slots[i].npages));
    }

    set_bit(3, b->rb->vmm_dirty_bmap);        /* software writes need no KVM clear */
    for (int i = 0; i < nbits; i++) {
        KVMSlot *slot = &fake.kvm->slots[bits[i][0]];

        g_assert_true(slot->rb == b->rb && bits[i][1] < slot->npages);
        set_bit(bits[i][1], fake.kernel[bits[i][0]]);
        want[((slot->ram_offset >> TARGET_PAGE_BITS) + bits[i][1]) >> shift] = true;
    }
    dirty_tracker_sync(dt);
    for (uint64_t c = 0; c < nchunks; c++) {
        if (ref_get(b->clear_bmap, c) != want[c]) {
            g_error("shift %u: chunk %" PRIu64 " marked %d", shift, c, !want[c]);
        }
    }
    teardown(dt);
}

static void test_sync_marks_chunks(void)
{
    static const uint64_t pc_bits[][2] = {
        { 0, 0 }, { 0, 63 }, { 0, 64 }, { 0, 4095 }, { 0, 4096 * 7 + 1 }, { 0, 786431 },
        { 1, 0 }, { 1, 4096 }, { 1, 131071 },
    };
    static const uint64_t small_bits[][2] = { { 0, 1 }, { 0, 639 }, { 1, 0 }, { 1, 199 } };
    /* Slot 1 starts at page 100: its bits 0 and 28 fall in chunks 1 and 2. */
    static const uint64_t unaligned_bits[][2] = {
        { 0, 1 }, { 0, 99 }, { 1, 0 }, { 1, 28 }, { 1, 899 },
    };

    check_marks(6, &pc_layout, pc_bits, G_N_ELEMENTS(pc_bits));
    check_marks(12, &pc_layout, pc_bits, G_N_ELEMENTS(pc_bits));
    check_marks(20, &pc_layout, pc_bits + 6, 1);   /* one chunk holds both slots */
    check_marks(8, &small_layout, small_bits, G_N_ELEMENTS(small_bits));
    check_marks(6, &unaligned_layout, unaligned_bits, G_N_ELEMENTS(unaligned_bits));
}

static void expect_clears(const ClearCall *want, guint n)
{
    g_assert_cmpuint(fake.clears->len, ==, n);
    for (guint i = 0; i < n; i++) {
        ClearCall *c = &g_array_index(fake.clears, ClearCall, i);

        g_assert_cmpint(c->slot, ==, want[i].slot);
        g_assert_cmpuint(c->first, ==, want[i].first);
        g_assert_cmpuint(c->npages, ==, want[i].npages);
    }
    g_array_set_size(fake.clears, 0);
}

static void test_claim_clears_chunk(void)
{
    DirtyTracker *dt = setup(&small_layout, true, 8);
    RAMBlockDirty *b = &dt->blocks[0];
    static const ClearCall span[] = { { 0, 512, 128 }, { 1, 0, 128 } };
    static const ClearCall first[] = { { 0, 0, 256 } };
    static const ClearCall tail[] = { { 1, 128, 72 } };

    g_assert_cmpint(dirty_tracker_sync(dt), ==, 0);
    /* Chunk 2 = pages 512..767: the end of slot 0 and the start of slot 1. */
    g_assert_true(dirty_tracker_claim_page(dt, b, 700));
    expect_clears(span, G_N_ELEMENTS(span));
    g_assert_false(ref_get(b->clear_bmap, 2));
    /* Once per chunk: the next page of it goes without a clear. */
    g_assert_true(dirty_tracker_claim_page(dt, b, 512));
    expect_clears(NULL, 0);
    g_assert_true(dirty_tracker_claim_page(dt, b, 0));
    expect_clears(first, G_N_ELEMENTS(first));
    /* The last chunk is cut at the block end. */
    g_assert_true(dirty_tracker_claim_page(dt, b, 839));
    expect_clears(tail, G_N_ELEMENTS(tail));
    /* The kernel bits read are re-armed, the others kept; the bmap is untouched. */
    g_assert_true(bitmap_empty(fake.kernel[0], 256));
    g_assert_true(ref_get(fake.kernel[0], 256) && !ref_get(fake.kernel[0], 600));
    g_assert_cmpuint(dt->dirty_pages, ==, 840 + 77 - 4);
    g_assert_cmpuint(naive_dirty(dt), ==, dt->dirty_pages);

    /* A new KVM bit in the chunk: the sync marks it again, a claim re-arms it. */
    set_bit(5, fake.kernel[1]);
    g_assert_cmpint(dirty_tracker_sync(dt), ==, 0);     /* page 645 was still dirty */
    g_assert_true(ref_get(b->clear_bmap, 2));
    g_assert_true(dirty_tracker_claim_page(dt, b, 699));
    expect_clears(span, G_N_ELEMENTS(span));
    g_assert_false(ref_get(fake.kernel[1], 5));
    g_assert_cmpuint(trace_clears, ==, 0);      /* tracing off: no events */
    teardown(dt);
}

/*
 * Postcopy-preempt: mig/src claims words in scan order while mig/src-rp
 * claims single requested pages (dirty_tracker_share). Every page must be
 * claimed exactly once: a QEMU destination fails on a second copy, and a
 * page claimed by nobody would leave a vCPU waiting for ever.
 */
typedef struct UrgentClaimer {
    DirtyTracker *dt;
    RAMBlockDirty *b;
    unsigned long *mine;        /* pages this thread claimed */
    uint64_t word;              /* the word the scan claims next (atomic) */
    bool done;                  /* the scan ended (atomic) */
} UrgentClaimer;

static gpointer urgent_claimer(gpointer opaque)
{
    UrgentClaimer *u = opaque;
    GRand *r = g_rand_new_with_seed(SEED);

    /* Right where the scan is: the claims collide as often as they can. */
    while (!__atomic_load_n(&u->done, __ATOMIC_ACQUIRE)) {
        uint64_t p = __atomic_load_n(&u->word, __ATOMIC_RELAXED) * BITS_PER_LONG +
                     g_rand_int_range(r, 0, BITS_PER_LONG);

        if (p >= u->b->npages) {
            continue;
        }
        if (dirty_tracker_claim_urgent(u->dt, u->b, p)) {
            g_assert_false(test_and_set_bit(p, u->mine));
        }
    }
    g_rand_free(r);
    return NULL;
}

static void test_claim_shared(void)
{
    DirtyTracker *dt = setup(&pc_layout, true, 12);
    RAMBlockDirty *b = &dt->blocks[0];
    UrgentClaimer u = { dt, b, bitmap_new(b->npages), 0, false };
    g_autofree unsigned long *scanned = bitmap_new(b->npages);
    uint64_t before = dt->dirty_pages, claimed = 0;
    GThread *t;

    dirty_tracker_share(dt);
    t = g_thread_new("urgent", urgent_claimer, &u);
    for (uint64_t w = 0; w < BITS_TO_LONGS(b->npages); w++) {
        unsigned long bits;

        __atomic_store_n(&u.word, w, __ATOMIC_RELAXED);
        dirty_tracker_lock(dt);
        bits = dirty_tracker_claim_word(dt, b, w);
        dirty_tracker_unlock(dt);
        g_assert_cmphex(scanned[w] & bits, ==, 0);
        scanned[w] |= bits;
    }
    __atomic_store_n(&u.done, true, __ATOMIC_RELEASE);
    g_thread_join(t);
    /* Nobody twice, nobody missed, and the counter says the same. */
    for (uint64_t w = 0; w < BITS_TO_LONGS(b->npages); w++) {
        g_assert_cmphex(scanned[w] & u.mine[w], ==, 0);
        claimed += __builtin_popcountl(scanned[w] | u.mine[w]);
    }
    g_assert_cmpuint(claimed, ==, b->npages);
    g_assert_cmpuint(dt->dirty_pages, ==, before - b->npages);
    g_assert_cmpuint(naive_dirty(dt), ==, dt->dirty_pages);
    /* Once claimed, a request finds the page gone to the main channel. */
    g_assert_false(dirty_tracker_claim_urgent(dt, b, 0));
    g_free(u.mine);
    teardown(dt);
}

/*
 * A failed clear must not lose a write. The page being claimed is copied
 * while KVM still has its bit set (not re-protected); if a later claim in
 * the chunk re-armed it before a sync had read it again, a write landing
 * after that copy would be wiped from KVM's bitmap and never sent.
 */
static void test_claim_clear_fails(void)
{
    DirtyTracker *dt = setup(&small_layout, true, 8);
    RAMBlockDirty *b = &dt->blocks[0];
    uint64_t sp;

    g_assert_cmpint(dirty_tracker_sync(dt), ==, 0);
    /* Page 700 is slot 1 page 60; chunk 2 spans slots 0 and 1. */
    g_assert_cmpint(slot_of(dt, 0, 700, &sp), ==, 1);
    fake.fail_clears = 1;
    g_assert_true(dirty_tracker_claim_page(dt, b, 700));   /* copied now */
    g_assert_cmpuint(fake.clears->len, ==, 1);
    g_assert_true(ref_get(fake.kernel[1], sp));
    /* The guest writes page 700 again, after its copy. */
    set_bit(sp, fake.kernel[1]);
    /* Another page of the chunk is sent before the next sync. */
    g_assert_true(dirty_tracker_claim_page(dt, b, 701));
    g_assert_true(dirty_tracker_claim_page(dt, b, 600));
    /* The write must still be in KVM's bitmap, so the next sync brings it back. */
    g_assert_true(ref_get(fake.kernel[1], sp));
    g_assert_cmpint(dirty_tracker_sync(dt), >=, 1);
    g_assert_true(ref_get(b->send_bmap, 700));
    g_assert_cmpuint(dt->dirty_pages, ==, naive_dirty(dt));
    /* Once read again, the chunk is re-armed on the next claim, and only then. */
    g_assert_true(ref_get(b->clear_bmap, 2));
    g_array_set_size(fake.clears, 0);
    g_assert_true(dirty_tracker_claim_page(dt, b, 700));
    g_assert_cmpuint(fake.clears->len, ==, 2);
    g_assert_false(ref_get(fake.kernel[1], sp));
    teardown(dt);
}

/* The dirty log refused: init fails, with nothing left logging or allocated. */
static void test_init_fails(void)
{
    DirtyTracker *dt = setup(&small_layout, true, 8);
    g_autoptr(Error) err = NULL;

    dirty_tracker_cleanup(dt);
    fake.start_fails = true;
    g_assert_false(dirty_tracker_init(dt, fake.kvm, 8, false, &err));
    g_assert_nonnull(err);
    g_assert_false(fake.kvm_logging || fake.vmm_logging || dt->logging);
    g_assert_null(dt->blocks);
    g_assert_null(dt->slot_block);
    fake.start_fails = false;
    g_assert_true(dirty_tracker_init(dt, fake.kvm, 8, false, &error_abort));
    teardown(dt);
}

/*
 * A failed KVM sync (say a dirty ring that could not be reset) is passed
 * up, with nothing counted: the caller fails the migration rather than go
 * on with pages it may never see again.
 */
static void test_sync_fails(void)
{
    DirtyTracker *dt = setup(&small_layout, true, 8);
    uint64_t before;

    g_assert_cmpint(dirty_tracker_sync(dt), ==, 0);
    drain(dt);
    set_bit(5, fake.kernel[0]);
    before = dt->syncs;
    fake.sync_ret = -EIO;
    g_assert_cmpint(dirty_tracker_sync(dt), ==, -EIO);
    g_assert_cmpuint(dt->syncs, ==, before);
    g_assert_cmpuint(dt->dirty_pages, ==, 0);
    fake.sync_ret = 0;
    g_assert_cmpint(dirty_tracker_sync(dt), ==, 1);
    teardown(dt);
}

/* ---- Randomised migration ---- */

/* Writes cluster where bugs live: slot, chunk, word and block edges. */
static uint64_t sim_pick(Sim *sim, int b)
{
    uint64_t n = sim->dt->blocks[b].npages;
    static const uint64_t hot[] = { 0, 63, 64, 100, 127, 128, 255, 256, 511, 512, 640, 4095,
                                    4096, 786431, 786432, 786433, 917503 };

    if (g_rand_boolean(sim->r)) {
        int64_t p = (int64_t)hot[g_rand_int_range(sim->r, 0, G_N_ELEMENTS(hot))] +
                    g_rand_int_range(sim->r, -2, 3);
        return CLAMP(p, 0, (int64_t)n - 1);
    }
    return g_rand_int_range(sim->r, 0, n);
}

/* One write to page @p of block @b, by a vCPU if a slot maps it, else by the VMM. */
static void sim_write(Sim *sim, int b, uint64_t p, bool vmm)
{
    uint64_t sp;
    int slot = slot_of(sim->dt, b, p, &sp);

    sim->pg[b][p].version++;
    if (slot >= 0 && !vmm) {
        if (fake.kvm_logging && fake.armed[slot]) {
            set_bit(sp, fake.kernel[slot]);
        }
    } else if (fake.vmm_logging) {
        set_bit_atomic(p, sim->dt->blocks[b].rb->vmm_dirty_bmap);
    }
}

static void sim_random_writes(Sim *sim, int n)
{
    for (int i = 0; i < n; i++) {
        int b = g_rand_int_range(sim->r, 0, sim->dt->nblocks);

        sim_write(sim, b, sim_pick(sim, b), g_rand_int_range(sim->r, 0, 8) == 0);
    }
}

/* A vCPU write racing a sync (@slot < 0) or a clear of [first, first+npages). */
static void sim_race(Sim *sim, int slot, uint64_t first, uint64_t npages)
{
    KVMSlot *s = slot >= 0 ? &fake.kvm->slots[slot] : NULL;

    if (!sim || !sim->running || g_rand_int_range(sim->r, 0, 100) >= sim->race_pct) {
        return;
    }
    if (slot < 0) {
        sim_random_writes(sim, 1);
        return;
    }
    sim_write(sim, fake.layout->slots[slot].block, (s->ram_offset >> TARGET_PAGE_BITS) + first +
              g_rand_int_range(sim->r, 0, npages), false);
}

/* The ram.c scanning rule: next set bit from the cursor, claim, copy. */
static bool sim_send_one(Sim *sim)
{
    DirtyTracker *dt = sim->dt;

    if (!dt->dirty_pages) {
        return false;
    }
    for (int tries = 0; tries <= dt->nblocks; tries++) {
        RAMBlockDirty *b = &dt->blocks[sim->cur_block];
        uint64_t p = find_next_bit(b->send_bmap, b->npages, sim->cur_page);
        int bi = sim->cur_block, slot;
        uint64_t sp = 0;
        bool was_read;

        if (p >= b->npages) {
            sim->cur_block = (sim->cur_block + 1) % dt->nblocks;
            sim->cur_page = 0;
            continue;
        }
        sim->cur_page = p + 1;
        slot = slot_of(dt, bi, p, &sp);
        was_read = slot >= 0 && fake.clear_mode && ref_get(fake.kvm->slots[slot].dirty_bmap, sp);
        g_assert_true(dirty_tracker_claim_page(dt, b, p));
        /*
         * A bit read from KVM is re-armed before the copy (else the page
         * would be sent again for nothing), except after a failed clear:
         * then KVM keeps the bit and the next sync brings the page back.
         */
        if (was_read && !fake.failed_since_sync) {
            g_assert_false(ref_get(fake.kvm->slots[slot].dirty_bmap, sp));
            g_assert_false(ref_get(fake.kernel[slot], sp));
        }
        /* No page goes twice for the same content unless a write justified it. */
        if (sim->pg[bi][p].sent == sim->pg[bi][p].version) {
            if (!sim->pg[bi][p].resend_ok) {
                g_error("block %d page %" PRIu64 " sent again, unwritten", bi, p);
            }
            sim->resends++;
        }
        sim->pg[bi][p].sent = sim->pg[bi][p].version;
        sim->pg[bi][p].resend_ok = ref_get(b->rb->vmm_dirty_bmap, p) ||
                                (slot >= 0 && ref_get(fake.kernel[slot], sp));
        sim->sends++;
        /* A vCPU writing right after the copy must be caught by a later sync. */
        if (sim->running && g_rand_int_range(sim->r, 0, 100) < sim->race_pct) {
            sim_write(sim, bi, p, false);
        }
        return true;
    }
    g_error("dirty_pages %" PRIu64 " but no bit set", dt->dirty_pages);
}

/* Every write since a page's last send is still recorded somewhere. */
static void sim_check(Sim *sim, bool full)
{
    DirtyTracker *dt = sim->dt;

    g_assert_cmpuint(dt->dirty_pages, ==, naive_dirty(dt));
    for (int b = 0; full && b < dt->nblocks; b++) {
        for (uint64_t p = 0; p < dt->blocks[b].npages; p++) {
            uint64_t sp;
            int slot;

            if (sim->pg[b][p].sent == sim->pg[b][p].version || ref_get(dt->blocks[b].send_bmap, p) ||
                ref_get(dt->blocks[b].rb->vmm_dirty_bmap, p)) {
                continue;
            }
            slot = slot_of(dt, b, p, &sp);
            if (slot < 0 || !ref_get(fake.kernel[slot], sp)) {
                g_error("block %d page %" PRIu64 ": write v%u lost (sent v%u)", b, p,
                        sim->pg[b][p].version, sim->pg[b][p].sent);
            }
        }
    }
}

static void test_simulation(gconstpointer opaque)
{
    const SimConfig *cfg = opaque;
    Sim sim = { .r = g_rand_new_with_seed(SEED + cfg->shift), .running = true };
    bool big = cfg->layout == &pc_layout;

    g_test_message("seed 0x%x", SEED + cfg->shift);
    sim.dt = setup(cfg->layout, cfg->clear_mode, cfg->shift);
    trace_active = true;
    fake.sim = &sim;
    fake.race = sim_race;
    fake.clear_fail_pct = cfg->clear_fail_pct;
    for (int b = 0; b < sim.dt->nblocks; b++) {
        uint64_t n = sim.dt->blocks[b].npages;

        sim.pg[b] = g_new0(PageModel, n);
        for (uint64_t p = 0; p < n; p++) {
            sim.pg[b][p].version = 1;
        }
    }
    sim.race_pct = 20;
    /* Like ram_save_setup, usually; skipping it tests claims before any sync. */
    if (g_rand_int_range(sim.r, 0, 4)) {
        dirty_tracker_sync(sim.dt);
    }

    for (int step = 0; step < cfg->steps; step++) {
        int nsend;

        sim_random_writes(&sim, g_rand_int_range(sim.r, 0, 40));
        if (g_rand_int_range(sim.r, 0, 4) == 0) {
            uint64_t before = naive_dirty(sim.dt);
            int64_t got = dirty_tracker_sync(sim.dt);

            /* Sync counts exactly the bits it added. */
            g_assert_cmpint(got, ==, naive_dirty(sim.dt) - before);
        }
        sim_check(&sim, !big || step % 16 == 0);
        nsend = g_rand_int_range(sim.r, 0, 4) == 0 ? g_rand_int_range(sim.r, 0, 200)
                                                    : g_rand_int_range(sim.r, 0, 8);
        if (big) {
            nsend *= 400;       /* get through 900k pages in a few hundred steps */
        }
        for (int i = 0; i < nsend && sim_send_one(&sim); i++) {
            /* send */
        }
        sim_check(&sim, !big || step % 16 == 0);
    }

    /* Switchover: the guest stops, one last sync, send what is left. */
    sim.running = false;
    dirty_tracker_sync(sim.dt);
    while (sim_send_one(&sim)) {
        /* send */
    }
    g_assert_cmpuint(sim.dt->dirty_pages, ==, 0);
    g_assert_cmpuint(naive_dirty(sim.dt), ==, 0);
    for (int b = 0; b < sim.dt->nblocks; b++) {
        for (uint64_t p = 0; p < sim.dt->blocks[b].npages; p++) {
            if (sim.pg[b][p].sent != sim.pg[b][p].version) {
                g_error("block %d page %" PRIu64 ": destination has v%u, source v%u", b, p,
                        sim.pg[b][p].sent, sim.pg[b][p].version);
            }
        }
        g_free(sim.pg[b]);
    }
    g_test_message("%" PRIu64 " sends, %" PRIu64 " justified resends, %u clears traced",
                   sim.sends, sim.resends, trace_clears);
    g_assert_true(!cfg->clear_mode || trace_clears > 0);
    trace_active = false;
    trace_clears = 0;
    teardown(sim.dt);
    g_rand_free(sim.r);
}

static const SimConfig sims[] = {
    { &pc_layout, false, 6, 300, 0 },
    { &pc_layout, true, 20, 300, 0 },
    { &pc_layout, true, 12, 300, 0 },
    { &pc_layout, true, 6, 300, 0 },
    { &small_layout, false, 6, 3000, 0 },
    { &small_layout, true, 6, 3000, 0 },
    { &small_layout, true, 8, 3000, 0 },
    { &small_layout, true, 12, 3000, 0 },
    { &small_layout, true, 8, 3000, 3 },
    { &gaps_layout, true, 6, 3000, 0 },
    { &gaps_layout, false, 7, 3000, 0 },
    { &unaligned_layout, true, 6, 3000, 0 },
    { &unaligned_layout, false, 6, 3000, 0 },
};

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/dirty/init", test_init);
    g_test_add_func("/dirty/sync/counts-new", test_sync_counts_new);
    g_test_add_func("/dirty/sync/vmm-dirty", test_sync_vmm_dirty);
    g_test_add_func("/dirty/sync/marks-chunks", test_sync_marks_chunks);
    g_test_add_func("/dirty/claim/clears-chunk-once", test_claim_clears_chunk);
    g_test_add_func("/dirty/claim/clear-fails", test_claim_clear_fails);
    g_test_add_func("/dirty/claim/shared", test_claim_shared);
    g_test_add_func("/dirty/sync/fails", test_sync_fails);
    g_test_add_func("/dirty/init/fails", test_init_fails);
    for (size_t i = 0; i < G_N_ELEMENTS(sims); i++) {
        const SimConfig *c = &sims[i];
        g_autofree char *path = g_strdup_printf("/dirty/simulation/%s/%s/shift-%u%s",
                                                c->clear_mode ? "clear-log" : "get-log",
                                                c->layout->name, c->shift,
                                                c->clear_fail_pct ? "/clear-fails" : "");

        g_test_add_data_func(path, c, test_simulation);
    }
    return g_test_run();
}

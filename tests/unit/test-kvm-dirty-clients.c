/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for accel/kvm/kvm-dirty-clients.c: several clients of one KVM
 * dirty log, in all three modes, against a fake kernel (kvm-dirty-fake.c)
 * that models each page's state: a write-protect flag and a dirty bit
 * (get-log, clear-log) or ring entries (dirty ring).
 *
 * Two clients (one tracking every slot, like the migration, one the slot
 * of its block, like a display) sync, clear-then-read random ranges, stop
 * and start, at random and seeded, while the guest writes, and after every
 * step every client's page satisfies the invariant of kvm-dirty-clients.c:
 * written since the client last read it implies taken and unread, or
 * handed over and untaken, or KVM will report it. Every bit a client is
 * handed must have a reason, and once the guest stops every client ends
 * with every page's last version. Direct tests pin down the re-mark rule,
 * the hand-over of one client's reads to the others, and start/stop while
 * the other runs. No /dev/kvm, no kvm-all.c.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "system/cpus.h"
#include "system/kvm.h"
#include "system/kvm-dirty-client.h"
#include "system/memory.h"
#include "trace/trace.h"
#include "accel/kvm/kvm-dirty-log.h"
#include "accel/kvm/kvm-dirty-ring.h"
#include "kvm-dirty-fake.h"

#define SEED 0xc11e2718

/* ---- A model client: its own bitmaps, and what it has read ---- */

typedef struct TClient {
    const char *name;
    const RAMBlock *rb;         /* NULL: every slot */
    KVMDirtyClient *c;          /* NULL: stopped */
    unsigned long *taken[NSLOTS];   /* handed over, not read yet; NULL: not tracked */
    uint32_t *copy[NSLOTS];     /* the version it read last; 0: never */
    /* A later hand-over of the page would have a reason: written, re-marked, unsure. */
    unsigned long *may_hand[NSLOTS];
    /* Read without a clear since the last sync: not to be cleared before the next one. */
    unsigned long *unarmed_read[NSLOTS];
    uint64_t reads, spurious;
} TClient;

/* The clients of the test under way, told of every guest write. */
static TClient *tclients[2];

static void tc_note_write(int slot, uint64_t page)
{
    for (int c = 0; c < 2; c++) {
        if (tclients[c] && tclients[c]->c && tclients[c]->may_hand[slot]) {
            set_bit(page, tclients[c]->may_hand[slot]);
        }
    }
}

/*
 * @first_pass: it treats every page as dirty (the migration, a display);
 * else it knows every page as it is now and wants only later writes.
 * @deferred (first pass only, as the migration in get-log and ring modes):
 * a slot logs for it only once it reads a page of it (tc_read arms it).
 */
static void tc_start_as(TClient *t, bool first_pass, bool deferred)
{
    g_assert(first_pass || !deferred);
    t->c = deferred ? kvm_dirty_client_start_deferred(k.s, t->name, t->rb, &error_abort)
                    : kvm_dirty_client_start(k.s, t->name, t->rb, &error_abort);
    for (int i = 0; i < NSLOTS; i++) {
        if (kvm_dirty_client_tracks(t->c, &k.s->slots[i])) {
            t->taken[i] = bitmap_new(slot_pages[i]);
            t->may_hand[i] = bitmap_new(slot_pages[i]);
            bitmap_fill(t->may_hand[i], slot_pages[i]);
            t->unarmed_read[i] = bitmap_new(slot_pages[i]);
            t->copy[i] = g_new0(uint32_t, slot_pages[i]);
            if (first_pass) {
                bitmap_fill(t->taken[i], slot_pages[i]);
            } else {
                memcpy(t->copy[i], k.version[i], slot_pages[i] * sizeof(uint32_t));
            }
        }
    }
}

static void tc_start(TClient *t, bool first_pass)
{
    tc_start_as(t, first_pass, false);
}

static void tc_stop(TClient *t)
{
    g_clear_pointer(&t->c, kvm_dirty_client_stop);
    for (int i = 0; i < NSLOTS; i++) {
        g_clear_pointer(&t->taken[i], g_free);
        g_clear_pointer(&t->may_hand[i], g_free);
        g_clear_pointer(&t->unarmed_read[i], g_free);
        g_clear_pointer(&t->copy[i], g_free);
    }
}

static bool tc_untaken(TClient *t, int i, uint64_t p)
{
    return t->c->slots[i].untaken && test_bit(p, t->c->slots[i].untaken);
}

/* KVMDirtyTakeFn: every bit handed over must have a reason. */
static void tc_take(void *opaque, KVMSlot *slot, const unsigned long *bits)
{
    TClient *t = opaque;
    int i = slot - k.s->slots;

    g_assert_nonnull(t->taken[i]);
    for (uint64_t p = find_first_bit(bits, slot->npages); p < slot->npages;
         p = find_next_bit(bits, slot->npages, p + 1)) {
        if (!test_bit(p, t->may_hand[i])) {
            g_error("%s: slot %d page %" PRIu64 " handed over with no write, re-mark or doubt",
                    t->name, i, p);
        }
        set_bit(p, t->taken[i]);
    }
}

static void tc_sync(TClient *t)
{
    g_assert_cmpint(kvm_dirty_client_sync(t->c, tc_take, t), ==, 0);
    for (int i = 0; i < NSLOTS; i++) {
        if (t->unarmed_read[i]) {
            bitmap_zero(t->unarmed_read[i], slot_pages[i]);
        }
    }
}

/* Another client's clear of [first, first+n) of @slot may hand these pages to @t. */
static void tc_note_clear(TClient *t, int slot, uint64_t first, uint64_t n)
{
    if (t->c && t->may_hand[slot]) {
        bitmap_set(t->may_hand[slot], first, n);
    }
}

/* Reads the pages of [first, first+n) of @slot that were taken; a deferred client arms it first. */
static void tc_read(TClient *t, int slot, uint64_t first, uint64_t n)
{
    g_autofree unsigned long *rep = bitmap_new(slot_pages[slot]);

    g_assert_cmpint(kvm_dirty_client_arm(t->c, &k.s->slots[slot]), ==, 0);
    g_assert_true(t->c->slots[slot].armed);

    for (uint64_t p = first; p < first + n; p++) {
        if (!test_and_clear_bit(p, t->taken[slot])) {
            continue;
        }
        t->reads++;
        t->spurious += t->copy[slot][p] == k.version[slot][p];
        t->copy[slot][p] = k.version[slot][p];
    }
    /* A page read now is handed over again only with a reason, unless KVM or we still hold it. */
    kvm_reported(slot, rep);
    for (uint64_t p = first; p < first + n; p++) {
        if (!test_bit(p, rep) && !tc_untaken(t, slot, p)) {
            clear_bit(p, t->may_hand[slot]);
        }
    }
}

/*
 * Clears [first, first+n) of @slot (clamped), then reads the pages of it
 * that were taken. @fail: KVM refuses the clear. @other is told.
 */
static void tc_clear_read(TClient *t, TClient *other, int slot, uint64_t first, uint64_t n,
                          int fail)
{
    uint64_t np = slot_pages[slot];
    int ret;

    if (first >= np) {
        return;
    }
    n = MIN(n, np - first);
    /* The clear would re-arm a write after such a read: sync first (dirty.c does too). */
    if (find_next_bit(t->unarmed_read[slot], first + n, first) < first + n) {
        tc_sync(t);
    }
    tc_note_clear(other, slot, first, n);
    k.clear_ret = fail;
    ret = kvm_dirty_client_clear(t->c, &k.s->slots[slot], first, n);
    g_assert_true(ret == 0 || (ret == fail && k.mode == MODE_CLEAR));
    k.clear_ret = 0;
    if (ret < 0) {
        bitmap_set(t->may_hand[slot], first, n);
    }
    tc_read(t, slot, first, n);
}

/* Reads without a clear first (the migration sends pages of a chunk with nothing to re-arm). */
static void tc_read_unarmed(TClient *t, int slot, uint64_t first, uint64_t n)
{
    uint64_t np = slot_pages[slot];

    if (first >= np) {
        return;
    }
    n = MIN(n, np - first);
    for (uint64_t p = first; p < first + n; p++) {
        if (test_bit(p, t->taken[slot])) {
            set_bit(p, t->unarmed_read[slot]);
        }
    }
    tc_read(t, slot, first, n);
}

/* The invariant, for every page of every slot @t tracks. */
static void tc_check(TClient *t, int step)
{
    unsigned long rep[BITS_TO_LONGS(256)];

    if (!t->c) {
        return;
    }
    for (int i = 0; i < NSLOTS; i++) {
        KVMDirtyClientSlot *cs = &t->c->slots[i];

        if (!t->taken[i]) {
            continue;
        }
        if (!cs->pending) {
            g_assert_true(bitmap_empty(cs->untaken, slot_pages[i]));
        }
        kvm_reported(i, rep);
        for (uint64_t p = 0; p < slot_pages[i]; p++) {
            if (t->copy[i][p] != k.version[i][p] && !test_bit(p, t->taken[i]) &&
                !tc_untaken(t, i, p) && !test_bit(p, rep)) {
                g_error("step %d: %s: slot %d page %" PRIu64 " v%u lost (read v%u)", step,
                        t->name, i, p, k.version[i][p], t->copy[i][p]);
            }
        }
    }
}

/* A slot logs exactly while a running client tracks it and (deferred) armed it. */
static void check_logging(TClient *a, TClient *b, bool counting)
{
    for (int i = 0; i < NSLOTS; i++) {
        int tracking = (a->c && a->taken[i]) + (b->c && b->taken[i]);
        int refs = (a->c && a->taken[i] && a->c->slots[i].armed) +
                   (b->c && b->taken[i] && b->c->slots[i].armed) + counting;

        g_assert_cmpint(k.s->slots[i].log_refs, ==, refs);
        g_assert_cmpint(k.logging[i], ==, refs > 0);
        g_assert_cmpint(k.s->slots[i].nclients, ==, tracking);
        g_assert_cmpint(k.s->slots[i].dirty_bmap != NULL, ==, tracking > 0);
    }
}

static void guest_write_random(GRand *r)
{
    int slot = g_rand_int_range(r, 0, NSLOTS);
    uint64_t page = g_rand_int_range(r, 0, slot_pages[slot]);

    guest_write(slot, page, g_rand_int_range(r, 0, NVCPUS));
}

/* A range to clear: whole slots, words, and odd edges. */
static void pick_range(GRand *r, TClient *t, int *slot, uint64_t *first, uint64_t *n)
{
    do {
        *slot = g_rand_int_range(r, 0, NSLOTS);
    } while (!t->taken[*slot]);
    switch (g_rand_int_range(r, 0, 4)) {
    case 0:
        *first = 0;
        *n = slot_pages[*slot];
        break;
    case 1:
        *first = g_rand_int_range(r, 0, slot_pages[*slot]) & ~63ULL;
        *n = 64;
        break;
    default:
        *first = g_rand_int_range(r, 0, slot_pages[*slot]);
        *n = g_rand_int_range(r, 1, slot_pages[*slot] + 10);
        break;
    }
}

/* The guest stopped: sync and read everything until both clients hold the last versions. */
static void drain(TClient *a, TClient *b)
{
    g_clear_pointer(&k.race, g_rand_free);
    for (int round = 0; round < 3; round++) {
        for (TClient *t = a; t; t = t == a ? b : NULL) {
            if (!t->c) {
                continue;
            }
            tc_sync(t);
            for (int i = 0; i < NSLOTS; i++) {
                if (t->taken[i]) {
                    tc_clear_read(t, t == a ? b : a, i, 0, slot_pages[i], 0);
                }
            }
        }
    }
    for (TClient *t = a; t; t = t == a ? b : NULL) {
        for (int i = 0; t->c && i < NSLOTS; i++) {
            for (uint64_t p = 0; t->taken[i] && p < slot_pages[i]; p++) {
                if (t->copy[i][p] != k.version[i][p]) {
                    g_error("%s: slot %d page %" PRIu64 " ends at v%u, the guest wrote v%u",
                            t->name, i, p, t->copy[i][p], k.version[i][p]);
                }
            }
        }
    }
}

static void test_random(gconstpointer opaque)
{
    FakeMode mode = GPOINTER_TO_INT(opaque);
    g_autoptr(GRand) r = g_rand_new_with_seed(SEED + mode);
    TClient a = { .name = "all" }, b = { .name = "vram" };
    bool counting = false;

    g_test_message("seed 0x%x", SEED + mode);
    vm_new(mode);
    b.rb = k.blocks[1];
    tclients[0] = &a;
    tclients[1] = &b;
    fake_on_write = tc_note_write;
    k.race = g_rand_new_with_seed(SEED + 100 + mode);
    tc_start(&a, true);
    tc_start(&b, true);
    for (int step = 0; step < 6000; step++) {
        TClient *t = g_rand_boolean(r) ? &a : &b, *other = t == &a ? &b : &a;
        int what = g_rand_int_range(r, 0, 100), slot;
        uint64_t first, n;

        if (what < 35) {
            for (int w = g_rand_int_range(r, 1, 6); w > 0; w--) {
                guest_write_random(r);
            }
        } else if (what < 55) {
            if (t->c) {
                tc_sync(t);
            }
        } else if (what < 80) {
            if (t->c) {
                pick_range(r, t, &slot, &first, &n);
                tc_clear_read(t, other, slot, first, n,
                              g_rand_int_range(r, 0, 10) == 0 ? -EFAULT : 0);
            }
        } else if (what < 90) {
            if (t->c) {
                pick_range(r, t, &slot, &first, &n);
                tc_read_unarmed(t, slot, first, n);
            }
        } else if (what < 95) {
            if (t->c) {
                tc_stop(t);
            } else {
                bool first_pass = g_rand_boolean(r);

                /* Deferred as the migration is: get-log and ring modes, with a first pass. */
                tc_start_as(t, first_pass,
                            first_pass && mode != MODE_CLEAR && g_rand_boolean(r));
            }
        } else if (mode == MODE_RING && what < 98) {
            /* The reaper, dirtylimit or a vCPU harvesting on their own. */
            g_assert_cmpint(kvm_dirty_ring_harvest(k.s), ==, 0);
        } else if (mode == MODE_RING) {
            /* dirty-limit's counters hold every slot logging, or let go. */
            if (counting) {
                kvm_dirty_ring_count_stop(k.s);
            } else {
                g_assert_true(kvm_dirty_ring_count_start(k.s, &error_abort));
            }
            counting = !counting;
        }
        tc_check(&a, step);
        tc_check(&b, step);
        check_logging(&a, &b, counting);
    }
    drain(&a, &b);
    g_test_message("reads: %s %" PRIu64 " (%" PRIu64 " unchanged), %s %" PRIu64 " (%" PRIu64
                   " unchanged)", a.name, a.reads, a.spurious, b.name, b.reads, b.spurious);
    tc_stop(&a);
    tc_stop(&b);
    if (counting) {
        kvm_dirty_ring_count_stop(k.s);
    }
    tclients[0] = tclients[1] = NULL;
    vm_free();
}

/* ---- Direct tests ---- */

typedef struct TwoClients {
    TClient a, b;               /* every slot; the "vga.vram" slot (2) */
} TwoClients;

static void two_new(TwoClients *tw, FakeMode mode)
{
    vm_new(mode);
    *tw = (TwoClients) { .a = { .name = "all" }, .b = { .name = "vram", .rb = k.blocks[1] } };
    tclients[0] = &tw->a;
    tclients[1] = &tw->b;
    fake_on_write = tc_note_write;
    tc_start(&tw->a, true);
    tc_start(&tw->b, true);
    /* Past the first pass: both read everything once. */
    for (TClient *t = &tw->a; t; t = t == &tw->a ? &tw->b : NULL) {
        tc_sync(t);
        for (int i = 0; i < NSLOTS; i++) {
            if (t->taken[i]) {
                tc_clear_read(t, t == &tw->a ? &tw->b : &tw->a, i, 0, slot_pages[i], 0);
            }
        }
    }
    tc_sync(&tw->a);
    tc_sync(&tw->b);
    g_assert_true(bitmap_empty(tw->a.taken[2], 96) && bitmap_empty(tw->b.taken[2], 96));
}

static void two_free(TwoClients *tw)
{
    tc_stop(&tw->a);
    tc_stop(&tw->b);
    tclients[0] = tclients[1] = NULL;
    vm_free();
}

/*
 * The re-mark rule (clear-log): B took page P and read it without a clear
 * of its own; the guest writes P again (nothing new in KVM: P is not
 * protected); A re-arms P. Only the re-mark tells B.
 */
static void test_remark(void)
{
    TwoClients tw;

    two_new(&tw, MODE_CLEAR);
    guest_write(2, 10, 0);
    tc_sync(&tw.b);
    g_assert_true(test_bit(10, tw.b.taken[2]));
    clear_bit(10, tw.b.taken[2]);                  /* B reads P ... */
    tw.b.copy[2][10] = k.version[2][10];
    guest_write(2, 10, 1);                         /* ... then the guest writes P */
    g_assert_true(test_bit(10, k.dirty[2]));
    g_assert_false(tc_untaken(&tw.b, 2, 10));
    /* A (which has P from B's read, not taken yet) re-arms P: KVM forgets it. */
    tc_clear_read(&tw.a, &tw.b, 2, 0, 64, 0);
    g_assert_false(test_bit(10, k.dirty[2]));
    g_assert_true(tc_untaken(&tw.b, 2, 10));
    tc_sync(&tw.b);
    g_assert_true(test_bit(10, tw.b.taken[2]));
    /* Spurious at most once: after both read P, nothing is left to hand over. */
    tc_clear_read(&tw.b, &tw.a, 2, 0, 96, 0);
    tc_sync(&tw.a);
    g_assert_true(test_bit(10, tw.a.taken[2]));
    tc_clear_read(&tw.a, &tw.b, 2, 0, 96, 0);
    tc_sync(&tw.a);
    tc_sync(&tw.b);
    g_assert_true(bitmap_empty(tw.a.taken[2], 96) && bitmap_empty(tw.b.taken[2], 96));
    two_free(&tw);
}

/* A's read consumes KVM's bits (get-log's GET, the ring's harvest): B still gets them. */
static void test_read_reaches_all(gconstpointer opaque)
{
    FakeMode mode = GPOINTER_TO_INT(opaque);
    TwoClients tw;

    two_new(&tw, mode);
    guest_write(2, 5, 0);
    guest_write(2, 95, 1);
    guest_write(0, 7, 0);
    tc_sync(&tw.a);
    g_assert_false(kvm_will_report(2, 5) && mode != MODE_CLEAR);
    g_assert_true(test_bit(5, tw.a.taken[2]) && test_bit(95, tw.a.taken[2]));
    g_assert_true(test_bit(7, tw.a.taken[0]));
    tc_sync(&tw.b);
    g_assert_true(test_bit(5, tw.b.taken[2]) && test_bit(95, tw.b.taken[2]));
    g_assert_cmpuint(bitmap_count_one(tw.b.taken[2], 96), ==, 2);
    /* B's read of its slot reaches A too; A's other slots are A's alone. */
    guest_write(2, 6, 0);
    tc_sync(&tw.b);
    tc_sync(&tw.a);
    g_assert_true(test_bit(6, tw.a.taken[2]));
    two_free(&tw);
}

/* Clients start and stop while the other runs; slots log exactly while tracked. */
static void test_start_stop(gconstpointer opaque)
{
    FakeMode mode = GPOINTER_TO_INT(opaque);
    TClient a = { .name = "all" }, b = { .name = "vram" };
    g_autoptr(Error) err = NULL;

    vm_new(mode);
    b.rb = k.blocks[1];
    tclients[0] = &a;
    tclients[1] = &b;
    fake_on_write = tc_note_write;
    tc_start(&b, true);
    /* The display alone: only its slot logs. */
    check_logging(&a, &b, false);
    g_assert_true(k.logging[2] && !k.logging[0] && !k.logging[1] && !k.logging[3]);
    tc_sync(&b);
    tc_clear_read(&b, &a, 2, 0, 96, 0);
    guest_write(2, 3, 0);
    guest_write(0, 3, 0);                          /* not logging: nobody cares */

    /* The migration starts: the display's slot is not re-enabled, the display loses nothing. */
    tc_start(&a, true);
    check_logging(&a, &b, false);
    g_assert_cmpint(k.set_flags_calls[2], ==, 1);
    for (int i = 0; i < NSLOTS; i++) {
        bitmap_zero(a.taken[i], slot_pages[i]);     /* what the first sync hands over */
    }
    tc_sync(&a);
    /* The display's slot comes with its writes only; newly logging ones (clear-log) all set. */
    g_assert_true(test_bit(3, a.taken[2]));
    g_assert_cmpuint(bitmap_count_one(a.taken[2], 96), ==, 1);
    g_assert_cmpuint(bitmap_count_one(a.taken[0], 200), ==, mode == MODE_CLEAR ? 200 : 0);
    tc_sync(&b);
    g_assert_true(test_bit(3, b.taken[2]));
    g_assert_cmpuint(bitmap_count_one(b.taken[2], 96), ==, 1);

    /* The migration stops: the display's slot keeps logging, its bits stay. */
    guest_write(2, 40, 1);
    tc_sync(&a);
    tc_stop(&a);
    check_logging(&a, &b, false);
    g_assert_true(k.logging[2] && !k.logging[0]);
    guest_write(2, 41, 0);
    tc_sync(&b);
    g_assert_true(test_bit(40, b.taken[2]) && test_bit(41, b.taken[2]));

    /* A start that fails half-way gives back only its own references. */
    k.set_flags_fail_slot = 1;
    g_assert_null(kvm_dirty_client_start(k.s, "all", NULL, &err));
    g_assert_nonnull(err);
    k.set_flags_fail_slot = -1;
    check_logging(&a, &b, false);
    g_assert_cmpuint(k.s->dirty_clients->len, ==, 1);

    /* The display stops while the migration runs: the migration's pages stay logged. */
    tc_start(&a, true);
    tc_stop(&b);
    check_logging(&a, &b, false);
    g_assert_true(k.logging[2]);
    guest_write(2, 50, 0);
    tc_sync(&a);
    g_assert_true(test_bit(50, a.taken[2]));
    tc_stop(&a);
    check_logging(&a, &b, false);
    tclients[0] = tclients[1] = NULL;
    /* A block no slot maps is refused. */
    {
        RAMBlock none = { .idstr = "none" };
        g_autoptr(Error) err2 = NULL;

        g_assert_null(kvm_dirty_client_start(k.s, "x", &none, &err2));
        g_assert_nonnull(strstr(error_get_pretty(err2), "none"));
    }
    vm_free();
}

/* A clear KVM refuses: the bits stay in KVM, and both clients are handed them. */
static void test_clear_fails(void)
{
    TwoClients tw;

    two_new(&tw, MODE_CLEAR);
    guest_write(2, 70, 0);
    tc_sync(&tw.a);
    tc_clear_read(&tw.a, &tw.b, 2, 64, 32, -EFAULT);
    g_assert_true(test_bit(70, k.dirty[2]));
    g_assert_true(tc_untaken(&tw.a, 2, 70) && tc_untaken(&tw.b, 2, 70));
    /* A read page 70 anyway; a write now leaves no trace in KVM, but A has it coming. */
    guest_write(2, 70, 1);
    tc_clear_read(&tw.a, &tw.b, 2, 64, 32, 0);
    tc_sync(&tw.a);
    g_assert_true(test_bit(70, tw.a.taken[2]));
    two_free(&tw);
}

/*
 * A failed ring reset fails the syncs of the session it happened in, and
 * only of it: a deferred client starting after every slot stopped logging
 * syncs before it arms anything, and must not inherit it.
 */
static void test_ring_reset_error_ends(void)
{
    TClient a = { .name = "all" }, b = { .name = "next" };

    vm_new(MODE_RING);
    tc_start(&a, true);
    guest_write(0, 3, 0);
    k.reset_ret = -EFAULT;
    g_assert_cmpint(kvm_dirty_client_sync(a.c, NULL, NULL), <, 0);
    g_assert_cmpint(kvm_dirty_client_sync(a.c, NULL, NULL), <, 0);
    tc_stop(&a);
    tc_start_as(&b, true, true);
    g_assert_cmpint(kvm_dirty_client_sync(b.c, NULL, NULL), ==, 0);
    g_assert_cmpint(kvm_dirty_client_arm(b.c, &k.s->slots[0]), ==, 0);
    g_assert_cmpint(kvm_dirty_client_sync(b.c, NULL, NULL), ==, 0);
    tc_stop(&b);
    vm_free();
}

int main(int argc, char **argv)
{
    static const char *const names[] = { "get-log", "clear-log", "dirty-ring" };

    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/kvm-dirty-clients/clear-log/remark", test_remark);
    g_test_add_func("/kvm-dirty-clients/clear-log/clear-fails", test_clear_fails);
    g_test_add_func("/kvm-dirty-clients/dirty-ring/reset-error-ends", test_ring_reset_error_ends);
    for (int m = MODE_GET; m <= MODE_RING; m++) {
        g_autofree char *reach = g_strdup_printf("/kvm-dirty-clients/%s/read-reaches-all",
                                                 names[m]);
        g_autofree char *ss = g_strdup_printf("/kvm-dirty-clients/%s/start-stop", names[m]);
        g_autofree char *rnd = g_strdup_printf("/kvm-dirty-clients/%s/random", names[m]);

        g_test_add_data_func(reach, GINT_TO_POINTER(m), test_read_reaches_all);
        g_test_add_data_func(ss, GINT_TO_POINTER(m), test_start_stop);
        g_test_add_data_func(rnd, GINT_TO_POINTER(m), test_random);
    }
    return g_test_run();
}

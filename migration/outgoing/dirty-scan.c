/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The precopy page source: find-next-bit over the dirty tracker's send
 * bitmaps from where the last call stopped, claim the page (lazy KVM
 * clear, test-and-clear, counter - 1: dirty.c), zero check (none for a
 * page the kernel never populated: dirty.h's data_bmap), send by
 * reference. What is left is the tracker's counter, never a scan. Syncs
 * happen at setup (pass 1), when the switchover wants an exact count, and
 * once more with the VM stopped.
 *
 * Everything here is owned by mig/src; query-migrate (main thread) reads
 * the counters, single aligned words.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "qemu/bufferiszero.h"
#include "system/kvm.h"
#include "system/memory.h"
#include "migration/qemu-file.h"
#include "migration/dirty/converge.h"
#include "migration/dirty/dirty.h"
#include "dirty-scan.h"
#include "migration/core/options.h"
#include "migration/transport/ram-sink.h"
#include "migration/transport/ram-source.h"
#include "migration/core/status.h"

#define DIRTY_RATE_PERIOD_NS 1000000000LL


static void dirty_scan_update_rate(DirtyScan *ds)
{
    int64_t now = get_clock_ns();

    if (now - ds->rate_start_ns >= DIRTY_RATE_PERIOD_NS) {
        ds->dirty_pages_rate = (ds->dt.pages_merged - ds->rate_start_pages) * 1e9 /
                               (now - ds->rate_start_ns);
        ds->rate_start_ns = now;
        ds->rate_start_pages = ds->dt.pages_merged;
    }
}

/*
 * One sync of the dirty bitmaps, announced as a pass. 0 or -errno, also
 * set on @f: some slots' bits may have been read and re-protected already,
 * so the stream cannot go on without them. @when names the sync.
 */
static int dirty_scan_sync(DirtyScan *ds, QEMUFile *f, const char *when)
{
    int64_t ret = dirty_tracker_sync(&ds->dt);

    if (ret < 0) {
        qemu_file_set_error_msg(f, (int)ret, "%s dirty bitmap sync failed: %s", when,
                                g_strerror(-ret));
        return (int)ret;
    }
    dirty_scan_update_rate(ds);
    ds->last_sync_ns = get_clock_ns();
    if (ds->dt.syncs > 1) {
        converge_after_sync(ds->dt.last_sync_new, qemu_file_transferred(f));
    }
    ds->round_open = true;
    migration_pass_event(ds->dt.syncs, ds->dt.dirty_pages * TARGET_PAGE_SIZE,
                         qemu_file_transferred(f));
    return 0;
}

uint64_t dirty_scan_dirtied_since_sync(const DirtyScan *ds)
{
    double s = ds->last_sync_ns ? (get_clock_ns() - ds->last_sync_ns) / 1e9 : 0;
    double bytes = ds->dirty_pages_rate * (double)TARGET_PAGE_SIZE * s;

    return bytes < 0x1p63 ? (uint64_t)bytes : UINT64_MAX / 2;
}

static bool dirty_scan_setup(void *src, QEMUFile *f, Error **errp)
{
    DirtyScan *ds = src;

    memset(ds, 0, sizeof(*ds));
    if (!dirty_tracker_init(&ds->dt, kvm_state, migrate_clear_bitmap_shift(),
                            migrate_ignore_shared(), errp)) {
        return false;
    }
    ds->tracking = true;
    if (migrate_cap(MIGRATION_CAPABILITY_POSTCOPY_RAM)) {
        dirty_tracker_track_sent(&ds->dt);
    }
    ds->rate_start_ns = get_clock_ns();
    /* Like QEMU: an initial sync right after logging starts is pass 1. */
    if (dirty_scan_sync(ds, f, "initial") < 0) {
        error_setg(errp, "%s", qemu_file_error_msg(f));
        return false;
    }
    return true;
}

/* VM stopped: this sync is exact, and nothing dirties pages after it. */
static int dirty_scan_final_sync(void *src, QEMUFile *f)
{
    DirtyScan *ds = src;
    int ret = dirty_scan_sync(ds, f, "final");

    /*
     * A slot the first pass never reached needs no logging now: arming it
     * would write-protect it inside the downtime, for nothing.
     */
    if (ret >= 0) {
        dirty_tracker_guest_stopped(&ds->dt);
    }
    return ret;
}

static void dirty_scan_send_page(QEMUFile *f, RAMPageWriter *w, RAMBlockDirty *b,
                                 uint64_t page)
{
    const uint8_t *host = b->rb->host + (page << TARGET_PAGE_BITS);
    bool detect = migrate_zero_page_detection() != ZERO_PAGE_DETECTION_NONE;
    unsigned long known_zero = dirty_tracker_known_zero(b, page / BITS_PER_LONG,
                                                        1UL << (page % BITS_PER_LONG));
    const uint8_t *data = detect && (known_zero || buffer_is_zero(host, TARGET_PAGE_SIZE))
                          ? NULL : host;

    ram_put_page(w, f, b->rb, page, data);
}

/*
 * A sink that takes words (multifd): claims the dirty word at @page's word
 * and hands its pages over at once, with those known to be zero without
 * reading them (dirty.h's data_bmap) when zero pages are detected at all.
 */
static void dirty_scan_put_word(QEMUFile *f, RAMPageWriter *w, RAMBlockDirty *b,
                                uint64_t word, unsigned long bits)
{
    unsigned long zero = dirty_tracker_known_zero(b, word, bits);

    if (migrate_zero_page_detection() == ZERO_PAGE_DETECTION_NONE) {
        zero = 0;
    }
    w->ops->put_word(w->sink, f, b->rb, word, bits, zero);
}

/*
 * Finds the next dirty page at or after the cursor (wrapping), claims and
 * sends it (a sink that takes words: its whole word). Returns false when
 * nothing is dirty: the counter says so
 * exactly, so no scan is needed to know.
 */
static bool dirty_scan_send_next(void *src, QEMUFile *f, RAMPageWriter *w)
{
    DirtyScan *ds = src;
    DirtyTracker *dt = &ds->dt;

    if (ds->round_open) {
        ds->round_open = false;
        if (w->ops->new_round && !w->ops->new_round(w->sink, f)) {
            return false;
        }
    }
    /* Postcopy may share the bitmaps with mig/src-rp: find and claim under its lock. */
    dirty_tracker_lock(dt);
    if (!dt->dirty_pages) {
        dirty_tracker_unlock(dt);
        return false;
    }
    /* At most one full wrap: the counter guarantees a set bit exists. */
    for (int tries = 0; tries <= dt->nblocks; tries++) {
        RAMBlockDirty *b = &dt->blocks[ds->cur_block];
        uint64_t page = find_next_bit(b->send_bmap, b->npages, ds->cur_page);

        if (page < b->npages && ram_writer_takes_words(w)) {
            uint64_t word = page / BITS_PER_LONG;
            unsigned long bits = dirty_tracker_claim_word(dt, b, word);

            dirty_tracker_unlock(dt);
            ds->cur_page = (word + 1) * BITS_PER_LONG;
            dirty_scan_put_word(f, w, b, word, bits);
            return true;
        }
        if (page < b->npages) {
            bool mine = dirty_tracker_claim_page(dt, b, page);

            dirty_tracker_unlock(dt);
            ds->cur_page = page + 1;
            if (mine) {
                dirty_scan_send_page(f, w, b, page);
            }
            return true;
        }
        ds->cur_block = (ds->cur_block + 1) % dt->nblocks;
        ds->cur_page = 0;
    }
    dirty_tracker_unlock(dt);
    /* The counter and the bitmaps disagree: a bug in dirty.c. Do not guess. */
    qemu_file_set_error_msg(f, -EIO, "dirty page counter (%" PRIu64 ") does not match the "
                            "bitmaps", dt->dirty_pages);
    return false;
}

static uint64_t dirty_scan_pending(void *src, QEMUFile *f, bool exact)
{
    DirtyScan *ds = src;

    /* get-log and clear-log syncs need no vCPU kick, so no BQL either. */
    if (exact) {
        dirty_scan_sync(ds, f, "switchover");
    }
    return ds->dt.dirty_pages * TARGET_PAGE_SIZE;
}

static RAMBlockDirty *dirty_scan_block(DirtyScan *ds, RAMBlock *rb)
{
    for (int i = 0; i < ds->dt.nblocks; i++) {
        if (ds->dt.blocks[i].rb == rb) {
            return &ds->dt.blocks[i];
        }
    }
    return NULL;
}

static void dirty_scan_send_page_now(void *src, QEMUFile *f, RAMPageWriter *w, RAMBlock *rb,
                                     uint64_t page)
{
    DirtyScan *ds = src;
    RAMBlockDirty *b = dirty_scan_block(ds, rb);
    bool mine;

    /* A block that is not tracked is not migrated (read-only): nothing to send. */
    if (!b || page >= b->npages) {
        return;
    }
    /*
     * Not dirty any more: sent already, maybe still on its way. A page goes
     * once, as from QEMU's source: a QEMU destination fails on a page it
     * holds (EEXIST), and ours maps zero pages once postcopy is advised.
     */
    dirty_tracker_lock(&ds->dt);
    mine = dirty_tracker_claim_page(&ds->dt, b, page);
    dirty_tracker_unlock(&ds->dt);
    if (mine) {
        dirty_scan_send_page(f, w, b, page);
    }
}

bool dirty_scan_claim_urgent(DirtyScan *ds, RAMBlock *rb, uint64_t page)
{
    RAMBlockDirty *b = dirty_scan_block(ds, rb);

    return b && page < b->npages && dirty_tracker_claim_urgent(&ds->dt, b, page);
}

static void dirty_scan_skip_pages(void *src, RAMBlock *rb, const unsigned long *present)
{
    DirtyScan *ds = src;
    RAMBlockDirty *b = dirty_scan_block(ds, rb);

    if (b) {
        dirty_tracker_skip_pages(&ds->dt, b, present);
    }
}

/*
 * A gap of at most this many good pages (sent, unchanged) between two stale
 * runs is discarded with them and its pages sent again: one madvise at the
 * destination costs about as much as placing a few pages, and discards
 * happen while the guest is stopped, the re-sends after it runs again.
 */
#define DISCARD_MERGE_GAP 16

/* Pages of [a, b) that are at the destination and current: sent, not to send. */
static uint64_t dirty_scan_good_pages(const RAMBlockDirty *b, uint64_t a, uint64_t end)
{
    uint64_t good = 0;

    for (uint64_t p = a; p < end; p++) {
        good += test_bit(p, b->sent_bmap) && !test_bit(p, b->send_bmap);
    }
    return good;
}

/*
 * Runs of the pages still to send, stale (sent before) or never sent,
 * merged across short gaps of good pages, which are marked to send again.
 * Never-sent pages are discarded too: a QEMU destination holds content of
 * its own in some (its firmware and ACPI ROM blocks, filled at start-up),
 * and refuses to place a page over one it holds (UFFDIO_COPY's EEXIST),
 * so QEMU's source discards every page it will send in postcopy.
 */
static void dirty_scan_foreach_stale(void *src,
                                     void (*fn)(void *opaque, RAMBlock *rb, uint64_t first,
                                                uint64_t npages),
                                     void *opaque)
{
    DirtyScan *ds = src;
    DirtyTracker *dt = &ds->dt;

    /* The switchover: the guest runs at the destination from now on. */
    dirty_tracker_guest_stopped(dt);
    for (int i = 0; i < dt->nblocks; i++) {
        RAMBlockDirty *b = &dt->blocks[i];
        uint64_t words = BITS_TO_LONGS(b->npages);
        uint64_t run_start = 0, run_end = 0;      /* [run_start, run_end), empty if equal */

        assert(b->sent_bmap);
        for (uint64_t w = 0; w < words; w++) {
            unsigned long stale = b->send_bmap[w];

            while (stale) {
                uint64_t p = w * BITS_PER_LONG + __builtin_ctzl(stale);
                uint64_t good;

                stale &= stale - 1;
                if (run_end == run_start) {
                    run_start = p;
                } else if (p != run_end) {
                    good = p - run_end <= DISCARD_MERGE_GAP || !test_bit(run_end, b->sent_bmap)
                           ? dirty_scan_good_pages(b, run_end, p) : UINT64_MAX;
                    if (good && (good == UINT64_MAX || p - run_end > DISCARD_MERGE_GAP)) {
                        fn(opaque, b->rb, run_start, run_end - run_start);
                        run_start = p;
                    } else if (good) {
                        dirty_tracker_mark_pages(dt, b, run_end, p - run_end);
                    }
                }
                run_end = p + 1;
            }
        }
        if (run_end != run_start) {
            fn(opaque, b->rb, run_start, run_end - run_start);
        }
    }
}

static void dirty_scan_cleanup(void *src)
{
    DirtyScan *ds = src;

    if (ds->tracking) {
        dirty_tracker_cleanup(&ds->dt);
        ds->tracking = false;
    }
}

/* x-dirty-log: the tracker's and the KVM dirty-log layer's counters. */
static XDirtyLogInfo *dirty_scan_log_info(const DirtyTracker *dt)
{
    KVMState *kvm = dt->kvm ? dt->kvm : kvm_state;
    XDirtyLogInfo *x = g_new0(XDirtyLogInfo, 1);

    x->mode = g_strdup(kvm ? kvm_dirty_log_mode_name(kvm) : "none");
    x->syncs = dt->syncs;
    x->sync_time_us_total = dt->sync_ns_total / 1000;
    x->sync_time_us_max = dt->sync_ns_max / 1000;
    x->pages_merged = dt->pages_merged;
    if (kvm) {
        x->clears = kvm->dirty_stats.clears;
        x->clear_time_us_total = kvm->dirty_stats.clear_ns / 1000;
        x->ring_harvests = kvm->dirty_stats.harvests;
    }
    /* Not clearing (yet, or in this mode): the shift the next migration uses. */
    x->clear_bitmap_shift = dt->clear_log ? dt->clear_shift : migrate_clear_bitmap_shift();
    return x;
}

static void dirty_scan_fill_info(void *src, MigrationInfo *info)
{
    DirtyScan *ds = src;

    info->ram->remaining = ds->dt.dirty_pages * TARGET_PAGE_SIZE;
    info->ram->dirty_sync_count = ds->dt.syncs;
    info->ram->dirty_pages_rate = ds->dirty_pages_rate;
    info->x_dirty_log = dirty_scan_log_info(&ds->dt);
}

const RAMPageSource dirty_scan_source = {
    .name = "dirty-scan",
    .setup = dirty_scan_setup,
    .final_sync = dirty_scan_final_sync,
    .send_next = dirty_scan_send_next,
    .pending = dirty_scan_pending,
    .send_page = dirty_scan_send_page_now,
    .foreach_stale = dirty_scan_foreach_stale,
    .skip_pages = dirty_scan_skip_pages,
    .cleanup = dirty_scan_cleanup,
    .fill_info = dirty_scan_fill_info,
};

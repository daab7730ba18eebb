/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The background snapshot's page source: the fault thread ("mig/uffd",
 * snapshot-fault.c) and the RAM save loop (mig/src) share the work of
 * saving each page exactly once, as it was when the snapshot started.
 *
 *   guest writes a protected page
 *     -> mig/uffd (snapshot_ram_handle_fault) copies the unsaved pages of
 *        the 2 MiB region into a copy run, unprotects the region (the vCPU
 *        runs on), and queues the run
 *   mig/src (snapshot_ram_send_next, called by the "ram" section)
 *     -> writes queued runs first, then copies + unprotects the next region
 *        of the linear scan and writes it
 *
 * A page's content is copied before it becomes writable, so the stream
 * never references guest memory that may change; the guest waits for a
 * memcpy, not for the output. Regions are aligned 2 MiB: unprotecting part
 * of a huge page splits it, and on kvm-pvm the guest then re-faulted its
 * whole working set 4 KiB at a time (seconds of stall).
 *
 * When every region run is queued for the writer (the guest faults faster
 * than the output drains: x-background-snapshot-buffer-size), a fault is
 * served with a small copy from a reserve instead of waiting for the
 * output: the faulting page and the next SMALL_PAGES - 1 of its region (a
 * sequential writer wants them next) are copied and unprotected, and the
 * region is released again; whoever saves the rest of it skips the pages
 * already saved (their bit in unsaved_bmap is clear). This splits that huge
 * page, the lesser evil against a vCPU stopped for the output.
 *
 * The claim protocol, no lock: a region is saved by whichever thread wins
 * the atomic test-and-set of its bit in claimed_bmap; the winner alone
 * touches the region's words of unsaved_bmap (regions are word aligned),
 * copies its pages, unprotects it, then sets its bit in done_bmap. A fault
 * on a region the writer owns just waits for done (the writer's unprotect
 * wakes the guest). A small fault claims the region only while it copies
 * its pages, then clears the claim; so every region ends with one
 * full-region copy, which counts it in regions_done. The writer ends when
 * all regions are done and no fault's copy is in flight (counted before
 * the fault claims, until the copy is written).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "qemu/bufferiszero.h"
#include "qemu/tsan.h"
#include "qemu/userfaultfd.h"
#include "qemu/thread.h"
#include "system/memory.h"
#include "migration/qemu-file.h"
#include "migration/core/options.h"
#include "migration/transport/ram-source.h"
#include "snapshot-ram.h"
#include "migration/trace.h"
#include <sys/mman.h>

#define RUN_PAGES 512           /* 2 MiB regions */
#define RUN_BYTES (RUN_PAGES * TARGET_PAGE_SIZE)

enum { RUN_SKIP, RUN_ZERO, RUN_DATA };

/* The writer gives up when no region could be saved for this long. */
#define SNAP_STUCK_NS (10 * 1000 * 1000 * 1000LL)

/*
 * The writer's own runs for the linear scan: with mapped-ram's parallel
 * writers several regions are being written at once.
 */
#define LINEAR_RUNS 8

/* Small runs for faults that find every region run in use: 64 MiB. */
#define SMALL_PAGES 16
#define SMALL_RUNS 1024

struct SnapRun {
    SnapRam *sr;                /* the owner, for the written callbacks */
    RAMBlock *rb;
    uint64_t first;             /* first page of the region (or of a small run) */
    uint64_t npages;
    bool small;                 /* a small run from the reserve */
    uint8_t kind[RUN_PAGES];
    uint8_t *data;              /* RUN_PAGES pages */
};

/* One RAMBlock. The bitmaps' words of a region belong to its claim holder. */
struct SnapBlock {
    RAMBlock *rb;
    uint64_t npages;
    unsigned long *unsaved_bmap;    /* set: the page is not in a copy yet */
    unsigned long *claimed_bmap;    /* set (atomic): someone is saving the region */
    unsigned long *done_bmap;       /* set (atomic): region saved and unprotected */
    uint64_t nregions;
};


XBackgroundSnapshotInfo *snapshot_info_get(MigrationInfo *info)
{
    if (!info->x_background_snapshot) {
        info->x_background_snapshot = g_new0(XBackgroundSnapshotInfo, 1);
    }
    return info->x_background_snapshot;
}

/* Fault runs for the buffer-size parameter; more than RAM's regions is waste. */
static int snap_pool_runs(SnapRam *sr)
{
    uint64_t want = migrate_background_snapshot_buffer_size() / RUN_BYTES;

    return MAX(1, MIN(MIN(want, sr->nregions), INT_MAX / 2));
}

/* Claims region @r of block @b; true if the caller now owns it. */
static bool snap_claim_region(SnapBlock *b, uint64_t r)
{
    return !test_and_set_bit_atomic(r, b->claimed_bmap);
}

/*
 * Lets the guest write [@host, @host + @len) of @rb again, waking vCPUs
 * waiting on it. A failure may leave them waiting until a later unprotect
 * of the range or the unprotect-all at the end: the writer sees sr->error
 * and fails the stream.
 */
static void snap_unprotect(SnapRam *sr, RAMBlock *rb, uint8_t *host, uint64_t len)
{
    int ret;

    if (rb->readonly) {
        return;     /* never registered: nothing to release */
    }
    ret = uffd_change_protection(sr->uffd, host, len, false);
    if (ret < 0) {
        int expected = 0;

        __atomic_compare_exchange_n(&sr->error, &expected, -ret, false,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    }
}

/*
 * Copies the unsaved pages of [@first, @first + @npages) of @b into @run
 * and marks them saved; the unsaved counter drops by as many. The caller
 * holds the claim of their region. A clear bit: saved already, by a small
 * fault.
 */
static void snap_copy_range(SnapRam *sr, SnapBlock *b, uint64_t first, uint64_t npages,
                            SnapRun *run)
{
    uint64_t copied = 0;

    run->rb = b->rb;
    run->first = first;
    run->npages = npages;
    for (uint64_t i = 0; i < npages; i++) {
        const uint8_t *host = b->rb->host + ((first + i) << TARGET_PAGE_BITS);

        if (!test_bit(first + i, b->unsaved_bmap)) {
            run->kind[i] = RUN_SKIP;
            continue;
        }
        clear_bit(first + i, b->unsaved_bmap);
        if (buffer_is_zero(host, TARGET_PAGE_SIZE)) {
            run->kind[i] = RUN_ZERO;
        } else {
            memcpy(run->data + i * TARGET_PAGE_SIZE, host, TARGET_PAGE_SIZE);
            run->kind[i] = RUN_DATA;
        }
        copied++;
    }
    __atomic_sub_fetch(&sr->unsaved_pages, copied, __ATOMIC_SEQ_CST);
}

/*
 * Copies the pages of region @r of @b (which the caller claimed) into
 * @run, unprotects the region and marks it done.
 */
static void snap_copy_region(SnapRam *sr, SnapBlock *b, uint64_t r, SnapRun *run)
{
    uint64_t first = r * RUN_PAGES;
    int64_t t0 = get_clock_ns(), t1;

    snap_copy_range(sr, b, first, MIN((uint64_t)RUN_PAGES, b->npages - first), run);
    /* Every page of the region is in a copy now: let the guest write (and wake it). */
    t1 = get_clock_ns();
    snap_unprotect(sr, b->rb, b->rb->host + (first << TARGET_PAGE_BITS),
                   run->npages << TARGET_PAGE_BITS);
    set_bit_atomic(r, b->done_bmap);
    __atomic_add_fetch(&sr->regions_done, 1, __ATOMIC_SEQ_CST);
    trace_bg_snapshot_region(first, run->npages, (t1 - t0) / 1000,
                             (get_clock_ns() - t1) / 1000);
}

/*
 * Copies page @page of @b (whose region the caller claimed) and the
 * unsaved pages after it, up to SMALL_PAGES within the region, into the
 * small @run and unprotects them; false if @page was saved already (by an
 * earlier small copy that covered it: a fault reported twice, or by two
 * vCPUs).
 */
static bool snap_copy_small(SnapRam *sr, SnapBlock *b, uint64_t page, SnapRun *run)
{
    uint64_t region_end = MIN((page / RUN_PAGES + 1) * RUN_PAGES, b->npages);

    if (!test_bit(page, b->unsaved_bmap)) {
        return false;
    }
    snap_copy_range(sr, b, page, MIN((uint64_t)SMALL_PAGES, region_end - page), run);
    /* Pages of the range saved earlier are writable already: no harm. */
    snap_unprotect(sr, b->rb, b->rb->host + (page << TARGET_PAGE_BITS),
                   run->npages << TARGET_PAGE_BITS);
    return true;
}

/*
 * The output refers to the run's buffer: @written(@run) runs once it was
 * written (at once for a stream; a mapped-ram file's writers may be later).
 */
static void snap_write_run(QEMUFile *f, RAMPageWriter *w, SnapRun *run,
                           void (*written)(void *run))
{
    for (uint64_t i = 0; i < run->npages; i++) {
        if (run->kind[i] != RUN_SKIP) {
            ram_put_page(w, f, run->rb, run->first + i,
                         run->kind[i] == RUN_DATA ? run->data + i * TARGET_PAGE_SIZE : NULL);
        }
    }
    ram_writer_release_after(w, f, written, run);
}

/* Hands @run (its kind and data) to whoever pops it from @q. */
static void snap_run_push(GAsyncQueue *q, SnapRun *run, bool front)
{
    TSAN_RELEASE(run);
    if (front) {
        g_async_queue_push_front(q, run);
    } else {
        g_async_queue_push(q, run);
    }
}

/* A run from @q, waiting up to @timeout_us (0: not at all); NULL if none. */
static SnapRun *snap_run_pop(GAsyncQueue *q, guint64 timeout_us)
{
    SnapRun *run = timeout_us ? g_async_queue_timeout_pop(q, timeout_us)
                              : g_async_queue_try_pop(q);

    if (run) {
        TSAN_ACQUIRE(run);
    }
    return run;
}

/*
 * A region run if one is free, else a small run, else waits for the
 * writer to give one back; NULL when the snapshot is ending.
 */
static SnapRun *snap_take_run(SnapRam *sr)
{
    SnapRun *run;

    for (;;) {
        if ((run = snap_run_pop(sr->free_runs, 0)) || (run = snap_run_pop(sr->free_small, 0))) {
            return run;
        }
        if (__atomic_load_n(&sr->stopping, __ATOMIC_ACQUIRE)) {
            return NULL;    /* the unprotect at the end wakes the guest */
        }
        /* Small runs come back without a signal here: poll for them too. */
        if ((run = snap_run_pop(sr->free_runs, 50))) {
            return run;
        }
    }
}

static void snap_return_run(SnapRam *sr, SnapRun *run)
{
    snap_run_push(run->small ? sr->free_small : sr->free_runs, run, false);
}

/* A fault's run was written: it is no longer in flight, and free again. */
static void snap_fault_run_written(void *opaque)
{
    SnapRun *run = opaque;
    SnapRam *sr = run->sr;

    __atomic_sub_fetch(&sr->in_flight, 1, __ATOMIC_SEQ_CST);
    snap_return_run(sr, run);
}

static void snap_linear_run_written(void *opaque)
{
    SnapRun *run = opaque;

    snap_run_push(run->sr->free_linear, run, false);
}

static SnapBlock *snap_find_block(SnapRam *sr, uint64_t addr, uint64_t *page)
{
    for (int i = 0; i < sr->nblocks; i++) {
        uint64_t host = (uintptr_t)sr->blocks[i].rb->host;

        if (addr >= host && addr - host < sr->blocks[i].rb->used_length) {
            *page = (addr - host) >> TARGET_PAGE_BITS;
            return &sr->blocks[i];
        }
    }
    return NULL;
}

/* Waits until the writer, which holds region @r's claim, unprotected it. */
static SnapFaultOutcome snap_wait_done(SnapRam *sr, SnapBlock *b, uint64_t r)
{
    while (!test_bit_atomic(r, b->done_bmap) &&
           !__atomic_load_n(&sr->stopping, __ATOMIC_ACQUIRE)) {
        g_usleep(20);
    }
    return SNAP_FAULT_WAITED;
}

SnapFaultOutcome snapshot_ram_handle_fault(SnapRam *sr, uint64_t addr, int64_t t_wake)
{
    SnapBlock *b;
    SnapRun *run;
    uint64_t page, r;
    int64_t t_run;

    b = snap_find_block(sr, addr, &page);
    if (!b) {
        return SNAP_FAULT_IGNORED;
    }
    r = page / RUN_PAGES;
    if (test_bit_atomic(r, b->claimed_bmap)) {
        /* Only the writer holds claims while this thread runs: its unprotect wakes the guest. */
        return snap_wait_done(sr, b, r);
    }
    run = snap_take_run(sr);
    if (!run) {
        return SNAP_FAULT_IGNORED;
    }
    /* Counted before the claim: the writer, finding every region claimed, ends only when nothing is in flight. */
    __atomic_add_fetch(&sr->in_flight, 1, __ATOMIC_SEQ_CST);
    if (!snap_claim_region(b, r)) {
        /* Lost the race to the writer, which now unprotects it. */
        __atomic_sub_fetch(&sr->in_flight, 1, __ATOMIC_SEQ_CST);
        snap_return_run(sr, run);
        return SNAP_FAULT_WAITED;
    }
    t_run = get_clock_ns();
    if (run->small) {
        bool copied = snap_copy_small(sr, b, page, run);

        /* Hand the rest of the region back to whoever gets to it first. */
        clear_bit_atomic(r, b->claimed_bmap);
        if (!copied) {
            __atomic_sub_fetch(&sr->in_flight, 1, __ATOMIC_SEQ_CST);
            snap_return_run(sr, run);
            return SNAP_FAULT_WAITED;
        }
        __atomic_store_n(&sr->small_faults, sr->small_faults + 1, __ATOMIC_RELAXED);
    } else {
        int out = sr->pool_runs - g_async_queue_length(sr->free_runs);

        /* Only this thread takes region runs: a plain max is enough. */
        if (out > __atomic_load_n(&sr->peak_runs, __ATOMIC_RELAXED)) {
            __atomic_store_n(&sr->peak_runs, out, __ATOMIC_RELAXED);
        }
        snap_copy_region(sr, b, r, run);
    }
    trace_bg_snapshot_fault(r, run->npages, (t_run - t_wake) / 1000,
                            (get_clock_ns() - t_wake) / 1000);
    /*
     * Small runs go out first: each frees a reserve slot for 64 KiB of
     * output where a region run needs 2 MiB, so faults keep finding one.
     */
    snap_run_push(sr->ready_runs, run, run->small);
    return SNAP_FAULT_SAVED;
}

void snapshot_ram_stopping(SnapRam *sr)
{
    __atomic_store_n(&sr->stopping, 1, __ATOMIC_RELEASE);
}

/* ---- the page source, mig/src ---- */

static bool snapshot_ram_setup(void *src, QEMUFile *f, Error **errp)
{
    SnapRam *sr = src;
    GPtrArray *rbs = ram_blocks();

    memset(sr, 0, sizeof(*sr));
    sr->uffd = -1;
    sr->nblocks = rbs->len;
    sr->blocks = g_new0(SnapBlock, sr->nblocks);
    for (int i = 0; i < sr->nblocks; i++) {
        SnapBlock *b = &sr->blocks[i];

        b->rb = g_ptr_array_index(rbs, i);
        b->npages = b->rb->used_length >> TARGET_PAGE_BITS;
        b->unsaved_bmap = bitmap_new(b->npages);
        bitmap_fill(b->unsaved_bmap, b->npages);
        b->nregions = DIV_ROUND_UP(b->npages, RUN_PAGES);
        b->claimed_bmap = bitmap_new(b->nregions);
        b->done_bmap = bitmap_new(b->nregions);
        sr->unsaved_pages += b->npages;
        sr->nregions += b->nregions;
    }
    return true;
}

#define POPULATE_THREADS 2

/* The part of the buffer a first-touch thread takes. */
typedef struct SnapPopulatePart {
    SnapRam *sr;
    int part;
} SnapPopulatePart;

/* First touch of part @part of the buffer; never fails (memset if it must). */
static void *snap_populate_part(void *opaque)
{
    SnapPopulatePart *pp = opaque;
    SnapRam *s = pp->sr;
    size_t len = QEMU_ALIGN_UP(s->pool_len / POPULATE_THREADS, RUN_BYTES);
    size_t off = pp->part * len;

    len = off < s->pool_len ? MIN(len, s->pool_len - off) : 0;
    if (len && madvise(s->pool + off, len, 23 /* MADV_POPULATE_WRITE */) < 0) {
        memset(s->pool + off, 0, len);
    }
    return NULL;
}

/*
 * First touch of the whole pool, in POPULATE_THREADS threads: here it is
 * the nested host backing fresh memory, which takes seconds per GiB. Part
 * 0 is this thread's, and so is a part whose thread cannot be created.
 *
 * Plain threads, not worker_pool_run_each(): with the pool, the snapshot
 * of a 1 GiB guest took 1.5 s longer (4.2 s against 2.5 s, migbench
 * snapshot-file --quick, docs/benchmarks.md), and a bisection put it on
 * this one change; the cause is not understood yet, so the first touch
 * keeps the shape that was measured.
 */
static void snap_populate_pool(SnapRam *s)
{
    QemuThread th[POPULATE_THREADS];
    SnapPopulatePart parts[POPULATE_THREADS];
    bool started[POPULATE_THREADS] = { false };

    for (int i = 0; i < POPULATE_THREADS; i++) {
        parts[i] = (SnapPopulatePart) { .sr = s, .part = i };
    }
    for (int i = 1; i < POPULATE_THREADS; i++) {
        started[i] = qemu_thread_create(&th[i], "mig/populate", snap_populate_part,
                                        &parts[i]) == 0;
        if (!started[i]) {
            snap_populate_part(&parts[i]);
        }
    }
    snap_populate_part(&parts[0]);
    for (int i = 1; i < POPULATE_THREADS; i++) {
        if (started[i]) {
            qemu_thread_join(&th[i]);
        }
    }
}

bool snapshot_ram_prepare(SnapRam *sr, Error **errp)
{
    int n = snap_pool_runs(sr);

    sr->pool_runs = n;
    sr->pool_len = (size_t)(n + LINEAR_RUNS) * RUN_BYTES +
                  (size_t)SMALL_RUNS * SMALL_PAGES * TARGET_PAGE_SIZE;
    sr->pool = mmap(NULL, sr->pool_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (sr->pool == MAP_FAILED) {
        sr->pool = NULL;
        error_setg_errno(errp, errno, "cannot allocate a %zu MiB snapshot buffer",
                         sr->pool_len >> 20);
        return false;
    }
    /*
     * Fault it all in now, before the guest pauses: first-touch of fresh
     * memory is slow here (milliseconds per 2 MiB), and a vCPU would wait
     * on it in the middle of a fault.
     */
    madvise(sr->pool, sr->pool_len, MADV_HUGEPAGE);
    snap_populate_pool(sr);
    sr->runs = g_new0(SnapRun, n + LINEAR_RUNS);
    sr->small_runs = g_new0(SnapRun, SMALL_RUNS);
    sr->free_runs = g_async_queue_new();
    sr->free_small = g_async_queue_new();
    sr->ready_runs = g_async_queue_new();
    sr->free_linear = g_async_queue_new();
    for (int i = 0; i < n + LINEAR_RUNS; i++) {
        sr->runs[i].sr = sr;
        sr->runs[i].data = sr->pool + (size_t)i * RUN_BYTES;
        g_async_queue_push(i < n ? sr->free_runs : sr->free_linear, &sr->runs[i]);
    }
    for (int i = 0; i < SMALL_RUNS; i++) {
        sr->small_runs[i].sr = sr;
        sr->small_runs[i].small = true;
        sr->small_runs[i].data = sr->pool + (size_t)(n + LINEAR_RUNS) * RUN_BYTES +
                                (size_t)i * SMALL_PAGES * TARGET_PAGE_SIZE;
        g_async_queue_push(sr->free_small, &sr->small_runs[i]);
    }
    return true;
}

void snapshot_ram_start(SnapRam *sr, int uffd)
{
    sr->uffd = uffd;
}

/* Writes runs the fault thread queued; returns how many. */
static int snap_write_ready(SnapRam *sr, QEMUFile *f, RAMPageWriter *w, bool wait)
{
    SnapRun *run;
    int n = 0;

    while ((run = snap_run_pop(sr->ready_runs, wait && !n ? 10000 : 0))) {
        snap_write_run(f, w, run, snap_fault_run_written);
        n++;
    }
    return n;
}

/*
 * First region >= @k of @b that nobody claims at this moment, or nregions.
 * Only a hint (the fault thread claims concurrently, so words are read
 * atomically); the caller's test-and-set decides.
 */
static uint64_t snap_find_unclaimed(SnapBlock *b, uint64_t k)
{
    while (k < b->nregions) {
        unsigned long free_bits = ~__atomic_load_n(&b->claimed_bmap[BIT_WORD(k)],
                                                   __ATOMIC_RELAXED);

        free_bits &= ~0UL << (k % BITS_PER_LONG);
        if (free_bits) {
            return MIN(BIT_WORD(k) * BITS_PER_LONG + __builtin_ctzl(free_bits), b->nregions);
        }
        k = (BIT_WORD(k) + 1) * BITS_PER_LONG;
    }
    return b->nregions;
}

/* Claims the next unclaimed region after the cursor; NULL if none is left there. */
static SnapBlock *snap_next_linear(SnapRam *sr, uint64_t *r)
{
    for (; sr->cur_block < sr->nblocks; sr->cur_block++, sr->cur_page = 0) {
        SnapBlock *b = &sr->blocks[sr->cur_block];
        uint64_t k = sr->cur_page / RUN_PAGES;

        while ((k = snap_find_unclaimed(b, k)) < b->nregions) {
            sr->cur_page = (k + 1) * RUN_PAGES;
            if (snap_claim_region(b, k)) {
                *r = k;
                return b;
            }
            k++;
        }
    }
    return NULL;
}

/*
 * Writes what the fault thread saved, then saves the next region of the
 * linear scan. Returns false when every page is in the stream.
 */
static bool snapshot_ram_send_next(void *src, QEMUFile *f, RAMPageWriter *w)
{
    SnapRam *sr = src;
    int err = __atomic_load_n(&sr->error, __ATOMIC_SEQ_CST);
    SnapRun *linear;
    SnapBlock *b;
    uint64_t r;

    if (err) {
        qemu_file_set_error_msg(f, -err, "background snapshot: write-unprotecting guest RAM "
                                "failed: %s", strerror(err));
        return false;
    }
    /* Regions the guest wanted first. */
    snap_write_ready(sr, f, w, false);
    /* The writer's own runs come back as mapped-ram's writers finish them. */
    linear = snap_run_pop(sr->free_linear, 0);
    if (!linear) {
        linear = snap_run_pop(sr->free_linear, 10000);
        if (!linear) {
            return true;    /* writers busy: look again (and at the faults) */
        }
    }
    b = snap_next_linear(sr, &r);
    if (b) {
        sr->stuck_since = 0;
        snap_copy_region(sr, b, r, linear);
        snap_write_run(f, w, linear, snap_linear_run_written);
        return true;
    }
    snap_run_push(sr->free_linear, linear, true);
    /*
     * Done is counted after a region's copy, in flight before its claim and
     * until its write: all done and nothing in flight = all written.
     */
    if (__atomic_load_n(&sr->regions_done, __ATOMIC_SEQ_CST) == sr->nregions &&
        __atomic_load_n(&sr->in_flight, __ATOMIC_SEQ_CST) == 0) {
        uint64_t left = __atomic_load_n(&sr->unsaved_pages, __ATOMIC_SEQ_CST);

        if (left) {
            qemu_file_set_error_msg(f, -EIO, "background snapshot: %" PRIu64 " pages were "
                                    "never saved", left);
        }
        return false;
    }
    /*
     * A fault's copy is still to be written, or a region is not done: a
     * fault holds it right now, or a small copy handed it back behind the
     * cursor. Write what is queued and scan again from the start.
     */
    if (__atomic_load_n(&sr->in_flight, __ATOMIC_SEQ_CST) > 0 && snap_write_ready(sr, f, w, true)) {
        sr->stuck_since = 0;
    } else if (!sr->stuck_since) {
        sr->stuck_since = get_clock_ns();
    } else if (get_clock_ns() - sr->stuck_since > SNAP_STUCK_NS) {
        /* A claim or a copy nobody finishes is a bug: fail rather than hang. */
        qemu_file_set_error_msg(f, -EIO, "background snapshot: no progress for 10 s "
                                "(%" PRIu64 " regions not saved, %d copies in flight)",
                                sr->nregions - __atomic_load_n(&sr->regions_done, __ATOMIC_SEQ_CST),
                                __atomic_load_n(&sr->in_flight, __ATOMIC_SEQ_CST));
        return false;
    }
    sr->cur_block = 0;
    sr->cur_page = 0;
    return true;
}

static uint64_t snapshot_ram_pending(void *src, QEMUFile *f, bool exact)
{
    SnapRam *sr = src;

    return __atomic_load_n(&sr->unsaved_pages, __ATOMIC_SEQ_CST) * TARGET_PAGE_SIZE;
}

/* Main thread after mig/src was joined and the fault thread stopped (snapshot_mode). */
static void snapshot_ram_cleanup(void *src)
{
    SnapRam *sr = src;

    g_clear_pointer(&sr->free_runs, g_async_queue_unref);
    g_clear_pointer(&sr->free_small, g_async_queue_unref);
    g_clear_pointer(&sr->ready_runs, g_async_queue_unref);
    g_clear_pointer(&sr->free_linear, g_async_queue_unref);
    g_clear_pointer(&sr->runs, g_free);
    g_clear_pointer(&sr->small_runs, g_free);
    if (sr->pool) {
        munmap(sr->pool, sr->pool_len);
        sr->pool = NULL;
    }
    for (int i = 0; sr->blocks && i < sr->nblocks; i++) {
        g_free(sr->blocks[i].unsaved_bmap);
        g_free(sr->blocks[i].claimed_bmap);
        g_free(sr->blocks[i].done_bmap);
    }
    g_clear_pointer(&sr->blocks, g_free);
    sr->nblocks = 0;
    sr->uffd = -1;
}

static void snapshot_ram_fill_info(void *src, MigrationInfo *info)
{
    SnapRam *sr = src;
    XBackgroundSnapshotInfo *x = snapshot_info_get(info);

    info->ram->remaining = snapshot_ram_pending(src, NULL, false);
    x->buffer_size = (uint64_t)sr->pool_runs * RUN_BYTES;
    x->buffer_peak = (uint64_t)__atomic_load_n(&sr->peak_runs, __ATOMIC_RELAXED) * RUN_BYTES;
    x->small_faults = __atomic_load_n(&sr->small_faults, __ATOMIC_RELAXED);
}

const RAMPageSource snapshot_ram_source = {
    .name = "snapshot-regions",
    .setup = snapshot_ram_setup,
    .send_next = snapshot_ram_send_next,
    .pending = snapshot_ram_pending,
    .cleanup = snapshot_ram_cleanup,
    .fill_info = snapshot_ram_fill_info,
};

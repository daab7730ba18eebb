/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Background snapshot, RAM side: a fault thread ("mig/uffd") and the RAM
 * save loop share the work of saving each page exactly once.
 *
 *   guest writes a protected page
 *     -> mig/uffd wakes (poll), copies the unsaved pages of the 2 MiB region
 *        into a bounce run, unprotects the region (the vCPU runs on), and
 *        queues the run
 *   mig/src (snapshot_save_step, called by the RAM save loop)
 *     -> writes queued runs first, then copies + unprotects the next region
 *        of the linear scan and writes it
 *
 * A page's content is copied before it becomes writable, so the
 * stream never references guest memory that may change; the guest waits
 * for a memcpy, not for the output. Regions are aligned 2 MiB: unprotecting
 * part of a huge page splits it, and on kvm-pvm the guest then re-faulted
 * its whole working set 4 KiB at a time (seconds of stall).
 *
 * When every region run is queued for the writer (the guest faults faster
 * than the output drains: x-background-snapshot-buffer-size), a fault is
 * served with a small copy from a reserve instead of waiting for the
 * output: the faulting page and the next SMALL_PAGES - 1 of its region (a
 * sequential writer wants them next) are copied and unprotected, and the
 * region is released again; whoever saves the rest of it skips the pages
 * already saved (their bit in the RAMBlock bitmap is clear). This splits
 * that huge page, the lesser evil against a vCPU stopped for the output.
 *
 * Ownership, no lock: a region is saved by whichever thread wins the
 * atomic test-and-set of its bit in `claimed`; the winner alone copies its
 * pages, unprotects it, then sets its bit in `done`. A fault on a region
 * the writer owns just waits for `done` (the writer's unprotect wakes the
 * guest). A small fault claims the region only while it copies its
 * pages, then clears the claim; so every region ends with one full-region
 * copy, which counts it in `regions_done`. The writer ends when all
 * regions are done and no fault's copy is in flight (counted before the
 * fault claims, until the copy is written).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "qemu/bufferiszero.h"
#include "qemu/userfaultfd.h"
#include "system/memory.h"
#include "migration/qemu-file.h"
#include "migration.h"
#include "options.h"
#include "ram.h"
#include "snapshot.h"
#include "trace.h"
#include <poll.h>
#include <sys/mman.h>
#include <sys/eventfd.h>
#include <sys/resource.h>

#define RUN_PAGES 512           /* 2 MiB regions */
#define RUN_BYTES (RUN_PAGES * TARGET_PAGE_SIZE)

enum { RUN_SKIP, RUN_ZERO, RUN_DATA };

/* The writer gives up when no region could be saved for this long. */
#define SNAP_STUCK_NS (10 * 1000 * 1000 * 1000LL)

/* Small runs for faults that find every region run in use: 64 MiB. */
#define SMALL_PAGES 16
#define SMALL_RUNS 1024

typedef struct SnapRun {
    RAMBlock *rb;
    uint64_t first;             /* first page of the region (or of a small run) */
    uint64_t npages;
    bool small;                 /* a small run from the reserve */
    uint8_t kind[RUN_PAGES];
    uint8_t *data;              /* RUN_PAGES pages */
} SnapRun;

typedef struct SnapRegions {
    unsigned long *claimed;     /* atomic: someone is saving the region */
    unsigned long *done;        /* atomic: saved and unprotected */
    uint64_t nregions;
} SnapRegions;

typedef struct SnapRam {
    RAMState *rs;
    SnapRegions *regions;       /* one per RAMBlockDirty */
    int uffd;
    int stop_fd;                /* eventfd: tells mig/uffd to end */
    QemuThread thread;
    bool running;
    GAsyncQueue *free_runs;
    GAsyncQueue *free_small;    /* small runs */
    GAsyncQueue *ready_runs;
    SnapRun *runs;              /* pool_runs fault runs, then the writer's own */
    SnapRun *small_runs;        /* SMALL_RUNS small runs */
    SnapRun *linear;            /* the writer's own run */
    uint8_t *pool;              /* their buffers: one mapping */
    size_t pool_len;
    int pool_runs;
    int in_flight;              /* atomic: fault copies from before their claim until written */
    int peak_runs;              /* atomic: most region runs out at once */
    uint64_t small_faults;      /* faults served with a small run */
    uint64_t nregions;          /* in all blocks */
    uint64_t regions_done;      /* atomic: regions whose full copy was taken */
    int error;                  /* atomic: errno of a failed unprotect */
    int64_t stuck_since;        /* writer: first step that found no region */
    int stopping;               /* atomic: snapshot_ram_stop() was called */
} SnapRam;

static SnapRam sr = { .uffd = -1, .stop_fd = -1 };

/* Fault runs for the buffer-size parameter; more than RAM's regions is waste. */
static int snap_pool_runs(void)
{
    GPtrArray *rbs = ram_blocks();
    uint64_t want = migrate_background_snapshot_buffer_size() / RUN_BYTES;
    uint64_t regions = 0;

    for (guint i = 0; i < rbs->len; i++) {
        RAMBlock *rb = g_ptr_array_index(rbs, i);

        regions += DIV_ROUND_UP(rb->used_length, RUN_BYTES);
    }
    return MAX(1, MIN(MIN(want, regions), INT_MAX / 2));
}

static int snap_block_index(RAMBlock *rb)
{
    DirtyTracker *dt = &sr.rs->dt;

    for (int i = 0; i < dt->nblocks; i++) {
        if (dt->blocks[i].rb == rb) {
            return i;
        }
    }
    return -1;
}

/* Claims region @r of block @bi; true if the caller now owns it. */
static bool snap_claim_region(int bi, uint64_t r)
{
    return !test_and_set_bit_atomic(r, sr.regions[bi].claimed);
}

/*
 * Lets the guest write [@host, @host + @len) of @rb again, waking vCPUs
 * waiting on it. A failure may leave them waiting until a later unprotect
 * of the range or the unprotect-all at the end: the writer sees sr.error
 * and fails the stream.
 */
static void snap_unprotect(RAMBlock *rb, uint8_t *host, uint64_t len)
{
    int ret;

    if (rb->readonly) {
        return;     /* never registered: nothing to release */
    }
    ret = uffd_change_protection(sr.uffd, host, len, false);

    if (ret < 0) {
        int expected = 0;

        __atomic_compare_exchange_n(&sr.error, &expected, -ret, false,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    }
}

/*
 * Copies the unsaved pages of [@first, @first + @npages) of @b into @run
 * and makes them saved; the remaining-pages counter drops by as many. The
 * caller holds the claim of their region, so the region's bitmap words
 * are its alone (regions are word aligned). A clear bit: saved already, by
 * a small fault.
 */
static void snap_copy_range(RAMBlockDirty *b, uint64_t first, uint64_t npages, SnapRun *run)
{
    uint64_t copied = 0;

    run->rb = b->rb;
    run->first = first;
    run->npages = npages;
    for (uint64_t i = 0; i < npages; i++) {
        const uint8_t *host = b->rb->host + ((first + i) << TARGET_PAGE_BITS);

        if (!test_bit(first + i, b->send_bmap)) {
            run->kind[i] = RUN_SKIP;
            continue;
        }
        clear_bit(first + i, b->send_bmap);
        if (buffer_is_zero(host, TARGET_PAGE_SIZE)) {
            run->kind[i] = RUN_ZERO;
        } else {
            memcpy(run->data + i * TARGET_PAGE_SIZE, host, TARGET_PAGE_SIZE);
            run->kind[i] = RUN_DATA;
        }
        copied++;
    }
    __atomic_sub_fetch(&sr.rs->dt.dirty_pages, copied, __ATOMIC_SEQ_CST);
}

/*
 * Copies the pages of region @r of block @bi (which the caller claimed)
 * into @run, unprotects the region and marks it done.
 */
static void snap_copy_region(int bi, uint64_t r, SnapRun *run)
{
    RAMBlockDirty *b = &sr.rs->dt.blocks[bi];
    uint64_t first = r * RUN_PAGES;
    int64_t t0 = get_clock_ns(), t1;

    snap_copy_range(b, first, MIN((uint64_t)RUN_PAGES, b->npages - first), run);
    /* Every page of the region is in a copy now: let the guest write (and wake it). */
    t1 = get_clock_ns();
    snap_unprotect(b->rb, b->rb->host + (first << TARGET_PAGE_BITS),
                   run->npages << TARGET_PAGE_BITS);
    set_bit_atomic(r, sr.regions[bi].done);
    __atomic_add_fetch(&sr.regions_done, 1, __ATOMIC_SEQ_CST);
    trace_bg_snapshot_region(first, run->npages, (t1 - t0) / 1000,
                             (get_clock_ns() - t1) / 1000);
}

/*
 * Copies page @page of block @bi (whose region the caller claimed) and the
 * unsaved pages after it, up to SMALL_PAGES within the region, into the
 * small @run and unprotects them; false if @page was saved already (by an
 * earlier small copy that covered it: a fault reported twice, or by two
 * vCPUs).
 */
static bool snap_copy_small(int bi, uint64_t page, SnapRun *run)
{
    RAMBlockDirty *b = &sr.rs->dt.blocks[bi];
    uint64_t region_end = MIN((page / RUN_PAGES + 1) * RUN_PAGES, b->npages);

    if (!test_bit(page, b->send_bmap)) {
        return false;
    }
    snap_copy_range(b, page, MIN((uint64_t)SMALL_PAGES, region_end - page), run);
    /* Pages of the range saved earlier are writable already: no harm. */
    snap_unprotect(b->rb, b->rb->host + (page << TARGET_PAGE_BITS),
                   run->npages << TARGET_PAGE_BITS);
    return true;
}

static void snap_write_run(QEMUFile *f, SnapRun *run)
{
    for (uint64_t i = 0; i < run->npages; i++) {
        if (run->kind[i] != RUN_SKIP) {
            ram_save_page_copy(sr.rs, f, run->rb, run->first + i,
                               run->kind[i] == RUN_DATA ? run->data + i * TARGET_PAGE_SIZE
                                                        : NULL);
        }
    }
    /* The stream refers to the run's buffer: it must leave before reuse. */
    qemu_fflush(f);
}

/*
 * A region run if one is free, else a small run, else waits for the
 * writer to give one back; NULL when the snapshot is ending.
 */
static SnapRun *snap_take_run(void)
{
    SnapRun *run;

    for (;;) {
        if ((run = g_async_queue_try_pop(sr.free_runs)) ||
            (run = g_async_queue_try_pop(sr.free_small))) {
            return run;
        }
        if (__atomic_load_n(&sr.stopping, __ATOMIC_ACQUIRE)) {
            return NULL;    /* the unprotect at the end wakes the guest */
        }
        /* Small runs come back without a signal here: poll for them too. */
        if ((run = g_async_queue_timeout_pop(sr.free_runs, 50))) {
            return run;
        }
    }
}

static void snap_return_run(SnapRun *run)
{
    g_async_queue_push(run->small ? sr.free_small : sr.free_runs, run);
}

static void snap_handle_fault(uint64_t addr, int64_t t_wake)
{
    GPtrArray *rbs = ram_blocks();
    SnapRun *run;
    uint64_t r = 0, page = 0;
    int bi = -1;
    int64_t t_run;

    for (guint i = 0; i < rbs->len && bi < 0; i++) {
        RAMBlock *rb = g_ptr_array_index(rbs, i);
        uint64_t host = (uintptr_t)rb->host;

        if (addr >= host && addr - host < rb->used_length) {
            bi = snap_block_index(rb);
            page = (addr - host) >> TARGET_PAGE_BITS;
            r = page / RUN_PAGES;
        }
    }
    if (bi < 0) {
        return;
    }
    if (test_bit(r, sr.regions[bi].claimed)) {
        /*
         * Only the writer holds claims while this thread runs: its
         * unprotect wakes the guest. Measure until then.
         */
        while (!test_bit(r, sr.regions[bi].done) &&
               !__atomic_load_n(&sr.stopping, __ATOMIC_ACQUIRE)) {
            g_usleep(20);
        }
        snapshot_record_fault((get_clock_ns() - t_wake) / 1000, false);
        return;
    }
    run = snap_take_run();
    if (!run) {
        return;
    }
    /*
     * Counted before the claim: the writer, finding every region claimed,
     * ends only when nothing is in flight.
     */
    __atomic_add_fetch(&sr.in_flight, 1, __ATOMIC_SEQ_CST);
    if (!snap_claim_region(bi, r)) {
        /* Lost the race to the writer, which now unprotects it. */
        __atomic_sub_fetch(&sr.in_flight, 1, __ATOMIC_SEQ_CST);
        snap_return_run(run);
        snapshot_record_fault((get_clock_ns() - t_wake) / 1000, false);
        return;
    }
    t_run = get_clock_ns();
    if (run->small) {
        bool copied = snap_copy_small(bi, page, run);

        /* Hand the rest of the region back to whoever gets to it first. */
        clear_bit_atomic(r, sr.regions[bi].claimed);
        if (!copied) {
            __atomic_sub_fetch(&sr.in_flight, 1, __ATOMIC_SEQ_CST);
            snap_return_run(run);
            snapshot_record_fault((get_clock_ns() - t_wake) / 1000, false);
            return;
        }
        sr.small_faults++;
    } else {
        int out = sr.pool_runs - g_async_queue_length(sr.free_runs);

        /* Only this thread takes region runs: a plain max is enough. */
        if (out > __atomic_load_n(&sr.peak_runs, __ATOMIC_RELAXED)) {
            __atomic_store_n(&sr.peak_runs, out, __ATOMIC_RELAXED);
        }
        snap_copy_region(bi, r, run);
    }
    snapshot_record_fault((get_clock_ns() - t_wake) / 1000, true);
    trace_bg_snapshot_fault(r, run->npages, (t_run - t_wake) / 1000,
                            (get_clock_ns() - t_wake) / 1000);
    /*
     * Small runs go out first: each frees a reserve slot for 64 KiB of
     * output where a region run needs 2 MiB, so faults keep finding one.
     */
    if (run->small) {
        g_async_queue_push_front(sr.ready_runs, run);
    } else {
        g_async_queue_push(sr.ready_runs, run);
    }
}

static void *snap_fault_thread(void *opaque)
{
    struct pollfd pfd[2] = {
        { .fd = sr.uffd, .events = POLLIN },
        { .fd = sr.stop_fd, .events = POLLIN },
    };
    uint64_t addrs[64];

    /*
     * A vCPU is stopped while this thread works: run it ahead of the bulk
     * writer (and of the output command) when the host is busy. Raising
     * priority needs CAP_SYS_NICE; without it this stays a no-op.
     */
    setpriority(PRIO_PROCESS, qemu_get_thread_id(), -10);
    for (;;) {
        int64_t t_wake;
        int n;

        if (RETRY_ON_EINTR(poll(pfd, 2, -1)) < 0 || (pfd[1].revents & POLLIN)) {
            break;
        }
        t_wake = get_clock_ns();
        n = uffd_read_wp_faults(sr.uffd, addrs, ARRAY_SIZE(addrs));
        for (int i = 0; i < n; i++) {
            snap_handle_fault(addrs[i], t_wake);
        }
    }
    return NULL;
}

bool snapshot_ram_prepare(Error **errp)
{
    int n = snap_pool_runs();

    sr.pool_runs = n;
    sr.peak_runs = 0;
    sr.small_faults = 0;
    sr.pool_len = (size_t)(n + 1) * RUN_BYTES + (size_t)SMALL_RUNS * SMALL_PAGES * TARGET_PAGE_SIZE;
    sr.pool = mmap(NULL, sr.pool_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (sr.pool == MAP_FAILED) {
        sr.pool = NULL;
        error_setg_errno(errp, errno, "cannot allocate a %zu MiB snapshot buffer",
                         sr.pool_len >> 20);
        return false;
    }
    /*
     * Fault it all in now, before the guest pauses: first-touch of fresh
     * memory is slow here (milliseconds per 2 MiB), and a vCPU would wait
     * on it in the middle of a fault.
     */
    madvise(sr.pool, sr.pool_len, MADV_HUGEPAGE);
    if (madvise(sr.pool, sr.pool_len, 23 /* MADV_POPULATE_WRITE */) < 0) {
        memset(sr.pool, 0, sr.pool_len);
    }
    sr.runs = g_new0(SnapRun, n + 1);
    sr.small_runs = g_new0(SnapRun, SMALL_RUNS);
    sr.free_runs = g_async_queue_new();
    sr.free_small = g_async_queue_new();
    sr.ready_runs = g_async_queue_new();
    for (int i = 0; i <= n; i++) {
        sr.runs[i].data = sr.pool + (size_t)i * RUN_BYTES;
        if (i < n) {
            g_async_queue_push(sr.free_runs, &sr.runs[i]);
        }
    }
    for (int i = 0; i < SMALL_RUNS; i++) {
        sr.small_runs[i].small = true;
        sr.small_runs[i].data = sr.pool + (size_t)(n + 1) * RUN_BYTES +
                                (size_t)i * SMALL_PAGES * TARGET_PAGE_SIZE;
        g_async_queue_push(sr.free_small, &sr.small_runs[i]);
    }
    sr.linear = &sr.runs[n];
    return true;
}

void snapshot_ram_buffer_stats(uint64_t *size, uint64_t *peak, uint64_t *small_faults)
{
    *size = (uint64_t)sr.pool_runs * RUN_BYTES;
    *peak = (uint64_t)__atomic_load_n(&sr.peak_runs, __ATOMIC_RELAXED) * RUN_BYTES;
    *small_faults = sr.small_faults;
}

bool snapshot_ram_start(int uffd, Error **errp)
{
    int ret;

    if (!sr.free_runs && !snapshot_ram_prepare(errp)) {
        return false;
    }
    sr.rs = ram_state_get();
    sr.uffd = uffd;
    sr.in_flight = 0;
    sr.nregions = 0;
    sr.regions_done = 0;
    sr.error = 0;
    sr.stuck_since = 0;
    sr.stopping = 0;
    sr.regions = g_new0(SnapRegions, sr.rs->dt.nblocks);
    for (int i = 0; i < sr.rs->dt.nblocks; i++) {
        SnapRegions *g = &sr.regions[i];

        g->nregions = DIV_ROUND_UP(sr.rs->dt.blocks[i].npages, RUN_PAGES);
        sr.nregions += g->nregions;
        g->claimed = bitmap_new(g->nregions);
        g->done = bitmap_new(g->nregions);
    }
    sr.stop_fd = eventfd(0, EFD_CLOEXEC);
    if (sr.stop_fd < 0) {
        error_setg_errno(errp, errno, "eventfd failed");
        snapshot_ram_stop();
        return false;
    }
    ret = qemu_thread_create(&sr.thread, "mig/uffd", snap_fault_thread, NULL);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "cannot create the snapshot fault thread");
        snapshot_ram_stop();
        return false;
    }
    sr.running = true;
    return true;
}

void snapshot_ram_stop(void)
{
    if (sr.running) {
        uint64_t one = 1;

        __atomic_store_n(&sr.stopping, 1, __ATOMIC_RELEASE);
        if (write(sr.stop_fd, &one, sizeof(one)) != sizeof(one)) {
            /* Cannot happen with an eventfd; the join below would hang. */
            g_assert_not_reached();
        }
        qemu_thread_join(&sr.thread);
        sr.running = false;
    }
    if (sr.stop_fd >= 0) {
        close(sr.stop_fd);
        sr.stop_fd = -1;
    }
    g_clear_pointer(&sr.free_runs, g_async_queue_unref);
    g_clear_pointer(&sr.free_small, g_async_queue_unref);
    g_clear_pointer(&sr.ready_runs, g_async_queue_unref);
    g_clear_pointer(&sr.runs, g_free);
    g_clear_pointer(&sr.small_runs, g_free);
    sr.linear = NULL;
    if (sr.pool) {
        munmap(sr.pool, sr.pool_len);
        sr.pool = NULL;
    }
    for (int i = 0; sr.regions && sr.rs && i < sr.rs->dt.nblocks; i++) {
        g_free(sr.regions[i].claimed);
        g_free(sr.regions[i].done);
    }
    g_clear_pointer(&sr.regions, g_free);
    sr.uffd = -1;
}

/* Writes runs the fault thread queued; returns how many. */
static int snap_write_ready(QEMUFile *f, bool wait)
{
    SnapRun *run;
    int n = 0;

    while ((run = wait && !n ? g_async_queue_timeout_pop(sr.ready_runs, 10000)
                             : g_async_queue_try_pop(sr.ready_runs))) {
        snap_write_run(f, run);
        __atomic_sub_fetch(&sr.in_flight, 1, __ATOMIC_SEQ_CST);
        snap_return_run(run);
        n++;
    }
    return n;
}

/* Claims the next unclaimed region after the cursor; false if none is left there. */
static bool snap_next_linear(RAMState *rs, int *bi, uint64_t *r)
{
    DirtyTracker *dt = &rs->dt;

    for (; rs->cur_block < dt->nblocks; rs->cur_block++, rs->cur_page = 0) {
        SnapRegions *g = &sr.regions[rs->cur_block];
        uint64_t k = rs->cur_page / RUN_PAGES;

        while ((k = find_next_zero_bit(g->claimed, g->nregions, k)) < g->nregions) {
            rs->cur_page = (k + 1) * RUN_PAGES;
            if (snap_claim_region(rs->cur_block, k)) {
                *bi = rs->cur_block;
                *r = k;
                return true;
            }
            k++;
        }
    }
    return false;
}

static void snap_rewind(RAMState *rs)
{
    rs->cur_block = 0;
    rs->cur_page = 0;
}

bool snapshot_save_step(RAMState *rs, QEMUFile *f)
{
    int err = __atomic_load_n(&sr.error, __ATOMIC_SEQ_CST);
    uint64_t r;
    int bi;

    if (err) {
        qemu_file_set_error_msg(f, -err, "background snapshot: write-unprotecting guest RAM "
                                "failed: %s", strerror(err));
        return false;
    }
    /* Regions the guest wanted first. */
    snap_write_ready(f, false);
    if (snap_next_linear(rs, &bi, &r)) {
        sr.stuck_since = 0;
        snap_copy_region(bi, r, sr.linear);
        snap_write_run(f, sr.linear);
        return true;
    }
    /*
     * Done is counted after a region's copy, in flight before its claim and
     * until its write: all done and nothing in flight = all written.
     */
    if (__atomic_load_n(&sr.regions_done, __ATOMIC_SEQ_CST) == sr.nregions &&
        __atomic_load_n(&sr.in_flight, __ATOMIC_SEQ_CST) == 0) {
        if (__atomic_load_n(&rs->dt.dirty_pages, __ATOMIC_SEQ_CST)) {
            qemu_file_set_error_msg(f, -EIO, "background snapshot: %" PRIu64 " pages were "
                                    "never saved", rs->dt.dirty_pages);
        }
        return false;
    }
    /*
     * A fault's copy is still to be written, or a region is not done: a
     * fault holds it right now, or a small copy handed it back behind the
     * cursor. Write what is queued and scan again from the start.
     */
    if (__atomic_load_n(&sr.in_flight, __ATOMIC_SEQ_CST) > 0 && snap_write_ready(f, true)) {
        sr.stuck_since = 0;
    } else if (!sr.stuck_since) {
        sr.stuck_since = get_clock_ns();
    } else if (get_clock_ns() - sr.stuck_since > SNAP_STUCK_NS) {
        /* A claim or a copy nobody finishes is a bug: fail rather than hang. */
        qemu_file_set_error_msg(f, -EIO, "background snapshot: no progress for 10 s "
                                "(%" PRIu64 " regions not saved, %d copies in flight)",
                                sr.nregions - __atomic_load_n(&sr.regions_done, __ATOMIC_SEQ_CST),
                                __atomic_load_n(&sr.in_flight, __ATOMIC_SEQ_CST));
        return false;
    }
    snap_rewind(rs);
    return true;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Lazy restore: the guest runs while its RAM is read from the file (lazy-restore.h). */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "qemu/cutils.h"
#include "qemu/main-loop.h"
#include "qemu/thread.h"
#include "qemu/userfaultfd.h"
#include "system/memory.h"
#include "migration/core/latency-hist.h"
#include "lazy-restore.h"
#include "migration/transport/mapped-ram-integrity.h"
#include "migration/core/uffd-server.h"
#include <sys/mman.h>

#define LR_FAULT_PAGES 16       /* a fault reads 64 KiB around its page */
#define LR_PREFETCH_PAGES 512   /* a prefetch thread reads 2 MiB at a time */
/*
 * Two prefetch threads: one reads while the other places, and the disk
 * sees two reads in flight (measured, 4 GiB guest with 2 GiB written and
 * the page cache dropped: 1 thread resident in 3.4 s, of which 1.9 s is
 * placement (UFFDIO_COPY) on top of the reads).
 */
#define LR_PREFETCH_THREADS 2

enum { LR_NONE, LR_FAULTING, LR_RESIDENT, LR_FAILED };

typedef struct LazyBlock {
    RAMBlock *rb;
    uint64_t npages;
    uint64_t pages_offset;
    unsigned long *present;     /* read-only: set = the page is in the file */
    unsigned long *resident;    /* atomic: set = placed */
    uint32_t index;             /* the block's place in the block list */
    uint64_t *region_hash;      /* read-only: the integrity record's, or NULL */
} LazyBlock;

typedef struct LazyRestore {
    /* Set up by mig/dst before the threads read them (add_block), freed by a finish BH. */
    LazyBlock *blocks;
    int nblocks;
    int uffd;
    int fd;                     /* the file, our own descriptor */
    /*
     * "mig/lr-fault": started by mig/dst (lr_start), stopped by a finish
     * BH or a failed load, asked to stop by lr_fail. Its SERVED count and
     * latency histogram are the faults query-migrate shows.
     */
    UffdServer faults;
    QemuThread prefetch_threads[LR_PREFETCH_THREADS];
    bool prefetch_created[LR_PREFETCH_THREADS];     /* set by mig/dst before creating, BH clears */
    int prefetch_workers;       /* atomic: who takes chunks, the last one out ends it */
    uint8_t *fault_buf;         /* the fault thread's */
    uint8_t *prefetch_bufs[LR_PREFETCH_THREADS];    /* one per prefetch thread */
    uint64_t next_chunk;        /* atomic: the prefetch's cursor over every block's chunks */
    /* Atomic: set by mig/dst once the load succeeded, read by whoever fails first. */
    LazyRestoreFailFn *on_fail;
    char *fail_msg;             /* atomic: published once by lr_fail's winner, then read-only */
    int prefetch_done;          /* atomic: prefetch threads that finished */
    /*
     * Atomic: threads out after a failure, the fault thread's exit and the
     * last prefetch thread's; the one that makes it 2 schedules lr_failed_bh_release.
     */
    int failed_out;
    int64_t start_ns;

    /* Atomic: any thread reads them for query-migrate. */
    int status;
    uint64_t pages_total;
    uint64_t pages_resident;
    uint64_t pages_fault_read;
    uint64_t bytes_prefetched;
    uint64_t resident_ms;
} LazyRestore;

/* The process's one lazy restore (one incoming load at a time); each field says its owner. */
static LazyRestore lr = { .uffd = -1, .fd = -1 };

static void lr_add(uint64_t *c, uint64_t n)
{
    __atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

/* Main loop: tell the restore's owner (lazy_restore_load_done's @on_fail). */
static void lr_failed_bh(void *opaque)
{
    LazyRestoreFailFn *on_fail = __atomic_load_n(&lr.on_fail, __ATOMIC_SEQ_CST);

    /* Not yet set: the load is still finishing, and its end sees the failure. */
    if (on_fail) {
        on_fail(__atomic_load_n(&lr.fail_msg, __ATOMIC_ACQUIRE));
    }
}

/*
 * lr_fail's @err for a region that does not match the integrity record:
 * not an errno, since a real EBADMSG from pread (a filesystem's checksum
 * error, FUSE) is an I/O error and must read as one.
 */
#define LR_ERR_MISMATCH (-1)

/*
 * The file failed us: the guest cannot get its memory. Said once; the
 * pages stay missing (never zero, never stale), and the owner stops the
 * guest from the main loop (this thread never takes the BQL).
 */
static void lr_fail(LazyBlock *b, uint64_t page, int err)
{
    int faulting = LR_FAULTING;
    char *msg;

    if (!__atomic_compare_exchange_n(&lr.status, &faulting, LR_FAILED, false, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST)) {
        return;
    }
    if (err == LR_ERR_MISMATCH) {
        msg = g_strdup_printf("lazy restore: the file is corrupted: pages %" PRIu64 "-%" PRIu64
                              " of %s do not match its integrity record; they are not placed",
                              page, MIN(page + MRI_REGION_PAGES, b->npages) - 1, b->rb->idstr);
    } else {
        msg = g_strdup_printf("lazy restore: reading page %" PRIu64 " of %s from the file "
                              "failed: %s", page, b->rb->idstr, g_strerror(err));
    }
    error_report("%s; the guest's memory is incomplete and the guest cannot run", msg);
    __atomic_store_n(&lr.fail_msg, msg, __ATOMIC_RELEASE);
    /*
     * Before the BH: a BQL holder joining a device thread that waits on a
     * missing page must learn it now, or the BH never runs.
     */
    guest_ram_set_lost();
    qemu_bh_schedule_oneshot(lr_failed_bh, NULL);
    /* The fault thread has nothing to serve any more: it ends (lr_failed_out). */
    uffd_server_ask_stop(&lr.faults);
}

/*
 * Whether pages [first, first + n) are all placed. The fault thread and
 * the prefetchers set bits concurrently, so words are read atomically; a
 * bit set a moment later only costs a read whose placement then finds the
 * pages there.
 */
static bool lr_all_resident(LazyBlock *b, uint64_t first, uint64_t n)
{
    for (uint64_t p = first; p < first + n; p = (p / BITS_PER_LONG + 1) * BITS_PER_LONG) {
        unsigned long w = __atomic_load_n(&b->resident[p / BITS_PER_LONG], __ATOMIC_RELAXED);
        uint64_t lo = p % BITS_PER_LONG, hi = MIN(BITS_PER_LONG, lo + (first + n - p));
        unsigned long mask = (hi == BITS_PER_LONG ? ~0UL : (1UL << hi) - 1) & (~0UL << lo);

        if ((w & mask) != mask) {
            return false;
        }
    }
    return true;
}

/*
 * Places pages [first, first + n) of @b, read into @buf (n pages) if any is
 * present in the file, zero otherwise. Returns the bytes read, or -1.
 */
static int64_t lr_place(LazyBlock *b, uint64_t first, uint64_t n, uint8_t *buf)
{
    uint64_t end = first + n, p = find_next_bit(b->present, end, first);
    uint8_t *host = b->rb->host + (first << TARGET_PAGE_BITS);
    int64_t bytes = 0;
    int placed;

    if (p < end) {
        uint64_t last = p;

        /* One read over the present pages' span; the pages between that are not present are zero. */
        for (uint64_t q = p; q < end; q = find_next_bit(b->present, end, q + 1)) {
            last = q;
        }
        memset(buf, 0, (p - first) << TARGET_PAGE_BITS);
        bytes = (last + 1 - p) << TARGET_PAGE_BITS;
        errno = 0;
        if (!qemu_pread_full(lr.fd, buf + ((p - first) << TARGET_PAGE_BITS), bytes,
                          b->pages_offset + (p << TARGET_PAGE_BITS))) {
            /* A short read (the file ends early, ENODATA from pread_full) is an I/O error. */
            lr_fail(b, p, errno && errno != ENODATA ? errno : EIO);
            return -1;
        }
        for (uint64_t z = find_next_zero_bit(b->present, last, p); z < last;
             z = find_next_zero_bit(b->present, last, z + 1)) {
            memset(buf + ((z - first) << TARGET_PAGE_BITS), 0, TARGET_PAGE_SIZE);
        }
        memset(buf + ((last + 1 - first) << TARGET_PAGE_BITS), 0,
               (end - last - 1) << TARGET_PAGE_BITS);
    }
    /* Callers place whole regions (64 KiB aligned, or the block's end): each checked first. */
    for (uint64_t g = first; b->region_hash && g < end; g += MRI_REGION_PAGES) {
        if (!mri_check_region(b->index, g / MRI_REGION_PAGES, b->present, b->npages,
                              buf + ((g - first) << TARGET_PAGE_BITS),
                              b->region_hash[g / MRI_REGION_PAGES])) {
            lr_fail(b, g, LR_ERR_MISMATCH);
            return -1;
        }
    }
    placed = uffd_place_pages(lr.uffd, host, p < end ? buf : NULL, n, TARGET_PAGE_SIZE);
    /*
     * ENOENT: the range is no longer registered. The last prefetcher
     * unregisters once every page is resident, so a fault thread placing
     * a region a prefetcher placed meanwhile meets that between the
     * prefetcher's unregistration and its RESIDENT: the pages are there.
     */
    if (placed == -ENOENT && lr_all_resident(b, first, n)) {
        return bytes;
    }
    if (placed < 0) {
        lr_fail(b, first, -placed);
        return -1;
    }
    bitmap_set_atomic(b->resident, first, n);
    bitmap_set_atomic(b->rb->vmm_written_bmap, first, n);
    lr_add(&lr.pages_resident, placed);
    return bytes;
}

/* A page-aligned read buffer (O_DIRECT wants one), faulted in before the first read; or NULL. */
static uint8_t *lr_buffer(uint64_t pages)
{
    void *p = mmap(NULL, pages * TARGET_PAGE_SIZE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

    return p == MAP_FAILED ? NULL : p;
}

static LazyBlock *lr_find(uint64_t addr, uint64_t *page)
{
    int n = __atomic_load_n(&lr.nblocks, __ATOMIC_ACQUIRE);

    for (int i = 0; i < n; i++) {
        uintptr_t host = (uintptr_t)lr.blocks[i].rb->host;

        if (addr >= host && addr - host < lr.blocks[i].rb->used_length) {
            *page = (addr - host) >> TARGET_PAGE_BITS;
            return &lr.blocks[i];
        }
    }
    return NULL;
}

/* Main loop: what a failed restore can give back (lr_failed_out). */
/*
 * The blocks' bitmaps and hashes, once no thread reads them: one place for
 * the failure's release and the finish, which had drifted (region_hash).
 */
static void lr_free_blocks(void)
{
    for (int i = 0; i < lr.nblocks; i++) {
        g_free(lr.blocks[i].present);
        g_free(lr.blocks[i].resident);
        g_free(lr.blocks[i].region_hash);
    }
    g_clear_pointer(&lr.blocks, g_free);
    lr.nblocks = 0;
}

/* Main loop: joins the prefetch threads and the fault server (both done, or out after a failure). */
static void lr_join_threads(void)
{
    for (int i = 0; i < LR_PREFETCH_THREADS; i++) {
        if (lr.prefetch_created[i]) {
            qemu_thread_join(&lr.prefetch_threads[i]);
            lr.prefetch_created[i] = false;
        }
    }
    uffd_server_stop(&lr.faults);
}

static void lr_failed_bh_release(void *opaque)
{
    /* The fault server is out already (lr_fault_end): this joins it. */
    lr_join_threads();
    /*
     * The userfaultfd stays open and registered, for the life of the
     * process: vCPUs and device threads may wait on its missing pages, and
     * closing it or unregistering would wake them onto zero pages, memory
     * the guest never had. guest_ram_reads_may_wait() stays true with it.
     * The rest nobody uses any more: both threads have returned.
     */
    lr_free_blocks();
    close(lr.fd);
    lr.fd = -1;
    munmap(lr.fault_buf, LR_FAULT_PAGES * TARGET_PAGE_SIZE);
    lr.fault_buf = NULL;
    for (int i = 0; i < LR_PREFETCH_THREADS; i++) {
        munmap(lr.prefetch_bufs[i], LR_PREFETCH_PAGES * TARGET_PAGE_SIZE);
        lr.prefetch_bufs[i] = NULL;
    }
}

/*
 * The fault thread as it returns, or the last prefetch thread out after a
 * failure: once both are out of a failed restore, release what it held.
 * The fault thread counts even when it returned for another reason (a read
 * of the userfaultfd failed), so the count still reaches 2.
 */
static void lr_failed_out(void)
{
    if (__atomic_add_fetch(&lr.failed_out, 1, __ATOMIC_ACQ_REL) == 2 &&
        __atomic_load_n(&lr.status, __ATOMIC_SEQ_CST) == LR_FAILED) {
        qemu_bh_schedule_oneshot(lr_failed_bh_release, NULL);
    }
}

/*
 * mig/lr-fault, the row's fault hook: reads the fault's 64 KiB
 * neighbourhood from the file and places it (lr_place). After a failure
 * no fault is served: the waiters stay waiting (lr_fail).
 */
static UffdFaultOutcome lr_fault(void *opaque, const UffdFault *f)
{
    LazyRestore *l = opaque;
    uint64_t page, first, n;
    LazyBlock *b;

    /* A write-protect fault is not ours: nothing here protects pages. */
    if (f->flags & UFFD_PAGEFAULT_FLAG_WP ||
        __atomic_load_n(&l->status, __ATOMIC_RELAXED) == LR_FAILED) {
        return UFFD_FAULT_IGNORED;
    }
    b = lr_find(f->addr, &page);
    if (!b) {
        return UFFD_FAULT_IGNORED;
    }
    first = page & ~(uint64_t)(LR_FAULT_PAGES - 1);
    n = MIN(LR_FAULT_PAGES, b->npages - first);
    /* A prefetcher placed the region since the fault was raised; its copy woke the waiter. */
    if (lr_all_resident(b, first, n)) {
        return UFFD_FAULT_SERVED;
    }
    if (lr_place(b, first, n, l->fault_buf) < 0) {
        return UFFD_FAULT_FAILED;
    }
    lr_add(&l->pages_fault_read, n);
    return UFFD_FAULT_SERVED;
}

/* mig/lr-fault's last act, however it ended (a stop, a failed read): lr_failed_out counts it. */
static void lr_fault_end(void *opaque, int err)
{
    lr_failed_out();
}

static const UffdServerOps lr_fault_ops = {
    .what = "lazy restore",
    .fault = lr_fault,
    .end = lr_fault_end,
};

/* Main loop: the threads are done; release everything. */
static void lr_finish_bh(void *opaque)
{
    lr_join_threads();
    lr_free_blocks();
    if (lr.uffd >= 0) {
        close(lr.uffd);
    }
    if (lr.fd >= 0) {
        close(lr.fd);
    }
    lr.uffd = lr.fd = -1;
    if (lr.fault_buf) {
        munmap(lr.fault_buf, LR_FAULT_PAGES * TARGET_PAGE_SIZE);
        lr.fault_buf = NULL;
    }
    for (int i = 0; i < LR_PREFETCH_THREADS; i++) {
        if (lr.prefetch_bufs[i]) {
            munmap(lr.prefetch_bufs[i], LR_PREFETCH_PAGES * TARGET_PAGE_SIZE);
            lr.prefetch_bufs[i] = NULL;
        }
    }
}

/* Chunk @c of the cursor: its block and first page; false past the last block. */
static bool lr_chunk(uint64_t c, LazyBlock **bp, uint64_t *first)
{
    for (int i = 0; i < lr.nblocks; i++) {
        uint64_t n = DIV_ROUND_UP(lr.blocks[i].npages, LR_PREFETCH_PAGES);

        if (c < n) {
            *bp = &lr.blocks[i];
            *first = c * LR_PREFETCH_PAGES;
            return true;
        }
        c -= n;
    }
    return false;
}

/* Every block in order, 2 MiB at a time, the threads taking turns; the last one out ends it. */
static void *lr_prefetch_thread(void *opaque)
{
    int faulting = LR_FAULTING;
    uint8_t *buf = opaque;
    LazyBlock *b;
    uint64_t first;

    while (lr_chunk(__atomic_fetch_add(&lr.next_chunk, 1, __ATOMIC_RELAXED), &b, &first)) {
        uint64_t n = MIN(LR_PREFETCH_PAGES, b->npages - first);
        int64_t bytes;

        if (__atomic_load_n(&lr.status, __ATOMIC_RELAXED) == LR_FAILED) {
            break;
        }
        /* Faults placed all of it already: nothing to read. */
        if (lr_all_resident(b, first, n)) {
            continue;
        }
        bytes = lr_place(b, first, n, buf);
        if (bytes < 0) {
            break;
        }
        lr_add(&lr.bytes_prefetched, bytes);
    }
    /* Every worker counts, failed or not: the last one out ends it either way. */
    if (__atomic_add_fetch(&lr.prefetch_done, 1, __ATOMIC_ACQ_REL) < lr.prefetch_workers) {
        return NULL;
    }
    if (__atomic_load_n(&lr.status, __ATOMIC_SEQ_CST) == LR_FAILED) {
        /* Pages are missing and stay so: the registration stays too. */
        lr_failed_out();
        return NULL;
    }
    /* Every page is there: no fault can come any more. */
    for (int i = 0; i < lr.nblocks; i++) {
        uffd_unregister(lr.uffd, lr.blocks[i].rb->host, lr.blocks[i].rb->used_length);
        __atomic_store_n(&lr.blocks[i].rb->uffd_missing, 0, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&lr.resident_ms, (get_clock_ns() - lr.start_ns) / 1000000, __ATOMIC_RELAXED);
    /*
     * A fault's read may have failed since the check above: lr_fail's
     * outcome stands (the VM is stopping), and its release runs instead.
     */
    if (!__atomic_compare_exchange_n(&lr.status, &faulting, LR_RESIDENT, false,
                                     __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
        lr_failed_out();
        return NULL;
    }
    qemu_bh_schedule_oneshot(lr_finish_bh, NULL);
    return NULL;
}

/* The first block: the userfaultfd, the file descriptor and the fault thread. */
static bool lr_start(int fd, Error **errp)
{
    lr.start_ns = get_clock_ns();
    lr.pages_total = lr.pages_resident = lr.pages_fault_read = 0;
    lr.bytes_prefetched = lr.resident_ms = 0;
    lr.failed_out = 0;
    uffd_server_reset_stats(&lr.faults);
    lr.blocks = g_new0(LazyBlock, ram_blocks()->len);
    lr.uffd = uffd_create(0);
    if (lr.uffd < 0) {
        error_setg_errno(errp, -lr.uffd, "x-lazy-restore: userfaultfd is not available");
        return false;
    }
    /*
     * Our own descriptor, O_DIRECT where the filesystem has it: the reads
     * land in our buffer once, not in the page cache first, and the guest's
     * memory is what holds the snapshot afterwards.
     */
    {
        g_autofree char *self = g_strdup_printf("/proc/self/fd/%d", fd);

        lr.fd = open(self, O_RDONLY | O_CLOEXEC | O_DIRECT);
        if (lr.fd < 0) {
            lr.fd = dup(fd);
        }
    }
    if (lr.fd < 0) {
        error_setg_errno(errp, errno, "x-lazy-restore: cannot set up");
        return false;
    }
    lr.fault_buf = lr_buffer(LR_FAULT_PAGES);
    for (int i = 0; i < LR_PREFETCH_THREADS; i++) {
        lr.prefetch_bufs[i] = lr_buffer(LR_PREFETCH_PAGES);
        if (!lr.prefetch_bufs[i]) {
            break;
        }
    }
    if (!lr.fault_buf || !lr.prefetch_bufs[LR_PREFETCH_THREADS - 1]) {
        error_setg(errp, "x-lazy-restore: cannot allocate its read buffers");
        return false;
    }
    if (!uffd_server_start(&lr.faults, "mig/lr-fault", lr.uffd, &lr_fault_ops, &lr, errp)) {
        return false;
    }
    __atomic_store_n(&lr.status, LR_FAULTING, __ATOMIC_SEQ_CST);
    return true;
}

bool lazy_restore_add_block(RAMBlock *rb, int fd, unsigned long *present,
                            uint64_t pages_offset, uint32_t index,
                            const uint64_t *region_hash, Error **errp)
{
    LazyBlock *b;
    int ret;

    if (!lr.blocks && !lr_start(fd, errp)) {
        g_free(present);
        return false;
    }
    if (lr.nblocks == (int)ram_blocks()->len) {
        error_setg(errp, "x-lazy-restore: block %s appears twice", rb->idstr);
        g_free(present);
        return false;
    }
    b = &lr.blocks[lr.nblocks];
    b->rb = rb;
    b->npages = rb->used_length >> TARGET_PAGE_BITS;
    b->pages_offset = pages_offset;
    b->present = present;
    b->resident = bitmap_new(b->npages);
    b->index = index;
    b->region_hash = region_hash ? g_memdup2(region_hash, mri_nregions(rb->used_length) *
                                             sizeof(uint64_t)) : NULL;
    /* Pages are placed 4 KiB at a time: no huge page may fill the rest with zeros first. */
    if (madvise(rb->host, rb->used_length, MADV_NOHUGEPAGE) < 0 && errno != EINVAL) {
        error_setg_errno(errp, errno, "x-lazy-restore: MADV_NOHUGEPAGE on %s failed", rb->idstr);
        /* Not counted in nblocks yet: the finish would not free them. */
        g_clear_pointer(&b->present, g_free);
        g_clear_pointer(&b->resident, g_free);
        g_clear_pointer(&b->region_hash, g_free);
        return false;
    }
    /* Visible to the fault thread before its first fault can come. */
    __atomic_store_n(&lr.nblocks, lr.nblocks + 1, __ATOMIC_RELEASE);
    lr_add(&lr.pages_total, b->npages);
    __atomic_store_n(&rb->uffd_missing, 1, __ATOMIC_RELEASE);
    ret = uffd_register_missing(lr.uffd, rb->host, rb->used_length);
    if (ret < 0) {
        __atomic_store_n(&rb->uffd_missing, 0, __ATOMIC_RELEASE);
        error_setg_errno(errp, -ret, "x-lazy-restore: registering RAM block %s with "
                         "userfaultfd failed (its backend must be anonymous memory or memfd)",
                         rb->idstr);
        return false;
    }
    return true;
}

void lazy_restore_load_done(bool ok, LazyRestoreFailFn *on_fail)
{
    int ret;

    if (!lr.blocks) {
        return;
    }
    if (ok) {
        __atomic_store_n(&lr.on_fail, on_fail, __ATOMIC_SEQ_CST);
        lr.next_chunk = 0;
        lr.prefetch_done = 0;
        lr.prefetch_workers = LR_PREFETCH_THREADS;
        for (int i = 0; i < LR_PREFETCH_THREADS; i++) {
            g_autofree char *name = g_strdup_printf("mig/lr-pf%d", i);

            /* Before the thread exists: the BH that joins it may run as soon as it ends. */
            lr.prefetch_created[i] = true;
            ret = qemu_thread_create(&lr.prefetch_threads[i], name, lr_prefetch_thread,
                                     lr.prefetch_bufs[i]);
            if (ret < 0) {
                lr.prefetch_created[i] = false;
                /*
                 * This thread does that worker's share itself (the guest
                 * starts once it is done): every worker must finish for
                 * the last one to end the restore.
                 */
                error_report("cannot create a lazy restore prefetch thread: %s; loading the "
                             "rest before the guest runs", g_strerror(-ret));
                lr_prefetch_thread(lr.prefetch_bufs[i]);
            }
        }
        return;
    }
    /* The guest never runs: stop serving, and let nothing wait on this memory. */
    __atomic_store_n(&lr.status, LR_FAILED, __ATOMIC_SEQ_CST);
    uffd_server_stop(&lr.faults);
    for (int i = 0; i < lr.nblocks; i++) {
        uffd_unregister(lr.uffd, lr.blocks[i].rb->host, lr.blocks[i].rb->used_length);
        __atomic_store_n(&lr.blocks[i].rb->uffd_missing, 0, __ATOMIC_RELEASE);
    }
    qemu_bh_schedule_oneshot(lr_finish_bh, NULL);
}

bool lazy_restore_failed(const char **why)
{
    const char *msg;

    if (__atomic_load_n(&lr.status, __ATOMIC_SEQ_CST) != LR_FAILED) {
        return false;
    }
    /* A failed load, or lr_fail between its CAS and publishing the message. */
    msg = __atomic_load_n(&lr.fail_msg, __ATOMIC_ACQUIRE);
    if (why) {
        *why = msg ? msg : "lazy restore: reading guest RAM from the file failed";
    }
    return true;
}

bool lazy_restore_in_progress(void)
{
    /*
     * Until a finish BH released the threads, the userfaultfd may still hold
     * guest RAM. After a failure it holds it for good, and
     * lazy_restore_failed() says so from the start.
     */
    return lr.blocks != NULL;
}

void lazy_restore_fill_info(MigrationInfo *info)
{
    static const char *const names[] = { "none", "faulting", "resident", "failed" };
    int st = __atomic_load_n(&lr.status, __ATOMIC_SEQ_CST);
    const LatencyHist *lat = uffd_server_latency(&lr.faults);
    UffdServerStats fst;
    XLazyRestoreInfo *x;

    if (st == LR_NONE) {
        return;
    }
    uffd_server_get_stats(&lr.faults, &fst);
    x = g_new0(XLazyRestoreInfo, 1);
    x->status = g_strdup(names[st]);
    x->pages_total = __atomic_load_n(&lr.pages_total, __ATOMIC_RELAXED);
    x->pages_resident = __atomic_load_n(&lr.pages_resident, __ATOMIC_RELAXED);
    x->faults = fst.served;
    x->pages_fault_read = __atomic_load_n(&lr.pages_fault_read, __ATOMIC_RELAXED);
    x->bytes_prefetched = __atomic_load_n(&lr.bytes_prefetched, __ATOMIC_RELAXED);
    x->time_to_resident_ms = __atomic_load_n(&lr.resident_ms, __ATOMIC_RELAXED);
    x->fault_latency_histogram = latency_hist_buckets(lat);
    x->fault_latency_sum_ns = latency_hist_sum_ns(lat);
    x->fault_latency_p50_us = latency_hist_percentile_us(lat, 50);
    x->fault_latency_p99_us = latency_hist_percentile_us(lat, 99);
    x->fault_latency_max_us = __atomic_load_n(&lat->max_us, __ATOMIC_RELAXED);
    info->x_lazy_restore = x;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The postcopy destination (postcopy-dst.h): RAM discarded and registered
 * with userfaultfd, the fault thread that
 * asks the source for missing pages, atomic placement, and the request
 * latency it measures (fault read to page placed).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "qemu/bswap.h"
#include "qemu/main-loop.h"
#include "qemu/thread.h"
#include "qemu/userfaultfd.h"
#include "system/memory.h"
#include "migration/qemu-file.h"
#include "latency-hist.h"
#include "options.h"
#include "status.h"
#include "postcopy.h"
#include "postcopy-blocktime.h"
#include "postcopy-dst.h"
#include "postcopy-rp-dst.h"
#include "ram.h"
#include "ram-codec.h"
#include "trace.h"
#include <poll.h>
#include <sys/eventfd.h>

#define DISCARD_BATCH 1024

typedef enum PostcopyDstPhase {
    PC_DST_NONE,
    PC_DST_ADVISED,
    PC_DST_LISTENING,
    PC_DST_RUNNING,
} PostcopyDstPhase;

/* One RAMBlock's postcopy bitmaps (ADVISE to the next load's reset). */
typedef struct PostcopyDstBlock {
    RAMBlock *rb;
    /* Set atomically by mig/dst once the page is in place. */
    unsigned long *received;
    /* Set atomically by mig/pc-fault once the source was asked for the page. */
    unsigned long *requested;
} PostcopyDstBlock;

typedef struct PostcopyDst {
    const PostcopyDstOps *ops;  /* incoming.c's, set before mig/dst starts */
    int phase;                  /* PostcopyDstPhase: mig/dst writes, any thread reads (atomic) */

    /* Set up by mig/dst at ADVISE/LISTEN; torn down by mig/dst at the end. */
    PostcopyDstBlock *blocks;
    int nblocks;
    int uffd;
    int stop_fd;                /* eventfd: mig/pc-fault ends */
    QemuThread fault_thread;
    bool fault_thread_running;

    /*
     * postcopy-preempt: the channel (set by the main thread) and the thread
     * that places its pages, started by whichever of ADVISE and the
     * connection comes second; preempt_lock covers both fields.
     */
    GMutex preempt_lock;
    QEMUFile *preempt;
    QemuThread preempt_thread;
    bool preempt_running;

    /* Request latency: mig/pc-fault adds, mig/dst removes, under lat_lock. */
    GMutex lat_lock;
    GHashTable *pending;        /* host page address -> request time (ns) */
    LatencyHist lat;            /* recorded by mig/dst under lat_lock */

    char *pause_reason;         /* lat_lock: why the stream broke, for query-migrate */

    /* Counters: single aligned words, read by query-migrate. */
    uint64_t requests;          /* mig/pc-fault */
    uint64_t pages_placed;      /* mig/dst, after LISTEN */
    uint64_t pages_discarded;   /* mig/dst, DISCARD commands */
    uint64_t discard_ns;        /* mig/dst: time in them, for the trace */
    /* mig/dst: DISCARD ranges of one block not applied yet (flushed at LISTEN). */
    RAMBlock *disc_rb;
    uint64_t disc_start[DISCARD_BATCH];
    uint64_t disc_len[DISCARD_BATCH];
    unsigned disc_n;
} PostcopyDst;

static PostcopyDst pd = { .uffd = -1, .stop_fd = -1 };

static int postcopy_dst_phase(void)
{
    return __atomic_load_n(&pd.phase, __ATOMIC_ACQUIRE);
}

static void postcopy_dst_set_phase(PostcopyDstPhase phase)
{
    __atomic_store_n(&pd.phase, phase, __ATOMIC_RELEASE);
}

static void count(uint64_t *c, uint64_t n)
{
    __atomic_store_n(c, *c + n, __ATOMIC_RELAXED);
}

void postcopy_dst_reset(const PostcopyDstOps *ops)
{
    assert(!pd.fault_thread_running);
    pd.ops = ops;
    postcopy_dst_set_phase(PC_DST_NONE);
    for (int i = 0; i < pd.nblocks; i++) {
        g_free(pd.blocks[i].received);
        g_free(pd.blocks[i].requested);
    }
    g_clear_pointer(&pd.blocks, g_free);
    pd.nblocks = 0;
    g_clear_pointer(&pd.pending, g_hash_table_destroy);
    memset(&pd.lat, 0, sizeof(pd.lat));
    pd.requests = pd.pages_placed = pd.pages_discarded = 0;
    pd.disc_n = 0;
    pd.discard_ns = 0;
    g_clear_pointer(&pd.pause_reason, g_free);
}

bool postcopy_dst_open_return_path(QEMUFile *from_src, Error **errp)
{
    if (rp_dst_is_open()) {
        error_setg(errp, "CMD_OPEN_RETURN_PATH received twice");
        return false;
    }
    if (!rp_dst_open(from_src)) {
        error_setg(errp, "Unable to open return-path for postcopy");
        return false;
    }
    return true;
}

bool postcopy_dst_ping(uint32_t value, Error **errp)
{
    if (!rp_dst_is_open()) {
        error_setg(errp, "CMD_PING (0x%x) received with no return path", value);
        return false;
    }
    rp_dst_send_be32(MIG_RP_MSG_PONG, value);
    return true;
}

/* ---- ADVISE, DISCARD ---- */

static PostcopyDstBlock *postcopy_dst_block(RAMBlock *rb)
{
    for (int i = 0; i < pd.nblocks; i++) {
        if (pd.blocks[i].rb == rb) {
            return &pd.blocks[i];
        }
    }
    return NULL;
}

/* The kernel must let us register this memory in missing mode (anonymous or shmem). */
static bool postcopy_dst_check_registrable(Error **errp)
{
    int fd = uffd_create(0);
    GPtrArray *rbs = ram_blocks();

    if (fd < 0) {
        error_setg_errno(errp, -fd, "Postcopy is not supported: userfaultfd");
        return false;
    }
    for (guint i = 0; i < rbs->len; i++) {
        RAMBlock *rb = g_ptr_array_index(rbs, i);
        int ret = uffd_register_missing(fd, rb->host, rb->used_length);

        if (ret < 0) {
            close(fd);
            error_setg_errno(errp, -ret, "Postcopy is not supported for RAM block %s "
                             "(its backend must be anonymous memory or memfd/tmpfs)",
                             rb->idstr);
            return false;
        }
        uffd_unregister(fd, rb->host, rb->used_length);
    }
    close(fd);
    return true;
}

static bool postcopy_dst_prepare(Error **errp);
static void postcopy_dst_maybe_start_preempt(void);

bool postcopy_dst_advise(uint64_t pagesize_summary, uint64_t target_page_size, Error **errp)
{
    uint64_t host_page = sysconf(_SC_PAGESIZE);
    GPtrArray *rbs = ram_blocks();

    if (postcopy_dst_phase() != PC_DST_NONE) {
        error_setg(errp, "CMD_POSTCOPY_ADVISE in wrong postcopy state (%d)", postcopy_dst_phase());
        return false;
    }
    if (!migrate_cap(MIGRATION_CAPABILITY_POSTCOPY_RAM)) {
        error_setg(errp, "the source is migrating in postcopy mode, but capability "
                   "postcopy-ram is off here (set it on both sides)");
        return false;
    }
    if (pagesize_summary != host_page) {
        error_setg(errp, "Postcopy needs matching RAM page sizes (s=%" PRIx64 " d=%" PRIx64 ")",
                   pagesize_summary, host_page);
        return false;
    }
    if (target_page_size != TARGET_PAGE_SIZE) {
        error_setg(errp, "Postcopy needs matching target page sizes (s=%" PRIu64 " d=%" PRIu64 ")",
                   target_page_size, (uint64_t)TARGET_PAGE_SIZE);
        return false;
    }
    if (!postcopy_dst_check_registrable(errp)) {
        return false;
    }
    pd.nblocks = rbs->len;
    pd.blocks = g_new0(PostcopyDstBlock, pd.nblocks);
    for (int i = 0; i < pd.nblocks; i++) {
        RAMBlock *rb = g_ptr_array_index(rbs, i);
        uint64_t npages = rb->used_length >> TARGET_PAGE_BITS;
        int ret;

        pd.blocks[i].rb = rb;
        pd.blocks[i].received = bitmap_new(npages);
        pd.blocks[i].requested = bitmap_new(npages);
        /*
         * No transparent huge pages from now on: a page written in precopy
         * would bring in the zero-filled rest of its 2 MiB, and a page of
         * it never sent would then be "there" as zeros, and refuse the
         * atomic placement of its real content (QEMU does the same).
         */
        if (madvise(rb->host, rb->used_length, MADV_NOHUGEPAGE) < 0 && errno != EINVAL) {
            error_setg_errno(errp, errno, "postcopy: MADV_NOHUGEPAGE on RAM block %s failed",
                             rb->idstr);
            return false;
        }
        /*
         * Every byte will come from the source: what machine init put here
         * (the firmware) must not pass for a page that arrived.
         */
        ret = ram_block_discard_range(rb, 0, rb->used_length);
        if (ret < 0) {
            error_setg_errno(errp, -ret, "postcopy: discarding RAM block %s failed", rb->idstr);
            return false;
        }
    }
    pd.pending = g_hash_table_new(NULL, NULL);
    postcopy_dst_set_phase(PC_DST_ADVISED);
    g_mutex_lock(&pd.preempt_lock);
    postcopy_dst_maybe_start_preempt();
    g_mutex_unlock(&pd.preempt_lock);
    /* A failure leaves what it made to postcopy_dst_end(). */
    return postcopy_dst_prepare(errp);
}

/*
 * The discards queued so far, in one go (the guest is stopped meanwhile:
 * each madvise of its own would flush the TLB of every CPU). Before LISTEN,
 * and before a queue for another block starts.
 */
static bool postcopy_dst_flush_discards(Error **errp)
{
    int64_t t0 = get_clock_ns();
    int ret;

    if (!pd.disc_n) {
        return true;
    }
    ret = ram_block_discard_ranges(pd.disc_rb, pd.disc_start, pd.disc_len, pd.disc_n);
    pd.disc_n = 0;
    pd.discard_ns += get_clock_ns() - t0;
    if (ret < 0) {
        error_setg_errno(errp, -ret, "postcopy discard in block %s failed", pd.disc_rb->idstr);
        return false;
    }
    return true;
}

bool postcopy_dst_discard(const char *block, uint64_t start, uint64_t len, Error **errp)
{
    RAMBlock *rb = ram_block_find(block);

    if (postcopy_dst_phase() != PC_DST_ADVISED) {
        error_setg(errp, "CMD_POSTCOPY_RAM_DISCARD in wrong postcopy state (%d)",
                   postcopy_dst_phase());
        return false;
    }
    if (!rb) {
        g_autofree char *safe = g_strescape(block, NULL);

        error_setg(errp, "postcopy discard: unknown RAM block \"%s\"", safe);
        return false;
    }
    if (!QEMU_IS_ALIGNED(start | len, TARGET_PAGE_SIZE) || start > rb->used_length ||
        len > rb->used_length - start) {
        error_setg(errp, "postcopy discard: range 0x%" PRIx64 "+0x%" PRIx64 " is not whole "
                   "pages inside block %s (length 0x%" PRIx64 ")", start, len, rb->idstr,
                   rb->used_length);
        return false;
    }
    if ((pd.disc_n && pd.disc_rb != rb) || pd.disc_n == DISCARD_BATCH) {
        if (!postcopy_dst_flush_discards(errp)) {
            return false;
        }
    }
    pd.disc_rb = rb;
    pd.disc_start[pd.disc_n] = start;
    pd.disc_len[pd.disc_n++] = len;
    count(&pd.pages_discarded, len >> TARGET_PAGE_BITS);
    return true;
}

/* ---- placement and the fault thread ---- */

static void postcopy_dst_request_done(void *host)
{
    gpointer t0;

    g_mutex_lock(&pd.lat_lock);
    if (g_hash_table_steal_extended(pd.pending, host, NULL, &t0)) {
        latency_hist_record_ns(&pd.lat, get_clock_ns() - GPOINTER_TO_SIZE(t0));
    }
    g_mutex_unlock(&pd.lat_lock);
}

/*
 * RAMPageReader.place (mig/dst and mig/pc-preempt): @n pages from @first
 * in as few calls as the kernel allows. A page already there (asked for
 * twice, or on both channels) stays as it is.
 */
static bool postcopy_dst_place(RAMBlock *rb, uint64_t first, unsigned n, const uint8_t *data,
                               Error **errp)
{
    PostcopyDstBlock *b = postcopy_dst_block(rb);
    uint8_t *host = rb->host + (first << TARGET_PAGE_BITS);
    int ret;

    assert(b && first + n <= rb->used_length >> TARGET_PAGE_BITS);
    ret = uffd_place_pages(pd.uffd, host, data, n, TARGET_PAGE_SIZE);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "postcopy: placing %u pages at 0x%" PRIx64 " of %s failed",
                         n, first << TARGET_PAGE_BITS, rb->idstr);
        return false;
    }
    bitmap_set_atomic(b->received, first, n);
    bitmap_set_atomic(rb->vmm_written_bmap, first, n);
    __atomic_fetch_add(&pd.pages_placed, ret, __ATOMIC_RELAXED);
    for (unsigned i = 0; i < n; i++) {
        if (test_bit_atomic(first + i, b->requested)) {
            postcopy_dst_request_done(host + i * TARGET_PAGE_SIZE);
        }
        if (postcopy_blocktime_on()) {
            postcopy_blocktime_placed((uintptr_t)host + i * TARGET_PAGE_SIZE);
        }
    }
    return true;
}

/* Pages the source sent on the preempt channel, until it closes or is shut down. */
static void *postcopy_dst_preempt_thread(void *opaque)
{
    RAMPageReader r = { .place = postcopy_dst_place };
    Error *err = NULL;

    /* The stream checked the block list; this channel carries pages only. */
    r.have_sizes = true;
    while (ram_load_records(&r, pd.preempt, &err) == 0) {
        /* EOS: the channel's opening record, or a pause in it. */
    }
    trace_postcopy_preempt_end(error_get_pretty(err));
    error_free(err);
    ram_reader_reset(&r);
    return NULL;
}

/* preempt_lock held: starts the preempt thread once both the channel and ADVISE are there. */
static void postcopy_dst_maybe_start_preempt(void)
{
    int ret;

    if (!pd.preempt || pd.preempt_running || postcopy_dst_phase() < PC_DST_ADVISED) {
        return;
    }
    ret = qemu_thread_create(&pd.preempt_thread, "mig/pc-preempt", postcopy_dst_preempt_thread,
                             NULL);
    if (ret < 0) {
        /* The pages it would bring still come on the stream, later. */
        error_report("postcopy: cannot create the preempt channel thread: %s", g_strerror(-ret));
        return;
    }
    pd.preempt_running = true;
}

/* preempt_lock held: end the thread and close its channel. */
static void postcopy_dst_stop_preempt_locked(void)
{
    if (pd.preempt) {
        qemu_file_shutdown(pd.preempt);
    }
    if (pd.preempt_running) {
        qemu_thread_join(&pd.preempt_thread);
        pd.preempt_running = false;
    }
    if (pd.preempt) {
        qemu_fclose(pd.preempt);
        pd.preempt = NULL;
    }
}

void postcopy_dst_set_preempt_channel(QEMUFile *f)
{
    g_mutex_lock(&pd.preempt_lock);
    /* A recovery's new channel replaces the broken one. */
    postcopy_dst_stop_preempt_locked();
    pd.preempt = f;
    postcopy_dst_maybe_start_preempt();
    g_mutex_unlock(&pd.preempt_lock);
}

static void postcopy_dst_stop_preempt(void)
{
    g_mutex_lock(&pd.preempt_lock);
    postcopy_dst_stop_preempt_locked();
    g_mutex_unlock(&pd.preempt_lock);
}

/* mig/pc-fault: one missing-page fault at @addr, of thread @tid (0 if unknown). */
static void postcopy_dst_handle_fault(uint64_t addr, uint32_t tid, int64_t t_read)
{
    uint64_t page_addr = addr & ~(uint64_t)(TARGET_PAGE_SIZE - 1);

    for (int i = 0; i < pd.nblocks; i++) {
        PostcopyDstBlock *b = &pd.blocks[i];
        uint64_t host = (uintptr_t)b->rb->host;
        uint64_t page;

        if (page_addr < host || page_addr - host >= b->rb->used_length) {
            continue;
        }
        page = (page_addr - host) >> TARGET_PAGE_BITS;
        if (tid && postcopy_blocktime_on()) {
            postcopy_blocktime_fault(tid, page_addr, t_read);
            /* Placed before the fault was read: that placement could not end the wait. */
            if (test_bit_atomic(page, b->received)) {
                postcopy_blocktime_placed(page_addr);
            }
        }
        /* Placed meanwhile (the placement woke the thread), or already asked for. */
        if (test_bit_atomic(page, b->received) || test_and_set_bit_atomic(page, b->requested)) {
            return;
        }
        g_mutex_lock(&pd.lat_lock);
        g_hash_table_insert(pd.pending, (gpointer)(uintptr_t)page_addr,
                            GSIZE_TO_POINTER((gsize)t_read));
        g_mutex_unlock(&pd.lat_lock);
        count(&pd.requests, 1);
        rp_dst_request_page(b->rb, page << TARGET_PAGE_BITS);
        return;
    }
    /* Only registered ranges fault here: nothing else can reach this. */
    error_report("postcopy: a fault at 0x%" PRIx64 " outside guest RAM", addr);
}

static void *postcopy_dst_fault_thread(void *opaque)
{
    struct pollfd pfd[2] = {
        { .fd = pd.uffd, .events = POLLIN },
        { .fd = pd.stop_fd, .events = POLLIN },
    };
    uint64_t addrs[64];
    uint32_t tids[64];

    for (;;) {
        int64_t t_read;
        int n;

        if (RETRY_ON_EINTR(poll(pfd, 2, -1)) < 0 || (pfd[1].revents & POLLIN)) {
            break;
        }
        t_read = get_clock_ns();
        n = uffd_read_missing_faults(pd.uffd, addrs, tids, ARRAY_SIZE(addrs));
        if (n < 0) {
            error_report("postcopy: reading userfaultfd failed: %s", g_strerror(-n));
            break;
        }
        for (int i = 0; i < n; i++) {
            postcopy_dst_handle_fault(addrs[i], tids[i], t_read);
        }
    }
    return NULL;
}

static void postcopy_dst_unregister(void)
{
    for (int i = 0; i < pd.nblocks; i++) {
        uffd_unregister(pd.uffd, pd.blocks[i].rb->host, pd.blocks[i].rb->used_length);
    }
}

bool postcopy_dst_listen(Error **errp)
{
    int64_t t0 = get_clock_ns();
    int ret;

    if (postcopy_dst_phase() != PC_DST_ADVISED) {
        error_setg(errp, "CMD_POSTCOPY_LISTEN in wrong postcopy state (%d)", postcopy_dst_phase());
        return false;
    }
    if (!postcopy_dst_flush_discards(errp)) {
        return false;
    }
    if (!rp_dst_is_open()) {
        error_setg(errp, "CMD_POSTCOPY_LISTEN with no return path to ask for pages on");
        return false;
    }
    for (int i = 0; i < pd.nblocks; i++) {
        ret = uffd_register_missing(pd.uffd, pd.blocks[i].rb->host,
                                    pd.blocks[i].rb->used_length);
        if (ret < 0) {
            error_setg_errno(errp, -ret, "postcopy: registering RAM block %s failed",
                             pd.blocks[i].rb->idstr);
            postcopy_dst_unregister();
            return false;
        }
    }
    if (migrate_cap(MIGRATION_CAPABILITY_POSTCOPY_BLOCKTIME)) {
        postcopy_blocktime_start();
    }
    ram_load_set_placer(postcopy_dst_place);
    postcopy_dst_set_phase(PC_DST_LISTENING);
    pd.ops->set_state(MIGRATION_STATUS_ACTIVE, MIGRATION_STATUS_POSTCOPY_ACTIVE);
    trace_postcopy_dst_step("discards", pd.discard_ns / 1000);
    trace_postcopy_dst_step("listen", (get_clock_ns() - t0) / 1000);
    return true;
}

/*
 * ADVISE, long before the guest stops: the userfaultfd and the threads,
 * so that LISTEN, in the downtime, has only the registration to do. The
 * fault thread waits on a userfaultfd that has nothing registered yet; the
 * preempt thread, on a channel that carries pages only after LISTEN.
 */
static bool postcopy_dst_prepare(Error **errp)
{
    int ret;

    /* Blocktime tells vCPUs apart by the faulting thread. */
    pd.uffd = uffd_create(migrate_cap(MIGRATION_CAPABILITY_POSTCOPY_BLOCKTIME)
                          ? UFFD_FEATURE_THREAD_ID : 0);
    if (pd.uffd < 0) {
        error_setg_errno(errp, -pd.uffd, "postcopy: userfaultfd");
        pd.uffd = -1;
        return false;
    }
    pd.stop_fd = eventfd(0, EFD_CLOEXEC);
    if (pd.stop_fd < 0) {
        error_setg_errno(errp, errno, "eventfd failed");
        return false;
    }
    ret = qemu_thread_create(&pd.fault_thread, "mig/pc-fault", postcopy_dst_fault_thread, NULL);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "cannot create the postcopy fault thread");
        return false;
    }
    pd.fault_thread_running = true;
    return true;
}

/* ---- recovery ---- */

QEMUFile *postcopy_dst_pause(QEMUFile *f, const Error *why)
{
    QEMUFile *nf;

    g_mutex_lock(&pd.lat_lock);
    g_free(pd.pause_reason);
    pd.pause_reason = g_strdup(error_get_pretty(why));
    g_mutex_unlock(&pd.lat_lock);
    pd.ops->set_state(MIGRATION_STATUS_POSTCOPY_ACTIVE, MIGRATION_STATUS_POSTCOPY_PAUSED);
    error_report("Detected IO failure for postcopy. Migration paused. (%s)",
                 error_get_pretty(why));
    nf = pd.ops->wait_recover(f);
    if (nf && !rp_dst_open(nf)) {
        error_report("postcopy recovery: cannot open the return path on the new connection");
    }
    return nf;
}

bool postcopy_dst_recv_bitmap(const char *block, Error **errp)
{
    RAMBlock *rb = ram_block_find(block);
    PostcopyDstBlock *b = rb ? postcopy_dst_block(rb) : NULL;
    bool ok;

    if (migrate_get_state(pd.ops->state) != MIGRATION_STATUS_POSTCOPY_RECOVER) {
        error_setg(errp, "CMD_RECV_BITMAP outside a postcopy recovery");
        return false;
    }
    if (!b) {
        g_autofree char *safe = g_strescape(block, NULL);

        error_setg(errp, "CMD_RECV_BITMAP for unknown RAM block \"%s\"", safe);
        return false;
    }
    /* What is here: every page placed or loaded since ADVISE discarded it all. */
    ok = rp_dst_send_bitmap(rb, rb->vmm_written_bmap,
                            BITS_TO_LONGS(rb->used_length >> TARGET_PAGE_BITS));
    if (!ok) {
        error_setg(errp, "postcopy recovery: sending the bitmap of %s failed", block);
    }
    return ok;
}

/* mig/dst: ask again for every page a vCPU still waits on; the source forgot them. */
static void postcopy_dst_rerequest(void)
{
    g_autoptr(GList) keys = NULL;

    g_mutex_lock(&pd.lat_lock);
    keys = g_hash_table_get_keys(pd.pending);
    g_mutex_unlock(&pd.lat_lock);
    for (GList *l = keys; l; l = l->next) {
        uint64_t addr = (uintptr_t)l->data;

        for (int i = 0; i < pd.nblocks; i++) {
            uint64_t host = (uintptr_t)pd.blocks[i].rb->host;

            if (addr >= host && addr - host < pd.blocks[i].rb->used_length) {
                rp_dst_request_page(pd.blocks[i].rb, addr - host);
                break;
            }
        }
    }
}

bool postcopy_dst_resume(Error **errp)
{
    uint8_t ack[4];

    if (migrate_get_state(pd.ops->state) != MIGRATION_STATUS_POSTCOPY_RECOVER) {
        error_setg(errp, "CMD_POSTCOPY_RESUME: illegal resume received");
        return false;
    }
    ram_load_postcopy_resumed();
    stl_be_p(ack, 1);
    if (!rp_dst_send(MIG_RP_MSG_RESUME_ACK, ack, sizeof(ack))) {
        error_setg(errp, "postcopy recovery: the return path failed");
        return false;
    }
    pd.ops->set_state(MIGRATION_STATUS_POSTCOPY_RECOVER, MIGRATION_STATUS_POSTCOPY_ACTIVE);
    postcopy_dst_rerequest();
    return true;
}

static void postcopy_dst_run_bh(void *opaque)
{
    int64_t t0 = get_clock_ns();

    pd.ops->start_guest();
    trace_postcopy_dst_step("start-guest", (get_clock_ns() - t0) / 1000);
}

bool postcopy_dst_run(Error **errp)
{
    if (postcopy_dst_phase() != PC_DST_LISTENING) {
        error_setg(errp, "CMD_POSTCOPY_RUN in wrong postcopy state (%d)", postcopy_dst_phase());
        return false;
    }
    postcopy_dst_set_phase(PC_DST_RUNNING);
    /*
     * vm_start wants the BQL, which this thread must not wait for (its
     * holder may be waiting on a page only this thread can place): take it
     * if it is free, the usual case with the main loop asleep, and start
     * the guest now; else the main loop does it.
     */
    if (bql_trylock()) {
        postcopy_dst_run_bh(NULL);
        bql_unlock();
    } else {
        qemu_bh_schedule_oneshot(postcopy_dst_run_bh, NULL);
    }
    return true;
}

bool postcopy_dst_listening(void)
{
    return postcopy_dst_phase() >= PC_DST_LISTENING;
}

void postcopy_dst_end(bool ok)
{
    uint64_t one = 1;

    if (!ok && postcopy_dst_listening()) {
        /* The guest runs on pages it has and waits for the rest: nothing to release. */
        return;
    }
    /* No placement may come after the unregistration below. */
    postcopy_dst_stop_preempt();
    if (pd.fault_thread_running) {
        /* An eventfd write of 1 only fails on counter overflow, which one writer cannot reach. */
        (void)!write(pd.stop_fd, &one, sizeof(one));
        qemu_thread_join(&pd.fault_thread);
        pd.fault_thread_running = false;
    }
    if (pd.uffd >= 0) {
        /* Wakes any thread still waiting: a page never sent is the zero page it is here. */
        postcopy_dst_unregister();
        close(pd.uffd);
        pd.uffd = -1;
        /* Every page is in: huge pages may come back (QEMU turns them on again too). */
        for (int i = 0; i < pd.nblocks; i++) {
            madvise(pd.blocks[i].rb->host, pd.blocks[i].rb->used_length, MADV_HUGEPAGE);
        }
    }
    if (pd.stop_fd >= 0) {
        close(pd.stop_fd);
        pd.stop_fd = -1;
    }
    if (rp_dst_is_open()) {
        rp_dst_send_be32(MIG_RP_MSG_SHUT, ok ? 0 : 1);
        rp_dst_close();
    }
}

/*
 * QEMU 10.1's postcopy-latency-dist: bucket N is [2^N, 2^(N+1)) us and
 * holds 0 us too, 24 of them. Ours (latency-hist.h) are [0,1), [1,2),
 * [2,4) ... [2^19, inf): QEMU's 0 is our first two, its N our N + 1.
 */
#define QEMU_LATENCY_BUCKETS 24

static uint64List *postcopy_dst_latency_dist(const LatencyHist *h)
{
    uint64List *head = NULL, **tail = &head;

    for (int n = 0; n < QEMU_LATENCY_BUCKETS; n++) {
        uint64List *e = g_new0(uint64List, 1);

        if (n == 0) {
            e->value = h->hist[0] + h->hist[1];
        } else if (n + 1 < LATENCY_HIST_BUCKETS) {
            e->value = h->hist[n + 1];
        }
        *tail = e;
        tail = &e->next;
    }
    return head;
}

void postcopy_dst_fill_info(MigrationInfo *info)
{
    XPostcopyInfo *x;

    if (postcopy_dst_phase() < PC_DST_LISTENING) {
        return;
    }
    x = g_new0(XPostcopyInfo, 1);
    x->page_requests = __atomic_load_n(&pd.requests, __ATOMIC_RELAXED);
    x->pages_placed = __atomic_load_n(&pd.pages_placed, __ATOMIC_RELAXED);
    x->pages_discarded = __atomic_load_n(&pd.pages_discarded, __ATOMIC_RELAXED);
    g_mutex_lock(&pd.lat_lock);
    x->request_latency_histogram = latency_hist_buckets(&pd.lat);
    x->request_latency_p50_us = latency_hist_percentile_us(&pd.lat, 50);
    x->request_latency_p99_us = latency_hist_percentile_us(&pd.lat, 99);
    x->request_latency_max_us = pd.lat.max_us;
    x->requests_answered = pd.lat.count;
    if (!info->error_desc && pd.pause_reason &&
        info->status == MIGRATION_STATUS_POSTCOPY_PAUSED) {
        info->error_desc = g_strdup(pd.pause_reason);
    }
    info->postcopy_latency_dist = postcopy_dst_latency_dist(&pd.lat);
    info->has_postcopy_latency = pd.lat.count > 0;
    info->postcopy_latency = pd.lat.count ? pd.lat.sum_ns / pd.lat.count : 0;
    g_mutex_unlock(&pd.lat_lock);
    info->x_postcopy = x;
    postcopy_blocktime_fill_info(info);
}

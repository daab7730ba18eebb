/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The postcopy destination (postcopy-dst.h): the stream's commands and
 * the phases they move through, RAM discarded and registered with
 * userfaultfd, recovery, and what query-migrate shows. The fault thread
 * and placement are in postcopy-dst-pages.c.
 */
#include "qemu/osdep.h"
#include "qemu/tsan.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "qemu/bswap.h"
#include "qemu/main-loop.h"
#include "qemu/thread.h"
#include "qemu/userfaultfd.h"
#include "system/memory.h"
#include "migration/qemu-file.h"
#include "migration/core/latency-hist.h"
#include "migration/core/options.h"
#include "migration/core/status.h"
#include "migration/stream/postcopy.h"
#include "postcopy-blocktime.h"
#include "migration/core/uffd-probe.h"
#include "postcopy-dst-int.h"
#include "postcopy-rp-dst.h"
#include "migration/transport/ram.h"
#include "migration/transport/ram-codec.h"
#include "migration/trace.h"


/*
 * The process's one postcopy destination: the commands (mig/dst), the
 * recovery and query-migrate reach it here; the page side
 * (postcopy-dst-pages.c) gets it by pointer. Each field's comment in
 * postcopy-dst-int.h names its writer.
 */
static PostcopyDst pc_dst = { .uffd = -1 };


void postcopy_dst_reset(const PostcopyDstOps *ops)
{
    assert(!uffd_server_running(&pc_dst.faults));
    pc_dst.ops = ops;
    postcopy_dst_set_phase(&pc_dst, PC_DST_NONE);
    for (int i = 0; i < pc_dst.nblocks; i++) {
        g_free(pc_dst.blocks[i].received);
        g_free(pc_dst.blocks[i].requested);
    }
    g_clear_pointer(&pc_dst.blocks, g_free);
    pc_dst.nblocks = 0;
    g_clear_pointer(&pc_dst.pending, g_hash_table_destroy);
    memset(&pc_dst.lat, 0, sizeof(pc_dst.lat));
    uffd_server_reset_stats(&pc_dst.faults);
    pc_dst.pages_placed = pc_dst.pages_discarded = 0;
    pc_dst.disc_n = 0;
    pc_dst.discard_ns = 0;
    g_clear_pointer(&pc_dst.pause_reason, g_free);
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
    if (value == MIG_PING_CONFIRM_OFFER && postcopy_dst_phase(&pc_dst) == PC_DST_NONE) {
        /* Our source: it will send a go once it committed; accept, so that it does. */
        rp_dst_set_confirming();
        value = MIG_PONG_CONFIRM_ACCEPT;
    }
    rp_dst_send_be32(MIG_RP_MSG_PONG, value);
    return true;
}

/* ---- ADVISE, DISCARD ---- */


static bool postcopy_dst_prepare(Error **errp);

bool postcopy_dst_advise(uint64_t pagesize_summary, uint64_t target_page_size, Error **errp)
{
    uint64_t host_page = sysconf(_SC_PAGESIZE);
    GPtrArray *rbs = ram_blocks();

    if (postcopy_dst_phase(&pc_dst) != PC_DST_NONE) {
        error_setg(errp, "CMD_POSTCOPY_ADVISE in wrong postcopy state (%d)",
                   postcopy_dst_phase(&pc_dst));
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
    if (!postcopy_ram_supported(errp)) {
        return false;
    }
    pc_dst.nblocks = rbs->len;
    pc_dst.blocks = g_new0(PostcopyDstBlock, pc_dst.nblocks);
    for (int i = 0; i < pc_dst.nblocks; i++) {
        RAMBlock *rb = g_ptr_array_index(rbs, i);
        uint64_t npages = rb->used_length >> TARGET_PAGE_BITS;
        int ret;

        pc_dst.blocks[i].rb = rb;
        pc_dst.blocks[i].received = bitmap_new(npages);
        pc_dst.blocks[i].requested = bitmap_new(npages);
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
    pc_dst.pending = g_hash_table_new(NULL, NULL);
    /* Zero pages are mapped as they come: no page may be left for a request (ram-codec.h). */
    ram_load_set_map_zero(true);
    postcopy_dst_set_phase(&pc_dst, PC_DST_ADVISED);
    tsan_g_mutex_lock(&pc_dst.preempt_lock);
    postcopy_dst_maybe_start_preempt(&pc_dst);
    tsan_g_mutex_unlock(&pc_dst.preempt_lock);
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

    if (!pc_dst.disc_n) {
        return true;
    }
    ret = ram_block_discard_ranges(pc_dst.disc_rb, pc_dst.disc_start, pc_dst.disc_len,
                                   pc_dst.disc_n);
    pc_dst.disc_n = 0;
    pc_dst.discard_ns += get_clock_ns() - t0;
    if (ret < 0) {
        error_setg_errno(errp, -ret, "postcopy discard in block %s failed", pc_dst.disc_rb->idstr);
        return false;
    }
    return true;
}

bool postcopy_dst_discard(const char *block, uint64_t start, uint64_t len, Error **errp)
{
    RAMBlock *rb = ram_block_find(block);

    if (postcopy_dst_phase(&pc_dst) != PC_DST_ADVISED) {
        error_setg(errp, "CMD_POSTCOPY_RAM_DISCARD in wrong postcopy state (%d)",
                   postcopy_dst_phase(&pc_dst));
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
    if ((pc_dst.disc_n && pc_dst.disc_rb != rb) || pc_dst.disc_n == DISCARD_BATCH) {
        if (!postcopy_dst_flush_discards(errp)) {
            return false;
        }
    }
    pc_dst.disc_rb = rb;
    pc_dst.disc_start[pc_dst.disc_n] = start;
    pc_dst.disc_len[pc_dst.disc_n++] = len;
    count(&pc_dst.pages_discarded, len >> TARGET_PAGE_BITS);
    return true;
}


static void postcopy_dst_unregister(void)
{
    for (int i = 0; i < pc_dst.nblocks; i++) {
        uffd_unregister(pc_dst.uffd, pc_dst.blocks[i].rb->host, pc_dst.blocks[i].rb->used_length);
        __atomic_store_n(&pc_dst.blocks[i].rb->uffd_missing, 0, __ATOMIC_RELEASE);
    }
}

bool postcopy_dst_listen(Error **errp)
{
    int64_t t0 = get_clock_ns();
    int ret;

    if (postcopy_dst_phase(&pc_dst) != PC_DST_ADVISED) {
        error_setg(errp, "CMD_POSTCOPY_LISTEN in wrong postcopy state (%d)",
                   postcopy_dst_phase(&pc_dst));
        return false;
    }
    if (!postcopy_dst_flush_discards(errp)) {
        return false;
    }
    if (!rp_dst_is_open()) {
        error_setg(errp, "CMD_POSTCOPY_LISTEN with no return path to ask for pages on");
        return false;
    }
    for (int i = 0; i < pc_dst.nblocks; i++) {
        __atomic_store_n(&pc_dst.blocks[i].rb->uffd_missing, 1, __ATOMIC_RELEASE);
        ret = uffd_register_missing(pc_dst.uffd, pc_dst.blocks[i].rb->host,
                                    pc_dst.blocks[i].rb->used_length);
        if (ret < 0) {
            error_setg_errno(errp, -ret, "postcopy: registering RAM block %s failed",
                             pc_dst.blocks[i].rb->idstr);
            postcopy_dst_unregister();
            return false;
        }
    }
    if (migrate_cap(MIGRATION_CAPABILITY_POSTCOPY_BLOCKTIME)) {
        postcopy_blocktime_start();
    }
    ram_load_set_placer(postcopy_dst_place, &pc_dst);
    postcopy_dst_set_phase(&pc_dst, PC_DST_LISTENING);
    pc_dst.ops->set_state(MIGRATION_STATUS_ACTIVE, MIGRATION_STATUS_POSTCOPY_ACTIVE);
    trace_postcopy_dst_step("discards", pc_dst.discard_ns / 1000);
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
    /* Blocktime tells vCPUs apart by the faulting thread. */
    pc_dst.uffd = uffd_create(migrate_cap(MIGRATION_CAPABILITY_POSTCOPY_BLOCKTIME)
                          ? UFFD_FEATURE_THREAD_ID : 0);
    if (pc_dst.uffd < 0) {
        error_setg_errno(errp, -pc_dst.uffd, "postcopy: userfaultfd");
        pc_dst.uffd = -1;
        return false;
    }
    return uffd_server_start(&pc_dst.faults, "mig/pc-fault", pc_dst.uffd, &postcopy_dst_fault_ops,
                             &pc_dst, errp);
}

/* ---- recovery ---- */

QEMUFile *postcopy_dst_pause(QEMUFile *f, const Error *why)
{
    QEMUFile *nf;

    tsan_g_mutex_lock(&pc_dst.lat_lock);
    g_free(pc_dst.pause_reason);
    pc_dst.pause_reason = g_strdup(error_get_pretty(why));
    tsan_g_mutex_unlock(&pc_dst.lat_lock);
    pc_dst.ops->set_state(MIGRATION_STATUS_POSTCOPY_ACTIVE, MIGRATION_STATUS_POSTCOPY_PAUSED);
    error_report("Detected IO failure for postcopy. Migration paused. (%s)",
                 error_get_pretty(why));
    nf = pc_dst.ops->wait_recover(f);
    if (nf && !rp_dst_open(nf)) {
        error_report("postcopy recovery: cannot open the return path on the new connection");
    }
    return nf;
}

bool postcopy_dst_recv_bitmap(const char *block, Error **errp)
{
    RAMBlock *rb = ram_block_find(block);
    PostcopyDstBlock *b = rb ? postcopy_dst_block(&pc_dst, rb) : NULL;
    bool ok;

    if (migrate_get_state(pc_dst.ops->state) != MIGRATION_STATUS_POSTCOPY_RECOVER) {
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


bool postcopy_dst_resume(Error **errp)
{
    uint8_t ack[4];

    if (migrate_get_state(pc_dst.ops->state) != MIGRATION_STATUS_POSTCOPY_RECOVER) {
        error_setg(errp, "CMD_POSTCOPY_RESUME: illegal resume received");
        return false;
    }
    ram_load_postcopy_resumed();
    stl_be_p(ack, 1);
    if (!rp_dst_send(MIG_RP_MSG_RESUME_ACK, ack, sizeof(ack))) {
        error_setg(errp, "postcopy recovery: the return path failed");
        return false;
    }
    pc_dst.ops->set_state(MIGRATION_STATUS_POSTCOPY_RECOVER, MIGRATION_STATUS_POSTCOPY_ACTIVE);
    postcopy_dst_rerequest(&pc_dst);
    return true;
}

static void postcopy_dst_run_bh(void *opaque)
{
    int64_t t0 = get_clock_ns();

    pc_dst.ops->start_guest();
    trace_postcopy_dst_step("start-guest", (get_clock_ns() - t0) / 1000);
}

bool postcopy_dst_run(Error **errp)
{
    if (postcopy_dst_phase(&pc_dst) != PC_DST_LISTENING) {
        error_setg(errp, "CMD_POSTCOPY_RUN in wrong postcopy state (%d)",
                   postcopy_dst_phase(&pc_dst));
        return false;
    }
    postcopy_dst_set_phase(&pc_dst, PC_DST_RUNNING);
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
    return postcopy_dst_phase(&pc_dst) >= PC_DST_LISTENING;
}

void postcopy_dst_end(bool ok)
{
    if (!ok && postcopy_dst_listening()) {
        /* The guest runs on pages it has and waits for the rest: nothing to release. */
        return;
    }
    /* No placement may come after the unregistration below. */
    postcopy_dst_stop_preempt(&pc_dst);
    uffd_server_stop(&pc_dst.faults);
    if (pc_dst.uffd >= 0) {
        /* Wakes any thread still waiting: a page never sent is the zero page it is here. */
        postcopy_dst_unregister();
        close(pc_dst.uffd);
        pc_dst.uffd = -1;
        /* Every page is in: huge pages may come back (QEMU turns them on again too). */
        for (int i = 0; i < pc_dst.nblocks; i++) {
            madvise(pc_dst.blocks[i].rb->host, pc_dst.blocks[i].rb->used_length, MADV_HUGEPAGE);
        }
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
    UffdServerStats st;

    if (postcopy_dst_phase(&pc_dst) < PC_DST_LISTENING) {
        return;
    }
    x = g_new0(XPostcopyInfo, 1);
    uffd_server_get_stats(&pc_dst.faults, &st);
    x->page_requests = st.deferred;
    x->pages_placed = __atomic_load_n(&pc_dst.pages_placed, __ATOMIC_RELAXED);
    x->pages_discarded = __atomic_load_n(&pc_dst.pages_discarded, __ATOMIC_RELAXED);
    tsan_g_mutex_lock(&pc_dst.lat_lock);
    x->request_latency_histogram = latency_hist_buckets(&pc_dst.lat);
    x->request_latency_sum_ns = latency_hist_sum_ns(&pc_dst.lat);
    x->request_latency_p50_us = latency_hist_percentile_us(&pc_dst.lat, 50);
    x->request_latency_p99_us = latency_hist_percentile_us(&pc_dst.lat, 99);
    x->request_latency_max_us = pc_dst.lat.max_us;
    x->requests_answered = pc_dst.lat.count;
    if (!info->error_desc && pc_dst.pause_reason &&
        info->status == MIGRATION_STATUS_POSTCOPY_PAUSED) {
        info->error_desc = g_strdup(pc_dst.pause_reason);
    }
    info->postcopy_latency_dist = postcopy_dst_latency_dist(&pc_dst.lat);
    info->has_postcopy_latency = pc_dst.lat.count > 0;
    info->postcopy_latency = pc_dst.lat.count ? pc_dst.lat.sum_ns / pc_dst.lat.count : 0;
    tsan_g_mutex_unlock(&pc_dst.lat_lock);
    info->x_postcopy = x;
    postcopy_blocktime_fill_info(info);
}

void postcopy_dst_set_preempt_channel(QEMUFile *f)
{
    postcopy_dst_preempt_attach(&pc_dst, f);
}

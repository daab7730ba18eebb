/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The postcopy row of the outgoing modes, and its page source.
 *
 * With postcopy-ram on, a migration starts as precopy (and may end as one,
 * if it converges); the stream opens a return path and advises postcopy.
 * migrate-start-postcopy switches it over at the next iteration:
 *
 *   stop the guest -> final dirty sync -> DISCARD every page still to send
 *   (the destination's copy is stale or absent) -> PACKAGED { LISTEN,
 *   devices, PING, RUN } -> the guest runs there, faulting pages in
 *   -> every page still to send, each page the destination asks for first
 *   (max-postcopy-bandwidth paces the rest) -> END sections, EOF -> the
 *   destination's SHUT says its load completed -> postmigrate
 *
 * Once the package went out the guest may be running on the destination:
 * from then on nothing resumes it here; a failure leaves this side in
 * postcopy-paused (migration.c's cleanup, told by the guest_moved hook).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "migration/misc.h"
#include "qemu/bufferiszero.h"
#include "qemu/main-loop.h"
#include "qemu/userfaultfd.h"
#include "system/memory.h"
#include "system/runstate.h"
#include "migration/qemu-file.h"
#include "migration/transport/channel.h"
#include "migration/transport/tls.h"
#include "migration/core/options.h"
#include "outgoing.h"
#include "pacing.h"
#include "migration/stream/postcopy.h"
#include "migration/core/uffd-probe.h"
#include "migration/transport/ram.h"
#include "migration/transport/ram-source.h"
#include "return-path.h"
#include "migration/stream/savevm.h"
#include "migration/stream/savevm-cmd.h"
#include "migration/core/status.h"
#include "migration/trace.h"

#define POSTCOPY_WINDOW_NS (100 * 1000 * 1000LL)   /* max-postcopy-bandwidth window */

/* DISCARD commands being built for one block at a time. */
typedef struct DiscardBatch {
    QEMUFile *f;
    RAMBlock *rb;
    uint64_t start[POSTCOPY_DISCARDS_PER_COMMAND];
    uint64_t len[POSTCOPY_DISCARDS_PER_COMMAND];
    int n;
    uint64_t pages;
} DiscardBatch;

typedef struct PostcopySrc {
    /*
     * Switched over: the page source now serves requests. Written by
     * mig/src before the package goes out; read by mig/src-rp (atomic).
     */
    bool in_postcopy;
    /*
     * postcopy-preempt: the channel the requested pages take, so they never
     * wait behind the main stream's backlog. Connected by mig/src at the
     * start; written only by mig/src-rp once in_postcopy; shut down and
     * closed by the cleanup hook (the main thread, after mig/src).
     */
    QEMUFile *preempt;
    RAMRecordWriter preempt_rec;   /* records on the preempt channel: mig/src-rp */
    /*
     * The row's dirty scan (PostcopyOutState.pre.scan), whose pages
     * mig/src-rp claims once in_postcopy: set by postcopy_init.
     */
    DirtyScan *scan;
    /* Written by mig/src, read by query-migrate (single aligned words). */
    uint64_t start_bytes;       /* this connection's stream bytes at the switchover */
    uint64_t end_bytes;         /* ... and at its end, 0 while it runs */
    uint64_t bytes_before;      /* postcopy bytes of the connections before a recovery */
    uint64_t pages_discarded;
} PostcopySrc;

/*
 * The postcopy source's connection-level state (the preempt channel, the
 * byte counts): one per process; each field says its owner. Its mode-level
 * state is PostcopyOutState, below.
 */
static PostcopySrc pcs;

/* The postcopy row's state (MigrationState.mode_state). */
typedef struct PostcopyOutState {
    /* Precopy's hooks run with it before the switch (it may converge first). */
    PrecopyState pre;
    /* migrate-start-postcopy was asked (BQL writes, mig/src reads; atomic). */
    bool start_postcopy;
    /*
     * The guest may run on the destination now (set by mig/src at the
     * switch; the cleanup bottom half reads it after joining mig/src,
     * query-migrate with the BQL).
     */
    bool guest_moved;
} PostcopyOutState;

/*
 * ---- the page source: requests first, then the dirty scan ----
 * Its state is the row's (@src is a PostcopyOutState), the dirty scan's
 * inside it.
 */

static bool postcopy_ram_setup(void *src, QEMUFile *f, Error **errp)
{
    PostcopyOutState *ps = src;

    return dirty_scan_source.setup(&ps->pre.scan, f, errp);
}

static int postcopy_ram_final_sync(void *src, QEMUFile *f)
{
    PostcopyOutState *ps = src;

    /* After the switchover the set of pages to send is final already. */
    return pcs.in_postcopy ? 0 : dirty_scan_source.final_sync(&ps->pre.scan, f);
}

/*
 * mig/src-rp, postcopy-preempt: a requested page goes out at once on its
 * own channel, if this thread claims it first. The guest is stopped here,
 * so the page cannot change under the send. A page goes once, as from
 * QEMU's source (a QEMU destination fails on a second copy, EEXIST): if
 * mig/src claimed it already, the request goes to mig/src, which flushes
 * the main channel the page is in (postcopy_ram_send_next).
 */
static bool postcopy_send_urgent(RAMBlock *rb, uint64_t page, int64_t received_ns)
{
    const uint8_t *host;

    if (!__atomic_load_n(&pcs.in_postcopy, __ATOMIC_ACQUIRE) || !pcs.preempt ||
        !dirty_scan_claim_urgent(pcs.scan, rb, page)) {
        return false;
    }
    host = rb->host + (page << TARGET_PAGE_BITS);
    ram_put_record(&pcs.preempt_rec, pcs.preempt, rb, page,
                   buffer_is_zero(host, TARGET_PAGE_SIZE) ? NULL : host);
    qemu_fflush(pcs.preempt);
    rp_src_request_served(received_ns);
    return true;
}

static bool postcopy_ram_send_next(void *src, QEMUFile *f, RAMPageWriter *w)
{
    PostcopyOutState *ps = src;
    int64_t received;
    RAMBlock *rb;
    uint64_t page;

    if (pcs.in_postcopy && rp_src_pop_request(&rb, &page, &received)) {
        dirty_scan_source.send_page(&ps->pre.scan, f, w, rb, page);
        /* A vCPU waits for it: out now, not when the buffer fills. */
        qemu_fflush(f);
        rp_src_request_served(received);
        return true;
    }
    return dirty_scan_source.send_next(&ps->pre.scan, f, w);
}

static uint64_t postcopy_ram_pending(void *src, QEMUFile *f, bool exact)
{
    PostcopyOutState *ps = src;

    return dirty_scan_source.pending(&ps->pre.scan, f, exact && !pcs.in_postcopy);
}

static bool postcopy_ram_has_urgent(void *src)
{
    return pcs.in_postcopy && rp_src_has_request();
}

static void postcopy_ram_cleanup(void *src)
{
    PostcopyOutState *ps = src;

    __atomic_store_n(&pcs.in_postcopy, false, __ATOMIC_RELEASE);
    dirty_scan_source.cleanup(&ps->pre.scan);
}

/* Recovery: every page again, less what the destination says it has. */
static bool postcopy_ram_resume(void *src, QEMUFile *f, Error **errp)
{
    PostcopyOutState *ps = src;
    GPtrArray *rbs = ram_blocks();

    if (!dirty_scan_source.setup(&ps->pre.scan, f, errp)) {
        return false;
    }
    for (guint i = 0; i < rbs->len; i++) {
        RAMBlock *rb = g_ptr_array_index(rbs, i);
        g_autofree unsigned long *present = rp_src_wait_bitmap(rb, errp);

        if (!present) {
            return false;
        }
        dirty_scan_source.skip_pages(&ps->pre.scan, rb, present);
    }
    dirty_tracker_share(&ps->pre.scan.dt);
    __atomic_store_n(&pcs.in_postcopy, true, __ATOMIC_RELEASE);
    return true;
}

static void postcopy_ram_fill_info(void *src, MigrationInfo *info)
{
    PostcopyOutState *ps = src;

    dirty_scan_source.fill_info(&ps->pre.scan, info);
}

const RAMPageSource postcopy_ram_source = {
    .name = "postcopy",
    .setup = postcopy_ram_setup,
    .final_sync = postcopy_ram_final_sync,
    .send_next = postcopy_ram_send_next,
    .pending = postcopy_ram_pending,
    .has_urgent = postcopy_ram_has_urgent,
    .resume = postcopy_ram_resume,
    .cleanup = postcopy_ram_cleanup,
    .fill_info = postcopy_ram_fill_info,
};

/* ---- the row ---- */

static bool postcopy_selected(void)
{
    return migrate_cap(MIGRATION_CAPABILITY_POSTCOPY_RAM);
}

static void postcopy_init(MigrationState *s, void *ms)
{
    PostcopyOutState *ps = ms;

    ram_select_source(&postcopy_ram_source, ms);
    memset(&pcs, 0, sizeof(pcs));
    pcs.scan = &ps->pre.scan;
    rp_src_reset_stats();
}

static bool postcopy_check_caps(const bool *old_caps, const bool *new_caps, Error **errp)
{
    bool on = new_caps[MIGRATION_CAPABILITY_POSTCOPY_RAM];

    if (new_caps[MIGRATION_CAPABILITY_POSTCOPY_PREEMPT] && !on) {
        error_setg(errp, "Postcopy preempt requires postcopy-ram");
        return false;
    }
    if (new_caps[MIGRATION_CAPABILITY_POSTCOPY_BLOCKTIME] && !on) {
        error_setg(errp, "Postcopy blocktime requires postcopy-ram");
        return false;
    }
    if (!on) {
        return true;
    }
    if (new_caps[MIGRATION_CAPABILITY_X_IGNORE_SHARED]) {
        error_setg(errp, "Postcopy is not compatible with ignore-shared");
        return false;
    }
    if (new_caps[MIGRATION_CAPABILITY_MULTIFD]) {
        /* QEMU 8.1's refusal; multifd pages would need atomic placement too. */
        error_setg(errp, "Postcopy is not yet compatible with multifd");
        return false;
    }
    return old_caps[MIGRATION_CAPABILITY_POSTCOPY_RAM] || postcopy_ram_supported(errp);
}

/*
 * postcopy-preempt: a second connection for requested pages. Nothing goes
 * on it before the first requested page, as from QEMU's source: QEMU 10.0
 * as the destination never places a page that follows an EOS record there
 * (it asked for the page for ever). A destination tells the channel from
 * the stream and from multifd channels by its first word, whenever that
 * comes (neither magic).
 */
static bool postcopy_connect_preempt(MigrationState *s, Error **errp)
{
    Channel *ch = mig_tls_client(s->tls, mig_channel_connect(s->uri, errp), errp);

    if (!ch) {
        error_prepend(errp, "postcopy-preempt channel: ");
        return false;
    }
    pcs.preempt = qemu_file_new_output(ch, "postcopy preempt channel");
    ram_record_writer_reset(&pcs.preempt_rec);
    return true;
}

/* Return path first, then the advise: before any RAM, as QEMU orders them. */
static bool postcopy_stream_start(MigrationState *s, void *ms, QEMUFile *f, Error **errp)
{
    s->rp_use = MIG_RP_NONE;
    if (!rp_src_start(s->channel, postcopy_send_urgent, errp)) {
        return false;
    }
    /* A precopy end (it converged first) waits for SHUT as QEMU's does: no offer was made. */
    s->rp_use = MIG_RP_REQUIRED;
    /* The stream's first bytes go out first, as the destination expects them. */
    qemu_fflush(f);
    if (migrate_postcopy_preempt() && !postcopy_connect_preempt(s, errp)) {
        return false;
    }
    qemu_savevm_send_open_return_path(f);
    qemu_savevm_send_postcopy_advise(f);
    return true;
}

static bool postcopy_switchover_ready(MigrationState *s, void *ms, bool all_sent)
{
    PostcopyOutState *ps = ms;

    if (__atomic_load_n(&ps->start_postcopy, __ATOMIC_ACQUIRE)) {
        return true;
    }
    return precopy_mode.switchover_ready(s, &ps->pre, all_sent);
}

static void postcopy_start_postcopy(MigrationState *s, void *ms)
{
    PostcopyOutState *ps = ms;

    __atomic_store_n(&ps->start_postcopy, true, __ATOMIC_RELEASE);
}

static bool postcopy_guest_moved(void *ms)
{
    PostcopyOutState *ps = ms;

    return ps->guest_moved;
}

static XDowntimeInfo *postcopy_downtime_info(const MigrationState *s, void *ms)
{
    PostcopyOutState *ps = ms;

    /* Only a precopy switchover (it converged first) has the phases. */
    return precopy_mode.downtime_info(s, &ps->pre);
}

static void discard_flush(DiscardBatch *d)
{
    if (d->n) {
        qemu_savevm_send_postcopy_discard(d->f, d->rb->idstr, d->start, d->len, d->n);
        d->n = 0;
    }
}

static void discard_add_run(void *opaque, RAMBlock *rb, uint64_t first, uint64_t npages)
{
    DiscardBatch *d = opaque;

    if (d->rb != rb || d->n == POSTCOPY_DISCARDS_PER_COMMAND) {
        discard_flush(d);
        d->rb = rb;
    }
    d->start[d->n] = first << TARGET_PAGE_BITS;
    d->len[d->n] = npages << TARGET_PAGE_BITS;
    d->n++;
    d->pages += npages;
}

/*
 * VM stopped, BQL held: the final sync, the discards and the package. The
 * guest counts as moved from the moment the package starts out: a write
 * that fails may still have reached the destination whole.
 */
static bool postcopy_switch(MigrationState *s, PostcopyOutState *ps, QEMUFile *f, Error **errp)
{
    DiscardBatch d = { .f = f };
    QEMUFile *pkg;
    const uint8_t *blob;
    size_t len;
    bool ok;

    int64_t t0 = get_clock_ns(), t1, t2;

    if (dirty_scan_source.final_sync(&ps->pre.scan, f) < 0) {
        error_setg(errp, "%s", qemu_file_error_msg(f));
        return false;
    }
    /* From here mig/src-rp claims requested pages too. */
    dirty_tracker_share(&ps->pre.scan.dt);
    __atomic_store_n(&pcs.in_postcopy, true, __ATOMIC_RELEASE);
    ram_save_enter_postcopy();
    t1 = get_clock_ns();
    /* Every page still to send: a QEMU destination may hold one never sent (its ROMs). */
    dirty_scan_source.foreach_stale(&ps->pre.scan, discard_add_run, &d);
    discard_flush(&d);
    __atomic_store_n(&pcs.pages_discarded, d.pages, __ATOMIC_RELAXED);
    t2 = get_clock_ns();

    pkg = qemu_file_new_buffer_output();
    qemu_savevm_send_postcopy_listen(pkg);
    ok = qemu_savevm_state_devices_postcopy(pkg, errp);
    trace_migration_postcopy_switch((t1 - t0) / 1000, (t2 - t1) / 1000,
                                    (get_clock_ns() - t2) / 1000);
    if (ok) {
        qemu_savevm_send_ping(pkg, 3);
        qemu_savevm_send_postcopy_run(pkg);
        blob = qemu_file_buffer_data(pkg, &len);
        if (len > MAX_VM_CMD_PACKAGED_SIZE) {
            error_setg(errp, "Unreasonably large packaged state: %zu", len);
            ok = false;
        }
    }
    if (ok && !qemu_file_get_error(f)) {
        ps->guest_moved = true;
        trace_migration_postcopy_package(len, d.pages);
        qemu_savevm_send_packaged_header(f, len);
        qemu_put_buffer(f, blob, len);
        qemu_fflush(f);
    }
    qemu_fclose(pkg);
    if (ok && qemu_file_get_error(f)) {
        error_setg(errp, "%s", qemu_file_error_msg(f));
        ok = false;
    }
    return ok;
}

/* Everything still to send, requests first, paced to max-postcopy-bandwidth. */
static bool postcopy_send_rest(MigrationState *s, QEMUFile *f, Error **errp)
{
    int64_t window = get_clock_ns();
    uint64_t window_bytes = qemu_file_transferred(f);

    qemu_file_reset_rate_window(f);
    for (;;) {
        int ret;
        int64_t now;

        if (rp_src_failed(errp)) {
            return false;
        }
        /* Read each round: migrate-set-parameters may change it meanwhile. */
        /* Divided first: bytes/s times the window overflows for a bandwidth past 184 TB/s. */
        qemu_file_set_rate_limit(f, migrate_max_postcopy_bandwidth() /
                                    (1000000000LL / POSTCOPY_WINDOW_NS));
        ret = qemu_savevm_state_iterate(f);
        if (ret < 0 || qemu_file_get_error(f)) {
            error_setg(errp, "%s", qemu_file_error_msg(f));
            return false;
        }
        if (ret == 1 && !rp_src_has_request()) {
            return true;
        }
        if (qemu_file_rate_limit(f)) {
            rp_src_wait(window + POSTCOPY_WINDOW_NS);
        }
        now = get_clock_ns();
        if (now - window >= POSTCOPY_WINDOW_NS) {
            s->mbps = (qemu_file_transferred(f) - window_bytes) * 8.0 / ((now - window) / 1e6) /
                      1000.0;
            window = now;
            window_bytes = qemu_file_transferred(f);
            qemu_file_reset_rate_window(f);
        }
    }
}

/* After the switchover: the rest of RAM, the end of the stream, and the destination's word. */
static bool postcopy_finish(MigrationState *s, QEMUFile *f, Error **errp)
{
    bool ok = postcopy_send_rest(s, f, errp);

    if (ok && qemu_savevm_state_complete_postcopy(f) < 0) {
        error_setg(errp, "%s", qemu_file_error_msg(f));
        ok = false;
    }
    /* The destination says when every page is in place (or why not). */
    ok = ok && rp_src_wait_shut(-1, errp);
    if (ok) {
        bql_lock();
        migration_commit_locked(s);
        bql_unlock();
    }
    return ok;
}

/*
 * Before the guest stops: let the destination take what is in flight, so
 * that the package does not queue behind it while the guest waits. The
 * guest still runs meanwhile; pages it dirties are sent after the switch.
 */
#define POSTCOPY_DRAIN_MAX_NS (200 * 1000 * 1000LL)

static void postcopy_drain_stream(MigrationState *s, QEMUFile *f)
{
    int64_t deadline = get_clock_ns() + POSTCOPY_DRAIN_MAX_NS;

    qemu_fflush(f);
    while (!qemu_file_get_error(f) && mig_channel_unsent_bytes(s->channel) > 0 &&
           get_clock_ns() < deadline) {
        g_usleep(100);
    }
}

static bool postcopy_complete(MigrationState *s, void *ms, QEMUFile *f, Error **errp)
{
    PostcopyOutState *ps = ms;
    int from;
    bool ok;

    if (!__atomic_load_n(&ps->start_postcopy, __ATOMIC_ACQUIRE)) {
        /* It converged first: an ordinary precopy switchover. */
        return precopy_mode.complete(s, &ps->pre, f, errp);
    }
    postcopy_drain_stream(s, f);
    migration_handover_prepare();
    bql_lock();
    migration_stop_vm_locked(s, RUN_STATE_FINISH_MIGRATE);
    trace_migration_postcopy_stopped((get_clock_ns() - s->downtime_start_ns) / 1000);
    if (!switchover_pause_if_asked(s, &from, errp)) {
        bql_unlock();
        return false;
    }
    /* Before the guest can move: a failure here gives it back (cleanup). */
    if (!migration_handover_release(errp)) {
        bql_unlock();
        return false;
    }
    migrate_set_state(&s->state, from, MIGRATION_STATUS_POSTCOPY_ACTIVE);
    if (migrate_get_state(&s->state) != MIGRATION_STATUS_POSTCOPY_ACTIVE) {
        /* Cancelled just before: nothing went out, the cleanup gives the guest back. */
        bql_unlock();
        error_setg(errp, "cancelled before the switchover to postcopy");
        return false;
    }
    s->precopy_bytes = qemu_file_transferred(f);
    ok = postcopy_switch(s, ps, f, errp);
    s->downtime_ms = (get_clock_ns() - s->downtime_start_ns) / 1000000;
    s->downtime_bytes = qemu_file_transferred(f) - s->precopy_bytes;
    bql_unlock();
    __atomic_store_n(&pcs.start_bytes, qemu_file_transferred(f), __ATOMIC_RELAXED);
    trace_migration_postcopy_start(pcs.pages_discarded, s->downtime_bytes, s->downtime_ms);
    ok = ok && postcopy_finish(s, f, errp);
    __atomic_store_n(&pcs.end_bytes, qemu_file_transferred(f), __ATOMIC_RELAXED);
    return ok;
}

/*
 * migrate resume=true, on the new connection @f: the return path (and the
 * preempt channel) again, each block's received bitmap, RESUME and its
 * acknowledgement; then on as after the switchover.
 */
static bool postcopy_resume(MigrationState *s, void *ms, QEMUFile *f, Error **errp)
{
    GPtrArray *rbs = ram_blocks();
    bool ok;

    /* This connection's bytes count from 0; keep what the last one carried. */
    __atomic_store_n(&pcs.bytes_before, pcs.bytes_before + pcs.end_bytes - pcs.start_bytes,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&pcs.start_bytes, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&pcs.end_bytes, 0, __ATOMIC_RELAXED);
    s->rp_use = MIG_RP_NONE;
    if (!rp_src_start(s->channel, postcopy_send_urgent, errp)) {
        return false;
    }
    /* A precopy end (it converged first) waits for SHUT as QEMU's does: no offer was made. */
    s->rp_use = MIG_RP_REQUIRED;
    for (guint i = 0; i < rbs->len; i++) {
        qemu_savevm_send_recv_bitmap(f, ((RAMBlock *)g_ptr_array_index(rbs, i))->idstr);
    }
    qemu_fflush(f);
    if (migrate_postcopy_preempt() && !postcopy_connect_preempt(s, errp)) {
        return false;
    }
    if (ram_save_resume_prepare(f, errp) < 0) {
        return false;
    }
    qemu_savevm_send_postcopy_resume(f);
    qemu_fflush(f);
    if (qemu_file_get_error(f)) {
        error_setg(errp, "%s", qemu_file_error_msg(f));
        return false;
    }
    if (!rp_src_wait_resume_ack(errp)) {
        return false;
    }
    migrate_set_state(&s->state, MIGRATION_STATUS_POSTCOPY_RECOVER,
                      MIGRATION_STATUS_POSTCOPY_ACTIVE);
    ok = postcopy_finish(s, f, errp);
    __atomic_store_n(&pcs.end_bytes, qemu_file_transferred(f), __ATOMIC_RELAXED);
    return ok;
}

static void postcopy_fill_info(const MigrationState *s, void *ms, MigrationInfo *info)
{
    PostcopyOutState *ps = ms;
    uint64_t start = __atomic_load_n(&pcs.start_bytes, __ATOMIC_RELAXED);
    uint64_t end = __atomic_load_n(&pcs.end_bytes, __ATOMIC_RELAXED);

    info->ram->postcopy_requests = rp_src_requests();
    if (ps->guest_moved) {
        info->x_postcopy = rp_src_info();
        info->x_postcopy->pages_discarded = __atomic_load_n(&pcs.pages_discarded,
                                                             __ATOMIC_RELAXED);
    }
    if (ps->guest_moved) {
        uint64_t now = end ? end : s->to_dst ? info->ram->transferred - s->transferred_before : 0;

        info->ram->postcopy_bytes = __atomic_load_n(&pcs.bytes_before, __ATOMIC_RELAXED) +
                                    (now > start ? now - start : 0);
    }
}

static void postcopy_cleanup(MigrationState *s, void *ms)
{
    /* mig/src-rp may be blocked writing to a destination that went away. */
    if (pcs.preempt) {
        qemu_file_shutdown(pcs.preempt);
    }
    rp_src_stop();
    if (pcs.preempt) {
        qemu_fclose(pcs.preempt);
        pcs.preempt = NULL;
    }
}

const MigrationOutMode postcopy_mode = {
    .name = "postcopy",
    .state_size = sizeof(PostcopyOutState),
    .converges = true,
    .selected = postcopy_selected,
    .init = postcopy_init,
    .check_caps = postcopy_check_caps,
    .fill_info = postcopy_fill_info,
    .cleanup = postcopy_cleanup,
    .stream_start = postcopy_stream_start,
    .switchover_ready = postcopy_switchover_ready,
    .complete = postcopy_complete,
    .guest_moved = postcopy_guest_moved,
    .downtime_info = postcopy_downtime_info,
    .start_postcopy = postcopy_start_postcopy,
    .resume = postcopy_resume,
};

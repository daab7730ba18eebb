/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Outgoing migration: the state machine and the "mig/src" thread.
 *
 *   none -> setup -> active -> device -> completed
 *             |        |         |
 *             +--------+---------+--> failed | cancelling -> cancelled
 *
 * The thread runs without the BQL while it iterates RAM; it takes it for
 * setup (dirty logging starts), for the switchover (stop the VM, final
 * sync, device state) and to emit events. Whatever happens, the source
 * guest keeps running unless the migration completed.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands.h"
#include "qapi/qapi-events.h"
#include "qemu/main-loop.h"
#include "system/kvm.h"
#include "system/memory.h"
#include "system/runstate.h"
#include "migration/misc.h"
#include "migration/qemu-file.h"
#include "migration.h"
#include "options.h"
#include "ram.h"
#include "savevm.h"
#include "snapshot.h"
#include "trace.h"

#define BUFFER_DELAY_MS 100         /* rate-limit and bandwidth window */
#define XFER_LIMIT_RATIO (1000 / BUFFER_DELAY_MS)
/* Switchover estimate before any busy window was measured, if unlimited. */
#define DEFAULT_BANDWIDTH_BPMS (1024.0 * 1024)

static MigrationState current_migration = { .state = MIGRATION_STATUS_NONE };
static void migration_cleanup_bh(void *opaque);
static GMutex rate_lock;
static GCond rate_cond;
static bool rate_kick;              /* rate_lock */

MigrationState *migrate_get_current(void)
{
    return &current_migration;
}

static int migration_state(MigrationState *s)
{
    return __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
}

bool migration_is_running(void)
{
    switch (migration_state(&current_migration)) {
    case MIGRATION_STATUS_SETUP:
    case MIGRATION_STATUS_ACTIVE:
    case MIGRATION_STATUS_DEVICE:
    case MIGRATION_STATUS_CANCELLING:
        return true;
    default:
        return current_migration.thread_running;
    }
}

bool migration_has_finished(void)
{
    return migration_state(&current_migration) == MIGRATION_STATUS_COMPLETED;
}

/* Emits an event from any thread (events need the BQL). */
static void migration_emit_locked(void (*fn)(void *), void *arg)
{
    if (bql_locked()) {
        fn(arg);
    } else {
        bql_lock();
        fn(arg);
        bql_unlock();
    }
}

static void emit_migration_event(void *arg)
{
    qapi_event_send_migration((MigrationStatus)GPOINTER_TO_INT(arg));
}

static void emit_pass_event(void *arg)
{
    qapi_event_send_migration_pass(GPOINTER_TO_INT(arg));
}

void migration_dirty_pass_event(uint64_t pass)
{
    trace_migration_pass(pass, ram_state_get()->dt.dirty_pages * TARGET_PAGE_SIZE,
                         current_migration.to_dst ? qemu_file_transferred(current_migration.to_dst) : 0);
    if (migrate_events()) {
        migration_emit_locked(emit_pass_event, GINT_TO_POINTER((int)pass));
    }
}

void migrate_set_state(int *state, int old, int new)
{
    if (__atomic_compare_exchange_n(state, &old, new, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
        trace_migration_state(MigrationStatus_str(old), MigrationStatus_str(new));
        if (migrate_events()) {
            migration_emit_locked(emit_migration_event, GINT_TO_POINTER(new));
        }
    }
}

static void migrate_set_error(MigrationState *s, Error *err)
{
    bool locked = bql_locked();

    if (!locked) {
        bql_lock();
    }
    if (!s->error) {
        s->error = err;
    } else {
        error_free(err);
    }
    if (!locked) {
        bql_unlock();
    }
}

/*
 * Records that the migration failed. The state moves to failed only in the
 * cleanup bottom half, once the thread is gone and the guest is running
 * again, so a client that sees "failed" can migrate again at once.
 */
static void migration_fail(MigrationState *s, Error *err)
{
    migrate_set_error(s, err);
    s->result = MIGRATION_STATUS_FAILED;
}

void migration_rate_limit_changed(void)
{
    MigrationState *s = &current_migration;

    g_mutex_lock(&s->file_lock);
    if (s->to_dst && migration_state(s) == MIGRATION_STATUS_ACTIVE) {
        qemu_file_set_rate_limit(s->to_dst, migrate_max_bandwidth() / XFER_LIMIT_RATIO);
    }
    g_mutex_unlock(&s->file_lock);
    g_mutex_lock(&rate_lock);
    rate_kick = true;
    g_cond_broadcast(&rate_cond);
    g_mutex_unlock(&rate_lock);
}

/* Sleeps until @deadline_ns unless cancel or a bandwidth change wakes us. */
static void migration_rate_wait(int64_t deadline_ns)
{
    g_mutex_lock(&rate_lock);
    while (!rate_kick && get_clock_ns() < deadline_ns) {
        gint64 end = g_get_monotonic_time() + (deadline_ns - get_clock_ns()) / 1000;
        g_cond_wait_until(&rate_cond, &rate_lock, end);
    }
    rate_kick = false;
    g_mutex_unlock(&rate_lock);
}

typedef struct RateWindow {
    int64_t start_ns;
    uint64_t start_bytes;
    uint64_t start_pages;
    bool busy;                  /* the sender never ran out of pages in it */
} RateWindow;

static uint64_t ram_pages_sent(void)
{
    RAMState *rs = ram_state_get();

    return rs->zero_pages + rs->normal_pages;
}

/* Once per >= 100 ms window: bandwidth, switchover threshold, rates. */
static void migration_update_counters(MigrationState *s, RateWindow *w, QEMUFile *f)
{
    int64_t now = get_clock_ns();
    double ms = (now - w->start_ns) / 1e6;
    uint64_t bytes = qemu_file_transferred(f) - w->start_bytes;
    uint64_t remaining = qemu_savevm_pending(false);

    if (ms < BUFFER_DELAY_MS) {
        return;
    }
    /* An idle window says nothing about the link: keep the last estimate. */
    if (w->busy || s->bandwidth_bpms == 0) {
        if (w->busy) {
            s->bandwidth_bpms = bytes / ms;
        }
    }
    s->threshold_bytes = (s->bandwidth_bpms ?: DEFAULT_BANDWIDTH_BPMS) * migrate_downtime_limit();
    s->mbps = bytes * 8.0 / ms / 1000.0;
    s->pages_per_second = (ram_pages_sent() - w->start_pages) * 1000.0 / ms;
    if (s->bandwidth_bpms > 0 && bytes > 10000) {
        s->expected_downtime_ms = remaining / s->bandwidth_bpms;
    }
    w->start_ns = now;
    w->start_bytes = qemu_file_transferred(f);
    w->start_pages = ram_pages_sent();
    w->busy = true;
    qemu_file_reset_rate_window(f);
}

static void migration_update_dirty_rate(MigrationState *s, int64_t *period_start,
                                        uint64_t *period_pages)
{
    DirtyTracker *dt = &ram_state_get()->dt;
    int64_t now = get_clock_ns();

    if (now - *period_start >= 1000000000LL) {
        s->dirty_pages_rate = (dt->pages_merged - *period_pages) * 1e9 / (now - *period_start);
        *period_start = now;
        *period_pages = dt->pages_merged;
    }
}

/* Stop the guest and send everything that is left. BQL taken here. */
static bool migration_completion(MigrationState *s, QEMUFile *f, Error **errp)
{
    int64_t t_stop, t_dev;
    bool ok;

    bql_lock();
    s->downtime_start_ns = get_clock_ns();
    s->vm_was_running = runstate_is_running();
    global_state_store();
    vm_stop_force_state(RUN_STATE_FINISH_MIGRATE);
    t_stop = get_clock_ns();
    migrate_set_state(&s->state, MIGRATION_STATUS_ACTIVE, MIGRATION_STATUS_DEVICE);
    s->precopy_bytes = qemu_file_transferred(f);
    qemu_file_set_rate_limit(f, 0);
    ok = qemu_savevm_state_complete_live(f) == 0;
    t_dev = get_clock_ns();
    if (!ok) {
        error_setg(errp, "%s", qemu_file_error_msg(f));
    } else {
        ok = qemu_savevm_state_devices(f, errp);
    }
    s->downtime_bytes = qemu_file_transferred(f) - s->precopy_bytes;
    if (ok) {
        s->downtime_ms = (get_clock_ns() - s->downtime_start_ns) / 1000000;
        trace_migration_downtime((t_stop - s->downtime_start_ns) / 1000,
                                 (get_clock_ns() - t_dev) / 1000,
                                 (get_clock_ns() - s->downtime_start_ns) / 1000);
        runstate_set(RUN_STATE_POSTMIGRATE);
    }
    bql_unlock();
    return ok;
}

/* Decides whether to switch over now; syncs once more before saying yes. */
static bool migration_should_complete(MigrationState *s)
{
    uint64_t pending = qemu_savevm_pending(false);

    if (pending > s->threshold_bytes) {
        return false;
    }
    pending = qemu_savevm_pending(true);
    trace_migration_switchover(pending, s->threshold_bytes, s->bandwidth_bpms,
                               pending <= s->threshold_bytes ? "complete" : "iterate");
    return pending <= s->threshold_bytes;
}

static void migration_iterate_loop(MigrationState *s, QEMUFile *f, Error **errp)
{
    RateWindow w = { .start_ns = get_clock_ns(), .start_bytes = qemu_file_transferred(f),
                     .start_pages = ram_pages_sent(), .busy = true };
    int64_t period_start = get_clock_ns();
    uint64_t period_pages = 0;

    /*
     * No switchover before the link was measured: a threshold guessed from
     * max-bandwidth (often "unlimited") could stop the guest with gigabytes
     * still to send. The first busy 100 ms window sets it.
     */
    s->threshold_bytes = 0;
    s->expected_downtime_ms = migrate_downtime_limit();
    while (migration_state(s) == MIGRATION_STATUS_ACTIVE) {
        int ret;

        if (migration_should_complete(s)) {
            if (!migration_completion(s, f, errp)) {
                return;
            }
            s->result = MIGRATION_STATUS_COMPLETED;
            return;
        }
        ret = qemu_savevm_state_iterate(f);
        if (ret < 0 || qemu_file_get_error(f)) {
            error_setg(errp, "%s", qemu_file_error_msg(f));
            return;
        }
        if (ret == 1) {
            w.busy = false;
        }
        migration_update_dirty_rate(s, &period_start, &period_pages);
        migration_update_counters(s, &w, f);
        if (qemu_file_rate_limit(f) && migration_state(s) == MIGRATION_STATUS_ACTIVE) {
            migration_rate_wait(w.start_ns + BUFFER_DELAY_MS * 1000000LL);
            migration_update_counters(s, &w, f);
        }
    }
}


QEMUFile *migration_open_output(MigrationState *s, uint64_t rate_limit, Error **errp)
{
    QEMUFile *f;

    if (!mig_channel_connect(s->uri, &s->channel, errp)) {
        return NULL;
    }
    f = qemu_file_new_output(s->channel.fd, "migration stream");
    g_mutex_lock(&s->file_lock);
    s->to_dst = f;
    if (migration_state(s) == MIGRATION_STATUS_CANCELLING) {
        qemu_file_shutdown(f);
    }
    g_mutex_unlock(&s->file_lock);
    qemu_file_set_rate_limit(f, rate_limit);
    return f;
}

bool migration_setup_sections(MigrationState *s, QEMUFile *f, Error **errp)
{
    int ret;

    qemu_savevm_state_header(f);
    bql_lock();
    ret = qemu_savevm_state_setup(f, errp);
    bql_unlock();
    if (ret < 0 || qemu_file_get_error(f)) {
        if (errp && !*errp) {
            error_setg(errp, "%s", qemu_file_error_msg(f));
        }
        return false;
    }
    s->setup_ms = (get_clock_ns() - s->start_ns) / 1000000;
    migrate_set_state(&s->state, MIGRATION_STATUS_SETUP, MIGRATION_STATUS_ACTIVE);
    return true;
}

void migration_thread_end(MigrationState *s, Error *err)
{
    if (err) {
        if (migration_state(s) != MIGRATION_STATUS_CANCELLING) {
            error_prepend(&err, "migration failed: ");
            migration_fail(s, err);
        } else {
            error_free(err);
        }
    }
    s->total_ms = (get_clock_ns() - s->start_ns) / 1000000;
    qemu_bh_schedule_oneshot(migration_cleanup_bh, s);
}

static void *migration_thread(void *opaque)
{
    MigrationState *s = opaque;
    Error *err = NULL;
    QEMUFile *f = migration_open_output(s, migrate_max_bandwidth() / XFER_LIMIT_RATIO, &err);

    if (f && migration_setup_sections(s, f, &err)) {
        migration_iterate_loop(s, f, &err);
    }
    migration_thread_end(s, err);
    return NULL;
}

static void migration_child_reaped(GPid pid, gint status, gpointer data)
{
    g_spawn_close_pid(pid);
}

/* Main thread, BQL: join the thread, release everything, settle the state. */
static void migration_cleanup_bh(void *opaque)
{
    MigrationState *s = opaque;
    QEMUFile *f;
    int st;

    bql_unlock();
    qemu_thread_join(&s->thread);
    bql_lock();
    /* A snapshot that did not finish still has guest RAM write-protected. */
    snapshot_cleanup();
    qemu_savevm_state_cleanup();
    g_mutex_lock(&s->file_lock);
    f = s->to_dst;
    s->to_dst = NULL;
    g_mutex_unlock(&s->file_lock);
    if (f) {
        s->transferred_final = qemu_file_transferred(f);
        qemu_fclose(f);
    } else if (s->channel.fd >= 0 && s->channel.fd != -1) {
        /* Connected but the file was never made (cannot happen today). */
    }
    if (s->channel.child > 0) {
        /* Reap the exec: command without blocking the main loop. */
        g_child_watch_add(s->channel.child, migration_child_reaped, NULL);
        s->channel.child = 0;
    }
    st = migration_state(s);
    if (st == MIGRATION_STATUS_CANCELLING) {
        s->result = MIGRATION_STATUS_CANCELLED;
    } else if (s->result == MIGRATION_STATUS_NONE) {
        /* The thread ended without an outcome (cancelled before connecting...). */
        s->result = MIGRATION_STATUS_FAILED;
    }
    if (s->result != MIGRATION_STATUS_COMPLETED && runstate_check(RUN_STATE_FINISH_MIGRATE)) {
        /* The switchover started but did not finish: give the guest back. */
        if (s->vm_was_running) {
            vm_start();
        } else {
            runstate_set(RUN_STATE_PAUSED);
        }
    }
    if (s->result == MIGRATION_STATUS_FAILED && s->error) {
        error_report("%s", error_get_pretty(s->error));
    }
    s->thread_running = false;
    migrate_set_state(&s->state, st, s->result);
}

bool qmp_migrate(const char *uri, bool has_blk, bool blk, bool has_inc, bool inc,
                 bool has_detach, bool detach, bool has_resume, bool resume, Error **errp)
{
    MigrationState *s = &current_migration;
    int ret;

    if ((has_blk && blk) || (has_inc && inc)) {
        error_setg(errp, "Block migration is not supported by this build");
        return false;
    }
    if (has_resume && resume) {
        error_setg(errp, "Cannot resume: no paused postcopy migration (postcopy is not supported)");
        return false;
    }
    if (migration_is_running()) {
        error_setg(errp, "There's a migration process in progress");
        return false;
    }
    if (runstate_check(RUN_STATE_INMIGRATE)) {
        error_setg(errp, "Guest is waiting for an incoming migration");
        return false;
    }
    if (runstate_check(RUN_STATE_INTERNAL_ERROR) || runstate_check(RUN_STATE_SHUTDOWN)) {
        error_setg(errp, "Cannot migrate a VM in state '%s'", RunState_str(runstate_get()));
        return false;
    }
    if (!mig_channel_check_uri(uri, errp)) {
        return false;
    }
    g_free(s->uri);
    s->uri = g_strdup(uri);
    g_clear_pointer(&s->error, error_free);
    s->channel = (MigChannel) { .fd = -1 };
    s->start_ns = get_clock_ns();
    s->setup_ms = s->total_ms = s->downtime_ms = s->expected_downtime_ms = 0;
    s->bandwidth_bpms = 0;
    s->mbps = 0;
    s->pages_per_second = s->dirty_pages_rate = 0;
    s->precopy_bytes = s->downtime_bytes = s->transferred_final = 0;
    s->vm_was_running = runstate_is_running();
    s->result = MIGRATION_STATUS_NONE;
    __atomic_store_n(&s->state, MIGRATION_STATUS_NONE, __ATOMIC_SEQ_CST);
    migrate_set_state(&s->state, MIGRATION_STATUS_NONE, MIGRATION_STATUS_SETUP);
    s->thread_running = true;
    ret = qemu_thread_create(&s->thread, "mig/src",
                             migrate_background_snapshot() ? bg_snapshot_thread : migration_thread, s);
    if (ret < 0) {
        s->thread_running = false;
        migrate_set_state(&s->state, MIGRATION_STATUS_SETUP, MIGRATION_STATUS_FAILED);
        error_setg_errno(errp, -ret, "cannot create the migration thread");
        return false;
    }
    return true;
}

bool qmp_migrate_cancel(Error **errp)
{
    MigrationState *s = &current_migration;
    int st = migration_state(s);

    if (st != MIGRATION_STATUS_SETUP && st != MIGRATION_STATUS_ACTIVE &&
        st != MIGRATION_STATUS_DEVICE) {
        return true;        /* QEMU: succeeds with nothing to cancel */
    }
    migrate_set_state(&s->state, st, MIGRATION_STATUS_CANCELLING);
    g_mutex_lock(&s->file_lock);
    if (s->to_dst) {
        /* Blocked writes fail at once; the thread then sees 'cancelling'. */
        qemu_file_shutdown(s->to_dst);
    }
    g_mutex_unlock(&s->file_lock);
    migration_rate_limit_changed();
    snapshot_cancel_notify();
    return true;
}

static MigrationStats *migration_ram_stats(MigrationState *s, int st)
{
    RAMState *rs = ram_state_get();
    MigrationStats *ram = g_new0(MigrationStats, 1);
    uint64_t transferred;

    g_mutex_lock(&s->file_lock);
    transferred = s->to_dst ? qemu_file_transferred(s->to_dst) : s->transferred_final;
    g_mutex_unlock(&s->file_lock);
    ram->transferred = transferred;
    ram->remaining = st == MIGRATION_STATUS_COMPLETED ? 0 : rs->dt.dirty_pages * TARGET_PAGE_SIZE;
    ram->total = ram_blocks_total_bytes();
    ram->duplicate = rs->zero_pages;
    ram->normal = rs->normal_pages;
    ram->normal_bytes = rs->normal_pages * TARGET_PAGE_SIZE;
    ram->dirty_pages_rate = s->dirty_pages_rate;
    ram->dirty_sync_count = rs->dt.syncs;
    ram->page_size = TARGET_PAGE_SIZE;
    ram->pages_per_second = s->pages_per_second;
    if (st == MIGRATION_STATUS_COMPLETED) {
        int64_t ms = s->total_ms - s->setup_ms;
        ram->mbps = ms > 0 ? transferred * 8.0 / ms / 1000.0 : 0;
        ram->precopy_bytes = s->precopy_bytes;
        ram->downtime_bytes = s->downtime_bytes;
    } else {
        ram->mbps = s->mbps;
        ram->precopy_bytes = transferred;
    }
    return ram;
}

static XDirtyLogInfo *migration_dirty_log_info(void)
{
    DirtyTracker *dt = &ram_state_get()->dt;
    XDirtyLogInfo *x = g_new0(XDirtyLogInfo, 1);

    x->mode = g_strdup(kvm_state ? kvm_dirty_log_mode_name(kvm_state) : "none");
    x->syncs = dt->syncs;
    x->sync_time_us_total = dt->sync_ns_total / 1000;
    x->sync_time_us_max = dt->sync_ns_max / 1000;
    x->pages_merged = dt->pages_merged;
    x->scan_time_us_total = ram_state_get()->scan_ns / 1000;
    if (kvm_state) {
        x->clears = kvm_state->dirty_stats.clears;
        x->clear_time_us_total = kvm_state->dirty_stats.clear_ns / 1000;
        x->ring_harvests = kvm_state->dirty_stats.harvests;
    }
    x->clear_bitmap_shift = dt->clear_log ? dt->clear_shift : migrate_clear_bitmap_shift();
    return x;
}

MigrationInfo *qmp_query_migrate(Error **errp)
{
    MigrationState *s = &current_migration;
    MigrationInfo *info = g_new0(MigrationInfo, 1);
    int st = migration_state(s);

    if (st == MIGRATION_STATUS_NONE) {
        return migration_incoming_info(info);
    }
    info->has_status = true;
    info->status = st;
    info->ram = migration_ram_stats(s, st);
    info->has_total_time = true;
    info->total_time = s->total_ms && !migration_is_running() ? s->total_ms
                       : (get_clock_ns() - s->start_ns) / 1000000;
    if (st != MIGRATION_STATUS_SETUP) {
        info->has_setup_time = true;
        info->setup_time = s->setup_ms;
    }
    if (st == MIGRATION_STATUS_COMPLETED) {
        info->has_downtime = true;
        info->downtime = s->downtime_ms;
    } else if (st == MIGRATION_STATUS_ACTIVE || st == MIGRATION_STATUS_DEVICE) {
        info->has_expected_downtime = true;
        info->expected_downtime = s->expected_downtime_ms;
    }
    if (st == MIGRATION_STATUS_FAILED && s->error) {
        info->error_desc = g_strdup(error_get_pretty(s->error));
    }
    info->x_dirty_log = migration_dirty_log_info();
    snapshot_fill_info(info);
    return info;
}

void migration_init(const char *machine_type)
{
    savevm_set_machine_type(machine_type);
    global_state_init();
    ram_mig_init();
}

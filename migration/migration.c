/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Outgoing migration: the state machine, the one "mig/src" thread skeleton
 * every outgoing mode runs in (outgoing.h), and the QMP commands that
 * start, cancel, tune and observe it.
 *
 *   none -> setup -> active -> [device] -> completed
 *             |        |          |
 *             +--------+----------+--> failed | cancelling -> cancelled
 *
 * The thread runs without the BQL while it iterates RAM; the setup
 * sections and the modes' freeze/switchover take it. Whatever happens,
 * the source guest keeps running unless the migration completed.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "monitor/monitor.h"
#include "qapi/qapi-commands.h"
#include "qemu/main-loop.h"
#include "system/runstate.h"
#include "migration/misc.h"
#include "migration/qemu-file.h"
#include "converge.h"
#include "global-state.h"
#include "incoming.h"
#include "migration.h"
#include "lazy-restore.h"
#include "mapped-ram-out.h"
#include "multifd-send.h"
#include "options.h"
#include "outgoing.h"
#include "ram.h"
#include "savevm.h"
#include "status.h"

#define BUFFER_DELAY_MS 100         /* rate-limit and bandwidth window */
#define XFER_LIMIT_RATIO (1000 / BUFFER_DELAY_MS)
/* Switchover estimate before any busy window was measured, if unlimited. */
#define DEFAULT_BANDWIDTH_BPMS (1024.0 * 1024)

/* The ways of sending RAM; qmp_migrate picks the first row its capabilities select. */
static const MigrationOutMode *const outgoing_modes[] = {
    &snapshot_mode,
    &postcopy_mode,
    &precopy_mode,          /* selects itself: the default, keep it last */
};

static MigrationState current_migration = { .state = MIGRATION_STATUS_NONE };

/* Wakes mig/src from its pacing sleep: cancel, or max-bandwidth changed. */
static GMutex rate_lock;
static GCond rate_cond;
static bool rate_kick;              /* rate_lock */

static void migration_cleanup_bh(void *opaque);

bool migration_is_running(void)
{
    return migration_status_is_running(migrate_get_state(&current_migration.state)) ||
           current_migration.thread_running;
}

/*
 * Like QEMU: stop and cont are the user's during precopy (the switchover
 * keeps whatever state it finds); only the switchover itself, which stopped
 * the guest and will restart it if it fails, and postcopy, whose guest may
 * run on the destination, refuse cont. BQL.
 */
bool migration_allows_cont(Error **errp)
{
    int st = migrate_get_state(&current_migration.state);

    if (!migration_guest_ram_usable(errp)) {
        return false;
    }

    if (!runstate_check(RUN_STATE_FINISH_MIGRATE)) {
        return true;
    }
    if (st == MIGRATION_STATUS_POSTCOPY_ACTIVE || st == MIGRATION_STATUS_POSTCOPY_PAUSED ||
        st == MIGRATION_STATUS_POSTCOPY_RECOVER) {
        error_setg(errp, "There's a migration process in progress");
    } else {
        error_setg(errp, "Migration is not finalized yet");
    }
    return false;
}

/*
 * Records that the migration failed. The state moves to failed only in the
 * cleanup bottom half, once the thread is gone and the guest is running
 * again, so a client that sees "failed" can migrate again at once.
 */
static void migration_fail(MigrationState *s, Error *err)
{
    BQL_LOCK_GUARD();

    if (!s->error) {
        s->error = err;
    } else {
        error_free(err);
    }
    s->result = MIGRATION_STATUS_FAILED;
}

/* max-bandwidth changed or cancel: apply the limit and end the pacing sleep. */
static void migration_rate_limit_changed(MigrationState *s)
{
    g_mutex_lock(&s->file_lock);
    if (s->to_dst && migrate_get_state(&s->state) == MIGRATION_STATUS_ACTIVE) {
        qemu_file_set_rate_limit(s->to_dst, migrate_max_bandwidth() / XFER_LIMIT_RATIO);
    }
    g_mutex_unlock(&s->file_lock);
    g_mutex_lock(&rate_lock);
    rate_kick = true;
    g_cond_broadcast(&rate_cond);
    g_mutex_unlock(&rate_lock);
}

/* Sleeps until @deadline_ns unless cancel or a bandwidth change wakes us; returns ns slept. */
static int64_t migration_rate_wait(int64_t deadline_ns)
{
    int64_t t0 = get_clock_ns();

    g_mutex_lock(&rate_lock);
    while (!rate_kick && get_clock_ns() < deadline_ns) {
        gint64 end = g_get_monotonic_time() + (deadline_ns - get_clock_ns()) / 1000;
        g_cond_wait_until(&rate_cond, &rate_lock, end);
    }
    rate_kick = false;
    g_mutex_unlock(&rate_lock);
    return get_clock_ns() - t0;
}

typedef struct RateWindow {
    int64_t start_ns;
    uint64_t start_bytes;
    uint64_t start_pages;
    uint64_t start_data_pages;
    int64_t waited_ns;          /* slept in it for max-bandwidth */
    bool busy;                  /* the sender never ran out of pages in it */
} RateWindow;

/*
 * What a switchover now would take: the final sync, then @remaining bytes
 * sent without max-bandwidth's limit (QEMU divides by the limited rate,
 * which overstates a throttled migration's downtime many times). The
 * user's avail-switchover-bandwidth wins. 0 before the link was measured.
 */
double migration_expected_downtime_ms(const MigrationState *s, uint64_t remaining)
{
    double switchover_bpms = migrate_avail_switchover_bandwidth()
                             ? migrate_avail_switchover_bandwidth() / 1000.0 : s->bandwidth_bpms;
    double rate = migrate_avail_switchover_bandwidth() || !s->unlimited_bpms
                  ? switchover_bpms : MAX(s->unlimited_bpms, switchover_bpms);

    return rate > 0 ? s->sync_cost_ns / 1e6 + remaining / rate : 0;
}

/* Once per >= 100 ms window: bandwidth, switchover threshold, rates. */
static void migration_update_counters(MigrationState *s, RateWindow *w, QEMUFile *f)
{
    int64_t now = get_clock_ns();
    double ms = (now - w->start_ns) / 1e6;
    uint64_t bytes = qemu_file_transferred(f) - w->start_bytes;
    uint64_t remaining = qemu_savevm_pending(false);
    /*
     * multifd-compression drains the remaining bytes faster than they fill
     * the link: the switchover threshold needs the faster rate, or a
     * compressible guest would look as if it never converged. Not for
     * XBZRLE: measured, the page rate put its switchover later in a round
     * and the downtime past its limit (108 ms for 100), where the byte
     * rate met the targets.
     */
    bool compressed = migrate_multifd() &&
                      migrate_multifd_compression() != MULTIFD_COMPRESSION_NONE;
    uint64_t drained = !compressed ? bytes
                       : MAX(bytes, (ram_data_pages_sent() - w->start_data_pages) *
                                    TARGET_PAGE_SIZE);
    double switchover_bpms, threshold;

    if (ms < BUFFER_DELAY_MS) {
        return;
    }
    /* An idle window says nothing about the link: keep the last estimate. */
    if (w->busy) {
        double sending_ms = ms - w->waited_ns / 1e6;

        s->bandwidth_bpms = drained / ms;
        /* Too short a time sending (a tiny max-bandwidth) tells nothing. */
        if (sending_ms >= BUFFER_DELAY_MS / 10) {
            /* In the remaining count's unit: pages (a zero page is 4 KiB of it). */
            s->unlimited_bpms = (ram_pages_sent() - w->start_pages) * TARGET_PAGE_SIZE /
                                sending_ms;
        }
    }
    /* avail-switchover-bandwidth: what the user says the switchover may use (QEMU 8.2). */
    switchover_bpms = migrate_avail_switchover_bandwidth() ? migrate_avail_switchover_bandwidth() / 1000.0
                      : s->bandwidth_bpms;
    /*
     * avail-switchover-bandwidth may be anything up to UINT64_MAX: the
     * product can pass 2^64, whose conversion to an integer is undefined.
     */
    threshold = (switchover_bpms ?: DEFAULT_BANDWIDTH_BPMS) * migrate_downtime_limit();
    s->threshold_bytes = threshold < 0x1p64 ? (uint64_t)threshold : UINT64_MAX;
    s->mbps = bytes * 8.0 / ms / 1000.0;
    s->pages_per_second = (ram_pages_sent() - w->start_pages) * 1000.0 / ms;
    if (switchover_bpms > 0 && bytes > 10000) {
        s->expected_downtime_ms = migration_expected_downtime_ms(s, remaining);
    }
    converge_tick(s->bandwidth_bpms);
    w->start_ns = now;
    w->start_bytes = qemu_file_transferred(f);
    w->start_pages = ram_pages_sent();
    w->start_data_pages = ram_data_pages_sent();
    w->waited_ns = 0;
    w->busy = true;
    qemu_file_reset_rate_window(f);
}

/* Iterate, paced to max-bandwidth, until the mode switches over (or we fail or cancel). */
static void migration_iterate(MigrationState *s, QEMUFile *f, Error **errp)
{
    RateWindow w = { .start_ns = get_clock_ns(), .start_bytes = qemu_file_transferred(f),
                     .start_pages = ram_pages_sent(), .start_data_pages = ram_data_pages_sent(),
                     .busy = true };
    bool all_sent = false;

    /*
     * No switchover before the link was measured: a threshold guessed from
     * max-bandwidth (often "unlimited") could stop the guest with gigabytes
     * still to send. The first busy 100 ms window sets it.
     */
    s->threshold_bytes = 0;
    s->expected_downtime_ms = migrate_downtime_limit();
    converge_start(qemu_file_transferred(f));
    while (migrate_get_state(&s->state) == MIGRATION_STATUS_ACTIVE) {
        int ret;

        if (s->mode->switchover_ready(s, all_sent)) {
            /* A mapped-ram file is complete once its pages are on disk and its trailer written. */
            if (s->mode->complete(s, f, errp) &&
                (!mapped_ram_out() || mapped_ram_out_finish(mapped_ram_out(), f, errp))) {
                bql_lock();
                if (!s->committed) {
                    /* The trailer says "complete": only now is the file the guest. */
                    migration_commit_locked(s);
                }
                bql_unlock();
                s->result = MIGRATION_STATUS_COMPLETED;
            }
            return;
        }
        ret = qemu_savevm_state_iterate(f);
        if (ret < 0 || qemu_file_get_error(f)) {
            error_setg(errp, "%s", qemu_file_error_msg(f));
            return;
        }
        all_sent = ret == 1;
        if (all_sent) {
            w.busy = false;
        }
        migration_update_counters(s, &w, f);
        if (qemu_file_rate_limit(f) && migrate_get_state(&s->state) == MIGRATION_STATUS_ACTIVE) {
            w.waited_ns += migration_rate_wait(w.start_ns + BUFFER_DELAY_MS * 1000000LL);
            migration_update_counters(s, &w, f);
        }
    }
}

/* Connects (this may block) and makes the stream; cancel can shut it down from now on. */
static QEMUFile *migration_open_output(MigrationState *s, Error **errp)
{
    bool limit = !s->mode->bandwidth_only_if_set || migrate_max_bandwidth_user_set();
    Channel *ch = mig_channel_connect(s->uri, errp);
    QEMUFile *f;

    if (!ch) {
        return NULL;
    }
    s->channel = channel_ref(ch);
    f = qemu_file_new_output(ch, "migration stream");
    g_mutex_lock(&s->file_lock);
    s->to_dst = f;
    if (migrate_get_state(&s->state) == MIGRATION_STATUS_CANCELLING) {
        qemu_file_shutdown(f);
    }
    g_mutex_unlock(&s->file_lock);
    qemu_file_set_rate_limit(f, limit ? migrate_max_bandwidth() / XFER_LIMIT_RATIO : 0);
    return f;
}

/* Header, configuration and START sections, then setup -> active. */
static bool migration_setup_sections(MigrationState *s, QEMUFile *f, Error **errp)
{
    int ret;

    qemu_savevm_state_header(f);
    if (s->mode->stream_start && !s->mode->stream_start(s, f, errp)) {
        return false;
    }
    bql_lock();
    ret = qemu_savevm_state_setup(f, errp);
    bql_unlock();
    if (ret < 0 || qemu_file_get_error(f)) {
        if (!*errp) {
            error_setg(errp, "%s", qemu_file_error_msg(f));
        }
        return false;
    }
    s->setup_ms = (get_clock_ns() - s->start_ns) / 1000000;
    migrate_set_state(&s->state, MIGRATION_STATUS_SETUP, MIGRATION_STATUS_ACTIVE);
    return true;
}

static void *migration_thread(void *opaque)
{
    MigrationState *s = opaque;
    Error *err = NULL;
    QEMUFile *f = migration_open_output(s, &err);

    /*
     * The channels connect after the main stream, as QEMU's do; a
     * mapped-ram file's writers open it by its path instead.
     */
    bool connected = f && (migrate_mapped_ram() ? mapped_ram_out_open(s->uri, f, &err)
                           : s->resuming || !migrate_multifd() ||
                             multifd_send_setup(s->uri, &err));

    if (connected && s->resuming) {
        if (s->mode->resume(s, f, &err)) {
            s->result = MIGRATION_STATUS_COMPLETED;
        }
    } else if (connected && migration_setup_sections(s, f, &err) &&
               (!s->mode->setup || s->mode->setup(s, f, &err))) {
        migration_iterate(s, f, &err);
    }
    if (err) {
        if (f && (qemu_file_get_error(f) == -EPIPE || qemu_file_get_error(f) == -ECONNRESET)) {
            /*
             * The peer went away: a destination that refused the stream
             * says why only on its own side (there is no return path yet).
             */
            error_prepend(&err, "the destination closed the connection: ");
        }
        if (s->guest_moved) {
            error_prepend(&err, "postcopy failed after the switchover; the guest runs on the "
                          "destination with part of its memory still here, so this side stays "
                          "paused (postcopy-paused): ");
            migration_fail(s, err);
        } else if (migrate_get_state(&s->state) != MIGRATION_STATUS_CANCELLING) {
            error_prepend(&err, "migration failed: ");
            migration_fail(s, err);
        } else {
            error_free(err);
        }
    }
    /* Whatever the outcome, the guest (here or there) runs at full speed again. */
    converge_stop();
    /* query-migrate may read it meanwhile. */
    __atomic_store_n(&s->total_ms, (get_clock_ns() - s->start_ns) / 1000000, __ATOMIC_RELAXED);
    qemu_bh_schedule_oneshot(migration_cleanup_bh, s);
    return NULL;
}

/* The switchover's phases of a completed precopy, or NULL. */
static XDowntimeInfo *migration_downtime_info(const MigrationState *s)
{
    XDowntimeInfo *d;

    if (!s->downtime_phases_valid) {
        return NULL;
    }
    d = g_new0(XDowntimeInfo, 1);
    d->stop_vcpus = s->downtime_stop_ns / 1000;
    d->final_sync = s->downtime_sync_ns / 1000;
    d->last_ram = s->downtime_ram_ns / 1000;
    d->device_state = s->downtime_dev_ns / 1000;
    d->total = s->downtime_total_ns / 1000;
    d->expected = s->downtime_expected_us;
    d->unattributed = d->total - MIN(d->total, d->stop_vcpus + d->final_sync + d->last_ram +
                                                d->device_state);
    return d;
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
    if (s->mode->cleanup) {
        s->mode->cleanup(s);
    }
    /* Its writers may still read the page source's buffers: they stop first. */
    mapped_ram_out_close();
    qemu_savevm_state_cleanup();
    multifd_send_cleanup();
    g_mutex_lock(&s->file_lock);
    f = s->to_dst;
    s->to_dst = NULL;
    g_mutex_unlock(&s->file_lock);
    if (f) {
        s->transferred_final = qemu_file_transferred(f);
        qemu_fclose(f);
    }
    /* The last reference closes the connection (and reaps an exec: command later). */
    channel_unref(s->channel);
    s->channel = NULL;
    st = migrate_get_state(&s->state);
    if (st == MIGRATION_STATUS_CANCELLING && !s->committed) {
        s->result = MIGRATION_STATUS_CANCELLED;
    } else if (s->result == MIGRATION_STATUS_NONE) {
        /* The thread ended without an outcome (cancelled before connecting...). */
        s->result = MIGRATION_STATUS_FAILED;
    }
    if (s->guest_moved && s->result != MIGRATION_STATUS_COMPLETED) {
        /* Never both sides running: this one waits, stopped, for a recovery. */
        s->result = MIGRATION_STATUS_POSTCOPY_PAUSED;
        error_report("%s", error_get_pretty(s->error));
    } else if (s->result != MIGRATION_STATUS_COMPLETED &&
               runstate_check(RUN_STATE_FINISH_MIGRATE)) {
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
    if (s->result == MIGRATION_STATUS_COMPLETED) {
        g_autoptr(XDowntimeInfo) d = migration_downtime_info(s);

        migrate_set_state_detail(&s->state, st, s->result, d, NULL);
    } else {
        migrate_set_state(&s->state, st, s->result);
    }
}

static const MigrationOutMode *migration_select_mode(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(outgoing_modes); i++) {
        if (outgoing_modes[i]->selected()) {
            return outgoing_modes[i];
        }
    }
    g_assert_not_reached();     /* precopy_mode always selects itself */
}

static bool migration_start_thread(MigrationState *s, int from, Error **errp)
{
    int ret;

    s->thread_running = true;
    ret = qemu_thread_create(&s->thread, "mig/src", migration_thread, s);
    if (ret < 0) {
        s->thread_running = false;
        migrate_set_state(&s->state, from, MIGRATION_STATUS_FAILED);
        error_setg_errno(errp, -ret, "cannot create the migration thread");
        return false;
    }
    return true;
}

/* migrate resume=true: a paused postcopy goes on over a new connection to @uri. */
static bool migration_resume(MigrationState *s, const char *uri, Error **errp)
{
    if (migrate_get_state(&s->state) != MIGRATION_STATUS_POSTCOPY_PAUSED || s->thread_running) {
        error_setg(errp, "Cannot resume if there is no paused migration");
        return false;
    }
    if (!g_str_has_prefix(uri, "tcp:") && !g_str_has_prefix(uri, "unix:")) {
        error_setg(errp, "postcopy recovery needs a tcp: or unix: URI (a return path), not '%s'",
                   uri);
        return false;
    }
    assert(s->mode->resume);
    g_free(s->uri);
    s->uri = g_strdup(uri);
    g_clear_pointer(&s->error, error_free);
    s->channel = NULL;
    s->transferred_before += s->transferred_final;
    s->transferred_final = 0;
    s->resuming = true;
    s->result = MIGRATION_STATUS_NONE;
    migrate_set_state(&s->state, MIGRATION_STATUS_POSTCOPY_PAUSED,
                      MIGRATION_STATUS_POSTCOPY_RECOVER);
    return migration_start_thread(s, MIGRATION_STATUS_POSTCOPY_RECOVER, errp);
}

bool qmp_migrate(const char *uri, bool has_blk, bool blk, bool has_inc, bool inc,
                 bool has_detach, bool detach, bool has_resume, bool resume, Error **errp)
{
    MigrationState *s = &current_migration;
    g_autofree char *fd_uri = NULL;
    bool named_fd;

    if ((has_blk && blk) || (has_inc && inc)) {
        error_setg(errp, "Block migration is not supported by this build");
        return false;
    }
    if (has_resume && resume) {
        return migration_resume(s, uri, errp);
    }
    if (migration_is_running()) {
        error_setg(errp, "There's a migration process in progress");
        return false;
    }
    if (runstate_check(RUN_STATE_INMIGRATE)) {
        error_setg(errp, "Guest is waiting for an incoming migration");
        return false;
    }
    /* A failed lazy restore: some pages will never come, and a read of one waits forever. */
    if (!migration_guest_ram_usable(errp)) {
        return false;
    }
    if (lazy_restore_in_progress()) {
        /* Its RAM is registered with the restore's userfaultfd: a snapshot could not protect it. */
        error_setg(errp, "Guest RAM is still arriving from a lazy restore (x-lazy-restore); "
                   "migrate once query-migrate says it is resident");
        return false;
    }
    if (runstate_check(RUN_STATE_INTERNAL_ERROR) || runstate_check(RUN_STATE_SHUTDOWN)) {
        error_setg(errp, "Cannot migrate a VM in state '%s'", RunState_str(runstate_get()));
        return false;
    }
    /* fd:NAME (a getfd name, as libvirt's virsh save sends) is taken below, once all is checked. */
    named_fd = g_str_has_prefix(uri, "fd:") && uri[3] && !g_ascii_isdigit(uri[3]);
    if (!named_fd && !mig_channel_check_uri(uri, errp)) {
        return false;
    }
    if (migrate_multifd() && !g_str_has_prefix(uri, "tcp:") && !g_str_has_prefix(uri, "unix:") &&
        !(migrate_mapped_ram() && g_str_has_prefix(uri, "file:"))) {
        error_setg(errp, "multifd needs a tcp: or unix: URI (or a file: one with mapped-ram), "
                   "not '%s'", uri);
        return false;
    }
    if (!mapped_ram_check_uri(uri, errp)) {
        return false;
    }
    if (migrate_mapped_ram() && migrate_multifd() &&
        migrate_multifd_compression() != MULTIFD_COMPRESSION_NONE) {
        error_setg(errp, "Mapped-ram migration is incompatible with multifd compression");
        return false;
    }
    if (named_fd) {
        /* From here the migration owns the fd (the channel closes it), as in QEMU. */
        int fd = monitor_fd_take(uri + 3, errp);

        if (fd < 0) {
            return false;
        }
        uri = fd_uri = g_strdup_printf("fd:%d", fd);
    }
    g_free(s->uri);
    s->uri = g_strdup(uri);
    g_clear_pointer(&s->error, error_free);
    s->channel = NULL;
    s->start_ns = get_clock_ns();
    s->setup_ms = s->total_ms = s->downtime_ms = s->expected_downtime_ms = 0;
    s->downtime_phases_valid = false;
    s->bandwidth_bpms = s->unlimited_bpms = 0;
    s->sync_cost_ns = 0;
    s->mbps = 0;
    s->pages_per_second = 0;
    s->precopy_bytes = s->downtime_bytes = s->transferred_final = s->transferred_before = 0;
    s->resuming = false;
    s->vm_was_running = runstate_is_running();
    s->guest_moved = false;
    s->rp_use = MIG_RP_NONE;
    s->committed = false;
    __atomic_store_n(&s->start_postcopy, false, __ATOMIC_RELEASE);
    s->result = MIGRATION_STATUS_NONE;
    s->mode = migration_select_mode();
    if (s->mode->init) {
        s->mode->init(s);
    }
    ram_select_source(s->mode->ram_source);
    __atomic_store_n(&s->state, MIGRATION_STATUS_NONE, __ATOMIC_SEQ_CST);
    migrate_set_state(&s->state, MIGRATION_STATUS_NONE, MIGRATION_STATUS_SETUP);
    if (!migration_start_thread(s, MIGRATION_STATUS_SETUP, errp)) {
        if (named_fd) {
            close(atoi(uri + 3));   /* ours since getfd's table gave it up; no thread took it */
        }
        return false;
    }
    return true;
}

bool qmp_migrate_start_postcopy(Error **errp)
{
    MigrationState *s = &current_migration;
    int st = migrate_get_state(&s->state);

    if (!migrate_cap(MIGRATION_CAPABILITY_POSTCOPY_RAM)) {
        error_setg(errp, "Enable postcopy with migrate_set_capability before the start of "
                   "migration");
        return false;
    }
    if (st == MIGRATION_STATUS_NONE) {
        error_setg(errp, "Postcopy must be started after migration has been started");
        return false;
    }
    /* A migration that already switched over, or ended: nothing to do, as in QEMU. */
    __atomic_store_n(&s->start_postcopy, true, __ATOMIC_RELEASE);
    migration_rate_limit_changed(s);
    return true;
}

bool qmp_migrate_cancel(Error **errp)
{
    MigrationState *s = &current_migration;
    int st = migrate_get_state(&s->state);

    if (st == MIGRATION_STATUS_POSTCOPY_ACTIVE || st == MIGRATION_STATUS_POSTCOPY_PAUSED ||
        st == MIGRATION_STATUS_POSTCOPY_RECOVER || migration_incoming_in_postcopy()) {
        /* QEMU 10's refusal: half the guest's memory is on each side. */
        error_setg(errp, "Postcopy migration in progress, cannot cancel.");
        return false;
    }

    if (s->committed && st == MIGRATION_STATUS_DEVICE) {
        /*
         * Past the point of no return (the go is out, or the guest is the
         * destination's): as QEMU's cancel of a completed migration, a
         * no-op. Turning it into "cancelled" would invite a cont here while
         * the destination runs the same guest.
         */
        return true;
    }
    if (st != MIGRATION_STATUS_SETUP && st != MIGRATION_STATUS_ACTIVE &&
        st != MIGRATION_STATUS_DEVICE) {
        /* A destination: end a load that may never finish (a stalled source). */
        migration_incoming_cancel();
        return true;        /* QEMU: succeeds with nothing to cancel */
    }
    migrate_set_state(&s->state, st, MIGRATION_STATUS_CANCELLING);
    g_mutex_lock(&s->file_lock);
    if (s->to_dst) {
        /* Blocked writes fail at once; the thread then sees 'cancelling'. */
        qemu_file_shutdown(s->to_dst);
    }
    g_mutex_unlock(&s->file_lock);
    multifd_send_shutdown();
    migration_rate_limit_changed(s);
    return true;
}

bool qmp_migrate_set_capabilities(const MigrationCapabilityStatusList *capabilities, Error **errp)
{
    const bool *caps = migrate_caps();
    bool new_caps[MIGRATION_CAPABILITY__MAX];
    bool return_path_named = false;

    if (migration_is_running()) {
        error_setg(errp, "There's a migration process in progress");
        return false;
    }
    memcpy(new_caps, caps, sizeof(new_caps));
    for (const MigrationCapabilityStatusList *l = capabilities; l; l = l->next) {
        new_caps[l->value->capability] = l->value->state;
        return_path_named |= l->value->capability == MIGRATION_CAPABILITY_RETURN_PATH;
    }
    if (!migrate_caps_check_compat(new_caps, errp)) {
        return false;
    }
    for (size_t i = 0; i < ARRAY_SIZE(outgoing_modes); i++) {
        if (outgoing_modes[i]->check_caps &&
            !outgoing_modes[i]->check_caps(caps, new_caps, errp)) {
            return false;
        }
    }
    if (!migrate_caps_check_supported(caps, new_caps, errp)) {
        return false;
    }
    migrate_caps_set(new_caps, return_path_named);
    return true;
}

bool qmp_migrate_set_parameters(const MigrationParameters *p, Error **errp)
{
    if (!migrate_params_check(p, errp)) {
        return false;
    }
    if (p->has_x_clear_bitmap_shift && migration_is_running()) {
        error_setg(errp, "x-clear-bitmap-shift cannot change while a migration runs");
        return false;
    }
    migrate_params_apply(p);
    if (p->has_max_bandwidth) {
        migration_rate_limit_changed(&current_migration);
    }
    return true;
}

/* query-migrate's RAM counters of the outgoing side. BQL. */
static MigrationStats *migration_ram_stats(MigrationState *s, int st)
{
    MigrationStats *ram = g_new0(MigrationStats, 1);
    uint64_t transferred;

    g_mutex_lock(&s->file_lock);
    transferred = s->transferred_before +
                  (s->to_dst ? qemu_file_transferred(s->to_dst) : s->transferred_final);
    g_mutex_unlock(&s->file_lock);
    ram->transferred = transferred;
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

/* The sum of the migration's, the RAM section's (and its source's) and the mode's part. */
MigrationInfo *qmp_query_migrate(Error **errp)
{
    MigrationState *s = &current_migration;
    MigrationInfo *info = g_new0(MigrationInfo, 1);
    int st = migrate_get_state(&s->state);
    int64_t total_ms;

    if (st == MIGRATION_STATUS_NONE) {
        return migration_incoming_info(info);
    }
    info->has_status = true;
    info->status = st;
    info->ram = migration_ram_stats(s, st);
    ram_fill_info(info);
    if (st == MIGRATION_STATUS_COMPLETED) {
        info->ram->remaining = 0;
    }
    info->has_total_time = true;
    total_ms = __atomic_load_n(&s->total_ms, __ATOMIC_RELAXED);
    info->total_time = total_ms && !migration_is_running() ? total_ms
                       : (get_clock_ns() - s->start_ns) / 1000000;
    if (st != MIGRATION_STATUS_SETUP) {
        info->has_setup_time = true;
        info->setup_time = s->setup_ms;
    }
    if (st == MIGRATION_STATUS_COMPLETED) {
        info->has_downtime = true;
        info->downtime = s->downtime_ms;
        info->x_downtime = migration_downtime_info(s);
    } else if (st == MIGRATION_STATUS_ACTIVE || st == MIGRATION_STATUS_DEVICE) {
        info->has_expected_downtime = true;
        info->expected_downtime = s->expected_downtime_ms;
    }
    if ((st == MIGRATION_STATUS_FAILED || st == MIGRATION_STATUS_POSTCOPY_PAUSED) && s->error) {
        info->error_desc = g_strdup(error_get_pretty(s->error));
    }
    converge_fill_info(info);
    if (s->mode->fill_info) {
        s->mode->fill_info(s, info);
    }
    return info;
}

void migration_init(const char *machine_type)
{
    savevm_set_machine_type(machine_type);
    global_state_init();
    ram_mig_init();
}

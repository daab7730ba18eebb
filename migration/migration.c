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
#include "migration/dirty/converge.h"
#include "migration/stream/global-state.h"
#include "migration/incoming/incoming.h"
#include "migration.h"
#include "migration/incoming/lazy-restore.h"
#include "migration/core/channel-list.h"
#include "migration/core/options.h"
#include "migration/outgoing/outgoing.h"
#include "migration/outgoing/pacing.h"
#include "migration/transport/ram.h"
#include "migration/transport/tls.h"
#include "migration/stream/savevm.h"
#include "migration/core/status.h"

/* The ways of sending RAM; qmp_migrate picks the first row its capabilities select. */
static const MigrationOutMode *const outgoing_modes[] = {
    &cpr_transfer_mode,
    &cpr_exec_mode,
    &snapshot_mode,
    &postcopy_mode,
    &precopy_mode,          /* selects itself: the default, keep it last */
};

/* The process's one outgoing migration; outgoing.h says who writes each field. */
static MigrationState current_migration = { .state = MIGRATION_STATUS_NONE };

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
bool migration_guest_owned_here(Error **errp)
{
    const MigrationState *s = &current_migration;

    if (s->committed && s->mode && s->mode->hands_over_memory) {
        error_setg(errp, "The guest runs in the new process now, in this process's memory "
                   "(%s): this process can no longer run, reset or migrate it; quit it",
                   s->mode->name);
        return false;
    }
    return true;
}

/*
 * The guest runs here again (as it was: running, or paused): first what
 * the switchover released (the images), without which it must not run.
 */
static void migration_give_back(MigrationState *s)
{
    if (s->vm_was_running && migration_handover_reclaim()) {
        vm_start();
    } else {
        runstate_set(RUN_STATE_PAUSED);
    }
}

bool migration_allows_cont(Error **errp)
{
    int st = migrate_get_state(&current_migration.state);

    if (!migration_guest_ram_usable(errp) || !migration_guest_owned_here(errp)) {
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

/* Iterate, paced to max-bandwidth, until the mode switches over (or we fail or cancel). */
static void migration_iterate(MigrationState *s, QEMUFile *f, Error **errp)
{
    RateWindow w;
    bool all_sent = false;

    /*
     * No switchover before the link was measured: a threshold guessed from
     * max-bandwidth (often "unlimited") could stop the guest with gigabytes
     * still to send. The first busy 100 ms window sets it.
     */
    s->threshold_bytes = 0;
    s->expected_downtime_ms = migrate_downtime_limit();
    convergence_start(s, qemu_file_transferred(f));
    rate_window_start(&w, f);
    while (migrate_get_state(&s->state) == MIGRATION_STATUS_ACTIVE) {
        int ret;

        /* x-converge-policy's last resort: fail, and the guest runs on here. */
        *errp = convergence_take_stop(s);
        if (*errp) {
            return;
        }

        if (s->mode->switchover_ready(s, s->mode_state, all_sent)) {
            /* A transport with a last step (a file's trailer) has the guest only after it. */
            if (s->mode->complete(s, s->mode_state, f, errp) && ram_transport_finish(f, errp)) {
                bql_lock();
                if (!s->committed) {
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
        rate_window_update(s, &w, f);
        if (qemu_file_rate_limit(f) && migrate_get_state(&s->state) == MIGRATION_STATUS_ACTIVE) {
            int64_t waited = rate_wait(s, w.start_ns + RATE_WINDOW_MS * 1000000LL);

            w.waited_ns += waited;
            s->waited_total_ns += waited;
            rate_window_update(s, &w, f);
        }
    }
}

/* Connects (this may block) and makes the stream; cancel can shut it down from now on. */
static QEMUFile *migration_open_output(MigrationState *s, Error **errp)
{
    bool limit = !s->mode->bandwidth_only_if_set || migrate_max_bandwidth_user_set();
    Channel *ch = mig_tls_client(s->tls, mig_channel_connect(s->uri, errp), errp);
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
    qemu_file_set_rate_limit(f, limit ? migrate_max_bandwidth() / RATE_WINDOWS_PER_S : 0);
    return f;
}

/* Header, configuration and START sections, then setup -> active. */
static bool migration_setup_sections(MigrationState *s, QEMUFile *f, Error **errp)
{
    int ret;

    qemu_savevm_state_header(f);
    if (s->mode->stream_start && !s->mode->stream_start(s, s->mode_state, f, errp)) {
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

/* A completed migration's downtime phases, if its mode has them (the caller frees). */
static XDowntimeInfo *migration_downtime_info(const MigrationState *s)
{
    return s->mode->downtime_info ? s->mode->downtime_info(s, s->mode_state) : NULL;
}

/* The guest may run on the destination now: it must never run here again. */
static bool migration_guest_moved(const MigrationState *s)
{
    return s->mode->guest_moved && s->mode->guest_moved(s->mode_state);
}

static void *migration_thread(void *opaque)
{
    MigrationState *s = opaque;
    Error *err = NULL;
    QEMUFile *f = NULL;
    bool connected = false;

    /* A live update hands over the memory first; a failure there is the migration's. */
    if (s->resuming || !s->mode->before_connect ||
        s->mode->before_connect(s, s->mode_state, &err)) {
        f = migration_open_output(s, &err);
        if (!f && !s->resuming && s->mode->before_connect) {
            error_prepend(&err, "the new process took the memory but does not listen on the "
                          "main channel (it exited? its own log says why): ");
        }
        /* A resumed postcopy goes on over the new stream alone (its transport took no other). */
        connected = f && (s->resuming || ram_transport_connect(s->uri, s->tls, f, &err));
    }

    if (connected && s->resuming) {
        if (s->mode->resume(s, s->mode_state, f, &err)) {
            s->result = MIGRATION_STATUS_COMPLETED;
        }
    } else if (connected && migration_setup_sections(s, f, &err) &&
               (!s->mode->setup || s->mode->setup(s, s->mode_state, f, &err))) {
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
        if (migration_guest_moved(s)) {
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
    convergence_end(s, s->result == MIGRATION_STATUS_COMPLETED);
    /* query-migrate may read it meanwhile. */
    __atomic_store_n(&s->total_ms, (get_clock_ns() - s->start_ns) / 1000000, __ATOMIC_RELAXED);
    qemu_bh_schedule_oneshot(migration_cleanup_bh, s);
    return NULL;
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
        s->mode->cleanup(s, s->mode_state);
    }
    /* Its threads may still read the page source's buffers: they stop first. */
    ram_transport_disconnect();
    qemu_savevm_state_cleanup();
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
    mig_tls_release(s->tls);
    s->tls = NULL;
    st = migrate_get_state(&s->state);
    if (st == MIGRATION_STATUS_CANCELLING && !s->committed) {
        s->result = MIGRATION_STATUS_CANCELLED;
    } else if (s->result == MIGRATION_STATUS_NONE) {
        /* The thread ended without an outcome (cancelled before connecting...). */
        s->result = MIGRATION_STATUS_FAILED;
    }
    if (s->result == MIGRATION_STATUS_COMPLETED && s->mode->hand_over) {
        Error *err = NULL;

        /* Returns only if the new process could not take the guest: it runs here again. */
        if (!s->mode->hand_over(s, s->mode_state, &err)) {
            error_prepend(&err, "migration failed: ");
            g_clear_pointer(&s->error, error_free);
            s->error = err;
            s->result = MIGRATION_STATUS_FAILED;
            s->committed = false;
            migration_give_back(s);
        }
    }
    if (migration_guest_moved(s) && s->result != MIGRATION_STATUS_COMPLETED) {
        /* Never both sides running: this one waits, stopped, for a recovery. */
        s->result = MIGRATION_STATUS_POSTCOPY_PAUSED;
        error_report("%s", error_get_pretty(s->error));
    } else if (s->result != MIGRATION_STATUS_COMPLETED &&
               runstate_check(RUN_STATE_FINISH_MIGRATE)) {
        /* The switchover started but did not finish: give the guest back. */
        migration_give_back(s);
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
        /*
         * A failed resume stays paused: the guest runs on the destination,
         * and a new migrate must not start from the pages left here.
         */
        migrate_set_state(&s->state, from, from == MIGRATION_STATUS_POSTCOPY_RECOVER
                                           ? MIGRATION_STATUS_POSTCOPY_PAUSED
                                           : MIGRATION_STATUS_FAILED);
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
    /* The new connections handshake as the first ones did, with today's parameters. */
    if (!mig_tls_new(&s->tls, uri, false, errp)) {
        return false;
    }
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
    if (!migration_start_thread(s, MIGRATION_STATUS_POSTCOPY_RECOVER, errp)) {
        /* Or its references keep the objects "in use" for ever. */
        mig_tls_release(s->tls);
        s->tls = NULL;
        return false;
    }
    return true;
}

bool qmp_migrate(const char *uri_arg, const MigrationChannelList *channels, bool has_blk,
                 bool blk, bool has_inc, bool inc, bool has_detach, bool detach, bool has_resume,
                 bool resume, Error **errp)
{
    MigrationState *s = &current_migration;
    g_autofree char *fd_uri = NULL, *cpr_uri = NULL;
    /* QEMU 8.2's channels list says what a URI says: one path for both. */
    g_autofree char *uri_owned = migration_channels_uri(uri_arg, channels, &cpr_uri, errp);
    const char *uri = uri_owned;
    const MigrationOutMode *mode;
    bool named_fd;

    if (!uri) {
        return false;
    }
    if (cpr_uri && migrate_mode() != MIG_MODE_CPR_TRANSFER) {
        error_setg(errp, "a 'cpr' channel is for migrate-set-parameters mode cpr-transfer");
        return false;
    }
    if (!migration_guest_owned_here(errp)) {
        return false;
    }
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
    mode = migration_select_mode();
    g_free(s->cpr_uri);
    s->cpr_uri = g_steal_pointer(&cpr_uri);
    if (mode->check_start && !mode->check_start(s, uri, errp)) {
        return false;
    }
    if (!convergence_check(s, mode->converges, errp)) {
        return false;
    }
    /* fd:NAME (a getfd name, as libvirt's virsh save sends) is taken below, once all is checked. */
    named_fd = g_str_has_prefix(uri, "fd:") && uri[3] && !g_ascii_isdigit(uri[3]);
    if (!named_fd && !mig_channel_check_uri(uri, errp)) {
        return false;
    }
    if (!ram_transport_check_uri(uri, errp)) {
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
    /* The previous migration's was released by its cleanup. */
    if (!mig_tls_new(&s->tls, uri, false, errp)) {
        if (named_fd) {
            close(atoi(uri + 3));
        }
        return false;
    }
    g_free(s->uri);
    s->uri = g_strdup(uri);
    g_clear_pointer(&s->error, error_free);
    s->channel = NULL;
    s->start_ns = get_clock_ns();
    s->setup_ms = s->total_ms = s->downtime_ms = s->expected_downtime_ms = 0;
    s->bandwidth_bpms = s->unlimited_bpms = s->link_data_bpms = 0;
    s->link_acc_bytes = s->link_acc_ms = 0;
    s->waited_total_ns = 0;
    s->sync_cost_ns = 0;
    s->mbps = 0;
    s->pages_per_second = 0;
    s->precopy_bytes = s->downtime_bytes = s->transferred_final = s->transferred_before = 0;
    s->resuming = false;
    s->vm_was_running = runstate_is_running();
    s->rp_use = MIG_RP_NONE;
    s->committed = false;
    s->result = MIGRATION_STATUS_NONE;
    s->mode = mode;
    ram_transport_select();
    /* The "ram" section may point into the last mode's state: not once it is freed. */
    ram_select_source(NULL, NULL);
    g_free(s->mode_state);
    s->mode_state = s->mode->state_size ? g_malloc0(s->mode->state_size) : NULL;
    s->mode->init(s, s->mode_state);
    convergence_reset(s);
    s->rate_kick = false;       /* a limit changed while idle: nothing to cut short */
    s->switchover_go = false;   /* a migrate-continue for no migration */
    __atomic_store_n(&s->state, MIGRATION_STATUS_NONE, __ATOMIC_SEQ_CST);
    migrate_set_state(&s->state, MIGRATION_STATUS_NONE, MIGRATION_STATUS_SETUP);
    if (!migration_start_thread(s, MIGRATION_STATUS_SETUP, errp)) {
        mig_tls_release(s->tls);
        s->tls = NULL;
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
    if (s->mode->start_postcopy) {
        s->mode->start_postcopy(s, s->mode_state);
    }
    rate_limit_changed(s);
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
        st != MIGRATION_STATUS_PRE_SWITCHOVER && st != MIGRATION_STATUS_DEVICE) {
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
    /* A handshake in flight (the stream's or a multifd channel's) fails at once. */
    mig_tls_cancel(s->tls);
    ram_transport_shutdown();
    rate_limit_changed(s);
    return true;
}

bool qmp_migrate_continue(MigrationStatus state, Error **errp)
{
    MigrationState *s = &current_migration;
    int st = migrate_get_state(&s->state);

    if (st != (int)state) {
        error_setg(errp, "Migration not in expected state: %s", MigrationStatus_str(st));
        return false;
    }
    g_mutex_lock(&s->rate_lock);
    s->switchover_go = true;
    g_cond_broadcast(&s->rate_cond);
    g_mutex_unlock(&s->rate_lock);
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
    if (p->x_converge_policy) {
        ConvergeStepSpec steps[CONV_MAX_STEPS];
        int n;

        if (!converge_policy_parse(p->x_converge_policy, steps, &n, errp)) {
            return false;
        }
    }
    if (p->has_x_clear_bitmap_shift && migration_is_running()) {
        error_setg(errp, "x-clear-bitmap-shift cannot change while a migration runs");
        return false;
    }
    migrate_params_apply(p);
    if (p->has_max_bandwidth) {
        rate_limit_changed(&current_migration);
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
    convergence_fill_info(s, st, info);
    if (s->mode->fill_info) {
        s->mode->fill_info(s, s->mode_state, info);
    }
    return info;
}

void migration_init(const char *machine_type)
{
    savevm_set_machine_type(machine_type);
    global_state_init();
    ram_mig_init();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The precopy row of the outgoing modes: send dirty pages while the guest
 * runs, and switch over (stop the guest, send the rest and the devices)
 * once what is left fits in the downtime limit at the measured bandwidth.
 * The source ends in postmigrate once committed (migration_commit_locked);
 * any failure before that gives the guest back (migration.c's cleanup).
 */
#include "qemu/osdep.h"
#include <sys/socket.h>
#include "qapi/error.h"
#include "migration/misc.h"
#include "qemu/main-loop.h"
#include "system/runstate.h"
#include "migration/qemu-file.h"
#include "outgoing.h"
#include "pacing.h"
#include "migration/stream/postcopy.h"
#include "migration/core/options.h"
#include "return-path.h"
#include "migration/transport/channel.h"
#include "migration/transport/ram.h"
#include "migration/transport/ram-source.h"
#include "migration/stream/savevm.h"
#include "migration/stream/savevm-cmd.h"
#include "migration/core/status.h"
#include "migration/trace.h"

static bool precopy_selected(void)
{
    return true;    /* the default: the last row */
}

static void precopy_init(MigrationState *s, void *ms)
{
    PrecopyState *ps = ms;

    ram_select_source(&dirty_scan_source, &ps->scan);
}

/*
 * What is left fits the downtime limit, but only an eighth of it is aimed
 * at while each pass leaves at most three quarters of the one before: a
 * guest that dirties slowly against the link then stops for a fraction of
 * the limit, for the price of a few short passes (a precopy into a file
 * went from 280 ms of downtime to a quarter of that); one whose passes
 * stop shrinking switches over at once. With a quarter and halving, the
 * seed scenario's passes (220 MB/s against 300 MiB/s) shrank too slowly
 * to aim at all: 40 ms of downtime against QEMU 10.0's 14 ms, whose rule
 * (the throttled rate times the limit) keeps passing. Now 12 ms against
 * 19 ms, in 0.91x QEMU 10.0's time (docs/benchmarks.md, "slo").
 */
#define PRECOPY_AIM_DIVISOR 8

/*
 * The handover's prepare (the images' flush) runs with the guest running
 * once the switchover is decided, and one more pass follows it: what the
 * guest dirtied during the flush goes out then, not inside the downtime
 * (a guest writing 2000 IOPS to a qcow2 image and 220 MB/s to its RAM
 * stopped for 27 ms with the flush between the last sync and the stop,
 * most of it that RAM). The switchover flushes once more just before the
 * stop (precopy_complete), a short one after this; a decision's prepare
 * counts for this long.
 */
#define PRECOPY_PREPARED_FRESH_NS (1000 * 1000 * 1000LL)

static bool precopy_prepared(PrecopyState *ps)
{
    return ps->prepared_ns && get_clock_ns() - ps->prepared_ns < PRECOPY_PREPARED_FRESH_NS;
}

/* Switch over when the estimate fits; a fresh sync must then agree. */
static bool precopy_switchover_ready(MigrationState *s, void *ms, bool all_sent)
{
    PrecopyState *ps = ms;
    uint64_t pending = qemu_savevm_pending(false);
    uint64_t aim = s->threshold_bytes / PRECOPY_AIM_DIVISOR;
    bool aiming;
    int64_t t0;

    /*
     * The second sync ends the first pass, or is the fresh look below taken
     * in its middle: either way most of what follows is sent again, and
     * first-pass pages still among it only make the rate lower (safer).
     */
    if (ps->scan.dt.syncs >= 2) {
        convergence_resends_begin(s);
    }

    /*
     * While aiming lower, the pass under way is sent before a fresh look:
     * the estimate only falls between syncs, so it gets there.
     */
    if (pending > (ps->aim_from ? aim : s->threshold_bytes)) {
        return false;
    }
    /*
     * The predicted rule's threshold is reached mid-pass, where the sync
     * adds back what the guest dirtied since the last one: syncing there
     * cut every pass short of the overlap a long pass gets from a guest
     * rewriting its pages (a guest dirtying at the link's rate never
     * finished, where QEMU's small threshold let passes run to their end
     * and finished in 53 s). Count that in, unless nothing is left to send.
     */
    if (!all_sent && migrate_switchover_rule() == X_SWITCHOVER_RULE_PREDICTED &&
        pending + dirty_scan_dirtied_since_sync(&ps->scan) > s->threshold_bytes) {
        return false;
    }
    t0 = get_clock_ns();
    pending = qemu_savevm_pending(true);
    /* What the final sync will cost, for expected-downtime. */
    s->sync_cost_ns = get_clock_ns() - t0;
    aiming = pending <= s->threshold_bytes && pending > aim &&
             (!ps->aim_from || pending <= ps->aim_from / 4 * 3);
    trace_migration_switchover(pending, s->threshold_bytes, s->bandwidth_bpms,
                               pending > s->threshold_bytes ? "iterate" :
                               aiming ? "aim-lower" : "complete");
    if (pending > s->threshold_bytes) {
        ps->aim_from = 0;
        return false;
    }
    if (aiming) {
        ps->aim_from = pending;
        return false;
    }
    t0 = get_clock_ns();
    if (!precopy_prepared(ps) && migration_handover_prepare()) {
        ps->prepared_ns = get_clock_ns();
        convergence_prepared(s, ps->prepared_ns - t0);
        trace_migration_switchover(pending, s->threshold_bytes, s->bandwidth_bpms, "prepared");
        return false;
    }
    /* The prediction this switchover is judged against (x-downtime.expected). */
    ps->expected_us = convergence_decided(s, pending);
    return true;
}

/*
 * return-path: the destination answers on the same socket whether it
 * loaded the stream (SHUT 0). On by default for tcp: and unix:
 * (migrate_return_path_for); a QEMU destination opens it on
 * OPEN_RETURN_PATH whatever its own capability says. The PING offers our
 * switchover confirmation: our destination accepts it and then runs the
 * guest only on our go; QEMU's echoes it and runs the guest itself.
 */
static bool precopy_stream_start(MigrationState *s, void *ms, QEMUFile *f, Error **errp)
{
    bool user_set;

    s->rp_use = MIG_RP_NONE;
    if (!migrate_return_path_for(s->uri, &user_set)) {
        return true;
    }
    if (!channel_has_feature(s->channel, CHANNEL_FEATURE_DUPLEX)) {
        if (!user_set) {
            return true;    /* tcp: or unix: through a command: nothing can answer */
        }
        error_setg(errp, "return-path needs a socket to the destination (tcp:, unix: or "
                   "an fd: that is a socket), not '%s'", s->uri);
        return false;
    }
    if (!rp_src_start(s->channel, NULL, errp)) {
        return false;
    }
    s->rp_use = user_set ? MIG_RP_ASKED : MIG_RP_DEFAULT;
    qemu_fflush(f);
    qemu_savevm_send_open_return_path(f);
    qemu_savevm_send_ping(f, MIG_PING_CONFIRM_OFFER);
    return true;
}

/* After mig/src was joined: the return path's reader, if it ran. */
static void precopy_cleanup(MigrationState *s, void *ms)
{
    rp_src_stop();
}

/* Bytes written on the main socket and the multifd channels that the destination has not taken. */
static uint64_t precopy_unsent_bytes(MigrationState *s)
{
    return mig_channel_unsent_bytes(s->channel) + ram_transport_unsent_bytes();
}

/*
 * mig/src, without the BQL: our destination's SHUT. The timeout is for a
 * destination that went quiet, not for a slow link: megabytes per socket
 * may still be in flight when the vmdesc reaches the kernel, so the clock
 * restarts whenever what is in flight shrank, and runs only once it stops
 * shrinking (all taken, or the link stalled).
 */
static bool precopy_wait_confirmation(MigrationState *s, Error **errp)
{
    uint64_t unsent = precopy_unsent_bytes(s);
    int64_t deadline = get_clock_ns() + MIGRATION_CONFIRM_TIMEOUT_MS * 1000000LL;

    for (;;) {
        int64_t left_ms = (deadline - get_clock_ns()) / 1000000;
        Error *err = NULL;
        uint64_t now_unsent;

        if (rp_src_wait_shut(MAX(MIN(left_ms, 1000), 0), &err)) {
            return true;
        }
        now_unsent = precopy_unsent_bytes(s);
        if (rp_src_ended() || (left_ms <= 1000 && now_unsent >= unsent)) {
            if (!rp_src_ended()) {
                error_free(err);
                error_setg(&err, "the destination did not say within %d s of taking the "
                           "last bytes whether it loaded the stream",
                           MIGRATION_CONFIRM_TIMEOUT_MS / 1000);
            }
            error_propagate(errp, err);
            return false;
        }
        error_free(err);
        if (now_unsent < unsent) {
            deadline = get_clock_ns() + MIGRATION_CONFIRM_TIMEOUT_MS * 1000000LL;
        }
        unsent = now_unsent;
    }
}

/*
 * The stream went out whole up to its EOF: decide whether the guest moved
 * (docs/devel/migration.md, "Who runs the guest"). By who is at the other
 * end and why the return path is open:
 *  - our destination (it accepted the offer): only on its SHUT 0, within
 *    MIGRATION_CONFIRM_TIMEOUT_MS, and once the go to run the guest was
 *    written; otherwise it keeps the loaded guest paused and ours runs here
 *    again;
 *  - another destination (QEMU), return path asked for by the user or
 *    needed by postcopy-ram: as QEMU's source, on its SHUT 0 however long
 *    that takes; a return path that fails gives the guest back here;
 *  - another destination, return path ours by default: as before we had
 *    one, the EOF having gone out is the end. QEMU's destination runs the
 *    guest before it sends SHUT, so a SHUT that never comes (a one-way
 *    relay, a link cut between the two) must not make us run it too;
 *  - no answer to the offer at all: nobody can tell; the go is sent (our
 *    destination, behind a relay, waits for it) and the EOF is the end.
 * Without a return path the EOF is the end too, and a vmdesc that failed
 * after it only gets a warning, since the destination runs a guest whose
 * device state arrived whole. BQL held on entry and return.
 */
static bool precopy_confirm(MigrationState *s, QEMUFile *f, Error *vmdesc_err, Error **errp)
{
    bool offered = s->rp_use == MIG_RP_DEFAULT || s->rp_use == MIG_RP_ASKED;
    bool answered = true, ours, wait_shut, confirmed = false;

    if (s->rp_use != MIG_RP_NONE && rp_src_running()) {
        bool ok = true;

        /* The answers can take the rest of the destination's load: not with the BQL. */
        bql_unlock();
        if (offered) {
            /* Half the wait: a go sent after it still reaches a destination that waits. */
            answered = rp_src_wait_offer_answer(MIGRATION_CONFIRM_TIMEOUT_MS / 2);
        }
        ours = rp_src_peer_confirms();
        wait_shut = ours || (answered && s->rp_use != MIG_RP_DEFAULT);
        if (wait_shut) {
            ok = ours ? precopy_wait_confirmation(s, errp) : rp_src_wait_shut(-1, errp);
        }
        bql_lock();
        if (!ok) {
            error_prepend(errp, "the destination did not confirm the load: ");
            return false;
        }
        confirmed = wait_shut;
        if (ours || !answered) {
            qemu_savevm_send_ping(f, MIG_PING_GO);
            qemu_fflush(f);
            if (ours && qemu_file_get_error(f)) {
                error_setg(errp, "the destination loaded the stream, but the go to run its "
                           "guest could not be sent (%s): it keeps that guest paused, and "
                           "the guest runs here again", qemu_file_error_msg(f));
                return false;
            }
        }
        if (!answered) {
            warn_report("the destination never answered on the return path: whether it "
                        "loaded the stream is unknown; the guest no longer runs here");
        }
        if (rp_src_peer_vmdesc_damaged()) {
            warn_report("the destination loaded the device state whole, but says the "
                        "stream's trailing description (vmdesc) arrived damaged");
        }
    }
    if (vmdesc_err) {
        warn_report("the device state and EOF went out whole, but the stream's trailing "
                    "description (vmdesc) did not: %s; %s", error_get_pretty(vmdesc_err),
                    confirmed ? "the destination confirmed the load"
                              : "the destination's outcome is unknown");
    }
    return true;
}

/* Stop the guest and send everything that is left. BQL taken here. */
static bool precopy_complete(MigrationState *s, void *ms, QEMUFile *f, Error **errp)
{
    PrecopyState *ps = ms;
    g_autoptr(Error) vmdesc_err = NULL;
    int64_t t_stop, t_go, t_rel, t_ram, t_dev;
    int from = MIGRATION_STATUS_ACTIVE;
    bool ok, state_whole;

    ps->phases_valid = false;
    /*
     * While the guest runs, again: what was written since the decision's
     * flush (a pass's worth) is committed here, a short flush, so the one
     * inside the stop has only the moments since (15 ms of a 21 ms
     * downtime without this one).
     */
    migration_handover_prepare();
    bql_lock();
    migration_stop_vm_locked(s, RUN_STATE_FINISH_MIGRATE);
    t_stop = get_clock_ns();
    if (!switchover_pause_if_asked(s, &from, errp)) {
        bql_unlock();
        return false;
    }
    migrate_set_state(&s->state, from, MIGRATION_STATUS_DEVICE);
    t_go = get_clock_ns();      /* a pause in pre-switchover stays unattributed */
    s->precopy_bytes = qemu_file_transferred(f);
    qemu_file_set_rate_limit(f, 0);
    /* The images' last writes and locks go before any device state does. */
    if (!migration_handover_release(errp)) {
        bql_unlock();
        return false;
    }
    t_rel = get_clock_ns();
    ok = qemu_savevm_state_complete_live(f) == 0;
    /* The RAM's tail goes out here, so that last-ram holds all of its time. */
    qemu_fflush(f);
    ok = ok && !qemu_file_get_error(f);
    t_ram = get_clock_ns();
    if (!ok) {
        error_setg(errp, "%s", qemu_file_error_msg(f));
    } else {
        ok = qemu_savevm_state_devices(f, &state_whole, &vmdesc_err);
        if (!ok && !state_whole) {
            error_propagate(errp, g_steal_pointer(&vmdesc_err));
        }
        /*
         * A whole device state may do without its vmdesc, but a transport's
         * last step (a mapped-ram file's trailer) comes after it: on the
         * same sticky error that would fail later, with nothing to tell
         * the truth.
         */
        if (!ok && state_whole && ram_transport_finishes()) {
            error_propagate(errp, g_steal_pointer(&vmdesc_err));
        } else {
            ok = ok || state_whole;
        }
    }
    t_dev = get_clock_ns();
    ok = ok && precopy_confirm(s, f, vmdesc_err, errp);
    s->downtime_bytes = qemu_file_transferred(f) - s->precopy_bytes;
    if (ok) {
        s->downtime_ms = (t_dev - s->downtime_start_ns) / 1000000;
        ps->stop_ns = t_stop - s->downtime_start_ns;
        ps->handover_ns = t_rel - t_go;
        ps->sync_ns = MIN(ram_last_final_sync_ns(), t_ram - t_rel);
        ps->ram_ns = t_ram - t_rel - ps->sync_ns;
        ps->dev_ns = t_dev - t_ram;
        ps->total_ns = t_dev - s->downtime_start_ns;
        ps->phases_valid = true;
        convergence_learn(s, &(DowntimeOutcome) {
            .stop_us = ps->stop_ns / 1000, .handover_us = ps->handover_ns / 1000,
            .sync_us = ps->sync_ns / 1000, .ram_us = ps->ram_ns / 1000,
            .device_us = ps->dev_ns / 1000, .total_us = ps->total_ns / 1000,
            .ram_bytes = s->downtime_bytes,
        });
        trace_migration_downtime(ps->stop_ns / 1000, ps->handover_ns / 1000, ps->sync_ns / 1000,
                                 ps->ram_ns / 1000, ps->dev_ns / 1000, ps->total_ns / 1000);
        if (!ram_transport_finishes()) {
            /* The last step that can fail; otherwise migration.c commits after the transport's. */
            migration_commit_locked(s);
        }
    }
    bql_unlock();
    return ok;
}

/* x-downtime: the phases of a switchover that completed. */
static XDowntimeInfo *precopy_downtime_info(const MigrationState *s, void *ms)
{
    PrecopyState *ps = ms;
    XDowntimeInfo *d;

    if (!ps->phases_valid) {
        return NULL;
    }
    d = g_new0(XDowntimeInfo, 1);
    d->stop_vcpus = ps->stop_ns / 1000;
    d->handover = ps->handover_ns / 1000;
    d->final_sync = ps->sync_ns / 1000;
    d->last_ram = ps->ram_ns / 1000;
    d->device_state = ps->dev_ns / 1000;
    d->total = ps->total_ns / 1000;
    d->expected = ps->expected_us;
    d->unattributed = d->total - MIN(d->total, d->stop_vcpus + d->handover + d->final_sync +
                                                d->last_ram + d->device_state);
    return d;
}

const MigrationOutMode precopy_mode = {
    .name = "precopy",
    .state_size = sizeof(PrecopyState),
    .converges = true,
    .downtime_info = precopy_downtime_info,
    .selected = precopy_selected,
    .init = precopy_init,
    .switchover_ready = precopy_switchover_ready,
    .stream_start = precopy_stream_start,
    .complete = precopy_complete,
    .cleanup = precopy_cleanup,
};

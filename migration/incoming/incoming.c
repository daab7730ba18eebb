/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Incoming migration: -incoming URI|defer, migrate-incoming, and the
 * "mig/dst" thread that loads the stream. The guest starts only after a
 * complete, valid stream (EOF reached, every device section loaded); any
 * failure ends the process with status 1, as QEMU does.
 */
#include "qemu/osdep.h"
#include "qemu/tsan.h"
#include "qapi/error.h"
#include "qapi/qapi-commands.h"
#include "qemu/main-loop.h"
#include "qemu/thread.h"
#include "system/runstate.h"
#include "migration/misc.h"
#include "migration/qemu-file.h"
#include "migration/transport/channel.h"
#include "migration/stream/global-state.h"
#include "incoming.h"
#include "lazy-restore.h"
#include "migration/transport/multifd.h"
#include "multifd-recv.h"
#include "migration/core/channel-list.h"
#include "migration/core/options.h"
#include "migration/stream/postcopy.h"
#include "incoming-sort.h"
#include "cpr-rollback.h"
#include "postcopy-dst.h"
#include "migration/transport/ram.h"
#include "migration/transport/tls.h"
#include "postcopy-rp-dst.h"
#include "migration/stream/savevm.h"
#include "loadvm.h"
#include "loadvm-cmd.h"
#include "migration/stream/savevm-cmd.h"
#include "migration/core/status.h"
#include "migration/trace.h"

/* Main thread (BQL), except that mig/dst owns from_src while it loads. */
typedef struct MigrationIncomingState {
    int state;                  /* MigrationStatus: incoming_set_state() */
    bool deferred;              /* -incoming defer, waiting for migrate-incoming */
    bool requested;             /* -incoming given at all */
    bool autostart;             /* start the guest after loading (not with -S) */
    QemuThread thread;
    QEMUFile *from_src;
    Error *error;
    bool cancelled;             /* migrate_cancel asked to give up */
    bool is_socket;             /* tcp: or unix:, where multifd channels can connect */
    bool preempt_connected;     /* the postcopy-preempt channel arrived */
    bool recover_main_seen;     /* migrate-recover: the stream's new connection arrived */
    /*
     * TLS for the connections we accept (NULL: plaintext): made by the
     * listen or migrate-recover from the parameters then, released when
     * the load ends or a new listen replaces it.
     */
    MigTLS *tls;
    int64_t start_ns;
    int64_t total_ms;
    int64_t loaded_ns;          /* mig/dst: get_clock_ns() when the load returned */
    /*
     * mig/dst (the finish bottom half reads it once joined): the load
     * succeeded, but the source's go did not come (its reason is @error).
     */
    bool unconfirmed;
    XIncomingDowntimeInfo *downtime;    /* a completed precopy's switchover here */
    /*
     * A live update's cpr channel, held open from the cpr state's arrival
     * until the main channel listens: its hang-up tells the old process
     * to connect (-1: none).
     */
    int cpr_conn;
    /*
     * migrate-incoming exit-on-error=false: a failed load leaves the
     * process up, in status failed, for query-migrate to say why.
     */
    bool stay_on_error;
} MigrationIncomingState;

/* The process's one incoming migration; each field says its owner. */
static MigrationIncomingState incoming = { .autostart = true, .cpr_conn = -1 };

void migration_set_autostart(bool on)
{
    incoming.autostart = on;
}

/* Main thread: the incoming state moves only here, so the swap always happens. */
static void incoming_set_state(int new)
{
    migrate_set_state(&incoming.state, migrate_get_state(&incoming.state), new);
}

/* Main thread: run the guest as the source left it (and as -S says). */
static void incoming_start_guest(void)
{
    int src_state = global_state_get_runstate();
    g_autoptr(Error) err = NULL;

    /* The images are ours only now; without them the guest waits for 'cont'. */
    if (!migration_handover_take(&err)) {
        error_report("the guest stays paused: %s", error_get_pretty(err));
        runstate_set(RUN_STATE_PAUSED);
        return;
    }

    if (src_state < 0 || src_state == RUN_STATE_RUNNING) {
        if (incoming.autostart) {
            vm_start();
        } else {
            runstate_set(RUN_STATE_PAUSED);
        }
    } else {
        /* The source was paused (or postmigrate...): stay like it. */
        runstate_set(src_state == RUN_STATE_FINISH_MIGRATE ? RUN_STATE_PAUSED : src_state);
    }
}

/* mig/dst: postcopy moves the state (LISTEN: postcopy-active). */
static void incoming_postcopy_set_state(int old, int new_state)
{
    migrate_set_state(&incoming.state, old, new_state);
}

/*
 * Recovery: the main loop accepts migrate-recover's connection and hands
 * its stream to mig/dst, which waits for it in postcopy-paused.
 */
static GMutex recover_lock;
static GCond recover_cond;          /* recover_lock: recover_file was set */
static QEMUFile *recover_file;      /* recover_lock */

static QEMUFile *incoming_wait_recover(QEMUFile *old)
{
    QEMUFile *nf;

    tsan_g_mutex_lock(&recover_lock);
    while (!recover_file) {
        tsan_g_cond_wait(&recover_cond, &recover_lock);
    }
    nf = recover_file;
    recover_file = NULL;
    /* The main thread reads from_src only once mig/dst is joined (postcopy refuses cancel). */
    incoming.from_src = nf;
    tsan_g_mutex_unlock(&recover_lock);
    qemu_fclose(old);
    return nf;
}

static const PostcopyDstOps incoming_postcopy_ops = {
    .state = &incoming.state,
    .set_state = incoming_postcopy_set_state,
    .start_guest = incoming_start_guest,
    .wait_recover = incoming_wait_recover,
};

bool migration_incoming_in_postcopy(void)
{
    int st = migrate_get_state(&incoming.state);

    return st == MIGRATION_STATUS_POSTCOPY_ACTIVE || st == MIGRATION_STATUS_POSTCOPY_PAUSED ||
           st == MIGRATION_STATUS_POSTCOPY_RECOVER;
}

/*
 * Main thread, the guest just started: the switchover's phases on this
 * side, from the first SECTION_END to now. @handoff_ns: when this bottom
 * half was done with the loading thread and its channels.
 */
static void incoming_record_downtime(int64_t handoff_ns)
{
    int64_t end_ns, devices_ns, now = get_clock_ns();
    XIncomingDowntimeInfo *d;

    qemu_loadvm_switchover_times(&end_ns, &devices_ns);
    if (!end_ns) {
        return;
    }
    if (!devices_ns) {
        devices_ns = incoming.loaded_ns;    /* a stream with no device section */
    }
    d = g_new0(XIncomingDowntimeInfo, 1);
    d->last_ram = (devices_ns - end_ns) / 1000;
    d->device_state = (incoming.loaded_ns - devices_ns) / 1000;
    d->handoff = (handoff_ns - incoming.loaded_ns) / 1000;
    d->start_vcpus = (now - handoff_ns) / 1000;
    d->total = (now - end_ns) / 1000;
    trace_migration_incoming_downtime(d->last_ram, d->device_state, d->handoff,
                                      d->start_vcpus, d->total);
    qapi_free_XIncomingDowntimeInfo(incoming.downtime);
    incoming.downtime = d;
}

bool migration_guest_ram_usable(Error **errp)
{
    int st = migrate_get_state(&incoming.state);
    const char *why;

    /* exit-on-error=false kept a process whose guest never loaded. */
    if ((st == MIGRATION_STATUS_FAILED || st == MIGRATION_STATUS_CANCELLED) &&
        runstate_check(RUN_STATE_INMIGRATE)) {
        error_setg(errp, "The incoming migration %s: the guest never loaded here",
                   st == MIGRATION_STATUS_FAILED ? "failed" : "was cancelled");
        return false;
    }

    if (lazy_restore_failed(&why)) {
        error_setg(errp, "Guest RAM is incomplete (%s); the guest cannot run, and its "
                   "memory cannot be read: quit, and restore from an intact file", why);
        return false;
    }
    return true;
}

/*
 * Main thread: a lazy restore could not read the file once the guest had
 * its state, so some of its memory will never come. The migration fails
 * (MIGRATION event) and the VM stops in io-error, as QEMU pauses a guest
 * whose disk failed a read; cont is refused from then on
 * (migration_guest_ram_usable).
 *
 * Stopping: a vCPU waiting for a missing page sleeps in the kernel's
 * userfaultfd handler inside KVM_RUN. The pause's kick (SIG_IPI) ends that
 * wait: KVM waits for userfaultfd interruptibly, KVM_RUN returns EINTR and
 * the vCPU stops without the page (measured on this kernel, 6.18 with
 * kvm-pvm; test-lazy-restore checks it). Its fault is retried only if the
 * guest ever ran again, which it does not. The pages stay missing: placing
 * zeros would hand the guest wrong memory.
 */
static void incoming_lazy_restore_failed(const char *why)
{
    /* The load is still finishing: incoming_finish_bh sees the failure itself. */
    if (migrate_get_state(&incoming.state) != MIGRATION_STATUS_COMPLETED) {
        return;
    }
    error_free(incoming.error);
    incoming.error = NULL;
    error_setg(&incoming.error, "%s", why);
    migrate_set_state(&incoming.state, MIGRATION_STATUS_COMPLETED, MIGRATION_STATUS_FAILED);
    vm_stop_force_state(RUN_STATE_IO_ERROR);
}

/* Main thread: the load is over; start the guest or give up. */
/*
 * The load failed or was cancelled: the process ends (QEMU's default), or
 * with exit-on-error=false stays, its guest never run (cont refused), for
 * query-migrate.
 */
static void incoming_failed_exit(void)
{
    if (!incoming.stay_on_error) {
        qemu_system_exit_now(1);
    }
}

static void incoming_finish_bh(void *opaque)
{
    bool ok = GPOINTER_TO_INT(opaque);
    bool postcopy = postcopy_dst_listening();
    int64_t handoff_ns;
    const char *why;

    bql_unlock();
    qemu_thread_join(&incoming.thread);
    bql_lock();
    mig_channel_listen_cancel();    /* channels that never connected */
    mig_tls_release(incoming.tls);  /* and handshakes still running */
    incoming.tls = NULL;
    multifd_recv_cleanup();
    qemu_fclose(incoming.from_src);
    incoming.from_src = NULL;
    handoff_ns = get_clock_ns();
    incoming.total_ms = (handoff_ns - incoming.start_ns) / 1000000;
    if (postcopy && !ok) {
        /*
         * The guest runs here with part of its memory still on the source:
         * ending the process would lose it. Its vCPUs wait for the pages.
         */
        incoming_set_state(MIGRATION_STATUS_POSTCOPY_PAUSED);
        error_report("Detected IO failure for postcopy. Migration paused. (%s)",
                     error_get_pretty(incoming.error));
        return;
    }
    if (postcopy) {
        /* RUN started the guest already. */
        incoming_set_state(MIGRATION_STATUS_COMPLETED);
        return;
    }
    if (ok && lazy_restore_failed(&why)) {
        /* The file failed before the guest ran: a failed load like any other. */
        ok = false;
        error_setg(&incoming.error, "%s", why);
    }
    if (!ok && incoming.cancelled) {
        incoming_set_state(MIGRATION_STATUS_CANCELLED);
        error_report("incoming migration cancelled (migrate_cancel); the guest never ran");
        incoming_failed_exit();
        return;
    }
    if (!ok) {
        incoming_set_state(MIGRATION_STATUS_FAILED);
        error_report("load of migration failed: %s", error_get_pretty(incoming.error));
        incoming_failed_exit();
        return;
    }
    if (incoming.unconfirmed) {
        /*
         * The source may have taken its guest back: running this one too
         * would make two. Kept whole and paused, for 'cont' once someone
         * knows the source's guest is not running.
         */
        Error *why = incoming.error;

        runstate_set(RUN_STATE_PAUSED);
        incoming.error = NULL;
        error_setg(&incoming.error, "the guest loaded whole but stays paused: the source did "
                   "not confirm the switchover (%s); run 'cont' here only if the source's "
                   "guest is not running", error_get_pretty(why));
        error_free(why);
        error_report("%s", error_get_pretty(incoming.error));
        incoming_set_state(MIGRATION_STATUS_FAILED);
        return;
    }
    /* The guest is whole here: a live update's way back is not needed any more. */
    cpr_rollback_disarm();
    /* QEMU's order: an observer of COMPLETED may use the guest at once. */
    incoming_start_guest();
    incoming_record_downtime(handoff_ns);
    migrate_set_state_detail(&incoming.state, migrate_get_state(&incoming.state),
                             MIGRATION_STATUS_COMPLETED, NULL, incoming.downtime);
}

static void *incoming_thread(void *opaque)
{
    bool ok = qemu_loadvm_state(incoming.from_src, &incoming.error);
    Error *channel_err = NULL;

    incoming.loaded_ns = get_clock_ns();
    /* A failed channel shut the stream down: its error is the one that matters. */
    if (!ok && multifd_recv_failed(&channel_err)) {
        error_free(incoming.error);
        incoming.error = channel_err;
    }
    if (ok && rp_dst_confirming() && qemu_loadvm_vmdesc_damage()) {
        /* Before SHUT: the source says so too when it commits. */
        rp_dst_send_be32(MIG_RP_MSG_PONG, MIG_PONG_VMDESC_DAMAGED);
    }
    /* Without the BQL: a BQL holder may be waiting on a page only this thread can place. */
    postcopy_dst_end(ok);
    /* Our source said it decides: it commits on our SHUT 0 and then says go. */
    if (ok && rp_dst_confirming() &&
        !loadvm_wait_go(incoming.from_src, MIGRATION_CONFIRM_TIMEOUT_MS, &incoming.error)) {
        incoming.unconfirmed = true;
    }
    /* The guest may run before its RAM is all here: the rest comes from the file. */
    lazy_restore_load_done(ok, incoming_lazy_restore_failed);

    qemu_bh_schedule_oneshot(incoming_finish_bh, GINT_TO_POINTER(ok));
    return NULL;
}

static void incoming_main_ready(Channel *ch)
{
    int ret;

    /* An exec: command's child is reaped once the stream's channel closes. */
    incoming.from_src = qemu_file_new_input(ch, "incoming migration stream");
    incoming.start_ns = get_clock_ns();
    incoming_set_state(MIGRATION_STATUS_ACTIVE);
    if (migrate_multifd() && incoming.is_socket) {
        multifd_recv_set_main(incoming.from_src);
    }
    /* Its MULTIFD_FLUSH records wait for the channels' rounds (mapped-ram files have none). */
    ram_load_set_flush(migrate_multifd() ? multifd_recv_flush : NULL);
    ret = qemu_thread_create(&incoming.thread, "mig/dst", incoming_thread, NULL);
    if (ret < 0) {
        error_report("cannot create the incoming migration thread: %s", g_strerror(-ret));
        qemu_system_exit_now(1);
    }
}

/* Main loop: all the connections this migration needs arrived. */
static bool incoming_all_connected(void)
{
    return incoming.from_src &&
           multifd_recv_channels_accepted() >= multifd_recv_channels_expected() &&
           (!migrate_postcopy_preempt() || incoming.preempt_connected);
}

/* multifd: a connection, told apart by its first word (QEMU does the same). */
static void incoming_conn_peeked(Channel *ch, uint32_t magic, void *opaque)
{
    IncomingExpect want;
    Error *err = NULL;

    if (!ch && !incoming.from_src) {
        /* As a stream that ends before its header: the source gave up. */
        error_report("load of migration failed: a connection closed before it said whether "
                     "it is the migration stream or a multifd channel");
        incoming_set_state(MIGRATION_STATUS_FAILED);
        qemu_system_exit_now(1);
    }
    if (!ch || (incoming.state != MIGRATION_STATUS_SETUP &&
                incoming.state != MIGRATION_STATUS_ACTIVE &&
                incoming.state != MIGRATION_STATUS_POSTCOPY_ACTIVE)) {
        channel_unref(ch);
        return;
    }
    want = (IncomingExpect) {
        .main = !incoming.from_src,
        .preempt = migrate_postcopy_preempt() && !incoming.preempt_connected,
    };
    switch (incoming_conn_sort(magic, &want)) {
    case INCOMING_CONN_MAIN:
        incoming_main_ready(ch);
        break;
    case INCOMING_CONN_PREEMPT:
        /* RAM records, postcopy's urgent pages: its first bytes may come before the stream's. */
        incoming.preempt_connected = true;
        postcopy_dst_set_preempt_channel(qemu_file_new_input(ch, "postcopy preempt channel"));
        break;
    case INCOMING_CONN_MULTIFD:
        if (!multifd_recv_add_channel(ch, &err)) {
            error_report_err(err);
            channel_unref(ch);
        }
        break;
    case INCOMING_CONN_UNKNOWN:
        error_report("incoming migration: closed a connection that is neither the "
                     "migration stream nor a multifd channel (it starts 0x%08x%s)", magic,
                     (magic >> 16) == 0x1603 ? ", a TLS handshake: set tls-creds here too" : "");
        channel_unref(ch);
        break;
    }
    if (incoming_all_connected()) {
        mig_channel_listen_cancel();
    }
}

/* Main loop: a connection passed its TLS handshake and sent its first word. */
static void incoming_tls_accepted(Channel *ch, uint32_t first, void *opaque)
{
    if (incoming.is_socket) {
        /* Sorted as a plaintext one, the main stream included: a second one is refused there. */
        incoming_conn_peeked(ch, first, NULL);
    } else if (!incoming.from_src) {
        incoming_main_ready(ch);
    } else {
        channel_unref(ch);
    }
}

static bool incoming_channel_ready(Channel *ch, void *opaque)
{
    if (incoming.tls) {
        /*
         * Off the main loop; a peer that fails to authenticate is reported
         * and dropped, and the listener waits on for the real source.
         */
        mig_tls_accept(incoming.tls, ch, incoming_tls_accepted, NULL);
        return incoming.is_socket;
    }
    if ((!migrate_multifd() && !migrate_postcopy_preempt()) || !incoming.is_socket) {
        incoming_main_ready(ch);
        return false;
    }
    mig_channel_peek_be32(ch, incoming_conn_peeked, NULL);
    /* Until the peeks tell the stream and the channels apart, keep accepting. */
    return true;
}

static bool incoming_listen(const char *uri, Error **errp)
{
    MigTLS *tls;

    incoming.is_socket = g_str_has_prefix(uri, "tcp:") || g_str_has_prefix(uri, "unix:");
    /* A file: has no channels to connect; a mapped-ram file is read by multifd-channels threads. */
    if (migrate_multifd() && !incoming.is_socket && !g_str_has_prefix(uri, "file:")) {
        error_setg(errp, "multifd needs a tcp:, unix: or (mapped-ram) file: URI, not '%s'", uri);
        return false;
    }
    if (!mig_tls_new(&tls, uri, true, errp)) {
        return false;
    }
    postcopy_dst_reset(&incoming_postcopy_ops);
    mig_tls_release(incoming.tls);
    incoming.tls = tls;
    if (!mig_channel_listen(uri, incoming_channel_ready, NULL, errp)) {
        mig_tls_release(incoming.tls);
        incoming.tls = NULL;
        return false;
    }
    incoming_set_state(MIGRATION_STATUS_SETUP);
    if (incoming.cpr_conn >= 0) {
        close(incoming.cpr_conn);
        incoming.cpr_conn = -1;
    }
    return true;
}

void migration_incoming_hold_cpr_conn(int fd)
{
    assert(incoming.cpr_conn < 0);
    incoming.cpr_conn = fd;
}

/* Main loop: migrate-recover's stream arrived. */
static void incoming_recover_main(Channel *ch)
{
    QEMUFile *f = qemu_file_new_input(ch, "incoming migration stream (recovered)");

    incoming.recover_main_seen = true;
    incoming_set_state(MIGRATION_STATUS_POSTCOPY_RECOVER);
    tsan_g_mutex_lock(&recover_lock);
    recover_file = f;
    g_cond_signal(&recover_cond);
    tsan_g_mutex_unlock(&recover_lock);
}

/*
 * postcopy-preempt: the recovered stream opens with a command (the source
 * asks for the received bitmaps first), the preempt channel with a RAM
 * record.
 */
static void incoming_recover_peeked(Channel *ch, uint32_t first, void *opaque)
{
    IncomingExpect want = {
        .recovering = true,
        .main = !incoming.recover_main_seen,
        .preempt = !incoming.preempt_connected,     /* peeked only with postcopy-preempt */
    };

    if (!ch) {
        return;
    }
    switch (incoming_conn_sort(first, &want)) {
    case INCOMING_CONN_MAIN:
        incoming_recover_main(ch);
        break;
    case INCOMING_CONN_PREEMPT:
        incoming.preempt_connected = true;
        postcopy_dst_set_preempt_channel(qemu_file_new_input(ch, "postcopy preempt channel"));
        break;
    default:
        error_report("postcopy recovery: closed a connection it did not expect (it starts "
                     "0x%08x)", first);
        channel_unref(ch);
        break;
    }
    if (incoming.recover_main_seen && incoming.preempt_connected) {
        mig_channel_listen_cancel();
    }
}

/* Main loop: a recovery's connection passed its TLS handshake. */
static void incoming_recover_tls_accepted(Channel *ch, uint32_t first, void *opaque)
{
    if (migrate_postcopy_preempt()) {
        incoming_recover_peeked(ch, first, NULL);
    } else if (!incoming.recover_main_seen) {
        mig_channel_listen_cancel();
        incoming_recover_main(ch);
    } else {
        channel_unref(ch);
    }
}

static bool incoming_recover_ready(Channel *ch, void *opaque)
{
    if (incoming.tls) {
        mig_tls_accept(incoming.tls, ch, incoming_recover_tls_accepted, NULL);
        return true;
    }
    if (!migrate_postcopy_preempt()) {
        incoming_recover_main(ch);
        return false;
    }
    mig_channel_peek_be32(ch, incoming_recover_peeked, NULL);
    return true;
}

bool qmp_migrate_recover(const char *uri, Error **errp)
{
    MigTLS *tls;

    if (migrate_get_state(&incoming.state) != MIGRATION_STATUS_POSTCOPY_PAUSED) {
        error_setg(errp, "Migrate recover can only be run when postcopy is paused.");
        return false;
    }
    if (!g_str_has_prefix(uri, "tcp:") && !g_str_has_prefix(uri, "unix:")) {
        error_setg(errp, "postcopy recovery needs a tcp: or unix: URI (a return path), not '%s'",
                   uri);
        return false;
    }
    if (!mig_tls_new(&tls, uri, true, errp)) {
        return false;
    }
    mig_tls_release(incoming.tls);
    incoming.tls = tls;
    incoming.recover_main_seen = false;
    incoming.preempt_connected = false;
    return mig_channel_listen(uri, incoming_recover_ready, NULL, errp);
}

bool migration_incoming_check(const char *arg, bool *is_cpr, Error **errp)
{
    g_autofree char *uri = NULL;

    *is_cpr = false;
    if (arg[0] != '{') {
        return true;
    }
    uri = migration_channel_json_uri(arg, is_cpr, errp);
    return uri != NULL;
}

bool migration_incoming_start(const char *arg, Error **errp)
{
    g_autofree char *uri = NULL;
    bool is_cpr;

    incoming.requested = true;
    if (!strcmp(arg, "defer")) {
        incoming.deferred = true;
        return true;
    }
    /* QEMU 10.0's JSON form: one channel object, what migrate-incoming's channels hold. */
    uri = arg[0] == '{' ? migration_channel_json_uri(arg, &is_cpr, errp) : g_strdup(arg);
    return uri && incoming_listen(uri, errp);
}

bool qmp_migrate_incoming(const char *uri_arg, const MigrationChannelList *channels,
                          bool has_exit_on_error, bool exit_on_error, Error **errp)
{
    g_autofree char *uri = migration_channels_uri(uri_arg, channels, NULL, errp);

    if (!uri) {
        return false;
    }
    if (!incoming.requested) {
        error_setg(errp, "'-incoming' was not specified on the command line");
        return false;
    }
    if (!incoming.deferred) {
        error_setg(errp, "The incoming migration has already been started");
        return false;
    }
    if (!incoming_listen(uri, errp)) {
        return false;
    }
    incoming.deferred = false;
    incoming.stay_on_error = has_exit_on_error && !exit_on_error;
    return true;
}

/* The reply to migrate_cancel goes out first; then the process ends, as on any failure. */
static void incoming_cancelled_exit_bh(void *opaque)
{
    error_report("incoming migration cancelled (migrate_cancel) before a source connected");
    qemu_system_exit_now(1);
}

bool migration_incoming_cancel(void)
{
    switch (migrate_get_state(&incoming.state)) {
    case MIGRATION_STATUS_SETUP:
        /* Listening, nobody connected yet (a TLS peer may be half-way in). */
        mig_channel_listen_cancel();
        mig_tls_cancel(incoming.tls);
        incoming_set_state(MIGRATION_STATUS_CANCELLED);
        qemu_bh_schedule_oneshot(incoming_cancelled_exit_bh, NULL);
        return true;
    case MIGRATION_STATUS_ACTIVE:
        /*
         * A source that stopped sending would leave mig/dst waiting for
         * ever: make its reads fail; the finish bottom half reports it.
         */
        incoming.cancelled = true;
        qemu_file_shutdown(incoming.from_src);
        mig_tls_cancel(incoming.tls);
        multifd_recv_shutdown();
        return true;
    default:
        return false;
    }
}

MigrationInfo *migration_incoming_info(MigrationInfo *info)
{
    int st = migrate_get_state(&incoming.state);

    if (st == MIGRATION_STATUS_NONE) {
        return info;
    }
    info->has_status = true;
    info->status = st;
    if (st == MIGRATION_STATUS_COMPLETED) {
        info->has_total_time = true;
        info->total_time = incoming.total_ms;
        if (incoming.downtime) {
            info->x_incoming_downtime = g_memdup2(incoming.downtime, sizeof(*incoming.downtime));
        }
    }
    if (incoming.error && (st == MIGRATION_STATUS_POSTCOPY_PAUSED ||
                           st == MIGRATION_STATUS_FAILED)) {
        info->error_desc = g_strdup(error_get_pretty(incoming.error));
    }
    postcopy_dst_fill_info(info);
    lazy_restore_fill_info(info);
    return info;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: the outgoing migration's state and its modes.
 *
 * One "mig/src" thread skeleton (migration.c) runs every outgoing
 * migration: open the output, write the setup sections, iterate with pacing
 * until the mode says switch over, complete, and hand cleanup to the main
 * loop; failure and cancel take the same exit. What differs between ways of
 * sending RAM is a row of hooks, chosen once when `migrate` starts:
 *
 *   row                   page source (init)    switchover when
 *   precopy_mode          dirty_scan_source     the predicted downtime fits (convergence.h)
 *   snapshot_mode         snapshot_ram_source   every page is in the stream
 *   postcopy_mode         postcopy_ram_source   migrate-start-postcopy (or as precopy)
 *   cpr_transfer_mode     cpr_ram_source        at once (the RAM is handed over by fd)
 *   cpr_exec_mode         cpr_ram_source        at once (then the process execs)
 *
 * A new mode is one file defining its row plus one line in outgoing_modes[]
 * (migration.c); docs/devel/migration.md says what the hooks must do.
 * Rows call only the layers below them (savevm, the page sources, status,
 * options), never migration.c.
 */
#ifndef MIGRATION_OUTGOING_H
#define MIGRATION_OUTGOING_H

#include "qapi/qapi-types.h"
#include "qemu/thread.h"
#include "system/runstate.h"
#include "migration/transport/channel.h"
#include "dirty-scan.h"
#include "migration/stream/global-state.h"
#include "convergence.h"

typedef struct MigrationOutMode MigrationOutMode;
typedef struct RAMPageSource RAMPageSource;

typedef enum MigReturnPathUse {
    MIG_RP_NONE,        /* none: the EOF having gone out is the end */
    MIG_RP_DEFAULT,     /* ours by default (tcp:, unix:), with the confirmation offer */
    MIG_RP_ASKED,       /* the user set return-path on, with the offer */
    MIG_RP_REQUIRED,    /* postcopy-ram needs it; no offer */
} MigReturnPathUse;

typedef struct MigrationState {
    /* MigrationStatus; changed only by migrate_set_state() (compare-and-swap). */
    int state;

    /* Set by qmp_migrate (BQL) before mig/src starts; read-only until the next migrate. */
    const MigrationOutMode *mode;
    char *uri;
    char *cpr_uri;              /* the cpr channel ("unix:PATH"), or NULL */
    QemuThread thread;
    int64_t start_ns;

    bool thread_running;        /* BQL */
    /*
     * mig/src while it runs, then the cleanup bottom half: a reference of
     * our own to to_dst's channel (the return path reads it, unsent bytes
     * are asked of it); NULL until connected.
     */
    Channel *channel;
    /*
     * TLS for every connection of this migration (NULL: plaintext): set by
     * qmp_migrate or a resume (BQL) before mig/src starts, cancelled by
     * migrate_cancel, released by the cleanup bottom half.
     */
    MigTLS *tls;
    QEMUFile *to_dst;           /* file_lock: NULL until connected; cancel shuts it down */
    GMutex file_lock;
    /*
     * Wakes mig/src from its pacing sleep (pacing.c): set by cancel or a
     * new max-bandwidth (BQL), cleared by mig/src; rate_lock.
     */
    GMutex rate_lock;
    GCond rate_cond;
    bool rate_kick;
    /*
     * rate_lock: migrate-continue's go for a switchover paused in
     * pre-switchover (pause-before-switchover); set by the monitor (BQL),
     * taken and cleared by mig/src, which rate_cond wakes.
     */
    bool switchover_go;

    /*
     * Written by mig/src (the modes' hooks included), read by query-migrate:
     * single aligned words, so a read is never torn.
     */
    int64_t setup_ms;
    int64_t total_ms;           /* final, once finished */
    int64_t downtime_ms;
    int64_t expected_downtime_ms;
    int64_t downtime_start_ns;
    double bandwidth_bpms;      /* bytes per ms of the last busy >= 100 ms window */
    /*
     * The same window's bytes per ms of the time the sender was not held
     * back by max-bandwidth: the rate the switchover gets, as it sends
     * without a limit. 0 until measured.
     */
    double unlimited_bpms;
    /* The same, of pages with data only (what a switchover mostly has left); 0 until measured. */
    double link_data_bpms;
    double link_acc_bytes, link_acc_ms;     /* mig/src's: what link_data_bpms is measured on */
    int64_t waited_total_ns;    /* mig/src's: slept for max-bandwidth in this migration */
    int64_t sync_cost_ns;       /* the last exact pending (a dirty sync) before switchover */
    uint64_t threshold_bytes;   /* switch over once this little is left */
    double mbps;
    uint64_t pages_per_second;
    uint64_t precopy_bytes;
    uint64_t downtime_bytes;
    bool vm_was_running;        /* at the switchover (precopy) or the freeze (snapshot) */
    /*
     * The mode's own state (mode->state_size bytes, zeroed): allocated by
     * qmp_migrate (BQL) before mig/src starts and freed by the next one, so
     * query-migrate can read it after the end. Each mode's struct says
     * which thread writes each field.
     */
    void *mode_state;
    /*
     * Why the return path is open, which says what the end of a precopy
     * waits for (precopy.c's precopy_confirm). Set by stream_start (mig/src),
     * reset when a migration starts.
     */
    MigReturnPathUse rp_use;
    /*
     * BQL: the point of no return passed (the go written, or the guest
     * committed to postmigrate): a cancel can no longer give the guest back,
     * so it is a no-op, and the result stays completed. Reset at start.
     */
    bool committed;
    /* mig/src; the cleanup bottom half reads it once the thread is joined. */
    int result;                 /* MigrationStatus the thread reached */

    uint64_t transferred_final; /* BQL: the stream's size once closed */
    /* Set by qmp_migrate (BQL) before mig/src starts: the connections before a resume carried this. */
    uint64_t transferred_before;
    bool resuming;              /* ditto: this run resumes a paused migration */
    Error *error;               /* BQL: the first error */
    /* The downtime model, the policy and progress (convergence.h says who writes what). */
    Convergence conv;
} MigrationState;

struct MigrationOutMode {
    const char *name;
    /*
     * max-bandwidth applies only once the user set it (a snapshot writes a
     * local file at disk speed by default, as QEMU's does).
     */
    bool bandwidth_only_if_set;
    /*
     * The destination runs the guest in this process's own memory (a live
     * update): once committed, this process must never run, reset or
     * migrate it again (migration_guest_owned_here).
     */
    bool hands_over_memory;
    /* Bytes of this mode's own state (MigrationState.mode_state), 0 for none. */
    size_t state_size;
    /*
     * It iterates until the downtime fits (precopy, postcopy before its
     * switch): the downtime model, x-converge-policy and x-progress apply.
     */
    bool converges;

    /* ---- main thread, BQL held ---- */
    /* migrate: whether the capabilities ask for this mode (first row that says yes wins). */
    bool (*selected)(void);
    /*
     * Required. migrate, the row was chosen and @ms (its state) zeroed: pick the
     * page source for the "ram" section (ram_select_source(), with the
     * source's state inside @ms) and forget the last run's statistics.
     * Every hook below gets @ms.
     */
    void (*init)(MigrationState *s, void *ms);
    /*
     * migrate, before anything starts: what this mode refuses (its
     * capabilities, the guest's memory, the channels given: @uri the main
     * one's, s->cpr_uri). NULL = none.
     */
    bool (*check_start)(MigrationState *s, const char *uri, Error **errp);
    /*
     * migrate-set-capabilities: checks that only this mode can make, such
     * as probing the kernel. NULL = none.
     */
    bool (*check_caps)(const bool *old_caps, const bool *new_caps, Error **errp);
    /* query-migrate: adds this mode's own statistics. NULL = none. */
    void (*fill_info)(const MigrationState *s, void *ms, MigrationInfo *info);
    /*
     * A completed migration's downtime phases (x-downtime, and the
     * MIGRATION event's detail), or NULL if the mode has none (new, the
     * caller's to free). NULL = none.
     */
    XDowntimeInfo *(*downtime_info)(const MigrationState *s, void *ms);
    /*
     * migrate-start-postcopy (migration.c checked the capability and that
     * a migration started): switch over to postcopy at the next chance.
     * mig/src reads what this sets. NULL = the mode ignores it.
     */
    void (*start_postcopy)(MigrationState *s, void *ms);
    /*
     * Once the migration completed and mig/src, its stream and its
     * channels are gone: hand the guest to the new process (cpr-exec
     * executes it, and does not return). False with @errp: it could not,
     * and the guest runs here again. NULL = nothing to do.
     */
    bool (*hand_over)(MigrationState *s, void *ms, Error **errp);
    /*
     * After mig/src was joined, whatever the outcome, before the sections'
     * save_cleanup: undo what setup did. NULL = nothing.
     */
    void (*cleanup)(MigrationState *s, void *ms);

    /* ---- mig/src, BQL not held (a hook takes it itself if it must) ---- */
    /*
     * Before the main channel connects (a live update hands over the
     * memory on its cpr channel). NULL = nothing.
     */
    bool (*before_connect)(MigrationState *s, void *ms, Error **errp);
    /*
     * Right after the stream's header, before the setup sections: what the
     * destination must hear first (postcopy: the return path, the advise).
     * NULL = nothing.
     */
    bool (*stream_start)(MigrationState *s, void *ms, QEMUFile *f, Error **errp);
    /*
     * After the setup sections were written (state active): what the mode
     * does before the first iteration. NULL = nothing.
     */
    bool (*setup)(MigrationState *s, void *ms, QEMUFile *f, Error **errp);
    /*
     * Before each iteration: switch over now? @all_sent: the last iteration
     * found nothing left to send.
     */
    bool (*switchover_ready)(MigrationState *s, void *ms, bool all_sent);
    /* Send what is left and end the stream. True on success. */
    bool (*complete)(MigrationState *s, void *ms, QEMUFile *f, Error **errp);
    /*
     * mig/src, and the cleanup bottom half once it joined mig/src: the
     * guest may run on the destination now (postcopy after the switch),
     * so it must never run here again, and a failure pauses instead
     * (postcopy-paused). NULL = never.
     */
    bool (*guest_moved)(void *ms);
    /*
     * migrate resume=true after a pause (postcopy-recover): go on over the
     * new connection @f, whose stream has no header or setup sections, to
     * the end. True on success. NULL: the mode cannot resume.
     */
    bool (*resume)(MigrationState *s, void *ms, QEMUFile *f, Error **errp);
};

/*
 * The precopy row's state. Here because postcopy's row reuses precopy's
 * hooks with its own copy.
 */
typedef struct PrecopyState {
    DirtyScan scan;             /* the page source's (dirty-scan.h) */
    /*
     * The switchover's phases, ns (XDowntimeInfo): written by mig/src
     * before the state turns completed, read after.
     */
    bool phases_valid;
    int64_t stop_ns, handover_ns, sync_ns, ram_ns, dev_ns, total_ns;
    int64_t expected_us;        /* predicted when the switchover was decided */
    /* mig/src's: when the handover's prepare (the images' flush) last ended; 0: never. */
    int64_t prepared_ns;
    /*
     * mig/src's: what is left already fits the downtime limit, and a pass
     * more is being sent to leave less (precopy_switchover_ready); the
     * exact pending bytes when it began. 0: not aiming lower.
     */
    uint64_t aim_from;
} PrecopyState;

extern const MigrationOutMode precopy_mode;
extern const MigrationOutMode snapshot_mode;
extern const MigrationOutMode postcopy_mode;
extern const MigrationOutMode cpr_transfer_mode;
extern const MigrationOutMode cpr_exec_mode;


/*
 * migration_stop_vm_locked: a mode's downtime starts (precopy's switchover,
 * a snapshot's freeze): remember whether the guest ran and record its run
 * state for the stream, then stop it in @state. BQL held.
 */
static inline void migration_stop_vm_locked(MigrationState *s, RunState state)
{
    s->downtime_start_ns = get_clock_ns();
    s->vm_was_running = runstate_is_running();
    global_state_store();
    vm_stop_force_state(state);
}

/*
 * migration_commit_locked: the guest now belongs to the destination (its
 * go was written, or there is nobody to ask and every step that can fail
 * is behind us). From here a cancel cannot give it back; a stopped guest
 * waits in postmigrate. BQL held. Called once per migration, last.
 */
static inline void migration_commit_locked(MigrationState *s)
{
    s->committed = true;
    if (runstate_check(RUN_STATE_FINISH_MIGRATE)) {
        runstate_set(RUN_STATE_POSTMIGRATE);
    }
}

#endif

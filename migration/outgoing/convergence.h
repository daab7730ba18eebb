/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: a precopy that finishes on its own
 * (docs/devel/convergence.md). Each measuring window, mig/src predicts the
 * downtime phase by phase (downtime-model.h) and sets the switchover's
 * threshold from it, watches for a stall and takes x-converge-policy's
 * steps (converge-policy.h), and keeps x-progress (progress.h).
 * query-migrate reads what is published under the lock.
 */
#ifndef MIGRATION_CONVERGENCE_H
#define MIGRATION_CONVERGENCE_H

#include "qapi/qapi-types.h"
#include "downtime-model.h"
#include "converge-policy.h"
#include "progress.h"

typedef struct MigrationState MigrationState;

typedef struct Convergence {
    /* Set by migrate (BQL) before mig/src starts, read-only after. */
    ConvergeStepSpec steps[CONV_MAX_STEPS];
    int n_steps;
    bool active;                /* this mode iterates (precopy, postcopy before the switch) */

    /* mig/src's own, across migrations: one outgoing migration at a time. */
    DowntimeHistory history;
    /* mig/src's own, per migration. */
    ConvergePolicy policy;
    MigProgress progress;
    int64_t prepare_ns;         /* the last handover prepare's (images' flush) duration */
    double link_bpms;           /* s->link_data_bpms averaged over windows */
    /*
     * Where the second pass began (convergence_resends_begin): from there
     * on every page with data goes out again, as in the stopped phase.
     */
    bool resend_marked;
    int64_t resend_ns, resend_waited_ns;
    uint64_t resend_data_pages;
    /* mig/src sets it (a cancel step); migration.c's iteration takes it and fails. */
    Error *stop_err;

    /*
     * lock: what mig/src publishes every window and at the end, what
     * query-migrate and info migrate read.
     */
    GMutex lock;
    DowntimePrediction now;     /* a switchover now */
    DowntimePrediction decided; /* the one the switchover was decided on (valid once taken) */
    bool decided_valid;
    MigProgress pub_progress;
    ConvergeAction step, next_step;
    int64_t next_in_ms;
    bool stalled;
    char reason[160];
    int64_t ended_ns;           /* 0 while running */
} Convergence;

/*
 * migrate (BQL), the mode chosen: x-converge-policy parsed and each step
 * checked against the capabilities. False with @errp: refused.
 */
bool convergence_check(MigrationState *s, bool iterates, Error **errp);
/*
 * migrate (BQL), accepted, before the migration's thread starts: what
 * query-migrate shows of the last migration is cleared.
 */
void convergence_reset(MigrationState *s);
/* mig/src, iteration starts. */
void convergence_start(MigrationState *s, uint64_t transferred);
/*
 * mig/src, once per measuring window, after the bandwidth was measured:
 * prediction, threshold (s->threshold_bytes) and expected downtime, the
 * policy's step if one is due, progress. @remaining: bytes left.
 */
void convergence_window(MigrationState *s, uint64_t remaining);
/*
 * mig/src, switchover decided with @remaining exact bytes left: the
 * prediction it is judged against (total in us returned).
 */
uint64_t convergence_decided(MigrationState *s, uint64_t remaining);
/*
 * mig/src, the second pass has begun (once per migration; later calls do
 * nothing): the rate of re-sent pages is measured from here.
 */
void convergence_resends_begin(MigrationState *s);
/* mig/src, the handover's prepare (flush) took @ns. */
void convergence_prepared(MigrationState *s, int64_t ns);
/* mig/src, a precopy switchover completed with these phases: learn from them. */
void convergence_learn(MigrationState *s, const DowntimeOutcome *o);
/* mig/src at its end: the progress settles. */
void convergence_end(MigrationState *s, bool completed);
/* mig/src, from the iteration loop: a policy's cancel, to fail with (NULL: none). */
Error *convergence_take_stop(MigrationState *s);
/* query-migrate (BQL): x-downtime-predicted and x-progress. */
void convergence_fill_info(MigrationState *s, int status, MigrationInfo *info);

#endif

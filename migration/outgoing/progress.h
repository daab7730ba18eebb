/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/outgoing: x-progress, an outgoing migration's
 * percent done and time left (docs/devel/convergence.md, "Progress").
 * Pure arithmetic on what mig/src measured each window; the percent never
 * decreases within one migration. Unit-tested by tests/unit/test-progress.c.
 */
#ifndef MIGRATION_PROGRESS_H
#define MIGRATION_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

#define PROGRESS_SAMPLES 10     /* one a second: the drain rate over ten seconds */

typedef struct MigProgress {
    double percent;             /* 0..100, never decreases */
    int64_t time_left_ms;       /* -1: cannot be estimated */
    /* What is left, once a second: how fast it drains. */
    int64_t sample_ns[PROGRESS_SAMPLES];
    uint64_t sample_left[PROGRESS_SAMPLES];
    unsigned samples;           /* taken so far (the ring holds the last PROGRESS_SAMPLES) */
} MigProgress;

/* What one window measured. */
typedef struct ProgressInputs {
    int64_t now_ns;
    int64_t elapsed_ns;         /* since migrate */
    uint64_t sent;              /* bytes of RAM sent so far, in remaining's unit */
    uint64_t remaining;         /* bytes left now */
    uint64_t fitting;           /* what may be left for a switchover within the limit */
    uint64_t predicted_us;      /* the downtime a switchover now would take */
} ProgressInputs;

void progress_start(MigProgress *p);
void progress_update(MigProgress *p, const ProgressInputs *in);
/* The migration ended: completed (100%) or not (the percent stays). */
void progress_finish(MigProgress *p, bool completed);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/outgoing: the precopy's downtime predicted phase by
 * phase (docs/devel/convergence.md, "The downtime model"), and what past
 * switchovers taught it. Pure arithmetic on what the caller measured, so
 * a unit test drives it (tests/unit/test-downtime-model.c).
 *
 * The phases are x-downtime's: stopping the vCPUs, the handover (the
 * images' last flush), the final dirty sync, the RAM left and what the
 * socket still holds at the rate the stopped phase gets, the devices. The
 * sum is what the switchover rule holds against downtime-limit, and what
 * the outcome is compared with.
 */
#ifndef MIGRATION_DOWNTIME_MODEL_H
#define MIGRATION_DOWNTIME_MODEL_H

#include <stdbool.h>
#include <stdint.h>

/* What the model is given at one moment (mig/src measures it). */
typedef struct DowntimeInputs {
    uint64_t limit_ms;          /* downtime-limit */
    uint64_t remaining;         /* bytes left, in pages' unit (a zero page counts 4 KiB) */
    uint64_t unsent;            /* bytes written that the destination has not taken */
    double link_bpms;           /* bytes/ms sent while not held back by max-bandwidth; 0: unknown */
    double resend_bpms;         /* the same, of pages sent again (passes after the first); 0: unknown */
    double user_bpms;           /* avail-switchover-bandwidth, bytes/ms; 0: not set */
    int64_t sync_ns;            /* the last dirty sync's cost */
    bool handover;              /* images to flush at the stop */
    int64_t prepare_ns;         /* this migration's last handover prepare (flush); 0: none */
} DowntimeInputs;

typedef enum DowntimeRateSource {
    DT_RATE_NONE,               /* nothing measured yet */
    DT_RATE_LINK,
    DT_RATE_SWITCHOVERS,        /* link or resend, scaled by what past switchovers achieved */
    DT_RATE_USER,
    DT_RATE_RESEND,             /* pages sent again, as a switchover's are */
} DowntimeRateSource;

/* One prediction, microseconds. */
typedef struct DowntimePrediction {
    uint64_t stop_us, handover_us, sync_us, ram_us, device_us, total_us;
    uint64_t remaining;         /* remaining + unsent of the inputs */
    double rate_bpms;           /* what ram_us was computed at */
    double link_bpms;           /* resend's rate then, else the link's (what learning compares with) */
    DowntimeRateSource source;
    bool valid;                 /* a rate was known: the total means something */
} DowntimePrediction;

/*
 * Learned from this process's completed switchovers (averages that weigh
 * the last one half). Owned by the one outgoing migration at a time.
 */
typedef struct DowntimeHistory {
    unsigned switchovers;       /* learned from */
    double stop_us, handover_us, device_us;
    unsigned rate_samples;      /* switchovers that sent enough RAM to time a rate */
    double rate_ratio;          /* achieved last-ram rate / the link's, then */
} DowntimeHistory;

/* The phases of a switchover that happened, microseconds (x-downtime's). */
typedef struct DowntimeOutcome {
    uint64_t stop_us, handover_us, sync_us, ram_us, device_us, total_us;
    uint64_t ram_bytes;         /* sent in the last-ram phase */
} DowntimeOutcome;

/* What a switchover now would take. */
void downtime_predict(const DowntimeHistory *h, const DowntimeInputs *in,
                      DowntimePrediction *p);
/*
 * The most RAM (in remaining's unit) that may be left for the predicted
 * downtime to stay within the margin below downtime-limit; 0 when the
 * fixed phases alone exceed it or nothing was measured.
 */
uint64_t downtime_fitting_bytes(const DowntimeHistory *h, const DowntimeInputs *in);
/* A switchover completed as @o after being predicted as @p: learn from it. */
void downtime_learn(DowntimeHistory *h, const DowntimePrediction *p, const DowntimeOutcome *o);
const char *downtime_rate_source_str(DowntimeRateSource s);

#endif

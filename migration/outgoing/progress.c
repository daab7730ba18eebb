/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * x-progress (progress.h; docs/devel/convergence.md, "Progress").
 *
 * Bytes make a poor yardstick: a precopy sends the same page many times
 * and what is left grows at every dirty sync, so "sent of total" runs
 * backwards (KubeVirt #10722). Time does not: the percent is the time
 * spent over the time spent plus the time left, and the time left is
 * what stands above the switchover's threshold over the rate at which
 * it drains (measured across passes), plus the downtime. Without a rate
 * that drains, the share of bytes sent among sent plus left stands in.
 * Either way a new value below the last is not shown: the percent holds
 * until the estimate catches up.
 */
#include "qemu/osdep.h"
#include "progress.h"

#define SAMPLE_NS           1000000000LL
/* Short of completion the percent stops here: the end is when it is. */
#define PERCENT_BEFORE_END  99.0
/* A time left beyond any meaning, still an int64 (the conversion of a larger double is not). */
#define TIME_LEFT_MAX_MS    (INT64_MAX / 2)

void progress_start(MigProgress *p)
{
    memset(p, 0, sizeof(*p));
    p->time_left_ms = -1;
}

static void sample(MigProgress *p, const ProgressInputs *in)
{
    unsigned last = (p->samples + PROGRESS_SAMPLES - 1) % PROGRESS_SAMPLES;

    if (p->samples && in->now_ns - p->sample_ns[last] < SAMPLE_NS) {
        return;
    }
    p->sample_ns[p->samples % PROGRESS_SAMPLES] = in->now_ns;
    p->sample_left[p->samples % PROGRESS_SAMPLES] = in->remaining;
    p->samples++;
}

/* Bytes per ns that what is left fell by over the samples kept; <= 0: it does not drain. */
static double drain_rate(const MigProgress *p)
{
    unsigned n = MIN(p->samples, PROGRESS_SAMPLES);
    unsigned oldest = p->samples > PROGRESS_SAMPLES ? p->samples % PROGRESS_SAMPLES : 0;
    unsigned newest = (p->samples + PROGRESS_SAMPLES - 1) % PROGRESS_SAMPLES;
    int64_t dt;

    if (n < 3) {
        return 0;
    }
    dt = p->sample_ns[newest] - p->sample_ns[oldest];
    return dt > 0 ? ((double)p->sample_left[oldest] - (double)p->sample_left[newest]) / dt : 0;
}

void progress_update(MigProgress *p, const ProgressInputs *in)
{
    double raw, rate;

    sample(p, in);
    rate = drain_rate(p);
    if (in->remaining <= in->fitting) {
        p->time_left_ms = in->predicted_us / 1000;
    } else if (rate > 0) {
        /*
         * Petabytes at a byte a second pass INT64_MAX ms, whose conversion
         * is undefined (x86 gives INT64_MIN, shown as a negative time).
         */
        double ms = (in->remaining - in->fitting) / rate / 1e6 + in->predicted_us / 1000;

        p->time_left_ms = ms < TIME_LEFT_MAX_MS ? ms : TIME_LEFT_MAX_MS;
    } else {
        p->time_left_ms = -1;
    }
    if (p->time_left_ms >= 0) {
        raw = 100.0 * in->elapsed_ns / (in->elapsed_ns + p->time_left_ms * 1e6);
    } else {
        raw = in->sent + in->remaining ? 100.0 * in->sent / (in->sent + in->remaining) : 0;
    }
    p->percent = MAX(p->percent, MIN(raw, PERCENT_BEFORE_END));
}

void progress_finish(MigProgress *p, bool completed)
{
    if (completed) {
        p->percent = 100;
        p->time_left_ms = 0;
    } else {
        p->time_left_ms = -1;
    }
}

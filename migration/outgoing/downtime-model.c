/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The downtime model (downtime-model.h; docs/devel/convergence.md).
 *
 * QEMU switches over once what is left is below the bandwidth measured
 * while iterating times the limit. That bandwidth is max-bandwidth's
 * throttle, yet the stopped phase is sent without it: a guest dirtying
 * 128 MiB/s against the default 128 MiB/s never met the rule, on QEMU nor
 * on ours, with a link ten times faster idle. Here each phase of the
 * stop is predicted from what was measured: the RAM at the rate the
 * sender reached while not held back, corrected by what past switchovers
 * achieved against that rate; the fixed phases from past switchovers.
 */
#include "qemu/osdep.h"
#include "downtime-model.h"

/*
 * Before any switchover was seen here: x-downtime's medians over the 12
 * guests of migbench slo-mixed (stop-vcpus 0.1-3.4 ms, device-state
 * 0.3-1.4 ms on kvm-pvm).
 */
#define STOP_PRIOR_US       300
#define DEVICE_PRIOR_US     500
#define HANDOVER_PRIOR_US   2000

/*
 * The predicted total must stay this far below the limit: the guest
 * dirties between the decision and the stop, and a rate measured over
 * 100 ms windows wanders by about this much (docs/benchmarks.md, slo).
 */
#define LIMIT_MARGIN        0.85

/* Learned averages weigh the newest switchover this much. */
#define LEARN_WEIGHT        0.5
/* A last-ram phase shorter than this, or carrying less, times latency, not a rate. */
#define RATE_MIN_US         2000
#define RATE_MIN_BYTES      (4 << 20)
/*
 * A past switchover may say the link is slower or faster, within reason.
 */
#define RATIO_MIN           0.25
#define RATIO_MAX           4.0

static double learned(unsigned n, double value, double prior)
{
    return n ? value : prior;
}

/* The fixed phases: everything but the RAM. */
static void predict_fixed(const DowntimeHistory *h, const DowntimeInputs *in,
                          DowntimePrediction *p)
{
    p->stop_us = learned(h->switchovers, h->stop_us, STOP_PRIOR_US);
    p->device_us = learned(h->switchovers, h->device_us, DEVICE_PRIOR_US);
    p->sync_us = in->sync_ns > 0 ? in->sync_ns / 1000 : 0;
    p->handover_us = 0;
    if (in->handover) {
        /* The stop's flush follows a short one made just before it: at most the last prepare's. */
        double prior = in->prepare_ns > 0 ? in->prepare_ns / 1000.0 : HANDOVER_PRIOR_US;

        p->handover_us = h->switchovers && h->handover_us > 0 ? MIN(h->handover_us, prior)
                                                               : prior;
    }
}

/*
 * What the stopped phase's rate is predicted from: the rate of pages sent
 * again once there is one (a switchover sends those), else the link's.
 */
static double base_bpms(const DowntimeInputs *in)
{
    return in->resend_bpms > 0 ? in->resend_bpms : in->link_bpms;
}

static double predict_rate(const DowntimeHistory *h, const DowntimeInputs *in,
                           DowntimeRateSource *src)
{
    if (in->user_bpms > 0) {
        *src = DT_RATE_USER;
        return in->user_bpms;
    }
    if (base_bpms(in) <= 0) {
        *src = DT_RATE_NONE;
        return 0;
    }
    if (h->rate_samples) {
        *src = DT_RATE_SWITCHOVERS;
        return base_bpms(in) * h->rate_ratio;
    }
    *src = in->resend_bpms > 0 ? DT_RATE_RESEND : DT_RATE_LINK;
    return base_bpms(in);
}

void downtime_predict(const DowntimeHistory *h, const DowntimeInputs *in, DowntimePrediction *p)
{
    memset(p, 0, sizeof(*p));
    predict_fixed(h, in, p);
    /* Saturate: a wrapped sum would predict a near-zero RAM phase for the most RAM. */
    p->remaining = in->remaining + in->unsent >= in->remaining ? in->remaining + in->unsent
                                                               : UINT64_MAX;
    p->link_bpms = base_bpms(in);
    p->rate_bpms = predict_rate(h, in, &p->source);
    p->valid = p->rate_bpms > 0;
    if (p->valid) {
        double us = p->remaining / p->rate_bpms * 1000.0;

        p->ram_us = us < (double)UINT64_MAX / 2 ? (uint64_t)us : UINT64_MAX / 2;
    }
    p->total_us = p->stop_us + p->handover_us + p->sync_us + p->ram_us + p->device_us;
}

uint64_t downtime_fitting_bytes(const DowntimeHistory *h, const DowntimeInputs *in)
{
    DowntimePrediction p;
    double budget_us, bytes;

    downtime_predict(h, in, &p);
    if (!p.valid) {
        return 0;
    }
    budget_us = in->limit_ms * 1000.0 * LIMIT_MARGIN -
                (double)(p.stop_us + p.handover_us + p.sync_us + p.device_us);
    if (budget_us <= 0) {
        return 0;
    }
    bytes = budget_us / 1000.0 * p.rate_bpms - in->unsent;
    if (bytes <= 0) {
        return 0;
    }
    return bytes < 0x1p63 ? (uint64_t)bytes : UINT64_MAX / 2;
}

static double average(unsigned n, double old, double sample)
{
    return n ? old + LEARN_WEIGHT * (sample - old) : sample;
}

void downtime_learn(DowntimeHistory *h, const DowntimePrediction *p, const DowntimeOutcome *o)
{
    h->stop_us = average(h->switchovers, h->stop_us, o->stop_us);
    h->device_us = average(h->switchovers, h->device_us, o->device_us);
    if (o->handover_us) {
        h->handover_us = average(h->switchovers && h->handover_us > 0, h->handover_us,
                                 o->handover_us);
    }
    h->switchovers++;
    if (p->link_bpms > 0 && o->ram_us >= RATE_MIN_US && o->ram_bytes >= RATE_MIN_BYTES) {
        double achieved = o->ram_bytes / (o->ram_us / 1000.0);
        double ratio = MIN(MAX(achieved / p->link_bpms, RATIO_MIN), RATIO_MAX);

        h->rate_ratio = average(h->rate_samples, h->rate_ratio, ratio);
        h->rate_samples++;
    }
}

const char *downtime_rate_source_str(DowntimeRateSource s)
{
    static const char *const names[] = {
        [DT_RATE_NONE] = "none", [DT_RATE_LINK] = "link",
        [DT_RATE_SWITCHOVERS] = "switchovers", [DT_RATE_USER] = "user",
        [DT_RATE_RESEND] = "resend",
    };

    return s < ARRAY_SIZE(names) ? names[s] : "none";
}

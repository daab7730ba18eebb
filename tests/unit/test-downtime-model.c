/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for migration/outgoing/downtime-model.c: the phases predicted
 * before and after switchovers were seen, where the RAM's rate comes from,
 * the bytes that fit the limit against the prediction itself (a seeded
 * random sweep), what learning keeps and ignores, and inputs at their
 * types' ends.
 */
#include "qemu/osdep.h"
#include <math.h>
#include "migration/outgoing/downtime-model.h"

#define MIB     (1024ULL * 1024)
#define MARGIN  0.85            /* downtime-model.c's LIMIT_MARGIN */

/* Within a byte: the margin (0.85) is not exact in binary. */
static void assert_near(uint64_t got, uint64_t want)
{
    g_assert_cmpuint(got + 1, >=, want);
    g_assert_cmpuint(got, <=, want + 1);
}

static DowntimePrediction predict(const DowntimeHistory *h, const DowntimeInputs *in)
{
    DowntimePrediction p;

    downtime_predict(h, in, &p);
    g_assert_cmpuint(p.total_us, ==, p.stop_us + p.handover_us + p.sync_us + p.ram_us +
                     p.device_us);
    return p;
}

/* Before any switchover: the priors, the sync as measured, the handover at most the prepare's. */
static void test_priors(void)
{
    DowntimeHistory h = { 0 };
    DowntimeInputs in = { .limit_ms = 300, .link_bpms = 1e6, .sync_ns = 2500000 };
    DowntimePrediction p = predict(&h, &in);

    g_assert_cmpuint(p.stop_us, ==, 300);
    g_assert_cmpuint(p.device_us, ==, 500);
    g_assert_cmpuint(p.sync_us, ==, 2500);
    g_assert_cmpuint(p.handover_us, ==, 0);
    g_assert_cmpuint(p.ram_us, ==, 0);
    g_assert_cmpuint(p.total_us, ==, 3300);
    g_assert_true(p.valid);

    in.handover = true;
    g_assert_cmpuint(predict(&h, &in).handover_us, ==, 2000);
    in.prepare_ns = 700000;
    g_assert_cmpuint(predict(&h, &in).handover_us, ==, 700);
    /* A negative sync (a clock step) counts as none. */
    in.sync_ns = -5;
    g_assert_cmpuint(predict(&h, &in).sync_us, ==, 0);

    /* Once learned, the handover is the smaller of the learned and the last prepare. */
    h = (DowntimeHistory) { .switchovers = 1, .stop_us = 400, .device_us = 900,
                            .handover_us = 400 };
    p = predict(&h, &in);
    g_assert_cmpuint(p.stop_us, ==, 400);
    g_assert_cmpuint(p.device_us, ==, 900);
    g_assert_cmpuint(p.handover_us, ==, 400);
    h.handover_us = 900;
    g_assert_cmpuint(predict(&h, &in).handover_us, ==, 700);
    in.prepare_ns = 0;
    g_assert_cmpuint(predict(&h, &in).handover_us, ==, 900);
    /* Switchovers seen, none with a handover: the prior. */
    h.handover_us = 0;
    g_assert_cmpuint(predict(&h, &in).handover_us, ==, 2000);
}

static void test_rate_sources(void)
{
    DowntimeHistory h = { 0 };
    DowntimeInputs in = { .limit_ms = 300, .remaining = 1000000000 };
    DowntimePrediction p = predict(&h, &in);

    g_assert_cmpint(p.source, ==, DT_RATE_NONE);
    g_assert_false(p.valid);
    g_assert_cmpuint(p.ram_us, ==, 0);
    g_assert_cmpuint(p.total_us, ==, p.stop_us + p.device_us);
    g_assert_cmpuint(downtime_fitting_bytes(&h, &in), ==, 0);

    in.link_bpms = 1e6;
    p = predict(&h, &in);
    g_assert_cmpint(p.source, ==, DT_RATE_LINK);
    g_assert_true(p.valid);
    g_assert_cmpfloat(p.rate_bpms, ==, 1e6);
    g_assert_cmpfloat(p.link_bpms, ==, 1e6);
    g_assert_cmpuint(p.ram_us, ==, 1000000);

    /* Past switchovers scale the link; without a link they say nothing. */
    h = (DowntimeHistory) { .switchovers = 1, .stop_us = 1000, .device_us = 3000,
                            .rate_samples = 1, .rate_ratio = 2.0 };
    p = predict(&h, &in);
    g_assert_cmpint(p.source, ==, DT_RATE_SWITCHOVERS);
    g_assert_cmpfloat(p.rate_bpms, ==, 2e6);
    g_assert_cmpuint(p.ram_us, ==, 500000);
    in.link_bpms = 0;
    g_assert_cmpint(predict(&h, &in).source, ==, DT_RATE_NONE);

    /* The user's word wins over both, and needs no link. */
    in.user_bpms = 4e6;
    p = predict(&h, &in);
    g_assert_cmpint(p.source, ==, DT_RATE_USER);
    g_assert_cmpuint(p.ram_us, ==, 250000);
    in.link_bpms = 1e6;
    g_assert_cmpint(predict(&h, &in).source, ==, DT_RATE_USER);

    g_assert_cmpstr(downtime_rate_source_str(DT_RATE_NONE), ==, "none");
    g_assert_cmpstr(downtime_rate_source_str(DT_RATE_LINK), ==, "link");
    g_assert_cmpstr(downtime_rate_source_str(DT_RATE_SWITCHOVERS), ==, "switchovers");
    g_assert_cmpstr(downtime_rate_source_str(DT_RATE_USER), ==, "user");
    g_assert_cmpstr(downtime_rate_source_str(DT_RATE_RESEND), ==, "resend");
    g_assert_cmpstr(downtime_rate_source_str(DT_RATE_RESEND + 1), ==, "none");
}

/*
 * Once pages went out a second time, their rate is what the stopped phase
 * is predicted from (it sends such pages), and what learning scales.
 */
static void test_resend_rate(void)
{
    DowntimeHistory h = { 0 };
    DowntimeInputs in = { .limit_ms = 300, .remaining = 1000000000, .link_bpms = 1e6,
                          .resend_bpms = 4e6 };
    DowntimePrediction p = predict(&h, &in);
    DowntimeOutcome o = { .ram_us = 100000, .ram_bytes = 800000000 };
    uint64_t fit_resend, fit_link;

    g_assert_cmpint(p.source, ==, DT_RATE_RESEND);
    g_assert_cmpfloat(p.rate_bpms, ==, 4e6);
    g_assert_cmpfloat(p.link_bpms, ==, 4e6);
    g_assert_cmpuint(p.ram_us, ==, 250000);
    /* The fitting bytes follow the faster rate: 4x the link's alone. */
    fit_resend = downtime_fitting_bytes(&h, &in);
    in.resend_bpms = 0;
    fit_link = downtime_fitting_bytes(&h, &in);
    in.resend_bpms = 4e6;
    g_assert_cmpuint(fit_link, >, 0);
    g_assert_cmpuint(fit_resend, ==, fit_link * 4);

    /* 8e6 bytes/ms achieved against 4e6 predicted: a ratio of 2 on the resend rate. */
    downtime_learn(&h, &p, &o);
    g_assert_cmpfloat_with_epsilon(h.rate_ratio, 2.0, 1e-9);
    p = predict(&h, &in);
    g_assert_cmpint(p.source, ==, DT_RATE_SWITCHOVERS);
    g_assert_cmpfloat(p.rate_bpms, ==, 8e6);
    /* Without resent pages yet, the same ratio scales the link. */
    in.resend_bpms = 0;
    g_assert_cmpfloat(predict(&h, &in).rate_bpms, ==, 2e6);
    /* The user's word still wins. */
    in.resend_bpms = 4e6;
    in.user_bpms = 1e6;
    g_assert_cmpint(predict(&h, &in).source, ==, DT_RATE_USER);
}

/* What the socket still holds goes out in the stop too, and leaves less room to fit. */
static void test_unsent(void)
{
    /* 4 ms of fixed phases, learned (the priors may change). */
    DowntimeHistory h = { .switchovers = 1, .stop_us = 1000, .device_us = 3000 };
    DowntimeInputs in = { .limit_ms = 300, .remaining = 1000000000, .unsent = 500000000,
                          .link_bpms = 1e6 };
    DowntimePrediction p = predict(&h, &in);

    g_assert_cmpuint(p.remaining, ==, 1500000000);
    g_assert_cmpuint(p.ram_us, ==, 1500000);
    /* 300 ms * 0.85 less 4 ms of fixed phases: 251 ms at 1 GB/s, less the unsent. */
    in.unsent = 0;
    assert_near(downtime_fitting_bytes(&h, &in), 251000000);
    in.unsent = 100000000;
    assert_near(downtime_fitting_bytes(&h, &in), 151000000);
    in.unsent = 251000000;
    g_assert_cmpuint(downtime_fitting_bytes(&h, &in), ==, 0);
    in.unsent = 300000000;
    g_assert_cmpuint(downtime_fitting_bytes(&h, &in), ==, 0);
}

static void test_fixed_exceed(void)
{
    DowntimeHistory h = { .switchovers = 1, .stop_us = 1000, .device_us = 3000 };
    DowntimeInputs in = { .limit_ms = 4, .link_bpms = 1e6 };

    /* 3.4 ms of margin against 4 ms of stop and devices. */
    g_assert_cmpuint(downtime_fitting_bytes(&h, &in), ==, 0);
    in.limit_ms = 5;
    assert_near(downtime_fitting_bytes(&h, &in), 250000);
    /* A sync or handover that eats the rest. */
    in.sync_ns = 250000;
    g_assert_cmpuint(downtime_fitting_bytes(&h, &in), ==, 0);
    in.sync_ns = 0;
    in.handover = true;
    g_assert_cmpuint(downtime_fitting_bytes(&h, &in), ==, 0);
    in.limit_ms = 0;
    in.handover = false;
    g_assert_cmpuint(downtime_fitting_bytes(&h, &in), ==, 0);
}

/*
 * Whatever the inputs: leaving exactly the fitting bytes predicts a
 * downtime within the margin, and two more milliseconds' worth does not.
 */
static void test_fitting_consistent(void)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(41);
    int fitted = 0;

    for (int i = 0; i < 20000; i++) {
        DowntimeHistory h = { 0 };
        DowntimeInputs in = {
            .limit_ms = g_rand_int_range(r, 1, 10000),
            .unsent = g_rand_boolean(r) ? g_rand_int_range(r, 0, 1 << 30) : 0,
            .link_bpms = pow(10, g_rand_double_range(r, 0, 7)),
            .user_bpms = g_rand_int_range(r, 0, 4) ? 0 : pow(10, g_rand_double_range(r, 0, 7)),
            .sync_ns = g_rand_int_range(r, 0, 50000000),
            .handover = g_rand_boolean(r),
            .prepare_ns = g_rand_boolean(r) ? g_rand_int_range(r, 0, 10000000) : 0,
        };
        DowntimePrediction p;
        uint64_t fit, budget_us = in.limit_ms * 1000 * MARGIN;

        if (g_rand_boolean(r)) {
            h = (DowntimeHistory) {
                .switchovers = g_rand_int_range(r, 1, 10),
                .stop_us = g_rand_double_range(r, 0, 20000),
                .device_us = g_rand_double_range(r, 0, 50000),
                .handover_us = g_rand_double_range(r, 0, 20000),
                .rate_samples = g_rand_int_range(r, 0, 3),
                .rate_ratio = g_rand_double_range(r, 0.25, 4),
            };
        }
        fit = downtime_fitting_bytes(&h, &in);
        in.remaining = fit;
        p = predict(&h, &in);
        g_assert_true(p.valid);
        if (!fit) {
            /* Nothing fits: the stop would take the margin without any RAM left, near enough. */
            g_assert_cmpfloat(p.total_us + 1000.0 / p.rate_bpms + 1, >=, budget_us);
            continue;
        }
        fitted++;
        g_assert_cmpuint(p.total_us, <=, budget_us + 1);
        in.remaining = fit + (uint64_t)ceil(2 * p.rate_bpms);
        p = predict(&h, &in);
        g_assert_cmpuint(p.total_us, >, budget_us);
    }
    /* The sweep covers both sides. */
    g_assert_cmpint(fitted, >, 1000);
    g_assert_cmpint(fitted, <, 19000);
}

static DowntimePrediction at_link(const DowntimeHistory *h, double link_bpms)
{
    DowntimeInputs in = { .limit_ms = 300, .remaining = 64 * MIB, .link_bpms = link_bpms };

    return predict(h, &in);
}

static void test_learn(void)
{
    DowntimeHistory h = { 0 };
    DowntimePrediction p = at_link(&h, 1e6);

    /* The first switchover is taken as it came: 15 MB in 10 ms is 1.5x the link. */
    downtime_learn(&h, &p, &(DowntimeOutcome) { .stop_us = 800, .device_us = 2000,
                                                .ram_us = 10000, .ram_bytes = 15000000 });
    g_assert_cmpuint(h.switchovers, ==, 1);
    g_assert_cmpfloat(h.stop_us, ==, 800);
    g_assert_cmpfloat(h.device_us, ==, 2000);
    g_assert_cmpfloat(h.handover_us, ==, 0);
    g_assert_cmpuint(h.rate_samples, ==, 1);
    g_assert_cmpfloat_with_epsilon(h.rate_ratio, 1.5, 1e-9);
    p = at_link(&h, 1e6);
    g_assert_cmpuint(p.stop_us, ==, 800);
    g_assert_cmpuint(p.device_us, ==, 2000);
    g_assert_cmpint(p.source, ==, DT_RATE_SWITCHOVERS);
    g_assert_cmpfloat_with_epsilon(p.rate_bpms, 1.5e6, 1e-3);

    /* The next moves the averages half way; the first handover is taken as it came. */
    downtime_learn(&h, &p, &(DowntimeOutcome) { .stop_us = 1600, .device_us = 4000,
                                                .handover_us = 3000, .ram_us = 10000,
                                                .ram_bytes = 25000000 });
    g_assert_cmpuint(h.switchovers, ==, 2);
    g_assert_cmpfloat(h.stop_us, ==, 1200);
    g_assert_cmpfloat(h.device_us, ==, 3000);
    g_assert_cmpfloat(h.handover_us, ==, 3000);
    g_assert_cmpuint(h.rate_samples, ==, 2);
    g_assert_cmpfloat_with_epsilon(h.rate_ratio, 2.0, 1e-9);

    /* Too short, too small, or no link to compare with: the fixed phases only. */
    downtime_learn(&h, &p, &(DowntimeOutcome) { .stop_us = 1200, .device_us = 3000,
                                                .handover_us = 1000, .ram_us = 1999,
                                                .ram_bytes = 1000 * MIB });
    g_assert_cmpfloat(h.handover_us, ==, 2000);
    downtime_learn(&h, &p, &(DowntimeOutcome) { .stop_us = 1200, .device_us = 3000,
                                                .ram_us = 100000, .ram_bytes = 4 * MIB - 1 });
    p = at_link(&h, 0);
    downtime_learn(&h, &p, &(DowntimeOutcome) { .stop_us = 1200, .device_us = 3000,
                                                .ram_us = 100000, .ram_bytes = 1000 * MIB });
    g_assert_cmpuint(h.switchovers, ==, 5);
    g_assert_cmpuint(h.rate_samples, ==, 2);
    g_assert_cmpfloat_with_epsilon(h.rate_ratio, 2.0, 1e-9);
    /* No handover in an outcome keeps the learned one. */
    g_assert_cmpfloat(h.handover_us, ==, 2000);

    /* A ratio out of reason is clamped, both ways. */
    h = (DowntimeHistory) { 0 };
    p = at_link(&h, 1e6);
    downtime_learn(&h, &p, &(DowntimeOutcome) { .ram_us = 10000, .ram_bytes = 1000000000 });
    g_assert_cmpfloat(h.rate_ratio, ==, 4.0);
    h = (DowntimeHistory) { 0 };
    downtime_learn(&h, &p, &(DowntimeOutcome) { .ram_us = 1000000, .ram_bytes = 5000000 });
    g_assert_cmpfloat(h.rate_ratio, ==, 0.25);
    /* At the edges a rate is timed. */
    h = (DowntimeHistory) { 0 };
    downtime_learn(&h, &p, &(DowntimeOutcome) { .ram_us = 2000, .ram_bytes = 4 * MIB });
    g_assert_cmpuint(h.rate_samples, ==, 1);
    g_assert_cmpfloat_with_epsilon(h.rate_ratio, 4 * MIB / 2.0 / 1e6, 1e-9);
}

/* Inputs at their types' ends: nothing wraps, nothing comes out as 0 that is not. */
static void test_huge(void)
{
    DowntimeHistory h = { 0 };
    DowntimeInputs in = {
        .limit_ms = UINT64_MAX, .remaining = 1ULL << 63, .unsent = 1ULL << 63,
        .link_bpms = 1e-300, .sync_ns = INT64_MAX, .handover = true, .prepare_ns = INT64_MAX,
    };
    DowntimePrediction p = predict(&h, &in);

    g_assert_cmpuint(p.remaining, ==, UINT64_MAX);
    g_assert_cmpuint(p.ram_us, ==, UINT64_MAX / 2);
    g_assert_cmpuint(p.sync_us, ==, INT64_MAX / 1000);
    g_assert_cmpuint(p.handover_us, >=, INT64_MAX / 1000);
    g_assert_cmpuint(p.total_us, >, p.ram_us);
    g_assert_cmpuint(downtime_fitting_bytes(&h, &in), ==, 0);

    in.remaining = in.unsent = UINT64_MAX;
    p = predict(&h, &in);
    g_assert_cmpuint(p.remaining, ==, UINT64_MAX);
    g_assert_cmpuint(p.ram_us, ==, UINT64_MAX / 2);

    /* A rate too big to multiply: the fitting bytes saturate, not wrap. */
    in = (DowntimeInputs) { .limit_ms = UINT64_MAX, .user_bpms = 1e300 };
    g_assert_cmpuint(downtime_fitting_bytes(&h, &in), ==, UINT64_MAX / 2);
    in.user_bpms = INFINITY;
    g_assert_cmpuint(downtime_fitting_bytes(&h, &in), ==, UINT64_MAX / 2);
    in.remaining = UINT64_MAX;
    p = predict(&h, &in);
    g_assert_cmpuint(p.ram_us, ==, 0);
    in.user_bpms = 1e300;
    in.unsent = UINT64_MAX;
    g_assert_cmpuint(downtime_fitting_bytes(&h, &in), ==, UINT64_MAX / 2);
    /* Huge unsent against a small limit: nothing fits. */
    in = (DowntimeInputs) { .limit_ms = 300, .unsent = UINT64_MAX, .link_bpms = 1e6 };
    g_assert_cmpuint(downtime_fitting_bytes(&h, &in), ==, 0);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/downtime-model/priors", test_priors);
    g_test_add_func("/downtime-model/rate-sources", test_rate_sources);
    g_test_add_func("/downtime-model/resend-rate", test_resend_rate);
    g_test_add_func("/downtime-model/unsent", test_unsent);
    g_test_add_func("/downtime-model/fixed-exceed", test_fixed_exceed);
    g_test_add_func("/downtime-model/fitting-consistent", test_fitting_consistent);
    g_test_add_func("/downtime-model/learn", test_learn);
    g_test_add_func("/downtime-model/huge", test_huge);
    return g_test_run();
}

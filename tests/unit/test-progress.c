/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for migration/outgoing/progress.c: the time left from how
 * fast what is left drains, the percent from it, and the invariant the
 * x-progress user relies on: within one migration the percent never
 * decreases and stays below 100 until the end, whatever the inputs do
 * (a seeded random walk, what is left jumping back at every dirty sync).
 */
#include "qemu/osdep.h"
#include <math.h>
#include "migration/outgoing/progress.h"

#define S_NS        1000000000LL
#define GB          1000000000ULL

static void update(MigProgress *p, int64_t now_ns, uint64_t sent, uint64_t remaining,
                   uint64_t fitting, uint64_t predicted_us)
{
    progress_update(p, &(ProgressInputs) {
        .now_ns = now_ns, .elapsed_ns = now_ns + 10 * S_NS, .sent = sent,
        .remaining = remaining, .fitting = fitting, .predicted_us = predicted_us,
    });
}

static void check_step(const MigProgress *p, double *last)
{
    g_assert_false(isnan(p->percent));
    g_assert_cmpfloat(p->percent, >=, *last);
    g_assert_cmpfloat(p->percent, <=, 99);
    g_assert_cmpint(p->time_left_ms, >=, -1);
    *last = p->percent;
}

/* Without a rate that drains, the share of bytes sent. */
static void test_bytes_share(void)
{
    MigProgress p;

    progress_start(&p);
    g_assert_cmpfloat(p.percent, ==, 0);
    g_assert_cmpint(p.time_left_ms, ==, -1);
    update(&p, 0, 300, 700, 0, 0);
    g_assert_cmpint(p.time_left_ms, ==, -1);
    g_assert_cmpfloat(p.percent, ==, 30);
    /* Two samples are not a rate yet. */
    update(&p, S_NS, 600, 600, 0, 0);
    g_assert_cmpint(p.time_left_ms, ==, -1);
    g_assert_cmpfloat(p.percent, ==, 50);
    /* Growing back: the share falls, the percent holds. */
    update(&p, 2 * S_NS, 900, 2100, 0, 0);
    g_assert_cmpint(p.time_left_ms, ==, -1);
    g_assert_cmpfloat(p.percent, ==, 50);
}

/* The time left is what stands above the fitting bytes at the drain rate, plus the downtime. */
static void test_time_left(void)
{
    MigProgress p;

    progress_start(&p);
    update(&p, 0, 0, 10 * GB, GB, 200000);
    update(&p, 1 * S_NS, GB, 9 * GB, GB, 200000);
    update(&p, 2 * S_NS, 2 * GB, 8 * GB, GB, 200000);
    /* 1 GB/s: 7 s to the fitting bytes, then 200 ms of downtime; 12 s spent. */
    g_assert_cmpint(p.time_left_ms, ==, 7200);
    g_assert_cmpfloat_with_epsilon(p.percent, 100.0 * 12 / 19.2, 1e-9);

    /* A window within the second is not sampled: the rate stays, the time follows. */
    update(&p, 2 * S_NS + S_NS / 2, 2 * GB, 7 * GB + GB / 2, GB, 200000);
    g_assert_cmpint(p.time_left_ms, ==, 6700);
    g_assert_cmpuint(p.samples, ==, 3);

    /* The rate is over the last ten samples: 1 GB/s for 5 s, then 0.5 GB/s. */
    progress_start(&p);
    for (int t = 0; t <= 14; t++) {
        uint64_t left = t <= 5 ? 20 * GB - t * GB : 15 * GB - (t - 5) * GB / 2;

        update(&p, t * S_NS, 0, left, 0, 0);
    }
    g_assert_cmpuint(p.samples, ==, 15);
    /* 10.5 GB left at 0.5 GB/s. */
    g_assert_cmpint(p.time_left_ms, ==, 21000);

    /* More left than ten samples ago: no estimate. */
    for (int t = 15; t <= 30; t++) {
        update(&p, t * S_NS, 0, t % 2 ? 10 * GB : 12 * GB, 0, 0);
    }
    g_assert_cmpint(p.time_left_ms, ==, -1);
}

/* Petabytes left draining by a byte a second: a time too long for an int64 stays positive. */
static void test_huge_time(void)
{
    MigProgress p;
    double last = 0;

    progress_start(&p);
    for (int t = 0; t <= 2; t++) {
        update(&p, t * S_NS, 0, 10000000000000000ULL - t, 0, 0);
    }
    g_assert_cmpint(p.time_left_ms, >, 0);
    check_step(&p, &last);
}

/* What is left fits: the downtime alone is left. */
static void test_fits(void)
{
    MigProgress p;

    progress_start(&p);
    update(&p, 0, 5 * GB, GB, GB, 250000);
    g_assert_cmpint(p.time_left_ms, ==, 250);
    g_assert_cmpfloat_with_epsilon(p.percent, 100.0 * 10 / 10.25, 1e-9);
    update(&p, S_NS / 10, 5 * GB, GB / 2, GB, 150000);
    g_assert_cmpint(p.time_left_ms, ==, 150);
}

/* Before the end the percent stops at 99; the end says 100 or leaves it. */
static void test_finish(void)
{
    MigProgress p;

    progress_start(&p);
    update(&p, 0, 5 * GB, 0, 0, 0);
    g_assert_cmpint(p.time_left_ms, ==, 0);
    g_assert_cmpfloat(p.percent, ==, 99);
    update(&p, S_NS, 10 * GB, 0, 0, 100);
    g_assert_cmpfloat(p.percent, ==, 99);
    progress_finish(&p, true);
    g_assert_cmpfloat(p.percent, ==, 100);
    g_assert_cmpint(p.time_left_ms, ==, 0);

    progress_start(&p);
    update(&p, 0, 300, 700, 0, 0);
    progress_finish(&p, false);
    g_assert_cmpfloat(p.percent, ==, 30);
    g_assert_cmpint(p.time_left_ms, ==, -1);
}

/*
 * A precopy's walk: passes that drain then jump back at the sync, windows
 * of 0 to 1.5 s, the fit and the downtime wandering; then inputs anywhere
 * in their types. The percent never goes back, never passes 99.
 */
static void test_never_decreases(void)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(41);
    MigProgress p;
    double last = 0;
    int64_t now = 0;
    uint64_t sent = 0, left = 16 * GB;
    int estimated = 0;

    progress_start(&p);
    for (int i = 0; i < 20000; i++) {
        uint64_t drained = g_rand_double_range(r, 0, 0.2) * left;

        now += g_rand_int_range(r, 0, 1500) * 1000000LL;
        sent += drained;
        left -= drained;
        switch (g_rand_int_range(r, 0, 10)) {
        case 0:         /* the dirty sync: back up */
            left += g_rand_double_range(r, 0, 3) * GB;
            break;
        case 1:
            left = left / 4;
            break;
        case 2:
            left = 0;
            break;
        }
        update(&p, now, sent, left, g_rand_int_range(r, 0, 4) ? g_rand_int_range(r, 0, GB) : 0,
               g_rand_int_range(r, 0, 5000000));
        check_step(&p, &last);
        estimated += p.time_left_ms >= 0;
    }
    g_assert_cmpint(estimated, >, 1000);

    for (int i = 0; i < 20000; i++) {
        ProgressInputs in = {
            .now_ns = now, .elapsed_ns = g_rand_boolean(r) ? now : 0,
            .sent = (uint64_t)g_rand_int(r) << 32 | g_rand_int(r),
            .remaining = ((uint64_t)g_rand_int(r) << 32 | g_rand_int(r)) >>
                         g_rand_int_range(r, 0, 64),
            .fitting = ((uint64_t)g_rand_int(r) << 32 | g_rand_int(r)) >>
                       g_rand_int_range(r, 0, 64),
            .predicted_us = ((uint64_t)g_rand_int(r) << 32 | g_rand_int(r)) >>
                            g_rand_int_range(r, 0, 64),
        };

        now += g_rand_int_range(r, 0, 3) * S_NS;
        progress_update(&p, &in);
        check_step(&p, &last);
    }
    progress_finish(&p, false);
    g_assert_cmpfloat(p.percent, ==, last);
    progress_finish(&p, true);
    g_assert_cmpfloat(p.percent, ==, 100);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/progress/bytes-share", test_bytes_share);
    g_test_add_func("/progress/time-left", test_time_left);
    g_test_add_func("/progress/fits", test_fits);
    g_test_add_func("/progress/finish", test_finish);
    g_test_add_func("/progress/huge-time", test_huge_time);
    g_test_add_func("/progress/never-decreases", test_never_decreases);
    return g_test_run();
}

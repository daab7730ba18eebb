/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for migration/outgoing/converge-policy.c: x-converge-policy's
 * words, and the stall watch driven by a fake clock one 100 ms window at a
 * time, the way mig/src calls it (convergence_window, once per
 * RATE_WINDOW_MS).
 */
#include "qemu/osdep.h"
#include <math.h>
#include "qapi/error.h"
#include "migration/outgoing/converge-policy.h"

#define TICK_NS         (100 * 1000000LL)       /* pacing.h's RATE_WINDOW_MS */
#define S_NS            1000000000LL
#define MIB             (1024ULL * 1024)
#define LIMIT_US        300000ULL               /* downtime-limit 300 ms */

/* Parses @words (NULL-terminated) into @steps; the error's text or NULL. */
static char *parse(const char *const *words, ConvergeStepSpec *steps, int *n)
{
    strList nodes[16];
    strList *list = NULL;
    Error *err = NULL;
    int count = 0;
    char *msg = NULL;

    while (words[count]) {
        count++;
    }
    g_assert_cmpint(count, <=, G_N_ELEMENTS(nodes));
    for (int i = count - 1; i >= 0; i--) {
        nodes[i] = (strList) { .next = list, .value = (char *)words[i] };
        list = &nodes[i];
    }
    if (!converge_policy_parse(list, steps, n, &err)) {
        g_assert_nonnull(err);
        msg = g_strdup(error_get_pretty(err));
        error_free(err);
    } else {
        g_assert_null(err);
    }
    return msg;
}

static void assert_refused(const char *const *words, const char *want)
{
    ConvergeStepSpec steps[CONV_MAX_STEPS];
    int n = -1;
    g_autofree char *msg = parse(words, steps, &n);

    if (!msg) {
        g_error("'%s'... was accepted", words[0]);
    }
    g_assert_cmpstr(msg, ==, want);
}

static void test_parse_accepts(void)
{
    ConvergeStepSpec s[CONV_MAX_STEPS];
    int n = -1;

    g_assert_null(parse((const char *const[]) { "dirty-limit", NULL }, s, &n));
    g_assert_cmpint(n, ==, 1);
    g_assert_cmpint(s[0].action, ==, CONV_DIRTY_LIMIT);
    g_assert_cmpuint(s[0].window_ms, ==, CONV_DEFAULT_WINDOW_MS);

    /* Every step once, in any order but the last; the window's bounds are inclusive. */
    g_assert_null(parse((const char *const[]) { "auto-converge:1", "dirty-limit:86400",
                                                "cancel:30", NULL }, s, &n));
    g_assert_cmpint(n, ==, 3);
    g_assert_cmpint(s[0].action, ==, CONV_AUTO_CONVERGE);
    g_assert_cmpuint(s[0].window_ms, ==, 1000);
    g_assert_cmpint(s[1].action, ==, CONV_DIRTY_LIMIT);
    g_assert_cmpuint(s[1].window_ms, ==, 86400 * 1000ULL);
    g_assert_cmpint(s[2].action, ==, CONV_CANCEL);
    g_assert_cmpuint(s[2].window_ms, ==, 30000);

    /* The most a policy can hold: the four steps, postcopy or cancel last. */
    g_assert_null(parse((const char *const[]) { "dirty-limit", "auto-converge", "postcopy:2",
                                                NULL }, s, &n));
    g_assert_cmpint(n, ==, 3);
    g_assert_cmpint(s[2].action, ==, CONV_POSTCOPY);
    g_assert_null(parse((const char *const[]) { "dirty-limit", "auto-converge", "cancel",
                                                NULL }, s, &n));
    g_assert_cmpint(n, ==, 3);

    /* "none" alone and an absent list both clear the policy. */
    g_assert_null(parse((const char *const[]) { "none", NULL }, s, &n));
    g_assert_cmpint(n, ==, 0);
    n = -1;
    g_assert_true(converge_policy_parse(NULL, s, &n, &error_abort));
    g_assert_cmpint(n, ==, 0);

    g_assert_cmpstr(converge_action_str(CONV_NONE), ==, "none");
    g_assert_cmpstr(converge_action_str(CONV_POSTCOPY), ==, "postcopy");
    g_assert_cmpstr(converge_action_str(CONV__MAX), ==, "none");
}

static void test_parse_refuses(void)
{
    static const char *const windows[] = {
        "dirty-limit:0", "dirty-limit:86401", "dirty-limit:", "dirty-limit:x",
        "dirty-limit:5s", "dirty-limit:1.5", "dirty-limit:-1", "dirty-limit: 5x",
        /* secs * 1000 wraps past 2^64 to 1384 ms: still far too long. */
        "dirty-limit:18446744073709553",
        "dirty-limit:99999999999999999999",
    };

    for (int i = 0; i < G_N_ELEMENTS(windows); i++) {
        g_autofree char *want =
            g_strdup_printf("Parameter 'x-converge-policy': '%s': the window must be a "
                            "number of seconds from 1 to 86400", windows[i]);

        assert_refused((const char *const[]) { windows[i], NULL }, want);
    }
    assert_refused((const char *const[]) { "dirty-limit", "foo", NULL },
                   "Parameter 'x-converge-policy': 'foo' is not a step (dirty-limit, "
                   "auto-converge, postcopy or cancel, each optionally :SECONDS)");
    assert_refused((const char *const[]) { "", NULL },
                   "Parameter 'x-converge-policy': '' is not a step (dirty-limit, "
                   "auto-converge, postcopy or cancel, each optionally :SECONDS)");
    assert_refused((const char *const[]) { "Cancel", NULL },
                   "Parameter 'x-converge-policy': 'Cancel' is not a step (dirty-limit, "
                   "auto-converge, postcopy or cancel, each optionally :SECONDS)");
    /* "none" only clears on its own; among steps it is not one. */
    assert_refused((const char *const[]) { "none", "cancel", NULL },
                   "Parameter 'x-converge-policy': 'none' is not a step (dirty-limit, "
                   "auto-converge, postcopy or cancel, each optionally :SECONDS)");
    assert_refused((const char *const[]) { "dirty-limit:5", "auto-converge", "dirty-limit:7",
                                           NULL },
                   "Parameter 'x-converge-policy': 'dirty-limit' is named twice");
    assert_refused((const char *const[]) { "cancel", "cancel", NULL },
                   "Parameter 'x-converge-policy': 'cancel' is named twice");
    assert_refused((const char *const[]) { "cancel", "dirty-limit", NULL },
                   "Parameter 'x-converge-policy': nothing may follow 'cancel'");
    assert_refused((const char *const[]) { "postcopy", "cancel", NULL },
                   "Parameter 'x-converge-policy': nothing may follow 'postcopy'");
    assert_refused((const char *const[]) { "dirty-limit", "postcopy", "auto-converge", NULL },
                   "Parameter 'x-converge-policy': nothing may follow 'postcopy'");
    /*
     * More words than CONV_MAX_STEPS: with four steps, each named once,
     * the duplicate is what refuses them before the length does.
     */
    assert_refused((const char *const[]) { "dirty-limit", "auto-converge", "dirty-limit",
                                           "auto-converge", "dirty-limit", "auto-converge",
                                           "dirty-limit", "auto-converge", "dirty-limit",
                                           NULL },
                   "Parameter 'x-converge-policy': 'dirty-limit' is named twice");
}

/* A policy from @words, started at 0 with @budget_ns. */
static void start(ConvergePolicy *cp, const char *const *words, int64_t budget_ns)
{
    ConvergeStepSpec s[CONV_MAX_STEPS];
    int n;

    g_assert_null(parse(words, s, &n));
    converge_policy_start(cp, s, n, 0, budget_ns);
}

/* A switchover at 1 GB/s plus 5 ms of fixed phases, as the model would predict it. */
static uint64_t predicted(uint64_t remaining)
{
    return remaining / 1000 + 5000;
}

/*
 * A first pass of a big guest keeps falling by a little each window,
 * 10% every 3 s: far less than 10% per window, yet progress that no
 * default window (10 s) takes for a stall.
 */
static void test_first_pass(void)
{
    ConvergePolicy cp;
    double left = 64.0 * 1024 * MIB;
    int64_t now, in_ms;

    start(&cp, (const char *const[]) { "dirty-limit", "cancel", NULL }, 0);
    for (now = TICK_NS; now <= 120 * S_NS; now += TICK_NS) {
        ConvergeAction a = converge_policy_tick(&cp, now, left, predicted(left), LIMIT_US);

        if (a != CONV_NONE) {
            g_error("a first pass falling 10%% in 3 s took %s at %.1f s (%.0f MiB left)",
                    converge_action_str(a), now / 1e9, left / MIB);
        }
        /* The step never comes closer than the window less 3 s. */
        g_assert_cmpint(converge_policy_next(&cp, now, &in_ms), ==, CONV_DIRTY_LIMIT);
        g_assert_cmpint(in_ms, >=, CONV_DEFAULT_WINDOW_MS - 3100);
        left *= pow(0.9, 1.0 / 30);
    }
    g_assert_cmpint(converge_policy_current(&cp), ==, CONV_NONE);
}

/* Passes of 2 s that start at 2 GiB each time (what is left at a pass's start: its size). */
static uint64_t same_passes(int64_t now)
{
    return 2048 * MIB - 2048 * MIB * (now % (2 * S_NS)) / (2 * S_NS);
}

/*
 * Every pass as big as the last: the step comes one window after the
 * first pass's size was seen (the end of the first pass), and stalled
 * says so once half the window went by.
 */
static void test_same_passes(void)
{
    ConvergePolicy cp;
    int64_t now;
    ConvergeAction a = CONV_NONE;

    start(&cp, (const char *const[]) { "auto-converge:10", NULL }, 0);
    for (now = TICK_NS; a == CONV_NONE && now <= 60 * S_NS; now += TICK_NS) {
        a = converge_policy_tick(&cp, now, same_passes(now), predicted(same_passes(now)),
                                 LIMIT_US);
        g_assert_cmpint(cp.stalled, ==, a == CONV_NONE && now >= 2 * S_NS + 5 * S_NS);
    }
    now -= TICK_NS;
    g_assert_cmpint(a, ==, CONV_AUTO_CONVERGE);
    g_assert_cmpint(now, ==, 2 * S_NS + 10 * S_NS);
    g_assert_cmpint(converge_policy_current(&cp), ==, CONV_AUTO_CONVERGE);
    g_assert_cmpstr(cp.reason, ==, "stalled 10 s: no pass below 2048 MiB, predicted downtime "
                    "2152 ms, limit 300 ms");
}

/* A flat count (nothing sent, no sync) is a first pass that goes nowhere: not a stall. */
static void test_flat(void)
{
    ConvergePolicy cp;

    start(&cp, (const char *const[]) { "auto-converge:1", NULL }, 0);
    for (int64_t now = TICK_NS; now <= 60 * S_NS; now += TICK_NS) {
        g_assert_cmpint(converge_policy_tick(&cp, now, 2048 * MIB, predicted(2048 * MIB),
                                             LIMIT_US), ==, CONV_NONE);
    }
}

/* Passes that shrink by a tenth each: never a stall. */
static void test_shrinking_passes(void)
{
    ConvergePolicy cp;
    double size = 4096.0 * MIB;

    start(&cp, (const char *const[]) { "dirty-limit:3", NULL }, 0);
    for (int64_t now = TICK_NS; now <= 120 * S_NS; now += TICK_NS) {
        int64_t in_pass = now % (2 * S_NS);

        if (!in_pass) {
            size *= 0.89;
        }
        g_assert_cmpint(converge_policy_tick(&cp, now, size * (1.0 - in_pass / (2.0 * S_NS)),
                                             predicted(size), LIMIT_US), ==, CONV_NONE);
    }
}

/*
 * A sawtooth: every 5 s pass drains from 1 GiB to 512 MiB, then the dirty
 * sync puts it back. It falls within each window yet never gets further
 * than the first pass did: a stall, counted from the first pass's end.
 */
static void test_sawtooth(void)
{
    ConvergePolicy cp;
    int64_t now;
    ConvergeAction a = CONV_NONE;

    start(&cp, (const char *const[]) { "dirty-limit", NULL }, 0);
    for (now = TICK_NS; a == CONV_NONE && now <= 120 * S_NS; now += TICK_NS) {
        int64_t in_pass = now % (5 * S_NS);
        uint64_t left = 1024 * MIB - 512 * MIB * in_pass / (5 * S_NS);

        a = converge_policy_tick(&cp, now, left, predicted(left), LIMIT_US);
    }
    now -= TICK_NS;
    g_assert_cmpint(a, ==, CONV_DIRTY_LIMIT);
    g_assert_cmpint(now, >, 10 * S_NS);
    g_assert_cmpint(now, <=, 15 * S_NS);
}

/* A downtime that fits the limit is no stall, however flat what is left. */
static void test_fits(void)
{
    ConvergePolicy cp;

    start(&cp, (const char *const[]) { "dirty-limit:1", "cancel:1", NULL }, 0);
    for (int64_t now = TICK_NS; now <= 600 * S_NS; now += TICK_NS) {
        g_assert_cmpint(converge_policy_tick(&cp, now, 100 * MIB, LIMIT_US, LIMIT_US), ==,
                        CONV_NONE);
        g_assert_false(cp.stalled);
    }
}

/*
 * Steps in order, each at least its own window after the step before (the
 * first pass after a step counts as the new smallest); none after the last.
 */
static void test_steps(void)
{
    static const ConvergeAction order[] = { CONV_DIRTY_LIMIT, CONV_AUTO_CONVERGE, CONV_CANCEL };
    static const int64_t window[] = { 2 * S_NS, 5 * S_NS, 1 * S_NS };
    ConvergePolicy cp;
    int64_t now, last = 0, in_ms;
    int taken = 0;

    start(&cp, (const char *const[]) { "dirty-limit:2", "auto-converge:5", "cancel:1", NULL }, 0);
    g_assert_cmpint(converge_policy_next(&cp, 0, &in_ms), ==, CONV_DIRTY_LIMIT);
    g_assert_cmpint(in_ms, ==, 2000);
    for (now = TICK_NS; now <= 120 * S_NS; now += TICK_NS) {
        ConvergeAction a = converge_policy_tick(&cp, now, same_passes(now),
                                                predicted(same_passes(now)), LIMIT_US);

        if (a == CONV_NONE) {
            continue;
        }
        g_assert_cmpint(taken, <, G_N_ELEMENTS(order));
        g_assert_cmpint(a, ==, order[taken]);
        g_assert_cmpint(converge_policy_current(&cp), ==, a);
        /* Its window, and at most a pass more (the next pass's size is the new best). */
        g_assert_cmpint(now - last, >=, window[taken]);
        g_assert_cmpint(now - last, <=, window[taken] + 2 * S_NS);
        last = now;
        taken++;
        if (taken < G_N_ELEMENTS(order)) {
            g_assert_cmpint(converge_policy_next(&cp, now, &in_ms), ==, order[taken]);
            g_assert_cmpint(in_ms, ==, window[taken] / 1000000);
        }
    }
    g_assert_cmpint(taken, ==, G_N_ELEMENTS(order));
    g_assert_cmpint(converge_policy_next(&cp, now, &in_ms), ==, CONV_NONE);
    g_assert_cmpint(in_ms, ==, -1);
    g_assert_false(cp.stalled);
}

/* converge_policy_next counts down from the last improvement; past due it says 0. */
static void test_next(void)
{
    ConvergePolicy cp;
    int64_t in_ms;

    start(&cp, (const char *const[]) { "dirty-limit:10", "postcopy:20", NULL }, 0);
    g_assert_cmpint(converge_policy_tick(&cp, TICK_NS, MIB * 900, predicted(MIB * 900),
                                         LIMIT_US), ==, CONV_NONE);
    g_assert_cmpint(converge_policy_next(&cp, 3 * S_NS, &in_ms), ==, CONV_DIRTY_LIMIT);
    g_assert_cmpint(in_ms, ==, 10000 - 2900);
    /* An improvement restarts the count. */
    g_assert_cmpint(converge_policy_tick(&cp, 4 * S_NS, MIB * 500, predicted(MIB * 500),
                                         LIMIT_US), ==, CONV_NONE);
    g_assert_cmpint(converge_policy_next(&cp, 4 * S_NS, &in_ms), ==, CONV_DIRTY_LIMIT);
    g_assert_cmpint(in_ms, ==, 10000);
    g_assert_cmpint(converge_policy_next(&cp, 30 * S_NS, &in_ms), ==, CONV_DIRTY_LIMIT);
    g_assert_cmpint(in_ms, ==, 0);

    /* With a budget that ends first, the budget's step (the last) and its time. */
    start(&cp, (const char *const[]) { "dirty-limit:10", "postcopy:20", NULL }, 4 * S_NS);
    g_assert_cmpint(converge_policy_next(&cp, 1 * S_NS, &in_ms), ==, CONV_POSTCOPY);
    g_assert_cmpint(in_ms, ==, 3000);
    g_assert_cmpint(converge_policy_next(&cp, 9 * S_NS, &in_ms), ==, CONV_POSTCOPY);
    g_assert_cmpint(in_ms, ==, 0);

    /* No policy: nothing next. */
    start(&cp, (const char *const[]) { "none", NULL }, 0);
    g_assert_cmpint(converge_policy_next(&cp, S_NS, &in_ms), ==, CONV_NONE);
    g_assert_cmpint(in_ms, ==, -1);
    g_assert_cmpint(converge_policy_tick(&cp, S_NS, MIB, predicted(MIB), LIMIT_US), ==,
                    CONV_NONE);
}

/* The completion budget jumps to the last step once, even while improving. */
static void test_budget(void)
{
    ConvergePolicy cp;
    int64_t now, jumped = 0;
    int steps = 0;
    double left = 8192.0 * MIB;

    start(&cp, (const char *const[]) { "dirty-limit:1", "auto-converge:30", "postcopy:30",
                                       NULL }, 5 * S_NS);
    for (now = TICK_NS; now <= 60 * S_NS; now += TICK_NS) {
        /* Passes of one size (dirty-limit 1 s after the first one's end), then draining. */
        ConvergeAction a;

        left = now <= 35 * S_NS / 10 ? same_passes(now) : left * 0.8;
        a = converge_policy_tick(&cp, now, left, predicted(left) + LIMIT_US, LIMIT_US);
        if (a == CONV_NONE) {
            continue;
        }
        steps++;
        if (steps == 1) {
            g_assert_cmpint(a, ==, CONV_DIRTY_LIMIT);
            continue;
        }
        g_assert_cmpint(steps, ==, 2);
        g_assert_cmpint(a, ==, CONV_POSTCOPY);
        jumped = now;
    }
    g_assert_cmpint(jumped, ==, 5 * S_NS);
    g_assert_true(cp.budget_spent);
    g_assert_cmpint(converge_policy_current(&cp), ==, CONV_POSTCOPY);
    g_assert_true(g_str_has_prefix(cp.reason, "completion timeout (5 s) passed: "));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/converge-policy/parse/accepts", test_parse_accepts);
    g_test_add_func("/converge-policy/parse/refuses", test_parse_refuses);
    g_test_add_func("/converge-policy/stall/first-pass", test_first_pass);
    g_test_add_func("/converge-policy/stall/flat", test_flat);
    g_test_add_func("/converge-policy/stall/same-passes", test_same_passes);
    g_test_add_func("/converge-policy/stall/shrinking-passes", test_shrinking_passes);
    g_test_add_func("/converge-policy/stall/sawtooth", test_sawtooth);
    g_test_add_func("/converge-policy/stall/fits", test_fits);
    g_test_add_func("/converge-policy/steps", test_steps);
    g_test_add_func("/converge-policy/next", test_next);
    g_test_add_func("/converge-policy/budget", test_budget);
    return g_test_run();
}

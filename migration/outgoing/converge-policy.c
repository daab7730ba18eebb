/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * x-converge-policy (converge-policy.h; docs/devel/convergence.md).
 *
 * A precopy is stalled when, for a step's window, no pass was at least
 * STALL_GAIN smaller than the smallest since the last step, while the
 * downtime a switchover would take does not fit the limit. A pass's size
 * is what is left right after its dirty sync: the remaining count falls
 * as a pass sends and grows back at each sync, so its low points say
 * nothing (near zero at every pass's end) and its peaks say whether the
 * guest is being outrun. The first pass, before any sync grew the count,
 * is never a stall however slowly it goes (64 GiB at 125 MB/s falls
 * 0.2% a second).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/cutils.h"
#include "converge-policy.h"

/* An improvement smaller than this (of the best seen) is noise. */
#define STALL_GAIN          0.10
/* A window shorter than a dirty-limit period measures nothing. */
#define MIN_WINDOW_MS       1000
#define MAX_WINDOW_MS       (24 * 3600 * 1000ULL)

static const char *const action_names[CONV__MAX] = {
    [CONV_NONE] = "none", [CONV_DIRTY_LIMIT] = "dirty-limit",
    [CONV_AUTO_CONVERGE] = "auto-converge", [CONV_POSTCOPY] = "postcopy",
    [CONV_CANCEL] = "cancel",
};

const char *converge_action_str(ConvergeAction a)
{
    return a < CONV__MAX ? action_names[a] : "none";
}

static bool parse_word(const char *word, ConvergeStepSpec *s, Error **errp)
{
    g_autofree char *name = g_strdup(word);
    char *colon = strchr(name, ':');
    uint64_t secs = CONV_DEFAULT_WINDOW_MS / 1000;

    if (colon) {
        *colon = 0;
        /* Bounds on the seconds themselves: secs * 1000 may wrap past 2^64 into range. */
        if (qemu_strtou64(colon + 1, NULL, 10, &secs) < 0 ||
            secs < MIN_WINDOW_MS / 1000 || secs > MAX_WINDOW_MS / 1000) {
            error_setg(errp, "Parameter 'x-converge-policy': '%s': the window must be "
                       "a number of seconds from %d to %llu", word, MIN_WINDOW_MS / 1000,
                       MAX_WINDOW_MS / 1000);
            return false;
        }
    }
    for (int a = CONV_DIRTY_LIMIT; a < CONV__MAX; a++) {
        if (!strcmp(name, action_names[a])) {
            s->action = a;
            s->window_ms = secs * 1000;
            return true;
        }
    }
    error_setg(errp, "Parameter 'x-converge-policy': '%s' is not a step (dirty-limit, "
               "auto-converge, postcopy or cancel, each optionally :SECONDS)", word);
    return false;
}

bool converge_policy_parse(const strList *words, ConvergeStepSpec *steps, int *n, Error **errp)
{
    bool seen[CONV__MAX] = { false };

    *n = 0;
    /* A list cannot be set empty through QMP's optional members: "none" clears it. */
    if (words && !words->next && !strcmp(words->value, "none")) {
        return true;
    }
    for (const strList *w = words; w; w = w->next) {
        ConvergeStepSpec s;

        if (*n == CONV_MAX_STEPS) {
            error_setg(errp, "Parameter 'x-converge-policy': at most %d steps",
                       CONV_MAX_STEPS);
            return false;
        }
        if (!parse_word(w->value, &s, errp)) {
            return false;
        }
        if (seen[s.action]) {
            error_setg(errp, "Parameter 'x-converge-policy': '%s' is named twice",
                       action_names[s.action]);
            return false;
        }
        if (seen[CONV_CANCEL] || seen[CONV_POSTCOPY]) {
            /* Nothing follows a cancel, and a precopy policy ends once in postcopy. */
            error_setg(errp, "Parameter 'x-converge-policy': nothing may follow '%s'",
                       seen[CONV_CANCEL] ? "cancel" : "postcopy");
            return false;
        }
        seen[s.action] = true;
        steps[(*n)++] = s;
    }
    return true;
}

void converge_policy_start(ConvergePolicy *cp, const ConvergeStepSpec *steps, int n,
                           int64_t now_ns, int64_t budget_ns)
{
    memset(cp, 0, sizeof(*cp));
    memcpy(cp->steps, steps, MIN(n, CONV_MAX_STEPS) * sizeof(*steps));
    cp->n = MIN(n, CONV_MAX_STEPS);
    cp->start_ns = cp->improved_ns = now_ns;
    cp->budget_ns = budget_ns;
    cp->best_pass = cp->last_remaining = UINT64_MAX;
}

/*
 * A dirty sync grew what is left since the last window: a pass began, of
 * that size. True if it is STALL_GAIN smaller than the smallest since the
 * last step (which it then becomes).
 */
static bool smaller_pass(ConvergePolicy *cp, uint64_t remaining)
{
    bool began = cp->last_remaining != UINT64_MAX && remaining > cp->last_remaining;

    cp->last_remaining = remaining;
    cp->last_began = began;
    if (!began) {
        return false;
    }
    cp->passes++;
    if (remaining < cp->best_pass * (1 - STALL_GAIN)) {
        cp->best_pass = remaining;
        return true;
    }
    return false;
}

static ConvergeAction take(ConvergePolicy *cp, int64_t now_ns, int step)
{
    cp->taken = step + 1;
    /* The step changes what the guest dirties: judge it from here, afresh. */
    cp->improved_ns = now_ns;
    cp->best_pass = UINT64_MAX;
    cp->stalled = false;
    return cp->steps[step].action;
}

ConvergeAction converge_policy_tick(ConvergePolicy *cp, int64_t now_ns, uint64_t remaining,
                                    uint64_t predicted_us, uint64_t limit_us)
{
    bool smaller = smaller_pass(cp, remaining);
    int64_t stalled_ms;

    if (cp->taken >= cp->n) {
        cp->stalled = false;
        return CONV_NONE;
    }
    if (cp->budget_ns && !cp->budget_spent && now_ns - cp->start_ns >= cp->budget_ns) {
        cp->budget_spent = true;
        snprintf(cp->reason, sizeof(cp->reason),
                 "completion timeout (%" PRId64 " s) passed: predicted downtime %" PRIu64
                 " ms, limit %" PRIu64 " ms", cp->budget_ns / 1000000000,
                 predicted_us / 1000, limit_us / 1000);
        return take(cp, now_ns, cp->n - 1);
    }
    /*
     * What is left, and so the downtime, fits near every pass's end: only
     * a pass that starts small enough to fit is progress (a switchover
     * follows it).
     */
    if (!cp->passes || smaller || (cp->last_began && predicted_us <= limit_us)) {
        cp->improved_ns = now_ns;
        cp->stalled = false;
        return CONV_NONE;
    }
    stalled_ms = (now_ns - cp->improved_ns) / 1000000;
    /* Shown once half the window went by without a smaller pass. */
    cp->stalled = stalled_ms >= MAX(MIN_WINDOW_MS, cp->steps[cp->taken].window_ms / 2);
    if (stalled_ms < (int64_t)cp->steps[cp->taken].window_ms) {
        return CONV_NONE;
    }
    snprintf(cp->reason, sizeof(cp->reason),
             "stalled %" PRId64 " s: no pass below %" PRIu64 " MiB, predicted downtime %"
             PRIu64 " ms, limit %" PRIu64 " ms", stalled_ms / 1000,
             (cp->best_pass == UINT64_MAX ? remaining : cp->best_pass) >> 20,
             predicted_us / 1000, limit_us / 1000);
    return take(cp, now_ns, cp->taken);
}

ConvergeAction converge_policy_next(const ConvergePolicy *cp, int64_t now_ns, int64_t *in_ms)
{
    int64_t left;

    *in_ms = -1;
    if (cp->taken >= cp->n) {
        return CONV_NONE;
    }
    left = cp->steps[cp->taken].window_ms - (now_ns - cp->improved_ns) / 1000000;
    if (cp->budget_ns && !cp->budget_spent) {
        int64_t budget_left = (cp->budget_ns - (now_ns - cp->start_ns)) / 1000000;

        if (budget_left < left) {
            *in_ms = MAX(budget_left, 0);
            return cp->steps[cp->n - 1].action;
        }
    }
    *in_ms = MAX(left, 0);
    return cp->steps[cp->taken].action;
}

ConvergeAction converge_policy_current(const ConvergePolicy *cp)
{
    return cp->taken ? cp->steps[cp->taken - 1].action : CONV_NONE;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/outgoing: x-converge-policy, what a stalled
 * precopy does (docs/devel/convergence.md, "Stalls and the policy").
 * Pure logic on what mig/src measured each window: whether the migration
 * stalls, and which step to take now. migration.c takes the steps (the
 * throttles, postcopy, the cancel) and announces them. Unit-tested by
 * tests/unit/test-converge-policy.c.
 */
#ifndef MIGRATION_CONVERGE_POLICY_H
#define MIGRATION_CONVERGE_POLICY_H

#include <stdbool.h>
#include <stdint.h>
#include "qapi/qapi-types.h"

typedef enum ConvergeAction {
    CONV_NONE,
    CONV_DIRTY_LIMIT,
    CONV_AUTO_CONVERGE,
    CONV_POSTCOPY,
    CONV_CANCEL,
    CONV__MAX,
} ConvergeAction;

#define CONV_MAX_STEPS      8
#define CONV_DEFAULT_WINDOW_MS  10000

typedef struct ConvergeStepSpec {
    ConvergeAction action;
    uint64_t window_ms;         /* stalled this long before the step is taken */
} ConvergeStepSpec;

/*
 * One migration's policy and stall watch; mig/src's own (query-migrate
 * reads the copy migration.c publishes under its lock).
 */
typedef struct ConvergePolicy {
    ConvergeStepSpec steps[CONV_MAX_STEPS];
    int n;                      /* steps in the policy */
    int taken;                  /* steps taken so far: steps[taken] is next */
    int64_t start_ns;
    int64_t budget_ns;          /* x-completion-timeout's budget; 0: none */
    bool budget_spent;
    /*
     * The stall watch: passes seen (a sync grew what is left), the
     * smallest since the last step, the last window's remaining, and when
     * a pass last came out smaller enough.
     */
    unsigned passes;
    uint64_t best_pass;
    uint64_t last_remaining;
    bool last_began;            /* the last window saw a pass begin */
    int64_t improved_ns;
    bool stalled;               /* the last tick found no improvement for a while */
    char reason[160];           /* why the last step was taken */
} ConvergePolicy;

const char *converge_action_str(ConvergeAction a);
/*
 * x-converge-policy's words (STEP[:SECONDS]) into @steps (CONV_MAX_STEPS
 * long); *@n their number. False with @errp on a word that is not one,
 * a step named twice, or a step after cancel.
 */
bool converge_policy_parse(const strList *words, ConvergeStepSpec *steps, int *n, Error **errp);
/* A migration starts at @now_ns with @steps and a budget of @budget_ns (0: none). */
void converge_policy_start(ConvergePolicy *cp, const ConvergeStepSpec *steps, int n,
                           int64_t now_ns, int64_t budget_ns);
/*
 * One measuring window: @remaining bytes left, a switchover now predicted
 * to take @predicted_us against @limit_us. Returns the step to take now
 * (CONV_NONE: none), having recorded why in cp->reason.
 */
ConvergeAction converge_policy_tick(ConvergePolicy *cp, int64_t now_ns, uint64_t remaining,
                                    uint64_t predicted_us, uint64_t limit_us);
/* The next step a stall would take, and in how many ms (-1: none). */
ConvergeAction converge_policy_next(const ConvergePolicy *cp, int64_t now_ns, int64_t *in_ms);
/* The step last taken (CONV_NONE before any). */
ConvergeAction converge_policy_current(const ConvergePolicy *cp);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A precopy that finishes on its own (convergence.h;
 * docs/devel/convergence.md): the glue between what mig/src measures each
 * window and the pure parts (the downtime model, the policy, progress),
 * and the policy's steps taken.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/cutils.h"
#include "system/memory.h"
#include "migration/qemu-file.h"
#include "migration/dirty/converge.h"
#include "migration/core/options.h"
#include "migration/core/status.h"
#include "migration/transport/ram.h"
#include "migration/trace.h"
#include "outgoing.h"
#include "convergence.h"

/* Each window's link rate weighs this much in the average the model uses. */
#define LINK_WEIGHT 0.2
/*
 * The re-sent pages' rate is timed over at least this much: less is a
 * batch or two, whose time is the channel's latency, not its rate.
 */
#define RESEND_MIN_BYTES (1 << 20)
#define RESEND_MIN_NS    (1000 * 1000)

/*
 * What a step needs set: dirty-limit the dirty ring (its capability checks
 * it), postcopy both sides' consent. The throttle needs nothing of either
 * end, and its capability cannot be on beside dirty-limit's (QEMU refuses
 * the pair), so auto-converge may follow dirty-limit without it.
 */
static const struct {
    bool needed;
    MigrationCapability cap;
} step_caps[CONV__MAX] = {
    [CONV_DIRTY_LIMIT] = { true, MIGRATION_CAPABILITY_DIRTY_LIMIT },
    [CONV_POSTCOPY] = { true, MIGRATION_CAPABILITY_POSTCOPY_RAM },
};

bool convergence_check(MigrationState *s, bool iterates, Error **errp)
{
    Convergence *c = &s->conv;

    c->active = iterates;
    if (!converge_policy_parse(migrate_converge_policy(), c->steps, &c->n_steps, errp)) {
        return false;
    }
    if (!iterates) {
        c->n_steps = 0;         /* a snapshot or a live update has nothing to converge */
        return true;
    }
    for (int i = 0; i < c->n_steps; i++) {
        ConvergeAction a = c->steps[i].action;

        if (step_caps[a].needed && !migrate_cap(step_caps[a].cap)) {
            error_setg(errp, "x-converge-policy step '%s' needs the %s capability%s",
                       converge_action_str(a), MigrationCapability_str(step_caps[a].cap),
                       a == CONV_POSTCOPY ? " on both sides" : "");
            return false;
        }
    }
    return true;
}

/*
 * What query-migrate shows starts over: a migration's setup must not show
 * the last one's 100 %, its step and its prediction, or its percent goes
 * back to 0 once it iterates (x-progress never decreases within one).
 */
static void publish_start(Convergence *c)
{
    progress_start(&c->progress);
    g_mutex_lock(&c->lock);
    memset(&c->now, 0, sizeof(c->now));
    c->decided_valid = false;
    c->pub_progress = c->progress;
    c->step = CONV_NONE;
    c->next_step = CONV_NONE;
    c->next_in_ms = -1;
    c->stalled = false;
    c->reason[0] = 0;
    c->ended_ns = 0;
    g_mutex_unlock(&c->lock);
}

void convergence_reset(MigrationState *s)
{
    publish_start(&s->conv);
}

void convergence_start(MigrationState *s, uint64_t transferred)
{
    Convergence *c = &s->conv;
    bool hold_limit = false, hold_throttle = false;
    uint64_t gib = MAX(DIV_ROUND_UP(ram_blocks_total_bytes(), 1ULL << 30), 1);
    /* Any uint64 may come: a budget past INT64_MAX ns is none at all. */
    double budget_ns = (double)migrate_completion_timeout() * gib * 1e9;
    int64_t budget = budget_ns < 0x1p62 ? (int64_t)budget_ns : 0;

    /*
     * The first step's capability keeps its own early rule (QEMU's: two
     * periods of dirtying faster than the link, during the first pass
     * already); a later step's waits for the policy to get there, so
     * that a guest is not slowed before the cheaper steps were tried.
     */
    for (int i = 1; i < c->n_steps; i++) {
        hold_limit |= c->steps[i].action == CONV_DIRTY_LIMIT;
        hold_throttle |= c->steps[i].action == CONV_AUTO_CONVERGE;
    }
    converge_start(transferred, hold_limit, hold_throttle);
    converge_policy_start(&c->policy, c->steps, c->active ? c->n_steps : 0, get_clock_ns(),
                          c->active && c->n_steps ? budget : 0);
    c->prepare_ns = 0;
    c->link_bpms = 0;
    c->resend_marked = false;
    error_free(c->stop_err);
    c->stop_err = NULL;
    publish_start(c);
}

void convergence_resends_begin(MigrationState *s)
{
    Convergence *c = &s->conv;

    if (c->resend_marked) {
        return;
    }
    c->resend_marked = true;
    c->resend_ns = get_clock_ns();
    c->resend_waited_ns = s->waited_total_ns;
    c->resend_data_pages = ram_data_pages_sent();
}

/*
 * Pages with data sent since the second pass began, per ms of that time
 * not slept for max-bandwidth; 0 until enough was timed. A switchover
 * sends pages the destination already has, as these passes do: the first
 * pass's rate is the destination's first touch of fresh memory, up to 4x
 * slower here (docs/benchmarks.md, "slo"), and with it the prediction was
 * within 20 % in 22 of 108 runs.
 */
static double resend_bpms(const MigrationState *s)
{
    const Convergence *c = &s->conv;
    int64_t ns;
    uint64_t bytes;

    if (!c->resend_marked) {
        return 0;
    }
    ns = get_clock_ns() - c->resend_ns - (s->waited_total_ns - c->resend_waited_ns);
    bytes = (ram_data_pages_sent() - c->resend_data_pages) * TARGET_PAGE_SIZE;
    return ns >= RESEND_MIN_NS && bytes >= RESEND_MIN_BYTES ? bytes / (ns / 1e6) : 0;
}

static void inputs(MigrationState *s, uint64_t remaining, DowntimeInputs *in)
{
    uint64_t user = migrate_avail_switchover_bandwidth();

    *in = (DowntimeInputs) {
        .limit_ms = migrate_downtime_limit(),
        .remaining = remaining,
        .unsent = mig_channel_unsent_bytes(s->channel) + ram_transport_unsent_bytes(),
        .link_bpms = s->conv.link_bpms,
        .resend_bpms = resend_bpms(s),
        .user_bpms = user / 1000.0,
        .sync_ns = s->sync_cost_ns,
        .handover = s->conv.prepare_ns > 0,   /* a flush that worked: images to hand over */
        .prepare_ns = s->conv.prepare_ns,
    };
}

/*
 * Take the policy's step @a (its reason in c->policy.reason). True: a step
 * to announce, once what query-migrate shows says it too.
 */
static bool take_step(MigrationState *s, ConvergeAction a)
{
    Convergence *c = &s->conv;

    switch (a) {
    case CONV_DIRTY_LIMIT:
        converge_engage_dirty_limit();
        break;
    case CONV_AUTO_CONVERGE:
        converge_engage_throttle();
        break;
    case CONV_POSTCOPY:
        /* convergence_check saw the capability, which chose the postcopy row. */
        if (s->mode->start_postcopy) {
            s->mode->start_postcopy(s, s->mode_state);
        }
        break;
    case CONV_CANCEL:
        if (!c->stop_err) {
            error_setg(&c->stop_err, "x-converge-policy cancelled it: %s", c->policy.reason);
        }
        break;
    default:
        return false;
    }
    return true;
}

void convergence_window(MigrationState *s, uint64_t remaining)
{
    Convergence *c = &s->conv;
    int64_t now = get_clock_ns(), next_in;
    DowntimeInputs in;
    DowntimePrediction p;
    ConvergeAction a = CONV_NONE, next;
    uint64_t fitting, limit_us = migrate_downtime_limit() * 1000;
    bool announce = false;

    /*
     * One 100 ms window's rate wanders 2x here (185 to 1230 MB/s in one
     * run): the model gets the average over about a second.
     */
    if (s->link_data_bpms > 0) {
        c->link_bpms = c->link_bpms > 0 ? c->link_bpms + LINK_WEIGHT * (s->link_data_bpms -
                                                                         c->link_bpms)
                                        : s->link_data_bpms;
    }
    inputs(s, remaining, &in);
    downtime_predict(&c->history, &in, &p);
    fitting = downtime_fitting_bytes(&c->history, &in);
    if (migrate_switchover_rule() == X_SWITCHOVER_RULE_PREDICTED && p.valid) {
        s->threshold_bytes = fitting;
    }
    if (p.valid) {
        s->expected_downtime_ms = p.total_us / 1000;
    }
    trace_migration_prediction(p.remaining, p.rate_bpms, in.link_bpms, p.total_us, fitting);
    if (c->policy.n) {
        a = converge_policy_tick(&c->policy, now, remaining,
                                 p.valid ? p.total_us : UINT64_MAX / 2, limit_us);
        if (a != CONV_NONE) {
            announce = take_step(s, a);
        }
    }
    progress_update(&c->progress, &(ProgressInputs) {
        .now_ns = now, .elapsed_ns = now - s->start_ns,
        .sent = ram_pages_sent() * TARGET_PAGE_SIZE, .remaining = remaining,
        .fitting = p.valid ? fitting : 0,
        .predicted_us = p.valid ? p.total_us : 0,
    });
    next = converge_policy_next(&c->policy, now, &next_in);
    g_mutex_lock(&c->lock);
    c->now = p;
    c->pub_progress = c->progress;
    c->step = converge_policy_current(&c->policy);
    c->next_step = next;
    c->next_in_ms = next_in;
    c->stalled = c->policy.stalled;
    if (a != CONV_NONE) {
        pstrcpy(c->reason, sizeof(c->reason), c->policy.reason);
    }
    g_mutex_unlock(&c->lock);
    /*
     * After the publication: a client that queries on the event must see
     * the step it announces (test-slo did, under make check's load, and
     * found the step before).
     */
    if (announce) {
        migration_converge_event(migrate_get_state(&s->state), converge_action_str(a),
                                 c->policy.reason);
    }
}

uint64_t convergence_decided(MigrationState *s, uint64_t remaining)
{
    Convergence *c = &s->conv;
    DowntimeInputs in;
    DowntimePrediction p;

    inputs(s, remaining, &in);
    downtime_predict(&c->history, &in, &p);
    g_mutex_lock(&c->lock);
    c->decided = p;
    c->decided_valid = true;
    g_mutex_unlock(&c->lock);
    return p.total_us;
}

void convergence_prepared(MigrationState *s, int64_t ns)
{
    s->conv.prepare_ns = ns;
}

void convergence_learn(MigrationState *s, const DowntimeOutcome *o)
{
    Convergence *c = &s->conv;

    if (c->decided_valid) {
        downtime_learn(&c->history, &c->decided, o);
    }
}

void convergence_end(MigrationState *s, bool completed)
{
    Convergence *c = &s->conv;

    progress_finish(&c->progress, completed);
    g_mutex_lock(&c->lock);
    c->pub_progress = c->progress;
    c->ended_ns = get_clock_ns();
    c->next_step = CONV_NONE;
    c->next_in_ms = -1;
    c->stalled = false;
    g_mutex_unlock(&c->lock);
}

Error *convergence_take_stop(MigrationState *s)
{
    Error *err = s->conv.stop_err;

    s->conv.stop_err = NULL;
    return err;
}

static XDowntimePrediction *prediction_info(const DowntimePrediction *p)
{
    XDowntimePrediction *x = g_new0(XDowntimePrediction, 1);

    x->stop_vcpus = p->stop_us;
    x->handover = p->handover_us;
    x->final_sync = p->sync_us;
    x->last_ram = p->ram_us;
    x->device_state = p->device_us;
    x->total = p->total_us;
    x->remaining = p->remaining;
    x->rate = p->rate_bpms * 1000;
    x->rate_source = g_strdup(downtime_rate_source_str(p->source));
    return x;
}

static const char *phase_name(int status, const Convergence *c, const MigrationInfo *info)
{
    switch (status) {
    case MIGRATION_STATUS_SETUP:
        return "setup";
    case MIGRATION_STATUS_ACTIVE:
        if (c->stalled) {
            return "stalled";
        }
        return info->ram && info->ram->dirty_sync_count <= 1 ? "first-pass" : "iterating";
    case MIGRATION_STATUS_PRE_SWITCHOVER:
    case MIGRATION_STATUS_DEVICE:
        return "switchover";
    case MIGRATION_STATUS_POSTCOPY_ACTIVE:
    case MIGRATION_STATUS_POSTCOPY_PAUSED:
    case MIGRATION_STATUS_POSTCOPY_RECOVER:
        return "postcopy";
    case MIGRATION_STATUS_COMPLETED:
        return "completed";
    case MIGRATION_STATUS_CANCELLING:
    case MIGRATION_STATUS_CANCELLED:
        return "cancelled";
    default:
        return "failed";
    }
}

void convergence_fill_info(MigrationState *s, int status, MigrationInfo *info)
{
    Convergence *c = &s->conv;
    XMigrationProgress *x;

    if (!c->active) {
        return;
    }
    x = g_new0(XMigrationProgress, 1);
    g_mutex_lock(&c->lock);
    if (status == MIGRATION_STATUS_COMPLETED && c->decided_valid) {
        info->x_downtime_predicted = prediction_info(&c->decided);
    } else if (status == MIGRATION_STATUS_ACTIVE && c->now.valid) {
        info->x_downtime_predicted = prediction_info(&c->now);
    }
    x->percent = c->pub_progress.percent;
    if (c->pub_progress.time_left_ms >= 0 && !c->ended_ns) {
        x->has_time_left = true;
        x->time_left = c->pub_progress.time_left_ms;
    }
    x->phase = g_strdup(phase_name(status, c, info));
    x->step = g_strdup(converge_action_str(c->step));
    if (c->reason[0]) {
        x->reason = g_strdup(c->reason);
    }
    if (c->next_step != CONV_NONE && !c->ended_ns) {
        x->next_step = g_strdup(converge_action_str(c->next_step));
        x->has_next_step_in = c->next_in_ms >= 0;
        x->next_step_in = MAX(c->next_in_ms, 0);
    }
    g_mutex_unlock(&c->lock);
    info->x_progress = x;
}

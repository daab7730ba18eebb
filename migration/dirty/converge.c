/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Convergence of a precopy that the guest outruns (see converge.h).
 *
 * auto-converge follows QEMU 7.2's rule and steps: at a dirty sync, once a
 * period of at least 1 s has passed, the period is "high" if the bytes it
 * dirtied exceed throttle-trigger-threshold% of the bytes it sent; two high
 * periods in a row start the throttle at cpu-throttle-initial or raise it
 * by cpu-throttle-increment (tailslow: by no more than what would bring
 * the dirty rate down to the threshold), never past max-cpu-throttle.
 *
 * dirty-limit uses the same rule, and also the vCPUs' ring counts every
 * second (converge_tick), to put every vCPU under vcpu-dirty-limit MB/s;
 * a vCPU that dirties less than that is never slowed (system/dirtylimit.c).
 *
 * Everything here runs in mig/src; query-migrate reads the throttle's own
 * atomics.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "system/cpus.h"
#include "system/cpu-throttle.h"
#include "system/dirtylimit.h"
#include "system/kvm.h"
#include "converge.h"
#include "migration/core/options.h"
#include "migration/trace.h"

#define CONVERGE_PERIOD_NS 1000000000LL

/*
 * Auto-converge and dirty-limit during the outgoing migration: one per
 * process, as there is one outgoing migration. mig/src writes every field
 * (converge_start, converge_after_sync, converge_tick); query-migrate
 * reads none of them (it asks the throttles themselves).
 */
typedef struct Converge {
    int64_t period_start_ns;
    uint64_t period_dirty_pages;
    uint64_t period_start_bytes;
    int high_periods;
    bool limit_set;             /* this migration put the vCPUs under dirty-limit */
    /*
     * x-converge-policy names the step: QEMU's rule waits for the policy
     * to engage it (converge_engage_*), then runs as without a policy.
     */
    bool hold_limit, hold_throttle;
    bool throttle_engaged;      /* the policy started the throttle: QEMU's rule raises it */
    /* converge_tick: the ring counts' last second */
    int64_t tick_start_ns;
    uint64_t tick_start_pages;
    int tick_high;
} Converge;

/* The one outgoing migration's (see above). */
static Converge conv;

static uint64_t converge_ring_pages(void)
{
    uint64_t pages = 0;

    for (guint i = 0; vcpus && i < vcpus->len; i++) {
        pages += __atomic_load_n(&((CPUState *)g_ptr_array_index(vcpus, i))->dirty_pages,
                                 __ATOMIC_RELAXED);
    }
    return pages;
}

void converge_start(uint64_t transferred, bool hold_limit, bool hold_throttle)
{
    memset(&conv, 0, sizeof(conv));
    conv.hold_limit = hold_limit;
    conv.hold_throttle = hold_throttle;
    conv.period_start_ns = conv.tick_start_ns = get_clock_ns();
    conv.period_start_bytes = transferred;
    conv.tick_start_pages = converge_ring_pages();
    dirtylimit_set_period_ms(migrate_vcpu_dirty_limit_period());
}

static void converge_limit_guest(void)
{
    if (conv.limit_set) {
        return;
    }
    conv.limit_set = dirtylimit_set(-1, migrate_vcpu_dirty_limit(), false, NULL);
    trace_migration_converge("dirty-limit", (int64_t)migrate_vcpu_dirty_limit());
}

static void converge_throttle_guest(uint64_t dirty_bytes, uint64_t threshold_bytes)
{
    int now = cpu_throttle_get_percentage(), next;
    int max = migrate_max_cpu_throttle();

    if (!cpu_throttle_active()) {
        next = migrate_cpu_throttle_initial();
    } else {
        int inc = migrate_cpu_throttle_increment();

        if (migrate_cpu_throttle_tailslow()) {
            /* The vCPU share that would dirty just the threshold. */
            double cpu_now = 100 - now;
            double cpu_ideal = cpu_now * ((double)threshold_bytes / dirty_bytes);

            inc = MIN((int)(cpu_now - cpu_ideal), inc);
            inc = MAX(inc, 1);
        }
        next = now + inc;
    }
    next = MIN(next, max);
    cpu_throttle_set(next);
    trace_migration_converge("auto-converge", (int64_t)next);
}

void converge_after_sync(uint64_t new_pages, uint64_t transferred)
{
    int64_t now = get_clock_ns();
    uint64_t dirty, sent, threshold;

    conv.period_dirty_pages += new_pages;
    if (now - conv.period_start_ns < CONVERGE_PERIOD_NS) {
        return;
    }
    dirty = conv.period_dirty_pages * TARGET_PAGE_SIZE;
    sent = transferred - conv.period_start_bytes;
    threshold = sent * migrate_throttle_trigger_threshold() / 100;
    if (dirty > threshold && ++conv.high_periods >= 2) {
        bool limit = migrate_cap(MIGRATION_CAPABILITY_DIRTY_LIMIT) && !conv.hold_limit;

        conv.high_periods = 0;
        if (limit) {
            converge_limit_guest();
        }
        /* As QEMU: dirty-limit instead of the throttle, unless a policy added it. */
        if ((migrate_cap(MIGRATION_CAPABILITY_AUTO_CONVERGE) || conv.throttle_engaged) &&
            !conv.hold_throttle && (!limit || conv.throttle_engaged)) {
            converge_throttle_guest(dirty, threshold);
        }
    } else if (dirty <= threshold) {
        conv.high_periods = 0;
    }
    conv.period_start_ns = now;
    conv.period_dirty_pages = 0;
    conv.period_start_bytes = transferred;
}

void converge_tick(double bandwidth_bpms)
{
    int64_t now = get_clock_ns();
    uint64_t pages;
    double dirty_bpms;

    if (!migrate_cap(MIGRATION_CAPABILITY_DIRTY_LIMIT) || conv.limit_set || conv.hold_limit ||
        now - conv.tick_start_ns < CONVERGE_PERIOD_NS || bandwidth_bpms <= 0) {
        return;
    }
    /* Rings that did not fill yet hold part of the second: harvest them now. */
    kvm_dirty_ring_harvest(kvm_state);
    pages = converge_ring_pages();
    dirty_bpms = (double)(pages - conv.tick_start_pages) * TARGET_PAGE_SIZE /
                 ((now - conv.tick_start_ns) / 1e6);
    if (dirty_bpms > bandwidth_bpms * migrate_throttle_trigger_threshold() / 100) {
        if (++conv.tick_high >= 2) {
            converge_limit_guest();
        }
    } else {
        conv.tick_high = 0;
    }
    conv.tick_start_ns = now;
    conv.tick_start_pages = pages;
}

void converge_engage_dirty_limit(void)
{
    conv.hold_limit = false;
    converge_limit_guest();
}

void converge_engage_throttle(void)
{
    conv.hold_throttle = false;
    conv.throttle_engaged = true;
    if (!cpu_throttle_active()) {
        cpu_throttle_set(MIN(migrate_cpu_throttle_initial(), migrate_max_cpu_throttle()));
        trace_migration_converge("auto-converge", (int64_t)cpu_throttle_get_percentage());
    }
}

void converge_stop(void)
{
    cpu_throttle_stop();
    if (conv.limit_set) {
        dirtylimit_cancel(-1);
        conv.limit_set = false;
    }
}

void converge_fill_info(MigrationInfo *info)
{
    if (migrate_cap(MIGRATION_CAPABILITY_AUTO_CONVERGE) || cpu_throttle_active()) {
        info->has_cpu_throttle_percentage = true;
        info->cpu_throttle_percentage = cpu_throttle_get_percentage();
    }
    if (migrate_cap(MIGRATION_CAPABILITY_DIRTY_LIMIT) && dirtylimit_in_service()) {
        info->has_dirty_limit_throttle_time_per_round = true;
        info->dirty_limit_throttle_time_per_round = dirtylimit_throttle_time_per_round_us();
        info->has_dirty_limit_ring_full_time = true;
        info->dirty_limit_ring_full_time = dirtylimit_ring_full_time_us();
    }
}

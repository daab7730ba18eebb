/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dirty-limit. Each limited vCPU keeps a budget: from dl_start_ns on it may
 * dirty limit x elapsed bytes; its dirty_pages (ring entries harvested from
 * its ring, by anyone) say what it used. Whenever it leaves KVM_RUN (its
 * ring filled, or the thread below kicked it) and is over budget, it
 * sleeps exactly the excess at its limit; a budget with no excess is
 * restarted after DL_WINDOW_NS so idle time cannot be saved up into a
 * burst. A vCPU whose ring never gets entries never sleeps.
 *
 * The "dirtylimit" thread harvests every ring each DL_HARVEST_NS (so a
 * vCPU's count lags its writes by at most that), kicks vCPUs over budget
 * and, once per period, computes every vCPU's current rate.
 *
 * Locks: dl.w.lock guards the thread's life, the log reference and the
 * published rates; per-vCPU limits and counters are atomics.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/worker-thread.h"
#include "system/cpus.h"
#include "system/dirtylimit.h"
#include "system/kvm.h"
#include "trace.h"

#define DL_HARVEST_NS   50000000LL      /* 50 ms */
#define DL_WINDOW_NS    1000000000LL    /* credit kept at most this long */
#define DL_MAX_SLEEP_NS 1000000000LL    /* one sleep; the next exit sleeps on */
#define DL_MAX_VCPUS    256

/*
 * dirty-limit's state: one per process (one set of vCPUs, one dirty log).
 * w.lock is both the thread's and the state's: it guards the thread's life
 * and what the thread publishes, so the thread publishes a period's rates
 * in the same critical section in which it checks quit.
 */
typedef struct DirtyLimit {
    /*
     * w.lock: running and quit. Written by dirtylimit_set/cancel (the QMP
     * commands, main thread; migration/dirty/converge.c, mig/src), which hold
     * w.lock across the start or stop; read by the thread.
     */
    WorkerThread w;
    /* w.lock: we hold a ring counting reference. dirtylimit_set/cancel write and read. */
    bool log_ref;
    /* Atomic: dirtylimit_set_period_ms (converge.c) writes; the thread reads each step. */
    uint64_t period_ms;
    /*
     * w.lock: per-vCPU MB/s over the last period, and the longest sleep in
     * it. The thread writes them (the start resets them); the query
     * functions below (query-migrate, query-vcpu-dirty-limit) read.
     */
    uint64_t rate[DL_MAX_VCPUS];
    uint64_t round_sleep_us;
} DirtyLimit;

static DirtyLimit dl = { .period_ms = DIRTYLIMIT_DEFAULT_PERIOD_MS };

static CPUState *dl_cpu(int index)
{
    return vcpus && index >= 0 && (guint)index < vcpus->len ? g_ptr_array_index(vcpus, index)
                                                            : NULL;
}

static uint64_t dl_limit(CPUState *cpu)
{
    return __atomic_load_n(&cpu->dirty_limit_mbps, __ATOMIC_RELAXED);
}

bool dirtylimit_supported(Error **errp)
{
    if (!kvm_dirty_ring_enabled(kvm_state)) {
        error_setg(errp, "dirty page limit feature requires KVM with accelerator property "
                   "'dirty-ring-size' set");
        return false;
    }
    return true;
}

/* Nanoseconds @cpu must sleep to be back within its budget at @now (0: within). */
static int64_t dl_excess_ns(CPUState *cpu, uint64_t limit, int64_t now)
{
    uint64_t used = (__atomic_load_n(&cpu->dirty_pages, __ATOMIC_RELAXED) -
                     __atomic_load_n(&cpu->dl_start_pages, __ATOMIC_RELAXED)) * 4096;
    int64_t start = __atomic_load_n(&cpu->dl_start_ns, __ATOMIC_RELAXED);
    double allowed_ns = (double)used * 1e9 / ((double)limit * MiB);

    /*
     * Its count lags its writes by up to DL_HARVEST_NS: pages harvested
     * just after the budget (re)started may have been written before, and
     * would make a vCPU that dirties a page now and then (the innocent
     * one) sleep. That much is credit, not excess.
     */
    if (!start || allowed_ns <= now - start + DL_HARVEST_NS) {
        return 0;
    }
    return (int64_t)allowed_ns - (now - start) - DL_HARVEST_NS;
}

void dirtylimit_vcpu_wait(CPUState *cpu)
{
    uint64_t limit = dl_limit(cpu);
    int64_t now, excess, start;

    if (!limit) {
        return;
    }
    now = get_clock_ns();
    /* dl_set_one() (another thread) may restart the budget at any time. */
    start = __atomic_load_n(&cpu->dl_start_ns, __ATOMIC_RELAXED);
    if (!start) {
        __atomic_store_n(&cpu->dl_start_pages, __atomic_load_n(&cpu->dirty_pages,
                                                               __ATOMIC_RELAXED), __ATOMIC_RELAXED);
        __atomic_store_n(&cpu->dl_start_ns, now, __ATOMIC_RELAXED);
        return;
    }
    excess = dl_excess_ns(cpu, limit, now);
    if (excess > 0) {
        int64_t slept = cpu_sleep_unless_kicked(cpu, MIN(excess, DL_MAX_SLEEP_NS));

        __atomic_add_fetch(&cpu->dl_sleep_ns, slept, __ATOMIC_RELAXED);
        __atomic_add_fetch(&cpu->dl_sleeps, 1, __ATOMIC_RELAXED);
        trace_dirtylimit_vcpu_sleep(cpu->cpu_index, limit, slept / 1000);
    } else if (now - start > DL_WINDOW_NS) {
        __atomic_store_n(&cpu->dl_start_pages, __atomic_load_n(&cpu->dirty_pages,
                                                               __ATOMIC_RELAXED), __ATOMIC_RELAXED);
        __atomic_store_n(&cpu->dl_start_ns, now, __ATOMIC_RELAXED);
    }
}

static bool dl_any_limit(void)
{
    for (guint i = 0; vcpus && i < vcpus->len; i++) {
        if (dl_limit(g_ptr_array_index(vcpus, i))) {
            return true;
        }
    }
    return false;
}

static void *dirtylimit_thread_fn(void *opaque)
{
    DirtyLimit *d = opaque;
    uint64_t last_pages[DL_MAX_VCPUS] = { 0 }, last_sleep_ns[DL_MAX_VCPUS] = { 0 };
    int64_t period_start = get_clock_ns();
    guint n = MIN(vcpus ? vcpus->len : 0, DL_MAX_VCPUS);

    for (guint i = 0; i < n; i++) {
        CPUState *cpu = g_ptr_array_index(vcpus, i);

        last_pages[i] = __atomic_load_n(&cpu->dirty_pages, __ATOMIC_RELAXED);
        last_sleep_ns[i] = __atomic_load_n(&cpu->dl_sleep_ns, __ATOMIC_RELAXED);
    }
    worker_thread_lock(&d->w);
    for (;;) {
        int64_t now, period_ns = __atomic_load_n(&d->period_ms, __ATOMIC_RELAXED) * 1000000LL;

        if (worker_thread_wait(&d->w, DL_HARVEST_NS / 1000)) {
            break;
        }
        worker_thread_unlock(&d->w);
        /* A failed reset is the migration's error to report; counts just lag. */
        kvm_dirty_ring_harvest(kvm_state);
        now = get_clock_ns();
        for (guint i = 0; i < n; i++) {
            CPUState *cpu = g_ptr_array_index(vcpus, i);
            uint64_t limit = dl_limit(cpu);

            if (limit && dl_excess_ns(cpu, limit, now) > 0) {
                cpu_kick_run(cpu);
            }
        }
        worker_thread_lock(&d->w);
        if (now - period_start >= period_ns) {
            uint64_t longest = 0;

            for (guint i = 0; i < n; i++) {
                CPUState *cpu = g_ptr_array_index(vcpus, i);
                uint64_t pages = __atomic_load_n(&cpu->dirty_pages, __ATOMIC_RELAXED);
                uint64_t slept = __atomic_load_n(&cpu->dl_sleep_ns, __ATOMIC_RELAXED);

                d->rate[i] = (pages - last_pages[i]) * 4096 * 1000 / MiB /
                             MAX(1, (now - period_start) / 1000000);
                longest = MAX(longest, (slept - last_sleep_ns[i]) / 1000);
                last_pages[i] = pages;
                last_sleep_ns[i] = slept;
                trace_dirtylimit_vcpu_rate(i, dl_limit(cpu), d->rate[i]);
            }
            d->round_sleep_us = longest;
            period_start = now;
        }
    }
    worker_thread_unlock(&d->w);
    return NULL;
}

/*
 * d->w.lock held. Starts or ends the thread and the log reference to match
 * the limits. False (@errp set) if the slots could not be made to log.
 */
static bool dl_update_locked(DirtyLimit *d, bool own_log, Error **errp)
{
    bool want = dl_any_limit();

    if (want && own_log && !d->log_ref) {
        d->log_ref = kvm_dirty_ring_count_start(kvm_state, errp);
        if (!d->log_ref) {
            return false;
        }
    }
    if (want && !d->w.running) {
        memset(d->rate, 0, sizeof(d->rate));
        d->round_sleep_us = 0;
        worker_thread_start_locked(&d->w, "dirtylimit", dirtylimit_thread_fn, d);
    }
    if (!want) {
        /* Drops the lock while joining: the thread takes it to see quit. */
        worker_thread_stop_locked(&d->w);
    }
    if (!want && d->log_ref) {
        kvm_dirty_ring_count_stop(kvm_state);
        d->log_ref = false;
    }
    return true;
}

static void dl_set_one(CPUState *cpu, uint64_t mbps)
{
    /* A new limit starts a new budget, taken by the vCPU at its next exit. */
    __atomic_store_n(&cpu->dl_start_ns, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&cpu->dirty_limit_mbps, mbps, __ATOMIC_RELAXED);
    /* Out of a sleep computed for the old limit. */
    cpu_kick(cpu);
}

bool dirtylimit_set(int cpu_index, uint64_t mbps, bool own_log, Error **errp)
{
    if (!dirtylimit_supported(errp)) {
        return false;
    }
    if (cpu_index != -1 && !dl_cpu(cpu_index)) {
        error_setg(errp, "incorrect cpu index specified");
        return false;
    }
    if (!mbps) {
        error_setg(errp, "dirty-rate must be at least 1 MB/s");
        return false;
    }
    worker_thread_lock(&dl.w);
    for (guint i = 0; i < vcpus->len; i++) {
        if (cpu_index == -1 || (guint)cpu_index == i) {
            dl_set_one(g_ptr_array_index(vcpus, i), mbps);
        }
    }
    if (!dl_update_locked(&dl, own_log, errp)) {
        /* Without logging no ring fills: a limit would never act. Take it back. */
        for (guint i = 0; i < vcpus->len; i++) {
            if (cpu_index == -1 || (guint)cpu_index == i) {
                dl_set_one(g_ptr_array_index(vcpus, i), 0);
            }
        }
        dl_update_locked(&dl, false, NULL);
        worker_thread_unlock(&dl.w);
        return false;
    }
    worker_thread_unlock(&dl.w);
    trace_dirtylimit_set(cpu_index, mbps);
    return true;
}

void dirtylimit_cancel(int cpu_index)
{
    worker_thread_lock(&dl.w);
    for (guint i = 0; vcpus && i < vcpus->len; i++) {
        if (cpu_index == -1 || (guint)cpu_index == i) {
            dl_set_one(g_ptr_array_index(vcpus, i), 0);
        }
    }
    dl_update_locked(&dl, false, NULL);
    worker_thread_unlock(&dl.w);
    trace_dirtylimit_set(cpu_index, 0);
}

bool dirtylimit_in_service(void)
{
    return dl_any_limit();
}

bool dirtylimit_vcpu_limited(int cpu_index)
{
    CPUState *cpu = dl_cpu(cpu_index);

    return cpu && dl_limit(cpu);
}

void dirtylimit_set_period_ms(uint64_t ms)
{
    __atomic_store_n(&dl.period_ms, MAX(1, ms), __ATOMIC_RELAXED);
}

uint64_t dirtylimit_vcpu_current_rate(int cpu_index)
{
    uint64_t rate = 0;

    worker_thread_lock(&dl.w);
    if (cpu_index >= 0 && cpu_index < DL_MAX_VCPUS) {
        rate = dl.rate[cpu_index];
    }
    worker_thread_unlock(&dl.w);
    return rate;
}

uint64_t dirtylimit_vcpu_limit(int cpu_index)
{
    CPUState *cpu = dl_cpu(cpu_index);

    return cpu ? dl_limit(cpu) : 0;
}

uint64_t dirtylimit_throttle_time_per_round_us(void)
{
    uint64_t us;

    worker_thread_lock(&dl.w);
    us = dl.round_sleep_us;
    worker_thread_unlock(&dl.w);
    return us;
}

uint64_t dirtylimit_ring_full_time_us(void)
{
    uint64_t ring = kvm_dirty_ring_bytes(kvm_state), sum = 0, n = 0;

    worker_thread_lock(&dl.w);
    for (guint i = 0; vcpus && i < vcpus->len && i < DL_MAX_VCPUS; i++) {
        if (dl_limit(g_ptr_array_index(vcpus, i))) {
            sum += dl.rate[i];
            n++;
        }
    }
    worker_thread_unlock(&dl.w);
    /* The ring's bytes at the average limited vCPU's rate (sum / n MB/s). */
    return n && sum ? ring * n * 1000000 / (sum * MiB) : 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * auto-converge's guest throttle. With pct% asked, the "cpu-throttle"
 * thread wakes every TIMESLICE / (1 - pct) and marks every vCPU due; a due
 * vCPU is kicked out of KVM_RUN and sleeps pct / (1 - pct) x TIMESLICE in
 * its own thread, so it runs about one timeslice per period. Nothing here
 * takes the BQL: a vCPU sleeping for the throttle holds nothing anyone
 * waits for, and cpu_kick() (pause, run_on_cpu) ends its sleep early.
 */
#include "qemu/osdep.h"
#include "qemu/worker-thread.h"
#include "system/cpus.h"
#include "system/cpu-throttle.h"
#include "system/dirtylimit.h"
#include "trace.h"

/*
 * auto-converge's throttle: one per process (one set of vCPUs).
 * migration/dirty/converge.c sets and stops it, for one migration at a time, so
 * the thread's start and stop never race.
 */
typedef struct CpuThrottle {
    /* w.lock: running, quit; cpu_throttle_set/stop write, the thread reads. */
    WorkerThread w;
    /* Atomic; 0 = off. cpu_throttle_set/stop write; the thread and every vCPU read. */
    int pct;
    /* Atomic: each vCPU adds its throttle sleeps; query-migrate reads. */
    uint64_t slept_ns;
} CpuThrottle;

static CpuThrottle throttle;

static void *cpu_throttle_thread_fn(void *opaque)
{
    CpuThrottle *t = opaque;

    worker_thread_lock(&t->w);
    for (;;) {
        int pct = __atomic_load_n(&t->pct, __ATOMIC_RELAXED);
        int64_t period_us;

        if (!pct) {
            break;
        }
        for (guint i = 0; vcpus && i < vcpus->len; i++) {
            CPUState *cpu = g_ptr_array_index(vcpus, i);

            __atomic_store_n(&cpu->throttle_due, 1, __ATOMIC_RELEASE);
            cpu_kick_run(cpu);
        }
        period_us = CPU_THROTTLE_TIMESLICE_NS * 100 / (100 - pct) / 1000;
        /* Woken by a new percentage (or at the period's end): the next period uses it. */
        if (worker_thread_wait(&t->w, period_us)) {
            break;
        }
    }
    worker_thread_unlock(&t->w);
    return NULL;
}

void cpu_throttle_set(int pct)
{
    CpuThrottle *t = &throttle;

    pct = MAX(CPU_THROTTLE_PCT_MIN, MIN(pct, CPU_THROTTLE_PCT_MAX));
    trace_cpu_throttle_set(pct);
    worker_thread_lock(&t->w);
    __atomic_store_n(&t->pct, pct, __ATOMIC_RELAXED);
    worker_thread_start_locked(&t->w, "cpu-throttle", cpu_throttle_thread_fn, t);
    worker_thread_wake(&t->w);
    worker_thread_unlock(&t->w);
}

void cpu_throttle_stop(void)
{
    CpuThrottle *t = &throttle;

    worker_thread_lock(&t->w);
    __atomic_store_n(&t->pct, 0, __ATOMIC_RELAXED);
    worker_thread_stop_locked(&t->w);
    worker_thread_unlock(&t->w);
}

bool cpu_throttle_active(void)
{
    return cpu_throttle_get_percentage() != 0;
}

int cpu_throttle_get_percentage(void)
{
    return __atomic_load_n(&throttle.pct, __ATOMIC_RELAXED);
}

uint64_t cpu_throttle_sleep_ns(void)
{
    return __atomic_load_n(&throttle.slept_ns, __ATOMIC_RELAXED);
}

void cpu_throttle_vcpu_wait(CPUState *cpu)
{
    if (__atomic_load_n(&cpu->throttle_due, __ATOMIC_RELAXED) &&
        __atomic_exchange_n(&cpu->throttle_due, 0, __ATOMIC_ACQUIRE)) {
        int pct = cpu_throttle_get_percentage();

        if (pct) {
            int64_t ns = CPU_THROTTLE_TIMESLICE_NS * pct / (100 - pct);
            int64_t slept = cpu_sleep_unless_kicked(cpu, ns);

            __atomic_add_fetch(&throttle.slept_ns, slept, __ATOMIC_RELAXED);
            trace_cpu_throttle_vcpu_sleep(cpu->cpu_index, pct, slept / 1000);
        }
    }
    dirtylimit_vcpu_wait(cpu);
}

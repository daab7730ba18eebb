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
#include "qemu/thread.h"
#include "system/cpus.h"
#include "system/cpu-throttle.h"
#include "system/dirtylimit.h"
#include "trace.h"

static GMutex throttle_lock;
static GCond throttle_cond;
static QemuThread throttle_thread;
static bool throttle_thread_running;   /* throttle_lock */
static int throttle_pct;                /* atomic; 0 = off */
static uint64_t throttle_slept_ns;      /* atomic */

static void *cpu_throttle_thread_fn(void *opaque)
{
    g_mutex_lock(&throttle_lock);
    for (;;) {
        int pct = __atomic_load_n(&throttle_pct, __ATOMIC_RELAXED);
        int64_t period_ns, deadline;

        if (!pct) {
            break;
        }
        for (guint i = 0; vcpus && i < vcpus->len; i++) {
            CPUState *cpu = g_ptr_array_index(vcpus, i);

            __atomic_store_n(&cpu->throttle_due, 1, __ATOMIC_RELEASE);
            cpu_kick_run(cpu);
        }
        period_ns = CPU_THROTTLE_TIMESLICE_NS * 100 / (100 - pct);
        deadline = g_get_monotonic_time() + period_ns / 1000;
        while (__atomic_load_n(&throttle_pct, __ATOMIC_RELAXED) &&
               g_cond_wait_until(&throttle_cond, &throttle_lock, deadline)) {
            /* Woken by a new percentage: the next period uses it. */
            break;
        }
    }
    g_mutex_unlock(&throttle_lock);
    return NULL;
}

void cpu_throttle_set(int pct)
{
    pct = MAX(CPU_THROTTLE_PCT_MIN, MIN(pct, CPU_THROTTLE_PCT_MAX));
    trace_cpu_throttle_set(pct);
    g_mutex_lock(&throttle_lock);
    __atomic_store_n(&throttle_pct, pct, __ATOMIC_RELAXED);
    if (!throttle_thread_running) {
        throttle_thread_running =
            qemu_thread_create(&throttle_thread, "cpu-throttle", cpu_throttle_thread_fn, NULL) == 0;
    }
    g_cond_broadcast(&throttle_cond);
    g_mutex_unlock(&throttle_lock);
}

void cpu_throttle_stop(void)
{
    bool join;

    g_mutex_lock(&throttle_lock);
    __atomic_store_n(&throttle_pct, 0, __ATOMIC_RELAXED);
    g_cond_broadcast(&throttle_cond);
    join = throttle_thread_running;
    throttle_thread_running = false;
    g_mutex_unlock(&throttle_lock);
    if (join) {
        qemu_thread_join(&throttle_thread);
    }
}

bool cpu_throttle_active(void)
{
    return cpu_throttle_get_percentage() != 0;
}

int cpu_throttle_get_percentage(void)
{
    return __atomic_load_n(&throttle_pct, __ATOMIC_RELAXED);
}

uint64_t cpu_throttle_sleep_ns(void)
{
    return __atomic_load_n(&throttle_slept_ns, __ATOMIC_RELAXED);
}

void cpu_throttle_vcpu_wait(CPUState *cpu)
{
    if (__atomic_load_n(&cpu->throttle_due, __ATOMIC_RELAXED) &&
        __atomic_exchange_n(&cpu->throttle_due, 0, __ATOMIC_ACQUIRE)) {
        int pct = cpu_throttle_get_percentage();

        if (pct) {
            int64_t ns = CPU_THROTTLE_TIMESLICE_NS * pct / (100 - pct);
            int64_t slept = cpu_sleep_unless_kicked(cpu, ns);

            __atomic_add_fetch(&throttle_slept_ns, slept, __ATOMIC_RELAXED);
            trace_cpu_throttle_vcpu_sleep(cpu->cpu_index, pct, slept / 1000);
        }
    }
    dirtylimit_vcpu_wait(cpu);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Pausing, resuming and running work on vCPUs. The handshake:
 *
 *   requester (BQL)                 vCPU thread
 *   cpu->stop = true
 *   cpu_kick(): exit_request=1,     KVM_RUN returns -EINTR (or never enters
 *     run->immediate_exit=1,          because immediate_exit is set)
 *     pthread_kill(SIG_IPI)         takes BQL, sees stop: stopped = true,
 *   waits on pause_cond  <--------    broadcasts pause_cond, waits on cond
 *   ...                             
 *   cpu->stop = false; cond  ---->  wakes, stopped = false, runs again
 */
#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "system/cpus.h"
#include <linux/kvm.h>

#define SIG_IPI SIGUSR1

GPtrArray *vcpus;
static GCond pause_cond;
static __thread CPUState *this_cpu;

typedef struct RunOnCpuItem {
    RunOnCpuFunc fn;
    void *data;
    bool done;
} RunOnCpuItem;

CPUState *current_cpu(void)
{
    return this_cpu;
}

void set_current_cpu(CPUState *cpu)
{
    this_cpu = cpu;
}

void cpu_kick_run(CPUState *cpu)
{
    __atomic_store_n(&cpu->exit_request, 1, __ATOMIC_SEQ_CST);
    if (cpu->kvm_run) {
        __atomic_store_n(&cpu->kvm_run->immediate_exit, 1, __ATOMIC_SEQ_CST);
    }
    if (cpu->created && cpu != this_cpu) {
        pthread_kill(cpu->thread.thread, SIG_IPI);
    }
}

void cpu_kick(CPUState *cpu)
{
    /*
     * kick_seq first: a vCPU that leaves KVM_RUN because of this kick must
     * find it moved, or it would run on without looking at the request.
     */
    g_mutex_lock(&cpu->sleep_lock);
    __atomic_store_n(&cpu->kick_seq, cpu->kick_seq + 1, __ATOMIC_SEQ_CST);
    g_cond_broadcast(&cpu->sleep_cond);
    g_mutex_unlock(&cpu->sleep_lock);
    cpu_kick_run(cpu);
}

bool cpu_kicked(CPUState *cpu)
{
    return __atomic_load_n(&cpu->kick_seq, __ATOMIC_SEQ_CST) != cpu->sleep_seq;
}

int64_t cpu_sleep_unless_kicked(CPUState *cpu, int64_t ns)
{
    int64_t start = get_clock_ns(), deadline = start + ns;

    /*
     * sleep_seq was read under the BQL right after the requests were
     * handled: a request made since came with a kick that moved kick_seq.
     */
    g_mutex_lock(&cpu->sleep_lock);
    while (cpu->kick_seq == cpu->sleep_seq) {
        int64_t now = get_clock_ns();

        if (now >= deadline) {
            break;
        }
        g_cond_wait_until(&cpu->sleep_cond, &cpu->sleep_lock,
                          g_get_monotonic_time() + (deadline - now + 999) / 1000);
    }
    g_mutex_unlock(&cpu->sleep_lock);
    return get_clock_ns() - start;
}

bool all_vcpus_paused(void)
{
    for (guint i = 0; vcpus && i < vcpus->len; i++) {
        CPUState *cpu = g_ptr_array_index(vcpus, i);
        if (!cpu->stopped) {
            return false;
        }
    }
    return true;
}

void pause_all_vcpus(void)
{
    assert(bql_locked());
    assert(!this_cpu);
    for (guint i = 0; vcpus && i < vcpus->len; i++) {
        CPUState *cpu = g_ptr_array_index(vcpus, i);
        cpu->stop = true;
        cpu_kick(cpu);
    }
    while (!all_vcpus_paused()) {
        bql_cond_wait(&pause_cond);
    }
}

void resume_all_vcpus(void)
{
    assert(bql_locked());
    for (guint i = 0; vcpus && i < vcpus->len; i++) {
        CPUState *cpu = g_ptr_array_index(vcpus, i);
        cpu->stop = false;
        g_cond_broadcast(&cpu->cond);
    }
}

void cpus_signal_paused(void)
{
    g_cond_broadcast(&pause_cond);
}

static void cpu_run_queued_work(CPUState *cpu)
{
    RunOnCpuItem *item;

    while ((item = g_queue_pop_head(&cpu->work))) {
        item->fn(cpu, item->data);
        item->done = true;
        g_cond_broadcast(&cpu->cond);
    }
}

void cpu_handle_requests(CPUState *cpu)
{
    assert(bql_locked());
    cpu_run_queued_work(cpu);
    while (cpu->stop && !cpu->exit_thread) {
        if (!cpu->stopped) {
            cpu->stopped = true;
            g_cond_broadcast(&pause_cond);
        }
        bql_cond_wait(&cpu->cond);
        cpu_run_queued_work(cpu);
    }
    cpu->stopped = false;
    g_mutex_lock(&cpu->sleep_lock);
    cpu->sleep_seq = cpu->kick_seq;
    g_mutex_unlock(&cpu->sleep_lock);
}

void run_on_cpu(CPUState *cpu, RunOnCpuFunc fn, void *data)
{
    RunOnCpuItem item = { .fn = fn, .data = data };

    assert(bql_locked());
    if (cpu == this_cpu || !cpu->created) {
        fn(cpu, data);
        return;
    }
    g_queue_push_tail(&cpu->work, &item);
    /* A stopped vCPU waits on cond; a running one needs a kick. */
    g_cond_broadcast(&cpu->cond);
    cpu_kick(cpu);
    while (!item.done) {
        bql_cond_wait(&cpu->cond);
    }
}

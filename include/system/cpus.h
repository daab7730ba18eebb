/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vCPUs: one thread per vCPU ("CPU n/KVM") running KVM_RUN. Pausing is a
 * kick (signal + immediate_exit) plus a counted acknowledgement under the
 * BQL; run_on_cpu() executes a function in a vCPU's own thread.
 */
#ifndef SYSTEM_CPUS_H
#define SYSTEM_CPUS_H

#include <glib.h>
#include <stdbool.h>
#include "qemu/thread.h"

struct kvm_run;
typedef struct X86CPUState X86CPUState;

typedef void (*RunOnCpuFunc)(CPUState *cpu, void *data);

struct CPUState {
    int cpu_index;              /* also the APIC id and KVM vcpu id */
    int kvm_fd;
    int stats_fd;               /* KVM_GET_STATS_FD, opened at creation (-1 if none) */
    struct kvm_run *kvm_run;    /* mmapped, shared with the kernel */
    size_t kvm_run_size;
    QemuThread thread;
    int thread_id;              /* kernel tid, set by the thread itself */
    char thread_name[24];

    /* Protected by the BQL. */
    bool created;               /* thread is up */
    bool stop;                  /* somebody asked this vCPU to pause */
    bool stopped;               /* the vCPU acknowledged the pause */
    bool exit_thread;           /* the thread must end (process teardown) */
    GQueue work;                /* pending run_on_cpu items */
    GCond cond;                 /* signalled when stop clears or work completes */

    /* Atomic: set by cpu_kick() so the next KVM_RUN returns at once. */
    int exit_request;

    /*
     * Throttling (system/cpu-throttle.c, system/dirtylimit.c). The vCPU
     * sleeps in its own thread, outside KVM_RUN and without the BQL, on
     * sleep_cond; cpu_kick() bumps kick_seq under sleep_lock so that a
     * pause or run_on_cpu never waits for a throttle sleep to end.
     */
    GMutex sleep_lock;
    GCond sleep_cond;
    uint64_t kick_seq;          /* written under sleep_lock, read atomically */
    uint64_t sleep_seq;         /* own vCPU thread: kick_seq when requests were last handled */
    int throttle_due;           /* atomic: auto-converge asks for one sleep */
    uint64_t dirty_pages;       /* atomic (ring lock adds): entries harvested from this vCPU's ring */
    uint64_t dirty_limit_mbps;  /* atomic: dirty-limit of this vCPU in MB/s, 0 = none */
    /* Own vCPU thread: the dirty-limit budget started at dl_start_ns with dl_start_pages. */
    int64_t dl_start_ns;
    uint64_t dl_start_pages;
    uint64_t dl_sleep_ns;       /* atomic: time slept for dirty-limit, ever */
    uint64_t dl_sleeps;         /* atomic: number of those sleeps */

    /* Dirty ring (accel/kvm/kvm-dirty-ring.c): the mapping and our read index. */
    struct kvm_dirty_gfn *dirty_gfns;
    uint32_t dirty_ring_fetch;  /* ring lock */
    bool dirty_ring_warned;     /* own vCPU thread: a failed ring reset was reported */

    /* Architecture (x86) register state, owned by accel/kvm. */
    X86CPUState *env;
    /* Touched only by this vCPU's thread or with the vCPU paused. */
    bool vcpu_dirty;            /* env holds state newer than KVM's copy */
};

/* All vCPUs in index order. Filled at machine init, then immutable. */
extern GPtrArray *vcpus;
#define CPU_FOREACH_INDEX(i, cpu) \
    for ((i) = 0; (i) < vcpus->len && ((cpu) = g_ptr_array_index(vcpus, (i))); (i)++)

/* The vCPU whose thread is the caller, or NULL. */
CPUState *current_cpu(void);
void set_current_cpu(CPUState *cpu);

/* BQL held. Wait until every vCPU has acknowledged the pause. */
void pause_all_vcpus(void);
void resume_all_vcpus(void);
bool all_vcpus_paused(void);
/* Kick @cpu out of KVM_RUN (or a throttle sleep) so it notices new requests. Any thread. */
void cpu_kick(CPUState *cpu);
/*
 * @cpu's own thread: was cpu_kick() called since cpu_handle_requests() last
 * ran? Every request (pause, run_on_cpu, exit) comes with a kick, so a
 * vCPU that was not kicked may enter KVM_RUN again without the BQL.
 */
bool cpu_kicked(CPUState *cpu);
/* Kick @cpu out of KVM_RUN only: a throttle sleep goes on. Any thread. */
void cpu_kick_run(CPUState *cpu);
/*
 * In @cpu's own thread, without the BQL: sleep @ns unless cpu_kick() was
 * called since cpu_handle_requests() last ran. Returns the nanoseconds slept.
 */
int64_t cpu_sleep_unless_kicked(CPUState *cpu, int64_t ns);
/* BQL held; runs @fn in @cpu's thread and waits for it. */
void run_on_cpu(CPUState *cpu, RunOnCpuFunc fn, void *data);

/* Called by a vCPU thread with the BQL held: handle pause and queued work. */
void cpu_handle_requests(CPUState *cpu);
/* Signals pause_all_vcpus() waiters; used by the vCPU thread. */
void cpus_signal_paused(void);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The dirty-ring reaper: while any slot logs in ring mode, a thread of its
 * own harvests the vCPUs' rings before one fills up.
 *
 * Why: a vCPU whose ring is full exits with KVM_EXIT_DIRTY_RING_FULL and
 * harvests every ring itself, KVM_RESET_DIRTY_RINGS included, before it
 * may run again. Traced on 2026-12-02 (stall scenario, 4096 entries, a
 * guest writing 100 MB/s at random): one such exit every 110 ms, each
 * keeping the vCPU out of the guest 1.1 to 2.6 ms, 90% of it the reset.
 * Harvested here, on whatever core the VMM's other threads run, the vCPU
 * never stops for it; KVM takes its mmu_lock per page range during the
 * reset, so a vCPU that faults meanwhile waits for one range at most.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/worker-thread.h"
#include "system/kvm.h"
#include "kvm-dirty-ring.h"

/* How often the rings are looked at, and how full one may get first. */
#define REAPER_PERIOD_US 5000
#define REAPER_FILL_DIVISOR 4

/*
 * The reaper: one per process, as there is one KVM dirty log. Started and
 * stopped under kvm-dirty-clients.c's log_lock, which serialises its life.
 */
typedef struct KVMDirtyReaper {
    /* w.lock: running, quit. The thread is its reader; start/stop (log_lock) write. */
    WorkerThread w;
    /* Written by start before the thread exists; read-only by the thread. */
    KVMState *s;
} KVMDirtyReaper;

static KVMDirtyReaper reaper;

static void *kvm_dirty_reaper_run(void *opaque)
{
    KVMDirtyReaper *r = opaque;
    KVMState *s = r->s;
    uint32_t fill = MAX(1, s->opts.dirty_ring_size / REAPER_FILL_DIVISOR);

    worker_thread_lock(&r->w);
    while (!worker_thread_wait(&r->w, REAPER_PERIOD_US)) {
        worker_thread_unlock(&r->w);
        /* A failed reset is remembered by the rings: the next sync reports it. */
        if (kvm_dirty_ring_filling(s, fill)) {
            kvm_dirty_ring_reap(s);
        }
        worker_thread_lock(&r->w);
    }
    worker_thread_unlock(&r->w);
    return NULL;
}

void kvm_dirty_reaper_start(KVMState *s)
{
    KVMDirtyReaper *r = &reaper;
    int ret;

    worker_thread_lock(&r->w);
    if (!r->w.running) {
        r->s = s;
    }
    ret = worker_thread_start_locked(&r->w, "kvm-reaper", kvm_dirty_reaper_run, r);
    worker_thread_unlock(&r->w);
    if (ret < 0) {
        /* Not fatal: full rings are still harvested by their vCPU. */
        warn_report("cannot create the dirty-ring reaper thread: %s", g_strerror(-ret));
    }
}

void kvm_dirty_reaper_stop(void)
{
    worker_thread_stop(&reaper.w);
}

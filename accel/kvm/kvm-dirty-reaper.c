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
#include "qemu/thread.h"
#include "system/kvm.h"
#include "kvm-dirty-ring.h"

/* How often the rings are looked at, and how full one may get first. */
#define REAPER_PERIOD_US 5000
#define REAPER_FILL_DIVISOR 4

/* reaper_lock: the thread's life. Started and stopped under kvm-dirty-clients.c's log_lock. */
static GMutex reaper_lock;
static GCond reaper_cond;
static bool reaper_running;     /* reaper_lock */
static bool reaper_quit;        /* reaper_lock */
static QemuThread reaper_thread;

static void *kvm_dirty_reaper_run(void *opaque)
{
    KVMState *s = opaque;
    uint32_t fill = MAX(1, s->opts.dirty_ring_size / REAPER_FILL_DIVISOR);

    g_mutex_lock(&reaper_lock);
    while (!reaper_quit) {
        g_cond_wait_until(&reaper_cond, &reaper_lock,
                          g_get_monotonic_time() + REAPER_PERIOD_US);
        if (reaper_quit) {
            break;
        }
        g_mutex_unlock(&reaper_lock);
        /* A failed reset is remembered by the rings: the next sync reports it. */
        if (kvm_dirty_ring_filling(s, fill)) {
            kvm_dirty_ring_reap(s);
        }
        g_mutex_lock(&reaper_lock);
    }
    g_mutex_unlock(&reaper_lock);
    return NULL;
}

void kvm_dirty_reaper_start(KVMState *s)
{
    int ret;

    g_mutex_lock(&reaper_lock);
    if (reaper_running) {
        g_mutex_unlock(&reaper_lock);
        return;
    }
    reaper_quit = false;
    ret = qemu_thread_create(&reaper_thread, "kvm-reaper", kvm_dirty_reaper_run, s);
    reaper_running = ret == 0;
    g_mutex_unlock(&reaper_lock);
    if (ret < 0) {
        /* Not fatal: full rings are still harvested by their vCPU. */
        warn_report("cannot create the dirty-ring reaper thread: %s", g_strerror(-ret));
    }
}

void kvm_dirty_reaper_stop(void)
{
    g_mutex_lock(&reaper_lock);
    if (!reaper_running) {
        g_mutex_unlock(&reaper_lock);
        return;
    }
    reaper_quit = true;
    g_cond_signal(&reaper_cond);
    g_mutex_unlock(&reaper_lock);
    qemu_thread_join(&reaper_thread);
    g_mutex_lock(&reaper_lock);
    reaper_running = false;
    g_mutex_unlock(&reaper_lock);
}

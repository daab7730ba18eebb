/* SPDX-License-Identifier: GPL-2.0-or-later */
/* postcopy-blocktime (postcopy-blocktime.h): blocked intervals per vCPU and of all at once. */
#include "qemu/osdep.h"
#include "qemu/tsan.h"
#include "qemu/thread.h"
#include "system/cpus.h"
#include "postcopy-blocktime.h"

typedef struct VcpuBlock {
    int tid;                    /* the vCPU thread's kernel id */
    uint64_t page_addr;         /* the page it waits for; valid while start_ns != 0 */
    int64_t start_ns;           /* 0: running */
    uint64_t total_ns;
    uint64_t waits;             /* faults it waited on, for the average */
} VcpuBlock;

typedef struct Blocktime {
    /* lock: the fault thread and the placing threads (mig/dst, mig/pc-preempt). */
    GMutex lock;
    bool on;                    /* set at start, before any fault is read */
    VcpuBlock *vcpu;
    int nvcpus;
    int nblocked;
    int64_t all_start_ns;       /* when the last running vCPU blocked */
    uint64_t all_total_ns;
} Blocktime;

/* The process's one destination's blocktime; the fields say who writes them. */
static Blocktime bt;

void postcopy_blocktime_start(void)
{
    CPUState *cpu;
    guint i;

    tsan_g_mutex_lock(&bt.lock);
    g_free(bt.vcpu);
    bt.nvcpus = vcpus ? vcpus->len : 0;
    bt.vcpu = g_new0(VcpuBlock, bt.nvcpus);
    CPU_FOREACH_INDEX(i, cpu) {
        bt.vcpu[i].tid = cpu->thread_id;
    }
    bt.nblocked = 0;
    bt.all_start_ns = 0;
    bt.all_total_ns = 0;
    __atomic_store_n(&bt.on, true, __ATOMIC_RELEASE);
    tsan_g_mutex_unlock(&bt.lock);
}

bool postcopy_blocktime_on(void)
{
    return __atomic_load_n(&bt.on, __ATOMIC_ACQUIRE);
}

void postcopy_blocktime_fault(uint32_t tid, uint64_t page_addr, int64_t now_ns)
{
    tsan_g_mutex_lock(&bt.lock);
    for (int i = 0; i < bt.nvcpus; i++) {
        VcpuBlock *v = &bt.vcpu[i];

        /* A vCPU thread's id is set once it ran; an earlier fault of it is still pending. */
        if (!v->tid) {
            v->tid = __atomic_load_n(&((CPUState *)g_ptr_array_index(vcpus, i))->thread_id,
                                     __ATOMIC_RELAXED);
        }
        if (v->tid != (int)tid || v->start_ns) {
            continue;
        }
        v->page_addr = page_addr;
        v->start_ns = now_ns;
        if (++bt.nblocked == bt.nvcpus) {
            bt.all_start_ns = now_ns;
        }
        break;
    }
    tsan_g_mutex_unlock(&bt.lock);
}

void postcopy_blocktime_placed(uint64_t page_addr)
{
    int64_t now = get_clock_ns();

    tsan_g_mutex_lock(&bt.lock);
    for (int i = 0; i < bt.nvcpus && bt.nblocked; i++) {
        VcpuBlock *v = &bt.vcpu[i];

        if (!v->start_ns || v->page_addr != page_addr) {
            continue;
        }
        v->total_ns += now - v->start_ns;
        v->waits++;
        v->start_ns = 0;
        if (bt.nblocked-- == bt.nvcpus && bt.all_start_ns) {
            bt.all_total_ns += now - bt.all_start_ns;
            bt.all_start_ns = 0;
        }
    }
    tsan_g_mutex_unlock(&bt.lock);
}

void postcopy_blocktime_fill_info(MigrationInfo *info)
{
    uint32List **tail = &info->postcopy_vcpu_blocktime;
    uint64List **lat_tail = &info->postcopy_vcpu_latency;
    int64_t now = get_clock_ns();

    if (!postcopy_blocktime_on()) {
        return;
    }
    tsan_g_mutex_lock(&bt.lock);
    info->has_postcopy_blocktime = true;
    /* A wait still running counts up to now. */
    info->postcopy_blocktime = (bt.all_total_ns + (bt.all_start_ns ? now - bt.all_start_ns : 0)) /
                               1000000;
    for (int i = 0; i < bt.nvcpus; i++) {
        uint32List *e = g_new0(uint32List, 1);
        VcpuBlock *v = &bt.vcpu[i];

        uint64List *l = g_new0(uint64List, 1);

        e->value = (v->total_ns + (v->start_ns ? now - v->start_ns : 0)) / 1000000;
        *tail = e;
        tail = &e->next;
        l->value = v->waits ? v->total_ns / v->waits : 0;
        *lat_tail = l;
        lat_tail = &l->next;
    }
    tsan_g_mutex_unlock(&bt.lock);
}

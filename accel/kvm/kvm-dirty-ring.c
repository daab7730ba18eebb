/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * KVM dirty ring (KVM_CAP_DIRTY_LOG_RING): one ring of dirtied guest frames
 * per vCPU, mmapped from the vCPU fd. Harvesting walks each ring in order
 * while the entry's flags say DIRTY (load-acquire), sets the page's bit in
 * its slot's ring bitmap, marks the entry for reset (store-release), and
 * finally asks KVM to re-protect the harvested pages (KVM_RESET_DIRTY_RINGS)
 * before anyone reads their contents. If that reset fails, writes to those
 * pages may never reach a ring again: every later sync fails until no slot
 * logs any more, so the migration fails instead of losing them. A sync
 * hands the ring bitmap of each slot over to the slot's dirty_bmap (the
 * double buffer), and from there to every client tracking the slot: the
 * guest keeps filling rings meanwhile, and a vCPU whose ring fills, the
 * kvm-reaper thread and the dirtylimit thread harvest too. A slot has a
 * ring bitmap only while a client tracks it; entries of other slots are
 * reset (and counted) but not recorded.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "system/cpus.h"
#include "system/kvm.h"
#include "kvm-dirty-ring.h"
#include "trace.h"

/* Harvests and ring bitmaps: every client's sync, vCPU threads, kvm-reaper and dirtylimit. */
static GMutex ring_lock;
/* ring_lock: -errno of the first failed KVM_RESET_DIRTY_RINGS since a slot started logging. */
static int ring_reset_error;

bool kvm_dirty_ring_enable(KVMState *s, Error **errp)
{
    uint64_t entries = s->opts.dirty_ring_size;
    uint64_t max = s->dirty_ring_max_bytes / sizeof(struct kvm_dirty_gfn);
    struct kvm_enable_cap cap = { 0 };
    int ret;

    if (!max) {
        error_setg(errp, "KVM does not support the dirty ring (KVM_CAP_DIRTY_LOG_RING)");
        return false;
    }
    if (entries & (entries - 1)) {
        error_setg(errp, "dirty-ring-size must be a power of two");
        return false;
    }
    if (entries > max) {
        error_setg(errp, "KVM dirty ring size %" PRIu64 " too big (maximum is %" PRIu64 "). "
                   "Please use a smaller value.", entries, max);
        return false;
    }
    /* The acquire/release variant is the one whose ordering we rely on. */
    cap.cap = s->dirty_ring_acq_rel ? KVM_CAP_DIRTY_LOG_RING_ACQ_REL : KVM_CAP_DIRTY_LOG_RING;
    cap.args[0] = entries * sizeof(struct kvm_dirty_gfn);
    ret = kvm_vm_ioctl(s, KVM_ENABLE_CAP, &cap);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "enabling the KVM dirty ring (%" PRIu64 " entries) failed",
                         entries);
        return false;
    }
    return true;
}

bool kvm_dirty_ring_vcpu_init(KVMState *s, CPUState *cpu, Error **errp)
{
    size_t len = s->opts.dirty_ring_size * sizeof(struct kvm_dirty_gfn);
    void *ring = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, cpu->kvm_fd,
                      KVM_DIRTY_LOG_PAGE_OFFSET * sysconf(_SC_PAGESIZE));

    if (ring == MAP_FAILED) {
        error_setg_errno(errp, errno, "mapping the dirty ring of CPU %d failed", cpu->cpu_index);
        return false;
    }
    cpu->dirty_gfns = ring;
    cpu->dirty_ring_fetch = 0;
    return true;
}

static KVMSlot *kvm_slot_by_id(KVMState *s, uint32_t slot_id)
{
    /* Slots are numbered 0..nr_slots-1 in address space 0. */
    if ((slot_id >> 16) != 0 || (slot_id & 0xffff) >= (uint32_t)s->nr_slots) {
        return NULL;
    }
    return &s->slots[slot_id & 0xffff];
}

/* Harvests one vCPU's ring. ring_lock held. Returns entries collected. */
static uint32_t kvm_dirty_ring_reap_one(KVMState *s, CPUState *cpu)
{
    uint32_t size = s->opts.dirty_ring_size;
    uint32_t count = 0, pages = 0;

    for (;;) {
        struct kvm_dirty_gfn *e = &cpu->dirty_gfns[cpu->dirty_ring_fetch & (size - 1)];
        uint32_t flags = __atomic_load_n(&e->flags, __ATOMIC_ACQUIRE);
        KVMSlot *slot;

        if (!(flags & KVM_DIRTY_GFN_F_DIRTY)) {
            break;
        }
        slot = kvm_slot_by_id(s, e->slot);
        /* Entries of a slot that stopped logging are reset, not recorded. */
        if (slot && slot->harvest_bmap && e->offset < slot->npages) {
            set_bit(e->offset, slot->harvest_bmap);
        }
        if (slot && slot->count_bmap && e->offset < slot->npages &&
            !test_bit(e->offset, slot->count_bmap)) {
            set_bit(e->offset, slot->count_bmap);
            pages++;
        }
        __atomic_store_n(&e->flags, KVM_DIRTY_GFN_F_RESET, __ATOMIC_RELEASE);
        cpu->dirty_ring_fetch++;
        count++;
    }
    if (pages) {
        __atomic_add_fetch(&cpu->dirty_pages, pages, __ATOMIC_RELAXED);
    }
    return count;
}

/* Clears the count bits of the entries [from, cpu->dirty_ring_fetch) of @cpu's ring. */
static void kvm_dirty_ring_uncount(KVMState *s, CPUState *cpu, uint32_t from)
{
    uint32_t size = s->opts.dirty_ring_size;

    for (uint32_t i = from; i != cpu->dirty_ring_fetch; i++) {
        struct kvm_dirty_gfn *e = &cpu->dirty_gfns[i & (size - 1)];
        KVMSlot *slot = kvm_slot_by_id(s, e->slot);

        if (slot && slot->count_bmap && e->offset < slot->npages) {
            clear_bit(e->offset, slot->count_bmap);
        }
    }
}

int kvm_dirty_ring_reap(KVMState *s)
{
    uint32_t from[256];
    uint64_t total = 0;
    /* Once: a tracer attaching midway must not get half-measured times. */
    bool traced = TRACE_EVENT_ENABLED(kvm_dirty_ring_reap);
    int64_t t0 = traced ? get_clock_ns() : 0, t_locked = 0, t_reset = 0;
    int ret;

    g_mutex_lock(&ring_lock);
    if (traced) {
        t_locked = get_clock_ns();
    }
    for (guint i = 0; vcpus && i < vcpus->len; i++) {
        CPUState *cpu = g_ptr_array_index(vcpus, i);

        if (i < G_N_ELEMENTS(from)) {
            from[i] = cpu->dirty_ring_fetch;
        }
        if (cpu->dirty_gfns) {
            total += kvm_dirty_ring_reap_one(s, cpu);
        }
    }
    /*
     * The entries keep their gfn after the reset mark: clear exactly the
     * bits this harvest set, so the next one counts each page anew.
     */
    for (guint i = 0; vcpus && i < vcpus->len && i < G_N_ELEMENTS(from); i++) {
        CPUState *cpu = g_ptr_array_index(vcpus, i);

        if (cpu->dirty_gfns) {
            kvm_dirty_ring_uncount(s, cpu, from[i]);
        }
    }
    if (total) {
        /* Re-protect the harvested pages before their contents are read. */
        t_reset = traced ? get_clock_ns() : 0;
        ret = kvm_vm_ioctl(s, KVM_RESET_DIRTY_RINGS, NULL);
        t_reset = traced ? get_clock_ns() - t_reset : 0;
        if (ret < 0 && !ring_reset_error) {
            ring_reset_error = ret;
        }
    }
    s->dirty_stats.harvests++;
    ret = ring_reset_error;
    g_mutex_unlock(&ring_lock);
    if (traced) {
        char by[16] = "";

        pthread_getname_np(pthread_self(), by, sizeof(by));
        trace_kvm_dirty_ring_reap(by, total, (t_locked - t0) / 1000, t_reset / 1000,
                                  (get_clock_ns() - t0) / 1000);
    }
    return ret;
}

bool kvm_dirty_ring_filling(KVMState *s, uint32_t entries)
{
    uint32_t size = s->opts.dirty_ring_size;
    bool filling = false;

    if (!size) {
        return false;
    }
    entries = MIN(MAX(entries, 1), size);
    g_mutex_lock(&ring_lock);
    for (guint i = 0; vcpus && i < vcpus->len && !filling; i++) {
        CPUState *cpu = g_ptr_array_index(vcpus, i);
        struct kvm_dirty_gfn *e;

        if (!cpu->dirty_gfns) {
            continue;
        }
        /* KVM fills entries in order: the @entries-th one tells. */
        e = &cpu->dirty_gfns[(cpu->dirty_ring_fetch + entries - 1) & (size - 1)];
        filling = __atomic_load_n(&e->flags, __ATOMIC_ACQUIRE) & KVM_DIRTY_GFN_F_DIRTY;
    }
    g_mutex_unlock(&ring_lock);
    return filling;
}

int kvm_dirty_ring_sync_slot(KVMState *s, KVMSlot *slot)
{
    size_t words = BITS_TO_LONGS(slot->npages);

    g_mutex_lock(&ring_lock);
    memcpy(slot->dirty_bmap, slot->harvest_bmap, words * sizeof(unsigned long));
    memset(slot->harvest_bmap, 0, words * sizeof(unsigned long));
    g_mutex_unlock(&ring_lock);
    return 0;
}

void kvm_dirty_ring_track_slot(KVMState *s, KVMSlot *slot, bool on)
{
    g_mutex_lock(&ring_lock);
    if (on) {
        slot->harvest_bmap = bitmap_new(slot->npages);
    } else {
        g_clear_pointer(&slot->harvest_bmap, g_free);
    }
    g_mutex_unlock(&ring_lock);
}

void kvm_dirty_ring_log_start(KVMState *s)
{
    g_mutex_lock(&ring_lock);
    /*
     * No slot logged until now: every slot that starts to is write-protected
     * anew, so a failed reset of an earlier session cannot hide writes any
     * more.
     */
    ring_reset_error = 0;
    for (int i = 0; i < s->nr_slots; i++) {
        s->slots[i].count_bmap = bitmap_new(s->slots[i].npages);
    }
    g_mutex_unlock(&ring_lock);
}

void kvm_dirty_ring_log_stop(KVMState *s)
{
    g_mutex_lock(&ring_lock);
    /*
     * No slot logs any more: a failed reset of this session concerns no
     * one now, and a deferred client's first sync (before it arms a slot,
     * so before log_start) must not inherit it.
     */
    ring_reset_error = 0;
    for (int i = 0; i < s->nr_slots; i++) {
        g_clear_pointer(&s->slots[i].count_bmap, g_free);
    }
    g_mutex_unlock(&ring_lock);
}

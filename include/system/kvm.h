/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The KVM accelerator: VM and vCPU file descriptors, capabilities probed
 * once at init, and the memslot table (KVMSlot) built from guest RAM.
 * Hot-path helpers return 0 or -errno; setup takes Error **.
 */
#ifndef SYSTEM_KVM_H
#define SYSTEM_KVM_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/kvm.h>

typedef struct KVMAccelOpts {
    uint32_t dirty_ring_size;   /* entries per vCPU, 0 = off */
    const char *dirty_log;      /* "auto", "get", "clear" (x-dirty-log) */
} KVMAccelOpts;

struct KVMSlot {
    int slot;                   /* KVM slot id (address space 0) */
    hwaddr start_addr;          /* guest-physical */
    uint64_t memory_size;
    void *host;
    RAMBlock *rb;               /* the RAMBlock this slot maps ... */
    uint64_t ram_offset;        /* ... at this byte offset */
    uint32_t flags;             /* KVM_MEM_LOG_DIRTY_PAGES while logging */
    /*
     * Set: KVM reported the page dirty at the last sync and (clear-log)
     * its tracking was not re-armed yet; kvm_dirty_log_clear() clears the
     * bits it re-arms. One bit per page of the slot, in KVM's layout;
     * allocated when logging starts, freed when it stops, never on the sync
     * path. Touched only by the thread that syncs (mig/src).
     */
    unsigned long *dirty_bmap;
    /*
     * Set (dirty-ring mode): the page was harvested from a vCPU's ring since
     * the last sync, which moves the bits to dirty_bmap. Ring lock
     * (kvm-dirty-ring.c): vCPU threads harvest too.
     */
    unsigned long *harvest_bmap;
    /*
     * Set (dirty-ring mode, while the slots log): the page was counted for
     * its vCPU in the harvest under way. KVM pushes an entry for every
     * write it emulates, so without this a page written by emulated guest
     * code (all of CPL0 under kvm-pvm) would count once per write, not
     * once per harvest as a write-protect fault does. Ring lock.
     */
    unsigned long *count_bmap;
    uint64_t npages;
};

typedef struct KVMDirtyLogMode KVMDirtyLogMode;

/* Counters of the dirty-log layer; written by the syncing thread only. */
typedef struct KVMDirtyStats {
    uint64_t clears;            /* KVM_CLEAR_DIRTY_LOG calls */
    uint64_t clear_ns;
    uint64_t harvests;          /* dirty ring harvests */
} KVMDirtyStats;

struct KVMState {
    int fd;                     /* /dev/kvm */
    int vmfd;
    int vcpu_mmap_size;
    int max_vcpus;
    int nr_slots_max;

    /* Capabilities, probed once in kvm_init(). */
    bool irqchip;
    bool pit2;
    bool immediate_exit;
    bool vcpu_events;
    bool debugregs;
    bool xcrs;
    bool stats_fd;
    int xsave_size;             /* KVM_CAP_XSAVE2 size, 0 = plain KVM_GET_XSAVE */
    uint32_t manual_protect_caps;  /* KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2 flags */
    uint32_t dirty_ring_max_bytes; /* KVM_CAP_DIRTY_LOG_RING */
    bool dirty_ring_acq_rel;
    int clock_caps;             /* KVM_CAP_ADJUST_CLOCK */

    KVMAccelOpts opts;
    struct kvm_cpuid2 *supported_cpuid;
    struct kvm_msr_list *msr_list;   /* MSRs KVM reports (for migration) */

    KVMSlot *slots;
    int nr_slots;

    /* Dirty logging: the mode is chosen once in kvm_dirty_log_init(). */
    const KVMDirtyLogMode *dirty_mode;
    /* Bitmap session on (dirty_bmap allocated); kvm-dirty.c's log_lock. */
    bool dirty_logging;
    const char *dirty_log_owner;    /* who holds the session, for error messages */
    KVMDirtyStats dirty_stats;
};

/* The single accelerator instance (NULL until kvm_init()). */
extern KVMState *kvm_state;

KVMState *kvm_init(const KVMAccelOpts *opts, Error **errp);
void kvm_cleanup(KVMState *s);
int kvm_check_extension(KVMState *s, unsigned int cap);
int kvm_vm_check_extension(KVMState *s, unsigned int cap);
/* Return the ioctl result (>= 0) or -errno. */
int kvm_ioctl(KVMState *s, unsigned long req, void *arg);
int kvm_vm_ioctl(KVMState *s, unsigned long req, void *arg);
int kvm_vcpu_ioctl(CPUState *cpu, unsigned long req, void *arg);

/*
 * Registers the migration sections of the in-kernel PICs, IOAPIC, PIT and
 * kvmclock (accel/kvm/kvm-irqchip-state.c). After KVM_CREATE_IRQCHIP/PIT2.
 */
void kvm_irqchip_state_register(void);

/* Creates one KVMSlot per guest RAM range (after the machine mapped RAM). */
bool kvm_memslots_init(KVMState *s, Error **errp);
int kvm_slot_set_flags(KVMState *s, KVMSlot *slot, uint32_t flags);
int kvm_set_irq(KVMState *s, int irq, int level);

/*
 * ioeventfd and irqfd (accel/kvm/kvm-eventfd.c); 0 or -errno, -ENOSYS
 * where KVM lacks the capability (the caller falls back to exits and
 * kvm_set_irq). Setup and teardown only: BQL.
 */
bool kvm_has_ioeventfd(KVMState *s);
bool kvm_has_irqfd_resample(KVMState *s);
/* KVM signals @fd for a @len-byte guest write of @datamatch at MMIO @addr. */
int kvm_mmio_ioeventfd_assign(KVMState *s, int fd, hwaddr addr, unsigned int len,
                              uint64_t datamatch, bool assign);
/*
 * A level-triggered @gsi through irqfd: a write to @fd asserts the line,
 * which KVM holds until the guest's EOI, then drops it and signals
 * @resamplefd (so the device re-asserts if its interrupt is still pending).
 */
int kvm_irqfd_resample_assign(KVMState *s, int fd, int resamplefd, int gsi, bool assign);

/*
 * Dirty logging (accel/kvm/kvm-dirty.c). Modes are rows of one table with
 * the same hooks: get-log (KVM_GET_DIRTY_LOG write-protects at every sync),
 * clear-log (manual protect: the caller re-arms chunks with
 * kvm_dirty_log_clear() just before it sends them).
 */
bool kvm_dirty_log_init(KVMState *s, Error **errp);
const char *kvm_dirty_log_mode_name(KVMState *s);
/*
 * Allocates every slot's dirty_bmap and turns logging on: one bitmap
 * session at a time (a second is refused, naming the owner).
 */
bool kvm_dirty_log_start(KVMState *s, Error **errp);
void kvm_dirty_log_stop(KVMState *s);
/* Names the session's holder ("migration", "calc-dirty-rate") in refusals. */
void kvm_dirty_log_set_owner(KVMState *s, const char *owner);
/*
 * Dirty ring only: keep the slots logging so that every vCPU's ring fills
 * and its CPUState.dirty_pages counts (no bitmaps). Reference-counted with
 * the bitmap session.
 */
bool kvm_dirty_ring_count_start(KVMState *s, Error **errp);
void kvm_dirty_ring_count_stop(KVMState *s);
bool kvm_dirty_ring_enabled(KVMState *s);
/* Harvest every vCPU's ring now (counts, and the session's bitmaps). 0 or -errno. */
int kvm_dirty_ring_harvest(KVMState *s);
/* Bytes one vCPU's ring holds when full (entries x page size); 0 without the ring. */
uint64_t kvm_dirty_ring_bytes(KVMState *s);
/*
 * Each slot's dirty_bmap := pages dirtied since the previous sync. 0 or
 * -errno; after a failure the bitmaps may lack pages KVM already handed
 * over, so the caller must not go on as if nothing happened.
 */
int kvm_dirty_log_sync(KVMState *s);
/* True if the mode needs kvm_dirty_log_clear() before pages are sent. */
bool kvm_dirty_log_needs_clear(KVMState *s);
/*
 * Re-arm tracking of pages [first, first+npages) of @slot that userspace has
 * already read into slot->dirty_bmap (never others), then drop those bits.
 */
int kvm_dirty_log_clear(KVMState *s, KVMSlot *slot, uint64_t first, uint64_t npages);

/* Per-vCPU setup a dirty-log mode needs (the ring mapping). */
bool kvm_dirty_log_vcpu_init(KVMState *s, CPUState *cpu, Error **errp);
/*
 * A vCPU exited with KVM_EXIT_DIRTY_RING_FULL: harvest so it can go on.
 * -errno if the rings could not be reset (the next sync fails too).
 */
int kvm_dirty_log_ring_full(KVMState *s);

/* vCPUs (accel/kvm/kvm-cpu.c). */
bool kvm_vcpus_create(KVMState *s, int ncpus, Error **errp);
/* Remove a feature from the guest CPUID ("-cpu host,-arch-capabilities"). */
bool kvm_cpu_set_feature(const char *name, bool on, Error **errp);
/* Puts the boot vCPU in the 32-bit PVH entry state. vCPU paused. */
bool kvm_cpu_set_pvh_entry(CPUState *cpu, uint32_t entry, uint32_t start_info, Error **errp);
/* Architectural reset of every vCPU (APs wait for INIT/SIPI). vCPUs paused. */
void kvm_cpus_reset(void);

#endif

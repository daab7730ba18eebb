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
    uint32_t flags;             /* KVM_MEM_LOG_DIRTY_PAGES while logging; log_lock */
    /*
     * References to the slot's logging: each dirty-log client tracking it,
     * and the dirty ring's counters. kvm-dirty-clients.c's log_lock.
     */
    int log_refs;
    /* Dirty-log clients tracking the slot. log_lock and clients_lock to change. */
    int nclients;
    /*
     * Set: KVM reported the page dirty at the slot's last read (any
     * client's sync) and (clear-log) nobody re-armed it since; a clear
     * re-arms only these bits and drops them. One bit per page of the slot,
     * in KVM's layout; allocated when the slot gets its first client, freed
     * when it loses its last, never on the sync path. kvm-dirty-clients.c's
     * clients_lock.
     */
    unsigned long *dirty_bmap;
    /*
     * Scratch for a clear whose range is not word-aligned (a display's run
     * of lines): the range's bits with the padding zeroed, as KVM wants
     * them. Allocated and freed with dirty_bmap; clients_lock.
     */
    unsigned long *clear_bmap;
    /*
     * Set (dirty-ring mode, while a client tracks the slot): the page was
     * harvested from a vCPU's ring since the slot's last read, which moves
     * the bits to dirty_bmap. Ring lock (kvm-dirty-ring.c): vCPU threads,
     * kvm-reaper and dirtylimit harvest too.
     */
    unsigned long *harvest_bmap;
    /*
     * Set (dirty-ring mode, while any slot logs): the page was counted for
     * its vCPU in the harvest under way. KVM pushes an entry for every
     * write it emulates, so without this a page written by emulated guest
     * code (all of CPL0 under kvm-pvm) would count once per write, not
     * once per harvest as a write-protect fault does. Ring lock.
     */
    unsigned long *count_bmap;
    uint64_t npages;
};

typedef struct KVMDirtyLogMode KVMDirtyLogMode;

/* Counters of the dirty-log layer, every client's work together; read unlocked (aligned words). */
typedef struct KVMDirtyStats {
    uint64_t clears;            /* KVM_CLEAR_DIRTY_LOG calls; clients_lock */
    uint64_t clear_ns;          /* clients_lock */
    uint64_t harvests;          /* dirty ring harvests; ring lock */
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
    /*
     * KVMDirtyClient *: the dirty-log clients (kvm-dirty-client.h); NULL
     * when there is none. log_lock and clients_lock to change, either to read.
     */
    GPtrArray *dirty_clients;
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
 * Migration sections of KVM's state, in QEMU's layouts. The machine calls
 * these in the order QEMU's microvm sends the sections (hw/microvm.c):
 * per vCPU "cpu_common" and "cpu" (kvm-cpu-vmstate.c), then "apic"
 * (kvm-apic-state.c); then the in-kernel IOAPIC "ioapic" 0, "kvmclock"
 * (kvm-clock-state.c), the PICs "i8259" 0 and 1 and the PIT "i8254"
 * (kvm-irqchip-state.c).
 * After KVM_CREATE_IRQCHIP/PIT2 and the vCPUs' creation; main thread.
 */
void kvm_vcpu_state_register(CPUState *cpu);
void kvm_apic_state_register(CPUState *cpu);
void kvm_ioapic_state_register(void);
void kvm_clock_state_register(void);
void kvm_pic_pit_state_register(void);

/* Creates one KVMSlot per guest RAM range (after the machine mapped RAM). */
bool kvm_memslots_init(KVMState *s, Error **errp);
int kvm_slot_set_flags(KVMState *s, KVMSlot *slot, uint32_t flags);
int kvm_set_irq(KVMState *s, int irq, int level);
/*
 * One MSI message to the in-kernel LAPICs: > 0 delivered, 0 blocked (no
 * LAPIC took it), -errno. Any thread.
 */
int kvm_signal_msi(KVMState *s, uint64_t addr, uint32_t data);

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
 * the same hooks: get-log (KVM_GET_DIRTY_LOG write-protects at every read),
 * clear-log (manual protect: a client re-arms ranges just before it reads
 * them), dirty-ring. Who reads and clears is a client of the dirty log:
 * system/kvm-dirty-client.h.
 */
bool kvm_dirty_log_init(KVMState *s, Error **errp);
const char *kvm_dirty_log_mode_name(KVMState *s);
/*
 * Dirty ring only: keep every slot logging so that every vCPU's ring fills
 * and its CPUState.dirty_pages counts (no bitmaps). Reference-counted per
 * slot with the dirty-log clients (accel/kvm/kvm-dirty-clients.c).
 */
bool kvm_dirty_ring_count_start(KVMState *s, Error **errp);
void kvm_dirty_ring_count_stop(KVMState *s);
bool kvm_dirty_ring_enabled(KVMState *s);
/* Harvest every vCPU's ring now (counts, and the tracked slots' bitmaps). 0 or -errno. */
int kvm_dirty_ring_harvest(KVMState *s);
/* Bytes one vCPU's ring holds when full (entries x page size); 0 without the ring. */
uint64_t kvm_dirty_ring_bytes(KVMState *s);
/* True if the mode re-arms only on kvm_dirty_client_clear() (clear-log). */
bool kvm_dirty_log_needs_clear(KVMState *s);

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
/* The feature names -cpu host,NAME=on|off takes, in order; NULL past the last. */
const char *kvm_cpu_feature_name(size_t i);
/* The index of feature @name for kvm_cpu_feature_enabled(), or -1. */
int kvm_cpu_feature_index(const char *name);
/* Whether the vCPUs get feature @i (KVM's CPUID as -cpu changed it). After kvm_init. */
bool kvm_cpu_feature_enabled(size_t i);
/* -cpu ...,migratable=: on (the default) leaves out invtsc. */
bool kvm_cpu_migratable(void);
/* Whether KVM's host model has feature @i (no -cpu change); migratable drops invtsc. */
bool kvm_cpu_host_feature(size_t i, bool migratable);

/* What CPUID says the CPU is (query-cpu-model-expansion's static properties). */
typedef struct X86CpuIdentity {
    char vendor[13];
    int family, model, stepping;
    char model_id[49];
} X86CpuIdentity;
/* The host's, as the guest sees it; zeros without KVM. After kvm_init. */
void kvm_cpu_host_identity(X86CpuIdentity *id);
/* Puts the boot vCPU in the 32-bit PVH entry state. vCPU paused. */
bool kvm_cpu_set_pvh_entry(CPUState *cpu, uint32_t entry, uint32_t start_info, Error **errp);
/* Architectural reset of every vCPU (APs wait for INIT/SIPI). vCPUs paused. */
void kvm_cpus_reset(void);

#endif

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
     * Dirty bitmap, one bit per page of the slot, in KVM's layout.
     * Allocated when logging starts and freed when it stops; no allocation
     * on the sync path. Touched only by the thread that syncs (the
     * migration thread, under the KVMState dirty_lock).
     */
    unsigned long *dirty_bmap;
    uint64_t npages;
};

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

/* Creates one KVMSlot per guest RAM range (after the machine mapped RAM). */
bool kvm_memslots_init(KVMState *s, Error **errp);
int kvm_slot_set_flags(KVMState *s, KVMSlot *slot, uint32_t flags);
int kvm_set_irq(KVMState *s, int irq, int level);

/* vCPUs (accel/kvm/kvm-cpu.c). */
bool kvm_vcpus_create(KVMState *s, int ncpus, Error **errp);
/* Remove a feature from the guest CPUID ("-cpu host,-arch-capabilities"). */
bool kvm_cpu_set_feature(const char *name, bool on, Error **errp);
/* Puts the boot vCPU in the 32-bit PVH entry state. vCPU paused. */
void kvm_cpu_set_pvh_entry(CPUState *cpu, uint32_t entry, uint32_t start_info);
/* Architectural reset of every vCPU (APs wait for INIT/SIPI). vCPUs paused. */
void kvm_cpus_reset(void);

#endif

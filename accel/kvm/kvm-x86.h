/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to accel/kvm: the x86 register state a vCPU carries in userspace. */
#ifndef ACCEL_KVM_X86_H
#define ACCEL_KVM_X86_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/kvm.h>
#include "qemu/typedefs.h"

/* Bounds the "cpu" section's loader enforces on a hostile stream. */
#define X86_CPU_MAX_MSRS    512
#define X86_CPU_XSAVE_MAX   (64 * 1024)

struct X86CPUState {
    CPUState *cpu;                   /* back pointer, for the vmstate hooks */
    struct kvm_cpuid2 *cpuid;        /* what KVM_SET_CPUID2 was given */
    struct kvm_lapic_state lapic_reset;  /* LAPIC right after creation */

    /*
     * MSRs this vCPU migrates: the indices of KVM_GET_MSR_INDEX_LIST that
     * KVM_GET_MSRS could read when the vCPU was created, minus the ones
     * kvm-cpu-state.c excludes. Immutable after creation.
     */
    uint32_t *msr_index;
    uint32_t nr_msr_index;

    /*
     * The migrated image of the vCPU (kvm-cpu-state.c). Filled from KVM by
     * pre_save and written back to KVM by post_load, both with the vCPU
     * paused (outside KVM_RUN); between those it means nothing.
     */
    struct kvm_regs regs;
    struct kvm_sregs sregs;
    uint8_t *xsave;                  /* X86_CPU_XSAVE_MAX bytes */
    uint32_t xsave_len;              /* bytes of it in use */
    struct kvm_xcrs xcrs;
    uint32_t nr_msrs;
    struct kvm_msr_entry msrs[X86_CPU_MAX_MSRS];
    struct kvm_lapic_state lapic;
    struct kvm_vcpu_events events;
    struct kvm_mp_state mp_state;
    struct kvm_debugregs debugregs;
    uint32_t tsc_khz;                /* 0 = unknown (unstable host TSC) */
    /*
     * Incoming, BQL: QEMU's layout carries a vCPU in two sections, "cpu"
     * then "apic", and KVM needs the LAPIC put between their parts (the
     * TSC-deadline MSR, the MP state and the events go after it). Each
     * section's post_load sets its flag; whichever loads second calls
     * kvm_cpu_put_tail(), which clears both.
     */
    bool cpu_loaded, apic_loaded;
    /* Which optional parts the incoming stream carried (set while loading). */
    bool have_events, have_xcrs, have_debugregs, have_tsc_khz;
};

/*
 * kvm_cpu_state_init: probe which MSRs the vCPU can migrate. After
 * KVM_SET_CPUID2; the machine registers the sections later
 * (kvm_vcpu_state_register).
 */
void kvm_cpu_state_init(KVMState *s, CPUState *cpu);

/*
 * kvm_cpu_put_tail: put what must follow KVM_SET_LAPIC (kvm-cpu-state.c).
 * BQL, vCPU paused, both flags above set. Clears them.
 */
bool kvm_cpu_put_tail(X86CPUState *env, Error **errp);

#endif

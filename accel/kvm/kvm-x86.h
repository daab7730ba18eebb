/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to accel/kvm: the x86 register state a vCPU carries in userspace. */
#ifndef ACCEL_KVM_X86_H
#define ACCEL_KVM_X86_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/kvm.h>
#include "qemu/typedefs.h"
#include "x86-cpu-layout.h"

/* MSRs KVM may hold that neither "cpu" v12 nor our subsections carry (kvm-cpu-state.c). */
#define X86_CPU_GAP_MSRS    8

struct X86CPUState {
    CPUState *cpu;                   /* back pointer, for the vmstate hooks */
    struct kvm_cpuid2 *cpuid;        /* what KVM_SET_CPUID2 was given */
    struct kvm_lapic_state lapic_reset;  /* LAPIC right after creation */

    /* Immutable after creation (kvm_cpu_state_init; mcg_cap by kvm-cpu.c before it). */
    X86CPUCaps caps;
    uint32_t xsave_len;              /* bytes of KVM's XSAVE area */
    uint64_t gap_reset[X86_CPU_GAP_MSRS];   /* their values at creation */
    uint32_t gap_ok;                 /* bit i: gap MSR i is readable */

    /*
     * The migrated image of the vCPU (kvm-cpu-state.c, kvm-cpu-vmstate.c),
     * BQL with the vCPU paused (outside KVM_RUN): pre_save fills kvm from
     * KVM, then wire from kvm; a load fills wire, post_load checks it and
     * puts it through kvm. Between those they mean nothing.
     */
    uint8_t *xsave;                  /* xsave_len bytes, staging for KVM_GET/SET_XSAVE */
    X86KvmImage kvm;
    X86CPUWire wire;
    bool gap_warned;                 /* BQL: a lost gap MSR was reported once */

    /* The "apic" section's image (kvm-apic-state.c): KVM_GET/SET_LAPIC. */
    struct kvm_lapic_state lapic;
    /*
     * Incoming, BQL: QEMU's layout carries a vCPU in two sections, "cpu"
     * then "apic", and KVM needs the LAPIC put between their parts (the
     * MP state and the events go after it). Each section's post_load sets
     * its flag; whichever loads second calls kvm_cpu_put_tail(), which
     * clears both.
     */
    bool cpu_loaded, apic_loaded;
};

/*
 * kvm_cpu_state_init: probe which of the layout's MSRs the vCPU has. After
 * KVM_SET_CPUID2 and KVM_X86_SETUP_MCE (caps.mcg_cap set); the machine
 * registers the sections later (kvm_vcpu_state_register).
 */
void kvm_cpu_state_init(KVMState *s, CPUState *cpu);

/*
 * kvm_cpu_put_tail: put what must follow KVM_SET_LAPIC (kvm-cpu-state.c):
 * the TSC-deadline MSR, the MP state and the vCPU events. BQL, vCPU paused, both flags above
 * set. Clears them.
 */
bool kvm_cpu_put_tail(X86CPUState *env, Error **errp);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to accel/kvm: the x86 register state a vCPU carries in userspace. */
#ifndef ACCEL_KVM_X86_H
#define ACCEL_KVM_X86_H

#include <linux/kvm.h>

struct X86CPUState {
    struct kvm_cpuid2 *cpuid;        /* what KVM_SET_CPUID2 was given */
    struct kvm_lapic_state lapic_reset;  /* LAPIC right after creation */
};

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to accel/kvm: a vCPU's state in and out of KVM (kvm-cpu-state.c),
 * for the section hooks of kvm-cpu-vmstate.c. All with the BQL and the
 * vCPU paused (outside KVM_RUN); each fills or puts env->kvm.
 *
 * Save: kvm_cpu_get() reads everything (MP state first).
 * Load: kvm_cpu_get_sregs() reads what the layout lacks (APIC base, CR8),
 * the caller fills env->kvm from the stream, kvm_cpu_put() puts all but
 * the TSC deadline, the MP state and events, which kvm_cpu_put_tail()
 * (kvm-x86.h) puts after the "apic" section's KVM_SET_LAPIC.
 */
#ifndef ACCEL_KVM_CPU_STATE_H
#define ACCEL_KVM_CPU_STATE_H

#include "kvm-x86.h"

bool kvm_cpu_get_mp_state(X86CPUState *env, Error **errp);
bool kvm_cpu_get(X86CPUState *env, Error **errp);
bool kvm_cpu_get_sregs(X86CPUState *env, Error **errp);
bool kvm_cpu_put(X86CPUState *env, Error **errp);

#endif

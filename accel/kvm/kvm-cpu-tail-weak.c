/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * TEMPORARY, for branch i37-apic alone; delete this file when i37-cpu is
 * merged. main's "cpu" section still puts the LAPIC itself and never sets
 * cpu_loaded, so kvm-apic-state.c never calls kvm_cpu_put_tail(), but it
 * must link. i37-cpu defines the real one in kvm-cpu-state.c, which
 * overrides this weak definition if both are built.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "system/cpus.h"
#include "kvm-x86.h"

bool __attribute__((weak)) kvm_cpu_put_tail(X86CPUState *env, Error **errp)
{
    error_setg(errp, "cpu %d: the \"cpu\" section cannot be finished after \"apic\" in this build",
               env->cpu->cpu_index);
    return false;
}

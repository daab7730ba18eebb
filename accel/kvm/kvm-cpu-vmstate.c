/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The vCPU's migration sections in QEMU's layouts (one pair per vCPU,
 * instance = cpu_index): "cpu_common" v1 and "cpu" v12 with its
 * subsections (kvm-cpu-subsections.c, and "cpu/tsc_khz" here), field for field as QEMU 7.2 and 10.0 describe
 * them in their vmdesc (docs/devel/qemu-vmdesc/), so that our vmdesc is
 * theirs. The fields live in env->wire (x86-cpu-layout.h); the hooks move
 * them to and from KVM through env->kvm (kvm-cpu-state.c). The incoming
 * stream is hostile: x86_cpu_check_wire() refuses before anything
 * reaches KVM.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "migration/vmstate.h"
#include "system/kvm.h"
#include "system/cpus.h"
#include "kvm-x86.h"
#include "kvm-cpu-state.h"
#include "kvm-cpu-fields.h"

/* ---- cpu_common ---- */

static bool cpu_common_pre_save(void *opaque, Error **errp)
{
    X86CPUState *env = opaque;

    if (!kvm_cpu_get_mp_state(env, errp)) {
        return false;
    }
    env->wire.halted = env->kvm.mp_state.mp_state == KVM_MP_STATE_HALTED;
    /*
     * QEMU's pending-work bits for its vCPU thread (2 in streams of a
     * running guest): nothing KVM holds. KVM keeps pending interrupts in
     * the LAPIC, which the "apic" section carries, so we send 0.
     */
    env->wire.interrupt_request = 0;
    return true;
}

static bool cpu_common_post_load(void *opaque, int version_id, Error **errp)
{
    X86CPUState *env = opaque;

    /*
     * interrupt_request is taken and ignored (see pre_save). halted only
     * repeats the "cpu" section's mp_state, which wins; it must be a bool.
     */
    if (env->wire.halted > 1) {
        error_setg(errp, "cpu %d: invalid halted value %u", env->cpu->cpu_index,
                   env->wire.halted);
        return false;
    }
    return true;
}

static const VMStateDescription vmstate_cpu_common = {
    .name = "cpu_common",
    .size = sizeof(X86CPUState),
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_save = cpu_common_pre_save,
    .post_load = cpu_common_post_load,
    .fields = (const VMStateField[]) {
        WF("halted", halted, VMS_UINT32),
        WF("interrupt_request", interrupt_request, VMS_UINT32),
        VMSTATE_END_OF_LIST()
    },
};

/* ---- cpu ---- */

static bool cpu_pre_save(void *opaque, Error **errp)
{
    X86CPUState *env = opaque;

    if (!kvm_cpu_get(env, errp)) {
        return false;
    }
    x86_cpu_to_wire(&env->kvm, &env->caps, &env->wire);
    return true;
}

static bool cpu_pre_load(void *opaque, Error **errp)
{
    X86CPUState *env = opaque;

    /* Absent subsection = no rate to set, and the reset value of the others' state. */
    env->wire.tsc_khz = 0;
    x86_cpu_wire_reset_subs(&env->wire);
    return true;
}

static bool cpu_post_load(void *opaque, int version_id, Error **errp)
{
    X86CPUState *env = opaque;

    if (!x86_cpu_check_wire(&env->wire, &env->caps, env->cpu->cpu_index, errp) ||
        !kvm_cpu_get_sregs(env, errp)) {
        return false;
    }
    x86_cpu_from_wire(&env->wire, &env->kvm);
    if (!kvm_cpu_put(env, errp)) {
        return false;
    }
    /* KVM now holds the incoming state; nothing in env may be put over it. */
    env->cpu->vcpu_dirty = false;
    env->cpu_loaded = true;
    return !env->apic_loaded || kvm_cpu_put_tail(env, errp);
}

static bool cpu_tsc_khz_needed(void *opaque)
{
    return ((X86CPUState *)opaque)->wire.tsc_khz > 0;
}

static const VMStateDescription vmstate_cpu_tsc_khz = {
    .name = "cpu/tsc_khz",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = cpu_tsc_khz_needed,
    .fields = (const VMStateField[]) {
        WF("env.tsc_khz", tsc_khz, VMS_INT64),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_fpreg_tmp = {
    .name = "fpreg_tmp",
    .version_id = 0,
    .minimum_version_id = 0,
    .fields = (const VMStateField[]) {
        NF("tmp_mant", X86FPReg, mant, VMS_UINT64),
        NF("tmp_exp", X86FPReg, exp, VMS_UINT16),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_fpreg = {
    .name = "fpreg",
    .version_id = 0,
    .minimum_version_id = 0,
    .fields = (const VMStateField[]) {
        { .name = "tmp", .type = VMS_TMP, .offset = 0, .size = sizeof(X86FPReg),
          .vmsd = &vmstate_fpreg_tmp },
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_segment = {
    .name = "segment",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        NF("selector", X86Segment, selector, VMS_UINT32),
        NF("base", X86Segment, base, VMS_UINT64),
        NF("limit", X86Segment, limit, VMS_UINT32),
        NF("flags", X86Segment, flags, VMS_UINT32),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_xmm_reg = {
    .name = "xmm_reg",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        NF("_q_ZMMReg[0]", X86VecHalf, q[0], VMS_UINT64),
        NF("_q_ZMMReg[1]", X86VecHalf, q[1], VMS_UINT64),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_ymmh_reg = {
    .name = "ymmh_reg",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        NF("_q_ZMMReg[2]", X86VecHalf, q[0], VMS_UINT64),
        NF("_q_ZMMReg[3]", X86VecHalf, q[1], VMS_UINT64),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_mtrr_var = {
    .name = "mtrr_var",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        NF("base", X86MtrrVar, base, VMS_UINT64),
        NF("mask", X86MtrrVar, mask, VMS_UINT64),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_cpu = {
    .name = "cpu",
    .size = sizeof(X86CPUState),
    .version_id = 12,
    .minimum_version_id = 12,
    .pre_save = cpu_pre_save,
    .pre_load = cpu_pre_load,
    .post_load = cpu_post_load,
    .fields = (const VMStateField[]) {
        WA("env.regs", regs, 16, VMS_UINT64),
        WF("env.eip", eip, VMS_UINT64),
        WF("env.eflags", eflags, VMS_UINT64),
        WF("env.hflags", hflags, VMS_UINT32),
        WF("env.fpuc", fpuc, VMS_UINT16),
        WF("env.fpus_vmstate", fpus, VMS_UINT16),
        WF("env.fptag_vmstate", fptag, VMS_UINT16),
        WF("env.fpregs_format_vmstate", fpregs_format, VMS_UINT16),
        WSA("env.fpregs", fpregs, 8, vmstate_fpreg, X86FPReg),
        WSA("env.segs", segs, 6, vmstate_segment, X86Segment),
        WS("env.ldt", ldt, vmstate_segment, X86Segment),
        WS("env.tr", tr, vmstate_segment, X86Segment),
        WS("env.gdt", gdt, vmstate_segment, X86Segment),
        WS("env.idt", idt, vmstate_segment, X86Segment),
        WF("env.sysenter_cs", sysenter_cs, VMS_UINT32),
        WF("env.sysenter_esp", sysenter_esp, VMS_UINT64),
        WF("env.sysenter_eip", sysenter_eip, VMS_UINT64),
        WF("env.cr[0]", cr0, VMS_UINT64),
        WF("env.cr[2]", cr2, VMS_UINT64),
        WF("env.cr[3]", cr3, VMS_UINT64),
        WF("env.cr[4]", cr4, VMS_UINT64),
        WA("env.dr", dr, 8, VMS_UINT64),
        WF("env.a20_mask", a20_mask, VMS_INT32),
        WF("env.mxcsr", mxcsr, VMS_UINT32),
        WSA("env.xmm_regs[0]", xmm, 16, vmstate_xmm_reg, X86VecHalf),
        WF("env.efer", efer, VMS_UINT64),
        WF("env.star", star, VMS_UINT64),
        WF("env.lstar", lstar, VMS_UINT64),
        WF("env.cstar", cstar, VMS_UINT64),
        WF("env.fmask", fmask, VMS_UINT64),
        WF("env.kernelgsbase", kernelgsbase, VMS_UINT64),
        WF("env.smbase", smbase, VMS_UINT32),
        WF("env.pat", pat, VMS_UINT64),
        WF("env.hflags2", hflags2, VMS_UINT32),
        WF("env.vm_hsave", vm_hsave, VMS_UINT64),
        WF("env.vm_vmcb", vm_vmcb, VMS_UINT64),
        WF("env.tsc_offset", tsc_offset, VMS_UINT64),
        WF("env.intercept", intercept, VMS_UINT64),
        WF("env.intercept_cr_read", intercept_cr_read, VMS_UINT16),
        WF("env.intercept_cr_write", intercept_cr_write, VMS_UINT16),
        WF("env.intercept_dr_read", intercept_dr_read, VMS_UINT16),
        WF("env.intercept_dr_write", intercept_dr_write, VMS_UINT16),
        WF("env.intercept_exceptions", intercept_exceptions, VMS_UINT32),
        WF("env.v_tpr", v_tpr, VMS_UINT8),
        WA("env.mtrr_fixed", mtrr_fixed, 11, VMS_UINT64),
        WF("env.mtrr_deftype", mtrr_deftype, VMS_UINT64),
        WSA("env.mtrr_var", mtrr_var, 8, vmstate_mtrr_var, X86MtrrVar),
        WF("env.interrupt_injected", interrupt_injected, VMS_INT32),
        WF("env.mp_state", mp_state, VMS_UINT32),
        WF("env.tsc", tsc, VMS_UINT64),
        WF("env.exception_nr", exception_nr, VMS_INT32),
        WF("env.soft_interrupt", soft_interrupt, VMS_UINT8),
        WF("env.nmi_injected", nmi_injected, VMS_UINT8),
        WF("env.nmi_pending", nmi_pending, VMS_UINT8),
        WF("env.has_error_code", has_error_code, VMS_UINT8),
        WF("env.sipi_vector", sipi_vector, VMS_UINT32),
        WF("env.mcg_cap", mcg_cap, VMS_UINT64),
        WF("env.mcg_status", mcg_status, VMS_UINT64),
        WF("env.mcg_ctl", mcg_ctl, VMS_UINT64),
        WA("env.mce_banks", mce_banks, 4 * X86_MCE_BANKS_MAX, VMS_UINT64),
        WF("env.tsc_aux", tsc_aux, VMS_UINT64),
        WF("env.system_time_msr", system_time_msr, VMS_UINT64),
        WF("env.wall_clock_msr", wall_clock_msr, VMS_UINT64),
        WF("env.xcr0", xcr0, VMS_UINT64),
        WF("env.xstate_bv", xstate_bv, VMS_UINT64),
        WSA("env.xmm_regs[1]", ymmh, 16, vmstate_ymmh_reg, X86VecHalf),
        VMSTATE_END_OF_LIST()
    },
    /* In QEMU 10.0's order (tsc_khz last), so that our vmdesc is QEMU's. */
    .subsections = (const VMStateDescription *const[]) {
        &vmstate_cpu_async_pf_msr,
        &vmstate_cpu_async_pf_int_msr,
        &vmstate_cpu_pv_eoi_msr,
        &vmstate_cpu_steal_time_msr,
        &vmstate_cpu_poll_control_msr,
        &vmstate_cpu_fpop_ip_dp,
        &vmstate_cpu_msr_tsc_adjust,
        &vmstate_cpu_msr_tscdeadline,
        &vmstate_cpu_msr_misc_enable,
        &vmstate_cpu_avx512,
        &vmstate_cpu_tsc_khz,
        NULL
    },
};

void kvm_vcpu_state_register(CPUState *cpu)
{
    vmstate_register("cpu_common", cpu->cpu_index, &vmstate_cpu_common, cpu->env);
    vmstate_register("cpu", cpu->cpu_index, &vmstate_cpu, cpu->env);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The optional subsections of QEMU's "cpu" section that carry what the v12
 * fields do not: KVM's paravirtual MSRs, FOP/FIP/FDP, TSC_ADJUST, the TSC
 * deadline, MISC_ENABLE and the AVX-512 registers. Names, versions and
 * fields are those QEMU 7.2 and 10.0 sent for a guest in these states
 * (tests/guest cpustate=; docs/devel/qemu-vmdesc/cpu-subsections-*.json).
 *
 * A subsection goes when its state differs from the vCPU's reset value
 * (x86_cpu_wire_reset_subs: QEMU sends none for a guest that never left
 * it), as QEMU decides. On load the "cpu" pre_load resets them, so an
 * absent subsection puts the reset value, and x86_cpu_check_wire()
 * checks what came before KVM sees it. The fields live in env->wire,
 * filled by the "cpu" pre_save before any needed() runs.
 */
#include "qemu/osdep.h"
#include "kvm-cpu-fields.h"

#define WIRE(opaque) (&((X86CPUState *)(opaque))->wire)

/* One MSR per subsection, needed when it is not @reset. */
#define MSR_SUBSECTION(_var, _name, _field, _m, _reset)                         \
    static bool _var##_needed(void *opaque)                                     \
    {                                                                           \
        return WIRE(opaque)->_m != (_reset);                                    \
    }                                                                           \
    const VMStateDescription _var = {                                           \
        .name = (_name),                                                        \
        .version_id = 1,                                                        \
        .minimum_version_id = 1,                                                \
        .needed = _var##_needed,                                                \
        .fields = (const VMStateField[]) {                                      \
            WF(_field, _m, VMS_UINT64),                                         \
            VMSTATE_END_OF_LIST()                                               \
        },                                                                      \
    }

MSR_SUBSECTION(vmstate_cpu_async_pf_msr, "cpu/async_pf_msr", "env.async_pf_en_msr",
               async_pf_en_msr, 0);
MSR_SUBSECTION(vmstate_cpu_async_pf_int_msr, "cpu/async_pf_int_msr", "env.async_pf_int_msr",
               async_pf_int_msr, 0);
MSR_SUBSECTION(vmstate_cpu_pv_eoi_msr, "cpu/async_pv_eoi_msr", "env.pv_eoi_en_msr",
               pv_eoi_en_msr, 0);
MSR_SUBSECTION(vmstate_cpu_steal_time_msr, "cpu/steal_time_msr", "env.steal_time_msr",
               steal_time_msr, 0);
/* KVM and QEMU start with host-side halt polling allowed (1). */
MSR_SUBSECTION(vmstate_cpu_poll_control_msr, "cpu/poll_control_msr", "env.poll_control_msr",
               poll_control_msr, 1);
MSR_SUBSECTION(vmstate_cpu_msr_tsc_adjust, "cpu/msr_tsc_adjust", "env.tsc_adjust",
               tsc_adjust, 0);
MSR_SUBSECTION(vmstate_cpu_msr_tscdeadline, "cpu/msr_tscdeadline", "env.tsc_deadline",
               tsc_deadline, 0);
MSR_SUBSECTION(vmstate_cpu_msr_misc_enable, "cpu/msr_ia32_misc_enable",
               "env.msr_ia32_misc_enable", misc_enable, X86_MISC_ENABLE_RESET);

/* The x87 instruction and operand pointers, and the last opcode (11 bits). */
static bool cpu_fpop_ip_dp_needed(void *opaque)
{
    const X86CPUWire *w = WIRE(opaque);

    return w->fpop || w->fpip || w->fpdp;
}

const VMStateDescription vmstate_cpu_fpop_ip_dp = {
    .name = "cpu/fpop_ip_dp",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = cpu_fpop_ip_dp_needed,
    .fields = (const VMStateField[]) {
        WF("env.fpop", fpop, VMS_UINT16),
        WF("env.fpip", fpip, VMS_UINT64),
        WF("env.fpdp", fpdp, VMS_UINT64),
        VMSTATE_END_OF_LIST()
    },
};

/* AVX-512: opmask k0-7, bits 256-511 of ZMM0-15, and ZMM16-31 whole. */
static const VMStateDescription vmstate_zmmh_reg = {
    .name = "zmmh_reg",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        NF("_q_ZMMReg[4]", X86ZmmHi256, q[0], VMS_UINT64),
        NF("_q_ZMMReg[5]", X86ZmmHi256, q[1], VMS_UINT64),
        NF("_q_ZMMReg[6]", X86ZmmHi256, q[2], VMS_UINT64),
        NF("_q_ZMMReg[7]", X86ZmmHi256, q[3], VMS_UINT64),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_hi16_zmm_reg = {
    .name = "hi16_zmm_reg",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        NF("_q_ZMMReg[0]", X86Zmm, q[0], VMS_UINT64),
        NF("_q_ZMMReg[1]", X86Zmm, q[1], VMS_UINT64),
        NF("_q_ZMMReg[2]", X86Zmm, q[2], VMS_UINT64),
        NF("_q_ZMMReg[3]", X86Zmm, q[3], VMS_UINT64),
        NF("_q_ZMMReg[4]", X86Zmm, q[4], VMS_UINT64),
        NF("_q_ZMMReg[5]", X86Zmm, q[5], VMS_UINT64),
        NF("_q_ZMMReg[6]", X86Zmm, q[6], VMS_UINT64),
        NF("_q_ZMMReg[7]", X86Zmm, q[7], VMS_UINT64),
        VMSTATE_END_OF_LIST()
    },
};

/* Any bit set in the three components (QEMU 10.0; QEMU 7.2 never sent it, see the doc). */
static bool cpu_avx512_needed(void *opaque)
{
    const X86CPUWire *w = WIRE(opaque);
    uint64_t any = 0;

    for (unsigned i = 0; i < 8; i++) {
        any |= w->opmask[i];
    }
    for (unsigned i = 0; i < 16; i++) {
        for (unsigned q = 0; q < 4; q++) {
            any |= w->zmmh[i].q[q];
        }
        for (unsigned q = 0; q < 8; q++) {
            any |= w->hi16_zmm[i].q[q];
        }
    }
    return any != 0;
}

const VMStateDescription vmstate_cpu_avx512 = {
    .name = "cpu/avx512",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = cpu_avx512_needed,
    .fields = (const VMStateField[]) {
        WA("env.opmask_regs", opmask, 8, VMS_UINT64),
        WSA("env.xmm_regs[0]", zmmh, 16, vmstate_zmmh_reg, X86ZmmHi256),
        WSA("env.xmm_regs[1]", hi16_zmm, 16, vmstate_hi16_zmm_reg, X86Zmm),
        VMSTATE_END_OF_LIST()
    },
};

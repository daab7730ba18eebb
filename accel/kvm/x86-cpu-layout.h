/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to accel/kvm: QEMU's x86 vCPU layout ("cpu" v12 and "cpu_common"
 * v1, as QEMU 7.2 and 10.0 describe them in their vmdesc) and the pure
 * conversions between it and KVM's structures. No ioctl here: the caller
 * (kvm-cpu-state.c) fills an X86KvmImage from KVM, x86_cpu_to_wire() makes
 * the fields to send; on load x86_cpu_check_wire() refuses what KVM or this
 * VMM cannot take, then x86_cpu_from_wire() makes the image to put.
 * Callers hold the BQL with the vCPU paused; nothing here keeps state.
 */
#ifndef ACCEL_KVM_X86_CPU_LAYOUT_H
#define ACCEL_KVM_X86_CPU_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/kvm.h>
#include "qemu/typedefs.h"

/* A segment as QEMU carries it: flags are the descriptor's high dword (bits 8-23). */
typedef struct X86Segment {
    uint32_t selector;
    uint64_t base;
    uint32_t limit;
    uint32_t flags;
} X86Segment;

#define X86_DESC_TYPE_SHIFT 8
#define X86_DESC_S          (1u << 12)
#define X86_DESC_DPL_SHIFT  13
#define X86_DESC_P          (1u << 15)
#define X86_DESC_AVL        (1u << 20)
#define X86_DESC_L          (1u << 21)
#define X86_DESC_DB         (1u << 22)
#define X86_DESC_G          (1u << 23)

/* An x87 register: 64-bit mantissa, sign and 15-bit exponent. */
typedef struct X86FPReg {
    uint64_t mant;
    uint16_t exp;
} X86FPReg;

/* Two quadwords of a vector register: XMM (low 128 bits) or the upper half of a YMM. */
typedef struct X86VecHalf {
    uint64_t q[2];
} X86VecHalf;

/* Bits 256-511 of ZMM0-15 (QEMU's "zmmh_reg": _q_ZMMReg[4..7]). */
typedef struct X86ZmmHi256 {
    uint64_t q[4];
} X86ZmmHi256;

/* A whole ZMM16-31 register (QEMU's "hi16_zmm_reg": _q_ZMMReg[0..7]). */
typedef struct X86Zmm {
    uint64_t q[8];
} X86Zmm;

typedef struct X86MtrrVar {
    uint64_t base;
    uint64_t mask;
} X86MtrrVar;

#define X86_MCE_BANKS_MAX   10          /* QEMU's bank count, and the wire's room */
#define X86_MCG_CTL_P       (1ull << 8)
#define X86_MCG_SER_P       (1ull << 24)
#define X86_MCG_CAP_QEMU    (X86_MCE_BANKS_MAX | X86_MCG_CTL_P | X86_MCG_SER_P)

/* The fields of "cpu" v12 and "cpu_common" v1, in host byte order. */
typedef struct X86CPUWire {
    uint64_t regs[16];                  /* RAX RCX RDX RBX RSP RBP RSI RDI R8..R15 */
    uint64_t eip, eflags;
    uint32_t hflags;                    /* QEMU-internal, see x86_hflags() */
    uint16_t fpuc, fpus, fptag, fpregs_format;
    X86FPReg fpregs[8];                 /* physical registers, not ST(i) */
    X86Segment segs[6];                 /* ES CS SS DS FS GS */
    X86Segment ldt, tr, gdt, idt;
    uint32_t sysenter_cs;
    uint64_t sysenter_esp, sysenter_eip;
    uint64_t cr0, cr2, cr3, cr4;
    uint64_t dr[8];                     /* dr4/dr5 mirror dr6/dr7 */
    int32_t a20_mask;
    uint32_t mxcsr;
    X86VecHalf xmm[16];
    uint64_t efer, star, lstar, cstar, fmask, kernelgsbase;
    uint32_t smbase;
    uint64_t pat;
    uint32_t hflags2;
    uint64_t vm_hsave, vm_vmcb, tsc_offset, intercept;
    uint16_t intercept_cr_read, intercept_cr_write, intercept_dr_read, intercept_dr_write;
    uint32_t intercept_exceptions;
    uint8_t v_tpr;
    uint64_t mtrr_fixed[11];
    uint64_t mtrr_deftype;
    X86MtrrVar mtrr_var[8];
    int32_t interrupt_injected;         /* vector being injected, -1 = none */
    uint32_t mp_state;
    uint64_t tsc;
    int32_t exception_nr;               /* -1 = none */
    uint8_t soft_interrupt, nmi_injected, nmi_pending, has_error_code;
    uint32_t sipi_vector;
    uint64_t mcg_cap, mcg_status, mcg_ctl;
    uint64_t mce_banks[4 * X86_MCE_BANKS_MAX];  /* per bank CTL STATUS ADDR MISC */
    uint64_t tsc_aux, system_time_msr, wall_clock_msr;
    uint64_t xcr0, xstate_bv;
    X86VecHalf ymmh[16];
    int64_t tsc_khz;                    /* "cpu/tsc_khz"; 0 = not carried */
    /*
     * The other subsections of "cpu" (kvm-cpu-subsections.c), sent when
     * the value is not the one a vCPU has at reset (x86_cpu_wire_reset_subs).
     */
    uint64_t async_pf_en_msr, async_pf_int_msr, pv_eoi_en_msr, steal_time_msr;
    uint64_t poll_control_msr;          /* reset 1 */
    uint16_t fpop;                      /* 11 bits */
    uint64_t fpip, fpdp;
    uint64_t tsc_adjust, tsc_deadline;
    uint64_t misc_enable;               /* reset X86_MISC_ENABLE_RESET */
    uint64_t opmask[8];
    X86ZmmHi256 zmmh[16];
    X86Zmm hi16_zmm[16];
    /* "cpu_common" */
    uint32_t halted;
    uint32_t interrupt_request;
} X86CPUWire;

/*
 * The MSRs the layout carries, one slot each: MSR index -> wire field.
 * x86_msr_slots[] lists them; X86KvmImage.msr[] and the caps' bitmap
 * are indexed by slot.
 */
typedef struct X86MsrSlot {
    uint32_t index;
    uint16_t offset;                    /* in X86CPUWire */
    uint8_t size;                       /* 4 or 8 */
} X86MsrSlot;

#define X86_MSR_SLOTS 92
/* The TSC deadline's slot: put after KVM_SET_LAPIC (kvm_cpu_put_tail), not with the rest. */
#define X86_MSR_SLOT_TSC_DEADLINE (X86_MSR_SLOTS - 1)
#define X86_MSR_TSC_DEADLINE 0x6e0
/* What QEMU's vCPUs hold at reset (fast strings), seen in its streams; KVM's own differs. */
#define X86_MISC_ENABLE_RESET 1ull
#define X86_MSR_MISC_ENABLE 0x1a0
extern const X86MsrSlot x86_msr_slots[X86_MSR_SLOTS];

/* XSAVE layout (Intel SDM, standard format as KVM_GET_XSAVE returns it). */
#define X86_XSAVE_XSTATE_BV 512
#define X86_XSAVE_YMMH      576         /* CPUID 0xD.2 EBX on the hosts we know */
#define X86_XSAVE_AVX_END   (X86_XSAVE_YMMH + 16 * 16)
/* AVX-512 (Intel SDM standard format; x86_avx512_offsets_ok() checks CPUID 0xD agrees). */
#define X86_XSAVE_OPMASK    1088
#define X86_XSAVE_ZMM_HI256 1152
#define X86_XSAVE_HI16_ZMM  1664
#define X86_XSAVE_AVX512_END (X86_XSAVE_HI16_ZMM + 16 * 64)
#define X86_XSTATE_X87      1ull
#define X86_XSTATE_SSE      2ull
#define X86_XSTATE_AVX      4ull
#define X86_XSTATE_AVX512   0xe0ull     /* opmask, ZMM_Hi256, Hi16_ZMM */
#define X86_XSTATE_CARRIED  (X86_XSTATE_X87 | X86_XSTATE_SSE | X86_XSTATE_AVX | X86_XSTATE_AVX512)

/* What KVM holds for one vCPU, as read or to be put. */
typedef struct X86KvmImage {
    struct kvm_regs regs;
    struct kvm_sregs sregs;
    uint8_t xsave[X86_XSAVE_AVX512_END];    /* the part of the XSAVE area the layout carries */
    uint64_t xcr0;
    struct kvm_vcpu_events events;
    struct kvm_mp_state mp_state;
    struct kvm_debugregs debugregs;
    uint64_t msr[X86_MSR_SLOTS];        /* by slot; meaningful where msr_ok */
    uint32_t tsc_khz;                   /* 0 = unknown */
} X86KvmImage;

/* What this vCPU can take, fixed at creation. */
typedef struct X86CPUCaps {
    uint64_t msr_ok[(X86_MSR_SLOTS + 63) / 64];  /* set: slot's MSR is read and put */
    uint64_t mcg_cap;                   /* as KVM_X86_SETUP_MCE was given, 0 = no MCE */
    uint64_t xcr0_supported;            /* CPUID 0xD.0 EDX:EAX of the vCPU */
    bool avx_area;                      /* the XSAVE area holds the YMM upper halves */
    bool avx512_area;                   /* ... and AVX-512 at the X86_XSAVE_* offsets */
} X86CPUCaps;

static inline bool x86_msr_ok(const X86CPUCaps *c, unsigned slot)
{
    return c->msr_ok[slot / 64] >> (slot % 64) & 1;
}

void x86_seg_to_wire(const struct kvm_segment *s, X86Segment *w);
void x86_seg_from_wire(const X86Segment *w, struct kvm_segment *s);
/* QEMU's hflags recomputed from the architectural state (see the .c for the bits). */
uint32_t x86_hflags(const struct kvm_sregs *sr, uint64_t rflags, bool smm);
/*
 * The x87/SSE/AVX/AVX-512 parts of an XSAVE area <-> fields; @area has
 * X86_XSAVE_AVX512_END bytes.
 */
void x86_xsave_to_wire(const uint8_t *area, X86CPUWire *w);
void x86_xsave_from_wire(const X86CPUWire *w, uint8_t *area);

/* Are CPUID 0xD's sub-leaves 5-7 (@ebx_of[i]: EBX of sub-leaf i) the offsets above? */
bool x86_avx512_offsets_ok(const uint32_t ebx_of[8]);

void x86_cpu_to_wire(const X86KvmImage *k, const X86CPUCaps *c, X86CPUWire *w);
/* The subsection fields as a stream without those subsections leaves them (reset values). */
void x86_cpu_wire_reset_subs(X86CPUWire *w);
/* Refuses (with the vCPU's @index in the message) what cannot be put. */
bool x86_cpu_check_wire(const X86CPUWire *w, const X86CPUCaps *c, int index, Error **errp);
/*
 * Fills @k from checked fields. The caller presets k->sregs.apic_base and
 * k->sregs.cr8 (not in the layout: the "apic" section carries them).
 */
void x86_cpu_from_wire(const X86CPUWire *w, X86KvmImage *k);

#endif

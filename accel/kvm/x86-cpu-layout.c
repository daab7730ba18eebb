/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMU's x86 vCPU fields <-> KVM's structures (x86-cpu-layout.h). Every
 * value here was learned from the vmdesc and the values of QEMU 7.2 and
 * 10.0 streams (docs/devel/qemu-interop.md), the rest from the Intel SDM.
 * Pure functions: tests/unit/test-cpu-layout.c runs them without KVM.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bswap.h"
#include "x86-cpu-layout.h"

#define W(field) offsetof(X86CPUWire, field), sizeof(((X86CPUWire *)0)->field)
#define SLOT(idx, field) { (idx), W(field) }
#define MTRR_VAR(i) SLOT(0x200 + 2 * (i), mtrr_var[i].base), SLOT(0x201 + 2 * (i), mtrr_var[i].mask)
#define MCE_BANK(b)                                                             \
    SLOT(0x400 + 4 * (b), mce_banks[4 * (b)]),                                  \
    SLOT(0x401 + 4 * (b), mce_banks[4 * (b) + 1]),                              \
    SLOT(0x402 + 4 * (b), mce_banks[4 * (b) + 2]),                              \
    SLOT(0x403 + 4 * (b), mce_banks[4 * (b) + 3])

/*
 * The MSRs QEMU's v12 fields and the subsections we produce carry. EFER
 * travels in the sregs; the MSRs of subsections not seen in a QEMU stream
 * (spec_ctrl, XSS...) are not carried (kvm-cpu-state.c lists them).
 */
const X86MsrSlot x86_msr_slots[] = {
    SLOT(0x174, sysenter_cs), SLOT(0x175, sysenter_esp), SLOT(0x176, sysenter_eip),
    SLOT(0xc0000081, star), SLOT(0xc0000082, lstar), SLOT(0xc0000083, cstar),
    SLOT(0xc0000084, fmask), SLOT(0xc0000102, kernelgsbase),
    SLOT(0x9e, smbase), SLOT(0x277, pat), SLOT(0x10, tsc), SLOT(0xc0000103, tsc_aux),
    SLOT(0x4b564d01, system_time_msr), SLOT(0x4b564d00, wall_clock_msr),
    SLOT(0x250, mtrr_fixed[0]), SLOT(0x258, mtrr_fixed[1]), SLOT(0x259, mtrr_fixed[2]),
    SLOT(0x268, mtrr_fixed[3]), SLOT(0x269, mtrr_fixed[4]), SLOT(0x26a, mtrr_fixed[5]),
    SLOT(0x26b, mtrr_fixed[6]), SLOT(0x26c, mtrr_fixed[7]), SLOT(0x26d, mtrr_fixed[8]),
    SLOT(0x26e, mtrr_fixed[9]), SLOT(0x26f, mtrr_fixed[10]),
    SLOT(0x2ff, mtrr_deftype),
    MTRR_VAR(0), MTRR_VAR(1), MTRR_VAR(2), MTRR_VAR(3),
    MTRR_VAR(4), MTRR_VAR(5), MTRR_VAR(6), MTRR_VAR(7),
    SLOT(0x17a, mcg_status), SLOT(0x17b, mcg_ctl),
    MCE_BANK(0), MCE_BANK(1), MCE_BANK(2), MCE_BANK(3), MCE_BANK(4),
    MCE_BANK(5), MCE_BANK(6), MCE_BANK(7), MCE_BANK(8), MCE_BANK(9),
    /*
     * Carried by subsections of "cpu". KVM_SET_MSRS takes the entries in
     * this order: the async-PF interrupt vector before async-PF EN, which
     * KVM refuses to enable with interrupt delivery and no vector.
     */
    SLOT(0x3b, tsc_adjust), SLOT(X86_MSR_MISC_ENABLE, misc_enable),
    SLOT(0x4b564d06, async_pf_int_msr), SLOT(0x4b564d02, async_pf_en_msr),
    SLOT(0x4b564d03, steal_time_msr), SLOT(0x4b564d04, pv_eoi_en_msr),
    SLOT(0x4b564d05, poll_control_msr),
    /* Last (X86_MSR_SLOT_TSC_DEADLINE): put apart, after the LAPIC. */
    SLOT(X86_MSR_TSC_DEADLINE, tsc_deadline),
};
G_STATIC_ASSERT(G_N_ELEMENTS(x86_msr_slots) == X86_MSR_SLOTS);
G_STATIC_ASSERT(offsetof(X86CPUWire, tsc_deadline) == 0 ||
                X86_MSR_SLOT_TSC_DEADLINE == X86_MSR_SLOTS - 1);

/* SMBASE when KVM cannot read MSR 0x9e: the architectural reset value QEMU sends. */
#define X86_SMBASE_RESET 0x30000

#define CR0_PE      (1ull << 0)
#define CR0_MP      (1ull << 1)
#define CR0_EM      (1ull << 2)
#define CR0_TS      (1ull << 3)
#define CR4_OSFXSR  (1ull << 9)
#define EFER_LMA    (1ull << 10)
#define RFLAGS_TF   (1ull << 8)
#define RFLAGS_VM   (1ull << 17)

/* hflags bits, learned by comparing QEMU's streams with the guest's state. */
#define HF_CPL_MASK 3u
/*
 * The interrupt shadow (after STI or MOV SS): QEMU 10.0's `info registers`
 * shows "II=1" for a stream with this bit set and "II=0" without it.
 */
#define HF_INHIBIT_IRQ (1u << 3)
#define HF_CS32     (1u << 4)
#define HF_SS32     (1u << 5)
#define HF_ADDSEG   (1u << 6)
#define HF_PE       (1u << 7)
#define HF_TF       (1u << 8)
#define HF_MP       (1u << 9)
#define HF_EM       (1u << 10)
#define HF_TS       (1u << 11)
#define HF_LMA      (1u << 14)
#define HF_CS64     (1u << 15)
#define HF_SMM      (1u << 19)
#define HF_OSFXSR   (1u << 22)

/*
 * hflags2: GIF (bit 0) and bit 8 were set in every QEMU stream we saw; we
 * do not know what bit 8 means and send it as seen. That bit 3 says "NMIs
 * blocked" is an assumption (no stream so far had a guest inside an NMI
 * handler): we send it from KVM's nmi.masked and read nmi.masked from it.
 */
#define HF2_SEEN        0x101u
#define HF2_NMI_MASKED  (1u << 3)

void x86_seg_to_wire(const struct kvm_segment *s, X86Segment *w)
{
    w->selector = s->selector;
    w->base = s->base;
    w->limit = s->limit;
    if (s->unusable) {
        /*
         * QEMU sends an unusable segment (a null SS in 64-bit mode) with
         * flags 0. We keep its DPL: SS.DPL is the CPL even then.
         */
        w->flags = (uint32_t)(s->dpl & 3) << X86_DESC_DPL_SHIFT;
        return;
    }
    w->flags = (uint32_t)(s->type & 15) << X86_DESC_TYPE_SHIFT |
               (s->s ? X86_DESC_S : 0) |
               (uint32_t)(s->dpl & 3) << X86_DESC_DPL_SHIFT |
               (s->present ? X86_DESC_P : 0) |
               (s->avl ? X86_DESC_AVL : 0) |
               (s->l ? X86_DESC_L : 0) |
               (s->db ? X86_DESC_DB : 0) |
               (s->g ? X86_DESC_G : 0);
}

void x86_seg_from_wire(const X86Segment *w, struct kvm_segment *s)
{
    *s = (struct kvm_segment) {
        .base = w->base,
        .limit = w->limit,
        .selector = (uint16_t)w->selector,
        .type = (w->flags >> X86_DESC_TYPE_SHIFT) & 15,
        .s = !!(w->flags & X86_DESC_S),
        .dpl = (w->flags >> X86_DESC_DPL_SHIFT) & 3,
        .present = !!(w->flags & X86_DESC_P),
        .avl = !!(w->flags & X86_DESC_AVL),
        .l = !!(w->flags & X86_DESC_L),
        .db = !!(w->flags & X86_DESC_DB),
        .g = !!(w->flags & X86_DESC_G),
        .unusable = !(w->flags & X86_DESC_P),
    };
}

/*
 * QEMU keeps hflags as a cache of the CPU mode; a QEMU destination reads
 * it, so we send what QEMU would have computed (checked against QEMU's
 * streams: 0xc0b0 in long mode at CPL 0, 0x40 at reset). In 64-bit code
 * QEMU sets CS32 and SS32 whatever the descriptors say, and ADDSEG (a
 * segment base must be added to addresses) is 0; in real mode, vm86 or a
 * 16-bit code segment it is 1.
 */
uint32_t x86_hflags(const struct kvm_sregs *sr, uint64_t rflags, bool smm)
{
    uint32_t hf = sr->ss.dpl & HF_CPL_MASK;
    bool pe = sr->cr0 & CR0_PE;
    bool lma = sr->efer & EFER_LMA;

    hf |= pe ? HF_PE : 0;
    hf |= rflags & RFLAGS_TF ? HF_TF : 0;
    hf |= sr->cr0 & CR0_MP ? HF_MP : 0;
    hf |= sr->cr0 & CR0_EM ? HF_EM : 0;
    hf |= sr->cr0 & CR0_TS ? HF_TS : 0;
    hf |= sr->cr4 & CR4_OSFXSR ? HF_OSFXSR : 0;
    hf |= smm ? HF_SMM : 0;
    if (lma) {
        hf |= HF_LMA;
    }
    if (lma && sr->cs.l) {
        hf |= HF_CS64 | HF_CS32 | HF_SS32;
        return hf;
    }
    hf |= sr->cs.db ? HF_CS32 : 0;
    hf |= sr->ss.db ? HF_SS32 : 0;
    if (!pe || (rflags & RFLAGS_VM) || !sr->cs.db ||
        (sr->ds.base | sr->es.base | sr->ss.base) != 0) {
        hf |= HF_ADDSEG;
    }
    return hf;
}

static uint16_t ld16(const uint8_t *p)
{
    return p[0] | p[1] << 8;
}

static void st16(uint8_t *p, uint16_t v)
{
    p[0] = v;
    p[1] = v >> 8;
}

/*
 * The legacy area is FXSAVE's (Intel SDM): FCW @0, FSW @2, abridged FTW @4
 * (bit i set: physical register i holds a value), FOP @6, FIP @8 and FDP
 * @16 (64-bit format), MXCSR @24, ST(i) @32 in 16-byte slots, XMM @160;
 * XSTATE_BV @512, the YMM upper halves @576, opmask @1088, ZMM_Hi256 @1152,
 * Hi16_ZMM @1664. QEMU's fpregs[i] is the slot of ST(i) as XSAVE stores it
 * (seen in QEMU 7.2's and 10.0's streams of a guest with TOP = 6: fpregs[0]
 * held ST(0)), and fptag_vmstate is the abridged tag byte itself (0xc0 for
 * physical registers 6 and 7). FOP, FIP and FDP travel in "cpu/fpop_ip_dp",
 * the AVX-512 parts in "cpu/avx512".
 */
void x86_xsave_to_wire(const uint8_t *area, X86CPUWire *w)
{
    w->fpuc = ld16(area + 0);
    w->fpus = ld16(area + 2);
    w->fptag = area[4];
    w->fpop = ld16(area + 6) & 0x7ff;
    w->fpip = ldq_le_p(area + 8);
    w->fpdp = ldq_le_p(area + 16);
    w->fpregs_format = 0;
    for (unsigned i = 0; i < 8; i++) {
        const uint8_t *st = area + 32 + 16 * i;

        w->fpregs[i].mant = ldq_le_p(st);
        w->fpregs[i].exp = ld16(st + 8);
    }
    w->mxcsr = ldl_le_p(area + 24);
    for (unsigned i = 0; i < 16; i++) {
        w->xmm[i].q[0] = ldq_le_p(area + 160 + 16 * i);
        w->xmm[i].q[1] = ldq_le_p(area + 168 + 16 * i);
        w->ymmh[i].q[0] = ldq_le_p(area + X86_XSAVE_YMMH + 16 * i);
        w->ymmh[i].q[1] = ldq_le_p(area + X86_XSAVE_YMMH + 8 + 16 * i);
        for (unsigned q = 0; q < 4; q++) {
            w->zmmh[i].q[q] = ldq_le_p(area + X86_XSAVE_ZMM_HI256 + 32 * i + 8 * q);
        }
        for (unsigned q = 0; q < 8; q++) {
            w->hi16_zmm[i].q[q] = ldq_le_p(area + X86_XSAVE_HI16_ZMM + 64 * i + 8 * q);
        }
    }
    for (unsigned i = 0; i < 8; i++) {
        w->opmask[i] = ldq_le_p(area + X86_XSAVE_OPMASK + 8 * i);
    }
    w->xstate_bv = ldq_le_p(area + X86_XSAVE_XSTATE_BV);
}

void x86_xsave_from_wire(const X86CPUWire *w, uint8_t *area)
{
    memset(area, 0, X86_XSAVE_AVX512_END);
    st16(area + 0, w->fpuc);
    st16(area + 2, w->fpus);
    area[4] = (uint8_t)w->fptag;
    st16(area + 6, w->fpop);
    stq_le_p(area + 8, w->fpip);
    stq_le_p(area + 16, w->fpdp);
    for (unsigned i = 0; i < 8; i++) {
        uint8_t *st = area + 32 + 16 * i;

        stq_le_p(st, w->fpregs[i].mant);
        st16(st + 8, w->fpregs[i].exp);
    }
    stl_le_p(area + 24, w->mxcsr);
    for (unsigned i = 0; i < 16; i++) {
        stq_le_p(area + 160 + 16 * i, w->xmm[i].q[0]);
        stq_le_p(area + 168 + 16 * i, w->xmm[i].q[1]);
        stq_le_p(area + X86_XSAVE_YMMH + 16 * i, w->ymmh[i].q[0]);
        stq_le_p(area + X86_XSAVE_YMMH + 8 + 16 * i, w->ymmh[i].q[1]);
        for (unsigned q = 0; q < 4; q++) {
            stq_le_p(area + X86_XSAVE_ZMM_HI256 + 32 * i + 8 * q, w->zmmh[i].q[q]);
        }
        for (unsigned q = 0; q < 8; q++) {
            stq_le_p(area + X86_XSAVE_HI16_ZMM + 64 * i + 8 * q, w->hi16_zmm[i].q[q]);
        }
    }
    for (unsigned i = 0; i < 8; i++) {
        stq_le_p(area + X86_XSAVE_OPMASK + 8 * i, w->opmask[i]);
    }
    stq_le_p(area + X86_XSAVE_XSTATE_BV, w->xstate_bv & X86_XSTATE_CARRIED);
}

bool x86_avx512_offsets_ok(const uint32_t ebx_of[8])
{
    return ebx_of[5] == X86_XSAVE_OPMASK && ebx_of[6] == X86_XSAVE_ZMM_HI256 &&
           ebx_of[7] == X86_XSAVE_HI16_ZMM;
}

void x86_cpu_wire_reset_subs(X86CPUWire *w)
{
    w->async_pf_en_msr = w->async_pf_int_msr = w->pv_eoi_en_msr = w->steal_time_msr = 0;
    w->poll_control_msr = 1;
    w->fpop = 0;
    w->fpip = w->fpdp = 0;
    w->tsc_adjust = w->tsc_deadline = 0;
    w->misc_enable = X86_MISC_ENABLE_RESET;
    memset(w->opmask, 0, sizeof(w->opmask));
    memset(w->zmmh, 0, sizeof(w->zmmh));
    memset(w->hi16_zmm, 0, sizeof(w->hi16_zmm));
}

static uint64_t *wire_u64(X86CPUWire *w, const X86MsrSlot *s)
{
    return (uint64_t *)((uint8_t *)w + s->offset);
}

static uint64_t slot_get(const X86CPUWire *w, const X86MsrSlot *s)
{
    const uint8_t *p = (const uint8_t *)w + s->offset;

    return s->size == 4 ? *(const uint32_t *)p : *(const uint64_t *)p;
}

static void slot_set(X86CPUWire *w, const X86MsrSlot *s, uint64_t v)
{
    if (s->size == 4) {
        *(uint32_t *)((uint8_t *)w + s->offset) = (uint32_t)v;
    } else {
        *wire_u64(w, s) = v;
    }
}

void x86_cpu_to_wire(const X86KvmImage *k, const X86CPUCaps *c, X86CPUWire *w)
{
    const struct kvm_regs *r = &k->regs;
    const struct kvm_sregs *sr = &k->sregs;
    const struct kvm_vcpu_events *ev = &k->events;
    const struct kvm_segment *segs[6] = { &sr->es, &sr->cs, &sr->ss, &sr->ds, &sr->fs, &sr->gs };
    uint64_t gprs[16] = {
        r->rax, r->rcx, r->rdx, r->rbx, r->rsp, r->rbp, r->rsi, r->rdi,
        r->r8, r->r9, r->r10, r->r11, r->r12, r->r13, r->r14, r->r15,
    };

    memset(w, 0, offsetof(X86CPUWire, halted));
    /* An MSR this vCPU lacks is sent as its reset value, so its subsection stays out. */
    x86_cpu_wire_reset_subs(w);
    memcpy(w->regs, gprs, sizeof(gprs));
    w->eip = r->rip;
    w->eflags = r->rflags;
    w->hflags = x86_hflags(sr, r->rflags, ev->smi.smm);
    /*
     * A vCPU stopped right after STI: the next instruction (a HLT) must
     * still run before any interrupt, or the wakeup is taken first and
     * the guest halts past it.
     */
    w->hflags |= ev->interrupt.shadow ? HF_INHIBIT_IRQ : 0;
    x86_xsave_to_wire(k->xsave, w);
    /* Components beyond AVX-512 (PKRU...) go in QEMU subsections we do not produce. */
    w->xstate_bv &= X86_XSTATE_CARRIED;
    for (unsigned i = 0; i < 6; i++) {
        x86_seg_to_wire(segs[i], &w->segs[i]);
    }
    x86_seg_to_wire(&sr->ldt, &w->ldt);
    x86_seg_to_wire(&sr->tr, &w->tr);
    /* Descriptor tables have no selector or flags in QEMU's streams: 0. */
    w->gdt.base = sr->gdt.base;
    w->gdt.limit = sr->gdt.limit;
    w->idt.base = sr->idt.base;
    w->idt.limit = sr->idt.limit;
    w->cr0 = sr->cr0;
    w->cr2 = sr->cr2;
    w->cr3 = sr->cr3;
    w->cr4 = sr->cr4;
    w->efer = sr->efer;
    for (unsigned i = 0; i < 4; i++) {
        w->dr[i] = k->debugregs.db[i];
    }
    w->dr[4] = w->dr[6] = k->debugregs.dr6;
    w->dr[5] = w->dr[7] = k->debugregs.dr7;
    w->a20_mask = -1;
    w->smbase = X86_SMBASE_RESET;
    for (unsigned i = 0; i < X86_MSR_SLOTS; i++) {
        if (x86_msr_ok(c, i)) {
            slot_set(w, &x86_msr_slots[i], k->msr[i]);
        }
    }
    w->hflags2 = HF2_SEEN | (ev->nmi.masked ? HF2_NMI_MASKED : 0);
    /* vm_hsave, vm_vmcb, tsc_offset, intercept*, v_tpr: nested SVM, which we never offer: 0. */
    w->interrupt_injected = ev->interrupt.injected ? ev->interrupt.nr : -1;
    w->soft_interrupt = ev->interrupt.soft;
    w->exception_nr = ev->exception.injected || ev->exception.pending ? ev->exception.nr : -1;
    w->has_error_code = w->exception_nr >= 0 && ev->exception.has_error_code;
    w->nmi_injected = ev->nmi.injected;
    w->nmi_pending = ev->nmi.pending;
    w->sipi_vector = ev->sipi_vector;
    w->mp_state = k->mp_state.mp_state;
    w->mcg_cap = c->mcg_cap;
    w->xcr0 = k->xcr0;
    w->tsc_khz = k->tsc_khz;
}

/* KVM's selectors and descriptor-table limits are 16 bits: refuse what would be cut. */
static bool x86_check_segments(const X86CPUWire *w, int index, Error **errp)
{
    static const char *const names[6] = { "ES", "CS", "SS", "DS", "FS", "GS" };
    const X86Segment *other[2] = { &w->ldt, &w->tr };

    for (unsigned i = 0; i < 8; i++) {
        const X86Segment *s = i < 6 ? &w->segs[i] : other[i - 6];

        if (s->selector > 0xffff) {
            error_setg(errp, "cpu %d: invalid %s selector 0x%x", index,
                       i < 6 ? names[i] : i == 6 ? "LDT" : "TR", s->selector);
            return false;
        }
    }
    if (w->gdt.limit > 0xffff || w->idt.limit > 0xffff) {
        error_setg(errp, "cpu %d: invalid descriptor table limit (GDT 0x%x, IDT 0x%x)", index,
                   w->gdt.limit, w->idt.limit);
        return false;
    }
    return true;
}

static bool avx512_nonzero(const X86CPUWire *w)
{
    static const X86CPUWire zero;

    return memcmp(w->opmask, zero.opmask, sizeof(w->opmask)) ||
           memcmp(w->zmmh, zero.zmmh, sizeof(w->zmmh)) ||
           memcmp(w->hi16_zmm, zero.hi16_zmm, sizeof(w->hi16_zmm));
}

/*
 * The subsections' values, refused where KVM would refuse them (its
 * reserved bits) or this vCPU cannot hold them. A value for an MSR this
 * vCPU lacks is refused unless it is the reset value: it would be lost.
 */
static bool x86_cpu_check_subs(const X86CPUWire *w, const X86CPUCaps *c, int index,
                               Error **errp)
{
    static const struct {
        uint32_t msr;
        uint16_t offset;
        uint64_t reserved;              /* bits KVM refuses */
        const char *name;
    } msrs[] = {
        { 0x4b564d02, offsetof(X86CPUWire, async_pf_en_msr), 0x30, "async PF enable" },
        { 0x4b564d06, offsetof(X86CPUWire, async_pf_int_msr), ~0xffull, "async PF vector" },
        { 0x4b564d04, offsetof(X86CPUWire, pv_eoi_en_msr), 0x6, "PV EOI" },
        /* Bits 1-5 (KVM_STEAL_RESERVED_MASK): the area is 64-byte aligned, bit 6 is address. */
        { 0x4b564d03, offsetof(X86CPUWire, steal_time_msr), 0x3e, "steal time" },
        { 0x4b564d05, offsetof(X86CPUWire, poll_control_msr), ~1ull, "poll control" },
        { 0x3b, offsetof(X86CPUWire, tsc_adjust), 0, "TSC_ADJUST" },
        { X86_MSR_TSC_DEADLINE, offsetof(X86CPUWire, tsc_deadline), 0, "TSC deadline" },
        { X86_MSR_MISC_ENABLE, offsetof(X86CPUWire, misc_enable), 0, "MISC_ENABLE" },
    };
    X86CPUWire reset;

    x86_cpu_wire_reset_subs(&reset);
    for (unsigned i = 0; i < G_N_ELEMENTS(msrs); i++) {
        uint64_t v = *(const uint64_t *)((const uint8_t *)w + msrs[i].offset);
        uint64_t r = *(const uint64_t *)((const uint8_t *)&reset + msrs[i].offset);
        unsigned slot = 0;

        while (slot < X86_MSR_SLOTS - 1 && x86_msr_slots[slot].index != msrs[i].msr) {
            slot++;
        }
        if (v & msrs[i].reserved) {
            error_setg(errp, "cpu %d: invalid %s MSR value 0x%" PRIx64, index, msrs[i].name, v);
            return false;
        }
        if (v != r && !x86_msr_ok(c, slot)) {
            error_setg(errp, "cpu %d: the stream has %s MSR 0x%" PRIx64 ", this vCPU has "
                       "no such MSR", index, msrs[i].name, v);
            return false;
        }
    }
    if (w->async_pf_en_msr & 1 && (w->async_pf_en_msr & 8) && !w->async_pf_int_msr) {
        error_setg(errp, "cpu %d: async PF enabled as an interrupt without a vector", index);
        return false;
    }
    if (w->fpop > 0x7ff) {
        error_setg(errp, "cpu %d: invalid x87 opcode 0x%x", index, w->fpop);
        return false;
    }
    if (avx512_nonzero(w) && !c->avx512_area) {
        error_setg(errp, "cpu %d: the stream has AVX-512 state, this vCPU has no AVX-512", index);
        return false;
    }
    return true;
}

bool x86_cpu_check_wire(const X86CPUWire *w, const X86CPUCaps *c, int index, Error **errp)
{
    uint64_t bad_cap = w->mcg_cap & ~c->mcg_cap & ~0xffull;

    if (!x86_check_segments(w, index, errp)) {
        return false;
    }

    if (w->a20_mask != -1) {
        error_setg(errp, "cpu %d: A20 gate masked (a20_mask 0x%x): not supported", index,
                   (uint32_t)w->a20_mask);
        return false;
    }
    if (w->mp_state > KVM_MP_STATE_SIPI_RECEIVED) {
        error_setg(errp, "cpu %d: invalid MP state %u", index, w->mp_state);
        return false;
    }
    if (w->vm_vmcb || w->intercept) {
        error_setg(errp, "cpu %d: a nested SVM guest was running (vm_vmcb 0x%" PRIx64
                   ", intercept 0x%" PRIx64 "): not supported", index, w->vm_vmcb, w->intercept);
        return false;
    }
    if ((w->mcg_cap & 0xff) != (c->mcg_cap & 0xff) || bad_cap) {
        /* The banks' MSRs would not exist here, or would mean something else. */
        error_setg(errp, "cpu %d: unsupported MCG_CAP 0x%" PRIx64 " (this host: 0x%" PRIx64 ")",
                   index, w->mcg_cap, c->mcg_cap);
        return false;
    }
    if (w->fpregs_format != 0) {
        error_setg(errp, "cpu %d: unknown x87 register format %u", index, w->fpregs_format);
        return false;
    }
    if (w->fptag > 0xff) {
        error_setg(errp, "cpu %d: invalid x87 tag word 0x%x", index, w->fptag);
        return false;
    }
    if (w->xstate_bv & ~X86_XSTATE_CARRIED) {
        /* Their state would come in subsections we do not take. */
        error_setg(errp, "cpu %d: XSTATE_BV 0x%" PRIx64 " has components beyond AVX-512", index,
                   w->xstate_bv);
        return false;
    }
    if ((w->xstate_bv & X86_XSTATE_AVX512) && !c->avx512_area) {
        error_setg(errp, "cpu %d: the stream has AVX-512 state, this vCPU has no AVX-512", index);
        return false;
    }
    if ((w->xstate_bv & X86_XSTATE_AVX) && !c->avx_area) {
        error_setg(errp, "cpu %d: the stream has AVX state, this vCPU has no AVX", index);
        return false;
    }
    if (!(w->xcr0 & X86_XSTATE_X87) || (w->xcr0 & ~c->xcr0_supported)) {
        error_setg(errp, "cpu %d: XCR0 0x%" PRIx64 " is not valid here (supported 0x%" PRIx64
                   ")", index, w->xcr0, c->xcr0_supported);
        return false;
    }
    if (w->mxcsr >> 16) {
        error_setg(errp, "cpu %d: invalid MXCSR 0x%x", index, w->mxcsr);
        return false;
    }
    if (w->interrupt_injected < -1 || w->interrupt_injected > 0xff) {
        error_setg(errp, "cpu %d: invalid injected interrupt %d", index, w->interrupt_injected);
        return false;
    }
    if (w->exception_nr < -1 || w->exception_nr > 31) {
        error_setg(errp, "cpu %d: invalid pending exception vector %d", index, w->exception_nr);
        return false;
    }
    if (w->sipi_vector > 0xff) {
        error_setg(errp, "cpu %d: invalid SIPI vector 0x%x", index, w->sipi_vector);
        return false;
    }
    if (!x86_cpu_check_subs(w, c, index, errp)) {
        return false;
    }
    if (w->tsc_khz < 0 || w->tsc_khz > UINT32_MAX) {
        error_setg(errp, "cpu %d: invalid TSC frequency %" PRId64 " kHz", index, w->tsc_khz);
        return false;
    }
    return true;
}

void x86_cpu_from_wire(const X86CPUWire *w, X86KvmImage *k)
{
    struct kvm_regs *r = &k->regs;
    struct kvm_sregs *sr = &k->sregs;
    struct kvm_vcpu_events *ev = &k->events;
    struct kvm_segment *segs[6] = { &sr->es, &sr->cs, &sr->ss, &sr->ds, &sr->fs, &sr->gs };
    __u64 *gprs[16] = {
        &r->rax, &r->rcx, &r->rdx, &r->rbx, &r->rsp, &r->rbp, &r->rsi, &r->rdi,
        &r->r8, &r->r9, &r->r10, &r->r11, &r->r12, &r->r13, &r->r14, &r->r15,
    };

    for (unsigned i = 0; i < 16; i++) {
        *gprs[i] = w->regs[i];
    }
    r->rip = w->eip;
    r->rflags = w->eflags;
    /* hflags is QEMU's cache of the mode (the state itself follows), and the shadow (events). */
    for (unsigned i = 0; i < 6; i++) {
        x86_seg_from_wire(&w->segs[i], segs[i]);
    }
    x86_seg_from_wire(&w->ldt, &sr->ldt);
    x86_seg_from_wire(&w->tr, &sr->tr);
    sr->gdt = (struct kvm_dtable) { .base = w->gdt.base, .limit = (uint16_t)w->gdt.limit };
    sr->idt = (struct kvm_dtable) { .base = w->idt.base, .limit = (uint16_t)w->idt.limit };
    sr->cr0 = w->cr0;
    sr->cr2 = w->cr2;
    sr->cr3 = w->cr3;
    sr->cr4 = w->cr4;
    sr->efer = w->efer;
    /* The injected interrupt travels in the events, not in the sregs' bitmap. */
    memset(sr->interrupt_bitmap, 0, sizeof(sr->interrupt_bitmap));

    x86_xsave_from_wire(w, k->xsave);
    k->xcr0 = w->xcr0;

    memset(&k->debugregs, 0, sizeof(k->debugregs));
    for (unsigned i = 0; i < 4; i++) {
        k->debugregs.db[i] = w->dr[i];
    }
    k->debugregs.dr6 = w->dr[6];
    k->debugregs.dr7 = w->dr[7];

    for (unsigned i = 0; i < X86_MSR_SLOTS; i++) {
        k->msr[i] = slot_get(w, &x86_msr_slots[i]);
    }

    memset(ev, 0, sizeof(*ev));
    ev->interrupt.injected = w->interrupt_injected >= 0;
    ev->interrupt.nr = w->interrupt_injected >= 0 ? w->interrupt_injected : 0;
    ev->interrupt.soft = !!w->soft_interrupt;
    /* QEMU keeps one bit for both kinds of shadow; both block interrupts alike. */
    ev->interrupt.shadow = w->hflags & HF_INHIBIT_IRQ ? KVM_X86_SHADOW_INT_STI : 0;
    /*
     * Without KVM_CAP_EXCEPTION_PAYLOAD KVM reports a pending exception
     * as injected, and so do we. Its error code is not among v12's
     * fields (QEMU: a subsection): it is put as 0.
     */
    ev->exception.injected = w->exception_nr >= 0;
    ev->exception.nr = w->exception_nr >= 0 ? w->exception_nr : 0;
    ev->exception.has_error_code = w->exception_nr >= 0 && w->has_error_code;
    ev->nmi.injected = !!w->nmi_injected;
    ev->nmi.pending = !!w->nmi_pending;
    ev->nmi.masked = !!(w->hflags2 & HF2_NMI_MASKED);
    ev->sipi_vector = w->sipi_vector;
    k->mp_state.mp_state = w->mp_state;
    k->tsc_khz = (uint32_t)w->tsc_khz;
}

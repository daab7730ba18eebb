/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for accel/kvm/x86-cpu-layout.c, the pure conversions between
 * QEMU's "cpu" v12 fields and KVM's structures: segment flags, hflags
 * against the values QEMU 10.0 sent for the same guest states, the
 * FXSAVE/XSAVE image with its TOP rotation and tags, the checks of an
 * incoming image, and a seeded random round trip fields -> KVM -> fields.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bswap.h"
#include "../../accel/kvm/x86-cpu-layout.h"

/* ---- segments ---- */

static void test_segment_flags(void)
{
    /* Long-mode values QEMU 10.0 sent for our verify workload. */
    struct kvm_segment cs = { .selector = 8, .type = 0xb, .s = 1, .present = 1, .l = 1, .g = 1 };
    struct kvm_segment ds = { .selector = 16, .type = 3, .s = 1, .present = 1, .db = 1, .g = 1 };
    struct kvm_segment tr = { .selector = 0x28, .type = 0xb, .present = 1, .limit = 103 };
    struct kvm_segment ldt = { .type = 2, .present = 1, .limit = 0xffff };
    struct kvm_segment ss = { .type = 3, .s = 1, .unusable = 1, .db = 1, .g = 1 };
    struct kvm_segment back;
    X86Segment w;

    x86_seg_to_wire(&cs, &w);
    g_assert_cmphex(w.flags, ==, 0xa09b00);
    g_assert_cmpuint(w.selector, ==, 8);
    x86_seg_from_wire(&w, &back);
    g_assert_cmpmem(&back, sizeof(back), &cs, sizeof(cs));
    x86_seg_to_wire(&ds, &w);
    g_assert_cmphex(w.flags, ==, 0xc09300);
    x86_seg_from_wire(&w, &back);
    g_assert_cmpmem(&back, sizeof(back), &ds, sizeof(ds));
    x86_seg_to_wire(&tr, &w);
    g_assert_cmphex(w.flags, ==, 0x8b00);
    g_assert_cmpuint(w.limit, ==, 103);
    x86_seg_to_wire(&ldt, &w);
    g_assert_cmphex(w.flags, ==, 0x8200);
    /* A null SS in 64-bit mode: unusable, sent with flags 0, loaded unusable. */
    x86_seg_to_wire(&ss, &w);
    g_assert_cmphex(w.flags, ==, 0);
    x86_seg_from_wire(&w, &back);
    g_assert_true(back.unusable);
    g_assert_false(back.present);
    /* ... but its DPL, the CPL, survives. */
    ss.dpl = 3;
    x86_seg_to_wire(&ss, &w);
    g_assert_cmphex(w.flags, ==, 3 << 13);
    x86_seg_from_wire(&w, &back);
    g_assert_cmpuint(back.dpl, ==, 3);
    g_assert_true(back.unusable);
}

/* Every defined flag bit alone and together goes to its descriptor field and back. */
static void test_segment_flags_bits(void)
{
    static const uint32_t defined = 0xf00 | X86_DESC_S | 3 << X86_DESC_DPL_SHIFT | X86_DESC_AVL |
                                    X86_DESC_L | X86_DESC_DB | X86_DESC_G;

    for (int i = 0; i < 1000; i++) {
        X86Segment w = { .selector = g_test_rand_int() & 0xffff, .base = g_test_rand_int(),
                         .limit = g_test_rand_int(),
                         .flags = (g_test_rand_int() & defined) | X86_DESC_P };
        X86Segment w2 = { 0 };
        struct kvm_segment s;

        x86_seg_from_wire(&w, &s);
        g_assert_false(s.unusable);
        x86_seg_to_wire(&s, &w2);
        g_assert_cmphex(w2.flags, ==, w.flags);
        g_assert_cmphex(w2.selector, ==, w.selector);
        g_assert_cmphex(w2.base, ==, w.base);
        g_assert_cmphex(w2.limit, ==, w.limit);
    }
}

/* ---- hflags ---- */

static void long_mode_sregs(struct kvm_sregs *sr)
{
    struct kvm_segment data = { .selector = 16, .type = 3, .s = 1, .present = 1, .db = 1, .g = 1 };

    memset(sr, 0, sizeof(*sr));
    sr->cs = (struct kvm_segment) { .selector = 8, .type = 0xb, .s = 1, .present = 1, .l = 1,
                                    .g = 1 };
    sr->ds = sr->es = sr->fs = sr->gs = data;
    sr->ss = (struct kvm_segment) { .unusable = 1 };
    sr->cr0 = 0x80000011;
    sr->cr4 = 0x20;
    sr->efer = 0x500;
}

static void real_mode_sregs(struct kvm_sregs *sr)
{
    struct kvm_segment data = { .type = 3, .s = 1, .present = 1, .limit = 0xffff };

    memset(sr, 0, sizeof(*sr));
    sr->cs = (struct kvm_segment) { .selector = 0xf000, .base = 0xffff0000, .limit = 0xffff,
                                    .type = 0xb, .s = 1, .present = 1 };
    sr->ds = sr->es = sr->fs = sr->gs = sr->ss = data;
    sr->cr0 = 0x60000010;
}

static void test_hflags(void)
{
    struct kvm_sregs sr;

    /* QEMU 10.0's values: a running verify guest, and a vCPU at reset. */
    long_mode_sregs(&sr);
    g_assert_cmphex(x86_hflags(&sr, 0x6, false), ==, 0xc0b0);
    real_mode_sregs(&sr);
    g_assert_cmphex(x86_hflags(&sr, 0x2, false), ==, 0x40);

    /* CPL from SS.DPL, TF, CR0.MP/EM/TS, OSFXSR, SMM. */
    long_mode_sregs(&sr);
    sr.ss.dpl = 3;
    sr.cr0 |= 0xe;
    sr.cr4 |= 1 << 9;
    g_assert_cmphex(x86_hflags(&sr, 0x102, true), ==, 0xc0b0 | 3 | 0x100 | 0xe00 | 1 << 22 |
                    1 << 19);

    /* 32-bit flat protected mode: CS32, SS32, PE; a based DS makes ADDSEG. */
    memset(&sr, 0, sizeof(sr));
    sr.cs = (struct kvm_segment) { .type = 0xb, .s = 1, .present = 1, .db = 1, .g = 1 };
    sr.ss = sr.ds = sr.es = (struct kvm_segment) { .type = 3, .s = 1, .present = 1, .db = 1 };
    sr.cr0 = 0x11;
    g_assert_cmphex(x86_hflags(&sr, 0x2, false), ==, 0xb0);
    sr.ds.base = 0x1000;
    g_assert_cmphex(x86_hflags(&sr, 0x2, false), ==, 0xf0);
    /* vm86 inside it: ADDSEG whatever the bases. */
    sr.ds.base = 0;
    g_assert_cmphex(x86_hflags(&sr, 0x20002, false), ==, 0xf0);
}

/* ---- XSAVE ---- */

static void test_xsave_fields(void)
{
    uint8_t area[X86_XSAVE_AVX512_END] = { 0 }, back[X86_XSAVE_AVX512_END];
    X86CPUWire w = { 0 };
    unsigned top = 5;

    area[0] = 0x7f;
    area[1] = 0x03;                              /* FCW 0x37f */
    area[2] = 0x00;
    area[3] = top << 3;                          /* FSW: TOP in bits 11-13 */
    area[4] = 0xa0;                              /* physical 5 and 7 hold values */
    stw_le_p(area + 6, 0x123);                   /* FOP */
    stq_le_p(area + 8, 0xffff800000401234ull);   /* FIP */
    stq_le_p(area + 16, 0x405678);               /* FDP */
    stl_le_p(area + 24, 0x1f80);
    for (unsigned i = 0; i < 8; i++) {
        stq_le_p(area + 32 + 16 * i, 0x8000000000000000ull | i);
        area[32 + 16 * i + 8] = 0x30 + i;
        area[32 + 16 * i + 9] = 0x40;
        stq_le_p(area + X86_XSAVE_OPMASK + 8 * i, 0x5000 + i);
    }
    for (unsigned i = 0; i < 16; i++) {
        stq_le_p(area + 160 + 16 * i, 0x1000 + i);
        stq_le_p(area + 168 + 16 * i, 0x2000 + i);
        stq_le_p(area + X86_XSAVE_YMMH + 16 * i, 0x3000 + i);
        stq_le_p(area + X86_XSAVE_YMMH + 8 + 16 * i, 0x4000 + i);
        for (unsigned q = 0; q < 4; q++) {
            stq_le_p(area + X86_XSAVE_ZMM_HI256 + 32 * i + 8 * q, 0x60000 + 16 * i + q);
        }
        for (unsigned q = 0; q < 8; q++) {
            stq_le_p(area + X86_XSAVE_HI16_ZMM + 64 * i + 8 * q, 0x70000 + 16 * i + q);
        }
    }
    stq_le_p(area + X86_XSAVE_XSTATE_BV, 0xe7);

    x86_xsave_to_wire(area, &w);
    g_assert_cmphex(w.fpuc, ==, 0x37f);
    g_assert_cmphex(w.fpus, ==, top << 11);
    g_assert_cmphex(w.fptag, ==, 0xa0);
    g_assert_cmphex(w.fpop, ==, 0x123);
    g_assert_cmphex(w.fpip, ==, 0xffff800000401234ull);
    g_assert_cmphex(w.fpdp, ==, 0x405678);
    g_assert_cmphex(w.mxcsr, ==, 0x1f80);
    for (unsigned i = 0; i < 8; i++) {
        /* fpregs[i] is the XSAVE slot of ST(i), whatever TOP is (as QEMU sends it). */
        g_assert_cmphex(w.fpregs[i].mant, ==, 0x8000000000000000ull | i);
        g_assert_cmphex(w.fpregs[i].exp, ==, 0x4030 + i);
        g_assert_cmphex(w.opmask[i], ==, 0x5000 + i);
    }
    for (unsigned i = 0; i < 16; i++) {
        g_assert_cmphex(w.xmm[i].q[0], ==, 0x1000 + i);
        g_assert_cmphex(w.xmm[i].q[1], ==, 0x2000 + i);
        g_assert_cmphex(w.ymmh[i].q[0], ==, 0x3000 + i);
        g_assert_cmphex(w.ymmh[i].q[1], ==, 0x4000 + i);
        for (unsigned q = 0; q < 4; q++) {
            g_assert_cmphex(w.zmmh[i].q[q], ==, 0x60000 + 16 * i + q);
        }
        for (unsigned q = 0; q < 8; q++) {
            g_assert_cmphex(w.hi16_zmm[i].q[q], ==, 0x70000 + 16 * i + q);
        }
    }
    g_assert_cmphex(w.xstate_bv, ==, 0xe7);

    memset(back, 0xee, sizeof(back));
    x86_xsave_from_wire(&w, back);
    g_assert_cmpmem(back, sizeof(back), area, sizeof(area));

    /* Components beyond AVX-512 (PKRU) never reach KVM from the fields. */
    w.xstate_bv = 0x2e7;
    x86_xsave_from_wire(&w, back);
    g_assert_cmphex(ldq_le_p(back + X86_XSAVE_XSTATE_BV), ==, 0xe7);
}

/*
 * QEMU 10.0's stream of the guest's cpustate=x87 image (TOP = 6, ST(0) =
 * 1.5, ST(1) = -2.25, FOP 0x123): fpregs[0] and [1] held ST(0) and ST(1),
 * cpu/fpop_ip_dp fpop 291, fpip 0x401234, fpdp 0x405678. Our XSAVE image
 * of that state must give those fields.
 */
static void test_xsave_qemu_x87(void)
{
    uint8_t area[X86_XSAVE_AVX512_END] = { 0 };
    X86CPUWire w = { 0 };

    stw_le_p(area + 0, 0x37f);
    stw_le_p(area + 2, 0x3000);
    area[4] = 0xc0;
    stw_le_p(area + 6, 0x123);
    stq_le_p(area + 8, 0x401234);
    stq_le_p(area + 16, 0x405678);
    stq_le_p(area + 32, 0xc000000000000000ull);
    stw_le_p(area + 40, 0x3fff);
    stq_le_p(area + 48, 0x9000000000000000ull);
    stw_le_p(area + 56, 0xc000);
    x86_xsave_to_wire(area, &w);
    g_assert_cmphex(w.fpus, ==, 12288);
    g_assert_cmphex(w.fptag, ==, 192);
    g_assert_cmphex(w.fpregs[0].mant, ==, 13835058055282163712ull);
    g_assert_cmphex(w.fpregs[0].exp, ==, 16383);
    g_assert_cmphex(w.fpregs[1].mant, ==, 10376293541461622784ull);
    g_assert_cmphex(w.fpregs[1].exp, ==, 49152);
    g_assert_cmphex(w.fpop, ==, 291);
    g_assert_cmphex(w.fpip, ==, 4198964);
    g_assert_cmphex(w.fpdp, ==, 4216440);
}

/* ---- checks of an incoming image ---- */

static const X86CPUCaps test_caps = {
    .msr_ok = { ~0ull, ~0ull },
    .mcg_cap = X86_MCG_CAP_QEMU,
    .xcr0_supported = 0xe7,
    .avx_area = true,
    .avx512_area = true,
};

static void valid_wire(X86CPUWire *w)
{
    memset(w, 0, sizeof(*w));
    w->a20_mask = -1;
    w->mcg_cap = test_caps.mcg_cap;
    w->xcr0 = 7;
    w->xstate_bv = 7;
    w->mxcsr = 0x1f80;
    w->interrupt_injected = -1;
    w->exception_nr = -1;
    w->hflags2 = 0x101;
    x86_cpu_wire_reset_subs(w);
}

typedef void (*Spoil)(X86CPUWire *w);

static void spoil_a20(X86CPUWire *w) { w->a20_mask = 0xffefffff; }
static void spoil_mp(X86CPUWire *w) { w->mp_state = 5; }
static void spoil_vmcb(X86CPUWire *w) { w->vm_vmcb = 0x1000; }
static void spoil_intercept(X86CPUWire *w) { w->intercept = 1; }
static void spoil_banks(X86CPUWire *w) { w->mcg_cap = X86_MCG_CAP_QEMU + 1; }
static void spoil_cap_bits(X86CPUWire *w) { w->mcg_cap |= 1ull << 27; }
static void spoil_format(X86CPUWire *w) { w->fpregs_format = 1; }
static void spoil_tag(X86CPUWire *w) { w->fptag = 0x100; }
static void spoil_bv(X86CPUWire *w) { w->xstate_bv |= 0x100; }
static void spoil_xcr0(X86CPUWire *w) { w->xcr0 = 6; }
static void spoil_xcr0_bits(X86CPUWire *w) { w->xcr0 |= 0x200; }
static void spoil_mxcsr(X86CPUWire *w) { w->mxcsr = 0x11f80; }
static void spoil_irq(X86CPUWire *w) { w->interrupt_injected = 256; }
static void spoil_irq_neg(X86CPUWire *w) { w->interrupt_injected = -2; }
static void spoil_exc(X86CPUWire *w) { w->exception_nr = 32; }
static void spoil_sipi(X86CPUWire *w) { w->sipi_vector = 0x100; }
static void spoil_khz(X86CPUWire *w) { w->tsc_khz = -1; }
static void spoil_selector(X86CPUWire *w) { w->segs[2].selector = 0x10000; }
static void spoil_tr(X86CPUWire *w) { w->tr.selector = 0x10028; }
static void spoil_idt(X86CPUWire *w) { w->idt.limit = 0x10000; }
static void spoil_bv_pkru(X86CPUWire *w) { w->xstate_bv |= 0x200; }
static void spoil_apf(X86CPUWire *w) { w->async_pf_en_msr = 0x1010; }
static void spoil_apf_vec(X86CPUWire *w) { w->async_pf_int_msr = 0x100; }
static void spoil_apf_novec(X86CPUWire *w) { w->async_pf_en_msr = 0x1009; }
static void spoil_eoi(X86CPUWire *w) { w->pv_eoi_en_msr = 0x1003; }
static void spoil_steal(X86CPUWire *w) { w->steal_time_msr = 0x1021; }
static void spoil_poll(X86CPUWire *w) { w->poll_control_msr = 2; }
static void spoil_fpop(X86CPUWire *w) { w->fpop = 0x800; }

static void test_check_wire(void)
{
    static const Spoil spoils[] = {
        spoil_a20, spoil_mp, spoil_vmcb, spoil_intercept, spoil_banks, spoil_cap_bits,
        spoil_format, spoil_tag, spoil_bv, spoil_xcr0, spoil_xcr0_bits, spoil_mxcsr,
        spoil_irq, spoil_irq_neg, spoil_exc, spoil_sipi, spoil_khz, spoil_selector, spoil_tr,
        spoil_idt, spoil_bv_pkru, spoil_apf, spoil_apf_vec, spoil_apf_novec, spoil_eoi,
        spoil_steal, spoil_poll, spoil_fpop,
    };
    X86CPUCaps no_avx = test_caps, no_avx512 = test_caps, no_deadline = test_caps;
    unsigned dl = X86_MSR_SLOT_TSC_DEADLINE;
    X86CPUWire w;

    valid_wire(&w);
    g_assert_true(x86_cpu_check_wire(&w, &test_caps, 0, &error_abort));
    /* Fewer MCG_CAP flag bits than ours is fine; the bank count must match. */
    w.mcg_cap &= ~X86_MCG_SER_P;
    g_assert_true(x86_cpu_check_wire(&w, &test_caps, 0, &error_abort));
    for (size_t i = 0; i < G_N_ELEMENTS(spoils); i++) {
        Error *err = NULL;

        valid_wire(&w);
        spoils[i](&w);
        g_assert_false(x86_cpu_check_wire(&w, &test_caps, 3, &err));
        g_assert_nonnull(err);
        g_assert_true(g_str_has_prefix(error_get_pretty(err), "cpu 3: "));
        error_free(err);
    }
    no_avx.avx_area = false;
    valid_wire(&w);
    g_assert_false(x86_cpu_check_wire(&w, &no_avx, 0, NULL));
    w.xstate_bv = 3;
    g_assert_true(x86_cpu_check_wire(&w, &no_avx, 0, &error_abort));

    /* AVX-512 state, in XSTATE_BV or in the registers, needs a vCPU with it. */
    no_avx512.avx512_area = false;
    valid_wire(&w);
    g_assert_true(x86_cpu_check_wire(&w, &no_avx512, 0, &error_abort));
    w.xstate_bv |= 0x20;
    g_assert_false(x86_cpu_check_wire(&w, &no_avx512, 0, NULL));
    g_assert_true(x86_cpu_check_wire(&w, &test_caps, 0, &error_abort));
    valid_wire(&w);
    w.hi16_zmm[15].q[7] = 1;
    g_assert_false(x86_cpu_check_wire(&w, &no_avx512, 0, NULL));
    g_assert_true(x86_cpu_check_wire(&w, &test_caps, 0, &error_abort));

    /* An MSR this vCPU lacks may come only as its reset value. */
    g_assert_cmphex(x86_msr_slots[dl].index, ==, 0x6e0);
    no_deadline.msr_ok[dl / 64] &= ~(1ull << (dl % 64));
    valid_wire(&w);
    g_assert_true(x86_cpu_check_wire(&w, &no_deadline, 0, &error_abort));
    w.tsc_deadline = 1;
    g_assert_false(x86_cpu_check_wire(&w, &no_deadline, 0, NULL));
    g_assert_true(x86_cpu_check_wire(&w, &test_caps, 0, &error_abort));

    /* Async PF as an interrupt with its vector is fine, as QEMU sent it. */
    valid_wire(&w);
    w.async_pf_en_msr = 0x10e049;
    w.async_pf_int_msr = 0xec;
    w.pv_eoi_en_msr = 0x10bfc1;
    w.steal_time_msr = 0x10c041;       /* 64-byte aligned: bit 6 is the address's */
    w.poll_control_msr = 0;
    w.misc_enable = 9;
    w.tsc_adjust = 0x10000;
    w.fpop = 0x7ff;
    g_assert_true(x86_cpu_check_wire(&w, &test_caps, 0, &error_abort));
}

/* ---- round trip ---- */

static uint64_t rand64(void)
{
    return (uint64_t)g_test_rand_int() << 32 | (uint32_t)g_test_rand_int();
}

static void random_segment(X86Segment *s)
{
    static const uint32_t defined = 0xf00 | X86_DESC_S | 3 << X86_DESC_DPL_SHIFT | X86_DESC_AVL |
                                    X86_DESC_L | X86_DESC_DB | X86_DESC_G;

    s->selector = g_test_rand_int() & 0xffff;
    s->base = rand64();
    s->limit = g_test_rand_int();
    /* One in four unusable: then only the DPL travels. */
    s->flags = g_test_rand_int_range(0, 4) ? (g_test_rand_int() & defined) | X86_DESC_P
                                            : g_test_rand_int() & 3 << X86_DESC_DPL_SHIFT;
}

/* A valid random image as a QEMU source could send it (hflags left for the caller). */
static void random_wire(X86CPUWire *w)
{
    valid_wire(w);
    for (unsigned i = 0; i < 16; i++) {
        w->regs[i] = rand64();
        w->xmm[i].q[0] = rand64();
        w->xmm[i].q[1] = rand64();
        w->ymmh[i].q[0] = rand64();
        w->ymmh[i].q[1] = rand64();
    }
    w->eip = rand64();
    w->eflags = rand64();
    w->fpuc = g_test_rand_int();
    w->fpus = g_test_rand_int();
    w->fptag = g_test_rand_int() & 0xff;
    for (unsigned i = 0; i < 8; i++) {
        w->fpregs[i].mant = rand64();
        w->fpregs[i].exp = g_test_rand_int();
    }
    for (unsigned i = 0; i < 6; i++) {
        random_segment(&w->segs[i]);
    }
    random_segment(&w->ldt);
    random_segment(&w->tr);
    w->gdt.base = rand64();
    w->gdt.limit = g_test_rand_int() & 0xffff;
    w->idt.base = rand64();
    w->idt.limit = g_test_rand_int() & 0xffff;
    w->cr0 = rand64();
    w->cr2 = rand64();
    w->cr3 = rand64();
    w->cr4 = rand64();
    for (unsigned i = 0; i < 4; i++) {
        w->dr[i] = rand64();
    }
    w->dr[4] = w->dr[6] = rand64();
    w->dr[5] = w->dr[7] = rand64();
    w->mxcsr = g_test_rand_int() & 0xffff;
    w->efer = rand64();
    /* Every MSR-backed field, through the slot table. */
    for (unsigned i = 0; i < X86_MSR_SLOTS; i++) {
        const X86MsrSlot *s = &x86_msr_slots[i];
        uint8_t *p = (uint8_t *)w + s->offset;

        if (s->size == 4) {
            *(uint32_t *)p = g_test_rand_int();
        } else {
            *(uint64_t *)p = rand64();
        }
    }
    /* The subsections' MSRs within what KVM takes (x86_cpu_check_subs). */
    w->async_pf_en_msr &= ~0x30ull;
    w->async_pf_int_msr = g_test_rand_int_range(32, 256);
    w->pv_eoi_en_msr &= ~6ull;
    w->steal_time_msr &= ~0x3eull;
    w->poll_control_msr &= 1;
    w->fpop = g_test_rand_int() & 0x7ff;
    w->fpip = rand64();
    w->fpdp = rand64();
    for (unsigned i = 0; i < 8; i++) {
        w->opmask[i] = rand64();
    }
    for (unsigned i = 0; i < 16; i++) {
        for (unsigned q = 0; q < 4; q++) {
            w->zmmh[i].q[q] = rand64();
        }
        for (unsigned q = 0; q < 8; q++) {
            w->hi16_zmm[i].q[q] = rand64();
        }
    }
    w->hflags2 = 0x101 | (g_test_rand_bit() ? 8 : 0);
    w->interrupt_injected = g_test_rand_int_range(-1, 256);
    w->soft_interrupt = w->interrupt_injected >= 0 && g_test_rand_bit();
    w->mp_state = g_test_rand_int_range(0, 5);
    w->exception_nr = g_test_rand_int_range(-1, 32);
    w->has_error_code = w->exception_nr >= 0 && g_test_rand_bit();
    w->nmi_injected = g_test_rand_bit();
    w->nmi_pending = g_test_rand_bit();
    w->sipi_vector = g_test_rand_int_range(0, 256);
    w->xcr0 = 1 | (rand64() & test_caps.xcr0_supported);
    w->xstate_bv = rand64() & X86_XSTATE_CARRIED;
    w->tsc_khz = g_test_rand_int_range(1, INT32_MAX);
}

static void test_roundtrip_random(void)
{
    for (int n = 0; n < 500; n++) {
        g_autofree X86CPUWire *w = g_new0(X86CPUWire, 1);
        g_autofree X86CPUWire *w2 = g_new0(X86CPUWire, 1);
        g_autofree X86KvmImage *k = g_new0(X86KvmImage, 1);
        uint64_t apic_base = rand64(), cr8 = rand64() & 15;

        random_wire(w);
        g_assert_true(x86_cpu_check_wire(w, &test_caps, 0, &error_abort));
        k->sregs.apic_base = apic_base;
        k->sregs.cr8 = cr8;
        x86_cpu_from_wire(w, k);
        /* What the layout does not carry is left as the caller preset it. */
        g_assert_cmphex(k->sregs.apic_base, ==, apic_base);
        g_assert_cmphex(k->sregs.cr8, ==, cr8);
        g_assert_cmphex(k->events.nmi.masked, ==, !!(w->hflags2 & 8));
        g_assert_cmpint(k->events.exception.error_code, ==, 0);
        g_assert_cmpint(!!k->events.interrupt.shadow, ==, !!(w->hflags & 8));

        x86_cpu_to_wire(k, &test_caps, w2);
        /* hflags is recomputed from the state, never taken from the stream. */
        g_assert_cmphex(w2->hflags, ==, x86_hflags(&k->sregs, k->regs.rflags, false) |
                        (w->hflags & 8));
        w->hflags = w2->hflags;
        g_assert_cmpmem(w2, offsetof(X86CPUWire, halted), w, offsetof(X86CPUWire, halted));
    }
}

/* An MSR this vCPU lacks is sent as 0 (SMBASE as its reset value), whatever KVM's image says. */
static void test_msr_unavailable(void)
{
    X86CPUCaps caps = test_caps;
    X86KvmImage k = { 0 };
    X86CPUWire w;
    unsigned smbase = 0, pat = 0;

    for (unsigned i = 0; i < X86_MSR_SLOTS; i++) {
        k.msr[i] = 0x1234;
        if (x86_msr_slots[i].index == 0x9e) {
            smbase = i;
        } else if (x86_msr_slots[i].index == 0x277) {
            pat = i;
        }
    }
    caps.msr_ok[smbase / 64] &= ~(1ull << (smbase % 64));
    caps.msr_ok[pat / 64] &= ~(1ull << (pat % 64));
    x86_cpu_to_wire(&k, &caps, &w);
    g_assert_cmphex(w.smbase, ==, 0x30000);
    g_assert_cmphex(w.pat, ==, 0);
    g_assert_cmphex(w.lstar, ==, 0x1234);
    g_assert_cmpint(w.a20_mask, ==, -1);
    g_assert_cmphex(w.hflags2, ==, 0x101);
    g_assert_cmpint(w.interrupt_injected, ==, -1);
    g_assert_cmpint(w.exception_nr, ==, -1);
    g_assert_cmphex(w.mcg_cap, ==, X86_MCG_CAP_QEMU);
}

/*
 * A vCPU without the subsections' MSRs sends their reset values (so no
 * subsection goes): QEMU's MISC_ENABLE (fast strings) and poll control 1.
 */
static void test_subs_reset(void)
{
    X86CPUCaps caps = test_caps;
    X86KvmImage k = { 0 };
    X86CPUWire w, reset;

    memset(caps.msr_ok, 0, sizeof(caps.msr_ok));
    for (unsigned i = 0; i < X86_MSR_SLOTS; i++) {
        k.msr[i] = 0x1234;
    }
    x86_cpu_to_wire(&k, &caps, &w);
    g_assert_cmphex(w.misc_enable, ==, 1);
    g_assert_cmphex(w.poll_control_msr, ==, 1);
    g_assert_cmphex(w.tsc_deadline, ==, 0);
    g_assert_cmphex(w.async_pf_en_msr, ==, 0);
    x86_cpu_wire_reset_subs(&reset);
    g_assert_cmpmem(&w.async_pf_en_msr, offsetof(X86CPUWire, halted) -
                    offsetof(X86CPUWire, async_pf_en_msr), &reset.async_pf_en_msr,
                    offsetof(X86CPUWire, halted) - offsetof(X86CPUWire, async_pf_en_msr));
    /* With the MSRs, KVM's values go, TSC deadline included. */
    x86_cpu_to_wire(&k, &test_caps, &w);
    g_assert_cmphex(w.misc_enable, ==, 0x1234);
    g_assert_cmphex(w.tsc_deadline, ==, 0x1234);
    g_assert_cmphex(w.async_pf_int_msr, ==, 0x1234);
}

/* The AVX-512 offsets this layout assumes are the SDM's, as CPUID 0xD reports them. */
static void test_avx512_offsets(void)
{
    uint32_t ebx[8] = { 0, 0, 576, 0, 0, 1088, 1152, 1664 };

    g_assert_true(x86_avx512_offsets_ok(ebx));
    ebx[7] = 1600;
    g_assert_false(x86_avx512_offsets_ok(ebx));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cpu-layout/segment/flags", test_segment_flags);
    g_test_add_func("/cpu-layout/segment/flags-bits", test_segment_flags_bits);
    g_test_add_func("/cpu-layout/hflags", test_hflags);
    g_test_add_func("/cpu-layout/xsave", test_xsave_fields);
    g_test_add_func("/cpu-layout/check", test_check_wire);
    g_test_add_func("/cpu-layout/roundtrip-random", test_roundtrip_random);
    g_test_add_func("/cpu-layout/msr-unavailable", test_msr_unavailable);
    g_test_add_func("/cpu-layout/xsave-qemu-x87", test_xsave_qemu_x87);
    g_test_add_func("/cpu-layout/subsections-reset", test_subs_reset);
    g_test_add_func("/cpu-layout/avx512-offsets", test_avx512_offsets);
    return g_test_run();
}

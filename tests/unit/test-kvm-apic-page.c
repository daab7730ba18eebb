/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMU's "apic" fields <-> KVM's LAPIC page (accel/kvm/kvm-apic-page.c),
 * without KVM: the SDM offsets, the values a QEMU 10.0 source sent for a
 * freshly booted guest, round trips over random pages, and every refusal.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "../../accel/kvm/kvm-apic-page.h"

static uint32_t reg(const struct kvm_lapic_state *p, unsigned int off)
{
    uint32_t v;

    memcpy(&v, p->regs + off, 4);
    return v;
}

static void set_reg(struct kvm_lapic_state *p, unsigned int off, uint32_t v)
{
    memcpy(p->regs + off, &v, 4);
}

static void random_page(struct kvm_lapic_state *p)
{
    for (size_t i = 0; i < sizeof(p->regs); i++) {
        p->regs[i] = g_test_rand_int_range(0, 256);
    }
}

/* Registers the section carries, at their SDM offsets. */
static const unsigned int carried[] = {
    0x20, 0x80, 0xd0, 0xe0, 0xf0,
    0x100, 0x110, 0x120, 0x130, 0x140, 0x150, 0x160, 0x170,
    0x180, 0x190, 0x1a0, 0x1b0, 0x1c0, 0x1d0, 0x1e0, 0x1f0,
    0x200, 0x210, 0x220, 0x230, 0x240, 0x250, 0x260, 0x270,
    0x280, 0x300, 0x310, 0x320, 0x330, 0x340, 0x350, 0x360, 0x370, 0x380, 0x3e0,
};

static bool is_carried(unsigned int off)
{
    for (size_t i = 0; i < G_N_ELEMENTS(carried); i++) {
        if (off >= carried[i] && off < carried[i] + 4) {
            return true;
        }
    }
    return false;
}

/* A LAPIC as KVM holds it after a Linux guest booted (the values QEMU 10.0 sent). */
static void booted_page(struct kvm_lapic_state *p)
{
    memset(p, 0, sizeof(*p));
    set_reg(p, 0x20, 0x00000000);
    set_reg(p, 0xe0, 0xffffffff);
    set_reg(p, 0xf0, 0x1ff);
    set_reg(p, 0x320, 0x10000);
    set_reg(p, 0x330, 0x10000);
    set_reg(p, 0x340, 0x10000);
    set_reg(p, 0x350, 0x700);
    set_reg(p, 0x360, 0x10000);
    set_reg(p, 0x370, 0x10000);
}

static void test_booted(void)
{
    struct kvm_lapic_state p;
    APICImage img;
    static const uint32_t lvt[APIC_LVT_NB] = { 0x10000, 0x10000, 0x10000, 0x700, 0x10000, 0x10000 };

    booted_page(&p);
    apic_image_from_page(&img, &p, 0xfee00900, 123456789);
    g_assert_cmphex(img.apicbase, ==, 0xfee00900);
    g_assert_cmpuint(img.id, ==, 0);
    g_assert_cmpuint(img.arb_id, ==, 0);
    g_assert_cmphex(img.spurious_vec, ==, 0x1ff);
    g_assert_cmpuint(img.dest_mode, ==, 15);
    g_assert_cmpmem(img.lvt, sizeof(img.lvt), lvt, sizeof(lvt));
    g_assert_cmpint(img.count_shift, ==, 1);
    g_assert_cmpint(img.initial_count_load_time, ==, 123456789);
    g_assert_cmpint(img.next_time, ==, 0);
    g_assert_cmpint(img.timer_expiry, ==, -1);
    g_assert_true(apic_image_check(&img, 0, &error_abort));
}

static void test_offsets(void)
{
    struct kvm_lapic_state p;
    APICImage img;

    memset(&p, 0, sizeof(p));
    set_reg(&p, 0x20, 0x03000000);
    set_reg(&p, 0x80, 0x12345620);      /* TPR: bits 0-7 only */
    set_reg(&p, 0xd0, 0x05000000);
    set_reg(&p, 0xe0, 0x0fffffff);
    for (int i = 0; i < 8; i++) {
        set_reg(&p, 0x100 + 0x10 * i, 0x100 + i);
        set_reg(&p, 0x180 + 0x10 * i, 0x180 + i);
        set_reg(&p, 0x200 + 0x10 * i, 0x200 + i);
    }
    for (int i = 0; i < APIC_LVT_NB; i++) {
        set_reg(&p, 0x320 + 0x10 * i, 0x40 + i);
    }
    set_reg(&p, 0x280, 0x40);
    set_reg(&p, 0x300, 0x4031);
    set_reg(&p, 0x310, 0x07000000);
    set_reg(&p, 0x380, 99999);
    set_reg(&p, 0x3e0, 0xf);            /* bit 2 reserved */
    apic_image_from_page(&img, &p, 0xfee00800, 0);
    g_assert_cmpuint(img.id, ==, 3);
    g_assert_cmpuint(img.tpr, ==, 0x20);
    g_assert_cmpuint(img.log_dest, ==, 5);
    g_assert_cmpuint(img.dest_mode, ==, 0);
    for (int i = 0; i < 8; i++) {
        g_assert_cmphex(img.isr[i], ==, 0x100 + i);
        g_assert_cmphex(img.tmr[i], ==, 0x180 + i);
        g_assert_cmphex(img.irr[i], ==, 0x200 + i);
    }
    for (int i = 0; i < APIC_LVT_NB; i++) {
        g_assert_cmphex(img.lvt[i], ==, 0x40 + i);
    }
    g_assert_cmphex(img.esr, ==, 0x40);
    g_assert_cmphex(img.icr[0], ==, 0x4031);
    g_assert_cmphex(img.icr[1], ==, 0x07000000);
    g_assert_cmpuint(img.initial_count, ==, 99999);
    g_assert_cmphex(img.divide_conf, ==, 0xb);
    g_assert_cmpint(img.count_shift, ==, 0);
}

static void test_count_shift(void)
{
    /* TDCR -> divisor 2^count_shift (SDM): 0:2 1:4 2:8 3:16 8:32 9:64 a:128 b:1. */
    static const struct { uint32_t dc; int32_t shift; } t[] = {
        { 0, 1 }, { 1, 2 }, { 2, 3 }, { 3, 4 }, { 8, 5 }, { 9, 6 }, { 0xa, 7 }, { 0xb, 0 },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
        g_assert_cmpint(apic_count_shift(t[i].dc), ==, t[i].shift);
    }
}

/*
 * A random source page, through the image, over a random destination page:
 * the carried registers arrive as the image says, every other byte of the
 * destination stays, and saving the result gives the same image.
 */
static void test_round_trip(void)
{
    for (int n = 0; n < 1000; n++) {
        struct kvm_lapic_state src, dst, orig;
        APICImage img, again;

        random_page(&src);
        apic_image_from_page(&img, &src, 0xfee00000 | (n & 1 ? 0x900 : 0x800), n);
        /* Keep only what a LAPIC can hold, so the image passes the checks. */
        img.spurious_vec &= 0x13ff;
        img.dest_mode = n & 2 ? 0xf : 0;
        img.lvt[0] &= 0x710ff;
        img.lvt[1] &= 0x117ff;
        img.lvt[2] &= 0x117ff;
        img.lvt[3] &= 0x1f7ff;
        img.lvt[4] &= 0x1f7ff;
        img.lvt[5] &= 0x110ff;
        g_assert_true(apic_image_check(&img, 0, &error_abort));

        random_page(&dst);
        orig = dst;
        apic_image_to_page(&img, &dst);
        for (unsigned int off = 0; off < sizeof(dst.regs); off++) {
            if (!is_carried(off)) {
                g_assert_cmpuint((uint8_t)dst.regs[off], ==, (uint8_t)orig.regs[off]);
            }
        }
        g_assert_cmphex(reg(&dst, 0x20), ==, (uint32_t)img.id << 24);
        g_assert_cmphex(reg(&dst, 0xe0) >> 28, ==, img.dest_mode);
        g_assert_cmphex(reg(&dst, 0x3e0), ==, img.divide_conf);

        apic_image_from_page(&again, &dst, img.apicbase, n);
        g_assert_cmpmem(&again, sizeof(again), &img, sizeof(img));
    }
}

static void expect_refused(const APICImage *img, int cpu_index, const char *what)
{
    Error *err = NULL;

    g_assert_false(apic_image_check(img, cpu_index, &err));
    g_assert_nonnull(err);
    g_assert_nonnull(strstr(error_get_pretty(err), what));
    error_free(err);
}

static void test_refusals(void)
{
    struct kvm_lapic_state p;
    APICImage good, img;

    booted_page(&p);
    apic_image_from_page(&good, &p, 0xfee00900, 0);
    g_assert_true(apic_image_check(&good, 0, &error_abort));

    img = good;
    img.apicbase |= 0x200;
    expect_refused(&img, 0, "reserved bits");
    img = good;
    img.apicbase |= 0x1;
    expect_refused(&img, 0, "reserved bits");
    img = good;
    img.apicbase = 0xfee00400;
    expect_refused(&img, 0, "without the enable bit");

    /* x2APIC IDs are read-only; an xAPIC ID the guest wrote is its business. */
    img = good;
    img.id = 1;
    g_assert_true(apic_image_check(&img, 0, &error_abort));
    img.apicbase = 0xfee00d00;
    expect_refused(&img, 0, "x2APIC ID 1");
    g_assert_true(apic_image_check(&img, 1, &error_abort));

    img = good;
    img.spurious_vec = 0x3ff | 0x800;
    expect_refused(&img, 0, "spurious");
    img = good;
    img.dest_mode = 7;
    expect_refused(&img, 0, "destination model");
    for (int i = 0; i < APIC_LVT_NB; i++) {
        img = good;
        img.lvt[i] |= 1u << 20;
        expect_refused(&img, 0, "LVT");
    }
    img = good;
    img.lvt[5] |= 0x700;                /* the error LVT has no delivery mode */
    expect_refused(&img, 0, "LVT 5");
    img = good;
    img.divide_conf = 0x4;
    img.count_shift = apic_count_shift(4);
    expect_refused(&img, 0, "divide configuration");
    img = good;
    img.count_shift = 3;
    expect_refused(&img, 0, "count_shift");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/kvm-apic-page/booted", test_booted);
    g_test_add_func("/kvm-apic-page/offsets", test_offsets);
    g_test_add_func("/kvm-apic-page/count-shift", test_count_shift);
    g_test_add_func("/kvm-apic-page/round-trip", test_round_trip);
    g_test_add_func("/kvm-apic-page/refusals", test_refusals);
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMU's "apic" fields <-> KVM's LAPIC register page (see kvm-apic-page.h).
 * Register offsets are the Intel SDM's (vol. 3, "Local APIC Register
 * Address Map"); the page holds each 32-bit register at its MMIO offset,
 * in the host's (little-endian) byte order.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "kvm-apic-page.h"

#define APIC_REG_ID         0x20
#define APIC_REG_TPR        0x80
#define APIC_REG_LDR        0xd0
#define APIC_REG_DFR        0xe0
#define APIC_REG_SVR        0xf0
#define APIC_REG_ISR        0x100
#define APIC_REG_TMR        0x180
#define APIC_REG_IRR        0x200
#define APIC_REG_ESR        0x280
#define APIC_REG_ICR_LO     0x300
#define APIC_REG_ICR_HI     0x310
#define APIC_REG_LVT        0x320   /* timer; thermal, perf, LINT0, LINT1, error follow */
#define APIC_REG_TMICT      0x380
#define APIC_REG_TDCR       0x3e0

/* Bits a register may hold; the others are reserved (SDM) and KVM masks them on guest writes. */
#define APIC_SVR_VALID      0x13ffu     /* vector, enable, focus check, EOI broadcast suppression */
#define APIC_TDCR_VALID     0xbu
#define APIC_DFR_RESERVED   0x0fffffffu /* bits 0-27 read as ones */
#define APICBASE_RESERVED   0x2ffu      /* bits 0-7 and 9 (the u32 carries no bits 32+) */

/* Per LVT, in the section's order: vector, delivery mode/status, polarity, ..., mask, timer mode. */
static const uint32_t apic_lvt_valid[APIC_LVT_NB] = {
    0x000710ff,     /* timer: vector, status, mask, mode (periodic, TSC deadline) */
    0x000117ff,     /* thermal */
    0x000117ff,     /* performance counters */
    0x0001f7ff,     /* LINT0: also polarity, remote IRR, trigger */
    0x0001f7ff,     /* LINT1 */
    0x000110ff,     /* error */
};

static uint32_t apic_reg(const struct kvm_lapic_state *page, unsigned int off)
{
    uint32_t v;

    memcpy(&v, page->regs + off, sizeof(v));
    return v;
}

static void apic_set_reg(struct kvm_lapic_state *page, unsigned int off, uint32_t v)
{
    memcpy(page->regs + off, &v, sizeof(v));
}

int32_t apic_count_shift(uint32_t dc)
{
    /* TDCR bits 0, 1 and 3 form the divisor's exponent minus one; 0b111 divides by 1. */
    return (((dc & 3) | ((dc & 8) >> 1)) + 1) & 7;
}

void apic_image_from_page(APICImage *img, const struct kvm_lapic_state *page, uint64_t apicbase,
                          int64_t now_vm)
{
    memset(img, 0, sizeof(*img));
    img->apicbase = (uint32_t)apicbase;
    img->id = apic_reg(page, APIC_REG_ID) >> 24;
    img->arb_id = 0;
    img->tpr = apic_reg(page, APIC_REG_TPR) & 0xff;
    img->spurious_vec = apic_reg(page, APIC_REG_SVR);
    img->log_dest = apic_reg(page, APIC_REG_LDR) >> 24;
    img->dest_mode = apic_reg(page, APIC_REG_DFR) >> 28;
    for (int i = 0; i < 8; i++) {
        img->isr[i] = apic_reg(page, APIC_REG_ISR + 0x10 * i);
        img->tmr[i] = apic_reg(page, APIC_REG_TMR + 0x10 * i);
        img->irr[i] = apic_reg(page, APIC_REG_IRR + 0x10 * i);
    }
    for (int i = 0; i < APIC_LVT_NB; i++) {
        img->lvt[i] = apic_reg(page, APIC_REG_LVT + 0x10 * i);
    }
    img->esr = apic_reg(page, APIC_REG_ESR);
    img->icr[0] = apic_reg(page, APIC_REG_ICR_LO);
    img->icr[1] = apic_reg(page, APIC_REG_ICR_HI);
    img->divide_conf = apic_reg(page, APIC_REG_TDCR) & APIC_TDCR_VALID;
    img->count_shift = apic_count_shift(img->divide_conf);
    img->initial_count = apic_reg(page, APIC_REG_TMICT);
    /*
     * QEMU sends the VM clock at the stop as the load time, and no next
     * tick or expiry (-1): with KVM the timer lives in the kernel, which
     * restarts it from TMICT when the page is put back.
     */
    img->initial_count_load_time = now_vm;
    img->next_time = 0;
    img->timer_expiry = -1;
}

bool apic_image_check(const APICImage *img, int cpu_index, Error **errp)
{
    if (img->apicbase & APICBASE_RESERVED) {
        error_setg(errp, "apic: APIC base 0x%x sets reserved bits", img->apicbase);
        return false;
    }
    /* EXTD without ENABLE is the invalid mode: KVM refuses only guest writes of it. */
    if ((img->apicbase & (APICBASE_EXTD | APICBASE_ENABLE)) == APICBASE_EXTD) {
        error_setg(errp, "apic: APIC base 0x%x has x2APIC mode without the enable bit",
                   img->apicbase);
        return false;
    }
    if ((img->apicbase & APICBASE_EXTD) && img->id != cpu_index) {
        error_setg(errp, "apic: x2APIC ID %u is not this vCPU's (%d)", img->id, cpu_index);
        return false;
    }
    if (img->spurious_vec & ~APIC_SVR_VALID) {
        error_setg(errp, "apic: spurious vector register 0x%x sets reserved bits",
                   img->spurious_vec);
        return false;
    }
    /* Flat (0xf) or cluster (0x0): the SDM's only destination models. */
    if (img->dest_mode != 0xf && img->dest_mode != 0) {
        error_setg(errp, "apic: invalid destination model 0x%x", img->dest_mode);
        return false;
    }
    for (int i = 0; i < APIC_LVT_NB; i++) {
        if (img->lvt[i] & ~apic_lvt_valid[i]) {
            error_setg(errp, "apic: LVT %d value 0x%x sets reserved bits", i, img->lvt[i]);
            return false;
        }
    }
    if (img->divide_conf & ~APIC_TDCR_VALID) {
        error_setg(errp, "apic: divide configuration 0x%x sets reserved bits", img->divide_conf);
        return false;
    }
    if (img->count_shift != apic_count_shift(img->divide_conf)) {
        error_setg(errp, "apic: count_shift %d does not match divide configuration 0x%x",
                   img->count_shift, img->divide_conf);
        return false;
    }
    return true;
}

void apic_image_to_page(const APICImage *img, struct kvm_lapic_state *page)
{
    /*
     * In x2APIC mode KVM checks the ID against the vCPU's and computes the
     * LDR from it (legacy format), so both are written the xAPIC way.
     * arb_id, count_shift and the timer's times are not registers:
     * count_shift follows from TDCR and KVM restarts the timer from TMICT.
     */
    apic_set_reg(page, APIC_REG_ID, (uint32_t)img->id << 24);
    apic_set_reg(page, APIC_REG_TPR, img->tpr);
    apic_set_reg(page, APIC_REG_LDR, (uint32_t)img->log_dest << 24);
    apic_set_reg(page, APIC_REG_DFR, ((uint32_t)img->dest_mode << 28) | APIC_DFR_RESERVED);
    apic_set_reg(page, APIC_REG_SVR, img->spurious_vec);
    for (int i = 0; i < 8; i++) {
        apic_set_reg(page, APIC_REG_ISR + 0x10 * i, img->isr[i]);
        apic_set_reg(page, APIC_REG_TMR + 0x10 * i, img->tmr[i]);
        apic_set_reg(page, APIC_REG_IRR + 0x10 * i, img->irr[i]);
    }
    for (int i = 0; i < APIC_LVT_NB; i++) {
        apic_set_reg(page, APIC_REG_LVT + 0x10 * i, img->lvt[i]);
    }
    apic_set_reg(page, APIC_REG_ESR, img->esr);
    apic_set_reg(page, APIC_REG_ICR_LO, img->icr[0]);
    apic_set_reg(page, APIC_REG_ICR_HI, img->icr[1]);
    apic_set_reg(page, APIC_REG_TMICT, img->initial_count);
    apic_set_reg(page, APIC_REG_TDCR, img->divide_conf);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMU's "apic" section fields <-> KVM's LAPIC register page, with no KVM
 * calls: pure functions, any thread, no shared state (kvm-apic-state.c does
 * the ioctls; tests/unit/test-kvm-apic-page.c drives these alone).
 *
 * Saving: apic_image_from_page(&img, page, apicbase) fills every field.
 * Loading: apic_image_check() on the incoming image before any use, then
 * apic_image_to_page() over the page KVM has now, so the registers QEMU
 * does not carry (CMCI LVT, current count, ...) keep KVM's values.
 *
 * The page is in KVM's legacy x2APIC format (KVM_CAP_X2APIC_API is never
 * enabled here): the ID register holds the APIC ID in bits 24-31 in xAPIC
 * and in x2APIC mode alike, and KVM derives the x2APIC LDR from the ID.
 */
#ifndef ACCEL_KVM_APIC_PAGE_H
#define ACCEL_KVM_APIC_PAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/kvm.h>
#include "qemu/typedefs.h"

#define APIC_LVT_NB                 6   /* timer, thermal, perf, LINT0, LINT1, error */
#define APIC_DEFAULT_BASE           0xfee00000u

/* IA32_APIC_BASE (MSR 0x1b) bits. */
#define APICBASE_BSP                (1u << 8)
#define APICBASE_EXTD               (1u << 10)  /* x2APIC mode (with ENABLE) */
#define APICBASE_ENABLE             (1u << 11)
#define APICBASE_BASE_MASK          0xfffff000u

/* The "apic" v3 section, field for field in QEMU's order and names. */
typedef struct APICImage {
    uint32_t apicbase;
    uint8_t id;
    uint8_t arb_id;                 /* P6-era arbitration ID: KVM has none, 0 */
    uint8_t tpr;
    uint32_t spurious_vec;
    uint8_t log_dest;
    uint8_t dest_mode;
    uint32_t isr[8];
    uint32_t tmr[8];
    uint32_t irr[8];
    uint32_t lvt[APIC_LVT_NB];
    uint32_t esr;
    uint32_t icr[2];                /* low word (0x300), high word (0x310) */
    uint32_t divide_conf;
    int32_t count_shift;            /* derived from divide_conf */
    uint32_t initial_count;
    int64_t initial_count_load_time;    /* VM clock ns */
    int64_t next_time;
    int64_t timer_expiry;
} APICImage;

/* count_shift as the divide configuration @dc implies it (0 = divide by 2 ... 7 = by 1). */
int32_t apic_count_shift(uint32_t dc);

/*
 * Fills @img from @page and the APIC base MSR. The timer's times are
 * QEMU's: load time @now_vm (the VM clock at the stop), no next tick,
 * no expiry (KVM keeps its timer itself).
 */
void apic_image_from_page(APICImage *img, const struct kvm_lapic_state *page, uint64_t apicbase,
                          int64_t now_vm);

/*
 * Refuses an image KVM would take on trust or that this vCPU cannot be in:
 * reserved bits of the APIC base, SVR, LVTs and divide configuration, a
 * count_shift that contradicts divide_conf, and in x2APIC mode an ID that
 * is not @cpu_index (the x2APIC ID is read-only). Messages name "apic".
 */
bool apic_image_check(const APICImage *img, int cpu_index, Error **errp);

/* Writes the carried registers of a checked @img into @page; the rest of @page stays. */
void apic_image_to_page(const APICImage *img, struct kvm_lapic_state *page);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The power button: QEMU microvm's ACPI generic event device (with ACPI,
 * QEMU's default; emulated by ours too). Its event selector is a 32-bit
 * register at 0xfea00000 that a read returns and clears; bit 1 is the
 * power button; every event is an edge on GSI 9. The hardware-reduced
 * ACPI registers are bytes at 0xfea00200: sleep control (SLP_TYP 5 with
 * SLP_EN powers off), sleep status, reset (0x42). A guest with ACPI tables
 * learns this from the DSDT and FADT; this firmware reads no tables, so
 * the addresses are QEMU's fixed ones (docs/devel/workload-firmware.md).
 *
 * CPL3 runs with interrupts off: CPU 0 takes the GED interrupt when it
 * naps (svc_sleep) or prints a line (the print gate naps once when the
 * GED's vector waits in the LAPIC's IRR), so every mode notices within a
 * report period at most.
 */
#include "workload.h"

#define GED_SEL         0xfea00000ULL
#define GED_SLEEP_CTL   0xfea00200ULL
#define GED_SLEEP_STS   0xfea00201ULL
#define GED_RESET       0xfea00202ULL
#define GED_GSI         9
#define GED_EVT_PWR_DOWN 0x2
#define GED_RESET_VALUE 0x42
#define SLP_S5_EN       (5 << 2 | 0x20)         /* SLP_TYP 5 (QEMU's \_S5), SLP_EN */
#define IOAPIC_BASE     0xfec00000ULL           /* KVM's: GSIs 0-23 */

/* CPL0 setup writes it before the interrupt is routed; the handler reads it. */
static bool ged_present;

static inline uint8_t mmio_read8(uint64_t a)
{
    return *(volatile uint8_t *)a;
}

static inline void mmio_write8(uint64_t a, uint8_t v)
{
    *(volatile uint8_t *)a = v;
}

/*
 * Whether a virtio_mmio.device= word (acpi=off: QEMU and ours name the
 * transports so) puts a transport on @gsi: "SIZE@ADDR:IRQ[:ID]".
 */
static bool cmdline_gsi_taken(const char *s, uint64_t gsi)
{
    static const char key[] = "virtio_mmio.device=";

    for (size_t i = 0; s && s[i] && i < 4096; i++) {
        size_t k = 0, j;
        uint64_t v = 0;

        if (i && s[i - 1] != ' ') {
            continue;
        }
        while (key[k] && s[i + k] == key[k]) {
            k++;
        }
        if (key[k]) {
            continue;
        }
        for (j = i + k; s[j] && s[j] != ' ' && s[j] != '@'; j++) {
        }
        for (; s[j] && s[j] != ' ' && s[j] != ':'; j++) {
        }
        if (s[j] != ':') {
            continue;
        }
        for (j++; s[j] >= '0' && s[j] <= '9'; j++) {
            v = v * 10 + (uint64_t)(s[j] - '0');
        }
        if (v == gsi) {
            return true;
        }
    }
    return false;
}

/* CPL0, interrupts off: a line straight to the UART (the handler cannot take the print lock). */
static void cpl0_line(const char *s)
{
    struct line l = { 0 };

    ln_str(&l, s);
    l.b[l.n++] = '\n';
    uart_write(l.b, l.n);
}

/*
 * CPL0, boot: route GSI 9 to CPU 0 if the GED is there. Its sleep status
 * reads 0 (no wake status); no device there reads all-ones on ours
 * (acpi=off). QEMU with acpi=off reads 0 there too, so a GSI 9 that the
 * command line gives a transport is left alone; otherwise nothing raises
 * it and routing it is harmless. ged_reset=1: reset through the GED now.
 */
void power_setup(const struct hvm_start_info *si)
{
    const char *cmdline = (const char *)si->cmdline_paddr;
    volatile uint32_t *sel = (volatile uint32_t *)IOAPIC_BASE;
    volatile uint32_t *win = (volatile uint32_t *)(IOAPIC_BASE + 0x10);

    if (mmio_read8(GED_SLEEP_STS) == 0xff || cmdline_gsi_taken(cmdline, GED_GSI)) {
        return;
    }
    ged_present = true;
    *sel = 0x11 + 2 * GED_GSI;
    *win = 0;                                   /* destination: APIC ID 0 */
    *sel = 0x10 + 2 * GED_GSI;
    *win = GED_IRQ_VECTOR;                      /* fixed, physical, edge, high, unmasked */
    for (size_t i = 0; cmdline && cmdline[i] && i < 4096; i++) {
        if ((i == 0 || cmdline[i - 1] == ' ') && mem_eq(cmdline + i, 11, "ged_reset=1") &&
            (cmdline[i + 11] == ' ' || !cmdline[i + 11])) {
            cpl0_line("RESET ged");
            mmio_write8(GED_RESET, GED_RESET_VALUE);
            for (;;) {
                asm volatile("cli; hlt");
            }
        }
    }
}

/*
 * CPL0, interrupts off (ged_irq_entry, which EOIs the LAPIC after): read
 * and so acknowledge the events; the power button powers off through the
 * sleep control register. The vCPU stops soon after the write; until
 * then, and under -no-shutdown, it halts here.
 */
void ged_irq(void)
{
    uint32_t events;

    if (!ged_present) {
        return;
    }
    events = *(volatile uint32_t *)GED_SEL;
    if (events == 0xffffffff || !(events & GED_EVT_PWR_DOWN)) {
        return;
    }
    cpl0_line("POWER BUTTON");
    mmio_write8(GED_SLEEP_CTL, SLP_S5_EN);
    for (;;) {
        asm volatile("cli; hlt");
    }
}

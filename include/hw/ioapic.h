/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A userspace I/O APIC (82093AA register model, version 0x20, 24 pins)
 * that delivers through MSI messages: QEMU's microvm has a second one with
 * ACPI ("ioapic2", at 0xfec10000, GSIs 24-47), beside KVM's in-kernel
 * IOAPIC, and its virtio-mmio transports interrupt through it.
 *
 * How to use it:
 *   IOAPIC *io = ioapic_new(deliver, opaque);     deliver builds nothing: it
 *                                                 gets the MSI address/data
 *   ioapic_mmio_read/ioapic_mmio_write            the 4 KiB register window
 *   ioapic_set_irq(io, pin, level)                a device's line
 *   ioapic_get_regs/ioapic_set_regs               migration (checked)
 *   ioapic_reset, ioapic_free
 *
 * The model is pure (no KVM, no guest memory): whoever embeds it sends
 * each message it is given (hw/microvm-ioapic2.c: KVM_SIGNAL_MSI).
 *
 * Thread contract: every function takes the IOAPIC's own lock, so device
 * threads may call ioapic_set_irq while vCPUs access the registers. The
 * deliver hook runs with that lock held, in the order the state decided
 * the deliveries; it must not call back into this IOAPIC. A caller that
 * holds a lock of its own while calling ioapic_set_irq (a transport's
 * irq_lock) orders it before the IOAPIC's.
 */
#ifndef HW_IOAPIC_H
#define HW_IOAPIC_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"

#define IOAPIC_NUM_PINS         24
#define IOAPIC_VERSION          0x20        /* what QEMU's `info pic` shows for both */
#define IOAPIC_WINDOW_SIZE      0x1000

/* MMIO offsets in the window. */
#define IOAPIC_IOREGSEL         0x00
#define IOAPIC_IOWIN            0x10
#define IOAPIC_EOI              0x40        /* version 0x20: write a vector */

/* Redirection entry bits. */
#define IOAPIC_RTE_VECTOR       0xffULL
#define IOAPIC_RTE_DELMODE_SHIFT 8
#define IOAPIC_RTE_DESTMODE     (1ULL << 11)    /* 1: logical */
#define IOAPIC_RTE_DELIVS       (1ULL << 12)    /* read-only; never set here */
#define IOAPIC_RTE_POLARITY     (1ULL << 13)
#define IOAPIC_RTE_REMOTE_IRR   (1ULL << 14)    /* read-only */
#define IOAPIC_RTE_LEVEL        (1ULL << 15)
#define IOAPIC_RTE_MASKED       (1ULL << 16)
#define IOAPIC_RTE_DEST_SHIFT   56

typedef struct IOAPIC IOAPIC;

/*
 * The registers QEMU's "ioapic" section carries. irr: bit n set while a
 * level-triggered pin n's line is high, or while an edge on an
 * edge-triggered pin n waits for delivery (masked).
 */
typedef struct IOAPICRegs {
    uint8_t id;
    uint8_t ioregsel;
    uint32_t irr;
    uint64_t ioredtbl[IOAPIC_NUM_PINS];
} IOAPICRegs;

/* One MSI message: @addr in the 0xfee00000 window, @data as the LAPIC takes it. */
typedef void (*IOAPICDeliverFn)(void *opaque, uint64_t addr, uint32_t data);

IOAPIC *ioapic_new(IOAPICDeliverFn deliver, void *opaque);
void ioapic_free(IOAPIC *io);
/* Power-on state: id 0, every pin masked, edge, nothing pending. Lines stay. */
void ioapic_reset(IOAPIC *io);

/* The register window (offset from its base; @size 1, 2, 4 or 8). vCPU threads. */
uint64_t ioapic_mmio_read(IOAPIC *io, uint64_t off, unsigned size);
void ioapic_mmio_write(IOAPIC *io, uint64_t off, uint64_t val, unsigned size);

/* A device drives @pin (< IOAPIC_NUM_PINS; others are ignored). Any thread. */
void ioapic_set_irq(IOAPIC *io, unsigned pin, bool level);

void ioapic_get_regs(IOAPIC *io, IOAPICRegs *regs);
/*
 * Takes @regs after checking them (a bad id or an irr bit beyond the pins
 * fails with @errp and changes nothing). Delivers nothing: the lines'
 * owners drive them again after a load (ioapic_set_irq), which delivers
 * what is due.
 */
bool ioapic_set_regs(IOAPIC *io, const IOAPICRegs *regs, Error **errp);

/* The MSI message for a redirection entry (pure; for tests and the deliver hook's readers). */
void ioapic_entry_msi(uint64_t entry, uint64_t *addr, uint32_t *data);

#endif

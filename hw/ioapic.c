/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A userspace I/O APIC delivering MSI messages (include/hw/ioapic.h).
 *
 * Delivery rules (the invariant the unit test checks after every step:
 * no unmasked pin is left with work due and nothing delivered):
 * - A level-triggered pin delivers when its line is high, it is unmasked
 *   and its Remote IRR is clear; delivering sets Remote IRR, which blocks
 *   the pin until an EOI clears it (then a line still high delivers again).
 * - An edge-triggered pin delivers on a rising edge, or at unmasking if
 *   the edge came while it was masked (kept in irr until then).
 *
 * The EOI: KVM's in-kernel LAPIC tells only KVM's own IOAPIC of an EOI, so
 * an EOI broadcast never reaches this one. Two things stand in for it:
 * - The message goes out edge-triggered (MSI data bit 15 clear), so the
 *   guest's LAPIC does not mark the vector level-triggered (TMR). Linux
 *   then EOIs the IOAPIC itself through the EOI register (version 0x20)
 *   after its LAPIC EOI, as it does for any level interrupt whose TMR bit
 *   is clear.
 * - A low line clears Remote IRR: the device was serviced (a virtio
 *   driver acknowledges InterruptStatus before its EOI), so a guest that
 *   EOIs only its LAPIC still gets the next interrupt. A line that never
 *   falls and a guest that never writes the EOI register would block the
 *   pin, as on hardware whose EOI broadcast was lost.
 * An entry with a reserved delivery mode (3, 6) or ExtINT (7, which only
 * an 8259 behind the IOAPIC could answer) delivers nothing: KVM has no
 * such MSI. Its edge or line stays in irr, as for a masked pin.
 * Polarity is stored and sent back but not applied: the devices wired here
 * drive active-high lines, as the DSDT QEMU builds says.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/ioapic.h"

#define IOAPIC_REG_ID           0x00
#define IOAPIC_REG_VER          0x01
#define IOAPIC_REG_ARB          0x02
#define IOAPIC_REG_REDTBL       0x10
#define IOAPIC_ID_MAX           0xf
/* The bits of an entry's low word a guest write leaves alone. */
#define IOAPIC_RTE_RO_BITS      (IOAPIC_RTE_DELIVS | IOAPIC_RTE_REMOTE_IRR)
/* Delivery modes an MSI can carry: fixed, lowest priority, SMI, NMI, INIT. */
#define IOAPIC_DELIVERABLE      (1u << 0 | 1u << 1 | 1u << 2 | 1u << 4 | 1u << 5)

struct IOAPIC {
    IOAPICDeliverFn deliver;    /* immutable */
    void *opaque;               /* immutable */
    GMutex lock;
    IOAPICRegs regs;            /* lock */
    uint32_t lines;             /* lock: bit n set while pin n's line is high (not migrated) */
};

void ioapic_entry_msi(uint64_t entry, uint64_t *addr, uint32_t *data)
{
    uint32_t dest = (uint32_t)(entry >> IOAPIC_RTE_DEST_SHIFT);

    *addr = 0xfee00000ULL | ((uint64_t)dest << 12) | (entry & IOAPIC_RTE_DESTMODE ? 1 << 2 : 0);
    /* Vector and delivery mode; the trigger stays edge (see the file's comment). */
    *data = (uint32_t)(entry & (IOAPIC_RTE_VECTOR | 7ULL << IOAPIC_RTE_DELMODE_SHIFT));
}

/* Delivers what pin @pin owes, if anything. Lock held. */
static void ioapic_service_pin(IOAPIC *io, unsigned pin)
{
    uint64_t *e = &io->regs.ioredtbl[pin];
    uint32_t bit = 1u << pin;
    uint64_t addr;
    uint32_t data;

    if ((*e & IOAPIC_RTE_MASKED) || !(io->regs.irr & bit) ||
        !(IOAPIC_DELIVERABLE & (1u << ((*e >> IOAPIC_RTE_DELMODE_SHIFT) & 7)))) {
        return;
    }
    if (*e & IOAPIC_RTE_LEVEL) {
        if (*e & IOAPIC_RTE_REMOTE_IRR) {
            return;
        }
        *e |= IOAPIC_RTE_REMOTE_IRR;
    } else {
        io->regs.irr &= ~bit;
    }
    ioapic_entry_msi(*e, &addr, &data);
    io->deliver(io->opaque, addr, data);
}

static void ioapic_eoi_locked(IOAPIC *io, uint8_t vector)
{
    for (unsigned pin = 0; pin < IOAPIC_NUM_PINS; pin++) {
        uint64_t *e = &io->regs.ioredtbl[pin];

        if ((*e & IOAPIC_RTE_VECTOR) == vector && (*e & IOAPIC_RTE_REMOTE_IRR)) {
            *e &= ~IOAPIC_RTE_REMOTE_IRR;
            ioapic_service_pin(io, pin);
        }
    }
}

IOAPIC *ioapic_new(IOAPICDeliverFn deliver, void *opaque)
{
    IOAPIC *io = g_new0(IOAPIC, 1);

    io->deliver = deliver;
    io->opaque = opaque;
    g_mutex_init(&io->lock);
    ioapic_reset(io);
    return io;
}

void ioapic_free(IOAPIC *io)
{
    if (io) {
        g_mutex_clear(&io->lock);
        g_free(io);
    }
}

void ioapic_reset(IOAPIC *io)
{
    g_mutex_lock(&io->lock);
    memset(&io->regs, 0, sizeof(io->regs));
    for (unsigned pin = 0; pin < IOAPIC_NUM_PINS; pin++) {
        io->regs.ioredtbl[pin] = IOAPIC_RTE_MASKED;
    }
    g_mutex_unlock(&io->lock);
}

static uint32_t ioapic_reg_read(IOAPIC *io)
{
    uint8_t sel = io->regs.ioregsel;

    switch (sel) {
    case IOAPIC_REG_ID:
    case IOAPIC_REG_ARB:
        return (uint32_t)io->regs.id << 24;
    case IOAPIC_REG_VER:
        return (IOAPIC_NUM_PINS - 1) << 16 | IOAPIC_VERSION;
    default:
        if (sel >= IOAPIC_REG_REDTBL && sel < IOAPIC_REG_REDTBL + 2 * IOAPIC_NUM_PINS) {
            uint64_t e = io->regs.ioredtbl[(sel - IOAPIC_REG_REDTBL) / 2];

            return (uint32_t)(sel & 1 ? e >> 32 : e);
        }
        return 0;
    }
}

static void ioapic_reg_write(IOAPIC *io, uint32_t val)
{
    uint8_t sel = io->regs.ioregsel;
    bool was_level;
    unsigned pin;
    uint64_t *e;

    if (sel == IOAPIC_REG_ID) {
        io->regs.id = (val >> 24) & IOAPIC_ID_MAX;
        return;
    }
    if (sel < IOAPIC_REG_REDTBL || sel >= IOAPIC_REG_REDTBL + 2 * IOAPIC_NUM_PINS) {
        return;                 /* VER, ARB and the rest are read-only */
    }
    pin = (sel - IOAPIC_REG_REDTBL) / 2;
    e = &io->regs.ioredtbl[pin];
    if (sel & 1) {
        *e = (*e & 0xffffffffULL) | (uint64_t)val << 32;
        return;                 /* the destination: nothing to deliver anew */
    }
    was_level = *e & IOAPIC_RTE_LEVEL;
    *e = (*e & (0xffffffff00000000ULL | IOAPIC_RTE_RO_BITS)) | (val & ~IOAPIC_RTE_RO_BITS);
    if (!(*e & IOAPIC_RTE_LEVEL)) {
        /* Remote IRR means nothing for an edge pin; Linux's old-IOAPIC EOI relies on this. */
        *e &= ~IOAPIC_RTE_REMOTE_IRR;
        /* An edge pin's irr is a waiting edge; a level pin's was its line, no edge. */
        if (was_level) {
            io->regs.irr &= ~(1u << pin);
        }
    } else if (io->lines & (1u << pin)) {
        io->regs.irr |= 1u << pin;      /* a level pin's irr is its line */
    } else {
        io->regs.irr &= ~(1u << pin);
    }
    ioapic_service_pin(io, pin);
}

uint64_t ioapic_mmio_read(IOAPIC *io, uint64_t off, unsigned size)
{
    uint64_t val = 0;

    g_mutex_lock(&io->lock);
    if (off == IOAPIC_IOREGSEL) {
        val = io->regs.ioregsel;
    } else if (off == IOAPIC_IOWIN) {
        val = ioapic_reg_read(io);
    }
    g_mutex_unlock(&io->lock);
    return size >= 8 ? val : val & ((1ULL << (size * 8)) - 1);
}

void ioapic_mmio_write(IOAPIC *io, uint64_t off, uint64_t val, unsigned size)
{
    g_mutex_lock(&io->lock);
    if (off == IOAPIC_IOREGSEL) {
        io->regs.ioregsel = (uint8_t)val;
    } else if (off == IOAPIC_IOWIN && size >= 4) {
        ioapic_reg_write(io, (uint32_t)val);
    } else if (off == IOAPIC_EOI) {
        ioapic_eoi_locked(io, (uint8_t)val);
    }
    g_mutex_unlock(&io->lock);
}

void ioapic_set_irq(IOAPIC *io, unsigned pin, bool level)
{
    uint32_t bit = 1u << pin;
    bool rising;

    if (pin >= IOAPIC_NUM_PINS) {
        return;
    }
    g_mutex_lock(&io->lock);
    rising = level && !(io->lines & bit);
    io->lines = level ? io->lines | bit : io->lines & ~bit;
    if (io->regs.ioredtbl[pin] & IOAPIC_RTE_LEVEL) {
        if (level) {
            io->regs.irr |= bit;
        } else {
            io->regs.irr &= ~bit;
            /* Low: the device was serviced; stands in for the EOI we never see (file comment). */
            io->regs.ioredtbl[pin] &= ~IOAPIC_RTE_REMOTE_IRR;
        }
    } else if (rising) {
        io->regs.irr |= bit;
    }
    ioapic_service_pin(io, pin);
    g_mutex_unlock(&io->lock);
}

void ioapic_get_regs(IOAPIC *io, IOAPICRegs *regs)
{
    g_mutex_lock(&io->lock);
    *regs = io->regs;
    g_mutex_unlock(&io->lock);
}

bool ioapic_set_regs(IOAPIC *io, const IOAPICRegs *regs, Error **errp)
{
    if (regs->id > IOAPIC_ID_MAX || regs->irr >> IOAPIC_NUM_PINS) {
        error_setg(errp, "invalid IOAPIC state (id %u, irr 0x%x)", regs->id, regs->irr);
        return false;
    }
    g_mutex_lock(&io->lock);
    io->regs = *regs;
    /*
     * The lines are the devices' now, not the source's: they drive them
     * again after the load. Until then a level pin's irr says what the
     * source's line was, which is what the stream means by it.
     */
    io->lines = 0;
    for (unsigned pin = 0; pin < IOAPIC_NUM_PINS; pin++) {
        if (regs->ioredtbl[pin] & IOAPIC_RTE_LEVEL) {
            io->lines |= regs->irr & (1u << pin);
        }
    }
    g_mutex_unlock(&io->lock);
    return true;
}

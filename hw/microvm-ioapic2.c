/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMU's microvm's second IOAPIC, emulated (include/hw/microvm-ioapic2.h).
 * The model is hw/ioapic.c; this file wires it to the machine: its MMIO
 * window, KVM_SIGNAL_MSI for its messages, system_reset, and the section
 * QEMU 7.2 and 10.0 send for it, "ioapic" 1 v3 (the same layout as KVM's
 * "ioapic" 0: id, ioregsel, 8 unused bytes, irr, 24 redirection entries).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/ioapic.h"
#include "hw/microvm-ioapic2.h"
#include "migration/vmstate.h"
#include "system/ioport.h"
#include "system/kvm.h"
#include "system/runstate.h"

struct MicrovmIoapic2 {
    IOAPIC *io;                 /* immutable after create; locks itself */
    IOAPICRegs img;             /* BQL, VM stopped: the section's image, pre_save/load only */
    bool msi_failed;            /* under the IOAPIC's lock (the deliver hook): warned once */
};

/* The IOAPIC's deliver hook: its lock held, any thread. */
static void microvm_ioapic2_deliver(void *opaque, uint64_t addr, uint32_t data)
{
    MicrovmIoapic2 *m = opaque;
    int ret = kvm_signal_msi(kvm_state, addr, data);

    /* 0 is a message no LAPIC accepted (a guest's bad destination): its own doing. */
    if (ret < 0 && !m->msi_failed) {
        m->msi_failed = true;
        warn_report("ioapic2: KVM_SIGNAL_MSI (address 0x%" PRIx64 ", data 0x%x) failed: %s",
                    addr, data, strerror(-ret));
    }
}

static uint64_t microvm_ioapic2_read(void *opaque, uint64_t addr, unsigned size)
{
    return ioapic_mmio_read(((MicrovmIoapic2 *)opaque)->io, addr, size);
}

static void microvm_ioapic2_write(void *opaque, uint64_t addr, uint64_t val, unsigned size)
{
    ioapic_mmio_write(((MicrovmIoapic2 *)opaque)->io, addr, val, size);
}

static const IORangeOps microvm_ioapic2_ops = {
    .read = microvm_ioapic2_read,
    .write = microvm_ioapic2_write,
};

void microvm_ioapic2_set_irq(void *opaque, unsigned int pin, bool level)
{
    ioapic_set_irq(((MicrovmIoapic2 *)opaque)->io, pin, level);
}

static void microvm_ioapic2_reset(void *opaque)
{
    ioapic_reset(((MicrovmIoapic2 *)opaque)->io);
}

MicrovmIoapic2 *microvm_ioapic2_create(Error **errp)
{
    MicrovmIoapic2 *m = g_new0(MicrovmIoapic2, 1);

    m->io = ioapic_new(microvm_ioapic2_deliver, m);
    if (io_range_add(mmio_table, MICROVM_IOAPIC2_BASE, IOAPIC_WINDOW_SIZE, &microvm_ioapic2_ops,
                     m, "ioapic2") < 0) {
        error_setg(errp, "MMIO range 0x%" PRIx64 "-0x%" PRIx64 " is already in use",
                   (uint64_t)MICROVM_IOAPIC2_BASE,
                   (uint64_t)MICROVM_IOAPIC2_BASE + IOAPIC_WINDOW_SIZE - 1);
        ioapic_free(m->io);
        g_free(m);
        return NULL;
    }
    qemu_register_reset(microvm_ioapic2_reset, m);
    return m;
}

/* ---- "ioapic" 1 ---- */

static bool microvm_ioapic2_pre_save(void *opaque, Error **errp)
{
    MicrovmIoapic2 *m = container_of((IOAPICRegs *)opaque, MicrovmIoapic2, img);

    ioapic_get_regs(m->io, &m->img);
    return true;
}

static bool microvm_ioapic2_post_load(void *opaque, int version_id, Error **errp)
{
    MicrovmIoapic2 *m = container_of((IOAPICRegs *)opaque, MicrovmIoapic2, img);

    /* Checked there; the transports' sections, loaded after, drive the lines again. */
    return ioapic_set_regs(m->io, &m->img, errp);
}

static const VMStateDescription vmstate_microvm_ioapic2 = {
    .name = "ioapic",
    .size = sizeof(IOAPICRegs),
    .version_id = 3,
    .minimum_version_id = 3,
    .pre_save = microvm_ioapic2_pre_save,
    .post_load = microvm_ioapic2_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(id, IOAPICRegs),
        VMSTATE_UINT8(ioregsel, IOAPICRegs),
        VMSTATE_UNUSED(8),
        VMSTATE_UINT32(irr, IOAPICRegs),
        VMSTATE_UINT64_ARRAY(ioredtbl, IOAPICRegs, IOAPIC_NUM_PINS),
        VMSTATE_END_OF_LIST()
    },
};

void microvm_ioapic2_register(MicrovmIoapic2 *m)
{
    vmstate_register("ioapic", 1, &vmstate_microvm_ioapic2, &m->img);
}

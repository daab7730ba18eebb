/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMU's microvm ACPI generic event device, emulated (include/hw/acpi-ged.h).
 * What a guest sees was learned from QEMU 7.2 as a guest and a monitor see
 * it (its ACPI tables, info mtree, reads through xp): the DSDT's GED
 * device reads the selector as one DWord in its _EVT method and notifies
 * the power button (PNP0C0C) when bit 1 is set; _CRS gives GSI 9,
 * edge-triggered, active high; the FADT (hardware-reduced) names the three
 * byte-wide registers and the reset value 0x42; the DSDT's \_S5 package
 * gives SLP_TYP 5. QEMU takes only 4-byte accesses to the selector, and
 * keeps a raised event across system_reset (a guest reads it after the
 * reboot); so does this one.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/acpi-ged.h"
#include "migration/vmstate.h"
#include "system/ioport.h"
#include "system/kvm.h"
#include "system/runstate.h"

#define GED_SEL_SIZE        4
#define GED_REGS_SIZE       3
#define GED_REG_SLEEP_CTL   0
#define GED_REG_SLEEP_STS   1
#define GED_REG_RESET       2
#define GED_RESET_VALUE     0x42
#define SLP_TYP(v)          (((v) >> 2) & 7)    /* ACPI's sleep control register */
#define SLP_EN              0x20
#define SLP_TYP_S5          5                   /* QEMU's \_S5 package */

/* The section's image: QEMU's "acpi-ged" fields, live (no staging). */
typedef struct AcpiGedRegs {
    /* BQL: events raised and not yet read; set by a powerdown, cleared by the guest's read. */
    uint32_t sel;
    /* BQL: QEMU's memory-hotplug selector; ours has no memory hotplug: carried, unused. */
    uint32_t memhp_selector;
} AcpiGedRegs;

struct AcpiGed {
    AcpiGedRegs regs;
    bool irq_failed;            /* BQL: KVM_IRQ_LINE failed, warned once */
};

/* An edge on the GSI, as QEMU's GED pulses its line. BQL. */
static void acpi_ged_pulse(AcpiGed *g)
{
    int ret = kvm_set_irq(kvm_state, ACPI_GED_GSI, 1);

    if (ret >= 0) {
        ret = kvm_set_irq(kvm_state, ACPI_GED_GSI, 0);
    }
    if (ret < 0 && !g->irq_failed) {
        g->irq_failed = true;
        warn_report("acpi-ged: KVM_IRQ_LINE on GSI %d failed: %s", ACPI_GED_GSI,
                    strerror(-ret));
    }
}

/* system_powerdown, with the BQL: the power button. */
static void acpi_ged_powerdown(void *opaque)
{
    AcpiGed *g = opaque;

    g->regs.sel |= ACPI_GED_EVT_PWR_DOWN;
    acpi_ged_pulse(g);
}

static uint64_t acpi_ged_sel_read(void *opaque, uint64_t addr, unsigned size)
{
    AcpiGed *g = opaque;
    uint32_t v;

    /* QEMU refuses other accesses; they read as an empty bus does here and clear nothing. */
    if (addr != 0 || size != GED_SEL_SIZE) {
        return ~0ULL;
    }
    v = g->regs.sel;
    g->regs.sel = 0;
    return v;
}

static void acpi_ged_sel_write(void *opaque, uint64_t addr, uint64_t val, unsigned size)
{
    /* Read-only: the guest acknowledges by reading. */
}

static const IORangeOps acpi_ged_sel_ops = {
    .read = acpi_ged_sel_read,
    .write = acpi_ged_sel_write,
};

static uint64_t acpi_ged_regs_read(void *opaque, uint64_t addr, unsigned size)
{
    /* QEMU 7.2 reads 0 from all three (no wake status: the guest never sleeps). */
    return 0;
}

static void acpi_ged_regs_write(void *opaque, uint64_t addr, uint64_t val, unsigned size)
{
    switch (addr) {
    case GED_REG_SLEEP_CTL:
        /* S5 only: QEMU's tables offer no other sleep state. */
        if ((val & SLP_EN) && SLP_TYP(val) == SLP_TYP_S5) {
            qemu_system_shutdown_request(SHUTDOWN_CAUSE_GUEST_SHUTDOWN);
        }
        break;
    case GED_REG_RESET:
        if ((uint8_t)val == GED_RESET_VALUE) {
            qemu_system_reset_request(SHUTDOWN_CAUSE_GUEST_RESET);
        }
        break;
    default:
        break;              /* sleep status: no wake status to clear */
    }
}

static const IORangeOps acpi_ged_regs_ops = {
    .read = acpi_ged_regs_read,
    .write = acpi_ged_regs_write,
};

AcpiGed *acpi_ged_create(Error **errp)
{
    AcpiGed *g = g_new0(AcpiGed, 1);

    if (io_range_add(mmio_table, ACPI_GED_BASE, GED_SEL_SIZE, &acpi_ged_sel_ops, g,
                     "acpi-ged") < 0 ||
        io_range_add(mmio_table, ACPI_GED_REGS_BASE, GED_REGS_SIZE, &acpi_ged_regs_ops, g,
                     "acpi-ged-regs") < 0) {
        error_setg(errp, "acpi-ged: MMIO at 0x%" PRIx64 " or 0x%" PRIx64 " is already in use",
                   (uint64_t)ACPI_GED_BASE, (uint64_t)ACPI_GED_REGS_BASE);
        g_free(g);
        return NULL;
    }
    qemu_register_powerdown(acpi_ged_powerdown, g);
    return g;
}

/* ---- "acpi-ged" v1: QEMU's layout (learned from its vmdesc) ---- */

static const VMStateDescription vmstate_ged_state = {
    .name = "acpi-ged-state",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(sel, AcpiGedRegs),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_memhp_state = {
    .name = "memory hotplug state",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        { .name = "selector", .type = VMS_UINT32, .size = sizeof(uint32_t),
          .offset = offsetof(AcpiGedRegs, memhp_selector) },
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_ged_memhp = {
    .name = "acpi-ged/memhp",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        /* One struct over the same AcpiGedRegs: QEMU nests the selector in a struct. */
        { .name = "memhp_state", .type = VMS_STRUCT, .offset = 0, .size = sizeof(AcpiGedRegs),
          .vmsd = &vmstate_memhp_state },
        VMSTATE_END_OF_LIST()
    },
};

/*
 * A raised, unread event (sel) moves with the guest: the edge itself was
 * delivered to the IOAPIC before the stop, and its state moves in "ioapic".
 */
static const VMStateDescription vmstate_ged = {
    .name = "acpi-ged",
    .size = sizeof(AcpiGedRegs),
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        { .name = "ged_state", .type = VMS_STRUCT, .offset = 0, .size = sizeof(AcpiGedRegs),
          .vmsd = &vmstate_ged_state },
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription *const[]) {
        &vmstate_ged_memhp,
        NULL
    },
};

void acpi_ged_register(AcpiGed *g)
{
    vmstate_register("acpi-ged", 0, &vmstate_ged, &g->regs);
}

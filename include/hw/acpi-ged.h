/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMU's microvm ACPI generic event device (with ACPI, QEMU's default),
 * emulated at QEMU's addresses: the event selector at 0xfea00000 (one
 * 32-bit register; a read returns the events raised since the last read
 * and clears them), its interrupt on GSI 9 (an edge per event), and the
 * hardware-reduced ACPI registers at 0xfea00200: sleep control (writing
 * SLP_EN with SLP_TYP 5, S5, powers off), sleep status, reset (0x42
 * resets). How these were learned: docs/devel/qemu-interop.md.
 *
 * How to use it: acpi_ged_create at machine init (after the in-kernel
 * irqchip), acpi_ged_register where QEMU sends "acpi-ged" (after
 * "kvmclock"). The power button is the run-state layer's powerdown
 * request (system_powerdown), which reaches the device through the handler
 * it registers. Everything here runs with the BQL (MMIO exits take it).
 */
#ifndef HW_ACPI_GED_H
#define HW_ACPI_GED_H

#include <stdbool.h>
#include "qemu/typedefs.h"

#define ACPI_GED_BASE           0xfea00000ULL   /* the event selector, 4 bytes */
#define ACPI_GED_REGS_BASE      0xfea00200ULL   /* sleep control, sleep status, reset */
#define ACPI_GED_GSI            9
#define ACPI_GED_EVT_PWR_DOWN   0x2             /* the selector's power-button bit */

typedef struct AcpiGed AcpiGed;

/* Maps both windows and registers the powerdown handler. */
AcpiGed *acpi_ged_create(Error **errp);
/* The "acpi-ged" section, QEMU's layout (v1, with the memhp subsection). */
void acpi_ged_register(AcpiGed *g);

#endif

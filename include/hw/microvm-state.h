/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What QEMU's microvm has that ours carries without emulating it, so that
 * a guest moves from QEMU to us and back (issue 37): the ROM blocks
 * (pc.bios and, with ACPI, the fw_cfg ACPI blobs), and the sections
 * "timer", "fw_cfg" and "kvm-tpr-opt" (QEMU's second IOAPIC, "ioapic" 1,
 * and its "acpi-ged" are emulated: include/hw/microvm-ioapic2.h,
 * include/hw/acpi-ged.h). Their layouts
 * are QEMU's (docs/devel/qemu-interop.md).
 *
 * "timer" is live: it carries the VM clock (system/runstate.c). The rest
 * is state our guests never use; we keep what a QEMU stream brought and
 * send it back unchanged, or QEMU's values for a fresh machine.
 *
 * All functions: main thread, machine init, in the order QEMU sends the
 * sections (hw/microvm.c calls them).
 */
#ifndef HW_MICROVM_STATE_H
#define HW_MICROVM_STATE_H

#include <stdbool.h>
#include "qemu/typedefs.h"
#include "hw/boards.h"

/*
 * The ROM blocks after microvm.ram, in QEMU's order and sizes; with
 * @map_isa_bios (RAM reaches past 1 MiB: the machine left 0xf0000-0xfffff
 * unmapped for it) pc.bios shows at 0xf0000, as in QEMU.
 */
bool microvm_qemu_ram_init(MachineState *ms, bool map_isa_bios, Error **errp);
/* "timer" and "fw_cfg": before the vCPUs' sections. */
void microvm_qemu_register_head(MachineState *ms);
/* "kvm-tpr-opt": right after the first vCPU's "cpu". */
void microvm_qemu_register_tpr(MachineState *ms);

#endif

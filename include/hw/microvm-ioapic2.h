/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMU's microvm's second IOAPIC ("ioapic2", with ACPI): a userspace
 * IOAPIC (hw/ioapic.c) at 0xfec10000 whose 24 pins are GSIs 24-47, pin n
 * the line of virtio-mmio slot n, delivering through KVM_SIGNAL_MSI; its
 * migration section is QEMU's "ioapic" instance 1, version 3.
 *
 * How to use it: microvm_ioapic2_create at machine init (after the
 * in-kernel irqchip, before the transports), microvm_ioapic2_set_irq as
 * the transports' line (virtio_mmio_create_on_line), and
 * microvm_ioapic2_register where QEMU sends the section (after KVM's
 * "ioapic" 0). Init: main thread; the line: any thread (ioapic.h).
 */
#ifndef HW_MICROVM_IOAPIC2_H
#define HW_MICROVM_IOAPIC2_H

#include <stdbool.h>
#include "qemu/typedefs.h"

#define MICROVM_IOAPIC2_BASE     0xfec10000ULL
#define MICROVM_IOAPIC2_GSI_BASE 24     /* QEMU's MADT: the second IOAPIC's first GSI */

typedef struct MicrovmIoapic2 MicrovmIoapic2;

/* Maps the register window and registers a system reset handler. */
MicrovmIoapic2 *microvm_ioapic2_create(Error **errp);
void microvm_ioapic2_register(MicrovmIoapic2 *m);
/* A VirtIOMMIOLineFn: @opaque is the MicrovmIoapic2. */
void microvm_ioapic2_set_irq(void *opaque, unsigned int pin, bool level);

#endif

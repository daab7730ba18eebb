/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The virtio-mmio transport, version 2 ("modern") register layout only:
 * one 512-byte window per device (registers below 0x100, device config
 * from 0x100) and one interrupt line.
 */
#ifndef HW_VIRTIO_VIRTIO_MMIO_H
#define HW_VIRTIO_VIRTIO_MMIO_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"

typedef struct VirtIODevice VirtIODevice;
typedef struct VirtIOMMIOState VirtIOMMIOState;

#define VIRTIO_MMIO_WINDOW_SIZE 0x200

/*
 * virtio_mmio_create: put @vdev behind a transport at guest-physical
 * @base (registered in mmio_table), interrupting on @gsi. Uses KVM's
 * ioeventfd for QueueNotify and a resampling irqfd for the line where KVM
 * has them, else MMIO exits and KVM_IRQ_LINE. Registers a system reset
 * handler. Machine init, BQL.
 */
VirtIOMMIOState *virtio_mmio_create(VirtIODevice *vdev, hwaddr base, int gsi, Error **errp);
/*
 * A line to an interrupt controller outside KVM: called with the new
 * level whenever it changes (and once after a load), from any thread,
 * under the transport's irq_lock (taken before the controller's locks).
 */
typedef void (*VirtIOMMIOLineFn)(void *opaque, unsigned int pin, bool level);
/*
 * virtio_mmio_create_on_line: as virtio_mmio_create, but the interrupt is
 * @line_fn(@line_opaque, @line_pin, level) instead of KVM's @gsi, which
 * is only the number the guest is told (virtio_mmio_gsi).
 */
VirtIOMMIOState *virtio_mmio_create_on_line(VirtIODevice *vdev, hwaddr base, int gsi,
                                            VirtIOMMIOLineFn line_fn, void *line_opaque,
                                            unsigned int line_pin, Error **errp);
/*
 * virtio_mmio_destroy: reset the device and let go of the KVM side. The
 * window stays in mmio_table and the reset handler registered: only for
 * tests and teardown, where neither can be reached any more.
 */
void virtio_mmio_destroy(VirtIOMMIOState *s);
hwaddr virtio_mmio_base(const VirtIOMMIOState *s);
int virtio_mmio_gsi(const VirtIOMMIOState *s);
/* Whether notifications and interrupts bypass userspace (KVM ioeventfd / irqfd). */
bool virtio_mmio_uses_ioeventfd(const VirtIOMMIOState *s);
bool virtio_mmio_uses_irqfd(const VirtIOMMIOState *s);

#endif

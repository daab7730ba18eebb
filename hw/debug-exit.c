/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * isa-debug-exit: a guest write of V to the port ends the process with
 * status (V << 1) | 1, QEMU's rule (so a guest can never fake status 0).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/boards.h"
#include "system/ioport.h"
#include "system/runstate.h"

static void debug_exit_write(void *opaque, uint64_t addr, uint64_t val, unsigned size)
{
    qemu_system_exit_now((int)((val << 1) | 1));
}

static const IORangeOps debug_exit_ops = {
    .write = debug_exit_write,
};

bool debug_exit_init(uint64_t iobase, uint64_t iosize, Error **errp)
{
    if (iobase > 0xffff || !iosize || iosize > 0x10000 - iobase) {
        error_setg(errp, "isa-debug-exit: invalid iobase 0x%" PRIx64 " / iosize 0x%" PRIx64,
                   iobase, iosize);
        return false;
    }
    if (io_range_add(pio_table, iobase, iosize, &debug_exit_ops, NULL, "isa-debug-exit") < 0) {
        error_setg(errp, "isa-debug-exit: I/O port 0x%" PRIx64 " is already in use", iobase);
        return false;
    }
    return true;
}

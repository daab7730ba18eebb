/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Address-range tables: how a port I/O or MMIO exit reaches a device.
 * One table per address space; ranges never overlap; lookup is a binary
 * search over a sorted array. Tables are filled during machine init and read
 * by vCPU threads afterwards (device callbacks run with the BQL held).
 */
#ifndef SYSTEM_IOPORT_H
#define SYSTEM_IOPORT_H

#include <stdbool.h>
#include <stdint.h>

typedef struct IORangeOps {
    /* @addr is relative to the start of the range; @size is 1, 2, 4 or 8. */
    uint64_t (*read)(void *opaque, uint64_t addr, unsigned size);
    void (*write)(void *opaque, uint64_t addr, uint64_t val, unsigned size);
} IORangeOps;

typedef struct IORange {
    uint64_t base;
    uint64_t len;
    const IORangeOps *ops;
    void *opaque;
    const char *name;
} IORange;

IORangeTable *io_range_table_new(void);
void io_range_table_free(IORangeTable *t);
/* Returns 0, -EINVAL for an empty or wrapping range, -EEXIST on overlap. */
int io_range_add(IORangeTable *t, uint64_t base, uint64_t len, const IORangeOps *ops,
                 void *opaque, const char *name);
const IORange *io_range_find(const IORangeTable *t, uint64_t addr);

/*
 * Dispatch one access. Unclaimed reads return all-ones (an empty bus), and
 * unclaimed writes are dropped; both return false so callers can trace them.
 */
bool io_range_read(const IORangeTable *t, uint64_t addr, unsigned size, uint64_t *val);
bool io_range_write(const IORangeTable *t, uint64_t addr, unsigned size, uint64_t val);

/* The machine's two address spaces for exits. */
extern IORangeTable *pio_table;
extern IORangeTable *mmio_table;

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sorted, non-overlapping address ranges with binary-search dispatch. */
#include "qemu/osdep.h"
#include "system/ioport.h"

struct IORangeTable {
    GArray *ranges;             /* IORange, sorted by base */
};

IORangeTable *pio_table;
IORangeTable *mmio_table;

IORangeTable *io_range_table_new(void)
{
    IORangeTable *t = g_new0(IORangeTable, 1);

    t->ranges = g_array_new(FALSE, FALSE, sizeof(IORange));
    return t;
}

void io_range_table_free(IORangeTable *t)
{
    if (t) {
        g_array_free(t->ranges, TRUE);
        g_free(t);
    }
}

int io_range_add(IORangeTable *t, uint64_t base, uint64_t len, const IORangeOps *ops,
                 void *opaque, const char *name)
{
    IORange r = { .base = base, .len = len, .ops = ops, .opaque = opaque, .name = name };
    guint pos;

    if (!len || base + len - 1 < base) {
        return -EINVAL;
    }
    for (pos = 0; pos < t->ranges->len; pos++) {
        IORange *o = &g_array_index(t->ranges, IORange, pos);
        if (base <= o->base + (o->len - 1) && o->base <= base + (len - 1)) {
            return -EEXIST;
        }
        if (o->base > base) {
            break;
        }
    }
    g_array_insert_val(t->ranges, pos, r);
    return 0;
}

const IORange *io_range_find(const IORangeTable *t, uint64_t addr)
{
    const IORange *r = (const IORange *)t->ranges->data;
    guint lo = 0, hi = t->ranges->len;

    while (lo < hi) {
        guint mid = lo + (hi - lo) / 2;
        if (addr < r[mid].base) {
            hi = mid;
        } else if (addr - r[mid].base >= r[mid].len) {
            lo = mid + 1;
        } else {
            return &r[mid];
        }
    }
    return NULL;
}

bool io_range_read(const IORangeTable *t, uint64_t addr, unsigned size, uint64_t *val)
{
    const IORange *r = io_range_find(t, addr);

    if (!r || !r->ops->read) {
        *val = size >= 8 ? ~0ULL : (1ULL << (size * 8)) - 1;
        return false;
    }
    *val = r->ops->read(r->opaque, addr - r->base, size);
    return true;
}

bool io_range_write(const IORangeTable *t, uint64_t addr, unsigned size, uint64_t val)
{
    const IORange *r = io_range_find(t, addr);

    if (!r || !r->ops->write) {
        return false;
    }
    r->ops->write(r->opaque, addr - r->base, val, size);
    return true;
}

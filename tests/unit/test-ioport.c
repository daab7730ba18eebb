/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for system/ioport.c: adding ranges (overlaps in every shape
 * and empty or wrapping ranges are refused and leave the table as it was),
 * lookups at range edges, many ranges in random order against a naive
 * reference, and dispatch (offsets relative to the base, all-ones for
 * unclaimed reads).
 */
#include "qemu/osdep.h"
#include "system/ioport.h"

#define SEED 0x10ba5e

/* ---- A recording device ---- */

typedef struct Dev {
    int id;
    unsigned reads, writes;
    uint64_t last_addr;
    unsigned last_size;
    uint64_t last_val;
} Dev;

static uint64_t dev_read(void *opaque, uint64_t addr, unsigned size)
{
    Dev *d = opaque;

    d->reads++;
    d->last_addr = addr;
    d->last_size = size;
    return ((uint64_t)d->id << 48) | addr;
}

static void dev_write(void *opaque, uint64_t addr, uint64_t val, unsigned size)
{
    Dev *d = opaque;

    d->writes++;
    d->last_addr = addr;
    d->last_size = size;
    d->last_val = val;
}

static const IORangeOps dev_ops = { .read = dev_read, .write = dev_write };
static const IORangeOps read_only_ops = { .read = dev_read };
static const IORangeOps write_only_ops = { .write = dev_write };

/* ---- The naive reference: a flat list, checked by brute force ---- */

typedef struct Ref {
    uint64_t base, last;        /* inclusive */
    void *opaque;
} Ref;

static int ref_add(GArray *ref, uint64_t base, uint64_t len, void *opaque)
{
    Ref r = { base, base + len - 1, opaque };

    if (len == 0 || base + len - 1 < base) {
        return -EINVAL;
    }
    for (guint i = 0; i < ref->len; i++) {
        Ref *o = &g_array_index(ref, Ref, i);
        if (!(r.last < o->base || r.base > o->last)) {
            return -EEXIST;
        }
    }
    g_array_append_val(ref, r);
    return 0;
}

static void *ref_find(GArray *ref, uint64_t addr)
{
    for (guint i = 0; i < ref->len; i++) {
        Ref *o = &g_array_index(ref, Ref, i);
        if (addr >= o->base && addr <= o->last) {
            return o->opaque;
        }
    }
    return NULL;
}

/* The table answers exactly like the reference at @addr. */
static void check_same(IORangeTable *t, GArray *ref, uint64_t addr)
{
    const IORange *r = io_range_find(t, addr);
    void *want = ref_find(ref, addr);

    if ((r ? r->opaque : NULL) != want) {
        g_error("lookup of 0x%" PRIx64 ": table says %s, reference says %s", addr,
                r ? r->name : "nothing", want ? "a range" : "nothing");
    }
    if (r) {
        g_assert_cmpuint(addr - r->base, <, r->len);
    }
}

/* ---- Tests ---- */

static void test_add_find(void)
{
    IORangeTable *t = io_range_table_new();
    Dev a = { .id = 1 }, b = { .id = 2 }, c = { .id = 3 };
    const IORange *r;

    g_assert_null(io_range_find(t, 0));
    g_assert_cmpint(io_range_add(t, 0x3f8, 8, &dev_ops, &a, "serial"), ==, 0);
    g_assert_cmpint(io_range_add(t, 0x70, 2, &dev_ops, &b, "rtc"), ==, 0);
    g_assert_cmpint(io_range_add(t, 0xf4, 1, &dev_ops, &c, "debug-exit"), ==, 0);
    r = io_range_find(t, 0x3fa);
    g_assert_nonnull(r);
    g_assert_cmpstr(r->name, ==, "serial");
    g_assert_cmphex(r->base, ==, 0x3f8);
    g_assert_cmphex(r->len, ==, 8);
    g_assert_true(r->ops == &dev_ops);
    g_assert_true(r->opaque == &a);
    g_assert_true(io_range_find(t, 0x71)->opaque == &b);
    g_assert_true(io_range_find(t, 0xf4)->opaque == &c);
    g_assert_null(io_range_find(t, 0xf5));
    g_assert_null(io_range_find(t, 0x72));
    io_range_table_free(t);
    io_range_table_free(NULL);
}

/* Base range [0x100, 0x10f] plus a neighbour [0x120, 0x12f]; each shape vs them. */
static void test_overlap(void)
{
    static const struct {
        const char *shape;
        uint64_t base, len;
        int want;
    } cases[] = {
        { "identical", 0x100, 0x10, -EEXIST },
        { "inside", 0x104, 0x4, -EEXIST },
        { "first byte", 0x100, 1, -EEXIST },
        { "last byte", 0x10f, 1, -EEXIST },
        { "same base, longer", 0x100, 0x11, -EEXIST },
        { "same base, shorter", 0x100, 0x8, -EEXIST },
        { "same end, starts before", 0xf0, 0x20, -EEXIST },
        { "same end, starts inside", 0x108, 0x8, -EEXIST },
        { "overlaps the start", 0xf8, 0x9, -EEXIST },
        { "overlaps the end", 0x10f, 0x2, -EEXIST },
        { "contains", 0xf0, 0x40, -EEXIST },
        { "spans both", 0x10f, 0x12, -EEXIST },
        { "gap into the neighbour", 0x110, 0x11, -EEXIST },
        { "contains both", 0, 0x1000, -EEXIST },
        { "up to the end of space", 0x50, UINT64_MAX - 0x50 + 1, -EEXIST },
        { "adjacent below", 0xf0, 0x10, 0 },
        { "adjacent above, fills the gap", 0x110, 0x10, 0 },
        { "adjacent above the neighbour", 0x130, 0x1, 0 },
        { "far away", 0x10000, 0x10, 0 },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        IORangeTable *t = io_range_table_new();
        g_autoptr(GArray) ref = g_array_new(FALSE, FALSE, sizeof(Ref));
        Dev base = { .id = 1 }, nb = { .id = 2 }, x = { .id = 3 };
        int ret;

        g_assert_cmpint(io_range_add(t, 0x100, 0x10, &dev_ops, &base, "base"), ==, 0);
        g_assert_cmpint(io_range_add(t, 0x120, 0x10, &dev_ops, &nb, "neighbour"), ==, 0);
        ref_add(ref, 0x100, 0x10, &base);
        ref_add(ref, 0x120, 0x10, &nb);
        ret = io_range_add(t, cases[i].base, cases[i].len, &dev_ops, &x, cases[i].shape);
        if (ret != cases[i].want) {
            g_error("%s [0x%" PRIx64 ", +0x%" PRIx64 "): got %d, want %d", cases[i].shape,
                    cases[i].base, cases[i].len, ret, cases[i].want);
        }
        g_assert_cmpint(ref_add(ref, cases[i].base, cases[i].len, &x), ==, ret);
        /* A refused add leaves the table as it was; an accepted one is found. */
        for (uint64_t a = 0; a < 0x200; a++) {
            check_same(t, ref, a);
        }
        check_same(t, ref, 0x10000);
        check_same(t, ref, 0x1000f);
        check_same(t, ref, 0x10010);
        io_range_table_free(t);
    }
}

static void test_invalid(void)
{
    IORangeTable *t = io_range_table_new();
    Dev d = { 0 };

    g_assert_cmpint(io_range_add(t, 0x100, 0, &dev_ops, &d, "empty"), ==, -EINVAL);
    g_assert_cmpint(io_range_add(t, 0, 0, &dev_ops, &d, "empty at 0"), ==, -EINVAL);
    g_assert_cmpint(io_range_add(t, UINT64_MAX, 0, &dev_ops, &d, "empty at top"), ==, -EINVAL);
    g_assert_cmpint(io_range_add(t, UINT64_MAX, 2, &dev_ops, &d, "wraps"), ==, -EINVAL);
    g_assert_cmpint(io_range_add(t, 2, UINT64_MAX, &dev_ops, &d, "wraps"), ==, -EINVAL);
    g_assert_cmpint(io_range_add(t, UINT64_MAX, UINT64_MAX, &dev_ops, &d, "wraps"), ==, -EINVAL);
    g_assert_cmpint(io_range_add(t, 0xfffffffffffff000ULL, 0x1001, &dev_ops, &d, "wraps"), ==,
                    -EINVAL);
    for (uint64_t a = 0; a < 16; a++) {
        g_assert_null(io_range_find(t, a));
        g_assert_null(io_range_find(t, UINT64_MAX - a));
    }
    /* Ranges that end exactly at the top of the space are fine. */
    g_assert_cmpint(io_range_add(t, 0xfffffffffffff000ULL, 0x1000, &dev_ops, &d, "top"), ==, 0);
    g_assert_true(io_range_find(t, UINT64_MAX)->opaque == &d);
    g_assert_true(io_range_find(t, 0xfffffffffffff000ULL)->opaque == &d);
    g_assert_null(io_range_find(t, 0xffffffffffffefffULL));
    g_assert_cmpint(io_range_add(t, UINT64_MAX, 1, &dev_ops, &d, "last byte"), ==, -EEXIST);
    io_range_table_free(t);

    /* The whole space but one byte, from either end. */
    t = io_range_table_new();
    g_assert_cmpint(io_range_add(t, 0, UINT64_MAX, &dev_ops, &d, "all but top"), ==, 0);
    g_assert_nonnull(io_range_find(t, UINT64_MAX - 1));
    g_assert_null(io_range_find(t, UINT64_MAX));
    g_assert_cmpint(io_range_add(t, UINT64_MAX, 1, &dev_ops, &d, "top"), ==, 0);
    g_assert_cmpint(io_range_add(t, 0x1234, 1, &dev_ops, &d, "x"), ==, -EEXIST);
    io_range_table_free(t);
}

/* base-1, base, base+len-1 and base+len for adjacent and separated ranges. */
static void test_edges(void)
{
    IORangeTable *t = io_range_table_new();
    Dev d[4] = { { .id = 0 }, { .id = 1 }, { .id = 2 }, { .id = 3 } };
    static const uint64_t base[4] = { 0x0, 0x10, 0x20, 0x40 };
    static const uint64_t len[4] = { 0x10, 0x10, 0x8, 0x1 };

    /* Insert out of order: 2, 0, 3, 1. */
    static const int order[4] = { 2, 0, 3, 1 };
    for (int k = 0; k < 4; k++) {
        int i = order[k];
        g_assert_cmpint(io_range_add(t, base[i], len[i], &dev_ops, &d[i], "r"), ==, 0);
    }
    for (int i = 0; i < 4; i++) {
        const IORange *next = io_range_find(t, base[i] + len[i]);

        g_assert_true(io_range_find(t, base[i])->opaque == &d[i]);
        g_assert_true(io_range_find(t, base[i] + len[i] - 1)->opaque == &d[i]);
        /* One past the end: the adjacent range, or nothing. */
        if (i < 3 && base[i + 1] == base[i] + len[i]) {
            g_assert_true(next->opaque == &d[i + 1]);
        } else {
            g_assert_null(next);
        }
        if (base[i] > 0) {
            const IORange *prev = io_range_find(t, base[i] - 1);
            if (base[i - 1] + len[i - 1] == base[i]) {
                g_assert_true(prev->opaque == &d[i - 1]);
            } else {
                g_assert_null(prev);
            }
        }
    }
    g_assert_null(io_range_find(t, 0x41));
    g_assert_null(io_range_find(t, UINT64_MAX));
    io_range_table_free(t);
}

/*
 * Many random ranges added in random order, some overlapping: every return
 * code and every lookup matches the reference. Small spaces make overlaps
 * and adjacency common; the 64-bit space checks the edges of each range.
 */
static void test_random(void)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(SEED);

    for (int round = 0; round < 20; round++) {
        IORangeTable *t = io_range_table_new();
        g_autoptr(GArray) ref = g_array_new(FALSE, FALSE, sizeof(Ref));
        bool wide = round % 4 == 3;
        uint64_t space = wide ? 0 : 0x4000;
        int n = wide ? 2000 : 600, added = 0;
        Dev *devs = g_new0(Dev, n);

        for (int i = 0; i < n; i++) {
            uint64_t base, len;
            int got, want;

            devs[i].id = i;
            if (wide) {
                base = ((uint64_t)g_rand_int(r) << 32) | g_rand_int(r);
                len = g_rand_boolean(r) ? g_rand_int_range(r, 0, 0x100)
                      : ((uint64_t)g_rand_int(r) << g_rand_int_range(r, 0, 33));
            } else {
                base = g_rand_int_range(r, 0, space);
                len = g_rand_int_range(r, 0, 64);
            }
            got = io_range_add(t, base, len, &dev_ops, &devs[i], "rand");
            want = ref_add(ref, base, len, &devs[i]);
            if (got != want) {
                g_error("round %d: add [0x%" PRIx64 ", +0x%" PRIx64 ") gave %d, want %d",
                        round, base, len, got, want);
            }
            added += got == 0;
        }
        g_assert_cmpint(added, ==, ref->len);
        g_assert_cmpint(added, >, 10);
        if (wide) {
            for (guint i = 0; i < ref->len; i++) {
                Ref *o = &g_array_index(ref, Ref, i);
                check_same(t, ref, o->base);
                check_same(t, ref, o->last);
                check_same(t, ref, o->base - 1);
                check_same(t, ref, o->last + 1);
                check_same(t, ref, o->base + (o->last - o->base) / 2);
            }
            for (int i = 0; i < 10000; i++) {
                check_same(t, ref, ((uint64_t)g_rand_int(r) << 32) | g_rand_int(r));
            }
        } else {
            for (uint64_t a = 0; a < space + 64; a++) {
                check_same(t, ref, a);
            }
        }
        io_range_table_free(t);
        g_free(devs);
    }
}

static void test_unclaimed(void)
{
    IORangeTable *t = io_range_table_new();
    Dev ro = { .id = 1 }, wo = { .id = 2 };
    static const struct {
        unsigned size;
        uint64_t ones;
    } sizes[] = { { 1, 0xff }, { 2, 0xffff }, { 4, 0xffffffff }, { 8, UINT64_MAX } };
    uint64_t v;

    g_assert_cmpint(io_range_add(t, 0x60, 4, &read_only_ops, &ro, "ro"), ==, 0);
    g_assert_cmpint(io_range_add(t, 0x64, 4, &write_only_ops, &wo, "wo"), ==, 0);
    for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
        /* Nothing there; and a range without a read (or write) callback. */
        v = 0x1234;
        g_assert_false(io_range_read(t, 0x80, sizes[i].size, &v));
        g_assert_cmphex(v, ==, sizes[i].ones);
        v = 0x1234;
        g_assert_false(io_range_read(t, 0x65, sizes[i].size, &v));
        g_assert_cmphex(v, ==, sizes[i].ones);
        g_assert_false(io_range_write(t, 0x80, sizes[i].size, 0x55));
        g_assert_false(io_range_write(t, 0x61, sizes[i].size, 0x55));
    }
    g_assert_cmpuint(ro.writes, ==, 0);
    g_assert_cmpuint(wo.reads, ==, 0);
    g_assert_true(io_range_read(t, 0x62, 2, &v));
    g_assert_cmpuint(ro.reads, ==, 1);
    g_assert_true(io_range_write(t, 0x67, 1, 0x9));
    g_assert_cmpuint(wo.writes, ==, 1);
    io_range_table_free(t);

    /* The empty table behaves the same. */
    t = io_range_table_new();
    for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
        v = 0;
        g_assert_false(io_range_read(t, UINT64_MAX, sizes[i].size, &v));
        g_assert_cmphex(v, ==, sizes[i].ones);
    }
    io_range_table_free(t);
}

/* Callbacks get the offset from the base, the size and the value. */
static void test_dispatch_offset(void)
{
    IORangeTable *t = io_range_table_new();
    Dev a = { .id = 7 }, b = { .id = 9 };
    static const unsigned sizes[] = { 1, 2, 4, 8 };

    g_assert_cmpint(io_range_add(t, 0xd0000000, 0x1000, &dev_ops, &a, "a"), ==, 0);
    g_assert_cmpint(io_range_add(t, 0xd0001000, 0x10, &dev_ops, &b, "b"), ==, 0);
    for (uint64_t off = 0; off < 0x1000; off += 0x3f) {
        for (size_t s = 0; s < G_N_ELEMENTS(sizes); s++) {
            uint64_t v = 0;
            uint64_t val = 0x0123456789abcdefULL ^ off;

            g_assert_true(io_range_read(t, 0xd0000000 + off, sizes[s], &v));
            g_assert_cmphex(v, ==, (7ULL << 48) | off);
            g_assert_cmphex(a.last_addr, ==, off);
            g_assert_cmpuint(a.last_size, ==, sizes[s]);
            g_assert_true(io_range_write(t, 0xd0000000 + off, sizes[s], val));
            g_assert_cmphex(a.last_addr, ==, off);
            g_assert_cmphex(a.last_val, ==, val);
            g_assert_cmpuint(a.last_size, ==, sizes[s]);
        }
    }
    /* The last byte of a, then the first of b: offsets restart at 0. */
    g_assert_true(io_range_write(t, 0xd0000fff, 1, 1));
    g_assert_cmphex(a.last_addr, ==, 0xfff);
    g_assert_true(io_range_write(t, 0xd0001000, 4, 2));
    g_assert_cmphex(b.last_addr, ==, 0);
    g_assert_cmphex(b.last_val, ==, 2);
    g_assert_true(io_range_write(t, 0xd000100f, 4, 3));
    g_assert_cmphex(b.last_addr, ==, 0xf);
    g_assert_false(io_range_write(t, 0xd0001010, 4, 4));
    g_assert_cmpuint(b.writes, ==, 2);
    io_range_table_free(t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/ioport/add-find", test_add_find);
    g_test_add_func("/ioport/overlap", test_overlap);
    g_test_add_func("/ioport/invalid", test_invalid);
    g_test_add_func("/ioport/edges", test_edges);
    g_test_add_func("/ioport/random", test_random);
    g_test_add_func("/ioport/unclaimed", test_unclaimed);
    g_test_add_func("/ioport/dispatch-offset", test_dispatch_offset);
    return g_test_run();
}

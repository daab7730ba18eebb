/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for the mapped-ram layout (migration/transport/mapped-ram.c): where a
 * block's bitmap and pages go (QEMU 9.0's rules), the header's bytes, and
 * every hostile header refused with a message that names what is wrong.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bswap.h"
#include "migration/transport/mapped-ram.h"

#define MIB (1ULL << 20)

static void test_layout(void)
{
    MappedRamHeader h;
    uint64_t next;

    /* 256 MiB of pages: a 8 KiB bitmap right after the header, pages on the next MiB. */
    mapped_ram_layout(100, 256 * MIB, &h, &next);
    g_assert_cmpuint(h.version, ==, 1);
    g_assert_cmpuint(h.page_size, ==, 4096);
    g_assert_cmpuint(h.bitmap_offset, ==, 128);
    g_assert_cmpuint(mapped_ram_bitmap_size(256 * MIB), ==, 8192);
    g_assert_cmpuint(h.pages_offset, ==, MIB);
    g_assert_cmpuint(next, ==, MIB + 256 * MIB);
    /* A bitmap that ends exactly on a boundary needs no extra MiB. */
    mapped_ram_layout(MIB - 28 - 8, 64 * 4096, &h, &next);
    g_assert_cmpuint(h.pages_offset, ==, MIB);
    /* One more byte of header position pushes the pages to the next MiB. */
    mapped_ram_layout(MIB - 28 - 7, 64 * 4096, &h, &next);
    g_assert_cmpuint(h.pages_offset, ==, 2 * MIB);
    /* 65 pages: two words of bitmap. */
    g_assert_cmpuint(mapped_ram_bitmap_size(65 * 4096), ==, 16);
}

static void test_round_trip(void)
{
    MappedRamHeader h, back;
    uint8_t buf[MAPPED_RAM_HDR_SIZE];
    uint64_t next, next2;
    Error *err = NULL;

    mapped_ram_layout(5000, 64 * MIB, &h, &next);
    mapped_ram_put_header(buf, &h);
    /* QEMU's bytes: be32 version, then three be64. */
    g_assert_cmpuint(ldl_be_p(buf), ==, 1);
    g_assert_cmpuint(ldq_be_p(buf + 4), ==, 4096);
    g_assert_cmpuint(ldq_be_p(buf + 12), ==, 5028);
    g_assert_cmpuint(ldq_be_p(buf + 20), ==, MIB);
    g_assert_true(mapped_ram_parse_header(buf, "pc.ram", 5000, 64 * MIB, next + 1000, &back,
                                          &next2, &err));
    g_assert_null(err);
    g_assert_cmpuint(back.version, ==, h.version);
    g_assert_cmpuint(back.page_size, ==, h.page_size);
    g_assert_cmpuint(back.bitmap_offset, ==, h.bitmap_offset);
    g_assert_cmpuint(back.pages_offset, ==, h.pages_offset);
    g_assert_cmpuint(next2, ==, next);
}

/* A header from @h at position 5000 for 64 MiB in a file of @file_size: refused with @msg. */
static void assert_refused(const MappedRamHeader *h, uint64_t file_size, const char *msg)
{
    uint8_t buf[MAPPED_RAM_HDR_SIZE];
    MappedRamHeader out;
    uint64_t next;
    Error *err = NULL;

    mapped_ram_put_header(buf, h);
    g_assert_false(mapped_ram_parse_header(buf, "pc.ram", 5000, 64 * MIB, file_size, &out,
                                           &next, &err));
    g_assert_nonnull(err);
    if (!strstr(error_get_pretty(err), msg)) {
        g_printerr("error '%s' lacks '%s'\n", error_get_pretty(err), msg);
    }
    g_assert_nonnull(strstr(error_get_pretty(err), msg));
    g_assert_nonnull(strstr(error_get_pretty(err), "pc.ram"));
    error_free(err);
}

static void test_hostile(void)
{
    MappedRamHeader good, h;
    uint64_t next, size;

    mapped_ram_layout(5000, 64 * MIB, &good, &next);
    size = next + 4096;
    h = good, h.version = 2;
    assert_refused(&h, size, "version not supported (expected <= 1, got 2)");
    h = good, h.version = 0;
    assert_refused(&h, size, "got 0");
    h = good, h.page_size = 65536;
    assert_refused(&h, size, "pages of 65536 bytes");
    h = good, h.bitmap_offset = 4000;       /* inside the header */
    assert_refused(&h, size, "its bitmap");
    h = good, h.bitmap_offset = UINT64_MAX - 10;
    assert_refused(&h, size, "its bitmap");
    h = good, h.pages_offset = MIB + 1;
    assert_refused(&h, size, "bad alignment");
    h = good, h.pages_offset = 4096;        /* before the bitmap ends (5028 + 2048) */
    assert_refused(&h, size, "overlap its bitmap");
    h = good, h.pages_offset = UINT64_MAX & ~4095ULL;
    assert_refused(&h, size, "past the end");
    /* The file ends inside the pages: truncated. */
    assert_refused(&good, next - 1, "past the end of the");
    assert_refused(&good, good.bitmap_offset + 100, "its bitmap");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/mapped-ram/layout", test_layout);
    g_test_add_func("/mapped-ram/round-trip", test_round_trip);
    g_test_add_func("/mapped-ram/hostile", test_hostile);
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The mapped-ram integrity record (migration/transport/mapped-ram-integrity.c): XXH64
 * against published vectors, the record's round trip, and every hostile
 * edge of its decoder (lengths, counts, offsets, digits, its own hash).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "qemu/pagehash.h"
#include "qemu/xxh64.h"
#include "migration/transport/mapped-ram-integrity.h"

#define POS 0x600000ULL         /* where the sample record lies: the stream's end */

static void test_xxh64_vectors(void)
{
    static const char nobody[] = "Nobody inspects the spammish repetition";
    g_autofree uint8_t *big = g_malloc(1000);
    Xxh64State s;

    /* Published values (xxHash's sanity checks and python-xxhash's README). */
    g_assert_cmphex(xxh64("", 0, 0), ==, 0xEF46DB3751D8E999ULL);
    g_assert_cmphex(xxh64("a", 1, 0), ==, 0xD24EC4F1A98C6E5BULL);
    g_assert_cmphex(xxh64("abc", 3, 0), ==, 0x44BC2CF5AD770999ULL);
    g_assert_cmphex(xxh64(nobody, strlen(nobody), 0), ==, 0xFBCEA83C8A378BF1ULL);
    /* Streaming in uneven pieces gives the one-shot value. */
    for (int i = 0; i < 1000; i++) {
        big[i] = i * 7 + (i >> 3);
    }
    for (size_t step = 1; step < 70; step += 3) {
        xxh64_init(&s, 42);
        for (size_t at = 0; at < 1000; at += step) {
            xxh64_update(&s, big + at, MIN(step, 1000 - at));
        }
        g_assert_cmphex(xxh64_digest(&s), ==, xxh64(big, 1000, 42));
    }
}

/* Both paths of the page hash agree, and one changed word, anywhere, changes it. */
static void test_pagehash(void)
{
    g_autofree uint8_t *page = g_malloc(TARGET_PAGE_SIZE);
    GRand *rng = g_rand_new_with_seed(33);
    uint64_t h, avx;

    for (int round = 0; round < 64; round++) {
        for (int i = 0; i < TARGET_PAGE_SIZE; i++) {
            page[i] = round < 2 ? round * 0xff : g_rand_int(rng);
        }
        h = pagehash_portable(page, TARGET_PAGE_SIZE);
        if (pagehash_avx2(page, TARGET_PAGE_SIZE, &avx)) {
            g_assert_cmphex(avx, ==, h);
        } else if (round == 0) {
            g_test_message("no AVX2 here: only the portable path is checked");
        }
        g_assert_cmphex(pagehash(page, TARGET_PAGE_SIZE), ==, h);
        for (int i = 0; i < 64; i++) {
            int at = g_rand_int_range(rng, 0, TARGET_PAGE_SIZE);
            uint8_t keep = page[at];

            page[at] ^= 1 << g_rand_int_range(rng, 0, 8);
            g_assert_cmphex(pagehash(page, TARGET_PAGE_SIZE), !=, h);
            page[at] = keep;
        }
    }
    /* Two words of one lane swapped between stripes: the sums agree, the keys do not. */
    memcpy(page + 8, page + 8 + 64 * 5, 8);
    h = pagehash(page, TARGET_PAGE_SIZE);
    {
        uint64_t a = ldq_le_p(page + 8), b = ldq_le_p(page + 8 + 64 * 7);

        stq_le_p(page + 8, b);
        stq_le_p(page + 8 + 64 * 7, a);
        g_assert_cmphex(pagehash(page, TARGET_PAGE_SIZE), !=, h);
    }
    g_rand_free(rng);
}

/* Two blocks: 3 regions and a half (56 pages), and one page, laid out as the writer would. */
static MappedRamIntegrity *sample(void)
{
    MappedRamIntegrity *r = mri_new(2);

    r->stream_start = 0;
    r->stream_end = POS;
    r->stream_hash = 0x1122334455667788ULL;
    mri_set_block(r, 0, "pc.ram", 56 * TARGET_PAGE_SIZE, 0x100, 0x100000);
    mri_set_block(r, 1, "vga.vram", TARGET_PAGE_SIZE, 0x138100, 0x200000);
    for (uint32_t b = 0; b < 2; b++) {
        for (uint64_t g = 0; g < r->blocks[b].nregions; g++) {
            r->blocks[b].region_hash[g] = b * 1000 + g;
        }
    }
    return r;
}

static char *sample_hex(size_t *len)
{
    g_autoptr(MappedRamIntegrity) r = sample();
    char *tail = mri_encode(r, len);

    *len -= MRI_FOOTER_SIZE;
    return tail;
}

static void test_round_trip(void)
{
    size_t len;
    g_autofree char *hex = sample_hex(&len);
    g_autoptr(MappedRamIntegrity) r = mri_decode(hex, len, POS, &error_abort);
    uint64_t hex_len;

    g_assert_cmpuint(r->nblocks, ==, 2);
    g_assert_cmpstr(r->blocks[0].name, ==, "pc.ram");
    g_assert_cmpuint(r->blocks[0].nregions, ==, 4);
    g_assert_cmpuint(r->blocks[1].nregions, ==, 1);
    g_assert_cmpuint(r->blocks[0].region_hash[3], ==, 3);
    g_assert_cmpuint(r->blocks[1].region_hash[0], ==, 1000);
    g_assert_cmphex(r->stream_hash, ==, 0x1122334455667788ULL);
    g_assert_true(mri_parse_footer((const uint8_t *)hex + len, 0, POS + len + MRI_FOOTER_SIZE,
                                   &hex_len, &error_abort));
    g_assert_cmpuint(hex_len, ==, len);
    /* The tail has no NUL and no '{': analyze-migration.py's vmdesc search skips it. */
    g_assert_null(memchr(hex, '{', len + MRI_FOOTER_SIZE));
    g_assert_cmpuint(strlen(hex), ==, len + MRI_FOOTER_SIZE);
}

/* Re-encodes @r at POS: every field is covered by the record's own hash. */
static void expect_refused(MappedRamIntegrity *r, uint64_t pos, const char *what)
{
    size_t len;
    g_autofree char *hex = mri_encode(r, &len);
    Error *err = NULL;

    g_assert_null(mri_decode(hex, len - MRI_FOOTER_SIZE, pos, &err));
    g_assert_nonnull(err);
    g_assert_nonnull(strstr(error_get_pretty(err), what));
    error_free(err);
}

static void test_hostile_fields(void)
{
    g_autoptr(MappedRamIntegrity) r = sample();

    expect_refused(r, POS + 2, "lies at");                  /* moved in the file */
    r->blocks[0].pages_offset = 0x100001;                  /* misaligned pages */
    expect_refused(r, POS, "does not fit");
    r->blocks[0].pages_offset = 0x100000;
    r->blocks[1].bitmap_offset = 0x100;                    /* overlaps block 0's region */
    expect_refused(r, POS, "does not fit");
    r->blocks[1].bitmap_offset = 0x138100;
    r->blocks[1].used_length = 0x10000000;                 /* past the stream's end */
    expect_refused(r, POS, "does not fit");
    r->blocks[1].used_length = TARGET_PAGE_SIZE + 1;       /* not whole pages */
    expect_refused(r, POS, "does not fit");
    r->blocks[1].used_length = TARGET_PAGE_SIZE;
    r->stream_start = POS;                                 /* an empty stream */
    expect_refused(r, POS, "describes a stream");
}

static void expect_bin_refused(GByteArray *a, const char *what)
{
    GString *s = g_string_new(NULL);
    uint8_t h[8];
    Error *err = NULL;

    stq_le_p(h, xxh64(a->data, a->len, 0));
    for (guint i = 0; i < a->len; i++) {
        g_string_append_printf(s, "%02x", a->data[i]);
    }
    for (int i = 0; i < 8; i++) {
        g_string_append_printf(s, "%02x", h[i]);
    }
    g_assert_null(mri_decode(s->str, s->len, POS, &err));
    g_assert_nonnull(err);
    if (!strstr(error_get_pretty(err), what)) {
        g_error("'%s' does not say '%s'", error_get_pretty(err), what);
    }
    error_free(err);
    g_string_free(s, true);
}

/* A record header with a valid hash, then whatever the test appends. */
static GByteArray *bin_header(uint32_t version, uint32_t region, uint32_t nblocks)
{
    GByteArray *a = g_byte_array_new();
    uint8_t b[8];

    stl_le_p(b, version);
    g_byte_array_append(a, b, 4);
    stl_le_p(b, region);
    g_byte_array_append(a, b, 4);
    stq_le_p(b, 0);
    g_byte_array_append(a, b, 8);
    stq_le_p(b, POS);
    g_byte_array_append(a, b, 8);
    stq_le_p(b, 0);
    g_byte_array_append(a, b, 8);
    stl_le_p(b, nblocks);
    g_byte_array_append(a, b, 4);
    return a;
}

static void test_hostile_counts(void)
{
    static const uint8_t name_nul[] = { 3, 'a', 0, 'b' };
    static const uint8_t name_cut[] = { 200, 'a', 'b' };
    uint8_t blk[25];
    GByteArray *a;

    a = bin_header(2, MRI_REGION_PAGES, 0);
    expect_bin_refused(a, "version 2");
    g_byte_array_free(a, true);
    a = bin_header(1, 512, 0);
    expect_bin_refused(a, "512-page regions");
    g_byte_array_free(a, true);
    a = bin_header(1, MRI_REGION_PAGES, 0xffffffff);       /* no allocation of 4G blocks */
    expect_bin_refused(a, "blocks (at most");
    g_byte_array_free(a, true);
    a = bin_header(1, MRI_REGION_PAGES, 2);                /* blocks announced, none there */
    expect_bin_refused(a, "ends inside");
    g_byte_array_free(a, true);
    a = bin_header(1, MRI_REGION_PAGES, 1);
    g_byte_array_append(a, name_nul, sizeof(name_nul));
    expect_bin_refused(a, "NUL");
    g_byte_array_free(a, true);
    a = bin_header(1, MRI_REGION_PAGES, 1);
    g_byte_array_append(a, name_cut, sizeof(name_cut));
    expect_bin_refused(a, "ends inside");
    g_byte_array_free(a, true);
    /* A block of 1 GiB whose region hashes are not there: refused before any allocation. */
    a = bin_header(1, MRI_REGION_PAGES, 1);
    blk[0] = 1;
    g_byte_array_append(a, blk, 1);
    g_byte_array_append(a, (const uint8_t *)"r", 1);
    stq_le_p(blk, 1ULL << 30);
    stq_le_p(blk + 8, 0x100);
    stq_le_p(blk + 16, 0x100000);
    g_byte_array_append(a, blk, 24);
    expect_bin_refused(a, "does not fit");              /* 1 GiB is past the stream's end */
    g_byte_array_free(a, true);
    a = bin_header(1, MRI_REGION_PAGES, 0);
    g_byte_array_append(a, (const uint8_t *)"xx", 2);   /* bytes after the last block */
    expect_bin_refused(a, "follow its last block");
    g_byte_array_free(a, true);
}

static void test_hostile_text(void)
{
    size_t len;
    g_autofree char *hex = sample_hex(&len);
    uint8_t footer[MRI_FOOTER_SIZE];
    uint64_t hex_len;
    Error *err = NULL;

    /* Any flipped digit: a bad digit, or a record whose hash does not match. */
    for (size_t i = 0; i < len; i += 7) {
        char keep = hex[i];

        hex[i] = keep == 'f' ? 'e' : keep == '9' ? 'a' : keep + 1;
        g_assert_null(mri_decode(hex, len, POS, &err));
        error_free(err);
        err = NULL;
        hex[i] = 'G';
        g_assert_null(mri_decode(hex, len, POS, &err));
        g_assert_true(strstr(error_get_pretty(err), "hex digit") ||
                         strstr(error_get_pretty(err), "checksum"));
        error_free(err);
        err = NULL;
        hex[i] = keep;
    }
    /* Cut: odd, too short, one byte less. */
    g_assert_null(mri_decode(hex, len - 1, POS, &err));
    error_free(err);
    err = NULL;
    g_assert_null(mri_decode(hex, 20, POS, &err));
    error_free(err);
    err = NULL;
    g_assert_null(mri_decode(hex + 2, len - 2, POS, &err));
    error_free(err);
    err = NULL;
    /* The footer: not a record, or a length that cannot fit before it. */
    memcpy(footer, hex + len, MRI_FOOTER_SIZE);
    g_assert_true(mri_parse_footer(footer, 0, POS + len + MRI_FOOTER_SIZE, &hex_len, NULL));
    g_assert_true(mri_parse_footer(footer, 1, POS + len + MRI_FOOTER_SIZE, &hex_len, &err));
    g_assert_cmpuint(hex_len, ==, len);
    g_assert_true(mri_parse_footer(footer, POS + 1, POS + len + MRI_FOOTER_SIZE, &hex_len,
                                   &err));
    g_assert_cmpuint(hex_len, ==, 0);
    g_assert_nonnull(err);
    error_free(err);
    err = NULL;
    memcpy(footer + 8, "ffffffffffffffff", 16);
    g_assert_true(mri_parse_footer(footer, 0, ~0ULL, &hex_len, &err));
    g_assert_cmpuint(hex_len, ==, 0);
    error_free(err);
    err = NULL;
    memcpy(footer + 8, "00000000000000A0", 16);          /* uppercase: not ours */
    g_assert_true(mri_parse_footer(footer, 0, POS, &hex_len, &err));
    g_assert_cmpuint(hex_len, ==, 0);
    error_free(err);
    err = NULL;
    footer[0] = 'm';
    g_assert_false(mri_parse_footer(footer, 0, POS, &hex_len, &error_abort));
    g_assert_false(mri_parse_footer((const uint8_t *)"\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0"
                                    "\0\0\0\0", 0, POS, &hex_len, &error_abort));
}

/* The region hash binds content to its place and to the bitmap. */
static void test_region_binding(void)
{
    g_autofree uint8_t *ram = g_malloc0(2 * MRI_REGION_PAGES * TARGET_PAGE_SIZE);
    unsigned long present[BITS_TO_LONGS(2 * MRI_REGION_PAGES)] = { 0 };
    uint64_t h[MRI_REGION_PAGES] = { 0 }, good;

    for (int i = 0; i < 2 * MRI_REGION_PAGES; i++) {
        ram[i * TARGET_PAGE_SIZE] = i + 1;
    }
    bitmap_set(present, 0, 2 * MRI_REGION_PAGES - 1);
    for (int i = 0; i < MRI_REGION_PAGES; i++) {
        h[i] = mri_page_hash(ram + i * TARGET_PAGE_SIZE);
    }
    good = mri_region_hash(0, 0, 0xffff, h);
    g_assert_true(mri_check_region(0, 0, present, 2 * MRI_REGION_PAGES, ram, good));
    g_assert_false(mri_check_region(1, 0, present, 2 * MRI_REGION_PAGES, ram, good));
    g_assert_false(mri_check_region(0, 1, present, 2 * MRI_REGION_PAGES, ram, good));
    /* Two pages swapped. */
    g_assert_cmphex(mri_region_hash(0, 0, 0xffff, h), !=,
                    mri_region_hash(0, 0, 0xffff, (uint64_t[MRI_REGION_PAGES]) {
                        h[1], h[0], h[2], h[3], h[4], h[5], h[6], h[7], h[8], h[9], h[10],
                        h[11], h[12], h[13], h[14], h[15] }));
    /* A page made absent (its bit cleared): the guest would get zeros. */
    clear_bit(3, present);
    g_assert_false(mri_check_region(0, 0, present, 2 * MRI_REGION_PAGES, ram, good));
    set_bit(3, present);
    ram[5 * TARGET_PAGE_SIZE + 100] ^= 1;
    g_assert_false(mri_check_region(0, 0, present, 2 * MRI_REGION_PAGES, ram, good));
    /* An absent page's bytes are not read: the guest gets zeros whatever they are. */
    g_assert_true(mri_check_region(0, 1, present, 2 * MRI_REGION_PAGES - 1,
                                   ram + MRI_REGION_PAGES * TARGET_PAGE_SIZE,
                                   ({
                                       uint64_t h2[MRI_REGION_PAGES] = { 0 };
                                       for (int i = 0; i < MRI_REGION_PAGES - 1; i++) {
                                           h2[i] = mri_page_hash(ram + (MRI_REGION_PAGES + i) *
                                                                 TARGET_PAGE_SIZE);
                                       }
                                       mri_region_hash(0, 1, 0x7fff, h2);
                                   })));
}

static void collect(uint64_t start, uint64_t end, void *opaque)
{
    g_string_append_printf(opaque, "%" PRIx64 "-%" PRIx64 " ", start, end);
}

static void test_stream_ranges(void)
{
    g_autoptr(MappedRamIntegrity) r = sample();
    g_autoptr(GString) s = g_string_new(NULL);

    mri_stream_ranges(r, collect, s);
    g_assert_cmpstr(s->str, ==, "0-100 138000-138100 201000-600000 ");
}

/* The stream hash over a real file: the ranges' bytes only; a failed read is an errno. */
static void test_stream_hash(void)
{
    g_autoptr(MappedRamIntegrity) r = sample();
    g_autofree char *path = g_strdup_printf("%s/mri-XXXXXX", g_get_tmp_dir());
    g_autofree uint8_t *file = g_malloc(POS);
    int fd = g_mkstemp(path);
    Xxh64State st;
    uint64_t h;

    for (size_t i = 0; i < POS; i++) {
        file[i] = i * 13 + (i >> 11);
    }
    g_assert_true(qemu_pwrite_full(fd, file, POS, 0));
    xxh64_init(&st, 0);
    xxh64_update(&st, file, 0x100);
    xxh64_update(&st, file + 0x138000, 0x100);
    xxh64_update(&st, file + 0x201000, POS - 0x201000);
    g_assert_cmpint(mri_stream_hash(r, fd, &h), ==, 0);
    g_assert_cmphex(h, ==, xxh64_digest(&st));
    /* Cut short: the last range cannot be read. */
    g_assert_cmpint(ftruncate(fd, POS - 1), ==, 0);
    g_assert_cmpint(mri_stream_hash(r, fd, &h), <, 0);
    close(fd);
    unlink(path);
    g_assert_cmpint(mri_stream_hash(r, -1, &h), ==, -EBADF);
}
/*
 * The footer's length, bounded by what the machine's blocks could need and
 * not by the file's size: a sparse file with a footer naming nearly all of
 * its terabyte passes mri_parse_footer, and must be refused before the
 * reader allocates for it.
 */
static void test_hostile_length(void)
{
    const uint64_t used[2] = { 56 * TARGET_PAGE_SIZE, TARGET_PAGE_SIZE };
    const uint64_t end = 1ULL << 40;
    g_autoptr(MappedRamIntegrity) r = mri_new(2);
    g_autofree char *name = g_strnfill(255, 'n');
    g_autofree char *tail = NULL;
    uint8_t footer[MRI_FOOTER_SIZE + 1];
    Error *err = NULL;
    uint64_t hex_len;
    size_t len;

    /* Names at their longest: the record is exactly the bound. */
    r->stream_end = POS;
    mri_set_block(r, 0, name, used[0], 0x100, 0x100000);
    mri_set_block(r, 1, name, used[1], 0x138100, 0x200000);
    tail = mri_encode(r, &len);
    g_assert_cmpuint(len - MRI_FOOTER_SIZE, ==, mri_max_hex_len(used, 2));
    g_assert_true(mri_check_hex_len(len - MRI_FOOTER_SIZE, used, 2, &error_abort));
    g_assert_true(mri_check_hex_len(mri_max_hex_len(used, 2), used, 2, &error_abort));
    g_assert_false(mri_check_hex_len(mri_max_hex_len(used, 2) + 2, used, 2, &err));
    error_free_or_abort(&err);

    /* Fits in the (sparse) file, so the footer passes; the bound refuses it. */
    snprintf((char *)footer, sizeof(footer), "%s%016" PRIx64, MRI_FOOTER_MAGIC,
             end - MRI_FOOTER_SIZE - 64);
    g_assert_true(mri_parse_footer(footer, 0, end, &hex_len, &error_abort));
    g_assert_cmpuint(hex_len, ==, end - MRI_FOOTER_SIZE - 64);
    g_assert_false(mri_check_hex_len(hex_len, used, 2, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "more than a record of this machine's"));
    error_free_or_abort(&err);
    /* A machine without RAM blocks: only an empty record fits. */
    g_assert_false(mri_check_hex_len(len - MRI_FOOTER_SIZE, NULL, 0, &err));
    error_free_or_abort(&err);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/mapped-ram-integrity/xxh64", test_xxh64_vectors);
    g_test_add_func("/mapped-ram-integrity/pagehash", test_pagehash);
    g_test_add_func("/mapped-ram-integrity/round-trip", test_round_trip);
    g_test_add_func("/mapped-ram-integrity/hostile-fields", test_hostile_fields);
    g_test_add_func("/mapped-ram-integrity/hostile-counts", test_hostile_counts);
    g_test_add_func("/mapped-ram-integrity/hostile-text", test_hostile_text);
    g_test_add_func("/mapped-ram-integrity/hostile-length", test_hostile_length);
    g_test_add_func("/mapped-ram-integrity/region-binding", test_region_binding);
    g_test_add_func("/mapped-ram-integrity/stream-ranges", test_stream_ranges);
    g_test_add_func("/mapped-ram-integrity/stream-hash", test_stream_hash);
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for migration/transport/xbzrle.c: the encoder's bytes match a plain
 * byte-at-a-time model of QEMU's format for pages changed in every way,
 * a fixed vector, decode(encode) restores the page, overflow is reported,
 * and hostile deltas (bad lengths, runs past the page, leftovers) are
 * refused with the page untouched.
 */
#include "qemu/osdep.h"
#include "migration/transport/xbzrle.h"

#define PAGE 4096

/* The model: the format written out the slow, obvious way. */
static size_t model_uleb(uint8_t *p, size_t v)
{
    if (v < 128) {
        p[0] = v;
        return 1;
    }
    p[0] = 0x80 | (v % 128);
    p[1] = v / 128;
    return 2;
}

static int model_encode(const uint8_t *old, const uint8_t *new, size_t len, uint8_t *out,
                        size_t out_max)
{
    size_t i = 0, o = 0;
    uint8_t tmp[PAGE * 2];

    while (i < len) {
        size_t same = 0, diff = 0;
        while (i + same < len && old[i + same] == new[i + same]) {
            same++;
        }
        if (i + same == len) {
            break;
        }
        while (i + same + diff < len && old[i + same + diff] != new[i + same + diff]) {
            diff++;
        }
        o += model_uleb(tmp + o, same);
        o += model_uleb(tmp + o, diff);
        memcpy(tmp + o, new + i + same, diff);
        o += diff;
        if (o > out_max) {
            return -1;
        }
        i += same + diff;
    }
    memcpy(out, tmp, o);
    return o;
}

static void check_pair(const uint8_t *old, const uint8_t *new)
{
    uint8_t enc[PAGE], want[PAGE], page[PAGE];
    int n = xbzrle_encode(old, new, PAGE, enc, sizeof(enc));
    int m = model_encode(old, new, PAGE, want, sizeof(want));

    g_assert_cmpint(n, ==, m);
    if (n < 0) {
        return;
    }
    g_assert_cmpmem(enc, n, want, m);
    memcpy(page, old, PAGE);
    g_assert_cmpint(xbzrle_decode(enc, n, page, PAGE), ==, 0);
    g_assert_cmpmem(page, PAGE, new, PAGE);
}

static void test_matches_model(void)
{
    GRand *r = g_rand_new_with_seed(0x7b21e);
    uint8_t old[PAGE], new[PAGE];

    for (int round = 0; round < 3000; round++) {
        /* From one changed byte to most of the page, runs of every length and alignment. */
        int changes = 1 << g_rand_int_range(r, 0, 12);
        for (int i = 0; i < PAGE; i++) {
            old[i] = g_rand_int_range(r, 0, 4);     /* small alphabet: equal bytes happen */
        }
        memcpy(new, old, PAGE);
        for (int c = 0; c < changes; c++) {
            int at = g_rand_int_range(r, 0, PAGE);
            int run = g_rand_int_range(r, 1, 1 + (round % 7 == 0 ? 300 : 9));
            for (int k = at; k < MIN(PAGE, at + run); k++) {
                new[k] = g_rand_int_range(r, 0, 256);
            }
        }
        check_pair(old, new);
    }
    g_rand_free(r);
}

static void test_vector(void)
{
    static const uint8_t want[] = { 0x05, 0x01, 0xaa, 0xf8, 0x1f, 0x02, 0x01, 0x01 };
    uint8_t old[PAGE] = { 0 }, new[PAGE] = { 0 }, enc[PAGE];

    new[5] = 0xaa;
    new[PAGE - 2] = new[PAGE - 1] = 1;
    g_assert_cmpint(xbzrle_encode(old, new, PAGE, enc, sizeof(enc)), ==, sizeof(want));
    g_assert_cmpmem(enc, sizeof(want), want, sizeof(want));
    /* Equal pages: nothing to send. */
    g_assert_cmpint(xbzrle_encode(old, old, PAGE, enc, sizeof(enc)), ==, 0);
    /* A change in the very first byte: the first unchanged run is empty. */
    new[0] = 7;
    g_assert_cmpint(xbzrle_encode(old, new, PAGE, enc, sizeof(enc)), ==, sizeof(want) + 3);
    g_assert_cmpmem(enc, 3, ((uint8_t[]){ 0x00, 0x01, 0x07 }), 3);
}

static void test_overflow(void)
{
    uint8_t old[PAGE], new[PAGE], enc[PAGE];

    memset(old, 0, PAGE);
    memset(new, 0xff, PAGE);
    /* 4096 changed bytes and their lengths do not fit a page. */
    g_assert_cmpint(xbzrle_encode(old, new, PAGE, enc, PAGE), ==, -1);
    /* Every other byte changed: 2 bytes per byte changed. */
    for (int i = 0; i < PAGE; i += 2) {
        new[i] = 0;
    }
    g_assert_cmpint(xbzrle_encode(old, new, PAGE, enc, PAGE), ==, -1);
    /* Just fits, and one byte less does not. */
    memset(new, 0, PAGE);
    memset(new + 100, 1, 1000);
    g_assert_cmpint(xbzrle_encode(old, new, PAGE, enc, 1003), ==, 1003);
    g_assert_cmpint(xbzrle_encode(old, new, PAGE, enc, 1002), ==, -1);
}

static void expect_refused(const uint8_t *enc, size_t n)
{
    uint8_t page[PAGE], before[PAGE];

    memset(page, 0x3c, PAGE);
    memcpy(before, page, PAGE);
    g_assert_cmpint(xbzrle_decode(enc, n, page, PAGE), ==, -1);
    g_assert_cmpmem(page, PAGE, before, PAGE);
}

static void test_hostile(void)
{
    /* A changed run of 0 bytes. */
    expect_refused((const uint8_t[]){ 0x01, 0x00 }, 2);
    /* An empty unchanged run after the first. */
    expect_refused((const uint8_t[]){ 0x01, 0x01, 0xaa, 0x00, 0x01, 0xbb }, 6);
    /* A three-byte length. */
    expect_refused((const uint8_t[]){ 0x80, 0x80, 0x01, 0x01, 0xaa }, 5);
    /* A length cut short. */
    expect_refused((const uint8_t[]){ 0x81 }, 1);
    expect_refused((const uint8_t[]){ 0x01, 0x81 }, 2);
    /* Changed bytes missing. */
    expect_refused((const uint8_t[]){ 0x01, 0x05, 0xaa, 0xbb }, 4);
    /* Runs past the end of the page: 4095 unchanged, then 2 changed. */
    expect_refused((const uint8_t[]){ 0xff, 0x1f, 0x02, 0xaa, 0xbb }, 5);
    /* 16383 unchanged bytes. */
    expect_refused((const uint8_t[]){ 0xff, 0x7f, 0x01, 0xaa }, 4);
    /* A good first run, a bad second one: nothing applied. */
    expect_refused((const uint8_t[]){ 0x02, 0x01, 0xaa, 0x01, 0x00 }, 5);
}

/* A delta cut inside a run is refused; cut between runs it is a shorter, valid delta. */
static void test_truncated(void)
{
    uint8_t old[PAGE] = { 0 }, new[PAGE] = { 0 }, enc[PAGE], page[PAGE];
    int n, accepted = 0, refused = 0;

    for (int i = 0; i < PAGE; i += 300) {
        memset(new + i, 0x11, 1 + i % 200);
    }
    n = xbzrle_encode(old, new, PAGE, enc, sizeof(enc));
    g_assert_cmpint(n, >, 0);
    for (int cut = 0; cut < n; cut++) {
        memcpy(page, old, PAGE);
        if (xbzrle_decode(enc, cut, page, PAGE) == 0) {
            /* Whole runs only: the change up to some byte, the old page after it. */
            int k = 0;

            while (k < PAGE && page[k] == new[k]) {
                k++;
            }
            g_assert_cmpmem(page + k, PAGE - k, old + k, PAGE - k);
            accepted++;
        } else {
            g_assert_cmpmem(page, PAGE, old, PAGE);
            refused++;
        }
    }
    g_assert_cmpint(accepted, >, 0);
    g_assert_cmpint(refused, >, accepted);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/xbzrle/matches-model", test_matches_model);
    g_test_add_func("/xbzrle/vector", test_vector);
    g_test_add_func("/xbzrle/overflow", test_overflow);
    g_test_add_func("/xbzrle/hostile", test_hostile);
    g_test_add_func("/xbzrle/truncated", test_truncated);
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for util/bitmap.c: every operation against a naive per-bit
 * reference on seeded random data, with ranges that start, end and span
 * word boundaries and sizes that are not multiples of 64.
 */
#include "qemu/osdep.h"
#include "qemu/bitmap.h"

#define SEED 0x5eedb17

/* Sizes around word boundaries, used by most tests. */
static const unsigned long sizes[] = {
    0, 1, 2, 63, 64, 65, 127, 128, 129, 191, 192, 200, 255, 256, 257, 1000,
};

/* The reference model: one bit at a time, computed independently. */
static bool ref_get(const unsigned long *map, unsigned long i)
{
    return (map[i / 64] >> (i % 64)) & 1;
}

static void ref_put(unsigned long *map, unsigned long i, bool v)
{
    if (v) {
        map[i / 64] |= 1UL << (i % 64);
    } else {
        map[i / 64] &= ~(1UL << (i % 64));
    }
}

static unsigned long rand_word(GRand *r)
{
    unsigned long v = ((unsigned long)g_rand_int(r) << 32) | g_rand_int(r);

    /* Mix in sparse and dense words so both skip paths are exercised. */
    switch (g_rand_int_range(r, 0, 4)) {
    case 0:
        return 0;
    case 1:
        return ~0UL;
    case 2:
        return v & ((unsigned long)g_rand_int(r) << 32 | g_rand_int(r));
    default:
        return v;
    }
}

static unsigned long *rand_map(GRand *r, unsigned long nwords)
{
    unsigned long *map = g_new(unsigned long, MAX(nwords, 1));
    unsigned long i;

    for (i = 0; i < nwords; i++) {
        map[i] = rand_word(r);
    }
    return map;
}

static unsigned long *words_dup(const unsigned long *map, unsigned long nwords)
{
    unsigned long *copy = g_new(unsigned long, MAX(nwords, 1));

    memcpy(copy, map, MAX(nwords, 1) * sizeof(*map));
    return copy;
}

static void test_macros(void)
{
    g_assert_cmpuint(BITS_PER_LONG, ==, 64);
    g_assert_cmpuint(sizeof(unsigned long) * 8, ==, BITS_PER_LONG);
    g_assert_cmpuint(BIT_WORD(0), ==, 0);
    g_assert_cmpuint(BIT_WORD(63), ==, 0);
    g_assert_cmpuint(BIT_WORD(64), ==, 1);
    g_assert_cmpuint(BIT_WORD(129), ==, 2);
    g_assert_cmphex(BIT_MASK(0), ==, 1);
    g_assert_cmphex(BIT_MASK(63), ==, 1UL << 63);
    g_assert_cmphex(BIT_MASK(64), ==, 1);
    g_assert_cmphex(BIT_MASK(70), ==, 1UL << 6);
    g_assert_cmpuint(BITS_TO_LONGS(0), ==, 0);
    g_assert_cmpuint(BITS_TO_LONGS(1), ==, 1);
    g_assert_cmpuint(BITS_TO_LONGS(64), ==, 1);
    g_assert_cmpuint(BITS_TO_LONGS(65), ==, 2);
    g_assert_cmpuint(BITS_TO_LONGS(128), ==, 2);
    g_assert_cmphex(BITMAP_LAST_WORD_MASK(64), ==, ~0UL);
    g_assert_cmphex(BITMAP_LAST_WORD_MASK(65), ==, 1);
    g_assert_cmphex(BITMAP_LAST_WORD_MASK(3), ==, 7);
    g_assert_cmphex(BITMAP_FIRST_WORD_MASK(0), ==, ~0UL);
    g_assert_cmphex(BITMAP_FIRST_WORD_MASK(66), ==, ~3UL);
}

/* KVM dirty-log layout: page i is bit i % 64 of little-endian word i / 64. */
static void test_layout(void)
{
    unsigned long map[2] = { 0, 0 };
    const uint8_t *bytes = (const uint8_t *)map;

    set_bit(0, map);
    set_bit(9, map);
    set_bit(64 + 63, map);
    g_assert_cmphex(bytes[0], ==, 0x01);
    g_assert_cmphex(bytes[1], ==, 0x02);
    g_assert_cmphex(bytes[15], ==, 0x80);
    g_assert_cmphex(map[0], ==, 0x201);
    g_assert_cmphex(map[1], ==, 1UL << 63);
}

static void test_new_zero_fill(void)
{
    size_t k;

    for (k = 0; k < ARRAY_SIZE(sizes); k++) {
        unsigned long n = sizes[k];
        unsigned long nw = BITS_TO_LONGS(n);
        unsigned long *map = bitmap_new(n);
        unsigned long *copy = bitmap_new(n);
        unsigned long i;

        g_assert_nonnull(map);
        for (i = 0; i < nw; i++) {
            g_assert_cmphex(map[i], ==, 0);
        }
        g_assert_true(bitmap_empty(map, n));
        g_assert_true(bitmap_full(map, n) == (n == 0));

        bitmap_fill(map, n);
        g_assert_cmpuint(bitmap_count_one(map, n), ==, n);
        g_assert_true(bitmap_full(map, n));
        g_assert_true(bitmap_empty(map, n) == (n == 0));
        if (n % 64) {
            /* Nothing past nbits: counts over whole words stay exact. */
            g_assert_cmphex(map[nw - 1], ==, (1UL << (n % 64)) - 1);
        }
        for (i = 0; i < n; i++) {
            g_assert_true(ref_get(map, i));
        }

        bitmap_copy(copy, map, n);
        g_assert_true(bitmap_equal(copy, map, n));
        if (n) {
            clear_bit(n - 1, copy);
            g_assert_false(bitmap_equal(copy, map, n));
            g_assert_false(bitmap_full(copy, n));
        }

        bitmap_zero(map, n);
        g_assert_true(bitmap_empty(map, n));
        for (i = 0; i < nw; i++) {
            g_assert_cmphex(map[i], ==, 0);
        }
        g_free(map);
        g_free(copy);
    }
}

/* Garbage past nbits in the last word must not change any answer. */
static void test_empty_full_tail(void)
{
    unsigned long map[2];

    map[0] = 0;
    map[1] = ~0UL << 5;
    g_assert_true(bitmap_empty(map, 69));
    g_assert_false(bitmap_empty(map, 70));
    g_assert_cmpuint(bitmap_count_one(map, 69), ==, 0);
    g_assert_cmpuint(find_first_bit(map, 69), ==, 69);
    g_assert_cmpuint(find_first_bit(map, 70), ==, 69);

    map[0] = ~0UL;
    map[1] = 0x1f;
    g_assert_true(bitmap_full(map, 69));
    g_assert_false(bitmap_full(map, 70));
    g_assert_cmpuint(find_first_zero_bit(map, 69), ==, 69);
    g_assert_cmpuint(find_first_zero_bit(map, 70), ==, 69);
    g_assert_true(bitmap_full(map, 64));
    g_assert_true(bitmap_empty(map, 0));
    g_assert_true(bitmap_full(map, 0));
}

static void test_single_bit(void)
{
    unsigned long map[3] = { 0, 0, 0 };
    static const unsigned long bits[] = { 0, 1, 63, 64, 65, 127, 128, 191 };
    size_t k;

    for (k = 0; k < ARRAY_SIZE(bits); k++) {
        unsigned long b = bits[k];

        g_assert_false(test_bit(b, map));
        set_bit(b, map);
        g_assert_true(test_bit(b, map));
        g_assert_cmpuint(bitmap_count_one(map, 192), ==, 1);
        clear_bit(b, map);
        g_assert_false(test_bit(b, map));

        change_bit(b, map);
        g_assert_true(test_bit(b, map));
        change_bit(b, map);
        g_assert_false(test_bit(b, map));

        g_assert_false(test_and_set_bit(b, map));
        g_assert_true(test_and_set_bit(b, map));
        g_assert_true(test_and_clear_bit(b, map));
        g_assert_false(test_and_clear_bit(b, map));

        set_bit_atomic(b, map);
        g_assert_true(test_bit(b, map));
        g_assert_true(test_and_clear_bit_atomic(b, map));
        g_assert_false(test_and_clear_bit_atomic(b, map));
        set_bit_atomic(b, map);
        clear_bit_atomic(b, map);
        g_assert_true(bitmap_empty(map, 192));
    }
}

typedef enum RangeOp {
    RANGE_SET,
    RANGE_CLEAR,
    RANGE_SET_ATOMIC,
    RANGE_CLEAR_ATOMIC,
    RANGE_TEST_AND_CLEAR,
} RangeOp;

/* Apply a range op to random data and compare with the per-bit model. */
static void check_range_op(GRand *r, RangeOp op, unsigned long start,
                           unsigned long nr)
{
    /* Slack words around the range catch writes outside it. */
    unsigned long nw = BITS_TO_LONGS(start + nr) + 2;
    g_autofree unsigned long *map = rand_map(r, nw);
    g_autofree unsigned long *ref = words_dup(map, nw);
    bool any = false;
    bool ret;
    unsigned long i;

    for (i = start; i < start + nr; i++) {
        any |= ref_get(ref, i);
        ref_put(ref, i, op == RANGE_SET || op == RANGE_SET_ATOMIC);
    }
    switch (op) {
    case RANGE_SET:
        bitmap_set(map, start, nr);
        break;
    case RANGE_CLEAR:
        bitmap_clear(map, start, nr);
        break;
    case RANGE_SET_ATOMIC:
        bitmap_set_atomic(map, start, nr);
        break;
    case RANGE_CLEAR_ATOMIC:
        bitmap_clear_atomic(map, start, nr);
        break;
    case RANGE_TEST_AND_CLEAR:
        ret = bitmap_test_and_clear_range(map, start, nr);
        g_assert_true(ret == any);
        break;
    }
    for (i = 0; i < nw; i++) {
        if (map[i] != ref[i]) {
            g_test_message("op %d start %lu nr %lu word %lu: %lx != %lx",
                           op, start, nr, i, map[i], ref[i]);
        }
        g_assert_cmphex(map[i], ==, ref[i]);
    }
}

static void check_range_op_all(RangeOp op)
{
    static const unsigned long starts[] = {
        0, 1, 31, 63, 64, 65, 127, 128, 130,
    };
    static const unsigned long nrs[] = {
        0, 1, 2, 63, 64, 65, 127, 128, 129, 300,
    };
    g_autoptr(GRand) r = g_rand_new_with_seed(SEED + op);
    size_t i, j;
    int k;

    for (i = 0; i < ARRAY_SIZE(starts); i++) {
        for (j = 0; j < ARRAY_SIZE(nrs); j++) {
            check_range_op(r, op, starts[i], nrs[j]);
        }
    }
    for (k = 0; k < 2000; k++) {
        check_range_op(r, op, g_rand_int_range(r, 0, 400),
                       g_rand_int_range(r, 0, 400));
    }
}

static void test_set_range(void)
{
    check_range_op_all(RANGE_SET);
}

static void test_clear_range(void)
{
    check_range_op_all(RANGE_CLEAR);
}

static void test_set_range_atomic(void)
{
    check_range_op_all(RANGE_SET_ATOMIC);
}

static void test_clear_range_atomic(void)
{
    check_range_op_all(RANGE_CLEAR_ATOMIC);
}

static void test_test_and_clear_range(void)
{
    unsigned long map[3] = { 0, 0, 0 };

    check_range_op_all(RANGE_TEST_AND_CLEAR);

    /* Spot checks: a set bit just outside the range is not reported. */
    set_bit(63, map);
    set_bit(128, map);
    g_assert_false(bitmap_test_and_clear_range(map, 64, 64));
    g_assert_false(bitmap_test_and_clear_range(map, 0, 63));
    g_assert_false(bitmap_test_and_clear_range(map, 5, 0));
    g_assert_true(bitmap_test_and_clear_range(map, 63, 66));
    g_assert_true(bitmap_empty(map, 192));
}

static unsigned long ref_find(const unsigned long *map, unsigned long size,
                              unsigned long offset, bool want)
{
    unsigned long i;

    for (i = offset; i < size; i++) {
        if (ref_get(map, i) == want) {
            return i;
        }
    }
    return size;
}

static void test_find(void)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(SEED);
    unsigned long zero[4] = { 0, 0, 0, 0 };
    unsigned long ones[4] = { ~0UL, ~0UL, ~0UL, ~0UL };
    size_t k;
    int iter;

    /* Empty and full maps: "none" is size, at and past size too. */
    for (k = 0; k < ARRAY_SIZE(sizes); k++) {
        unsigned long n = MIN(sizes[k], 256);

        g_assert_cmpuint(find_first_bit(zero, n), ==, n);
        g_assert_cmpuint(find_next_bit(zero, n, n / 2), ==, n);
        g_assert_cmpuint(find_first_zero_bit(ones, n), ==, n);
        g_assert_cmpuint(find_first_bit(ones, n), ==, 0);
        g_assert_cmpuint(find_next_bit(ones, n, n), ==, n);
        g_assert_cmpuint(find_next_bit(ones, n, n + 1), ==, n);
        g_assert_cmpuint(find_next_zero_bit(zero, n, n), ==, n);
        g_assert_cmpuint(find_next_zero_bit(zero, n, ULONG_MAX), ==, n);
    }

    /* Hits exactly on word boundaries. */
    set_bit(64, zero);
    set_bit(191, zero);
    g_assert_cmpuint(find_first_bit(zero, 256), ==, 64);
    g_assert_cmpuint(find_next_bit(zero, 256, 64), ==, 64);
    g_assert_cmpuint(find_next_bit(zero, 256, 65), ==, 191);
    g_assert_cmpuint(find_next_bit(zero, 191, 65), ==, 191);
    g_assert_cmpuint(find_next_bit(zero, 192, 65), ==, 191);
    g_assert_cmpuint(find_next_bit(zero, 256, 192), ==, 256);

    for (iter = 0; iter < 3000; iter++) {
        unsigned long n = g_rand_int_range(r, 0, 600);
        unsigned long nw = BITS_TO_LONGS(n);
        g_autofree unsigned long *map = rand_map(r, nw);
        unsigned long off = g_rand_int_range(r, 0, n + 70);
        unsigned long i;

        /* Sparse maps make the word-skipping loop do real work. */
        if (iter % 3 == 0) {
            for (i = 0; i < nw; i++) {
                map[i] &= (unsigned long)g_rand_int(r) & g_rand_int(r) &
                          g_rand_int(r);
                if (g_rand_boolean(r)) {
                    map[i] = 0;
                }
            }
        }
        g_assert_cmpuint(find_next_bit(map, n, off), ==,
                         ref_find(map, n, off, true));
        g_assert_cmpuint(find_next_zero_bit(map, n, off), ==,
                         ref_find(map, n, off, false));
        g_assert_cmpuint(find_first_bit(map, n), ==,
                         ref_find(map, n, 0, true));
        g_assert_cmpuint(find_first_zero_bit(map, n), ==,
                         ref_find(map, n, 0, false));
    }
}

/* Walking all set bits with find_next_bit visits each exactly once. */
static void test_find_walk(void)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(SEED + 1);
    const unsigned long n = 4093;
    g_autofree unsigned long *map = rand_map(r, BITS_TO_LONGS(n));
    unsigned long seen = 0;
    unsigned long i;
    unsigned long prev = 0;
    bool first = true;

    for (i = find_first_bit(map, n); i < n; i = find_next_bit(map, n, i + 1)) {
        g_assert_true(ref_get(map, i));
        g_assert_true(first || i > prev);
        first = false;
        prev = i;
        seen++;
    }
    g_assert_cmpuint(seen, ==, bitmap_count_one(map, n));
}

static unsigned long ref_count(const unsigned long *map, unsigned long start,
                               unsigned long nbits)
{
    unsigned long i;
    unsigned long c = 0;

    for (i = start; i < start + nbits; i++) {
        c += ref_get(map, i);
    }
    return c;
}

static void test_count(void)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(SEED + 2);
    unsigned long ones[5] = { ~0UL, ~0UL, ~0UL, ~0UL, ~0UL };
    int iter;
    size_t k;

    for (k = 0; k < ARRAY_SIZE(sizes); k++) {
        unsigned long n = MIN(sizes[k], 320);

        g_assert_cmpuint(bitmap_count_one(ones, n), ==, n);
        g_assert_cmpuint(bitmap_count_one_with_offset(ones, 0, n), ==, n);
        g_assert_cmpuint(bitmap_count_one_with_offset(ones, 320 - n, n), ==, n);
    }
    g_assert_cmpuint(bitmap_count_one_with_offset(ones, 64, 0), ==, 0);
    g_assert_cmpuint(bitmap_count_one_with_offset(ones, 63, 2), ==, 2);

    for (iter = 0; iter < 3000; iter++) {
        unsigned long off = g_rand_int_range(r, 0, 300);
        unsigned long n = g_rand_int_range(r, 0, 400);
        g_autofree unsigned long *map = rand_map(r, BITS_TO_LONGS(off + n));

        g_assert_cmpuint(bitmap_count_one(map, off + n), ==,
                         ref_count(map, 0, off + n));
        g_assert_cmpuint(bitmap_count_one_with_offset(map, off, n), ==,
                         ref_count(map, off, n));
    }
}

static void test_logic_ops(void)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(SEED + 3);
    int iter;

    for (iter = 0; iter < 500; iter++) {
        unsigned long n = g_rand_int_range(r, 0, 300);
        unsigned long nw = BITS_TO_LONGS(n);
        g_autofree unsigned long *a = rand_map(r, nw);
        g_autofree unsigned long *b = rand_map(r, nw);
        g_autofree unsigned long *d = rand_map(r, nw);
        bool any_and = false;
        bool any_andnot = false;
        unsigned long i;

        bitmap_or(d, a, b, n);
        for (i = 0; i < n; i++) {
            g_assert_true(ref_get(d, i) == (ref_get(a, i) || ref_get(b, i)));
        }
        for (i = 0; i < n; i++) {
            any_and |= ref_get(a, i) && ref_get(b, i);
            any_andnot |= ref_get(a, i) && !ref_get(b, i);
        }
        g_assert_true(bitmap_and(d, a, b, n) == any_and);
        for (i = 0; i < n; i++) {
            g_assert_true(ref_get(d, i) == (ref_get(a, i) && ref_get(b, i)));
        }
        g_assert_true(bitmap_andnot(d, a, b, n) == any_andnot);
        for (i = 0; i < n; i++) {
            g_assert_true(ref_get(d, i) == (ref_get(a, i) && !ref_get(b, i)));
        }
    }
}

static void test_or_count_new(void)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(SEED + 4);
    unsigned long dst[2] = { 0xf0, 0 };
    unsigned long src[2] = { 0xff, 1UL << 63 };
    int iter;

    /* 4 bits new in word 0, 1 in word 1. */
    g_assert_cmpuint(bitmap_or_count_new(dst, src, 2), ==, 5);
    g_assert_cmphex(dst[0], ==, 0xff);
    g_assert_cmphex(dst[1], ==, 1UL << 63);
    /* Merging the same thing again adds nothing. */
    g_assert_cmpuint(bitmap_or_count_new(dst, src, 2), ==, 0);
    g_assert_cmpuint(bitmap_or_count_new(dst, src, 0), ==, 0);

    for (iter = 0; iter < 1000; iter++) {
        unsigned long nw = g_rand_int_range(r, 0, 20);
        g_autofree unsigned long *d = rand_map(r, nw);
        g_autofree unsigned long *s = rand_map(r, nw);
        g_autofree unsigned long *before = words_dup(d, nw);
        unsigned long expect = 0;
        unsigned long i;

        for (i = 0; i < nw * 64; i++) {
            expect += ref_get(s, i) && !ref_get(before, i);
        }
        g_assert_cmpuint(bitmap_or_count_new(d, s, nw), ==, expect);
        for (i = 0; i < nw * 64; i++) {
            bool want = ref_get(before, i) || ref_get(s, i);

            g_assert_true(ref_get(d, i) == want);
        }
    }
}

/*
 * Merge nbits of random src (with garbage past nbits) into random dst at
 * dst_start; compare every dst bit, including the untouched ones around
 * the range, and the count, with a per-bit merge.
 */
static void check_or_count_new_at(GRand *r, unsigned long dst_start,
                                  unsigned long nbits)
{
    unsigned long dst_words = BITS_TO_LONGS(dst_start + nbits) + 1;
    g_autofree unsigned long *dst = rand_map(r, dst_words);
    g_autofree unsigned long *src = rand_map(r, BITS_TO_LONGS(nbits));
    g_autofree unsigned long *ref = words_dup(dst, dst_words);
    unsigned long expect = 0;
    unsigned long got;
    unsigned long i;

    for (i = 0; i < nbits; i++) {
        if (ref_get(src, i) && !ref_get(ref, dst_start + i)) {
            ref_put(ref, dst_start + i, true);
            expect++;
        }
    }
    got = bitmap_or_count_new_at(dst, dst_start, src, nbits);
    if (got != expect) {
        g_test_message("dst_start %lu nbits %lu", dst_start, nbits);
    }
    g_assert_cmpuint(got, ==, expect);
    for (i = 0; i < dst_words; i++) {
        g_assert_cmphex(dst[i], ==, ref[i]);
    }
}

static void test_or_count_new_at(void)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(SEED + 5);
    static const unsigned long starts[] = {
        0, 1, 7, 63, 64, 65, 127, 128, 192, 200,
    };
    static const unsigned long nbits[] = { 0, 1, 63, 64, 65, 128, 129, 500 };
    size_t i, j;
    int iter;

    for (i = 0; i < ARRAY_SIZE(starts); i++) {
        for (j = 0; j < ARRAY_SIZE(nbits); j++) {
            check_or_count_new_at(r, starts[i], nbits[j]);
        }
    }
    for (iter = 0; iter < 3000; iter++) {
        check_or_count_new_at(r, g_rand_int_range(r, 0, 700),
                              g_rand_int_range(r, 0, 700));
    }
}

/* An aligned start must give exactly the word-path result. */
static void test_or_count_new_at_aligned(void)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(SEED + 6);
    int iter;

    for (iter = 0; iter < 200; iter++) {
        unsigned long nw = g_rand_int_range(r, 1, 16);
        unsigned long off_words = g_rand_int_range(r, 0, 4);
        g_autofree unsigned long *a = rand_map(r, nw + off_words);
        g_autofree unsigned long *b = words_dup(a, nw + off_words);
        g_autofree unsigned long *src = rand_map(r, nw);
        unsigned long expect = bitmap_or_count_new(b + off_words, src, nw);
        unsigned long got = bitmap_or_count_new_at(a, off_words * 64, src,
                                                   nw * 64);

        g_assert_cmpuint(got, ==, expect);
        g_assert_cmpmem(a, (nw + off_words) * sizeof(*a),
                        b, (nw + off_words) * sizeof(*b));
    }
}

static void test_or_count_new_take(void)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(SEED + 7);
    int iter;

    for (iter = 0; iter < 300; iter++) {
        unsigned long nw = g_rand_int_range(r, 0, 20);
        g_autofree unsigned long *d = rand_map(r, nw);
        g_autofree unsigned long *s = rand_map(r, nw);
        g_autofree unsigned long *d2 = words_dup(d, nw);
        unsigned long expect;
        unsigned long i;

        /* Reference first: the take variant drains s. */
        expect = bitmap_or_count_new(d2, s, nw);
        g_assert_cmpuint(bitmap_or_count_new_take(d, s, nw), ==, expect);
        g_assert_cmpmem(d, nw * sizeof(*d), d2, nw * sizeof(*d2));
        for (i = 0; i < nw; i++) {
            g_assert_cmphex(s[i], ==, 0);
        }
    }
}

/*
 * One thread marks every bit of a software dirty bitmap once (atomically,
 * several bits per word so writers and the drain contend on the same
 * words) while another keeps draining it into a migration bitmap. Each
 * bit must be counted exactly once: none lost, none counted twice.
 */
#define TAKE_BITS (64 * 256)

typedef struct TakeState {
    unsigned long src[BITS_TO_LONGS(TAKE_BITS)];
    unsigned long dst[BITS_TO_LONGS(TAKE_BITS)];
    int done;
} TakeState;

static gpointer take_writer(gpointer opaque)
{
    TakeState *s = opaque;
    unsigned long i;

    /* Stride through words so consecutive sets hit different words. */
    for (i = 0; i < TAKE_BITS; i++) {
        unsigned long bit = (i % 256) * 64 + i / 256;

        if (i % 7 == 0 && bit % 64 < 61) {
            bitmap_set_atomic(s->src, bit, 1);
        } else {
            set_bit_atomic(bit, s->src);
        }
    }
    __atomic_store_n(&s->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void test_or_count_new_take_concurrent(void)
{
    g_autofree TakeState *s = g_new0(TakeState, 1);
    unsigned long total = 0;
    GThread *t;

    t = g_thread_new("take-writer", take_writer, s);
    while (!__atomic_load_n(&s->done, __ATOMIC_SEQ_CST)) {
        total += bitmap_or_count_new_take(s->dst, s->src, ARRAY_SIZE(s->src));
    }
    g_thread_join(t);
    total += bitmap_or_count_new_take(s->dst, s->src, ARRAY_SIZE(s->src));
    g_assert_cmpuint(total, ==, TAKE_BITS);
    g_assert_true(bitmap_full(s->dst, TAKE_BITS));
    g_assert_true(bitmap_empty(s->src, TAKE_BITS));
}

static void check_extract(GRand *r, unsigned long start, unsigned long nbits)
{
    /* Exactly the words the range touches: ASan flags any over-read. */
    unsigned long map_words = BITS_TO_LONGS(start + nbits);
    unsigned long dst_words = BITS_TO_LONGS(nbits);
    g_autofree unsigned long *map = rand_map(r, map_words);
    g_autofree unsigned long *dst = rand_map(r, dst_words);
    unsigned long i;

    bitmap_extract_words(dst, map, start, nbits);
    for (i = 0; i < dst_words * 64; i++) {
        bool want = i < nbits && ref_get(map, start + i);

        if (ref_get(dst, i) != want) {
            g_test_message("start %lu nbits %lu bit %lu", start, nbits, i);
        }
        g_assert_true(ref_get(dst, i) == want);
    }
}

static void test_extract_words(void)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(SEED + 8);
    static const unsigned long starts[] = { 0, 1, 63, 64, 65, 128, 4095, 4096 };
    static const unsigned long nbits[] = { 0, 1, 63, 64, 65, 128, 129, 512 };
    size_t i, j;
    int iter;

    for (i = 0; i < ARRAY_SIZE(starts); i++) {
        for (j = 0; j < ARRAY_SIZE(nbits); j++) {
            check_extract(r, starts[i], nbits[j]);
        }
    }
    for (iter = 0; iter < 3000; iter++) {
        check_extract(r, g_rand_int_range(r, 0, 700),
                      g_rand_int_range(r, 0, 700));
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/bitmap/macros", test_macros);
    g_test_add_func("/bitmap/layout", test_layout);
    g_test_add_func("/bitmap/new-zero-fill", test_new_zero_fill);
    g_test_add_func("/bitmap/empty-full-tail", test_empty_full_tail);
    g_test_add_func("/bitmap/single-bit", test_single_bit);
    g_test_add_func("/bitmap/set-range", test_set_range);
    g_test_add_func("/bitmap/clear-range", test_clear_range);
    g_test_add_func("/bitmap/set-range-atomic", test_set_range_atomic);
    g_test_add_func("/bitmap/clear-range-atomic", test_clear_range_atomic);
    g_test_add_func("/bitmap/test-and-clear-range", test_test_and_clear_range);
    g_test_add_func("/bitmap/find", test_find);
    g_test_add_func("/bitmap/find-walk", test_find_walk);
    g_test_add_func("/bitmap/count", test_count);
    g_test_add_func("/bitmap/logic-ops", test_logic_ops);
    g_test_add_func("/bitmap/or-count-new", test_or_count_new);
    g_test_add_func("/bitmap/or-count-new-at", test_or_count_new_at);
    g_test_add_func("/bitmap/or-count-new-at-aligned",
                    test_or_count_new_at_aligned);
    g_test_add_func("/bitmap/or-count-new-take", test_or_count_new_take);
    g_test_add_func("/bitmap/or-count-new-take-concurrent",
                    test_or_count_new_take_concurrent);
    g_test_add_func("/bitmap/extract-words", test_extract_words);
    return g_test_run();
}

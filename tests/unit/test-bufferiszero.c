/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for buffer_is_zero(): each implementation is forced in turn
 * and checked on every short length and alignment with a single non-zero
 * byte at every position, and on whole (aligned and unaligned) pages.
 */
#include "qemu/osdep.h"
#include "qemu/bufferiszero.h"

#define MAX_LEN 300
#define MAX_OFFSET 64

/* Select @accel for the test, or skip it; returns whether to go on. */
static bool use_accel(BufferZeroAccel accel)
{
    if (!buffer_is_zero_select(accel)) {
        g_autofree char *why = g_strdup_printf(
            "%s implementation not supported by this CPU",
            buffer_is_zero_accel_name(accel));
        g_test_skip(why);
        return false;
    }
    g_assert_cmpint(buffer_is_zero_accel(), ==, accel);
    return true;
}

/*
 * Window [off, off + len) of a buffer with non-zero bytes before it and
 * one non-zero byte after it (so reading outside the window gives a wrong
 * answer) and nothing beyond that (so ASan flags longer over-reads).
 */
static void check_window(size_t off, size_t len)
{
    g_autofree uint8_t *buf = g_malloc(off + len + 1);
    uint8_t *win = buf + off;
    size_t i;

    memset(buf, 0xa5, off + len + 1);
    memset(win, 0, len);
    g_assert_true(buffer_is_zero(win, len));
    for (i = 0; i < len; i++) {
        win[i] = 0x01;
        g_assert_false(buffer_is_zero(win, len));
        win[i] = 0x80;
        g_assert_false(buffer_is_zero(win, len));
        win[i] = 0;
    }
    g_assert_true(buffer_is_zero(win, len));
}

static void test_small(gconstpointer data)
{
    BufferZeroAccel accel = GPOINTER_TO_INT(data);
    size_t off, len;

    if (!use_accel(accel)) {
        return;
    }
    for (len = 0; len <= MAX_LEN; len++) {
        for (off = 0; off < MAX_OFFSET; off++) {
            check_window(off, len);
        }
    }
    buffer_is_zero_select_best();
}

/* Non-zero bytes right after the window must not be looked at either. */
static void test_trailing_garbage(gconstpointer data)
{
    BufferZeroAccel accel = GPOINTER_TO_INT(data);
    uint8_t *buf = g_malloc(MAX_OFFSET + MAX_LEN + 64);
    size_t off, len;

    if (!use_accel(accel)) {
        g_free(buf);
        return;
    }
    for (len = 0; len <= MAX_LEN; len++) {
        for (off = 0; off < MAX_OFFSET; off++) {
            memset(buf, 0xff, MAX_OFFSET + MAX_LEN + 64);
            memset(buf + off, 0, len);
            g_assert_true(buffer_is_zero(buf + off, len));
        }
    }
    g_free(buf);
    buffer_is_zero_select_best();
}

/* The product's common case: 4 KiB pages, page-aligned and not. */
static void test_pages(gconstpointer data)
{
    BufferZeroAccel accel = GPOINTER_TO_INT(data);
    static const size_t offsets[] = { 0, 1, 8, 17, 32, 4095 };
    const size_t page = 4096;
    g_autofree uint8_t *mem = g_malloc(3 * page);
    uint8_t *aligned = (uint8_t *)QEMU_ALIGN_UP((uintptr_t)mem, page);
    size_t k, i;

    if (!use_accel(accel)) {
        return;
    }
    for (k = 0; k < ARRAY_SIZE(offsets); k++) {
        uint8_t *p = aligned + offsets[k];

        memset(mem, 0x5a, 3 * page);
        memset(p, 0, page);
        g_assert_true(buffer_is_zero(p, page));
        for (i = 0; i < page; i++) {
            p[i] = 1;
            g_assert_false(buffer_is_zero(p, page));
            p[i] = 0;
        }
        g_assert_true(buffer_is_zero(p, page));
    }

    /* Several pages at once, a byte set deep inside. */
    memset(aligned, 0, 2 * page);
    g_assert_true(buffer_is_zero(aligned, 2 * page));
    aligned[page + 123] = 0x40;
    g_assert_false(buffer_is_zero(aligned, 2 * page));
    g_assert_true(buffer_is_zero(aligned, page));
    g_assert_false(buffer_is_zero(aligned + page, page));
    buffer_is_zero_select_best();
}

static void test_select(void)
{
    BufferZeroAccel best;
    int i;

    buffer_is_zero_select_best();
    best = buffer_is_zero_accel();
    g_test_message("best implementation: %s", buffer_is_zero_accel_name(best));

    /* The portable path is always there. */
    g_assert_true(buffer_is_zero_select(BUFFER_ZERO_ACCEL_INT));
    g_assert_cmpint(buffer_is_zero_accel(), ==, BUFFER_ZERO_ACCEL_INT);

    /* Invalid values are refused and change nothing. */
    g_assert_false(buffer_is_zero_select(BUFFER_ZERO_ACCEL__MAX));
    g_assert_false(buffer_is_zero_select((BufferZeroAccel)-1));
    g_assert_cmpint(buffer_is_zero_accel(), ==, BUFFER_ZERO_ACCEL_INT);
    g_assert_cmpstr(buffer_is_zero_accel_name(BUFFER_ZERO_ACCEL__MAX), ==,
                    "unknown");

    for (i = 0; i < BUFFER_ZERO_ACCEL__MAX; i++) {
        g_assert_nonnull(buffer_is_zero_accel_name(i));
        if (buffer_is_zero_select(i)) {
            g_assert_cmpint(buffer_is_zero_accel(), ==, i);
            /* The best one is the last supported one. */
            g_assert_cmpint(i, <=, best);
        }
    }
    buffer_is_zero_select_best();
    g_assert_cmpint(buffer_is_zero_accel(), ==, best);
}

static void test_null_empty(void)
{
    /* A zero-length buffer is zero and is never dereferenced. */
    g_assert_true(buffer_is_zero(NULL, 0));
}

int main(int argc, char **argv)
{
    static const char *const tests[] = { "small", "trailing-garbage", "pages" };
    static const GTestDataFunc funcs[] = {
        test_small, test_trailing_garbage, test_pages,
    };
    size_t t;
    int a;

    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/bufferiszero/select", test_select);
    g_test_add_func("/bufferiszero/null-empty", test_null_empty);
    for (a = 0; a < BUFFER_ZERO_ACCEL__MAX; a++) {
        for (t = 0; t < ARRAY_SIZE(tests); t++) {
            g_autofree char *path = g_strdup_printf(
                "/bufferiszero/%s/%s", buffer_is_zero_accel_name(a), tests[t]);
            g_test_add_data_func(path, GINT_TO_POINTER(a), funcs[t]);
        }
    }
    return g_test_run();
}

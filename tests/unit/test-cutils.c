/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for util/cutils.c: the strict integer and size parsers
 * (values, end pointers, -EINVAL/-ERANGE cases), booleans, size_to_str
 * and the small string helpers.
 */
#include "qemu/osdep.h"
#include "qemu/cutils.h"

#define TiB (1ULL << 40)
#define PiB (1ULL << 50)
#define EiB (1ULL << 60)

/* Sentinels: a parser must overwrite (or deliberately keep) these. */
#define RES_SENTINEL 999
static const char sentinel_end[] = "sentinel";

/* Integers. */

static void test_strtoi64_correct(void)
{
    const char *str = "12345 foo";
    const char *end = sentinel_end;
    int64_t res = RES_SENTINEL;

    g_assert_cmpint(qemu_strtoi64(str, &end, 0, &res), ==, 0);
    g_assert_cmpint(res, ==, 12345);
    g_assert_true(end == str + 5);

    /* Same string, whole-string mode: trailing text is an error. */
    res = RES_SENTINEL;
    g_assert_cmpint(qemu_strtoi64(str, NULL, 0, &res), ==, -EINVAL);
    g_assert_cmpint(res, ==, 0);

    g_assert_cmpint(qemu_strtoi64("  \t -321", NULL, 0, &res), ==, 0);
    g_assert_cmpint(res, ==, -321);
    g_assert_cmpint(qemu_strtoi64("+7", NULL, 0, &res), ==, 0);
    g_assert_cmpint(res, ==, 7);
}

static void test_strtoi64_bases(void)
{
    const char *str = "0123";
    const char *end;
    int64_t res;

    g_assert_cmpint(qemu_strtoi64(str, &end, 0, &res), ==, 0);
    g_assert_cmpint(res, ==, 0123);
    g_assert_true(end == str + 4);
    g_assert_cmpint(qemu_strtoi64(str, NULL, 10, &res), ==, 0);
    g_assert_cmpint(res, ==, 123);
    g_assert_cmpint(qemu_strtoi64(str, NULL, 16, &res), ==, 0);
    g_assert_cmpint(res, ==, 0x123);
    g_assert_cmpint(qemu_strtoi64("0x1f", NULL, 0, &res), ==, 0);
    g_assert_cmpint(res, ==, 0x1f);
    g_assert_cmpint(qemu_strtoi64("0X1F", NULL, 16, &res), ==, 0);
    g_assert_cmpint(res, ==, 0x1f);
    g_assert_cmpint(qemu_strtoi64("101", NULL, 2, &res), ==, 0);
    g_assert_cmpint(res, ==, 5);
    /* Digits invalid for the base are trailing garbage. */
    g_assert_cmpint(qemu_strtoi64("08", NULL, 0, &res), ==, -EINVAL);
    g_assert_cmpint(qemu_strtoi64("12", NULL, 2, &res), ==, -EINVAL);
}

static void test_strtoi64_invalid(void)
{
    static const char *const bad[] = {
        "", "  \t  ", "   xxxx  \t abc", "-", "0x",
    };
    const char *end;
    int64_t res;
    size_t i;

    for (i = 0; i < ARRAY_SIZE(bad); i++) {
        end = sentinel_end;
        res = RES_SENTINEL;
        if (g_str_equal(bad[i], "0x")) {
            /* "0x" is the number 0 followed by 'x', as for strtoll(). */
            g_assert_cmpint(qemu_strtoi64(bad[i], &end, 0, &res), ==, 0);
            g_assert_true(end == bad[i] + 1);
            g_assert_cmpint(qemu_strtoi64(bad[i], NULL, 0, &res), ==, -EINVAL);
            continue;
        }
        g_assert_cmpint(qemu_strtoi64(bad[i], &end, 0, &res), ==, -EINVAL);
        g_assert_cmpint(res, ==, 0);
        g_assert_true(end == bad[i]);
        g_assert_cmpint(qemu_strtoi64(bad[i], NULL, 0, &res), ==, -EINVAL);
    }

    end = sentinel_end;
    g_assert_cmpint(qemu_strtoi64(NULL, &end, 0, &res), ==, -EINVAL);
    g_assert_null(end);
    g_assert_cmpint(qemu_strtoi64(NULL, NULL, 0, &res), ==, -EINVAL);

    /* Bases strtol() does not support. */
    end = sentinel_end;
    g_assert_cmpint(qemu_strtoi64("1", &end, 1, &res), ==, -EINVAL);
    g_assert_true(end != sentinel_end);
    g_assert_cmpint(qemu_strtoi64("1", NULL, 37, &res), ==, -EINVAL);
    g_assert_cmpint(qemu_strtoi64("1", NULL, -2, &res), ==, -EINVAL);
}

static void test_strtoi64_range(void)
{
    const char *end;
    int64_t res;

    g_assert_cmpint(qemu_strtoi64("9223372036854775807", NULL, 0, &res), ==, 0);
    g_assert_cmpint(res, ==, INT64_MAX);
    g_assert_cmpint(qemu_strtoi64("-9223372036854775808", NULL, 0, &res),
                    ==, 0);
    g_assert_cmpint(res, ==, INT64_MIN);

    g_assert_cmpint(qemu_strtoi64("9223372036854775808", &end, 0, &res), ==,
                    -ERANGE);
    g_assert_cmpint(res, ==, INT64_MAX);
    g_assert_cmpint(*end, ==, '\0');
    g_assert_cmpint(qemu_strtoi64("-9223372036854775809", NULL, 0, &res), ==,
                    -ERANGE);
    g_assert_cmpint(res, ==, INT64_MIN);
    g_assert_cmpint(qemu_strtoi64("99999999999999999999999", NULL, 0, &res),
                    ==, -ERANGE);
    g_assert_cmpint(res, ==, INT64_MAX);
    /* Overflow followed by garbage, whole-string mode: garbage wins. */
    g_assert_cmpint(qemu_strtoi64("99999999999999999999999x", NULL, 0, &res),
                    ==, -EINVAL);
}

static void test_strtou64(void)
{
    const char *str;
    const char *end;
    uint64_t res;

    g_assert_cmpint(qemu_strtou64("18446744073709551615", NULL, 0, &res),
                    ==, 0);
    g_assert_cmpuint(res, ==, UINT64_MAX);
    g_assert_cmpint(qemu_strtou64("0xffffffffffffffff", NULL, 0, &res), ==, 0);
    g_assert_cmpuint(res, ==, UINT64_MAX);
    g_assert_cmpint(qemu_strtou64("18446744073709551616", NULL, 0, &res), ==,
                    -ERANGE);
    g_assert_cmpuint(res, ==, UINT64_MAX);
    g_assert_cmpint(qemu_strtou64("4096", NULL, 10, &res), ==, 0);
    g_assert_cmpuint(res, ==, 4096);

    /* Unlike strtoull(), no silent wrap of negative numbers. */
    str = " \t -1";
    end = sentinel_end;
    res = RES_SENTINEL;
    g_assert_cmpint(qemu_strtou64(str, &end, 0, &res), ==, -EINVAL);
    g_assert_cmpuint(res, ==, 0);
    g_assert_true(end == str);
    g_assert_cmpint(qemu_strtou64("-0", NULL, 0, &res), ==, -EINVAL);

    str = "77 rest";
    g_assert_cmpint(qemu_strtou64(str, &end, 0, &res), ==, 0);
    g_assert_cmpuint(res, ==, 77);
    g_assert_true(end == str + 2);
    g_assert_cmpint(qemu_strtou64(str, NULL, 0, &res), ==, -EINVAL);
    g_assert_cmpint(qemu_strtou64("", NULL, 0, &res), ==, -EINVAL);
    g_assert_cmpint(qemu_strtou64(NULL, NULL, 0, &res), ==, -EINVAL);
}

static void test_strtoi(void)
{
    g_autofree char *max = g_strdup_printf("%d", INT_MAX);
    g_autofree char *min = g_strdup_printf("%d", INT_MIN);
    g_autofree char *over = g_strdup_printf("%lld", (long long)INT_MAX + 1);
    g_autofree char *under = g_strdup_printf("%lld", (long long)INT_MIN - 1);
    const char *end;
    int res;

    g_assert_cmpint(qemu_strtoi(max, NULL, 0, &res), ==, 0);
    g_assert_cmpint(res, ==, INT_MAX);
    g_assert_cmpint(qemu_strtoi(min, NULL, 0, &res), ==, 0);
    g_assert_cmpint(res, ==, INT_MIN);
    g_assert_cmpint(qemu_strtoi(over, &end, 0, &res), ==, -ERANGE);
    g_assert_cmpint(res, ==, INT_MAX);
    g_assert_true(end == over + strlen(over));
    g_assert_cmpint(qemu_strtoi(under, NULL, 0, &res), ==, -ERANGE);
    g_assert_cmpint(res, ==, INT_MIN);
    g_assert_cmpint(qemu_strtoi("-42", NULL, 0, &res), ==, 0);
    g_assert_cmpint(res, ==, -42);
    g_assert_cmpint(qemu_strtoi("42z", NULL, 0, &res), ==, -EINVAL);
    g_assert_cmpint(qemu_strtoi("", NULL, 0, &res), ==, -EINVAL);
}

static void test_strtoui(void)
{
    g_autofree char *max = g_strdup_printf("%u", UINT_MAX);
    g_autofree char *over = g_strdup_printf("%llu",
                                            (unsigned long long)UINT_MAX + 1);
    const char *end;
    unsigned int res;

    g_assert_cmpint(qemu_strtoui(max, NULL, 0, &res), ==, 0);
    g_assert_cmpuint(res, ==, UINT_MAX);
    g_assert_cmpint(qemu_strtoui(over, &end, 0, &res), ==, -ERANGE);
    g_assert_cmpuint(res, ==, UINT_MAX);
    g_assert_true(end == over + strlen(over));
    g_assert_cmpint(qemu_strtoui("-1", NULL, 0, &res), ==, -EINVAL);
    g_assert_cmpint(qemu_strtoui("0x10", NULL, 0, &res), ==, 0);
    g_assert_cmpuint(res, ==, 16);
    g_assert_cmpint(qemu_strtoui("x", NULL, 0, &res), ==, -EINVAL);
}

static void test_strtol_strtoul(void)
{
    long l;
    unsigned long ul;

    g_assert_cmpint(qemu_strtol("-9223372036854775808", NULL, 0, &l), ==, 0);
    g_assert_cmpint(l, ==, LONG_MIN);
    g_assert_cmpint(qemu_strtol("9223372036854775808", NULL, 0, &l), ==,
                    -ERANGE);
    g_assert_cmpint(l, ==, LONG_MAX);
    g_assert_cmpint(qemu_strtol("  12", NULL, 0, &l), ==, 0);
    g_assert_cmpint(l, ==, 12);
    g_assert_cmpint(qemu_strtol("12 ", NULL, 0, &l), ==, -EINVAL);

    g_assert_cmpint(qemu_strtoul("18446744073709551615", NULL, 0, &ul), ==, 0);
    g_assert_cmpuint(ul, ==, ULONG_MAX);
    g_assert_cmpint(qemu_strtoul("18446744073709551616", NULL, 0, &ul), ==,
                    -ERANGE);
    g_assert_cmpuint(ul, ==, ULONG_MAX);
    g_assert_cmpint(qemu_strtoul("-5", NULL, 0, &ul), ==, -EINVAL);
}

/* Sizes. */

typedef int (*StrtoszFn)(const char *nptr, const char **end, uint64_t *result);

typedef struct SizeCase {
    const char *str;
    int ret;
    uint64_t val;     /* when ret == 0 */
    int end;          /* offset of *end; -1: *end == str (the -EINVAL rule) */
} SizeCase;

static void check_size_cases(StrtoszFn fn, const SizeCase *cases, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        const SizeCase *c = &cases[i];
        const char *end = sentinel_end;
        uint64_t res = RES_SENTINEL;
        int ret;
        bool whole;

        g_test_message("size case '%s'", c->str);
        ret = fn(c->str, &end, &res);
        g_assert_cmpint(ret, ==, c->ret);
        g_assert_cmpuint(res, ==, c->ret == 0 ? c->val : 0);
        if (c->end < 0) {
            g_assert_true(end == c->str);
        } else {
            g_assert_cmpint(end - c->str, ==, c->end);
        }

        /* Whole-string mode: same answer if everything was consumed. */
        whole = c->end >= 0 && c->str[c->end] == '\0';
        res = RES_SENTINEL;
        ret = fn(c->str, NULL, &res);
        g_assert_cmpint(ret, ==, whole ? c->ret : -EINVAL);
        g_assert_cmpuint(res, ==, ret == 0 ? c->val : 0);
    }
}

static void test_strtosz_valid(void)
{
    static const SizeCase cases[] = {
        { "0", 0, 0, 1 },
        { "12345", 0, 12345, 5 },
        { "  42", 0, 42, 4 },
        { "1B", 0, 1, 2 },
        { "1b", 0, 1, 2 },
        { "1K", 0, KiB, 2 },
        { "1k", 0, KiB, 2 },
        { "1M", 0, MiB, 2 },
        { "1m", 0, MiB, 2 },
        { "1G", 0, GiB, 2 },
        { "1g", 0, GiB, 2 },
        { "1T", 0, TiB, 2 },
        { "1t", 0, TiB, 2 },
        { "1P", 0, PiB, 2 },
        { "1p", 0, PiB, 2 },
        { "1E", 0, EiB, 2 },
        { "1e", 0, EiB, 2 },
        { "4096", 0, 4096, 4 },
        { "512M", 0, 512 * MiB, 4 },
        { "1.5G", 0, GiB + GiB / 2, 4 },
        { "0.5E", 0, EiB / 2, 4 },
        { "1.0B", 0, 1, 4 },            /* a zero fraction is tolerated */
        { "1.000", 0, 1, 5 },
        { "1.k", 0, KiB, 3 },           /* so is an empty one */
        { ".5K", 0, 512, 3 },
        { "12.345M", 0, 12944671, 7 },  /* 12.345 * 2^20 = 12944670.72 */
        { "0.1K", 0, 102, 4 },          /* 102.4 rounds down */
        { "0.0005K", 0, 1, 7 },         /* 0.512 rounds up */
        { "16383P", 0, 16383 * PiB, 6 },
        { "18446744073709551615", 0, UINT64_MAX, 20 },
        { "0x1000", 0, 4096, 6 },
        { "0xab", 0, 171, 4 },
        { "0xae", 0, 174, 4 },          /* 'e' is a digit here, not EiB */
        /* Valid prefix, then something else. */
        { "1kiB", 0, KiB, 2 },
        { "123xxx", 0, 123, 3 },
        { "123-45", 0, 123, 3 },
        { "0x", 0, 0, 1 },
        { "0.NaN", 0, 0, 2 },
        { "8G,share=on", 0, 8 * GiB, 2 },
    };

    check_size_cases(qemu_strtosz, cases, ARRAY_SIZE(cases));
}

static void test_strtosz_invalid(void)
{
    static const SizeCase cases[] = {
        { "", -EINVAL, 0, -1 },
        { " \t ", -EINVAL, 0, -1 },
        { "crap", -EINVAL, 0, -1 },
        { "inf", -EINVAL, 0, -1 },
        { "NaN", -EINVAL, 0, -1 },
        { "K", -EINVAL, 0, -1 },
        { ".", -EINVAL, 0, -1 },
        { ".K", -EINVAL, 0, -1 },
        /* A fraction needs a unit larger than bytes. */
        { "1.1B", -EINVAL, 0, -1 },
        { "1.1", -EINVAL, 0, -1 },
        { "1.00000000000000000000001", -EINVAL, 0, -1 },
        /* No float exponents, not even disguised as the E suffix. */
        { "1.5e1k", -EINVAL, 0, -1 },
        { "1.5E+0k", -EINVAL, 0, -1 },
        { "1e5", -EINVAL, 0, -1 },
        /* Hex is plain bytes only. */
        { "0x1.8k", -EINVAL, 0, -1 },
        { "0x10K", -EINVAL, 0, -1 },
        /* No signs. */
        { "-0", -EINVAL, 0, -1 },
        { "-1", -EINVAL, 0, -1 },
        { " -1K", -EINVAL, 0, -1 },
        { "+1", -EINVAL, 0, -1 },
    };

    check_size_cases(qemu_strtosz, cases, ARRAY_SIZE(cases));
}

static void test_strtosz_erange(void)
{
    static const SizeCase cases[] = {
        { "18446744073709551616", -ERANGE, 0, 20 },   /* 2^64 */
        { "99999999999999999999999", -ERANGE, 0, 23 },
        { "16E", -ERANGE, 0, 3 },
        { "20E", -ERANGE, 0, 3 },
        { "16384P", -ERANGE, 0, 6 },
        { "17179869184G", -ERANGE, 0, 12 },
        { "15.9999999999999999999E", -ERANGE, 0, 23 }, /* rounds to 2^64 */
        { "0x10000000000000000", -ERANGE, 0, 19 },
    };
    uint64_t res;

    check_size_cases(qemu_strtosz, cases, ARRAY_SIZE(cases));

    /* The largest value that still fits, through the fraction path. */
    g_assert_cmpint(qemu_strtosz("15.5E", NULL, &res), ==, 0);
    g_assert_cmpuint(res, ==, 15 * EiB + EiB / 2);
}

static void test_strtosz_MiB(void)
{
    static const SizeCase cases[] = {
        { "1", 0, MiB, 1 },
        { "512", 0, 512 * MiB, 3 },
        { "1.5", 0, MiB + MiB / 2, 3 },  /* fine: the default unit is MiB */
        { "0.1", 0, 104858, 3 },         /* 104857.6 */
        { "2G", 0, 2 * GiB, 2 },
        { "1B", 0, 1, 2 },
        { "4k", 0, 4 * KiB, 2 },
        { "123xxx", 0, 123 * MiB, 3 },
        { "17592186044416", -ERANGE, 0, 14 },   /* 2^44 MiB = 2^64 */
        { "", -EINVAL, 0, -1 },
        { "-1", -EINVAL, 0, -1 },
    };

    check_size_cases(qemu_strtosz_MiB, cases, ARRAY_SIZE(cases));
}

static void test_strtosz_metric(void)
{
    static const SizeCase cases[] = {
        { "12345k", 0, 12345000, 6 },
        { "12.345M", 0, 12345000, 7 },
        { "1B", 0, 1, 2 },
        { "1G", 0, 1000000000, 2 },
        { "1E", 0, 1000000000000000000ULL, 2 },
        { "18E", 0, 18000000000000000000ULL, 3 },
        { "19E", -ERANGE, 0, 3 },
        { "1.5", -EINVAL, 0, -1 },
    };

    check_size_cases(qemu_strtosz_metric, cases, ARRAY_SIZE(cases));
}

static void test_strtosz_null(void)
{
    const char *end = sentinel_end;
    uint64_t res = RES_SENTINEL;

    g_assert_cmpint(qemu_strtosz(NULL, &end, &res), ==, -EINVAL);
    g_assert_null(end);
    g_assert_cmpuint(res, ==, 0);
    g_assert_cmpint(qemu_strtosz(NULL, NULL, &res), ==, -EINVAL);
}

/* Other helpers. */

static void test_parse_bool(void)
{
    static const char *const yes[] = { "on", "yes", "true" };
    static const char *const no[] = { "off", "no", "false" };
    static const char *const bad[] = {
        "", "1", "0", "ON", "y", "n", "onn", " on",
    };
    bool v;
    size_t i;

    for (i = 0; i < ARRAY_SIZE(yes); i++) {
        v = false;
        g_assert_true(qemu_parse_bool(yes[i], &v));
        g_assert_true(v);
    }
    for (i = 0; i < ARRAY_SIZE(no); i++) {
        v = true;
        g_assert_true(qemu_parse_bool(no[i], &v));
        g_assert_false(v);
    }
    for (i = 0; i < ARRAY_SIZE(bad); i++) {
        v = true;
        g_assert_false(qemu_parse_bool(bad[i], &v));
        g_assert_true(v);
    }
    g_assert_false(qemu_parse_bool(NULL, &v));
}

static void test_size_to_str(void)
{
    static const struct {
        uint64_t val;
        const char *str;
    } cases[] = {
        { 0, "0 B" },
        { 1, "1 B" },
        { 999, "999 B" },
        { 1000, "0.977 KiB" },
        { 1023, "0.999 KiB" },
        { 1024, "1 KiB" },
        { 1536, "1.5 KiB" },
        { 999 * 1024 + 409, "999 KiB" },
        { 1023999, "0.977 MiB" },   /* 999.999 KiB: not "1e+03 KiB" */
        { 512 * MiB, "512 MiB" },
        { 1000 * MiB, "0.977 GiB" },
        { GiB, "1 GiB" },
        { GiB + GiB / 2, "1.5 GiB" },
        { 4 * TiB, "4 TiB" },
        { EiB, "1 EiB" },
        { UINT64_MAX, "16 EiB" },
    };
    size_t i;

    for (i = 0; i < ARRAY_SIZE(cases); i++) {
        g_autofree char *s = size_to_str(cases[i].val);

        g_assert_cmpstr(s, ==, cases[i].str);
    }
}

static void test_strstart(void)
{
    const char *rest = sentinel_end;

    g_assert_true(strstart("unix:/tmp/s", "unix:", &rest));
    g_assert_cmpstr(rest, ==, "/tmp/s");
    g_assert_true(strstart("tcp:", "tcp:", &rest));
    g_assert_cmpstr(rest, ==, "");
    g_assert_true(strstart("abc", "", &rest));
    g_assert_cmpstr(rest, ==, "abc");

    rest = sentinel_end;
    g_assert_false(strstart("tc", "tcp:", &rest));
    g_assert_false(strstart("fd:3", "file:", &rest));
    g_assert_true(rest == sentinel_end);
    g_assert_true(strstart("exec:cat", "exec:", NULL));
}

static void test_pstrcmp0(void)
{
    const char *strs[] = { "pear", NULL, "apple", "fig", "apple" };
    const char *a = "x";
    const char *b = NULL;

    qsort(strs, ARRAY_SIZE(strs), sizeof(strs[0]),
          (int (*)(const void *, const void *))qemu_pstrcmp0);
    g_assert_null(strs[0]);
    g_assert_cmpstr(strs[1], ==, "apple");
    g_assert_cmpstr(strs[2], ==, "apple");
    g_assert_cmpstr(strs[3], ==, "fig");
    g_assert_cmpstr(strs[4], ==, "pear");
    g_assert_cmpint(qemu_pstrcmp0(&a, &a), ==, 0);
    g_assert_cmpint(qemu_pstrcmp0(&b, &a), <, 0);
}

static void test_pstrcpy(void)
{
    char buf[8];

    memset(buf, 'x', sizeof(buf));
    pstrcpy(buf, sizeof(buf), "hello");
    g_assert_cmpstr(buf, ==, "hello");
    pstrcpy(buf, sizeof(buf), "0123456789");
    g_assert_cmpstr(buf, ==, "0123456");
    pstrcpy(buf, 1, "abc");
    g_assert_cmpstr(buf, ==, "");
    buf[0] = 'q';
    pstrcpy(buf, 0, "abc");
    g_assert_cmpint(buf[0], ==, 'q');
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cutils/strtoi64/correct", test_strtoi64_correct);
    g_test_add_func("/cutils/strtoi64/bases", test_strtoi64_bases);
    g_test_add_func("/cutils/strtoi64/invalid", test_strtoi64_invalid);
    g_test_add_func("/cutils/strtoi64/range", test_strtoi64_range);
    g_test_add_func("/cutils/strtou64", test_strtou64);
    g_test_add_func("/cutils/strtoi", test_strtoi);
    g_test_add_func("/cutils/strtoui", test_strtoui);
    g_test_add_func("/cutils/strtol-strtoul", test_strtol_strtoul);
    g_test_add_func("/cutils/strtosz/valid", test_strtosz_valid);
    g_test_add_func("/cutils/strtosz/invalid", test_strtosz_invalid);
    g_test_add_func("/cutils/strtosz/erange", test_strtosz_erange);
    g_test_add_func("/cutils/strtosz/MiB", test_strtosz_MiB);
    g_test_add_func("/cutils/strtosz/metric", test_strtosz_metric);
    g_test_add_func("/cutils/strtosz/null", test_strtosz_null);
    g_test_add_func("/cutils/parse-bool", test_parse_bool);
    g_test_add_func("/cutils/size-to-str", test_size_to_str);
    g_test_add_func("/cutils/strstart", test_strstart);
    g_test_add_func("/cutils/pstrcmp0", test_pstrcmp0);
    g_test_add_func("/cutils/pstrcpy", test_pstrcpy);
    return g_test_run();
}

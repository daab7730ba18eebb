/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Strict number and size parsing for the command line, QMP and HMP, plus
 * small string helpers. Nothing here aborts: bad input is -EINVAL/-ERANGE.
 */
#include "qemu/osdep.h"
#include "qemu/cutils.h"

/*
 * Finish a libc strtoX() call: map "no digits" and (for whole-string
 * parsing) trailing characters to -EINVAL, and report where parsing ended.
 */
static int strtox_finish(const char *nptr, const char *ep, const char **end,
                         int libc_errno)
{
    if (ep == nptr) {
        if (end) {
            *end = nptr;
        }
        return -EINVAL;
    }
    if (!end && *ep) {
        return -EINVAL;
    }
    if (end) {
        *end = ep;
    }
    return libc_errno == ERANGE ? -ERANGE : 0;
}

static bool strtox_bad_args(const char *nptr, const char **end, int base)
{
    if (nptr && base != 1 && base >= 0 && base <= 36) {
        return false;
    }
    if (end) {
        *end = nptr;
    }
    return true;
}

/* Shared signed core: parse to long long, then range-check to [min, max]. */
static int parse_signed(const char *nptr, const char **end, int base,
                        long long min, long long max, long long *result)
{
    char *ep;
    long long v;
    int ret;

    *result = 0;
    if (strtox_bad_args(nptr, end, base)) {
        return -EINVAL;
    }
    errno = 0;
    v = strtoll(nptr, &ep, base);
    ret = strtox_finish(nptr, ep, end, errno);
    if (ret == -EINVAL) {
        return ret;
    }
    if (v < min) {
        v = min;
        ret = -ERANGE;
    } else if (v > max) {
        v = max;
        ret = -ERANGE;
    }
    *result = v;
    return ret;
}

/*
 * Shared unsigned core. strtoull() happily negates "-1" into ULLONG_MAX;
 * a size or count given as a negative number is a user error, so reject
 * the sign up front.
 */
static int parse_unsigned(const char *nptr, const char **end, int base,
                          unsigned long long max, unsigned long long *result)
{
    const char *p;
    char *ep;
    unsigned long long v;
    int ret;

    *result = 0;
    if (strtox_bad_args(nptr, end, base)) {
        return -EINVAL;
    }
    for (p = nptr; g_ascii_isspace(*p); p++) {
        continue;
    }
    if (*p == '-') {
        if (end) {
            *end = nptr;
        }
        return -EINVAL;
    }
    errno = 0;
    v = strtoull(nptr, &ep, base);
    ret = strtox_finish(nptr, ep, end, errno);
    if (ret == -EINVAL) {
        return ret;
    }
    if (ret == -ERANGE || v > max) {
        v = max;
        ret = -ERANGE;
    }
    *result = v;
    return ret;
}

int qemu_strtoi(const char *nptr, const char **end, int base, int *result)
{
    long long v;
    int ret = parse_signed(nptr, end, base, INT_MIN, INT_MAX, &v);

    *result = v;
    return ret;
}

int qemu_strtoui(const char *nptr, const char **end, int base,
                 unsigned int *result)
{
    unsigned long long v;
    int ret = parse_unsigned(nptr, end, base, UINT_MAX, &v);

    *result = v;
    return ret;
}

int qemu_strtol(const char *nptr, const char **end, int base, long *result)
{
    long long v;
    int ret = parse_signed(nptr, end, base, LONG_MIN, LONG_MAX, &v);

    *result = v;
    return ret;
}

int qemu_strtoul(const char *nptr, const char **end, int base,
                 unsigned long *result)
{
    unsigned long long v;
    int ret = parse_unsigned(nptr, end, base, ULONG_MAX, &v);

    *result = v;
    return ret;
}

int qemu_strtoi64(const char *nptr, const char **end, int base,
                  int64_t *result)
{
    long long v;
    int ret = parse_signed(nptr, end, base, INT64_MIN, INT64_MAX, &v);

    *result = v;
    return ret;
}

int qemu_strtou64(const char *nptr, const char **end, int base,
                  uint64_t *result)
{
    unsigned long long v;
    int ret = parse_unsigned(nptr, end, base, UINT64_MAX, &v);

    *result = v;
    return ret;
}

/* Multiplier of a size suffix, or 0 if @c is not one. */
static uint64_t size_suffix_mul(char c, uint64_t unit)
{
    static const char suffixes[] = "BKMGTPE";
    const char *s;
    uint64_t mul = 1;

    if (c == '\0') {
        return 0;
    }
    s = strchr(suffixes, g_ascii_toupper(c));
    if (!s) {
        return 0;
    }
    for (; s > suffixes; s--) {
        mul *= unit;
    }
    return mul;
}

/* The parsed pieces of a size, before scaling. */
typedef struct SizeParse {
    uint64_t whole;             /* integer part */
    const char *frac;           /* fraction digits [frac, frac_end) */
    const char *frac_end;
    bool frac_nonzero;          /* some fraction digit is not '0' */
    bool hex;
    bool overflow;              /* integer part >= 2^64 */
} SizeParse;

/*
 * Parse the number in front of the suffix. Returns the end of it, or
 * NULL if there are no digits at all.
 */
static const char *size_parse_number(const char *p, SizeParse *sp)
{
    bool digits = false;

    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && g_ascii_isxdigit(p[2])) {
        sp->hex = true;
        for (p += 2; g_ascii_isxdigit(*p); p++) {
            if (sp->whole >> 60) {
                sp->overflow = true;
            }
            sp->whole = (sp->whole << 4) | g_ascii_xdigit_value(*p);
        }
        return p;
    }
    for (; g_ascii_isdigit(*p); p++) {
        unsigned d = *p - '0';

        digits = true;
        if (sp->whole > (UINT64_MAX - d) / 10) {
            sp->overflow = true;
        } else {
            sp->whole = sp->whole * 10 + d;
        }
    }
    sp->frac = sp->frac_end = p;
    if (*p == '.') {
        for (sp->frac = ++p; g_ascii_isdigit(*p); p++) {
            digits = true;
            sp->frac_nonzero |= *p != '0';
        }
        sp->frac_end = p;
    }
    return digits ? p : NULL;
}

/*
 * The fraction 0.d1d2...dn times @mul, rounded to nearest (halves up),
 * exactly for any number of digits and without floating point. Horner's
 * scheme from the last digit keeps only floor(2 * value) at each step
 * (floor((d + x) / 10) == floor((d + floor(x)) / 10) for integer d), and
 * round(y) == (floor(2y) + 1) / 2. The running value stays below 2 * mul.
 */
static uint64_t size_scale_fraction(const char *digits, const char *end,
                                    uint64_t mul)
{
    unsigned __int128 twice = 0;
    const char *p;

    for (p = end; p > digits; p--) {
        twice = ((unsigned __int128)(p[-1] - '0') * 2 * mul + twice) / 10;
    }
    return (uint64_t)((twice + 1) / 2);
}

static int do_strtosz(const char *nptr, const char **end, char default_suffix,
                      uint64_t unit, uint64_t *result)
{
    SizeParse sp = { 0 };
    const char *p;
    uint64_t mul;
    unsigned __int128 total;
    int ret = 0;

    *result = 0;
    if (!nptr) {
        if (end) {
            *end = NULL;
        }
        return -EINVAL;
    }
    for (p = nptr; g_ascii_isspace(*p); p++) {
        continue;
    }
    /* No sign accepted: "-0" is as wrong as "-1" for a size. */
    p = size_parse_number(p, &sp);
    if (!p) {
        goto invalid;
    }
    mul = size_suffix_mul(*p, unit);
    if (mul) {
        /* B and E are hex digits, so hex takes no suffix: plain bytes only. */
        if (sp.hex) {
            goto invalid;
        }
        p++;
        if (g_ascii_isdigit(*p) || *p == '+' || *p == '-') {
            goto invalid;
        }
    } else {
        if (sp.hex && *p == '.') {
            goto invalid;
        }
        mul = size_suffix_mul(default_suffix, unit);
    }
    if (mul == 1 && sp.frac_nonzero) {
        goto invalid;
    }

    total = (unsigned __int128)sp.whole * mul +
            size_scale_fraction(sp.frac, sp.frac_end, mul);
    if (sp.overflow || total > UINT64_MAX) {
        ret = -ERANGE;
    }

    if (end) {
        *end = p;
    } else if (*p) {
        return -EINVAL;
    }
    if (ret == 0) {
        *result = total;
    }
    return ret;

invalid:
    if (end) {
        *end = nptr;
    }
    return -EINVAL;
}

int qemu_strtosz(const char *nptr, const char **end, uint64_t *result)
{
    return do_strtosz(nptr, end, 'B', 1024, result);
}

int qemu_strtosz_MiB(const char *nptr, const char **end, uint64_t *result)
{
    return do_strtosz(nptr, end, 'M', 1024, result);
}

int qemu_strtosz_metric(const char *nptr, const char **end, uint64_t *result)
{
    return do_strtosz(nptr, end, 'B', 1000, result);
}

bool qemu_parse_bool(const char *s, bool *val)
{
    static const char *const yes[] = { "on", "yes", "true" };
    static const char *const no[] = { "off", "no", "false" };
    size_t i;

    if (!s) {
        return false;
    }
    for (i = 0; i < ARRAY_SIZE(yes); i++) {
        if (g_str_equal(s, yes[i])) {
            *val = true;
            return true;
        }
        if (g_str_equal(s, no[i])) {
            *val = false;
            return true;
        }
    }
    return false;
}

char *size_to_str(uint64_t val)
{
    static const char *const prefixes[] = {
        "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
    };
    double d = val;
    size_t i = 0;

    /*
     * Move up a unit once the number would print as 1000 or more with
     * three significant digits: "0.977 GiB" rather than "1e+03 MiB".
     */
    while (i < ARRAY_SIZE(prefixes) - 1 && d >= 999.5) {
        d /= 1024;
        i++;
    }
    return g_strdup_printf("%.3g %sB", d, prefixes[i]);
}

int qemu_pstrcmp0(const char **str1, const char **str2)
{
    return g_strcmp0(*str1, *str2);
}

bool strstart(const char *str, const char *prefix, const char **ptr)
{
    size_t n = strlen(prefix);

    if (strncmp(str, prefix, n) != 0) {
        return false;
    }
    if (ptr) {
        *ptr = str + n;
    }
    return true;
}

void pstrcpy(char *buf, size_t buf_size, const char *str)
{
    size_t n;

    if (buf_size == 0) {
        return;
    }
    n = strnlen(str, buf_size - 1);
    memcpy(buf, str, n);
    buf[n] = '\0';
}

bool qemu_pread_full(int fd, void *buf, size_t len, int64_t off)
{
    uint8_t *p = buf;

    while (len) {
        ssize_t n = pread(fd, p, len, off);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            if (n == 0) {
                errno = ENODATA;
            }
            return false;
        }
        p += n;
        len -= n;
        off += n;
    }
    return true;
}

bool qemu_pwrite_full(int fd, const void *buf, size_t len, int64_t off)
{
    const uint8_t *p = buf;

    while (len) {
        ssize_t n = pwrite(fd, p, len, off);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            if (n == 0) {
                errno = EIO;
            }
            return false;
        }
        p += n;
        len -= n;
        off += n;
    }
    return true;
}

bool id_wellformed(const char *id)
{
    if (!g_ascii_isalpha(id[0])) {
        return false;
    }
    for (const char *p = id + 1; *p; p++) {
        if (!g_ascii_isalnum(*p) && !strchr("-._", *p)) {
            return false;
        }
    }
    return true;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * String helpers with QEMU's semantics: strict number and size parsing
 * (0 / -EINVAL / -ERANGE, never abort), booleans, human-readable sizes.
 */
#ifndef QEMU_CUTILS_H
#define QEMU_CUTILS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Integer parsing: qemu_strtoi, qemu_strtoui, qemu_strtol, qemu_strtoul,
 * qemu_strtoi64, qemu_strtou64.
 *
 * Leading whitespace is skipped and @base is as for strtol() (0 means
 * auto-detect 0x/0 prefixes). With @end == NULL the whole string must be
 * consumed; otherwise *end is set to the first unparsed character.
 *
 * Returns:
 *   0        success, *result set
 *   -EINVAL  NULL or empty string, no digits, bad base, trailing garbage
 *            (only when @end is NULL), or a '-' for the unsigned variants.
 *            *result = 0 and *end = nptr.
 *   -ERANGE  value does not fit; *result is clamped to the nearest limit
 *            and *end points past the digits.
 *
 * Unlike strtoul(), the unsigned variants never wrap "-1" to a huge value.
 */
int qemu_strtoi(const char *nptr, const char **end, int base, int *result);
int qemu_strtoui(const char *nptr, const char **end, int base,
                 unsigned int *result);
int qemu_strtol(const char *nptr, const char **end, int base, long *result);
int qemu_strtoul(const char *nptr, const char **end, int base,
                 unsigned long *result);
int qemu_strtoi64(const char *nptr, const char **end, int base,
                  int64_t *result);
int qemu_strtou64(const char *nptr, const char **end, int base,
                  uint64_t *result);

/*
 * Size parsing: a non-negative decimal number with an optional fraction
 * and an optional case-insensitive suffix B, K, M, G, T, P or E (powers
 * of 1024; of 1000 for the _metric variant). Without a suffix the unit is
 * bytes (MiB for qemu_strtosz_MiB). "1.5G" and ".5K" are fine; a fraction
 * needs a unit larger than a byte ("1.5" and "1.1B" are rejected, "1.0B"
 * is tolerated). Fractions round to the nearest byte. A plain hex number
 * ("0x1000") is accepted, but not with a fraction or suffix. A suffix
 * followed by a digit or sign ("1e5", "1.5E+3K") is rejected rather than
 * misread as a float exponent.
 *
 * @end as for qemu_strtoi64. Returns 0, -EINVAL (also for negative
 * numbers) or -ERANGE (2^64 or more); on error *result is set to 0.
 */
int qemu_strtosz(const char *nptr, const char **end, uint64_t *result);
int qemu_strtosz_MiB(const char *nptr, const char **end, uint64_t *result);
int qemu_strtosz_metric(const char *nptr, const char **end, uint64_t *result);

/*
 * qemu_parse_bool: accept "on", "yes", "true" and "off", "no", "false"
 * (the spellings QEMU options accept). Returns false and leaves *val alone
 * for anything else, including NULL.
 */
bool qemu_parse_bool(const char *s, bool *val);

/*
 * size_to_str: "0 B", "512 MiB", "1.5 GiB", "0.977 KiB" (3 significant
 * digits, binary prefixes, switching unit once the number reaches 1000).
 * Returns: a string to g_free().
 */
char *size_to_str(uint64_t val);

/* qemu_pstrcmp0: g_strcmp0() on pointers to strings, for qsort(). */
int qemu_pstrcmp0(const char **str1, const char **str2);

/*
 * strstart: whether @str begins with @prefix; if so and @ptr is not NULL,
 * *ptr is set to the rest of @str.
 */
bool strstart(const char *str, const char *prefix, const char **ptr);
/*
 * pread/pwrite of all @len bytes at @off, across short transfers and EINTR.
 * False with errno set (ENODATA: the file ended first; EIO: a write wrote
 * nothing).
 */
bool qemu_pread_full(int fd, void *buf, size_t len, int64_t off);
bool qemu_pwrite_full(int fd, const void *buf, size_t len, int64_t off);

/*
 * pstrcpy: copy @str into @buf of @buf_size bytes, truncating, always
 * NUL-terminated when buf_size > 0 (unlike strncpy).
 */
void pstrcpy(char *buf, size_t buf_size, const char *str);

/*
 * QEMU's rule for an object, -netdev or -device id: a letter, then
 * letters, digits, '-', '.' and '_'.
 */
bool id_wellformed(const char *id);

#endif

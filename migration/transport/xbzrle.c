/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * XBZRLE encode and decode (see xbzrle.h for the format). The encoder
 * compares a 64-bit word at a time and finds the first differing byte in
 * a word with a count of trailing zero bits; the decoder validates the
 * whole delta before it applies any of it.
 */
#include "qemu/osdep.h"
#include "xbzrle.h"

#define ULEB_MAX 16384          /* lengths fit two ULEB128 bytes */

static size_t uleb128_len(uint32_t v)
{
    return v < 0x80 ? 1 : 2;
}

static size_t uleb128_put(uint8_t *p, uint32_t v)
{
    if (v < 0x80) {
        p[0] = v;
        return 1;
    }
    p[0] = (v & 0x7f) | 0x80;
    p[1] = v >> 7;
    return 2;
}

/* Reads a length of at most two bytes at @p[0..avail); 0 if malformed. */
static size_t uleb128_get(const uint8_t *p, size_t avail, uint32_t *v)
{
    if (avail >= 1 && !(p[0] & 0x80)) {
        *v = p[0];
        return 1;
    }
    if (avail >= 2 && !(p[1] & 0x80)) {
        *v = (p[0] & 0x7f) | (uint32_t)p[1] << 7;
        return 2;
    }
    return 0;
}

static inline uint64_t load64(const uint8_t *p)
{
    uint64_t v;

    memcpy(&v, p, sizeof(v));
    return v;
}

/* First index >= @i where @a and @b differ (== @b), or @len. */
static size_t run_end(const uint8_t *a, const uint8_t *b, size_t i, size_t len, bool equal)
{
    /* Byte steps up to a word boundary, then words. */
    while (i < len && (i & 7)) {
        if ((a[i] == b[i]) != equal) {
            return i;
        }
        i++;
    }
    while (i < len) {
        uint64_t x = load64(a + i) ^ load64(b + i);
        /*
         * An unchanged run ends at the first nonzero byte of x, a changed
         * run at the first zero byte (the lowest bit this sets is exact).
         */
        uint64_t stop = equal ? x : (x - 0x0101010101010101ull) & ~x & 0x8080808080808080ull;

        if (stop) {
            return i + (__builtin_ctzll(stop) >> 3);
        }
        i += 8;
    }
    return len;
}

int xbzrle_encode(const uint8_t *old, const uint8_t *new, size_t len, uint8_t *out,
                  size_t out_max)
{
    size_t i = 0, o = 0;

    assert(len < ULEB_MAX && !(len & 7));
    while (i < len) {
        size_t same_end = run_end(old, new, i, len, true);
        size_t diff_end;

        if (same_end == len) {
            break;              /* the trailing unchanged run is implied */
        }
        diff_end = run_end(old, new, same_end, len, false);
        if (o + uleb128_len(same_end - i) + uleb128_len(diff_end - same_end) +
            (diff_end - same_end) > out_max) {
            return -1;
        }
        o += uleb128_put(out + o, same_end - i);
        o += uleb128_put(out + o, diff_end - same_end);
        memcpy(out + o, new + same_end, diff_end - same_end);
        o += diff_end - same_end;
        i = diff_end;
    }
    return o;
}

/* Walks the delta; with @page NULL only checks it. */
static int xbzrle_walk(const uint8_t *enc, size_t enc_len, uint8_t *page, size_t len)
{
    size_t e = 0, d = 0;

    while (e < enc_len) {
        uint32_t same, diff;
        size_t n = uleb128_get(enc + e, enc_len - e, &same);

        /* Only the first unchanged run may be empty. */
        if (!n || (same == 0 && e != 0)) {
            return -1;
        }
        e += n;
        n = uleb128_get(enc + e, enc_len - e, &diff);
        if (!n || diff == 0) {
            return -1;
        }
        e += n;
        if ((uint64_t)d + same + diff > len || diff > enc_len - e) {
            return -1;
        }
        d += same;
        if (page) {
            memcpy(page + d, enc + e, diff);
        }
        d += diff;
        e += diff;
    }
    return 0;
}

int xbzrle_decode(const uint8_t *enc, size_t enc_len, uint8_t *page, size_t len)
{
    if (xbzrle_walk(enc, enc_len, NULL, len) < 0) {
        return -1;
    }
    return xbzrle_walk(enc, enc_len, page, len);
}

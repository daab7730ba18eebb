/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Out-of-line bitmap operations: ranges, searching, counting and the
 * OR-and-count merges the dirty-page pipeline is built on. Every loop works
 * on whole 64-bit words; only the two ends of a range are masked.
 */
#include "qemu/osdep.h"
#include "qemu/bitmap.h"

/*
 * A bit range [start, start + nr) seen as words: the first and last word
 * it touches and the mask of its bits inside each. When both ends fall in
 * one word, first == last and the caller must use head & tail.
 */
typedef struct BitRange {
    unsigned long first;
    unsigned long last;
    unsigned long head;
    unsigned long tail;
} BitRange;

static inline BitRange bit_range(unsigned long start, unsigned long nr)
{
    unsigned long end = start + nr - 1;   /* inclusive; nr > 0 */
    BitRange r = {
        .first = BIT_WORD(start),
        .last = BIT_WORD(end),
        .head = BITMAP_FIRST_WORD_MASK(start),
        .tail = ~0UL >> (BITS_PER_LONG - 1 - end % BITS_PER_LONG),
    };

    return r;
}

unsigned long *bitmap_new(unsigned long nbits)
{
    /* Never return NULL, even for an empty map: callers treat NULL as "off". */
    return g_new0(unsigned long, MAX(BITS_TO_LONGS(nbits), 1));
}

void bitmap_zero(unsigned long *map, unsigned long nbits)
{
    memset(map, 0, BITS_TO_LONGS(nbits) * sizeof(unsigned long));
}

void bitmap_fill(unsigned long *map, unsigned long nbits)
{
    unsigned long full = nbits / BITS_PER_LONG;

    memset(map, 0xff, full * sizeof(unsigned long));
    if (nbits % BITS_PER_LONG) {
        map[full] = BITMAP_LAST_WORD_MASK(nbits);
    }
}

void bitmap_copy(unsigned long *dst, const unsigned long *src,
                 unsigned long nbits)
{
    memcpy(dst, src, BITS_TO_LONGS(nbits) * sizeof(unsigned long));
}

bool bitmap_empty(const unsigned long *map, unsigned long nbits)
{
    unsigned long full = nbits / BITS_PER_LONG;
    unsigned long i;

    for (i = 0; i < full; i++) {
        if (map[i]) {
            return false;
        }
    }
    if (nbits % BITS_PER_LONG) {
        return (map[full] & BITMAP_LAST_WORD_MASK(nbits)) == 0;
    }
    return true;
}

bool bitmap_full(const unsigned long *map, unsigned long nbits)
{
    unsigned long full = nbits / BITS_PER_LONG;
    unsigned long i;

    for (i = 0; i < full; i++) {
        if (~map[i]) {
            return false;
        }
    }
    if (nbits % BITS_PER_LONG) {
        unsigned long mask = BITMAP_LAST_WORD_MASK(nbits);
        return (map[full] & mask) == mask;
    }
    return true;
}

bool bitmap_equal(const unsigned long *a, const unsigned long *b,
                  unsigned long nbits)
{
    unsigned long full = nbits / BITS_PER_LONG;
    unsigned long i;

    for (i = 0; i < full; i++) {
        if (a[i] != b[i]) {
            return false;
        }
    }
    if (nbits % BITS_PER_LONG) {
        return ((a[full] ^ b[full]) & BITMAP_LAST_WORD_MASK(nbits)) == 0;
    }
    return true;
}

void bitmap_or(unsigned long *dst, const unsigned long *a,
               const unsigned long *b, unsigned long nbits)
{
    unsigned long n = BITS_TO_LONGS(nbits);
    unsigned long i;

    for (i = 0; i < n; i++) {
        dst[i] = a[i] | b[i];
    }
}

bool bitmap_and(unsigned long *dst, const unsigned long *a,
                const unsigned long *b, unsigned long nbits)
{
    unsigned long n = BITS_TO_LONGS(nbits);
    unsigned long any = 0;
    unsigned long i;

    for (i = 0; i < n; i++) {
        dst[i] = a[i] & b[i];
        any |= i + 1 < n ? dst[i] : dst[i] & BITMAP_LAST_WORD_MASK(nbits);
    }
    return any != 0;
}

bool bitmap_andnot(unsigned long *dst, const unsigned long *a,
                   const unsigned long *b, unsigned long nbits)
{
    unsigned long n = BITS_TO_LONGS(nbits);
    unsigned long any = 0;
    unsigned long i;

    for (i = 0; i < n; i++) {
        dst[i] = a[i] & ~b[i];
        any |= i + 1 < n ? dst[i] : dst[i] & BITMAP_LAST_WORD_MASK(nbits);
    }
    return any != 0;
}

void bitmap_set(unsigned long *map, unsigned long start, unsigned long nr)
{
    BitRange r;

    if (nr == 0) {
        return;
    }
    r = bit_range(start, nr);
    if (r.first == r.last) {
        map[r.first] |= r.head & r.tail;
        return;
    }
    map[r.first] |= r.head;
    memset(&map[r.first + 1], 0xff,
           (r.last - r.first - 1) * sizeof(unsigned long));
    map[r.last] |= r.tail;
}

void bitmap_clear(unsigned long *map, unsigned long start, unsigned long nr)
{
    BitRange r;

    if (nr == 0) {
        return;
    }
    r = bit_range(start, nr);
    if (r.first == r.last) {
        map[r.first] &= ~(r.head & r.tail);
        return;
    }
    map[r.first] &= ~r.head;
    memset(&map[r.first + 1], 0,
           (r.last - r.first - 1) * sizeof(unsigned long));
    map[r.last] &= ~r.tail;
}

void bitmap_set_atomic(unsigned long *map, unsigned long start,
                       unsigned long nr)
{
    BitRange r;
    unsigned long i;

    if (nr == 0) {
        return;
    }
    r = bit_range(start, nr);
    if (r.first == r.last) {
        __atomic_fetch_or(&map[r.first], r.head & r.tail, __ATOMIC_SEQ_CST);
        return;
    }
    __atomic_fetch_or(&map[r.first], r.head, __ATOMIC_SEQ_CST);
    /*
     * A plain store of ~0 would be just as correct for the middle words
     * (setting every bit commutes with any concurrent set or clear), but
     * an RMW keeps the ordering guarantees identical to set_bit_atomic().
     */
    for (i = r.first + 1; i < r.last; i++) {
        __atomic_fetch_or(&map[i], ~0UL, __ATOMIC_SEQ_CST);
    }
    __atomic_fetch_or(&map[r.last], r.tail, __ATOMIC_SEQ_CST);
}

void bitmap_clear_atomic(unsigned long *map, unsigned long start, unsigned long nr)
{
    BitRange r;

    if (nr == 0) {
        return;
    }
    r = bit_range(start, nr);
    if (r.first == r.last) {
        __atomic_fetch_and(&map[r.first], ~(r.head & r.tail), __ATOMIC_SEQ_CST);
        return;
    }
    __atomic_fetch_and(&map[r.first], ~r.head, __ATOMIC_SEQ_CST);
    for (unsigned long i = r.first + 1; i < r.last; i++) {
        __atomic_fetch_and(&map[i], 0UL, __ATOMIC_SEQ_CST);
    }
    __atomic_fetch_and(&map[r.last], ~r.tail, __ATOMIC_SEQ_CST);
}

bool bitmap_test_and_clear_range(unsigned long *map, unsigned long start,
                                 unsigned long nr)
{
    unsigned long seen;
    unsigned long i;
    BitRange r;

    if (nr == 0) {
        return false;
    }
    r = bit_range(start, nr);
    if (r.first == r.last) {
        unsigned long mask = r.head & r.tail;
        seen = map[r.first] & mask;
        map[r.first] &= ~mask;
        return seen != 0;
    }
    seen = map[r.first] & r.head;
    map[r.first] &= ~r.head;
    for (i = r.first + 1; i < r.last; i++) {
        seen |= map[i];
        map[i] = 0;
    }
    seen |= map[r.last] & r.tail;
    map[r.last] &= ~r.tail;
    return seen != 0;
}

/*
 * Shared search loop: invert == ~0UL searches for zero bits. Bits past
 * size in the last word may hold garbage, hence the final clamp.
 */
static inline unsigned long find_next(const unsigned long *map,
                                      unsigned long size,
                                      unsigned long offset,
                                      unsigned long invert)
{
    unsigned long nwords;
    unsigned long i;
    unsigned long word;
    unsigned long found;

    if (offset >= size) {
        return size;
    }
    nwords = BITS_TO_LONGS(size);
    i = BIT_WORD(offset);
    word = (map[i] ^ invert) & BITMAP_FIRST_WORD_MASK(offset);
    while (!word) {
        if (++i >= nwords) {
            return size;
        }
        word = map[i] ^ invert;
    }
    found = i * BITS_PER_LONG + __builtin_ctzl(word);
    return MIN(found, size);
}

unsigned long find_next_bit(const unsigned long *map, unsigned long size,
                            unsigned long offset)
{
    return find_next(map, size, offset, 0);
}

unsigned long find_next_zero_bit(const unsigned long *map, unsigned long size,
                                 unsigned long offset)
{
    return find_next(map, size, offset, ~0UL);
}

unsigned long bitmap_count_one(const unsigned long *map, unsigned long nbits)
{
    unsigned long full = nbits / BITS_PER_LONG;
    unsigned long count = 0;
    unsigned long i;

    for (i = 0; i < full; i++) {
        count += __builtin_popcountl(map[i]);
    }
    if (nbits % BITS_PER_LONG) {
        count += __builtin_popcountl(map[full] & BITMAP_LAST_WORD_MASK(nbits));
    }
    return count;
}

unsigned long bitmap_count_one_with_offset(const unsigned long *map,
                                           unsigned long offset,
                                           unsigned long nbits)
{
    unsigned long count;
    unsigned long i;
    BitRange r;

    if (nbits == 0) {
        return 0;
    }
    r = bit_range(offset, nbits);
    if (r.first == r.last) {
        return __builtin_popcountl(map[r.first] & r.head & r.tail);
    }
    count = __builtin_popcountl(map[r.first] & r.head);
    for (i = r.first + 1; i < r.last; i++) {
        count += __builtin_popcountl(map[i]);
    }
    return count + __builtin_popcountl(map[r.last] & r.tail);
}

/* OR one word into *d and count the bits that were not there before. */
static inline unsigned long or_word_count_new(unsigned long *d, unsigned long v)
{
    unsigned long fresh = v & ~*d;

    *d |= v;
    return __builtin_popcountl(fresh);
}

unsigned long bitmap_or_count_new(unsigned long *dst, const unsigned long *src,
                                  unsigned long nwords)
{
    unsigned long count = 0;
    unsigned long i;

    for (i = 0; i < nwords; i++) {
        /* Most of a dirty log is zero between syncs: skip without a store. */
        if (likely(!src[i])) {
            continue;
        }
        count += or_word_count_new(&dst[i], src[i]);
    }
    return count;
}

unsigned long bitmap_or_count_new_at(unsigned long *dst,
                                     unsigned long dst_start_bit,
                                     const unsigned long *src,
                                     unsigned long nbits)
{
    unsigned long full = nbits / BITS_PER_LONG;
    unsigned long nwords = BITS_TO_LONGS(nbits);
    unsigned long shift = dst_start_bit % BITS_PER_LONG;
    unsigned long *d = dst + BIT_WORD(dst_start_bit);
    unsigned long count;
    unsigned long i;

    if (shift == 0) {
        count = bitmap_or_count_new(d, src, full);
        if (full < nwords) {
            unsigned long last = src[full] & BITMAP_LAST_WORD_MASK(nbits);
            count += or_word_count_new(&d[full], last);
        }
        return count;
    }

    /*
     * Source word i straddles two destination words:
     *
     *   src[i]:        [ hi part (shift bits) | lo part (64 - shift bits) ]
     *   dst:   d[i+1] <---- v >> (64 - shift)   d[i] <---- v << shift
     *
     * Each destination bit receives exactly one source bit, so counting
     * per half is exact. The high half is only written when non-zero;
     * since src is masked to nbits, that keeps every store inside the
     * destination range and never touches the word past its end.
     */
    count = 0;
    for (i = 0; i < nwords; i++) {
        unsigned long v = src[i];
        unsigned long hi;

        if (i == nwords - 1) {
            v &= BITMAP_LAST_WORD_MASK(nbits);
        }
        if (likely(!v)) {
            continue;
        }
        count += or_word_count_new(&d[i], v << shift);
        hi = v >> (BITS_PER_LONG - shift);
        if (hi) {
            count += or_word_count_new(&d[i + 1], hi);
        }
    }
    return count;
}

unsigned long bitmap_or_count_new_take(unsigned long *dst, unsigned long *src,
                                       unsigned long nwords)
{
    unsigned long count = 0;
    unsigned long i;

    for (i = 0; i < nwords; i++) {
        unsigned long v;

        /* A relaxed peek avoids dirtying the cache line of a zero word. */
        if (likely(!__atomic_load_n(&src[i], __ATOMIC_RELAXED))) {
            continue;
        }
        v = __atomic_exchange_n(&src[i], 0, __ATOMIC_SEQ_CST);
        count += or_word_count_new(&dst[i], v);
    }
    return count;
}

void bitmap_extract_words(unsigned long *dst, const unsigned long *map,
                          unsigned long start_bit, unsigned long nbits)
{
    unsigned long nwords = BITS_TO_LONGS(nbits);
    unsigned long shift = start_bit % BITS_PER_LONG;
    const unsigned long *s = map + BIT_WORD(start_bit);
    unsigned long src_words;
    unsigned long i;

    if (nbits == 0) {
        return;
    }
    if (shift == 0) {
        memcpy(dst, s, nwords * sizeof(unsigned long));
    } else {
        /* Words of map that hold part of the range, counted from s. */
        src_words = BIT_WORD(shift + nbits - 1) + 1;
        for (i = 0; i < nwords; i++) {
            unsigned long v = s[i] >> shift;

            if (i + 1 < src_words) {
                v |= s[i + 1] << (BITS_PER_LONG - shift);
            }
            dst[i] = v;
        }
    }
    dst[nwords - 1] &= BITMAP_LAST_WORD_MASK(nbits);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Word-at-a-time bitmaps of unsigned long (64-bit) words.
 *
 * Layout: bit i lives in bit (i % 64) of word i / 64, which is exactly the
 * little-endian layout KVM_GET_DIRTY_LOG fills on x86_64, so a KVM slot
 * bitmap can be handed to these helpers without conversion.
 *
 * Operations (nbits/nr count bits, nwords counts words):
 *
 *  BITS_PER_LONG                 bits in one word (64)
 *  BIT_WORD(nr)                  index of the word holding bit nr
 *  BIT_MASK(nr)                  mask of bit nr inside its word
 *  BITS_TO_LONGS(nbits)          words needed for nbits
 *
 *  bitmap_new(nbits)             allocate a zeroed bitmap (g_free it)
 *  bitmap_zero(map, nbits)       clear every bit
 *  bitmap_fill(map, nbits)       set bits [0, nbits), tail of last word 0
 *  bitmap_copy(dst, src, nbits)  dst = src
 *  bitmap_empty(map, nbits)      no bit in [0, nbits) set?
 *  bitmap_full(map, nbits)       every bit in [0, nbits) set?
 *  bitmap_equal(a, b, nbits)     same bits in [0, nbits)?
 *  bitmap_or(dst, a, b, nbits)   dst = a | b
 *  bitmap_and(dst, a, b, nbits)  dst = a & b; returns whether non-empty
 *  bitmap_andnot(dst, a, b, n)   dst = a & ~b; returns whether non-empty
 *
 *  set_bit(nr, map)              set one bit
 *  clear_bit(nr, map)            clear one bit
 *  change_bit(nr, map)           flip one bit
 *  test_bit(nr, map)             read one bit
 *  test_and_set_bit(nr, map)     set one bit, return its old value
 *  test_and_clear_bit(nr, map)   clear one bit, return its old value
 *  set_bit_atomic(nr, map)       set one bit, safe against other atomics
 *  clear_bit_atomic(nr, map)     clear one bit, atomically
 *  test_and_set_bit_atomic()     atomic test-and-set of one bit
 *  test_and_clear_bit_atomic()   clear one bit atomically, return old value
 *  test_bit_atomic(nr, map)      read one bit that other threads change atomically
 *
 *  bitmap_set(map, start, nr)    set bits [start, start + nr)
 *  bitmap_clear(map, start, nr)  clear bits [start, start + nr)
 *  bitmap_set_atomic(map, s, nr) bitmap_set, each word updated atomically
 *  bitmap_test_and_clear_range() clear a range, return whether any was set
 *
 *  find_first_bit(map, size)     first set bit, or size
 *  find_next_bit(map, size, off) first set bit >= off, or size
 *  find_first_zero_bit(...)      first clear bit, or size
 *  find_next_zero_bit(...)       first clear bit >= off, or size
 *
 *  bitmap_count_one(map, nbits)  set bits in [0, nbits)
 *  bitmap_count_one_with_offset  set bits in [offset, offset + nbits)
 *
 *  bitmap_or_count_new()         dst |= src; return bits new to dst
 *  bitmap_or_count_new_at()      same, src placed at any bit of dst
 *  bitmap_or_count_new_take()    same as _new, atomically draining src
 *  bitmap_extract_words()        copy a bit range out to bit 0 of dst
 *
 * None of the non-atomic helpers synchronise: callers hold whatever lock
 * protects the bitmap. Range helpers do not check bounds against the size
 * of the allocation; that is the caller's contract.
 */
#ifndef QEMU_BITMAP_H
#define QEMU_BITMAP_H

#include <stdbool.h>
#include <stddef.h>

#if __SIZEOF_LONG__ != 8
#error "bitmaps assume 64-bit unsigned long words (the KVM dirty-log layout)"
#endif

#define BITS_PER_BYTE 8
#define BITS_PER_LONG (__SIZEOF_LONG__ * BITS_PER_BYTE)

#define BIT_WORD(nr) ((nr) / BITS_PER_LONG)
#define BIT_MASK(nr) (1UL << ((nr) % BITS_PER_LONG))
#define BITS_TO_LONGS(nbits) (((nbits) + BITS_PER_LONG - 1) / BITS_PER_LONG)

/* Bits at and above (start % 64) of a word: the head of a range. */
#define BITMAP_FIRST_WORD_MASK(start) (~0UL << ((start) % BITS_PER_LONG))
/* Bits below (nbits % 64) of a word, all of them if nbits % 64 == 0. */
#define BITMAP_LAST_WORD_MASK(nbits) \
    (~0UL >> ((BITS_PER_LONG - ((nbits) % BITS_PER_LONG)) % BITS_PER_LONG))

/* Single-bit operations (not atomic). */

static inline void set_bit(unsigned long nr, unsigned long *map)
{
    map[BIT_WORD(nr)] |= BIT_MASK(nr);
}

static inline void clear_bit(unsigned long nr, unsigned long *map)
{
    map[BIT_WORD(nr)] &= ~BIT_MASK(nr);
}

static inline void change_bit(unsigned long nr, unsigned long *map)
{
    map[BIT_WORD(nr)] ^= BIT_MASK(nr);
}

static inline bool test_bit(unsigned long nr, const unsigned long *map)
{
    return (map[BIT_WORD(nr)] & BIT_MASK(nr)) != 0;
}

static inline bool test_and_set_bit(unsigned long nr, unsigned long *map)
{
    unsigned long *p = &map[BIT_WORD(nr)];
    unsigned long old = *p;

    *p = old | BIT_MASK(nr);
    return (old & BIT_MASK(nr)) != 0;
}

static inline bool test_and_clear_bit(unsigned long nr, unsigned long *map)
{
    unsigned long *p = &map[BIT_WORD(nr)];
    unsigned long old = *p;

    *p = old & ~BIT_MASK(nr);
    return (old & BIT_MASK(nr)) != 0;
}

/*
 * Atomic single-bit operations. Sequentially consistent so that a writer
 * that stores guest data and then marks the page dirty cannot have the
 * mark observed before the data by a thread that clears it and copies.
 */

static inline void set_bit_atomic(unsigned long nr, unsigned long *map)
{
    __atomic_fetch_or(&map[BIT_WORD(nr)], BIT_MASK(nr), __ATOMIC_SEQ_CST);
}

static inline void clear_bit_atomic(unsigned long nr, unsigned long *map)
{
    __atomic_fetch_and(&map[BIT_WORD(nr)], ~BIT_MASK(nr), __ATOMIC_SEQ_CST);
}

static inline bool test_and_set_bit_atomic(unsigned long nr, unsigned long *map)
{
    unsigned long old = __atomic_fetch_or(&map[BIT_WORD(nr)], BIT_MASK(nr),
                                          __ATOMIC_SEQ_CST);

    return (old & BIT_MASK(nr)) != 0;
}

static inline bool test_and_clear_bit_atomic(unsigned long nr,
                                             unsigned long *map)
{
    unsigned long old = __atomic_fetch_and(&map[BIT_WORD(nr)], ~BIT_MASK(nr),
                                           __ATOMIC_SEQ_CST);

    return (old & BIT_MASK(nr)) != 0;
}

static inline bool test_bit_atomic(unsigned long nr, const unsigned long *map)
{
    return (__atomic_load_n(&map[BIT_WORD(nr)], __ATOMIC_ACQUIRE) & BIT_MASK(nr)) != 0;
}

/* Whole-map operations. */

unsigned long *bitmap_new(unsigned long nbits);
void bitmap_zero(unsigned long *map, unsigned long nbits);
void bitmap_fill(unsigned long *map, unsigned long nbits);
void bitmap_copy(unsigned long *dst, const unsigned long *src,
                 unsigned long nbits);
bool bitmap_empty(const unsigned long *map, unsigned long nbits);
bool bitmap_full(const unsigned long *map, unsigned long nbits);
bool bitmap_equal(const unsigned long *a, const unsigned long *b,
                  unsigned long nbits);
void bitmap_or(unsigned long *dst, const unsigned long *a,
               const unsigned long *b, unsigned long nbits);
bool bitmap_and(unsigned long *dst, const unsigned long *a,
                const unsigned long *b, unsigned long nbits);
bool bitmap_andnot(unsigned long *dst, const unsigned long *a,
                   const unsigned long *b, unsigned long nbits);

/* Range operations: bits [start, start + nr). */

void bitmap_set(unsigned long *map, unsigned long start, unsigned long nr);
void bitmap_clear(unsigned long *map, unsigned long start, unsigned long nr);
void bitmap_set_atomic(unsigned long *map, unsigned long start,
                       unsigned long nr);
void bitmap_clear_atomic(unsigned long *map, unsigned long start, unsigned long nr);
bool bitmap_test_and_clear_range(unsigned long *map, unsigned long start,
                                 unsigned long nr);

/* Searching. All return size when no matching bit exists at or past offset. */

unsigned long find_next_bit(const unsigned long *map, unsigned long size,
                            unsigned long offset);
unsigned long find_next_zero_bit(const unsigned long *map, unsigned long size,
                                 unsigned long offset);

static inline unsigned long find_first_bit(const unsigned long *map,
                                           unsigned long size)
{
    return find_next_bit(map, size, 0);
}

static inline unsigned long find_first_zero_bit(const unsigned long *map,
                                                unsigned long size)
{
    return find_next_zero_bit(map, size, 0);
}

/* Counting. */

unsigned long bitmap_count_one(const unsigned long *map, unsigned long nbits);
unsigned long bitmap_count_one_with_offset(const unsigned long *map,
                                           unsigned long offset,
                                           unsigned long nbits);

/*
 * Merging (the dirty-page pipeline, see ARCHITECTURE.md section 4).
 *
 * bitmap_or_count_new: dst |= src over nwords whole words.
 * Returns: how many bits were set in src and not already in dst, i.e. the
 * number of pages that just became dirty, so the caller can add it to the
 * remaining-dirty counter without ever rescanning dst.
 */
unsigned long bitmap_or_count_new(unsigned long *dst, const unsigned long *src,
                                  unsigned long nwords);

/*
 * bitmap_or_count_new_at: OR bits [0, nbits) of src into dst starting at
 * bit dst_start_bit (any alignment; a KVM slot lands in its RAMBlock at a
 * page offset). Bits of src at or beyond nbits are ignored and no dst bit
 * outside [dst_start_bit, dst_start_bit + nbits) is modified.
 * Returns: the number of dst bits that went from 0 to 1.
 */
unsigned long bitmap_or_count_new_at(unsigned long *dst,
                                     unsigned long dst_start_bit,
                                     const unsigned long *src,
                                     unsigned long nbits);

/*
 * bitmap_or_count_new_take: like bitmap_or_count_new, but each src word is
 * atomically exchanged with 0 before being merged, so writers may keep
 * calling set_bit_atomic()/bitmap_set_atomic() on src concurrently without
 * a bit being lost or merged twice (the software dirty bitmap of pages the
 * VMM itself wrote). dst is not accessed atomically.
 */
unsigned long bitmap_or_count_new_take(unsigned long *dst, unsigned long *src,
                                       unsigned long nwords);

/*
 * bitmap_extract_words: copy bits [start_bit, start_bit + nbits) of map to
 * bits [0, nbits) of dst, which holds BITS_TO_LONGS(nbits) words; the
 * unused high bits of dst's last word are cleared. map is only read up to
 * the word holding bit start_bit + nbits - 1.
 */
void bitmap_extract_words(unsigned long *dst, const unsigned long *map,
                          unsigned long start_bit, unsigned long nbits);

#endif

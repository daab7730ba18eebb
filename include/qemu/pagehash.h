/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pagehash: a 64-bit checksum of a page (any multiple of 64 bytes), ours,
 * for mapped-ram's integrity record, which hashes every page a snapshot
 * writes and a restore reads and must cost them a few percent at most
 * (XXH64 alone runs at about 6 GB/s on one core; this at memory speed).
 *
 * Eight 64-bit lanes over 64-byte stripes, XXH3's accumulation: word n
 * (little-endian, n from 0) of the page, d, in lane i = n % 8, with key
 * k = d ^ (n + 1) x 0x9FB21C651E98DF25, adds lo32(k) x hi32(k) to lane i
 * and d itself to lane i ^ 1; the lanes start at (i + 1) x
 * 0xC2B2AE3D27D4EB4F, and the hash is XXH64 of their 64 little-endian
 * bytes with the length as seed. Every change to one word changes a lane
 * (d's sum), the key makes the product depend on the word's place, and
 * XXH64 spreads any lane change over the result. Not cryptographic.
 *
 * pagehash() takes the AVX2 path where the CPU has it; both paths give
 * the same value (tests/unit/test-mapped-ram-integrity.c).
 */
#ifndef QEMU_PAGEHASH_H
#define QEMU_PAGEHASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

uint64_t pagehash(const uint8_t *data, size_t len);
/* The portable path, and the AVX2 one (false, @hash untouched, without AVX2): for tests. */
uint64_t pagehash_portable(const uint8_t *data, size_t len);
bool pagehash_avx2(const uint8_t *data, size_t len, uint64_t *hash);

#endif

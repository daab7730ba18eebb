/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * XXH64, written from its published specification (xxHash's
 * doc/xxhash_spec.md): a 64-bit non-cryptographic hash, portable C with no
 * CPU-specific code, about 4 bytes per cycle. Used where data must be
 * checked, not authenticated (mapped-ram's integrity record).
 *
 * One shot: xxh64(). Streaming: xxh64_init(), xxh64_update() any number of
 * times with any lengths, xxh64_digest(); the result equals xxh64() over
 * the concatenation.
 */
#ifndef QEMU_XXH64_H
#define QEMU_XXH64_H

#include <stddef.h>
#include <stdint.h>

typedef struct Xxh64State {
    uint64_t total_len;
    uint64_t v[4];
    uint64_t seed;
    uint8_t mem[32];
    uint32_t memsize;           /* bytes buffered in mem, < 32 */
} Xxh64State;

uint64_t xxh64(const void *data, size_t len, uint64_t seed);
void xxh64_init(Xxh64State *s, uint64_t seed);
void xxh64_update(Xxh64State *s, const void *data, size_t len);
uint64_t xxh64_digest(const Xxh64State *s);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* XXH64 from its published specification (qemu/xxh64.h). */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/xxh64.h"

#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define P3 0x165667B19E3779F9ULL
#define P4 0x85EBCA77C2B2AE63ULL
#define P5 0x27D4EB2F165667C5ULL

static inline uint64_t rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static inline uint64_t xxh_round(uint64_t acc, uint64_t input)
{
    acc += input * P2;
    acc = rotl64(acc, 31);
    return acc * P1;
}

static inline uint64_t xxh_merge(uint64_t acc, uint64_t val)
{
    acc ^= xxh_round(0, val);
    return acc * P1 + P4;
}

/* Whole 32-byte stripes of @p into the four lanes; returns the bytes consumed. */
static size_t xxh_stripes(uint64_t v[4], const uint8_t *p, size_t len)
{
    const uint8_t *start = p, *end = p + (len & ~(size_t)31);
    uint64_t v1 = v[0], v2 = v[1], v3 = v[2], v4 = v[3];

    while (p < end) {
        v1 = xxh_round(v1, ldq_le_p(p));
        v2 = xxh_round(v2, ldq_le_p(p + 8));
        v3 = xxh_round(v3, ldq_le_p(p + 16));
        v4 = xxh_round(v4, ldq_le_p(p + 24));
        p += 32;
    }
    v[0] = v1;
    v[1] = v2;
    v[2] = v3;
    v[3] = v4;
    return p - start;
}

/* The last < 32 bytes and the avalanche. */
static uint64_t xxh_finish(uint64_t h, const uint8_t *p, size_t len)
{
    while (len >= 8) {
        h ^= xxh_round(0, ldq_le_p(p));
        h = rotl64(h, 27) * P1 + P4;
        p += 8;
        len -= 8;
    }
    if (len >= 4) {
        h ^= (uint64_t)ldl_le_p(p) * P1;
        h = rotl64(h, 23) * P2 + P3;
        p += 4;
        len -= 4;
    }
    while (len--) {
        h ^= *p++ * P5;
        h = rotl64(h, 11) * P1;
    }
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    h ^= h >> 32;
    return h;
}

static uint64_t xxh_converge(const uint64_t v[4])
{
    uint64_t h = rotl64(v[0], 1) + rotl64(v[1], 7) + rotl64(v[2], 12) + rotl64(v[3], 18);

    for (int i = 0; i < 4; i++) {
        h = xxh_merge(h, v[i]);
    }
    return h;
}

void xxh64_init(Xxh64State *s, uint64_t seed)
{
    memset(s, 0, sizeof(*s));
    s->seed = seed;
    s->v[0] = seed + P1 + P2;
    s->v[1] = seed + P2;
    s->v[2] = seed;
    s->v[3] = seed - P1;
}

uint64_t xxh64(const void *data, size_t len, uint64_t seed)
{
    const uint8_t *p = data;
    Xxh64State s;
    uint64_t h;
    size_t done = 0;

    xxh64_init(&s, seed);
    if (len >= 32) {
        done = xxh_stripes(s.v, p, len);
        h = xxh_converge(s.v);
    } else {
        h = seed + P5;
    }
    return xxh_finish(h + len, p + done, len - done);
}

void xxh64_update(Xxh64State *s, const void *data, size_t len)
{
    const uint8_t *p = data;

    s->total_len += len;
    if (s->memsize + len < 32) {
        memcpy(s->mem + s->memsize, p, len);
        s->memsize += len;
        return;
    }
    if (s->memsize) {
        size_t fill = 32 - s->memsize;

        memcpy(s->mem + s->memsize, p, fill);
        xxh_stripes(s->v, s->mem, 32);
        p += fill;
        len -= fill;
        s->memsize = 0;
    }
    p += xxh_stripes(s->v, p, len);
    len &= 31;
    memcpy(s->mem, p, len);
    s->memsize = len;
}

uint64_t xxh64_digest(const Xxh64State *s)
{
    uint64_t h = s->total_len >= 32 ? xxh_converge(s->v) : s->seed + P5;

    return xxh_finish(h + s->total_len, s->mem, s->memsize);
}

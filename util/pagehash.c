/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A page's 64-bit checksum, AVX2 where the CPU has it, the same value without (qemu/pagehash.h). */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/pagehash.h"
#include "qemu/xxh64.h"
#ifdef __x86_64__
#include <immintrin.h>
#endif

#define PH_LANES 8
#define PH_STRIPE (PH_LANES * 8)
#define PH_KEY 0x9FB21C651E98DF25ULL      /* odd: word n's key is n x PH_KEY */
#define PH_SEED 0xC2B2AE3D27D4EB4FULL

/* The lanes, summarised: XXH64 of their little-endian bytes avalanches every bit. */
static uint64_t ph_finish(const uint64_t acc[PH_LANES], size_t len)
{
    uint8_t b[PH_LANES * 8];

    for (int i = 0; i < PH_LANES; i++) {
        stq_le_p(b + 8 * i, acc[i]);
    }
    return xxh64(b, sizeof(b), len);
}

static void ph_init(uint64_t acc[PH_LANES])
{
    for (int i = 0; i < PH_LANES; i++) {
        acc[i] = PH_SEED * (i + 1);
    }
}

uint64_t pagehash_portable(const uint8_t *data, size_t len)
{
    uint64_t acc[PH_LANES];

    ph_init(acc);
    for (size_t s = 0; s < len / PH_STRIPE; s++) {
        for (int i = 0; i < PH_LANES; i++) {
            uint64_t d = ldq_le_p(data + s * PH_STRIPE + 8 * i);
            uint64_t k = d ^ (PH_KEY * (s * PH_LANES + i + 1));

            acc[i ^ 1] += d;
            acc[i] += (k & 0xffffffff) * (k >> 32);
        }
    }
    return ph_finish(acc, len);
}

#ifdef __x86_64__
__attribute__((target("avx2")))
static uint64_t pagehash_avx2_impl(const uint8_t *data, size_t len)
{
    uint64_t acc[PH_LANES];
    __m256i a0, a1, key0, key1, step = _mm256_set1_epi64x(PH_KEY * PH_LANES);

    ph_init(acc);
    a0 = _mm256_loadu_si256((const __m256i *)acc);
    a1 = _mm256_loadu_si256((const __m256i *)(acc + 4));
    key0 = _mm256_set_epi64x(PH_KEY * 4, PH_KEY * 3, PH_KEY * 2, PH_KEY);
    key1 = _mm256_set_epi64x(PH_KEY * 8, PH_KEY * 7, PH_KEY * 6, PH_KEY * 5);
    for (size_t s = 0; s < len / PH_STRIPE; s++) {
        __m256i d0 = _mm256_loadu_si256((const __m256i *)(data + s * PH_STRIPE));
        __m256i d1 = _mm256_loadu_si256((const __m256i *)(data + s * PH_STRIPE + 32));
        __m256i k0 = _mm256_xor_si256(d0, key0), k1 = _mm256_xor_si256(d1, key1);

        /* acc[i] += lo32(k) * hi32(k); acc[i ^ 1] += d (64-bit halves swapped). */
        a0 = _mm256_add_epi64(a0, _mm256_mul_epu32(k0, _mm256_srli_epi64(k0, 32)));
        a1 = _mm256_add_epi64(a1, _mm256_mul_epu32(k1, _mm256_srli_epi64(k1, 32)));
        a0 = _mm256_add_epi64(a0, _mm256_shuffle_epi32(d0, _MM_SHUFFLE(1, 0, 3, 2)));
        a1 = _mm256_add_epi64(a1, _mm256_shuffle_epi32(d1, _MM_SHUFFLE(1, 0, 3, 2)));
        key0 = _mm256_add_epi64(key0, step);
        key1 = _mm256_add_epi64(key1, step);
    }
    _mm256_storeu_si256((__m256i *)acc, a0);
    _mm256_storeu_si256((__m256i *)(acc + 4), a1);
    return ph_finish(acc, len);
}
#endif

bool pagehash_avx2(const uint8_t *data, size_t len, uint64_t *hash)
{
#ifdef __x86_64__
    if (__builtin_cpu_supports("avx2")) {
        *hash = pagehash_avx2_impl(data, len);
        return true;
    }
#endif
    return false;
}

uint64_t pagehash(const uint8_t *data, size_t len)
{
    uint64_t h;

    return pagehash_avx2(data, len, &h) ? h : pagehash_portable(data, len);
}

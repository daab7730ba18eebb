/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * buffer_is_zero(): the zero-page check run on every page the migration
 * sends. Three implementations of the same contract (AVX2, SSE2, 64-bit
 * integers); the best one the CPU supports is chosen on first use.
 */
#include "qemu/osdep.h"
#include "qemu/bufferiszero.h"

#if defined(__x86_64__) || defined(__i386__)
#define BUFFER_ZERO_X86 1
#include <immintrin.h>
#else
#define BUFFER_ZERO_X86 0
#endif

typedef bool (*BufferZeroFn)(const void *buf, size_t len);

/* Aligned word loads from a byte buffer: tell the compiler they may alias. */
typedef uint64_t __attribute__((may_alias)) uint64_alias_t;

static inline uint64_t load_u64_unaligned(const unsigned char *p)
{
    uint64_t v;

    memcpy(&v, p, sizeof(v));
    return v;
}

static bool zero_bytes(const unsigned char *p, size_t len)
{
    unsigned char acc = 0;
    size_t i;

    for (i = 0; i < len; i++) {
        acc |= p[i];
    }
    return acc == 0;
}

/*
 * All implementations share one shape: for buffers long enough, the first
 * and last (unaligned) vector are checked up front, which also covers the
 * unaligned head and tail; the aligned body in between is then ORed
 * several vectors at a time with an early exit per block.
 */
static bool zero_int(const void *buf, size_t len)
{
    const unsigned char *p = buf;
    const unsigned char *end = p + len;
    const uint64_alias_t *w;
    const uint64_alias_t *we;

    if (len < sizeof(uint64_t)) {
        return zero_bytes(p, len);
    }
    if (load_u64_unaligned(p) | load_u64_unaligned(end - 8)) {
        return false;
    }
    w = (const uint64_alias_t *)QEMU_ALIGN_UP((uintptr_t)p, 8);
    we = (const uint64_alias_t *)QEMU_ALIGN_DOWN((uintptr_t)end, 8);
    while (we - w >= 8) {
        if (w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7]) {
            return false;
        }
        w += 8;
    }
    while (w < we) {
        if (*w++) {
            return false;
        }
    }
    return true;
}

#if BUFFER_ZERO_X86

__attribute__((target("sse2")))
static inline bool sse2_is_zero(__m128i v)
{
    return _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_setzero_si128())) == 0xffff;
}

__attribute__((target("sse2")))
static bool zero_sse2(const void *buf, size_t len)
{
    const unsigned char *p = buf;
    const unsigned char *end = p + len;
    const __m128i *v;
    const __m128i *ve;
    __m128i t;

    /* Below four vectors the setup costs more than it saves. */
    if (len < 64) {
        return zero_int(buf, len);
    }
    t = _mm_or_si128(_mm_loadu_si128((const __m128i *)p),
                     _mm_loadu_si128((const __m128i *)(end - 16)));
    if (!sse2_is_zero(t)) {
        return false;
    }
    v = (const __m128i *)QEMU_ALIGN_UP((uintptr_t)p, 16);
    ve = (const __m128i *)QEMU_ALIGN_DOWN((uintptr_t)end, 16);
    while (ve - v >= 4) {
        t = _mm_or_si128(_mm_or_si128(v[0], v[1]), _mm_or_si128(v[2], v[3]));
        if (!sse2_is_zero(t)) {
            return false;
        }
        v += 4;
    }
    t = _mm_setzero_si128();
    while (v < ve) {
        t = _mm_or_si128(t, *v++);
    }
    return sse2_is_zero(t);
}

__attribute__((target("avx2")))
static bool zero_avx2(const void *buf, size_t len)
{
    const unsigned char *p = buf;
    const unsigned char *end = p + len;
    const __m256i *v;
    const __m256i *ve;
    __m256i t;

    if (len < 128) {
        return zero_sse2(buf, len);
    }
    t = _mm256_or_si256(_mm256_loadu_si256((const __m256i *)p),
                        _mm256_loadu_si256((const __m256i *)(end - 32)));
    if (!_mm256_testz_si256(t, t)) {
        return false;
    }
    v = (const __m256i *)QEMU_ALIGN_UP((uintptr_t)p, 32);
    ve = (const __m256i *)QEMU_ALIGN_DOWN((uintptr_t)end, 32);
    while (ve - v >= 4) {
        t = _mm256_or_si256(_mm256_or_si256(v[0], v[1]),
                            _mm256_or_si256(v[2], v[3]));
        if (!_mm256_testz_si256(t, t)) {
            return false;
        }
        v += 4;
    }
    t = _mm256_setzero_si256();
    while (v < ve) {
        t = _mm256_or_si256(t, *v++);
    }
    return _mm256_testz_si256(t, t);
}

#endif /* BUFFER_ZERO_X86 */

static const struct {
    const char *name;
    BufferZeroFn fn;
} accels[BUFFER_ZERO_ACCEL__MAX] = {
    [BUFFER_ZERO_ACCEL_INT] = { "int", zero_int },
#if BUFFER_ZERO_X86
    [BUFFER_ZERO_ACCEL_SSE2] = { "sse2", zero_sse2 },
    [BUFFER_ZERO_ACCEL_AVX2] = { "avx2", zero_avx2 },
#else
    [BUFFER_ZERO_ACCEL_SSE2] = { "sse2", NULL },
    [BUFFER_ZERO_ACCEL_AVX2] = { "avx2", NULL },
#endif
};

/*
 * Index into accels[], or -1 before first use. Choosing is idempotent, so
 * racing first callers may both choose and store the same value; the
 * table is constant, so no ordering beyond atomicity is needed.
 */
static int accel_cur = -1;

static bool accel_supported(BufferZeroAccel accel)
{
    switch (accel) {
    case BUFFER_ZERO_ACCEL_INT:
        return true;
#if BUFFER_ZERO_X86
    case BUFFER_ZERO_ACCEL_SSE2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("sse2");
    case BUFFER_ZERO_ACCEL_AVX2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2");
#endif
    default:
        return false;
    }
}

static int accel_best(void)
{
    int i;

    for (i = BUFFER_ZERO_ACCEL__MAX - 1; i > BUFFER_ZERO_ACCEL_INT; i--) {
        if (accel_supported(i)) {
            return i;
        }
    }
    return BUFFER_ZERO_ACCEL_INT;
}

static inline int accel_get(void)
{
    int cur = __atomic_load_n(&accel_cur, __ATOMIC_RELAXED);

    if (unlikely(cur < 0)) {
        cur = accel_best();
        __atomic_store_n(&accel_cur, cur, __ATOMIC_RELAXED);
    }
    return cur;
}

bool buffer_is_zero(const void *buf, size_t len)
{
    const unsigned char *p = buf;

    if (unlikely(len < sizeof(uint64_t))) {
        return zero_bytes(p, len);
    }
    /*
     * Pages with data nearly always have a non-zero first or last word:
     * answer those without the indirect call or any vector setup.
     */
    if (load_u64_unaligned(p) | load_u64_unaligned(p + len - 8)) {
        return false;
    }
    return accels[accel_get()].fn(buf, len);
}

bool buffer_is_zero_select(BufferZeroAccel accel)
{
    if ((unsigned)accel >= BUFFER_ZERO_ACCEL__MAX || !accel_supported(accel)) {
        return false;
    }
    __atomic_store_n(&accel_cur, (int)accel, __ATOMIC_RELAXED);
    return true;
}

void buffer_is_zero_select_best(void)
{
    __atomic_store_n(&accel_cur, accel_best(), __ATOMIC_RELAXED);
}

BufferZeroAccel buffer_is_zero_accel(void)
{
    return accel_get();
}

const char *buffer_is_zero_accel_name(BufferZeroAccel accel)
{
    if ((unsigned)accel >= BUFFER_ZERO_ACCEL__MAX) {
        return "unknown";
    }
    return accels[accel].name;
}

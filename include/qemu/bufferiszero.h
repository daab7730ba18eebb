/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fast "is this buffer all zero bytes?" check, the zero-page test of the
 * RAM migration loop. The implementation (AVX2, SSE2 or plain 64-bit
 * integers) is picked once from the host CPU on first use.
 */
#ifndef QEMU_BUFFERISZERO_H
#define QEMU_BUFFERISZERO_H

#include <stdbool.h>
#include <stddef.h>

/* The implementations, slowest first. */
typedef enum BufferZeroAccel {
    BUFFER_ZERO_ACCEL_INT,      /* portable: 8 x uint64_t per iteration */
    BUFFER_ZERO_ACCEL_SSE2,     /* x86 only */
    BUFFER_ZERO_ACCEL_AVX2,     /* x86 only, if the CPU has it */
    BUFFER_ZERO_ACCEL__MAX,
} BufferZeroAccel;

/*
 * buffer_is_zero: whether all @len bytes at @buf are zero. Any alignment
 * and any length, including 0 (which is zero). Thread-safe.
 */
bool buffer_is_zero(const void *buf, size_t len);

/*
 * buffer_is_zero_select: use @accel from now on (for tests and benchmarks).
 * Returns: false, leaving the current choice alone, if @accel is not
 * usable on this host (or not a valid value).
 */
bool buffer_is_zero_select(BufferZeroAccel accel);

/* buffer_is_zero_select_best: back to the best implementation the CPU has. */
void buffer_is_zero_select_best(void);

/* buffer_is_zero_accel: the implementation currently in use. */
BufferZeroAccel buffer_is_zero_accel(void);

/* buffer_is_zero_accel_name: "int", "sse2" or "avx2" (for logs and tests). */
const char *buffer_is_zero_accel_name(BufferZeroAccel accel);

#endif

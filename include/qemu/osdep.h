/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * First include of every .c file (never included from a header): system
 * headers, GLib, and the handful of macros and types every file uses.
 */
#ifndef QEMU_OSDEP_H
#define QEMU_OSDEP_H

#include "config-host.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <limits.h>
#include <unistd.h>
#include <fcntl.h>
#include <assert.h>
#include <signal.h>
#include <time.h>
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <pthread.h>
#include <glib.h>

#include "qemu/typedefs.h"

/* Guest-physical address. */
typedef uint64_t hwaddr;
#define HWADDR_PRIx PRIx64
/* Offset inside a RAMBlock (what the "ram" stream section carries). */
typedef uint64_t ram_addr_t;

#define TARGET_PAGE_BITS 12
#define TARGET_PAGE_SIZE (1ULL << TARGET_PAGE_BITS)
#define TARGET_PAGE_MASK (~(TARGET_PAGE_SIZE - 1))

#define KiB (1ULL << 10)
#define MiB (1ULL << 20)
#define GiB (1ULL << 30)

#define QEMU_ALIGN_DOWN(n, m) ((n) / (m) * (m))
#define QEMU_ALIGN_UP(n, m) QEMU_ALIGN_DOWN((n) + (m) - 1, (m))
#define QEMU_IS_ALIGNED(n, m) (((n) % (m)) == 0)
#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#define ARRAY_SIZE(x) G_N_ELEMENTS(x)

#ifndef container_of
#define container_of(ptr, type, member) \
    ((type *)((char *)(ptr) - offsetof(type, member)))
#endif

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define QEMU_NORETURN __attribute__((noreturn))
#define QEMU_PACKED __attribute__((packed))
#define G_GNUC_PRINTF_FMT(a, b) G_GNUC_PRINTF(a, b)

#define QEMU_BUILD_BUG_ON(x) _Static_assert(!(x), #x)

/* Retry a syscall interrupted by a signal (vCPU kicks use signals). */
#define RETRY_ON_EINTR(expr) \
    ({ typeof(expr) __r; do { __r = (expr); } while (__r == -1 && errno == EINTR); __r; })

static inline int64_t get_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline int64_t get_clock_realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#endif

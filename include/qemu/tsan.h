/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ThreadSanitizer annotations. GLib's mutexes, conditions and queues are
 * futexes inside an uninstrumented libglib, invisible to TSan: code that
 * hands memory to another thread through a GAsyncQueue says so here, so a
 * TSan build reports real races only. No-ops in every other build.
 */
#ifndef QEMU_TSAN_H
#define QEMU_TSAN_H

#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
/* Everything written before this is visible to whoever acquires @addr next. */
#define TSAN_RELEASE(addr) __tsan_release(addr)
#define TSAN_ACQUIRE(addr) __tsan_acquire(addr)
#else
#define TSAN_RELEASE(addr) do { (void)(addr); } while (0)
#define TSAN_ACQUIRE(addr) do { (void)(addr); } while (0)
#endif

#endif

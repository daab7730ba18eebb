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

#include <glib.h>

/*
 * GLib's mutex and condition, told to TSan: lock, unlock and wait as
 * g_mutex_lock() and friends, with the hand-over annotated.
 */
static inline void tsan_g_mutex_lock(GMutex *m)
{
    g_mutex_lock(m);
    TSAN_ACQUIRE(m);
}

static inline void tsan_g_mutex_unlock(GMutex *m)
{
    TSAN_RELEASE(m);
    g_mutex_unlock(m);
}

static inline void tsan_g_cond_wait(GCond *c, GMutex *m)
{
    TSAN_RELEASE(m);
    g_cond_wait(c, m);
    TSAN_ACQUIRE(m);
}

static inline gboolean tsan_g_cond_wait_until(GCond *c, GMutex *m, gint64 end_time)
{
    gboolean ret;

    TSAN_RELEASE(m);
    ret = g_cond_wait_until(c, m, end_time);
    TSAN_ACQUIRE(m);
    return ret;
}

/*
 * GLib's reader-writer lock, told to TSan as one lock: readers are
 * ordered among themselves too, which hides nothing a reader may do
 * (readers only read what the lock guards).
 */
static inline void tsan_g_rw_lock_reader_lock(GRWLock *l)
{
    g_rw_lock_reader_lock(l);
    TSAN_ACQUIRE(l);
}

static inline void tsan_g_rw_lock_reader_unlock(GRWLock *l)
{
    TSAN_RELEASE(l);
    g_rw_lock_reader_unlock(l);
}

static inline void tsan_g_rw_lock_writer_lock(GRWLock *l)
{
    g_rw_lock_writer_lock(l);
    TSAN_ACQUIRE(l);
}

static inline void tsan_g_rw_lock_writer_unlock(GRWLock *l)
{
    TSAN_RELEASE(l);
    g_rw_lock_writer_unlock(l);
}

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One long-lived named worker thread and its stop-and-join idiom: the
 * thread, the lock and condition it sleeps on, and the running and quit
 * flags, in one struct the owner embeds in its state.
 *
 * How to use it:
 *
 *   worker_thread_init(&s->w);
 *   worker_thread_start(&s->w, "kvm-reaper", fn, s);    no-op if running
 *   ...in fn: worker_thread_lock(&s->w);
 *       while (!worker_thread_wait(&s->w, PERIOD_US)) { work; }
 *       worker_thread_unlock(&s->w);
 *   worker_thread_stop(&s->w);           request stop, wake, join
 *
 * Contract:
 *   - w->lock guards running and quit, and may guard more of the owner's
 *     state (dirtylimit publishes its rates under it); the _locked
 *     variants are for an owner that holds it already. Stop drops it
 *     while joining, so the thread can take it to see quit.
 *   - worker_thread_wait() is called by the thread with w->lock held; it
 *     returns true as soon as stop was requested (at once if it already
 *     was), else false when woken (worker_thread_wake) or after the
 *     timeout. The thread must return when it gets true.
 *   - Start and stop are serialised by the owner (its own lock, the BQL).
 *     A start while a stop is joining finds the thread still running and
 *     does nothing. After stop returns, the thread has returned and a new
 *     start creates a fresh one. A thread that returned by itself counts
 *     as running until a stop joins it (a start before does nothing).
 *
 * Why not the pool (worker-pool.h): these threads sleep on their owner's
 * lock, wake on a timeout, and share state with it under that lock; the
 * pool's workers only take jobs and never hold the owner's lock.
 */
#ifndef QEMU_WORKER_THREAD_H
#define QEMU_WORKER_THREAD_H

#include <glib.h>
#include <stdbool.h>
#include "qemu/thread.h"
#include "qemu/tsan.h"

typedef struct WorkerThread {
    QemuThread thread;          /* valid while running */
    GMutex lock;
    GCond cond;                 /* lock: quit was set, or the owner woke it */
    bool running;               /* lock: created by start, not joined yet */
    bool quit;                  /* lock: stop asks the thread to return */
} WorkerThread;

/* For one on the heap or the stack; a zeroed one in static storage is ready as is (GMutex). */
void worker_thread_init(WorkerThread *w);
void worker_thread_destroy(WorkerThread *w);
/*
 * Creates the thread named @name running @fn(@opaque), unless it is
 * running. 0 (started or already running) or -errno (nothing started).
 */
int worker_thread_start(WorkerThread *w, const char *name, void *(*fn)(void *), void *opaque);
int worker_thread_start_locked(WorkerThread *w, const char *name, void *(*fn)(void *),
                               void *opaque);
/* Requests stop, wakes the thread, joins it. False if no thread was running. */
bool worker_thread_stop(WorkerThread *w);
/* Same with w->lock held on entry and on return (dropped while joining). */
bool worker_thread_stop_locked(WorkerThread *w);
/* The thread, w->lock held: sleeps until woken or @timeout_us; true = return now. */
bool worker_thread_wait(WorkerThread *w, int64_t timeout_us);
/* w->lock held: stop was requested. */
bool worker_thread_should_quit(WorkerThread *w);
/*
 * Wakes the thread out of worker_thread_wait. With w->lock held (after
 * changing what the thread reads) the wake cannot be lost; without, it may
 * fall before the thread's wait, which then lasts its timeout.
 */
void worker_thread_wake(WorkerThread *w);
bool worker_thread_running(WorkerThread *w);

/* w->lock, told to ThreadSanitizer (tsan.h): what the owner guards with it too. */
static inline void worker_thread_lock(WorkerThread *w)
{
    tsan_g_mutex_lock(&w->lock);
}

static inline void worker_thread_unlock(WorkerThread *w)
{
    tsan_g_mutex_unlock(&w->lock);
}

#endif

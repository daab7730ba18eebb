/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One long-lived worker thread (include/qemu/worker-thread.h).
 *
 * Invariant: a thread that stop asked to quit sees quit before it sleeps
 * again, so stop's join always returns. quit is set under w->lock, and
 * the thread reads it under w->lock before every wait and after every
 * wake; the broadcast is made under the lock, so it cannot fall between
 * the thread's check and its wait. quit is cleared only by start, which
 * the owner serialises with stop, and only when no thread is running.
 *
 * A separate file from the pool: it shares nothing with it (no queue, no
 * per-worker index) and its users want the owner's lock for their state.
 */
#include "qemu/osdep.h"
#include "qemu/tsan.h"
#include "qemu/worker-thread.h"

void worker_thread_init(WorkerThread *w)
{
    memset(w, 0, sizeof(*w));
    g_mutex_init(&w->lock);
    g_cond_init(&w->cond);
}

void worker_thread_destroy(WorkerThread *w)
{
    worker_thread_stop(w);
    g_cond_clear(&w->cond);
    g_mutex_clear(&w->lock);
}

int worker_thread_start_locked(WorkerThread *w, const char *name, void *(*fn)(void *),
                               void *opaque)
{
    int ret;

    if (w->running) {
        return 0;
    }
    w->quit = false;
    ret = qemu_thread_create(&w->thread, name, fn, opaque);
    w->running = ret == 0;
    return ret;
}

int worker_thread_start(WorkerThread *w, const char *name, void *(*fn)(void *), void *opaque)
{
    int ret;

    tsan_g_mutex_lock(&w->lock);
    ret = worker_thread_start_locked(w, name, fn, opaque);
    tsan_g_mutex_unlock(&w->lock);
    return ret;
}

bool worker_thread_stop_locked(WorkerThread *w)
{
    if (!w->running) {
        return false;
    }
    w->quit = true;
    g_cond_broadcast(&w->cond);
    /* The thread takes the lock to see quit: not held across the join. */
    tsan_g_mutex_unlock(&w->lock);
    qemu_thread_join(&w->thread);
    tsan_g_mutex_lock(&w->lock);
    w->running = false;
    return true;
}

bool worker_thread_stop(WorkerThread *w)
{
    bool ret;

    tsan_g_mutex_lock(&w->lock);
    ret = worker_thread_stop_locked(w);
    tsan_g_mutex_unlock(&w->lock);
    return ret;
}

bool worker_thread_should_quit(WorkerThread *w)
{
    return w->quit;
}

bool worker_thread_wait(WorkerThread *w, int64_t timeout_us)
{
    if (w->quit) {
        return true;
    }
    tsan_g_cond_wait_until(&w->cond, &w->lock, g_get_monotonic_time() + timeout_us);
    return w->quit;
}

void worker_thread_wake(WorkerThread *w)
{
    g_cond_broadcast(&w->cond);
}

bool worker_thread_running(WorkerThread *w)
{
    bool ret;

    tsan_g_mutex_lock(&w->lock);
    ret = w->running;
    tsan_g_mutex_unlock(&w->lock);
    return ret;
}

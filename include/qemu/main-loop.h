/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The main loop (GMainLoop on the main thread) and the big VM lock (BQL).
 * The main thread holds the BQL except while it sleeps in poll, so every
 * main-loop callback (monitor, chardev, timer, bottom half) runs with it.
 */
#ifndef QEMU_MAIN_LOOP_H
#define QEMU_MAIN_LOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>

void bql_lock(void);
/* Takes the BQL only if nobody holds it; true if it did. */
bool bql_trylock(void);
void bql_unlock(void);
bool bql_locked(void);
/* Waits on @cond, dropping the BQL meanwhile (the caller holds it). */
void bql_cond_wait(GCond *cond);
/* As bql_cond_wait, but gives up at @end_time (g_get_monotonic_time() scale). */
bool bql_cond_wait_until(GCond *cond, gint64 end_time);

/*
 * BQL_LOCK_GUARD(): holds the BQL until the end of the enclosing scope,
 * taking it only if this thread does not hold it already. For code that
 * runs both in the main loop (BQL held) and in a migration thread (not
 * held), such as sending an event.
 */
typedef struct BQLGuard BQLGuard;
static inline BQLGuard *bql_guard_take(void)
{
    if (bql_locked()) {
        return NULL;
    }
    bql_lock();
    return (BQLGuard *)(uintptr_t)1;    /* non-NULL: the guard took the lock */
}
static inline void bql_guard_release(BQLGuard *g)
{
    bql_unlock();
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(BQLGuard, bql_guard_release)
#define BQL_LOCK_GUARD() \
    g_autoptr(BQLGuard) G_PASTE(bql_guard_, __LINE__) G_GNUC_UNUSED = bql_guard_take()

/* Called once by main() before anything creates sources; takes the BQL. */
void qemu_main_loop_init(void);
/* Runs until qemu_main_loop_quit(); returns with the BQL held. */
void qemu_main_loop_run(void);
void qemu_main_loop_quit(void);
/* Wakes the main loop from another thread (it rechecks pending requests). */
void qemu_notify_event(void);

/*
 * Runs @fn(@opaque) once in the main thread with the BQL held. Safe to call
 * from any thread: this is how vCPU and migration threads hand work over.
 */
void qemu_bh_schedule_oneshot(void (*fn)(void *opaque), void *opaque);

#endif

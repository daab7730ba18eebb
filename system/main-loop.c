/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * GMainLoop plus the BQL. The poll function is replaced so that the BQL is
 * released only while the main thread sleeps; callbacks always hold it.
 */
#include "qemu/osdep.h"
#include "qemu/main-loop.h"

static GMutex bql;
/* Owner of the BQL, for bql_locked() assertions. */
static __thread bool bql_held;
static GMainLoop *main_loop;

void bql_lock(void)
{
    g_mutex_lock(&bql);
    bql_held = true;
}

bool bql_trylock(void)
{
    if (!g_mutex_trylock(&bql)) {
        return false;
    }
    bql_held = true;
    return true;
}

void bql_unlock(void)
{
    assert(bql_held);
    bql_held = false;
    g_mutex_unlock(&bql);
}

bool bql_locked(void)
{
    return bql_held;
}

void bql_cond_wait(GCond *cond)
{
    assert(bql_held);
    bql_held = false;
    g_cond_wait(cond, &bql);
    bql_held = true;
}

bool bql_cond_wait_until(GCond *cond, gint64 end_time)
{
    bool ret;

    assert(bql_held);
    bql_held = false;
    ret = g_cond_wait_until(cond, &bql, end_time);
    bql_held = true;
    return ret;
}

static gint poll_without_bql(GPollFD *fds, guint nfds, gint timeout)
{
    gint ret;

    bql_unlock();
    ret = g_poll(fds, nfds, timeout);
    bql_lock();
    return ret;
}

void qemu_main_loop_init(void)
{
    bql_lock();
    g_main_context_set_poll_func(g_main_context_default(), poll_without_bql);
    main_loop = g_main_loop_new(NULL, FALSE);
}

void qemu_main_loop_run(void)
{
    g_main_loop_run(main_loop);
}

void qemu_main_loop_quit(void)
{
    g_main_loop_quit(main_loop);
    g_main_context_wakeup(NULL);
}

void qemu_notify_event(void)
{
    g_main_context_wakeup(NULL);
}

typedef struct OneshotBH {
    void (*fn)(void *opaque);
    void *opaque;
} OneshotBH;

static gboolean oneshot_bh_run(gpointer data)
{
    OneshotBH *bh = data;

    assert(bql_locked());
    bh->fn(bh->opaque);
    g_free(bh);
    return G_SOURCE_REMOVE;
}

void qemu_bh_schedule_oneshot(void (*fn)(void *opaque), void *opaque)
{
    OneshotBH *bh = g_new(OneshotBH, 1);

    bh->fn = fn;
    bh->opaque = opaque;
    /* g_idle_add_full is thread safe and wakes the default context. */
    g_idle_add_full(G_PRIORITY_HIGH_IDLE, oneshot_bh_run, bh, NULL);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One userfaultfd fault server (uffd-server.h): the thread, its poll loop
 * on (userfaultfd, kick eventfd), batches of messages handed to the
 * owner's row, the counters and the latency histogram.
 *
 * The invariant: every message the thread reads from the userfaultfd is
 * handed to exactly one hook call, or counted abandoned and handed to
 * none; and once uffd_server_stop() returns, no hook runs or will run.
 *
 * Why it holds:
 *  1. Only the server's thread reads the userfaultfd while it runs (the
 *     owner's contract), and a read takes messages off the kernel's queue:
 *     a message is in exactly one batch.
 *  2. A batch is walked once, in order. Before each message the thread
 *     looks at `stopping`: clear, the message goes to its hook
 *     (uffd_server_dispatch, one call); set, it and the rest of the batch
 *     are counted abandoned and the walk ends. Nothing goes back.
 *  3. Stop is never missed: ask_stop sets `stopping` and then writes the
 *     eventfd. The thread looks at `stopping` before each poll and after
 *     each read of the eventfd. If its read consumed the stop's write, the
 *     flag, stored before that write, is seen; if not, the eventfd stays
 *     readable and the next poll returns at once. So the thread leaves the
 *     loop after at most the hook in progress, the next flag check.
 *  4. Out of the loop after a stop, the thread reads what is still queued
 *     without blocking and counts it abandoned (the kernel's queue is
 *     bounded: each faulting thread waits on its one fault), runs ops->end
 *     and returns. uffd_server_stop() joins it: the join happens after the
 *     thread's last hook, so after stop returns none runs.
 *  5. A wake is never lost the same way: wake sets `wake_pending` and then
 *     writes the eventfd; the thread reads the eventfd, then exchanges the
 *     flag to false and, if it was set, calls ops->wake, which thus starts
 *     after the wake was asked.
 *
 * No lock is taken here: the counters have one writer (this thread) and
 * are stored with relaxed atomics; the flags are sequentially consistent.
 * The thread never takes the BQL (uffd-server.h says why).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "uffd-server.h"
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sys/eventfd.h>

/* The server's thread only: one writer, any thread reads. */
static void st_add(uint64_t *counter, uint64_t n)
{
    __atomic_store_n(counter, *counter + n, __ATOMIC_RELAXED);
}

static bool stop_asked(UffdServer *s)
{
    return __atomic_load_n(&s->stopping, __ATOMIC_SEQ_CST);
}

/* One message to its hook (step 2): faults, remove/unmap events, the rest dropped. */
static void uffd_server_dispatch(UffdServer *s, const struct uffd_msg *m, int64_t t_read)
{
    switch (m->event) {
    case UFFD_EVENT_PAGEFAULT: {
        UffdFault f = {
            .addr = m->arg.pagefault.address,
            .flags = m->arg.pagefault.flags,
            .tid = m->arg.pagefault.feat.ptid,
            .t_read = t_read,
        };

        /* The histogram before the counter: whoever sees the count sees its latency. */
        switch (s->ops->fault(s->opaque, &f)) {
        case UFFD_FAULT_SERVED:
            latency_hist_record_ns(&s->lat, get_clock_ns() - t_read);
            st_add(&s->st.served, 1);
            break;
        case UFFD_FAULT_DEFERRED:
            st_add(&s->st.deferred, 1);
            break;
        case UFFD_FAULT_IGNORED:
            st_add(&s->st.ignored, 1);
            break;
        case UFFD_FAULT_FAILED:
            st_add(&s->st.failed, 1);
            break;
        }
        return;
    }
    case UFFD_EVENT_REMOVE:
    case UFFD_EVENT_UNMAP:
        if (s->ops->remove) {
            s->ops->remove(s->opaque, m->arg.remove.start, m->arg.remove.end,
                           m->event == UFFD_EVENT_UNMAP);
            st_add(&s->st.events, 1);
            return;
        }
        break;
    }
    st_add(&s->st.dropped, 1);
}

/*
 * Reads one batch into @msgs without blocking: how many messages (0 if
 * none was queued), or -errno. A read that does not end on a message's
 * boundary cannot come from the kernel: it is an error, not a message.
 */
static int uffd_server_read(UffdServer *s, struct uffd_msg *msgs)
{
    ssize_t r = RETRY_ON_EINTR(read(s->uffd, msgs, UFFD_SERVER_BATCH * sizeof(msgs[0])));

    if (r < 0) {
        return errno == EAGAIN ? 0 : -errno;
    }
    if (r == 0) {
        return -EPIPE;          /* only a fake's writer can hang up */
    }
    if (r % sizeof(msgs[0])) {
        return -EPROTO;
    }
    return r / sizeof(msgs[0]);
}

/* The eventfd said stop or wake: clear it, then look at the flags (steps 3 and 5). */
static void uffd_server_kicked(UffdServer *s)
{
    uint64_t v;

    (void)!read(s->kick_fd, &v, sizeof(v));
    if (!stop_asked(s) && __atomic_exchange_n(&s->wake_pending, false, __ATOMIC_SEQ_CST) &&
        s->ops->wake) {
        s->ops->wake(s->opaque);
        st_add(&s->st.wakes, 1);
    }
}

static void *uffd_server_thread(void *opaque)
{
    UffdServer *s = opaque;
    struct pollfd pfd[2] = {
        { .fd = s->uffd, .events = POLLIN },
        { .fd = s->kick_fd, .events = POLLIN },
    };
    struct uffd_msg msgs[UFFD_SERVER_BATCH];
    int err = 0;
    int n;

    if (s->ops->begin) {
        s->ops->begin(s->opaque);
    }
    while (!stop_asked(s)) {
        int64_t t_read;

        if (RETRY_ON_EINTR(poll(pfd, 2, -1)) < 0) {
            err = -errno;
            break;
        }
        /* The vCPU has waited since its message was queued: count from the wake-up. */
        t_read = get_clock_ns();
        if (pfd[1].revents) {
            uffd_server_kicked(s);
            if (stop_asked(s)) {
                break;
            }
        }
        if (!pfd[0].revents) {
            continue;
        }
        n = uffd_server_read(s, msgs);
        if (n < 0) {
            err = n;
            break;
        }
        for (int i = 0; i < n; i++) {
            if (stop_asked(s)) {
                st_add(&s->st.abandoned, n - i);
                s->run_abandoned += n - i;
                break;
            }
            uffd_server_dispatch(s, &msgs[i], t_read);
        }
    }
    if (err) {
        error_report("%s: reading userfaultfd failed: %s", s->ops->what, g_strerror(-err));
    } else {
        /* Step 4: what is still queued is read, counted, never delivered. */
        while ((n = uffd_server_read(s, msgs)) > 0) {
            st_add(&s->st.abandoned, n);
            s->run_abandoned += n;
        }
    }
    if (s->ops->end) {
        s->ops->end(s->opaque, err);
    }
    return NULL;
}

bool uffd_server_start(UffdServer *s, const char *name, int uffd, const UffdServerOps *ops,
                       void *opaque, Error **errp)
{
    int kick, ret;

    assert(!s->running && ops->fault);
    kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (kick < 0) {
        error_setg_errno(errp, errno, "eventfd failed");
        return false;
    }
    s->ops = ops;
    s->opaque = opaque;
    s->uffd = uffd;
    s->stopping = false;
    s->wake_pending = false;
    s->run_abandoned = 0;
    s->kick_fd = kick;
    __atomic_store_n(&s->live, true, __ATOMIC_SEQ_CST);
    ret = qemu_thread_create(&s->thread, name, uffd_server_thread, s);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "cannot create the %s fault thread", ops->what);
        __atomic_store_n(&s->live, false, __ATOMIC_SEQ_CST);
        close(kick);
        s->kick_fd = -1;
        return false;
    }
    s->running = true;
    return true;
}

/*
 * Flag first, then the eventfd (steps 3 and 5). Not live (never started,
 * or stopped): nobody to tell. The owner orders start and stop before and
 * after every other thread's kicks, so the eventfd is open here.
 */
static void uffd_server_kick(UffdServer *s, bool *flag)
{
    uint64_t one = 1;

    if (!__atomic_load_n(&s->live, __ATOMIC_SEQ_CST)) {
        return;
    }
    __atomic_store_n(flag, true, __ATOMIC_SEQ_CST);
    /* An eventfd write of 1 only fails on counter overflow, which needs 2^64 kicks. */
    (void)!write(s->kick_fd, &one, sizeof(one));
}

void uffd_server_ask_stop(UffdServer *s)
{
    uffd_server_kick(s, &s->stopping);
}

void uffd_server_wake(UffdServer *s)
{
    uffd_server_kick(s, &s->wake_pending);
}

uint64_t uffd_server_stop(UffdServer *s)
{
    if (!s->running) {
        return 0;
    }
    uffd_server_ask_stop(s);
    qemu_thread_join(&s->thread);
    s->running = false;
    __atomic_store_n(&s->live, false, __ATOMIC_SEQ_CST);
    close(s->kick_fd);
    s->kick_fd = -1;
    return s->run_abandoned;
}

bool uffd_server_running(const UffdServer *s)
{
    return s->running;
}

void uffd_server_reset_stats(UffdServer *s)
{
    assert(!s->running);
    memset(&s->st, 0, sizeof(s->st));
    memset(&s->lat, 0, sizeof(s->lat));
}

void uffd_server_get_stats(const UffdServer *s, UffdServerStats *st)
{
    st->served = __atomic_load_n(&s->st.served, __ATOMIC_RELAXED);
    st->deferred = __atomic_load_n(&s->st.deferred, __ATOMIC_RELAXED);
    st->ignored = __atomic_load_n(&s->st.ignored, __ATOMIC_RELAXED);
    st->failed = __atomic_load_n(&s->st.failed, __ATOMIC_RELAXED);
    st->events = __atomic_load_n(&s->st.events, __ATOMIC_RELAXED);
    st->dropped = __atomic_load_n(&s->st.dropped, __ATOMIC_RELAXED);
    st->abandoned = __atomic_load_n(&s->st.abandoned, __ATOMIC_RELAXED);
    st->wakes = __atomic_load_n(&s->st.wakes, __ATOMIC_RELAXED);
}

const LatencyHist *uffd_server_latency(const UffdServer *s)
{
    return &s->lat;
}

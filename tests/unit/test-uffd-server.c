/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for migration/core/uffd-server.c, the fault server skeleton of
 * mig/uffd, mig/pc-fault and mig/lr-fault.
 *
 * The random test runs the server against a fake userfaultfd: a
 * non-blocking pipe the test writes struct uffd_msg records into (page
 * faults, remove and unmap events, events no row takes), each message
 * tagged with its number in its address. A row of test hooks answers each
 * fault with the outcome the test drew for it, sometimes slowly. Seeded
 * random steps write batches, wake the server, wait for it to catch up,
 * and stop it at a random point, with messages still queued or a slow hook
 * in progress. After every step:
 *   - no message reached a hook twice, and no hook saw a message not yet
 *     written, or with other flags, thread or range than written;
 *   - no counter is ahead of what the hooks returned;
 * once the server caught up:
 *   - every fault and event reached its hook exactly once, every other
 *     message was dropped, each counter equals what the hooks returned, and
 *     the histogram holds one latency per served fault, its sum (the
 *     exporter's _sum) between its buckets' lower and upper edges;
 *   - every wake was followed by a wake hook that started after it;
 * once stop returned:
 *   - every message reached its hook once or was reported abandoned (stop's
 *     result), never both, and the pipe is empty;
 *   - no hook runs any more (nothing changes in the next 20 ms), the end
 *     hook ran once;
 *   - the stop returned in time (a stop nobody hears would hang).
 * Direct tests: a stop with nothing pending returns at once and abandons
 * nothing; a real userfaultfd on anonymous memory, a fault served in the
 * hook, then one deferred and placed by the wake hook.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/thread.h"
#include "qemu/userfaultfd.h"
#include "migration/core/uffd-server.h"
#include <sys/mman.h>

#define SEED 0x0ffd5e7e
#define ROUNDS 150
#define MAX_STEPS 40
#define MAX_MSGS 1500           /* below the pipe's 2048 messages: a write never waits long */
#define PAGE 4096
#define STOP_TIMEOUT_US (10 * G_USEC_PER_SEC)

enum { K_FAULT, K_REMOVE, K_UNMAP, K_OTHER };

/* What the test wrote as message number i, and what the hooks saw of it. */
typedef struct TMsg {
    int kind;
    uint64_t flags;
    uint32_t tid;
    UffdFaultOutcome outcome;   /* what the fault hook answers */
    bool slow;                  /* the hook sleeps a little first */
    int delivered;              /* atomic: hook calls for this message */
} TMsg;

typedef struct TServer {
    UffdServer s;
    int rfd, wfd;               /* the fake userfaultfd: the server reads rfd */
    TMsg msgs[MAX_MSGS];
    int written;                /* atomic: messages written so far */

    /* The hooks' side (the server's thread writes, atomics), compared with the counters. */
    uint64_t returned[4];       /* fault answers, by outcome */
    uint64_t events;            /* remove hook calls */
    uint64_t wake_calls;        /* the test's uffd_server_wake() calls */
    uint64_t wake_seen;         /* wake_calls as the last wake hook started */
    uint64_t wake_runs;
    int begin_runs, end_runs, end_err;
    int delivered_total;        /* atomic: fault and remove hook calls */
    int hook_calls;             /* atomic: every hook call, begin and end included */
    bool stop_returned;         /* atomic: set the moment uffd_server_stop() returned */
    int gate;                   /* message whose hook waits for gate_open; -1: none */
    bool gate_entered, gate_open;   /* atomic */
    int late;                   /* atomic: hooks that ran after stop_returned */
    int bad;                    /* atomic: hooks that saw what was never written */
} TServer;

static void t_inc(int *c)
{
    __atomic_fetch_add(c, 1, __ATOMIC_SEQ_CST);
}

static void t_add64(uint64_t *c)
{
    __atomic_fetch_add(c, 1, __ATOMIC_SEQ_CST);
}

/* Every hook's entry: counts it, and whether it came after stop returned. */
static void t_hook_entry(TServer *t)
{
    t_inc(&t->hook_calls);
    if (__atomic_load_n(&t->stop_returned, __ATOMIC_SEQ_CST)) {
        t_inc(&t->late);
    }
}

/* The message a hook got: its number, if the test wrote it. */
static TMsg *t_msg(TServer *t, uint64_t addr)
{
    uint64_t i = (addr / PAGE) - 1;

    if (i >= (uint64_t)__atomic_load_n(&t->written, __ATOMIC_SEQ_CST)) {
        t_inc(&t->bad);
        return NULL;
    }
    return &t->msgs[i];
}

static void t_begin(void *opaque)
{
    TServer *t = opaque;

    t_hook_entry(t);
    /* Before anything else on the thread. */
    if (__atomic_load_n(&t->delivered_total, __ATOMIC_SEQ_CST)) {
        t_inc(&t->bad);
    }
    t_inc(&t->begin_runs);
}

static UffdFaultOutcome t_fault(void *opaque, const UffdFault *f)
{
    TServer *t = opaque;
    TMsg *m;

    t_hook_entry(t);
    m = t_msg(t, f->addr);
    if (!m) {
        return UFFD_FAULT_IGNORED;
    }
    if (m->kind != K_FAULT || f->flags != m->flags || f->tid != m->tid || !f->t_read) {
        t_inc(&t->bad);
    }
    if (m->slow) {
        g_usleep(200);
    }
    if (m - t->msgs == __atomic_load_n(&t->gate, __ATOMIC_SEQ_CST)) {
        __atomic_store_n(&t->gate_entered, true, __ATOMIC_SEQ_CST);
        while (!__atomic_load_n(&t->gate_open, __ATOMIC_SEQ_CST)) {
            g_usleep(100);
        }
    }
    t_inc(&m->delivered);
    t_inc(&t->delivered_total);
    t_add64(&t->returned[m->outcome]);
    return m->outcome;
}

static void t_remove(void *opaque, uint64_t start, uint64_t end, bool unmap)
{
    TServer *t = opaque;
    TMsg *m;

    t_hook_entry(t);
    m = t_msg(t, start);
    if (!m) {
        return;
    }
    if (m->kind != (unmap ? K_UNMAP : K_REMOVE) || end != start + m->tid * PAGE) {
        t_inc(&t->bad);
    }
    t_inc(&m->delivered);
    t_inc(&t->delivered_total);
    t_add64(&t->events);
}

static void t_wake(void *opaque)
{
    TServer *t = opaque;

    t_hook_entry(t);
    __atomic_store_n(&t->wake_seen, __atomic_load_n(&t->wake_calls, __ATOMIC_SEQ_CST),
                     __ATOMIC_SEQ_CST);
    t_add64(&t->wake_runs);
}

static void t_end(void *opaque, int err)
{
    TServer *t = opaque;

    t_hook_entry(t);
    t->end_err = err;
    t_inc(&t->end_runs);
}

static const UffdServerOps t_ops = {
    .what = "test",
    .begin = t_begin,
    .fault = t_fault,
    .wake = t_wake,
    .remove = t_remove,
    .end = t_end,
};

static TServer *t_start(void)
{
    TServer *t = g_new0(TServer, 1);
    int p[2];

    g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
    g_assert_cmpint(fcntl(p[0], F_SETFL, O_NONBLOCK), ==, 0);
    t->gate = -1;
    t->rfd = p[0];
    t->wfd = p[1];
    g_assert_true(uffd_server_start(&t->s, "test/uffd", t->rfd, &t_ops, t, &error_abort));
    return t;
}

static void t_free(TServer *t)
{
    close(t->rfd);
    close(t->wfd);
    g_free(t);
}

/*
 * Writes @n random messages (of @kind if not -1) in one write: whole
 * messages, since a pipe write under 4 KiB is atomic.
 */
static void t_write(TServer *t, GRand *r, int n, int kind)
{
    struct uffd_msg batch[128];
    int first = t->written;

    g_assert(n <= (int)ARRAY_SIZE(batch) && first + n <= MAX_MSGS);
    memset(batch, 0, sizeof(batch));
    for (int j = 0; j < n; j++) {
        TMsg *m = &t->msgs[first + j];
        struct uffd_msg *u = &batch[j];
        int dice = g_rand_int_range(r, 0, 100);
        uint64_t addr = (uint64_t)(first + j + 1) * PAGE;

        m->kind = kind >= 0 ? kind
                  : dice < 80 ? K_FAULT : dice < 88 ? K_REMOVE : dice < 94 ? K_UNMAP : K_OTHER;
        m->flags = g_rand_boolean(r) ? UFFD_PAGEFAULT_FLAG_WP : UFFD_PAGEFAULT_FLAG_WRITE;
        m->tid = g_rand_int_range(r, 1, 1000);
        m->outcome = g_rand_int_range(r, UFFD_FAULT_SERVED, UFFD_FAULT_FAILED + 1);
        m->slow = g_rand_int_range(r, 0, 100) < 5;
        switch (m->kind) {
        case K_FAULT:
            u->event = UFFD_EVENT_PAGEFAULT;
            /* Not page aligned: the row gets the address as the kernel gave it. */
            u->arg.pagefault.address = addr + g_rand_int_range(r, 0, PAGE);
            u->arg.pagefault.flags = m->flags;
            u->arg.pagefault.feat.ptid = m->tid;
            break;
        case K_REMOVE:
        case K_UNMAP:
            u->event = m->kind == K_REMOVE ? UFFD_EVENT_REMOVE : UFFD_EVENT_UNMAP;
            u->arg.remove.start = addr;
            u->arg.remove.end = addr + m->tid * PAGE;
            break;
        default:
            u->event = UFFD_EVENT_FORK;
            break;
        }
    }
    /* Counted before the write: a hook may see the message the moment it lands. */
    __atomic_store_n(&t->written, first + n, __ATOMIC_SEQ_CST);
    g_assert_cmpint(write(t->wfd, batch, n * sizeof(batch[0])), ==, n * sizeof(batch[0]));
}

static uint64_t t_expected_dropped(TServer *t)
{
    uint64_t n = 0;

    for (int i = 0; i < t->written; i++) {
        n += t->msgs[i].kind == K_OTHER;
    }
    return n;
}

/* Any moment: nothing seen twice or unwritten, no counter ahead of its hooks. */
static void t_check_always(TServer *t, const char *when)
{
    UffdServerStats st;

    uffd_server_get_stats(&t->s, &st);
    g_assert_cmpint(__atomic_load_n(&t->bad, __ATOMIC_SEQ_CST), ==, 0);
    for (int i = 0; i < t->written; i++) {
        if (__atomic_load_n(&t->msgs[i].delivered, __ATOMIC_SEQ_CST) > 1) {
            g_error("%s: message %d reached its hook %d times", when, i,
                    t->msgs[i].delivered);
        }
    }
    /* Read after the counters: a hook counts before the server does. */
    g_assert_cmpuint(st.served, <=, __atomic_load_n(&t->returned[UFFD_FAULT_SERVED],
                                                     __ATOMIC_SEQ_CST));
    g_assert_cmpuint(st.deferred, <=, __atomic_load_n(&t->returned[UFFD_FAULT_DEFERRED],
                                                       __ATOMIC_SEQ_CST));
    g_assert_cmpuint(st.ignored, <=, __atomic_load_n(&t->returned[UFFD_FAULT_IGNORED],
                                                      __ATOMIC_SEQ_CST));
    g_assert_cmpuint(st.failed, <=, __atomic_load_n(&t->returned[UFFD_FAULT_FAILED],
                                                     __ATOMIC_SEQ_CST));
    g_assert_cmpuint(st.events, <=, __atomic_load_n(&t->events, __ATOMIC_SEQ_CST));
    g_assert_cmpuint(st.wakes, <=, __atomic_load_n(&t->wake_runs, __ATOMIC_SEQ_CST));
}

/* Bucket b holds [2^(b-1), 2^b) whole us (b = 0: [0, 1)); the last one is open. */
static void t_check_latency_sum(const LatencyHist *h)
{
    uint64_t low = 0, high = 0, sum = latency_hist_sum_ns(h);
    bool open = false;

    for (int b = 0; b < LATENCY_HIST_BUCKETS; b++) {
        uint64_t n = __atomic_load_n(&h->hist[b], __ATOMIC_RELAXED);

        low += n * (b ? 1000ULL << (b - 1) : 0);
        high += n * (1000ULL << b);
        open |= b == LATENCY_HIST_BUCKETS - 1 && n;
    }
    g_assert_cmpuint(sum, >=, low);
    g_assert_true(open || sum <= high);
}

/* Counters equal to what the hooks returned (the server idle or joined). */
static void t_check_counters(TServer *t, const UffdServerStats *st)
{
    g_assert_cmpuint(st->served, ==, t->returned[UFFD_FAULT_SERVED]);
    g_assert_cmpuint(st->deferred, ==, t->returned[UFFD_FAULT_DEFERRED]);
    g_assert_cmpuint(st->ignored, ==, t->returned[UFFD_FAULT_IGNORED]);
    g_assert_cmpuint(st->failed, ==, t->returned[UFFD_FAULT_FAILED]);
    g_assert_cmpuint(st->events, ==, t->events);
    g_assert_cmpuint(st->wakes, ==, t->wake_runs);
    g_assert_cmpuint(__atomic_load_n(&uffd_server_latency(&t->s)->count, __ATOMIC_RELAXED), ==,
                     st->served);
    t_check_latency_sum(uffd_server_latency(&t->s));
}

/* Waits until the server handled every message and every wake, then checks it all. */
static void t_catch_up(TServer *t)
{
    int64_t deadline = g_get_monotonic_time() + STOP_TIMEOUT_US;
    UffdServerStats st;

    for (;;) {
        uint64_t handled;

        t_check_always(t, "catching up");
        uffd_server_get_stats(&t->s, &st);
        handled = st.served + st.deferred + st.ignored + st.failed + st.events + st.dropped;
        g_assert_cmpuint(handled, <=, t->written);
        if (handled == (uint64_t)t->written &&
            st.wakes == __atomic_load_n(&t->wake_runs, __ATOMIC_SEQ_CST) &&
            __atomic_load_n(&t->wake_seen, __ATOMIC_SEQ_CST) == t->wake_calls) {
            break;
        }
        if (g_get_monotonic_time() > deadline) {
            g_error("the server did not catch up: %d written, %" PRIu64 " served, %" PRIu64
                    " deferred, %" PRIu64 " ignored, %" PRIu64 " failed, %" PRIu64 " events, %"
                    PRIu64 " dropped; wake %" PRIu64 " asked, %" PRIu64 " seen",
                    t->written, st.served, st.deferred, st.ignored, st.failed, st.events,
                    st.dropped, t->wake_calls, t->wake_seen);
        }
        g_usleep(100);
    }
    for (int i = 0; i < t->written; i++) {
        g_assert_cmpint(t->msgs[i].delivered, ==, t->msgs[i].kind == K_OTHER ? 0 : 1);
    }
    g_assert_cmpuint(st.dropped, ==, t_expected_dropped(t));
    g_assert_cmpuint(st.abandoned, ==, 0);
    t_check_counters(t, &st);
}

typedef struct TStopper {
    TServer *t;
    uint64_t abandoned;
    bool done;                  /* atomic */
} TStopper;

static gpointer t_stop_thread(gpointer opaque)
{
    TStopper *sp = opaque;

    sp->abandoned = uffd_server_stop(&sp->t->s);
    __atomic_store_n(&sp->t->stop_returned, true, __ATOMIC_SEQ_CST);
    __atomic_store_n(&sp->done, true, __ATOMIC_SEQ_CST);
    return NULL;
}

/* Stops @t from another thread, failing if that takes more than STOP_TIMEOUT_US. */
static uint64_t t_stop(TServer *t, int64_t *elapsed_us)
{
    TStopper sp = { .t = t };
    int64_t t0 = g_get_monotonic_time();
    GThread *th = g_thread_new("test/stop", t_stop_thread, &sp);

    while (!__atomic_load_n(&sp.done, __ATOMIC_SEQ_CST)) {
        if (g_get_monotonic_time() - t0 > STOP_TIMEOUT_US) {
            g_error("uffd_server_stop did not return in %d s", STOP_TIMEOUT_US / 1000000);
        }
        g_usleep(100);
    }
    if (elapsed_us) {
        *elapsed_us = g_get_monotonic_time() - t0;
    }
    g_thread_join(th);
    return sp.abandoned;
}

/* After stop: each message once or abandoned, nothing left, nothing running. */
static void t_check_stopped(TServer *t, uint64_t abandoned)
{
    int calls = __atomic_load_n(&t->hook_calls, __ATOMIC_SEQ_CST);
    uint64_t undelivered = 0;
    struct uffd_msg m;
    UffdServerStats st;

    g_usleep(20000);
    g_assert_cmpint(__atomic_load_n(&t->hook_calls, __ATOMIC_SEQ_CST), ==, calls);
    g_assert_cmpint(t->late, ==, 0);
    g_assert_cmpint(t->bad, ==, 0);
    g_assert_cmpint(t->begin_runs, ==, 1);
    g_assert_cmpint(t->end_runs, ==, 1);
    g_assert_cmpint(t->end_err, ==, 0);
    g_assert_false(uffd_server_running(&t->s));
    /* Every message was read: delivered, dropped or abandoned. */
    g_assert_cmpint(read(t->rfd, &m, sizeof(m)), ==, -1);
    g_assert_cmpint(errno, ==, EAGAIN);
    uffd_server_get_stats(&t->s, &st);
    for (int i = 0; i < t->written; i++) {
        g_assert_cmpint(t->msgs[i].delivered, <=, 1);
        undelivered += t->msgs[i].kind != K_OTHER && !t->msgs[i].delivered;
    }
    /* Abandoned: every undelivered fault and event, and the others not dropped. */
    g_assert_cmpuint(st.abandoned, ==, abandoned);
    g_assert_cmpuint(undelivered + (t_expected_dropped(t) - st.dropped), ==, abandoned);
    g_assert_cmpuint(t->delivered_total + st.dropped + abandoned, ==, t->written);
    t_check_counters(t, &st);
}

static void test_random(void)
{
    uint64_t total_abandoned = 0, total_msgs = 0;

    for (int round = 0; round < ROUNDS; round++) {
        g_autoptr(GRand) r = g_rand_new_with_seed(SEED + round);
        TServer *t = t_start();
        int steps = g_rand_int_range(r, 1, MAX_STEPS);
        uint64_t abandoned;
        char when[64];

        for (int step = 0; step < steps; step++) {
            int dice = g_rand_int_range(r, 0, 100);

            snprintf(when, sizeof(when), "round %d step %d", round, step);
            if (dice < 55) {
                int n = MIN(g_rand_int_range(r, 1, 2 * UFFD_SERVER_BATCH + 1),
                            MAX_MSGS - t->written);

                if (n > 0) {
                    t_write(t, r, n, -1);
                }
            } else if (dice < 75) {
                __atomic_fetch_add(&t->wake_calls, 1, __ATOMIC_SEQ_CST);
                uffd_server_wake(&t->s);
            } else if (dice < 90) {
                t_catch_up(t);
            } else if (dice < 95) {
                /* Let the server get into the queue before the stop comes. */
                g_usleep(g_rand_int_range(r, 0, 500));
            }
            t_check_always(t, when);
        }
        total_msgs += t->written;
        abandoned = t_stop(t, NULL);
        total_abandoned += abandoned;
        t_check_stopped(t, abandoned);
        t_free(t);
    }
    if (g_test_verbose()) {
        g_test_message("%" PRIu64 " messages, %" PRIu64 " abandoned at stop", total_msgs,
                       total_abandoned);
    }
}

/* Waits (bounded) until *@flag is set. */
static void t_wait_for(bool *flag, const char *what)
{
    int64_t deadline = g_get_monotonic_time() + STOP_TIMEOUT_US;

    while (!__atomic_load_n(flag, __ATOMIC_SEQ_CST)) {
        if (g_get_monotonic_time() > deadline) {
            g_error("timed out waiting for %s", what);
        }
        g_usleep(100);
    }
}

/* A stop with nothing pending returns at once and abandons nothing. */
static void test_stop_idle(void)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(SEED);
    UffdServer never = { 0 };
    int64_t elapsed;

    /* Never started: asking it anything is a no-op. */
    uffd_server_wake(&never);
    uffd_server_ask_stop(&never);
    g_assert_cmpuint(uffd_server_stop(&never), ==, 0);
    g_assert_false(uffd_server_running(&never));

    for (int i = 0; i < 20; i++) {
        TServer *t = t_start();

        if (i & 1) {
            t_write(t, r, 10, -1);
            t_catch_up(t);
        }
        g_assert_cmpuint(t_stop(t, &elapsed), ==, 0);
        /* Generous for a loaded host; a stop the thread never hears never returns. */
        g_assert_cmpint(elapsed, <, 2 * G_USEC_PER_SEC);
        t_check_stopped(t, 0);
        /* A second stop is a no-op. */
        g_assert_cmpuint(uffd_server_stop(&t->s), ==, 0);
        t_free(t);
    }
}

/*
 * A stop asked while a hook runs: that hook returns, the rest of its batch
 * and what is queued behind it are abandoned, never delivered.
 */
static void test_stop_mid_batch(void)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(SEED + 1);
    TServer *t = t_start();
    TStopper sp = { .t = t };
    GThread *th;
    int gate;

    t_write(t, r, 20, -1);
    t_catch_up(t);
    gate = t->written;
    __atomic_store_n(&t->gate, gate, __ATOMIC_SEQ_CST);
    /* The gate and 29 faults behind it, in one write: one read takes them all. */
    t_write(t, r, 30, K_FAULT);
    t_wait_for(&t->gate_entered, "the gate's hook");
    t_write(t, r, 50, -1);
    th = g_thread_new("test/stop", t_stop_thread, &sp);
    t_wait_for(&t->s.stopping, "the stop to be asked");
    __atomic_store_n(&t->gate_open, true, __ATOMIC_SEQ_CST);
    t_wait_for(&sp.done, "the stop");
    g_thread_join(th);
    g_assert_cmpuint(sp.abandoned, ==, 79);
    t_check_stopped(t, sp.abandoned);
    g_assert_cmpint(t->msgs[gate].delivered, ==, 1);
    for (int i = gate + 1; i < t->written; i++) {
        g_assert_cmpint(t->msgs[i].delivered, ==, 0);
    }
    t_free(t);
}

/* ---- The real userfaultfd: missing faults on anonymous memory ---- */

typedef struct TReal {
    UffdServer s;
    int uffd;
    uint8_t *mem;               /* 2 pages registered in missing mode */
    uint8_t *src;               /* what placing a page copies */
    bool defer;                 /* atomic: the fault hook defers instead of placing */
    uint64_t deferred;          /* atomic: the page the fault hook deferred, or 0 */
    bool placement_failed;      /* atomic */
} TReal;

static void real_place(TReal *t, uint64_t page)
{
    if (uffd_copy(t->uffd, (void *)(uintptr_t)page, t->src, PAGE, false) < 0) {
        __atomic_store_n(&t->placement_failed, true, __ATOMIC_SEQ_CST);
    }
}

static UffdFaultOutcome real_fault(void *opaque, const UffdFault *f)
{
    TReal *t = opaque;
    uint64_t page = f->addr & ~(uint64_t)(PAGE - 1);

    if (__atomic_load_n(&t->defer, __ATOMIC_SEQ_CST)) {
        __atomic_store_n(&t->deferred, page, __ATOMIC_SEQ_CST);
        return UFFD_FAULT_DEFERRED;
    }
    real_place(t, page);
    return UFFD_FAULT_SERVED;
}

/* Another thread "placed the page" and wants the deferred fault retried: place it here. */
static void real_wake(void *opaque)
{
    TReal *t = opaque;
    uint64_t page = __atomic_exchange_n(&t->deferred, 0, __ATOMIC_SEQ_CST);

    if (page) {
        real_place(t, page);
    }
}

static const UffdServerOps real_ops = {
    .what = "test",
    .fault = real_fault,
    .wake = real_wake,
};

typedef struct TToucher {
    volatile uint8_t *addr;
    uint8_t seen;
    bool done;                  /* atomic */
} TToucher;

static gpointer real_touch(gpointer opaque)
{
    TToucher *to = opaque;

    to->seen = *to->addr;       /* blocks until the page is placed */
    __atomic_store_n(&to->done, true, __ATOMIC_SEQ_CST);
    return NULL;
}

static void real_wait_stat(TReal *t, uint64_t *field_of_copy, UffdServerStats *st)
{
    int64_t deadline = g_get_monotonic_time() + STOP_TIMEOUT_US;

    for (;;) {
        uffd_server_get_stats(&t->s, st);
        if (*field_of_copy) {
            return;
        }
        if (g_get_monotonic_time() > deadline) {
            g_error("timed out waiting for the real fault");
        }
        g_usleep(100);
    }
}

static void test_real_uffd(void)
{
    TReal t = { 0 };
    TToucher a = { 0 }, b = { 0 };
    UffdServerStats st;
    GThread *th;

    t.uffd = uffd_create(0);
    if (t.uffd < 0) {
        g_test_skip("userfaultfd is not usable here");
        return;
    }
    t.mem = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    g_assert(t.mem != MAP_FAILED);
    t.src = g_malloc(PAGE);
    memset(t.src, 0x5a, PAGE);
    g_assert_cmpint(uffd_register_missing(t.uffd, t.mem, 2 * PAGE), ==, 0);
    g_assert_true(uffd_server_start(&t.s, "test/uffd", t.uffd, &real_ops, &t, &error_abort));

    /* Served in the hook: the toucher runs on the page placed. */
    a.addr = t.mem;
    th = g_thread_new("test/touch", real_touch, &a);
    g_thread_join(th);
    g_assert_cmpint(a.seen, ==, 0x5a);
    real_wait_stat(&t, &st.served, &st);
    g_assert_cmpuint(st.served, ==, 1);

    /* Deferred: the toucher waits until a wake places the page. */
    __atomic_store_n(&t.defer, true, __ATOMIC_SEQ_CST);
    b.addr = t.mem + PAGE + 7;
    th = g_thread_new("test/touch", real_touch, &b);
    real_wait_stat(&t, &st.deferred, &st);
    g_usleep(20000);
    g_assert_false(__atomic_load_n(&b.done, __ATOMIC_SEQ_CST));
    uffd_server_wake(&t.s);
    g_thread_join(th);
    g_assert_cmpint(b.seen, ==, 0x5a);
    g_assert_false(t.placement_failed);

    g_assert_cmpuint(uffd_server_stop(&t.s), ==, 0);
    uffd_server_get_stats(&t.s, &st);
    g_assert_cmpuint(st.served, ==, 1);
    g_assert_cmpuint(st.deferred, ==, 1);
    g_assert_cmpuint(st.wakes, ==, 1);
    g_assert_cmpuint(uffd_server_latency(&t.s)->count, ==, 1);
    uffd_unregister(t.uffd, t.mem, 2 * PAGE);
    close(t.uffd);
    munmap(t.mem, 2 * PAGE);
    g_free(t.src);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/uffd-server/stop-idle", test_stop_idle);
    g_test_add_func("/uffd-server/stop-mid-batch", test_stop_mid_batch);
    g_test_add_func("/uffd-server/random", test_random);
    g_test_add_func("/uffd-server/real-uffd", test_real_uffd);
    return g_test_run();
}

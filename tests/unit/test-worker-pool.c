/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for util/worker-pool.c and util/worker-thread.c, with real
 * threads.
 *
 * The pool's invariant (worker-pool.c): every job submitted is handed
 * exactly once to run or, once the pool failed, to discard, in its
 * worker's thread and in submission order, and stop returns only after
 * that. Each job records who handled it and how; the tests check the
 * records after stop. Direct tests pin down stop waking idle workers and
 * a worker blocked outside the pool (ops->wake), a stop with no jobs, the
 * first error reaching the owner, jobs of slots with no thread running in
 * the submitter, and run_each's indexes and thread names. A seeded random
 * mix drives submissions, idle waits, failures and slots without threads
 * at random and checks the invariant after every wait and at the end.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/worker-pool.h"
#include "qemu/worker-thread.h"

#define SEED 0x900117ab

typedef struct TJob {
    int worker;                 /* submitted to (-1: any idle) */
    int seq;                    /* submission order */
    int fail;                   /* run returns this (-errno), 0 = succeed */
    bool fail_second;           /* ...but only once the pool has failed */
    int ran, discarded;         /* atomic: times handed to run / discard */
    int by;                     /* index it was handed to */
    pthread_t thread;           /* the thread that handled it */
    int failed_at_submit;       /* the pool had failed when it was submitted */
    bool saw_stopping;          /* the blocked job, once woken: stop was requested */
    bool refused;               /* submit_idle refused it: never handed over */
} TJob;

typedef struct TOwner {
    WorkerPool *p;
    int n;
    pthread_t *threads;         /* each worker's thread, seen by init; 0: no init yet */
    int *last_seq;              /* per worker: the last job's seq, for the order check */
    int inits;                  /* atomic */
    int init_fail_index;        /* init of this index fails (-1: none) */
    int wakes;                  /* atomic: ops->wake calls */
    int pipe[2];                /* the blocked-worker test: a worker reads here */
    GMutex lock;                /* wait_idle's test: jobs hold here until released */
    bool hold;
} TOwner;

static int t_init(void *opaque, int index, Error **errp)
{
    TOwner *o = opaque;

    o->threads[index] = pthread_self();
    __atomic_add_fetch(&o->inits, 1, __ATOMIC_SEQ_CST);
    if (index == o->init_fail_index) {
        error_setg_errno(errp, ECONNREFUSED, "channel %d: handshake failed", index);
        return -ECONNREFUSED;
    }
    return 0;
}

static void t_record(TOwner *o, int index, TJob *j)
{
    j->by = index;
    j->thread = pthread_self();
    /* Same worker, same order: a job's seq is above its predecessor's there. */
    if (j->worker >= 0) {
        g_assert_cmpint(j->seq, >, o->last_seq[index]);
        o->last_seq[index] = j->seq;
    }
}

static int t_run(void *opaque, int index, void *job, Error **errp)
{
    TOwner *o = opaque;
    TJob *j = job;

    t_record(o, index, j);
    __atomic_add_fetch(&j->ran, 1, __ATOMIC_SEQ_CST);
    if (o->hold) {
        tsan_g_mutex_lock(&o->lock);
        tsan_g_mutex_unlock(&o->lock);
    }
    if (o->pipe[0] >= 0 && j->fail == -EPIPE) {
        char c;

        /* Blocked outside the pool until ops->wake writes; a long job polls stopping. */
        g_assert_cmpint(read(o->pipe[0], &c, 1), ==, 1);
        j->saw_stopping = worker_pool_stopping(o->p);
        return 0;
    }
    while (j->fail_second && !worker_pool_failed(o->p)) {
        g_usleep(1000);
    }
    if (j->fail) {
        error_setg_errno(errp, -j->fail, "job %d failed", j->seq);
        return j->fail;
    }
    return 0;
}

static void t_discard(void *opaque, int index, void *job)
{
    TOwner *o = opaque;
    TJob *j = job;

    t_record(o, index, j);
    __atomic_add_fetch(&j->discarded, 1, __ATOMIC_SEQ_CST);
}

static void t_wake(void *opaque)
{
    TOwner *o = opaque;

    __atomic_add_fetch(&o->wakes, 1, __ATOMIC_SEQ_CST);
    if (o->pipe[1] >= 0) {
        g_assert_cmpint(write(o->pipe[1], "w", 1), ==, 1);
    }
}

static const WorkerPoolOps t_ops = {
    .init = t_init, .run = t_run, .discard = t_discard, .wake = t_wake,
};

static TOwner *t_owner_new(const char *name, int n)
{
    TOwner *o = g_new0(TOwner, 1);

    o->n = n;
    o->threads = g_new0(pthread_t, MAX(n, 1));
    o->last_seq = g_new(int, MAX(n, 1));
    for (int i = 0; i < MAX(n, 1); i++) {
        o->last_seq[i] = -1;
    }
    o->init_fail_index = -1;
    o->pipe[0] = o->pipe[1] = -1;
    g_mutex_init(&o->lock);
    o->p = worker_pool_new(name, n, &t_ops, o);
    return o;
}

static void t_owner_free(TOwner *o)
{
    worker_pool_free(o->p);
    g_mutex_clear(&o->lock);
    g_free(o->threads);
    g_free(o->last_seq);
    g_free(o);
}

/* After stop: every job handed over exactly once, in its worker's thread. */
static void t_check_jobs(TOwner *o, TJob *jobs, int njobs, bool *started)
{
    for (int k = 0; k < njobs; k++) {
        TJob *j = &jobs[k];

        g_assert_cmpint(j->ran + j->discarded, ==, 1);
        if (j->worker >= 0) {
            g_assert_cmpint(j->by, ==, j->worker);
        }
        if (started[j->by]) {
            g_assert_true(pthread_equal(j->thread, o->threads[j->by]));
        } else {
            /* A slot with no thread: the submitter (this thread) handled it. */
            g_assert_true(pthread_equal(j->thread, pthread_self()));
        }
        /* Once the pool has failed, no job begins to run. */
        g_assert_false(j->ran && j->failed_at_submit);
    }
}

static void test_jobs_once(void)
{
    enum { N = 4, NJOBS = 2000 };
    TOwner *o = t_owner_new("t-pool%d", N);
    TJob *jobs = g_new0(TJob, NJOBS);
    bool started[N];

    for (int i = 0; i < N; i++) {
        g_assert_cmpint(worker_pool_start(o->p, i, &error_abort), ==, 0);
        started[i] = true;
    }
    g_assert_cmpint(worker_pool_running(o->p), ==, N);
    for (int k = 0; k < NJOBS; k++) {
        jobs[k] = (TJob) { .worker = k % N, .seq = k };
        worker_pool_submit(o->p, k % N, &jobs[k]);
    }
    g_assert_cmpint(worker_pool_stop(o->p, &error_abort), ==, 0);
    g_assert_cmpint(worker_pool_running(o->p), ==, 0);
    g_assert_cmpint(o->inits, ==, N);
    t_check_jobs(o, jobs, NJOBS, started);
    for (int k = 0; k < NJOBS; k++) {
        g_assert_cmpint(jobs[k].ran, ==, 1);
    }
    /* Workers are distinct threads, none of them this one. */
    for (int i = 0; i < N; i++) {
        g_assert_false(pthread_equal(o->threads[i], pthread_self()));
        for (int k = 0; k < i; k++) {
            g_assert_false(pthread_equal(o->threads[i], o->threads[k]));
        }
    }
    t_owner_free(o);
    g_free(jobs);
}

static void test_stop_idle(void)
{
    enum { N = 3 };
    TOwner *o = t_owner_new("t-idle%d", N);

    for (int i = 0; i < N; i++) {
        worker_pool_start(o->p, i, &error_abort);
    }
    /* Every worker parked in its wait before the stop. */
    g_assert_cmpint(worker_pool_wait_idle(o->p), ==, 0);
    while (__atomic_load_n(&o->inits, __ATOMIC_SEQ_CST) < N) {
        g_usleep(1000);
    }
    g_usleep(20000);
    g_assert_cmpint(worker_pool_stop(o->p, &error_abort), ==, 0);
    g_assert_cmpint(worker_pool_running(o->p), ==, 0);
    g_assert_cmpint(o->wakes, ==, 1);
    /* A second stop returns the same and does not wake again. */
    g_assert_cmpint(worker_pool_stop(o->p, &error_abort), ==, 0);
    g_assert_cmpint(o->wakes, ==, 1);
    g_assert_cmpint(worker_pool_submit_idle(o->p, 0, o), ==, -1);
    t_owner_free(o);
}

static void test_stop_no_jobs(void)
{
    /* Never started, and no threads at all: stop has nothing to join. */
    TOwner *o = t_owner_new("t-none%d", 2);
    TOwner *z = t_owner_new("t-zero", 0);
    TJob j = { .worker = -1 };
    bool started[1] = { false };

    g_assert_cmpint(worker_pool_running(o->p), ==, 0);
    g_assert_cmpint(worker_pool_wait_idle(o->p), ==, 0);
    g_assert_cmpint(worker_pool_stop(o->p, &error_abort), ==, 0);
    g_assert_cmpint(o->inits, ==, 0);
    /* With no thread, a job runs in the submitter, at once. */
    worker_pool_submit(z->p, 7, &j);
    g_assert_cmpint(j.ran, ==, 1);
    g_assert_cmpint(worker_pool_submit_idle(z->p, 0, &j), ==, -1);
    g_assert_cmpint(worker_pool_stop(z->p, &error_abort), ==, 0);
    t_check_jobs(z, &j, 1, started);
    t_owner_free(o);
    t_owner_free(z);
}

static void test_wake_blocked(void)
{
    TOwner *o = t_owner_new("t-blk%d", 1);
    TJob j = { .worker = 0, .fail = -EPIPE };

    g_assert_cmpint(pipe(o->pipe), ==, 0);
    worker_pool_start(o->p, 0, &error_abort);
    worker_pool_submit(o->p, 0, &j);
    while (!__atomic_load_n(&j.ran, __ATOMIC_SEQ_CST)) {
        g_usleep(1000);
    }
    /* The worker is in read(): only ops->wake gets it out. */
    g_assert_cmpint(worker_pool_stop(o->p, &error_abort), ==, 0);
    g_assert_cmpint(o->wakes, ==, 1);
    g_assert_true(j.saw_stopping);
    close(o->pipe[0]);
    close(o->pipe[1]);
    t_owner_free(o);
}

static void test_error(void)
{
    enum { N = 2, NJOBS = 40 };
    TOwner *o = t_owner_new("t-err%d", N);
    TJob jobs[NJOBS] = { 0 };
    bool started[N] = { true, true };
    Error *err = NULL;
    int discarded = 0;

    for (int i = 0; i < N; i++) {
        worker_pool_start(o->p, i, &error_abort);
    }
    /* Hold the workers so that every job is queued before the failing one runs. */
    o->hold = true;
    tsan_g_mutex_lock(&o->lock);
    for (int k = 0; k < NJOBS; k++) {
        /*
         * Worker 0 fails at job 4; its job 8 would fail too, but is
         * discarded. Worker 1's job 1, under way, fails after job 4: the
         * owner gets the first failure.
         */
        jobs[k] = (TJob) { .worker = k % N, .seq = k, .fail_second = k == 1,
                           .fail = k == 4 ? -ENOSPC : k == 8 || k == 1 ? -EIO : 0 };
        worker_pool_submit(o->p, k % N, &jobs[k]);
    }
    /* Both workers under way in their first job (0 and 1) before any fails. */
    while (!__atomic_load_n(&jobs[0].ran, __ATOMIC_SEQ_CST) ||
           !__atomic_load_n(&jobs[1].ran, __ATOMIC_SEQ_CST)) {
        g_usleep(1000);
    }
    tsan_g_mutex_unlock(&o->lock);
    /* Returns at the first failure; the second may come before or after. */
    g_assert_cmpint(worker_pool_wait_idle(o->p), ==, -ENOSPC);
    g_assert_true(worker_pool_failed(o->p));
    g_assert_cmpint(worker_pool_submit_idle(o->p, 0, &jobs[0]), ==, -1);
    g_assert_cmpint(worker_pool_stop(o->p, &err), ==, -ENOSPC);
    g_assert_nonnull(err);
    g_assert_cmpstr(error_get_pretty(err), ==, "job 4 failed: No space left on device");
    error_free(err);
    err = NULL;
    g_assert_cmpint(worker_pool_error(o->p, &err), ==, -ENOSPC);
    error_free(err);
    t_check_jobs(o, jobs, NJOBS, started);
    /* Worker 0's jobs after the failed one were never run. */
    for (int k = 6; k < NJOBS; k += N) {
        g_assert_cmpint(jobs[k].discarded, ==, 1);
        discarded++;
    }
    g_assert_cmpint(jobs[4].ran, ==, 1);
    g_assert_cmpint(jobs[1].ran, ==, 1);
    g_assert_cmpint(discarded, >, 0);
    t_owner_free(o);
}

static void test_init_error(void)
{
    enum { N = 3 };
    TOwner *o = t_owner_new("t-init%d", N);
    TJob j = { .worker = 1, .seq = 0 };
    bool started[N] = { true, true, true };
    Error *err = NULL;

    o->init_fail_index = 1;
    for (int i = 0; i < N; i++) {
        worker_pool_start(o->p, i, &error_abort);
    }
    while (!worker_pool_failed(o->p)) {
        g_usleep(1000);
    }
    /* A worker whose init failed still empties its queue: discards. */
    worker_pool_submit(o->p, 1, &j);
    g_assert_cmpint(worker_pool_submit_idle(o->p, 0, &j), ==, -1);
    g_assert_cmpint(worker_pool_stop(o->p, &err), ==, -ECONNREFUSED);
    g_assert_cmpstr(error_get_pretty(err), ==, "channel 1: handshake failed: Connection refused");
    error_free(err);
    g_assert_cmpint(j.discarded, ==, 1);
    t_check_jobs(o, &j, 1, started);
    t_owner_free(o);
}

static void test_submit_idle(void)
{
    enum { N = 3 };
    TOwner *o = t_owner_new("t-any%d", N);
    TJob jobs[N + 1] = { 0 };
    bool started[N] = { true, true, true };
    bool used[N] = { false };

    for (int i = 0; i < N; i++) {
        worker_pool_start(o->p, i, &error_abort);
    }
    /* With every worker held in a job, each idle pick is a different worker. */
    o->hold = true;
    tsan_g_mutex_lock(&o->lock);
    for (int k = 0; k < N; k++) {
        int i;

        jobs[k] = (TJob) { .worker = -1, .seq = k };
        i = worker_pool_submit_idle(o->p, 1, &jobs[k]);
        g_assert_cmpint(i, >=, 0);
        g_assert_cmpint(i, <, N);
        g_assert_false(used[i]);
        used[i] = true;
    }
    tsan_g_mutex_unlock(&o->lock);
    /* One idle again: the next pick waits for it, then takes it. */
    jobs[N] = (TJob) { .worker = -1, .seq = N };
    g_assert_cmpint(worker_pool_submit_idle(o->p, 0, &jobs[N]), >=, 0);
    g_assert_cmpint(worker_pool_wait_idle(o->p), ==, 0);
    for (int k = 0; k <= N; k++) {
        g_assert_cmpint(jobs[k].ran, ==, 1);
    }
    g_assert_cmpint(worker_pool_stop(o->p, &error_abort), ==, 0);
    t_check_jobs(o, jobs, N + 1, started);
    t_owner_free(o);
}

/*
 * Seeded random steps: submit to a worker (some slots have no thread),
 * submit to any idle one, wait for idle (everything submitted is handed
 * over then), or make the next job fail. The invariant after every wait
 * and at the end: each job handed over exactly once, by its worker, in
 * order, none run after the failure.
 */
static void test_random_mix(void)
{
    GRand *r = g_rand_new_with_seed(SEED);

    for (int round = 0; round < 20; round++) {
        int n = g_rand_int_range(r, 0, 6), njobs = g_rand_int_range(r, 1, 400), k;
        TOwner *o = t_owner_new("t-mix%d", n);
        TJob *jobs = g_new0(TJob, njobs);
        bool started[6] = { false };
        bool fail_next = false, failed = false;

        for (int i = 0; i < n; i++) {
            if (g_rand_int_range(r, 0, 4)) {
                started[i] = worker_pool_start(o->p, i, &error_abort) == 0;
            }
        }
        for (k = 0; k < njobs; k++) {
            int step = g_rand_int_range(r, 0, 100);
            TJob *j = &jobs[k];

            *j = (TJob) { .seq = k, .worker = n ? g_rand_int_range(r, 0, n) : 0 };
            if (fail_next) {
                j->fail = -g_rand_int_range(r, 1, 100);
                fail_next = false;
            }
            if (step < 5) {
                fail_next = true;
            }
            if (step >= 5 && step < 20 && worker_pool_running(o->p)) {
                int i;

                j->worker = -1;
                j->failed_at_submit = worker_pool_failed(o->p);
                i = worker_pool_submit_idle(o->p, g_rand_int(r), j);
                if (i < 0) {
                    /* Refused: only once failed; the job stays ours. */
                    g_assert_true(worker_pool_failed(o->p));
                    j->refused = true;
                } else {
                    g_assert_true(started[i]);
                }
                continue;
            }
            j->failed_at_submit = worker_pool_failed(o->p);
            worker_pool_submit(o->p, j->worker, j);
            if (step >= 20 && step < 30) {
                int ret = worker_pool_wait_idle(o->p);

                if (!ret) {
                    for (int q = 0; q <= k; q++) {
                        g_assert_cmpint(jobs[q].ran + jobs[q].discarded, ==, !jobs[q].refused);
                    }
                }
                failed |= ret != 0;
                g_assert_cmpint(ret != 0, ==, worker_pool_failed(o->p));
            }
        }
        worker_pool_stop(o->p, NULL);
        for (int q = 0; q < njobs; q++) {
            TJob *j = &jobs[q];

            g_assert_cmpint(j->ran + j->discarded, ==, !j->refused);
            if (j->refused) {
                continue;
            }
            if (j->worker >= 0) {
                g_assert_cmpint(j->by, ==, j->worker);
            }
            g_assert_true(pthread_equal(j->thread, started[j->by] ? o->threads[j->by]
                                                                  : pthread_self()));
            g_assert_false(j->ran && j->failed_at_submit);
            failed |= j->ran && j->fail;
        }
        g_assert_cmpint(failed, ==, worker_pool_failed(o->p));
        t_owner_free(o);
        g_free(jobs);
    }
    g_rand_free(r);
}

typedef struct TEach {
    int n;
    int *count;                 /* atomic, per index */
    pthread_t caller;
    int fail_index;
    char names[8][16];
} TEach;

static int t_each(void *opaque, int index, Error **errp)
{
    TEach *e = opaque;

    __atomic_add_fetch(&e->count[index], 1, __ATOMIC_SEQ_CST);
    pthread_getname_np(pthread_self(), e->names[index], sizeof(e->names[index]));
    g_assert_cmpint(pthread_equal(pthread_self(), e->caller) != 0, ==, index == 0);
    if (index == e->fail_index) {
        error_setg(errp, "index %d failed", index);
        return -EINVAL;
    }
    return 0;
}

static void test_run_each(void)
{
    TEach e = { .n = 5, .caller = pthread_self(), .fail_index = -1 };
    Error *err = NULL;

    e.count = g_new0(int, e.n);
    g_assert_cmpint(worker_pool_run_each("t-each%d", e.n, t_each, &e, &error_abort), ==, 0);
    for (int i = 0; i < e.n; i++) {
        g_autofree char *want = g_strdup_printf("t-each%d", i);

        g_assert_cmpint(e.count[i], ==, 1);
        if (i) {
            g_assert_cmpstr(e.names[i], ==, want);
        }
    }
    /* A failure reaches the caller; the name without %d is kept as is. */
    memset(e.count, 0, e.n * sizeof(int));
    e.n = 2;
    e.fail_index = 1;
    g_assert_cmpint(worker_pool_run_each("t-same", e.n, t_each, &e, &err), ==, -EINVAL);
    g_assert_cmpstr(error_get_pretty(err), ==, "index 1 failed");
    g_assert_cmpstr(e.names[1], ==, "t-same");
    error_free(err);
    g_free(e.count);
}

/* ---- The single worker ---- */

typedef struct TSingle {
    WorkerThread w;
    int loops;                  /* w.lock */
    int threads;                /* w.lock: thread functions entered */
    int64_t period_us;
} TSingle;

static void *t_single_fn(void *opaque)
{
    TSingle *s = opaque;

    worker_thread_lock(&s->w);
    s->threads++;
    while (!worker_thread_wait(&s->w, s->period_us)) {
        s->loops++;
    }
    worker_thread_unlock(&s->w);
    return NULL;
}

static void test_worker_thread(void)
{
    TSingle s = { .period_us = 3600LL * G_USEC_PER_SEC };
    int64_t t0;

    worker_thread_init(&s.w);
    g_assert_false(worker_thread_stop(&s.w));
    g_assert_cmpint(worker_thread_start(&s.w, "t-single", t_single_fn, &s), ==, 0);
    g_assert_true(worker_thread_running(&s.w));
    /* Running: a second start creates nothing. */
    g_assert_cmpint(worker_thread_start(&s.w, "t-single", t_single_fn, &s), ==, 0);
    /* Woken, not quitting: another loop. */
    for (bool looped = false; !looped; g_usleep(1000)) {
        worker_thread_lock(&s.w);
        worker_thread_wake(&s.w);
        looped = s.loops > 0;
        worker_thread_unlock(&s.w);
    }
    /* Stop ends an hour-long sleep at once. */
    t0 = g_get_monotonic_time();
    g_assert_true(worker_thread_stop(&s.w));
    g_assert_cmpint(g_get_monotonic_time() - t0, <, 10 * G_USEC_PER_SEC);
    g_assert_cmpint(s.threads, ==, 1);
    g_assert_false(worker_thread_running(&s.w));
    g_assert_false(worker_thread_stop(&s.w));
    /* The timeout wakes it too; and it can be started again. */
    s.loops = 0;
    s.period_us = 1000;
    g_assert_cmpint(worker_thread_start(&s.w, "t-single", t_single_fn, &s), ==, 0);
    for (;;) {
        int loops;

        worker_thread_lock(&s.w);
        loops = s.loops;
        worker_thread_unlock(&s.w);
        if (loops >= 3) {
            break;
        }
        g_usleep(1000);
    }
    /* Stop with the lock held, as dirtylimit does: dropped while joining. */
    worker_thread_lock(&s.w);
    g_assert_true(worker_thread_stop_locked(&s.w));
    g_assert_true(worker_thread_should_quit(&s.w));
    worker_thread_unlock(&s.w);
    worker_thread_destroy(&s.w);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/worker-pool/jobs-once", test_jobs_once);
    g_test_add_func("/worker-pool/stop-wakes-idle", test_stop_idle);
    g_test_add_func("/worker-pool/stop-no-jobs", test_stop_no_jobs);
    g_test_add_func("/worker-pool/wake-blocked", test_wake_blocked);
    g_test_add_func("/worker-pool/error", test_error);
    g_test_add_func("/worker-pool/init-error", test_init_error);
    g_test_add_func("/worker-pool/submit-idle", test_submit_idle);
    g_test_add_func("/worker-pool/random-mix", test_random_mix);
    g_test_add_func("/worker-pool/run-each", test_run_each);
    g_test_add_func("/worker-thread/start-wait-stop", test_worker_thread);
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The worker pool (include/qemu/worker-pool.h has the contract).
 *
 * Invariant: every job submitted is handed exactly once to ops->run or,
 * once the pool failed, to ops->discard, and worker_pool_stop() returns
 * only after that happened to all of them. Why it holds:
 *
 *  1. A job goes either into a running worker's queue (under p->lock, and
 *     only while !stopping) or straight to the submitter's run/discard;
 *     nothing else creates or drops one.
 *  2. A worker leaves its loop only when its queue is empty AND stopping
 *     is set; it pops under p->lock. Stop sets stopping under p->lock, so
 *     no job can be queued after the last check of a worker's queue.
 *  3. Stop joins every running worker: after the joins, by 2, each queue
 *     is empty, and each popped job was handed over by the worker.
 *
 * The failure is read (acquire) just before each job is handed over, so a
 * job that begins after the first failure is discarded, never run: the
 * owner's effects (a page written after a failed one) stop at the first
 * error. A job already running is not interrupted. p->failed is written
 * under p->lock (the first one wins) and read lock-free by
 * worker_pool_failed() from hot paths.
 *
 * Lock order: p->lock is a leaf; no hook ever runs with it held.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/thread.h"
#include "qemu/tsan.h"
#include "qemu/worker-pool.h"

typedef struct Worker {
    WorkerPool *p;
    int index;
    QemuThread thread;
    GCond cond;                 /* p->lock: a job was queued, or stopping */
    /* p->lock: the submitters push, the worker pops. */
    GQueue jobs;
    bool running;               /* p->lock: the thread exists, not joined yet */
    bool ready;                 /* p->lock: init done; submit_idle may pick it */
    bool busy;                  /* p->lock: the worker is handing a job over */
} Worker;

struct WorkerPool {
    char *name;                 /* read-only */
    int n;                      /* read-only */
    const WorkerPoolOps *ops;   /* read-only */
    void *opaque;               /* read-only */
    Worker *w;                  /* n slots */

    GMutex lock;
    GCond idle_cond;            /* p->lock: a worker went idle or ready, a failure, stopping */
    bool stopping;              /* p->lock (and atomic): written by stop; read by all */
    bool joined;                /* stop's own: the joins are done */
    int nrunning;               /* p->lock */
    int failed;                 /* atomic, written under p->lock: the first -errno, 0 = none */
    Error *error;               /* p->lock: the first failure's message */
};

static void wp_lock(WorkerPool *p)
{
    tsan_g_mutex_lock(&p->lock);
}

static void wp_unlock(WorkerPool *p)
{
    tsan_g_mutex_unlock(&p->lock);
}

/* p->lock held: the first failure stays; later ones are dropped. */
static void wp_fail_locked(WorkerPool *p, int ret, Error *err)
{
    if (ret >= 0) {
        /* A hook that returns a failure must say which: EIO rather than lose it. */
        ret = -EIO;
    }
    if (!p->failed) {
        if (!err) {
            error_setg_errno(&err, -ret, "%s: a worker failed", p->name);
        }
        __atomic_store_n(&p->failed, ret, __ATOMIC_RELEASE);
        p->error = err;
        g_cond_broadcast(&p->idle_cond);
    } else {
        error_free(err);
    }
}

/*
 * Hands @job to run or discard in the calling thread (a worker, or the
 * submitter for a slot with no thread). p->lock not held.
 */
static void wp_handle(WorkerPool *p, int index, void *job)
{
    Error *err = NULL;
    int ret;

    if (__atomic_load_n(&p->failed, __ATOMIC_ACQUIRE)) {
        if (p->ops->discard) {
            p->ops->discard(p->opaque, index, job);
        }
        return;
    }
    ret = p->ops->run(p->opaque, index, job, &err);
    if (ret < 0 || err) {
        wp_lock(p);
        wp_fail_locked(p, ret < 0 ? ret : -EIO, err);
        wp_unlock(p);
    }
}

static void *wp_worker_thread(void *opaque)
{
    Worker *w = opaque;
    WorkerPool *p = w->p;

    if (p->ops->init) {
        Error *err = NULL;
        int ret = p->ops->init(p->opaque, w->index, &err);

        if (ret < 0 || err) {
            wp_lock(p);
            wp_fail_locked(p, ret, err);
            wp_unlock(p);
        }
    }
    wp_lock(p);
    w->ready = true;
    g_cond_broadcast(&p->idle_cond);
    for (;;) {
        void *job;

        while (g_queue_is_empty(&w->jobs) && !p->stopping) {
            tsan_g_cond_wait(&w->cond, &p->lock);
        }
        if (g_queue_is_empty(&w->jobs)) {
            break;              /* stopping, and nothing left: rule 2 */
        }
        job = g_queue_pop_head(&w->jobs);
        w->busy = true;
        wp_unlock(p);
        wp_handle(p, w->index, job);
        wp_lock(p);
        w->busy = false;
        if (g_queue_is_empty(&w->jobs)) {
            g_cond_broadcast(&p->idle_cond);
        }
    }
    wp_unlock(p);
    return NULL;
}

/* "mig/mr-w%d" with 3: "mig/mr-w3"; a name without %d is kept as is. */
static char *wp_thread_name(const char *name, int index)
{
    const char *pct = strstr(name, "%d");

    if (!pct) {
        return g_strdup(name);
    }
    return g_strdup_printf("%.*s%d%s", (int)(pct - name), name, index, pct + 2);
}

WorkerPool *worker_pool_new(const char *name, int n, const WorkerPoolOps *ops, void *opaque)
{
    WorkerPool *p = g_new0(WorkerPool, 1);

    assert(n >= 0 && ops && ops->run);
    p->name = g_strdup(name);
    p->n = n;
    p->ops = ops;
    p->opaque = opaque;
    p->w = g_new0(Worker, MAX(n, 1));
    g_mutex_init(&p->lock);
    g_cond_init(&p->idle_cond);
    for (int i = 0; i < n; i++) {
        p->w[i].p = p;
        p->w[i].index = i;
        g_cond_init(&p->w[i].cond);
        g_queue_init(&p->w[i].jobs);
    }
    return p;
}

int worker_pool_start(WorkerPool *p, int index, Error **errp)
{
    g_autofree char *name = wp_thread_name(p->name, index);
    Worker *w;
    int ret;

    assert(index >= 0 && index < p->n);
    w = &p->w[index];
    wp_lock(p);
    assert(!w->running && !p->stopping);
    /* Under the lock: a submitter sees it running only once the thread exists. */
    ret = qemu_thread_create(&w->thread, name, wp_worker_thread, w);
    if (ret == 0) {
        w->running = true;
        p->nrunning++;
    }
    wp_unlock(p);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "cannot create thread %s", name);
    }
    return ret;
}

int worker_pool_running(WorkerPool *p)
{
    int n;

    wp_lock(p);
    n = p->nrunning;
    wp_unlock(p);
    return n;
}

void worker_pool_submit(WorkerPool *p, int index, void *job)
{
    Worker *w = p->n ? &p->w[index] : NULL;

    assert(!p->n || (index >= 0 && index < p->n));
    wp_lock(p);
    assert(!p->stopping);
    if (w && w->running) {
        g_queue_push_tail(&w->jobs, job);
        g_cond_signal(&w->cond);
        wp_unlock(p);
        return;
    }
    wp_unlock(p);
    /* No thread for this slot: the submitter is its worker. */
    wp_handle(p, p->n ? index : 0, job);
}

/* p->lock held. */
static bool wp_idle_locked(Worker *w)
{
    return w->running && w->ready && !w->busy && g_queue_is_empty(&w->jobs);
}

int worker_pool_submit_idle(WorkerPool *p, int first, void *job)
{
    wp_lock(p);
    for (;;) {
        if (p->stopping || p->failed || !p->n) {
            wp_unlock(p);
            return -1;
        }
        for (int k = 0; k < p->n; k++) {
            int i = ((first % p->n) + p->n + k) % p->n;
            Worker *w = &p->w[i];

            if (wp_idle_locked(w)) {
                g_queue_push_tail(&w->jobs, job);
                g_cond_signal(&w->cond);
                wp_unlock(p);
                return i;
            }
        }
        tsan_g_cond_wait(&p->idle_cond, &p->lock);
    }
}

int worker_pool_wait_idle(WorkerPool *p)
{
    int ret;

    wp_lock(p);
    for (;;) {
        bool idle = true;

        for (int i = 0; i < p->n; i++) {
            Worker *w = &p->w[i];

            /* A worker not ready yet has nothing run: its queue decides. */
            if (w->running && (w->busy || !g_queue_is_empty(&w->jobs))) {
                idle = false;
            }
        }
        if (idle || p->failed || p->stopping) {
            break;
        }
        tsan_g_cond_wait(&p->idle_cond, &p->lock);
    }
    ret = p->failed;
    wp_unlock(p);
    return ret;
}

bool worker_pool_failed(WorkerPool *p)
{
    return __atomic_load_n(&p->failed, __ATOMIC_ACQUIRE) != 0;
}

bool worker_pool_stopping(WorkerPool *p)
{
    return __atomic_load_n(&p->stopping, __ATOMIC_ACQUIRE);
}

int worker_pool_error(WorkerPool *p, Error **errp)
{
    int ret;

    wp_lock(p);
    ret = p->failed;
    if (ret && errp) {
        error_propagate(errp, error_copy(p->error));
    }
    wp_unlock(p);
    return ret;
}

int worker_pool_stop(WorkerPool *p, Error **errp)
{
    /* 1: no job is queued from now on (rule 2); 2: wake the idle ones. */
    wp_lock(p);
    __atomic_store_n(&p->stopping, true, __ATOMIC_RELEASE);
    for (int i = 0; i < p->n; i++) {
        g_cond_signal(&p->w[i].cond);
    }
    g_cond_broadcast(&p->idle_cond);
    wp_unlock(p);
    if (!p->joined && p->ops->wake) {
        p->ops->wake(p->opaque);
    }
    /* 3: each worker empties its queue, then ends (rule 3). */
    for (int i = 0; !p->joined && i < p->n; i++) {
        Worker *w = &p->w[i];
        bool join;

        wp_lock(p);
        join = w->running;
        wp_unlock(p);
        if (join) {
            qemu_thread_join(&w->thread);
            wp_lock(p);
            w->running = false;
            p->nrunning--;
            wp_unlock(p);
        }
    }
    p->joined = true;
    return worker_pool_error(p, errp);
}

void worker_pool_free(WorkerPool *p)
{
    if (!p) {
        return;
    }
    worker_pool_stop(p, NULL);
    for (int i = 0; i < p->n; i++) {
        assert(g_queue_is_empty(&p->w[i].jobs));
        g_cond_clear(&p->w[i].cond);
    }
    error_free(p->error);
    g_cond_clear(&p->idle_cond);
    g_mutex_clear(&p->lock);
    g_free(p->w);
    g_free(p->name);
    g_free(p);
}

/* ---- Once on each of N: a pool whose every slot gets one job ---- */

typedef struct WorkerEach {
    WorkerEachFn *fn;
    void *opaque;
} WorkerEach;

static int wp_each_run(void *opaque, int index, void *job, Error **errp)
{
    WorkerEach *e = opaque;

    return e->fn(e->opaque, index, errp);
}

static const WorkerPoolOps wp_each_ops = {
    .run = wp_each_run,
};

int worker_pool_run_each(const char *name, int n, WorkerEachFn *fn, void *opaque, Error **errp)
{
    WorkerEach e = { .fn = fn, .opaque = opaque };
    WorkerPool *p = worker_pool_new(name, n, &wp_each_ops, &e);
    int ret;

    for (int i = 1; i < n; i++) {
        /* A thread that cannot be created: its index runs here (submit's rule). */
        worker_pool_start(p, i, NULL);
    }
    /* Slot 0 has no thread: submitted last, it runs here while the others run. */
    for (int i = n - 1; i >= 0; i--) {
        worker_pool_submit(p, i, &e);
    }
    ret = worker_pool_stop(p, errp);
    worker_pool_free(p);
    return ret;
}

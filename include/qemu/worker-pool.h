/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A pool of N named worker threads, each bound to its index for its whole
 * life, fed by job queues; and, on top of it, "run this function once on
 * each of N workers and join".
 *
 * How to use it:
 *
 *   p = worker_pool_new("mig/mr-w%d", n, &ops, owner);  no thread yet
 *   worker_pool_start(p, i, errp)          thread i, named "mig/mr-w<i>"
 *   worker_pool_submit(p, i, job)          to worker i's queue (FIFO)
 *   i = worker_pool_submit_idle(p, k, job) to the first idle worker from k
 *   worker_pool_wait_idle(p)               every queue empty, no job running
 *   worker_pool_failed(p)                  cheap poll: a job or init failed
 *   worker_pool_stopping(p)                cheap poll: a long job should end
 *   ret = worker_pool_stop(p, errp)        THE way to end: request, wake, join
 *   worker_pool_free(p)
 *
 *   ret = worker_pool_run_each("mig/mr-r%d", n, fn, owner, errp)
 *                       fn(owner, i) once for each i, 0 in the caller
 *
 * A name with "%d" gets the worker's index; without, every worker has the
 * name as is ("mig/populate"). The kernel keeps 15 characters of it.
 *
 * Contract:
 *   - Threads. ops->init (once, first), ops->run and ops->discard of a
 *     worker's jobs run in worker i's thread, in submission order, one at
 *     a time; two workers run in parallel. Per-worker state belongs to
 *     the owner, indexed by i (a channel, a file descriptor). A job for a
 *     worker that is not running (never started, or its start failed)
 *     runs in the submitting thread at once: a pool whose threads could
 *     not be created, or of no threads at all, still runs everything.
 *   - Errors. init or run returns 0 or -errno with @errp set. The first
 *     failure is the pool's: worker_pool_failed() turns true, later jobs
 *     are handed to ops->discard (never run) so whatever they hold is
 *     released in order, worker_pool_submit_idle() refuses new work, and
 *     worker_pool_stop() / worker_pool_wait_idle() return it.
 *   - Locks. The pool's lock is its own and never held while a hook runs:
 *     hooks may take the owner's locks and call worker_pool_failed(); they
 *     must not call submit/stop on their own pool.
 *   - Stop. worker_pool_stop() (1) refuses later submissions, (2) wakes
 *     every worker and calls ops->wake, for a worker blocked outside the
 *     pool (a socket write: shut it down), (3) lets every worker finish
 *     its queue (run, or discard once failed) and joins it. When it
 *     returns no thread of the pool exists and every job submitted before
 *     was handed to run or discard exactly once. Call it from one thread;
 *     a second call returns the same result.
 *
 * The two shapes of user: workers fed jobs (mapped-ram's writers, each
 * with its own file descriptor; a multifd sender, whose channels each do
 * their handshake in ops->init and are picked by the producer with
 * worker_pool_submit_idle, synced with worker_pool_wait_idle, and woken
 * out of a blocked send by ops->wake shutting the sockets down), and
 * workers given one long job (a multifd receiver's per-channel loop, which
 * polls worker_pool_stopping; run_each's functions).
 */
#ifndef QEMU_WORKER_POOL_H
#define QEMU_WORKER_POOL_H

#include <stdbool.h>

typedef struct Error Error;
typedef struct WorkerPool WorkerPool;

typedef struct WorkerPoolOps {
    /* Worker thread @index, before its first job; NULL: none. 0 or -errno, @errp set. */
    int (*init)(void *opaque, int index, Error **errp);
    /* Worker thread @index (or the submitter, see above): one job. 0 or -errno, @errp set. */
    int (*run)(void *opaque, int index, void *job, Error **errp);
    /* Instead of run, once the pool failed; NULL: nothing to release. */
    void (*discard)(void *opaque, int index, void *job);
    /* worker_pool_stop(), after the workers were told: unblock them; NULL: none. */
    void (*wake)(void *opaque);
} WorkerPoolOps;

/* @n worker slots (n >= 0), no thread yet. @ops and @opaque outlive the pool. */
WorkerPool *worker_pool_new(const char *name, int n, const WorkerPoolOps *ops, void *opaque);
/* Starts worker @index's thread. 0, or -errno with @errp set (the slot stays inline). */
int worker_pool_start(WorkerPool *p, int index, Error **errp);
/* Worker threads running (started, not stopped). */
int worker_pool_running(WorkerPool *p);
/* Queues @job for worker @index (any value when n == 0). Not after stop. */
void worker_pool_submit(WorkerPool *p, int index, void *job);
/*
 * Waits for a running worker, initialised, with nothing queued or running,
 * trying @first, @first + 1, ... in turn; gives it @job and returns its
 * index. -1 once the pool failed or is stopping (the caller keeps @job).
 */
int worker_pool_submit_idle(WorkerPool *p, int first, void *job);
/* Waits until every running worker is idle, or the pool failed: 0 or its -errno. */
int worker_pool_wait_idle(WorkerPool *p);
/* Any thread, lock-free: a job or an init has failed. */
bool worker_pool_failed(WorkerPool *p);
/*
 * Any thread, lock-free: stop was requested. A job that lasts (a channel's
 * receive loop) polls it; ops->wake gets it out of a blocking call first.
 */
bool worker_pool_stopping(WorkerPool *p);
/* The first failure: 0, or its -errno with a copy of its error in @errp. */
int worker_pool_error(WorkerPool *p, Error **errp);
/* Request stop, wake, join (see the contract). 0, or the first failure as worker_pool_error. */
int worker_pool_stop(WorkerPool *p, Error **errp);
/* Stops it if that was not done, then frees it. NULL: nothing. */
void worker_pool_free(WorkerPool *p);

typedef int WorkerEachFn(void *opaque, int index, Error **errp);
/*
 * Runs @fn(@opaque, i) once for every i in [0, @n): i = 0 in the calling
 * thread, the others in threads named after @name; an index whose thread
 * cannot be created runs in the calling thread, before 0. Returns when all
 * have returned: 0, or the first failure's -errno with @errp set. After a
 * failure an index that has not begun is skipped (the pool's discard rule);
 * one under way is not interrupted: @fn polls its owner's state for that.
 */
int worker_pool_run_each(const char *name, int n, WorkerEachFn *fn, void *opaque, Error **errp);

#endif

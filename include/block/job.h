/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Block jobs: a long operation on the block layer's nodes (the mirror)
 * that runs in a thread of its own while the guest runs, with QEMU's
 * status machine and events. The job core (block/job.c) knows nothing of
 * what a job does: a job's kind is a row (JobDriver); the QMP and events
 * are the registry's hooks (block/job-qmp.c in the binary, a recorder in
 * tests/unit/test-mirror.c), so the core links without the monitor.
 *
 * How to use it:
 *
 *   reg = block_layer_jobs(bl)              the layer's registry (made with it)
 *   job_registry_set_hooks(reg, &hooks, opaque)   once: events and the main loop
 *   job = job_create(reg, &drv, "j0", opaque, auto_finalize, auto_dismiss, errp)
 *   job_start(job)                          CREATED -> RUNNING, the thread starts
 *   in the thread:  drv->run(job, errp)     calls job_set_ready(), job_progress(),
 *                                           job_sleep_ns(), polls job_is_cancelled()
 *   job_user_complete / job_user_cancel / job_finalize / job_dismiss   (QMP, BQL)
 *
 * Status (QEMU's JobStatus, the JOB_STATUS_CHANGE event's): created ->
 * running [-> ready] -> waiting -> pending -> concluded -> null on
 * success; running|ready -> aborting -> concluded -> null on a cancel or
 * an error. pending waits for job-finalize without auto-finalize,
 * concluded for job-dismiss without auto-dismiss.
 *
 * Threads: every status change and event happens on the main thread
 * under the BQL; the job's thread asks for them through hooks->defer
 * (the main loop's bottom half). What the thread and the QMP share is
 * atomic and named below.
 */
#ifndef BLOCK_JOB_H
#define BLOCK_JOB_H

#include "block/block.h"
#include "qapi/qapi-types.h"

typedef struct Job Job;
typedef struct JobRegistry JobRegistry;

/* A kind of job: a row. */
typedef struct JobDriver {
    JobType type;                   /* query-jobs' type, BLOCK_JOB_*'s type */
    /*
     * The job's thread: 0 when its work is done (success), -ECANCELED
     * when it stopped on a cancel, another -errno (and @errp) on failure.
     */
    int (*run)(Job *job, Error **errp);
    /* job-complete on a ready job (BQL): false and @errp to refuse. */
    bool (*complete)(Job *job, Error **errp);
    /* Wake the thread from a sleep: a cancel, a complete, a new speed. Any thread. */
    void (*kick)(Job *job);
    /* After the thread ended (BQL): drop what the job holds. */
    void (*free)(Job *job);
    /*
     * The migration's switchover (BQL, guest stopped): finish every
     * request, leave nothing undone that the nodes' inactivation would
     * refuse, and issue none until @resume (or a cancel). NULL: the job
     * needs nothing.
     */
    int (*drain)(Job *job, Error **errp);
    void (*resume)(Job *job);
} JobDriver;

/*
 * The registry's outside world. All but defer run on the main thread
 * under the BQL; NULL hooks are skipped.
 */
typedef struct JobHooks {
    /* Run @fn(@arg) on the main thread under the BQL, soon. Any thread. Not NULL. */
    void (*defer)(void *opaque, void (*fn)(void *arg), void *arg);
    void (*status_change)(void *opaque, Job *job);          /* JOB_STATUS_CHANGE */
    void (*ready)(void *opaque, Job *job);                  /* BLOCK_JOB_READY */
    /* BLOCK_JOB_COMPLETED (@error NULL on success) or, @cancelled, BLOCK_JOB_CANCELLED. */
    void (*finished)(void *opaque, Job *job, bool cancelled, const char *error);
    /* BLOCK_JOB_ERROR: a request of the job failed and @action was taken. */
    void (*io_error)(void *opaque, Job *job, bool is_read, BlockErrorAction action);
} JobHooks;

struct Job {
    JobRegistry *reg;               /* fixed */
    const JobDriver *drv;           /* fixed */
    void *opaque;                   /* the driver's state (fixed) */
    char *id;                       /* fixed */
    char *device;                   /* BlockJobInfo's device: the job id, as QEMU 3.0+ (fixed) */
    bool auto_finalize, auto_dismiss;       /* fixed */
    JobStatus status;               /* BQL */
    char *error;                    /* why it failed, once it did (BQL) */
    bool cancelled;                 /* atomic: written under the BQL, read by the thread */
    bool force;                     /* atomic: a cancel that must not finish the copy */
    bool should_complete;           /* atomic: job-complete was asked */
    bool busy;                      /* atomic: the thread is not sleeping (job thread) */
    int64_t speed;                  /* atomic: bytes/s, 0 unlimited (QMP writes) */
    uint64_t len, offset;           /* atomic: progress (job thread writes) */
    int ret;                        /* the thread's result (job thread, then BQL) */
    GThread *thread;                /* BQL */
    GMutex sleep_lock;              /* with sleep_cond: job_sleep_ns and its wakers */
    GCond sleep_cond;
};

/* ---- The registry (BQL) ---- */
JobRegistry *job_registry_new(void);
/* Every job cancelled (forced) and its thread joined, no event sent; then freed. */
void job_registry_free(JobRegistry *reg);
void job_registry_set_hooks(JobRegistry *reg, const JobHooks *hooks, void *opaque);
/* The jobs, in creation order: the first at @i, or NULL past the end. */
Job *job_nth(JobRegistry *reg, guint i);
Job *job_find(JobRegistry *reg, const char *id);
JobRegistry *block_layer_jobs(BlockLayer *bl);
/* Before the nodes go inactive / after they are active again: every job's drain, resume. */
int job_registry_drain_all(JobRegistry *reg, Error **errp);
void job_registry_resume_all(JobRegistry *reg);
/* The binary's hooks: QEMU's events, the main loop's bottom halves (block/job-qmp.c). */
void block_jobs_register_qmp(BlockLayer *bl);

/* ---- A job's life (BQL unless said) ---- */
Job *job_create(JobRegistry *reg, const JobDriver *drv, const char *id, void *opaque,
                bool auto_finalize, bool auto_dismiss, Error **errp);
void job_start(Job *job);
/* block-job-cancel (@force) and job-cancel (always forced, as QEMU's). */
bool job_user_cancel(Job *job, bool force, Error **errp);
bool job_user_complete(Job *job, Error **errp);
bool job_finalize(Job *job, Error **errp);
bool job_dismiss(Job *job, Error **errp);
bool job_set_speed(Job *job, int64_t speed, Error **errp);
/* query-block-jobs' ready: READY, or waiting/pending after it. */
bool job_is_ready(Job *job);

/* ---- From the job's thread ---- */
bool job_is_cancelled(Job *job);        /* any cancel */
bool job_is_force_cancelled(Job *job);  /* a cancel that must not finish the copy */
bool job_should_complete(Job *job);     /* job-complete, or a soft cancel of a ready job */
/* The work is copied once: READY and BLOCK_JOB_READY on the main thread. */
void job_set_ready(Job *job);
void job_progress_set_len(Job *job, uint64_t len);
void job_progress_add(Job *job, uint64_t done);
/* Wake the thread from job_sleep_ns (any thread). */
void job_wake(Job *job);
/* Sleep up to @ns (0: only yield), woken early by a cancel, complete, speed or job_wake. */
void job_sleep_ns(Job *job, int64_t ns);
/* BLOCK_JOB_ERROR, sent from the main thread. */
void job_report_io_error(Job *job, bool is_read, BlockErrorAction action);

#endif

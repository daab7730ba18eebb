/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The job core (include/block/job.h): ids, QEMU's status machine, the
 * thread, and the requests of QMP (cancel, complete, finalize, dismiss,
 * speed).
 *
 * The invariant: a job's status and its events change only on the main
 * thread under the BQL, in QEMU's order, and the job is freed only after
 * its thread was joined. The thread never touches the status: it ends by
 * deferring job_exit_main (hooks->defer), which joins it and walks the
 * status to concluded (or pending); job_set_ready defers the same way, and
 * job_exit_main runs after it because defer runs callbacks in order.
 *
 * Lock order: BQL, then a job's sleep_lock.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/tsan.h"
#include "block/job.h"
#include "block-int.h"

struct JobRegistry {
    GPtrArray *jobs;                /* Job *, creation order (BQL) */
    const JobHooks *hooks;          /* fixed after set_hooks (BQL) */
    void *opaque;
};

JobRegistry *job_registry_new(void)
{
    JobRegistry *reg = g_new0(JobRegistry, 1);

    reg->jobs = g_ptr_array_new();
    return reg;
}

void job_registry_set_hooks(JobRegistry *reg, const JobHooks *hooks, void *opaque)
{
    reg->hooks = hooks;
    reg->opaque = opaque;
}

Job *job_nth(JobRegistry *reg, guint i)
{
    return i < reg->jobs->len ? g_ptr_array_index(reg->jobs, i) : NULL;
}

Job *job_find(JobRegistry *reg, const char *id)
{
    for (guint i = 0; i < reg->jobs->len; i++) {
        Job *job = g_ptr_array_index(reg->jobs, i);

        if (!strcmp(job->id, id)) {
            return job;
        }
    }
    return NULL;
}

JobRegistry *block_layer_jobs(BlockLayer *bl)
{
    return bl->jobs;
}

static void job_free(Job *job)
{
    g_ptr_array_remove(job->reg->jobs, job);
    if (job->drv->free) {
        job->drv->free(job);
    }
    g_mutex_clear(&job->sleep_lock);
    g_cond_clear(&job->sleep_cond);
    g_free(job->id);
    g_free(job->device);
    g_free(job->error);
    g_free(job);
}

void job_wake(Job *job)
{
    tsan_g_mutex_lock(&job->sleep_lock);
    g_cond_broadcast(&job->sleep_cond);
    tsan_g_mutex_unlock(&job->sleep_lock);
}

static bool job_has_thread(Job *job)
{
    return job->status == JOB_STATUS_RUNNING || job->status == JOB_STATUS_READY;
}

int job_registry_drain_all(JobRegistry *reg, Error **errp)
{
    for (guint i = 0; reg && i < reg->jobs->len; i++) {
        Job *job = g_ptr_array_index(reg->jobs, i);
        int ret;

        if (!job_has_thread(job) || !job->drv->drain) {
            continue;
        }
        ret = job->drv->drain(job, errp);
        if (ret < 0) {
            /* Nothing goes inactive: the drained ones work on. */
            job_registry_resume_all(reg);
            return ret;
        }
    }
    return 0;
}

void job_registry_resume_all(JobRegistry *reg)
{
    for (guint i = 0; reg && i < reg->jobs->len; i++) {
        Job *job = g_ptr_array_index(reg->jobs, i);

        if (job->drv->resume) {
            job->drv->resume(job);
        }
    }
}

static void job_kick(Job *job)
{
    tsan_g_mutex_lock(&job->sleep_lock);
    g_cond_broadcast(&job->sleep_cond);
    tsan_g_mutex_unlock(&job->sleep_lock);
    if (job->drv->kick) {
        job->drv->kick(job);
    }
}

void job_registry_free(JobRegistry *reg)
{
    if (!reg) {
        return;
    }
    /* Exit: no event and no deferred call may run after this, so join here. */
    while (reg->jobs->len) {
        Job *job = g_ptr_array_index(reg->jobs, reg->jobs->len - 1);

        __atomic_store_n(&job->force, true, __ATOMIC_SEQ_CST);
        __atomic_store_n(&job->cancelled, true, __ATOMIC_SEQ_CST);
        job_kick(job);
        if (job->thread) {
            g_thread_join(job->thread);
            job->thread = NULL;
        }
        job_free(job);
    }
    g_ptr_array_free(reg->jobs, TRUE);
    g_free(reg);
}

static void job_set_status(Job *job, JobStatus status)
{
    job->status = status;
    if (job->reg->hooks && job->reg->hooks->status_change) {
        job->reg->hooks->status_change(job->reg->opaque, job);
    }
}

Job *job_create(JobRegistry *reg, const JobDriver *drv, const char *id, void *opaque,
                bool auto_finalize, bool auto_dismiss, Error **errp)
{
    Job *job;

    if (!block_id_wellformed(id)) {
        error_setg(errp, "Invalid job ID '%s'", id);
        return NULL;
    }
    if (!reg->hooks || !reg->hooks->defer) {
        error_setg(errp, "Block jobs need the main loop (job_registry_set_hooks)");
        return NULL;
    }
    if (job_find(reg, id)) {
        error_setg(errp, "Job ID '%s' already in use", id);
        return NULL;
    }
    job = g_new0(Job, 1);
    job->reg = reg;
    job->drv = drv;
    job->opaque = opaque;
    job->id = g_strdup(id);
    job->device = g_strdup(id);
    job->auto_finalize = auto_finalize;
    job->auto_dismiss = auto_dismiss;
    g_mutex_init(&job->sleep_lock);
    g_cond_init(&job->sleep_cond);
    g_ptr_array_add(reg->jobs, job);
    job_set_status(job, JOB_STATUS_CREATED);
    return job;
}

/* ---- The end: on the main thread ---- */

static void job_conclude(Job *job)
{
    job_set_status(job, JOB_STATUS_CONCLUDED);
    if (job->auto_dismiss) {
        job_set_status(job, JOB_STATUS_NULL);
        job_free(job);
    }
}

/* PENDING -> the job's event -> CONCLUDED: job-finalize or auto-finalize. */
static void job_do_finalize(Job *job)
{
    if (job->reg->hooks && job->reg->hooks->finished) {
        job->reg->hooks->finished(job->reg->opaque, job, false, NULL);
    }
    job_conclude(job);
}

static void job_exit_main(void *arg)
{
    Job *job = arg;
    bool cancelled;

    /* job->ret and job->error are the thread's until the join. */
    g_thread_join(job->thread);
    job->thread = NULL;
    cancelled = job->ret == -ECANCELED;
    if (job->ret == 0) {
        job_set_status(job, JOB_STATUS_WAITING);
        job_set_status(job, JOB_STATUS_PENDING);
        if (job->auto_finalize) {
            job_do_finalize(job);
        }
        return;
    }
    job_set_status(job, JOB_STATUS_ABORTING);
    if (!cancelled && !job->error) {
        job->error = g_strdup(strerror(-job->ret));
    }
    if (job->reg->hooks && job->reg->hooks->finished) {
        job->reg->hooks->finished(job->reg->opaque, job, cancelled,
                                  cancelled ? NULL : job->error);
    }
    job_conclude(job);
}

static gpointer job_thread(gpointer arg)
{
    Job *job = arg;
    Error *err = NULL;

    __atomic_store_n(&job->busy, true, __ATOMIC_SEQ_CST);
    job->ret = job->drv->run(job, &err);
    if (err) {
        /* Read by the main thread only after the join in job_exit_main. */
        job->error = g_strdup(error_get_pretty(err));
        error_free(err);
    }
    __atomic_store_n(&job->busy, false, __ATOMIC_SEQ_CST);
    job->reg->hooks->defer(job->reg->opaque, job_exit_main, job);
    return NULL;
}

void job_start(Job *job)
{
    g_autofree char *name = g_strdup_printf("job/%s", job->id);

    job_set_status(job, JOB_STATUS_RUNNING);
    job->thread = g_thread_new(name, job_thread, job);
}

/* ---- Ready: from the thread, applied on the main thread ---- */

static void job_ready_main(void *arg)
{
    Job *job = arg;

    /* A cancel may have raced: the job still ran, and READY precedes its exit. */
    if (job->status != JOB_STATUS_RUNNING) {
        return;
    }
    job_set_status(job, JOB_STATUS_READY);
    if (job->reg->hooks && job->reg->hooks->ready) {
        job->reg->hooks->ready(job->reg->opaque, job);
    }
}

void job_set_ready(Job *job)
{
    job->reg->hooks->defer(job->reg->opaque, job_ready_main, job);
}

typedef struct JobIOError {
    Job *job;
    bool is_read;
    BlockErrorAction action;
} JobIOError;

static void job_io_error_main(void *arg)
{
    JobIOError *e = arg;

    if (e->job->reg->hooks && e->job->reg->hooks->io_error) {
        e->job->reg->hooks->io_error(e->job->reg->opaque, e->job, e->is_read, e->action);
    }
    g_free(e);
}

void job_report_io_error(Job *job, bool is_read, BlockErrorAction action)
{
    JobIOError *e = g_new(JobIOError, 1);

    *e = (JobIOError){ .job = job, .is_read = is_read, .action = action };
    /* Before the job's exit in the defer order, so the job is still there. */
    job->reg->hooks->defer(job->reg->opaque, job_io_error_main, e);
}

/* ---- QMP's requests (BQL) ---- */

bool job_is_ready(Job *job)
{
    return job->status == JOB_STATUS_READY || job->status == JOB_STATUS_STANDBY;
}

static bool job_is_active(Job *job)
{
    return job->status == JOB_STATUS_RUNNING || job->status == JOB_STATUS_READY ||
           job->status == JOB_STATUS_CREATED;
}

bool job_user_cancel(Job *job, bool force, Error **errp)
{
    if (!job_is_active(job)) {
        error_setg(errp, "Job '%s' in state '%s' cannot accept command verb 'cancel'",
                   job->id, job->status == JOB_STATUS_CONCLUDED ? "concluded" :
                   job->status == JOB_STATUS_PENDING ? "pending" : "waiting");
        return false;
    }
    /* Not ready yet: every cancel abandons the copy. */
    __atomic_store_n(&job->force, force || job->status != JOB_STATUS_READY, __ATOMIC_SEQ_CST);
    __atomic_store_n(&job->cancelled, true, __ATOMIC_SEQ_CST);
    job_kick(job);
    return true;
}

bool job_user_complete(Job *job, Error **errp)
{
    if (job->status != JOB_STATUS_READY) {
        error_setg(errp, "The active block job '%s' cannot be completed", job->id);
        return false;
    }
    if (__atomic_load_n(&job->cancelled, __ATOMIC_SEQ_CST)) {
        error_setg(errp, "Job '%s' has been cancelled", job->id);
        return false;
    }
    if (!job->drv->complete || !job->drv->complete(job, errp)) {
        return false;
    }
    __atomic_store_n(&job->should_complete, true, __ATOMIC_SEQ_CST);
    job_kick(job);
    return true;
}

bool job_finalize(Job *job, Error **errp)
{
    if (job->status != JOB_STATUS_PENDING) {
        error_setg(errp, "Job '%s' in state '%s' cannot accept command verb 'finalize'",
                   job->id, job->status == JOB_STATUS_READY ? "ready" : "running");
        return false;
    }
    job_do_finalize(job);
    return true;
}

bool job_dismiss(Job *job, Error **errp)
{
    if (job->status != JOB_STATUS_CONCLUDED) {
        error_setg(errp, "Job '%s' in state '%s' cannot accept command verb 'dismiss'",
                   job->id, job->status == JOB_STATUS_PENDING ? "pending" : "running");
        return false;
    }
    job_set_status(job, JOB_STATUS_NULL);
    job_free(job);
    return true;
}

bool job_set_speed(Job *job, int64_t speed, Error **errp)
{
    if (speed < 0) {
        error_setg(errp, "Parameter 'speed' expects a non-negative value");
        return false;
    }
    __atomic_store_n(&job->speed, speed, __ATOMIC_SEQ_CST);
    job_kick(job);
    return true;
}

/* ---- The thread's side ---- */

/* A request flag that the BQL side sets and the job's threads poll. */
static bool flag(const bool *f)
{
    return __atomic_load_n(f, __ATOMIC_SEQ_CST);
}

bool job_is_cancelled(Job *job)
{
    return flag(&job->cancelled);
}

bool job_is_force_cancelled(Job *job)
{
    return flag(&job->cancelled) && flag(&job->force);
}

bool job_should_complete(Job *job)
{
    return flag(&job->should_complete) || (flag(&job->cancelled) && !flag(&job->force));
}

void job_progress_set_len(Job *job, uint64_t len)
{
    __atomic_store_n(&job->len, len, __ATOMIC_SEQ_CST);
}

void job_progress_add(Job *job, uint64_t done)
{
    __atomic_fetch_add(&job->offset, done, __ATOMIC_SEQ_CST);
}

void job_sleep_ns(Job *job, int64_t ns)
{
    if (ns <= 0) {
        return;
    }
    tsan_g_mutex_lock(&job->sleep_lock);
    /* A request that came before the lock is seen here, so no wake-up is lost. */
    if (!flag(&job->cancelled) && !flag(&job->should_complete)) {
        __atomic_store_n(&job->busy, false, __ATOMIC_SEQ_CST);
        tsan_g_cond_wait_until(&job->sleep_cond, &job->sleep_lock,
                          g_get_monotonic_time() + ns / 1000);
        __atomic_store_n(&job->busy, true, __ATOMIC_SEQ_CST);
    }
    tsan_g_mutex_unlock(&job->sleep_lock);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The mirror job (include/block/mirror.h, docs/devel/mirror.md): copy
 * threads (workers) copy the dirty chunks of the source into the target
 * while the guest writes through the source's backend, whose write hook
 * marks what it writes dirty again (or, write-blocking, writes it to the
 * target too). The job's own thread starts them, says ready, and does the
 * final copies with the workers held.
 *
 * The invariant: every byte the guest wrote to the source before the
 * final copy starts is on the target when the job completes. It holds
 * because:
 *   1. The hook is installed (blk_set_write_hook drains the writes that
 *      started without it) before the initial dirty bitmap is built, so a
 *      write either landed before the scan (the scan marks every range
 *      that holds data) or is seen by the hook.
 *   2. The hook runs after the write reached the source. A copy clears
 *      a chunk's bits before it reads the source: a write that lands after
 *      that read sets the bits again and the chunk is copied again; one
 *      that landed before it is in what the copy read.
 *   3. Write-blocking: a guest write is written to the target only once no
 *      copy of an overlapping range is in flight (s->ops), so a copy that
 *      read the old bytes cannot overwrite the newer ones on the target; a
 *      copy that starts later reads the newer bytes itself. A failed target
 *      write marks the range dirty instead.
 *   4. At the migration's switchover (guest stopped) the job holds the
 *      workers, copies what is dirty and flushes before the nodes go
 *      inactive, and then issues nothing (mirror_drain): the destination
 *      finds every write.
 *   5. A completion while the guest runs does the same with the backend's
 *      writes quiesced (its hook lock held for writing): nothing lands
 *      while the last chunks are copied; then the hook stops (s->stopped)
 *      before writes resume.
 * Rules 1 to 3 are kept in mirror-dirty.c.
 *
 * Threads and locks: the job's thread and its workers copy; guest writes
 * call the hook in their threads; QMP runs under the BQL. Lock order: the
 * backend's hook lock (read side, by writers), then s->lock.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/tsan.h"
#include "qemu/bitmap.h"
#include "qemu/bufferiszero.h"
#include "mirror-int.h"
#include "block-int.h"

void mirror_options_init(MirrorOptions *o)
{
    *o = (MirrorOptions){
        .sync = MIRROR_SYNC_MODE_FULL,
        .copy_mode = MIRROR_COPY_MODE_BACKGROUND,
        .granularity = MIRROR_DEFAULT_GRANULARITY,
        .buf_size = MIRROR_DEFAULT_BUF_SIZE,
        .on_source_error = JOB_ON_ERROR_REPORT,
        .on_target_error = JOB_ON_ERROR_REPORT,
        .auto_finalize = true,
        .auto_dismiss = true,
    };
}

/* ---- One copy (a worker, or the job thread with the workers held) ---- */

/*
 * The rate limit, shared by the workers (lock held): a run may start once
 * the clock reaches next_ns, and taking it moves the clock on by its
 * bytes at the job's speed, so even the first runs of all the workers
 * keep to the speed. How long to wait still (0: go on).
 */
static int64_t rate_delay_locked(MirrorState *s)
{
    int64_t speed = __atomic_load_n(&s->job->speed, __ATOMIC_SEQ_CST);
    int64_t now = g_get_monotonic_time() * 1000;

    if (speed <= 0) {
        return 0;
    }
    /* Behind by more than a second (a new speed, an idle spell): start afresh. */
    if (s->next_ns < now - 1000000000LL) {
        s->next_ns = now;
    }
    return MAX(s->next_ns - now, 0);
}

static void rate_account_locked(MirrorState *s, uint64_t bytes)
{
    int64_t speed = __atomic_load_n(&s->job->speed, __ATOMIC_SEQ_CST);

    if (speed > 0) {
        s->next_ns += (int64_t)(bytes * 1000000000.0 / speed);
    }
}

/*
 * A request's error under its policy: 0 to go on (the range marked again),
 * or the error. @final: the guest waits for this copy, so it must end.
 */
static int mirror_error(MirrorState *s, bool is_read, int err, uint64_t offset,
                        uint64_t bytes, bool final, Error **errp)
{
    JobOnError policy = is_read ? s->o.on_source_error : s->o.on_target_error;

    if (policy == JOB_ON_ERROR_IGNORE && !final) {
        job_report_io_error(s->job, is_read, BLOCK_ERROR_ACTION_IGNORE);
        mirror_mark_dirty(s, offset, bytes);
        job_sleep_ns(s->job, MIRROR_IDLE_NS);      /* do not spin on a dead target */
        return 0;
    }
    /* The job fails once, whatever the copies in flight that fail with it. */
    if (!__atomic_exchange_n(&s->error_reported, true, __ATOMIC_SEQ_CST)) {
        job_report_io_error(s->job, is_read, BLOCK_ERROR_ACTION_REPORT);
    }
    error_setg_errno(errp, -err, "Could not %s '%s'", is_read ? "read" : "write",
                     is_read ? s->source->node_name : s->target->node_name);
    return err;
}

/* Copy the run taken into ops[@slot] through @buf: 1 copied (or ignored), -errno. */
static int mirror_copy_run(MirrorState *s, unsigned slot, uint8_t *buf, uint64_t offset,
                           uint64_t bytes, bool final, Error **errp)
{
    int r;

    r = bdrv_pread(s->source, offset, buf, bytes);
    if (r < 0) {
        mirror_op_end(s, slot);
        return mirror_error(s, true, r, offset, bytes, final, errp) ?: 1;
    }
    if (buffer_is_zero(buf, bytes)) {
        r = bdrv_pwrite_zeroes(s->target, offset, bytes, BDRV_REQ_MAY_UNMAP);
    } else {
        r = bdrv_pwrite(s->target, offset, buf, bytes, 0);
    }
    if (r >= 0) {
        /* Counted before the op ends: a READY that follows sees it. */
        job_progress_add(s->job, bytes);
    }
    mirror_op_end(s, slot);
    if (r < 0) {
        return mirror_error(s, false, r, offset, bytes, final, errp) ?: 1;
    }
    /* Under the lock, so the workers' answers come in order and the last is right. */
    tsan_g_mutex_lock(&s->lock);
    job_progress_set_len(s->job, __atomic_load_n(&s->job->offset, __ATOMIC_SEQ_CST) +
                                 MIN(s->dirty_count << s->gran_bits, s->len));
    tsan_g_mutex_unlock(&s->lock);
    return 1;
}

/* ---- The workers ---- */

static gpointer mirror_worker(gpointer arg)
{
    MirrorWorker *w = arg;
    MirrorState *s = w->s;

    for (;;) {
        Error *err = NULL;
        uint64_t offset, bytes;
        bool stop;
        int r;

        tsan_g_mutex_lock(&s->lock);
        while (!(stop = s->workers_stop)) {
            int64_t delay = 0;

            if (!s->hold && !s->copy_err && s->dirty_count) {
                delay = rate_delay_locked(s);
                if (!delay && mirror_take_run_locked(s, w->slot, &offset, &bytes)) {
                    rate_account_locked(s, bytes);
                    break;
                }
            }
            if (delay) {
                tsan_g_cond_wait_until(&s->work, &s->lock,
                                       g_get_monotonic_time() + delay / 1000 + 1);
            } else {
                tsan_g_cond_wait(&s->work, &s->lock);
            }
        }
        tsan_g_mutex_unlock(&s->lock);
        if (stop) {
            break;
        }
        r = mirror_copy_run(s, w->slot, w->buf, offset, bytes, false, &err);
        if (r < 0) {
            tsan_g_mutex_lock(&s->lock);
            if (!s->copy_err) {
                s->copy_err = r;
                s->copy_err_msg = g_strdup(error_get_pretty(err));
            }
            g_cond_broadcast(&s->op_done);      /* the job thread sees it */
            tsan_g_mutex_unlock(&s->lock);
            error_free(err);
        }
    }
    return NULL;
}

static void workers_start(MirrorState *s)
{
    s->workers = g_new0(MirrorWorker, s->nworkers);
    for (unsigned i = 0; i < s->nworkers; i++) {
        g_autofree char *name = g_strdup_printf("job/%s/%u", s->job->id, i);
        MirrorWorker *w = &s->workers[i];

        *w = (MirrorWorker){ .s = s, .buf = g_malloc(s->op_max), .slot = i };
        w->thread = g_thread_new(name, mirror_worker, w);
    }
}

static void workers_stop(MirrorState *s)
{
    tsan_g_mutex_lock(&s->lock);
    s->workers_stop = true;
    g_cond_broadcast(&s->work);
    tsan_g_mutex_unlock(&s->lock);
    for (unsigned i = 0; s->workers && i < s->nworkers; i++) {
        g_thread_join(s->workers[i].thread);
        g_free(s->workers[i].buf);
    }
    g_clear_pointer(&s->workers, g_free);
}

/* The workers take no new run, and none is in flight. */
static void workers_hold(MirrorState *s)
{
    tsan_g_mutex_lock(&s->lock);
    s->hold = true;
    while (s->in_flight) {
        tsan_g_cond_wait(&s->op_done, &s->lock);
    }
    tsan_g_mutex_unlock(&s->lock);
}

static void workers_release(MirrorState *s)
{
    tsan_g_mutex_lock(&s->lock);
    s->hold = false;
    g_cond_broadcast(&s->work);
    tsan_g_mutex_unlock(&s->lock);
}

/* Everything dirty copied by the job thread (workers held), then the target flushed. */
static int mirror_copy_all(MirrorState *s, Error **errp)
{
    uint64_t offset, bytes;
    bool taken;
    int r = 0;

    for (;;) {
        tsan_g_mutex_lock(&s->lock);
        taken = mirror_take_run_locked(s, s->nworkers, &offset, &bytes);
        tsan_g_mutex_unlock(&s->lock);
        if (!taken) {
            break;
        }
        r = mirror_copy_run(s, s->nworkers, s->buf, offset, bytes, true, errp);
        if (r < 0) {
            break;
        }
        r = 0;
        if (job_is_force_cancelled(s->job)) {
            return -ECANCELED;
        }
    }
    if (r == 0) {
        r = bdrv_flush(s->target);
        if (r < 0) {
            error_setg_errno(errp, -r, "Could not flush '%s'", s->target->node_name);
        }
    }
    return r;
}

/* ---- The end, and the switchover (job thread) ---- */

/* Rule 5: the rest copied with the guest's writes held, the target flushed, the hook off. */
static int mirror_converge(MirrorState *s, Error **errp)
{
    int r;

    workers_hold(s);
    if (s->blk) {
        blk_writes_quiesce(s->blk);
    }
    r = mirror_copy_all(s, errp);
    tsan_g_mutex_lock(&s->lock);
    s->stopped = true;
    s->end_ret = r;
    tsan_g_mutex_unlock(&s->lock);
    if (s->blk) {
        blk_writes_resume(s->blk);
    }
    return r;
}

static bool park_requested(MirrorState *s)
{
    bool req;

    tsan_g_mutex_lock(&s->lock);
    req = s->park_req;
    tsan_g_mutex_unlock(&s->lock);
    return req;
}

/* Rule 4: everything copied and flushed, then parked until resumed or cancelled. */
static int mirror_park(MirrorState *s, Error **errp)
{
    int r;

    workers_hold(s);
    r = mirror_copy_all(s, errp);
    tsan_g_mutex_lock(&s->lock);
    s->parked = true;
    s->park_answered = true;
    s->park_ret = r;
    g_cond_broadcast(&s->park_cond);
    while (s->park_req && !job_is_cancelled(s->job) && r == 0) {
        tsan_g_cond_wait(&s->park_cond, &s->lock);
    }
    s->parked = false;
    tsan_g_mutex_unlock(&s->lock);
    if (r == 0) {
        workers_release(s);
    }
    return r;
}

static int mirror_drain(Job *job, Error **errp)
{
    MirrorState *s = job->opaque;
    int r = 0;

    tsan_g_mutex_lock(&s->lock);
    s->park_req = true;
    s->park_answered = false;
    g_cond_broadcast(&s->op_done);
    tsan_g_mutex_unlock(&s->lock);
    job_wake(job);
    tsan_g_mutex_lock(&s->lock);
    while (!s->park_answered && !s->stopped) {
        tsan_g_cond_wait(&s->park_cond, &s->lock);
    }
    /*
     * A job that ended without parking: its completion copied everything,
     * else (failed, cancelled) the target misses writes and the nodes must
     * not go inactive as if it did not.
     */
    r = s->park_answered ? s->park_ret : s->end_ret;
    tsan_g_mutex_unlock(&s->lock);
    if (r < 0) {
        error_setg_errno(errp, -r, "Mirror job '%s' could not bring '%s' up to date",
                         job->id, s->target->node_name);
    }
    return r;
}

static void mirror_resume(Job *job)
{
    MirrorState *s = job->opaque;

    tsan_g_mutex_lock(&s->lock);
    s->park_req = false;
    g_cond_broadcast(&s->park_cond);
    tsan_g_mutex_unlock(&s->lock);
}

/* A cancel, a complete or a speed: the job thread looks again, out of a park too. */
static void mirror_kick(Job *job)
{
    MirrorState *s = job->opaque;

    tsan_g_mutex_lock(&s->lock);
    g_cond_broadcast(&s->park_cond);
    g_cond_broadcast(&s->op_done);
    g_cond_broadcast(&s->work);         /* a new speed */
    tsan_g_mutex_unlock(&s->lock);
}

/* The job thread: ready once nothing is dirty and nothing in flight; the end. */
static int mirror_run(Job *job, Error **errp)
{
    MirrorState *s = job->opaque;
    bool ready = false;
    int r = mirror_scan(s, errp);

    job_progress_set_len(job, mirror_dirty_bytes(s));
    s->next_ns = g_get_monotonic_time() * 1000;
    if (r == 0) {
        workers_start(s);
    }
    while (r == 0) {
        bool idle;

        tsan_g_mutex_lock(&s->lock);
        if (s->copy_err) {
            r = s->copy_err;
            error_setg(errp, "%s", s->copy_err_msg);
        }
        idle = !s->dirty_count && !s->in_flight;
        tsan_g_mutex_unlock(&s->lock);
        if (r < 0) {
            break;
        }
        if (job_is_force_cancelled(job)) {
            r = -ECANCELED;
            break;
        }
        if (park_requested(s) && !job_is_cancelled(job)) {
            r = mirror_park(s, errp);
            continue;
        }
        if (ready && job_should_complete(job) &&
            mirror_dirty_bytes(s) <= MIRROR_CONVERGE_BYTES) {
            r = mirror_converge(s, errp);
            break;
        }
        if (idle && !ready) {
            /* As QEMU's: ready with len == offset. */
            job_progress_set_len(job, __atomic_load_n(&job->offset, __ATOMIC_SEQ_CST));
            ready = true;
            job_set_ready(job);
            continue;
        }
        /* Wait for a copy to end, a request, or the poll's timeout. */
        tsan_g_mutex_lock(&s->lock);
        tsan_g_cond_wait_until(&s->op_done, &s->lock,
                          g_get_monotonic_time() + MIRROR_IDLE_NS / 1000);
        tsan_g_mutex_unlock(&s->lock);
    }
    workers_stop(s);
    tsan_g_mutex_lock(&s->lock);
    s->stopped = true;
    s->end_ret = r;
    g_cond_broadcast(&s->park_cond);    /* a drain waiting for a job that ended */
    tsan_g_mutex_unlock(&s->lock);
    if (s->hooked) {
        blk_set_write_hook(s->blk, NULL);
        s->hooked = false;
    }
    return r;
}

/*
 * job-complete: the drive switches to the target (QEMU's pivot), the
 * guest running. The drive's requests stop (reads too: they would read
 * the old node), the job copies what is dirty and flushes (the park the
 * switchover uses), the drive's node becomes the target and the hook
 * goes; the requests go on against the target, and the job, told to
 * complete, ends with nothing left to copy. BQL.
 */
static bool mirror_complete(Job *job, Error **errp)
{
    MirrorState *s = job->opaque;
    bool busy;

    if (!s->blk) {
        error_setg(errp, "Job '%s': node '%s' is no drive's, so no drive can switch to "
                   "'%s'; use block-job-cancel after BLOCK_JOB_READY", job->id,
                   s->source->node_name, s->target->node_name);
        return false;
    }
    tsan_g_mutex_lock(&s->lock);
    busy = s->park_req;
    tsan_g_mutex_unlock(&s->lock);
    if (busy) {
        error_setg(errp, "Job '%s' is held for a migration's switchover", job->id);
        return false;
    }
    blk_requests_quiesce(s->blk);
    if (mirror_drain(job, errp) < 0) {
        blk_requests_resume(s->blk);
        mirror_resume(job);
        return false;
    }
    if (!blk_replace_root(s->blk, s->target, errp)) {
        blk_requests_resume(s->blk);
        mirror_resume(job);
        return false;
    }
    /* No request is in flight: the hook's lock is free. */
    blk_set_write_hook(s->blk, NULL);
    s->hooked = false;
    blk_requests_resume(s->blk);
    mirror_resume(job);
    return true;
}

static void mirror_free(Job *job)
{
    MirrorState *s = job->opaque;

    if (s->hooked) {
        blk_set_write_hook(s->blk, NULL);
    }
    bdrv_unref(s->source);
    bdrv_unref(s->target);
    g_mutex_clear(&s->lock);
    g_cond_clear(&s->op_done);
    g_cond_clear(&s->work);
    g_cond_clear(&s->park_cond);
    g_free(s->dirty);
    g_free(s->ops);
    g_free(s->buf);
    g_free(s->copy_err_msg);
    g_free(s);
}

static const JobDriver mirror_job_driver = {
    .type = JOB_TYPE_MIRROR,
    .run = mirror_run,
    .complete = mirror_complete,
    .kick = mirror_kick,
    .free = mirror_free,
    .drain = mirror_drain,
    .resume = mirror_resume,
};

/* ---- Start (BQL) ---- */

bool mirror_node_busy(BlockLayer *bl, BlockDriverState *bs)
{
    JobRegistry *reg = block_layer_jobs(bl);
    Job *job;

    for (guint i = 0; (job = job_nth(reg, i)); i++) {
        MirrorState *s = job->opaque;

        if (job->drv == &mirror_job_driver && (s->source == bs || s->target == bs)) {
            return true;
        }
    }
    return false;
}

static bool mirror_check(BlockLayer *bl, BlockDriverState *source, BlockDriverState *target,
                         const MirrorOptions *o, Error **errp)
{
    int64_t slen = bdrv_getlength(source), tlen = bdrv_getlength(target);

    if (o->granularity < 512 || o->granularity > 64 * 1024 * 1024) {
        error_setg(errp, "Parameter 'granularity' expects a value in range [512B, 64MB]");
        return false;
    }
    if (o->granularity & (o->granularity - 1)) {
        error_setg(errp, "Granularity must be a power of 2");
        return false;
    }
    if (o->sync == MIRROR_SYNC_MODE_INCREMENTAL || o->sync == MIRROR_SYNC_MODE_BITMAP) {
        error_setg(errp, "Sync mode '%s' not supported",
                   o->sync == MIRROR_SYNC_MODE_BITMAP ? "bitmap" : "incremental");
        return false;
    }
    if (o->on_source_error == JOB_ON_ERROR_STOP || o->on_source_error == JOB_ON_ERROR_ENOSPC ||
        o->on_target_error == JOB_ON_ERROR_STOP || o->on_target_error == JOB_ON_ERROR_ENOSPC) {
        error_setg(errp, "A mirror's error policy may be report, ignore or auto here");
        return false;
    }
    if (o->speed < 0) {
        error_setg(errp, "Parameter 'speed' expects a non-negative value");
        return false;
    }
    if (source == target) {
        error_setg(errp, "Can't mirror node into itself");
        return false;
    }
    if (mirror_node_busy(bl, source) || mirror_node_busy(bl, target)) {
        error_setg(errp, "Node '%s' is busy: block device is in use by block job: mirror",
                   mirror_node_busy(bl, source) ? source->node_name : target->node_name);
        return false;
    }
    if (target->read_only || (target->open_flags & BDRV_O_INACTIVE) ||
        (source->open_flags & BDRV_O_INACTIVE)) {
        error_setg(errp, "Node '%s' is not writable",
                   (source->open_flags & BDRV_O_INACTIVE) ? source->node_name
                                                          : target->node_name);
        return false;
    }
    if (slen < 0 || tlen < 0 || slen != tlen) {
        error_setg(errp, "Source and target image have different sizes");
        return false;
    }
    return true;
}

Job *mirror_start(BlockLayer *bl, const char *job_id, BlockBackend *blk,
                  BlockDriverState *source, BlockDriverState *target,
                  const MirrorOptions *o, Error **errp)
{
    MirrorState *s;
    Job *job;

    if (!mirror_check(bl, source, target, o, errp)) {
        return NULL;
    }
    s = g_new0(MirrorState, 1);
    s->bl = bl;
    s->blk = blk;
    s->source = source;
    s->target = target;
    s->o = *o;
    s->len = bdrv_getlength(source);
    s->gran_bits = __builtin_ctzll(o->granularity);
    s->nbits = (s->len + o->granularity - 1) >> s->gran_bits;
    s->dirty = bitmap_new(MAX(s->nbits, 1));
    s->op_max = MAX(MIN(MAX(o->buf_size, o->granularity), MIRROR_MAX_OP) &
                    ~(o->granularity - 1), o->granularity);
    /* buf-size bounds the bytes in flight: one buffer per worker. */
    s->nworkers = MAX(1, MIN(MIRROR_MAX_WORKERS, o->buf_size / s->op_max));
    s->ops = g_new0(MirrorOp, s->nworkers + 1);
    s->buf = g_malloc(s->op_max);
    s->hook = (BlkWriteHook){ .after = mirror_write_hook, .opaque = s };
    g_mutex_init(&s->lock);
    g_cond_init(&s->op_done);
    g_cond_init(&s->work);
    g_cond_init(&s->park_cond);
    source->refcnt++;
    target->refcnt++;

    /* Rule 1: the hook sees every write that lands after the scan starts. */
    if (blk && blk_set_write_hook(blk, &s->hook) < 0) {
        error_setg(errp, "Node '%s' is busy: block device is in use by block job",
                   source->node_name);
        mirror_free(&(Job){ .opaque = s });
        return NULL;
    }
    job = job_create(block_layer_jobs(bl), &mirror_job_driver, job_id, s,
                     o->auto_finalize, o->auto_dismiss, errp);
    if (!job) {
        s->hooked = blk != NULL;
        mirror_free(&(Job){ .opaque = s });
        return NULL;
    }
    s->job = job;
    s->hooked = blk != NULL;
    __atomic_store_n(&job->speed, o->speed, __ATOMIC_SEQ_CST);
    job_start(job);
    return job;
}

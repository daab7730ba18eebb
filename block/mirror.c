/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The mirror job (include/block/mirror.h, docs/devel/mirror.md): a thread
 * copies the dirty chunks of the source into the target while the guest
 * writes through the source's backend, whose write hook marks what it
 * writes dirty again (or, write-blocking, writes it to the target too).
 *
 * The invariant: every byte the guest wrote to the source before the
 * final copy starts is on the target when the job completes. It holds
 * because:
 *   1. The hook is installed (blk_set_write_hook drains the writes that
 *      started without it) before the initial dirty bitmap is built, so a
 *      write either landed before the scan (the scan marks every range
 *      that holds data) or is seen by the hook.
 *   2. The hook runs after the write reached the source. The copy clears
 *      a chunk's bits before it reads the source: a write that lands after
 *      that read sets the bits again and the chunk is copied again; one
 *      that landed before it is in what the copy read.
 *   3. Write-blocking: a guest write is written to the target only once no
 *      copy of an overlapping range is in flight (s->op_*), so a copy that
 *      read the old bytes cannot overwrite the newer ones on the target; a
 *      copy that starts later reads the newer bytes itself. A failed target
 *      write marks the range dirty instead.
 *   4. At the migration's switchover (guest stopped) the job copies
 *      what is dirty and flushes before the nodes go inactive, and then
 *      issues nothing (mirror_drain): the destination finds every write.
 *   5. The final copy runs with the backend's writes quiesced (its hook
 *      lock held for writing): nothing lands while the last chunks are
 *      copied; then the hook stops (s->stopped) before writes resume.
 *
 * (Rule 5 is rule 4 for a completion while the guest runs.)
 *
 * Threads and locks: the job's thread copies; guest writes call the hook
 * in their threads; QMP runs under the BQL. Lock order: the backend's
 * hook lock (read side, by writers), then s->lock.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "qemu/bufferiszero.h"
#include "block/mirror.h"
#include "block-int.h"

#define MIRROR_MAX_OP       (4 * 1024 * 1024)   /* one read and write at most */
#define MIRROR_IDLE_NS      (10 * 1000 * 1000)  /* a ready job's poll for new writes */
/* Dirty bytes at most left when a complete quiesces the guest's writes. */
#define MIRROR_CONVERGE_BYTES (64 * 1024 * 1024)

typedef struct MirrorState {
    Job *job;                       /* fixed */
    BlockLayer *bl;                 /* fixed */
    BlockBackend *blk;              /* the guest's, or NULL (fixed) */
    BlockDriverState *source, *target;      /* referenced (fixed) */
    MirrorOptions o;                /* fixed; the speed is job->speed */
    uint64_t len;                   /* the source's length (fixed) */
    unsigned gran_bits;             /* log2(o.granularity) (fixed) */
    uint64_t nbits;                 /* chunks of the disk (fixed) */
    BlkWriteHook hook;              /* fixed */
    bool hooked;                    /* the hook is installed (job thread after start) */

    GMutex lock;
    GCond op_done;                  /* an op ended: write-blocking writers wait for it */
    /*
     * A set bit: the chunk may differ on the target. Set by the hook after
     * a guest write (and by the initial scan); cleared by the copy right
     * before it reads the chunk. (lock)
     */
    unsigned long *dirty;
    uint64_t dirty_count;           /* set bits of dirty (lock) */
    uint64_t op_start, op_end;      /* the copy in flight, bytes; op_end 0: none (lock) */
    bool stopped;                   /* the job is over: the hook does nothing (lock) */
    bool final;                     /* in the final copy (job thread) */
    /*
     * The switchover (mirror_drain): the main thread asks (park_req), the
     * job copies what is dirty, flushes, answers (parked, park_ret) and
     * issues nothing until the request is withdrawn or the job cancelled.
     * (lock, with park_cond)
     */
    bool park_req, parked;
    int park_ret;
    GCond park_cond;

    uint8_t *buf;                   /* the copy's buffer (job thread) */
    uint64_t op_max;                /* its size, whole chunks (fixed) */
    uint64_t cursor;                /* the next chunk to look at (job thread) */
    int64_t next_ns;                /* the rate limit's clock (job thread) */
} MirrorState;

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

/* ---- The dirty bitmap (s->lock held) ---- */

static void mark_dirty_locked(MirrorState *s, uint64_t offset, uint64_t bytes)
{
    uint64_t first, last;

    if (!bytes || offset >= s->len) {
        return;
    }
    bytes = MIN(bytes, s->len - offset);
    first = offset >> s->gran_bits;
    last = (offset + bytes - 1) >> s->gran_bits;
    for (uint64_t b = first; b <= last; b++) {
        /* One word at a time when a write spans many chunks. */
        if (b % BITS_PER_LONG == 0 && last - b + 1 >= BITS_PER_LONG) {
            unsigned long old = s->dirty[BIT_WORD(b)];

            s->dirty_count += BITS_PER_LONG - __builtin_popcountl(old);
            s->dirty[BIT_WORD(b)] = ~0UL;
            b += BITS_PER_LONG - 1;
        } else if (!test_and_set_bit(b, s->dirty)) {
            s->dirty_count++;
        }
    }
}

static void mark_dirty(MirrorState *s, uint64_t offset, uint64_t bytes)
{
    g_mutex_lock(&s->lock);
    mark_dirty_locked(s, offset, bytes);
    g_mutex_unlock(&s->lock);
}

/*
 * The next run of dirty chunks from the cursor (wrapping), at most
 * s->op_max bytes: its bits cleared and it registered as the op in
 * flight. false when nothing is dirty.
 */
static bool take_dirty_run(MirrorState *s, uint64_t *offset, uint64_t *bytes)
{
    uint64_t b, end, max_bits = s->op_max >> s->gran_bits;

    g_mutex_lock(&s->lock);
    if (!s->dirty_count) {
        g_mutex_unlock(&s->lock);
        return false;
    }
    b = find_next_bit(s->dirty, s->nbits, s->cursor);
    if (b >= s->nbits) {
        b = find_first_bit(s->dirty, s->nbits);
    }
    end = find_next_zero_bit(s->dirty, MIN(s->nbits, b + max_bits), b);
    bitmap_clear(s->dirty, b, end - b);
    s->dirty_count -= end - b;
    s->cursor = end;
    *offset = b << s->gran_bits;
    *bytes = MIN(end << s->gran_bits, s->len) - *offset;
    s->op_start = *offset;
    s->op_end = *offset + *bytes;
    g_mutex_unlock(&s->lock);
    return true;
}

static void op_end(MirrorState *s)
{
    g_mutex_lock(&s->lock);
    s->op_start = s->op_end = 0;
    g_cond_broadcast(&s->op_done);
    g_mutex_unlock(&s->lock);
}

static uint64_t dirty_bytes(MirrorState *s)
{
    uint64_t n;

    g_mutex_lock(&s->lock);
    n = s->dirty_count << s->gran_bits;
    g_mutex_unlock(&s->lock);
    return MIN(n, s->len);
}

/* ---- The guest's writes (their threads) ---- */

static void mirror_write_hook(void *opaque, BlkHookOp op, uint64_t offset, uint64_t bytes,
                              const struct iovec *iov, int niov, int ret)
{
    MirrorState *s = opaque;
    int r;

    g_mutex_lock(&s->lock);
    if (s->stopped) {
        g_mutex_unlock(&s->lock);
        return;
    }
    if (s->o.copy_mode != MIRROR_COPY_MODE_WRITE_BLOCKING || ret < 0 ||
        op == BLK_HOOK_DISCARD) {
        /* A failed write may have changed the source partly: copy it again too. */
        mark_dirty_locked(s, offset, bytes);
        g_mutex_unlock(&s->lock);
        return;
    }
    /* Rule 3 at the top: no copy that may have read the old bytes is in flight. */
    while (s->op_end && offset < s->op_end && s->op_start < offset + bytes) {
        g_cond_wait(&s->op_done, &s->lock);
    }
    g_mutex_unlock(&s->lock);
    r = op == BLK_HOOK_WRITE ? bdrv_pwritev(s->target, offset, bytes, iov, niov, 0)
                             : bdrv_pwrite_zeroes(s->target, offset, bytes, 0);
    if (r < 0) {
        /* The background copy meets the target's error and applies the policy. */
        mark_dirty(s, offset, bytes);
    }
}

/* ---- The initial bitmap ---- */

/*
 * Whether [@offset, +*pnum) of @bs's chain must be copied: data in some
 * layer (@top_only: in @bs's own layer, or zeroes there that hide a
 * backing image). A hole or a zero range with sync=full is left out: the
 * target reads zeroes there (a new image; see docs/devel/mirror.md).
 */
static int range_needs_copy(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                            bool top_only, uint64_t *pnum)
{
    int st = bdrv_block_status(bs, offset, bytes, pnum);

    if (st < 0) {
        return st;
    }
    if (st & BDRV_BLOCK_DATA) {
        return 1;
    }
    if (st & BDRV_BLOCK_ZERO) {
        return top_only && bs->backing;
    }
    if (top_only || !bs->backing) {
        return 0;
    }
    if (offset >= (uint64_t)MAX(bdrv_getlength(bs->backing), 0)) {
        return 0;                       /* past a shorter backing image: zeroes */
    }
    return range_needs_copy(bs->backing, offset, *pnum, false, pnum);
}

static int mirror_scan(MirrorState *s, Error **errp)
{
    bool top_only = s->o.sync == MIRROR_SYNC_MODE_TOP;
    uint64_t offset = 0, pnum;

    if (s->o.sync == MIRROR_SYNC_MODE_NONE) {
        return 0;
    }
    while (offset < s->len) {
        int r = range_needs_copy(s->source, offset, s->len - offset, top_only, &pnum);

        if (r < 0) {
            error_setg_errno(errp, -r, "Could not read the allocation of '%s'",
                             s->source->node_name);
            return r;
        }
        if (job_is_force_cancelled(s->job)) {
            return -ECANCELED;
        }
        if (r) {
            mark_dirty(s, offset, pnum);
        }
        offset += MAX(pnum, 1);
    }
    return 0;
}

/* ---- The copy (job thread) ---- */

static void mirror_rate_limit(MirrorState *s, uint64_t bytes)
{
    int64_t speed = __atomic_load_n(&s->job->speed, __ATOMIC_SEQ_CST);
    int64_t now = g_get_monotonic_time() * 1000;

    if (speed <= 0) {
        s->next_ns = now;
        return;
    }
    /* Behind by more than a second (a new speed, an idle spell): start afresh. */
    if (s->next_ns < now - 1000000000LL) {
        s->next_ns = now;
    }
    s->next_ns += (int64_t)(bytes * 1000000000.0 / speed);
    if (s->next_ns > now) {
        job_sleep_ns(s->job, s->next_ns - now);
    }
}

/* A request's error under @policy: 0 to go on (the range marked again), or the error. */
static int mirror_error(MirrorState *s, bool is_read, int err, uint64_t offset,
                        uint64_t bytes, Error **errp)
{
    JobOnError policy = is_read ? s->o.on_source_error : s->o.on_target_error;

    /* Not in the final copy: the guest's writes wait for it, so it must end. */
    if (policy == JOB_ON_ERROR_IGNORE && !s->final) {
        job_report_io_error(s->job, is_read, BLOCK_ERROR_ACTION_IGNORE);
        mark_dirty(s, offset, bytes);
        job_sleep_ns(s->job, MIRROR_IDLE_NS);      /* do not spin on a dead target */
        return 0;
    }
    job_report_io_error(s->job, is_read, BLOCK_ERROR_ACTION_REPORT);
    error_setg_errno(errp, -err, "Could not %s '%s'", is_read ? "read" : "write",
                     is_read ? s->source->node_name : s->target->node_name);
    return err;
}

/* Copy one dirty run: 1 copied, 0 nothing dirty, -errno failed. */
static int mirror_copy_one(MirrorState *s, bool limit, Error **errp)
{
    uint64_t offset, bytes;
    int r;

    if (!take_dirty_run(s, &offset, &bytes)) {
        return 0;
    }
    r = bdrv_pread(s->source, offset, s->buf, bytes);
    if (r < 0) {
        op_end(s);
        return mirror_error(s, true, r, offset, bytes, errp) ?: 1;
    }
    if (buffer_is_zero(s->buf, bytes)) {
        r = bdrv_pwrite_zeroes(s->target, offset, bytes, BDRV_REQ_MAY_UNMAP);
    } else {
        r = bdrv_pwrite(s->target, offset, s->buf, bytes, 0);
    }
    op_end(s);
    if (r < 0) {
        return mirror_error(s, false, r, offset, bytes, errp) ?: 1;
    }
    job_progress_add(s->job, bytes);
    job_progress_set_len(s->job, __atomic_load_n(&s->job->offset, __ATOMIC_SEQ_CST) +
                                 dirty_bytes(s));
    if (limit) {
        mirror_rate_limit(s, bytes);
    }
    return 1;
}

/*
 * The end of a ready job asked to complete: with the guest's writes held
 * (rule 4), the rest copied, the target flushed, the hook stopped.
 */
static int mirror_converge(MirrorState *s, Error **errp)
{
    int r;

    if (s->blk) {
        blk_writes_quiesce(s->blk);
    }
    s->final = true;
    while ((r = mirror_copy_one(s, false, errp)) > 0) {
        if (job_is_force_cancelled(s->job)) {
            r = -ECANCELED;
            break;
        }
    }
    if (r == 0) {
        r = bdrv_flush(s->target);
        if (r < 0) {
            error_setg_errno(errp, -r, "Could not flush '%s'", s->target->node_name);
        }
    }
    g_mutex_lock(&s->lock);
    s->stopped = true;
    g_mutex_unlock(&s->lock);
    if (s->blk) {
        blk_writes_resume(s->blk);
    }
    return r;
}

static bool park_requested(MirrorState *s)
{
    bool req;

    g_mutex_lock(&s->lock);
    req = s->park_req;
    g_mutex_unlock(&s->lock);
    return req;
}

/* Rule 4, in the job's thread: everything copied and flushed, then parked. */
static int mirror_park(MirrorState *s, Error **errp)
{
    int r;

    s->final = true;
    while ((r = mirror_copy_one(s, false, errp)) > 0) {
    }
    s->final = false;
    if (r == 0) {
        r = bdrv_flush(s->target);
        if (r < 0) {
            error_setg_errno(errp, -r, "Could not flush '%s'", s->target->node_name);
        }
    }
    g_mutex_lock(&s->lock);
    s->parked = true;
    s->park_ret = r;
    g_cond_broadcast(&s->park_cond);
    while (s->park_req && !job_is_cancelled(s->job) && r == 0) {
        g_cond_wait(&s->park_cond, &s->lock);
    }
    s->parked = false;
    g_mutex_unlock(&s->lock);
    return r;
}

static int mirror_drain(Job *job, Error **errp)
{
    MirrorState *s = job->opaque;
    int r = 0;

    g_mutex_lock(&s->lock);
    s->park_req = true;
    g_mutex_unlock(&s->lock);
    job_wake(job);
    g_mutex_lock(&s->lock);
    while (!s->parked && !s->stopped) {
        g_cond_wait(&s->park_cond, &s->lock);
    }
    if (s->parked) {
        r = s->park_ret;
    }
    g_mutex_unlock(&s->lock);
    if (r < 0) {
        error_setg_errno(errp, -r, "Mirror job '%s' could not bring '%s' up to date",
                         job->id, s->target->node_name);
    }
    return r;
}

static void mirror_resume(Job *job)
{
    MirrorState *s = job->opaque;

    g_mutex_lock(&s->lock);
    s->park_req = false;
    g_cond_broadcast(&s->park_cond);
    g_mutex_unlock(&s->lock);
}

/* A cancel or complete: out of a park too. */
static void mirror_kick(Job *job)
{
    MirrorState *s = job->opaque;

    g_mutex_lock(&s->lock);
    g_cond_broadcast(&s->park_cond);
    g_mutex_unlock(&s->lock);
}

static int mirror_run(Job *job, Error **errp)
{
    MirrorState *s = job->opaque;
    bool ready = false;
    int r = mirror_scan(s, errp);

    job_progress_set_len(job, dirty_bytes(s));
    s->next_ns = g_get_monotonic_time() * 1000;
    while (r == 0) {
        if (job_is_force_cancelled(job)) {
            r = -ECANCELED;
            break;
        }
        if (park_requested(s) && !job_is_cancelled(job)) {
            r = mirror_park(s, errp);
            if (r == 0 && park_requested(s) && !job_is_cancelled(job)) {
                continue;               /* still requested: a spurious wake */
            }
            if (r < 0) {
                break;
            }
        }
        if (ready && job_should_complete(job) && dirty_bytes(s) <= MIRROR_CONVERGE_BYTES) {
            r = mirror_converge(s, errp);
            break;
        }
        r = mirror_copy_one(s, true, errp);
        if (r > 0) {
            r = 0;
            continue;
        }
        if (r < 0) {
            break;
        }
        /* Nothing dirty: the first time, READY; then wait for new writes. */
        if (!ready) {
            ready = true;
            job_set_ready(job);
        }
        if (!job_should_complete(job)) {
            job_sleep_ns(job, MIRROR_IDLE_NS);
        }
    }
    g_mutex_lock(&s->lock);
    s->stopped = true;
    g_cond_broadcast(&s->park_cond);    /* a drain waiting for a job that ended */
    g_mutex_unlock(&s->lock);
    if (s->hooked) {
        blk_set_write_hook(s->blk, NULL);
        s->hooked = false;
    }
    return r;
}

static bool mirror_complete(Job *job, Error **errp)
{
    /*
     * QEMU's complete switches the drive to the target (a pivot). Here a
     * backend's node is fixed while its device runs requests; the
     * migration's way out is block-job-cancel once ready, which ends the
     * job with the target a copy of the disk and the drive untouched.
     */
    error_setg(errp, "Job '%s': switching the drive to the mirror's target is not "
               "supported; use block-job-cancel after BLOCK_JOB_READY to end the "
               "mirror with the target in sync", job->id);
    return false;
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
    g_cond_clear(&s->park_cond);
    g_free(s->dirty);
    g_free(s->buf);
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
    s->buf = g_malloc(s->op_max);
    s->hook = (BlkWriteHook){ .after = mirror_write_hook, .opaque = s };
    g_mutex_init(&s->lock);
    g_cond_init(&s->op_done);
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

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The mirror job (block/mirror.c) and the job core (block/job.c) over
 * real raw images through the block layer, with the registry's hooks
 * recorded here and its deferred calls run by the test's thread (the
 * binary's main loop):
 *   - bdrv_block_status of raw over a sparse file;
 *   - a sparse source: only its data is copied (the job's bytes and the
 *     target's allocated size), the target equals the source, and the
 *     statuses come in QEMU's order;
 *   - writers hammering the drive (seeded random offsets and sizes)
 *     during the copy, in both copy modes: after they stop and the job
 *     completes, the target equals the source (the invariant of
 *     block/mirror.c);
 *   - a cancel before ready: BLOCK_JOB_CANCELLED, no READY;
 *   - a target that fails writes: BLOCK_JOB_ERROR, then
 *     BLOCK_JOB_COMPLETED with the error; the source and its drive are
 *     untouched and still written;
 *   - the migration's switchover: inactivation drains the job (the
 *     target then equals the source), a cancel while inactive completes
 *     it, a failed migration's activation lets it work on;
 *   - the runs the copies take, in seeded random steps: never two copies
 *     of one chunk in flight;
 *   - refusals: granularity, sizes, a busy node, a second job id.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/tsan.h"
#include "qemu/bitmap.h"
#include "block/mirror-int.h"
#include "block-test.h"

#define MIB (1024 * 1024)

/* What the registry told the outside world, and the deferred calls to run. */
typedef struct Bench {
    GAsyncQueue *deferred;          /* DeferredCall * from any thread */
    GString *log;                   /* "status:ready READY COMPLETED ..." (test thread) */
    char *error;                    /* BLOCK_JOB_COMPLETED's error (test thread) */
    int io_errors;                  /* BLOCK_JOB_ERROR events (test thread) */
    bool finished;                  /* COMPLETED or CANCELLED seen (test thread) */
} Bench;

typedef struct DeferredCall {
    void (*fn)(void *arg);
    void *arg;
} DeferredCall;

static const char *const status_names[] = {
    "undefined", "created", "running", "paused", "ready", "standby", "waiting",
    "pending", "aborting", "concluded", "null",
};

static void bench_defer(void *opaque, void (*fn)(void *arg), void *arg)
{
    Bench *b = opaque;
    DeferredCall *c = g_new(DeferredCall, 1);

    *c = (DeferredCall){ fn, arg };
    /* The queue hands @c and what the job wrote before to the "main loop". */
    TSAN_RELEASE(c);
    g_async_queue_push(b->deferred, c);
}

static void bench_status(void *opaque, Job *job)
{
    Bench *b = opaque;

    g_string_append_printf(b->log, "status:%s ", status_names[job->status]);
}

static void bench_ready(void *opaque, Job *job)
{
    g_string_append(((Bench *)opaque)->log, "READY ");
}

static void bench_finished(void *opaque, Job *job, bool cancelled, const char *error)
{
    Bench *b = opaque;

    g_string_append(b->log, cancelled ? "CANCELLED " : "COMPLETED ");
    g_free(b->error);
    b->error = g_strdup(error);
    b->finished = true;
}

static void bench_io_error(void *opaque, Job *job, bool is_read, BlockErrorAction action)
{
    Bench *b = opaque;

    b->io_errors++;
    g_string_append_printf(b->log, "ERROR:%s ", is_read ? "read" : "write");
}

static const JobHooks bench_hooks = {
    .defer = bench_defer,
    .status_change = bench_status,
    .ready = bench_ready,
    .finished = bench_finished,
    .io_error = bench_io_error,
};

static void bench_init(Bench *b, BlockLayer *bl)
{
    b->deferred = g_async_queue_new();
    b->log = g_string_new("");
    job_registry_set_hooks(block_layer_jobs(bl), &bench_hooks, b);
}

static void bench_free(Bench *b)
{
    g_async_queue_unref(b->deferred);
    g_string_free(b->log, TRUE);
    g_free(b->error);
}

/* Run deferred calls until @word is in the log (10 s at most). */
static void pump_until(Bench *b, const char *word)
{
    gint64 end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

    while (!strstr(b->log->str, word)) {
        DeferredCall *c = g_async_queue_timeout_pop(b->deferred, 10000);

        g_assert_cmpint(g_get_monotonic_time(), <, end);
        if (c) {
            TSAN_ACQUIRE(c);
            c->fn(c->arg);
            g_free(c);
        }
    }
}

/* A layer with drive d0 (raw, @src) and node t0 (raw, @dst). */
static BlockLayer *open_pair(const char *src, const char *dst, BlockBackend **blk)
{
    BlockLayer *bl = open_drive("file=%s,format=raw,if=none,id=d0", src);
    g_autofree char *t = g_strdup_printf("driver=raw,node-name=t0,file.driver=file,"
                                         "file.filename=%s", dst);

    g_assert_true(blockdev_parse(bl, t, &error_abort));
    *blk = blk_attach(bl, "d0", "virtio-blk-device at 0xfeb00e00",
                      BLK_PERM_READ | BLK_PERM_WRITE, &error_abort);
    return bl;
}

static void fill(uint8_t *buf, size_t len, uint32_t seed)
{
    for (size_t i = 0; i < len; i++) {
        buf[i] = (seed + i * 2654435761u) >> 13 | 1;
    }
}

static void assert_same_files(const char *a, const char *b)
{
    g_autofree char *da = NULL, *db = NULL;
    gsize la, lb;

    g_assert_true(g_file_get_contents(a, &da, &la, NULL));
    g_assert_true(g_file_get_contents(b, &db, &lb, NULL));
    g_assert_cmpuint(la, ==, lb);
    for (gsize i = 0; i < la; i += 512) {
        if (memcmp(da + i, db + i, MIN(512, la - i))) {
            g_error("sector %" G_GSIZE_FORMAT " differs", i / 512);
        }
    }
}

static Job *start(BlockLayer *bl, BlockBackend *blk, const MirrorOptions *o)
{
    return mirror_start(bl, "job0", blk, blk_bs(blk), bdrv_find_node(bl, "t0"), o,
                        &error_abort);
}

/* ---- Only the data of a sparse disk is copied ---- */

static void test_sparse(void)
{
    g_autofree char *src = make_image("sparse-src.img", 64 * MIB);
    g_autofree char *dst = make_image("sparse-dst.img", 64 * MIB);
    static const struct { uint64_t off, len; } data[] = {
        { 0, MIB }, { 20 * MIB, 512 * 1024 }, { 60 * MIB, 64 * 1024 },
    };
    g_autofree uint8_t *buf = g_malloc(MIB);
    BlockBackend *blk;
    BlockLayer *bl = open_pair(src, dst, &blk);
    uint64_t total = 0;
    MirrorOptions o;
    Bench b = { 0 };
    struct stat st;
    Job *job;

    bench_init(&b, bl);
    for (size_t i = 0; i < G_N_ELEMENTS(data); i++) {
        fill(buf, data[i].len, i);
        g_assert_cmpint(rw(blk, true, data[i].off, buf, data[i].len, 0), ==, 0);
        total += data[i].len;
    }
    mirror_options_init(&o);
    job = start(bl, blk, &o);
    pump_until(&b, "READY");
    /* Only the data: the job's progress and what the target's file holds. */
    g_assert_cmpuint(__atomic_load_n(&job->offset, __ATOMIC_SEQ_CST), ==, total);
    g_assert_cmpuint(__atomic_load_n(&job->len, __ATOMIC_SEQ_CST), ==, total);
    g_assert_true(job_is_ready(job));
    g_assert_true(job_user_cancel(job, false, &error_abort));
    pump_until(&b, "status:null");
    g_assert_cmpstr(b.log->str, ==,
                    "status:created status:running status:ready READY status:waiting "
                    "status:pending COMPLETED status:concluded status:null ");
    g_assert_null(b.error);
    g_assert_null(job_nth(block_layer_jobs(bl), 0));
    g_assert_cmpint(stat(dst, &st), ==, 0);
    g_assert_cmpuint(st.st_blocks * 512, <=, total + 64 * 1024);
    block_layer_free(bl);
    assert_same_files(src, dst);
    bench_free(&b);
}

/* bdrv_block_status on raw over file: SEEK_DATA's answer, walked to the end. */
static void test_block_status(void)
{
    g_autofree char *path = make_image("status.img", 8 * MIB);
    g_autofree char *opt = g_strdup_printf("driver=raw,node-name=r0,offset=1048576,"
                                           "file.driver=file,file.filename=%s", path);
    g_autofree uint8_t *buf = g_malloc(MIB);
    BlockLayer *bl = block_layer_new();
    BlockDriverState *r0;
    uint64_t off = 0, pnum, data = 0;
    int fd = open(path, O_WRONLY);

    /* Data at 2 MiB and 5 MiB of the file: 1 MiB and 4 MiB of raw's disk. */
    fill(buf, MIB, 1);
    g_assert_cmpint(pwrite(fd, buf, MIB, 2 * MIB), ==, MIB);
    g_assert_cmpint(pwrite(fd, buf, 64 * 1024, 5 * MIB), ==, 64 * 1024);
    close(fd);
    g_assert_true(blockdev_parse(bl, opt, &error_abort));
    r0 = bdrv_find_node(bl, "r0");
    while (off < 7 * MIB) {
        unsigned st;

        g_assert_cmpint(bdrv_block_status(r0, off, 7 * MIB - off, &pnum, &st), ==, 0);
        g_assert_cmpuint(pnum, >, 0);
        if (st & BDRV_BLOCK_DATA) {
            g_assert_true((off >= MIB && off < 2 * MIB) || (off >= 4 * MIB && off < 5 * MIB));
            data += pnum;
        } else {
            g_assert_true(st & BDRV_BLOCK_ZERO);
        }
        off += pnum;
    }
    g_assert_cmpuint(off, ==, 7 * MIB);
    /* File systems allocate in blocks: the data, rounded up to a block or so. */
    g_assert_cmpuint(data, >=, MIB + 64 * 1024);
    g_assert_cmpuint(data, <=, MIB + 128 * 1024);
    block_layer_free(bl);
}

/* ---- Writers during the copy ---- */

typedef struct Writer {
    BlockBackend *blk;
    uint64_t size;
    uint32_t seed;
    bool stop;                      /* atomic: the test thread sets it */
    unsigned writes;
} Writer;

static gpointer writer_thread(gpointer arg)
{
    Writer *w = arg;
    GRand *r = g_rand_new_with_seed(w->seed);
    g_autofree uint8_t *buf = g_malloc(256 * 1024);

    while (!__atomic_load_n(&w->stop, __ATOMIC_SEQ_CST)) {
        uint64_t len = 512 * g_rand_int_range(r, 1, 33);
        uint64_t off = 512 * (uint64_t)g_rand_int_range(r, 0, (w->size - len) / 512);

        if (g_rand_int_range(r, 0, 8) == 0) {
            g_assert_cmpint(blk_pwrite_zeroes(w->blk, off, len, 0), ==, 0);
        } else {
            fill(buf, len, g_rand_int(r));
            g_assert_cmpint(rw(w->blk, true, off, buf, len, 0), ==, 0);
        }
        w->writes++;
        /* A guest's pace: a writer faster than the copy would keep it from ever being ready. */
        g_usleep(500);
    }
    g_rand_free(r);
    return NULL;
}

static void run_concurrent(MirrorCopyMode mode, uint32_t seed)
{
    g_autofree char *src = make_image("conc-src.img", 64 * MIB);
    g_autofree char *dst = make_image("conc-dst.img", 64 * MIB);
    g_autofree uint8_t *buf = g_malloc(MIB);
    BlockBackend *blk;
    BlockLayer *bl = open_pair(src, dst, &blk);
    Writer w[2];
    GThread *t[2];
    MirrorOptions o;
    Bench b = { 0 };
    Job *job;

    g_test_message("copy mode %d, seed %u", mode, seed);
    bench_init(&b, bl);
    for (uint64_t off = 0; off < 64 * MIB; off += MIB) {
        fill(buf, MIB, off);
        g_assert_cmpint(rw(blk, true, off, buf, MIB, 0), ==, 0);
    }
    for (int i = 0; i < 2; i++) {
        /* The second one on a hot spot: its chunks are dirtied again while being copied. */
        w[i] = (Writer){ .blk = blk, .size = i ? 512 * 1024 : 64 * MIB, .seed = seed + i };
        t[i] = g_thread_new("writer", writer_thread, &w[i]);
    }
    mirror_options_init(&o);
    o.copy_mode = mode;
    o.granularity = 4096 << (seed % 4);
    if (mode == MIRROR_COPY_MODE_WRITE_BLOCKING) {
        /*
         * The first copy then lasts two seconds, with guest writes
         * meeting copies in flight (rule 3 of block/mirror.c). Background
         * copies are not limited: these writers would outrun a limit.
         */
        o.speed = 32 * MIB;
    }
    job = start(bl, blk, &o);
    pump_until(&b, "READY");
    g_usleep(100 * 1000);           /* ready, and still written */
    for (int i = 0; i < 2; i++) {
        __atomic_store_n(&w[i].stop, true, __ATOMIC_SEQ_CST);
        g_thread_join(t[i]);
        g_assert_cmpuint(w[i].writes, >, 0);
    }
    g_assert_true(job_user_cancel(job, false, &error_abort));
    pump_until(&b, "status:null");
    g_assert_nonnull(strstr(b.log->str, "COMPLETED"));
    g_assert_null(b.error);
    block_layer_free(bl);
    assert_same_files(src, dst);
    bench_free(&b);
}

static void test_concurrent_background(void)
{
    for (uint32_t seed = 1; seed <= 3; seed++) {
        run_concurrent(MIRROR_COPY_MODE_BACKGROUND, seed);
    }
}

static void test_concurrent_write_blocking(void)
{
    for (uint32_t seed = 11; seed <= 13; seed++) {
        run_concurrent(MIRROR_COPY_MODE_WRITE_BLOCKING, seed);
    }
}

/* ---- Cancel before ready ---- */

static void test_cancel_before_ready(void)
{
    g_autofree char *src = make_image("cancel-src.img", 16 * MIB);
    g_autofree char *dst = make_image("cancel-dst.img", 16 * MIB);
    g_autofree uint8_t *buf = g_malloc(16 * MIB);
    BlockBackend *blk;
    BlockLayer *bl = open_pair(src, dst, &blk);
    MirrorOptions o;
    Bench b = { 0 };
    Job *job;

    bench_init(&b, bl);
    fill(buf, 16 * MIB, 7);
    g_assert_cmpint(rw(blk, true, 0, buf, 16 * MIB, 0), ==, 0);
    mirror_options_init(&o);
    o.speed = MIB;                  /* 16 s to ready: the cancel comes first */
    job = start(bl, blk, &o);
    g_usleep(50 * 1000);
    /* The speed holds from the first run on, whatever the number of workers. */
    g_assert_cmpuint(__atomic_load_n(&job->offset, __ATOMIC_SEQ_CST), <=, MIB);
    g_assert_true(job_user_cancel(job, false, &error_abort));
    pump_until(&b, "status:null");
    g_assert_cmpstr(b.log->str, ==, "status:created status:running status:aborting "
                    "CANCELLED status:concluded status:null ");
    block_layer_free(bl);
    bench_free(&b);
}

/* ---- The target fails ---- */

static void test_target_error(void)
{
    g_autofree char *src = make_image("err-src.img", 16 * MIB);
    g_autofree char *dst = make_image("err-dst.img", 16 * MIB);
    g_autofree uint8_t *buf = g_malloc(16 * MIB), *back = g_malloc(16 * MIB);
    BlockBackend *blk;
    BlockLayer *bl = open_pair(src, dst, &blk);
    BlockDriverState *t0 = bdrv_find_node(bl, "t0");
    MirrorOptions o;
    Bench b = { 0 };

    bench_init(&b, bl);
    fill(buf, 16 * MIB, 9);
    g_assert_cmpint(rw(blk, true, 0, buf, 16 * MIB, 0), ==, 0);
    mirror_options_init(&o);
    o.speed = 8 * MIB;
    o.auto_dismiss = false;
    start(bl, blk, &o);
    /* The target's writes now fail with -EACCES (io.c's read-only check). */
    __atomic_store_n(&t0->read_only, true, __ATOMIC_SEQ_CST);
    pump_until(&b, "status:concluded");
    g_assert_cmpstr(b.log->str, ==, "status:created status:running ERROR:write "
                    "status:aborting COMPLETED status:concluded ");
    g_assert_nonnull(b.error);
    g_assert_nonnull(strstr(b.error, "Could not write 't0'"));
    /* Concluded until dismissed, with its error. */
    g_assert_nonnull(job_find(block_layer_jobs(bl), "job0"));
    g_assert_true(job_dismiss(job_find(block_layer_jobs(bl), "job0"), &error_abort));
    pump_until(&b, "status:null");
    /* The source: as written, and the drive still writes. */
    g_assert_cmpint(rw(blk, false, 0, back, 16 * MIB, 0), ==, 0);
    g_assert_cmpmem(buf, 16 * MIB, back, 16 * MIB);
    g_assert_cmpint(rw(blk, true, 0, buf, 4096, 0), ==, 0);
    __atomic_store_n(&t0->read_only, false, __ATOMIC_SEQ_CST);
    block_layer_free(bl);
    bench_free(&b);
}

/* ---- The migration's switchover ---- */

/*
 * As libvirt's storage migration goes: ready, the guest's last writes,
 * the switchover inactivates the nodes (the job copies what is dirty and
 * flushes first), then block-job-cancel while inactive completes the job.
 * A failed migration activates again and the job works on.
 */
static void test_switchover(void)
{
    g_autofree char *src = make_image("sw-src.img", 16 * MIB);
    g_autofree char *dst = make_image("sw-dst.img", 16 * MIB);
    g_autofree uint8_t *buf = g_malloc(4 * MIB);
    BlockBackend *blk;
    BlockLayer *bl = open_pair(src, dst, &blk);
    MirrorOptions o;
    Bench b = { 0 };
    Job *job;

    bench_init(&b, bl);
    fill(buf, 4 * MIB, 3);
    g_assert_cmpint(rw(blk, true, 0, buf, 4 * MIB, 0), ==, 0);
    mirror_options_init(&o);
    o.speed = 4 * MIB;              /* slow: the writes below are still dirty */
    job = start(bl, blk, &o);
    pump_until(&b, "READY");

    /* A failed migration: drained, activated again, and the job follows on. */
    fill(buf, 4 * MIB, 4);
    g_assert_cmpint(rw(blk, true, 8 * MIB, buf, 4 * MIB, 0), ==, 0);
    g_assert_cmpint(bdrv_inactivate_all(bl, &error_abort), ==, 0);
    assert_same_files(src, dst);
    g_assert_cmpint(rw(blk, true, 0, buf, 4096, 0), ==, -EPERM);
    g_assert_cmpint(bdrv_activate_all(bl, &error_abort), ==, 0);
    fill(buf, 4 * MIB, 5);
    g_assert_cmpint(rw(blk, true, 4 * MIB, buf, 4 * MIB, 0), ==, 0);

    /* The migration that succeeds: the last writes reach the target at the switchover. */
    g_assert_cmpint(bdrv_inactivate_all(bl, &error_abort), ==, 0);
    assert_same_files(src, dst);
    g_assert_true(job_user_cancel(job, false, &error_abort));
    pump_until(&b, "status:null");
    g_assert_nonnull(strstr(b.log->str, "COMPLETED"));
    g_assert_null(b.error);
    block_layer_free(bl);
    assert_same_files(src, dst);
    bench_free(&b);
}

/* A switchover whose mirror cannot reach its target: the nodes stay active. */
static void test_switchover_target_error(void)
{
    g_autofree char *src = make_image("swe-src.img", 8 * MIB);
    g_autofree char *dst = make_image("swe-dst.img", 8 * MIB);
    g_autofree uint8_t *buf = g_malloc(8 * MIB);
    BlockBackend *blk;
    BlockLayer *bl = open_pair(src, dst, &blk);
    BlockDriverState *t0 = bdrv_find_node(bl, "t0");
    MirrorOptions o;
    Error *err = NULL;
    Bench b = { 0 };

    bench_init(&b, bl);
    fill(buf, 8 * MIB, 12);
    g_assert_cmpint(rw(blk, true, 0, buf, 8 * MIB, 0), ==, 0);
    mirror_options_init(&o);
    o.speed = MIB;
    start(bl, blk, &o);
    __atomic_store_n(&t0->read_only, true, __ATOMIC_SEQ_CST);
    g_assert_cmpint(bdrv_inactivate_all(bl, &err), <, 0);
    assert_error(&err, "could not bring 't0' up to date");
    /* Nothing went inactive: the drive writes on. */
    g_assert_cmpint(rw(blk, true, 0, buf, 4096, 0), ==, 0);
    pump_until(&b, "status:null");
    g_assert_nonnull(strstr(b.log->str, "COMPLETED"));
    g_assert_nonnull(b.error);
    __atomic_store_n(&t0->read_only, false, __ATOMIC_SEQ_CST);
    block_layer_free(bl);
    bench_free(&b);
}

/* ---- The runs the copies take, in seeded random steps ---- */

/* Whether chunk @b is inside a busy op of @s. */
static bool chunk_held(MirrorState *s, uint64_t b)
{
    for (unsigned i = 0; i <= s->nworkers; i++) {
        if (s->ops[i].end && s->ops[i].start >> s->gran_bits <= b &&
            b <= (s->ops[i].end - 1) >> s->gran_bits) {
            return true;
        }
    }
    return false;
}

/*
 * Marks, takes and ends in random order against mirror-dirty.c: two busy
 * ops never share a chunk (an older copy could overwrite a newer one), a
 * take finds nothing only when every dirty chunk is being copied, and the
 * count of dirty chunks is never recounted wrong.
 */
static void test_take_runs(void)
{
    MirrorState s = {
        /* Small, so the cursor comes round to chunks still being copied. */
        .len = 24 * 4096 - 512, .gran_bits = 12, .nbits = 24, .op_max = 3 * 4096,
        .nworkers = 4,
    };
    GRand *r = g_rand_new_with_seed(40);

    s.ops = g_new0(MirrorOp, s.nworkers + 1);
    s.dirty = bitmap_new(s.nbits);
    g_mutex_init(&s.lock);
    g_cond_init(&s.op_done);
    g_cond_init(&s.work);
    for (int step = 0; step < 20000; step++) {
        unsigned slot = g_rand_int_range(r, 0, s.nworkers + 1);
        uint64_t off, bytes;

        switch (g_rand_int_range(r, 0, 5)) {
        case 0:
        case 1:
            off = g_rand_int_range(r, 0, s.len);
            mirror_mark_dirty(&s, off, g_rand_int_range(r, 1, 6 * 4096));
            break;
        case 2:
        case 3:
            if (s.ops[slot].end) {
                break;
            }
            tsan_g_mutex_lock(&s.lock);
            if (mirror_take_run_locked(&s, slot, &off, &bytes)) {
                g_assert_cmpuint(off % 4096, ==, 0);
                g_assert_cmpuint(bytes, <=, s.op_max);
                g_assert_cmpuint(off + bytes, <=, s.len);
            } else {
                for (uint64_t b = 0; b < s.nbits; b++) {
                    g_assert_true(!test_bit(b, s.dirty) || chunk_held(&s, b));
                }
            }
            tsan_g_mutex_unlock(&s.lock);
            break;
        default:
            if (s.ops[slot].end) {
                mirror_op_end(&s, slot);
            }
            break;
        }
        for (unsigned i = 0; i <= s.nworkers; i++) {
            for (unsigned j = i + 1; j <= s.nworkers; j++) {
                g_assert_true(!s.ops[i].end || !s.ops[j].end ||
                              s.ops[i].end <= s.ops[j].start || s.ops[j].end <= s.ops[i].start);
            }
        }
        g_assert_cmpuint(s.dirty_count, ==, bitmap_count_one(s.dirty, s.nbits));
    }
    g_rand_free(r);
    g_mutex_clear(&s.lock);
    g_cond_clear(&s.op_done);
    g_cond_clear(&s.work);
    g_free(s.ops);
    g_free(s.dirty);
}

/* ---- job-complete: the drive switches to the target under its writers ---- */

/* A writer that owns [base, base + size) and keeps what it wrote there in @model. */
typedef struct PivotWriter {
    BlockBackend *blk;
    uint64_t base, size;
    uint8_t *model;
    uint32_t seed;
    bool stop;                      /* atomic: the test thread sets it */
    unsigned writes;                /* atomic: read while it runs */
} PivotWriter;

static gpointer pivot_writer(gpointer arg)
{
    PivotWriter *w = arg;
    GRand *r = g_rand_new_with_seed(w->seed);
    g_autofree uint8_t *buf = g_malloc(64 * 1024);

    while (!__atomic_load_n(&w->stop, __ATOMIC_SEQ_CST)) {
        uint64_t len = 512 * g_rand_int_range(r, 1, 129);
        uint64_t off = 512 * (uint64_t)g_rand_int_range(r, 0, (w->size - len) / 512 + 1);

        fill(buf, len, g_rand_int(r));
        g_assert_cmpint(rw(w->blk, true, w->base + off, buf, len, 0), ==, 0);
        /* Read back at once: a read must never see the other node's older bytes. */
        g_assert_cmpint(rw(w->blk, false, w->base + off, w->model + off, len, 0), ==, 0);
        g_assert_cmpmem(w->model + off, len, buf, len);
        __atomic_fetch_add(&w->writes, 1, __ATOMIC_SEQ_CST);
        g_usleep(300);
    }
    g_rand_free(r);
    return NULL;
}

static void test_pivot(void)
{
    g_autofree char *src = make_image("pivot-src.img", 64 * MIB);
    g_autofree char *dst = make_image("pivot-dst.img", 64 * MIB);
    g_autofree uint8_t *init = g_malloc(MIB);
    g_autofree char *data = NULL;
    BlockBackend *blk;
    BlockLayer *bl = open_pair(src, dst, &blk);
    BlockDriverState *t0 = bdrv_find_node(bl, "t0");
    PivotWriter w[2];
    GThread *t[2];
    unsigned before[2];
    MirrorOptions o;
    gsize len;
    Bench b = { 0 };
    Job *job;

    bench_init(&b, bl);
    for (uint64_t off = 0; off < 64 * MIB; off += MIB) {
        fill(init, MIB, off);
        g_assert_cmpint(rw(blk, true, off, init, MIB, 0), ==, 0);
    }
    for (int i = 0; i < 2; i++) {
        /* The second one a hot spot, its chunks dirtied again while being copied. */
        w[i] = (PivotWriter){ .blk = blk, .base = i ? 32 * MIB : 0,
                              .size = i ? 512 * 1024 : 8 * MIB, .seed = 7 + i };
        w[i].model = g_malloc(w[i].size);
        for (uint64_t off = 0; off < w[i].size; off += MIB) {
            fill(init, MIB, w[i].base + off);
            memcpy(w[i].model + off, init, MIN(MIB, w[i].size - off));
        }
        t[i] = g_thread_new("writer", pivot_writer, &w[i]);
    }
    mirror_options_init(&o);
    o.granularity = 64 * 1024;
    job = start(bl, blk, &o);
    pump_until(&b, "READY");
    g_usleep(100 * 1000);           /* ready, and still written */
    g_assert_true(job_user_complete(job, &error_abort));
    g_assert_true(blk_bs(blk) == t0);
    for (int i = 0; i < 2; i++) {
        before[i] = __atomic_load_n(&w[i].writes, __ATOMIC_SEQ_CST);
    }
    g_usleep(100 * 1000);           /* written on, through the target now */
    for (int i = 0; i < 2; i++) {
        __atomic_store_n(&w[i].stop, true, __ATOMIC_SEQ_CST);
        g_thread_join(t[i]);
        g_assert_cmpuint(w[i].writes, >, before[i]);
    }
    pump_until(&b, "status:null");
    g_assert_nonnull(strstr(b.log->str, "COMPLETED"));
    g_assert_null(b.error);
    /* The drive's write lock went with it: the old node can be dropped. */
    block_layer_free(bl);
    bench_free(&b);
    /* The target holds every write, before and after the switch; the rest is as filled. */
    g_assert_true(g_file_get_contents(dst, &data, &len, NULL));
    g_assert_cmpuint(len, ==, 64 * MIB);
    for (uint64_t off = 0; off < 64 * MIB; off += MIB) {
        fill(init, MIB, off);
        for (int i = 0; i < 2; i++) {
            if (off >= w[i].base && off < w[i].base + w[i].size) {
                uint64_t n = MIN(MIB, w[i].base + w[i].size - off);

                memcpy(init, w[i].model + (off - w[i].base), n);
            }
        }
        g_assert_cmpmem(data + off, MIB, init, MIB);
    }
    for (int i = 0; i < 2; i++) {
        g_free(w[i].model);
    }
}

/* A mirror of a node no drive uses has no drive to switch: refused, the job goes on. */
static void test_pivot_without_drive(void)
{
    g_autofree char *src = make_image("nodrive-src.img", 4 * MIB);
    g_autofree char *dst = make_image("nodrive-dst.img", 4 * MIB);
    g_autofree char *opt = g_strdup_printf("driver=raw,node-name=s0,file.driver=file,"
                                           "file.filename=%s", src);
    g_autofree char *t = g_strdup_printf("driver=raw,node-name=t0,file.driver=file,"
                                         "file.filename=%s", dst);
    BlockLayer *bl = block_layer_new();
    MirrorOptions o;
    Error *err = NULL;
    Bench b = { 0 };
    Job *job;

    bench_init(&b, bl);
    g_assert_true(blockdev_parse(bl, opt, &error_abort));
    g_assert_true(blockdev_parse(bl, t, &error_abort));
    mirror_options_init(&o);
    g_assert_false(job_user_complete(job = mirror_start(bl, "job0", NULL,
                                                        bdrv_find_node(bl, "s0"),
                                                        bdrv_find_node(bl, "t0"), &o,
                                                        &error_abort), &err));
    assert_error(&err, "cannot be completed");
    pump_until(&b, "READY");
    g_assert_false(job_user_complete(job, &err));
    assert_error(&err, "no drive can switch");
    g_assert_true(job_user_cancel(job, false, &error_abort));
    pump_until(&b, "status:null");
    g_assert_nonnull(strstr(b.log->str, "COMPLETED"));
    block_layer_free(bl);
    bench_free(&b);
}

/* ---- Refusals ---- */

static void test_refusals(void)
{
    g_autofree char *src = make_image("ref-src.img", 4 * MIB);
    g_autofree char *dst = make_image("ref-dst.img", 4 * MIB);
    g_autofree char *small = make_image("ref-small.img", 2 * MIB);
    g_autofree char *opt = g_strdup_printf("driver=raw,node-name=s0,file.driver=file,"
                                           "file.filename=%s", small);
    BlockBackend *blk;
    BlockLayer *bl = open_pair(src, dst, &blk);
    BlockDriverState *t0 = bdrv_find_node(bl, "t0");
    MirrorOptions o;
    Error *err = NULL;
    Bench b = { 0 };
    Job *job;

    bench_init(&b, bl);
    g_assert_true(blockdev_parse(bl, opt, &error_abort));
    mirror_options_init(&o);
    o.granularity = 1000;
    g_assert_null(mirror_start(bl, "j", blk, blk_bs(blk), t0, &o, &err));
    assert_error(&err, "Granularity must be a power of 2");
    o.granularity = 256;
    g_assert_null(mirror_start(bl, "j", blk, blk_bs(blk), t0, &o, &err));
    assert_error(&err, "[512B, 64MB]");
    mirror_options_init(&o);
    g_assert_null(mirror_start(bl, "j", blk, blk_bs(blk), bdrv_find_node(bl, "s0"), &o,
                               &err));
    assert_error(&err, "Source and target image have different sizes");
    g_assert_null(mirror_start(bl, "j", blk, blk_bs(blk), blk_bs(blk), &o, &err));
    assert_error(&err, "into itself");
    g_assert_null(mirror_start(bl, "1bad", blk, blk_bs(blk), t0, &o, &err));
    assert_error(&err, "Invalid job ID");
    o.sync = MIRROR_SYNC_MODE_NONE;
    job = mirror_start(bl, "j", blk, blk_bs(blk), t0, &o, &error_abort);
    g_assert_null(mirror_start(bl, "j", blk, blk_bs(blk), t0, &o, &err));
    assert_error(&err, "is busy");
    pump_until(&b, "READY");
    g_assert_cmpuint(__atomic_load_n(&job->len, __ATOMIC_SEQ_CST), ==, 0);
    g_assert_true(job_user_cancel(job, true, &error_abort));
    pump_until(&b, "status:null");
    g_assert_nonnull(strstr(b.log->str, "CANCELLED"));
    block_layer_free(bl);
    bench_free(&b);
}

int main(int argc, char **argv)
{
    block_test_init(&argc, &argv);
    g_test_add_func("/mirror/sparse", test_sparse);
    g_test_add_func("/mirror/block-status", test_block_status);
    g_test_add_func("/mirror/concurrent/background", test_concurrent_background);
    g_test_add_func("/mirror/concurrent/write-blocking", test_concurrent_write_blocking);
    g_test_add_func("/mirror/cancel-before-ready", test_cancel_before_ready);
    g_test_add_func("/mirror/target-error", test_target_error);
    g_test_add_func("/mirror/refusals", test_refusals);
    g_test_add_func("/mirror/pivot", test_pivot);
    g_test_add_func("/mirror/pivot-without-drive", test_pivot_without_drive);
    g_test_add_func("/mirror/switchover", test_switchover);
    g_test_add_func("/mirror/take-runs", test_take_runs);
    g_test_add_func("/mirror/switchover-target-error", test_switchover_target_error);
    return block_test_run();
}

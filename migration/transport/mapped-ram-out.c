/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Writing a mapped-ram file: pages in place, from N writers (mapped-ram-out.h). */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "qemu/worker-pool.h"
#include "qemu/tsan.h"
#include "system/memory.h"
#include "migration/qemu-file.h"
#include "channel.h"
#include "mapped-ram.h"
#include "mapped-ram-integrity.h"
#include "mapped-ram-out.h"
#include "migration/core/options.h"
#include "migration/trace.h"

#define MR_REGION_PAGES 512                         /* 2 MiB: one writer, one write at most */
#define MR_INFLIGHT_MAX (64ULL * 1024 * 1024)       /* queued page bytes before mig/src waits */

/* Callbacks waiting for the writes put before them: the last reference runs it. */
typedef struct MrToken {
    int refs;                   /* atomic */
    void (*fn)(void *opaque);
    void *opaque;
} MrToken;

/* One run of pages: the pool hands it to mr_pool_run or, once failed, to mr_pool_discard. */
typedef struct MrJob {
    int64_t off;
    const uint8_t *data;
    size_t len;
    MrToken *tok;
    uint64_t *phash;            /* x-mapped-ram-integrity: the run's first page's hash, else NULL */
} MrJob;

typedef struct MrBlock {
    RAMBlock *rb;
    uint64_t npages;
    uint64_t bitmap_offset;
    uint64_t pages_offset;
    unsigned long *bmap;        /* mig/src: set = the page is in the file */
    /*
     * x-mapped-ram-integrity, else NULL: each page's mri_page_hash as last
     * dispatched, by mig/src (one writer) or by the writer that writes it
     * (several; mr_dispatch says why). A page always goes to the same
     * writer (one per 2 MiB region; runs never cross one) in dispatch
     * order, so at the finish (after mr_drain) each entry is the hash of
     * the page's last write.
     */
    uint64_t *phash;
} MrBlock;

struct MappedRamOut {
    RAMPageMap map;             /* set at open, read-only */
    /* mig/src. */
    char *path;
    int page_fd;                /* no writer threads: mig/src writes here */
    bool own_page_fd;           /* page_fd is ours (O_DIRECT), not the stream's */
    int64_t stream_start;
    bool integrity;             /* x-mapped-ram-integrity when the migration started */
    MrBlock *blocks;
    int nblocks;
    MrBlock *last;              /* lookup cache */
    MrBlock *pend_b;            /* the run of pages being coalesced */
    uint64_t pend_first, pend_n;
    const uint8_t *pend_data;
    MrToken *tok;               /* the open token: jobs dispatched now join it */

    /*
     * The writers "mig/mr-w<i>", one per slot, each with its own
     * descriptor fds[i] (set before it starts, closed after the stop).
     * Without writer threads the slots have none and mig/src writes each
     * job itself, to page_fd, through the same hooks. The pool keeps the
     * first write error: later jobs are discarded, and the owner reads it.
     */
    WorkerPool *pool;
    int *fds;                   /* nfds slots, -1 until opened */
    int nfds;
    int nwriters;               /* writer threads started */

    GMutex inflight_lock;
    GCond inflight_cond;
    uint64_t inflight;          /* inflight_lock: page bytes queued, not yet written */
};

static MappedRamOut *mr_current;    /* mig/src sets it at open, the main thread clears it */

static MrToken *mr_token_new(void)
{
    MrToken *t = g_new0(MrToken, 1);

    t->refs = 1;                /* the open reference, dropped by release_after */
    return t;
}

static void mr_token_put(MrToken *t)
{
    if (__atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        TSAN_ACQUIRE(t);
        if (t->fn) {
            t->fn(t->opaque);
        }
        g_free(t);
    } else {
        TSAN_RELEASE(t);
    }
}

/*
 * Hashes a run's pages into its slots. A precopy page the guest changes
 * between its hash and its write lands with other bytes than it was hashed
 * with, but that change dirtied it: it is dispatched (and hashed) again,
 * to the same writer, after.
 */
static void mr_hash_pages(uint64_t *phash, const uint8_t *data, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        phash[i] = mri_page_hash(data + i * TARGET_PAGE_SIZE);
    }
}

/* Written or not: the job's bytes leave the in-flight count and it drops its token. */
static void mr_job_done(MappedRamOut *m, MrJob *j)
{
    tsan_g_mutex_lock(&m->inflight_lock);
    m->inflight -= j->len;
    g_cond_signal(&m->inflight_cond);
    tsan_g_mutex_unlock(&m->inflight_lock);
    mr_token_put(j->tok);
    g_free(j);
}

/* Writer @index (or mig/src without writer threads): one run of pages. */
static int mr_pool_run(void *opaque, int index, void *job, Error **errp)
{
    MappedRamOut *m = opaque;
    MrJob *j = job;
    int fd = m->nwriters ? m->fds[index] : m->page_fd, ret = 0;

    if (j->phash) {
        mr_hash_pages(j->phash, j->data, j->len / TARGET_PAGE_SIZE);
    }
    if (!qemu_pwrite_full(fd, j->data, j->len, j->off)) {
        ret = -errno;
        error_setg_errno(errp, errno, "writing the pages of %s at offset %" PRId64 " failed",
                         m->path, j->off);
    }
    mr_job_done(m, j);
    return ret;
}

/* After the first failure: nothing more is written, but the token still waits for the job. */
static void mr_pool_discard(void *opaque, int index, void *job)
{
    mr_job_done(opaque, job);
}

static const WorkerPoolOps mr_pool_ops = {
    .run = mr_pool_run,
    .discard = mr_pool_discard,
};

/* mig/src: the first write failure, onto @f. */
static bool mr_check_failed(MappedRamOut *m, QEMUFile *f)
{
    Error *err = NULL;
    int ret;

    if (!worker_pool_failed(m->pool)) {
        return false;
    }
    ret = worker_pool_error(m->pool, &err);
    qemu_file_set_error_msg(f, ret, "%s", error_get_pretty(err));
    error_free(err);
    return true;
}

/* mig/src: the coalesced run goes to its region's writer (or is written now). */
static void mr_dispatch(MappedRamOut *m, QEMUFile *f)
{
    MrBlock *b = m->pend_b;
    MrJob job = {
        .off = b ? b->pages_offset + m->pend_first * TARGET_PAGE_SIZE : 0,
        .data = m->pend_data,
        .len = m->pend_n * TARGET_PAGE_SIZE,
    };
    int w = 0;

    if (!b || !m->pend_n) {
        return;
    }
    /*
     * Who hashes: with one writer, mig/src, so that the hash runs beside
     * that writer's I/O instead of before it (a direct-io snapshot took
     * 30 % longer when its one writer hashed too); with several, the
     * writers, in parallel, so that mig/src (which also serves a background
     * snapshot's faults) is not the one thread every page waits for (9 %
     * longer with two writers through the page cache). docs/benchmarks.md.
     */
    if (b->phash && m->nwriters == 1) {
        mr_hash_pages(b->phash + m->pend_first, m->pend_data, m->pend_n);
    } else if (b->phash) {
        job.phash = b->phash + m->pend_first;
    }
    m->pend_b = NULL;
    m->pend_n = 0;
    qemu_file_count_side_bytes(f, job.len);
    if (m->nwriters) {
        w = (m->pend_first / MR_REGION_PAGES + (b - m->blocks)) % m->nwriters;
    }
    /* Without writer threads the job is written here, in submit, at once. */
    tsan_g_mutex_lock(&m->inflight_lock);
    while (m->inflight >= MR_INFLIGHT_MAX) {
        tsan_g_cond_wait(&m->inflight_cond, &m->inflight_lock);
    }
    m->inflight += job.len;
    tsan_g_mutex_unlock(&m->inflight_lock);
    __atomic_add_fetch(&m->tok->refs, 1, __ATOMIC_RELAXED);
    job.tok = m->tok;
    worker_pool_submit(m->pool, w, g_memdup2(&job, sizeof(job)));
}

static MrBlock *mr_block(MappedRamOut *m, RAMBlock *rb)
{
    if (m->last && m->last->rb == rb) {
        return m->last;
    }
    for (int i = 0; i < m->nblocks; i++) {
        if (m->blocks[i].rb == rb) {
            return m->last = &m->blocks[i];
        }
    }
    return NULL;
}

static void mr_put_page(MappedRamOut *m, QEMUFile *f, RAMBlock *rb, uint64_t page,
                             const uint8_t *data)
{
    MrBlock *b = mr_block(m, rb);

    if (mr_check_failed(m, f)) {
        return;
    }
    if (!b || page >= b->npages) {
        qemu_file_set_error_msg(f, -EINVAL, "mapped-ram: page %" PRIu64 " of block %s is not in "
                                "the file's block list", page, rb->idstr);
        return;
    }
    if (!data) {
        clear_bit(page, b->bmap);
        return;
    }
    set_bit(page, b->bmap);
    if (m->pend_b == b && page == m->pend_first + m->pend_n &&
        data == m->pend_data + m->pend_n * TARGET_PAGE_SIZE && page % MR_REGION_PAGES) {
        m->pend_n++;
        return;
    }
    mr_dispatch(m, f);
    m->pend_b = b;
    m->pend_first = page;
    m->pend_n = 1;
    m->pend_data = data;
}

static void mr_release_after(MappedRamOut *m, QEMUFile *f, void (*fn)(void *),
                                  void *opaque)
{
    MrToken *t = m->tok;

    /* The coalesced run refers to the memory too: it leaves first. */
    mr_dispatch(m, f);
    t->fn = fn;
    t->opaque = opaque;
    m->tok = mr_token_new();
    mr_token_put(t);
}

typedef struct MrDone {
    GMutex lock;
    GCond cond;
    bool done;
} MrDone;

static void mr_signal_done(void *opaque)
{
    MrDone *d = opaque;

    tsan_g_mutex_lock(&d->lock);
    d->done = true;
    g_cond_signal(&d->cond);
    tsan_g_mutex_unlock(&d->lock);
}

/* mig/src: every page put so far is written (or failed). */
static void mr_drain(MappedRamOut *m, QEMUFile *f)
{
    MrDone d = { 0 };

    g_mutex_init(&d.lock);
    g_cond_init(&d.cond);
    mr_release_after(m, f, mr_signal_done, &d);
    tsan_g_mutex_lock(&d.lock);
    while (!d.done) {
        tsan_g_cond_wait(&d.cond, &d.lock);
    }
    tsan_g_mutex_unlock(&d.lock);
    g_mutex_clear(&d.lock);
    g_cond_clear(&d.cond);
}

static void mr_put_block(MappedRamOut *m, QEMUFile *f, RAMBlock *rb)
{
    int64_t pos = qemu_file_tell(f);
    uint8_t buf[MAPPED_RAM_HDR_SIZE];
    MappedRamHeader h;
    uint64_t next;
    MrBlock *b;

    if (qemu_file_get_error(f)) {
        return;
    }
    if (pos < 0 || m->nblocks == (int)ram_blocks()->len) {
        qemu_file_set_error_msg(f, pos < 0 ? (int)pos : -EINVAL, "mapped-ram: cannot place "
                                "block %s in %s", rb->idstr, m->path);
        return;
    }
    mapped_ram_layout(pos, rb->used_length, &h, &next);
    mapped_ram_put_header(buf, &h);
    qemu_put_buffer(f, buf, sizeof(buf));
    qemu_file_seek(f, next);
    b = &m->blocks[m->nblocks++];
    b->rb = rb;
    b->npages = rb->used_length >> TARGET_PAGE_BITS;
    b->bitmap_offset = h.bitmap_offset;
    b->pages_offset = h.pages_offset;
    b->bmap = bitmap_new(b->npages);
    b->phash = m->integrity ? g_new0(uint64_t, b->npages) : NULL;
    trace_mapped_ram_block(rb->idstr, h.bitmap_offset, h.pages_offset, next);
}

static void mr_map_put_block(void *opaque, QEMUFile *f, RAMBlock *rb)
{
    mr_put_block(opaque, f, rb);
}

static void mr_map_put_page(void *opaque, QEMUFile *f, RAMBlock *rb, uint64_t page,
                            const uint8_t *data)
{
    mr_put_page(opaque, f, rb, page, data);
}

static void mr_map_release_after(void *opaque, QEMUFile *f, void (*fn)(void *), void *arg)
{
    mr_release_after(opaque, f, fn, arg);
}

static bool mr_open_fd(MappedRamOut *m, int *fd, Error **errp)
{
    *fd = open(m->path, O_WRONLY | O_CLOEXEC | (migrate_direct_io() ? O_DIRECT : 0));
    if (*fd < 0) {
        error_setg_errno(errp, errno, "mapped-ram: cannot open '%s'%s", m->path,
                         migrate_direct_io() ? " with O_DIRECT (direct-io)" : "");
        return false;
    }
    return true;
}

bool mapped_ram_check_uri(const char *uri, Error **errp)
{
    g_autofree char *path = NULL;
    uint64_t offset;
    int fd;

    if (!migrate_mapped_ram()) {
        if (migrate_direct_io()) {
            error_setg(errp, "direct-io needs the mapped-ram capability (only pages at fixed "
                       "offsets can be written with O_DIRECT)");
            return false;
        }
        return true;
    }
    if (!g_str_has_prefix(uri, "file:")) {
        error_setg(errp, "Migration requires seekable transport (e.g. file)");
        return false;
    }
    if (!mig_channel_file_path(uri, &path, &offset, errp)) {
        return false;
    }
    if (offset % TARGET_PAGE_SIZE && migrate_direct_io()) {
        error_setg(errp, "direct-io needs a file URI offset aligned to %d bytes, not %" PRIu64,
                   (int)TARGET_PAGE_SIZE, offset);
        return false;
    }
    if (!migrate_direct_io()) {
        return true;
    }
    /* Before anything is written: the file is only created if missing, never truncated. */
    fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_DIRECT, 0600);
    if (fd < 0) {
        if (errno == EINVAL) {
            error_setg(errp, "direct-io: the filesystem of '%s' does not support O_DIRECT",
                       path);
        } else {
            error_setg_errno(errp, errno, "direct-io: cannot open '%s' with O_DIRECT", path);
        }
        return false;
    }
    close(fd);
    return true;
}

bool mapped_ram_out_open(const char *uri, QEMUFile *f, Error **errp)
{
    MappedRamOut *m = g_new0(MappedRamOut, 1);
    uint64_t offset;
    int nwriters;

    m->page_fd = -1;
    m->integrity = migrate_mapped_ram_integrity();
    m->map = (RAMPageMap) { .put_block = mr_map_put_block, .put_page = mr_map_put_page,
                            .release_after = mr_map_release_after, .opaque = m };
    g_mutex_init(&m->inflight_lock);
    g_cond_init(&m->inflight_cond);
    m->tok = mr_token_new();
    m->blocks = g_new0(MrBlock, ram_blocks()->len);
    mr_current = m;             /* from now on mapped_ram_out_close() frees it */
    if (!mig_channel_file_path(uri, &m->path, &offset, errp)) {
        return false;
    }
    m->stream_start = qemu_file_tell(f);
    if (m->stream_start < 0) {
        error_setg_errno(errp, (int)-m->stream_start, "mapped-ram: '%s' is not seekable",
                         m->path);
        return false;
    }
    /* With the record, always a writer thread, so that hashing and writing overlap. */
    nwriters = migrate_multifd() ? migrate_multifd_channels() : m->integrity;
    m->pool = worker_pool_new("mig/mr-w%d", nwriters, &mr_pool_ops, m);
    if (!nwriters) {
        if (!migrate_direct_io()) {
            m->page_fd = qemu_file_fd(f);
            return true;
        }
        m->own_page_fd = true;
        return mr_open_fd(m, &m->page_fd, errp);
    }
    m->fds = g_new(int, nwriters);
    m->nfds = nwriters;
    for (int i = 0; i < nwriters; i++) {
        m->fds[i] = -1;
    }
    for (int i = 0; i < nwriters; i++) {
        int ret;

        if (!mr_open_fd(m, &m->fds[i], errp)) {
            return false;
        }
        ret = worker_pool_start(m->pool, i, NULL);
        if (ret < 0) {
            error_setg_errno(errp, -ret, "cannot create a mapped-ram writer thread");
            return false;
        }
        m->nwriters++;
    }
    return true;
}

MappedRamOut *mapped_ram_out(void)
{
    return mr_current;
}

const RAMPageMap *mapped_ram_out_map(MappedRamOut *m)
{
    return &m->map;
}

static bool mr_sync(int fd, const char *path, Error **errp)
{
    if (fdatasync(fd) < 0) {
        error_setg_errno(errp, errno, "mapped-ram: syncing '%s' failed", path);
        return false;
    }
    return true;
}

/* Block @i's region hashes, from its bitmap and its pages' last hashes. */
static void mr_integrity_block(MappedRamIntegrity *r, uint32_t i, const MrBlock *b)
{
    MriBlock *rb;

    mri_set_block(r, i, b->rb->idstr, b->rb->used_length, b->bitmap_offset, b->pages_offset);
    rb = &r->blocks[i];
    for (uint64_t g = 0; g < rb->nregions; g++) {
        uint64_t first = g * MRI_REGION_PAGES, hash[MRI_REGION_PAGES] = { 0 };
        uint32_t present = 0;

        for (uint64_t k = 0; k < MRI_REGION_PAGES && first + k < b->npages; k++) {
            if (test_bit(first + k, b->bmap)) {
                present |= 1u << k;
                hash[k] = b->phash[first + k];
            }
        }
        rb->region_hash[g] = mri_region_hash(i, g, present, hash);
    }
}

/*
 * x-mapped-ram-integrity: the record for a stream ending at @end, its
 * bytes read back from the file (synced: what a restore will read).
 * NULL with @errp set.
 */
static char *mr_integrity_record(MappedRamOut *m, int64_t end, size_t *len, Error **errp)
{
    g_autoptr(MappedRamIntegrity) r = mri_new(m->nblocks);
    /* The stream's own descriptor may be write-only. */
    int fd = open(m->path, O_RDONLY | O_CLOEXEC), ret;

    r->stream_start = m->stream_start;
    r->stream_end = end;
    for (int i = 0; i < m->nblocks; i++) {
        mr_integrity_block(r, i, &m->blocks[i]);
    }
    if (fd < 0) {
        error_setg_errno(errp, errno, "mapped-ram: cannot open '%s' to read its stream back",
                         m->path);
        return NULL;
    }
    ret = mri_stream_hash(r, fd, &r->stream_hash);
    close(fd);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "reading back the stream of %s for its integrity "
                         "record failed", m->path);
        return NULL;
    }
    return mri_encode(r, len);
}

bool mapped_ram_out_finish(MappedRamOut *m, QEMUFile *f, Error **errp)
{
    int main_fd = qemu_file_fd(f);
    uint8_t trailer[MAPPED_RAM_TRAILER_SIZE];
    g_autofree char *record = NULL;
    size_t record_len = 0;
    char hex[17];
    int64_t t0 = get_clock_ns(), pos;

    mr_drain(m, f);
    if (worker_pool_error(m->pool, errp)) {
        return false;
    }
    qemu_fflush(f);
    if (qemu_file_get_error(f)) {
        error_setg(errp, "%s", qemu_file_error_msg(f));
        return false;
    }
    for (int i = 0; i < m->nblocks; i++) {
        MrBlock *b = &m->blocks[i];

        if (!qemu_pwrite_full(main_fd, (const uint8_t *)b->bmap,
                           mapped_ram_bitmap_size(b->rb->used_length), b->bitmap_offset)) {
            error_setg_errno(errp, errno, "writing the page bitmap of %s to %s failed",
                             b->rb->idstr, m->path);
            return false;
        }
    }
    /* The trailer says "complete": everything before it must be on the disk first. */
    for (int i = 0; i < m->nwriters; i++) {
        if (!mr_sync(m->fds[i], m->path, errp)) {
            return false;
        }
    }
    if ((m->own_page_fd && !mr_sync(m->page_fd, m->path, errp)) ||
        !mr_sync(main_fd, m->path, errp)) {
        return false;
    }
    pos = qemu_file_tell(f);
    if (pos >= 0 && m->integrity) {
        record = mr_integrity_record(m, pos, &record_len, errp);
        if (!record) {
            return false;
        }
        if (!qemu_pwrite_full(main_fd, record, record_len, pos)) {
            error_setg_errno(errp, errno, "writing the integrity record of %s failed",
                             m->path);
            return false;
        }
        pos += record_len;
    }
    memcpy(trailer, record ? MAPPED_RAM_TRAILER_MAGIC_RECORD : MAPPED_RAM_TRAILER_MAGIC, 8);
    snprintf(hex, sizeof(hex), "%016" PRIx64, (uint64_t)m->stream_start);
    memcpy(trailer + 8, hex, 16);
    if (pos < 0 || !qemu_pwrite_full(main_fd, trailer, sizeof(trailer), pos) ||
        ftruncate(main_fd, pos + sizeof(trailer)) < 0 || !mr_sync(main_fd, m->path, NULL)) {
        error_setg_errno(errp, pos < 0 ? (int)-pos : errno,
                         "writing the completion marker of %s failed", m->path);
        return false;
    }
    trace_mapped_ram_finish(m->nwriters, (get_clock_ns() - t0) / 1000);
    return true;
}

void mapped_ram_out_close(void)
{
    MappedRamOut *m = mr_current;

    if (!m) {
        return;
    }
    mr_current = NULL;
    /* The writers finish what was queued (the tokens' callbacks run), then end. */
    worker_pool_free(m->pool);
    for (int i = 0; i < m->nfds; i++) {
        if (m->fds[i] >= 0) {
            close(m->fds[i]);
        }
    }
    if (m->own_page_fd && m->page_fd >= 0) {
        close(m->page_fd);
    }
    /* No writer is left: the open token has no job; its callback (if any) never ran. */
    g_free(m->tok);
    for (int i = 0; i < m->nblocks; i++) {
        g_free(m->blocks[i].bmap);
        g_free(m->blocks[i].phash);
    }
    g_free(m->blocks);
    g_free(m->fds);
    g_free(m->path);
    g_mutex_clear(&m->inflight_lock);
    g_cond_clear(&m->inflight_cond);
    g_free(m);
}

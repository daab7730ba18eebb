/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The qcow2 format row (include/block/block.h's BlockDriver): open over
 * bs->file, requests, flush, and the migration hooks.
 *
 * Threads and locks: requests come from any thread. s->lock guards every
 * table and cache; s->io_lock is held shared by reads and writes for
 * their whole run (they use host offsets after dropping s->lock) and
 * exclusive by write_zeroes and discard, the requests that free clusters,
 * so no request still reads or writes a host cluster that is being freed
 * and reallocated. Data I/O runs without s->lock: to clusters already
 * allocated (and COPIED), and an allocating write's too, between counting
 * its host cluster and the L2 update, with its guest cluster listed in
 * s->allocating so that a second writer waits and never allocates one
 * guest cluster twice.
 *
 * Crash consistency (cache=writeback, as QEMU): data, then refcounts,
 * then L2 entries, ordered by the caches (qcow2-cache.c) and flushed
 * between where an order must hold on disk; a guest flush writes both
 * caches back and flushes the file. What a crash may leave is a leaked
 * cluster (qemu-img check reports it, -r leaks repairs it), never an L2
 * entry naming a free cluster. BDRV_REQ_FUA on an allocating write writes
 * the caches back and flushes before returning.
 *
 * Not here (refused at open, see qcow2-header.c): encryption, external
 * data files, extended L2 entries, zstd compression, writing images with
 * internal snapshots or a dirty/corrupt bit. Compressed clusters are read
 * (and copied on write), never written.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/tsan.h"
#include "qapi/error.h"
#include "block/qcow2-int.h"

#define QCOW2_L2_CACHE_TABLES       16
#define QCOW2_REFBLOCK_CACHE_TABLES 4

static void free_tables(BDRVQcow2State *s)
{
    qcow2_header_free(&s->h);
    g_free(s->l1);
    g_free(s->rct);
    s->l1 = NULL;
    s->rct = NULL;
}

static int read_table(BDRVQcow2State *s, uint64_t offset, uint64_t entries, uint64_t **out)
{
    uint64_t *t = g_new(uint64_t, entries ? entries : 1);
    int ret = entries ? bdrv_pread(s->bs->file, offset, t, entries * 8) : 0;

    if (ret < 0) {
        g_free(t);
        return ret;
    }
    for (uint64_t i = 0; i < entries; i++) {
        t[i] = GUINT64_FROM_BE(t[i]);
    }
    *out = t;
    return 0;
}

/*
 * Header, L1 table and refcount table from the file (open and activate).
 * @active: the image is ours to write now. An inactive node (a migration
 * destination) must not refuse what its source may legitimately have set
 * while it writes (QEMU's dirty bit under lazy refcounts) nor write the
 * header; activation runs the read-write checks on what it reads then.
 */
static int load_metadata(BDRVQcow2State *s, bool active, Error **errp)
{
    bool rw = s->writable && active;
    uint8_t first[QCOW2_V2_HEADER_LEN] = { 0 };
    g_autofree uint8_t *buf = NULL;
    size_t buflen;
    unsigned bits;
    int64_t len = bdrv_getlength(s->bs->file);
    int ret;

    if (len < 0) {
        error_setg_errno(errp, -len, "Could not get the size of the image file");
        return len;
    }
    /*
     * The header and its extensions fill the first cluster: read that much
     * (zero-padded past a short file's end). An invalid cluster size is
     * refused by the parser before it looks past the fixed header.
     */
    ret = bdrv_pread(s->bs->file, 0, first, MIN((uint64_t)len, sizeof(first)));
    if (ret < 0) {
        error_setg_errno(errp, -ret, "Could not read qcow2 header");
        return ret;
    }
    bits = ldl_be_p(first + 20);
    bits = bits >= QCOW2_MIN_CLUSTER_BITS && bits <= QCOW2_MAX_CLUSTER_BITS ?
           bits : QCOW2_MIN_CLUSTER_BITS;
    buflen = (size_t)1 << bits;
    buf = g_malloc0(buflen);
    ret = bdrv_pread(s->bs->file, 0, buf, MIN((uint64_t)len, buflen));
    if (ret < 0) {
        error_setg_errno(errp, -ret, "Could not read qcow2 header");
        return ret;
    }
    ret = qcow2_header_parse(&s->h, buf, buflen, rw, errp);
    if (ret < 0) {
        return ret;
    }
    s->cluster_bits = s->h.cluster_bits;
    s->cluster_size = 1ull << s->cluster_bits;
    s->l2_bits = s->cluster_bits - 3;
    s->rb_bits = s->cluster_bits + 3 - s->h.refcount_order;
    s->l1_size = s->h.l1_size;
    s->rct_offset = s->h.refcount_table_offset;
    s->rct_clusters = s->h.refcount_table_clusters;
    s->rct_entries = (uint64_t)s->rct_clusters * s->cluster_size / 8;
    s->end_cluster = DIV_ROUND_UP((uint64_t)len, s->cluster_size);
    s->free_hint = 0;
    s->corrupt = false;

    ret = read_table(s, s->h.l1_table_offset, s->l1_size, &s->l1);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "Could not read L1 table");
        goto fail;
    }
    ret = read_table(s, s->rct_offset, s->rct_entries, &s->rct);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "Could not read refcount table");
        goto fail;
    }
    for (s->rct_top = s->rct_entries; s->rct_top && !s->rct[s->rct_top - 1]; s->rct_top--) {
        /* the used part ends at the last entry naming a block */
    }
    /*
     * Autoclear features (bitmaps) describe data a writer that does not
     * know them cannot keep in sync: the specification says to clear them.
     */
    if (rw && s->h.version >= 3 && s->h.autoclear_features) {
        uint8_t zero[8] = { 0 };

        ret = bdrv_pwrite(s->bs->file, 88, zero, 8, 0);
        if (ret == 0) {
            ret = bdrv_flush(s->bs->file);
        }
        if (ret < 0) {
            error_setg_errno(errp, -ret, "Could not update qcow2 header");
            goto fail;
        }
        s->h.autoclear_features = 0;
    }
    return 0;

fail:
    free_tables(s);
    return ret;
}

static int qcow2_open(BlockDriverState *bs, QemuOpts *opts, int flags, Error **errp)
{
    BDRVQcow2State *s = bs->opaque;
    int ret;

    if (!bs->file) {
        error_setg(errp, "qcow2: no file child");
        return -EINVAL;
    }
    s->bs = bs;
    s->writable = (flags & BDRV_O_RDWR) && !bs->read_only;
    s->inactive = flags & BDRV_O_INACTIVE;
    g_mutex_init(&s->lock);
    g_rw_lock_init(&s->io_lock);
    g_cond_init(&s->alloc_cond);
    s->allocating = g_array_new(false, false, sizeof(uint64_t));
    ret = load_metadata(s, !s->inactive, errp);
    if (ret < 0) {
        goto fail;
    }
    qcow2_cache_init(&s->refblock_cache, QCOW2_REFBLOCK_CACHE_TABLES, s->cluster_size, NULL);
    qcow2_cache_init(&s->l2_cache, QCOW2_L2_CACHE_TABLES, s->cluster_size,
                     &s->refblock_cache);
    if (s->h.backing_file) {
        /* As the header says it: the layer resolves it against the image's directory. */
        ret = bdrv_open_backing(bs, s->h.backing_file, s->h.backing_format, errp);
        if (ret < 0) {
            qcow2_cache_destroy(&s->l2_cache);
            qcow2_cache_destroy(&s->refblock_cache);
            free_tables(s);
            goto fail;
        }
    }
    return 0;

fail:
    g_array_free(s->allocating, true);
    g_cond_clear(&s->alloc_cond);
    g_rw_lock_clear(&s->io_lock);
    g_mutex_clear(&s->lock);
    return ret;
}

static bool may_write_back(BDRVQcow2State *s)
{
    return s->writable && !s->inactive && !s->corrupt;
}

static void qcow2_close(BlockDriverState *bs)
{
    BDRVQcow2State *s = bs->opaque;

    if (may_write_back(s)) {
        if (qcow2_writeback_all(s) == 0) {
            bdrv_flush(bs->file);
        }
    }
    qcow2_cache_destroy(&s->l2_cache);
    qcow2_cache_destroy(&s->refblock_cache);
    free_tables(s);
    g_array_free(s->allocating, true);
    g_cond_clear(&s->alloc_cond);
    g_rw_lock_clear(&s->io_lock);
    g_mutex_clear(&s->lock);
}

static int check_request(BDRVQcow2State *s, uint64_t offset, uint64_t bytes, bool write)
{
    if (s->inactive) {
        return -EPERM;
    }
    if (offset > s->h.size || bytes > s->h.size - offset) {
        return -EINVAL;
    }
    if (write && !s->writable) {
        return -EACCES;
    }
    return 0;
}

/*
 * How far the run of data clusters at @pos (whose L2 entry @entry is a
 * checked normal cluster, @n bytes of it requested) goes on contiguously
 * on the host, up to @left bytes in all: the following clusters' entries
 * must be normal, carry @flags, and sit right after. One host request
 * then serves the run (a sequential guest reads its disk in one piece
 * where the image was written in order). Under s->lock.
 */
static uint64_t contiguous_run(BDRVQcow2State *s, uint64_t pos, uint64_t entry, uint64_t n,
                               uint64_t left, uint64_t flags)
{
    uint64_t host_end = (entry & QCOW2_OFFSET_MASK) + (pos & (s->cluster_size - 1)) + n;

    while (n < left) {
        Qcow2CacheEntry *ce;
        uint8_t *slot;
        uint64_t next;

        if (qcow2_get_l2_entry(s, pos + n, false, &next, &ce, &slot) < 0 ||
            qcow2_classify(s, next) != QCOW2_CLUSTER_NORMAL ||
            (next & flags) != flags || (next & QCOW2_OFFSET_MASK) != host_end) {
            break;
        }
        n += MIN(left - n, s->cluster_size);
        host_end += s->cluster_size;
    }
    return n;
}

/*
 * The same for clusters that read without their own data: a run of
 * unallocated clusters is one read of the backing image (bounded, as it
 * goes through a buffer), a run of zero clusters one memset. Under s->lock.
 */
#define QCOW2_MAX_BACKING_RUN (4 * MiB)

static uint64_t dataless_run(BDRVQcow2State *s, uint64_t pos, Qcow2ClusterType type,
                             uint64_t n, uint64_t left)
{
    bool zero = type != QCOW2_CLUSTER_UNALLOCATED;

    left = MIN(left, zero ? left : QCOW2_MAX_BACKING_RUN);
    while (n < left) {
        Qcow2CacheEntry *ce;
        uint8_t *slot;
        uint64_t next;
        Qcow2ClusterType t;

        if (qcow2_get_l2_entry(s, pos + n, false, &next, &ce, &slot) < 0) {
            break;
        }
        t = qcow2_classify(s, next);
        if (zero ? (t != QCOW2_CLUSTER_ZERO && t != QCOW2_CLUSTER_ZERO_ALLOC)
                 : t != QCOW2_CLUSTER_UNALLOCATED) {
            break;
        }
        n += MIN(left - n, s->cluster_size);
    }
    return n;
}

static int qcow2_preadv(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                        const struct iovec *iov, int niov)
{
    BDRVQcow2State *s = bs->opaque;
    uint64_t done = 0;
    int ret = check_request(s, offset, bytes, false);

    if (ret < 0) {
        return ret;
    }
    tsan_g_rw_lock_reader_lock(&s->io_lock);
    while (done < bytes) {
        uint64_t pos = offset + done;
        uint64_t in_off = pos & (s->cluster_size - 1);
        uint64_t n = MIN(bytes - done, s->cluster_size - in_off);
        Qcow2CacheEntry *ce;
        uint8_t *slot;
        uint64_t entry;

        tsan_g_mutex_lock(&s->lock);
        ret = qcow2_get_l2_entry(s, pos, false, &entry, &ce, &slot);
        if (ret == 0 && qcow2_classify(s, entry) == QCOW2_CLUSTER_NORMAL) {
            ret = qcow2_check_host(s, entry, pos);
            if (ret == 0) {
                n = contiguous_run(s, pos, entry, n, bytes - done, 0);
            }
        } else if (ret == 0 && qcow2_classify(s, entry) != QCOW2_CLUSTER_COMPRESSED) {
            n = dataless_run(s, pos, qcow2_classify(s, entry), n, bytes - done);
        }
        tsan_g_mutex_unlock(&s->lock);
        if (ret < 0) {
            break;
        }
        ret = qcow2_read_cluster(s, pos - in_off, entry, in_off, n, iov, niov, done);
        if (ret < 0) {
            break;
        }
        done += n;
    }
    tsan_g_rw_lock_reader_unlock(&s->io_lock);
    return ret;
}

/*
 * Caches to disk, then the file to stable storage, with s->lock dropped
 * around both host flushes: the refcount blocks written, a flush, the L2
 * tables whose refcounts that flush covered, a flush. Requests allocate
 * meanwhile (a migration's prepare flush held every allocating write for
 * the whole of its fdatasync). An L2 table changed after this began is
 * left dirty: the writes it maps completed after the flush was asked
 * for, so it owes them nothing. Takes s->lock.
 */
static int flush_all(BDRVQcow2State *s)
{
    int ret = 0;

    tsan_g_mutex_lock(&s->lock);
    if (may_write_back(s)) {
        ret = qcow2_cache_writeback(s, &s->refblock_cache);
        if (ret == 0) {
            ret = qcow2_flush_file_unlocked(s);
        }
        if (ret == 0) {
            ret = qcow2_cache_writeback_ready(s, &s->l2_cache);
        }
    }
    if (ret == 0) {
        ret = qcow2_flush_file_unlocked(s);
    }
    tsan_g_mutex_unlock(&s->lock);
    return ret;
}

static int qcow2_pwritev(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                         const struct iovec *iov, int niov, int flags)
{
    BDRVQcow2State *s = bs->opaque;
    g_autofree struct iovec *sub = g_new(struct iovec, niov ? niov : 1);
    bool allocated = false;
    uint64_t done = 0;
    int ret = check_request(s, offset, bytes, true);

    if (ret < 0) {
        return ret;
    }
    tsan_g_rw_lock_reader_lock(&s->io_lock);
    while (done < bytes) {
        uint64_t pos = offset + done;
        uint64_t in_off = pos & (s->cluster_size - 1);
        uint64_t n = MIN(bytes - done, s->cluster_size - in_off);
        Qcow2CacheEntry *ce;
        uint8_t *slot;
        uint64_t entry, host;

        tsan_g_mutex_lock(&s->lock);
        /* Marked corrupt (by any request): no more writes, not even in place. */
        ret = s->corrupt ? -EIO : qcow2_get_l2_entry(s, pos, false, &entry, &ce, &slot);
        if (ret == 0 && qcow2_classify(s, entry) == QCOW2_CLUSTER_NORMAL &&
            (entry & QCOW2_OFLAG_COPIED)) {
            /* In place: the clusters are ours alone and stay allocated (io_lock). */
            ret = qcow2_check_host(s, entry, pos);
            if (ret == 0) {
                n = contiguous_run(s, pos, entry, n, bytes - done, QCOW2_OFLAG_COPIED);
            }
            host = (entry & QCOW2_OFFSET_MASK) + in_off;
            if (ret == 0 && (qcow2_overlaps_metadata(s, host, n) ||
                             qcow2_overlaps_tables(s, host, n))) {
                ret = qcow2_mark_corrupt(s, "Preventing invalid write on metadata");
            }
            tsan_g_mutex_unlock(&s->lock);
            if (ret == 0) {
                int k = qcow2_iov_slice(iov, niov, done, n, sub);

                ret = bdrv_pwritev(bs->file, host, n, sub, k, flags & BDRV_REQ_FUA);
            }
        } else if (ret == 0 && qcow2_cluster_allocating(s, pos >> s->cluster_bits)) {
            /* Another request allocates it: once that is done, it is in place for us. */
            tsan_g_cond_wait(&s->alloc_cond, &s->lock);
            tsan_g_mutex_unlock(&s->lock);
            continue;
        } else {
            uint64_t run = 0;

            if (ret == 0 && in_off == 0) {
                ret = qcow2_write_new_run(s, pos, entry, bytes - done, iov, niov, done, &run);
                if (ret == -EAGAIN) {
                    ret = 0;
                } else {
                    n = run;
                }
            }
            if (ret == 0 && !run) {
                ret = qcow2_cow_write(s, pos - in_off, entry, in_off, n, iov, niov, done);
            }
            allocated = true;
            tsan_g_mutex_unlock(&s->lock);
        }
        if (ret < 0) {
            break;
        }
        done += n;
    }
    tsan_g_rw_lock_reader_unlock(&s->io_lock);
    if (ret == 0 && allocated && (flags & BDRV_REQ_FUA)) {
        ret = flush_all(s);
    }
    return ret;
}

/*
 * The new L2 entry of a whole cluster made to read as zeroes (@discard:
 * the guest no longer needs it) and whether its old host cluster(s) lose a
 * reference (*drop).
 */
static uint64_t zero_entry(BDRVQcow2State *s, uint64_t entry, bool unmap, bool discard,
                           bool *drop)
{
    Qcow2ClusterType type = qcow2_classify(s, entry);
    bool keep = !unmap && (entry & QCOW2_OFLAG_COPIED) &&
                (type == QCOW2_CLUSTER_NORMAL || type == QCOW2_CLUSTER_ZERO_ALLOC);

    *drop = !keep && type != QCOW2_CLUSTER_UNALLOCATED && type != QCOW2_CLUSTER_ZERO;
    if (type == QCOW2_CLUSTER_UNALLOCATED && !s->bs->backing) {
        return entry;       /* reads as zeroes already: no L2 table for a flag */
    }
    if (keep) {
        return (entry & QCOW2_OFFSET_MASK) | QCOW2_OFLAG_COPIED | QCOW2_OFLAG_ZERO;
    }
    /*
     * A discarded cluster of an image without a backing image reads as
     * zeroes when unallocated; with one, v3 says zeroes explicitly rather
     * than let the backing image's older data show through.
     */
    if (s->h.version < 3 || (discard && !s->bs->backing)) {
        return 0;
    }
    return QCOW2_OFLAG_ZERO;
}

/*
 * Whole clusters [@first, @end) made zero or discarded; the old host
 * clusters are freed only after the new entries are on disk (invariant 2
 * of qcow2-refcount.c). Caller holds io_lock exclusive and s->lock.
 */
static int zero_clusters(BDRVQcow2State *s, uint64_t first, uint64_t end, bool unmap,
                         bool discard)
{
    g_autoptr(GArray) old = g_array_new(false, false, sizeof(uint64_t));
    int ret = 0;

    if (s->corrupt) {
        return -EIO;
    }
    for (uint64_t pos = first; pos < end; pos += s->cluster_size) {
        Qcow2CacheEntry *ce;
        uint8_t *slot;
        uint64_t entry, new;
        bool drop;

        ret = qcow2_get_l2_entry(s, pos, false, &entry, &ce, &slot);
        if (ret < 0) {
            return ret;
        }
        new = zero_entry(s, entry, unmap, discard, &drop);
        if (new == entry) {
            continue;
        }
        if (!slot) {
            if (discard || s->h.version < 3) {
                continue;       /* no L2 table: nothing allocated, nothing to drop */
            }
            ret = qcow2_get_l2_entry(s, pos, true, &entry, &ce, &slot);
            if (ret < 0) {
                return ret;
            }
        }
        stq_be_p(slot, new);
        qcow2_cache_mark_dirty(&s->l2_cache, ce);
        if (drop) {
            g_array_append_val(old, entry);
        }
    }
    if (!old->len) {
        return 0;
    }
    ret = qcow2_cache_writeback(s, &s->l2_cache);
    if (ret == 0) {
        ret = qcow2_flush_file(s);
    }
    for (guint i = 0; i < old->len && ret == 0; i++) {
        uint64_t entry = g_array_index(old, uint64_t, i);

        if (entry & QCOW2_OFLAG_COMPRESSED) {
            ret = qcow2_free_compressed(s, entry);
        } else {
            ret = qcow2_free_cluster(s, entry & QCOW2_OFFSET_MASK);
        }
    }
    return ret;
}

/*
 * zero_clusters() one L2 table's span at a time: the clusters waiting to
 * be freed stay a table's worth (not 16 million entries for a 1 TiB
 * discard), and each span ends with its own write-back and frees.
 */
static int zero_range(BDRVQcow2State *s, uint64_t first, uint64_t end, bool unmap,
                      bool discard)
{
    uint64_t span = s->cluster_size << s->l2_bits;
    int ret = 0;

    tsan_g_rw_lock_writer_lock(&s->io_lock);
    tsan_g_mutex_lock(&s->lock);
    for (uint64_t pos = first; pos < end && ret == 0;) {
        uint64_t next = MIN(end, QEMU_ALIGN_DOWN(pos, span) + span);

        ret = zero_clusters(s, pos, next, unmap, discard);
        pos = next;
    }
    tsan_g_mutex_unlock(&s->lock);
    tsan_g_rw_lock_writer_unlock(&s->io_lock);
    return ret;
}

static int qcow2_pwrite_zeroes(BlockDriverState *bs, uint64_t offset, uint64_t bytes, int flags)
{
    BDRVQcow2State *s = bs->opaque;
    uint64_t first = QEMU_ALIGN_UP(offset, s->cluster_size);
    uint64_t end = QEMU_ALIGN_DOWN(offset + bytes, s->cluster_size);
    bool unmap = (flags & BDRV_REQ_MAY_UNMAP) && (bs->open_flags & BDRV_O_UNMAP);
    int ret = check_request(s, offset, bytes, true);

    if (ret < 0) {
        return ret;
    }
    /* The last cluster of an unaligned virtual size counts as whole. */
    if (offset + bytes == s->h.size) {
        end = QEMU_ALIGN_UP(s->h.size, s->cluster_size);
    }
    if (s->h.version < 3 || first >= end) {
        first = end = offset;       /* no zero flag (v2), or no whole cluster: write zeroes */
    }
    /* Head and tail that do not cover a cluster: real zeroes. */
    if (first > offset || end < offset + bytes) {
        g_autofree uint8_t *zeroes = g_malloc0(s->cluster_size);
        uint64_t spans[2][2] = { { offset, first - offset },
                                 { MAX(end, first), offset + bytes - MAX(end, first) } };

        for (int i = 0; i < 2 && ret == 0; i++) {
            for (uint64_t done = 0; done < spans[i][1] && ret == 0;) {
                uint64_t n = MIN(spans[i][1] - done, s->cluster_size);
                struct iovec v = { zeroes, n };

                ret = qcow2_pwritev(bs, spans[i][0] + done, n, &v, 1, flags & BDRV_REQ_FUA);
                done += n;
            }
        }
        if (ret < 0 || first >= end) {
            return ret;
        }
    }
    ret = zero_range(s, first, end, unmap, false);
    if (ret == 0 && (flags & BDRV_REQ_FUA)) {
        ret = flush_all(s);
    }
    return ret;
}

static int qcow2_pdiscard(BlockDriverState *bs, uint64_t offset, uint64_t bytes)
{
    BDRVQcow2State *s = bs->opaque;
    uint64_t first = QEMU_ALIGN_UP(offset, s->cluster_size);
    uint64_t end = QEMU_ALIGN_DOWN(offset + bytes, s->cluster_size);
    int ret = check_request(s, offset, bytes, true);

    if (ret < 0) {
        return ret;
    }
    if (offset + bytes == s->h.size) {
        end = QEMU_ALIGN_UP(s->h.size, s->cluster_size);
    }
    /* discard=ignore (QEMU's default): the image keeps its clusters. */
    if (!(bs->open_flags & BDRV_O_UNMAP) || first >= end) {
        return 0;
    }
    return zero_range(s, first, end, true, true);
}

static int qcow2_flush(BlockDriverState *bs)
{
    BDRVQcow2State *s = bs->opaque;

    if (s->inactive) {
        return 0;
    }
    return flush_all(s);
}

static int64_t qcow2_getlength(BlockDriverState *bs)
{
    BDRVQcow2State *s = bs->opaque;

    return s->h.size;
}

static int qcow2_inactivate(BlockDriverState *bs, Error **errp)
{
    BDRVQcow2State *s = bs->opaque;
    int ret;

    if (s->inactive) {
        return 0;
    }
    ret = flush_all(s);
    /* No request runs now (drained), so flush_all left nothing; whatever did change goes too. */
    tsan_g_mutex_lock(&s->lock);
    if (ret == 0 && may_write_back(s) &&
        (qcow2_cache_is_dirty(&s->l2_cache) || qcow2_cache_is_dirty(&s->refblock_cache))) {
        ret = qcow2_writeback_all(s);
        if (ret == 0) {
            ret = qcow2_flush_file(s);
        }
    }
    tsan_g_mutex_unlock(&s->lock);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "qcow2: could not write back the image's tables");
        return ret;
    }
    s->inactive = true;
    return 0;
}

static int qcow2_activate(BlockDriverState *bs, Error **errp)
{
    BDRVQcow2State *s = bs->opaque;
    Qcow2Header old = s->h;
    int ret;

    /*
     * A node that was never inactivated may hold writes only its caches
     * have: keep them. Clean caches are reloaded whatever this node
     * believes: after a failed activation elsewhere the layer marks every
     * node inactive again, and another process may write the image before
     * the next attempt.
     */
    if (!s->inactive && (qcow2_cache_is_dirty(&s->l2_cache) ||
                         qcow2_cache_is_dirty(&s->refblock_cache))) {
        return 0;
    }
    /* Another process wrote the image since we last read it: forget everything. */
    qcow2_cache_drop_all(&s->l2_cache);
    qcow2_cache_drop_all(&s->refblock_cache);
    g_free(s->l1);
    g_free(s->rct);
    s->l1 = NULL;
    s->rct = NULL;
    ret = load_metadata(s, true, errp);
    if (ret < 0) {
        s->h = old;     /* the node stays inactive, its old header for close */
        return ret;
    }
    if (s->h.cluster_bits != old.cluster_bits) {
        /* The caches hold clusters of the old size. */
        qcow2_cache_destroy(&s->l2_cache);
        qcow2_cache_destroy(&s->refblock_cache);
        qcow2_cache_init(&s->refblock_cache, QCOW2_REFBLOCK_CACHE_TABLES, s->cluster_size,
                         NULL);
        qcow2_cache_init(&s->l2_cache, QCOW2_L2_CACHE_TABLES, s->cluster_size,
                         &s->refblock_cache);
    }
    qcow2_header_free(&old);
    s->inactive = false;
    return 0;
}

const BlockDriver bdrv_qcow2 = {
    .format_name = "qcow2",
    .instance_size = sizeof(BDRVQcow2State),
    .probe = qcow2_probe,
    .open = qcow2_open,
    .close = qcow2_close,
    .preadv = qcow2_preadv,
    .pwritev = qcow2_pwritev,
    .pwrite_zeroes = qcow2_pwrite_zeroes,
    .pdiscard = qcow2_pdiscard,
    .flush = qcow2_flush,
    .getlength = qcow2_getlength,
    .block_status = qcow2_block_status,
    .get_info = qcow2_get_info,
    .inactivate = qcow2_inactivate,
    .activate = qcow2_activate,
};

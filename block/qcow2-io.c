/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qcow2's data path: reading a guest cluster from wherever its L2 entry
 * says (a host cluster, a compressed run, zeroes, the backing image), and
 * writing one with copy-on-write into a new host cluster. Shared by the
 * requests in qcow2.c.
 *
 * The order of an allocating write: count the new cluster (refcount
 * cache, under BDRVQcow2State.lock), write the whole cluster's data
 * (without it: other requests allocate meanwhile), then change the L2
 * entry (L2 cache, under it again). The caches write the refcount before
 * the L2 entry (qcow2-cache.c), so after a crash the entry either still
 * names the old contents or names a counted cluster whose data was
 * written first.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qapi/error.h"
#include "qemu/tsan.h"
#include "block/qcow2-int.h"
#include <zlib.h>

int qcow2_iov_slice(const struct iovec *iov, int niov, uint64_t off, uint64_t len,
                    struct iovec *out)
{
    int n = 0;

    for (int i = 0; i < niov && len; i++) {
        uint64_t take;

        if (off >= iov[i].iov_len) {
            off -= iov[i].iov_len;
            continue;
        }
        take = MIN(len, iov[i].iov_len - off);
        out[n].iov_base = (uint8_t *)iov[i].iov_base + off;
        out[n].iov_len = take;
        n++;
        len -= take;
        off = 0;
    }
    return n;
}

void qcow2_iov_copy(const struct iovec *iov, int niov, uint64_t off, uint8_t *buf,
                    uint64_t len, bool to_iov)
{
    for (int i = 0; i < niov && len; i++) {
        uint64_t take;

        if (off >= iov[i].iov_len) {
            off -= iov[i].iov_len;
            continue;
        }
        take = MIN(len, iov[i].iov_len - off);
        if (to_iov) {
            memcpy((uint8_t *)iov[i].iov_base + off, buf, take);
        } else {
            memcpy(buf, (uint8_t *)iov[i].iov_base + off, take);
        }
        buf += take;
        len -= take;
        off = 0;
    }
}

void qcow2_iov_zero(const struct iovec *iov, int niov, uint64_t off, uint64_t len)
{
    for (int i = 0; i < niov && len; i++) {
        uint64_t take;

        if (off >= iov[i].iov_len) {
            off -= iov[i].iov_len;
            continue;
        }
        take = MIN(len, iov[i].iov_len - off);
        memset((uint8_t *)iov[i].iov_base + off, 0, take);
        len -= take;
        off = 0;
    }
}

int qcow2_check_host(BDRVQcow2State *s, uint64_t entry, uint64_t guest)
{
    uint64_t host = entry & QCOW2_OFFSET_MASK;

    if (host & (s->cluster_size - 1)) {
        g_autofree char *why = g_strdup_printf("Cluster allocation offset %#" PRIx64
                                               " unaligned (guest offset: %#" PRIx64 ")",
                                               host, guest);
        return qcow2_mark_corrupt(s, why);
    }
    return 0;
}

/* The host byte range of a compressed cluster's data. */
static void compressed_range(BDRVQcow2State *s, uint64_t entry, uint64_t *off, uint64_t *len)
{
    unsigned x = 62 - (s->cluster_bits - 8);
    uint64_t sectors = (entry >> x) & ((1ull << (s->cluster_bits - 8)) - 1);

    *off = entry & ((1ull << x) - 1);
    *len = (sectors + 1) * 512 - (*off & 511);
}

static int read_compressed(BDRVQcow2State *s, uint64_t entry, uint8_t *out)
{
    uint64_t off, len;
    g_autofree uint8_t *in = NULL;
    z_stream z = { 0 };
    int ret;

    compressed_range(s, entry, &off, &len);
    in = g_malloc(len);
    ret = bdrv_pread(s->bs->file, off, in, len);
    if (ret < 0) {
        return ret;
    }
    /* Raw deflate; the largest window inflates any smaller one. */
    if (inflateInit2(&z, -15) != Z_OK) {
        return -ENOMEM;
    }
    z.next_in = in;
    z.avail_in = len;
    z.next_out = out;
    z.avail_out = s->cluster_size;
    ret = inflate(&z, Z_FINISH);
    inflateEnd(&z);
    /* The run is rounded up to sectors: trailing bytes after the stream are fine. */
    if ((ret != Z_STREAM_END && ret != Z_BUF_ERROR) || z.avail_out != 0) {
        return -EIO;
    }
    return 0;
}

int qcow2_free_compressed(BDRVQcow2State *s, uint64_t entry)
{
    uint64_t off, len;

    compressed_range(s, entry, &off, &len);
    for (uint64_t c = off >> s->cluster_bits; c <= (off + len - 1) >> s->cluster_bits; c++) {
        int ret = qcow2_free_cluster(s, c << s->cluster_bits);

        if (ret < 0) {
            return ret;
        }
    }
    return 0;
}

/* Bytes [@off, @off + @len) of the backing image into @buf: zeroes past its end. */
static int read_backing(BDRVQcow2State *s, uint64_t off, uint8_t *buf, uint64_t len)
{
    BlockDriverState *backing = s->bs->backing;
    int64_t blen;
    uint64_t n;
    int ret;

    memset(buf, 0, len);
    if (!backing) {
        return 0;
    }
    blen = bdrv_getlength(backing);
    if (blen < 0) {
        return blen;
    }
    if (off >= (uint64_t)blen) {
        return 0;
    }
    n = MIN(len, (uint64_t)blen - off);
    ret = bdrv_pread(backing, off, buf, n);
    return ret < 0 ? ret : 0;
}

int qcow2_read_cluster(BDRVQcow2State *s, uint64_t guest, uint64_t entry, uint64_t in_off,
                       uint64_t len, const struct iovec *iov, int niov, uint64_t iov_off)
{
    g_autofree struct iovec *sub = NULL;
    g_autofree uint8_t *buf = NULL;
    int n, ret;

    switch (qcow2_classify(s, entry)) {
    case QCOW2_CLUSTER_ZERO:
    case QCOW2_CLUSTER_ZERO_ALLOC:
        qcow2_iov_zero(iov, niov, iov_off, len);
        return 0;
    case QCOW2_CLUSTER_UNALLOCATED:
        if (!s->bs->backing) {
            qcow2_iov_zero(iov, niov, iov_off, len);
            return 0;
        }
        buf = g_malloc(len);
        ret = read_backing(s, guest + in_off, buf, len);
        if (ret == 0) {
            qcow2_iov_copy(iov, niov, iov_off, buf, len, true);
        }
        return ret;
    case QCOW2_CLUSTER_COMPRESSED:
        buf = g_malloc(s->cluster_size);
        ret = read_compressed(s, entry, buf);
        if (ret == 0) {
            qcow2_iov_copy(iov, niov, iov_off, buf + in_off, len, true);
        }
        return ret;
    case QCOW2_CLUSTER_NORMAL:
        break;              /* its offset was checked under s->lock */
    }
    sub = g_new(struct iovec, niov);
    n = qcow2_iov_slice(iov, niov, iov_off, len, sub);
    return bdrv_preadv(s->bs->file, (entry & QCOW2_OFFSET_MASK) + in_off, len, sub, n);
}

/* Is host cluster @host among the clusters the old entry's data occupies? */
static bool old_holds(BDRVQcow2State *s, Qcow2ClusterType type, uint64_t entry, uint64_t host)
{
    uint64_t off, len;

    if (type != QCOW2_CLUSTER_COMPRESSED) {
        return (entry & QCOW2_OFFSET_MASK) == host;
    }
    compressed_range(s, entry, &off, &len);
    return host >> s->cluster_bits >= off >> s->cluster_bits &&
           host >> s->cluster_bits <= (off + len - 1) >> s->cluster_bits;
}

/*
 * An allocating write between its two halves under s->lock: prepare
 * builds the whole new cluster where its old contents must be copied
 * (or leaves @buf NULL: the request's data goes straight to the host, over
 * zeroes where the cluster read as zeroes) and counts a host cluster for
 * it; commit,
 * given how the data write went, points the L2 entry at it (or gives the
 * cluster back) and drops the old data's reference.
 */
typedef struct Qcow2Cow {
    uint64_t guest;                 /* the guest cluster, aligned */
    uint64_t entry;                 /* its L2 entry at prepare */
    Qcow2ClusterType type;          /* of @entry */
    uint64_t host;                  /* where the new data goes */
    bool fresh;                     /* @host was counted for this write */
    bool drop_old;                  /* @entry's data loses a reference at commit */
    uint8_t *buf;                   /* the whole cluster's new data, or NULL; commit frees it */
} Qcow2Cow;

/*
 * Whether what the cluster held reads as zeroes, so a partial write needs
 * no copy: the host range is zeroed (fallocate's ZERO_RANGE, no data
 * written) and only the request's bytes are. A 4 KiB write into a new
 * 64 KiB cluster then writes 4 KiB, not 64: the migration's flush of a
 * guest writing 2000 IOPS had 16 times the data to commit (a first
 * fdatasync of 715 ms after 26 s; QEMU, which zeroes the same way, 1 ms).
 */
static bool reads_as_zeroes(BDRVQcow2State *s, Qcow2ClusterType type)
{
    return type == QCOW2_CLUSTER_ZERO || type == QCOW2_CLUSTER_ZERO_ALLOC ||
           (type == QCOW2_CLUSTER_UNALLOCATED && !s->bs->backing);
}

static int cow_prepare(BDRVQcow2State *s, uint64_t guest, uint64_t entry, uint64_t in_off,
                       uint64_t len, const struct iovec *iov, int niov, uint64_t iov_off,
                       Qcow2Cow *cow)
{
    Qcow2ClusterType type = qcow2_classify(s, entry);
    int ret = 0;

    *cow = (Qcow2Cow) { .guest = guest, .entry = entry, .type = type };
    if (len < s->cluster_size && !reads_as_zeroes(s, type)) {
        cow->buf = g_malloc(s->cluster_size);
        switch (type) {
        case QCOW2_CLUSTER_ZERO:
        case QCOW2_CLUSTER_ZERO_ALLOC:
            memset(cow->buf, 0, s->cluster_size);
            break;
        case QCOW2_CLUSTER_UNALLOCATED:
            ret = read_backing(s, guest, cow->buf, s->cluster_size);
            break;
        case QCOW2_CLUSTER_COMPRESSED:
            ret = read_compressed(s, entry, cow->buf);
            break;
        case QCOW2_CLUSTER_NORMAL:
            /* Shared (refcount > 1, no COPIED flag): copy it before writing our own. */
            ret = qcow2_check_host(s, entry, guest);
            if (ret == 0) {
                ret = bdrv_pread(s->bs->file, entry & QCOW2_OFFSET_MASK, cow->buf,
                                 s->cluster_size);
            }
            break;
        }
        if (ret < 0) {
            goto fail;
        }
        qcow2_iov_copy(iov, niov, iov_off, cow->buf + in_off, len, false);
    }

    /* A zero cluster that keeps its allocation (refcount 1) is written in place. */
    cow->drop_old = type == QCOW2_CLUSTER_COMPRESSED || type == QCOW2_CLUSTER_NORMAL ||
                    (type == QCOW2_CLUSTER_ZERO_ALLOC && !(entry & QCOW2_OFLAG_COPIED));
    if (type == QCOW2_CLUSTER_ZERO_ALLOC && (entry & QCOW2_OFLAG_COPIED)) {
        ret = qcow2_check_host(s, entry, guest);
        cow->host = entry & QCOW2_OFFSET_MASK;
    } else {
        ret = qcow2_alloc_cluster(s, &cow->host);
        cow->fresh = ret == 0;
    }
    if (ret < 0) {
        goto fail;
    }
    if (cow->drop_old && old_holds(s, type, entry, cow->host)) {
        /* Counted 0 while in use: dropping its reference would free our new data. */
        ret = qcow2_mark_corrupt(s, "Cluster in use has refcount 0");
        goto fail;
    }
    if (qcow2_overlaps_metadata(s, cow->host, s->cluster_size) ||
        qcow2_overlaps_tables(s, cow->host, s->cluster_size)) {
        ret = qcow2_mark_corrupt(s, "Preventing invalid write on metadata");
        goto fail;
    }
    return 0;

fail:
    g_free(cow->buf);
    cow->buf = NULL;
    return ret;
}

static int cow_commit(BDRVQcow2State *s, Qcow2Cow *cow, int write_ret)
{
    Qcow2CacheEntry *ce;
    uint8_t *slot;
    uint64_t cur;
    int ret = write_ret;

    g_free(cow->buf);
    cow->buf = NULL;
    /* Marked corrupt meanwhile (by any request): the entry stays as it was. */
    if (ret == 0 && s->corrupt) {
        ret = -EIO;
    }
    if (ret == 0) {
        ret = qcow2_get_l2_entry(s, cow->guest, true, &cur, &ce, &slot);
    }
    if (ret < 0) {
        /* Counted, named by nothing: give it back (else a leak for qemu-img check). */
        if (cow->fresh && !s->corrupt) {
            qcow2_free_cluster(s, cow->host);
        }
        return ret;
    }
    stq_be_p(slot, cow->host | QCOW2_OFLAG_COPIED);
    qcow2_cache_mark_dirty(&s->l2_cache, ce);
    if (!cow->drop_old) {
        return 0;
    }
    /* The old cluster loses a reference only once no L2 entry on disk names it. */
    ret = qcow2_cache_writeback(s, &s->l2_cache);
    if (ret == 0) {
        ret = qcow2_flush_file(s);
    }
    if (ret < 0) {
        return ret;
    }
    if (cow->type == QCOW2_CLUSTER_COMPRESSED) {
        return qcow2_free_compressed(s, cow->entry);
    }
    return qcow2_free_cluster(s, cow->entry & QCOW2_OFFSET_MASK);
}

bool qcow2_cluster_allocating(BDRVQcow2State *s, uint64_t index)
{
    for (guint i = 0; i < s->allocating->len; i++) {
        if (g_array_index(s->allocating, uint64_t, i) == index) {
            return true;
        }
    }
    return false;
}

/*
 * An allocating write of one guest cluster, s->lock held on entry and
 * return but not around the data's write: allocating writes of other
 * clusters run side by side (they were one at a time, each holding the
 * lock for its host write, so a migration's drain waited for them in a
 * row). @guest's index is in s->allocating meanwhile.
 */
int qcow2_cow_write(BDRVQcow2State *s, uint64_t guest, uint64_t entry, uint64_t in_off,
                    uint64_t len, const struct iovec *iov, int niov, uint64_t iov_off)
{
    uint64_t index = guest >> s->cluster_bits;
    Qcow2Cow cow;
    int ret = cow_prepare(s, guest, entry, in_off, len, iov, niov, iov_off, &cow);

    if (ret < 0) {
        return ret;
    }
    g_array_append_val(s->allocating, index);
    tsan_g_mutex_unlock(&s->lock);
    if (cow.buf) {
        ret = bdrv_pwrite(s->bs->file, cow.host, cow.buf, s->cluster_size, 0);
    } else {
        g_autofree struct iovec *sub = g_new(struct iovec, niov ? niov : 1);
        int k = qcow2_iov_slice(iov, niov, iov_off, len, sub);

        ret = len < s->cluster_size ? bdrv_pwrite_zeroes(s->bs->file, cow.host,
                                                         s->cluster_size, 0) : 0;
        if (ret == 0) {
            ret = bdrv_pwritev(s->bs->file, cow.host + in_off, len, sub, k, 0);
        }
    }
    tsan_g_mutex_lock(&s->lock);
    ret = cow_commit(s, &cow, ret);
    for (guint i = 0; i < s->allocating->len; i++) {
        if (g_array_index(s->allocating, uint64_t, i) == index) {
            g_array_remove_index_fast(s->allocating, i);
            break;
        }
    }
    g_cond_broadcast(&s->alloc_cond);
    return ret;
}

/* Up to this many new clusters in one host write (a 1 MiB copy of 64 KiB clusters). */
#define QCOW2_RUN_MAX_CLUSTERS  32

static bool overwritable(BDRVQcow2State *s, uint64_t entry)
{
    Qcow2ClusterType type = qcow2_classify(s, entry);

    /* Nothing to copy (the write covers it) and nothing to drop or keep. */
    return type == QCOW2_CLUSTER_UNALLOCATED || type == QCOW2_CLUSTER_ZERO;
}

static void allocating_remove(BDRVQcow2State *s, uint64_t index)
{
    for (guint i = 0; i < s->allocating->len; i++) {
        if (g_array_index(s->allocating, uint64_t, i) == index) {
            g_array_remove_index_fast(s->allocating, i);
            return;
        }
    }
}

int qcow2_write_new_run(BDRVQcow2State *s, uint64_t guest, uint64_t entry, uint64_t max_bytes,
                        const struct iovec *iov, int niov, uint64_t iov_off, uint64_t *written)
{
    uint64_t first = guest >> s->cluster_bits, host, n = 1;
    uint64_t max = MIN(max_bytes >> s->cluster_bits, QCOW2_RUN_MAX_CLUSTERS);
    g_autofree struct iovec *sub = NULL;
    int ret, k;

    *written = 0;
    if (max < 2 || !overwritable(s, entry) || qcow2_cluster_allocating(s, first)) {
        return -EAGAIN;
    }
    ret = qcow2_alloc_cluster(s, &host);
    if (ret < 0) {
        return ret;
    }
    if (qcow2_overlaps_metadata(s, host, s->cluster_size) ||
        qcow2_overlaps_tables(s, host, s->cluster_size)) {
        return qcow2_mark_corrupt(s, "Preventing invalid write on metadata");
    }
    /* The next guest clusters while they too are new and the next host cluster is free. */
    while (n < max) {
        uint64_t e;
        Qcow2CacheEntry *ce;
        uint8_t *slot;

        if (qcow2_cluster_allocating(s, first + n) ||
            qcow2_get_l2_entry(s, guest + (n << s->cluster_bits), false, &e, &ce, &slot) < 0 ||
            !overwritable(s, e) ||
            qcow2_alloc_cluster_at(s, host + (n << s->cluster_bits)) < 0) {
            break;
        }
        n++;
    }
    for (uint64_t i = 0; i < n; i++) {
        uint64_t index = first + i;

        g_array_append_val(s->allocating, index);
    }
    tsan_g_mutex_unlock(&s->lock);
    sub = g_new(struct iovec, niov ? niov : 1);
    k = qcow2_iov_slice(iov, niov, iov_off, n << s->cluster_bits, sub);
    ret = bdrv_pwritev(s->bs->file, host, n << s->cluster_bits, sub, k, 0);
    tsan_g_mutex_lock(&s->lock);
    if (ret == 0 && s->corrupt) {
        ret = -EIO;
    }
    for (uint64_t i = 0; i < n; i++) {
        uint64_t h = host + (i << s->cluster_bits);
        Qcow2CacheEntry *ce;
        uint8_t *slot;
        uint64_t cur;

        if (ret == 0) {
            ret = qcow2_get_l2_entry(s, guest + (i << s->cluster_bits), true, &cur, &ce, &slot);
            if (ret == 0) {
                stq_be_p(slot, h | QCOW2_OFLAG_COPIED);
                qcow2_cache_mark_dirty(&s->l2_cache, ce);
                *written += s->cluster_size;
                allocating_remove(s, first + i);
                continue;
            }
        }
        /* Counted, named by nothing: given back (else a leak for qemu-img check). */
        if (!s->corrupt) {
            qcow2_free_cluster(s, h);
        }
        allocating_remove(s, first + i);
    }
    g_cond_broadcast(&s->alloc_cond);
    return ret;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qcow2's reference counts: lookup, allocation and freeing of host
 * clusters, new refcount blocks and a growing refcount table. Everything
 * runs under BDRVQcow2State.lock.
 *
 * Invariants, so that a crash leaves at worst leaked clusters:
 *   1. A cluster's refcount reaches the disk before anything on disk
 *      points at it (the L2 cache depends on the refcount cache, see
 *      qcow2-cache.c; new refcount blocks and a new refcount table are
 *      written and flushed before the table entry or header that names
 *      them).
 *   2. A cluster is freed only after the L2 entry that named it is on
 *      disk without it (the callers in qcow2.c write back the L2 cache and
 *      flush before calling qcow2_free_cluster()), so a reallocated
 *      cluster is never named by two entries on disk.
 *   3. Allocation only hands out clusters whose refcount is 0 and that
 *      overlap no fixed metadata (header, L1 table, refcount table).
 *
 * All widths of the format are supported (refcount_order 0..6); we only
 * ever store 0 and 1, and decrement what the image holds.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qapi/error.h"
#include "block/qcow2-int.h"

static uint64_t rb_entry_get(const uint8_t *t, unsigned order, uint64_t i)
{
    switch (order) {
    case 3:
        return t[i];
    case 4:
        return ((uint64_t)t[2 * i] << 8) | t[2 * i + 1];
    case 5:
        return ldl_be_p(t + 4 * i);
    case 6:
        return ldq_be_p(t + 8 * i);
    default: {
        /* Sub-byte widths: entries packed from each byte's least significant bit. */
        unsigned bits = 1u << order;
        uint64_t bit = i << order;

        return (t[bit / 8] >> (bit % 8)) & ((1u << bits) - 1);
    }
    }
}

static void rb_entry_set(uint8_t *t, unsigned order, uint64_t i, uint64_t v)
{
    switch (order) {
    case 3:
        t[i] = v;
        break;
    case 4:
        t[2 * i] = v >> 8;
        t[2 * i + 1] = v;
        break;
    case 5:
        stl_be_p(t + 4 * i, v);
        break;
    case 6:
        stq_be_p(t + 8 * i, v);
        break;
    default: {
        unsigned bits = 1u << order;
        uint64_t bit = i << order;
        uint8_t mask = ((1u << bits) - 1) << (bit % 8);

        t[bit / 8] = (t[bit / 8] & ~mask) | ((v << (bit % 8)) & mask);
        break;
    }
    }
}

/* The refcount block covering @cluster: *ce NULL when the table has no block for it. */
static int refblock_get(BDRVQcow2State *s, uint64_t cluster, Qcow2CacheEntry **ce)
{
    uint64_t t = cluster >> s->rb_bits;
    uint64_t off;

    *ce = NULL;
    if (t >= s->rct_entries || !(s->rct[t] & QCOW2_RCT_OFFSET_MASK)) {
        return 0;
    }
    off = s->rct[t] & QCOW2_RCT_OFFSET_MASK;
    if (off & (s->cluster_size - 1)) {
        return qcow2_mark_corrupt(s, "Refblock offset unaligned");
    }
    return qcow2_cache_get(s, &s->refblock_cache, off, false, ce);
}

int qcow2_refcount_get(BDRVQcow2State *s, uint64_t cluster, uint64_t *refcount)
{
    Qcow2CacheEntry *ce;
    int ret = refblock_get(s, cluster, &ce);

    if (ret < 0) {
        return ret;
    }
    *refcount = ce ? rb_entry_get(ce->table, s->h.refcount_order,
                                  cluster & ((1ull << s->rb_bits) - 1)) : 0;
    return 0;
}

/* Set a refcount whose block exists. */
static int refcount_set(BDRVQcow2State *s, uint64_t cluster, uint64_t value)
{
    Qcow2CacheEntry *ce;
    int ret = refblock_get(s, cluster, &ce);

    if (ret < 0) {
        return ret;
    }
    if (!ce) {
        return qcow2_mark_corrupt(s, "Refcount block missing for a cluster in use");
    }
    rb_entry_set(ce->table, s->h.refcount_order, cluster & ((1ull << s->rb_bits) - 1), value);
    qcow2_cache_mark_dirty(&s->refblock_cache, ce);
    return 0;
}

static int write_rct_entry(BDRVQcow2State *s, uint64_t t)
{
    uint8_t be[8];

    stq_be_p(be, s->rct[t]);
    return bdrv_pwrite(s->bs->file, s->rct_offset + t * 8, be, 8, 0);
}

/*
 * A new refcount block for table entry @t, placed at cluster @c (free:
 * nothing in @t's range has a refcount yet, and @c is in that range), so
 * the block counts itself. Written and flushed before the table names it.
 */
static int new_refblock(BDRVQcow2State *s, uint64_t t, uint64_t c)
{
    Qcow2CacheEntry *ce;
    int ret;

    if (qcow2_overlaps_metadata(s, c << s->cluster_bits, s->cluster_size)) {
        return qcow2_mark_corrupt(s, "Preventing invalid allocation of refcount block");
    }
    ret = qcow2_cache_get(s, &s->refblock_cache, c << s->cluster_bits, true, &ce);
    if (ret < 0) {
        return ret;
    }
    rb_entry_set(ce->table, s->h.refcount_order, c & ((1ull << s->rb_bits) - 1), 1);
    qcow2_cache_mark_dirty(&s->refblock_cache, ce);
    ret = qcow2_cache_writeback(s, &s->refblock_cache);
    if (ret == 0) {
        ret = qcow2_flush_file(s);
    }
    if (ret < 0) {
        qcow2_cache_forget(&s->refblock_cache, c << s->cluster_bits);
        return ret;
    }
    s->rct[t] = c << s->cluster_bits;
    s->rct_top = MAX(s->rct_top, t + 1);
    ret = write_rct_entry(s, t);
    if (ret < 0) {
        s->rct[t] = 0;
        return ret;
    }
    s->end_cluster = MAX(s->end_cluster, c + 1);
    return 0;
}

/* Are clusters [a, a + n) free (refcount 0, no fixed metadata)? *busy: the last one in use. */
static int range_free(BDRVQcow2State *s, uint64_t a, uint64_t n, bool *free, uint64_t *busy)
{
    *free = !qcow2_overlaps_metadata(s, a << s->cluster_bits, n << s->cluster_bits);
    *busy = a;
    for (uint64_t c = a; c < a + n && *free; c++) {
        uint64_t rc;
        int ret = qcow2_refcount_get(s, c, &rc);

        if (ret < 0) {
            return ret;
        }
        if (rc) {
            *free = false;
            *busy = c;
        }
    }
    return 0;
}

/*
 * Grow the refcount table to hold entry @need_t. The new table goes to
 * free clusters past everything in use, followed by refcount blocks for
 * any of its clusters no block covers yet (each of which may need one
 * more); all of it is counted, written and flushed before the header
 * names the new table, and the old table is freed after.
 */
static int grow_rct(BDRVQcow2State *s, uint64_t need_t)
{
    uint64_t cs = s->cluster_size;
    uint64_t max_clusters = QCOW2_MAX_RCT_BYTES / cs;
    uint64_t new_clusters = s->rct_clusters;
    uint64_t a = s->end_cluster, end, new_entries;
    uint64_t *newrct = NULL, *oldrct = s->rct, old_entries = s->rct_entries;
    uint64_t old_offset = s->rct_offset;
    uint32_t old_clusters = s->rct_clusters;
    uint8_t hdr[12];
    bool free;
    uint64_t busy;
    int ret;

retry:
    new_clusters = MAX(new_clusters * 2, DIV_ROUND_UP((need_t + 1) * 8, cs));
    if (new_clusters > max_clusters) {
        error_report("qcow2: refcount table would exceed %d bytes", QCOW2_MAX_RCT_BYTES);
        return -EFBIG;
    }
    ret = range_free(s, a, new_clusters, &free, &busy);
    if (ret < 0) {
        return ret;
    }
    if (!free) {
        a = busy + 1;
        new_clusters = s->rct_clusters;
        goto retry;
    }
    new_entries = new_clusters * cs / 8;
    g_free(newrct);
    newrct = g_new0(uint64_t, new_entries);
    memcpy(newrct, oldrct, old_entries * 8);
    end = a + new_clusters;
    /* Blocks for the ranges the new clusters fall in; @end grows as blocks are placed. */
    for (uint64_t t = a >> s->rb_bits; t <= (end - 1) >> s->rb_bits; t++) {
        if (t >= new_entries) {
            goto retry;
        }
        if (!newrct[t]) {
            newrct[t] = end << s->cluster_bits;
            end++;
        }
    }
    if (need_t >= new_entries) {
        goto retry;
    }

    /* In memory first: refcount_set() finds blocks through s->rct. */
    s->rct = newrct;
    s->rct_entries = new_entries;
    s->rct_top = new_entries;
    for (uint64_t t = a >> s->rb_bits; t <= (end - 1) >> s->rb_bits; t++) {
        if (t >= old_entries || !oldrct[t]) {
            Qcow2CacheEntry *ce;

            ret = qcow2_cache_get(s, &s->refblock_cache, newrct[t], true, &ce);
            if (ret < 0) {
                goto fail;
            }
            qcow2_cache_mark_dirty(&s->refblock_cache, ce);
        }
    }
    for (uint64_t c = a; c < end; c++) {
        ret = refcount_set(s, c, 1);
        if (ret < 0) {
            goto fail;
        }
    }
    ret = qcow2_cache_writeback(s, &s->refblock_cache);
    if (ret < 0) {
        goto fail;
    }
    {
        g_autofree uint8_t *be = g_malloc(new_clusters * cs);

        for (uint64_t i = 0; i < new_entries; i++) {
            stq_be_p(be + i * 8, newrct[i]);
        }
        ret = bdrv_pwrite(s->bs->file, a << s->cluster_bits, be, new_clusters * cs, 0);
    }
    if (ret == 0) {
        ret = qcow2_flush_file(s);
    }
    if (ret < 0) {
        goto fail;
    }
    /* The offset and the size in one write: a crash leaves the old table or the new one. */
    stq_be_p(hdr, a << s->cluster_bits);
    stl_be_p(hdr + 8, new_clusters);
    ret = bdrv_pwrite(s->bs->file, 48, hdr, 12, 0);
    if (ret == 0) {
        ret = qcow2_flush_file(s);
    }
    if (ret < 0) {
        goto fail;
    }
    s->rct_offset = a << s->cluster_bits;
    s->rct_clusters = new_clusters;
    s->h.refcount_table_offset = s->rct_offset;
    s->h.refcount_table_clusters = new_clusters;
    s->end_cluster = MAX(s->end_cluster, end);
    g_free(oldrct);
    for (uint64_t i = 0; i < old_clusters; i++) {
        ret = qcow2_free_cluster(s, old_offset + i * cs);
        if (ret < 0) {
            return ret;
        }
    }
    return 0;

fail:
    /*
     * The header still names the old table; what we counted in blocks the
     * old table also names is a leak at worst. Forget the new blocks.
     */
    for (uint64_t t = old_entries; t < new_entries; t++) {
        if (newrct[t]) {
            qcow2_cache_forget(&s->refblock_cache, newrct[t]);
        }
    }
    s->rct = oldrct;
    s->rct_entries = old_entries;
    s->rct_top = old_entries;
    g_free(newrct);
    return ret;
}

int qcow2_alloc_cluster(BDRVQcow2State *s, uint64_t *offset)
{
    uint64_t max_cluster = QCOW2_OFFSET_MASK >> s->cluster_bits;

    for (uint64_t c = s->free_hint; c <= max_cluster; c++) {
        uint64_t t = c >> s->rb_bits;
        uint64_t rc;
        int ret;

        if (t >= s->rct_entries) {
            ret = grow_rct(s, t);
            if (ret < 0) {
                return ret;
            }
            c--;                /* look at @c again: the new table may have taken it */
            continue;
        }
        if (!(s->rct[t] & QCOW2_RCT_OFFSET_MASK)) {
            ret = new_refblock(s, t, c);
            if (ret < 0) {
                return ret;
            }
            continue;
        }
        ret = qcow2_refcount_get(s, c, &rc);
        if (ret < 0) {
            return ret;
        }
        if (rc) {
            /*
             * Counted clusters past the file's end are what a crash between
             * counting and writing leaves: a few. Thousands are a hostile
             * table that would keep this loop busy for hours.
             */
            if (c > s->end_cluster + 65536) {
                return qcow2_mark_corrupt(s, "Refcounts far past the end of the image");
            }
            continue;
        }
        if (qcow2_overlaps_metadata(s, c << s->cluster_bits, s->cluster_size) ||
            qcow2_overlaps_tables(s, c << s->cluster_bits, s->cluster_size)) {
            return qcow2_mark_corrupt(s, "Preventing invalid cluster allocation over metadata "
                                      "whose refcount is 0");
        }
        ret = refcount_set(s, c, 1);
        if (ret < 0) {
            return ret;
        }
        s->free_hint = c + 1;
        s->end_cluster = MAX(s->end_cluster, c + 1);
        *offset = c << s->cluster_bits;
        return 0;
    }
    return -ENOSPC;
}

int qcow2_alloc_cluster_at(BDRVQcow2State *s, uint64_t offset)
{
    uint64_t c = offset >> s->cluster_bits;
    uint64_t t = c >> s->rb_bits;
    uint64_t rc;
    int ret;

    /* Only where a refcount block already counts it: growing tables is the general path's. */
    if (t >= s->rct_entries || !(s->rct[t] & QCOW2_RCT_OFFSET_MASK)) {
        return -EBUSY;
    }
    ret = qcow2_refcount_get(s, c, &rc);
    if (ret < 0) {
        return ret;
    }
    if (rc || qcow2_overlaps_metadata(s, offset, s->cluster_size) ||
        qcow2_overlaps_tables(s, offset, s->cluster_size)) {
        return -EBUSY;
    }
    ret = refcount_set(s, c, 1);
    if (ret < 0) {
        return ret;
    }
    if (s->free_hint == c) {
        s->free_hint = c + 1;
    }
    s->end_cluster = MAX(s->end_cluster, c + 1);
    return 0;
}

int qcow2_free_cluster(BDRVQcow2State *s, uint64_t offset)
{
    uint64_t c = offset >> s->cluster_bits;
    uint64_t rc;
    int ret;

    /* An entry naming the header or a table is hostile: its cluster is not data to free. */
    if (qcow2_overlaps_metadata(s, offset, s->cluster_size) ||
        qcow2_overlaps_tables(s, offset, s->cluster_size)) {
        return qcow2_mark_corrupt(s, "Preventing the release of a metadata cluster");
    }
    ret = qcow2_refcount_get(s, c, &rc);
    if (ret < 0) {
        return ret;
    }
    if (rc == 0) {
        return qcow2_mark_corrupt(s, "Freeing a cluster whose refcount is already 0");
    }
    ret = refcount_set(s, c, rc - 1);
    if (ret < 0 || rc > 1) {
        return ret;
    }
    s->free_hint = MIN(s->free_hint, c);
    qcow2_cache_forget(&s->l2_cache, offset);
    /* The host file need not keep what no one references; a failure only costs space. */
    bdrv_pdiscard(s->bs->file, offset, s->cluster_size);
    return 0;
}

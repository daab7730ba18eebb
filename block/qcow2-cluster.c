/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qcow2's two-level map: guest offset -> L1 entry -> L2 table (cached)
 * -> L2 entry, and new L2 tables. Everything runs under
 * BDRVQcow2State.lock.
 *
 * A new L2 table is counted, written (zeroes) and flushed before the L1
 * entry names it, so the L1 table on disk never points at a cluster that
 * is free or holds garbage; the L1 table is written through, entry by
 * entry (a new table every 2^(2 * cluster_bits - 3) guest bytes: rare).
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/tsan.h"
#include "qapi/error.h"
#include "block/qcow2-int.h"

int qcow2_write_l1_entry(BDRVQcow2State *s, uint32_t index)
{
    uint8_t be[8];

    stq_be_p(be, s->l1[index]);
    return bdrv_pwrite(s->bs->file, s->h.l1_table_offset + (uint64_t)index * 8, be, 8, 0);
}

int qcow2_writeback_all(BDRVQcow2State *s)
{
    int ret = qcow2_cache_writeback(s, &s->l2_cache);

    if (ret == 0) {
        ret = qcow2_cache_writeback(s, &s->refblock_cache);
    }
    return ret;
}

static int alloc_l2_table(BDRVQcow2State *s, uint64_t l1_index, uint64_t *l2_off)
{
    Qcow2CacheEntry *ce;
    uint64_t off;
    int ret = qcow2_alloc_cluster(s, &off);

    if (ret < 0) {
        return ret;
    }
    ret = qcow2_cache_get(s, &s->l2_cache, off, true, &ce);
    if (ret < 0) {
        return ret;
    }
    qcow2_cache_mark_dirty(&s->l2_cache, ce);
    /* Its refcount first (the cache's dependency), then the zeroes, then the L1 entry. */
    ret = qcow2_cache_writeback(s, &s->l2_cache);
    if (ret == 0) {
        ret = qcow2_flush_file(s);
    }
    if (ret < 0) {
        return ret;
    }
    s->l1[l1_index] = off | QCOW2_OFLAG_COPIED;
    ret = qcow2_write_l1_entry(s, l1_index);
    if (ret < 0) {
        /* The table is counted but unnamed: a leak, never a dangling entry. */
        s->l1[l1_index] = 0;
        return ret;
    }
    *l2_off = off;
    return 0;
}

int qcow2_get_l2_entry(BDRVQcow2State *s, uint64_t offset, bool alloc_l2, uint64_t *entry,
                       Qcow2CacheEntry **ce, uint8_t **slot)
{
    uint64_t l1_index = offset >> (s->cluster_bits + s->l2_bits);
    uint64_t l2_index = (offset >> s->cluster_bits) & ((1ull << s->l2_bits) - 1);
    uint64_t l2_off;
    int ret;

    *entry = 0;
    *ce = NULL;
    *slot = NULL;
    if (l1_index >= s->l1_size) {
        /* Open checked that the L1 table covers the virtual size. */
        return -EINVAL;
    }
    l2_off = s->l1[l1_index] & QCOW2_OFFSET_MASK;
    if (!l2_off) {
        if (!alloc_l2) {
            return 0;
        }
        ret = alloc_l2_table(s, l1_index, &l2_off);
        if (ret < 0) {
            return ret;
        }
    }
    if (l2_off & (s->cluster_size - 1)) {
        g_autofree char *why = g_strdup_printf("L2 table offset %#" PRIx64 " unaligned (L1 "
                                               "index: %#" PRIx64 ")", l2_off, l1_index);
        return qcow2_mark_corrupt(s, why);
    }
    if (qcow2_overlaps_metadata(s, l2_off, s->cluster_size) && alloc_l2) {
        g_autofree char *why = g_strdup_printf("L2 table at %#" PRIx64 " overlaps the header, "
                                               "L1 table or refcount table", l2_off);
        return qcow2_mark_corrupt(s, why);
    }
    ret = qcow2_cache_get(s, &s->l2_cache, l2_off, false, ce);
    if (ret < 0) {
        return ret;
    }
    *slot = (*ce)->table + l2_index * 8;
    *entry = ldq_be_p(*slot);
    return 0;
}

int qcow2_set_l2_entry(BDRVQcow2State *s, uint64_t offset, uint64_t entry)
{
    Qcow2CacheEntry *ce;
    uint8_t *slot;
    uint64_t old;
    int ret = qcow2_get_l2_entry(s, offset, false, &old, &ce, &slot);

    if (ret < 0) {
        return ret;
    }
    if (!slot) {
        return -EIO;
    }
    stq_be_p(slot, entry);
    qcow2_cache_mark_dirty(&s->l2_cache, ce);
    return 0;
}

/* What a cluster of this L2 entry reads as (BDRV_BLOCK_*). */
static unsigned cluster_status(BDRVQcow2State *s, uint64_t entry)
{
    switch (qcow2_classify(s, entry)) {
    case QCOW2_CLUSTER_UNALLOCATED:
        /* The backing image decides; its data is data to whoever copies this node. */
        return s->bs->backing ? BDRV_BLOCK_DATA : BDRV_BLOCK_ZERO;
    case QCOW2_CLUSTER_ZERO:
    case QCOW2_CLUSTER_ZERO_ALLOC:
        return BDRV_BLOCK_ZERO | BDRV_BLOCK_ALLOCATED;
    default:
        return BDRV_BLOCK_DATA | BDRV_BLOCK_ALLOCATED;
    }
}

/* At most this many bytes per call, so s->lock is never held for a whole huge image. */
#define QCOW2_STATUS_MAX_BYTES (1ull << 30)

int qcow2_block_status(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                       uint64_t *pnum, unsigned *status)
{
    BDRVQcow2State *s = bs->opaque;
    uint64_t done = 0;
    unsigned first = 0;
    int ret = 0;

    tsan_g_mutex_lock(&s->lock);
    if (s->inactive) {
        ret = -EPERM;
    }
    while (ret == 0 && done < bytes && done < QCOW2_STATUS_MAX_BYTES) {
        uint64_t pos = offset + done;
        uint64_t n = s->cluster_size - (pos & (s->cluster_size - 1));
        Qcow2CacheEntry *ce;
        uint8_t *slot;
        uint64_t entry;
        unsigned st;

        ret = qcow2_get_l2_entry(s, pos, false, &entry, &ce, &slot);
        if (ret < 0) {
            break;
        }
        if (!slot) {
            /* No L2 table: the whole range its L1 entry covers is unallocated. */
            uint64_t span = 1ull << (s->cluster_bits + s->l2_bits);

            n = span - (pos & (span - 1));
        }
        st = cluster_status(s, entry);
        if (done && st != first) {
            break;
        }
        first = st;
        done += MIN(n, bytes - done);
    }
    tsan_g_mutex_unlock(&s->lock);
    if (done == 0) {
        return ret < 0 ? ret : -EIO;
    }
    /* A failure after the first clusters: say what is known; the next call meets it. */
    *pnum = done;
    *status = first;
    return 0;
}

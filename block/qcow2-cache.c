/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qcow2's write-back caches of cluster-sized tables: a few L2 tables, a
 * few refcount blocks. Everything runs under BDRVQcow2State.lock.
 *
 * The invariant (crash safety): a dirty table of a cache with a
 * dependency reaches the file only after every dirty table of the
 * dependency is written and flushed. The L2 cache depends on the refcount
 * cache, so an L2 entry on disk never names a cluster whose refcount on
 * disk is still 0 (which a later allocation would hand out a second
 * time). Every write of a dirty table goes through entry_write(), which
 * writes the dependency back whole and flushes first unless a flush that
 * began after such a writeback, itself after the table's last change,
 * already completed (Qcow2CacheEntry.dep_need); eviction and the two
 * writebacks are its only callers.
 *
 * A pointer from qcow2_cache_get() stays valid until the next get on the
 * same cache (which may evict it): callers hold one table per cache at
 * a time.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qapi/error.h"
#include "qemu/tsan.h"
#include "block/qcow2-int.h"

void qcow2_cache_init(Qcow2Cache *c, int nb_entries, uint64_t cluster_size, Qcow2Cache *depends)
{
    c->entries = g_new0(Qcow2CacheEntry, nb_entries);
    c->nb_entries = nb_entries;
    c->tick = 0;
    c->depends = depends;
    for (int i = 0; i < nb_entries; i++) {
        c->entries[i].table = g_malloc(cluster_size);
    }
}

void qcow2_cache_destroy(Qcow2Cache *c)
{
    for (int i = 0; i < c->nb_entries; i++) {
        g_free(c->entries[i].table);
    }
    g_free(c->entries);
    c->entries = NULL;
    c->nb_entries = 0;
}

bool qcow2_cache_is_dirty(const Qcow2Cache *c)
{
    for (int i = 0; i < c->nb_entries; i++) {
        if (c->entries[i].dirty) {
            return true;
        }
    }
    return false;
}

static int entry_write(BDRVQcow2State *s, Qcow2Cache *c, Qcow2CacheEntry *e)
{
    int ret;

    if (!e->dirty) {
        return 0;
    }
    /*
     * Only a whole writeback of the dependency after our change, flushed,
     * makes its changes before ours stable: a table it wrote at an
     * eviction may still sit in the host's cache. Changes it had after
     * ours (other requests' allocations) need not wait for us.
     */
    if (c->depends && e->dep_need > c->depends->flushed) {
        ret = qcow2_cache_writeback(s, c->depends);
        if (ret < 0) {
            return ret;
        }
        ret = qcow2_flush_file(s);
        if (ret < 0) {
            return ret;
        }
    }
    /* A table over the header or the L1/refcount tables would destroy them. */
    if (qcow2_overlaps_metadata(s, e->offset, s->cluster_size)) {
        return qcow2_mark_corrupt(s, "Preventing invalid write on metadata");
    }
    ret = bdrv_pwrite(s->bs->file, e->offset, e->table, s->cluster_size, 0);
    if (ret < 0) {
        return ret;
    }
    e->dirty = false;
    return 0;
}

void qcow2_cache_mark_dirty(Qcow2Cache *c, Qcow2CacheEntry *e)
{
    e->dirty = true;
    if (c->depends) {
        e->dep_need = c->depends->writebacks + 1;
    }
}

int qcow2_flush_file(BDRVQcow2State *s)
{
    int ret = bdrv_flush(s->bs->file);

    if (ret == 0) {
        s->l2_cache.flushed = s->l2_cache.writebacks;
        s->refblock_cache.flushed = s->refblock_cache.writebacks;
    }
    return ret;
}

int qcow2_flush_file_unlocked(BDRVQcow2State *s)
{
    uint64_t l2 = s->l2_cache.writebacks, rb = s->refblock_cache.writebacks;
    int ret;

    tsan_g_mutex_unlock(&s->lock);
    ret = bdrv_flush(s->bs->file);
    tsan_g_mutex_lock(&s->lock);
    if (ret == 0) {
        /* Another flush may have ended meanwhile with more: counts only grow. */
        s->l2_cache.flushed = MAX(s->l2_cache.flushed, l2);
        s->refblock_cache.flushed = MAX(s->refblock_cache.flushed, rb);
    }
    return ret;
}

int qcow2_mark_corrupt(BDRVQcow2State *s, const char *why)
{
    if (!s->corrupt) {
        error_report("qcow2: Marking image as corrupt: %s; further corruption events will "
                     "be suppressed", why);
        s->corrupt = true;
        /*
         * v3 records it in the header so that no one writes the image again
         * until it is checked; v2 has no bit for it.
         */
        if (s->writable && s->h.version >= 3) {
            uint8_t be[8];

            s->h.incompatible_features |= QCOW2_INCOMPAT_CORRUPT;
            stq_be_p(be, s->h.incompatible_features);
            if (bdrv_pwrite(s->bs->file, 72, be, 8, 0) == 0) {
                qcow2_flush_file(s);
            }
        }
    }
    return -EIO;
}

int qcow2_cache_writeback(BDRVQcow2State *s, Qcow2Cache *c)
{
    for (int i = 0; i < c->nb_entries; i++) {
        int ret = entry_write(s, c, &c->entries[i]);

        if (ret < 0) {
            return ret;
        }
    }
    c->writebacks++;
    return 0;
}

int qcow2_cache_writeback_ready(BDRVQcow2State *s, Qcow2Cache *c)
{
    for (int i = 0; i < c->nb_entries; i++) {
        Qcow2CacheEntry *e = &c->entries[i];
        int ret;

        if (c->depends && e->dep_need > c->depends->flushed) {
            continue;
        }
        ret = entry_write(s, c, e);
        if (ret < 0) {
            return ret;
        }
    }
    return 0;
}

int qcow2_cache_get(BDRVQcow2State *s, Qcow2Cache *c, uint64_t offset, bool fresh,
                    Qcow2CacheEntry **out)
{
    Qcow2CacheEntry *victim = NULL;
    int ret;

    c->tick++;
    for (int i = 0; i < c->nb_entries; i++) {
        Qcow2CacheEntry *e = &c->entries[i];

        if (e->offset == offset) {
            e->last_use = c->tick;
            if (fresh) {
                memset(e->table, 0, s->cluster_size);
            }
            *out = e;
            return 0;
        }
        if (!victim || e->last_use < victim->last_use) {
            victim = e;
        }
    }
    ret = entry_write(s, c, victim);
    if (ret < 0) {
        return ret;
    }
    victim->offset = 0;
    if (fresh) {
        memset(victim->table, 0, s->cluster_size);
    } else {
        ret = bdrv_pread(s->bs->file, offset, victim->table, s->cluster_size);
        if (ret < 0) {
            return ret;
        }
    }
    victim->offset = offset;
    victim->last_use = c->tick;
    *out = victim;
    return 0;
}

void qcow2_cache_forget(Qcow2Cache *c, uint64_t offset)
{
    for (int i = 0; i < c->nb_entries; i++) {
        if (c->entries[i].offset == offset) {
            c->entries[i].offset = 0;
            c->entries[i].dirty = false;
        }
    }
}

void qcow2_cache_drop_all(Qcow2Cache *c)
{
    for (int i = 0; i < c->nb_entries; i++) {
        c->entries[i].offset = 0;
        c->entries[i].dirty = false;
        c->entries[i].last_use = 0;
    }
}

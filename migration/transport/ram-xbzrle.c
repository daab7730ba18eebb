/* SPDX-License-Identifier: GPL-2.0-or-later */
/* XBZRLE on the sending side: the page cache and when a delta goes (ram-xbzrle.h). */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "system/memory.h"
#include "migration/qemu-file.h"
#include "ram-xbzrle.h"
#include "xbzrle.h"

struct XbzrleSender {
    uint64_t cache_size;
    uint64_t nslots;            /* a power of two */
    uintptr_t *keys;            /* host address of the page in each slot, 0 = empty */
    uint8_t *data;              /* nslots pages */
    uint8_t cur[TARGET_PAGE_SIZE];      /* the page as read once: the guest may write on */
    uint8_t enc[TARGET_PAGE_SIZE];

    /* Counters, written by mig/src only; query-migrate reads them. */
    uint64_t looked_up;         /* pages sent while XBZRLE was on */
    uint64_t pages;             /* sent as deltas */
    uint64_t bytes;             /* of those deltas */
    uint64_t cache_miss;
    uint64_t overflow;
    uint64_t unchanged;         /* equal to the cached copy: nothing sent */
};

XbzrleSender *xbzrle_sender_new(uint64_t cache_size, Error **errp)
{
    XbzrleSender *x = g_new0(XbzrleSender, 1);

    assert(cache_size >= TARGET_PAGE_SIZE && !(cache_size & (cache_size - 1)));
    x->cache_size = cache_size;
    x->nslots = cache_size / TARGET_PAGE_SIZE;
    /* The size is the user's: a cache the host cannot give fails the migration, not the VM. */
    x->keys = g_try_new0(uintptr_t, x->nslots);
    x->data = x->keys ? g_try_malloc(cache_size) : NULL;
    if (!x->data) {
        error_setg(errp, "cannot allocate an XBZRLE cache of %" PRIu64 " bytes "
                   "(xbzrle-cache-size)", cache_size);
        xbzrle_sender_free(x);
        return NULL;
    }
    return x;
}

void xbzrle_sender_drop_cache(XbzrleSender *x)
{
    g_free(x->keys);
    g_free(x->data);
    x->keys = NULL;
    x->data = NULL;
}

void xbzrle_sender_free(XbzrleSender *x)
{
    if (x) {
        g_free(x->keys);
        g_free(x->data);
        g_free(x);
    }
}

static void count(uint64_t *c)
{
    __atomic_store_n(c, *c + 1, __ATOMIC_RELAXED);
}

void xbzrle_put_page(XbzrleSender *x, RAMRecordWriter *w, QEMUFile *f, RAMBlock *rb,
                     uint64_t page, const uint8_t *data)
{
    uintptr_t key = (uintptr_t)(rb->host + (page << TARGET_PAGE_BITS));
    uint64_t slot = (key >> TARGET_PAGE_BITS) & (x->nslots - 1);
    uint8_t *cached = x->data + slot * TARGET_PAGE_SIZE;
    int n;

    count(&x->looked_up);
    if (!data) {
        /* The destination's page becomes zero: its cached copy is stale. */
        if (x->keys[slot] == key) {
            x->keys[slot] = 0;
        }
        ram_put_zero_page(w, f, rb, page);
        return;
    }
    if (x->keys[slot] != key) {
        count(&x->cache_miss);
        x->keys[slot] = key;
        memcpy(cached, data, TARGET_PAGE_SIZE);
        ram_put_page_copy(w, f, rb, page, cached);
        return;
    }
    memcpy(x->cur, data, TARGET_PAGE_SIZE);
    n = xbzrle_encode(cached, x->cur, TARGET_PAGE_SIZE, x->enc, TARGET_PAGE_SIZE);
    memcpy(cached, x->cur, TARGET_PAGE_SIZE);
    if (n == 0) {
        count(&x->unchanged);
    } else if (n < 0) {
        count(&x->overflow);
        ram_put_page_copy(w, f, rb, page, cached);
    } else {
        ram_put_xbzrle(w, f, rb, page, x->enc, n);
        count(&x->pages);
        __atomic_store_n(&x->bytes, x->bytes + n, __ATOMIC_RELAXED);
    }
}

XBZRLECacheStats *xbzrle_sender_stats(const XbzrleSender *x)
{
    XBZRLECacheStats *s = g_new0(XBZRLECacheStats, 1);
    uint64_t looked_up = __atomic_load_n(&x->looked_up, __ATOMIC_RELAXED);

    s->cache_size = x->cache_size;
    s->bytes = __atomic_load_n(&x->bytes, __ATOMIC_RELAXED);
    s->pages = __atomic_load_n(&x->pages, __ATOMIC_RELAXED);
    s->cache_miss = __atomic_load_n(&x->cache_miss, __ATOMIC_RELAXED);
    s->overflow = __atomic_load_n(&x->overflow, __ATOMIC_RELAXED);
    s->cache_miss_rate = looked_up ? (double)s->cache_miss / looked_up : 0;
    s->encoding_rate = s->bytes ? (double)s->pages * TARGET_PAGE_SIZE / s->bytes : 0;
    return s;
}

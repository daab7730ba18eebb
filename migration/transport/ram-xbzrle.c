/* SPDX-License-Identifier: GPL-2.0-or-later */
/* XBZRLE on the sending side: the page cache and when a delta goes (ram-xbzrle.h). */
#include "qemu/osdep.h"
#include <sched.h>
#include <sys/mman.h>
#include "qapi/error.h"
#include "qemu/worker-thread.h"
#include "system/memory.h"
#include "migration/qemu-file.h"
#include "ram-xbzrle.h"
#include "xbzrle.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* What the prefaulting thread takes at a time, between looks at quit. */
#define PREFAULT_CHUNK  (4ULL << 20)

struct XbzrleSender {
    uint64_t cache_size;
    uint64_t nslots;            /* a power of two */
    uintptr_t *keys;            /* host address of the page in each slot, 0 = empty */
    uint8_t *data;              /* nslots pages, mmap'ed */
    /*
     * Faults the cache in ahead of the first round, on idle CPU only (see
     * prefault_fn). Started by mig/src's first page; stopped and joined
     * before the cache is unmapped.
     */
    WorkerThread prefault;
    uint64_t prefault_from;     /* set before the start: the first page's slot */
    uint64_t prefault_len;      /* set before the start: bytes of cache to fault in */
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
    worker_thread_init(&x->prefault);
    x->keys = g_try_new0(uintptr_t, x->nslots);
    if (x->keys) {
        x->data = mmap(NULL, cache_size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (x->data == MAP_FAILED) {
            x->data = NULL;
        }
    }
    if (!x->data) {
        error_setg(errp, "cannot allocate an XBZRLE cache of %" PRIu64 " bytes "
                   "(xbzrle-cache-size)", cache_size);
        xbzrle_sender_free(x);
        return NULL;
    }
    return x;
}

void xbzrle_sender_stop_prefault(XbzrleSender *x)
{
    worker_thread_stop(&x->prefault);
}

void xbzrle_sender_drop_cache(XbzrleSender *x)
{
    worker_thread_stop(&x->prefault);
    g_free(x->keys);
    if (x->data) {
        munmap(x->data, x->cache_size);
    }
    x->keys = NULL;
    x->data = NULL;
}

void xbzrle_sender_free(XbzrleSender *x)
{
    if (x) {
        xbzrle_sender_drop_cache(x);
        worker_thread_destroy(&x->prefault);
        g_free(x);
    }
}

/*
 * The first round fills every slot it reaches, and the first write to each
 * page of a fresh cache is a fault and the page's zeroing: more than half
 * of mig/src's time in the seed scenario with a 2 GiB cache, on the path
 * that paces the whole round (perf, docs/benchmarks.md "XBZRLE"). This
 * thread takes those faults first, from the slot the round starts at, with
 * MADV_POPULATE_WRITE, which maps the pages without writing to them: a
 * slot mig/src filled meanwhile keeps its content. SCHED_IDLE: it only runs
 * on a CPU that nothing else wants, never at the guest's expense. Where
 * the kernel lacks the advice (before 5.14) it stops, and mig/src faults as
 * before.
 */
static void *prefault_fn(void *opaque)
{
    XbzrleSender *x = opaque;
    struct sched_param sp = { 0 };
    uint64_t done = 0, from = x->prefault_from * TARGET_PAGE_SIZE;

    pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
    worker_thread_lock(&x->prefault);
    while (done < x->prefault_len && !worker_thread_should_quit(&x->prefault)) {
        uint64_t off = (from + done) % x->cache_size;
        uint64_t len = MIN(MIN(PREFAULT_CHUNK, x->cache_size - off), x->prefault_len - done);

        worker_thread_unlock(&x->prefault);
        if (madvise(x->data + off, len, MADV_POPULATE_WRITE) && errno != EINTR) {
            worker_thread_lock(&x->prefault);
            break;
        }
        done += len;
        worker_thread_lock(&x->prefault);
    }
    worker_thread_unlock(&x->prefault);
    return NULL;
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

    if (!x->looked_up) {
        uint64_t ram = DIV_ROUND_UP(ram_blocks_total_bytes(), TARGET_PAGE_SIZE) * TARGET_PAGE_SIZE;

        x->prefault_from = slot;
        /*
         * No more than the guest has: a cache larger than RAM is only
         * ever used where RAM maps (from this slot on, for one block).
         */
        x->prefault_len = MIN(x->cache_size, ram);
        /* Without the thread (no memory for one), mig/src faults the pages itself. */
        worker_thread_start(&x->prefault, "mig/xbz-cache", prefault_fn, x);
    }
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

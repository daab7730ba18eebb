/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to postcopy-dst.c (the commands, the phases, recovery) and
 * postcopy-dst-pages.c (the fault thread, placement, the preempt channel):
 * the postcopy destination's state. postcopy-dst.c owns the one instance
 * (the process has one destination) and hands it to the page side.
 */
#ifndef MIGRATION_POSTCOPY_DST_INT_H
#define MIGRATION_POSTCOPY_DST_INT_H

#include "qemu/thread.h"
#include "migration/core/latency-hist.h"
#include "postcopy-dst.h"
#include "migration/core/uffd-server.h"

#define DISCARD_BATCH 1024

typedef enum PostcopyDstPhase {
    PC_DST_NONE,
    PC_DST_ADVISED,
    PC_DST_LISTENING,
    PC_DST_RUNNING,
} PostcopyDstPhase;

/* One RAMBlock's postcopy bitmaps (ADVISE to the next load's reset). */
typedef struct PostcopyDstBlock {
    RAMBlock *rb;
    /* Set atomically by mig/dst once the page is in place. */
    unsigned long *received;
    /* Set atomically by mig/pc-fault once the source was asked for the page. */
    unsigned long *requested;
} PostcopyDstBlock;

typedef struct PostcopyDst {
    const PostcopyDstOps *ops;  /* incoming.c's, set before mig/dst starts */
    int phase;                  /* PostcopyDstPhase: mig/dst writes, any thread reads (atomic) */

    /* Set up by mig/dst at ADVISE/LISTEN; torn down by mig/dst at the end. */
    PostcopyDstBlock *blocks;
    int nblocks;
    int uffd;
    /*
     * "mig/pc-fault", started at ADVISE and stopped at the end by mig/dst:
     * its row turns missing faults into page requests; its DEFERRED count
     * is the requests query-migrate shows.
     */
    UffdServer faults;

    /*
     * postcopy-preempt: the channel (set by the main thread) and the thread
     * that places its pages, started by whichever of ADVISE and the
     * connection comes second; preempt_lock covers both fields.
     */
    GMutex preempt_lock;
    QEMUFile *preempt;
    QemuThread preempt_thread;
    bool preempt_running;

    /* Request latency: mig/pc-fault adds, mig/dst removes, under lat_lock. */
    GMutex lat_lock;
    GHashTable *pending;        /* host page address -> request time (ns) */
    LatencyHist lat;            /* recorded by mig/dst under lat_lock */

    char *pause_reason;         /* lat_lock: why the stream broke, for query-migrate */

    /* Counters: single aligned words, read by query-migrate. */
    uint64_t pages_placed;      /* mig/dst, after LISTEN */
    uint64_t pages_discarded;   /* mig/dst, DISCARD commands */
    uint64_t discard_ns;        /* mig/dst: time in them, for the trace */
    /* mig/dst: DISCARD ranges of one block not applied yet (flushed at LISTEN). */
    RAMBlock *disc_rb;
    uint64_t disc_start[DISCARD_BATCH];
    uint64_t disc_len[DISCARD_BATCH];
    unsigned disc_n;
} PostcopyDst;

static inline int postcopy_dst_phase(const PostcopyDst *pd)
{
    return __atomic_load_n(&pd->phase, __ATOMIC_ACQUIRE);
}

static inline void postcopy_dst_set_phase(PostcopyDst *pd, PostcopyDstPhase phase)
{
    __atomic_store_n(&pd->phase, phase, __ATOMIC_RELEASE);
}

static inline void count(uint64_t *c, uint64_t n)
{
    __atomic_store_n(c, *c + n, __ATOMIC_RELAXED);
}

/* ---- postcopy-dst-pages.c ---- */
/* The block's postcopy bitmaps (every RAMBlock has them from ADVISE on). */
PostcopyDstBlock *postcopy_dst_block(PostcopyDst *pd, RAMBlock *rb);
/* RAMPageReader.place (@opaque: the PostcopyDst): @n pages from @first of @rb (NULL @data: zero). */
bool postcopy_dst_place(void *opaque, RAMBlock *rb, uint64_t first, unsigned n,
                        const uint8_t *data, Error **errp);
/* The row of "mig/pc-fault" (opaque: the PostcopyDst): missing-page faults into page requests. */
extern const UffdServerOps postcopy_dst_fault_ops;
/* preempt_lock held: start "mig/pc-preempt" once ADVISE and the channel are there. */
void postcopy_dst_maybe_start_preempt(PostcopyDst *pd);
/* The preempt channel @f arrived (a recovery's replaces the broken one). */
void postcopy_dst_preempt_attach(PostcopyDst *pd, QEMUFile *f);
/* End the preempt thread and close its channel. */
void postcopy_dst_stop_preempt(PostcopyDst *pd);
/* Recovery, mig/dst: ask again for every page a vCPU still waits on. */
void postcopy_dst_rerequest(PostcopyDst *pd);

#endif

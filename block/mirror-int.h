/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to the mirror: its state, shared by mirror.c (the job: workers,
 * ready, completion, the switchover) and mirror-dirty.c (the dirty
 * bitmap, the guest's write hook, the initial scan). The invariant and
 * its rules are at the top of mirror.c.
 */
#ifndef BLOCK_MIRROR_INT_H
#define BLOCK_MIRROR_INT_H

#include "block/mirror.h"

#define MIRROR_MAX_OP       (1024 * 1024)       /* one read and write at most */
#define MIRROR_MAX_WORKERS  8                   /* copy threads per job at most */
#define MIRROR_IDLE_NS      (10 * 1000 * 1000)  /* the job thread's poll */
/* Dirty bytes at most left when a complete quiesces the guest's writes. */
#define MIRROR_CONVERGE_BYTES (64 * 1024 * 1024)

/* A copy in flight: [start, end) read from the source, not yet on the target. */
typedef struct MirrorOp {
    uint64_t start, end;            /* end 0: the slot is free */
} MirrorOp;

typedef struct MirrorState MirrorState;

/* A copy thread: takes dirty runs until told to stop. */
typedef struct MirrorWorker {
    MirrorState *s;
    GThread *thread;                /* the job thread starts and joins it */
    uint8_t *buf;                   /* op_max bytes (its thread) */
    unsigned slot;                  /* its entry of s->ops (fixed) */
} MirrorWorker;

struct MirrorState {
    Job *job;                       /* fixed */
    BlockLayer *bl;                 /* fixed */
    BlockBackend *blk;              /* the guest's, or NULL (fixed) */
    BlockDriverState *source, *target;      /* referenced (fixed) */
    MirrorOptions o;                /* fixed; the speed is job->speed */
    uint64_t len;                   /* the source's length (fixed) */
    unsigned gran_bits;             /* log2(o.granularity) (fixed) */
    uint64_t nbits;                 /* chunks of the disk (fixed) */
    uint64_t op_max;                /* bytes of one copy, whole chunks (fixed) */
    BlkWriteHook hook;              /* fixed */
    bool hooked;                    /* the hook is installed (job thread after start) */

    GMutex lock;
    GCond op_done;                  /* an op ended, or a request came: waiters re-check */
    GCond work;                     /* new dirty bits, or a flag: workers re-check */
    /*
     * A set bit: the chunk may differ on the target. Set by the hook after
     * a guest write (and by the initial scan); cleared by a copy right
     * before it reads the chunk. (lock)
     */
    unsigned long *dirty;
    uint64_t dirty_count;           /* set bits of dirty (lock) */
    uint64_t cursor;                /* the next chunk to look at (lock) */
    MirrorOp *ops;                  /* nworkers + 1 slots, the last the job thread's (lock) */
    unsigned in_flight;             /* slots in use (lock) */
    int64_t next_ns;                /* the rate limit's clock (lock) */
    bool hold;                      /* workers take no new run (lock) */
    bool workers_stop;              /* workers exit (lock) */
    int copy_err;                   /* a worker's failure, first one (lock) */
    char *copy_err_msg;             /* its words (lock) */
    bool error_reported;            /* atomic: BLOCK_JOB_ERROR for the failure was sent */
    bool stopped;                   /* the job is over: the hook does nothing (lock) */
    /*
     * The switchover (mirror_drain): the main thread asks (park_req), the
     * job copies what is dirty, flushes, answers (park_answered, park_ret)
     * and issues nothing (parked) until the request is withdrawn or the
     * job cancelled. A job that ends instead answers with end_ret.
     * (lock, with park_cond)
     */
    bool park_req, parked, park_answered;
    int park_ret;
    int end_ret;                    /* the job's result once stopped (lock) */
    GCond park_cond;

    MirrorWorker *workers;          /* job thread */
    unsigned nworkers;              /* fixed */
    uint8_t *buf;                   /* the job thread's, for the final copies */
};

/* ---- mirror-dirty.c ---- */
void mirror_mark_dirty_locked(MirrorState *s, uint64_t offset, uint64_t bytes);
void mirror_mark_dirty(MirrorState *s, uint64_t offset, uint64_t bytes);
/* The next dirty run into ops[@slot], its bits cleared; false when none (lock). */
bool mirror_take_run_locked(MirrorState *s, unsigned slot, uint64_t *offset,
                            uint64_t *bytes);
void mirror_op_end(MirrorState *s, unsigned slot);
uint64_t mirror_dirty_bytes(MirrorState *s);
void mirror_write_hook(void *opaque, BlkHookOp op, uint64_t offset, uint64_t bytes,
                       const struct iovec *iov, int niov, int ret);
/* The initial bitmap for the sync mode (job thread). */
int mirror_scan(MirrorState *s, Error **errp);

#endif

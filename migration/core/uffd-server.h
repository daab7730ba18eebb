/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: one userfaultfd fault server, the skeleton of
 * mig/uffd (background snapshot), mig/pc-fault (postcopy destination) and
 * mig/lr-fault (lazy restore). The server owns a thread, a kick eventfd
 * and the poll loop; it reads the userfaultfd's messages in batches, hands
 * each to the owner's row of hooks (UffdServerOps), counts what the row
 * answered and records how long each served fault waited. What a fault
 * means (copy out and unprotect, ask the source, read the file) lives in
 * the row; the skeleton never branches on who uses it.
 *
 * How an owner uses it:
 *
 *   static const UffdServerOps my_ops = {
 *       .what = "postcopy",            names the thread and its messages
 *       .fault = my_fault,             required
 *       .wake = my_wake,               optional, and the rest
 *   };
 *   UffdServer srv;                    embedded in the owner's state, zeroed
 *
 *   uffd_server_start(&srv, "mig/x", uffd, &my_ops, me, errp);
 *   ... faults are served; any thread may read uffd_server_get_stats() ...
 *   uffd_server_wake(&srv);            optional: run my_wake on the thread
 *   uffd_server_stop(&srv);            no hook runs after it returns
 *   then the owner unregisters or closes @uffd (the server never does).
 *
 * The contract:
 *
 * - Every hook runs on the server's thread, one at a time, never two at
 *   once, and receives the owner's @opaque. The hooks may take the locks
 *   the owner documents (the return path's, a latency table's), but NEVER
 *   the BQL, nor any lock whose holder may wait on guest RAM: a BQL holder
 *   (a device, a vCPU in an MMIO exit) may be waiting on the very page that
 *   only this thread can bring in, and the guest would hang.
 * - A hook may call uffd_server_ask_stop() and uffd_server_wake() on its
 *   own server; never uffd_server_stop() (it would join itself). Other
 *   threads may call those two as well, as long as the owner's order puts
 *   them after the start and before the stop (before a start and after a
 *   stop they do nothing).
 * - While the server runs nobody else reads @uffd: a second reader would
 *   take messages that then reach no hook.
 * - Faults: each fault message the thread reads is handed to ops->fault
 *   exactly once, unless stop was asked first (below). The answer is
 *   counted; a SERVED fault's wait (from the read to the hook's return) is
 *   recorded in the server's LatencyHist.
 * - Stop: uffd_server_stop() asks, then joins. Once it returns no hook
 *   runs any more and none is running. Messages pending at stop (read in a
 *   batch after stop was asked, or still queued in the userfaultfd) are
 *   read, counted as abandoned and never delivered: their threads stay
 *   blocked until the owner wakes them (unregistering, closing the
 *   userfaultfd, placing or unprotecting the page). Stop with nothing
 *   pending returns as soon as the hook in progress, if any, returns.
 * - ops->end runs last on the thread, once, whatever ended it: a stop
 *   (err 0) or a failed read of the userfaultfd (-errno, already reported).
 * - Counters and the histogram: written by the server's thread only
 *   (relaxed atomics), read by any thread; they survive stop, and
 *   uffd_server_reset_stats() zeroes them while no thread runs.
 */
#ifndef MIGRATION_UFFD_SERVER_H
#define MIGRATION_UFFD_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/thread.h"
#include "latency-hist.h"

/* Messages read in one call: the kernel hands over up to this many at once. */
#define UFFD_SERVER_BATCH 64

/* One page fault as the kernel reported it. */
typedef struct UffdFault {
    uint64_t addr;              /* the faulting address (not page aligned) */
    uint64_t flags;             /* UFFD_PAGEFAULT_FLAG_WP / _WRITE / _MINOR */
    uint32_t tid;               /* the faulting thread, with UFFD_FEATURE_THREAD_ID; else 0 */
    int64_t t_read;             /* get_clock_ns() when its batch was read */
} UffdFault;

/* What the row did with a fault: counted, and only SERVED records a latency. */
typedef enum UffdFaultOutcome {
    UFFD_FAULT_SERVED,          /* the page is in place (or unprotected): its thread runs */
    UFFD_FAULT_DEFERRED,        /* handed on (a page request): another thread places it */
    UFFD_FAULT_IGNORED,         /* nothing to do: not ours, already there, already asked */
    UFFD_FAULT_FAILED,          /* could not serve it (the owner has said why) */
} UffdFaultOutcome;

/* The owner's row. Every hook but fault may be NULL; all run on the server's thread. */
typedef struct UffdServerOps {
    /* Names the server in messages: "cannot create the <what> fault thread". */
    const char *what;
    /* First thing on the thread, before any message (thread priority, say). */
    void (*begin)(void *opaque);
    /* One fault message. */
    UffdFaultOutcome (*fault)(void *opaque, const UffdFault *f);
    /*
     * Some thread called uffd_server_wake() (it placed a page and wants
     * the faults the row deferred retried). Each wake is followed by an
     * ops->wake that starts after it, unless stop is asked first; several
     * wakes may come as one call.
     */
    void (*wake)(void *opaque);
    /*
     * UFFD_EVENT_REMOVE (madvise DONTNEED/REMOVE) or UFFD_EVENT_UNMAP
     * (munmap) of [start, end), if the owner enabled those features.
     */
    void (*remove)(void *opaque, uint64_t start, uint64_t end, bool unmap);
    /* Last thing on the thread: @err 0 after a stop, -errno after a failed read. */
    void (*end)(void *opaque, int err);
} UffdServerOps;

/* What a server counted; uffd_server_get_stats() fills it. */
typedef struct UffdServerStats {
    uint64_t served;            /* faults answered UFFD_FAULT_SERVED */
    uint64_t deferred;          /* ... DEFERRED */
    uint64_t ignored;           /* ... IGNORED */
    uint64_t failed;            /* ... FAILED */
    uint64_t events;            /* remove/unmap messages handed to ops->remove */
    uint64_t dropped;           /* messages no hook takes (no ops->remove, other events) */
    uint64_t abandoned;         /* read after stop was asked: never delivered */
    uint64_t wakes;             /* ops->wake calls */
} UffdServerStats;

/*
 * One server. Zeroed, it is stopped. The owner's thread (whoever starts
 * and stops it) owns thread, running, uffd and kick_fd; live, kick_fd and
 * the flags are also read by any thread that asks it to stop or wake.
 */
typedef struct UffdServer {
    const UffdServerOps *ops;   /* set by start, read-only while running */
    void *opaque;
    QemuThread thread;
    bool running;               /* the owner: started and not joined yet */
    int uffd;                   /* the owner's: never closed here */
    int kick_fd;                /* eventfd: stop or wake asked; open while live */
    bool live;                  /* atomic: set by start before the thread, cleared by stop */
    bool stopping;              /* atomic: set by ask_stop, never cleared during a run */
    bool wake_pending;          /* atomic: set by wake, cleared by the thread */
    uint64_t run_abandoned;     /* the thread's; its owner reads it after the join */

    /* Written by the server's thread only (relaxed atomics), read by any thread. */
    UffdServerStats st;
    LatencyHist lat;            /* a SERVED fault's wait: read to the hook's return */
} UffdServer;

/*
 * Starts thread @name (a literal) serving @uffd (non-blocking, the owner's)
 * with @ops and @opaque. The server must be stopped. False with @errp set.
 */
bool uffd_server_start(UffdServer *s, const char *name, int uffd, const UffdServerOps *ops,
                       void *opaque, Error **errp);
/*
 * Asks the thread to end and joins it; closes the kick eventfd. Returns
 * how many messages this run abandoned (see the contract). No-op (0) if
 * the server is not running. The owner's thread, never a hook.
 */
uint64_t uffd_server_stop(UffdServer *s);
/* Asks the thread to end without waiting. Any thread, hooks included, between start and stop. */
void uffd_server_ask_stop(UffdServer *s);
/* Makes the thread run ops->wake soon. Any thread, hooks included, between start and stop. */
void uffd_server_wake(UffdServer *s);
/* Whether the server was started and not stopped yet (the owner's thread). */
bool uffd_server_running(const UffdServer *s);
/* Zeroes the counters and the histogram. The owner, server not running. */
void uffd_server_reset_stats(UffdServer *s);
/* A snapshot of the counters, each read atomically. Any thread. */
void uffd_server_get_stats(const UffdServer *s, UffdServerStats *st);
/* The served faults' latency histogram: read it with latency-hist.h's readers. Any thread. */
const LatencyHist *uffd_server_latency(const UffdServer *s);

#endif

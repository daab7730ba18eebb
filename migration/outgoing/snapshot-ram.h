/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: the background snapshot's page source (its hooks
 * are snapshot_ram_source in ram-source.h) and what the snapshot mode and
 * its fault thread call on it.
 */
#ifndef MIGRATION_SNAPSHOT_RAM_H
#define MIGRATION_SNAPSHOT_RAM_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include "qapi/qapi-types.h"

typedef struct SnapBlock SnapBlock;
typedef struct SnapRun SnapRun;

/*
 * The source's state: the snapshot mode embeds it and hands it to
 * ram_select_source() and to its fault thread. Its fields are
 * snapshot-ram.c's; the comments say which thread owns which.
 */
typedef struct SnapRam {
    /* Set up by mig/src before the fault thread starts; read-only while it runs. */
    SnapBlock *blocks;
    int nblocks;
    uint64_t nregions;          /* in all blocks */
    int uffd;
    SnapRun *runs;              /* pool_runs fault runs, then the writer's LINEAR_RUNS */
    SnapRun *small_runs;        /* SMALL_RUNS small runs */
    uint8_t *pool;              /* their buffers: one mapping */
    size_t pool_len;
    int pool_runs;

    /* Queues of runs: GAsyncQueue's own lock. */
    GAsyncQueue *free_runs;
    GAsyncQueue *free_small;
    GAsyncQueue *ready_runs;
    GAsyncQueue *free_linear;   /* the writer's runs not being written */

    /* Shared by both threads, atomic. */
    uint64_t unsaved_pages;     /* set bits over all unsaved_bmaps */
    int in_flight;              /* fault copies from before their claim until written */
    uint64_t regions_done;      /* regions whose full copy was taken */
    int error;                  /* errno of a failed unprotect */
    int stopping;               /* the snapshot is ending: waits give up */
    int peak_runs;              /* mig/uffd writes: most region runs out at once */
    uint64_t small_faults;      /* mig/uffd writes: faults served with a small run */

    /* mig/src only. */
    int cur_block;              /* the linear cursor */
    uint64_t cur_page;
    int64_t stuck_since;        /* first step that found no region */
} SnapRam;


/*
 * Allocates and faults in the copy buffers (x-background-snapshot-buffer-size
 * of them). mig/src, no BQL, after the source's setup and before the VM
 * stops: faulting in fresh memory is slow here.
 */
bool snapshot_ram_prepare(SnapRam *sr, Error **errp);
/*
 * Guest RAM is write-protected on @uffd: from now on faults may be served
 * and regions unprotected. mig/src, VM stopped, before the fault thread starts.
 */
void snapshot_ram_start(SnapRam *sr, int uffd);

typedef enum SnapFaultOutcome {
    SNAP_FAULT_IGNORED,         /* not guest RAM, or the snapshot is ending */
    SNAP_FAULT_WAITED,          /* someone else saved the page; waited for it */
    SNAP_FAULT_SAVED,           /* copied (out of order) and unprotected here */
} SnapFaultOutcome;

/*
 * The guest wrote protected host address @addr: copy what must be saved
 * before the write and unprotect, or wait for whoever does. The fault
 * thread (mig/uffd) only; @t_wake is when it woke, for the trace.
 */
SnapFaultOutcome snapshot_ram_handle_fault(SnapRam *sr, uint64_t addr, int64_t t_wake);
/* Makes fault handling give up waiting; before the fault thread is joined. Any thread. */
void snapshot_ram_stopping(SnapRam *sr);

/* The x-background-snapshot part of query-migrate, created if @info has none yet. */
XBackgroundSnapshotInfo *snapshot_info_get(MigrationInfo *info);

#endif

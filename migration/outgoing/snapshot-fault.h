/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to migration/: the background snapshot's fault thread (mig/uffd). */
#ifndef MIGRATION_SNAPSHOT_FAULT_H
#define MIGRATION_SNAPSHOT_FAULT_H

#include <stdbool.h>
#include "qapi/qapi-types.h"
#include "snapshot-ram.h"
#include "migration/core/uffd-server.h"

/* The snapshot mode's (embedded in its state, zeroed at each migrate: stopped, no stats). */
typedef struct SnapFault {
    /* Started in mig/src, stopped by whoever ends the snapshot. */
    UffdServer server;
    SnapRam *ram;               /* the page source it hands faults to; set at start */
    int uffd;                   /* the guest RAM's, set at start; the snapshot mode owns it */
    /* Written by mig/uffd only (relaxed atomics), read by query-migrate. */
    uint64_t out_of_order;      /* faults that saved pages themselves */
    /*
     * RAM is protected while the guest still runs (snapshot.c), so that
     * the downtime only protects again what was written before the stop.
     * A fault until the freeze unprotects its page and records it here.
     * The lock (zeroed is ready) keeps an unprotect from landing after
     * the freeze's protection.
     */
    GMutex freeze_lock;
    bool frozen;                /* freeze_lock: faults are the snapshot's */
    GArray *touched;            /* freeze_lock: page addresses unprotected before it */
    int unprotect_err;          /* freeze_lock: errno of an unprotect that failed before it */
} SnapFault;

/* Starts mig/uffd on the write-protected @uffd, serving @ram. mig/src, VM stopped. */
bool snapshot_fault_start(SnapFault *sf, int uffd, SnapRam *ram, Error **errp);
/*
 * The snapshot's instant, VM stopped: faults from now on save pages, and
 * the pages unprotected before it are protected again. False (with the
 * kernel's error in @errp) if one could not be; *@pages: how many.
 */
bool snapshot_fault_freeze(SnapFault *sf, uint64_t *pages, Error **errp);
/* Makes pending fault handling give up, then joins mig/uffd. No-op if not running. */
void snapshot_fault_stop(SnapFault *sf);
/* Fault count, latency histogram and percentiles into @x. Any time, BQL. */
void snapshot_fault_fill_info(SnapFault *sf, XBackgroundSnapshotInfo *x);

#endif

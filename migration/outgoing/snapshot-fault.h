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
    /* Written by mig/uffd only (relaxed atomics), read by query-migrate. */
    uint64_t out_of_order;      /* faults that saved pages themselves */
} SnapFault;

/* Starts mig/uffd on the write-protected @uffd, serving @ram. mig/src, VM stopped. */
bool snapshot_fault_start(SnapFault *sf, int uffd, SnapRam *ram, Error **errp);
/* Makes pending fault handling give up, then joins mig/uffd. No-op if not running. */
void snapshot_fault_stop(SnapFault *sf);
/* Fault count, latency histogram and percentiles into @x. Any time, BQL. */
void snapshot_fault_fill_info(SnapFault *sf, XBackgroundSnapshotInfo *x);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to migration/: the background snapshot's fault thread (mig/uffd). */
#ifndef MIGRATION_SNAPSHOT_FAULT_H
#define MIGRATION_SNAPSHOT_FAULT_H

#include <stdbool.h>
#include "qapi/qapi-types.h"

/* Zeroes the fault statistics of the previous snapshot. BQL, thread not running. */
void snapshot_fault_reset_stats(void);
/* Starts mig/uffd on the write-protected @uffd. mig/src, VM stopped. */
bool snapshot_fault_start(int uffd, Error **errp);
/* Makes pending fault handling give up, then joins mig/uffd. No-op if not running. */
void snapshot_fault_stop(void);
/* Fault count, latency histogram and percentiles into @x. Any time, BQL. */
void snapshot_fault_fill_info(XBackgroundSnapshotInfo *x);

#endif

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
#include "qapi/qapi-types.h"

/*
 * Allocates and faults in the copy buffers (x-background-snapshot-buffer-size
 * of them). mig/src, no BQL, after the source's setup and before the VM
 * stops: faulting in fresh memory is slow here.
 */
bool snapshot_ram_prepare(Error **errp);
/*
 * Guest RAM is write-protected on @uffd: from now on faults may be served
 * and regions unprotected. mig/src, VM stopped, before the fault thread starts.
 */
void snapshot_ram_start(int uffd);

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
SnapFaultOutcome snapshot_ram_handle_fault(uint64_t addr, int64_t t_wake);
/* Makes fault handling give up waiting; before the fault thread is joined. Any thread. */
void snapshot_ram_stopping(void);

/* The x-background-snapshot part of query-migrate, created if @info has none yet. */
XBackgroundSnapshotInfo *snapshot_info_get(MigrationInfo *info);

#endif

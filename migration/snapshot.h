/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to migration/: the background snapshot (userfaultfd write protection). */
#ifndef MIGRATION_SNAPSHOT_H
#define MIGRATION_SNAPSHOT_H

#include "qapi/qapi-types.h"

/* Thread body used instead of the precopy one when the capability is on. */
void *bg_snapshot_thread(void *opaque);
/* migrate_cancel: wake the snapshot thread if it waits for faults. */
void snapshot_cancel_notify(void);
/* Adds the snapshot statistics to query-migrate. */
void snapshot_fill_info(MigrationInfo *info);
/* Unprotects and unregisters guest RAM if a snapshot left it protected. BQL. */
void snapshot_cleanup(void);

/* Hooks of the RAM save loop (ram.c) in background-snapshot mode. */
/* Next guest write fault on a page of @rb; false if none is pending. */
bool snapshot_next_fault(RAMBlock **rb, uint64_t *page, int64_t *since_ns);
/* Pages [page, page+n) of @rb are in the stream (flushed): let the guest write them. */
void snapshot_pages_saved(RAMBlock *rb, uint64_t page, uint64_t n);
/* A fault waiting since @since_ns was resolved now. */
void snapshot_fault_resolved(int64_t since_ns, bool out_of_order);

#endif

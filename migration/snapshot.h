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

typedef struct RAMState RAMState;
/*
 * The RAM save loop's step in background-snapshot mode (ram.c calls it):
 * write out what the fault thread saved, then save the next region of the
 * linear scan. Returns false when every page is in the stream.
 */
bool snapshot_save_step(RAMState *rs, QEMUFile *f);

/* snapshot-ram.c: the fault thread and its bounce runs, on @uffd. */
/*
 * Allocates (and faults in) the bounce buffers, x-background-snapshot-buffer-size
 * of them; before the VM stops.
 */
bool snapshot_ram_prepare(Error **errp);
/*
 * The buffer of the last snapshot and the most of it used at once (bytes),
 * and how many faults were served with a small copy because it was full.
 */
void snapshot_ram_buffer_stats(uint64_t *size, uint64_t *peak, uint64_t *small_faults);
bool snapshot_ram_start(int uffd, Error **errp);
void snapshot_ram_stop(void);
/* snapshot.c: one fault served after @latency_us (@out_of_order: it saved pages). */
void snapshot_record_fault(uint64_t latency_us, bool out_of_order);

#endif

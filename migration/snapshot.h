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

#endif

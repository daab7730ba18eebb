/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/outgoing/: what the live-update rows share
 * (cpr-transfer.c defines it; cpr-exec.c uses it): the page source with no
 * pages (the memory is handed over, not sent), the refusals, and the cpr
 * state's entries for this machine's RAM blocks. mig/src or the main
 * thread, as each row's hooks are.
 */
#ifndef MIGRATION_OUTGOING_CPR_H
#define MIGRATION_OUTGOING_CPR_H

#include "migration/core/cpr-state.h"
#include "migration/transport/ram-source.h"
#include "outgoing.h"

extern const RAMPageSource cpr_ram_source;

/* Capabilities a cpr mode refuses, and RAM that cannot be handed over, in QEMU's words. */
bool cpr_check_start(Error **errp);
/*
 * Fills @e (CPR_STATE_MAX_FDS long) with every RAM block's name, fd and
 * size, then the other fds kept for a live update (qemu/cpr-fd.h's
 * preserved ones); returns the count.
 */
unsigned cpr_fd_entries(CprFdEntry *e);

/*
 * The rows' hooks after the handover: precopy's switchover with nothing to
 * send (at once; stop, devices, confirmation). Their state is a PrecopyState.
 */
bool cpr_switchover_ready(MigrationState *s, void *ms, bool all_sent);
bool cpr_stream_start(MigrationState *s, void *ms, QEMUFile *f, Error **errp);
bool cpr_complete(MigrationState *s, void *ms, QEMUFile *f, Error **errp);
XDowntimeInfo *cpr_downtime_info(const MigrationState *s, void *ms);
void cpr_cleanup(MigrationState *s, void *ms);

#endif

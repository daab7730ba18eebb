/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to migration/: the incoming side, as query-migrate sees it. */
#ifndef MIGRATION_INCOMING_H
#define MIGRATION_INCOMING_H

#include "qapi/qapi-types.h"

/*
 * migrate_cancel on a destination: give up listening or loading; the
 * process then ends with status 1, as on a failed load. False if no
 * incoming migration runs. BQL.
 */
bool migration_incoming_cancel(void);
/* The destination's guest runs in postcopy (active, paused or recovering). Any thread. */
bool migration_incoming_in_postcopy(void);
/* query-migrate on a destination: fills @info (status, time) and returns it. BQL. */
MigrationInfo *migration_incoming_info(MigrationInfo *info);
/*
 * A live update's cpr channel @fd, which this side closes once the main
 * channel listens (cpr-incoming.c). Main thread, before the listen.
 */
void migration_incoming_hold_cpr_conn(int fd);

#endif

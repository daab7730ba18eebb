/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: MigrationStatus transitions and the events that
 * announce them (MIGRATION, MIGRATION_PASS), for the outgoing side, its
 * modes and the incoming side alike. The bottom of migration/ with
 * options.c: it calls nothing above it.
 */
#ifndef MIGRATION_STATUS_H
#define MIGRATION_STATUS_H

#include <stdbool.h>
#include <stdint.h>
#include "qapi/qapi-types.h"

/*
 * migrate_set_state: compare-and-swap *@state from @old to @new; if it
 * happened, trace it and (with the events capability) emit MIGRATION.
 * Any thread; takes the BQL for the event if the caller does not hold it.
 */
void migrate_set_state(int *state, int old, int new);
/* The same, the MIGRATION event carrying @downtime (NULL: none). */
void migrate_set_state_detail(int *state, int old, int new, XDowntimeInfo *downtime,
                              XIncomingDowntimeInfo *incoming_downtime);
/* The current value of a state migrate_set_state() changes. Any thread. */
int migrate_get_state(const int *state);
/* States in which an outgoing migration owns the VM (setup to cancelling). */
bool migration_status_is_running(int state);
/*
 * migration_pass_event: the dirty bitmap was synced for the @pass'th time;
 * trace it and (with the events capability) emit MIGRATION_PASS. Any thread.
 */
void migration_pass_event(uint64_t pass, uint64_t remaining_bytes, uint64_t transferred);

/*
 * An x-converge-policy step was taken: trace it and (with the events
 * capability) emit MIGRATION with @status unchanged and the step. Any thread.
 */
void migration_converge_event(int status, const char *step, const char *reason);

#endif

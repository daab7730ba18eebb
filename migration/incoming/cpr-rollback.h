/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/incoming/: cpr-exec's way back. A new image armed
 * with the old binary's rollback record executes the old binary again if
 * it exits before the guest runs (a refused state, another -m, a failed
 * load...), handing it the same memory, so the old binary loads the state
 * it wrote and the guest is never lost:
 *
 *     cpr_rollback_arm(record_fd, st);   // cpr-incoming.c, at startup
 *     ...
 *     cpr_rollback_disarm();             // incoming.c, the guest loaded whole
 *
 * Main thread (the exit that runs it may come from any thread).
 */
#ifndef MIGRATION_CPR_ROLLBACK_H
#define MIGRATION_CPR_ROLLBACK_H

#include "migration/core/cpr-state.h"

/* Reads the record in @record_fd (closed here) and keeps its own copy of @st's fds. */
bool cpr_rollback_arm(int record_fd, const CprState *st, Error **errp);
/* The guest is this process's now: no way back is needed. Any number of times. */
void cpr_rollback_disarm(void);

#endif

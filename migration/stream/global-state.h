/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to migration/: the "globalstate" section (the source's run state). */
#ifndef MIGRATION_GLOBAL_STATE_H
#define MIGRATION_GLOBAL_STATE_H

void global_state_init(void);
/* Records the current run state for the stream (before stopping the VM). BQL. */
void global_state_store(void);
/* Run state saved by the source, or -1 if none was received. */
int global_state_get_runstate(void);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: making a precopy converge when the guest dirties
 * memory faster than it is sent, with auto-converge (every vCPU throttled)
 * or dirty-limit (each vCPU limited by its own dirty rate). mig/src calls
 * these; query-migrate reads what converge_fill_info() gives.
 */
#ifndef MIGRATION_CONVERGE_H
#define MIGRATION_CONVERGE_H

#include <stdbool.h>
#include <stdint.h>
#include "qapi/qapi-types.h"

/*
 * A new migration's setup: forget the last one's throttle state. With
 * @hold_limit / @hold_throttle (x-converge-policy has the step), QEMU's
 * rule leaves dirty-limit / the throttle alone until engaged below.
 */
void converge_start(uint64_t transferred, bool hold_limit, bool hold_throttle);
/* x-converge-policy's steps: put the vCPUs under dirty-limit now; start the throttle now. */
void converge_engage_dirty_limit(void);
void converge_engage_throttle(void);
/*
 * A dirty sync merged @new_pages dirty pages and the stream has carried
 * @transferred bytes: QEMU's rule (dirtied > throttle-trigger-threshold%
 * of sent in a period of >= 1 s, twice in a row) steps the throttle up.
 */
void converge_after_sync(uint64_t new_pages, uint64_t transferred);
/*
 * Once per >= 100 ms rate window, @bandwidth_bpms the link's measured
 * bytes per ms: with dirty-limit and the dirty ring, the vCPUs' own ring
 * counts tell the dirty rate at once, so the limit starts as soon as the
 * guest outruns the link for two seconds, without waiting for passes.
 */
void converge_tick(double bandwidth_bpms);
/* The migration ended (any outcome): the guest back to full speed. */
void converge_stop(void);
void converge_fill_info(MigrationInfo *info);

#endif

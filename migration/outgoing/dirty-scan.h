/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: the precopy page source's state (dirty-scan.c
 * has its hooks, dirty_scan_source in ram-source.h). A mode that uses the
 * source embeds one and hands it (or a state of its own that wraps it, as
 * postcopy's) to ram_select_source(); the fields are
 * dirty-scan.c's alone, all of them mig/src's, and query-migrate (main
 * thread) reads the counters, single aligned words.
 */
#ifndef MIGRATION_DIRTY_SCAN_H
#define MIGRATION_DIRTY_SCAN_H

#include <stdbool.h>
#include <stdint.h>
#include "migration/dirty/dirty.h"

typedef struct DirtyScan {
    DirtyTracker dt;
    bool tracking;              /* dt initialised (setup to cleanup) */
    int cur_block;              /* the cursor: next page to look at */
    uint64_t cur_page;

    /* dirty-pages-rate: pages merged per second over periods of >= 1 s. */
    int64_t rate_start_ns;
    uint64_t rate_start_pages;
    uint64_t dirty_pages_rate;
    int64_t last_sync_ns;       /* when the bitmaps were last synced */

    /*
     * A sync happened since the sink was last told (its new_round), so
     * the next page claimed may be a newer copy of one in flight. Told in
     * send_next because a sync may run between sections (pending), where
     * the stream has no place for what the sink puts then (multifd's
     * flush record).
     */
    bool round_open;
} DirtyScan;

/*
 * Postcopy-preempt, mig/src-rp, once the tracker is shared
 * (dirty_tracker_share): claims @page of @rb for the caller to send, or
 * false if it is not to send (mig/src has it, or the block is not
 * migrated). A page claimed either way goes once.
 */
bool dirty_scan_claim_urgent(DirtyScan *ds, RAMBlock *rb, uint64_t page);
/*
 * mig/src: bytes the guest is likely to have dirtied since the last sync
 * that the next one would add (dirty-pages-rate times the time since it).
 */
uint64_t dirty_scan_dirtied_since_sync(const DirtyScan *ds);

#endif

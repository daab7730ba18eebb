/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: a RAM page source decides which page the "ram"
 * section sends next and owns everything that decision needs: its cursor,
 * its record of what is still to send, its counters and its locking. The
 * "ram" section (ram.c) calls one source per migration, chosen by the
 * outgoing mode (outgoing.h), and never branches on which one it is.
 *
 *   dirty_scan_source      precopy: the dirty bitmaps, re-sent as the guest
 *                          writes (dirty-scan.c, over dirty.c)
 *   snapshot_ram_source    background snapshot: every page once, in 2 MiB
 *                          regions, write faults first (snapshot-ram.c)
 *   postcopy_ram_source    postcopy: the destination's page requests first,
 *                          then the dirty scan (postcopy-src.c)
 *
 * Every hook gets the source's state (@src), which the outgoing mode owns
 * and hands over with ram_select_source(); the banners below say which
 * thread calls each group (mig/src, but for cleanup and fill_info); a source
 * with helper threads says how they share it. Sources send through the
 * page sink (ram-sink.h).
 */
#ifndef MIGRATION_RAM_SOURCE_H
#define MIGRATION_RAM_SOURCE_H

#include <stdbool.h>
#include <stdint.h>
#include "qapi/qapi-types.h"
#include "ram-codec.h"
#include "ram-sink.h"

typedef struct RAMPageSource {
    const char *name;

    /* ---- mig/src, BQL held ---- */
    /* save_setup: every page starts unsent. @f is the stream (for events). */
    bool (*setup)(void *src, QEMUFile *f, Error **errp);
    /*
     * save_complete, VM stopped: make the set of pages still to send final
     * (precopy's last sync). NULL = nothing to do. 0 or -errno, with the
     * error also set on @f.
     */
    int (*final_sync)(void *src, QEMUFile *f);

    /* ---- mig/src, BQL not held (unless inside save_complete) ---- */
    /*
     * Sends what comes next (a page, or a run of pages) through @w.
     * Returns false when nothing is left to send for now; errors go to @f.
     */
    bool (*send_next)(void *src, QEMUFile *f, RAMPageWriter *w);
    /*
     * Bytes still to send; @exact: after a fresh look (precopy: a sync).
     * A failure is set on @f, so the next iteration fails the migration.
     */
    uint64_t (*pending)(void *src, QEMUFile *f, bool exact);

    /*
     * Postcopy, VM stopped: send @page of @rb now, whether it is still to
     * send or not (the destination asked for it, and the content here is
     * final). NULL: this source cannot serve requests.
     */
    void (*send_page)(void *src, QEMUFile *f, RAMPageWriter *w, RAMBlock *rb, uint64_t page);
    /*
     * Postcopy switchover, VM stopped: @fn for each run of pages still to
     * send (changed since they were sent, or never sent): the destination
     * drops what it holds of them before postcopy places them.
     */
    void (*foreach_stale)(void *src,
                          void (*fn)(void *opaque, RAMBlock *rb, uint64_t first,
                                     uint64_t npages),
                          void *opaque);
    /*
     * Whether a page waits that must go even past the rate limit (a page
     * request). NULL: never.
     */
    bool (*has_urgent)(void *src);
    /* Postcopy recovery, VM stopped: the pages set in @present are at the destination already. */
    void (*skip_pages)(void *src, RAMBlock *rb, const unsigned long *present);
    /*
     * Postcopy recovery, VM stopped, after a failure's cleanup: start
     * again with every page the destination lacks still to send. NULL:
     * this source cannot resume.
     */
    bool (*resume)(void *src, QEMUFile *f, Error **errp);

    /* ---- main thread, BQL held, after mig/src was joined ---- */
    /* Frees what setup allocated; the counters stay for query-migrate. */
    void (*cleanup)(void *src);

    /* ---- main thread, BQL held, any time ---- */
    /* query-migrate: adds the source's counters (@info->ram exists). */
    void (*fill_info)(void *src, MigrationInfo *info);
} RAMPageSource;

extern const RAMPageSource dirty_scan_source;
extern const RAMPageSource snapshot_ram_source;
extern const RAMPageSource postcopy_ram_source;

#endif

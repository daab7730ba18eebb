/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: lazy restore of a mapped-ram file (x-lazy-restore).
 * Each block's RAM is discarded and registered with userfaultfd in missing
 * mode while the stream is read; the guest then runs as soon as the device
 * state is loaded, its RAM arriving behind it:
 *
 *   "mig/lr-fault"     a missing fault: reads the page's 64 KiB
 *                      neighbourhood from the file and places it
 *                      (UFFDIO_COPY; zero pages UFFDIO_ZEROPAGE)
 *   "mig/lr-prefetch"  from the end of the load: every block in order,
 *                      2 MiB at a time, skipping what faults placed;
 *                      then unregisters, and the main loop joins both
 *
 * A page is placed atomically whoever gets there first; the other finds it
 * there (EEXIST) and moves on. If the file cannot be read (truncated,
 * an I/O error), the pages not yet placed stay missing for good: the
 * owner is told (on_fail) and stops the VM; nothing ever places a zero or
 * stale page in their stead. Ownership: the blocks are set up by mig/dst
 * before either thread reads them; the resident bitmaps and counters are
 * atomic; the latency histogram is the fault thread's.
 */
#ifndef MIGRATION_LAZY_RESTORE_H
#define MIGRATION_LAZY_RESTORE_H

#include <stdbool.h>
#include <stdint.h>
#include "qapi/qapi-types.h"

/*
 * mig/dst, the block's RAM just discarded: from now on its pages come from
 * @fd (dup'ed), the present ones at @pages_offset + page x page size.
 * Takes @present. @region_hash (copied), if not NULL: the integrity
 * record's hashes of block number @index; every 64 KiB region is checked
 * against it before it is placed, and one that does not match is never
 * placed. False with @errp set.
 */
bool lazy_restore_add_block(RAMBlock *rb, int fd, unsigned long *present,
                            uint64_t pages_offset, uint32_t index,
                            const uint64_t *region_hash, Error **errp);
/*
 * Main loop (BQL), once, when reading the file failed after the load:
 * the guest's memory can never be complete. @why says what failed.
 */
typedef void LazyRestoreFailFn(const char *why);

/*
 * mig/dst, the load is over: @ok, the prefetch starts (and the guest may
 * run), and a later failure to read the file calls @on_fail; otherwise
 * everything stops (the guest never runs).
 */
void lazy_restore_load_done(bool ok, LazyRestoreFailFn *on_fail);
/*
 * Whether reading the file failed (or the load did): the missing pages
 * stay missing for good. @why (if non-NULL) gets the reason, valid for
 * the process's life. Any thread.
 */
bool lazy_restore_failed(const char **why);
/* Whether guest RAM is still registered with the restore's userfaultfd (main thread). */
bool lazy_restore_in_progress(void);
/* query-migrate on the destination (main thread). */
void lazy_restore_fill_info(MigrationInfo *info);

#endif

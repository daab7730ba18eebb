/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: the "ram" live section. It writes the block list,
 * then pages from the page source the outgoing mode chose (ram-source.h)
 * through the page codec, within the stream's rate limit and a time budget.
 */
#ifndef MIGRATION_RAM_H
#define MIGRATION_RAM_H

#include <stdint.h>
#include "qapi/qapi-types.h"
#include "qemu/typedefs.h"

typedef struct RAMPageSource RAMPageSource;

void ram_mig_init(void);
/*
 * The page source of the next migration and its state (the mode owns it;
 * it must stay valid until the next call). The mode's init, BQL, before
 * mig/src starts.
 */
void ram_select_source(const RAMPageSource *src, void *src_state);
/*
 * Pages put into the stream by the current (or last) migration: zero
 * pages and pages sent whole or compressed (not XBZRLE deltas). mig/src,
 * or with the BQL: the next setup frees the sink that counts them.
 */
uint64_t ram_pages_sent(void);
/*
 * Of those, the pages that carried data (whole, as a delta or compressed;
 * not zero pages). Each one is a page less to send, whatever it cost on
 * the wire: the rate that drains the remaining bytes. mig/src, or with the
 * BQL.
 */
uint64_t ram_data_pages_sent(void);
/*
 * mig/dst, loadvm once the stream's configuration named mapped-ram and the
 * file checked out: the pages are in the file, not in records, and are
 * checked against @integrity (NULL: no record; it must outlive the load).
 * Until the next load's setup.
 */
typedef struct MappedRamIntegrity MappedRamIntegrity;
void ram_load_set_mapped(MappedRamIntegrity *integrity);
/*
 * Postcopy destination, mig/dst at LISTEN: from now on pages go through
 * @place(@opaque, ...) (ram-codec.h) instead of being written into guest
 * memory.
 */
void ram_load_set_placer(bool (*place)(void *opaque, RAMBlock *rb, uint64_t first, unsigned n,
                                       const uint8_t *data, Error **errp),
                         void *opaque);
/* Postcopy destination, mig/dst: a recovered stream names its first block again. */
void ram_load_postcopy_resumed(void);
/*
 * Postcopy source, mig/src at the switchover: the guest stopped here and
 * runs there; from now on no page goes as an XBZRLE delta (the destination
 * places whole pages).
 */
void ram_save_enter_postcopy(void);
/*
 * Postcopy recovery, mig/src: the section goes on in a new stream @f (its
 * START was sent long ago): the page source starts again from what the
 * destination lacks, and the first record names its block. 0 or -errno.
 */
int ram_save_resume_prepare(QEMUFile *f, Error **errp);
/* query-migrate: the section's and its source's counters into @info->ram. BQL. */
void ram_fill_info(MigrationInfo *info);
/* mig/src, after the "ram" section completed: how long its final dirty sync took (ns). */
int64_t ram_last_final_sync_ns(void);

#endif

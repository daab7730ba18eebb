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
 * file checked out: after each block list entry comes the block's header,
 * which @map_block(@opaque) reads, and the pages are in the file, not in
 * records (ram-codec.h). Until the next load's setup.
 */
void ram_load_set_map(bool (*map_block)(QEMUFile *f, RAMBlock *rb, void *opaque, Error **errp),
                      void *opaque);
/*
 * The incoming side, before mig/dst starts: what a MULTIFD_FLUSH record
 * waits for (the multifd channels placing the round), NULL if there are
 * no channels (the record is then an error). For every later load.
 */
void ram_load_set_flush(bool (*flush)(Error **errp));
/*
 * Postcopy destination, mig/dst at LISTEN: from now on pages go through
 * @place(@opaque, ...) (ram-codec.h) instead of being written into guest
 * memory.
 */
/* Postcopy advised: map zero pages as they load (RAMPageReader.map_zero). */
void ram_load_set_map_zero(bool on);
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
/*
 * The page transport (ram-sink.h's rows: records on the stream, multifd
 * channels, a mapped-ram file) of the outgoing migration, which migration.c
 * drives without knowing which it is.
 */
/* qmp_migrate (BQL): whether @uri suits the transports the capabilities ask for. */
bool ram_transport_check_uri(const char *uri, Error **errp);
/* qmp_migrate (BQL), before mig/src starts: choose this migration's transport. */
void ram_transport_select(void);
/* mig/src, right after the main stream @f opened on @uri: its own connections. */
bool ram_transport_connect(const char *uri, MigTLS *tls, QEMUFile *f, Error **errp);
/* Whether the transport has a last step after the stream's end (the guest moves only then). */
bool ram_transport_finishes(void);
/* mig/src, after the mode completed the stream: that last step, if any. */
bool ram_transport_finish(QEMUFile *f, Error **errp);
/* Any thread (cancel): blocked I/O on the transport's own connections fails at once. */
void ram_transport_shutdown(void);
/* Main thread, after mig/src was joined, before the sections' cleanup. */
void ram_transport_disconnect(void);
/* Any thread: bytes on the transport's own connections the peer has not taken. */
uint64_t ram_transport_unsent_bytes(void);
/* mig/src: sent pages drain the remaining bytes faster than their wire bytes say. */
bool ram_transport_drains_faster(void);
/* mig/src, after the "ram" section completed: how long its final dirty sync took (ns). */
int64_t ram_last_final_sync_ns(void);

#endif

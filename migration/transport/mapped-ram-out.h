/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: writing a mapped-ram file (layout in
 * mapped-ram.h). The stream's own parts (header, block list, device state)
 * go through the QEMUFile as always; each page goes to its fixed offset
 * with pwrite, from mig/src itself or, with multifd, from multifd-channels
 * writer threads ("mig/mr-w%d"), each on its own descriptor (O_DIRECT with
 * direct-io); with x-mapped-ram-integrity one writer thread even without
 * multifd, while mig/src hashes each page it hands over (the integrity
 * record, mapped-ram-integrity.h). A page always goes to the writer of its
 * 2 MiB region, and a writer writes in order, so a page sent twice
 * (precopy) lands with its last content. Contiguous pages are coalesced
 * into one write of up to a region.
 *
 * Ownership: everything here is mig/src's, except the jobs' queues (their
 * own locks), the in-flight count (inflight_lock) and the first error
 * (atomic), which the writers share.
 */
#ifndef MIGRATION_MAPPED_RAM_OUT_H
#define MIGRATION_MAPPED_RAM_OUT_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"
#include "ram-codec.h"

typedef struct MappedRamOut MappedRamOut;

/*
 * qmp_migrate (BQL), before anything is written: with direct-io, whether
 * the file under @uri takes O_DIRECT (it is created, empty, if missing).
 */
bool mapped_ram_check_uri(const char *uri, Error **errp);
/*
 * mig/src, right after @f was opened on @uri and before anything was put:
 * opens the writers. False with @errp set.
 */
bool mapped_ram_out_open(const char *uri, QEMUFile *f, Error **errp);
/* The writer of the running mapped-ram migration, or NULL. */
MappedRamOut *mapped_ram_out(void);
/* Its page map for the "ram" section's writer (ram-codec.h). */
const RAMPageMap *mapped_ram_out_map(MappedRamOut *m);
/*
 * After the stream's EOF and vmdesc were put: waits for the writers,
 * writes the bitmaps, syncs, then the completion trailer. False with
 * @errp set; the file then has no trailer.
 */
bool mapped_ram_out_finish(MappedRamOut *m, QEMUFile *f, Error **errp);
/* Main thread, after mig/src was joined: stops the writers, closes their descriptors. */
void mapped_ram_out_close(void);

#endif

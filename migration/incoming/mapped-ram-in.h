/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: reading a mapped-ram file (layout in
 * mapped-ram.h), in the incoming thread. The file is hostile input: the
 * trailer, every header, bitmap and offset is checked before a page is
 * read. Eager: the pages are read into guest RAM before the load goes on,
 * by multifd-channels reader threads ("mig/mr-r%d") with multifd, else by
 * the incoming thread. Lazy (x-lazy-restore): the block is handed to
 * lazy-restore.c, which places its pages while the guest runs.
 */
#ifndef MIGRATION_MAPPED_RAM_IN_H
#define MIGRATION_MAPPED_RAM_IN_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"
#include "migration/transport/mapped-ram-integrity.h"

/*
 * The stream's configuration named mapped-ram: @f must be a file whose
 * stream began at @stream_start (< 0: not a file) and that ends with the
 * completion trailer of that stream. With an integrity record before the
 * trailer, its stream hash is checked and the record returned in @integ
 * (NULL without one; refused without one with x-mapped-ram-integrity on).
 * @stream_end: where the stream, its vmdesc last, must end: the record's
 * start, or the trailer's without one; the loader refuses the file when it
 * does not (a footer damaged out of recognition is caught there).
 * False with @errp naming what is wrong.
 */
bool mapped_ram_in_check_file(QEMUFile *f, int64_t stream_start, MappedRamIntegrity **integ,
                              int64_t *stream_end, Error **errp);
/*
 * After @rb's entry in the block list: reads its header and bitmap, then
 * its pages (or hands them to the lazy restore), and moves @f past its
 * region. @opaque: the file's MappedRamIntegrity or NULL; with one, the
 * block must be the record's next, and each region is checked against it
 * before the guest can see it. False with @errp set; guest RAM may then be
 * half-loaded, and the guest never runs.
 */
bool mapped_ram_in_block(QEMUFile *f, RAMBlock *rb, void *opaque, Error **errp);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: the mapped-ram file layout, QEMU 9.0's. In a file
 * migration every RAMBlock's entry in the "ram" section's block list (name,
 * used length) is followed by this header, and the block owns a fixed
 * region of the file: a bitmap of the pages present (host unsigned longs,
 * as QEMU writes them), then, from the next 1 MiB boundary, every page at
 * page index x page size, whether present or not; the block list goes on
 * after the region. All offsets are absolute positions in the file.
 *
 *   be32 version (1)  be64 page size  be64 bitmap offset  be64 pages offset
 *
 * Pure layout and checks: no I/O here, so the hostile-file rules are unit
 * tested on their own (tests/unit/test-mapped-ram.c).
 */
#ifndef MIGRATION_MAPPED_RAM_H
#define MIGRATION_MAPPED_RAM_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"

#define MAPPED_RAM_HDR_VERSION 1
#define MAPPED_RAM_HDR_SIZE 28
/* A block's pages start on this boundary (QEMU's MAPPED_RAM_FILE_OFFSET_ALIGNMENT). */
#define MAPPED_RAM_FILE_OFFSET_ALIGNMENT (1ULL << 20)

/*
 * Ours, not QEMU's: the last thing a mapped-ram migration writes, after
 * every page, bitmap and the rest of the stream reached the disk
 * (fdatasync), is this trailer after the stream's vmdesc; the file ends
 * there. A restore refuses a file without it, so a snapshot that failed
 * half-way (disk full, an I/O error, a crash) is never mistaken for a good
 * one. ASCII with no NUL and no '{', so that QEMU's analyze-migration.py,
 * which finds the vmdesc from the file's last NUL byte, still finds it.
 *
 *   "MRAMDONE"   16 lowercase hex digits: the stream's start (file:PATH,offset=N)
 *
 * "MRAMDONR" instead when an integrity record (mapped-ram-integrity.h)
 * lies before the trailer: the record cannot then vanish, its footer
 * damaged, without the trailer changing too (a reader refuses MRAMDONR
 * without a record; and with MRAMDONE, a stream that does not end right
 * before the trailer).
 */
#define MAPPED_RAM_TRAILER_MAGIC "MRAMDONE"
#define MAPPED_RAM_TRAILER_MAGIC_RECORD "MRAMDONR"
#define MAPPED_RAM_TRAILER_SIZE 24

typedef struct MappedRamHeader {
    uint32_t version;
    uint64_t page_size;
    uint64_t bitmap_offset;
    uint64_t pages_offset;
} MappedRamHeader;

/* Bytes of a block's bitmap of @used_length bytes of pages. */
uint64_t mapped_ram_bitmap_size(uint64_t used_length);
/*
 * The header of a block of @used_length bytes whose header is written at
 * file position @header_pos, and in @next_pos where the block list goes on
 * after its region.
 */
void mapped_ram_layout(uint64_t header_pos, uint64_t used_length, MappedRamHeader *h,
                       uint64_t *next_pos);
void mapped_ram_put_header(uint8_t buf[MAPPED_RAM_HDR_SIZE], const MappedRamHeader *h);
/*
 * mapped_ram_parse_header: reads @buf, read from file position
 * @header_pos, for block @name of @used_length bytes in a file of
 * @file_size bytes. Hostile input: the version, the page size, and that
 * the bitmap and the pages lie after the header, in order, apart and
 * inside the file, are checked; false with @errp naming what is wrong.
 * @next_pos: where the block list goes on.
 */
bool mapped_ram_parse_header(const uint8_t buf[MAPPED_RAM_HDR_SIZE], const char *name,
                             uint64_t header_pos, uint64_t used_length, uint64_t file_size,
                             MappedRamHeader *h, uint64_t *next_pos, Error **errp);

#endif

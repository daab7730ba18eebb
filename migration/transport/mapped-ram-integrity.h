/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: the integrity record of a mapped-ram file
 * (x-mapped-ram-integrity), ours, not QEMU's. Written by the source after
 * the vmdesc and before the completion trailer; a file without it is QEMU
 * 9.0's layout plus our trailer, byte for byte.
 *
 *   ... vmdesc | HEX | "MRAMINTG" 16 hex digits: HEX's length | "MRAMDONR" ...
 *
 * (the trailer's magic says a record precedes it: mapped-ram.h).
 *
 * HEX is the record in lowercase hex (so the file's tail keeps no NUL and
 * no '{', as analyze-migration.py's vmdesc search needs). The record,
 * little-endian:
 *
 *   u32 version (1)  u32 pages per region (16)
 *   u64 stream start  u64 stream end (where HEX starts)  u64 stream hash
 *   u32 blocks, each: u8 name length, name, u64 used length,
 *                     u64 bitmap offset, u64 pages offset,
 *                     u64 region hash x ceil(used length / region)
 *   u64 XXH64 of every byte above
 *
 * The stream hash is XXH64 over the file's bytes from the stream's start
 * to its end, leaving out each block's region (bitmap offset up to pages
 * offset + used length): the header, block list, block headers, device
 * sections and vmdesc. A region hash (64 KiB, lazy restore's fault unit)
 * binds the content to its place: XXH64 of the block's index, the
 * region's index, which of its pages are present and each present page's
 * pagehash (qemu/pagehash.h), in order; so a page moved, swapped, zeroed
 * or flipped in its bitmap changes it. Encoding and checks, no I/O but
 * the stream hash's preads: unit tested and fuzzed
 * (tests/unit/test-mapped-ram-integrity.c, tests/fuzz/fuzz-mapped-integrity.c).
 */
#ifndef MIGRATION_MAPPED_RAM_INTEGRITY_H
#define MIGRATION_MAPPED_RAM_INTEGRITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <glib.h>
#include "qemu/typedefs.h"

#define MRI_VERSION 1
#define MRI_REGION_PAGES 16
#define MRI_FOOTER_MAGIC "MRAMINTG"
#define MRI_FOOTER_SIZE 24
#define MRI_MAX_BLOCKS 1024         /* far above any machine's RAM blocks */

typedef struct MriBlock {
    char *name;
    uint64_t used_length;
    uint64_t bitmap_offset;
    uint64_t pages_offset;
    uint64_t nregions;
    uint64_t *region_hash;
} MriBlock;

typedef struct MappedRamIntegrity {
    uint64_t stream_start;
    uint64_t stream_end;
    uint64_t stream_hash;
    uint32_t nblocks;
    MriBlock *blocks;
    uint32_t next_block;        /* the loader's cursor over the block list */
} MappedRamIntegrity;

/* The hash of one page's content (qemu/pagehash.h). */
uint64_t mri_page_hash(const uint8_t *page);
/*
 * Region @region of block number @block: bit i of @present says page i of
 * the region is in the file, @hash[i] its mri_page_hash (ignored when not
 * present).
 */
uint64_t mri_region_hash(uint32_t block, uint64_t region, uint32_t present,
                         const uint64_t hash[MRI_REGION_PAGES]);
/*
 * Whether region @region of block number @block matches @expect: @present
 * is the block's bitmap of @npages pages, @data the region's first page
 * (only its present pages are read).
 */
bool mri_check_region(uint32_t block, uint64_t region, const unsigned long *present,
                      uint64_t npages, const uint8_t *data, uint64_t expect);
/* Regions of a block of @used_length bytes. */
uint64_t mri_nregions(uint64_t used_length);

/* A record with @nblocks empty blocks, to fill in. */
MappedRamIntegrity *mri_new(uint32_t nblocks);
void mri_free(MappedRamIntegrity *r);
/* Sets block @i (its region hashes zero, to fill in). */
void mri_set_block(MappedRamIntegrity *r, uint32_t i, const char *name, uint64_t used_length,
                   uint64_t bitmap_offset, uint64_t pages_offset);
/* The file's tail before the trailer: HEX and the footer; @len its bytes. */
char *mri_encode(const MappedRamIntegrity *r, size_t *len);
/*
 * mri_parse_footer: the footer @buf, ending at file position @end in a
 * file whose stream starts at @stream_start. False if it is not a footer
 * (no record); otherwise true and @hex_len, checked to fit between the
 * stream's start and the footer, or 0 with @errp set when the footer is
 * there but its length is garbled or impossible.
 */
bool mri_parse_footer(const uint8_t buf[MRI_FOOTER_SIZE], uint64_t stream_start, uint64_t end,
                      uint64_t *hex_len, Error **errp);
/*
 * The most hex digits a record can have for a machine whose RAM blocks
 * have @used_length[0..@nblocks) (names at their longest), and whether the
 * footer's @hex_len stays within it: the length comes from the file, so it
 * is bounded by what our blocks could need before a byte is allocated for
 * it (the file's size is no bound: a sparse file costs nothing). False
 * with @errp set.
 */
uint64_t mri_max_hex_len(const uint64_t *used_length, uint32_t nblocks);
bool mri_check_hex_len(uint64_t hex_len, const uint64_t *used_length, uint32_t nblocks,
                       Error **errp);
/*
 * mri_decode: HEX (@len bytes), read from file position @pos. Hostile
 * input: its hash is checked first, then every count, length and offset
 * (the blocks' regions in order, apart, inside the stream). NULL with
 * @errp naming what is wrong.
 */
MappedRamIntegrity *mri_decode(const char *hex, size_t len, uint64_t pos, Error **errp);
/*
 * The ranges the stream hash covers, in order: calls @fn for each
 * [start, end) of the stream outside the blocks' regions.
 */
void mri_stream_ranges(const MappedRamIntegrity *r,
                       void (*fn)(uint64_t start, uint64_t end, void *opaque), void *opaque);
/*
 * The stream hash of the file @fd for @r's ranges (its only I/O: pread).
 * 0, or -errno when a read fails.
 */
int mri_stream_hash(const MappedRamIntegrity *r, int fd, uint64_t *hash);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(MappedRamIntegrity, mri_free)

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: the page records of the "ram" section, QEMU's
 * layout, written by every page source and read by the destination.
 *
 *   be64 (offset | flags) [counted-string block id unless CONTINUE] body
 *   ZERO: 1 fill byte    PAGE: 4096 bytes    MEM_SIZE: block list    EOS
 *   XBZRLE: u8 0x01, be16 length, the delta (xbzrle.h)
 *   MULTIFD_FLUSH: no body; a round of multifd packets ends (multifd.h)
 */
#ifndef MIGRATION_RAM_CODEC_H
#define MIGRATION_RAM_CODEC_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"

#define RAM_SAVE_FLAG_FULL      0x01
#define RAM_SAVE_FLAG_ZERO      0x02
#define RAM_SAVE_FLAG_MEM_SIZE  0x04
#define RAM_SAVE_FLAG_PAGE      0x08
#define RAM_SAVE_FLAG_EOS       0x10
#define RAM_SAVE_FLAG_CONTINUE  0x20
#define RAM_SAVE_FLAG_XBZRLE    0x40
#define RAM_SAVE_FLAG_HOOK      0x80
#define RAM_SAVE_FLAG_COMPRESS_PAGE 0x100
#define RAM_SAVE_FLAG_MULTIFD_FLUSH 0x200

#define RAM_XBZRLE_ENCODING     0x01    /* the one encoding byte of an XBZRLE record */

/*
 * mapped-ram: instead of records, every page goes to its fixed place in
 * the file (mapped-ram-out.c provides these; the pointers are its own;
 * ram-sink-mapped.c makes a sink of them).
 */
typedef struct RAMPageMap {
    /* The block list: after @rb's entry, its mapped-ram header. */
    void (*put_block)(void *opaque, QEMUFile *f, RAMBlock *rb);
    /* A page (@data NULL: zero); @data is referenced until a release_after call's fn ran. */
    void (*put_page)(void *opaque, QEMUFile *f, RAMBlock *rb, uint64_t page,
                     const uint8_t *data);
    /* @fn(@arg) once every page put so far was written (perhaps on another thread). */
    void (*release_after)(void *opaque, QEMUFile *f, void (*fn)(void *arg), void *arg);
    void *opaque;
} RAMPageMap;

/*
 * The record writer of one stream (the main one, or postcopy's preempt
 * channel): owned by the thread that puts records; query-migrate reads
 * the counters (relaxed atomics).
 */
typedef struct RAMRecordWriter {
    RAMBlock *last_block;       /* block of the previous record: CONTINUE */
    uint64_t zero_pages;        /* ZERO records put */
    uint64_t normal_pages;      /* PAGE records put */
    uint64_t xbzrle_pages;      /* XBZRLE records put */
} RAMRecordWriter;

/* Forget the previous block and the counters: a new stream starts. */
void ram_record_writer_reset(RAMRecordWriter *w);
/*
 * A PAGE record for page @page of @rb with the content at @data, or a
 * ZERO record if @data is NULL. @data is referenced, not copied: it must
 * stay valid and unchanged until the next qemu_fflush().
 */
void ram_put_record(RAMRecordWriter *w, QEMUFile *f, RAMBlock *rb, uint64_t page,
                    const uint8_t *data);
/* The record kinds the XBZRLE sender (ram-xbzrle.c) puts: a ZERO record ... */
void ram_put_zero_page(RAMRecordWriter *w, QEMUFile *f, RAMBlock *rb, uint64_t page);
/* ... a PAGE record whose content is copied into the stream at once ... */
void ram_put_page_copy(RAMRecordWriter *w, QEMUFile *f, RAMBlock *rb, uint64_t page,
                       const uint8_t *data);
/* ... and an XBZRLE record carrying the delta @enc[0..len), copied. */
void ram_put_xbzrle(RAMRecordWriter *w, QEMUFile *f, RAMBlock *rb, uint64_t page,
                    const uint8_t *enc, size_t len);
/*
 * MEM_SIZE: the total and every RAMBlock's name and length, each followed
 * by @put_block's part if it is not NULL, then EOS.
 */
/*
 * The block list; @addrs (x-ignore-shared on): each block's mr_addr
 * follows its length, as QEMU's streams have it.
 */
void ram_put_block_list_with(QEMUFile *f, bool addrs,
                             void (*put_block)(void *opaque, QEMUFile *f, RAMBlock *rb),
                             void *opaque);
static inline void ram_put_block_list(QEMUFile *f)
{
    ram_put_block_list_with(f, false, NULL, NULL);
}
void ram_put_eos(QEMUFile *f);
/* MULTIFD_FLUSH: the destination places every multifd page sent so far before it reads on. */
void ram_put_multifd_flush(QEMUFile *f);

/* The receiving side. Owned by the incoming thread. */
typedef struct RAMPageReader {
    RAMBlock *last_block;       /* for CONTINUE */
    bool have_sizes;            /* MEM_SIZE seen */
    /*
     * A MULTIFD_FLUSH record: wait until the multifd channels placed the
     * round (multifd-recv.c). NULL: multifd is off, and the record is an error.
     */
    bool (*multifd_flush)(Error **errp);
    /*
     * Postcopy, after LISTEN: places @n contiguous pages from @first of
     * @rb atomically instead of writing guest memory, which may now be
     * missing (postcopy-dst.c); @data NULL = zero pages. NULL: precopy.
     */
    bool (*place)(void *opaque, RAMBlock *rb, uint64_t first, unsigned n, const uint8_t *data,
                  Error **errp);
    void *place_opaque;
    /*
     * Postcopy advised, before LISTEN: a zero page that is already zero is
     * mapped (read once) instead of left absent, so that the guest never
     * faults on it after the switchover. A source sends each page once (a
     * QEMU source ignores a request for a page it sent), so a page left
     * absent would never come.
     */
    bool map_zero;
    /*
     * Postcopy: the run of contiguous pages read but not placed yet, so
     * that one call places many. Placed before the reader could wait for
     * input, and whenever it returns.
     */
    uint8_t *stage;             /* RAM_STAGE_PAGES pages, allocated at first use */
    RAMBlock *stage_rb;
    uint64_t stage_first;
    unsigned stage_n;
    bool stage_zero;            /* the run is zero pages (stage holds no data) */
    /*
     * mapped-ram stream: after each block list entry comes the block's
     * header, and its pages are in the file, not in records (set by ram.c
     * from the stream's configuration), with @map_opaque. NULL: records.
     */
    bool (*map_block)(QEMUFile *f, RAMBlock *rb, void *opaque, Error **errp);
    void *map_opaque;
    /*
     * x-ignore-shared is on (set after ram_reader_reset): the block list
     * carries addresses, and the blocks shared by name are left out.
     */
    bool ignore_shared;
    /*
     * A live update (a cpr mode, which implies ignore_shared): every block
     * with shared memory and an fd was handed over, not only files.
     */
    bool cpr;
    /* x-ignore-shared: the blocks some page record named (a set; NULL until the first). */
    GHashTable *paged;
} RAMPageReader;

#define RAM_STAGE_PAGES 32

/* Frees what the last load used and starts clean. */
void ram_reader_reset(RAMPageReader *r);
/*
 * ram_load_records: reads records up to EOS into guest RAM. Hostile input:
 * every block name, length and offset is checked before a byte is written.
 * Returns 0 or -errno with @errp set.
 */
int ram_load_records(RAMPageReader *r, QEMUFile *f, Error **errp);
/*
 * x-ignore-shared, at the stream's end: a source sends every page of each
 * block it does not leave out (zero pages too), so a block that no record
 * named, and that this side does not leave out, was left out by the source
 * as shared memory which is not shared here: its pages would never come.
 * False with @errp set then. Unchecked (true) where pages arrive outside
 * the records: mapped-ram, multifd, postcopy.
 */
bool ram_load_check_ignored(RAMPageReader *r, Error **errp);

#endif

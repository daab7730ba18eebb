/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: a page sink is where the "ram" section's pages go
 * once a page source (ram-source.h) picked them. Each way a page can leave
 * is one row of RAMSinkOps and one file:
 *
 *   ram_records_sink   records on the main stream, XBZRLE as its optional
 *                      encoder (ram-sink-records.c)
 *   ram_multifd_sink   packets on the multifd channels; single pages and
 *                      known-zero pages as records (ram-sink-multifd.c)
 *   ram_mapped_sink    each page at its offset in a mapped-ram file
 *                      (ram-sink-mapped.c)
 *
 * A row is also its transport: the connections or file it needs besides
 * the main stream, their checks, connection, last step and teardown
 * (the hooks under "the transport"). One row is chosen when a migration
 * starts (ram_sink_select(), by the capabilities); migration.c drives its
 * transport through ram.h's ram_transport_*(), the "ram" section opens
 * its sink at setup, and the sources and modes put pages through
 * RAMPageWriter without knowing which it is. A sink instance outlives its
 * migration (query-migrate shows its counters after the end) until the
 * next setup frees it.
 *
 * A new transport (RDMA-like, say) is one file that fills a RAMSinkOps
 * and one row in ram-sink.c's table.
 */
#ifndef MIGRATION_RAM_SINK_H
#define MIGRATION_RAM_SINK_H

#include <stdbool.h>
#include <stdint.h>
#include "qapi/qapi-types.h"
#include "qemu/typedefs.h"
#include "migration/qemu-file.h"
#include "ram-codec.h"

typedef struct XbzrleSender XbzrleSender;

/*
 * Pages a sink put so far, for the bandwidth and pages-per-second figures.
 * @pages leaves out XBZRLE deltas (as it always did), so with XBZRLE
 * @data_pages may exceed it.
 */
typedef struct RAMSinkCounts {
    uint64_t pages;             /* zero pages and pages sent whole or compressed */
    uint64_t data_pages;        /* pages whose content was sent (whole, compressed or delta) */
} RAMSinkCounts;

/* What the "ram" section's setup knows when it opens a sink. */
typedef struct RAMSinkConfig {
    uint64_t xbzrle_cache_size; /* XBZRLE's cache for the records sink; 0: no XBZRLE */
} RAMSinkConfig;

/*
 * Life of an instance: open -> put_* / new_round / drain / release_after
 * (mig/src) -> close (main thread, after mig/src) -> free (the next setup).
 * After close only counts, fill_info and free may be called (and, should a
 * resumable mode ever use the sink again after a failure, restart and the
 * put hooks of a sink that still has a transport). open, put_page, close,
 * counts, fill_info and free are mandatory; every other hook may be NULL.
 */
typedef struct RAMSinkOps {
    const char *name;

    /*
     * ---- the transport: process-wide, outside the "ram" section ----
     * Every hook may be NULL: nothing to check, connect, finish, stop.
     */
    /*
     * qmp_migrate (BQL), before anything connects: whether @uri and the
     * capabilities suit this row's transport. Every row's check runs,
     * selected or not (a rule may forbid a capability's combination).
     */
    bool (*check_uri)(const char *uri, Error **errp);
    /*
     * mig/src, right after the main stream @f opened on @uri: the row's own
     * connections, each through @tls (NULL: plaintext), as the stream's.
     */
    bool (*connect)(const char *uri, MigTLS *tls, QEMUFile *f, Error **errp);
    /*
     * mig/src, after the stream's end went out: the last step that can
     * fail (mapped-ram's bitmaps and trailer). With one, the destination
     * has the guest only after it: the source commits then.
     */
    bool (*finish)(QEMUFile *f, Error **errp);
    /* Any thread (cancel): blocked I/O on the row's own connections fails at once. */
    void (*shutdown)(void);
    /* Main thread, after mig/src was joined, before the sections' cleanup: stop and close. */
    void (*disconnect)(void);
    /* Any thread: bytes written on the row's own connections that the peer has not taken. */
    uint64_t (*unsent_bytes)(void);
    /* mig/src: sent pages drain the remaining bytes faster than their bytes on the wire say. */
    bool (*drains_faster)(void);

    /*
     * mig/src, "ram" save_setup, BQL held: a new instance over the
     * transport this migration connected. NULL with @errp set.
     */
    void *(*open)(QEMUFile *f, const RAMSinkConfig *cfg, Error **errp);
    /* ---- mig/src; @sink is the instance open() returned ---- */
    /*
     * After the block list entry of @rb (the mapped-ram header). NULL: the
     * entry is name and length only.
     */
    void (*put_block)(void *sink, QEMUFile *f, RAMBlock *rb);
    /*
     * Page @page of @rb with content @data (NULL: a zero page). @data is
     * referenced: it stays valid and unchanged until release_after's @fn
     * ran. Always a single page the caller claimed: a postcopy request or
     * a snapshot run goes here even when the sink batches words.
     */
    void (*put_page)(void *sink, QEMUFile *f, RAMBlock *rb, uint64_t page,
                     const uint8_t *data);
    /*
     * The pages @bits of bitmap word @word of @rb, claimed at once by the
     * dirty scan; @zero: those of them known to be zero without a read
     * (already 0 when zero-page-detection is none; detecting zero pages by
     * reading them, as legacy detection does, is the sink's job). NULL: the
     * sink wants single pages, and the scan claims one at a time.
     */
    void (*put_word)(void *sink, QEMUFile *f, RAMBlock *rb, uint64_t word, unsigned long bits,
                     unsigned long zero);
    /*
     * Whether put_word may be used now (defensive: a sink whose channels
     * were closed takes single pages again). NULL: whenever put_word is
     * there.
     */
    bool (*takes_words)(void *sink);
    /*
     * The dirty bitmaps were synced: a page claimed from now on may be a
     * newer copy of one still in flight, which must not land before it.
     * The dirty scan calls it before it puts the next page it claimed
     * (single pages put otherwise, postcopy's requests and the snapshot's,
     * never overlap a copy in flight). False (error set on @f) if the sink
     * failed. NULL: pages land in the order they are put.
     */
    bool (*new_round)(void *sink, QEMUFile *f);
    /*
     * The guest still runs, and the mode is about to decide on a
     * switchover (ram.c's exact pending): finish the work in flight now
     * (pages the sink holds or is still encoding and writing), without
     * ending the round, so that the stop's drain waits only for the last
     * pages and not for this tail. False (error set on @f) if the sink
     * failed. NULL: nothing is in flight outside the stream.
     */
    bool (*settle)(void *sink, QEMUFile *f);
    /*
     * Completion, before the device state: everything put so far is
     * placed at the destination before it reads on. False with the error
     * set on @f. NULL: nothing to wait for (records are in the stream; a
     * mapped-ram file's writers are waited for by mapped_ram_out_finish).
     */
    bool (*drain)(void *sink, QEMUFile *f);
    /*
     * @fn(@arg) once the memory of every page put so far may change. NULL:
     * at once after a flush of @f (the records referenced it).
     */
    void (*release_after)(void *sink, QEMUFile *f, void (*fn)(void *arg), void *arg);
    /*
     * Postcopy recovery: the stream goes on over a new connection, which
     * knows nothing the old one said (the block of the last record). NULL:
     * nothing to forget.
     */
    void (*restart)(void *sink);
    /* Postcopy begins: stop using what the destination cannot follow now (XBZRLE). NULL: nothing. */
    void (*enter_postcopy)(void *sink);
    /* ---- main thread, after mig/src was joined ---- */
    /* save_cleanup: let go of the transport; the counters stay. */
    void (*close)(void *sink);

    /* ---- main thread, BQL held, or mig/src; counters are relaxed atomics ---- */
    void (*counts)(void *sink, RAMSinkCounts *c);
    /* query-migrate: this sink's part of info->ram (which exists) and its own blocks. */
    void (*fill_info)(void *sink, MigrationInfo *info);
    /* The next setup, or never: frees the instance. */
    void (*free)(void *sink);
} RAMSinkOps;

extern const RAMSinkOps ram_records_sink;
extern const RAMSinkOps ram_multifd_sink;
extern const RAMSinkOps ram_mapped_sink;

/* What the page sources and the modes hold: a sink row and its instance. */
typedef struct RAMPageWriter {
    const RAMSinkOps *ops;
    void *sink;
} RAMPageWriter;

/* qmp_migrate (BQL): the row this migration's capabilities select (ram-sink.c's table). */
const RAMSinkOps *ram_sink_select(void);
/* qmp_migrate (BQL): every row's check_uri, in the table's order. */
bool ram_sink_check_uri(const char *uri, Error **errp);
/*
 * mig/src, "ram" save_setup, BQL held: frees @w's last sink and opens a
 * new one of row @ops on @f, whose transport connected. False with @errp set.
 */
bool ram_sink_open(RAMPageWriter *w, const RAMSinkOps *ops, QEMUFile *f,
                   const RAMSinkConfig *cfg, Error **errp);
/* Frees @w's instance (if any) and clears @w. */
static inline void ram_sink_free(RAMPageWriter *w)
{
    if (w->sink) {
        w->ops->free(w->sink);
    }
    w->ops = NULL;
    w->sink = NULL;
}

/* A records sink with @enc (or NULL) as its encoder; the sink owns @enc. */
void *ram_records_sink_new(XbzrleSender *enc);

/* @w sends records on whatever stream it is given (tests, and streams of their own). */
static inline void ram_writer_init_records(RAMPageWriter *w, XbzrleSender *enc)
{
    w->ops = &ram_records_sink;
    w->sink = ram_records_sink_new(enc);
}

/* Whether the dirty scan claims whole words for @w's put_word, or single pages. */
static inline bool ram_writer_takes_words(RAMPageWriter *w)
{
    return w->ops->put_word && (!w->ops->takes_words || w->ops->takes_words(w->sink));
}

static inline void ram_put_page(RAMPageWriter *w, QEMUFile *f, RAMBlock *rb, uint64_t page,
                                const uint8_t *data)
{
    w->ops->put_page(w->sink, f, rb, page, data);
}

/*
 * The block list (MEM_SIZE), with the sink's part after each block, then
 * EOS; @addrs: x-ignore-shared's addresses too (ram_put_block_list_with).
 */
static inline void ram_put_block_list_sink(RAMPageWriter *w, QEMUFile *f, bool addrs)
{
    ram_put_block_list_with(f, addrs, w->ops->put_block, w->sink);
}

/* @fn(@arg) once the memory of every page put through @w so far may change. */
static inline void ram_writer_release_after(RAMPageWriter *w, QEMUFile *f,
                                            void (*fn)(void *arg), void *arg)
{
    if (w->ops->release_after) {
        w->ops->release_after(w->sink, f, fn, arg);
        return;
    }
    qemu_fflush(f);
    fn(arg);
}

#endif

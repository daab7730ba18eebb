/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: the sending side of XBZRLE. A cache holds the
 * content of pages as last sent, direct-mapped by host page address. From
 * the first page on, a page that is not cached is sent whole and cached,
 * and a cached page goes as a delta against its copy (xbzrle.h), whole if
 * the delta does not fit a page, or not at all if it did not change.
 * Caching from the first round is what lets the pages the guest dirties
 * during it go as deltas in the second; QEMU starts caching only in the
 * second round, so it sends those pages whole twice. The price is a copy
 * of each page sent (into the cache, and into the stream) instead of a
 * send by reference: XBZRLE is for links slower than memcpy.
 *
 * The invariant the destination relies on: a cached copy is exactly what
 * the destination holds for that page. So every page sent while cached
 * updates the cache, a ZERO record drops the page from it, and whatever is
 * sent for a cached page is copied into the stream, never referenced
 * (its slot may be reused before the next flush).
 *
 * Owned by mig/src; query-migrate reads the counters (single words).
 */
#ifndef MIGRATION_RAM_XBZRLE_H
#define MIGRATION_RAM_XBZRLE_H

#include <stdbool.h>
#include <stdint.h>
#include "qapi/qapi-types.h"
#include "ram-codec.h"

typedef struct XbzrleSender XbzrleSender;

/*
 * @cache_size: bytes, a power of two of at least a page (the parameter's
 * check). NULL with @errp set if the host cannot allocate it.
 */
XbzrleSender *xbzrle_sender_new(uint64_t cache_size, Error **errp);
/* No more pages will come for a while (postcopy): stop faulting the cache in. */
void xbzrle_sender_stop_prefault(XbzrleSender *x);
/* Frees the cache (end of the migration); the counters stay for query-migrate. */
void xbzrle_sender_drop_cache(XbzrleSender *x);
void xbzrle_sender_free(XbzrleSender *x);

/*
 * Sends page @page of @rb, whose content is @data (NULL: a zero page), as
 * described above, as records through @w: what the records sink
 * (ram-sink-records.c) does with each page when XBZRLE is its encoder.
 */
void xbzrle_put_page(XbzrleSender *x, RAMRecordWriter *w, QEMUFile *f, RAMBlock *rb,
                     uint64_t page, const uint8_t *data);

/* query-migrate's xbzrle-cache. */
XBZRLECacheStats *xbzrle_sender_stats(const XbzrleSender *x);

#endif

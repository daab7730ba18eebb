/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The records sink (ram-sink.h): every page is a record on the stream it
 * is put on, sent by reference; with XBZRLE as its encoder, every page
 * goes through the encoder instead (ram-xbzrle.h says why each is then
 * copied). Everything is mig/src's; query-migrate reads the counters.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "system/memory.h"
#include "migration/qemu-file.h"
#include "ram-codec.h"
#include "ram-sink.h"
#include "ram-xbzrle.h"

typedef struct RAMRecordsSink {
    RAMRecordWriter rec;        /* mig/src; counters read by query-migrate */
    /*
     * mig/src: the encoder while pages go through it. Once postcopy began
     * it is parked (the destination places pages whole then), and its
     * counters are still shown until the next setup frees both.
     */
    XbzrleSender *enc;
    XbzrleSender *parked;
} RAMRecordsSink;

void *ram_records_sink_new(XbzrleSender *enc)
{
    RAMRecordsSink *s = g_new0(RAMRecordsSink, 1);

    s->enc = enc;
    return s;
}

static void *records_open(QEMUFile *f, const RAMSinkConfig *cfg, Error **errp)
{
    XbzrleSender *enc = NULL;

    if (cfg->xbzrle_cache_size) {
        enc = xbzrle_sender_new(cfg->xbzrle_cache_size, errp);
        if (!enc) {
            return NULL;
        }
    }
    return ram_records_sink_new(enc);
}

static void records_put_page(void *sink, QEMUFile *f, RAMBlock *rb, uint64_t page,
                             const uint8_t *data)
{
    RAMRecordsSink *s = sink;

    /* With XBZRLE every page must go through the encoder, or its cache goes stale. */
    if (s->enc) {
        xbzrle_put_page(s->enc, &s->rec, f, rb, page, data);
    } else {
        ram_put_record(&s->rec, f, rb, page, data);
    }
}

static void records_enter_postcopy(void *sink)
{
    RAMRecordsSink *s = sink;

    if (s->enc) {
        xbzrle_sender_stop_prefault(s->enc);
        s->parked = s->enc;
        s->enc = NULL;
    }
}

static void records_restart(void *sink)
{
    RAMRecordsSink *s = sink;

    s->rec.last_block = NULL;
}

static void records_close(void *sink)
{
    RAMRecordsSink *s = sink;

    /* The cache is the big part; the counters stay for query-migrate. */
    if (s->enc || s->parked) {
        xbzrle_sender_drop_cache(s->enc ?: s->parked);
    }
}

static void records_counts(void *sink, RAMSinkCounts *c)
{
    RAMRecordsSink *s = sink;
    uint64_t normal = __atomic_load_n(&s->rec.normal_pages, __ATOMIC_RELAXED);

    c->pages = __atomic_load_n(&s->rec.zero_pages, __ATOMIC_RELAXED) + normal;
    c->data_pages = normal + __atomic_load_n(&s->rec.xbzrle_pages, __ATOMIC_RELAXED);
}

static void records_fill_info(void *sink, MigrationInfo *info)
{
    RAMRecordsSink *s = sink;
    uint64_t normal = __atomic_load_n(&s->rec.normal_pages, __ATOMIC_RELAXED);

    info->ram->duplicate = __atomic_load_n(&s->rec.zero_pages, __ATOMIC_RELAXED);
    info->ram->normal = normal;
    info->ram->normal_bytes = normal * TARGET_PAGE_SIZE;
    if (s->enc || s->parked) {
        info->xbzrle_cache = xbzrle_sender_stats(s->enc ?: s->parked);
    }
}

static void records_free(void *sink)
{
    RAMRecordsSink *s = sink;

    xbzrle_sender_free(s->enc ?: s->parked);
    g_free(s);
}

const RAMSinkOps ram_records_sink = {
    .name = "records",
    .open = records_open,
    .put_page = records_put_page,
    .enter_postcopy = records_enter_postcopy,
    .restart = records_restart,
    .close = records_close,
    .counts = records_counts,
    .fill_info = records_fill_info,
    .free = records_free,
};

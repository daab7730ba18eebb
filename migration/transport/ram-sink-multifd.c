/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The multifd sink (ram-sink.h): the dirty scan's claimed words go as
 * packets on the channels (multifd-send.h), which read the pages later;
 * a round ends after every dirty sync, so no page's older copy can land
 * after its newer one. Pages that need no channel go as records on the
 * main stream: single pages put outside the dirty scan's words and pages
 * known to be zero. Everything is mig/src's; query-migrate reads the counters.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "qemu/bufferiszero.h"
#include "system/memory.h"
#include "migration/qemu-file.h"
#include "multifd.h"
#include "multifd-send.h"
#include "migration/core/options.h"
#include "ram-codec.h"
#include "ram-sink.h"

/* ---- the transport: the channels (multifd-send.h) ---- */

/* exec:, fd: and (without mapped-ram) file: carry one stream: no channels can connect. */
static bool multifd_check_uri(const char *uri, Error **errp)
{
    if (migrate_multifd() && !g_str_has_prefix(uri, "tcp:") && !g_str_has_prefix(uri, "unix:") &&
        !(migrate_mapped_ram() && g_str_has_prefix(uri, "file:"))) {
        error_setg(errp, "multifd needs a tcp: or unix: URI (or a file: one with mapped-ram), "
                   "not '%s'", uri);
        return false;
    }
    return true;
}

/* The channels connect after the main stream, as QEMU's do. */
static bool multifd_connect(const char *uri, QEMUFile *f, Error **errp)
{
    return multifd_send_setup(uri, errp) != NULL;
}

/* Compressed pages drain the remaining bytes faster than they fill the link. */
static bool multifd_drains_faster(void)
{
    return migrate_multifd_compression() != MULTIFD_COMPRESSION_NONE;
}

/* ---- the sink ---- */

typedef struct RAMMultifdSink {
    RAMRecordWriter rec;        /* mig/src: the main stream's records */
    MultifdSender *ms;          /* mig/src, from open to close */
} RAMMultifdSink;

static void *multifd_sink_open(QEMUFile *f, const RAMSinkConfig *cfg, Error **errp)
{
    RAMMultifdSink *s = g_new0(RAMMultifdSink, 1);

    /* The channels connected before the "ram" section was set up (migration.c). */
    s->ms = multifd_sender();
    assert(s->ms);
    return s;
}

static void multifd_sink_put_page(void *sink, QEMUFile *f, RAMBlock *rb, uint64_t page,
                                  const uint8_t *data)
{
    RAMMultifdSink *s = sink;

    ram_put_record(&s->rec, f, rb, page, data);
}

static void multifd_sink_put_word(void *sink, QEMUFile *f, RAMBlock *rb, uint64_t word,
                                  unsigned long bits, unsigned long zero)
{
    RAMMultifdSink *s = sink;
    bool legacy = migrate_zero_page_detection() == ZERO_PAGE_DETECTION_LEGACY;

    while (bits) {
        uint64_t p = word * BITS_PER_LONG + __builtin_ctzl(bits);
        unsigned long bit = bits & -bits;

        bits &= bits - 1;
        /*
         * A page the kernel never populated costs a 9-byte record here;
         * in a packet it would cost a channel hand-off, a write and a read
         * per 128 of them, for nothing to look at.
         */
        if ((zero & bit) ||
            (legacy && buffer_is_zero(rb->host + (p << TARGET_PAGE_BITS), TARGET_PAGE_SIZE))) {
            ram_put_zero_page(&s->rec, f, rb, p);
        } else {
            multifd_send_queue_page(s->ms, f, rb, p);
        }
    }
}

/*
 * Defensive: after close (the channels were joined) nothing may use them.
 * No mode uses a closed sink today (postcopy, the one that resumes, does
 * not take multifd); should one, pages would go one at a time as records
 * with no round to end, as the records sink sends them.
 */
static bool multifd_sink_takes_words(void *sink)
{
    RAMMultifdSink *s = sink;

    return s->ms != NULL;
}

static bool multifd_sink_new_round(void *sink, QEMUFile *f)
{
    RAMMultifdSink *s = sink;

    return !s->ms || multifd_send_sync(s->ms, f, false);
}

static bool multifd_sink_drain(void *sink, QEMUFile *f)
{
    RAMMultifdSink *s = sink;

    /* Every page in the channels must be placed before the device state loads. */
    return !s->ms || multifd_send_sync(s->ms, f, true);
}

static void multifd_sink_restart(void *sink)
{
    RAMMultifdSink *s = sink;

    s->rec.last_block = NULL;
}

static void multifd_sink_close(void *sink)
{
    RAMMultifdSink *s = sink;

    /* migration.c stops and joins the channels; their counters stay in multifd-send.c. */
    s->ms = NULL;
}

static void multifd_sink_counts(void *sink, RAMSinkCounts *c)
{
    RAMMultifdSink *s = sink;
    uint64_t normal = __atomic_load_n(&s->rec.normal_pages, __ATOMIC_RELAXED);
    MultifdSendStats m;

    multifd_send_stats(&m);
    c->pages = __atomic_load_n(&s->rec.zero_pages, __ATOMIC_RELAXED) + normal +
               m.zero_pages + m.normal_pages;
    c->data_pages = normal + m.normal_pages;
}

static void multifd_sink_fill_info(void *sink, MigrationInfo *info)
{
    RAMMultifdSink *s = sink;
    uint64_t normal = __atomic_load_n(&s->rec.normal_pages, __ATOMIC_RELAXED);
    MultifdSendStats m;

    multifd_send_stats(&m);
    normal += m.normal_pages;
    info->ram->duplicate = __atomic_load_n(&s->rec.zero_pages, __ATOMIC_RELAXED) + m.zero_pages;
    info->ram->multifd_bytes = m.bytes;
    info->ram->normal = normal;
    info->ram->normal_bytes = normal * TARGET_PAGE_SIZE;
}

static void multifd_sink_free(void *sink)
{
    g_free(sink);
}

const RAMSinkOps ram_multifd_sink = {
    .name = "multifd",
    .check_uri = multifd_check_uri,
    .connect = multifd_connect,
    .shutdown = multifd_send_shutdown,
    .disconnect = multifd_send_cleanup,
    .unsent_bytes = multifd_send_unsent_bytes,
    .drains_faster = multifd_drains_faster,
    .open = multifd_sink_open,
    .put_page = multifd_sink_put_page,
    .put_word = multifd_sink_put_word,
    .takes_words = multifd_sink_takes_words,
    .new_round = multifd_sink_new_round,
    .drain = multifd_sink_drain,
    .restart = multifd_sink_restart,
    .close = multifd_sink_close,
    .counts = multifd_sink_counts,
    .fill_info = multifd_sink_fill_info,
    .free = multifd_sink_free,
};

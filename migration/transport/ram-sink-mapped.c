/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The mapped-ram sink (ram-sink.h): each page goes to its fixed offset in
 * the file through mapped-ram-out.c's writers, a zero page is a clear bit
 * in the block's bitmap, and a page's memory may change only once its
 * write is done. Everything is mig/src's; query-migrate reads the counters.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "system/memory.h"
#include "migration/qemu-file.h"
#include "mapped-ram-out.h"
#include "multifd.h"
#include "migration/core/options.h"
#include "ram-codec.h"
#include "ram-sink.h"

/* ---- the transport: the file's writers (mapped-ram-out.h) ---- */

static bool mapped_check_uri(const char *uri, Error **errp)
{
    if (!mapped_ram_check_uri(uri, errp)) {
        return false;
    }
    if (migrate_mapped_ram() && migrate_multifd() &&
        migrate_multifd_compression() != MULTIFD_COMPRESSION_NONE) {
        error_setg(errp, "Mapped-ram migration is incompatible with multifd compression");
        return false;
    }
    return true;
}

/* The writers open the file by its path, beside the stream's own descriptor. */
/* A file: mig_tls_new() refused tls-creds for it already. */
static bool mapped_connect(const char *uri, MigTLS *tls, QEMUFile *f, Error **errp)
{
    return mapped_ram_out_open(uri, f, errp);
}

/* The file is complete once its pages are on disk and its trailer written. */
static bool mapped_finish(QEMUFile *f, Error **errp)
{
    return mapped_ram_out_finish(mapped_ram_out(), f, errp);
}

/* ---- the sink ---- */

typedef struct RAMMappedSink {
    RAMPageMap map;             /* mapped-ram-out.c's, copied at open; read-only */
    uint64_t zero_pages;        /* mig/src; relaxed atomics */
    uint64_t data_pages;
} RAMMappedSink;

static void *mapped_sink_open(QEMUFile *f, const RAMSinkConfig *cfg, Error **errp)
{
    RAMMappedSink *s = g_new0(RAMMappedSink, 1);

    /* The writers opened with the stream (migration.c), before the "ram" section. */
    assert(mapped_ram_out());
    s->map = *mapped_ram_out_map(mapped_ram_out());
    return s;
}

static void mapped_sink_put_block(void *sink, QEMUFile *f, RAMBlock *rb)
{
    RAMMappedSink *s = sink;

    s->map.put_block(s->map.opaque, f, rb);
}

static void mapped_sink_put_page(void *sink, QEMUFile *f, RAMBlock *rb, uint64_t page,
                                 const uint8_t *data)
{
    RAMMappedSink *s = sink;
    uint64_t *c = data ? &s->data_pages : &s->zero_pages;

    /* Not after close: the writers are gone (see ram-sink.h's life of an instance). */
    assert(s->map.put_page);
    s->map.put_page(s->map.opaque, f, rb, page, data);
    __atomic_store_n(c, *c + 1, __ATOMIC_RELAXED);
}

static void mapped_sink_release_after(void *sink, QEMUFile *f, void (*fn)(void *arg), void *arg)
{
    RAMMappedSink *s = sink;

    s->map.release_after(s->map.opaque, f, fn, arg);
}

static void mapped_sink_counts(void *sink, RAMSinkCounts *c)
{
    RAMMappedSink *s = sink;

    c->data_pages = __atomic_load_n(&s->data_pages, __ATOMIC_RELAXED);
    c->pages = c->data_pages + __atomic_load_n(&s->zero_pages, __ATOMIC_RELAXED);
}

static void mapped_sink_fill_info(void *sink, MigrationInfo *info)
{
    RAMMappedSink *s = sink;
    uint64_t normal = __atomic_load_n(&s->data_pages, __ATOMIC_RELAXED);

    info->ram->duplicate = __atomic_load_n(&s->zero_pages, __ATOMIC_RELAXED);
    info->ram->normal = normal;
    info->ram->normal_bytes = normal * TARGET_PAGE_SIZE;
}

static void mapped_sink_close(void *sink)
{
    RAMMappedSink *s = sink;

    /* migration.c closes the writers; nothing may call into them through here any more. */
    memset(&s->map, 0, sizeof(s->map));
}

static void mapped_sink_free(void *sink)
{
    g_free(sink);
}

const RAMSinkOps ram_mapped_sink = {
    .name = "mapped-ram",
    .check_uri = mapped_check_uri,
    .connect = mapped_connect,
    .finish = mapped_finish,
    /* Its writers may still read the page source's buffers: they stop before its cleanup. */
    .disconnect = mapped_ram_out_close,
    .open = mapped_sink_open,
    .put_block = mapped_sink_put_block,
    .put_page = mapped_sink_put_page,
    .release_after = mapped_sink_release_after,
    .close = mapped_sink_close,
    .counts = mapped_sink_counts,
    .fill_info = mapped_sink_fill_info,
    .free = mapped_sink_free,
};

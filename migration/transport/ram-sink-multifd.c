/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The multifd transport and sink row (ram-sink.h): the channels of the
 * running migration connect after the main stream, the sink's instance
 * lives from the "ram" section's set-up to its end, and query-migrate
 * reads the counters, which outlive the channels. The page hooks are in
 * multifd-send.c, next to the batches they fill, so a dirty page crosses
 * the multifd sender as one file.
 *
 * The global API of multifd-send.h works on the sender of the running
 * migration, kept here; the instance API (multifd_sender_*) needs none
 * of it.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/tsan.h"
#include "system/memory.h"
#include "migration/qemu-file.h"
#include "channel.h"
#include "multifd.h"
#include "multifd-send.h"
#include "migration/core/options.h"
#include "ram-codec.h"
#include "ram-sink.h"
#include "tls.h"

typedef struct MultifdSendCurrent {
    GMutex lock;                /* current.lock, before any ms->lock */
    /* lock: setup (mig/src) sets it, cleanup (main thread) clears it; read by any thread. */
    MultifdSender *ms;
    /* lock: cancel came, even before setup; it belongs to this migration until cleanup. */
    bool shut_down;
    /* lock: the counters of the last sender, kept by cleanup for query-migrate. */
    MultifdSendStats last;
} MultifdSendCurrent;

/* The process's one running multifd migration (see above for each field's owner). */
static MultifdSendCurrent current;

static void current_lock(void)
{
    tsan_g_mutex_lock(&current.lock);
}

static void current_unlock(void)
{
    tsan_g_mutex_unlock(&current.lock);
}

MultifdSender *multifd_sender(void)
{
    MultifdSender *ms;

    current_lock();
    ms = current.ms;
    current_unlock();
    return ms;
}

void multifd_send_stats(MultifdSendStats *st)
{
    current_lock();
    if (current.ms) {
        multifd_sender_stats(current.ms, st);
    } else {
        *st = current.last;
    }
    current_unlock();
}

MultifdSender *multifd_send_setup(const char *uri, MigTLS *tls, Error **errp)
{
    MultifdSender *ms;

    if (!g_str_has_prefix(uri, "tcp:") && !g_str_has_prefix(uri, "unix:")) {
        error_setg(errp, "multifd needs a tcp: or unix: URI, not '%s'", uri);
        return NULL;
    }
    current_lock();
    /* The counters of this migration start at zero from here. */
    memset(&current.last, 0, sizeof(current.last));
    current_unlock();
    ms = multifd_sender_new(errp);
    if (!ms) {
        return NULL;
    }
    current_lock();
    current.ms = ms;
    if (current.shut_down) {
        multifd_sender_shutdown(ms);
    }
    current_unlock();
    for (int i = 0; i < multifd_sender_channels(ms); i++) {
        Channel *ch;

        if (multifd_sender_cancelled(ms)) {
            error_setg(errp, "multifd: cancelled while connecting the channels");
            return NULL;
        }
        /* On failure the channels made so far stay for multifd_send_cleanup(). */
        ch = mig_tls_client(tls, mig_channel_connect(uri, errp), errp);
        if (!ch) {
            error_prepend(errp, "multifd: channel %d: ", i);
            return NULL;
        }
        if (!multifd_sender_start_channel(ms, i, ch, errp)) {
            return NULL;
        }
    }
    return ms;
}

void multifd_send_shutdown(void)
{
    current_lock();
    current.shut_down = true;
    if (current.ms) {
        multifd_sender_shutdown(current.ms);
    }
    current_unlock();
}

uint64_t multifd_send_unsent_bytes(void)
{
    uint64_t unsent = 0;

    current_lock();
    if (current.ms) {
        unsent = multifd_sender_unsent_bytes(current.ms);
    }
    current_unlock();
    return unsent;
}

void multifd_send_cleanup(void)
{
    MultifdSender *ms = multifd_sender();

    if (ms) {
        /* Stop and join first: the counters are final after the joins. */
        multifd_sender_stop(ms);
    }
    current_lock();
    if (ms) {
        multifd_sender_stats(ms, &current.last);
    }
    current.ms = NULL;
    /* A cancel before the next setup belongs to the next migration. */
    current.shut_down = false;
    current_unlock();
    multifd_sender_free(ms);
}

/* ---- the transport hooks ---- */

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
static bool multifd_connect(const char *uri, MigTLS *tls, QEMUFile *f, Error **errp)
{
    return multifd_send_setup(uri, tls, errp) != NULL;
}

/* Compressed pages drain the remaining bytes faster than they fill the link. */
static bool multifd_drains_faster(void)
{
    return migrate_multifd_compression() != MULTIFD_COMPRESSION_NONE;
}

/* ---- the sink's life and counters (its page hooks: multifd-send.c) ---- */

static void *multifd_sink_open(QEMUFile *f, const RAMSinkConfig *cfg, Error **errp)
{
    MultifdSink *s = g_new0(MultifdSink, 1);

    /* The channels connected before the "ram" section was set up (migration.c). */
    s->ms = multifd_sender();
    assert(s->ms);
    return s;
}

static void multifd_sink_close(void *sink)
{
    MultifdSink *s = sink;

    /* migration.c stops and joins the channels; their counters stay in current.last. */
    s->ms = NULL;
}

static void multifd_sink_counts(void *sink, RAMSinkCounts *c)
{
    MultifdSink *s = sink;
    uint64_t normal = __atomic_load_n(&s->rec.normal_pages, __ATOMIC_RELAXED);
    MultifdSendStats m;

    multifd_send_stats(&m);
    c->pages = __atomic_load_n(&s->rec.zero_pages, __ATOMIC_RELAXED) + normal +
               m.zero_pages + m.normal_pages;
    c->data_pages = normal + m.normal_pages;
}

static void multifd_sink_fill_info(void *sink, MigrationInfo *info)
{
    MultifdSink *s = sink;
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
    .settle = multifd_sink_settle,
    .drain = multifd_sink_drain,
    .restart = multifd_sink_restart,
    .close = multifd_sink_close,
    .counts = multifd_sink_counts,
    .fill_info = multifd_sink_fill_info,
    .free = multifd_sink_free,
};

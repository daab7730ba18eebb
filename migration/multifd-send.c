/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * multifd, the sending side: N channel connections next to the main
 * stream, each with a thread that finds zero pages (zero-page-detection
 * multifd), compresses (multifd-compression) and writes the packets of
 * multifd.h. mig/src fills one batch of up to 128 page offsets of one
 * RAMBlock and hands a full batch to an idle channel by swapping buffers:
 * one lock round trip per batch, never per page.
 *
 * Ordering: a page is sent again only after a dirty sync saw it written
 * again, and multifd_send_sync() runs before the first page claimed after
 * every sync. It ends the round on every channel (a SYNC packet after that
 * channel's pages) and puts MULTIFD_FLUSH in the main stream; the
 * destination places every page of a round before it reads past that
 * record or lets any channel start the next round, so an older copy of a
 * page never lands after a newer one.
 */
#include "qemu/osdep.h"
#include "qemu/iov.h"
#include "qapi/error.h"
#include "qemu/bufferiszero.h"
#include "qemu/cutils.h"
#include "qemu/thread.h"
#include "qemu/tsan.h"
#include "system/memory.h"
#include "migration/qemu-file.h"
#include "channel.h"
#include "multifd.h"
#include "multifd-compress.h"
#include "multifd-send.h"
#include "options.h"
#include "ram-codec.h"
#include <sys/socket.h>

typedef struct MultifdBatch {
    RAMBlock *rb;
    uint32_t num;
    bool sync;                  /* end the round after these pages */
    uint64_t offset[MULTIFD_PACKET_PAGES];  /* byte offsets in rb */
} MultifdBatch;

typedef struct MultifdSendChannel {
    MultifdSender *ms;
    int id;
    /* sender_lock: set once connected; our reference, shut down by cancel, dropped at cleanup. */
    Channel *ch;
    QemuThread thread;
    bool started;               /* main thread / mig/src: the thread exists */
    GCond work_cond;            /* busy became true, or quit */
    /* ms->lock: the thread owns @job while busy; mig/src owns it otherwise. */
    bool busy;
    MultifdBatch *job;

    /* The thread's own. */
    const MultifdCompressOps *ops;
    void *codec;
    uint8_t *cbuf;
    size_t cbuf_size;
    MultiFDPacketHdr hdr;
    uint64_t offs[MULTIFD_PACKET_PAGES];
    const uint8_t *normal[MULTIFD_PACKET_PAGES];
    struct iovec iov[3 + MULTIFD_PACKET_PAGES];
} MultifdSendChannel;

struct MultifdSender {
    int n;
    MultifdSendChannel *ch;
    GMutex lock;
    GCond idle_cond;            /* a channel went idle or failed */
    bool quit;                  /* lock: cleanup asks the threads to end */
    Error *error;               /* lock: the first channel failure */
    bool detect_zero;           /* read-only: zero-page-detection multifd */

    /* mig/src's own. */
    MultifdBatch *batch;        /* being filled */
    int next;                   /* round-robin start for the next batch */
    uint64_t bytes_counted;     /* channel bytes already counted on the main stream */
};

/* mig/src sets it (setup), the cleanup bottom half clears it; sender_lock for cancel. */
static MultifdSender *sender;
static GMutex sender_lock;
/* sender_lock: cancel came (even before setup); channels connected later start shut. */
static bool shut_down;
/* Channel threads add (atomically), anyone reads; reset at the next setup. */
static MultifdSendStats stats;
static uint64_t packet_num;     /* atomic: numbers packets across channels */

/*
 * ms->lock, told to TSan (GLib's futexes are invisible to it): everything
 * a thread wrote before it unlocks is visible to the next one that locks.
 */
static void ms_lock(MultifdSender *ms)
{
    g_mutex_lock(&ms->lock);
    TSAN_ACQUIRE(&ms->lock);
}

static void ms_unlock(MultifdSender *ms)
{
    TSAN_RELEASE(&ms->lock);
    g_mutex_unlock(&ms->lock);
}

static void ms_wait(MultifdSender *ms, GCond *cond)
{
    TSAN_RELEASE(&ms->lock);
    g_cond_wait(cond, &ms->lock);
    TSAN_ACQUIRE(&ms->lock);
}

static void sender_lock_take(void)
{
    g_mutex_lock(&sender_lock);
    TSAN_ACQUIRE(&sender_lock);
}

static void sender_lock_drop(void)
{
    TSAN_RELEASE(&sender_lock);
    g_mutex_unlock(&sender_lock);
}

static void stat_add(uint64_t *c, uint64_t v)
{
    __atomic_fetch_add(c, v, __ATOMIC_RELAXED);
}

void multifd_send_stats(MultifdSendStats *st)
{
    st->normal_pages = __atomic_load_n(&stats.normal_pages, __ATOMIC_RELAXED);
    st->zero_pages = __atomic_load_n(&stats.zero_pages, __ATOMIC_RELAXED);
    st->bytes = __atomic_load_n(&stats.bytes, __ATOMIC_RELAXED);
    st->packets = __atomic_load_n(&stats.packets, __ATOMIC_RELAXED);
}

MultifdSender *multifd_sender(void)
{
    return sender;
}

/* Writes the whole iovec. 0, or -errno. Counted once all of it went. */
static int send_all(Channel *ch, struct iovec *iov, int cnt)
{
    int ret = channel_writev_all(ch, iov, cnt);

    if (!ret) {
        stat_add(&stats.bytes, iov_size(iov, cnt));
    }
    return ret;
}

static bool multifd_send_init_msg(MultifdSendChannel *c, Error **errp)
{
    MultiFDInit msg = {
        .magic = GUINT32_TO_BE(MULTIFD_MAGIC),
        .version = GUINT32_TO_BE(MULTIFD_VERSION),
        .id = c->id,
    };
    struct iovec iov = { .iov_base = &msg, .iov_len = sizeof(msg) };
    int ret = send_all(c->ch, &iov, 1);

    if (ret < 0) {
        error_setg_errno(errp, -ret, "multifd: channel %d: cannot send its initial packet",
                         c->id);
        return false;
    }
    return true;
}

/* One packet for @b: zero pages found here, the rest compressed or sent in place. */
static bool multifd_send_packet(MultifdSendChannel *c, const MultifdBatch *b, Error **errp)
{
    uint32_t normal = 0, zero = 0, n = b->num, flags = c->ops->packet_flag;
    size_t body = 0;
    int iovcnt = 0, ret;

    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *host = b->rb->host + b->offset[i];

        if (c->ms->detect_zero && buffer_is_zero(host, TARGET_PAGE_SIZE)) {
            /* Zero offsets fill the array from the end; reversed below. */
            c->offs[n - 1 - zero++] = GUINT64_TO_BE(b->offset[i]);
        } else {
            c->normal[normal] = host;
            c->offs[normal++] = GUINT64_TO_BE(b->offset[i]);
        }
    }
    for (uint32_t i = 0; i < zero / 2; i++) {
        uint64_t t = c->offs[normal + i];
        c->offs[normal + i] = c->offs[n - 1 - i];
        c->offs[n - 1 - i] = t;
    }
    if (b->sync) {
        flags |= MULTIFD_FLAG_SYNC;
    }
    c->iov[iovcnt++] = (struct iovec) { &c->hdr, sizeof(c->hdr) };
    if (n) {
        c->iov[iovcnt++] = (struct iovec) { c->offs, n * sizeof(uint64_t) };
    }
    if (normal && c->codec) {
        ssize_t len = c->ops->compress(c->codec, c->normal, normal, c->cbuf, c->cbuf_size, errp);

        if (len < 0) {
            return false;
        }
        body = len;
        c->iov[iovcnt++] = (struct iovec) { c->cbuf, body };
    } else {
        for (uint32_t i = 0; i < normal; i++) {
            c->iov[iovcnt++] = (struct iovec) { (void *)c->normal[i], TARGET_PAGE_SIZE };
        }
        body = (size_t)normal * TARGET_PAGE_SIZE;
    }
    memset(&c->hdr, 0, sizeof(c->hdr));
    c->hdr.magic = GUINT32_TO_BE(MULTIFD_MAGIC);
    c->hdr.version = GUINT32_TO_BE(MULTIFD_VERSION);
    c->hdr.flags = GUINT32_TO_BE(flags);
    c->hdr.pages_alloc = GUINT32_TO_BE(MULTIFD_PACKET_PAGES);
    c->hdr.normal_pages = GUINT32_TO_BE(normal);
    c->hdr.zero_pages = GUINT32_TO_BE(zero);
    c->hdr.next_packet_size = GUINT32_TO_BE(body);
    c->hdr.packet_num = GUINT64_TO_BE(__atomic_fetch_add(&packet_num, 1, __ATOMIC_RELAXED));
    if (n) {
        pstrcpy(c->hdr.ramblock, sizeof(c->hdr.ramblock), b->rb->idstr);
    }
    ret = send_all(c->ch, c->iov, iovcnt);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "multifd: channel %d: write failed", c->id);
        return false;
    }
    stat_add(&stats.normal_pages, normal);
    stat_add(&stats.zero_pages, zero);
    stat_add(&stats.packets, 1);
    return true;
}

/* Lock held: the thread's outcome; a failure is recorded and wakes mig/src. */
static void multifd_thread_done_locked(MultifdSender *ms, MultifdSendChannel *c, Error *err)
{
    c->busy = false;
    if (err && !ms->error) {
        ms->error = err;
    } else {
        error_free(err);
    }
    g_cond_broadcast(&ms->idle_cond);
}

static void *multifd_send_thread(void *opaque)
{
    MultifdSendChannel *c = opaque;
    MultifdSender *ms = c->ms;
    Error *err = NULL;

    if (!multifd_send_init_msg(c, &err)) {
        ms_lock(ms);
        multifd_thread_done_locked(ms, c, err);
        ms_unlock(ms);
        return NULL;
    }
    for (;;) {
        bool ok;

        ms_lock(ms);
        while (!c->busy && !ms->quit) {
            ms_wait(ms, &c->work_cond);
        }
        if (!c->busy) {
            ms_unlock(ms);
            return NULL;
        }
        ms_unlock(ms);
        ok = multifd_send_packet(c, c->job, &err);
        ms_lock(ms);
        multifd_thread_done_locked(ms, c, err);
        ms_unlock(ms);
        if (!ok) {
            return NULL;
        }
    }
}

/* mig/src: count what the channels wrote since last time on the main stream. */
static void multifd_count_bytes(MultifdSender *ms, QEMUFile *f)
{
    uint64_t now = __atomic_load_n(&stats.bytes, __ATOMIC_RELAXED);

    qemu_file_count_side_bytes(f, now - ms->bytes_counted);
    ms->bytes_counted = now;
}

/* Lock held: a failure, copied onto @f. */
static bool multifd_failed_locked(MultifdSender *ms, QEMUFile *f)
{
    if (ms->error) {
        qemu_file_set_error_msg(f, -EIO, "%s", error_get_pretty(ms->error));
        return true;
    }
    return false;
}

/* mig/src: hands the batch to @c once it is idle (lock held). */
static void multifd_give_locked(MultifdSender *ms, MultifdSendChannel *c)
{
    MultifdBatch *t = c->job;

    c->job = ms->batch;
    c->busy = true;
    g_cond_signal(&c->work_cond);
    ms->batch = t;
    ms->batch->num = 0;
    ms->batch->rb = NULL;
    ms->batch->sync = false;
}

/* mig/src: the filled batch to the next idle channel (waiting for one). */
static bool multifd_hand_over(MultifdSender *ms, QEMUFile *f)
{
    MultifdSendChannel *c = NULL;

    ms_lock(ms);
    while (!multifd_failed_locked(ms, f)) {
        for (int i = 0; i < ms->n && !c; i++) {
            MultifdSendChannel *t = &ms->ch[(ms->next + i) % ms->n];
            c = t->busy ? NULL : t;
        }
        if (c) {
            multifd_give_locked(ms, c);
            ms->next = (c->id + 1) % ms->n;
            break;
        }
        ms_wait(ms, &ms->idle_cond);
    }
    ms_unlock(ms);
    multifd_count_bytes(ms, f);
    return c != NULL;
}

void multifd_send_queue_page(MultifdSender *ms, QEMUFile *f, RAMBlock *rb, uint64_t page)
{
    MultifdBatch *b = ms->batch;

    if (b->num && (b->rb != rb || b->num == MULTIFD_PACKET_PAGES)) {
        if (!multifd_hand_over(ms, f)) {
            return;
        }
        b = ms->batch;
    }
    b->rb = rb;
    b->offset[b->num++] = page << TARGET_PAGE_BITS;
}

/* Lock held: waits until @c is idle. False (error on @f) once any channel failed. */
static bool multifd_wait_idle_locked(MultifdSender *ms, MultifdSendChannel *c, QEMUFile *f)
{
    while (c->busy && !ms->error) {
        ms_wait(ms, &ms->idle_cond);
    }
    return !multifd_failed_locked(ms, f);
}

bool multifd_send_sync(MultifdSender *ms, QEMUFile *f, bool wait)
{
    bool ok = true;

    if (ms->batch->num && !multifd_hand_over(ms, f)) {
        return false;
    }
    ms_lock(ms);
    /* Every channel, in order: its SYNC packet goes after its queued pages. */
    for (int i = 0; i < ms->n && ok; i++) {
        ok = multifd_wait_idle_locked(ms, &ms->ch[i], f);
        if (ok) {
            ms->batch->sync = true;
            multifd_give_locked(ms, &ms->ch[i]);
        }
    }
    for (int i = 0; i < ms->n && ok && wait; i++) {
        ok = multifd_wait_idle_locked(ms, &ms->ch[i], f);
    }
    ms_unlock(ms);
    multifd_count_bytes(ms, f);
    if (ok) {
        /*
         * Out now: the destination's channels wait at their SYNC until it
         * reads this record, and a channel that waits stops reading, so
         * holding the record in our buffer could stall the channels we
         * wait for.
         */
        ram_put_multifd_flush(f);
        qemu_fflush(f);
    }
    return ok;
}

static bool multifd_channel_init(MultifdSender *ms, MultifdSendChannel *c, int id,
                                 const char *uri, Error **errp)
{
    Channel *ch;
    int level = migrate_multifd_compression() == MULTIFD_COMPRESSION_ZSTD
                ? migrate_multifd_zstd_level() : migrate_multifd_zlib_level();
    char name[32];
    int ret;

    c->ms = ms;
    c->id = id;
    c->job = g_new0(MultifdBatch, 1);
    g_cond_init(&c->work_cond);
    c->ops = multifd_compress_ops(migrate_multifd_compression());
    if (migrate_multifd_compression() != MULTIFD_COMPRESSION_NONE) {
        c->codec = c->ops->send_new(level, errp);
        if (!c->codec) {
            return false;
        }
        c->cbuf_size = c->ops->bound(MULTIFD_PACKET_PAGES);
        c->cbuf = g_malloc(c->cbuf_size);
    }
    ch = mig_channel_connect(uri, errp);
    if (!ch) {
        error_prepend(errp, "multifd: channel %d: ", id);
        return false;
    }
    sender_lock_take();
    c->ch = ch;
    if (shut_down) {
        channel_shutdown(c->ch, CHANNEL_SHUT_BOTH);
    }
    sender_lock_drop();
    snprintf(name, sizeof(name), "mig/mfd-send/%d", id);
    ret = qemu_thread_create(&c->thread, name, multifd_send_thread, c);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "multifd: cannot create the thread of channel %d", id);
        return false;
    }
    c->started = true;
    return true;
}

MultifdSender *multifd_send_setup(const char *uri, Error **errp)
{
    MultifdSender *ms;

    if (!g_str_has_prefix(uri, "tcp:") && !g_str_has_prefix(uri, "unix:")) {
        error_setg(errp, "multifd needs a tcp: or unix: URI, not '%s'", uri);
        return NULL;
    }
    memset(&stats, 0, sizeof(stats));
    __atomic_store_n(&packet_num, 0, __ATOMIC_RELAXED);
    ms = g_new0(MultifdSender, 1);
    ms->n = migrate_multifd_channels();
    ms->ch = g_new0(MultifdSendChannel, ms->n);
    /* g_new0: every channel is NULL before the sender is published (cancel looks at all). */
    ms->batch = g_new0(MultifdBatch, 1);
    ms->detect_zero = migrate_zero_page_detection() == ZERO_PAGE_DETECTION_MULTIFD;
    g_mutex_init(&ms->lock);
    g_cond_init(&ms->idle_cond);
    sender_lock_take();
    sender = ms;
    sender_lock_drop();
    for (int i = 0; i < ms->n; i++) {
        bool cancelled;

        sender_lock_take();
        cancelled = shut_down;
        sender_lock_drop();
        if (cancelled) {
            error_setg(errp, "multifd: cancelled while connecting the channels");
            return NULL;
        }
        /* On failure the channels made so far stay for multifd_send_cleanup(). */
        if (!multifd_channel_init(ms, &ms->ch[i], i, uri, errp)) {
            return NULL;
        }
    }
    return ms;
}

void multifd_send_shutdown(void)
{
    sender_lock_take();
    shut_down = true;
    for (int i = 0; sender && i < sender->n; i++) {
        if (sender->ch[i].ch) {
            channel_shutdown(sender->ch[i].ch, CHANNEL_SHUT_BOTH);
        }
    }
    sender_lock_drop();
}

uint64_t multifd_send_unsent_bytes(void)
{
    uint64_t unsent = 0;

    sender_lock_take();
    for (int i = 0; sender && i < sender->n; i++) {
        unsent += mig_channel_unsent_bytes(sender->ch[i].ch);
    }
    sender_lock_drop();
    return unsent;
}

void multifd_send_cleanup(void)
{
    MultifdSender *ms = sender;

    if (!ms) {
        /* No channels this time; a cancel still must not reach the next migration. */
        sender_lock_take();
        shut_down = false;
        sender_lock_drop();
        return;
    }
    ms_lock(ms);
    ms->quit = true;
    for (int i = 0; i < ms->n; i++) {
        g_cond_signal(&ms->ch[i].work_cond);
    }
    ms_unlock(ms);
    /*
     * A thread may still be blocked writing to a destination that stopped
     * reading (the migration failed elsewhere). After a completion
     * everything was written already; a shutdown keeps queued data.
     */
    multifd_send_shutdown();
    for (int i = 0; i < ms->n; i++) {
        MultifdSendChannel *c = &ms->ch[i];

        if (c->started) {
            qemu_thread_join(&c->thread);
        }
    }
    sender_lock_take();
    sender = NULL;
    /* A cancel before the next setup belongs to the next migration. */
    shut_down = false;
    sender_lock_drop();
    for (int i = 0; i < ms->n; i++) {
        MultifdSendChannel *c = &ms->ch[i];

        channel_unref(c->ch);
        if (c->codec) {
            c->ops->send_free(c->codec);
        }
        g_free(c->cbuf);
        g_free(c->job);
        g_cond_clear(&c->work_cond);
    }
    error_free(ms->error);
    g_cond_clear(&ms->idle_cond);
    g_mutex_clear(&ms->lock);
    g_free(ms->batch);
    g_free(ms->ch);
    g_free(ms);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * multifd, the receiving side: the i-th channel connection accepted is
 * served by worker i of one worker pool (util/worker-pool.c, threads
 * "mig/mfd-recv/<i>"), given one long job: read the initial packet, then
 * packets (multifd.h), check every field against this side's RAM and
 * settings, and place the pages, until the stream ends, fails or the pool
 * is stopping. A SYNC packet ends the channel's round: the worker waits
 * there until mig/dst, at the main stream's MULTIFD_FLUSH record, has seen
 * every channel end the same round. So no channel places a page of round
 * K+1 before all of round K is placed, which is what keeps a page's older
 * copy from overwriting its newer one: rules 3 and 4 of the invariant at
 * the top of multifd-send.c, which has the whole argument.
 *
 * A channel that fails records the error and shuts the main stream down,
 * so mig/dst stops wherever it is waiting; the load then fails with the
 * channel's error and the guest never runs.
 */
#include "qemu/osdep.h"
#include "qemu/iov.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "qemu/bufferiszero.h"
#include "qemu/tsan.h"
#include "qemu/worker-pool.h"
#include "system/memory.h"
#include "io/channel.h"
#include "migration/qemu-file.h"
#include "migration/transport/multifd.h"
#include "migration/transport/multifd-compress.h"
#include "multifd-recv.h"
#include "migration/core/options.h"
#include <sys/socket.h>
#include <sys/uio.h>

typedef struct MultifdRecvChannel {
    /* Main thread: our reference; its worker reads it, cancel shuts it down, free drops it. */
    Channel *ch;
    int id;                     /* its worker: from its initial packet, -1 before */
    /* mr->lock: its worker writes, mig/dst (flush) reads. */
    uint64_t synced;            /* SYNC packets placed */
    bool ended;                 /* the worker is done (EOF, failure or stop) */

    /* Its worker's own (codec made before the job is queued, freed after the join). */
    void *codec;
    uint8_t *cbuf;
    size_t cbuf_size;
    MultiFDPacketHdr hdr;
    uint64_t offs[MULTIFD_PACKET_PAGES];
    uint8_t *pages[MULTIFD_PACKET_PAGES];
    struct iovec iov[MULTIFD_PACKET_PAGES];
} MultifdRecvChannel;

struct MultifdReceiver {
    int expected;               /* read-only: multifd-channels */
    const MultifdCompressOps *ops;  /* read-only: multifd-compression */
    /*
     * Read-only: worker i runs the receive loop of channels[i] as its one
     * job ("mig/mfd-recv/<i>"); started by the main thread as connections
     * come, stopped and joined by free. Failures are the receiver's (error
     * below), not the pool's: the job always returns 0.
     */
    WorkerPool *pool;
    /* Main thread: every accepted connection, in order (index = worker). */
    GPtrArray *channels;

    GMutex lock;
    GCond cond;                 /* a channel synced or ended; released moved; quit */
    MultifdRecvChannel *by_id[256]; /* lock: registered by their initial packet */
    uint8_t uuid[16];           /* lock: the first channel's */
    bool have_uuid;
    uint64_t released;          /* lock: rounds mig/dst let the channels finish */
    bool quit;                  /* lock: cancel or cleanup */
    Error *error;               /* lock: the first channel failure */
    QEMUFile *main;             /* lock: shut down on a failure */
    /* Read-only once a channel was added: see multifd_receiver_set_round_hook(). */
    MultifdRoundHook *round_hook;
    void *round_opaque;
};

/*
 * The global API of multifd-recv.h forwards to the receiver of the running
 * incoming migration: made by the main thread at the first channel (or at
 * set_main), freed by cleanup in the main thread. Read lock-free by the
 * main thread and by mig/dst, which starts after it was made and is joined
 * before cleanup; the instance API (multifd_receiver_*) needs none of it.
 */
static MultifdReceiver *current;

/* mr->lock, told to TSan (GLib's futexes are invisible to it). */
static void mr_lock(MultifdReceiver *mr)
{
    tsan_g_mutex_lock(&mr->lock);
}

static void mr_unlock(MultifdReceiver *mr)
{
    tsan_g_mutex_unlock(&mr->lock);
}

static void mr_wait(MultifdReceiver *mr)
{
    tsan_g_cond_wait(&mr->cond, &mr->lock);
}

static bool read_or_fail(MultifdRecvChannel *c, void *buf, size_t len, const char *what,
                         Error **errp)
{
    /* 0, 1 for EOF before the first byte, or -errno (-EPIPE: EOF in the middle). */
    int ret = channel_read_all(c->ch, buf, len);

    if (ret) {
        error_setg(errp, "multifd: channel %d: reading %s failed: %s", c->id, what,
                   ret > 0 || ret == -EPIPE ? "the stream ended in the middle of a packet"
                                            : g_strerror(-ret));
        return false;
    }
    return true;
}

static bool multifd_recv_init_msg(MultifdReceiver *mr, MultifdRecvChannel *c, Error **errp)
{
    MultiFDInit msg;
    bool ok = false;

    if (!read_or_fail(c, &msg, sizeof(msg), "the initial packet", errp)) {
        return false;
    }
    if (GUINT32_FROM_BE(msg.magic) != MULTIFD_MAGIC) {
        error_setg(errp, "multifd: received packet magic %x expected %x",
                   GUINT32_FROM_BE(msg.magic), MULTIFD_MAGIC);
        return false;
    }
    if (GUINT32_FROM_BE(msg.version) != MULTIFD_VERSION) {
        error_setg(errp, "multifd: received packet version %u expected %u",
                   GUINT32_FROM_BE(msg.version), MULTIFD_VERSION);
        return false;
    }
    if (msg.id >= mr->expected) {
        error_setg(errp, "multifd: received channel id %u is greater than number of "
                   "channels %d (set multifd-channels alike on both sides)", msg.id,
                   mr->expected);
        return false;
    }
    mr_lock(mr);
    if (mr->by_id[msg.id]) {
        error_setg(errp, "multifd: channel id %u connected twice", msg.id);
    } else if (mr->have_uuid && memcmp(mr->uuid, msg.uuid, sizeof(msg.uuid))) {
        error_setg(errp, "multifd: channel %u comes from another source (its uuid differs)",
                   msg.id);
    } else {
        memcpy(mr->uuid, msg.uuid, sizeof(msg.uuid));
        mr->have_uuid = true;
        mr->by_id[msg.id] = c;
        c->id = msg.id;
        g_cond_broadcast(&mr->cond);
        ok = true;
    }
    mr_unlock(mr);
    return ok;
}

/* The header's fields, checked; the block if the packet carries pages. */
static bool multifd_check_header(MultifdReceiver *mr, MultifdRecvChannel *c, RAMBlock **rbp,
                                 Error **errp)
{
    MultiFDPacketHdr *h = &c->hdr;
    uint32_t flags = GUINT32_FROM_BE(h->flags), comp = flags & MULTIFD_FLAG_COMPRESSION_MASK;
    uint64_t pages = (uint64_t)GUINT32_FROM_BE(h->normal_pages) + GUINT32_FROM_BE(h->zero_pages);
    const MultifdCompressOps *sent = multifd_compress_ops_by_flag(comp);

    if (GUINT32_FROM_BE(h->magic) != MULTIFD_MAGIC || GUINT32_FROM_BE(h->version) != MULTIFD_VERSION) {
        error_setg(errp, "multifd: channel %d: packet magic %x version %u, expected %x "
                   "version %u", c->id, GUINT32_FROM_BE(h->magic), GUINT32_FROM_BE(h->version),
                   MULTIFD_MAGIC, MULTIFD_VERSION);
        return false;
    }
    if (flags & ~(MULTIFD_FLAG_SYNC | MULTIFD_FLAG_COMPRESSION_MASK)) {
        error_setg(errp, "multifd: channel %d: packet flags 0x%x unknown", c->id, flags);
        return false;
    }
    /*
     * QEMU 10.0 marks a packet with no page data to decompress (zero pages
     * only, or a sync) as uncompressed whatever multifd-compression is.
     */
    if (sent != mr->ops && !(sent && sent->packet_flag == MULTIFD_FLAG_NOCOMP &&
                             !GUINT32_FROM_BE(h->normal_pages))) {
        error_setg(errp, "multifd: channel %d: packet compressed with %s, but "
                   "multifd-compression is %s here", c->id, sent ? sent->name : "(unknown)",
                   mr->ops->name);
        return false;
    }
    if (GUINT32_FROM_BE(h->pages_alloc) > MULTIFD_PACKET_PAGES ||
        pages > GUINT32_FROM_BE(h->pages_alloc)) {
        error_setg(errp, "multifd: channel %d: packet of %" PRIu64 " pages (room for %u), "
                   "at most %d allowed", c->id, pages, GUINT32_FROM_BE(h->pages_alloc),
                   MULTIFD_PACKET_PAGES);
        return false;
    }
    *rbp = NULL;
    if (!pages) {
        if (GUINT32_FROM_BE(h->next_packet_size)) {
            error_setg(errp, "multifd: channel %d: a packet without pages carries %u bytes",
                       c->id, GUINT32_FROM_BE(h->next_packet_size));
            return false;
        }
        return true;
    }
    if (!memchr(h->ramblock, 0, sizeof(h->ramblock)) ||
        !(*rbp = ram_block_find(h->ramblock))) {
        g_autofree char *safe = g_strescape(memchr(h->ramblock, 0, sizeof(h->ramblock))
                                            ? h->ramblock : "(unterminated)", NULL);

        error_setg(errp, "multifd: channel %d: packet for unknown RAMBlock %s", c->id, safe);
        return false;
    }
    return true;
}

/* The packet's offsets and page data; the header was checked. */
static bool multifd_place_pages(MultifdReceiver *mr, MultifdRecvChannel *c, RAMBlock *rb,
                                Error **errp)
{
    uint32_t normal = GUINT32_FROM_BE(c->hdr.normal_pages);
    uint32_t n = normal + GUINT32_FROM_BE(c->hdr.zero_pages);
    uint32_t size = GUINT32_FROM_BE(c->hdr.next_packet_size);
    bool raw = mr->ops->packet_flag == MULTIFD_FLAG_NOCOMP;
    int ret;

    if (raw ? size != (uint64_t)normal * TARGET_PAGE_SIZE
            : size > c->cbuf_size || !normal != !size) {
        error_setg(errp, "multifd: channel %d: packet of %u pages carries %u bytes", c->id,
                   normal, size);
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint64_t off = GUINT64_FROM_BE(c->offs[i]);

        if ((off & ~TARGET_PAGE_MASK) || off >= rb->used_length) {
            error_setg(errp, "multifd: channel %d: offset 0x%" PRIx64 " is not a page of "
                       "RAMBlock %s (length 0x%" PRIx64 ")", c->id, off, rb->idstr,
                       rb->used_length);
            return false;
        }
        c->offs[i] = off;
        c->pages[i] = rb->host + off;
    }
    if (raw) {
        for (uint32_t i = 0; i < normal; i++) {
            c->iov[i] = (struct iovec) { c->pages[i], TARGET_PAGE_SIZE };
        }
        ret = normal ? channel_readv_all(c->ch, c->iov, normal) : 0;
        if (ret) {
            error_setg(errp, "multifd: channel %d: reading pages failed: %s", c->id,
                       ret > 0 || ret == -EPIPE ? "the stream ended in the middle of a packet"
                                                : g_strerror(-ret));
            return false;
        }
    } else if (normal) {
        if (!read_or_fail(c, c->cbuf, size, "compressed pages", errp)) {
            return false;
        }
        if (!mr->ops->decompress(c->codec, c->cbuf, size, c->pages, normal, errp)) {
            error_prepend(errp, "multifd: channel %d: ", c->id);
            return false;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        uint64_t page = c->offs[i] >> TARGET_PAGE_BITS;

        /* As for ZERO records: a page nobody wrote is zero without reading it. */
        if (i >= normal && test_bit_atomic(page, rb->vmm_written_bmap) &&
            !buffer_is_zero(c->pages[i], TARGET_PAGE_SIZE)) {
            memset(c->pages[i], 0, TARGET_PAGE_SIZE);
        }
        if (i < normal) {
            set_bit_atomic(page, rb->vmm_written_bmap);
        }
    }
    return true;
}

/* A SYNC packet: this round is placed; wait until mig/dst releases it. */
static void multifd_recv_round_done(MultifdReceiver *mr, MultifdRecvChannel *c)
{
    mr_lock(mr);
    c->synced++;
    g_cond_broadcast(&mr->cond);
    while (mr->released < c->synced && !mr->quit) {
        mr_wait(mr);
    }
    mr_unlock(mr);
}

/* One packet. False at a clean end of stream (@errp untouched) or on failure. */
static bool multifd_recv_packet(MultifdReceiver *mr, MultifdRecvChannel *c, Error **errp)
{
    RAMBlock *rb;
    int ret = channel_read_all(c->ch, &c->hdr, sizeof(c->hdr));

    if (ret == 1 || ret == -ECONNRESET) {
        /*
         * Between packets: an error only if mig/dst still waits for this
         * channel. A cut TLS session (no close_notify, as QEMU before 9.2
         * ends its channels) counts the same: after the last round nothing
         * is missing, and before it mig/dst fails on the channel's end.
         */
        return false;
    }
    if (ret < 0) {
        error_setg(errp, "multifd: channel %d: reading a packet header failed: %s", c->id,
                   ret == -EPIPE ? "the stream ended in the middle of a packet"
                                 : g_strerror(-ret));
        return false;
    }
    /* A packet's offsets array is always whole on the wire (QEMU's fixed packet size). */
    if (!multifd_check_header(mr, c, &rb, errp) ||
        !read_or_fail(c, c->offs, sizeof(c->offs), "page offsets", errp) ||
        (rb && !multifd_place_pages(mr, c, rb, errp))) {
        return false;
    }
    if (GUINT32_FROM_BE(c->hdr.flags) & MULTIFD_FLAG_SYNC) {
        multifd_recv_round_done(mr, c);
    }
    return true;
}

/* Worker @index: the one job, channel @job's receive loop. */
static int multifd_recv_channel_run(void *opaque, int index, void *job, Error **errp)
{
    MultifdReceiver *mr = opaque;
    MultifdRecvChannel *c = job;
    Error *err = NULL;

    if (multifd_recv_init_msg(mr, c, &err)) {
        /* Stopping: the channel was shut down too (wake); no packet is started after. */
        while (!worker_pool_stopping(mr->pool) && multifd_recv_packet(mr, c, &err)) {
        }
    }
    mr_lock(mr);
    c->ended = true;
    if (err && !mr->quit && !mr->error) {
        mr->error = err;
        err = NULL;
        if (mr->main) {
            qemu_file_shutdown(mr->main);
        }
    }
    g_cond_broadcast(&mr->cond);
    mr_unlock(mr);
    /*
     * Recorded above with ended, under the lock flush waits with, and the
     * main stream shut down: the pool's own failure could not do that.
     */
    error_free(err);
    return 0;
}

/* worker_pool_stop(): a worker blocked in a read or at its SYNC returns at once. */
static void multifd_recv_wake(void *opaque)
{
    multifd_receiver_shutdown(opaque);
}

static const WorkerPoolOps multifd_recv_ops = {
    .run = multifd_recv_channel_run,
    .wake = multifd_recv_wake,
};

MultifdReceiver *multifd_receiver_new(void)
{
    MultifdReceiver *mr = g_new0(MultifdReceiver, 1);

    mr->expected = migrate_multifd_channels();
    mr->ops = multifd_compress_ops(migrate_multifd_compression());
    mr->channels = g_ptr_array_new();
    g_mutex_init(&mr->lock);
    g_cond_init(&mr->cond);
    mr->pool = worker_pool_new("mig/mfd-recv/%d", mr->expected, &multifd_recv_ops, mr);
    return mr;
}

static MultifdReceiver *multifd_receiver_get(void)
{
    if (!current) {
        current = multifd_receiver_new();
    }
    return current;
}

bool multifd_recv_add_channel(Channel *ch, Error **errp)
{
    return multifd_receiver_add_channel(multifd_receiver_get(), ch, errp);
}

bool multifd_receiver_add_channel(MultifdReceiver *mr, Channel *ch, Error **errp)
{
    MultifdRecvChannel *c;
    Error *err = NULL;
    int index = mr->channels->len, ret;

    if ((int)mr->channels->len >= mr->expected) {
        error_setg(errp, "multifd: more channel connections than multifd-channels (%d)",
                   mr->expected);
        return false;
    }
    c = g_new0(MultifdRecvChannel, 1);
    c->ch = ch;
    c->id = -1;
    if (mr->ops->packet_flag != MULTIFD_FLAG_NOCOMP) {
        c->codec = mr->ops->recv_new(errp);
        if (!c->codec) {
            g_free(c);
            return false;
        }
        c->cbuf_size = mr->ops->bound(MULTIFD_PACKET_PAGES);
        c->cbuf = g_malloc(c->cbuf_size);
    }
    ret = worker_pool_start(mr->pool, index, &err);
    if (ret < 0) {
        /* The slot has no thread: a job queued there would run here. The next one retries it. */
        error_setg_errno(errp, -ret, "multifd: cannot create a channel thread");
        error_free(err);
        if (c->codec) {
            mr->ops->recv_free(c->codec);
        }
        g_free(c->cbuf);
        g_free(c);
        return false;
    }
    g_ptr_array_add(mr->channels, c);
    worker_pool_submit(mr->pool, index, c);
    return true;
}

int multifd_recv_channels_accepted(void)
{
    return current ? (int)current->channels->len : 0;
}

int multifd_recv_channels_expected(void)
{
    return current ? current->expected : migrate_multifd_channels();
}

void multifd_recv_set_main(QEMUFile *f)
{
    multifd_receiver_set_main(multifd_receiver_get(), f);
}

void multifd_receiver_set_main(MultifdReceiver *mr, QEMUFile *f)
{
    mr_lock(mr);
    mr->main = f;
    if (mr->error) {
        /* A channel failed before the stream arrived: mig/dst stops at once too. */
        qemu_file_shutdown(f);
    }
    mr_unlock(mr);
}

bool multifd_recv_flush(Error **errp)
{
    if (!current) {
        error_setg(errp, "multifd: a flush record, but no channel connected");
        return false;
    }
    return multifd_receiver_flush(current, errp);
}

bool multifd_receiver_flush(MultifdReceiver *mr, Error **errp)
{
    uint64_t round;
    bool ok = true;

    mr_lock(mr);
    round = mr->released + 1;
    for (int id = 0; id < mr->expected && ok; id++) {
        for (;;) {
            MultifdRecvChannel *c = mr->by_id[id];

            if (mr->error || mr->quit) {
                error_setg(errp, "%s", mr->error ? error_get_pretty(mr->error)
                                                 : "multifd: cancelled");
                ok = false;
                break;
            }
            if (c && c->synced >= round) {
                break;
            }
            if (c && c->ended) {
                error_setg(errp, "multifd: channel %d ended before its round %" PRIu64
                           " did", id, round);
                ok = false;
                break;
            }
            mr_wait(mr);
        }
    }
    if (ok) {
        if (mr->round_hook) {
            /* Every channel waits at its SYNC (rule 3): round K is placed, no more. */
            mr->round_hook(mr->round_opaque, round);
        }
        mr->released = round;
        g_cond_broadcast(&mr->cond);
    }
    mr_unlock(mr);
    return ok;
}

void multifd_receiver_set_round_hook(MultifdReceiver *mr, MultifdRoundHook *hook, void *opaque)
{
    assert(!mr->channels->len);
    mr->round_hook = hook;
    mr->round_opaque = opaque;
}

bool multifd_recv_failed(Error **errp)
{
    return current && multifd_receiver_failed(current, errp);
}

bool multifd_receiver_failed(MultifdReceiver *mr, Error **errp)
{
    bool failed = false;

    mr_lock(mr);
    if (mr->error) {
        error_setg(errp, "%s", error_get_pretty(mr->error));
        failed = true;
    }
    mr_unlock(mr);
    return failed;
}

void multifd_recv_shutdown(void)
{
    if (current) {
        multifd_receiver_shutdown(current);
    }
}

void multifd_receiver_shutdown(MultifdReceiver *mr)
{
    mr_lock(mr);
    mr->quit = true;
    g_cond_broadcast(&mr->cond);
    mr_unlock(mr);
    /* mr->channels changes only in the main thread; cancel and stop run there too. */
    for (guint i = 0; i < mr->channels->len; i++) {
        MultifdRecvChannel *c = g_ptr_array_index(mr->channels, i);

        channel_shutdown(c->ch, CHANNEL_SHUT_BOTH);
    }
}

void multifd_receiver_free(MultifdReceiver *mr)
{
    if (!mr) {
        return;
    }
    /* Stop: quit, shut every channel down (wake), let each loop end, join. */
    worker_pool_free(mr->pool);
    for (guint i = 0; i < mr->channels->len; i++) {
        MultifdRecvChannel *c = g_ptr_array_index(mr->channels, i);

        channel_unref(c->ch);
        if (c->codec) {
            mr->ops->recv_free(c->codec);
        }
        g_free(c->cbuf);
        g_free(c);
    }
    g_ptr_array_free(mr->channels, true);
    error_free(mr->error);
    g_cond_clear(&mr->cond);
    g_mutex_clear(&mr->lock);
    g_free(mr);
}

void multifd_recv_cleanup(void)
{
    multifd_receiver_free(current);
    current = NULL;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * multifd, the sending side: N channel connections next to the main
 * stream, each served by worker i of one worker pool (util/worker-pool.c,
 * threads "mig/mfd-send/<i>"), which sends the channel's initial packet in
 * ops->init, then for each job finds zero pages (zero-page-detection
 * multifd), compresses (multifd-compression) and writes one packet of
 * multifd.h. mig/src fills one batch of up to 128 page offsets of one
 * RAMBlock and hands a full batch to the first idle channel with
 * worker_pool_submit_idle(): one lock round trip per batch, never per page.
 * The batch is lent to that channel; the one it was lent before (done,
 * since the channel was idle) becomes mig/src's next batch.
 *
 * The round protocol (sender here, receiver in multifd-recv.c; driven with
 * random interleavings by tests/unit/test-multifd-rounds.c).
 *
 * Invariant: no page's older copy lands in destination RAM after a newer
 * copy of it. Why it holds:
 *
 *  1. A page is sent at most once per round: it is sent only after its
 *     dirty bit was claimed, and a dirty sync (which sets the bits again)
 *     is followed by multifd_send_sync() before the first page claimed
 *     after it. So the copies of one page belong to different rounds.
 *  2. Sender: multifd_send_sync() hands out the partly filled batch, waits
 *     until every channel is idle (each page of the round was read from
 *     guest RAM and written), then queues a SYNC packet on every channel
 *     and puts MULTIFD_FLUSH on the main stream. A page of the next round
 *     is read only after that: copies of a page are read in round order,
 *     and on each channel every page of round K precedes the SYNC of round
 *     K, which precedes every page of round K+1 (a batch goes only to an
 *     idle channel, so after its queued SYNC).
 *  3. Receiver: a channel that reads its SYNC of round K has placed all its
 *     pages of round K; it then waits until mig/dst released round K.
 *  4. Receiver: mig/dst releases round K at the K-th MULTIFD_FLUSH record,
 *     only after every channel reached its SYNC of round K.
 *
 *  By 2-4, every page of round K is placed before any channel places a
 *  page of round K+1; with 1, the copies of a page land in the order they
 *  were read. Each rule is needed (tests/unit/test-multifd-rounds.c fails
 *  without any of them): without the partial batch's hand-over before the
 *  SYNCs (2), a page of round K follows the SYNC and the destination lacks
 *  it at the flush; without the wait for idle channels (2), a channel may
 *  read a page for round K+1 before a stalled one reads it for round K, and
 *  the older copy lands last; without the wait at the SYNC (3), a fast
 *  channel places round K+1 while a slow one still places round K; without
 *  the wait at the flush (4), mig/dst reads on and the channels start round
 *  K+1 with pages of round K still unplaced.
 *
 * The page path ends here: the multifd sink's page hooks (ram-sink.h) are
 * at the end of this file, so a dirty page goes from the dirty scan
 * straight into a batch; the transport's set-up, counters and the running
 * migration's sender are in ram-sink-multifd.c.
 *
 * Locks: ms->lock (cancel against connect and free) is a leaf; the pool's
 * lock is its own (no hook runs under it). ram-sink-multifd.c's
 * current.lock is taken before ms->lock.
 */
#include "qemu/osdep.h"
#include "qemu/iov.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "qemu/bufferiszero.h"
#include "qemu/cutils.h"
#include "qemu/tsan.h"
#include "qemu/worker-pool.h"
#include "system/memory.h"
#include "migration/qemu-file.h"
#include "channel.h"
#include "multifd.h"
#include "multifd-compress.h"
#include "multifd-send.h"
#include "migration/core/options.h"
#include "ram-codec.h"
#include "ram-sink.h"
#include <sys/socket.h>

typedef struct MultifdBatch {
    RAMBlock *rb;
    uint32_t num;
    bool sync;                  /* end the round after these pages */
    uint64_t offset[MULTIFD_PACKET_PAGES];  /* byte offsets in rb */
} MultifdBatch;

typedef struct MultifdSendChannel {
    MultifdSender *ms;          /* read-only */
    int id;                     /* read-only: also its worker's index */
    /*
     * ms->lock: set once connected (mig/src); our reference. Its worker
     * writes on it; cancel (any thread) shuts it down; freed with the sender.
     */
    Channel *ch;
    /*
     * mig/src's: the batch lent to this channel by the last hand-over. Its
     * worker reads it until the channel is idle again; the next hand-over
     * to this channel (which finds it idle) takes it back.
     */
    MultifdBatch *lent;

    /* Its worker's own (codec made before the worker starts, freed after the join). */
    void *codec;
    uint8_t *cbuf;
    size_t cbuf_size;
    MultiFDPacketHdr hdr;
    uint64_t offs[MULTIFD_PACKET_PAGES];
    const uint8_t *normal[MULTIFD_PACKET_PAGES];
    struct iovec iov[3 + MULTIFD_PACKET_PAGES];
} MultifdSendChannel;

struct MultifdSender {
    /* Read-only once made. */
    int n;                      /* multifd-channels */
    bool detect_zero;           /* zero-page-detection multifd */
    const MultifdCompressOps *ops;  /* multifd-compression */
    MultifdSendChannel *ch;     /* n channels */
    /*
     * Worker i serves channel i ("mig/mfd-send/<i>"): init sends the
     * initial packet, each job is one batch (one packet). mig/src submits;
     * the pool's first failure is the sender's; freed with the sender.
     */
    WorkerPool *pool;
    MultifdBatch sync_batch;    /* read-only: no pages, SYNC; every channel sends it */

    GMutex lock;                /* ms->lock: cancel against connect and free */
    bool shut_down;             /* ms->lock: cancel came; a channel connected later starts shut */

    /* mig/src's own. */
    MultifdBatch *batch;        /* being filled */
    int next;                   /* round-robin start for the next batch */
    uint64_t bytes_counted;     /* channel bytes already counted on the main stream */

    /* Counters: the workers add (atomically), anyone reads while the sender lives. */
    MultifdSendStats stats;
    uint64_t packet_num;        /* atomic: numbers packets across channels */
};


static void ms_lock(MultifdSender *ms)
{
    tsan_g_mutex_lock(&ms->lock);
}

static void ms_unlock(MultifdSender *ms)
{
    tsan_g_mutex_unlock(&ms->lock);
}

static void stat_add(uint64_t *c, uint64_t v)
{
    __atomic_fetch_add(c, v, __ATOMIC_RELAXED);
}

int multifd_sender_channels(MultifdSender *ms)
{
    return ms->n;
}

void multifd_sender_stats(MultifdSender *ms, MultifdSendStats *st)
{
    st->normal_pages = __atomic_load_n(&ms->stats.normal_pages, __ATOMIC_RELAXED);
    st->zero_pages = __atomic_load_n(&ms->stats.zero_pages, __ATOMIC_RELAXED);
    st->bytes = __atomic_load_n(&ms->stats.bytes, __ATOMIC_RELAXED);
    st->packets = __atomic_load_n(&ms->stats.packets, __ATOMIC_RELAXED);
}

/* Writes the whole iovec. 0, or -errno. Counted once all of it went. */
static int send_all(MultifdSendChannel *c, struct iovec *iov, int cnt)
{
    int ret = channel_writev_all(c->ch, iov, cnt);

    if (!ret) {
        stat_add(&c->ms->stats.bytes, iov_size(iov, cnt));
    }
    return ret;
}

/* Worker @index, before its first batch: the channel's initial packet. */
static int multifd_send_init_msg(void *opaque, int index, Error **errp)
{
    MultifdSendChannel *c = &((MultifdSender *)opaque)->ch[index];
    MultiFDInit msg = {
        .magic = GUINT32_TO_BE(MULTIFD_MAGIC),
        .version = GUINT32_TO_BE(MULTIFD_VERSION),
        .id = c->id,
    };
    struct iovec iov = { .iov_base = &msg, .iov_len = sizeof(msg) };
    int ret = send_all(c, &iov, 1);

    if (ret < 0) {
        error_setg_errno(errp, -ret, "multifd: channel %d: cannot send its initial packet",
                         c->id);
        return ret;
    }
    return 0;
}

/* Worker @index: one packet for batch @job, zero pages found here, the rest compressed or in place. */
static int multifd_send_packet(void *opaque, int index, void *job, Error **errp)
{
    MultifdSender *ms = opaque;
    MultifdSendChannel *c = &ms->ch[index];
    const MultifdBatch *b = job;
    uint32_t normal = 0, zero = 0, n = b->num, flags = ms->ops->packet_flag;
    size_t body = 0;
    int iovcnt = 0, ret;

    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *host = b->rb->host + b->offset[i];

        if (ms->detect_zero && buffer_is_zero(host, TARGET_PAGE_SIZE)) {
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
    /*
     * The offsets array has room for a whole packet on the wire, used or
     * not, sync packets too: QEMU 7.2 and 10.0 read and write packets of
     * that fixed size (seen on their channels).
     */
    memset(c->offs + n, 0, (MULTIFD_PACKET_PAGES - n) * sizeof(uint64_t));
    c->iov[iovcnt++] = (struct iovec) { &c->hdr, sizeof(c->hdr) };
    c->iov[iovcnt++] = (struct iovec) { c->offs, sizeof(c->offs) };
    if (normal && c->codec) {
        ssize_t len = ms->ops->compress(c->codec, c->normal, normal, c->cbuf, c->cbuf_size,
                                        errp);

        if (len < 0) {
            return -EIO;
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
    c->hdr.packet_num = GUINT64_TO_BE(__atomic_fetch_add(&ms->packet_num, 1, __ATOMIC_RELAXED));
    if (n) {
        pstrcpy(c->hdr.ramblock, sizeof(c->hdr.ramblock), b->rb->idstr);
    }
    ret = send_all(c, c->iov, iovcnt);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "multifd: channel %d: write failed", c->id);
        return ret;
    }
    stat_add(&ms->stats.normal_pages, normal);
    stat_add(&ms->stats.zero_pages, zero);
    stat_add(&ms->stats.packets, 1);
    return 0;
}

void multifd_sender_shutdown(MultifdSender *ms)
{
    ms_lock(ms);
    ms->shut_down = true;
    for (int i = 0; i < ms->n; i++) {
        if (ms->ch[i].ch) {
            channel_shutdown(ms->ch[i].ch, CHANNEL_SHUT_BOTH);
        }
    }
    ms_unlock(ms);
}

/* worker_pool_stop(): a worker blocked in a write fails at once. */
static void multifd_send_wake(void *opaque)
{
    multifd_sender_shutdown(opaque);
}

static const WorkerPoolOps multifd_send_ops = {
    .init = multifd_send_init_msg,
    .run = multifd_send_packet,
    /* A batch is lent, never owned by its job: nothing to release. */
    .wake = multifd_send_wake,
};

/* mig/src: count what the channels wrote since last time on the main stream. */
static void multifd_count_bytes(MultifdSender *ms, QEMUFile *f)
{
    uint64_t now = __atomic_load_n(&ms->stats.bytes, __ATOMIC_RELAXED);

    qemu_file_count_side_bytes(f, now - ms->bytes_counted);
    ms->bytes_counted = now;
}

/* mig/src: the channels' first failure, copied onto @f. Always false. */
static bool multifd_failed(MultifdSender *ms, QEMUFile *f)
{
    Error *err = NULL;

    if (worker_pool_error(ms->pool, &err)) {
        qemu_file_set_error_msg(f, -EIO, "%s", error_get_pretty(err));
        error_free(err);
    } else {
        qemu_file_set_error_msg(f, -EIO, "multifd: the channels were stopped");
    }
    return false;
}

/* mig/src: the filled batch to the next idle channel (waiting for one). */
static bool multifd_hand_over(MultifdSender *ms, QEMUFile *f)
{
    int i = worker_pool_submit_idle(ms->pool, ms->next, ms->batch);
    MultifdBatch *back;

    if (i < 0) {
        multifd_count_bytes(ms, f);
        return multifd_failed(ms, f);
    }
    /* Channel i was idle: the batch lent to it before is done with. */
    back = ms->ch[i].lent;
    ms->ch[i].lent = ms->batch;
    back->num = 0;
    back->rb = NULL;
    ms->batch = back;
    ms->next = (i + 1) % ms->n;
    multifd_count_bytes(ms, f);
    return true;
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

bool multifd_send_settle(MultifdSender *ms, QEMUFile *f)
{
    bool ok;

    /* The pages of the open round only: no SYNC, so the round goes on after. */
    if (ms->batch->num && !multifd_hand_over(ms, f)) {
        return false;
    }
    ok = !worker_pool_wait_idle(ms->pool);
    multifd_count_bytes(ms, f);
    return ok || multifd_failed(ms, f);
}

bool multifd_send_sync(MultifdSender *ms, QEMUFile *f, bool wait)
{
    bool ok;

    if (ms->batch->num && !multifd_hand_over(ms, f)) {
        return false;
    }
    /*
     * Rule 2 of the invariant: every page of this round is read and
     * written before any channel sends its SYNC, and before mig/src reads
     * a page of the next round.
     */
    ok = !worker_pool_wait_idle(ms->pool);
    for (int i = 0; i < ms->n && ok; i++) {
        /* FIFO behind nothing (idle); the next batch goes to it only after this. */
        worker_pool_submit(ms->pool, i, &ms->sync_batch);
    }
    if (ok && wait) {
        ok = !worker_pool_wait_idle(ms->pool);
    }
    multifd_count_bytes(ms, f);
    if (!ok) {
        return multifd_failed(ms, f);
    }
    /*
     * Out now: the destination's channels wait at their SYNC until it
     * reads this record, and a channel that waits stops reading, so
     * holding the record in our buffer could stall the channels we wait
     * for.
     */
    ram_put_multifd_flush(f);
    qemu_fflush(f);
    return true;
}

MultifdSender *multifd_sender_new(Error **errp)
{
    MultifdSender *ms = g_new0(MultifdSender, 1);
    MultiFDCompression comp = migrate_multifd_compression();
    int level = comp == MULTIFD_COMPRESSION_ZSTD ? migrate_multifd_zstd_level()
                                                 : migrate_multifd_zlib_level();

    ms->n = migrate_multifd_channels();
    ms->ch = g_new0(MultifdSendChannel, ms->n);
    ms->batch = g_new0(MultifdBatch, 1);
    ms->sync_batch.sync = true;
    ms->detect_zero = migrate_zero_page_detection() == ZERO_PAGE_DETECTION_MULTIFD;
    ms->ops = multifd_compress_ops(comp);
    g_mutex_init(&ms->lock);
    ms->pool = worker_pool_new("mig/mfd-send/%d", ms->n, &multifd_send_ops, ms);
    for (int i = 0; i < ms->n; i++) {
        MultifdSendChannel *c = &ms->ch[i];

        c->ms = ms;
        c->id = i;
        c->lent = g_new0(MultifdBatch, 1);
    }
    for (int i = 0; i < ms->n; i++) {
        MultifdSendChannel *c = &ms->ch[i];

        if (comp != MULTIFD_COMPRESSION_NONE) {
            c->codec = ms->ops->send_new(level, errp);
            if (!c->codec) {
                multifd_sender_free(ms);
                return NULL;
            }
            c->cbuf_size = ms->ops->bound(MULTIFD_PACKET_PAGES);
            c->cbuf = g_malloc(c->cbuf_size);
        }
    }
    return ms;
}

bool multifd_sender_start_channel(MultifdSender *ms, int i, Channel *ch, Error **errp)
{
    MultifdSendChannel *c = &ms->ch[i];
    Error *err = NULL;
    int ret;

    assert(i >= 0 && i < ms->n && !c->ch);
    ms_lock(ms);
    c->ch = ch;
    if (ms->shut_down) {
        channel_shutdown(c->ch, CHANNEL_SHUT_BOTH);
    }
    ms_unlock(ms);
    ret = worker_pool_start(ms->pool, i, &err);
    if (ret < 0) {
        error_free(err);
        error_setg_errno(errp, -ret, "multifd: cannot create the thread of channel %d", i);
        return false;
    }
    return true;
}

bool multifd_sender_cancelled(MultifdSender *ms)
{
    bool cancelled;

    ms_lock(ms);
    cancelled = ms->shut_down;
    ms_unlock(ms);
    return cancelled;
}

void multifd_sender_free(MultifdSender *ms)
{
    if (!ms) {
        return;
    }
    /*
     * A worker may still be blocked writing to a destination that stopped
     * reading (the migration failed elsewhere): stop's wake shuts the
     * channels down. After a completion everything was written already.
     */
    worker_pool_free(ms->pool);
    for (int i = 0; i < ms->n; i++) {
        MultifdSendChannel *c = &ms->ch[i];

        if (c->ch) {
            channel_unref(c->ch);
        }
        if (c->codec) {
            ms->ops->send_free(c->codec);
        }
        g_free(c->cbuf);
        g_free(c->lent);
    }
    g_mutex_clear(&ms->lock);
    g_free(ms->batch);
    g_free(ms->ch);
    g_free(ms);
}

uint64_t multifd_sender_unsent_bytes(MultifdSender *ms)
{
    uint64_t unsent = 0;

    ms_lock(ms);
    for (int i = 0; i < ms->n; i++) {
        if (ms->ch[i].ch) {
            unsent += mig_channel_unsent_bytes(ms->ch[i].ch);
        }
    }
    ms_unlock(ms);
    return unsent;
}

void multifd_sender_stop(MultifdSender *ms)
{
    worker_pool_stop(ms->pool, NULL);
}

/* ---- The multifd sink's page hooks (ram-sink.h): mig/src's page path ---- */

void multifd_sink_put_page(void *sink, QEMUFile *f, RAMBlock *rb, uint64_t page,
                           const uint8_t *data)
{
    MultifdSink *s = sink;

    ram_put_record(&s->rec, f, rb, page, data);
}

void multifd_sink_put_word(void *sink, QEMUFile *f, RAMBlock *rb, uint64_t word,
                           unsigned long bits, unsigned long zero)
{
    MultifdSink *s = sink;
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
bool multifd_sink_takes_words(void *sink)
{
    MultifdSink *s = sink;

    return s->ms != NULL;
}

bool multifd_sink_new_round(void *sink, QEMUFile *f)
{
    MultifdSink *s = sink;

    return !s->ms || multifd_send_sync(s->ms, f, false);
}

bool multifd_sink_settle(void *sink, QEMUFile *f)
{
    MultifdSink *s = sink;

    return !s->ms || multifd_send_settle(s->ms, f);
}

bool multifd_sink_drain(void *sink, QEMUFile *f)
{
    MultifdSink *s = sink;

    /* Every page in the channels must be placed before the device state loads. */
    if (!s->ms || !multifd_send_sync(s->ms, f, true)) {
        return !s->ms;
    }
    /*
     * Nothing more goes on the channels (the device state is on the main
     * stream): end each one cleanly now, while no worker writes it and
     * before the stop shuts them down, so a TLS destination reads a
     * close_notify, not a cut (which it must take for an attack).
     */
    for (int i = 0; i < s->ms->n; i++) {
        int ret = s->ms->ch[i].ch ? channel_end_write(s->ms->ch[i].ch) : 0;

        if (ret < 0) {
            qemu_file_set_error_msg(f, ret, "multifd: channel %d: ending it failed: %s", i,
                                    channel_error_detail(s->ms->ch[i].ch, true) ?:
                                    g_strerror(-ret));
            return false;
        }
    }
    return true;
}

void multifd_sink_restart(void *sink)
{
    MultifdSink *s = sink;

    s->rec.last_block = NULL;
}

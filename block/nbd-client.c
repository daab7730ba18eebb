/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One connection of the nbd row to its server: the handshake bounded in
 * time, requests from any thread, and the thread that reads the replies.
 * The row (nbd.c) turns block-layer requests into these.
 *
 * Threads: requests come from any thread (device workers, a job) and each
 * blocks its own thread; any number are in flight at once, each under its
 * own cookie. One thread per connection, "nbd/recv", reads every reply
 * (nbd-reply.c) and completes the request it names.
 *
 * The invariant: every request put in the table is completed exactly
 * once, by the receiving thread, and its buffer is written only before
 * that. Why it holds:
 *   1. a request enters c->inflight (under c->lock) only while !c->dead;
 *   2. only the receiver takes requests out: one at the last message of
 *      its reply, or all of them when it stops (end of stream, a failed
 *      read, a protocol error), which it does under c->lock together with
 *      setting c->dead, after shutting the channel down; with 1, nothing
 *      enters after that and nothing is left behind;
 *   3. a sender whose write fails shuts the channel down, so the
 *      receiver's next read fails and 2 applies: nobody waits for a reply
 *      that cannot come;
 *   4. a submitter sleeps until its ->done, which the receiver sets under
 *      c->lock after its last write into the request's buffer.
 * So a server killed mid-request (EOF, a reset) fails everything in flight
 * with -EIO, and later requests fail at once: no hang, and the node stays
 * in the graph to report the errors. No reconnection.
 *
 * c->send_lock and c->lock are never held together.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/tsan.h"
#include "qemu/bswap.h"
#include "qemu/thread.h"
#include "io/channel.h"
#include "nbd-int.h"

typedef struct NbdClientRequest {
    NbdRequest r;               /* the parser's view (nbd-int.h) */
    GCond cond;
    bool done;                  /* c->lock */
} NbdClientRequest;

struct NbdClient {
    Channel *ch;                /* fixed after open: the receiver reads, senders write */
    NbdExportInfo info;         /* fixed after open */
    QemuThread recv_thread;     /* fixed after open; joined by close */
    GMutex send_lock;           /* a request's header and payload go out together */
    GMutex lock;                /* the three below */
    GHashTable *inflight;       /* cookie -> NbdClientRequest, in flight (lock) */
    uint64_t next_cookie;       /* lock */
    bool dead;                  /* the connection is over: see the invariant (lock) */
};

/* ---- The receiving thread ---- */

static int recv_readv(void *opaque, const struct iovec *iov, int niov)
{
    NbdClient *c = opaque;
    int ret = channel_readv_all(c->ch, iov, niov);

    return ret == 1 ? -EPIPE : ret;
}

static NbdRequest *recv_find(void *opaque, uint64_t cookie)
{
    NbdClient *c = opaque;
    NbdClientRequest *cr;

    tsan_g_mutex_lock(&c->lock);
    cr = g_hash_table_lookup(c->inflight, &cookie);
    tsan_g_mutex_unlock(&c->lock);
    return cr ? &cr->r : NULL;
}

static const NbdReplyOps recv_ops = {
    .readv = recv_readv,
    .find = recv_find,
};

/* Under c->lock: @cr's reply is over (invariant 2, 4). */
static void complete_locked(NbdClient *c, NbdClientRequest *cr)
{
    g_hash_table_remove(c->inflight, &cr->r.cookie);
    cr->done = true;
    g_cond_signal(&cr->cond);
}

static void *nbd_recv_thread(void *opaque)
{
    NbdClient *c = opaque;
    GHashTableIter it;
    gpointer value;
    int ret;

    for (;;) {
        NbdRequest *req;

        ret = nbd_reply_recv(&recv_ops, c, &c->info, &req);
        if (ret < 0) {
            break;
        }
        if (ret == 1) {
            tsan_g_mutex_lock(&c->lock);
            complete_locked(c, (NbdClientRequest *)req);
            tsan_g_mutex_unlock(&c->lock);
        }
    }
    if (ret == -EPROTO) {
        error_report("NBD server %s broke the protocol: connection dropped",
                     channel_peer(c->ch));
    }
    channel_shutdown(c->ch, CHANNEL_SHUT_BOTH);
    tsan_g_mutex_lock(&c->lock);
    c->dead = true;
    g_hash_table_iter_init(&it, c->inflight);
    while (g_hash_table_iter_next(&it, NULL, &value)) {
        NbdClientRequest *cr = value;

        g_hash_table_iter_steal(&it);
        cr->r.ret = -EIO;       /* whatever an earlier chunk said: the reply never ended */
        cr->done = true;
        g_cond_signal(&cr->cond);
    }
    tsan_g_mutex_unlock(&c->lock);
    return NULL;
}

/* ---- Requests (any thread) ---- */

static void put_header(uint8_t *h, uint16_t flags, uint16_t type, uint64_t cookie,
                       uint64_t offset, uint32_t length)
{
    stl_be_p(h, NBD_REQUEST_MAGIC);
    nbd_st16(h + 4, flags);
    nbd_st16(h + 6, type);
    stq_be_p(h + 8, cookie);
    stq_be_p(h + 16, offset);
    stl_be_p(h + 24, length);
}

/*
 * One request on the wire, waited for: 0 or -errno. @iov: where a READ's
 * data goes, or a WRITE's data. @status: a BLOCK_STATUS's extent.
 */
int nbd_client_request(NbdClient *c, uint16_t type, uint16_t flags, uint64_t offset,
                       uint32_t length, const struct iovec *iov, int niov, NbdRequest *status)
{
    NbdClientRequest cr = {
        .r = { .type = type, .flags = flags, .offset = offset, .length = length,
               .iov = type == NBD_CMD_READ ? iov : NULL, .niov = niov },
    };
    uint8_t h[NBD_REQUEST_SIZE];
    struct iovec local[17];
    struct iovec *v = local;
    int nv = 1, ret;

    tsan_g_mutex_lock(&c->lock);
    if (c->dead) {
        tsan_g_mutex_unlock(&c->lock);
        return -EIO;
    }
    cr.r.cookie = c->next_cookie++;
    g_cond_init(&cr.cond);
    g_hash_table_insert(c->inflight, &cr.r.cookie, &cr);
    tsan_g_mutex_unlock(&c->lock);

    put_header(h, flags, type, cr.r.cookie, offset, length);
    if (type == NBD_CMD_WRITE) {
        if (niov + 1 > (int)ARRAY_SIZE(local)) {
            v = g_new(struct iovec, niov + 1);
        }
        memcpy(v + 1, iov, niov * sizeof(*iov));
        nv += niov;
    }
    v[0] = (struct iovec) { .iov_base = h, .iov_len = sizeof(h) };
    tsan_g_mutex_lock(&c->send_lock);
    ret = channel_writev_all(c->ch, v, nv);
    tsan_g_mutex_unlock(&c->send_lock);
    if (ret < 0) {
        channel_shutdown(c->ch, CHANNEL_SHUT_BOTH);     /* invariant 3 */
    }
    if (v != local) {
        g_free(v);
    }

    tsan_g_mutex_lock(&c->lock);
    while (!cr.done) {
        tsan_g_cond_wait(&cr.cond, &c->lock);
    }
    tsan_g_mutex_unlock(&c->lock);
    g_cond_clear(&cr.cond);
    ret = cr.r.ret;
    if (status) {
        *status = cr.r;
    }
    nbd_request_cleanup(&cr.r);
    return ret;
}

/*
 * A server that accepts and then says nothing (qemu-nbd serving another
 * client: --shared=1 is its default) would hold the opener, under the
 * BQL, forever: a watchdog shuts the channel down at the deadline, which
 * fails the handshake's blocked read.
 */
typedef struct Watchdog {
    GMutex lock;
    GCond cond;
    bool done;                  /* the handshake is over (lock) */
    bool fired;                 /* the deadline passed first (lock) */
    Channel *ch;                /* fixed */
    gint64 deadline;            /* fixed: g_get_monotonic_time() units */
    QemuThread thread;
} Watchdog;

static void *watchdog_thread(void *opaque)
{
    Watchdog *w = opaque;

    tsan_g_mutex_lock(&w->lock);
    while (!w->done && tsan_g_cond_wait_until(&w->cond, &w->lock, w->deadline)) {
        /* woken early: look again */
    }
    if (!w->done) {
        w->fired = true;
        channel_shutdown(w->ch, CHANNEL_SHUT_BOTH);
    }
    tsan_g_mutex_unlock(&w->lock);
    return NULL;
}

static int handshake_bounded(NbdClient *c, const char *export, TLSCreds *creds,
                             const char *hostname, uint64_t seconds, Error **errp)
{
    Watchdog w = { .ch = c->ch,
                   .deadline = g_get_monotonic_time() + seconds * G_USEC_PER_SEC };
    Error *local_err = NULL;
    int ret;

    g_mutex_init(&w.lock);
    g_cond_init(&w.cond);
    ret = qemu_thread_create(&w.thread, "nbd/open", watchdog_thread, &w);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "Could not start the NBD open watchdog");
        goto out;
    }
    /* With TLS, c->ch becomes the TLS channel over w.ch, which it keeps alive. */
    ret = nbd_client_handshake(&c->ch, export, creds, hostname, &c->info, &local_err);
    tsan_g_mutex_lock(&w.lock);
    w.done = true;
    g_cond_signal(&w.cond);
    tsan_g_mutex_unlock(&w.lock);
    qemu_thread_join(&w.thread);
    if (w.fired && ret == 0) {
        ret = -ETIMEDOUT;       /* done at the deadline: the channel is shut, unusable */
    }
    if (w.fired) {
        error_free(local_err);
        error_setg(errp, "NBD server %s did not complete the handshake within %" PRIu64
                   " s", channel_peer(c->ch), seconds);
    } else {
        error_propagate(errp, local_err);
    }
out:
    g_cond_clear(&w.cond);
    g_mutex_clear(&w.lock);
    return ret < 0 ? ret : 0;
}

static void nbd_client_free(NbdClient *c)
{
    if (c->ch) {
        channel_unref(c->ch);
        c->ch = NULL;
    }
    if (c->inflight) {
        g_hash_table_destroy(c->inflight);
        c->inflight = NULL;
    }
    g_mutex_clear(&c->lock);
    g_mutex_clear(&c->send_lock);
    g_free(c);
}

NbdClient *nbd_client_open(Channel *ch, const char *export, TLSCreds *creds,
                           const char *hostname, uint64_t timeout_s, Error **errp)
{
    NbdClient *c = g_new0(NbdClient, 1);
    int ret;

    c->ch = ch;
    g_mutex_init(&c->lock);
    g_mutex_init(&c->send_lock);
    c->inflight = g_hash_table_new(g_int64_hash, g_int64_equal);
    ret = handshake_bounded(c, export, creds, hostname, timeout_s, errp);
    if (ret == 0) {
        ret = qemu_thread_create(&c->recv_thread, "nbd/recv", nbd_recv_thread, c);
        if (ret < 0) {
            error_setg_errno(errp, -ret, "Could not start the NBD receiving thread");
        }
    }
    if (ret < 0) {
        nbd_client_free(c);
        return NULL;
    }
    return c;
}

const NbdExportInfo *nbd_client_info(NbdClient *c)
{
    return &c->info;
}

void nbd_client_close(NbdClient *c)
{
    uint8_t h[NBD_REQUEST_SIZE];
    bool dead;

    tsan_g_mutex_lock(&c->lock);
    dead = c->dead;
    tsan_g_mutex_unlock(&c->lock);
    if (!dead) {
        /* A soft disconnect: nothing is in flight (the layer's contract for close). */
        put_header(h, 0, NBD_CMD_DISC, 0, 0, 0);
        tsan_g_mutex_lock(&c->send_lock);
        channel_write_all(c->ch, h, sizeof(h));
        tsan_g_mutex_unlock(&c->send_lock);
    }
    /* Queued bytes still leave before the FIN; the receiver then sees the end. */
    channel_shutdown(c->ch, CHANNEL_SHUT_BOTH);
    qemu_thread_join(&c->recv_thread);
    nbd_client_free(c);
}

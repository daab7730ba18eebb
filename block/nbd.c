/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The "nbd" protocol row: a node whose bytes are an export of an NBD
 * server, over a unix or tcp socket. Options as QEMU's BlockdevOptionsNbd
 * (server.type=unix|inet, server.path / server.host + server.port,
 * export) or one of QEMU's filenames (nbd-addr.c). The handshake is
 * nbd-handshake.c; replies are read by nbd-reply.c.
 *
 * Threads: requests come from any thread (device workers, a job) and each
 * blocks its own thread; any number are in flight at once, each under its
 * own cookie. One thread per node, "nbd/recv", reads every reply and
 * completes the request it names.
 *
 * The invariant: every request put in the table is completed exactly
 * once, by the receiving thread, and its buffer is written only before
 * that. Why it holds:
 *   1. a request enters s->inflight (under s->lock) only while !s->dead;
 *   2. only the receiver takes requests out: one at the last message of
 *      its reply, or all of them when it stops (end of stream, a failed
 *      read, a protocol error), which it does under s->lock together with
 *      setting s->dead, after shutting the channel down; with 1, nothing
 *      enters after that and nothing is left behind;
 *   3. a sender whose write fails shuts the channel down, so the
 *      receiver's next read fails and 2 applies: nobody waits for a reply
 *      that cannot come;
 *   4. a submitter sleeps until its ->done, which the receiver sets under
 *      s->lock after its last write into the request's buffer.
 * So a server killed mid-request (EOF, a reset) fails everything in flight
 * with -EIO, and later requests fail at once: no hang, and the node stays
 * in the graph to report the errors. No reconnection (reconnect-delay is
 * accepted and ignored).
 *
 * s->send_lock and s->lock are never held together.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bswap.h"
#include "qemu/option.h"
#include "qemu/sockets.h"
#include "qemu/thread.h"
#include "io/channel.h"
#include "block-int.h"
#include "nbd-int.h"
#include "nbd-addr.h"

/* WRITE_ZEROES and TRIM carry no payload: their length is bounded by the field only. */
#define NBD_MAX_NOPAYLOAD (1u << 30)

typedef struct NbdClientRequest {
    NbdRequest r;               /* the parser's view (nbd-int.h) */
    GCond cond;
    bool done;                  /* s->lock */
} NbdClientRequest;

typedef struct BDRVNbdState {
    Channel *ch;                /* fixed after open: the receiver reads, senders write */
    NbdExportInfo info;         /* fixed after open */
    QemuThread recv_thread;     /* fixed after open; joined by close */
    GMutex send_lock;           /* a request's header and payload go out together */
    GMutex lock;                /* the three below */
    GHashTable *inflight;       /* cookie -> NbdClientRequest, in flight (lock) */
    uint64_t next_cookie;       /* lock */
    bool dead;                  /* the connection is over: see the invariant (lock) */
} BDRVNbdState;

static const char *const nbd_options[] = {
    "filename", "server.type", "server.path", "server.host", "server.port", "export",
    "host", "port", "path", "tls-creds", "tls-hostname", "reconnect-delay", "open-timeout",
    NULL,
};

/* ---- The receiving thread ---- */

static int recv_readv(void *opaque, const struct iovec *iov, int niov)
{
    BDRVNbdState *s = opaque;
    int ret = channel_readv_all(s->ch, iov, niov);

    return ret == 1 ? -EPIPE : ret;
}

static NbdRequest *recv_find(void *opaque, uint64_t cookie)
{
    BDRVNbdState *s = opaque;
    NbdClientRequest *cr;

    g_mutex_lock(&s->lock);
    cr = g_hash_table_lookup(s->inflight, &cookie);
    g_mutex_unlock(&s->lock);
    return cr ? &cr->r : NULL;
}

static const NbdReplyOps recv_ops = {
    .readv = recv_readv,
    .find = recv_find,
};

/* Under s->lock: @cr's reply is over (invariant 2, 4). */
static void complete_locked(BDRVNbdState *s, NbdClientRequest *cr)
{
    g_hash_table_remove(s->inflight, &cr->r.cookie);
    cr->done = true;
    g_cond_signal(&cr->cond);
}

static void *nbd_recv_thread(void *opaque)
{
    BDRVNbdState *s = opaque;
    GHashTableIter it;
    gpointer value;
    int ret;

    for (;;) {
        NbdRequest *req;

        ret = nbd_reply_recv(&recv_ops, s, &s->info, &req);
        if (ret < 0) {
            break;
        }
        if (ret == 1) {
            g_mutex_lock(&s->lock);
            complete_locked(s, (NbdClientRequest *)req);
            g_mutex_unlock(&s->lock);
        }
    }
    if (ret == -EPROTO) {
        error_report("NBD server %s broke the protocol: connection dropped",
                     channel_peer(s->ch));
    }
    channel_shutdown(s->ch, CHANNEL_SHUT_BOTH);
    g_mutex_lock(&s->lock);
    s->dead = true;
    g_hash_table_iter_init(&it, s->inflight);
    while (g_hash_table_iter_next(&it, NULL, &value)) {
        NbdClientRequest *cr = value;

        g_hash_table_iter_steal(&it);
        cr->r.ret = -EIO;       /* whatever an earlier chunk said: the reply never ended */
        cr->done = true;
        g_cond_signal(&cr->cond);
    }
    g_mutex_unlock(&s->lock);
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
static int nbd_request(BDRVNbdState *s, uint16_t type, uint16_t flags, uint64_t offset,
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

    g_mutex_lock(&s->lock);
    if (s->dead) {
        g_mutex_unlock(&s->lock);
        return -EIO;
    }
    cr.r.cookie = s->next_cookie++;
    g_cond_init(&cr.cond);
    g_hash_table_insert(s->inflight, &cr.r.cookie, &cr);
    g_mutex_unlock(&s->lock);

    put_header(h, flags, type, cr.r.cookie, offset, length);
    if (type == NBD_CMD_WRITE) {
        if (niov + 1 > (int)ARRAY_SIZE(local)) {
            v = g_new(struct iovec, niov + 1);
        }
        memcpy(v + 1, iov, niov * sizeof(*iov));
        nv += niov;
    }
    v[0] = (struct iovec) { .iov_base = h, .iov_len = sizeof(h) };
    g_mutex_lock(&s->send_lock);
    ret = channel_writev_all(s->ch, v, nv);
    g_mutex_unlock(&s->send_lock);
    if (ret < 0) {
        channel_shutdown(s->ch, CHANNEL_SHUT_BOTH);     /* invariant 3 */
    }
    if (v != local) {
        g_free(v);
    }

    g_mutex_lock(&s->lock);
    while (!cr.done) {
        g_cond_wait(&cr.cond, &s->lock);
    }
    g_mutex_unlock(&s->lock);
    g_cond_clear(&cr.cond);
    ret = cr.r.ret;
    if (status) {
        *status = cr.r;
    }
    nbd_request_cleanup(&cr.r);
    return ret;
}

static int check_range(BDRVNbdState *s, uint64_t offset, uint64_t bytes)
{
    /* A protocol node is not bounds-checked by io.c; an export does not grow. */
    if (offset > s->info.size || bytes > s->info.size - offset) {
        return -EIO;
    }
    return 0;
}

static bool aligned(BDRVNbdState *s, uint64_t offset, uint64_t bytes)
{
    return !((offset | bytes) & (s->info.min_block - 1));
}

/* The slice [@off, @off + @len) of @iov into @out (room for @niov entries): its count. */
static int iov_slice(const struct iovec *iov, int niov, uint64_t off, uint64_t len,
                     struct iovec *out)
{
    int n = 0;

    for (int i = 0; i < niov && len; i++) {
        if (off >= iov[i].iov_len) {
            off -= iov[i].iov_len;
            continue;
        }
        out[n].iov_base = (uint8_t *)iov[i].iov_base + off;
        out[n].iov_len = MIN(iov[i].iov_len - off, len);
        len -= out[n++].iov_len;
        off = 0;
    }
    return n;
}

/* READ or WRITE in pieces the server takes (max_block, a multiple of min_block). */
static int nbd_rw(BDRVNbdState *s, uint16_t type, uint16_t flags, uint64_t offset,
                  uint64_t bytes, const struct iovec *iov, int niov)
{
    g_autofree struct iovec *piece = g_new(struct iovec, niov);
    uint64_t done = 0;
    int ret = 0;

    while (done < bytes && ret == 0) {
        uint32_t len = MIN(bytes - done, s->info.max_block);
        int n = iov_slice(iov, niov, done, len, piece);

        ret = nbd_request(s, type, flags, offset + done, len, piece, n, NULL);
        done += len;
    }
    return ret;
}

static int nbd_preadv(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                      const struct iovec *iov, int niov)
{
    BDRVNbdState *s = bs->opaque;
    uint64_t start, end, copied = 0;
    g_autofree uint8_t *bounce = NULL;
    struct iovec biov;
    int ret = check_range(s, offset, bytes);

    if (ret < 0 || aligned(s, offset, bytes)) {
        return ret < 0 ? ret : nbd_rw(s, NBD_CMD_READ, 0, offset, bytes, iov, niov);
    }
    /* The server asked for aligned requests: read the aligned span and copy. */
    start = offset & ~(uint64_t)(s->info.min_block - 1);
    end = MIN(DIV_ROUND_UP(offset + bytes, s->info.min_block) * s->info.min_block,
              s->info.size);
    bounce = g_malloc(end - start);
    biov = (struct iovec) { .iov_base = bounce, .iov_len = end - start };
    ret = nbd_rw(s, NBD_CMD_READ, 0, start, end - start, &biov, 1);
    for (int i = 0; i < niov && ret == 0; i++) {
        memcpy(iov[i].iov_base, bounce + (offset - start) + copied, iov[i].iov_len);
        copied += iov[i].iov_len;
    }
    return ret;
}

static int nbd_flush(BlockDriverState *bs)
{
    BDRVNbdState *s = bs->opaque;

    if (!(s->info.flags & NBD_FLAG_SEND_FLUSH) || (bs->open_flags & BDRV_O_NO_FLUSH)) {
        return 0;       /* a server without FLUSH writes through */
    }
    return nbd_request(s, NBD_CMD_FLUSH, 0, 0, 0, NULL, 0, NULL);
}

/* BDRV_REQ_FUA as the server can do it: the flag, or a flush after. */
static uint16_t fua_flag(BDRVNbdState *s, int flags)
{
    return (flags & BDRV_REQ_FUA) && (s->info.flags & NBD_FLAG_SEND_FUA) ?
           NBD_CMD_FLAG_FUA : 0;
}

static int nbd_after_write(BlockDriverState *bs, int ret, int flags)
{
    BDRVNbdState *s = bs->opaque;

    if (ret == 0 && (flags & BDRV_REQ_FUA) && !(s->info.flags & NBD_FLAG_SEND_FUA)) {
        ret = nbd_flush(bs);
    }
    return ret;
}

static int nbd_pwritev(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                       const struct iovec *iov, int niov, int flags)
{
    BDRVNbdState *s = bs->opaque;
    int ret = check_range(s, offset, bytes);

    if (ret == 0 && !aligned(s, offset, bytes)) {
        ret = -EINVAL;  /* no read-modify-write yet: the server said it needs alignment */
    }
    if (ret == 0) {
        ret = nbd_rw(s, NBD_CMD_WRITE, fua_flag(s, flags), offset, bytes, iov, niov);
    }
    return nbd_after_write(bs, ret, flags);
}

/* WRITE_ZEROES or TRIM, in pieces whose length fits the field. */
static int nbd_nopayload(BDRVNbdState *s, uint16_t type, uint16_t flags, uint64_t offset,
                         uint64_t bytes)
{
    int ret = check_range(s, offset, bytes);

    if (ret == 0 && !aligned(s, offset, bytes)) {
        ret = -EINVAL;
    }
    while (ret == 0 && bytes) {
        uint32_t len = MIN(bytes, NBD_MAX_NOPAYLOAD);

        ret = nbd_request(s, type, flags, offset, len, NULL, 0, NULL);
        offset += len;
        bytes -= len;
    }
    return ret;
}

static int nbd_pwrite_zeroes(BlockDriverState *bs, uint64_t offset, uint64_t bytes, int flags)
{
    BDRVNbdState *s = bs->opaque;
    int ret;

    if (!(s->info.flags & NBD_FLAG_SEND_WRITE_ZEROES)) {
        /* Zeroes written as data, a chunk at a time. */
        g_autofree void *zero = g_malloc0(MIN(bytes, 1 << 20));

        ret = 0;
        while (bytes && ret == 0) {
            struct iovec iov = { .iov_base = zero, .iov_len = MIN(bytes, 1 << 20) };

            ret = nbd_pwritev(bs, offset, iov.iov_len, &iov, 1, flags & BDRV_REQ_FUA);
            offset += iov.iov_len;
            bytes -= iov.iov_len;
        }
        return ret;
    }
    /* Without MAY_UNMAP the range must stay allocated: NO_HOLE. */
    ret = nbd_nopayload(s, NBD_CMD_WRITE_ZEROES,
                        fua_flag(s, flags) |
                        ((flags & BDRV_REQ_MAY_UNMAP) ? 0 : NBD_CMD_FLAG_NO_HOLE),
                        offset, bytes);
    return nbd_after_write(bs, ret, flags);
}

static int nbd_pdiscard(BlockDriverState *bs, uint64_t offset, uint64_t bytes)
{
    BDRVNbdState *s = bs->opaque;

    if (!(s->info.flags & NBD_FLAG_SEND_TRIM)) {
        return 0;       /* a discard is advice */
    }
    return nbd_nopayload(s, NBD_CMD_TRIM, 0, offset, bytes);
}

static int64_t nbd_getlength(BlockDriverState *bs)
{
    BDRVNbdState *s = bs->opaque;

    return s->info.size;
}

static int nbd_block_status(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                            uint64_t *pnum, bool *is_zero_or_hole)
{
    BDRVNbdState *s = bs->opaque;
    NbdRequest st;
    int ret;

    uint64_t align = s->info.min_block;

    bytes = MIN(bytes, NBD_MAX_NOPAYLOAD);
    if (align > 1 && (offset & (align - 1))) {
        /* The server wants aligned requests: up to the next boundary, say data. */
        bytes = MIN(bytes, align - (offset & (align - 1)));
    } else if (align > 1 && bytes >= align) {
        bytes &= ~(align - 1);
    }
    if (!s->info.base_allocation || !aligned(s, offset, bytes)) {
        *pnum = bytes;
        *is_zero_or_hole = false;
        return 0;
    }
    ret = nbd_request(s, NBD_CMD_BLOCK_STATUS, NBD_CMD_FLAG_REQ_ONE, offset, bytes, NULL, 0,
                      &st);
    if (ret < 0) {
        return ret;
    }
    *pnum = st.status_length;
    /* A hole that does not read as zeroes holds undefined bytes: copy it as data. */
    *is_zero_or_hole = st.status_flags & NBD_STATE_ZERO;
    return 0;
}

/* ---- Open and close (BQL) ---- */

/*
 * A server that accepts and then says nothing (qemu-nbd serving another
 * client: --shared=1 is its default) would hold the opener, under the
 * BQL, forever: a watchdog shuts the channel down at the deadline, which
 * fails the handshake's blocked read.
 */
#define NBD_OPEN_TIMEOUT_DEFAULT 60

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

    g_mutex_lock(&w->lock);
    while (!w->done && g_cond_wait_until(&w->cond, &w->lock, w->deadline)) {
        /* woken early: look again */
    }
    if (!w->done) {
        w->fired = true;
        channel_shutdown(w->ch, CHANNEL_SHUT_BOTH);
    }
    g_mutex_unlock(&w->lock);
    return NULL;
}

static int handshake_bounded(BDRVNbdState *s, const char *export, uint64_t seconds,
                             Error **errp)
{
    Watchdog w = { .ch = s->ch,
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
    ret = nbd_handshake(s->ch, export, &s->info, &local_err);
    g_mutex_lock(&w.lock);
    w.done = true;
    g_cond_signal(&w.cond);
    g_mutex_unlock(&w.lock);
    qemu_thread_join(&w.thread);
    if (w.fired && ret == 0) {
        ret = -ETIMEDOUT;       /* done at the deadline: the channel is shut, unusable */
    }
    if (w.fired) {
        error_free(local_err);
        error_setg(errp, "NBD server %s did not complete the handshake within %" PRIu64
                   " s", channel_peer(s->ch), seconds);
    } else {
        error_propagate(errp, local_err);
    }
out:
    g_cond_clear(&w.cond);
    g_mutex_clear(&w.lock);
    return ret < 0 ? ret : 0;
}

static void nbd_state_free(BDRVNbdState *s)
{
    if (s->ch) {
        channel_unref(s->ch);
        s->ch = NULL;
    }
    if (s->inflight) {
        g_hash_table_destroy(s->inflight);
        s->inflight = NULL;
    }
    g_mutex_clear(&s->lock);
    g_mutex_clear(&s->send_lock);
}

static int nbd_open(BlockDriverState *bs, QemuOpts *opts, int flags, Error **errp)
{
    BDRVNbdState *s = bs->opaque;
    BdrvNode *n = bdrv_node(bs);
    g_auto(NbdAddr) addr = { 0 };
    uint64_t timeout;
    int fd, ret;

    g_mutex_init(&s->lock);
    g_mutex_init(&s->send_lock);
    s->inflight = g_hash_table_new(g_int64_hash, g_int64_equal);
    if (!bdrv_check_options(bs, opts, nbd_options, errp) ||
        !qemu_opt_get_number(opts, "open-timeout", 0, &timeout, errp) ||
        !nbd_addr_from_opts(opts, n->opt_prefix, &addr, errp)) {
        ret = -EINVAL;
        goto fail;
    }
    /*
     * No reconnection yet: reconnect-delay is ignored, a failed connect
     * fails the open at once, and open-timeout (default 60 s) bounds the
     * handshake.
     */
    timeout = timeout ? MIN(timeout, 24 * 3600) : NBD_OPEN_TIMEOUT_DEFAULT;
    fd = addr.is_unix ? unix_connect_path(addr.path, errp)
                      : inet_connect_host_port(addr.host, addr.port, errp);
    if (fd < 0) {
        ret = -ECONNREFUSED;
        goto fail;
    }
    s->ch = channel_socket_new(fd);
    ret = handshake_bounded(s, addr.export, timeout, errp);
    if (ret < 0) {
        goto fail;
    }
    if ((s->info.flags & NBD_FLAG_READ_ONLY) && (flags & BDRV_O_RDWR)) {
        /* As QEMU's; with auto-read-only=on the layer opens again read-only. */
        error_setg(errp, "NBD export is read-only");
        ret = -EACCES;
        goto fail;
    }
    g_free(bs->filename);
    bs->filename = nbd_addr_to_filename(&addr);
    ret = qemu_thread_create(&s->recv_thread, "nbd/recv", nbd_recv_thread, s);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "Could not start the NBD receiving thread");
        goto fail;
    }
    return 0;

fail:
    nbd_state_free(s);
    return ret;
}

static void nbd_close(BlockDriverState *bs)
{
    BDRVNbdState *s = bs->opaque;
    uint8_t h[NBD_REQUEST_SIZE];
    bool dead;

    g_mutex_lock(&s->lock);
    dead = s->dead;
    g_mutex_unlock(&s->lock);
    if (!dead) {
        /* A soft disconnect: nothing is in flight (the layer's contract for close). */
        put_header(h, 0, NBD_CMD_DISC, 0, 0, 0);
        g_mutex_lock(&s->send_lock);
        channel_write_all(s->ch, h, sizeof(h));
        g_mutex_unlock(&s->send_lock);
    }
    /* Queued bytes still leave before the FIN; the receiver then sees the end. */
    channel_shutdown(s->ch, CHANNEL_SHUT_BOTH);
    qemu_thread_join(&s->recv_thread);
    nbd_state_free(s);
}

const BlockDriver bdrv_nbd = {
    .format_name = "nbd",
    .instance_size = sizeof(BDRVNbdState),
    .is_protocol = true,
    .protocol_prefixes = (const char *const[]) { "nbd:", "nbd+tcp:", "nbd+unix:", NULL },
    .open = nbd_open,
    .close = nbd_close,
    .preadv = nbd_preadv,
    .pwritev = nbd_pwritev,
    .pwrite_zeroes = nbd_pwrite_zeroes,
    .pdiscard = nbd_pdiscard,
    .flush = nbd_flush,
    .getlength = nbd_getlength,
    .block_status = nbd_block_status,
};

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One NBD client's thread: the handshake (server-handshake.c), then its
 * requests. The thread reads each request (and a write's payload) and
 * hands it to the first idle of its NBD_CLIENT_WORKERS workers, which
 * serves it through the export's BlockBackend and sends its reply; so a
 * mirror's pipelined writes proceed in parallel, and at most that many
 * requests (and payload buffers) exist per client. Nothing here takes the
 * BQL.
 *
 * Replies: each is one vectored write under ClientState.send_lock, so
 * replies of different requests never interleave on the wire; their
 * order is any (the protocol matches them by cookie).
 *
 * What it trusts: nothing from the wire before server-parse.c checked it.
 * A request header that cannot be trusted ends this client with a
 * warning, never anything else. Ending: the workers finish what they
 * hold (a disconnect's outstanding replies are owed), then stop; only
 * then does the thread mark itself done. Its export stays valid while it
 * runs: the main thread joins it before freeing the export (server-int.h).
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qapi/error.h"
#include "qemu/worker-pool.h"
#include "io/channel.h"
#include "qemu/tsan.h"
#include "nbd/server-int.h"

/* Block status descriptors in one reply at most: a client asks again for the rest. */
#define MAX_STATUS_DESCRIPTORS 4096
/* Requests of one client served at once, each by a worker of its own. */
#define NBD_CLIENT_WORKERS 8
/* Payload buffers up to this size are kept for reuse (a mirror's chunks are smaller). */
#define NBD_KEEP_BUFFER_SIZE (4u << 20)

/* ---- transmission ---- */

static uint32_t nbd_errno(int err)
{
    switch (-err) {
    case 0:
        return NBD_SUCCESS;
    case EPERM:
    case EACCES:
    case EROFS:
        return NBD_EPERM;
    case ENOMEM:
        return NBD_ENOMEM;
    case EINVAL:
        return NBD_EINVAL;
    case ENOSPC:
    case EFBIG:
        return NBD_ENOSPC;
    case EOVERFLOW:
        return NBD_EOVERFLOW;
    case ENOTSUP:
        return NBD_ENOTSUP;
    case ESHUTDOWN:
        return NBD_ESHUTDOWN;
    default:
        return NBD_EIO;
    }
}

static int send_simple(ClientState *cs, uint64_t cookie, uint32_t error, const void *data,
                       size_t len)
{
    uint8_t hdr[NBD_SIMPLE_REPLY_SIZE];
    struct iovec iov[2] = {
        { .iov_base = hdr, .iov_len = sizeof(hdr) },
        { .iov_base = (void *)data, .iov_len = len },
    };

    int ret;

    stl_be_p(hdr, NBD_SIMPLE_REPLY_MAGIC);
    stl_be_p(hdr + 4, error);
    stq_be_p(hdr + 8, cookie);
    tsan_g_mutex_lock(&cs->send_lock);
    ret = channel_writev_all(cs->ch, iov, len ? 2 : 1);
    tsan_g_mutex_unlock(&cs->send_lock);
    return ret;
}

/* One chunk, the last one of its reply: @pre (a few bytes of its own) then @data. */
static int send_chunk(ClientState *cs, uint64_t cookie, uint16_t type, const void *pre,
                      size_t pre_len, const void *data, size_t len)
{
    uint8_t hdr[NBD_STRUCTURED_REPLY_SIZE];
    struct iovec iov[3] = {
        { .iov_base = hdr, .iov_len = sizeof(hdr) },
        { .iov_base = (void *)pre, .iov_len = pre_len },
        { .iov_base = (void *)data, .iov_len = len },
    };

    stl_be_p(hdr, NBD_STRUCTURED_REPLY_MAGIC);
    stw_be_p(hdr + 4, NBD_REPLY_FLAG_DONE);
    stw_be_p(hdr + 6, type);
    int ret;

    stq_be_p(hdr + 8, cookie);
    stl_be_p(hdr + 16, pre_len + len);
    tsan_g_mutex_lock(&cs->send_lock);
    ret = channel_writev_all(cs->ch, iov, 3);
    tsan_g_mutex_unlock(&cs->send_lock);
    return ret;
}

/* A reply without data: an error chunk once structured replies are on, else simple. */
static int send_status(ClientState *cs, uint64_t cookie, uint32_t error, const char *msg)
{
    uint8_t pre[6];

    if (!error || !cs->structured) {
        return send_simple(cs, cookie, error, NULL, 0);
    }
    msg = msg ? msg : "";
    stl_be_p(pre, error);
    stw_be_p(pre + 4, strlen(msg));
    return send_chunk(cs, cookie, NBD_REPLY_TYPE_ERROR, pre, sizeof(pre), msg, strlen(msg));
}

/* A payload buffer: reused across requests, so a big write costs no fresh mapping. */
typedef struct NbdBuf {
    uint8_t *data;
    size_t size;
} NbdBuf;

static NbdBuf *buf_get(ClientState *cs, size_t len)
{
    NbdBuf *b = NULL;

    tsan_g_mutex_lock(&cs->buf_lock);
    if (cs->free_bufs->len) {
        b = g_ptr_array_steal_index_fast(cs->free_bufs, cs->free_bufs->len - 1);
    }
    tsan_g_mutex_unlock(&cs->buf_lock);
    b = b ? b : g_new0(NbdBuf, 1);
    if (b->size < len) {
        g_free(b->data);
        b->data = g_malloc(len);
        b->size = len;
    }
    return b;
}

static void buf_free(gpointer p)
{
    NbdBuf *b = p;

    g_free(b->data);
    g_free(b);
}

static void buf_put(ClientState *cs, NbdBuf *b)
{
    if (!b) {
        return;
    }
    tsan_g_mutex_lock(&cs->buf_lock);
    /* Big ones are not kept: a burst of 32 MiB reads must not stay resident. */
    if (cs->free_bufs->len <= NBD_CLIENT_WORKERS && b->size <= NBD_KEEP_BUFFER_SIZE) {
        g_ptr_array_add(cs->free_bufs, b);
        b = NULL;
    }
    tsan_g_mutex_unlock(&cs->buf_lock);
    if (b) {
        buf_free(b);
    }
}

static int do_read(ClientState *cs, const NbdRequest *req)
{
    NbdBuf *b = buf_get(cs, req->length);
    struct iovec iov = { .iov_base = b->data, .iov_len = req->length };
    uint8_t off[8];
    int ret = blk_preadv(cs->exp->blk, req->offset, &iov, 1);

    if (ret < 0) {
        ret = send_status(cs, req->cookie, nbd_errno(ret), "read failed");
    } else if (!cs->structured) {
        ret = send_simple(cs, req->cookie, NBD_SUCCESS, b->data, req->length);
    } else if (!req->length) {
        ret = send_chunk(cs, req->cookie, NBD_REPLY_TYPE_NONE, NULL, 0, NULL, 0);
    } else {
        stq_be_p(off, req->offset);
        ret = send_chunk(cs, req->cookie, NBD_REPLY_TYPE_OFFSET_DATA, off, sizeof(off),
                         b->data, req->length);
    }
    buf_put(cs, b);
    return ret;
}

static int do_block_status(ClientState *cs, const NbdRequest *req)
{
    unsigned max = (req->flags & NBD_CMD_FLAG_REQ_ONE) ? 1 : MAX_STATUS_DESCRIPTORS;
    g_autofree uint8_t *desc = g_malloc(8 * max);
    uint64_t off = req->offset, end = req->offset + req->length;
    uint32_t last = 0;
    uint8_t id[4];
    unsigned n = 0;

    while (off < end) {
        uint64_t pnum;
        unsigned st;
        uint32_t flags;
        int ret = blk_block_status(cs->exp->blk, off, end - off, &pnum, &st);

        if (ret < 0) {
            if (!n) {
                return send_status(cs, req->cookie, nbd_errno(ret), "block status failed");
            }
            break;                      /* what is known so far; the client asks again */
        }
        flags = (st & BDRV_BLOCK_DATA ? 0 : NBD_STATE_HOLE) |
                (st & BDRV_BLOCK_ZERO ? NBD_STATE_ZERO : 0);
        if (n && flags == last) {
            /* Fits: the descriptors' lengths add up to at most req->length. */
            stl_be_p(desc + 8 * (n - 1), ldl_be_p(desc + 8 * (n - 1)) + pnum);
        } else if (n == max) {
            break;
        } else {
            stl_be_p(desc + 8 * n, pnum);
            stl_be_p(desc + 8 * n + 4, flags);
            last = flags;
            n++;
        }
        off += pnum;
    }
    stl_be_p(id, NBD_META_ID_ALLOCATION);
    return send_chunk(cs, req->cookie, NBD_REPLY_TYPE_BLOCK_STATUS, id, sizeof(id), desc,
                      8 * n);
}

/* A checked request and, for a write, its payload: what a worker serves. */
typedef struct NbdJob {
    NbdRequest req;
    NbdBuf *buf;
} NbdJob;

/* One checked request (not a disconnect): its reply sent. 0, or -errno (the channel). */
static int serve(ClientState *cs, const NbdJob *job)
{
    const NbdRequest *req = &job->req;
    BlockBackend *blk = cs->exp->blk;
    int fua = (req->flags & NBD_CMD_FLAG_FUA) || cs->exp->writethrough ? BDRV_REQ_FUA : 0;
    struct iovec iov = { .iov_base = job->buf ? job->buf->data : NULL,
                         .iov_len = req->length };
    int ret;

    switch (req->type) {
    case NBD_CMD_READ:
        return do_read(cs, req);
    case NBD_CMD_BLOCK_STATUS:
        return do_block_status(cs, req);
    case NBD_CMD_WRITE:
        ret = blk_pwritev(blk, req->offset, &iov, 1, fua);
        break;
    case NBD_CMD_FLUSH:
        ret = blk_flush(blk);
        break;
    case NBD_CMD_TRIM:
        ret = blk_pdiscard(blk, req->offset, req->length);
        if (ret == 0 && fua) {
            ret = blk_flush(blk);
        }
        break;
    case NBD_CMD_WRITE_ZEROES:
        /*
         * A fast zero must not fall back to writing zeroes; the layer
         * cannot promise that, so say so and let the client choose.
         */
        if (req->flags & NBD_CMD_FLAG_FAST_ZERO) {
            ret = -ENOTSUP;
            break;
        }
        ret = blk_pwrite_zeroes(blk, req->offset, req->length,
                                fua | ((req->flags & NBD_CMD_FLAG_NO_HOLE) ? 0 :
                                       BDRV_REQ_MAY_UNMAP));
        break;
    default:
        ret = -EINVAL;                  /* nbd_parse_request let nothing else through */
        break;
    }
    return send_status(cs, req->cookie, nbd_errno(ret), ret < 0 ? strerror(-ret) : NULL);
}

static int worker_run(void *opaque, int index, void *job, Error **errp)
{
    ClientState *cs = opaque;
    NbdJob *j = job;
    int ret = serve(cs, j);

    buf_put(cs, j->buf);
    g_free(j);
    if (ret < 0) {
        /* The reply could not go out: the client is gone or being cut off. */
        error_setg_errno(errp, -ret, "NBD reply failed");
    }
    return ret;
}

static void worker_discard(void *opaque, int index, void *job)
{
    ClientState *cs = opaque;
    NbdJob *j = job;

    buf_put(cs, j->buf);
    g_free(j);
}

/* worker_pool_stop: a worker blocked sending to a client that reads nothing returns. */
static void worker_wake(void *opaque)
{
    ClientState *cs = opaque;

    channel_shutdown(cs->ch, CHANNEL_SHUT_BOTH);
}

static const WorkerPoolOps worker_ops = {
    .run = worker_run,
    .discard = worker_discard,
    .wake = worker_wake,
};

/* Reads requests until the client leaves, disconnects or sends one that cannot be trusted. */
static void read_requests(ClientState *cs, WorkerPool *pool)
{
    uint8_t hdr[NBD_REQUEST_SIZE];
    int next = 0;

    for (;;) {
        NbdRequestLimits lim = {
            .size = cs->exp->size, .writable = cs->exp->writable,
            .structured = cs->structured, .meta_allocation = cs->meta_allocation,
        };
        NbdJob *job;
        const char *why;
        int err;

        if (channel_read_all(cs->ch, hdr, sizeof(hdr))) {
            return;                     /* gone, or shut down by the main thread */
        }
        job = g_new0(NbdJob, 1);
        err = nbd_parse_request(hdr, &lim, &job->req, &why);
        if (err < 0) {
            warn_report("NBD client %s: %s: disconnecting", cs->c->peer, why);
            g_free(job);
            return;
        }
        /* A write's payload comes whatever we answer: read it to stay in step. */
        if (job->req.type == NBD_CMD_WRITE && job->req.length) {
            job->buf = buf_get(cs, job->req.length);
            if (channel_read_all(cs->ch, job->buf->data, job->req.length)) {
                worker_discard(cs, 0, job);
                return;
            }
        }
        if (err || job->req.type == NBD_CMD_DISC) {
            uint64_t cookie = job->req.cookie;

            worker_discard(cs, 0, job);
            if (!err || send_status(cs, cookie, err, why) < 0) {
                return;
            }
            continue;
        }
        if (!worker_pool_running(pool)) {
            /* No worker thread could start: serve it here, one at a time. */
            if (worker_run(cs, 0, job, NULL) < 0) {
                return;
            }
            continue;
        }
        next = worker_pool_submit_idle(pool, next, job);
        if (next < 0) {
            worker_discard(cs, 0, job);     /* a reply failed: the client is gone */
            return;
        }
        next = (next + 1) % NBD_CLIENT_WORKERS;
    }
}

static void transmission(ClientState *cs)
{
    WorkerPool *pool = worker_pool_new("nbd/worker%d", NBD_CLIENT_WORKERS, &worker_ops, cs);

    /* A worker that cannot start serves inline (the pool's rule): slower, still right. */
    for (int i = 0; i < NBD_CLIENT_WORKERS; i++) {
        worker_pool_start(pool, i, NULL);
    }
    read_requests(cs, pool);
    /* The replies owed are sent first (a disconnect waits for them), then the workers go. */
    worker_pool_wait_idle(pool);
    worker_pool_stop(pool, NULL);
    worker_pool_free(pool);
}

void *nbd_client_thread(void *opaque)
{
    NbdClient *c = opaque;
    ClientState cs = { .c = c, .s = c->server, .ch = c->ch };

    g_mutex_init(&cs.send_lock);
    g_mutex_init(&cs.buf_lock);
    cs.free_bufs = g_ptr_array_new_with_free_func(buf_free);
    if (nbd_handshake(&cs) == 1) {
        transmission(&cs);
    }
    /* The peer sees the end now, not when the main thread next reaps us. */
    channel_shutdown(c->ch, CHANNEL_SHUT_BOTH);
    if (cs.tls) {
        channel_unref(cs.tls);          /* and its reference to c->ch */
    }
    g_ptr_array_free(cs.free_bufs, TRUE);
    g_mutex_clear(&cs.send_lock);
    g_mutex_clear(&cs.buf_lock);
    tsan_g_mutex_lock(&c->server->lock);
    c->done = true;
    tsan_g_mutex_unlock(&c->server->lock);
    return NULL;
}

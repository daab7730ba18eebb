/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One NBD client's thread: the fixed newstyle handshake, then its
 * requests one at a time (the reply of each is sent before the next is
 * read, so replies never interleave). It never takes the BQL: requests go
 * to the export's BlockBackend, which any thread may use.
 *
 * What it trusts: nothing from the wire before server-parse.c checked it.
 * A malformed option is answered with an error and the handshake goes on;
 * a request header that cannot be trusted ends this client with a
 * warning, never anything else. Its export stays valid while it runs:
 * the main thread joins it before freeing the export (server-int.h).
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qapi/error.h"
#include "io/channel.h"
#include "nbd/server-int.h"

/* The context id SET_META_CONTEXT gives base:allocation (any number would do). */
#define META_ID_ALLOCATION  1
/* Block status descriptors in one reply at most: a client asks again for the rest. */
#define MAX_STATUS_DESCRIPTORS 4096

typedef struct ClientState {
    NbdClient *c;
    NbdServer *s;
    Channel *ch;
    bool no_zeroes;             /* NBD_FLAG_C_NO_ZEROES: no 124 bytes after EXPORT_NAME */
    bool structured;            /* NBD_OPT_STRUCTURED_REPLY was acknowledged */
    bool meta_allocation;       /* SET_META_CONTEXT chose base:allocation ... */
    char meta_name[NBD_MAX_STRING + 1];     /* ... for the export of this name */
    NbdExport *exp;             /* in transmission */
    uint8_t *buf;               /* request payloads (read and write data) */
    size_t buf_size;
} ClientState;

/* What the handshake tells of an export, copied under the lock. */
typedef struct ExportView {
    uint64_t size;
    bool writable;
    char *description;
} ExportView;

/* ---- handshake ---- */

static int send_rep(ClientState *cs, uint32_t option, uint32_t type, const void *data,
                    uint32_t len)
{
    uint8_t hdr[20];
    struct iovec iov[2] = {
        { .iov_base = hdr, .iov_len = sizeof(hdr) },
        { .iov_base = (void *)data, .iov_len = len },
    };

    stq_be_p(hdr, NBD_REP_MAGIC);
    stl_be_p(hdr + 8, option);
    stl_be_p(hdr + 12, type);
    stl_be_p(hdr + 16, len);
    return channel_writev_all(cs->ch, iov, len ? 2 : 1);
}

static int send_rep_err(ClientState *cs, uint32_t option, uint32_t type, const char *msg)
{
    return send_rep(cs, option, type, msg, strlen(msg));
}

static uint16_t transmission_flags(ClientState *cs, const ExportView *v)
{
    uint16_t f = NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH | NBD_FLAG_SEND_FUA |
                 NBD_FLAG_SEND_TRIM | NBD_FLAG_SEND_WRITE_ZEROES | NBD_FLAG_SEND_FAST_ZERO;

    if (!v->writable) {
        f |= NBD_FLAG_READ_ONLY;
    }
    if (cs->structured) {
        f |= NBD_FLAG_SEND_DF;
    }
    return f;
}

/* The export named @name into @v (and, with @take, made this client's): false if none. */
static bool export_lookup(ClientState *cs, const char *name, ExportView *v, bool take)
{
    NbdExport *exp;

    g_mutex_lock(&cs->s->lock);
    exp = nbd_export_find_name(cs->s, name);
    if (exp) {
        v->size = exp->size;
        v->writable = exp->writable;
        v->description = g_strdup(exp->description);
        if (take) {
            cs->c->exp = exp;
            cs->exp = exp;
        }
    }
    g_mutex_unlock(&cs->s->lock);
    return exp != NULL;
}

static int opt_list(ClientState *cs)
{
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    int ret = 0;

    g_mutex_lock(&cs->s->lock);
    for (guint i = 0; i < cs->s->exports->len; i++) {
        g_ptr_array_add(names, g_strdup(((NbdExport *)g_ptr_array_index(cs->s->exports, i))->name));
    }
    g_mutex_unlock(&cs->s->lock);
    for (guint i = 0; i < names->len && ret == 0; i++) {
        const char *name = g_ptr_array_index(names, i);
        g_autofree uint8_t *data = g_malloc(4 + strlen(name));

        stl_be_p(data, strlen(name));
        memcpy(data + 4, name, strlen(name));
        ret = send_rep(cs, NBD_OPT_LIST, NBD_REP_SERVER, data, 4 + strlen(name));
    }
    return ret ? ret : send_rep(cs, NBD_OPT_LIST, NBD_REP_ACK, NULL, 0);
}

static int send_info(ClientState *cs, uint32_t opt, uint16_t type, const void *body,
                     size_t len)
{
    g_autofree uint8_t *data = g_malloc(2 + len);

    stw_be_p(data, type);
    memcpy(data + 2, body, len);
    return send_rep(cs, opt, NBD_REP_INFO, data, 2 + len);
}

/* NBD_OPT_INFO and NBD_OPT_GO: 1 when GO moved to transmission, 0 to go on, or -errno. */
static int opt_info(ClientState *cs, uint32_t opt, const NbdOption *o)
{
    ExportView v = { 0 };
    uint8_t exp_info[10], bs_info[12];
    bool want_name = false, want_desc = false;
    int ret;

    if (!export_lookup(cs, o->name, &v, opt == NBD_OPT_GO)) {
        g_autofree char *msg = g_strdup_printf("export '%.256s' not present", o->name);

        return send_rep_err(cs, opt, NBD_REP_ERR_UNKNOWN, msg);
    }
    for (unsigned i = 0; i < o->n_info; i++) {
        want_name |= o->info[i] == NBD_INFO_NAME;
        want_desc |= o->info[i] == NBD_INFO_DESCRIPTION;
    }
    stq_be_p(exp_info, v.size);
    stw_be_p(exp_info + 8, transmission_flags(cs, &v));
    ret = send_info(cs, opt, NBD_INFO_EXPORT, exp_info, sizeof(exp_info));
    if (ret == 0 && want_name) {
        ret = send_info(cs, opt, NBD_INFO_NAME, o->name, strlen(o->name));
    }
    if (ret == 0 && want_desc && v.description) {
        ret = send_info(cs, opt, NBD_INFO_DESCRIPTION, v.description, strlen(v.description));
    }
    /* Any alignment works; 4 KiB is preferred; a request carries at most 32 MiB. */
    stl_be_p(bs_info, 1);
    stl_be_p(bs_info + 4, 4096);
    stl_be_p(bs_info + 8, NBD_MAX_BUFFER_SIZE);
    if (ret == 0) {
        ret = send_info(cs, opt, NBD_INFO_BLOCK_SIZE, bs_info, sizeof(bs_info));
    }
    g_free(v.description);
    if (ret == 0) {
        ret = send_rep(cs, opt, NBD_REP_ACK, NULL, 0);
    }
    if (ret < 0 || opt != NBD_OPT_GO) {
        return ret;
    }
    /* A context chosen for another export does not carry over (the protocol says so). */
    if (strcmp(cs->meta_name, o->name)) {
        cs->meta_allocation = false;
    }
    return 1;
}

static int opt_meta(ClientState *cs, uint32_t opt, const NbdOption *o)
{
    ExportView v = { 0 };
    bool set = opt == NBD_OPT_SET_META_CONTEXT;
    bool match;
    int ret = 0;

    if (set && !cs->structured) {
        return send_rep_err(cs, opt, NBD_REP_ERR_INVALID,
                            "structured replies must be negotiated first");
    }
    if (!export_lookup(cs, o->name, &v, false)) {
        g_autofree char *msg = g_strdup_printf("export '%.256s' not present", o->name);

        return send_rep_err(cs, opt, NBD_REP_ERR_UNKNOWN, msg);
    }
    g_free(v.description);
    match = o->query_base_allocation || (!set && (o->query_base_all || !o->n_queries));
    if (set) {
        cs->meta_allocation = o->query_base_allocation;
        g_strlcpy(cs->meta_name, o->name, sizeof(cs->meta_name));
    }
    if (match) {
        uint8_t data[4 + sizeof(NBD_META_BASE_ALLOCATION) - 1];

        stl_be_p(data, set ? META_ID_ALLOCATION : 0);
        memcpy(data + 4, NBD_META_BASE_ALLOCATION, sizeof(NBD_META_BASE_ALLOCATION) - 1);
        ret = send_rep(cs, opt, NBD_REP_META_CONTEXT, data, sizeof(data));
    }
    return ret ? ret : send_rep(cs, opt, NBD_REP_ACK, NULL, 0);
}

/* NBD_OPT_EXPORT_NAME: 1 in transmission; an unknown name ends the client (no way to say it). */
static int opt_export_name(ClientState *cs, const NbdOption *o)
{
    ExportView v = { 0 };
    uint8_t reply[8 + 2 + 124] = { 0 };

    if (!export_lookup(cs, o->name, &v, true)) {
        /* The name is the client's: escaped, so it cannot write control bytes to the log. */
        g_autofree char *shown = g_strescape(o->name, NULL);

        warn_report("NBD client %s asked for export '%.256s', which is not present",
                    cs->c->peer, shown);
        return -ENOENT;
    }
    g_free(v.description);
    cs->meta_allocation = false;
    stq_be_p(reply, v.size);
    stw_be_p(reply + 8, transmission_flags(cs, &v));
    if (channel_write_all(cs->ch, reply, cs->no_zeroes ? 10 : sizeof(reply)) < 0) {
        return -EPIPE;
    }
    return 1;
}

/* 1 once in transmission, 0 when the client ended the handshake, -errno otherwise. */
static int handshake(ClientState *cs)
{
    uint8_t hello[18], hdr[NBD_OPTION_HEADER_SIZE], flags[4];
    g_autofree uint8_t *payload = g_malloc(NBD_MAX_OPTION_LENGTH);
    g_autofree NbdOption *o = g_new0(NbdOption, 1);
    uint32_t cflags;
    int ret;

    stq_be_p(hello, NBD_INIT_MAGIC);
    stq_be_p(hello + 8, NBD_OPTS_MAGIC);
    stw_be_p(hello + 16, NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES);
    if (channel_write_all(cs->ch, hello, sizeof(hello)) < 0 ||
        channel_read_all(cs->ch, flags, sizeof(flags))) {
        return -EPIPE;
    }
    cflags = ldl_be_p(flags);
    if (cflags & ~(NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES)) {
        warn_report("NBD client %s: unknown client flags %#x", cs->c->peer, cflags);
        return -EINVAL;
    }
    cs->no_zeroes = cflags & NBD_FLAG_C_NO_ZEROES;
    for (;;) {
        NbdOptionHeader h;
        const char *why;
        uint32_t err;

        if (channel_read_all(cs->ch, hdr, sizeof(hdr))) {
            return 0;                   /* the client left: nothing to say */
        }
        ret = nbd_parse_option_header(hdr, &h);
        if (ret < 0) {
            warn_report("NBD client %s: %s", cs->c->peer,
                        ret == -EINVAL ? "wrong option magic" : "option too long");
            return ret;
        }
        if (h.length && channel_read_all(cs->ch, payload, h.length)) {
            return -EPIPE;
        }
        err = nbd_parse_option(h.option, payload, h.length, o, &why);
        switch (h.option) {
        case NBD_OPT_EXPORT_NAME:
        case NBD_OPT_ABORT:
        case NBD_OPT_LIST:
        case NBD_OPT_INFO:
        case NBD_OPT_GO:
        case NBD_OPT_STRUCTURED_REPLY:
        case NBD_OPT_LIST_META_CONTEXT:
        case NBD_OPT_SET_META_CONTEXT:
            break;
        default:
            /* STARTTLS too: TLS is not offered, so refusing it is the honest answer. */
            ret = send_rep_err(cs, h.option, NBD_REP_ERR_UNSUP, "option not supported");
            if (ret < 0) {
                return ret;
            }
            continue;
        }
        if (err) {
            if (h.option == NBD_OPT_EXPORT_NAME) {
                warn_report("NBD client %s: %s", cs->c->peer, why);
                return -EINVAL;         /* no error reply exists for this option */
            }
            ret = send_rep_err(cs, h.option, err, why);
        } else if (h.option == NBD_OPT_EXPORT_NAME) {
            return opt_export_name(cs, o);
        } else if (h.option == NBD_OPT_ABORT) {
            send_rep(cs, h.option, NBD_REP_ACK, NULL, 0);
            return 0;
        } else if (h.option == NBD_OPT_LIST) {
            ret = opt_list(cs);
        } else if (h.option == NBD_OPT_INFO || h.option == NBD_OPT_GO) {
            ret = opt_info(cs, h.option, o);
            if (ret == 1) {
                return 1;
            }
        } else if (h.option == NBD_OPT_STRUCTURED_REPLY) {
            if (cs->structured) {
                ret = send_rep_err(cs, h.option, NBD_REP_ERR_INVALID,
                                   "structured replies already negotiated");
            } else {
                cs->structured = true;
                ret = send_rep(cs, h.option, NBD_REP_ACK, NULL, 0);
            }
        } else {
            ret = opt_meta(cs, h.option, o);
        }
        if (ret < 0) {
            return ret;
        }
    }
}

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

    stl_be_p(hdr, NBD_SIMPLE_REPLY_MAGIC);
    stl_be_p(hdr + 4, error);
    stq_be_p(hdr + 8, cookie);
    return channel_writev_all(cs->ch, iov, len ? 2 : 1);
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
    stq_be_p(hdr + 8, cookie);
    stl_be_p(hdr + 16, pre_len + len);
    return channel_writev_all(cs->ch, iov, 3);
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

static uint8_t *client_buf(ClientState *cs, size_t len)
{
    if (len > cs->buf_size) {
        g_free(cs->buf);
        cs->buf = g_malloc(len);
        cs->buf_size = len;
    }
    return cs->buf;
}

static int do_read(ClientState *cs, const NbdRequest *req)
{
    uint8_t *buf = client_buf(cs, req->length);
    struct iovec iov = { .iov_base = buf, .iov_len = req->length };
    uint8_t off[8];
    int ret = blk_preadv(cs->exp->blk, req->offset, &iov, 1);

    if (ret < 0) {
        return send_status(cs, req->cookie, nbd_errno(ret), "read failed");
    }
    if (!cs->structured) {
        return send_simple(cs, req->cookie, NBD_SUCCESS, buf, req->length);
    }
    if (!req->length) {
        return send_chunk(cs, req->cookie, NBD_REPLY_TYPE_NONE, NULL, 0, NULL, 0);
    }
    stq_be_p(off, req->offset);
    return send_chunk(cs, req->cookie, NBD_REPLY_TYPE_OFFSET_DATA, off, sizeof(off), buf,
                      req->length);
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
    stl_be_p(id, META_ID_ALLOCATION);
    return send_chunk(cs, req->cookie, NBD_REPLY_TYPE_BLOCK_STATUS, id, sizeof(id), desc,
                      8 * n);
}

/* One checked request: its reply sent. 0, 1 for a disconnect, or -errno (the channel). */
static int serve(ClientState *cs, const NbdRequest *req)
{
    BlockBackend *blk = cs->exp->blk;
    int fua = (req->flags & NBD_CMD_FLAG_FUA) || cs->exp->writethrough ? BDRV_REQ_FUA : 0;
    struct iovec iov = { .iov_base = cs->buf, .iov_len = req->length };
    int ret;

    switch (req->type) {
    case NBD_CMD_DISC:
        return 1;
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

static void transmission(ClientState *cs)
{
    uint8_t hdr[NBD_REQUEST_SIZE];

    for (;;) {
        NbdRequestLimits lim = {
            .size = cs->exp->size, .writable = cs->exp->writable,
            .structured = cs->structured, .meta_allocation = cs->meta_allocation,
        };
        NbdRequest req;
        const char *why;
        int err, ret;

        if (channel_read_all(cs->ch, hdr, sizeof(hdr))) {
            return;                     /* gone, or shut down by the main thread */
        }
        err = nbd_parse_request(hdr, &lim, &req, &why);
        if (err < 0) {
            warn_report("NBD client %s: %s: disconnecting", cs->c->peer, why);
            return;
        }
        /* A write's payload comes whatever we answer: read it to stay in step. */
        if (req.type == NBD_CMD_WRITE && req.length &&
            channel_read_all(cs->ch, client_buf(cs, req.length), req.length)) {
            return;
        }
        if (err) {
            ret = send_status(cs, req.cookie, err, why);
        } else {
            ret = serve(cs, &req);
        }
        if (ret) {
            return;
        }
    }
}

void *nbd_client_thread(void *opaque)
{
    NbdClient *c = opaque;
    ClientState cs = { .c = c, .s = c->server, .ch = c->ch };

    if (handshake(&cs) == 1) {
        transmission(&cs);
    }
    /* The peer sees the end now, not when the main thread next reaps us. */
    channel_shutdown(c->ch, CHANNEL_SHUT_BOTH);
    g_free(cs.buf);
    g_mutex_lock(&c->server->lock);
    c->done = true;
    g_mutex_unlock(&c->server->lock);
    return NULL;
}

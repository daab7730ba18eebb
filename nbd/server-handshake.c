/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One NBD client's fixed newstyle handshake, in its own thread (the
 * client thread of server-client.c, before its requests): the greeting,
 * the client's flags, then options until EXPORT_NAME or GO picks an
 * export, or the client aborts or leaves.
 *
 * Every option is parsed by server-parse.c before use; a malformed one is
 * answered NBD_REP_ERR_INVALID and the handshake goes on (its length
 * framed it), one whose header cannot be trusted ends the client. An
 * export is looked up under NbdServer.lock and what is told of it copied
 * there: only GO and EXPORT_NAME keep it (NbdClient.exp), under the same
 * lock, so a removal either sees this client on it or is not seen by it.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qapi/error.h"
#include "io/channel.h"
#include "io/channel-tls.h"
#include "qemu/tsan.h"
#include "nbd/server-int.h"

/* What the handshake tells of an export, copied under the lock. */
typedef struct ExportView {
    uint64_t size;
    bool writable;
    char *description;
} ExportView;

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

    tsan_g_mutex_lock(&cs->s->lock);
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
    tsan_g_mutex_unlock(&cs->s->lock);
    return exp != NULL;
}

static int opt_list(ClientState *cs)
{
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    int ret = 0;

    tsan_g_mutex_lock(&cs->s->lock);
    for (guint i = 0; i < cs->s->exports->len; i++) {
        g_ptr_array_add(names, g_strdup(((NbdExport *)g_ptr_array_index(cs->s->exports, i))->name));
    }
    tsan_g_mutex_unlock(&cs->s->lock);
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

        stl_be_p(data, set ? NBD_META_ID_ALLOCATION : 0);
        memcpy(data + 4, NBD_META_BASE_ALLOCATION, sizeof(NBD_META_BASE_ALLOCATION) - 1);
        ret = send_rep(cs, opt, NBD_REP_META_CONTEXT, data, sizeof(data));
    }
    return ret ? ret : send_rep(cs, opt, NBD_REP_ACK, NULL, 0);
}

/*
 * NBD_OPT_STARTTLS: ACK in clear, then the TLS handshake in this thread
 * (the main thread's shutdown of NbdClient.ch still wakes it: the TLS row
 * blocks only in its inner channel). Everything after goes through TLS.
 */
static int opt_starttls(ClientState *cs)
{
    Error *err = NULL;
    Channel *t;
    int ret;

    if (!cs->s->tls_creds) {
        return send_rep_err(cs, NBD_OPT_STARTTLS, NBD_REP_ERR_POLICY, "TLS not configured");
    }
    if (cs->tls) {
        return send_rep_err(cs, NBD_OPT_STARTTLS, NBD_REP_ERR_INVALID,
                            "TLS already negotiated");
    }
    ret = send_rep(cs, NBD_OPT_STARTTLS, NBD_REP_ACK, NULL, 0);
    if (ret < 0) {
        return ret;
    }
    t = channel_tls_server_new(channel_ref(cs->ch), cs->s->tls_creds, cs->s->tls_authz, &err);
    if (!t) {
        error_prepend(&err, "NBD client %s: ", cs->c->peer);
        warn_report_err(err);
        return -EPROTO;
    }
    cs->tls = t;
    cs->ch = t;
    return 0;
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

int nbd_handshake(ClientState *cs)
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
        if (cs->s->tls_creds && !cs->tls && h.option != NBD_OPT_STARTTLS &&
            h.option != NBD_OPT_ABORT) {
            /* Nothing but TLS (or leaving) before TLS: no export is even named in clear. */
            if (h.option == NBD_OPT_EXPORT_NAME) {
                warn_report("NBD client %s: export requested before TLS", cs->c->peer);
                return -EPERM;
            }
            ret = send_rep_err(cs, h.option, NBD_REP_ERR_TLS_REQD,
                               "TLS negotiation required before this option");
            if (ret < 0) {
                return ret;
            }
            continue;
        }
        switch (h.option) {
        case NBD_OPT_EXPORT_NAME:
        case NBD_OPT_ABORT:
        case NBD_OPT_LIST:
        case NBD_OPT_INFO:
        case NBD_OPT_GO:
        case NBD_OPT_STRUCTURED_REPLY:
        case NBD_OPT_LIST_META_CONTEXT:
        case NBD_OPT_SET_META_CONTEXT:
        case NBD_OPT_STARTTLS:
            break;
        default:
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
        } else if (h.option == NBD_OPT_STARTTLS) {
            ret = opt_starttls(cs);
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


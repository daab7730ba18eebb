/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The client's side of the NBD fixed newstyle handshake, blocking in the
 * opener's thread (the node is not in the graph yet, nobody waits on it).
 *
 * Order, each step optional where the server says no:
 *   greeting     NBDMAGIC, IHAVEOPT, handshake flags; we answer with
 *                FIXED_NEWSTYLE and NO_ZEROES where the server has them
 *   starttls     with credentials only, and then not optional: nothing,
 *                not even the export's name, is sent in clear
 *   structured   NBD_OPT_STRUCTURED_REPLY: ACK turns structured replies on
 *                (sparse reads, error messages, block status need them)
 *   meta context NBD_OPT_SET_META_CONTEXT "base:allocation" (needs the
 *                above): its id is what BLOCK_STATUS replies must carry
 *   go           NBD_OPT_GO with NBD_INFO_BLOCK_SIZE: size, transmission
 *                flags and block sizes; a server without GO (ERR_UNSUP)
 *                gets NBD_OPT_EXPORT_NAME, which has no way to say no
 *                other than hanging up
 * Every reply's option, type and length are checked before its payload is
 * read; a payload is at most NBD_MAX_OPT_REPLY bytes; the server's own
 * words reach our messages made printable.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bswap.h"
#include "io/channel.h"
#include "io/channel-tls.h"
#include "nbd-int.h"

/* The longest option reply we read: an info of a description, a context's name. */
#define NBD_MAX_OPT_REPLY (8 + NBD_MAX_STRING)
/* A server answering one option with endless replies is not waited out. */
#define NBD_MAX_OPT_REPLIES 64
#define NBD_OLDSTYLE_MAGIC 0x00420281861253ULL

static int read_exact(Channel *c, void *buf, size_t len)
{
    int ret = channel_read_all(c, buf, len);

    return ret == 1 ? -EPIPE : ret;
}

static int send_opt(Channel *c, uint32_t opt, const void *data, uint32_t len)
{
    uint8_t h[16];
    struct iovec iov[2] = {
        { .iov_base = h, .iov_len = sizeof(h) },
        { .iov_base = (void *)data, .iov_len = len },
    };

    stq_be_p(h, NBD_OPTS_MAGIC);
    stl_be_p(h + 8, opt);
    stl_be_p(h + 12, len);
    return channel_writev_all(c, iov, len ? 2 : 1);
}

typedef struct OptReply {
    uint32_t type;              /* NBD_REP_* */
    uint32_t len;
    uint8_t *data;              /* @len bytes and a NUL (g_free) */
} OptReply;

static void opt_reply_clear(OptReply *r)
{
    g_free(r->data);
    r->data = NULL;
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(OptReply, opt_reply_clear)

/* One reply to @opt into @r (its old payload freed). */
static int read_opt_reply(Channel *c, uint32_t opt, OptReply *r, Error **errp)
{
    uint8_t h[20];
    int ret = read_exact(c, h, sizeof(h));

    opt_reply_clear(r);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "Failed to read the reply to NBD option %u", opt);
        return ret;
    }
    if (ldq_be_p(h) != NBD_REP_MAGIC || ldl_be_p(h + 8) != opt) {
        error_setg(errp, "Bad reply to NBD option %u: magic %#" PRIx64 ", option %u",
                   opt, ldq_be_p(h), ldl_be_p(h + 8));
        return -EPROTO;
    }
    r->type = ldl_be_p(h + 12);
    r->len = ldl_be_p(h + 16);
    if (r->len > NBD_MAX_OPT_REPLY) {
        error_setg(errp, "NBD option %u: a reply of %u bytes is too long", opt, r->len);
        return -EPROTO;
    }
    r->data = g_malloc(r->len + 1);
    r->data[r->len] = 0;
    ret = read_exact(c, r->data, r->len);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "Failed to read the reply to NBD option %u", opt);
    }
    return ret;
}

/* The server's words, printable: they go to a terminal or a log. */
static char *printable(const uint8_t *p, uint32_t len)
{
    GString *s = g_string_sized_new(len);

    for (uint32_t i = 0; i < len; i++) {
        g_string_append_c(s, g_ascii_isprint(p[i]) ? p[i] : '?');
    }
    return g_string_free(s, FALSE);
}

static int opt_refused(const char *what, const OptReply *r, Error **errp)
{
    g_autofree char *msg = printable(r->data, r->len);
    const char *why;

    switch (r->type) {
    case NBD_REP_ERR_UNSUP:     why = "unsupported"; break;
    case NBD_REP_ERR_POLICY:    why = "denied by the server's policy"; break;
    case NBD_REP_ERR_INVALID:   why = "invalid"; break;
    case NBD_REP_ERR_TLS_REQD:  why = "TLS is required first"; break;
    case NBD_REP_ERR_UNKNOWN:   why = "export not present"; break;
    case NBD_REP_ERR_SHUTDOWN:  why = "the server is shutting down"; break;
    default:                    why = "refused"; break;
    }
    error_setg(errp, "NBD server refused %s: %s%s%s", what, why, msg[0] ? ": " : "", msg);
    return r->type == NBD_REP_ERR_UNKNOWN ? -ENOENT : -EINVAL;
}

/* NBD_OPT_STARTTLS, then the TLS handshake: *@c becomes the TLS channel. */
static int opt_starttls(Channel **c, TLSCreds *creds, const char *hostname, Error **errp)
{
    g_auto(OptReply) r = { 0 };
    Channel *t;
    int ret = send_opt(*c, NBD_OPT_STARTTLS, NULL, 0);

    if (ret < 0) {
        error_setg_errno(errp, -ret, "NBD handshake failed");
        return ret;
    }
    ret = read_opt_reply(*c, NBD_OPT_STARTTLS, &r, errp);
    if (ret < 0) {
        return ret;
    }
    if (r.type != NBD_REP_ACK || r.len) {
        return opt_refused("TLS", &r, errp);
    }
    /* The TLS row takes a reference of its own: ours stays valid whatever happens. */
    t = channel_tls_client_new(channel_ref(*c), creds, hostname, errp);
    if (!t) {
        return -EPROTO;
    }
    channel_unref(*c);
    *c = t;
    return 0;
}

static int opt_structured(Channel *c, NbdExportInfo *info, Error **errp)
{
    g_auto(OptReply) r = { 0 };
    int ret = send_opt(c, NBD_OPT_STRUCTURED_REPLY, NULL, 0);

    if (ret < 0) {
        error_setg_errno(errp, -ret, "NBD handshake failed");
        return ret;
    }
    ret = read_opt_reply(c, NBD_OPT_STRUCTURED_REPLY, &r, errp);
    if (ret < 0) {
        return ret;
    }
    if (r.type == NBD_REP_ACK && r.len == 0) {
        info->structured = true;
    } else if (r.type == NBD_REP_ERR_TLS_REQD) {
        return opt_refused("structured replies", &r, errp);
    } else if (!(r.type & NBD_REP_FLAG_ERROR)) {
        error_setg(errp, "NBD server sent reply %#x to NBD_OPT_STRUCTURED_REPLY", r.type);
        return -EPROTO;
    }
    return 0;
}

static int opt_meta_context(Channel *c, const char *export, NbdExportInfo *info, Error **errp)
{
    const char *q = NBD_META_BASE_ALLOCATION;
    size_t elen = strlen(export), qlen = strlen(q);
    g_autofree uint8_t *d = g_malloc(12 + elen + qlen);
    g_auto(OptReply) r = { 0 };
    int ret;

    stl_be_p(d, elen);
    memcpy(d + 4, export, elen);
    stl_be_p(d + 4 + elen, 1);
    stl_be_p(d + 8 + elen, qlen);
    memcpy(d + 12 + elen, q, qlen);
    ret = send_opt(c, NBD_OPT_SET_META_CONTEXT, d, 12 + elen + qlen);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "NBD handshake failed");
        return ret;
    }
    for (int i = 0; i < NBD_MAX_OPT_REPLIES; i++) {
        ret = read_opt_reply(c, NBD_OPT_SET_META_CONTEXT, &r, errp);
        if (ret < 0) {
            return ret;
        }
        if (r.type == NBD_REP_ACK && r.len == 0) {
            return 0;
        }
        if (r.type & NBD_REP_FLAG_ERROR) {
            info->base_allocation = false;      /* no block status: everything is data */
            return 0;
        }
        /* We asked for exactly one context: one reply naming exactly it. */
        if (r.type != NBD_REP_META_CONTEXT || r.len != 4 + qlen || info->base_allocation ||
            memcmp(r.data + 4, q, qlen)) {
            error_setg(errp, "NBD server sent an unexpected meta context reply");
            return -EPROTO;
        }
        info->context_id = ldl_be_p(r.data);
        info->base_allocation = true;
    }
    error_setg(errp, "NBD server sent too many meta context replies");
    return -EPROTO;
}

/* NBD_INFO_BLOCK_SIZE as the protocol bounds it, the maximum clamped to ours. */
static int block_sizes(NbdExportInfo *info, const uint8_t *p, Error **errp)
{
    uint32_t min = ldl_be_p(p), pref = ldl_be_p(p + 4), max = ldl_be_p(p + 8);

    if (!min || (min & (min - 1)) || min > 64 * 1024 || !pref || (pref & (pref - 1)) ||
        pref < min || max < min || (max % min && max != UINT32_MAX)) {
        error_setg(errp, "NBD server sent invalid block sizes: minimum %u, preferred %u, "
                   "maximum %u", min, pref, max);
        return -EPROTO;
    }
    info->min_block = min;
    info->pref_block = pref;
    info->max_block = MIN(max, NBD_MAX_BUFFER_SIZE) / min * min;
    return 0;
}

static int export_info(NbdExportInfo *info, uint64_t size, uint16_t flags, Error **errp)
{
    if (size > INT64_MAX || !(flags & NBD_FLAG_HAS_FLAGS)) {
        error_setg(errp, "NBD server sent an invalid export: size %" PRIu64 ", flags %#x",
                   size, flags);
        return -EPROTO;
    }
    info->size = size;
    info->flags = flags;
    return 0;
}

/* NBD_OPT_GO: 0 done, 1 the server has no GO, or -errno. */
static int opt_go(Channel *c, const char *export, NbdExportInfo *info, Error **errp)
{
    size_t elen = strlen(export);
    g_autofree uint8_t *d = g_malloc(8 + elen);
    g_auto(OptReply) r = { 0 };
    bool have_export = false;
    int ret;

    stl_be_p(d, elen);
    memcpy(d + 4, export, elen);
    nbd_st16(d + 4 + elen, 1);
    nbd_st16(d + 6 + elen, NBD_INFO_BLOCK_SIZE);
    ret = send_opt(c, NBD_OPT_GO, d, 8 + elen);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "NBD handshake failed");
        return ret;
    }
    for (int i = 0; i < NBD_MAX_OPT_REPLIES; i++) {
        uint16_t itype;

        ret = read_opt_reply(c, NBD_OPT_GO, &r, errp);
        if (ret < 0) {
            return ret;
        }
        if (r.type == NBD_REP_ACK && r.len == 0 && have_export) {
            return 0;
        }
        if (r.type == NBD_REP_ERR_UNSUP && !have_export) {
            return 1;
        }
        if (r.type & NBD_REP_FLAG_ERROR) {
            g_autofree char *what = g_strdup_printf("export '%s'", export);

            return opt_refused(what, &r, errp);
        }
        itype = r.len >= 2 ? nbd_ld16(r.data) : UINT16_MAX;
        if (r.type != NBD_REP_INFO || r.len < 2 ||
            (itype == NBD_INFO_EXPORT && r.len != 12) ||
            (itype == NBD_INFO_BLOCK_SIZE && r.len != 14)) {
            error_setg(errp, "NBD server sent an unexpected reply %#x (%u bytes) to NBD_OPT_GO",
                       r.type, r.len);
            return -EPROTO;
        }
        if (itype == NBD_INFO_EXPORT) {
            ret = export_info(info, ldq_be_p(r.data + 2), nbd_ld16(r.data + 10), errp);
            have_export = true;
        } else if (itype == NBD_INFO_BLOCK_SIZE) {
            ret = block_sizes(info, r.data + 2, errp);
        }
        /* NBD_INFO_NAME, NBD_INFO_DESCRIPTION and what we do not know: nothing to keep. */
        if (ret < 0) {
            return ret;
        }
    }
    error_setg(errp, "NBD server sent too many replies to NBD_OPT_GO");
    return -EPROTO;
}

static int opt_export_name(Channel *c, const char *export, bool no_zeroes,
                           NbdExportInfo *info, Error **errp)
{
    uint8_t b[10 + 124];
    int ret = send_opt(c, NBD_OPT_EXPORT_NAME, export, strlen(export));

    if (ret == 0) {
        ret = read_exact(c, b, no_zeroes ? 10 : sizeof(b));
    }
    if (ret < 0) {
        /* The only way a server says no to this option is hanging up. */
        error_setg_errno(errp, -ret, "NBD server did not open export '%s'", export);
        return ret;
    }
    return export_info(info, ldq_be_p(b), nbd_ld16(b + 8), errp);
}

int nbd_client_handshake(Channel **pc, const char *export, TLSCreds *creds,
                         const char *hostname, NbdExportInfo *info, Error **errp)
{
    Channel *c = *pc;
    uint8_t b[18];
    uint16_t hflags;
    uint32_t cflags = 0;
    int ret;

    *info = (NbdExportInfo) {
        .min_block = 1, .pref_block = 4096, .max_block = NBD_MAX_BUFFER_SIZE,
    };
    ret = read_exact(c, b, sizeof(b));
    if (ret < 0) {
        error_setg_errno(errp, -ret, "Failed to read the NBD server's greeting");
        return ret;
    }
    if (ldq_be_p(b) != NBD_INIT_MAGIC) {
        error_setg(errp, "Not an NBD server: bad greeting magic");
        return -EPROTO;
    }
    if (ldq_be_p(b + 8) == NBD_OLDSTYLE_MAGIC) {
        error_setg(errp, "NBD server uses the oldstyle negotiation, which is not supported");
        return -EPROTO;
    }
    if (ldq_be_p(b + 8) != NBD_OPTS_MAGIC) {
        error_setg(errp, "Not an NBD server: bad option magic");
        return -EPROTO;
    }
    hflags = nbd_ld16(b + 16);
    cflags |= (hflags & NBD_FLAG_FIXED_NEWSTYLE) ? NBD_FLAG_C_FIXED_NEWSTYLE : 0;
    cflags |= (hflags & NBD_FLAG_NO_ZEROES) ? NBD_FLAG_C_NO_ZEROES : 0;
    stl_be_p(b, cflags);
    ret = channel_write_all(c, b, 4);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "NBD handshake failed");
        return ret;
    }
    if (creds && !(hflags & NBD_FLAG_FIXED_NEWSTYLE)) {
        error_setg(errp, "Server does not support STARTTLS");
        return -EINVAL;
    }
    if (creds) {
        ret = opt_starttls(pc, creds, hostname, errp);
        if (ret < 0) {
            return ret;
        }
        c = *pc;
    }
    if (hflags & NBD_FLAG_FIXED_NEWSTYLE) {
        ret = opt_structured(c, info, errp);
        if (ret == 0 && info->structured) {
            ret = opt_meta_context(c, export, info, errp);
        }
        if (ret == 0) {
            ret = opt_go(c, export, info, errp);
        }
        if (ret < 0 && ret != -EPROTO) {
            /* A refusal: the protocol asks for a soft disconnect (best effort). */
            send_opt(c, NBD_OPT_ABORT, NULL, 0);
        }
        if (ret <= 0) {
            return ret;
        }
    }
    return opt_export_name(c, export, cflags & NBD_FLAG_C_NO_ZEROES, info, errp);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What an NBD client sends, parsed and checked before the server acts on
 * it: option headers and payloads in the handshake, request headers in
 * transmission. Pure functions of their input (no I/O, no state), so the
 * unit test and the fuzz target drive them with any bytes.
 *
 * The rule: every length read from the wire is checked against what is
 * left of the buffer before anything is read at it, and every request's
 * offset + length against the export without overflowing. A malformed
 * option is answered NBD_REP_ERR_INVALID (the stream is still in step,
 * since its length framed it); a request whose header cannot be trusted
 * (wrong magic, a write payload we will not read) ends the client.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "nbd/server-int.h"

int nbd_parse_option_header(const uint8_t *buf, NbdOptionHeader *h)
{
    if (ldq_be_p(buf) != NBD_OPTS_MAGIC) {
        return -EINVAL;
    }
    h->option = ldl_be_p(buf + 8);
    h->length = ldl_be_p(buf + 12);
    return h->length > NBD_MAX_OPTION_LENGTH ? -E2BIG : 0;
}

/* A string of 32-bit length at *@pos: 0 and copied to @dst (NUL-terminated), or -1. */
static int take_string(const uint8_t *p, uint32_t len, uint32_t *pos, char *dst,
                       const char **why)
{
    uint32_t n;

    if (len - *pos < 4) {
        *why = "string length past the option's end";
        return -1;
    }
    n = ldl_be_p(p + *pos);
    *pos += 4;
    if (n > NBD_MAX_STRING) {
        *why = "string longer than 4096 bytes";
        return -1;
    }
    if (n > len - *pos) {
        *why = "string past the option's end";
        return -1;
    }
    if (memchr(p + *pos, 0, n)) {
        *why = "string holds a NUL byte";
        return -1;
    }
    if (dst) {
        memcpy(dst, p + *pos, n);
        dst[n] = 0;
    }
    *pos += n;
    return 0;
}

static uint32_t parse_info(const uint8_t *p, uint32_t len, NbdOption *out, const char **why)
{
    uint32_t pos = 0;
    uint16_t n;

    if (take_string(p, len, &pos, out->name, why) < 0) {
        return NBD_REP_ERR_INVALID;
    }
    if (len - pos < 2) {
        *why = "no count of information requests";
        return NBD_REP_ERR_INVALID;
    }
    n = lduw_be_p(p + pos);
    pos += 2;
    if (len - pos != 2u * n) {
        *why = "information requests do not fill the option";
        return NBD_REP_ERR_INVALID;
    }
    if (n > NBD_MAX_INFO_REQUESTS) {
        *why = "too many information requests";
        return NBD_REP_ERR_TOO_BIG;
    }
    for (unsigned i = 0; i < n; i++) {
        out->info[i] = lduw_be_p(p + pos + 2 * i);
    }
    out->n_info = n;
    return 0;
}

static uint32_t parse_meta(uint32_t option, const uint8_t *p, uint32_t len, NbdOption *out,
                           const char **why)
{
    char query[NBD_MAX_STRING + 1];
    uint32_t pos = 0, n;

    if (take_string(p, len, &pos, out->name, why) < 0) {
        return NBD_REP_ERR_INVALID;
    }
    if (len - pos < 4) {
        *why = "no count of meta context queries";
        return NBD_REP_ERR_INVALID;
    }
    n = ldl_be_p(p + pos);
    pos += 4;
    if (n > NBD_MAX_META_QUERIES) {
        *why = "too many meta context queries";
        return NBD_REP_ERR_TOO_BIG;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (take_string(p, len, &pos, query, why) < 0) {
            return NBD_REP_ERR_INVALID;
        }
        if (!strcmp(query, NBD_META_BASE_ALLOCATION)) {
            out->query_base_allocation = true;
        } else if (!strcmp(query, "base:") && option == NBD_OPT_LIST_META_CONTEXT) {
            out->query_base_all = true;
        }
        /* Other namespaces: no such context here, which the reply says by omission. */
    }
    if (pos != len) {
        *why = "bytes after the meta context queries";
        return NBD_REP_ERR_INVALID;
    }
    out->n_queries = n;
    return 0;
}

uint32_t nbd_parse_option(uint32_t option, const uint8_t *payload, uint32_t len,
                          NbdOption *out, const char **why)
{
    memset(out, 0, sizeof(*out));
    *why = NULL;
    switch (option) {
    case NBD_OPT_EXPORT_NAME:
        /* The name is the whole payload, without a length of its own. */
        if (len > NBD_MAX_STRING) {
            *why = "export name longer than 4096 bytes";
            return NBD_REP_ERR_INVALID;
        }
        if (memchr(payload, 0, len)) {
            *why = "export name holds a NUL byte";
            return NBD_REP_ERR_INVALID;
        }
        memcpy(out->name, payload, len);
        out->name[len] = 0;
        return 0;
    case NBD_OPT_INFO:
    case NBD_OPT_GO:
        return parse_info(payload, len, out, why);
    case NBD_OPT_LIST_META_CONTEXT:
    case NBD_OPT_SET_META_CONTEXT:
        return parse_meta(option, payload, len, out, why);
    case NBD_OPT_ABORT:
    case NBD_OPT_LIST:
    case NBD_OPT_STARTTLS:
    case NBD_OPT_STRUCTURED_REPLY:
        if (len) {
            *why = "payload on an option that takes none";
            return NBD_REP_ERR_INVALID;
        }
        return 0;
    default:
        return 0;
    }
}

/* The flags each command may carry (DF only once structured replies are on). */
static uint16_t allowed_flags(uint16_t type, const NbdRequestLimits *lim)
{
    switch (type) {
    case NBD_CMD_READ:
        return NBD_CMD_FLAG_FUA | (lim->structured ? NBD_CMD_FLAG_DF : 0);
    case NBD_CMD_WRITE:
    case NBD_CMD_TRIM:
        return NBD_CMD_FLAG_FUA;
    case NBD_CMD_WRITE_ZEROES:
        return NBD_CMD_FLAG_FUA | NBD_CMD_FLAG_NO_HOLE | NBD_CMD_FLAG_FAST_ZERO;
    case NBD_CMD_BLOCK_STATUS:
        return NBD_CMD_FLAG_REQ_ONE;
    default:
        return 0;
    }
}

int nbd_parse_request(const uint8_t *buf, const NbdRequestLimits *lim, NbdRequest *req,
                      const char **why)
{
    bool writes;

    *why = NULL;
    if (ldl_be_p(buf) != NBD_REQUEST_MAGIC) {
        *why = "wrong request magic";
        return -1;
    }
    req->flags = lduw_be_p(buf + 4);
    req->type = lduw_be_p(buf + 6);
    req->cookie = ldq_be_p(buf + 8);
    req->offset = ldq_be_p(buf + 16);
    req->length = ldl_be_p(buf + 24);

    /* A payload we will not read leaves the stream out of step: first. */
    if (req->type == NBD_CMD_WRITE && req->length > NBD_MAX_BUFFER_SIZE) {
        *why = "write payload larger than 32 MiB";
        return -1;
    }
    switch (req->type) {
    case NBD_CMD_READ:
    case NBD_CMD_WRITE:
    case NBD_CMD_TRIM:
    case NBD_CMD_WRITE_ZEROES:
    case NBD_CMD_FLUSH:
    case NBD_CMD_DISC:
        break;
    case NBD_CMD_BLOCK_STATUS:
        if (!lim->meta_allocation) {
            *why = "block status without a meta context";
            return NBD_EINVAL;
        }
        break;
    default:
        *why = "unknown or unsupported command";
        return NBD_EINVAL;
    }
    if (req->flags & ~allowed_flags(req->type, lim)) {
        *why = "unknown flags for the command";
        return NBD_EINVAL;
    }
    if (req->type == NBD_CMD_FLUSH || req->type == NBD_CMD_DISC) {
        if (req->offset || req->length) {
            *why = "offset or length on a flush or disconnect";
            return NBD_EINVAL;
        }
        return NBD_SUCCESS;
    }
    writes = req->type == NBD_CMD_WRITE || req->type == NBD_CMD_TRIM ||
             req->type == NBD_CMD_WRITE_ZEROES;
    if (writes && !lim->writable) {
        *why = "write to a read-only export";
        return NBD_EPERM;
    }
    if (req->type == NBD_CMD_READ && req->length > NBD_MAX_BUFFER_SIZE) {
        *why = "read larger than 32 MiB";
        return NBD_EINVAL;
    }
    if (req->type == NBD_CMD_BLOCK_STATUS && !req->length) {
        *why = "block status of no bytes";
        return NBD_EINVAL;
    }
    /* Written so that it cannot overflow: offset <= size, then length <= size - offset. */
    if (req->offset > lim->size || req->length > lim->size - req->offset) {
        *why = "range past the end of the export";
        return req->type == NBD_CMD_WRITE || req->type == NBD_CMD_WRITE_ZEROES
               ? NBD_ENOSPC : NBD_EINVAL;
    }
    return NBD_SUCCESS;
}

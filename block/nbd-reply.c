/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One reply message from an NBD server, checked and applied to its
 * request. Pure: bytes come through ops->readv and requests through
 * ops->find, so the receiving thread (nbd.c) and the fuzz target
 * (tests/fuzz/fuzz-nbd-client.c) run the same code.
 *
 * The invariant: nothing the server sends makes us write outside a
 * request's buffer, or complete a request as a success with bytes of its
 * buffer that no chunk described. Each rule keeps a part of it:
 *   - a reply names a cookie in flight; once its last message is read the
 *     caller takes the request out of its table, so a late chunk is a
 *     reply to nothing (a protocol error), never a write into a buffer
 *     that was given back;
 *   - a content chunk lies inside its request and overlaps no earlier
 *     one (req->covered); a READ succeeds only when the chunks covered
 *     every byte, so no byte is left as the caller's buffer had it;
 *   - every length is bounded before anything is read or allocated: a
 *     chunk's fixed part by its type, an error message by NBD_MAX_STRING,
 *     data by its request, extents by NBD_MAX_EXTENTS;
 *   - a chunk the command cannot take (data for a write, status for a
 *     read, a simple reply to a READ once structured replies are on) is a
 *     protocol error; an unknown type with bit 15 set is, as the protocol
 *     allows, an error of its request only.
 * A protocol error completes nothing: the caller drops the connection,
 * which fails every request in flight with -EIO.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "nbd-int.h"

#define NBD_ERROR_BIT (1u << 15)
/* An error chunk: error (32), message length (16), message, maybe an offset (64). */
#define NBD_MAX_ERROR_CHUNK (6 + NBD_MAX_STRING + 8)

int nbd_errno_from_wire(uint32_t err)
{
    switch (err) {
    case NBD_EPERM:
        return -EPERM;
    case NBD_EIO:
        return -EIO;
    case NBD_ENOMEM:
        return -ENOMEM;
    case NBD_ENOSPC:
        return -ENOSPC;
    case NBD_EOVERFLOW:
        return -EOVERFLOW;
    case NBD_ENOTSUP:
        return -ENOTSUP;
    case NBD_ESHUTDOWN:
        return -ESHUTDOWN;
    default:
        return -EINVAL;
    }
}

void nbd_request_cleanup(NbdRequest *req)
{
    if (req->covered) {
        g_array_free(req->covered, TRUE);
        req->covered = NULL;
    }
}

static int read_buf(const NbdReplyOps *ops, void *opaque, void *buf, size_t len)
{
    struct iovec iov = { .iov_base = buf, .iov_len = len };

    return len ? ops->readv(opaque, &iov, 1) : 0;
}

/*
 * The bytes [@off, @off + @len) of @req's buffer: read from the stream
 * (@zero false) or zeroed. The caller checked the range against the request.
 */
static int fill_range(const NbdReplyOps *ops, void *opaque, NbdRequest *req, uint64_t off,
                      uint64_t len, bool zero)
{
    struct iovec batch[16];
    int n = 0, ret;

    for (int i = 0; i < req->niov && len; i++) {
        size_t il = req->iov[i].iov_len;

        if (off >= il) {
            off -= il;
            continue;
        }
        batch[n].iov_base = (uint8_t *)req->iov[i].iov_base + off;
        batch[n].iov_len = MIN(il - off, len);
        len -= batch[n].iov_len;
        off = 0;
        if (zero) {
            memset(batch[n].iov_base, 0, batch[n].iov_len);
        } else if (++n == ARRAY_SIZE(batch)) {
            ret = ops->readv(opaque, batch, n);
            if (ret < 0) {
                return ret;
            }
            n = 0;
        }
    }
    /* The iovec holds req->length bytes (io.c checks it), so nothing is left over. */
    assert(len == 0);
    return n ? ops->readv(opaque, batch, n) : 0;
}

#define RANGE(a, i) g_array_index(a, NbdRange, i)

/* [@start, @end) is described now: false if an earlier chunk described any of it. */
static bool cover(NbdRequest *req, uint64_t start, uint64_t end)
{
    GArray *a = req->covered;
    guint lo = 0, hi;
    bool left, right;

    if (!a) {
        a = req->covered = g_array_new(FALSE, FALSE, sizeof(NbdRange));
    }
    /* The first range that ends after @start. */
    hi = a->len;
    while (lo < hi) {
        guint mid = lo + (hi - lo) / 2;

        if (RANGE(a, mid).end <= start) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (lo < a->len && RANGE(a, lo).start < end) {
        return false;
    }
    left = lo > 0 && RANGE(a, lo - 1).end == start;
    right = lo < a->len && RANGE(a, lo).start == end;
    if (left && right) {
        RANGE(a, lo - 1).end = RANGE(a, lo).end;
        g_array_remove_index(a, lo);
    } else if (left) {
        RANGE(a, lo - 1).end = end;
    } else if (right) {
        RANGE(a, lo).start = start;
    } else {
        NbdRange r = { .start = start, .end = end };

        if (a->len >= NBD_MAX_READ_RANGES) {
            return false;   /* a server scattering bytes to make us allocate */
        }
        g_array_insert_val(a, lo, r);
    }
    req->covered_bytes += end - start;
    return true;
}

/* A content chunk's range, absolute on the wire: inside @req, and new. */
static int content_range(NbdRequest *req, uint64_t off, uint64_t len, uint64_t *rel)
{
    if (req->type != NBD_CMD_READ || len == 0 || off < req->offset ||
        off - req->offset > req->length || len > req->length - (off - req->offset)) {
        return -EPROTO;
    }
    *rel = off - req->offset;
    return cover(req, *rel, *rel + len) ? 0 : -EPROTO;
}

static void set_error(NbdRequest *req, int err)
{
    if (req->ret == 0) {
        req->ret = err;
    }
}

static int chunk_status(const NbdReplyOps *ops, void *opaque, const NbdExportInfo *info,
                        NbdRequest *req, uint32_t length)
{
    g_autofree uint8_t *p = NULL;
    uint64_t sum = 0;
    uint32_t n, mask = NBD_STATE_HOLE | NBD_STATE_ZERO;
    bool run = true;     /* the extents so far all have the first one's flags */
    int ret;

    if (req->type != NBD_CMD_BLOCK_STATUS || !info->base_allocation || req->has_status ||
        length < 12 || (length - 4) % 8 || (length - 4) / 8 > NBD_MAX_EXTENTS ||
        ((req->flags & NBD_CMD_FLAG_REQ_ONE) && length != 12)) {
        return -EPROTO;
    }
    p = g_malloc(length);
    ret = read_buf(ops, opaque, p, length);
    if (ret < 0) {
        return ret;
    }
    if (ldl_be_p(p) != info->context_id) {
        return -EPROTO;
    }
    n = (length - 4) / 8;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t len = ldl_be_p(p + 4 + 8 * i), flags = ldl_be_p(p + 8 + 8 * i) & mask;

        /* Only the last extent may reach past the request (a server's free extra). */
        if (len == 0 || (i > 0 && sum >= req->length)) {
            return -EPROTO;
        }
        if (i == 0) {
            req->status_flags = flags;
        } else if (run && flags != req->status_flags) {
            run = false;
            req->status_length = sum;
        }
        sum += len;
    }
    if (run) {
        req->status_length = MIN(sum, req->length);
    }
    req->has_status = true;
    return 0;
}

static int chunk_error(const NbdReplyOps *ops, void *opaque, NbdRequest *req, uint16_t type,
                       uint32_t length)
{
    g_autofree uint8_t *p = NULL;
    uint32_t err;
    uint16_t msglen;
    int ret;

    if (length < 6 || length > NBD_MAX_ERROR_CHUNK) {
        return -EPROTO;
    }
    p = g_malloc(length);
    ret = read_buf(ops, opaque, p, length);
    if (ret < 0) {
        return ret;
    }
    err = ldl_be_p(p);
    msglen = nbd_ld16(p + 4);
    if (err == 0 || msglen > length - 6 ||
        (type == NBD_REPLY_TYPE_ERROR && length != 6u + msglen)) {
        return -EPROTO;
    }
    if (type == NBD_REPLY_TYPE_ERROR_OFFSET) {
        uint64_t off;

        if (length != 6u + msglen + 8) {
            return -EPROTO;
        }
        off = ldq_be_p(p + 6 + msglen);
        if (off < req->offset || off - req->offset >= req->length) {
            return -EPROTO;
        }
    }
    /* The message is for a human; the block layer has only the errno to pass on. */
    set_error(req, nbd_errno_from_wire(err));
    return 0;
}

static int chunk(const NbdReplyOps *ops, void *opaque, const NbdExportInfo *info,
                 NbdRequest *req, uint16_t type, uint32_t length)
{
    uint8_t b[12];
    uint64_t rel;
    int ret;

    switch (type) {
    case NBD_REPLY_TYPE_NONE:
        return length == 0 ? 0 : -EPROTO;
    case NBD_REPLY_TYPE_OFFSET_DATA:
        if (length <= 8) {
            return -EPROTO;
        }
        ret = read_buf(ops, opaque, b, 8);
        if (ret == 0) {
            ret = content_range(req, ldq_be_p(b), length - 8, &rel);
        }
        return ret < 0 ? ret : fill_range(ops, opaque, req, rel, length - 8, false);
    case NBD_REPLY_TYPE_OFFSET_HOLE:
        if (length != 12) {
            return -EPROTO;
        }
        ret = read_buf(ops, opaque, b, 12);
        if (ret == 0) {
            ret = content_range(req, ldq_be_p(b), ldl_be_p(b + 8), &rel);
        }
        return ret < 0 ? ret : fill_range(ops, opaque, req, rel, ldl_be_p(b + 8), true);
    case NBD_REPLY_TYPE_BLOCK_STATUS:
        return chunk_status(ops, opaque, info, req, length);
    default:
        if (!(type & NBD_ERROR_BIT)) {
            return -EPROTO;     /* a type we cannot skip safely: the protocol says hang up */
        }
        return chunk_error(ops, opaque, req, type, length);
    }
}

/* The last message of @req was read: a success must have described everything asked. */
static int finish(NbdRequest *req, NbdRequest **out)
{
    if (req->ret == 0 && req->type == NBD_CMD_READ && req->covered_bytes != req->length) {
        return -EPROTO;
    }
    if (req->ret == 0 && req->type == NBD_CMD_BLOCK_STATUS && !req->has_status) {
        return -EPROTO;
    }
    *out = req;
    return 1;
}

static int simple_reply(const NbdReplyOps *ops, void *opaque, const NbdExportInfo *info,
                        const uint8_t *hdr, NbdRequest **out)
{
    uint32_t err = ldl_be_p(hdr + 4);
    NbdRequest *req = ops->find(opaque, ldq_be_p(hdr + 8));
    int ret;

    /* With structured replies on, a READ's reply is always structured. */
    if (!req || (req->type == NBD_CMD_READ && info->structured)) {
        return -EPROTO;
    }
    if (err) {
        set_error(req, nbd_errno_from_wire(err));
    } else if (req->type == NBD_CMD_READ) {
        ret = fill_range(ops, opaque, req, 0, req->length, false);
        if (ret < 0) {
            return ret;
        }
        req->covered_bytes = req->length;
    }
    return finish(req, out);
}

int nbd_reply_recv(const NbdReplyOps *ops, void *opaque, const NbdExportInfo *info,
                   NbdRequest **out)
{
    uint8_t hdr[NBD_STRUCTURED_REPLY_SIZE];
    NbdRequest *req;
    uint16_t flags, type;
    uint32_t magic;
    int ret;

    ret = read_buf(ops, opaque, hdr, NBD_SIMPLE_REPLY_SIZE);
    if (ret < 0) {
        return ret;
    }
    magic = ldl_be_p(hdr);
    if (magic == NBD_SIMPLE_REPLY_MAGIC) {
        return simple_reply(ops, opaque, info, hdr, out);
    }
    if (magic != NBD_STRUCTURED_REPLY_MAGIC || !info->structured) {
        return -EPROTO;
    }
    ret = read_buf(ops, opaque, hdr + NBD_SIMPLE_REPLY_SIZE,
                   NBD_STRUCTURED_REPLY_SIZE - NBD_SIMPLE_REPLY_SIZE);
    if (ret < 0) {
        return ret;
    }
    flags = nbd_ld16(hdr + 4);
    type = nbd_ld16(hdr + 6);
    req = ops->find(opaque, ldq_be_p(hdr + 8));
    if (!req) {
        return -EPROTO;
    }
    ret = chunk(ops, opaque, info, req, type, ldl_be_p(hdr + 16));
    if (ret < 0) {
        return ret;
    }
    if (!(flags & NBD_REPLY_FLAG_DONE)) {
        /* NONE says "no more": it must carry DONE. Unknown flags are ignored. */
        return type == NBD_REPLY_TYPE_NONE ? -EPROTO : 0;
    }
    return finish(req, out);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The "nbd" protocol row: a node whose bytes are an export of an NBD
 * server, over a unix or tcp socket. Options as QEMU's BlockdevOptionsNbd
 * (server.type=unix|inet, server.path / server.host + server.port,
 * export) or one of QEMU's filenames (nbd-addr.c). The handshake is
 * nbd-handshake.c; replies are read by nbd-reply.c.
 *
 * Requests come from any thread and block it; the connection
 * (nbd-client.c) carries many at once. This file fits the block layer's
 * requests to what the server said it takes: pieces of at most its
 * maximum payload, aligned to its minimum block (unaligned reads through a
 * bounce buffer, unaligned writes as read-modify-write of whole blocks),
 * FUA as a flag or a flush after, zeroes as data where WRITE_ZEROES is
 * missing. TLS (tls-creds, tls-hostname) is NBD_OPT_STARTTLS in the
 * handshake. No reconnection: reconnect-delay is accepted and ignored.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/tsan.h"
#include "qemu/option.h"
#include "qemu/sockets.h"
#include "io/channel.h"
#include "system/user-objects.h"
#include "block-int.h"
#include "nbd-int.h"
#include "nbd-addr.h"

/* WRITE_ZEROES and TRIM carry no payload: their length is bounded by the field only. */
#define NBD_MAX_NOPAYLOAD (1u << 30)

typedef struct BDRVNbdState {
    NbdClient *client;          /* fixed after open */
    NbdExportInfo info;         /* a copy of the client's, fixed after open */
    /*
     * Unaligned writes are read-modify-write of whole blocks: they take it
     * for writing, every other write for reading, so no write lands
     * between a block's read and its write back (where it would be lost).
     */
    GRWLock rmw_lock;
} BDRVNbdState;

static const char *const nbd_options[] = {
    "filename", "server.type", "server.path", "server.host", "server.port", "export",
    "host", "port", "path", "tls-creds", "tls-hostname", "reconnect-delay", "open-timeout",
    NULL,
};

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

        ret = nbd_client_request(s->client, type, flags, offset + done, len, piece, n, NULL);
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
    return nbd_client_request(s->client, NBD_CMD_FLUSH, 0, 0, 0, NULL, 0, NULL);
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

/* The server's minimum block over 1: writes coordinate with read-modify-write. */
static void write_lock(BDRVNbdState *s, bool rmw)
{
    if (s->info.min_block > 1) {
        if (rmw) {
            tsan_g_rw_lock_writer_lock(&s->rmw_lock);
        } else {
            tsan_g_rw_lock_reader_lock(&s->rmw_lock);
        }
    }
}

static void write_unlock(BDRVNbdState *s, bool rmw)
{
    if (s->info.min_block > 1) {
        if (rmw) {
            tsan_g_rw_lock_writer_unlock(&s->rmw_lock);
        } else {
            tsan_g_rw_lock_reader_unlock(&s->rmw_lock);
        }
    }
}

/*
 * An unaligned write (zeroes when @iov is NULL) as whole blocks: the blocks
 * at its ends read, its bytes laid over them, all written in one go.
 */
static int nbd_write_rmw(BDRVNbdState *s, uint64_t offset, uint64_t bytes,
                         const struct iovec *iov, int niov, uint16_t flags)
{
    uint64_t align = s->info.min_block;
    uint64_t start = offset & ~(align - 1);
    uint64_t end = MIN(DIV_ROUND_UP(offset + bytes, align) * align, s->info.size);
    uint64_t tail = (end - 1) & ~(align - 1);
    g_autofree uint8_t *buf = g_malloc(end - start);
    struct iovec b = { .iov_base = buf, .iov_len = MIN(align, end - start) };
    uint8_t *at = buf + (offset - start);
    int ret = 0;

    write_lock(s, true);
    if (offset != start) {
        ret = nbd_rw(s, NBD_CMD_READ, 0, start, b.iov_len, &b, 1);
    }
    if (ret == 0 && (offset + bytes) % align && (tail != start || offset == start)) {
        b = (struct iovec) { .iov_base = buf + (tail - start), .iov_len = end - tail };
        ret = nbd_rw(s, NBD_CMD_READ, 0, tail, b.iov_len, &b, 1);
    }
    if (ret == 0) {
        for (int i = 0; iov && i < niov; i++) {
            memcpy(at, iov[i].iov_base, iov[i].iov_len);
            at += iov[i].iov_len;
        }
        if (!iov) {
            memset(at, 0, bytes);
        }
        b = (struct iovec) { .iov_base = buf, .iov_len = end - start };
        ret = nbd_rw(s, NBD_CMD_WRITE, flags, start, end - start, &b, 1);
    }
    write_unlock(s, true);
    return ret;
}

static int nbd_pwritev(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                       const struct iovec *iov, int niov, int flags)
{
    BDRVNbdState *s = bs->opaque;
    int ret = check_range(s, offset, bytes);

    if (ret == 0 && !aligned(s, offset, bytes)) {
        ret = nbd_write_rmw(s, offset, bytes, iov, niov, fua_flag(s, flags));
    } else if (ret == 0) {
        write_lock(s, false);
        ret = nbd_rw(s, NBD_CMD_WRITE, fua_flag(s, flags), offset, bytes, iov, niov);
        write_unlock(s, false);
    }
    return nbd_after_write(bs, ret, flags);
}

/* WRITE_ZEROES or TRIM of an aligned range, in pieces whose length fits the field. */
static int nbd_nopayload(BDRVNbdState *s, uint16_t type, uint16_t flags, uint64_t offset,
                         uint64_t bytes)
{
    int ret = 0;

    write_lock(s, false);
    while (ret == 0 && bytes) {
        uint32_t len = MIN(bytes, NBD_MAX_NOPAYLOAD);

        ret = nbd_client_request(s->client, type, flags, offset, len, NULL, 0, NULL);
        offset += len;
        bytes -= len;
    }
    write_unlock(s, false);
    return ret;
}

static int nbd_pwrite_zeroes(BlockDriverState *bs, uint64_t offset, uint64_t bytes, int flags)
{
    BDRVNbdState *s = bs->opaque;
    uint64_t align = s->info.min_block, end = offset + bytes;
    uint64_t mid = MIN(DIV_ROUND_UP(offset, align) * align, end);
    uint64_t mid_end = MAX(end & ~(align - 1), mid);
    uint16_t fua = fua_flag(s, flags);
    int ret = check_range(s, offset, bytes);

    if (ret == 0 && !(s->info.flags & NBD_FLAG_SEND_WRITE_ZEROES)) {
        /* Zeroes written as data, a chunk at a time. */
        g_autofree void *zero = g_malloc0(MIN(bytes, 1 << 20));

        while (bytes && ret == 0) {
            struct iovec iov = { .iov_base = zero, .iov_len = MIN(bytes, 1 << 20) };

            ret = nbd_pwritev(bs, offset, iov.iov_len, &iov, 1, flags & BDRV_REQ_FUA);
            offset += iov.iov_len;
            bytes -= iov.iov_len;
        }
        return ret;
    }
    /* Unaligned ends as written zeroes; the aligned middle as WRITE_ZEROES. */
    if (ret == 0 && mid > offset) {
        ret = nbd_write_rmw(s, offset, mid - offset, NULL, 0, fua);
    }
    if (ret == 0 && mid_end > mid) {
        /* Without MAY_UNMAP the range must stay allocated: NO_HOLE. */
        ret = nbd_nopayload(s, NBD_CMD_WRITE_ZEROES,
                            fua | ((flags & BDRV_REQ_MAY_UNMAP) ? 0 : NBD_CMD_FLAG_NO_HOLE),
                            mid, mid_end - mid);
    }
    if (ret == 0 && end > mid_end) {
        ret = nbd_write_rmw(s, mid_end, end - mid_end, NULL, 0, fua);
    }
    return nbd_after_write(bs, ret, flags);
}

static int nbd_pdiscard(BlockDriverState *bs, uint64_t offset, uint64_t bytes)
{
    BDRVNbdState *s = bs->opaque;
    uint64_t align = s->info.min_block;
    uint64_t start = DIV_ROUND_UP(offset, align) * align, end = (offset + bytes) & ~(align - 1);
    int ret = check_range(s, offset, bytes);

    if (ret < 0 || !(s->info.flags & NBD_FLAG_SEND_TRIM) || end <= start) {
        return ret;     /* a discard is advice: only whole blocks are passed on */
    }
    return nbd_nopayload(s, NBD_CMD_TRIM, 0, start, end - start);
}

static int64_t nbd_getlength(BlockDriverState *bs)
{
    BDRVNbdState *s = bs->opaque;

    return s->info.size;
}

/*
 * base:allocation as BDRV_BLOCK_*: a hole that reads as zeroes is ZERO; a
 * hole whose bytes are undefined, or no context, is data (always a correct
 * answer: it only costs a copy); zeroes written over allocated space are
 * DATA | ZERO. The export decides all its bytes: ALLOCATED.
 */
static int nbd_block_status(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                            uint64_t *pnum, unsigned *status)
{
    BDRVNbdState *s = bs->opaque;
    uint64_t align = s->info.min_block;
    NbdRequest st;
    int ret;

    if (offset >= s->info.size) {
        return -EINVAL;
    }
    bytes = MIN(MIN(bytes, NBD_MAX_NOPAYLOAD), s->info.size - offset);
    if (align > 1 && (offset & (align - 1))) {
        /* The server wants aligned requests: up to the next boundary, say data. */
        bytes = MIN(bytes, align - (offset & (align - 1)));
    } else if (align > 1 && bytes >= align) {
        bytes &= ~(align - 1);
    }
    *pnum = bytes;
    *status = BDRV_BLOCK_DATA | BDRV_BLOCK_ALLOCATED;
    if (!s->info.base_allocation || !aligned(s, offset, bytes)) {
        return 0;
    }
    ret = nbd_client_request(s->client, NBD_CMD_BLOCK_STATUS, NBD_CMD_FLAG_REQ_ONE, offset,
                             bytes, NULL, 0, &st);
    if (ret < 0) {
        return ret;
    }
    *pnum = st.status_length;
    if ((st.status_flags & NBD_STATE_ZERO) && (st.status_flags & NBD_STATE_HOLE)) {
        *status = BDRV_BLOCK_ZERO | BDRV_BLOCK_ALLOCATED;
    } else if (st.status_flags & NBD_STATE_ZERO) {
        *status |= BDRV_BLOCK_ZERO;
    }
    return 0;
}

/* ---- Open and close (BQL) ---- */

/* open-timeout's default: how long a server may take to finish the handshake. */
#define NBD_OPEN_TIMEOUT_DEFAULT 60

static int nbd_open(BlockDriverState *bs, QemuOpts *opts, int flags, Error **errp)
{
    BDRVNbdState *s = bs->opaque;
    BdrvNode *n = bdrv_node(bs);
    g_auto(NbdAddr) addr = { 0 };
    TLSCreds *creds = NULL;
    const char *hostname;
    uint64_t timeout;
    int fd;

    if (!bdrv_check_options(bs, opts, nbd_options, errp) ||
        !qemu_opt_get_number(opts, "open-timeout", 0, &timeout, errp) ||
        !nbd_addr_from_opts(opts, n->opt_prefix, &addr, errp)) {
        return -EINVAL;
    }
    /*
     * No reconnection yet: reconnect-delay is ignored, a failed connect
     * fails the open at once, and open-timeout (default 60 s) bounds the
     * handshake.
     */
    timeout = timeout ? MIN(timeout, 24 * 3600) : NBD_OPEN_TIMEOUT_DEFAULT;
    if (qemu_opt_get(opts, "tls-creds")) {
        creds = user_objects_tls_creds(qemu_opt_get(opts, "tls-creds"), errp);
        if (!creds) {
            return -EINVAL;
        }
        if (tls_creds_is_server(creds)) {
            error_setg(errp, "Expecting TLS credentials with a client endpoint");
            tls_creds_unref(creds);
            return -EINVAL;
        }
    }
    fd = addr.is_unix ? unix_connect_path(addr.path, errp)
                      : inet_connect_host_port(addr.host, addr.port, errp);
    if (fd < 0) {
        if (creds) {
            tls_creds_unref(creds);
        }
        return -ECONNREFUSED;
    }
    /* With tls-hostname, or the host we connect to: the name the server's certificate must bear. */
    hostname = qemu_opt_get(opts, "tls-hostname") ?: (addr.is_unix ? NULL : addr.host);
    s->client = nbd_client_open(channel_socket_new(fd), addr.export, creds, hostname, timeout,
                                errp);
    if (creds) {
        tls_creds_unref(creds);     /* the TLS channel holds its own */
    }
    if (!s->client) {
        return -EIO;
    }
    s->info = *nbd_client_info(s->client);
    if ((s->info.flags & NBD_FLAG_READ_ONLY) && (flags & BDRV_O_RDWR)) {
        /* As QEMU's; with auto-read-only=on the layer opens again read-only. */
        error_setg(errp, "NBD export is read-only");
        nbd_client_close(s->client);
        return -EACCES;
    }
    g_free(bs->filename);
    bs->filename = nbd_addr_to_filename(&addr);
    g_rw_lock_init(&s->rmw_lock);
    return 0;
}

static void nbd_close(BlockDriverState *bs)
{
    BDRVNbdState *s = bs->opaque;

    nbd_client_close(s->client);
    g_rw_lock_clear(&s->rmw_lock);
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

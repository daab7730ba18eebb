/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz target: the nbd client's reply parser (block/nbd-reply.c), the
 * code that reads every byte an NBD server sends once the handshake is
 * over, on a stream made of the input. The same function runs in the
 * node's receiving thread (block/nbd.c); here its reads come from memory
 * and its requests from a table the input chooses.
 *
 * Input layout:
 *   byte 0        bit 0: structured replies negotiated; bit 1: base:allocation
 *                 selected, under context id byte >> 2 (qemu-nbd's is 0)
 *   byte 1        requests in flight, 1 + (byte & 3); their cookies are 1..n
 *   8 bytes each  type (byte % 8: the NBD_CMD_* of that value; 2 and 5, which
 *                 we never send, are READ and BLOCK_STATUS), flags (bit 0:
 *                 REQ_ONE),
 *                 offset (32 bits, big-endian), length - 1 (16 bits, big-endian)
 *   the rest      the server's bytes: simple replies and structured chunks
 * scripts/fuzz-corpus writes seeds in this layout: replies qemu-nbd sent
 * to requests of a Python client, and replies encoded there.
 *
 * Checked, for every input: no crash or sanitizer report; no byte written
 * outside a READ's buffer (guard bytes around each of its three iovec
 * pieces); a request completes at most once; a READ that succeeds had
 * every byte described (the parser's count of covered bytes equals its
 * length, and overlaps were refused); a BLOCK_STATUS that succeeds has an
 * extent of 1..length bytes; a failure is a negative errno.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "block/nbd-int.h"
#include "fuzz.h"

#define MAX_REQS 4
#define GUARD 64
#define GUARD_BYTE 0xa7

typedef struct FuzzReq {
    NbdRequest r;
    bool live;                  /* in flight: find() returns it */
    uint8_t *mem;               /* GUARD, piece, GUARD, piece, GUARD, piece, GUARD */
    struct iovec iov[3];
} FuzzReq;

typedef struct Stream {
    const uint8_t *data;
    size_t len, pos;
    FuzzReq req[MAX_REQS];
    int n;
} Stream;

static int stream_readv(void *opaque, const struct iovec *iov, int niov)
{
    Stream *s = opaque;

    for (int i = 0; i < niov; i++) {
        if (s->len - s->pos < iov[i].iov_len) {
            s->pos = s->len;
            return -EPIPE;
        }
        memcpy(iov[i].iov_base, s->data + s->pos, iov[i].iov_len);
        s->pos += iov[i].iov_len;
    }
    return 0;
}

static NbdRequest *stream_find(void *opaque, uint64_t cookie)
{
    Stream *s = opaque;

    for (int i = 0; i < s->n; i++) {
        if (s->req[i].live && s->req[i].r.cookie == cookie) {
            return &s->req[i].r;
        }
    }
    return NULL;
}

static const NbdReplyOps stream_ops = {
    .readv = stream_readv,
    .find = stream_find,
};

static const uint16_t cmd_types[8] = {
    NBD_CMD_READ, NBD_CMD_WRITE, NBD_CMD_READ, NBD_CMD_FLUSH, NBD_CMD_TRIM,
    NBD_CMD_BLOCK_STATUS, NBD_CMD_WRITE_ZEROES, NBD_CMD_BLOCK_STATUS,
};

static void setup_req(FuzzReq *q, uint64_t cookie, const uint8_t *p)
{
    uint32_t len = nbd_ld16(p + 6) + 1;
    uint32_t piece[3] = { len / 3, len / 3, len - 2 * (len / 3) };
    uint8_t *at;

    q->r = (NbdRequest) {
        .cookie = cookie,
        .type = cmd_types[p[0] % 8],
        .flags = (p[1] & 1) ? NBD_CMD_FLAG_REQ_ONE : 0,
        .offset = ldl_be_p(p + 2),
        .length = len,
    };
    q->live = true;
    q->mem = NULL;
    if (q->r.type != NBD_CMD_READ) {
        return;
    }
    q->mem = g_malloc(len + 4 * GUARD);
    memset(q->mem, GUARD_BYTE, len + 4 * GUARD);
    at = q->mem + GUARD;
    for (int i = 0; i < 3; i++) {
        q->iov[i] = (struct iovec) { .iov_base = at, .iov_len = piece[i] };
        at += piece[i] + GUARD;
    }
    q->r.iov = q->iov;
    q->r.niov = 3;
}

static void check_guards(const FuzzReq *q)
{
    const uint8_t *at = q->mem;

    if (!q->mem) {
        return;
    }
    for (int i = 0; i <= 3; i++) {
        for (int j = 0; j < GUARD; j++) {
            if (at[j] != GUARD_BYTE) {
                fprintf(stderr, "a READ's guard %d was written at byte %d\n", i, j);
                abort();
            }
        }
        at += GUARD + (i < 3 ? q->iov[i].iov_len : 0);
    }
}

static void check_done(const FuzzReq *q)
{
    const NbdRequest *r = &q->r;

    if (r->ret > 0) {
        fprintf(stderr, "a request completed with %d\n", r->ret);
        abort();
    }
    if (r->ret == 0 && r->type == NBD_CMD_READ && r->covered_bytes != r->length) {
        fprintf(stderr, "a READ of %u bytes succeeded with %" PRIu64 " described\n",
                r->length, r->covered_bytes);
        abort();
    }
    if (r->ret == 0 && r->type == NBD_CMD_BLOCK_STATUS &&
        (!r->has_status || r->status_length == 0 || r->status_length > r->length)) {
        fprintf(stderr, "a BLOCK_STATUS of %u bytes succeeded with an extent of %u\n",
                r->length, r->status_length);
        abort();
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    NbdExportInfo info = { 0 };
    Stream s = { 0 };
    size_t head;

    if (size < 2) {
        return 0;
    }
    info.structured = data[0] & 1;
    info.base_allocation = data[0] & 2;
    info.context_id = data[0] >> 2;
    s.n = 1 + (data[1] & 3);
    head = 2 + 8 * (size_t)s.n;
    if (size < head) {
        return 0;
    }
    for (int i = 0; i < s.n; i++) {
        setup_req(&s.req[i], i + 1, data + 2 + 8 * i);
    }
    s.data = data + head;
    s.len = size - head;

    while (s.pos < s.len) {
        NbdRequest *done = NULL;
        int ret = nbd_reply_recv(&stream_ops, &s, &info, &done);

        if (getenv("FUZZ_VERBOSE")) {
            fprintf(stderr, "at %zu: %d, request %" PRIu64 " %d\n", s.pos, ret,
                    done ? done->cookie : 0, done ? done->ret : 0);
        }
        if (ret < 0) {
            break;      /* a protocol error or the end: the connection would go */
        }
        if (ret == 1) {
            FuzzReq *q = (FuzzReq *)done;

            if (!q->live) {
                fprintf(stderr, "a request completed twice\n");
                abort();
            }
            check_done(q);
            q->live = false;
        }
    }
    for (int i = 0; i < s.n; i++) {
        check_guards(&s.req[i]);
        nbd_request_cleanup(&s.req[i].r);
        g_free(s.req[i].mem);
    }
    return 0;
}

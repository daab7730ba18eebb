/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The nbd client's pure parts on bytes, without a socket or a thread:
 *   - /nbd-reply/chunks: block/nbd-reply.c on crafted replies: chunks out
 *     of order across iovecs, a hole, overlaps, short coverage, a chunk
 *     past the request, NONE without DONE, an error chunk, block status
 *     clamped to its request and with a wrong context id, a simple reply
 *     to a READ once structured replies are on;
 *   - /nbd-reply/filenames: block/nbd-addr.c on QEMU's filename syntaxes,
 *     good (and the canonical name each gives) and bad.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bswap.h"
#include "block/nbd-int.h"
#include "block/nbd-addr.h"

/* ---- The reply parser alone ---- */

typedef struct Mem {
    GByteArray *in;
    size_t pos;
    NbdRequest *req;
} Mem;

static int mem_readv(void *opaque, const struct iovec *iov, int niov)
{
    Mem *m = opaque;

    for (int i = 0; i < niov; i++) {
        if (m->in->len - m->pos < iov[i].iov_len) {
            return -EPIPE;
        }
        memcpy(iov[i].iov_base, m->in->data + m->pos, iov[i].iov_len);
        m->pos += iov[i].iov_len;
    }
    return 0;
}

static NbdRequest *mem_find(void *opaque, uint64_t cookie)
{
    Mem *m = opaque;

    return m->req->cookie == cookie ? m->req : NULL;
}

static const NbdReplyOps mem_ops = { .readv = mem_readv, .find = mem_find };

static void put_chunk(GByteArray *a, uint16_t flags, uint16_t type, const void *p, uint32_t len)
{
    uint8_t h[20];

    stl_be_p(h, NBD_STRUCTURED_REPLY_MAGIC);
    nbd_st16(h + 4, flags);
    nbd_st16(h + 6, type);
    stq_be_p(h + 8, 7);
    stl_be_p(h + 16, len);
    g_byte_array_append(a, h, 20);
    g_byte_array_append(a, p, len);
}

static void put_data(GByteArray *a, uint16_t flags, uint64_t off, uint8_t fill, uint32_t n)
{
    g_autofree uint8_t *p = g_malloc(8 + n);

    stq_be_p(p, off);
    memset(p + 8, fill, n);
    put_chunk(a, flags, NBD_REPLY_TYPE_OFFSET_DATA, p, 8 + n);
}

/* Every message of @a read: the last result (1: complete, 0, -errno). */
static int parse_all(GByteArray *a, NbdRequest *req)
{
    NbdExportInfo info = { .structured = true, .base_allocation = true, .context_id = 5 };
    Mem m = { .in = a, .req = req };
    NbdRequest *done = NULL;
    int ret = 0;

    while (m.pos < a->len && ret == 0) {
        ret = nbd_reply_recv(&mem_ops, &m, &info, &done);
    }
    g_assert_true(ret != 1 || done == req);
    return ret;
}

static void test_reply(void)
{
    uint8_t buf[1000], hole[12], st[12];
    struct iovec v[2] = { { buf, 300 }, { buf + 300, 700 } };
    NbdRequest rd = { .cookie = 7, .type = NBD_CMD_READ, .offset = 5000, .length = 1000,
                      .iov = v, .niov = 2 };
    NbdRequest req;
    g_autoptr(GByteArray) a = g_byte_array_new();

    /* Out of order, across the two iovecs, a hole, then NONE. */
    req = rd;
    memset(buf, 0xee, sizeof(buf));
    put_data(a, 0, 5600, 0x22, 400);
    put_data(a, 0, 5000, 0x11, 400);
    stq_be_p(hole, 5400);
    stl_be_p(hole + 8, 200);
    put_chunk(a, 0, NBD_REPLY_TYPE_OFFSET_HOLE, hole, 12);
    put_chunk(a, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_NONE, NULL, 0);
    g_assert_cmpint(parse_all(a, &req), ==, 1);
    g_assert_cmpint(req.ret, ==, 0);
    g_assert_cmpuint(buf[0], ==, 0x11);
    g_assert_cmpuint(buf[399], ==, 0x11);
    g_assert_cmpuint(buf[400], ==, 0);
    g_assert_cmpuint(buf[599], ==, 0);
    g_assert_cmpuint(buf[600], ==, 0x22);
    g_assert_cmpuint(buf[999], ==, 0x22);
    nbd_request_cleanup(&req);

    /* Overlap, short of the whole, past the end, NONE without DONE. */
    req = rd;
    g_byte_array_set_size(a, 0);
    put_data(a, 0, 5000, 1, 600);
    put_data(a, NBD_REPLY_FLAG_DONE, 5500, 1, 500);
    g_assert_cmpint(parse_all(a, &req), ==, -EPROTO);
    nbd_request_cleanup(&req);
    req = rd;
    g_byte_array_set_size(a, 0);
    put_data(a, NBD_REPLY_FLAG_DONE, 5000, 1, 999);
    g_assert_cmpint(parse_all(a, &req), ==, -EPROTO);
    nbd_request_cleanup(&req);
    req = rd;
    g_byte_array_set_size(a, 0);
    put_data(a, NBD_REPLY_FLAG_DONE, 5001, 1, 1000);
    g_assert_cmpint(parse_all(a, &req), ==, -EPROTO);
    nbd_request_cleanup(&req);
    req = rd;
    g_byte_array_set_size(a, 0);
    put_chunk(a, 0, NBD_REPLY_TYPE_NONE, NULL, 0);
    g_assert_cmpint(parse_all(a, &req), ==, -EPROTO);

    /* An error chunk: the request's errno, the stream still in step. */
    req = rd;
    g_byte_array_set_size(a, 0);
    stl_be_p(st, NBD_ENOSPC);
    nbd_st16(st + 4, 0);
    put_chunk(a, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_ERROR, st, 6);
    g_assert_cmpint(parse_all(a, &req), ==, 1);
    g_assert_cmpint(req.ret, ==, -ENOSPC);

    /* Block status: one extent, clamped to the request; a wrong context id. */
    req = (NbdRequest) { .cookie = 7, .type = NBD_CMD_BLOCK_STATUS,
                         .flags = NBD_CMD_FLAG_REQ_ONE, .offset = 0, .length = 4096 };
    g_byte_array_set_size(a, 0);
    stl_be_p(st, 5);
    stl_be_p(st + 4, 65536);
    stl_be_p(st + 8, NBD_STATE_HOLE | NBD_STATE_ZERO | 0x100);
    put_chunk(a, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_BLOCK_STATUS, st, 12);
    g_assert_cmpint(parse_all(a, &req), ==, 1);
    g_assert_true(req.has_status);
    g_assert_cmpuint(req.status_length, ==, 4096);
    g_assert_cmpuint(req.status_flags, ==, NBD_STATE_HOLE | NBD_STATE_ZERO);
    req.has_status = false;
    g_byte_array_set_size(a, 0);
    stl_be_p(st, 6);
    put_chunk(a, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_BLOCK_STATUS, st, 12);
    g_assert_cmpint(parse_all(a, &req), ==, -EPROTO);

    /* With structured replies on, a simple reply to a READ. */
    req = rd;
    g_byte_array_set_size(a, 0);
    stl_be_p(st, NBD_SIMPLE_REPLY_MAGIC);
    stl_be_p(st + 4, 0);
    g_byte_array_append(a, st, 8);
    stq_be_p(st, 7);
    g_byte_array_append(a, st, 8);
    g_assert_cmpint(parse_all(a, &req), ==, -EPROTO);
}

/* ---- Filenames ---- */

static void test_filenames(void)
{
    static const struct {
        const char *fn;
        const char *canon;      /* NULL: refused */
    } cases[] = {
        { "nbd:unix:/tmp/s", "nbd+unix://?socket=/tmp/s" },
        { "nbd:unix:/tmp/s:exportname=e", "nbd+unix:///e?socket=/tmp/s" },
        { "nbd:localhost:10809", "nbd://localhost:10809" },
        { "nbd:[::1]:99:exportname=a:b", "nbd://[::1]:99/a:b" },
        { "nbd://h/x", "nbd://h:10809/x" },
        { "nbd+tcp://h:7/", "nbd://h:7" },
        { "nbd+unix:///e%20f?socket=/t/s%26", "nbd+unix:///e f?socket=/t/s&" },
        { "nbd+unix:///e", NULL },
        { "nbd+unix://h/e?socket=/s", NULL },
        { "nbd://h/e?socket=/s", NULL },
        { "nbd://", NULL },
        { "nbd:unix:", NULL },
        { "nbd:host", NULL },
        { "nbd::1", NULL },
        { "http://h/e", NULL },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_auto(NbdAddr) a = { 0 };
        Error *err = NULL;
        bool ok = nbd_addr_parse_filename(cases[i].fn, &a, &err);

        if (cases[i].canon) {
            g_autofree char *c = NULL;

            g_assert_null(err);
            g_assert_true(ok);
            c = nbd_addr_to_filename(&a);
            g_assert_cmpstr(c, ==, cases[i].canon);
        } else {
            g_assert_false(ok);
            g_assert_nonnull(err);
            error_free(err);
        }
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/nbd-reply/chunks", test_reply);
    g_test_add_func("/nbd-reply/filenames", test_filenames);
    return g_test_run();
}

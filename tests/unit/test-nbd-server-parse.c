/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for nbd/server-parse.c: the NBD server's parsers of option
 * headers, option payloads and request headers, on well-formed and
 * malformed input (lengths past the end, overflowing ranges, unknown
 * flags and commands, strings with NULs or too long), and a seeded random
 * check of every request against a model of the rules.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "nbd/server-int.h"

static void put_request(uint8_t *buf, uint32_t magic, uint16_t flags, uint16_t type,
                        uint64_t offset, uint32_t length)
{
    stl_be_p(buf, magic);
    stw_be_p(buf + 4, flags);
    stw_be_p(buf + 6, type);
    stq_be_p(buf + 8, 0x1122334455667788ull);
    stq_be_p(buf + 16, offset);
    stl_be_p(buf + 24, length);
}

static int parse(uint16_t flags, uint16_t type, uint64_t offset, uint32_t length,
                 const NbdRequestLimits *lim)
{
    uint8_t buf[NBD_REQUEST_SIZE];
    NbdRequest req;
    const char *why;
    int ret;

    put_request(buf, NBD_REQUEST_MAGIC, flags, type, offset, length);
    ret = nbd_parse_request(buf, lim, &req, &why);
    g_assert_true(ret == NBD_SUCCESS || why);
    if (ret >= 0) {
        g_assert_cmpuint(req.cookie, ==, 0x1122334455667788ull);
        g_assert_cmpuint(req.offset, ==, offset);
        g_assert_cmpuint(req.length, ==, length);
    }
    return ret;
}

static const NbdRequestLimits rw = { .size = 1 << 20, .writable = true, .structured = true,
                                     .meta_allocation = true };

static void test_request_ok(void)
{
    g_assert_cmpint(parse(0, NBD_CMD_READ, 0, 4096, &rw), ==, NBD_SUCCESS);
    g_assert_cmpint(parse(NBD_CMD_FLAG_FUA, NBD_CMD_WRITE, (1 << 20) - 512, 512, &rw), ==,
                    NBD_SUCCESS);
    g_assert_cmpint(parse(0, NBD_CMD_FLUSH, 0, 0, &rw), ==, NBD_SUCCESS);
    g_assert_cmpint(parse(0, NBD_CMD_DISC, 0, 0, &rw), ==, NBD_SUCCESS);
    g_assert_cmpint(parse(0, NBD_CMD_TRIM, 0, 1 << 20, &rw), ==, NBD_SUCCESS);
    g_assert_cmpint(parse(NBD_CMD_FLAG_NO_HOLE | NBD_CMD_FLAG_FAST_ZERO, NBD_CMD_WRITE_ZEROES,
                          4096, 4096, &rw), ==, NBD_SUCCESS);
    g_assert_cmpint(parse(NBD_CMD_FLAG_REQ_ONE, NBD_CMD_BLOCK_STATUS, 0, 1 << 20, &rw), ==,
                    NBD_SUCCESS);
    g_assert_cmpint(parse(NBD_CMD_FLAG_DF, NBD_CMD_READ, 0, 1, &rw), ==, NBD_SUCCESS);
    /* An empty read or write at the very end is in range. */
    g_assert_cmpint(parse(0, NBD_CMD_READ, 1 << 20, 0, &rw), ==, NBD_SUCCESS);
}

static void test_request_bad(void)
{
    NbdRequestLimits ro = rw, plain = rw;
    uint8_t buf[NBD_REQUEST_SIZE];
    NbdRequest req;
    const char *why;

    ro.writable = false;
    plain.structured = false;
    plain.meta_allocation = false;

    /* Framing: the client goes. */
    put_request(buf, NBD_REQUEST_MAGIC ^ 1, 0, NBD_CMD_READ, 0, 512);
    g_assert_cmpint(nbd_parse_request(buf, &rw, &req, &why), ==, -1);
    g_assert_cmpint(parse(0, NBD_CMD_WRITE, 0, NBD_MAX_BUFFER_SIZE + 1, &rw), ==, -1);
    /* An oversized write is framing even when it is also out of range or read-only. */
    g_assert_cmpint(parse(0, NBD_CMD_WRITE, UINT64_MAX, UINT32_MAX, &ro), ==, -1);

    /* Ranges: no overflow, nothing past the end. */
    g_assert_cmpint(parse(0, NBD_CMD_READ, UINT64_MAX, 1, &rw), ==, NBD_EINVAL);
    g_assert_cmpint(parse(0, NBD_CMD_READ, UINT64_MAX - 511, 512, &rw), ==, NBD_EINVAL);
    g_assert_cmpint(parse(0, NBD_CMD_READ, (1 << 20) - 511, 512, &rw), ==, NBD_EINVAL);
    g_assert_cmpint(parse(0, NBD_CMD_WRITE, 1 << 20, 1, &rw), ==, NBD_ENOSPC);
    g_assert_cmpint(parse(0, NBD_CMD_WRITE_ZEROES, 0, (1 << 20) + 1, &rw), ==, NBD_ENOSPC);
    g_assert_cmpint(parse(0, NBD_CMD_TRIM, (1ull << 63), 1, &rw), ==, NBD_EINVAL);
    g_assert_cmpint(parse(0, NBD_CMD_BLOCK_STATUS, 0, 0, &rw), ==, NBD_EINVAL);
    g_assert_cmpint(parse(0, NBD_CMD_READ, 0, NBD_MAX_BUFFER_SIZE + 1, &rw), ==, NBD_EINVAL);

    /* Flags, commands, negotiation. */
    g_assert_cmpint(parse(NBD_CMD_FLAG_NO_HOLE, NBD_CMD_WRITE, 0, 1, &rw), ==, NBD_EINVAL);
    g_assert_cmpint(parse(1u << 15, NBD_CMD_READ, 0, 1, &rw), ==, NBD_EINVAL);
    g_assert_cmpint(parse(NBD_CMD_FLAG_FUA, NBD_CMD_FLUSH, 0, 0, &rw), ==, NBD_EINVAL);
    g_assert_cmpint(parse(0, NBD_CMD_FLUSH, 1, 0, &rw), ==, NBD_EINVAL);
    g_assert_cmpint(parse(0, NBD_CMD_DISC, 0, 7, &rw), ==, NBD_EINVAL);
    g_assert_cmpint(parse(0, NBD_CMD_CACHE, 0, 1, &rw), ==, NBD_EINVAL);
    g_assert_cmpint(parse(0, NBD_CMD_RESIZE, 0, 1, &rw), ==, NBD_EINVAL);
    g_assert_cmpint(parse(0, 0xffff, 0, 1, &rw), ==, NBD_EINVAL);
    g_assert_cmpint(parse(NBD_CMD_FLAG_DF, NBD_CMD_READ, 0, 1, &plain), ==, NBD_EINVAL);
    g_assert_cmpint(parse(0, NBD_CMD_BLOCK_STATUS, 0, 1, &plain), ==, NBD_EINVAL);
    g_assert_cmpint(parse(0, NBD_CMD_WRITE, 0, 1, &ro), ==, NBD_EPERM);
    g_assert_cmpint(parse(0, NBD_CMD_TRIM, 0, 1, &ro), ==, NBD_EPERM);
    g_assert_cmpint(parse(0, NBD_CMD_WRITE_ZEROES, 0, 1, &ro), ==, NBD_EPERM);
    g_assert_cmpint(parse(0, NBD_CMD_READ, 0, 1, &ro), ==, NBD_SUCCESS);
}

/* Random headers against the rules written out again, independently. */
static void test_request_random(void)
{
    GRand *r = g_rand_new_with_seed(40);

    for (int i = 0; i < 200000; i++) {
        NbdRequestLimits lim = {
            .size = g_rand_int_range(r, 0, 3) ? g_rand_int(r) : UINT64_MAX - g_rand_int(r),
            .writable = g_rand_boolean(r), .structured = g_rand_boolean(r),
            .meta_allocation = g_rand_boolean(r),
        };
        uint16_t type = g_rand_int_range(r, 0, 10);
        uint16_t flags = g_rand_int_range(r, 0, 4) ? 0 : 1u << g_rand_int_range(r, 0, 16);
        uint64_t off = g_rand_boolean(r) ? g_rand_int(r) :
                       lim.size - g_rand_int_range(r, 0, 1000);
        uint32_t len = g_rand_boolean(r) ? g_rand_int_range(r, 0, 1 << 16) : g_rand_int(r);
        bool writes = type == NBD_CMD_WRITE || type == NBD_CMD_TRIM ||
                      type == NBD_CMD_WRITE_ZEROES;
        bool known = type <= NBD_CMD_WRITE_ZEROES + 1 && type != NBD_CMD_CACHE &&
                     (type != NBD_CMD_BLOCK_STATUS || lim.meta_allocation);
        bool in_range = off <= lim.size && (uint64_t)len <= lim.size - off;
        int ret;

        if (type == NBD_CMD_FLUSH || type == NBD_CMD_DISC) {
            off = len = 0;
            in_range = true;
        }
        ret = parse(flags, type, off, len, &lim);
        if (type == NBD_CMD_WRITE && len > NBD_MAX_BUFFER_SIZE) {
            g_assert_cmpint(ret, ==, -1);
        } else if (!known) {
            g_assert_cmpint(ret, ==, NBD_EINVAL);
        } else if (ret == NBD_SUCCESS) {
            /* Accepted: then it is entirely inside the export, and allowed. */
            g_assert_true(in_range);
            g_assert_true(!writes || lim.writable);
            g_assert_true(type != NBD_CMD_READ || len <= NBD_MAX_BUFFER_SIZE);
        } else {
            g_assert_true(ret == NBD_EINVAL || ret == NBD_EPERM || ret == NBD_ENOSPC);
            /* Refused although in range, allowed and unflagged: only for its length. */
            if (!flags && in_range && (!writes || lim.writable)) {
                g_assert_true((type == NBD_CMD_READ && len > NBD_MAX_BUFFER_SIZE) ||
                              (type == NBD_CMD_BLOCK_STATUS && !len));
            }
        }
    }
    g_rand_free(r);
}

static void put_option(uint8_t *buf, uint64_t magic, uint32_t option, uint32_t len)
{
    stq_be_p(buf, magic);
    stl_be_p(buf + 8, option);
    stl_be_p(buf + 12, len);
}

static void test_option_header(void)
{
    uint8_t buf[NBD_OPTION_HEADER_SIZE];
    NbdOptionHeader h;

    put_option(buf, NBD_OPTS_MAGIC, NBD_OPT_GO, 10);
    g_assert_cmpint(nbd_parse_option_header(buf, &h), ==, 0);
    g_assert_cmpuint(h.option, ==, NBD_OPT_GO);
    g_assert_cmpuint(h.length, ==, 10);
    put_option(buf, NBD_OPTS_MAGIC + 1, NBD_OPT_GO, 10);
    g_assert_cmpint(nbd_parse_option_header(buf, &h), ==, -EINVAL);
    put_option(buf, NBD_OPTS_MAGIC, NBD_OPT_GO, NBD_MAX_OPTION_LENGTH + 1);
    g_assert_cmpint(nbd_parse_option_header(buf, &h), ==, -E2BIG);
    put_option(buf, NBD_OPTS_MAGIC, 12345, UINT32_MAX);
    g_assert_cmpint(nbd_parse_option_header(buf, &h), ==, -E2BIG);
}

/* An option payload: a 32-bit length-prefixed name, then @rest. */
static GByteArray *named(const char *name, const void *rest, size_t rest_len)
{
    GByteArray *b = g_byte_array_new();
    uint8_t l[4];

    stl_be_p(l, strlen(name));
    g_byte_array_append(b, l, 4);
    g_byte_array_append(b, (const uint8_t *)name, strlen(name));
    g_byte_array_append(b, rest, rest_len);
    return b;
}

static uint32_t opt(uint32_t option, GByteArray *b, NbdOption *o)
{
    const char *why;
    uint32_t ret = nbd_parse_option(option, b->data, b->len, o, &why);

    g_assert_true(!ret || why);
    g_byte_array_unref(b);
    return ret;
}

static void test_option_payloads(void)
{
    g_autofree NbdOption *o = g_new0(NbdOption, 1);
    uint8_t infos[] = { 0, 2, 0, 1, 0, 3 };
    uint8_t meta[4 + 4 + 15 + 4 + 5];
    char *longname = g_strnfill(NBD_MAX_STRING + 1, 'x');
    const char *why;

    g_assert_cmpuint(opt(NBD_OPT_GO, named("disk", infos, sizeof(infos)), o), ==, 0);
    g_assert_cmpstr(o->name, ==, "disk");
    g_assert_cmpuint(o->n_info, ==, 2);
    g_assert_cmpuint(o->info[0], ==, NBD_INFO_NAME);
    g_assert_cmpuint(o->info[1], ==, NBD_INFO_BLOCK_SIZE);
    /* The count says 2 requests, 3 follow; or 1 byte short. */
    infos[1] = 2;
    g_assert_cmpuint(opt(NBD_OPT_GO, named("disk", infos, 5), o), ==, NBD_REP_ERR_INVALID);
    g_assert_cmpuint(opt(NBD_OPT_INFO, named("disk", infos, 1), o), ==, NBD_REP_ERR_INVALID);
    /* A name longer than the payload, or than 4096 bytes, or holding a NUL. */
    g_assert_cmpuint(nbd_parse_option(NBD_OPT_GO, (const uint8_t *)"\0\0\0\x09" "abc", 7, o,
                                      &why), ==, NBD_REP_ERR_INVALID);
    g_assert_cmpuint(nbd_parse_option(NBD_OPT_GO, (const uint8_t *)"\xff\xff\xff\xff", 4, o,
                                      &why), ==, NBD_REP_ERR_INVALID);
    g_assert_cmpuint(nbd_parse_option(NBD_OPT_GO, (const uint8_t *)"\0\0", 2, o, &why), ==,
                     NBD_REP_ERR_INVALID);
    g_assert_cmpuint(opt(NBD_OPT_GO, named(longname, "\0\0", 2), o), ==, NBD_REP_ERR_INVALID);
    g_assert_cmpuint(nbd_parse_option(NBD_OPT_GO, (const uint8_t *)"\0\0\0\x03" "a\0b\0\0", 9,
                                      o, &why), ==, NBD_REP_ERR_INVALID);

    /* EXPORT_NAME: the whole payload. */
    g_assert_cmpuint(nbd_parse_option(NBD_OPT_EXPORT_NAME, (const uint8_t *)"d0", 2, o, &why),
                     ==, 0);
    g_assert_cmpstr(o->name, ==, "d0");
    g_assert_cmpuint(nbd_parse_option(NBD_OPT_EXPORT_NAME, (const uint8_t *)longname,
                                      NBD_MAX_STRING + 1, o, &why), ==, NBD_REP_ERR_INVALID);
    g_assert_cmpuint(nbd_parse_option(NBD_OPT_EXPORT_NAME, (const uint8_t *)"a\0", 2, o, &why),
                     ==, NBD_REP_ERR_INVALID);
    g_free(longname);

    /* Options that take nothing. */
    g_assert_cmpuint(nbd_parse_option(NBD_OPT_STRUCTURED_REPLY, NULL, 0, o, &why), ==, 0);
    g_assert_cmpuint(nbd_parse_option(NBD_OPT_LIST, (const uint8_t *)"x", 1, o, &why), ==,
                     NBD_REP_ERR_INVALID);

    /* Meta contexts: base:allocation and something else. */
    stl_be_p(meta, 2);
    stl_be_p(meta + 4, 15);
    memcpy(meta + 8, "base:allocation", 15);
    stl_be_p(meta + 23, 5);
    memcpy(meta + 27, "qemu:", 5);
    g_assert_cmpuint(opt(NBD_OPT_SET_META_CONTEXT, named("d0", meta, sizeof(meta)), o), ==, 0);
    g_assert_true(o->query_base_allocation);
    g_assert_cmpuint(o->n_queries, ==, 2);
    /* Count larger than what follows; a query running past the end; trailing bytes. */
    stl_be_p(meta, 3);
    g_assert_cmpuint(opt(NBD_OPT_SET_META_CONTEXT, named("d0", meta, sizeof(meta)), o), ==,
                     NBD_REP_ERR_INVALID);
    stl_be_p(meta, 2);
    g_assert_cmpuint(opt(NBD_OPT_LIST_META_CONTEXT, named("d0", meta, sizeof(meta) - 1), o),
                     ==, NBD_REP_ERR_INVALID);
    stl_be_p(meta, 1);
    g_assert_cmpuint(opt(NBD_OPT_LIST_META_CONTEXT, named("d0", meta, sizeof(meta)), o), ==,
                     NBD_REP_ERR_INVALID);
    stl_be_p(meta, 0x7fffffff);
    g_assert_cmpuint(opt(NBD_OPT_LIST_META_CONTEXT, named("d0", meta, sizeof(meta)), o), ==,
                     NBD_REP_ERR_TOO_BIG);
}

/* Random payloads of every option: no crash, no read past the buffer (ASan), a name that fits. */
static void test_option_random(void)
{
    GRand *r = g_rand_new_with_seed(4040);
    g_autofree NbdOption *o = g_new0(NbdOption, 1);

    for (int i = 0; i < 100000; i++) {
        uint32_t len = g_rand_int_range(r, 0, 64);
        g_autofree uint8_t *p = g_malloc(len + 1);
        const char *why;

        for (uint32_t j = 0; j < len; j++) {
            p[j] = g_rand_int_range(r, 0, 4) ? g_rand_int_range(r, 0, 8) : g_rand_int(r);
        }
        if (!nbd_parse_option(g_rand_int_range(r, 0, 12), p, len, o, &why)) {
            g_assert_cmpuint(strlen(o->name), <=, NBD_MAX_STRING);
            g_assert_cmpuint(o->n_info, <=, NBD_MAX_INFO_REQUESTS);
        }
    }
    g_rand_free(r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/nbd-server/request/ok", test_request_ok);
    g_test_add_func("/nbd-server/request/bad", test_request_bad);
    g_test_add_func("/nbd-server/request/random", test_request_random);
    g_test_add_func("/nbd-server/option/header", test_option_header);
    g_test_add_func("/nbd-server/option/payloads", test_option_payloads);
    g_test_add_func("/nbd-server/option/random", test_option_random);
    return g_test_run();
}

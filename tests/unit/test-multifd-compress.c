/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for migration/transport/multifd-compress.c, run for every row of the
 * table: many packets of random, zero, text-like and mixed pages (1 and
 * 128 pages, several levels) on one sending stream decode in order on one
 * receiving state; zero and text pages shrink; and hostile bodies (every
 * truncation, one page too many, one too few, garbage, real bodies with
 * bytes changed, empty, a zlib body not ending at a flush, a zstd window
 * too large) fail with a message, or at least never write outside the
 * pages, each of which is followed by a canary.
 */
#include "qemu/osdep.h"
#include <zstd.h>
#include "qapi/error.h"
#include "migration/transport/multifd.h"
#include "migration/transport/multifd-compress.h"

#define PAGE ((size_t)TARGET_PAGE_SIZE)
#define CANARY 256
#define CANARY_BYTE 0xa5

enum { FILL_RANDOM, FILL_ZERO, FILL_TEXT, FILL_MIX, FILL_KINDS };

/* @n pages, each followed by CANARY bytes the decoder must not touch. */
typedef struct Pages {
    uint8_t *mem;
    uint8_t **p;        /* exactly @n pointers, so reading past them shows */
    uint32_t n;
} Pages;

static Pages *pages_new(uint32_t n)
{
    Pages *pg = g_new0(Pages, 1);

    pg->n = n;
    pg->mem = g_malloc((size_t)MAX(n, 1) * (PAGE + CANARY));
    memset(pg->mem, CANARY_BYTE, (size_t)MAX(n, 1) * (PAGE + CANARY));
    pg->p = g_new(uint8_t *, MAX(n, 1));
    for (uint32_t i = 0; i < n; i++) {
        pg->p[i] = pg->mem + i * (PAGE + CANARY);
    }
    return pg;
}

static void pages_check_canaries(const Pages *pg)
{
    for (uint32_t i = 0; i < pg->n; i++) {
        for (size_t j = 0; j < CANARY; j++) {
            g_assert_cmphex(pg->p[i][PAGE + j], ==, CANARY_BYTE);
        }
    }
}

static void pages_free(Pages *pg)
{
    pages_check_canaries(pg);
    g_free(pg->p);
    g_free(pg->mem);
    g_free(pg);
}

static void fill_page(uint8_t *p, int kind, GRand *r)
{
    static const char *const words[] = {
        "the ", "kernel ", "page ", "migration ", "dirty ", "0x7f3a ",
        "error: ", "struct ", "return ", "\n", "\t", "{ ", "} ", "int ",
    };
    size_t i = 0;

    switch (kind) {
    case FILL_RANDOM:
        for (i = 0; i < PAGE; i += 4) {
            uint32_t v = g_rand_int(r);
            memcpy(p + i, &v, 4);
        }
        break;
    case FILL_ZERO:
        memset(p, 0, PAGE);
        break;
    case FILL_TEXT:
        while (i < PAGE) {
            const char *w = words[g_rand_int_range(r, 0, ARRAY_SIZE(words))];
            size_t l = MIN(strlen(w), PAGE - i);
            memcpy(p + i, w, l);
            i += l;
        }
        break;
    default:
        /* A page of its own kind, or half text and half zero. */
        if (g_rand_boolean(r)) {
            fill_page(p, g_rand_int_range(r, FILL_RANDOM, FILL_MIX), r);
        } else {
            fill_page(p, FILL_TEXT, r);
            memset(p + PAGE / 2, 0, PAGE / 2);
        }
    }
}

static void fill_pages(Pages *pg, int kind, GRand *r)
{
    for (uint32_t i = 0; i < pg->n; i++) {
        fill_page(pg->p[i], kind, r);
    }
}

/* One sending stream's packet: the body and what it holds. */
typedef struct Body {
    uint8_t *buf;
    size_t len;
} Body;

static Body compress_pages(const MultifdCompressOps *ops, void *tx,
                           const Pages *src)
{
    size_t cap = ops->bound(src->n);
    Body b = { g_malloc(cap + CANARY), 0 };
    ssize_t len;

    memset(b.buf + cap, CANARY_BYTE, CANARY);
    len = ops->compress(tx, (const uint8_t *const *)src->p, src->n, b.buf,
                        cap, &error_abort);
    g_assert_cmpint(len, >=, 0);
    g_assert_cmpuint(len, <=, cap);
    for (size_t j = 0; j < CANARY; j++) {
        g_assert_cmphex(b.buf[cap + j], ==, CANARY_BYTE);
    }
    b.len = len;
    return b;
}

/* Decodes @in into @dst; NULL on success, else the error (ok agrees). */
static Error *decode(const MultifdCompressOps *ops, void *rx,
                     const uint8_t *in, size_t len, Pages *dst)
{
    Error *err = NULL;
    bool ok = ops->decompress(rx, in, len, dst->p, dst->n, &err);

    g_assert(ok == (err == NULL));
    pages_check_canaries(dst);
    return err;
}

static void assert_error(Error *err, const char *codec, const char *msg)
{
    g_assert_nonnull(err);
    if (!strstr(error_get_pretty(err), msg) ||
        (codec && !strstr(error_get_pretty(err), codec))) {
        g_test_message("error \"%s\" does not say \"%s\" and \"%s\"",
                       error_get_pretty(err), msg, codec ? codec : "");
        g_assert_not_reached();
    }
    error_free(err);
}

static const MultifdCompressOps *row(gconstpointer data)
{
    return multifd_compress_ops(GPOINTER_TO_INT(data));
}

/* The codec's name as error messages give it. */
static const char *codec_name(const MultifdCompressOps *ops)
{
    return strcmp(ops->name, "none") ? ops->name : "uncompressed";
}

/* @b decodes on @rx into @dst as exactly @src's pages; frees all three. */
static void assert_decodes_to(const MultifdCompressOps *ops, void *rx, Body *b, Pages *src,
                              Pages *dst)
{
    g_assert_null(decode(ops, rx, b->buf, b->len, dst));
    for (uint32_t i = 0; i < src->n; i++) {
        g_assert(memcmp(src->p[i], dst->p[i], PAGE) == 0);
    }
    g_free(b->buf);
    pages_free(src);
    pages_free(dst);
}

static void round_trip(const MultifdCompressOps *ops, int level, GRand *r)
{
    void *tx = ops->send_new(level, &error_abort);
    void *rx = ops->recv_new(&error_abort);

    g_assert_nonnull(tx);
    g_assert_nonnull(rx);
    for (int round = 0; round < 24; round++) {
        uint32_t n = round % 3 == 0 ? 1 : round % 3 == 1 ? MULTIFD_PACKET_PAGES
                     : g_rand_int_range(r, 2, MULTIFD_PACKET_PAGES);
        Pages *src = pages_new(n), *dst = pages_new(n);
        Body b;

        fill_pages(src, round % FILL_KINDS, r);
        b = compress_pages(ops, tx, src);
        assert_decodes_to(ops, rx, &b, src, dst);
    }
    ops->send_free(tx);
    ops->recv_free(rx);
}

static void test_round_trip(gconstpointer data)
{
    static const int levels[][4] = {
        [MULTIFD_COMPRESSION_NONE] = { 0, -1 },
        [MULTIFD_COMPRESSION_ZLIB] = { 0, 1, 6, 9 },
        [MULTIFD_COMPRESSION_ZSTD] = { 0, 1, 3, 9 },
    };
    const MultifdCompressOps *ops = row(data);
    g_autoptr(GRand) r = g_rand_new_with_seed(1);

    for (int i = 0; i < 4 && levels[GPOINTER_TO_INT(data)][i] >= 0; i++) {
        round_trip(ops, levels[GPOINTER_TO_INT(data)][i], r);
    }
}

/* Zero and text pages must shrink a lot; random ones may not grow much. */
static void test_ratio(gconstpointer data)
{
    const MultifdCompressOps *ops = row(data);
    g_autoptr(GRand) r = g_rand_new_with_seed(2);
    void *tx = ops->send_new(1, &error_abort);
    Pages *pg = pages_new(MULTIFD_PACKET_PAGES);
    size_t raw = MULTIFD_PACKET_PAGES * PAGE;
    Body b;

    fill_pages(pg, FILL_ZERO, r);
    b = compress_pages(ops, tx, pg);
    g_test_message("%s: 128 zero pages -> %zu bytes", ops->name, b.len);
    g_assert_cmpuint(b.len, <=, ops->packet_flag ? raw / 100 : raw);
    g_free(b.buf);

    fill_pages(pg, FILL_TEXT, r);
    b = compress_pages(ops, tx, pg);
    g_test_message("%s: 128 text pages -> %zu bytes", ops->name, b.len);
    g_assert_cmpuint(b.len, <=, ops->packet_flag ? raw / 2 : raw);
    g_free(b.buf);

    fill_pages(pg, FILL_RANDOM, r);
    b = compress_pages(ops, tx, pg);
    g_test_message("%s: 128 random pages -> %zu bytes", ops->name, b.len);
    g_assert_cmpuint(b.len, <=, raw + raw / 64);
    g_free(b.buf);

    pages_free(pg);
    ops->send_free(tx);
}

/*
 * A receiving state that has decoded a first packet of text pages, and
 * the sending stream that made it, ready for a second packet.
 */
static void primed_pair(const MultifdCompressOps *ops, GRand *r, void **tx,
                        void **rx)
{
    Pages *src = pages_new(2), *dst = pages_new(2);
    Body b;

    *tx = ops->send_new(1, &error_abort);
    *rx = ops->recv_new(&error_abort);
    fill_pages(src, FILL_TEXT, r);
    b = compress_pages(ops, *tx, src);
    g_assert_null(decode(ops, *rx, b.buf, b.len, dst));
    g_free(b.buf);
    pages_free(src);
    pages_free(dst);
}

/* A small packet: text, random and zero pages. */
static void fill_small(Pages *pg, GRand *r)
{
    fill_page(pg->p[0], FILL_TEXT, r);
    fill_page(pg->p[1], FILL_RANDOM, r);
    fill_page(pg->p[2], FILL_ZERO, r);
}

/* Counts @err's message, with the page counts left out; frees @err. */
static void tally_error(GHashTable *seen, Error *err)
{
    g_autofree char *msg = g_strdup(error_get_pretty(err));
    char *digit;

    while ((digit = strpbrk(msg, "0123456789"))) {
        *digit = '#';
    }
    g_hash_table_insert(seen, g_strdup(msg),
                        GUINT_TO_POINTER(GPOINTER_TO_UINT(
                            g_hash_table_lookup(seen, msg)) + 1));
    error_free(err);
}

static void print_tally(GHashTable *seen)
{
    GHashTableIter it;
    gpointer msg, count;

    g_hash_table_iter_init(&it, seen);
    while (g_hash_table_iter_next(&it, &msg, &count)) {
        g_test_message("  %u x \"%s\"", GPOINTER_TO_UINT(count),
                       (char *)msg);
    }
}

/* Every cut of a first and of a second packet fails, wherever it falls. */
static void test_truncated(gconstpointer data)
{
    const MultifdCompressOps *ops = row(data);
    g_autoptr(GRand) r = g_rand_new_with_seed(3);
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal,
                                                       g_free, NULL);

    for (int second = 0; second < 2; second++) {
        g_autoptr(GRand) again = NULL;
        void *tx, *rx;
        Pages *src = pages_new(3), *dst = pages_new(3);
        Body b;
        guint32 seed = g_rand_int(r);

        /* Each cut needs a fresh receiver in the same state: replay. */
        again = g_rand_new_with_seed(seed);
        if (second) {
            primed_pair(ops, again, &tx, &rx);
            ops->recv_free(rx);
        } else {
            tx = ops->send_new(1, &error_abort);
        }
        fill_small(src, again);
        b = compress_pages(ops, tx, src);
        g_test_message("%s: small packet %d of %zu bytes", ops->name,
                       second + 1, b.len);

        for (size_t cut = 0; cut < b.len; cut++) {
            void *tx2;
            Error *err;

            g_rand_set_seed(again, seed);
            if (second) {
                primed_pair(ops, again, &tx2, &rx);
                ops->send_free(tx2);
            } else {
                rx = ops->recv_new(&error_abort);
            }
            err = decode(ops, rx, b.buf, cut, dst);
            g_assert_nonnull(err);
            tally_error(seen, err);
            ops->recv_free(rx);
        }

        /* And the whole body decodes. */
        g_rand_set_seed(again, seed);
        if (second) {
            void *tx2;
            primed_pair(ops, again, &tx2, &rx);
            ops->send_free(tx2);
        } else {
            rx = ops->recv_new(&error_abort);
        }
        g_assert_null(decode(ops, rx, b.buf, b.len, dst));
        for (int i = 0; i < 3; i++) {
            g_assert(memcmp(src->p[i], dst->p[i], PAGE) == 0);
        }
        ops->recv_free(rx);
        ops->send_free(tx);
        g_free(b.buf);
        pages_free(src);
        pages_free(dst);
    }
    print_tally(seen);
}

/* A body of @have pages given room for @want fails with @msg. */
static void check_count(const MultifdCompressOps *ops, int kind, bool primed,
                        uint32_t have, uint32_t want, const char *msg)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(4);
    Pages *src = pages_new(have), *dst = pages_new(want);
    void *tx, *rx;
    Body b;

    if (primed) {
        primed_pair(ops, r, &tx, &rx);
    } else {
        tx = ops->send_new(1, &error_abort);
        rx = ops->recv_new(&error_abort);
    }
    fill_pages(src, kind, r);
    b = compress_pages(ops, tx, src);
    assert_error(decode(ops, rx, b.buf, b.len, dst), codec_name(ops), msg);
    g_free(b.buf);
    ops->send_free(tx);
    ops->recv_free(rx);
    pages_free(src);
    pages_free(dst);
}

static void test_count(gconstpointer data)
{
    const MultifdCompressOps *ops = row(data);

    for (int kind = 0; kind < FILL_KINDS; kind++) {
        for (int primed = 0; primed < 2; primed++) {
            check_count(ops, kind, primed, 2, 1, "past");
            check_count(ops, kind, primed, 4, 3, "past");
            check_count(ops, kind, primed, MULTIFD_PACKET_PAGES + 1,
                        MULTIFD_PACKET_PAGES, "past");
            check_count(ops, kind, primed, 1, 2, "early");
            check_count(ops, kind, primed, MULTIFD_PACKET_PAGES - 1,
                        MULTIFD_PACKET_PAGES, "early");
        }
    }
}

/* Garbage fails, or decodes within its pages; either way no crash. */
static void test_garbage(gconstpointer data)
{
    const MultifdCompressOps *ops = row(data);
    g_autoptr(GRand) r = g_rand_new_with_seed(5);
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal,
                                                       g_free, NULL);
    int decoded = 0;

    for (int i = 0; i < 2000; i++) {
        uint32_t n = g_rand_int_range(r, 1, 5);
        size_t len = i % 50 == 0 ? n * PAGE : g_rand_int_range(r, 1, 9000);
        g_autofree uint8_t *in = g_malloc(len);
        Pages *dst = pages_new(n);
        void *tx = NULL, *rx;
        Error *err;

        for (size_t j = 0; j < len; j++) {
            in[j] = g_rand_int(r);
        }
        /* Past zlib's first check, so that inflate reads the garbage. */
        if (i % 4 >= 2 && len >= 4) {
            memcpy(in + len - 4, "\x00\x00\xff\xff", 4);
        }
        /* Half the time behind a real first packet, past any header. */
        if (i % 2) {
            primed_pair(ops, r, &tx, &rx);
        } else {
            rx = ops->recv_new(&error_abort);
        }
        err = decode(ops, rx, in, len, dst);
        if (err) {
            g_assert_cmpuint(strlen(error_get_pretty(err)), >, 0);
            tally_error(seen, err);
        } else {
            decoded++;
        }
        if (tx) {
            ops->send_free(tx);
        }
        ops->recv_free(rx);
        pages_free(dst);
    }
    g_test_message("%s: %d of 2000 garbage bodies decoded", ops->name,
                   decoded);
    print_tally(seen);
}

/*
 * A real body with a few bytes changed gets deeper into the decoder than
 * garbage does: it fails, or fills the pages with something, inside them.
 */
static void test_mutated(gconstpointer data)
{
    const MultifdCompressOps *ops = row(data);
    g_autoptr(GRand) r = g_rand_new_with_seed(8);
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal,
                                                       g_free, NULL);
    int decoded = 0;

    for (int i = 0; i < 1000; i++) {
        guint32 seed = g_rand_int(r);
        g_autoptr(GRand) again = g_rand_new_with_seed(seed);
        Pages *src = pages_new(4), *dst = pages_new(4);
        void *tx, *rx;
        Body b;
        Error *err;

        primed_pair(ops, again, &tx, &rx);
        fill_pages(src, FILL_MIX, r);
        b = compress_pages(ops, tx, src);
        for (int k = g_rand_int_range(r, 1, 4); k > 0; k--) {
            b.buf[g_rand_int_range(r, 0, b.len)] ^= g_rand_int_range(r, 1, 256);
        }
        err = decode(ops, rx, b.buf, b.len, dst);
        if (err) {
            tally_error(seen, err);
        } else {
            decoded++;
        }
        ops->send_free(tx);
        ops->recv_free(rx);
        g_free(b.buf);
        pages_free(src);
        pages_free(dst);
    }
    g_test_message("%s: %d of 1000 mutated bodies decoded", ops->name,
                   decoded);
    print_tally(seen);
}

/* An empty body holds no page; no pages take an empty body. */
static void test_empty(gconstpointer data)
{
    const MultifdCompressOps *ops = row(data);
    g_autoptr(GRand) r = g_rand_new_with_seed(6);
    static const uint8_t byte;

    for (int primed = 0; primed < 2; primed++) {
        Pages *one = pages_new(1), *none = pages_new(0);
        void *tx = NULL, *rx;

        if (primed) {
            primed_pair(ops, r, &tx, &rx);
        } else {
            rx = ops->recv_new(&error_abort);
        }
        assert_error(decode(ops, rx, &byte, 0, one), codec_name(ops), "");
        ops->recv_free(rx);
        rx = ops->recv_new(&error_abort);
        g_assert_null(decode(ops, rx, &byte, 0, none));
        ops->recv_free(rx);
        if (tx) {
            ops->send_free(tx);
        }
        pages_free(one);
        pages_free(none);
    }
}

/* Too little room to compress into is an error, never an overrun. */
static void test_no_room(gconstpointer data)
{
    const MultifdCompressOps *ops = row(data);
    g_autoptr(GRand) r = g_rand_new_with_seed(7);
    Pages *src = pages_new(2);
    uint8_t out[64 + CANARY];
    Error *err = NULL;
    void *tx = ops->send_new(1, &error_abort);

    fill_pages(src, FILL_RANDOM, r);
    memset(out, CANARY_BYTE, sizeof(out));
    g_assert_cmpint(ops->compress(tx, (const uint8_t *const *)src->p, 2, out,
                                  64, &err), ==, -1);
    assert_error(err, NULL, "room");
    for (size_t j = 64; j < sizeof(out); j++) {
        g_assert_cmphex(out[j], ==, CANARY_BYTE);
    }
    ops->send_free(tx);
    pages_free(src);
}

/*
 * A zstd frame header may ask for any window up to 2 GiB: the receiver
 * takes the 2^25 of QEMU's highest level and refuses more.
 */
static void test_zstd_window(void)
{
    const MultifdCompressOps *ops = multifd_compress_ops(MULTIFD_COMPRESSION_ZSTD);
    /* Magic, no content size or checksum, window exponent, raw block. */
    uint8_t frame[6 + 3 + PAGE] = { 0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x00,
                                    0x00, 0x80, 0x00 };
    Pages *dst = pages_new(1);
    void *rx;

    memset(frame + 9, 'x', PAGE);
    frame[5] = (25 - 10) << 3;
    rx = ops->recv_new(&error_abort);
    g_assert_null(decode(ops, rx, frame, sizeof(frame), dst));
    g_assert_cmphex(dst->p[0][PAGE - 1], ==, 'x');
    ops->recv_free(rx);

    frame[5] = (26 - 10) << 3;
    rx = ops->recv_new(&error_abort);
    assert_error(decode(ops, rx, frame, sizeof(frame), dst), "zstd", "corrupt");
    ops->recv_free(rx);

    frame[5] = (31 - 10) << 3;
    rx = ops->recv_new(&error_abort);
    assert_error(decode(ops, rx, frame, sizeof(frame), dst), "zstd", "corrupt");
    ops->recv_free(rx);
    pages_free(dst);
}

/*
 * Random pages go as a frame of raw blocks: exactly the pages and the
 * headers, and libzstd's own decoders take it, one-shot and as a stream
 * of packets on one context (how QEMU's receiver reads a channel). Text
 * pages among them do not stop it when no sample falls on one; a packet
 * whose samples compress is compressed.
 */
static void test_zstd_raw(void)
{
    const MultifdCompressOps *ops = multifd_compress_ops(MULTIFD_COMPRESSION_ZSTD);
    g_autoptr(GRand) r = g_rand_new_with_seed(9);
    void *tx = ops->send_new(1, &error_abort);
    ZSTD_DCtx *dc = ZSTD_createDCtx();
    static const uint32_t sizes[] = { 1, 31, 32, 33, MULTIFD_PACKET_PAGES };

    for (size_t k = 0; k < ARRAY_SIZE(sizes); k++) {
        uint32_t n = sizes[k], blocks = DIV_ROUND_UP(n, 32);
        Pages *src = pages_new(n);
        g_autofree uint8_t *flat = g_malloc(n * PAGE);
        Body b;

        fill_pages(src, FILL_RANDOM, r);
        if (n > 2) {
            fill_page(src->p[1], FILL_TEXT, r);     /* no sample falls there */
        }
        b = compress_pages(ops, tx, src);
        g_assert_cmpuint(b.len, ==, 4 + 1 + 4 + 3 * blocks + n * PAGE);
        g_assert_cmpuint(ZSTD_decompress(flat, n * PAGE, b.buf, b.len), ==, n * PAGE);
        for (uint32_t i = 0; i < n; i++) {
            g_assert(memcmp(flat + i * PAGE, src->p[i], PAGE) == 0);
        }
        /* As one stream: each frame ends, the next begins on the same context. */
        for (int again = 0; again < 2; again++) {
            ZSTD_inBuffer in = { b.buf, b.len, 0 };
            ZSTD_outBuffer out = { flat, n * PAGE, 0 };

            memset(flat, 0, n * PAGE);
            g_assert_cmpuint(ZSTD_decompressStream(dc, &out, &in), ==, 0);
            g_assert_cmpuint(out.pos, ==, n * PAGE);
            g_assert_cmpuint(in.pos, ==, b.len);
            g_assert(memcmp(flat + (n - 1) * PAGE, src->p[n - 1], PAGE) == 0);
        }
        g_free(b.buf);

        fill_pages(src, FILL_TEXT, r);
        b = compress_pages(ops, tx, src);
        g_assert_cmpuint(b.len, <, n * PAGE / 2);
        g_free(b.buf);
        pages_free(src);
    }
    ZSTD_freeDCtx(dc);
    ops->send_free(tx);
}

/*
 * zlib: random packets go as stored blocks (a few bytes of headers on top
 * of the pages), text packets on the same stream compress again, and one
 * receiving stream decodes the switches of level both ways. (Deflate at
 * level 1 falls back to stored blocks for random pages too: what the
 * switch saves is time, shown by migbench random-4g-mfd2-zlib.)
 */
static void test_zlib_stored(void)
{
    const MultifdCompressOps *ops = multifd_compress_ops(MULTIFD_COMPRESSION_ZLIB);
    g_autoptr(GRand) r = g_rand_new_with_seed(10);
    void *tx = ops->send_new(1, &error_abort);
    void *rx = ops->recv_new(&error_abort);
    const size_t raw = MULTIFD_PACKET_PAGES * PAGE;

    for (int round = 0; round < 6; round++) {
        bool random = round % 3 != 1;
        Pages *src = pages_new(MULTIFD_PACKET_PAGES), *dst = pages_new(MULTIFD_PACKET_PAGES);
        Body b;

        fill_pages(src, random ? FILL_RANDOM : FILL_TEXT, r);
        b = compress_pages(ops, tx, src);
        g_test_message("zlib round %d (%s): %zu bytes", round, random ? "random" : "text", b.len);
        if (random) {
            /* Stored blocks: 5 bytes of header every window (32 KiB) or so. */
            g_assert_cmpuint(b.len, <=, raw + raw / 512);
        } else {
            g_assert_cmpuint(b.len, <, raw / 2);
        }
        assert_decodes_to(ops, rx, &b, src, dst);
    }
    ops->send_free(tx);
    ops->recv_free(rx);
}

/*
 * Hand-made zlib bodies: a zlib header and a stored block of one page,
 * then either a real sync flush (an empty stored block) or a tail that
 * also ends in 00 00 ff ff but stops inside a block header: an empty
 * fixed block, then a stored header cut before its lengths.
 */
static void test_zlib_flush_point(void)
{
    const MultifdCompressOps *ops = multifd_compress_ops(MULTIFD_COMPRESSION_ZLIB);
    static const uint8_t head[] = { 0x78, 0x01, 0x00, 0x00, 0x10, 0xff, 0xef };
    static const uint8_t sync[] = { 0x00, 0x00, 0x00, 0xff, 0xff };
    static const uint8_t cut[] = { 0x02, 0x00, 0x00, 0xff, 0xff };
    uint8_t body[sizeof(head) + PAGE + sizeof(sync)];
    Pages *dst = pages_new(1);
    void *rx;

    memcpy(body, head, sizeof(head));
    memset(body + sizeof(head), 'z', PAGE);
    memcpy(body + sizeof(head) + PAGE, sync, sizeof(sync));
    rx = ops->recv_new(&error_abort);
    g_assert_null(decode(ops, rx, body, sizeof(body), dst));
    g_assert_cmphex(dst->p[0][0], ==, 'z');
    ops->recv_free(rx);

    memcpy(body + sizeof(head) + PAGE, cut, sizeof(cut));
    rx = ops->recv_new(&error_abort);
    assert_error(decode(ops, rx, body, sizeof(body), dst), "zlib", "flush point");
    ops->recv_free(rx);
    pages_free(dst);
}

static void test_lookup(void)
{
    static const struct {
        MultiFDCompression method;
        const char *name;
        uint32_t flag;
    } want[] = {
        { MULTIFD_COMPRESSION_NONE, "none", MULTIFD_FLAG_NOCOMP },
        { MULTIFD_COMPRESSION_ZLIB, "zlib", MULTIFD_FLAG_ZLIB },
        { MULTIFD_COMPRESSION_ZSTD, "zstd", MULTIFD_FLAG_ZSTD },
    };

    for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
        const MultifdCompressOps *ops = multifd_compress_ops(want[i].method);

        g_assert_cmpstr(ops->name, ==, want[i].name);
        g_assert_cmphex(ops->packet_flag, ==, want[i].flag);
        g_assert(multifd_compress_ops_by_flag(want[i].flag) == ops);
    }
    for (uint32_t f = 3; f <= 7; f++) {
        g_assert_null(multifd_compress_ops_by_flag(f << 1));
    }
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        GTestDataFunc fn;
    } tests[] = {
        { "round-trip", test_round_trip },
        { "ratio", test_ratio },
        { "truncated", test_truncated },
        { "count", test_count },
        { "garbage", test_garbage },
        { "mutated", test_mutated },
        { "empty", test_empty },
        { "no-room", test_no_room },
    };

    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/multifd-compress/lookup", test_lookup);
    for (int m = 0; m < MULTIFD_COMPRESSION__MAX; m++) {
        for (size_t i = 0; i < ARRAY_SIZE(tests); i++) {
            g_autofree char *path =
                g_strdup_printf("/multifd-compress/%s/%s",
                                multifd_compress_ops(m)->name, tests[i].name);
            g_test_add_data_func(path, GINT_TO_POINTER(m), tests[i].fn);
        }
    }
    g_test_add_func("/multifd-compress/zlib/flush-point", test_zlib_flush_point);
    g_test_add_func("/multifd-compress/zstd/raw", test_zstd_raw);
    g_test_add_func("/multifd-compress/zlib/stored", test_zlib_stored);
    g_test_add_func("/multifd-compress/zstd/window", test_zstd_window);
    return g_test_run();
}

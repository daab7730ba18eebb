/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for the input side of migration/stream/qemu-file.c, over the memory
 * buffer, pipes and sockets: streams of puts read back op by op against an
 * independent model, a peer that feeds odd-sized pieces, truncated input,
 * peek, skip, and a read blocked on a silent peer that shutdown must wake.
 */
#include "qemu/osdep.h"
#include "qemu-file-test-util.h"
#include "qemu/bswap.h"
#include "qemu/xxh64.h"

/* Edge values of every put, small enough for any pipe buffer. */
static Stream *stream_sample(void)
{
    static const Op ops[] = {
        { OP_BYTE, 0 }, { OP_BYTE, 0xff }, { OP_BE16, 0 }, { OP_BE16, 0x1234 },
        { OP_BE16, 0xffff }, { OP_BE32, 0x89abcdef }, { OP_BE32, 0 }, { OP_BE32, UINT32_MAX },
        { OP_BE64, 0x0123456789abcdefULL }, { OP_BE64, UINT64_MAX },
        { OP_BE64, 0x8000000000000001ULL },
        { OP_STRING, 0, 0, 0 }, { OP_STRING, 0, 3, 1 }, { OP_STRING, 0, 10, 255 },
        { OP_BUFFER, 0, 0, 0 }, { OP_BUFFER, 0, 1, 1000 }, { OP_ASYNC, 0, 2000, 500 },
        { OP_BYTE, 0x5a }, { OP_ASYNC, 0, 3000, 1 }, { OP_ASYNC, 0, 3001, 99 }, { OP_BE64, 42 },
    };
    Stream *s = stream_new(4096, SEED);

    for (size_t i = 0; i < G_N_ELEMENTS(ops); i++) {
        stream_add(s, ops[i].kind, ops[i].val, ops[i].off, ops[i].len);
    }
    return s;
}

/* An input file over @len bytes, from memory or from a socket at EOF. */
static QEMUFile *input_over(Chan chan, const void *data, size_t len)
{
    int rfd, wfd;

    if (chan == CHAN_MEMORY) {
        return qemu_file_new_buffer_input(data, len);
    }
    make_socketpair(&rfd, &wfd, 0);
    write_all(wfd, data, len);
    close(wfd);
    return qemu_file_new_input(test_channel(rfd), "test-input");
}

/* ---- Round trips ---- */

static void test_round_trip(gconstpointer opaque)
{
    Chan chan = GPOINTER_TO_INT(opaque);
    Stream *s = stream_sample();
    QEMUFile *out, *in;
    const uint8_t *data;
    size_t len;
    int rfd, wfd;

    if (chan == CHAN_MEMORY) {
        out = qemu_file_new_buffer_output();
    } else {
        make_fd_chan(chan, &rfd, &wfd);
        out = qemu_file_new_output(test_channel(wfd), "test-output");
    }
    stream_put(s, out);
    g_assert_cmpuint(qemu_file_transferred(out), ==, s->bytes->len);
    if (chan == CHAN_MEMORY) {
        data = qemu_file_buffer_data(out, &len);
        assert_same_bytes(data, len, s->bytes->data, s->bytes->len);
        in = qemu_file_new_buffer_input(data, len);
    } else {
        /* No explicit flush: closing must send what is buffered, then EOF. */
        g_assert_cmpint(qemu_fclose(out), ==, 0);
        in = qemu_file_new_input(test_channel(rfd), "test-input");
    }
    stream_get(s, in);
    g_assert_cmpuint(qemu_file_transferred(in), ==, s->bytes->len);
    g_assert_cmpint(qemu_peek_byte(in, 0), ==, -1);
    g_assert_cmpint(qemu_file_get_error(in), ==, 0);
    g_assert_cmpint(qemu_fclose(in), ==, 0);
    if (chan == CHAN_MEMORY) {
        g_assert_cmpint(qemu_fclose(out), ==, 0);
    }
    stream_free(s);
}

/* ---- Short reads ---- */

/* Writes the stream in odd-sized pieces, so values straddle the reader's refills. */
typedef struct Feed {
    int fd;
    GByteArray *bytes;
} Feed;

static gpointer feed_thread(gpointer opaque)
{
    static const size_t pieces[] = { 1, 3, 7, 4093, 65537, 300001, 5 };
    Feed *feed = opaque;
    size_t off = 0;

    for (int i = 0; off < feed->bytes->len; i++) {
        size_t len = MIN(pieces[i % G_N_ELEMENTS(pieces)], feed->bytes->len - off);

        write_all(feed->fd, feed->bytes->data + off, len);
        off += len;
    }
    close(feed->fd);
    return NULL;
}

static void test_short_reads(void)
{
    Stream *s = stream_random(SEED + 2, BIG_STREAM);
    Feed feed = { .bytes = s->bytes };
    GThread *writer;
    QEMUFile *f;
    int rfd;

    make_socketpair(&rfd, &feed.fd, 4096);
    writer = g_thread_new("feeder", feed_thread, &feed);
    f = qemu_file_new_input(test_channel(rfd), "test-input");
    stream_get(s, f);
    g_assert_cmpuint(qemu_file_transferred(f), ==, s->bytes->len);
    g_assert_cmpint(qemu_peek_byte(f, 0), ==, -1);
    g_assert_cmpint(qemu_file_get_error(f), ==, 0);
    g_thread_join(writer);
    g_assert_cmpint(qemu_fclose(f), ==, 0);
    stream_free(s);
}

/* ---- Errors ---- */

/*
 * The header promises zeroes from every get after the first error, even
 * of bytes the file had buffered before it: a loader that missed an error
 * check must not go on parsing real data.
 */
static void test_error_gets_return_zero(void)
{
    static const uint8_t data[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
    QEMUFile *f = qemu_file_new_buffer_input(data, sizeof(data));
    uint8_t got;

    qemu_file_set_error(f, -EINVAL);
    got = qemu_get_byte(f);
    /* The data is buffered, but the file is in error: zeroes, as promised. */
    g_assert_cmpuint(got, ==, 0);
    g_assert_cmpuint(qemu_get_be64(f), ==, 0);
    g_assert_cmpint(qemu_peek_byte(f, 0), ==, -1);
    g_assert_cmpint(qemu_fclose(f), ==, -EINVAL);
}

/* ---- Reads ---- */

static void test_read_truncated(gconstpointer opaque)
{
    Chan chan = GPOINTER_TO_INT(opaque);
    static const uint8_t data[] = { 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa };
    uint8_t buf[16];
    char str[256];
    QEMUFile *f;
    uint64_t v;

    /* EOF in the middle of a be64: what is missing reads as zero. */
    f = input_over(chan, data, 3);
    v = qemu_get_be64(f);
    g_assert_cmpint(qemu_file_get_error(f), ==, -EIO);
    g_assert_cmpstr(qemu_file_error_msg(f), !=, "");
    g_assert_cmphex(v & 0xffffffffffULL, ==, 0);
    g_assert_cmpuint(qemu_get_byte(f), ==, 0);
    g_assert_cmpuint(qemu_get_be16(f), ==, 0);
    g_assert_cmpuint(qemu_get_be32(f), ==, 0);
    g_assert_cmpuint(qemu_get_be64(f), ==, 0);
    g_assert_false(qemu_get_counted_string(f, str));
    g_assert_cmpstr(str, ==, "");
    g_assert_cmpint(qemu_file_get_error(f), ==, -EIO);
    g_assert_cmpint(qemu_fclose(f), ==, -EIO);

    /* EOF in the middle of a buffer: the rest of the buffer is zeroed. */
    f = input_over(chan, data, sizeof(data));
    memset(buf, 0xee, sizeof(buf));
    qemu_get_buffer(f, buf, sizeof(buf));
    g_assert_cmpint(qemu_file_get_error(f), ==, -EIO);
    g_assert_cmpmem(buf, sizeof(data), data, sizeof(data));
    assert_filled(buf + sizeof(data), sizeof(buf) - sizeof(data), 0);
    memset(buf, 0xee, sizeof(buf));
    qemu_get_buffer(f, buf, sizeof(buf));
    assert_filled(buf, sizeof(buf), 0);
    g_assert_cmpint(qemu_fclose(f), ==, -EIO);

    /* A counted string longer than the rest of the stream. */
    f = input_over(chan, "\x05" "abc", 4);
    g_assert_false(qemu_get_counted_string(f, str));
    g_assert_cmpint(qemu_file_get_error(f), ==, -EIO);
    g_assert_cmpint(qemu_fclose(f), ==, -EIO);

    /* No length byte at all. */
    f = input_over(chan, "", 0);
    g_assert_false(qemu_get_counted_string(f, str));
    g_assert_cmpstr(str, ==, "");
    g_assert_cmpint(qemu_fclose(f), ==, -EIO);

    /* The empty string is not an error. */
    f = input_over(chan, "\x00", 1);
    g_assert_true(qemu_get_counted_string(f, str));
    g_assert_cmpstr(str, ==, "");
    g_assert_cmpint(qemu_fclose(f), ==, 0);
}

/* Peeking past the end reports -1 and leaves the stream usable. */
static void test_read_peek(gconstpointer opaque)
{
    QEMUFile *f = input_over(GPOINTER_TO_INT(opaque), "abc", 3);

    g_assert_cmpint(qemu_peek_byte(f, 0), ==, 'a');
    g_assert_cmpint(qemu_peek_byte(f, 2), ==, 'c');
    g_assert_cmpint(qemu_peek_byte(f, 3), ==, -1);
    g_assert_cmpint(qemu_peek_byte(f, 100000), ==, -1);
    g_assert_cmpint(qemu_file_get_error(f), ==, 0);
    g_assert_cmpstr(qemu_file_error_msg(f), ==, "");
    g_assert_cmpuint(qemu_file_transferred(f), ==, 0);
    g_assert_cmpuint(qemu_get_byte(f), ==, 'a');
    g_assert_cmpint(qemu_peek_byte(f, 0), ==, 'b');
    g_assert_cmpint(qemu_peek_byte(f, 2), ==, -1);
    g_assert_cmpuint(qemu_get_byte(f), ==, 'b');
    g_assert_cmpuint(qemu_get_byte(f), ==, 'c');
    g_assert_cmpint(qemu_peek_byte(f, 0), ==, -1);
    g_assert_cmpint(qemu_file_get_error(f), ==, 0);
    /* A get past the end, unlike a peek, is an error. */
    g_assert_cmpuint(qemu_get_byte(f), ==, 0);
    g_assert_cmpint(qemu_file_get_error(f), ==, -EIO);
    g_assert_cmpint(qemu_peek_byte(f, 0), ==, -1);
    g_assert_cmpint(qemu_fclose(f), ==, -EIO);
}

static void test_read_skip(gconstpointer opaque)
{
    enum { LEN = 10000 };
    g_autofree uint8_t *data = g_malloc(LEN);
    QEMUFile *f;

    for (int i = 0; i < LEN; i++) {
        data[i] = i ^ (i >> 8);
    }
    f = input_over(GPOINTER_TO_INT(opaque), data, LEN);
    qemu_file_skip(f, 0);
    qemu_file_skip(f, 1);
    g_assert_cmpuint(qemu_get_byte(f), ==, data[1]);
    /* More than one internal scratch buffer's worth. */
    qemu_file_skip(f, 9000);
    g_assert_cmpuint(qemu_get_byte(f), ==, data[9002]);
    g_assert_cmpuint(qemu_file_transferred(f), ==, 9003);
    g_assert_cmpint(qemu_file_get_error(f), ==, 0);
    qemu_file_skip(f, LEN - 9003);
    g_assert_cmpint(qemu_file_get_error(f), ==, 0);
    g_assert_cmpint(qemu_peek_byte(f, 0), ==, -1);
    qemu_file_skip(f, 1);
    g_assert_cmpint(qemu_file_get_error(f), ==, -EIO);
    g_assert_cmpint(qemu_fclose(f), ==, -EIO);
}

/*
 * qemu_file_hash_consumed: exactly the bytes consumed while it is on, in
 * order, whatever consumed them (the fast byte path, buffers, skips); not
 * peeks, not read-ahead. The mapped-ram loader compares it with the
 * integrity record's stream hash, so one byte more or less fails a load.
 */
static void test_read_hash_consumed(gconstpointer opaque)
{
    enum { LEN = 10000 };
    g_autofree uint8_t *data = g_malloc(LEN);
    uint8_t buf[100];
    Xxh64State st;
    QEMUFile *f;

    for (int i = 0; i < LEN; i++) {
        data[i] = i ^ (i >> 8);
    }
    f = input_over(GPOINTER_TO_INT(opaque), data, LEN);
    qemu_get_buffer(f, buf, 3);
    xxh64_init(&st, 0);
    qemu_file_hash_consumed(f, &st);
    g_assert_cmpint(qemu_peek_byte(f, 10), ==, data[13]);
    g_assert_cmpuint(qemu_get_byte(f), ==, data[3]);
    g_assert_cmpuint(qemu_get_be32(f), ==, ldl_be_p(data + 4));
    qemu_get_buffer(f, buf, sizeof(buf));
    qemu_file_skip(f, 9000);
    g_assert_cmpuint(qemu_get_byte(f), ==, data[9108]);
    qemu_file_hash_consumed(f, NULL);
    qemu_get_buffer(f, buf, sizeof(buf));
    g_assert_cmpint(qemu_file_get_error(f), ==, 0);
    g_assert_cmphex(xxh64_digest(&st), ==, xxh64(data + 3, 9109 - 3, 0));
    g_assert_cmpint(qemu_fclose(f), ==, 0);
}

/* ---- Shutdown from another thread ---- */

typedef struct Reader {
    QEMUFile *f;
    uint64_t val;
} Reader;

static gpointer reader_thread(gpointer opaque)
{
    Reader *r = opaque;

    r->val = qemu_get_be64(r->f);
    return NULL;
}

static void test_shutdown_blocked_read(void)
{
    Reader r;
    GThread *t;
    int rfd, wfd;

    /* Half a value, and a peer that stays open and silent. */
    make_socketpair(&rfd, &wfd, 0);
    write_all(wfd, "\x01\x02\x03\x04", 4);
    r.f = qemu_file_new_input(test_channel(rfd), "silent-peer");
    t = g_thread_new("stuck-reader", reader_thread, &r);
    /*
     * Whether the shutdown lands before the read or while it blocks, the
     * get must end with an error rather than wait for the peer.
     */
    qemu_file_shutdown(r.f);
    g_thread_join(t);
    g_assert_cmpint(qemu_file_get_error(r.f), ==, -EIO);
    g_assert_cmphex(r.val & 0xffffffffULL, ==, 0);
    g_assert_cmpuint(qemu_get_be32(r.f), ==, 0);
    g_assert_cmpint(qemu_peek_byte(r.f, 0), ==, -1);
    g_assert_cmpint(qemu_fclose(r.f), ==, -EIO);
    close(wfd);
}

int main(int argc, char **argv)
{
    enum { MEM_SOCK = 1 << CHAN_MEMORY | 1 << CHAN_SOCKET };

    g_test_init(&argc, &argv, NULL);
    add_chan_tests("/qemu-file/round-trip", test_round_trip, MEM_SOCK | 1 << CHAN_PIPE);
    g_test_add_func("/qemu-file/short-reads", test_short_reads);
    g_test_add_func("/qemu-file/error/gets-return-zero", test_error_gets_return_zero);
    add_chan_tests("/qemu-file/read/truncated", test_read_truncated, MEM_SOCK);
    add_chan_tests("/qemu-file/read/peek", test_read_peek, MEM_SOCK);
    add_chan_tests("/qemu-file/read/skip", test_read_skip, MEM_SOCK);
    add_chan_tests("/qemu-file/read/hash-consumed", test_read_hash_consumed, MEM_SOCK);
    g_test_add_func("/qemu-file/shutdown/blocked-read", test_shutdown_blocked_read);
    return g_test_run();
}

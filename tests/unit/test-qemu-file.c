/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for the output side of migration/stream/qemu-file.c over real pipes
 * and socketpairs and over the memory buffer. Puts are checked byte for byte
 * against an independent big-endian encoder; slow readers, peers that close
 * and shutdown from another thread drive the short-write, sticky-error and
 * wake-up paths. Gets, peek, skip and blocked reads: test-qemu-file-input.c.
 */
#include "qemu/osdep.h"
#include "qemu-file-test-util.h"

/* ---- fd helpers ---- */

static void set_nonblock(int fd)
{
    g_assert_cmpint(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), ==, 0);
}

/* Bytes written to the channel and not yet read. */
static int pending(int rfd)
{
    int n;

    g_assert_cmpint(ioctl(rfd, FIONREAD, &n), ==, 0);
    return n;
}

static void wait_readable(int fd)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };

    g_assert_cmpint(poll(&pfd, 1, WAIT_MS), ==, 1);
}

/* Reads @fd to EOF in @chunk-sized reads, as a slow peer would. */
typedef struct Drain {
    int fd;
    size_t chunk;
    GByteArray *got;
} Drain;

static gpointer drain_thread(gpointer opaque)
{
    Drain *d = opaque;
    g_autofree uint8_t *buf = g_malloc(d->chunk);

    for (;;) {
        ssize_t n = read(d->fd, buf, d->chunk);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        g_assert_cmpint(n, >=, 0);
        if (n == 0) {
            return NULL;
        }
        g_byte_array_append(d->got, buf, n);
    }
}

/* ---- Layout and counting ---- */

/* The wire format is QEMU's: big-endian, counted strings with a 1-byte length. */
static void put_layout(QEMUFile *f)
{
    static const uint8_t page[3] = { 0xa0, 0xa1, 0xa2 };

    qemu_put_byte(f, 0x01);
    qemu_put_be16(f, 0x0203);
    qemu_put_be32(f, 0x04050607);
    qemu_put_be64(f, 0x08090a0b0c0d0e0fULL);
    qemu_put_counted_string(f, "ab");
    qemu_put_buffer(f, "xyz", 3);
    qemu_put_buffer_async(f, page, sizeof(page));
    qemu_put_be16(f, 0xfffe);
}

static const uint8_t layout_bytes[] = {
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
    0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
    0x02, 'a', 'b', 'x', 'y', 'z', 0xa0, 0xa1, 0xa2, 0xff, 0xfe,
};

static void test_wire_layout(void)
{
    QEMUFile *f = qemu_file_new_buffer_output();
    uint8_t got[sizeof(layout_bytes)];
    const uint8_t *data;
    size_t len;
    int rfd, wfd;

    put_layout(f);
    data = qemu_file_buffer_data(f, &len);
    assert_same_bytes(data, len, layout_bytes, sizeof(layout_bytes));
    g_assert_cmpint(qemu_fclose(f), ==, 0);

    make_socketpair(&rfd, &wfd, 0);
    f = qemu_file_new_output(test_channel(wfd), "test-output");
    put_layout(f);
    g_assert_cmpint(qemu_fclose(f), ==, 0);
    g_assert_cmpint(pending(rfd), ==, sizeof(layout_bytes));
    read_exact(rfd, got, sizeof(got));
    assert_same_bytes(got, sizeof(got), layout_bytes, sizeof(layout_bytes));
    close(rfd);
}

/*
 * Every put and get counts its bytes at once (stream_put() and op_get()
 * check the count after each op); a peek counts nothing, a skip counts.
 */
static void test_transferred(void)
{
    enum { TOTAL = 1 + 2 + 4 + 8 + 100 + 4096 + 1 + 4 };
    Stream *s = stream_new(4096, SEED);
    g_autofree uint8_t *wire = g_malloc(TOTAL);
    QEMUFile *f;
    int rfd, wfd;

    stream_add(s, OP_BYTE, 1, 0, 0);
    stream_add(s, OP_BE16, 2, 0, 0);
    stream_add(s, OP_BE32, 3, 0, 0);
    stream_add(s, OP_BE64, 4, 0, 0);
    stream_add(s, OP_BUFFER, 0, 0, 100);
    stream_add(s, OP_ASYNC, 0, 0, 4096);
    stream_add(s, OP_STRING, 0, 0, 4);
    make_socketpair(&rfd, &wfd, 0);
    f = qemu_file_new_output(test_channel(wfd), "test-output");
    g_assert_cmpuint(qemu_file_transferred(f), ==, 0);
    stream_put(s, f);
    /* Everything above is still buffered, and counted all the same. */
    g_assert_cmpint(pending(rfd), ==, 0);
    qemu_fflush(f);
    g_assert_cmpuint(qemu_file_transferred(f), ==, TOTAL);
    g_assert_cmpint(pending(rfd), ==, TOTAL);
    g_assert_cmpint(qemu_fclose(f), ==, 0);
    read_exact(rfd, wire, TOTAL);
    close(rfd);

    f = qemu_file_new_buffer_input(wire, TOTAL);
    for (guint i = 0; i < 4; i++) {
        op_get(s, i, f);
    }
    g_assert_cmpint(qemu_peek_byte(f, 10), ==, s->ram[10]);
    g_assert_cmpuint(qemu_file_transferred(f), ==, 15);
    qemu_file_skip(f, 100);
    g_assert_cmpuint(qemu_file_transferred(f), ==, 115);
    op_get(s, 5, f);
    op_get(s, 6, f);
    g_assert_cmpuint(qemu_file_transferred(f), ==, TOTAL);
    g_assert_cmpint(qemu_fclose(f), ==, 0);
    stream_free(s);
}

/* ---- Output buffering and references ---- */

static void test_buffering(void)
{
    enum { SMALL = 100 * 15, BIG = 16385 * 4 };
    g_autofree uint8_t *got = g_malloc(BIG);
    QEMUFile *f;
    int rfd, wfd;

    make_socketpair(&rfd, &wfd, 0);
    f = qemu_file_new_output(test_channel(wfd), "test-output");
    for (int i = 0; i < 100; i++) {
        qemu_put_byte(f, i);
        qemu_put_be16(f, i);
        qemu_put_be32(f, i);
        qemu_put_be64(f, i);
    }
    /* Small puts wait for a flush: one write per batch, not per put. */
    g_assert_cmpint(pending(rfd), ==, 0);
    qemu_fflush(f);
    g_assert_cmpint(pending(rfd), ==, SMALL);
    read_exact(rfd, got, SMALL);
    for (int i = 0; i < 100; i++) {
        const uint8_t *p = got + i * 15;

        g_assert_cmpuint(p[0], ==, i);
        g_assert_cmpuint(p[2], ==, i);
        g_assert_cmpuint(p[6], ==, i);
        g_assert_cmpuint(p[14], ==, i);
    }

    /* More than the buffer holds goes out without being asked. */
    for (int i = 0; i < BIG / 4; i++) {
        qemu_put_be32(f, i);
    }
    g_assert_cmpint(pending(rfd), >, 0);
    qemu_fflush(f);
    g_assert_cmpint(pending(rfd), ==, BIG);
    read_exact(rfd, got, BIG);
    for (int i = 0; i < BIG / 4; i++) {
        const uint8_t *p = got + i * 4;

        g_assert_cmpuint((uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3], ==, i);
    }
    g_assert_cmpint(qemu_fclose(f), ==, 0);
    close(rfd);
}

/*
 * More separate references than one writev() takes: the file must flush
 * on its own, keeping the order of references and the buffered puts
 * between them.
 */
static void test_many_iovecs(void)
{
    enum { NREF = 300, STRIDE = 16, REFLEN = 8 };
    g_autofree uint8_t *ram = g_malloc(NREF * STRIDE);
    g_autofree uint8_t *got = NULL;
    GByteArray *want = g_byte_array_new();
    QEMUFile *f;
    int rfd, wfd;

    for (int i = 0; i < NREF * STRIDE; i++) {
        ram[i] = i * 7 + i / 256;
    }
    make_socketpair(&rfd, &wfd, 0);
    f = qemu_file_new_output(test_channel(wfd), "test-output");
    for (int i = 0; i < NREF; i++) {
        /* The gap of STRIDE - REFLEN keeps neighbours from merging into one iovec. */
        qemu_put_buffer_async(f, ram + i * STRIDE, REFLEN);
        g_byte_array_append(want, ram + i * STRIDE, REFLEN);
        if (i % 7 == 0) {
            qemu_put_be16(f, i);
            put_be(want, i, 2);
        }
        if (i % 11 == 0) {
            qemu_put_byte(f, i);
            put_be(want, i, 1);
        }
    }
    g_assert_cmpint(pending(rfd), >, 0);
    qemu_fflush(f);
    g_assert_cmpint(pending(rfd), ==, want->len);
    got = g_malloc(want->len);
    read_exact(rfd, got, want->len);
    assert_same_bytes(got, want->len, want->data, want->len);
    g_assert_cmpint(qemu_fclose(f), ==, 0);
    close(rfd);
    g_byte_array_free(want, TRUE);
}

/*
 * qemu_put_buffer_async() sends what the memory holds at flush time. This
 * is why a caller must flush before it lets referenced guest memory
 * change: the old content would never reach the destination.
 */
static void test_async_by_reference(void)
{
    uint8_t page[4096], got[1 + sizeof(page)];
    QEMUFile *f;
    const uint8_t *data;
    size_t len;
    int rfd, wfd;

    make_socketpair(&rfd, &wfd, 0);
    f = qemu_file_new_output(test_channel(wfd), "test-output");
    memset(page, 'A', sizeof(page));
    qemu_put_byte(f, 1);
    qemu_put_buffer_async(f, page, sizeof(page));
    memset(page, 'B', sizeof(page));
    g_assert_cmpint(pending(rfd), ==, 0);
    qemu_fflush(f);
    read_exact(rfd, got, sizeof(got));
    g_assert_cmpuint(got[0], ==, 1);
    assert_filled(got + 1, sizeof(page), 'B');
    /* After the flush the file holds no reference. */
    memset(page, 'C', sizeof(page));
    qemu_put_byte(f, 2);
    g_assert_cmpint(qemu_fclose(f), ==, 0);
    g_assert_cmpint(pending(rfd), ==, 1);
    read_exact(rfd, got, 1);
    g_assert_cmpuint(got[0], ==, 2);
    close(rfd);

    /* A memory output is read later, when the page has moved on: it copies at once. */
    f = qemu_file_new_buffer_output();
    memset(page, 'A', sizeof(page));
    qemu_put_buffer_async(f, page, sizeof(page));
    memset(page, 'B', sizeof(page));
    data = qemu_file_buffer_data(f, &len);
    g_assert_cmpuint(len, ==, sizeof(page));
    assert_filled(data, len, 'A');
    g_assert_cmpint(qemu_fclose(f), ==, 0);
}

/* ---- Short writes ---- */

typedef struct ChannelConfig {
    const char *name;
    bool use_pipe;
    bool nonblock;              /* the writer's fd: writev returns partial counts */
} ChannelConfig;

static const ChannelConfig channels[] = {
    { "socket", false, false },
    { "socket-nonblock", false, true },
    { "pipe-nonblock", true, true },
};

/* A small kernel buffer on the writer side, so writes stop half way. */
static void make_small_channel(const ChannelConfig *c, int *rfd, int *wfd)
{
    if (c->use_pipe) {
        make_pipe(rfd, wfd);
        /* Best effort: one page if the kernel lets us; the default 64 KiB also works. */
        fcntl(*wfd, F_SETPIPE_SZ, 4096);
    } else {
        make_socketpair(rfd, wfd, 4096);
    }
    if (c->nonblock) {
        set_nonblock(*wfd);
    }
}

static void test_short_writes(gconstpointer opaque)
{
    const ChannelConfig *c = opaque;
    Stream *s = stream_random(SEED + 1, BIG_STREAM);
    Drain d = { .chunk = 1000, .got = g_byte_array_new() };
    GThread *reader;
    QEMUFile *f;
    int wfd;

    make_small_channel(c, &d.fd, &wfd);
    reader = g_thread_new("slow-reader", drain_thread, &d);
    f = qemu_file_new_output(test_channel(wfd), "test-output");
    stream_put(s, f);
    g_assert_cmpint(qemu_file_get_error(f), ==, 0);
    g_assert_cmpuint(qemu_file_transferred(f), ==, s->bytes->len);
    g_assert_cmpint(qemu_fclose(f), ==, 0);
    g_thread_join(reader);
    assert_same_bytes(d.got->data, d.got->len, s->bytes->data, s->bytes->len);
    close(d.fd);
    g_byte_array_free(d.got, TRUE);
    stream_free(s);
}

/* ---- Errors ---- */

/* Puts of every kind; none may reach the stream once it has an error. */
static void put_after_error(QEMUFile *f)
{
    static const uint8_t page[4096];
    uint64_t before = qemu_file_transferred(f);

    qemu_put_byte(f, 1);
    qemu_put_be16(f, 2);
    qemu_put_be32(f, 3);
    qemu_put_be64(f, 4);
    qemu_put_buffer(f, page, sizeof(page));
    qemu_put_buffer_async(f, page, sizeof(page));
    qemu_put_counted_string(f, "late");
    qemu_fflush(f);
    g_assert_cmpuint(qemu_file_transferred(f), ==, before);
}

static void test_write_error(gconstpointer opaque)
{
    QEMUFile *f;
    int rfd, wfd;

    make_fd_chan(GPOINTER_TO_INT(opaque), &rfd, &wfd);
    close(rfd);
    f = qemu_file_new_output(test_channel(wfd), "dead-peer");
    g_assert_cmpstr(qemu_file_name(f), ==, "dead-peer");
    qemu_put_be32(f, 1);
    /* Buffered: the failure shows only when the write happens. */
    g_assert_cmpint(qemu_file_get_error(f), ==, 0);
    g_assert_cmpstr(qemu_file_error_msg(f), ==, "");
    qemu_fflush(f);
    g_assert_cmpint(qemu_file_get_error(f), ==, -EPIPE);
    g_assert_nonnull(strstr(qemu_file_error_msg(f), "dead-peer"));
    g_assert_nonnull(strstr(qemu_file_error_msg(f), g_strerror(EPIPE)));

    put_after_error(f);
    qemu_file_set_error(f, -EINVAL);
    qemu_file_set_error_msg(f, -ENOSPC, "a later failure");
    g_assert_cmpint(qemu_file_get_error(f), ==, -EPIPE);
    g_assert_nonnull(strstr(qemu_file_error_msg(f), "dead-peer"));
    g_assert_true(qemu_file_rate_limit(f));
    g_assert_cmpint(qemu_fclose(f), ==, -EPIPE);
}

/* A write that fails inside a put, when the buffer fills, stops all later puts. */
static void test_write_error_implicit_flush(void)
{
    QEMUFile *f;
    int rfd, wfd, i;

    make_pipe(&rfd, &wfd);
    close(rfd);
    f = qemu_file_new_output(test_channel(wfd), "dead-peer");
    for (i = 0; i < 1000000 && !qemu_file_get_error(f); i++) {
        qemu_put_byte(f, i);
    }
    g_assert_cmpint(qemu_file_get_error(f), ==, -EPIPE);
    /* Within a buffer's worth of puts, not at the end. */
    g_assert_cmpint(i, <=, 256 * 1024);
    put_after_error(f);
    g_assert_cmpint(qemu_fclose(f), ==, -EPIPE);
}

static void test_error_first_wins(void)
{
    QEMUFile *f = qemu_file_new_buffer_output();
    const uint8_t *data;
    size_t len;
    char str[256];

    g_assert_cmpint(qemu_file_get_error(f), ==, 0);
    g_assert_cmpstr(qemu_file_error_msg(f), ==, "");
    g_assert_false(qemu_file_rate_limit(f));
    qemu_put_buffer(f, "abc", 3);
    qemu_file_set_error_msg(f, -ENOSPC, "snapshot full after %d bytes", 3);
    g_assert_cmpint(qemu_file_get_error(f), ==, -ENOSPC);
    g_assert_cmpstr(qemu_file_error_msg(f), ==, "snapshot full after 3 bytes");
    qemu_file_set_error(f, -EIO);
    qemu_file_set_error_msg(f, -EINVAL, "second");
    g_assert_cmpint(qemu_file_get_error(f), ==, -ENOSPC);
    g_assert_cmpstr(qemu_file_error_msg(f), ==, "snapshot full after 3 bytes");
    put_after_error(f);
    data = qemu_file_buffer_data(f, &len);
    g_assert_cmpmem(data, len, "abc", 3);
    g_assert_true(qemu_file_rate_limit(f));
    g_assert_cmpint(qemu_fclose(f), ==, -ENOSPC);

    /* An error without a message keeps a later message out too. */
    f = qemu_file_new_buffer_output();
    qemu_file_set_error(f, -EIO);
    qemu_file_set_error_msg(f, -EINVAL, "second");
    g_assert_cmpint(qemu_file_get_error(f), ==, -EIO);
    g_assert_cmpstr(qemu_file_error_msg(f), !=, "second");
    g_assert_cmpint(qemu_fclose(f), ==, -EIO);

    /* On input, an error set by a caller fails the next counted string. */
    f = qemu_file_new_buffer_input((const uint8_t *)"", 0);
    qemu_file_set_error(f, -EINVAL);
    g_assert_false(qemu_get_counted_string(f, str));
    g_assert_cmpint(qemu_fclose(f), ==, -EINVAL);
}

/* ---- Shutdown from another thread ---- */

typedef struct Writer {
    QEMUFile *f;
    const uint8_t *ram;
    size_t len;
    int done_fd;                /* written once the flush has returned */
} Writer;

static gpointer writer_thread(gpointer opaque)
{
    Writer *w = opaque;

    qemu_put_buffer_async(w->f, w->ram, w->len);
    qemu_fflush(w->f);
    write_all(w->done_fd, "", 1);
    return NULL;
}

static void test_shutdown_blocked_write(void)
{
    g_autofree uint8_t *ram = g_malloc0(BIG_STREAM);
    Writer w = { .ram = ram, .len = BIG_STREAM };
    GThread *t;
    int rfd, wfd, done_rfd;

    /* The reader never reads: without shutdown the flush would block for ever. */
    make_socketpair(&rfd, &wfd, 4096);
    make_pipe(&done_rfd, &w.done_fd);
    w.f = qemu_file_new_output(test_channel(wfd), "stuck-peer");
    t = g_thread_new("stuck-writer", writer_thread, &w);
    /* Data at the peer means the one writev() has started and must block. */
    wait_readable(rfd);
    qemu_file_shutdown(w.f);
    wait_readable(done_rfd);
    g_thread_join(t);
    g_assert_cmpint(qemu_file_get_error(w.f), ==, -EIO);
    g_assert_nonnull(strstr(qemu_file_error_msg(w.f), "shut down"));
    g_assert_cmpint(pending(rfd), <, BIG_STREAM);
    put_after_error(w.f);
    g_assert_true(qemu_file_rate_limit(w.f));
    g_assert_cmpint(qemu_fclose(w.f), ==, -EIO);
    close(rfd);
    close(done_rfd);
    close(w.done_fd);
}

static void test_shutdown_before_write(void)
{
    g_autofree uint8_t *ram = g_malloc0(BIG_STREAM);
    QEMUFile *f;
    int rfd, wfd;

    make_socketpair(&rfd, &wfd, 4096);
    f = qemu_file_new_output(test_channel(wfd), "stuck-peer");
    qemu_file_shutdown(f);
    g_assert_true(qemu_file_rate_limit(f));
    qemu_put_buffer_async(f, ram, BIG_STREAM);
    qemu_fflush(f);
    g_assert_cmpint(qemu_file_get_error(f), ==, -EIO);
    g_assert_cmpint(qemu_fclose(f), ==, -EIO);
    close(rfd);
}

/*
 * exec: migrations write to a pipe, and shutdown(2) does not apply to
 * pipes: the pipe row waits in poll() beside a wake eventfd instead, so a
 * flush blocked on a command that stopped reading is woken like a
 * socket's (cancel must not wait for the command). The test drains the
 * pipe itself so that it ends even if the wake-up is broken.
 */
static void test_shutdown_blocked_pipe_write(void)
{
    g_autofree uint8_t *ram = g_malloc0(BIG_STREAM);
    g_autofree uint8_t *sink = g_malloc(65536);
    Writer w = { .ram = ram, .len = BIG_STREAM };
    GThread *t;
    int rfd, wfd, done_rfd;
    bool woke;
    int err;

    make_pipe(&rfd, &wfd);
    make_pipe(&done_rfd, &w.done_fd);
    w.f = qemu_file_new_output(test_channel(wfd), "stuck-command");
    t = g_thread_new("stuck-writer", writer_thread, &w);
    /* 4 MiB do not fit in a pipe: once it is full the writer waits in the row. */
    wait_readable(rfd);
    while (pending(rfd) < fcntl(rfd, F_GETPIPE_SZ)) {
        g_usleep(1000);
    }
    qemu_file_shutdown(w.f);
    {
        struct pollfd pfd = { .fd = done_rfd, .events = POLLIN };

        woke = poll(&pfd, 1, WAIT_MS) == 1;
    }
    /* Not woken: drain the pipe so that the writer ends, then fail. */
    while (!woke) {
        struct pollfd pfd[2] = { { .fd = done_rfd, .events = POLLIN },
                                 { .fd = rfd, .events = POLLIN } };

        g_assert_cmpint(poll(pfd, 2, WAIT_MS), >, 0);
        if (pfd[0].revents) {
            break;
        }
        g_assert_cmpint(read(rfd, sink, 65536), >, 0);
    }
    g_thread_join(t);
    g_assert_true(woke);
    err = qemu_file_get_error(w.f);
    g_assert_cmpint(err, ==, -EIO);
    g_assert_nonnull(strstr(qemu_file_error_msg(w.f), "shut down"));
    qemu_fclose(w.f);
    close(rfd);
    close(done_rfd);
    close(w.done_fd);
}

/* ---- Rate limit ---- */

static void test_rate_limit(void)
{
    static const uint8_t page[4096];
    QEMUFile *f = qemu_file_new_buffer_output();
    int rfd, wfd;

    /* 0 is no limit. */
    g_assert_cmpuint(qemu_file_get_rate_limit(f), ==, 0);
    for (int i = 0; i < 256; i++) {
        qemu_put_buffer(f, page, sizeof(page));
    }
    g_assert_false(qemu_file_rate_limit(f));

    qemu_file_set_rate_limit(f, 10000);
    g_assert_cmpuint(qemu_file_get_rate_limit(f), ==, 10000);
    /* The megabyte above was put in this window already. */
    g_assert_true(qemu_file_rate_limit(f));
    qemu_file_reset_rate_window(f);
    g_assert_false(qemu_file_rate_limit(f));
    qemu_put_buffer(f, page, 4096);
    qemu_put_buffer(f, page, 4096);
    qemu_put_buffer(f, page, 1799);
    g_assert_false(qemu_file_rate_limit(f));
    qemu_put_be64(f, 0);
    g_assert_false(qemu_file_rate_limit(f));
    qemu_put_byte(f, 0);
    g_assert_true(qemu_file_rate_limit(f));
    qemu_file_reset_rate_window(f);
    g_assert_false(qemu_file_rate_limit(f));

    /* Lifting the limit lifts it for the current window too. */
    qemu_put_buffer(f, page, 4096);
    qemu_put_buffer(f, page, 4096);
    qemu_put_buffer(f, page, 4096);
    g_assert_true(qemu_file_rate_limit(f));
    qemu_file_set_rate_limit(f, 0);
    g_assert_false(qemu_file_rate_limit(f));

    /* A broken stream always says stop, so senders do not spin on it. */
    qemu_file_set_error(f, -EIO);
    g_assert_true(qemu_file_rate_limit(f));
    qemu_file_reset_rate_window(f);
    g_assert_true(qemu_file_rate_limit(f));
    g_assert_cmpint(qemu_fclose(f), ==, -EIO);

    /* References count as soon as they are queued, before any write. */
    make_socketpair(&rfd, &wfd, 0);
    f = qemu_file_new_output(test_channel(wfd), "test-output");
    qemu_file_set_rate_limit(f, 3 * sizeof(page));
    qemu_put_buffer_async(f, page, sizeof(page));
    qemu_put_buffer_async(f, page, sizeof(page));
    g_assert_false(qemu_file_rate_limit(f));
    qemu_put_buffer_async(f, page, sizeof(page));
    g_assert_true(qemu_file_rate_limit(f));
    g_assert_cmpint(pending(rfd), ==, 0);
    g_assert_cmpint(qemu_fclose(f), ==, 0);
    g_assert_cmpint(pending(rfd), ==, 3 * sizeof(page));
    close(rfd);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    /* Writes to a closed peer must fail with EPIPE, as in the VMM, not kill us. */
    signal(SIGPIPE, SIG_IGN);

    g_test_add_func("/qemu-file/wire-layout", test_wire_layout);
    g_test_add_func("/qemu-file/transferred", test_transferred);
    g_test_add_func("/qemu-file/buffering", test_buffering);
    g_test_add_func("/qemu-file/async/many-iovecs", test_many_iovecs);
    g_test_add_func("/qemu-file/async/by-reference", test_async_by_reference);
    for (size_t i = 0; i < G_N_ELEMENTS(channels); i++) {
        g_autofree char *path = g_strdup_printf("/qemu-file/short-writes/%s", channels[i].name);

        g_test_add_data_func(path, &channels[i], test_short_writes);
    }
    add_chan_tests("/qemu-file/write-error", test_write_error, 1 << CHAN_PIPE | 1 << CHAN_SOCKET);
    g_test_add_func("/qemu-file/write-error/implicit-flush", test_write_error_implicit_flush);
    g_test_add_func("/qemu-file/error/first-wins", test_error_first_wins);
    g_test_add_func("/qemu-file/shutdown/blocked-write", test_shutdown_blocked_write);
    g_test_add_func("/qemu-file/shutdown/before-write", test_shutdown_before_write);
    g_test_add_func("/qemu-file/shutdown/blocked-pipe-write", test_shutdown_blocked_pipe_write);
    g_test_add_func("/qemu-file/rate-limit", test_rate_limit);
    return g_test_run();
}

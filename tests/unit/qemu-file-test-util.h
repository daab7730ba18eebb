/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Shared by the qemu-file unit tests: an independent big-endian model of a
 * stream of puts (the bytes the wire must carry, the gets that read them
 * back) and the pipe, socket and byte-checking helpers of both programs.
 */
#ifndef QEMU_FILE_TEST_UTIL_H
#define QEMU_FILE_TEST_UTIL_H

#include "qapi/error.h"
#include "io/channel.h"
#include "migration/qemu-file.h"
#include <poll.h>
#include <sys/socket.h>

#define SEED 0x9f11e
#define RAM_SIZE (1024 * 1024)
#define BIG_STREAM (4 * 1024 * 1024)
/* A bound on waits that should end at once, so a regression fails instead of hanging. */
#define WAIT_MS 10000

/* The channel row a migration would give @fd (socket, pipe or file). */
static inline Channel *test_channel(int fd)
{
    struct stat st;

    g_assert_cmpint(fstat(fd, &st), ==, 0);
    if (S_ISSOCK(st.st_mode)) {
        return channel_socket_new(fd);
    }
    if (S_ISFIFO(st.st_mode)) {
        int acc = fcntl(fd, F_GETFL) & O_ACCMODE;

        return channel_pipe_new(acc == O_WRONLY ? -1 : fd, acc == O_RDONLY ? -1 : fd, "pipe",
                                &error_abort);
    }
    return channel_file_new(fd, "file");
}

/* ---- An independent model of the stream ---- */

typedef enum OpKind {
    OP_BYTE, OP_BE16, OP_BE32, OP_BE64, OP_BUFFER, OP_ASYNC, OP_STRING, OP_FLUSH,
} OpKind;

typedef struct Op {
    OpKind kind;
    uint64_t val;               /* scalars */
    size_t off, len;            /* OP_BUFFER, OP_ASYNC: in ram; OP_STRING: in text */
    size_t end;                 /* stream offset after the op: what transferred must say */
} Op;

typedef struct Stream {
    uint8_t *ram;               /* stands for guest RAM */
    size_t ram_size;
    char text[512];             /* letters for counted strings */
    GArray *ops;
    GByteArray *bytes;          /* what the wire must carry */
} Stream;

static inline void put_be(GByteArray *b, uint64_t v, int size)
{
    for (int i = size - 1; i >= 0; i--) {
        uint8_t c = v >> (i * 8);

        g_byte_array_append(b, &c, 1);
    }
}

static inline Stream *stream_new(size_t ram_size, guint32 seed)
{
    Stream *s = g_new0(Stream, 1);
    GRand *r = g_rand_new_with_seed(seed);

    s->ram_size = ram_size;
    s->ram = g_malloc(ram_size);
    for (size_t i = 0; i < ram_size; i++) {
        s->ram[i] = g_rand_int(r);
    }
    for (size_t i = 0; i < sizeof(s->text); i++) {
        s->text[i] = 'a' + g_rand_int_range(r, 0, 26);
    }
    s->ops = g_array_new(FALSE, FALSE, sizeof(Op));
    s->bytes = g_byte_array_new();
    g_rand_free(r);
    return s;
}

static inline void stream_free(Stream *s)
{
    g_free(s->ram);
    g_array_free(s->ops, TRUE);
    g_byte_array_free(s->bytes, TRUE);
    g_free(s);
}

static inline void stream_add(Stream *s, OpKind kind, uint64_t val, size_t off, size_t len)
{
    Op op = { .kind = kind, .val = val, .off = off, .len = len };

    switch (kind) {
    case OP_BYTE:
    case OP_BE16:
    case OP_BE32:
    case OP_BE64:
        put_be(s->bytes, val, 1 << kind);   /* 1, 2, 4 or 8 bytes */
        break;
    case OP_BUFFER:
    case OP_ASYNC:
        g_assert_cmpuint(off + len, <=, s->ram_size);
        g_byte_array_append(s->bytes, s->ram + off, len);
        break;
    case OP_STRING:
        g_assert_cmpuint(len, <=, 255);
        g_assert_cmpuint(off + len, <=, sizeof(s->text));
        put_be(s->bytes, len, 1);
        g_byte_array_append(s->bytes, (const uint8_t *)s->text + off, len);
        break;
    case OP_FLUSH:
        break;
    }
    op.end = s->bytes->len;
    g_array_append_val(s->ops, op);
}

/*
 * Seeded mix of scalars, strings, copied buffers that straddle the 64 KiB
 * output buffer and references into "guest RAM", with the odd flush.
 */
static inline Stream *stream_random(guint32 seed, size_t min_bytes)
{
    Stream *s = stream_new(RAM_SIZE, seed);
    GRand *r = g_rand_new_with_seed(seed + 1);

    while (s->bytes->len < min_bytes) {
        int pick = g_rand_int_range(r, 0, 100);
        uint64_t v = (uint64_t)g_rand_int(r) << 32 | g_rand_int(r);
        size_t len;

        if (pick < 15) {
            stream_add(s, OP_BYTE, v & 0xff, 0, 0);
        } else if (pick < 25) {
            stream_add(s, OP_BE16, v & 0xffff, 0, 0);
        } else if (pick < 35) {
            stream_add(s, OP_BE32, v & 0xffffffff, 0, 0);
        } else if (pick < 50) {
            stream_add(s, OP_BE64, v, 0, 0);
        } else if (pick < 60) {
            stream_add(s, OP_STRING, 0, g_rand_int_range(r, 0, 257), g_rand_int_range(r, 0, 256));
        } else if (pick < 80) {
            len = pick < 74 ? g_rand_int_range(r, 1, 300) : g_rand_int_range(r, 1, 150000);
            stream_add(s, OP_BUFFER, 0, g_rand_int_range(r, 0, RAM_SIZE - len + 1), len);
        } else if (pick < 98) {
            len = g_rand_int_range(r, 1, 100000);
            stream_add(s, OP_ASYNC, 0, g_rand_int_range(r, 0, RAM_SIZE - len + 1), len);
        } else {
            stream_add(s, OP_FLUSH, 0, 0, 0);
        }
    }
    g_rand_free(r);
    return s;
}

/* Puts every op; each put is counted at once, written or not. */
static inline void stream_put(Stream *s, QEMUFile *f)
{
    for (guint i = 0; i < s->ops->len; i++) {
        const Op *op = &g_array_index(s->ops, Op, i);
        g_autofree char *str = NULL;

        switch (op->kind) {
        case OP_BYTE:
            qemu_put_byte(f, op->val);
            break;
        case OP_BE16:
            qemu_put_be16(f, op->val);
            break;
        case OP_BE32:
            qemu_put_be32(f, op->val);
            break;
        case OP_BE64:
            qemu_put_be64(f, op->val);
            break;
        case OP_BUFFER:
            qemu_put_buffer(f, s->ram + op->off, op->len);
            break;
        case OP_ASYNC:
            qemu_put_buffer_async(f, s->ram + op->off, op->len);
            break;
        case OP_STRING:
            str = g_strndup(s->text + op->off, op->len);
            qemu_put_counted_string(f, str);
            break;
        case OP_FLUSH:
            qemu_fflush(f);
            break;
        }
        g_assert_cmpuint(qemu_file_transferred(f), ==, op->end);
    }
}

/* Gets op @i back (buffers with qemu_get_buffer); a mismatch names the op. */
static inline void op_get(Stream *s, guint i, QEMUFile *f)
{
    const Op *op = &g_array_index(s->ops, Op, i);
    g_autofree uint8_t *buf = NULL;
    char str[256];
    uint64_t got = op->val;

    switch (op->kind) {
    case OP_BYTE:
        got = qemu_get_byte(f);
        break;
    case OP_BE16:
        got = qemu_get_be16(f);
        break;
    case OP_BE32:
        got = qemu_get_be32(f);
        break;
    case OP_BE64:
        got = qemu_get_be64(f);
        break;
    case OP_BUFFER:
    case OP_ASYNC:
        buf = g_malloc(op->len + 1);
        qemu_get_buffer(f, buf, op->len);
        if (memcmp(buf, s->ram + op->off, op->len)) {
            g_error("op %u: buffer of %zu bytes differs", i, op->len);
        }
        break;
    case OP_STRING:
        g_assert_true(qemu_get_counted_string(f, str));
        g_assert_cmpuint(strlen(str), ==, op->len);
        g_assert_cmpmem(str, op->len, s->text + op->off, op->len);
        break;
    case OP_FLUSH:
        break;
    }
    if (got != op->val) {
        g_error("op %u: got 0x%" PRIx64 ", want 0x%" PRIx64, i, got, op->val);
    }
    g_assert_cmpuint(qemu_file_transferred(f), ==, op->end);
}

static inline void stream_get(Stream *s, QEMUFile *f)
{
    for (guint i = 0; i < s->ops->len; i++) {
        op_get(s, i, f);
    }
    g_assert_cmpint(qemu_file_get_error(f), ==, 0);
}

/* ---- Channels and bytes ---- */

/* Where a test's bytes travel; the registered path ends in the name. */
typedef enum Chan { CHAN_MEMORY, CHAN_PIPE, CHAN_SOCKET } Chan;

/* Registers @fn once per channel in the mask @chans, as @path/<channel>. */
static inline void add_chan_tests(const char *path, GTestDataFunc fn, unsigned chans)
{
    static const char *const names[] = { "memory", "pipe", "socket" };

    for (Chan c = CHAN_MEMORY; c <= CHAN_SOCKET; c++) {
        if (chans & (1u << c)) {
            g_autofree char *p = g_strdup_printf("%s/%s", path, names[c]);

            g_test_add_data_func(p, GINT_TO_POINTER(c), fn);
        }
    }
}

static inline void make_pipe(int *rfd, int *wfd)
{
    int fds[2];

    g_assert_cmpint(pipe(fds), ==, 0);
    *rfd = fds[0];
    *wfd = fds[1];
}

/* @sndbuf 0 keeps the default (about 200 KiB, enough for every unthreaded test). */
static inline void make_socketpair(int *rfd, int *wfd, int sndbuf)
{
    int sv[2];

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
    if (sndbuf) {
        g_assert_cmpint(setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)), ==, 0);
    }
    *rfd = sv[0];
    *wfd = sv[1];
}

/* A pipe or a socketpair, with default kernel buffers. */
static inline void make_fd_chan(Chan c, int *rfd, int *wfd)
{
    if (c == CHAN_PIPE) {
        make_pipe(rfd, wfd);
    } else {
        make_socketpair(rfd, wfd, 0);
    }
}

/* Moves all @len bytes, whatever the size of each read or write. */
static inline void fd_exact(int fd, void *buf, size_t len, bool writing)
{
    uint8_t *p = buf;

    while (len > 0) {
        ssize_t n = writing ? write(fd, p, len) : read(fd, p, len);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        g_assert_cmpint(n, >, 0);
        p += n;
        len -= n;
    }
}

#define write_all(fd, data, len) fd_exact(fd, (void *)(data), len, true)
#define read_exact(fd, buf, len) fd_exact(fd, buf, len, false)

static inline void assert_same_bytes(const uint8_t *got, size_t got_len, const uint8_t *want,
                                     size_t want_len)
{
    size_t i;

    for (i = 0; i < MIN(got_len, want_len) && got[i] == want[i]; i++) {
        /* find the first difference */
    }
    /* The offset of the first difference, or of the shorter end, pinpoints a reorder. */
    g_assert_cmpuint(i, ==, want_len);
    g_assert_cmpuint(got_len, ==, want_len);
}

static inline void assert_filled(const uint8_t *p, size_t len, uint8_t c)
{
    for (size_t i = 0; i < len; i++) {
        g_assert_cmpuint(p[i], ==, c);
    }
}

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The nbd connection (block/nbd-client.c, with the handshake and the reply
 * parser) against a fake server that answers out of order: it gathers the
 * requests in flight, cuts each READ's reply into data and hole chunks,
 * shuffles all the chunks of all the replies together (each reply's DONE
 * on its last chunk), and applies writes as they arrive. Four threads
 * write and read their own regions in seeded random steps against a model;
 * the invariant checked after every step: a request's result is exactly
 * its own reply's (every byte read is the model's, whatever order and
 * cutting the chunks came in), and nothing waits for ever. Then the server
 * hangs up with requests in flight: each fails with -EIO, and so does
 * every later one.
 */
#include "qemu/osdep.h"
#include <poll.h>
#include <sys/socket.h>
#include "qapi/error.h"
#include "qemu/bswap.h"
#include "qemu/bufferiszero.h"
#include "io/channel.h"
#include "block/nbd-int.h"

#define SEED 0x5eed
#define DISK (4 * MiB)
#define THREADS 4
#define STEPS 150

typedef struct Pending {
    uint64_t cookie, offset;
    uint32_t length;
    uint16_t type;
} Pending;

typedef struct Fake {
    int fd;
    uint8_t *disk;              /* the server's bytes (the server thread's) */
    guint32 seed;
    int hang_up_after;          /* requests to answer before hanging up; -1: never */
    int interleaved;            /* answers with more than one reply shuffled together */
} Fake;

static void wr(int fd, const void *p, size_t n)
{
    /* The client may be gone (the hang-up case): short writes are fine then. */
    if (write(fd, p, n) != (ssize_t)n) {
        return;
    }
}

static bool rd(int fd, void *p, size_t n)
{
    size_t got = 0;

    while (got < n) {
        ssize_t r = read(fd, (uint8_t *)p + got, n - got);

        if (r <= 0) {
            return false;
        }
        got += r;
    }
    return true;
}

static void handshake(Fake *f)
{
    uint8_t b[4096];

    stq_be_p(b, NBD_INIT_MAGIC);
    stq_be_p(b + 8, NBD_OPTS_MAGIC);
    nbd_st16(b + 16, NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES);
    wr(f->fd, b, 18);
    g_assert_true(rd(f->fd, b, 4));
    for (;;) {
        uint32_t opt, len;

        g_assert_true(rd(f->fd, b, 16));
        opt = ldl_be_p(b + 8);
        len = ldl_be_p(b + 12);
        g_assert_cmpuint(len, <, sizeof(b));
        g_assert_true(rd(f->fd, b, len));
        if (opt == NBD_OPT_EXPORT_NAME) {
            break;
        }
        stq_be_p(b, NBD_REP_MAGIC);
        stl_be_p(b + 8, opt);
        stl_be_p(b + 12, opt == NBD_OPT_STRUCTURED_REPLY ? NBD_REP_ACK : NBD_REP_ERR_UNSUP);
        stl_be_p(b + 16, 0);
        wr(f->fd, b, 20);
    }
    stq_be_p(b, DISK);
    nbd_st16(b + 8, NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH);
    wr(f->fd, b, 10);
}

typedef struct Chunk {
    Pending *p;
    uint64_t offset;
    uint32_t length;
    bool hole;
} Chunk;

/* Every chunk of every pending reply, shuffled; each reply's last one says DONE. */
static void answer(Fake *f, GArray *pending, GRand *r)
{
    g_autoptr(GArray) chunks = g_array_new(FALSE, FALSE, sizeof(Chunk));

    for (guint i = 0; i < pending->len; i++) {
        Pending *p = &g_array_index(pending, Pending, i);
        uint64_t at = p->offset, end = p->offset + p->length;

        if (p->type != NBD_CMD_READ) {
            Chunk c = { .p = p };

            g_array_append_val(chunks, c);
            continue;
        }
        while (at < end) {
            uint32_t want = g_rand_int_range(r, 1, 20000);     /* MIN evaluates twice */
            Chunk c = { .p = p, .offset = at, .length = MIN(end - at, want) };

            /* A hole only where the disk reads as zeroes. */
            c.hole = buffer_is_zero(f->disk + at, c.length);
            g_array_append_val(chunks, c);
            at += c.length;
        }
    }
    for (guint i = chunks->len; i > 1; i--) {
        guint j = g_rand_int_range(r, 0, i);
        Chunk t = g_array_index(chunks, Chunk, i - 1);

        g_array_index(chunks, Chunk, i - 1) = g_array_index(chunks, Chunk, j);
        g_array_index(chunks, Chunk, j) = t;
    }
    for (guint i = 0; i < chunks->len; i++) {
        Chunk *c = &g_array_index(chunks, Chunk, i);
        bool last = true;
        uint8_t h[20 + 12];

        for (guint k = i + 1; k < chunks->len && last; k++) {
            last = g_array_index(chunks, Chunk, k).p != c->p;
        }
        stl_be_p(h, NBD_STRUCTURED_REPLY_MAGIC);
        nbd_st16(h + 4, last ? NBD_REPLY_FLAG_DONE : 0);
        stq_be_p(h + 8, c->p->cookie);
        if (c->p->type != NBD_CMD_READ) {
            nbd_st16(h + 6, NBD_REPLY_TYPE_NONE);
            stl_be_p(h + 16, 0);
            wr(f->fd, h, 20);
        } else if (c->hole) {
            nbd_st16(h + 6, NBD_REPLY_TYPE_OFFSET_HOLE);
            stl_be_p(h + 16, 12);
            stq_be_p(h + 20, c->offset);
            stl_be_p(h + 28, c->length);
            wr(f->fd, h, 32);
        } else {
            nbd_st16(h + 6, NBD_REPLY_TYPE_OFFSET_DATA);
            stl_be_p(h + 16, 8 + c->length);
            stq_be_p(h + 20, c->offset);
            wr(f->fd, h, 28);
            wr(f->fd, f->disk + c->offset, c->length);
        }
    }
    g_array_set_size(pending, 0);
}

/* Requests as they come (writes applied at once); answers when no more are waiting. */
static gpointer fake_server(gpointer opaque)
{
    Fake *f = opaque;
    g_autoptr(GRand) r = g_rand_new_with_seed(f->seed);
    g_autoptr(GArray) pending = g_array_new(FALSE, FALSE, sizeof(Pending));
    int answered = 0;
    uint8_t h[NBD_REQUEST_SIZE];

    handshake(f);
    while (rd(f->fd, h, sizeof(h))) {
        Pending p = { .cookie = ldq_be_p(h + 8), .offset = ldq_be_p(h + 16),
                      .length = ldl_be_p(h + 24), .type = nbd_ld16(h + 6) };
        struct pollfd pfd = { .fd = f->fd, .events = POLLIN };

        g_assert_cmphex(ldl_be_p(h), ==, NBD_REQUEST_MAGIC);
        if (p.type == NBD_CMD_DISC) {
            break;
        }
        g_assert_cmpuint(p.offset + p.length, <=, DISK);
        if (p.type == NBD_CMD_WRITE) {
            g_assert_true(rd(f->fd, f->disk + p.offset, p.length));
        }
        g_array_append_val(pending, p);
        if (f->hang_up_after >= 0 && answered + (int)pending->len > f->hang_up_after) {
            break;      /* with this request (and maybe others) in flight */
        }
        /* More on their way: gather them, so the replies can interleave. */
        if (poll(&pfd, 1, g_rand_int_range(r, 0, 3)) == 1 && pending->len < 8) {
            continue;
        }
        answered += pending->len;
        f->interleaved += pending->len > 1;
        answer(f, pending, r);
    }
    close(f->fd);
    return NULL;
}

typedef struct Worker {
    NbdClient *c;
    uint8_t *model;             /* the worker's own 1 MiB (its thread's) */
    uint64_t base;
    guint32 seed;
    int steps_done;
    int last_error;
} Worker;

static gpointer worker(gpointer opaque)
{
    Worker *w = opaque;
    g_autoptr(GRand) r = g_rand_new_with_seed(w->seed);
    g_autofree uint8_t *buf = g_malloc(128 * KiB);

    for (int i = 0; i < STEPS; i++) {
        uint32_t len = g_rand_int_range(r, 1, 128 * KiB);
        uint64_t off = g_rand_int_range(r, 0, 1 * MiB - len + 1);
        struct iovec v[2] = { { buf, len / 3 }, { buf + len / 3, len - len / 3 } };
        int op = g_rand_int_range(r, 0, 4), ret;

        if (op == 0) {
            /* Zeroes now and then, so the server has holes to send. */
            memset(buf, g_rand_boolean(r) ? 0 : g_rand_int(r), len);
            ret = nbd_client_request(w->c, NBD_CMD_WRITE, 0, w->base + off, len, v, 2, NULL);
            if (ret == 0) {
                memcpy(w->model + off, buf, len);
            }
        } else if (op == 1) {
            ret = nbd_client_request(w->c, NBD_CMD_FLUSH, 0, 0, 0, NULL, 0, NULL);
        } else {
            memset(buf, 0xee, len);
            ret = nbd_client_request(w->c, NBD_CMD_READ, 0, w->base + off, len, v, 2, NULL);
            /* The invariant: a read that succeeds is the model's, byte for byte. */
            g_assert_true(ret < 0 || memcmp(buf, w->model + off, len) == 0);
        }
        if (ret < 0) {
            w->last_error = ret;
            return NULL;
        }
        w->steps_done++;
    }
    return NULL;
}

static NbdClient *connect_fake(Fake *f, GThread **server)
{
    int sv[2];
    NbdClient *c;

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
    f->fd = sv[1];
    *server = g_thread_new("fake-nbd", fake_server, f);
    c = nbd_client_open(channel_socket_new(sv[0]), "", NULL, NULL, 10, &error_abort);
    g_assert_true(nbd_client_info(c)->structured);
    g_assert_false(nbd_client_info(c)->base_allocation);
    g_assert_cmpuint(nbd_client_info(c)->size, ==, DISK);
    return c;
}

static void run_workers(NbdClient *c, uint8_t *model, Worker *w, guint32 seed)
{
    GThread *t[THREADS];

    for (int i = 0; i < THREADS; i++) {
        w[i] = (Worker) { .c = c, .model = model + i * MiB, .base = i * MiB, .seed = seed + i };
        t[i] = g_thread_new("worker", worker, &w[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        g_thread_join(t[i]);
    }
}

static void test_shuffled(void)
{
    g_autofree uint8_t *disk = g_malloc0(DISK);
    g_autofree uint8_t *model = g_malloc0(DISK);
    Fake f = { .disk = disk, .seed = SEED, .hang_up_after = -1 };
    Worker w[THREADS];
    GThread *server;
    NbdClient *c;

    /* Half the disk holds data from the start, half reads as zeroes. */
    for (uint64_t i = 0; i < DISK; i += 2 * 4096) {
        memset(disk + i, (i >> 13) | 1, 4096);
    }
    memcpy(model, disk, DISK);
    c = connect_fake(&f, &server);
    run_workers(c, model, w, SEED);
    for (int i = 0; i < THREADS; i++) {
        g_assert_cmpint(w[i].last_error, ==, 0);
        g_assert_cmpint(w[i].steps_done, ==, STEPS);
    }
    g_assert_true(memcmp(disk, model, DISK) == 0);
    nbd_client_close(c);
    g_thread_join(server);
    /* Or the test proved nothing about matching replies to requests. */
    g_test_message("%d answers interleaved several replies", f.interleaved);
    g_assert_cmpint(f.interleaved, >, 10);
}

static void test_hang_up(void)
{
    g_autofree uint8_t *disk = g_malloc0(DISK);
    g_autofree uint8_t *model = g_malloc0(DISK);
    Fake f = { .disk = disk, .seed = SEED + 100, .hang_up_after = 40 };
    uint8_t buf[512];
    struct iovec v = { buf, sizeof(buf) };
    Worker w[THREADS];
    GThread *server;
    NbdClient *c = connect_fake(&f, &server);

    run_workers(c, model, w, SEED + 100);
    for (int i = 0; i < THREADS; i++) {
        g_assert_cmpint(w[i].last_error, ==, -EIO);
        g_assert_cmpint(w[i].steps_done, <, STEPS);
    }
    g_assert_cmpint(nbd_client_request(c, NBD_CMD_READ, 0, 0, 512, &v, 1, NULL), ==, -EIO);
    g_thread_join(server);
    nbd_client_close(c);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    signal(SIGPIPE, SIG_IGN);
    g_test_add_func("/nbd-client/shuffled", test_shuffled);
    g_test_add_func("/nbd-client/hang-up", test_hang_up);
    return g_test_run();
}

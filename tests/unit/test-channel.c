/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for the channel layer (io/, include/io/channel.h) on real
 * socketpairs, pipes, files and child processes:
 *
 * - short transfers: a tiny socket buffer with a peer that takes one byte
 *   at a time, a writer that gives one byte at a time, odd-sized iovecs
 *   (the helpers must resume in the middle of one), on the socket and the
 *   pipe rows;
 * - EINTR: a signal without SA_RESTART interrupts a blocked read;
 * - shutdown from another thread wakes a blocked reader and a blocked
 *   writer on every row that can block (socket, pipe, command), and later
 *   transfers fail at once;
 * - fd passing over a unix socketpair (several fds, valid and distinct; a
 *   message without fds);
 * - the read-ahead: bytes put back and peeked come first, in order;
 * - references: the last unref closes, the command's child is reaped
 *   without waiting for it;
 * - the file row's positional I/O and tell, and the rows fd: picks.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "io/channel.h"
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <dirent.h>

/* A bound on waits that should end at once, so a regression fails instead of hanging. */
#define WAIT_MS 10000
#define SEED 0xc4a22e1

static void fill_pattern(uint8_t *buf, size_t len, guint32 seed)
{
    GRand *r = g_rand_new_with_seed(seed);

    for (size_t i = 0; i < len; i++) {
        buf[i] = g_rand_int(r);
    }
    g_rand_free(r);
}

static void make_socketpair(int *a, int *b, int bufsize)
{
    int sv[2];

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
    if (bufsize) {
        for (int i = 0; i < 2; i++) {
            setsockopt(sv[i], SOL_SOCKET, SO_SNDBUF, &bufsize, sizeof(bufsize));
            setsockopt(sv[i], SOL_SOCKET, SO_RCVBUF, &bufsize, sizeof(bufsize));
        }
    }
    *a = sv[0];
    *b = sv[1];
}

static void make_pipe(int *rfd, int *wfd)
{
    int p[2];

    g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
    *rfd = p[0];
    *wfd = p[1];
}

static bool fd_is_open(int fd)
{
    return fcntl(fd, F_GETFD) >= 0;
}

/* Odd-sized iovecs over @buf, so that short transfers end inside one. */
static int split_iov(uint8_t *buf, size_t len, struct iovec *iov, int max, guint32 seed)
{
    GRand *r = g_rand_new_with_seed(seed);
    size_t off = 0;
    int n = 0;

    while (off < len && n < max) {
        size_t l = n == max - 1 ? len - off : MIN(len - off, g_rand_int_range(r, 0, 9000));

        iov[n++] = (struct iovec) { buf + off, l };     /* empty entries included */
        off += l;
    }
    g_rand_free(r);
    return n;
}

/* ---- short transfers ---- */

typedef struct Xfer {
    Channel *ch;
    int raw_fd;                 /* the peer, read or written one byte at a time */
    uint8_t *buf;
    size_t len;
    int ret;
} Xfer;

static gpointer writev_all_thread(gpointer opaque)
{
    Xfer *x = opaque;
    struct iovec iov[300];
    int cnt = split_iov(x->buf, x->len, iov, ARRAY_SIZE(iov), SEED);
    struct iovec saved[300];

    memcpy(saved, iov, sizeof(saved));
    x->ret = channel_writev_all(x->ch, iov, cnt);
    /* The caller's iovec is left as it was. */
    g_assert_cmpmem(saved, cnt * sizeof(*iov), iov, cnt * sizeof(*iov));
    return NULL;
}

static gpointer byte_writer_thread(gpointer opaque)
{
    Xfer *x = opaque;

    for (size_t i = 0; i < x->len; i++) {
        g_assert_cmpint(write(x->raw_fd, x->buf + i, 1), ==, 1);
    }
    return NULL;
}

/* Our channel writes all of it while the peer takes one byte per read. */
static void check_short_writes(Channel *ch, int peer_rfd)
{
    size_t len = 256 * 1024;
    g_autofree uint8_t *src = g_malloc(len);
    g_autofree uint8_t *dst = g_malloc(len);
    Xfer x = { .ch = ch, .buf = src, .len = len };
    GThread *t;

    fill_pattern(src, len, SEED);
    t = g_thread_new("writer", writev_all_thread, &x);
    for (size_t i = 0; i < len; i++) {
        g_assert_cmpint(read(peer_rfd, dst + i, 1), ==, 1);
    }
    g_thread_join(t);
    g_assert_cmpint(x.ret, ==, 0);
    g_assert_cmpmem(src, len, dst, len);
}

/* The peer gives one byte per write; readv_all fills odd-sized iovecs with all of it. */
static void check_short_reads(Channel *ch, int peer_wfd)
{
    size_t len = 64 * 1024;
    g_autofree uint8_t *src = g_malloc(len);
    g_autofree uint8_t *dst = g_malloc0(len);
    Xfer x = { .raw_fd = peer_wfd, .buf = src, .len = len };
    struct iovec iov[64];
    int cnt;
    GThread *t;

    fill_pattern(src, len, SEED + 1);
    cnt = split_iov(dst, len, iov, ARRAY_SIZE(iov), SEED + 2);
    t = g_thread_new("byte-writer", byte_writer_thread, &x);
    g_assert_cmpint(channel_readv_all(ch, iov, cnt), ==, 0);
    g_thread_join(t);
    g_assert_cmpmem(src, len, dst, len);
}

static void test_socket_short(void)
{
    int a, b;
    Channel *ch;

    make_socketpair(&a, &b, 4096);
    ch = channel_socket_new(a);
    check_short_writes(ch, b);
    check_short_reads(ch, b);
    g_assert_cmpint(channel_unref(ch), ==, 0);
    close(b);
}

static void test_pipe_short(void)
{
    int r1, w1, r2, w2;
    Channel *out, *in;

    make_pipe(&r1, &w1);
    make_pipe(&r2, &w2);
    out = channel_pipe_new(-1, w1, "pipe out", &error_abort);
    in = channel_pipe_new(r2, -1, "pipe in", &error_abort);
    check_short_writes(out, r1);
    check_short_reads(in, w2);
    g_assert_cmpint(channel_unref(out), ==, 0);
    g_assert_cmpint(channel_unref(in), ==, 0);
    close(r1);
    close(w2);
}

/* EOF: 1 before the first byte, -EPIPE after it. */
static void test_eof_codes(void)
{
    uint8_t buf[8];
    int a, b;
    Channel *ch;

    make_socketpair(&a, &b, 0);
    ch = channel_socket_new(a);
    g_assert_cmpint(write(b, "abc", 3), ==, 3);
    close(b);
    g_assert_cmpint(channel_read_all(ch, buf, sizeof(buf)), ==, -EPIPE);
    g_assert_cmpint(channel_read_all(ch, buf, sizeof(buf)), ==, 1);
    channel_unref(ch);
}

/* ---- EINTR ---- */

static int signals_seen;

static void on_sigusr1(int sig)
{
    __atomic_fetch_add(&signals_seen, 1, __ATOMIC_RELAXED);
}

typedef struct Blocked {
    Channel *ch;
    bool write;                 /* else read */
    size_t len;
    uint8_t *buf;
    int ret;
    int done_fd;                /* written once the call returned */
    pthread_t tid;              /* atomic: set by the thread, read by the signaller */
} Blocked;

static gpointer blocked_thread(gpointer opaque)
{
    Blocked *b = opaque;

    __atomic_store_n(&b->tid, pthread_self(), __ATOMIC_RELEASE);
    b->ret = b->write ? channel_write_all(b->ch, b->buf, b->len)
                      : channel_read_all(b->ch, b->buf, b->len);
    g_assert_cmpint(write(b->done_fd, "", 1), ==, 1);
    return NULL;
}

static bool wait_done(int done_rfd, int ms)
{
    struct pollfd pfd = { .fd = done_rfd, .events = POLLIN };

    return poll(&pfd, 1, ms) == 1;
}

static void check_eintr(Channel *ch, int peer_wfd)
{
    struct sigaction sa = { .sa_handler = on_sigusr1 };  /* no SA_RESTART */
    uint8_t buf[5] = { 0 };
    Blocked b = { .ch = ch, .len = sizeof(buf), .buf = buf };
    int done_rfd;
    GThread *t;

    g_assert_cmpint(sigaction(SIGUSR1, &sa, NULL), ==, 0);
    make_pipe(&done_rfd, &b.done_fd);
    signals_seen = 0;
    t = g_thread_new("eintr-reader", blocked_thread, &b);
    g_assert_cmpint(write(peer_wfd, "he", 2), ==, 2);
    /* Signal the reader until one arrived while it waits for the rest. */
    while (__atomic_load_n(&signals_seen, __ATOMIC_RELAXED) < 3 && !wait_done(done_rfd, 0)) {
        if (__atomic_load_n(&b.tid, __ATOMIC_ACQUIRE)) {
            pthread_kill(b.tid, SIGUSR1);
        }
        g_usleep(5000);
    }
    /* Interrupted, but still waiting for the rest: EINTR was retried. */
    g_assert_false(wait_done(done_rfd, 50));
    g_assert_cmpint(write(peer_wfd, "llo", 3), ==, 3);
    g_assert_true(wait_done(done_rfd, WAIT_MS));
    g_thread_join(t);
    g_assert_cmpint(b.ret, ==, 0);
    g_assert_cmpmem(buf, 5, "hello", 5);
    close(done_rfd);
    close(b.done_fd);
    signal(SIGUSR1, SIG_DFL);
}

static void test_eintr(void)
{
    int a, b, r, w;
    Channel *ch;

    make_socketpair(&a, &b, 0);
    ch = channel_socket_new(a);
    check_eintr(ch, b);
    channel_unref(ch);
    close(b);

    make_pipe(&r, &w);
    ch = channel_pipe_new(r, -1, "pipe", &error_abort);
    check_eintr(ch, w);
    channel_unref(ch);
    close(w);
}

/* ---- shutdown wakes blocked I/O ---- */

/*
 * A thread blocks in @write ? write_all : read_all on @ch (the peer never
 * reads nor writes); shutting down @how from here must end it with @want.
 */
static void check_shutdown_wakes(Channel *ch, bool write, ChannelShutdown how, int want)
{
    size_t len = write ? 8 * 1024 * 1024 : 16;
    g_autofree uint8_t *buf = g_malloc0(len);
    Blocked b = { .ch = ch, .write = write, .len = len, .buf = buf };
    int done_rfd;
    GThread *t;
    bool woke;

    make_pipe(&done_rfd, &b.done_fd);
    t = g_thread_new("blocked", blocked_thread, &b);
    /* Blocked: 8 MiB fit in no pipe or socket buffer; nothing comes to read. */
    g_assert_false(wait_done(done_rfd, 100));
    channel_shutdown(ch, how);
    woke = wait_done(done_rfd, WAIT_MS);
    g_assert_true(woke);
    g_thread_join(t);
    g_assert_cmpint(b.ret, ==, want);
    g_assert_true(channel_is_shut_down(ch, how));
    /* Later transfers fail at once, without the row. */
    g_assert_cmpint(write ? channel_write_all(ch, "x", 1) : channel_read_all(ch, buf, 1), ==,
                    write ? -EPIPE : 1);
    close(done_rfd);
    close(b.done_fd);
}

static void test_shutdown_socket(void)
{
    int a, b;
    Channel *ch;

    make_socketpair(&a, &b, 4096);
    ch = channel_socket_new(a);
    check_shutdown_wakes(ch, false, CHANNEL_SHUT_READ, 1);
    /* A read shutdown leaves the other direction alone (the return path's case). */
    g_assert_cmpint(channel_write_all(ch, "ok", 2), ==, 0);
    check_shutdown_wakes(ch, true, CHANNEL_SHUT_WRITE, -EPIPE);
    channel_unref(ch);
    close(b);
}

static void test_shutdown_pipe(void)
{
    int r1, w1, r2, w2;
    Channel *in, *out;

    make_pipe(&r1, &w1);
    make_pipe(&r2, &w2);
    in = channel_pipe_new(r1, -1, "pipe in", &error_abort);
    out = channel_pipe_new(-1, w2, "pipe out", &error_abort);
    check_shutdown_wakes(in, false, CHANNEL_SHUT_BOTH, 1);
    check_shutdown_wakes(out, true, CHANNEL_SHUT_BOTH, -EPIPE);
    channel_unref(in);
    channel_unref(out);
    close(w1);
    close(r2);
}

/* Our children, from /proc (the command row does not tell its pid). */
static GHashTable *children(void)
{
    GHashTable *set = g_hash_table_new(NULL, NULL);
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;

    g_assert_nonnull(d);
    while ((e = readdir(d))) {
        g_autofree char *path = g_strdup_printf("/proc/self/task/%s/children", e->d_name);
        g_autofree char *text = NULL;
        g_auto(GStrv) pids = NULL;

        if (e->d_name[0] == '.' || !g_file_get_contents(path, &text, NULL, NULL)) {
            continue;
        }
        pids = g_strsplit(g_strstrip(text), " ", -1);
        for (int i = 0; pids[i]; i++) {
            if (*pids[i]) {
                g_hash_table_add(set, GINT_TO_POINTER(atoi(pids[i])));
            }
        }
    }
    closedir(d);
    return set;
}

/* The one child that is in @after and not in @before. */
static pid_t new_child(GHashTable *before, GHashTable *after)
{
    GHashTableIter it;
    gpointer key;
    pid_t pid = 0;

    g_hash_table_iter_init(&it, after);
    while (g_hash_table_iter_next(&it, &key, NULL)) {
        if (!g_hash_table_contains(before, key)) {
            g_assert_cmpint(pid, ==, 0);
            pid = GPOINTER_TO_INT(key);
        }
    }
    g_assert_cmpint(pid, >, 0);
    return pid;
}

/* After the last unref the command is reaped once it exits, by the main context. */
static void check_reaped(pid_t pid)
{
    g_autofree char *proc = g_strdup_printf("/proc/%d", pid);
    gint64 end = g_get_monotonic_time() + WAIT_MS * 1000LL;

    g_assert_cmpint(kill(pid, SIGKILL), ==, 0);
    while (g_file_test(proc, G_FILE_TEST_EXISTS) && g_get_monotonic_time() < end) {
        g_main_context_iteration(NULL, FALSE);
        g_usleep(1000);
    }
    /* Gone, not a zombie: someone (the row's child watch) waited for it. */
    g_assert_false(g_file_test(proc, G_FILE_TEST_EXISTS));
}

static void test_shutdown_command(void)
{
    for (int to_child = 0; to_child < 2; to_child++) {
        g_autoptr(GHashTable) before = children();
        g_autoptr(GHashTable) after = NULL;
        /* It neither reads its stdin nor writes its stdout: only shutdown ends our I/O. */
        Channel *ch = channel_command_spawn("exec sleep 600", to_child, &error_abort);
        g_autofree char *proc = NULL;
        pid_t pid;
        gint64 t0;

        after = children();
        pid = new_child(before, after);
        proc = g_strdup_printf("/proc/%d", pid);
        g_assert_false(channel_has_feature(ch, CHANNEL_FEATURE_DUPLEX));
        g_assert_cmpstr(channel_peer(ch), ==, "command 'exec sleep 600'");
        check_shutdown_wakes(ch, to_child, CHANNEL_SHUT_BOTH, to_child ? -EPIPE : 1);
        /* The last unref does not wait for a command that is still running. */
        t0 = g_get_monotonic_time();
        g_assert_cmpint(channel_unref(ch), ==, 0);
        g_assert_cmpint(g_get_monotonic_time() - t0, <, 1000 * 1000);
        g_assert_true(g_file_test(proc, G_FILE_TEST_EXISTS));
        check_reaped(pid);
    }
}

static void test_command_data(void)
{
    Channel *ch = channel_command_spawn("printf hello", false, &error_abort);
    uint8_t buf[5];

    g_assert_cmpint(channel_read_all(ch, buf, 5), ==, 0);
    g_assert_cmpmem(buf, 5, "hello", 5);
    g_assert_cmpint(channel_read_all(ch, buf, 1), ==, 1);
    channel_unref(ch);
}

/* ---- fd passing ---- */

static void test_fd_passing(void)
{
    int a, b, sent[3], got[CHANNEL_MAX_FDS];
    size_t ngot = ARRAY_SIZE(got);
    struct stat st_sent, st_got;
    Channel *tx, *rx;
    uint8_t buf[4];
    struct iovec iov = { buf, sizeof(buf) };

    make_socketpair(&a, &b, 0);
    tx = channel_socket_new(a);
    rx = channel_socket_new(b);
    g_assert_true(channel_has_feature(tx, CHANNEL_FEATURE_FD_PASS));
    g_assert_true(channel_has_feature(tx, CHANNEL_FEATURE_DUPLEX));
    for (int i = 0; i < 3; i++) {
        sent[i] = memfd_create("test-channel", MFD_CLOEXEC);
        g_assert_cmpint(ftruncate(sent[i], 4096 * (i + 1)), ==, 0);
    }
    g_assert_cmpint(channel_writev_all_fds(tx, &(struct iovec){ (char *)"fds!", 4 }, 1, sent, 3), ==, 0);
    g_assert_cmpint(channel_readv_full(rx, &iov, 1, got, &ngot, 0), ==, 4);
    g_assert_cmpmem(buf, 4, "fds!", 4);
    g_assert_cmpuint(ngot, ==, 3);
    for (int i = 0; i < 3; i++) {
        g_assert_true(fd_is_open(got[i]));
        g_assert_cmpint(fcntl(got[i], F_GETFD) & FD_CLOEXEC, ==, FD_CLOEXEC);
        for (int j = 0; j < 3; j++) {
            g_assert_cmpint(got[i], !=, sent[j]);
            g_assert_true(i == j || got[i] != got[j]);
        }
        /* The same open file, in order: same inode, the size that file was given. */
        g_assert_cmpint(fstat(sent[i], &st_sent), ==, 0);
        g_assert_cmpint(fstat(got[i], &st_got), ==, 0);
        g_assert_cmpuint(st_sent.st_ino, ==, st_got.st_ino);
        g_assert_cmpint(st_got.st_size, ==, 4096 * (i + 1));
        close(got[i]);
        close(sent[i]);
    }
    /* A message without fds says so. */
    ngot = ARRAY_SIZE(got);
    g_assert_cmpint(channel_write_all(tx, "none", 4), ==, 0);
    g_assert_cmpint(channel_readv_full(rx, &iov, 1, got, &ngot, 0), ==, 4);
    g_assert_cmpmem(buf, 4, "none", 4);
    g_assert_cmpuint(ngot, ==, 0);
    channel_unref(tx);
    channel_unref(rx);

    /* TCP cannot: the feature says so (callers test it, not the row). */
    {
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        Channel *ch = channel_socket_new(s);

        g_assert_false(channel_has_feature(ch, CHANNEL_FEATURE_FD_PASS));
        g_assert_true(channel_has_feature(ch, CHANNEL_FEATURE_DUPLEX));
        channel_unref(ch);
    }
}

/* ---- read-ahead ---- */

static void test_read_ahead(void)
{
    int a, b;
    Channel *ch;
    uint8_t word[4], buf[12];

    make_socketpair(&a, &b, 0);
    ch = channel_socket_new(a);
    /* Part of the word: a non-blocking peek keeps it and says "not yet". */
    g_assert_cmpint(write(b, "MA", 2), ==, 2);
    g_assert_cmpint(channel_peek(ch, word, 4, CHANNEL_NONBLOCK), ==, -EAGAIN);
    g_assert_cmpuint(channel_pending(ch), ==, 2);
    g_assert_cmpint(write(b, "GIC-rest", 8), ==, 8);
    g_assert_cmpint(channel_peek(ch, word, 4, CHANNEL_NONBLOCK), ==, 4);
    g_assert_cmpmem(word, 4, "MAGI", 4);
    /* Peeking again reads nothing more and gives the same bytes. */
    g_assert_cmpint(channel_peek(ch, word, 4, CHANNEL_NONBLOCK), ==, 4);
    g_assert_cmpmem(word, 4, "MAGI", 4);
    g_assert_cmpuint(channel_pending(ch), >=, 4);
    /* Put back in front of the peeked bytes: all come out in order, each once. */
    channel_unread(ch, "<<", 2);
    g_assert_cmpint(channel_read_all(ch, buf, 12), ==, 0);
    g_assert_cmpmem(buf, 12, "<<MAGIC-rest", 12);
    g_assert_cmpuint(channel_pending(ch), ==, 0);
    /* A read-ahead served across several iovecs and then the row. */
    channel_unread(ch, "abc", 3);
    g_assert_cmpint(write(b, "defg", 4), ==, 4);
    {
        struct iovec iov[2] = { { buf, 2 }, { buf + 2, 5 } };

        g_assert_cmpint(channel_readv_all(ch, iov, 2), ==, 0);
        g_assert_cmpmem(buf, 7, "abcdefg", 7);
    }
    /* At EOF a peek returns what there is. */
    g_assert_cmpint(write(b, "xy", 2), ==, 2);
    close(b);
    g_assert_cmpint(channel_peek(ch, word, 4, 0), ==, 2);
    g_assert_cmpint(channel_read_all(ch, buf, 2), ==, 0);
    g_assert_cmpmem(buf, 2, "xy", 2);
    channel_unref(ch);
}

/*
 * The invariant of io/channel.c in seeded random steps: whatever mix of
 * peer writes, reads, non-blocking peeks and put-backs, the reader gets
 * the peer's bytes in order, each once, with what it put back in front.
 * The model is the byte string the reader must see next.
 */
static void test_read_ahead_random(void)
{
    GRand *r = g_rand_new_with_seed(SEED + 7);
    g_autoptr(GByteArray) model = g_byte_array_new();  /* what the next reads must return */
    uint8_t buf[512], chunk[512];
    size_t sent_total = 0;
    int a, b;
    Channel *ch;

    make_socketpair(&a, &b, 0);
    ch = channel_socket_new(a);
    for (int step = 0; step < 20000; step++) {
        size_t n = g_rand_int_range(r, 1, sizeof(buf));

        switch (g_rand_int_range(r, 0, 4)) {
        case 0:         /* the peer sends */
            for (size_t i = 0; i < n; i++) {
                chunk[i] = sent_total + i;
            }
            if (model->len + n > 64 * 1024) {
                break;
            }
            g_assert_cmpint(write(b, chunk, n), ==, n);
            g_byte_array_append(model, chunk, n);
            sent_total += n;
            break;
        case 1:         /* read what is there, at most n */
            n = MIN(n, model->len);
            if (n) {
                g_assert_cmpint(channel_read_all(ch, buf, n), ==, 0);
                g_assert_cmpmem(buf, n, model->data, n);
                g_byte_array_remove_range(model, 0, n);
            }
            break;
        case 2: {       /* look ahead without consuming */
            ssize_t got = channel_peek(ch, buf, n, CHANNEL_NONBLOCK);

            if (n <= model->len) {
                /* Everything the model holds was sent: it is there to peek. */
                g_assert_cmpint(got, ==, n);
                g_assert_cmpmem(buf, n, model->data, n);
            } else {
                g_assert_cmpint(got, ==, -EAGAIN);
            }
            g_assert_cmpuint(channel_pending(ch), <=, model->len);
            break;
        }
        case 3:         /* read some, put back a tail of it */
            n = MIN(n, model->len);
            if (n) {
                size_t back = g_rand_int_range(r, 0, n + 1);

                g_assert_cmpint(channel_read_all(ch, buf, n), ==, 0);
                g_assert_cmpmem(buf, n, model->data, n);
                channel_unread(ch, buf + n - back, back);
                g_byte_array_remove_range(model, 0, n - back);
            }
            break;
        }
    }
    /* The rest, then EOF: nothing invented, nothing lost. */
    close(b);
    if (model->len) {
        g_autofree uint8_t *rest = g_malloc(model->len);

        g_assert_cmpint(channel_read_all(ch, rest, model->len), ==, 0);
        g_assert_cmpmem(rest, model->len, model->data, model->len);
    }
    g_assert_cmpint(channel_read_all(ch, buf, 1), ==, 1);
    channel_unref(ch);
    g_rand_free(r);
}

/* ---- references ---- */

static void test_refcount(void)
{
    int a, b, r, w;
    Channel *ch;

    make_socketpair(&a, &b, 0);
    ch = channel_socket_new(a);
    g_assert_true(channel_ref(ch) == ch);
    channel_ref(ch);
    g_assert_cmpint(channel_unref(ch), ==, 0);
    g_assert_cmpint(channel_unref(ch), ==, 0);
    g_assert_true(fd_is_open(a));
    /* Still usable by the last holder. */
    g_assert_cmpint(channel_write_all(ch, "z", 1), ==, 0);
    g_assert_cmpint(channel_unref(ch), ==, 0);
    g_assert_false(fd_is_open(a));
    close(b);

    make_pipe(&r, &w);
    ch = channel_pipe_new(r, -1, "pipe", &error_abort);
    channel_ref(ch);
    channel_unref(ch);
    g_assert_true(fd_is_open(r));
    channel_unref(ch);
    g_assert_false(fd_is_open(r));
    close(w);
}

/* ---- the file row and fd: ---- */

static void test_file_row(void)
{
    g_autofree char *path = g_build_filename(g_get_tmp_dir(), "test-channel-XXXXXX", NULL);
    int fd = g_mkstemp(path);
    Channel *ch;
    uint8_t buf[8];
    struct iovec iov = { buf, 4 };

    g_assert_cmpint(fd, >=, 0);
    ch = channel_file_new(fd, path);
    g_assert_true(channel_has_feature(ch, CHANNEL_FEATURE_SEEKABLE));
    g_assert_false(channel_has_feature(ch, CHANNEL_FEATURE_DUPLEX));
    g_assert_cmpint(channel_write_all(ch, "0123456789", 10), ==, 0);
    g_assert_cmpint(channel_seek(ch, 0, SEEK_CUR), ==, 10);
    /* Positional I/O leaves the stream position alone. */
    g_assert_cmpint(channel_pwritev(ch, &(struct iovec){ (char *)"AB", 2 }, 1, 2), ==, 2);
    g_assert_cmpint(channel_preadv(ch, &iov, 1, 1), ==, 4);
    g_assert_cmpmem(buf, 4, "1AB4", 4);
    g_assert_cmpint(channel_seek(ch, 0, SEEK_CUR), ==, 10);
    /* A tell does not count what was read ahead. */
    g_assert_cmpint(channel_seek(ch, 4, SEEK_SET), ==, 4);
    g_assert_cmpint(channel_peek(ch, buf, 3, 0), ==, 3);
    g_assert_cmpint(channel_seek(ch, 0, SEEK_CUR), ==, 4);
    g_assert_cmpint(channel_read_all(ch, buf, 6), ==, 0);
    g_assert_cmpmem(buf, 6, "456789", 6);
    g_assert_cmpint(channel_read_all(ch, buf, 1), ==, 1);
    /* A relative seek counts from the next byte a read returns, read ahead or not. */
    g_assert_cmpint(channel_seek(ch, 4, SEEK_SET), ==, 4);
    g_assert_cmpint(channel_peek(ch, buf, 3, 0), ==, 3);
    g_assert_cmpint(channel_seek(ch, 2, SEEK_CUR), ==, 6);
    g_assert_cmpint(channel_read_all(ch, buf, 4), ==, 0);
    g_assert_cmpmem(buf, 4, "6789", 4);
    /* A seek that fails keeps what was read ahead. */
    g_assert_cmpint(channel_seek(ch, 1, SEEK_SET), ==, 1);
    g_assert_cmpint(channel_peek(ch, buf, 2, 0), ==, 2);
    g_assert_cmpint(channel_seek(ch, -100, SEEK_CUR), <, 0);
    g_assert_cmpint(channel_read_all(ch, buf, 2), ==, 0);
    g_assert_cmpmem(buf, 2, "1A", 2);
    channel_unref(ch);
    unlink(path);
}

static void test_fd_rows(void)
{
    g_autofree char *path = g_build_filename(g_get_tmp_dir(), "test-channel-XXXXXX", NULL);
    int fd = g_mkstemp(path), a, b, r, w, fl;
    Channel *ch;
    Error *err = NULL;

    ch = channel_fd_new(fd, &error_abort);
    g_assert_true(channel_has_feature(ch, CHANNEL_FEATURE_SEEKABLE));
    channel_unref(ch);
    unlink(path);

    make_socketpair(&a, &b, 0);
    ch = channel_fd_new(a, &error_abort);
    g_assert_true(channel_has_feature(ch, CHANNEL_FEATURE_DUPLEX));
    g_assert_false(channel_has_feature(ch, CHANNEL_FEATURE_SEEKABLE));
    channel_unref(ch);
    close(b);

    /* A pipe: woken by the eventfd; the parent's side keeps its blocking mode. */
    make_pipe(&r, &w);
    fl = fcntl(r, F_GETFL);
    ch = channel_fd_new(dup(r), &error_abort);
    g_assert_false(channel_has_feature(ch, CHANNEL_FEATURE_DUPLEX));
    g_assert_cmpint(fcntl(r, F_GETFL), ==, fl);
    check_shutdown_wakes(ch, false, CHANNEL_SHUT_READ, 1);
    channel_unref(ch);
    close(r);
    close(w);

    /*
     * A descriptor another process may share (what an fd: pipe becomes when
     * it cannot be reopened): its blocking mode stays, and shutdown still
     * wakes a blocked reader.
     */
    make_pipe(&r, &w);
    fl = fcntl(r, F_GETFL);
    ch = channel_pipe_new(r, -1, "shared pipe", &error_abort);
    g_assert_cmpint(fcntl(r, F_GETFL), ==, fl);
    check_shutdown_wakes(ch, false, CHANNEL_SHUT_READ, 1);
    g_assert_cmpint(fcntl(r, F_GETFL), ==, fl);
    channel_unref(ch);
    close(w);

    g_assert_null(channel_fd_new(1000000, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "not an open file descriptor"));
    error_free(err);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    /* Writes to a closed peer must fail with EPIPE, as in the VMM, not kill us. */
    signal(SIGPIPE, SIG_IGN);
    g_test_add_func("/channel/short/socket", test_socket_short);
    g_test_add_func("/channel/short/pipe", test_pipe_short);
    g_test_add_func("/channel/eof-codes", test_eof_codes);
    g_test_add_func("/channel/eintr", test_eintr);
    g_test_add_func("/channel/shutdown/socket", test_shutdown_socket);
    g_test_add_func("/channel/shutdown/pipe", test_shutdown_pipe);
    g_test_add_func("/channel/shutdown/command", test_shutdown_command);
    g_test_add_func("/channel/command-data", test_command_data);
    g_test_add_func("/channel/fd-passing", test_fd_passing);
    g_test_add_func("/channel/read-ahead", test_read_ahead);
    g_test_add_func("/channel/read-ahead-random", test_read_ahead_random);
    g_test_add_func("/channel/refcount", test_refcount);
    g_test_add_func("/channel/file", test_file_row);
    g_test_add_func("/channel/fd-rows", test_fd_rows);
    return g_test_run();
}

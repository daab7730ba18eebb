/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The cuttable tcp forwarder of the migration tests (migproxy.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <glib.h>
#include "migproxy.h"

#define MAX_PAIRS 16

struct MigProxy {
    int listen_fd;
    int dst_port;
    int wake[2];                /* the test's requests: 'c' cut, 'q' quit */
    int done[2];                /* the thread's answer to each request */
    char *uri;
    GThread *thread;
    /* The thread's; the pairs: [i][0] the source side, [i][1] the destination side. */
    int fds[MAX_PAIRS][2];
    /*
     * The thread's: what is still to be written to fds[i][k]. Writes never
     * block the thread: one side that stops reading (a multifd channel
     * waiting for the stream) must not stall every other connection.
     */
    GByteArray *out[MAX_PAIRS][2];
    /* The thread's, in armed mode: source bytes not let through yet, per pair. */
    GByteArray *held[MAX_PAIRS];
    bool holding[MAX_PAIRS];    /* the stream reached its "cpu" section: hold all */
    char kind[MAX_PAIRS];       /* from the first 4 bytes: 's' the stream, 'o' other, 0 not yet */
    /*
     * The stream's last 8 bytes let through, so that a section header split
     * between two reads is still found; once holding: how many bytes of
     * the "cpu" header had gone through.
     */
    uint8_t lookback[MAX_PAIRS][8];
    size_t lookback_len[MAX_PAIRS];
    int npairs;
    MigProxyEnd end;            /* atomic: armed by the test, cleared by the cut */
    int end_cuts;               /* atomic */
    uint64_t forwarded;         /* atomic: source -> destination bytes */
};

int migproxy_tcp_listen(int *port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t alen = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), on = 1;

    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    g_assert_cmpint(bind(fd, (struct sockaddr *)&a, sizeof(a)), ==, 0);
    g_assert_cmpint(listen(fd, 8), ==, 0);
    g_assert_cmpint(getsockname(fd, (struct sockaddr *)&a, &alen), ==, 0);
    *port = ntohs(a.sin_port);
    return fd;
}

int migproxy_tcp_connect(int port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Up to this much waits for a side that does not read; then its other side is not read. */
#define OUT_LIMIT (64 << 20)

/* Writes what fds[i][k] takes now; false on an error of the connection. */
static bool proxy_flush(MigProxy *p, int i, int k)
{
    GByteArray *o = p->out[i][k];

    while (o && o->len) {
        ssize_t w = send(p->fds[i][k], o->data, o->len, MSG_DONTWAIT | MSG_NOSIGNAL);

        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return true;
        }
        if (w <= 0) {
            return false;
        }
        g_byte_array_remove_range(o, 0, w);
    }
    return true;
}

/* Queues @n bytes for fds[i][k] and writes what it takes now. */
static bool proxy_write(MigProxy *p, int i, int k, const uint8_t *buf, size_t n)
{
    if (!p->out[i][k]) {
        p->out[i][k] = g_byte_array_new();
    }
    g_byte_array_append(p->out[i][k], buf, n);
    return proxy_flush(p, i, k);
}

/*
 * Before a close: what was read from one side reaches the other, as a
 * link that breaks after delivering it would (a peer that neither reads
 * nor fails within 2 s gets the rest dropped).
 */
static void proxy_drain(MigProxy *p, int i, int k)
{
    gint64 end = g_get_monotonic_time() + 2 * G_USEC_PER_SEC;

    while (p->out[i][k] && p->out[i][k]->len && g_get_monotonic_time() < end) {
        struct pollfd pfd = { .fd = p->fds[i][k], .events = POLLOUT };

        if (poll(&pfd, 1, 100) < 0 && errno != EINTR) {
            return;
        }
        if (!proxy_flush(p, i, k)) {
            return;
        }
    }
}

static void proxy_close_pair(MigProxy *p, int i)
{
    for (int k = 0; k < 2; k++) {
        proxy_drain(p, i, k);
    }
    for (int k = 0; k < 2; k++) {
        shutdown(p->fds[i][k], SHUT_RDWR);
        close(p->fds[i][k]);
        if (p->out[i][k]) {
            g_byte_array_unref(p->out[i][k]);
        }
        p->out[i][k] = p->out[p->npairs - 1][k];
        p->out[p->npairs - 1][k] = NULL;
    }
    if (p->held[i]) {
        g_byte_array_unref(p->held[i]);
    }
    p->npairs--;
    p->fds[i][0] = p->fds[p->npairs][0];
    p->fds[i][1] = p->fds[p->npairs][1];
    p->held[i] = p->held[p->npairs];
    p->holding[i] = p->holding[p->npairs];
    p->kind[i] = p->kind[p->npairs];
    memcpy(p->lookback[i], p->lookback[p->npairs], 8);
    p->lookback_len[i] = p->lookback_len[p->npairs];
    p->lookback_len[p->npairs] = 0;
    p->held[p->npairs] = NULL;
    p->holding[p->npairs] = false;
    p->kind[p->npairs] = 0;
}

/* Lets the first @n held bytes of pair @i through. */
static bool proxy_release(MigProxy *p, int i, size_t n)
{
    bool ok = proxy_write(p, i, 1, p->held[i]->data, n);

    g_byte_array_remove_range(p->held[i], 0, n);
    return ok;
}


/* Offset of a "cpu" FULL section header (0x04, be32 id, 3 "cpu") in @h, or -1. */
static long find_cpu_section(GByteArray *h)
{
    for (size_t i = 0; i + 9 <= h->len; i++) {
        if (h->data[i] == 0x04 && h->data[i + 5] == 3 && !memcmp(h->data + i + 6, "cpu", 3)) {
            return i;
        }
    }
    return -1;
}

/* Offset of the vmdesc record (EOF, 0x06, be32 length, JSON to the end) ending @h, or -1. */
static long find_final_vmdesc(GByteArray *h)
{
    const uint8_t *d = h->data;

    if (h->len < 8 || d[h->len - 1] != '}') {
        return -1;
    }
    for (size_t off = h->len - 7; off > 0; off--) {
        uint32_t n = (uint32_t)d[off + 1] << 24 | d[off + 2] << 16 | d[off + 3] << 8 | d[off + 4];

        if (d[off] == 0x06 && d[off - 1] == 0x00 && n == h->len - off - 5 && d[off + 5] == '{') {
            return off;
        }
    }
    return -1;
}

static bool proxy_pump_armed(MigProxy *p, int i, const uint8_t *buf, size_t n);

/* The armed cut: what @where lets through of the held stream of pair @i, then all is cut. */
static void proxy_end_cut(MigProxy *p, int i, long vmdesc)
{
    MigProxyEnd where = __atomic_load_n(&p->end, __ATOMIC_RELAXED);
    size_t n = p->held[i]->len;

    if (where == MIGPROXY_END_IN_CPU) {
        n = 20 - p->lookback_len[i];
    } else if (where == MIGPROXY_END_IN_VMDESC) {
        n = vmdesc + 5 + (n - vmdesc - 5) / 2;
    }
    proxy_release(p, i, n);
    /*
     * What the source wrote on the other connections before it ended the
     * stream goes on first (all of it, or all but the held tail): the cut
     * is in the stream, not in whatever the proxy had not read yet.
     */
    for (int k = 0; k < p->npairs; k++) {
        uint8_t buf[65536];
        ssize_t r;

        if (p->kind[k] != 'o') {
            continue;
        }
        while ((r = recv(p->fds[k][0], buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
            proxy_pump_armed(p, k, buf, r);
        }
    }
    while (p->npairs) {
        proxy_close_pair(p, 0);
    }
    __atomic_store_n(&p->end, MIGPROXY_END_NONE, __ATOMIC_RELAXED);
    __atomic_fetch_add(&p->end_cuts, 1, __ATOMIC_RELAXED);
}

/*
 * Armed mode, source side of pair @i: @buf joins what is held and as much
 * as the mode allows goes on. False once the pair is gone (or all were cut).
 */
static bool proxy_pump_armed(MigProxy *p, int i, const uint8_t *buf, size_t n)
{
    GByteArray *h;
    long at;

    if (!p->held[i]) {
        p->held[i] = g_byte_array_new();
    }
    h = p->held[i];
    g_byte_array_append(h, buf, n);
    if (!p->kind[i]) {
        if (h->len < 4) {
            return true;                /* not told apart yet */
        }
        p->kind[i] = memcmp(h->data, "QEVM", 4) ? 'o' : 's';
    }
    if (p->kind[i] == 'o') {
        size_t keep = p->end == MIGPROXY_END_IN_CHANNEL ? 16 : 0;

        return h->len <= keep || proxy_release(p, i, h->len - keep);
    }
    if (!p->holding[i]) {
        /*
         * Nothing of the stream is held back before its device state:
         * the destination must keep loading (and reading the multifd
         * channels), or the whole chain stalls.
         */
        size_t lb = p->lookback_len[i];
        g_autoptr(GByteArray) scan = g_byte_array_sized_new(lb + h->len);

        g_byte_array_append(scan, p->lookback[i], lb);
        g_byte_array_append(scan, h->data, h->len);
        at = find_cpu_section(scan);
        if (at < 0) {
            size_t keep = MIN(scan->len, 8);

            memcpy(p->lookback[i], scan->data + scan->len - keep, keep);
            p->lookback_len[i] = keep;
            return proxy_release(p, i, h->len);
        }
        if (at >= (long)lb) {
            if (at > (long)lb && !proxy_release(p, i, at - lb)) {
                return false;
            }
            p->lookback_len[i] = 0;
        } else {
            p->lookback_len[i] = lb - at;       /* bytes of the header already through */
        }
        p->holding[i] = true;
    }
    at = find_final_vmdesc(h);
    if (at >= 0) {
        proxy_end_cut(p, i, at);
        return false;
    }
    return true;
}

/* Copies what is readable on one side to the other; false once either side is gone. */
static bool proxy_pump(MigProxy *p, int i, int from)
{
    static char buf[65536];
    ssize_t n = read(p->fds[i][from], buf, sizeof(buf));

    if (n <= 0) {
        return false;
    }
    if (from == 0) {
        __atomic_fetch_add(&p->forwarded, n, __ATOMIC_RELAXED);
    }
    if (from == 0 && (p->held[i] || __atomic_load_n(&p->end, __ATOMIC_RELAXED))) {
        return proxy_pump_armed(p, i, (const uint8_t *)buf, n);
    }
    return proxy_write(p, i, !from, (const uint8_t *)buf, n);
}

static gpointer proxy_thread(gpointer opaque)
{
    MigProxy *p = opaque;

    for (;;) {
        struct pollfd pfd[2 + 2 * MAX_PAIRS] = {
            { .fd = p->wake[0], .events = POLLIN },
            { .fd = p->listen_fd, .events = POLLIN },
        };
        int n = 2;
        char req;

        for (int i = 0; i < p->npairs; i++) {
            for (int k = 0; k < 2; k++) {
                GByteArray *to_other = p->out[i][!k], *to_me = p->out[i][k];
                short ev = (to_other && to_other->len > OUT_LIMIT) ? 0 : POLLIN;

                if (to_me && to_me->len) {
                    ev |= POLLOUT;
                }
                pfd[n++] = (struct pollfd) { .fd = p->fds[i][k], .events = ev };
            }
        }
        if (poll(pfd, n, -1) < 0) {
            g_assert_cmpint(errno, ==, EINTR);
            continue;
        }
        if (pfd[0].revents & POLLIN) {
            g_assert_cmpint(read(p->wake[0], &req, 1), ==, 1);
            while (p->npairs) {
                proxy_close_pair(p, 0);
            }
            g_assert_cmpint(write(p->done[1], &req, 1), ==, 1);
            if (req == 'q') {
                return NULL;
            }
            continue;
        }
        if ((pfd[1].revents & POLLIN) && p->npairs < MAX_PAIRS) {
            int s = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC);
            int d = s >= 0 ? migproxy_tcp_connect(p->dst_port) : -1;

            if (d < 0) {
                if (s >= 0) {
                    close(s);
                }
            } else {
                p->fds[p->npairs][0] = s;
                p->fds[p->npairs][1] = d;
                p->npairs++;
            }
            continue;
        }
        for (int i = p->npairs - 1; i >= 0; i--) {
            for (int from = 0; from < 2; from++) {
                int cuts = p->end_cuts;
                short rev = pfd[2 + 2 * i + from].revents;

                if (((rev & POLLOUT) && !proxy_flush(p, i, from)) ||
                    ((rev & (POLLIN | POLLHUP | POLLERR)) && !proxy_pump(p, i, from))) {
                    if (cuts == p->end_cuts) {
                        proxy_close_pair(p, i);
                    }
                    break;
                }
            }
            if (i > p->npairs) {
                i = p->npairs;          /* the armed cut closed them all */
            }
        }
    }
}

MigProxy *migproxy_new(const char *dst_uri)
{
    MigProxy *p = g_new0(MigProxy, 1);
    int port;

    p->dst_port = atoi(strrchr(dst_uri, ':') + 1);
    p->listen_fd = migproxy_tcp_listen(&port);
    g_assert_cmpint(pipe(p->wake), ==, 0);
    g_assert_cmpint(pipe(p->done), ==, 0);
    p->uri = g_strdup_printf("tcp:127.0.0.1:%d", port);
    p->thread = g_thread_new("migproxy", proxy_thread, p);
    return p;
}

const char *migproxy_uri(MigProxy *p)
{
    return p->uri;
}

static void proxy_request(MigProxy *p, char req)
{
    char ack;

    g_assert_cmpint(write(p->wake[1], &req, 1), ==, 1);
    g_assert_cmpint(read(p->done[0], &ack, 1), ==, 1);
}

void migproxy_cut_near_end(MigProxy *p, MigProxyEnd where)
{
    __atomic_store_n(&p->end, where, __ATOMIC_RELAXED);
}

int migproxy_end_cuts(MigProxy *p)
{
    gint64 end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;

    /* A source that does not wait for the destination may finish before the proxy cut. */
    while (__atomic_load_n(&p->end, __ATOMIC_RELAXED) != MIGPROXY_END_NONE &&
           g_get_monotonic_time() < end) {
        g_usleep(10000);
    }
    return __atomic_load_n(&p->end_cuts, __ATOMIC_RELAXED);
}

void migproxy_cut(MigProxy *p)
{
    proxy_request(p, 'c');
}

uint64_t migproxy_forwarded(MigProxy *p)
{
    return __atomic_load_n(&p->forwarded, __ATOMIC_RELAXED);
}

void migproxy_free(MigProxy *p)
{
    proxy_request(p, 'q');
    g_thread_join(p->thread);
    close(p->listen_fd);
    for (int k = 0; k < 2; k++) {
        close(p->wake[k]);
        close(p->done[k]);
    }
    g_free(p->uri);
    g_free(p);
}

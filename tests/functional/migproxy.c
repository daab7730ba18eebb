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
    int npairs;
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

static void proxy_close_pair(MigProxy *p, int i)
{
    for (int k = 0; k < 2; k++) {
        shutdown(p->fds[i][k], SHUT_RDWR);
        close(p->fds[i][k]);
    }
    p->fds[i][0] = p->fds[--p->npairs][0];
    p->fds[i][1] = p->fds[p->npairs][1];
}

/* Copies what is readable on one side to the other; false once either side is gone. */
static bool proxy_pump(MigProxy *p, int i, int from)
{
    static char buf[65536];
    ssize_t n = read(p->fds[i][from], buf, sizeof(buf));

    if (n <= 0) {
        return false;
    }
    for (ssize_t off = 0; off < n;) {
        ssize_t w = write(p->fds[i][!from], buf + off, n - off);

        if (w <= 0) {
            return false;
        }
        off += w;
    }
    if (from == 0) {
        __atomic_fetch_add(&p->forwarded, n, __ATOMIC_RELAXED);
    }
    return true;
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
            pfd[n++] = (struct pollfd) { .fd = p->fds[i][0], .events = POLLIN };
            pfd[n++] = (struct pollfd) { .fd = p->fds[i][1], .events = POLLIN };
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
                if ((pfd[2 + 2 * i + from].revents & (POLLIN | POLLHUP | POLLERR)) &&
                    !proxy_pump(p, i, from)) {
                    proxy_close_pair(p, i);
                    break;
                }
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

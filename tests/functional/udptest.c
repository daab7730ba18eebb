/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The udpecho client of the functional tests: see udptest.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <glib.h>
#include "udptest.h"

#define UDP_ECHO_MAX 200000     /* datagram numbers recorded (over 16 min at 200/s) */

struct UdpEcho {
    int fd;
    int ports[4];               /* lock */
    int nports;                 /* lock */
    int rate;
    GThread *sender, *receiver;
    /* lock: everything below; the sender writes sent_us, the receiver echo_us. */
    GMutex lock;
    bool stop;
    uint64_t next;              /* the number the next datagram carries (1, 2, ...) */
    int64_t *sent_us;           /* [N]: wall clock at the send, 0 = not sent */
    int64_t *echo_us;           /* [N]: wall clock of its first echo, 0 = none */
    uint64_t *echo_seq;         /* [N]: the guest's seq in that echo */
    uint64_t echoes;
};

int udptest_free_port(void)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t alen = sizeof(a);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int port;

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(bind(fd, (struct sockaddr *)&a, sizeof(a)), ==, 0);
    g_assert_cmpint(getsockname(fd, (struct sockaddr *)&a, &alen), ==, 0);
    port = ntohs(a.sin_port);
    close(fd);
    return port;
}

int udptest_socket(int bind_port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(bind_port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(bind(fd, (struct sockaddr *)&a, sizeof(a)), ==, 0);
    return fd;
}

void udptest_send(int fd, int port, const char *buf, size_t len)
{
    struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

    g_assert_cmpint(sendto(fd, buf, len, 0, (struct sockaddr *)&to, sizeof(to)), ==, (ssize_t)len);
}

ssize_t udptest_recv(int fd, char *buf, size_t size, int timeout_ms, struct sockaddr_in *from)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    socklen_t flen = sizeof(*from);
    ssize_t n;

    if (poll(&p, 1, timeout_ms) != 1) {
        return -1;
    }
    n = recvfrom(fd, buf, size - 1, 0, (struct sockaddr *)from, &flen);
    if (n < 0) {
        g_error("recvfrom: %s", g_strerror(errno));
    }
    buf[n] = 0;
    return n;
}

int64_t udptest_now_us(void)
{
    return g_get_real_time();
}

static bool udp_echo_stopping(UdpEcho *u)
{
    bool stop;

    g_mutex_lock(&u->lock);
    stop = u->stop;
    g_mutex_unlock(&u->lock);
    return stop;
}

static gpointer udp_echo_send_loop(gpointer opaque)
{
    UdpEcho *u = opaque;
    int64_t start = g_get_monotonic_time();

    for (uint64_t n = 1; n < UDP_ECHO_MAX && !udp_echo_stopping(u); n++) {
        int64_t due = start + (int64_t)(n * G_USEC_PER_SEC / u->rate);
        int64_t now = g_get_monotonic_time();
        char msg[32];
        int len = snprintf(msg, sizeof(msg), "c=%" G_GUINT64_FORMAT, n);

        if (due > now) {
            g_usleep(due - now);
        }
        int ports[G_N_ELEMENTS(u->ports)], nports;

        g_mutex_lock(&u->lock);
        u->sent_us[n] = udptest_now_us();
        u->next = n + 1;
        nports = u->nports;
        memcpy(ports, u->ports, sizeof(ports));
        g_mutex_unlock(&u->lock);
        for (int i = 0; i < nports; i++) {
            struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(ports[i]),
                                      .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

            /* A port nobody binds yet answers with ICMP: an error here, ignored. */
            (void)sendto(u->fd, msg, len, 0, (struct sockaddr *)&to, sizeof(to));
        }
    }
    return NULL;
}

/* "seq=M c=N ...": M and N, or false. */
static bool parse_echo(const char *buf, uint64_t *seq, uint64_t *n)
{
    const char *s = strstr(buf, "seq="), *c = strstr(buf, "c=");

    if (!s || !c) {
        return false;
    }
    *seq = g_ascii_strtoull(s + 4, NULL, 10);
    *n = g_ascii_strtoull(c + 2, NULL, 10);
    return *n > 0 && *n < UDP_ECHO_MAX;
}

static gpointer udp_echo_recv_loop(gpointer opaque)
{
    UdpEcho *u = opaque;
    char buf[2048];

    while (!udp_echo_stopping(u)) {
        struct pollfd p = { .fd = u->fd, .events = POLLIN };
        uint64_t seq, n;
        ssize_t len;

        if (poll(&p, 1, 100) != 1) {
            continue;
        }
        len = recv(u->fd, buf, sizeof(buf) - 1, 0);
        if (len < 0) {
            continue;           /* ECONNREFUSED from a port not bound yet */
        }
        buf[len] = 0;
        if (!parse_echo(buf, &seq, &n)) {
            continue;
        }
        g_mutex_lock(&u->lock);
        if (!u->echo_us[n]) {
            u->echo_us[n] = udptest_now_us();
            u->echo_seq[n] = seq;
            u->echoes++;
        }
        g_mutex_unlock(&u->lock);
    }
    return NULL;
}

UdpEcho *udp_echo_start(const int *ports, int nports, int rate)
{
    UdpEcho *u = g_new0(UdpEcho, 1);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

    g_assert_cmpint(nports, >, 0);
    g_assert_cmpint(nports, <=, (int)G_N_ELEMENTS(u->ports));
    g_assert_cmpint(rate, >, 0);
    u->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    g_assert_cmpint(u->fd, >=, 0);
    g_assert_cmpint(bind(u->fd, (struct sockaddr *)&a, sizeof(a)), ==, 0);
    memcpy(u->ports, ports, nports * sizeof(int));
    u->nports = nports;
    u->rate = rate;
    u->next = 1;
    u->sent_us = g_new0(int64_t, UDP_ECHO_MAX);
    u->echo_us = g_new0(int64_t, UDP_ECHO_MAX);
    u->echo_seq = g_new0(uint64_t, UDP_ECHO_MAX);
    g_mutex_init(&u->lock);
    u->receiver = g_thread_new("udp-echo-rx", udp_echo_recv_loop, u);
    u->sender = g_thread_new("udp-echo-tx", udp_echo_send_loop, u);
    return u;
}

void udp_echo_retarget(UdpEcho *u, const int *ports, int nports)
{
    g_assert_cmpint(nports, >, 0);
    g_assert_cmpint(nports, <=, (int)G_N_ELEMENTS(u->ports));
    g_mutex_lock(&u->lock);
    memcpy(u->ports, ports, nports * sizeof(int));
    u->nports = nports;
    g_mutex_unlock(&u->lock);
}

void udp_echo_stop(UdpEcho *u)
{
    g_mutex_lock(&u->lock);
    u->stop = true;
    g_mutex_unlock(&u->lock);
    g_clear_pointer(&u->sender, g_thread_join);
    g_clear_pointer(&u->receiver, g_thread_join);
}

void udp_echo_free(UdpEcho *u)
{
    udp_echo_stop(u);
    close(u->fd);
    g_mutex_clear(&u->lock);
    g_free(u->sent_us);
    g_free(u->echo_us);
    g_free(u->echo_seq);
    g_free(u);
}

uint64_t udp_echo_count(UdpEcho *u)
{
    uint64_t n;

    g_mutex_lock(&u->lock);
    n = u->echoes;
    g_mutex_unlock(&u->lock);
    return n;
}

void udp_echo_wait(UdpEcho *u, uint64_t count, int timeout_s)
{
    int64_t end = g_get_monotonic_time() + timeout_s * G_USEC_PER_SEC;

    while (udp_echo_count(u) < count) {
        if (g_get_monotonic_time() > end) {
            g_error("udp echo: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                    " echoes in %d s", udp_echo_count(u), count, timeout_s);
        }
        g_usleep(20 * 1000);
    }
}

void udp_echo_report(UdpEcho *u, int64_t from_us, int64_t to_us, int64_t settle_us,
                     int64_t win_from_us, int64_t win_to_us, UdpEchoReport *r)
{
    int64_t last_new = 0, first_after_us = 0;
    uint64_t top = 0;

    memset(r, 0, sizeof(*r));
    g_mutex_lock(&u->lock);
    for (uint64_t n = 1; n < u->next; n++) {
        int64_t s = u->sent_us[n], e = u->echo_us[n];

        if (s < from_us || s > to_us - settle_us) {
            continue;
        }
        r->sent++;
        if (e) {
            r->rtt_max_us = MAX(r->rtt_max_us, e - s);
        }
    }
    for (uint64_t n = 1; n < u->next; n++) {
        int64_t s = u->sent_us[n], e = u->echo_us[n];

        if (e) {
            r->highest_seq = MAX(r->highest_seq, u->echo_seq[n]);
            if (e > win_to_us && (!first_after_us || e < first_after_us)) {
                first_after_us = e;
                r->first_seq_after = u->echo_seq[n];
            }
        }
        if (s < from_us || s > to_us - settle_us || e) {
            continue;
        }
        r->lost++;
        if (s < win_from_us - r->rtt_max_us || s > win_to_us) {
            r->lost_outside++;
        }
    }
    /* Echoes in the order of their numbers are in the order they were sent. */
    for (uint64_t n = 1; n < u->next; n++) {
        int64_t e = u->echo_us[n];

        if (!e || n <= top || e < from_us || e > to_us) {
            continue;
        }
        top = n;
        if (last_new) {
            r->max_gap_us = MAX(r->max_gap_us, e - last_new);
        }
        last_new = MAX(last_new, e);
    }
    g_mutex_unlock(&u->lock);
}

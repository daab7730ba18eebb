/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The TLS handshake and record protocol in seeded random steps (STYLE.md
 * 4.7): a client and a server talk through a relay thread that, per seed,
 * cuts the connection, drops a byte, flips a bit or injects bytes at one
 * random point in one direction, during the handshake or after it.
 *
 * Invariant: either both ends succeed and every byte arrives intact and
 * in order, or each end fails with an error, within a bounded time; never
 * a hang, a crash, or a byte delivered that the peer did not send (each
 * read is compared with the expected stream as it arrives, so bytes given
 * before an error count too), and never a clean end of file before all of
 * the peer's bytes (a truncation taken for the end). A seed whose fault
 * falls beyond the traffic must succeed on both ends.
 *
 * A dropped byte leaves both ends waiting for each other, as it would on
 * a network path that stalls: the relay then cuts the connection after
 * IDLE_MS without traffic, standing in for the caller's deadline.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "io/channel-tls.h"
#include "tls-certs.h"
#include <poll.h>
#include <sys/socket.h>

#define SEEDS 160
#define IDLE_MS 40
#define SEED_DEADLINE_US (10 * G_USEC_PER_SEC)

bool authz_is_allowed(Authz *a, const char *identity, Error **errp)
{
    g_assert_not_reached();     /* these sessions have no authz */
}

typedef enum Fault { FAULT_NONE, FAULT_CUT, FAULT_DROP, FAULT_FLIP, FAULT_INJECT } Fault;

typedef struct Relay {
    int fd[2];                  /* [0] the client's side, [1] the server's */
    Fault fault;
    int dir;                    /* faulted direction: 0 client->server, 1 server->client */
    size_t pos;                 /* faulted byte, counted in that direction */
    GRand *rand;                /* the relay thread's */
    bool applied;               /* set by the relay, read after join */
} Relay;

static bool write_full(int fd, const uint8_t *b, size_t n)
{
    while (n) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);

        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return false;
        }
        b += w;
        n -= w;
    }
    return true;
}

static gpointer relay_run(gpointer opaque)
{
    Relay *r = opaque;
    size_t count[2] = { 0, 0 };
    bool open[2] = { true, true };

    while (open[0] || open[1]) {
        struct pollfd pfd[2] = { { .fd = open[0] ? r->fd[0] : -1, .events = POLLIN },
                                 { .fd = open[1] ? r->fd[1] : -1, .events = POLLIN } };
        int p = poll(pfd, 2, r->applied ? IDLE_MS : 5000);

        if (p == 0) {
            break;              /* stalled: cut (see the top) */
        }
        for (int d = 0; d < 2; d++) {
            uint8_t buf[4096 + 8];
            ssize_t n;

            if (!open[d] || !pfd[d].revents) {
                continue;
            }
            n = recv(r->fd[d], buf, 4096, 0);
            if (n <= 0) {
                open[d] = false;
                shutdown(r->fd[!d], SHUT_WR);
                continue;
            }
            if (!r->applied && d == r->dir && r->fault != FAULT_NONE &&
                r->pos >= count[d] && r->pos < count[d] + n) {
                size_t at = r->pos - count[d];

                r->applied = true;
                switch (r->fault) {
                case FAULT_CUT:
                    n = at;
                    write_full(r->fd[!d], buf, n);
                    goto cut;
                case FAULT_DROP:
                    memmove(buf + at, buf + at + 1, n - at - 1);
                    n--;
                    break;
                case FAULT_FLIP:
                    buf[at] ^= 1 << g_rand_int_range(r->rand, 0, 8);
                    break;
                case FAULT_INJECT: {
                    int k = g_rand_int_range(r->rand, 1, 8);

                    memmove(buf + at + k, buf + at, n - at);
                    for (int i = 0; i < k; i++) {
                        buf[at + i] = g_rand_int(r->rand);
                    }
                    n += k;
                    break;
                }
                default:
                    break;
                }
            }
            count[d] += n;
            if (!write_full(r->fd[!d], buf, n)) {
                open[d] = false;
            }
        }
    }
cut:
    shutdown(r->fd[0], SHUT_RDWR);
    shutdown(r->fd[1], SHUT_RDWR);
    return NULL;
}

typedef struct End {
    bool server;
    TLSCreds *creds;
    Channel *inner;
    const uint8_t *out;         /* what this end sends */
    const uint8_t *in;          /* what the peer sends */
    size_t out_len, in_len;
    GRand *rand;                /* this end's thread's: chunk sizes */
    bool ok;                    /* everything sent, everything read, clean EOF */
    char *violation;            /* set when the invariant broke */
    int done;                   /* atomic */
} End;

static bool end_send(End *e, Channel *ch)
{
    size_t off = 0;

    while (off < e->out_len) {
        size_t want = g_rand_int_range(e->rand, 1, 40000);     /* MIN evaluates twice */
        size_t l = MIN(e->out_len - off, want);

        if (channel_write_all(ch, e->out + off, l) < 0) {
            return false;
        }
        off += l;
    }
    return channel_tls_bye(ch) == 0;
}

/* Reads until EOF, checking every byte as it comes. */
static bool end_receive(End *e, Channel *ch)
{
    uint8_t buf[20000];
    size_t got = 0;

    for (;;) {
        struct iovec iov = { buf, g_rand_int_range(e->rand, 1, sizeof(buf)) };
        ssize_t n = channel_readv(ch, &iov, 1, 0);

        if (n == -EINTR) {
            continue;
        }
        if (n < 0) {
            return false;
        }
        if (n == 0) {
            if (got != e->in_len) {
                e->violation = g_strdup_printf("clean EOF after %zu of %zu bytes", got,
                                               e->in_len);
            }
            return got == e->in_len;
        }
        if (got + n > e->in_len || memcmp(buf, e->in + got, n)) {
            e->violation = g_strdup_printf("%zd bytes at %zu differ from the peer's", n, got);
            return false;
        }
        got += n;
    }
}

static gpointer end_run(gpointer opaque)
{
    End *e = opaque;
    Error *err = NULL;
    Channel *ch = e->server ? channel_tls_server_new(e->inner, e->creds, NULL, &err)
                            : channel_tls_client_new(e->inner, e->creds, "localhost", &err);

    if (ch) {
        /* The client speaks first, then the server answers. */
        e->ok = e->server ? end_receive(e, ch) && end_send(e, ch)
                          : end_send(e, ch) && end_receive(e, ch);
        channel_unref(ch);
    }
    error_free(err);
    __atomic_store_n(&e->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Outcomes over all seeds: both ends ok, and faults applied. */
typedef struct Tally {
    unsigned both_ok, applied, failed_ends;
} Tally;

static void run_seed(guint32 seed, TLSCreds **cli_creds, TLSCreds **srv_creds, Tally *tally)
{
    GRand *rnd = g_rand_new_with_seed(seed);
    size_t len[2] = { g_rand_int_range(rnd, 0, 100000), g_rand_int_range(rnd, 0, 100000) };
    uint8_t *data[2] = { g_malloc(len[0] + 1), g_malloc(len[1] + 1) };
    int kind = seed % 2;                    /* 0: x509, 1: psk */
    Relay r = { .fault = g_rand_int_range(rnd, 0, 5), .dir = g_rand_int_range(rnd, 0, 2) };
    End e[2];
    GThread *th[3];
    int a[2], b[2];
    gint64 deadline = g_get_monotonic_time() + SEED_DEADLINE_US;

    for (int d = 0; d < 2; d++) {
        for (size_t i = 0; i < len[d]; i++) {
            data[d][i] = g_rand_int(rnd);
        }
    }
    /* Half the faults in the handshake's first few KiB, half anywhere. */
    r.pos = g_rand_boolean(rnd) ? g_rand_int_range(rnd, 0, 4096)
                                : g_rand_int_range(rnd, 0, len[r.dir] + 6000);
    r.rand = g_rand_new_with_seed(seed ^ 0x5a5a);
    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a), ==, 0);
    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, b), ==, 0);
    r.fd[0] = a[1];
    r.fd[1] = b[1];
    for (int s = 0; s < 2; s++) {
        e[s] = (End) { .server = s, .creds = s ? srv_creds[kind] : cli_creds[kind],
                       .inner = channel_socket_new(s ? b[0] : a[0]),
                       .out = data[s], .out_len = len[s], .in = data[!s], .in_len = len[!s],
                       .rand = g_rand_new_with_seed(seed * 2 + s) };
    }
    th[0] = g_thread_new("relay", relay_run, &r);
    th[1] = g_thread_new("client", end_run, &e[0]);
    th[2] = g_thread_new("server", end_run, &e[1]);
    while (!__atomic_load_n(&e[0].done, __ATOMIC_ACQUIRE) ||
           !__atomic_load_n(&e[1].done, __ATOMIC_ACQUIRE)) {
        if (g_get_monotonic_time() > deadline) {
            g_error("seed %u: an end hangs (fault %d dir %d pos %zu)", seed, r.fault, r.dir,
                    r.pos);
        }
        g_usleep(1000);
    }
    for (int i = 0; i < 3; i++) {
        g_thread_join(th[i]);
    }
    for (int s = 1; s >= 0; s--) {
        if (e[s].violation) {
            g_error("seed %u (%s, fault %d dir %d pos %zu): %s: %s", seed, kind ? "psk" : "x509",
                    r.fault, r.dir, r.pos, s ? "server" : "client", e[s].violation);
        }
        g_rand_free(e[s].rand);
    }
    if (!r.applied && !(e[0].ok && e[1].ok)) {
        g_error("seed %u: no fault, yet client %s, server %s", seed,
                e[0].ok ? "ok" : "failed", e[1].ok ? "ok" : "failed");
    }
    tally->both_ok += e[0].ok && e[1].ok;
    tally->applied += r.applied;
    tally->failed_ends += !e[0].ok + !e[1].ok;
    close(a[1]);
    close(b[1]);
    g_rand_free(r.rand);
    g_rand_free(rnd);
    g_free(data[0]);
    g_free(data[1]);
}

static void test_faults(void)
{
    static const char *const keys[] = { "qemu", "00112233445566778899aabbccddeeff", NULL };
    TLSTestPKI *pki = tls_test_pki_new();
    TLSTestCert sc = tls_test_cert_server(), cc = tls_test_cert_client();
    g_autofree char *sdir = tls_test_pki_dir(pki, "server", true, &sc);
    g_autofree char *cdir = tls_test_pki_dir(pki, "client", false, &cc);
    g_autofree char *pdir = tls_test_psk_dir(pki, "psk", keys);
    TLSCredsOptions o[4] = {
        { .type = "tls-creds-x509", .dir = cdir, .verify_peer = true, .sanity_check = true },
        { .type = "tls-creds-psk", .dir = pdir },
        { .type = "tls-creds-x509", .dir = sdir, .verify_peer = true, .sanity_check = true,
          .endpoint_server = true },
        { .type = "tls-creds-psk", .dir = pdir, .endpoint_server = true },
    };
    TLSCreds *cli[2], *srv[2];
    Tally tally = { 0 };
    const char *env = g_getenv("TLS_FAULT_SEEDS");
    guint32 n = env ? atoi(env) : SEEDS;

    for (int k = 0; k < 2; k++) {
        cli[k] = tls_creds_new(&o[k], &error_abort);
        srv[k] = tls_creds_new(&o[2 + k], &error_abort);
    }
    for (guint32 seed = 0; seed < n; seed++) {
        run_seed(seed, cli, srv, &tally);
    }
    g_test_message("%u seeds: %u with a fault, %u both ends ok, %u ends failed", n,
                   tally.applied, tally.both_ok, tally.failed_ends);
    /* Both outcomes must occur, or the faults or the relay are not doing their job. */
    if (n >= SEEDS) {
        g_assert_cmpuint(tally.both_ok, >, n / 10);
        g_assert_cmpuint(tally.failed_ends, >, n / 10);
    }
    for (int k = 0; k < 2; k++) {
        tls_creds_unref(cli[k]);
        tls_creds_unref(srv[k]);
    }
    tls_test_pki_free(pki);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/tls/faults/random", test_faults);
    return g_test_run();
}

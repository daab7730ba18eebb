/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for the TLS credentials (crypto/) and the TLS row
 * (io/channel-tls.c), client and server in two threads over a socketpair,
 * certificates made in-process (tls-certs.c):
 *
 * (loading the credentials is test-tls-creds.c's)
 * - data both ways: large, odd-sized and many small iovecs, pending(),
 *   non-blocking reads, close_notify as EOF and a cut as an error;
 * - refusals, each on the side that checks and seen by the other: unknown
 *   CA, expired, not yet valid, wrong host name, a client without a
 *   certificate, a PSK with the wrong key, an identity authz denies;
 * - psk and anon sessions; a handshake cancelled from a third thread.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "io/channel-tls.h"
#include "tls-certs.h"
#include <poll.h>
#include <sys/socket.h>

#define WAIT_US (10 * G_USEC_PER_SEC)

/* ---- a fake authz: one allowed identity, and what it was asked ---- */

struct Authz {
    const char *allowed;
    char *asked;                /* the identity of the last question */
};

bool authz_is_allowed(Authz *a, const char *identity, Error **errp)
{
    g_free(a->asked);
    a->asked = g_strdup(identity);
    if (g_strcmp0(a->allowed, identity)) {
        error_setg(errp, "TLS x509 authz check for %s is denied", identity);
        return false;
    }
    return true;
}

/* ---- fixtures ---- */

static TLSTestPKI *pki;

static TLSCreds *creds_kind(const char *type, const char *dir, bool server, const char *user)
{
    TLSCredsOptions o = { .type = type, .id = "tls0", .dir = dir, .endpoint_server = server,
                          .verify_peer = true, .username = user };

    return tls_creds_new(&o, &error_abort);
}

/* A good server and client directory, made once. */
static char *good_server_dir, *good_client_dir;

typedef struct Side {
    TLSCreds *creds;
    bool server;
    const char *hostname;
    Authz *authz;
    Channel *inner;             /* given to the constructor */
    Channel *ch;                /* what it returned */
    Error *err;
} Side;

static gpointer side_run(gpointer opaque)
{
    Side *s = opaque;

    s->ch = s->server ? channel_tls_server_new(s->inner, s->creds, s->authz, &s->err)
                      : channel_tls_client_new(s->inner, s->creds, s->hostname, &s->err);
    return NULL;
}

/* Handshakes @cli and @srv over a socketpair, the server in a thread of its own. */
static void handshake(Side *cli, Side *srv)
{
    int sv[2];
    GThread *th;

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
    cli->inner = channel_socket_new(sv[0]);
    srv->inner = channel_socket_new(sv[1]);
    srv->server = true;
    th = g_thread_new("tls-server", side_run, srv);
    side_run(cli);
    g_thread_join(th);
}

static void side_clear(Side *s)
{
    channel_unref(s->ch);
    tls_creds_unref(s->creds);
    error_free(s->err);
}

/* A good x509 pair, both verifying, handshaken. */
static void good_pair(Side *cli, Side *srv)
{
    *cli = (Side) { .creds = tls_test_creds_x509_ok(good_client_dir, false, true, true),
                    .hostname = "localhost" };
    *srv = (Side) { .creds = tls_test_creds_x509_ok(good_server_dir, true, true, true) };
    handshake(cli, srv);
    g_assert_null(cli->err);
    g_assert_null(srv->err);
    g_assert_nonnull(cli->ch);
    g_assert_nonnull(srv->ch);
}

static void fill(uint8_t *b, size_t n, guint32 seed)
{
    GRand *r = g_rand_new_with_seed(seed);

    for (size_t i = 0; i < n; i++) {
        b[i] = g_rand_int(r);
    }
    g_rand_free(r);
}

/* ---- helpers ---- */

static void assert_err(Error *err, const char *text)
{
    g_assert_nonnull(err);
    if (!strstr(error_get_pretty(err), text)) {
        g_error("expected \"%s\" in \"%s\"", text, error_get_pretty(err));
    }
}

/* ---- data ---- */

typedef struct Xfer {
    Channel *ch;
    uint8_t *buf;
    size_t len;
    int ret;
} Xfer;

static gpointer reader_all(gpointer opaque)
{
    Xfer *x = opaque;

    x->ret = channel_read_all(x->ch, x->buf, x->len);
    return NULL;
}

/* Sends @len bytes as @niov iovecs of odd sizes from @from, checks them at @to. */
static void send_check(Channel *from, Channel *to, size_t len, int niov, guint32 seed)
{
    g_autofree uint8_t *src = g_malloc(len);
    g_autofree uint8_t *dst = g_malloc0(len);
    g_autofree struct iovec *iov = g_new(struct iovec, niov);
    Xfer x = { .ch = to, .buf = dst, .len = len };
    GRand *r = g_rand_new_with_seed(seed);
    size_t off = 0;
    GThread *th;
    int n = 0;

    fill(src, len, seed);
    for (; n < niov - 1 && off < len; n++) {
        size_t want = g_rand_int_range(r, 0, 2 * len / niov + 2);   /* MIN evaluates twice */
        size_t l = MIN(len - off, want);

        iov[n] = (struct iovec) { src + off, l };
        off += l;
    }
    iov[n++] = (struct iovec) { src + off, len - off };
    g_rand_free(r);
    th = g_thread_new("reader", reader_all, &x);
    g_assert_cmpint(channel_writev_all(from, iov, n), ==, 0);
    g_thread_join(th);
    g_assert_cmpint(x.ret, ==, 0);
    g_assert_true(memcmp(src, dst, len) == 0);
}

static void test_data(void)
{
    Side cli, srv;

    good_pair(&cli, &srv);
    g_assert_true(channel_has_feature(cli.ch, CHANNEL_FEATURE_DUPLEX));
    g_assert_false(channel_has_feature(cli.ch, CHANNEL_FEATURE_FD_PASS));
    g_assert_true(g_str_has_prefix(channel_peer(cli.ch), "tls over "));
    send_check(cli.ch, srv.ch, 1, 1, 1);
    send_check(cli.ch, srv.ch, 8 << 20, 1, 2);              /* one big iovec */
    send_check(srv.ch, cli.ch, 3 << 20, 7, 3);              /* odd sizes */
    send_check(cli.ch, srv.ch, 1 << 20, 1000, 4);           /* many small ones */
    send_check(srv.ch, cli.ch, 16384 * 3 + 1, 3, 5);        /* around record boundaries */
    send_check(cli.ch, srv.ch, 4096 * 256 + 13 * 256, 512, 6); /* headers + pages */
    side_clear(&cli);
    side_clear(&srv);
}

typedef struct Writer {
    Channel *ch;
    const uint8_t *buf;
    size_t len;
    int ret;
} Writer;

static gpointer writer_all(gpointer opaque)
{
    Writer *w = opaque;

    w->ret = channel_write_all(w->ch, w->buf, w->len);
    return NULL;
}

/*
 * Full duplex: each end reads in one thread while another writes, as the
 * return path reads the main stream while mig/src writes it (gnutls
 * allows one sender and one receiver on a session; TSan checks the row).
 */
static void test_duplex(void)
{
    enum { LEN = 4 << 20 };
    g_autofree uint8_t *out0 = g_malloc(LEN), *out1 = g_malloc(LEN);
    g_autofree uint8_t *in0 = g_malloc0(LEN), *in1 = g_malloc0(LEN);
    Side cli, srv;
    Writer w[2];
    Xfer x[2];
    GThread *th[4];

    good_pair(&cli, &srv);
    fill(out0, LEN, 12);
    fill(out1, LEN, 13);
    w[0] = (Writer) { cli.ch, out0, LEN };
    w[1] = (Writer) { srv.ch, out1, LEN };
    x[0] = (Xfer) { .ch = srv.ch, .buf = in0, .len = LEN };
    x[1] = (Xfer) { .ch = cli.ch, .buf = in1, .len = LEN };
    th[0] = g_thread_new("w0", writer_all, &w[0]);
    th[1] = g_thread_new("w1", writer_all, &w[1]);
    th[2] = g_thread_new("r0", reader_all, &x[0]);
    th[3] = g_thread_new("r1", reader_all, &x[1]);
    for (int i = 0; i < 4; i++) {
        g_thread_join(th[i]);
    }
    g_assert_cmpint(w[0].ret, ==, 0);
    g_assert_cmpint(w[1].ret, ==, 0);
    g_assert_cmpint(x[0].ret, ==, 0);
    g_assert_cmpint(x[1].ret, ==, 0);
    g_assert_true(memcmp(out0, in0, LEN) == 0);
    g_assert_true(memcmp(out1, in1, LEN) == 0);
    side_clear(&cli);
    side_clear(&srv);
}

/*
 * Non-blocking writes into a small socket buffer: after -EAGAIN (or a
 * short count) gnutls holds an encrypted record, and the retry with the
 * same bytes must send it once, neither lost nor doubled.
 */
static void test_nonblock_write(void)
{
    enum { LEN = 2 << 20 };
    g_autofree uint8_t *src = g_malloc(LEN), *dst = g_malloc0(LEN);
    int small = 16384;
    Xfer x;
    size_t off = 0;
    unsigned again = 0;
    GThread *th;
    Side cli, srv;

    good_pair(&cli, &srv);
    setsockopt(channel_fd(cli.ch), SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
    setsockopt(channel_fd(srv.ch), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    fill(src, LEN, 14);
    x = (Xfer) { .ch = srv.ch, .buf = dst, .len = LEN };
    th = g_thread_new("reader", reader_all, &x);
    while (off < LEN) {
        struct iovec iov[2] = { { src + off, MIN(LEN - off, 5000) },
                                { src + off + MIN(LEN - off, 5000),
                                  LEN - off - MIN(LEN - off, 5000) } };
        ssize_t n = channel_writev(cli.ch, iov, 2, CHANNEL_NONBLOCK);

        if (n == -EAGAIN) {
            struct pollfd pfd = { .fd = channel_fd(cli.ch), .events = POLLOUT };

            again++;
            poll(&pfd, 1, 100);
            continue;
        }
        g_assert_cmpint(n, >, 0);
        off += n;
    }
    g_thread_join(th);
    g_assert_cmpint(x.ret, ==, 0);
    g_assert_cmpuint(again, >, 0);          /* the path was taken */
    g_assert_true(memcmp(src, dst, LEN) == 0);
    side_clear(&cli);
    side_clear(&srv);
}

static void test_pending_nonblock(void)
{
    uint8_t out[100], in[100];
    struct iovec iov = { in, 10 };
    Side cli, srv;

    good_pair(&cli, &srv);
    /* Nothing sent: a non-blocking read says so rather than wait. */
    g_assert_cmpint(channel_readv(srv.ch, &iov, 1, CHANNEL_NONBLOCK), ==, -EAGAIN);
    g_assert_cmpuint(channel_pending(srv.ch), ==, 0);
    fill(out, sizeof(out), 7);
    g_assert_cmpint(channel_write_all(cli.ch, out, sizeof(out)), ==, 0);
    /* One record of 100: a read of 10 leaves 90 decrypted, which poll cannot see. */
    g_assert_cmpint(channel_readv(srv.ch, &iov, 1, 0), ==, 10);
    g_assert_cmpuint(channel_pending(srv.ch), ==, 90);
    iov = (struct iovec) { in + 10, 90 };
    g_assert_cmpint(channel_readv(srv.ch, &iov, 1, CHANNEL_NONBLOCK), ==, 90);
    g_assert_cmpuint(channel_pending(srv.ch), ==, 0);
    g_assert_true(memcmp(in, out, sizeof(out)) == 0);
    g_assert_null(channel_tls_last_error(srv.ch));
    side_clear(&cli);
    side_clear(&srv);
}

static void test_bye_eof(void)
{
    uint8_t b[4] = { 1, 2, 3, 4 }, in[8];
    Side cli, srv;

    good_pair(&cli, &srv);
    g_assert_cmpint(channel_write_all(cli.ch, b, sizeof(b)), ==, 0);
    g_assert_cmpint(channel_tls_bye(cli.ch), ==, 0);
    g_assert_cmpint(channel_read_all(srv.ch, in, 4), ==, 0);
    /* close_notify: a clean end of file, no error. */
    g_assert_cmpint(channel_read_all(srv.ch, in, 4), ==, 1);
    g_assert_null(channel_tls_last_error(srv.ch));
    /* Writing after the bye is refused. */
    g_assert_cmpint(channel_write_all(cli.ch, b, 1), ==, -EPIPE);
    side_clear(&cli);
    side_clear(&srv);
}

static void test_premature_eof(void)
{
    uint8_t in[8];
    Side cli, srv;

    good_pair(&cli, &srv);
    /* The connection cut under the client's TLS: no close_notify. */
    shutdown(channel_fd(cli.ch), SHUT_WR);
    g_assert_cmpint(channel_read_all(srv.ch, in, 4), ==, -ECONNRESET);
    g_assert_cmpstr(channel_tls_last_error(srv.ch), ==,
                    "Cannot read from TLS channel: The TLS connection was non-properly "
                    "terminated.");
    side_clear(&cli);
    side_clear(&srv);
}

static void test_unref_sends_bye(void)
{
    uint8_t in[8];
    Side cli, srv;

    good_pair(&cli, &srv);
    /* A stream that ended well: the last unref says so. */
    channel_unref(cli.ch);
    cli.ch = NULL;
    g_assert_cmpint(channel_read_all(srv.ch, in, 4), ==, 1);
    side_clear(&cli);
    side_clear(&srv);
}

static void test_own_shutdown(void)
{
    uint8_t in[8];
    Side cli, srv;

    good_pair(&cli, &srv);
    /* Our own shutdown is an end of file, not a cut. */
    channel_shutdown(srv.ch, CHANNEL_SHUT_READ);
    g_assert_cmpint(channel_read_all(srv.ch, in, 4), ==, 1);
    g_assert_null(channel_tls_last_error(srv.ch));
    side_clear(&cli);
    side_clear(&srv);
}

typedef struct Later {
    Channel *ch;
    gulong delay_us;
} Later;

static gpointer shutdown_later(gpointer opaque)
{
    Later *l = opaque;

    g_usleep(l->delay_us);
    channel_shutdown(l->ch, CHANNEL_SHUT_BOTH);
    return NULL;
}

static void test_shutdown_wakes_reader(void)
{
    Later l = { .delay_us = 100000 };
    uint8_t in[8];
    gint64 t0;
    GThread *th;
    Side cli, srv;

    good_pair(&cli, &srv);
    l.ch = srv.ch;
    th = g_thread_new("shut", shutdown_later, &l);
    t0 = g_get_monotonic_time();
    g_assert_cmpint(channel_read_all(srv.ch, in, 4), ==, 1);
    g_assert_cmpint(g_get_monotonic_time() - t0, <, WAIT_US);
    g_thread_join(th);
    side_clear(&cli);
    side_clear(&srv);
}

/* ---- refusals ---- */

/* The other side's first read after it thought the handshake was fine. */
static void assert_read_fails(Channel *ch)
{
    uint8_t b;

    g_assert_nonnull(ch);
    g_assert_cmpint(channel_read_all(ch, &b, 1), <, 0);
    g_assert_true(g_str_has_prefix(channel_tls_last_error(ch), "Cannot read from TLS channel: "));
}

/* Client checks the server's certificate, made from @leaf. */
static void refuse_server(const char *name, TLSTestCert leaf, const char *text)
{
    g_autofree char *dir = tls_test_pki_dir(pki, name, true, &leaf);
    Side cli = { .creds = tls_test_creds_x509_ok(good_client_dir, false, true, true),
                 .hostname = "localhost" };
    Side srv = { .creds = tls_test_creds_x509_ok(dir, true, true, false) };

    handshake(&cli, &srv);
    g_assert_null(cli.ch);
    assert_err(cli.err, text);
    g_assert_null(srv.err);
    assert_read_fails(srv.ch);
    side_clear(&cli);
    side_clear(&srv);
}

/* Server checks the client's certificate, made from @leaf (NULL: none). */
static void refuse_client(const char *name, const TLSTestCert *leaf, const char *text)
{
    g_autofree char *dir = tls_test_pki_dir(pki, name, false, leaf);
    Side cli = { .creds = tls_test_creds_x509_ok(dir, false, true, false), .hostname = "localhost" };
    Side srv = { .creds = tls_test_creds_x509_ok(good_server_dir, true, true, true) };

    handshake(&cli, &srv);
    g_assert_null(srv.ch);
    assert_err(srv.err, text);
    /* The client finished first (TLS 1.3): it learns from the alert. */
    if (cli.ch) {
        assert_read_fails(cli.ch);
    } else {
        g_assert_nonnull(cli.err);
    }
    side_clear(&cli);
    side_clear(&srv);
}

static void test_refuse_server(void)
{
    TLSTestCert s = tls_test_cert_server();

    s.other_ca = true;
    refuse_server("srv-other-ca", s, "The certificate hasn't got a known issuer");
    s = tls_test_cert_server();
    s.not_after = -60;
    refuse_server("srv-expired", s, "The certificate has expired");
    s = tls_test_cert_server();
    s.not_before = 3600;
    refuse_server("srv-future", s, "The certificate is not yet activated");
    s = tls_test_cert_server();
    s.cn = s.dns = "elsewhere.example";
    s.ip = "10.9.8.7";
    refuse_server("srv-wrong-host", s, "Certificate does not match the hostname localhost");
}

static void test_refuse_client(void)
{
    TLSTestCert c = tls_test_cert_client();

    /*
     * gnutls's client offers only a certificate from a CA the server
     * names, so one from another CA is not sent at all: QEMU says the same.
     */
    c.other_ca = true;
    refuse_client("cli-other-ca", &c, "Verify failed: No certificate was found.");
    c = tls_test_cert_client();
    c.not_after = -60;
    refuse_client("cli-expired", &c, "The certificate has expired");
    c = tls_test_cert_client();
    c.not_before = 3600;
    refuse_client("cli-future", &c, "The certificate is not yet activated");
    refuse_client("cli-none", NULL, "No certificate was found");
}

static void test_verify_off(void)
{
    TLSTestCert s = tls_test_cert_server();
    g_autofree char *dir = NULL;
    Side cli, srv;

    /* verify-peer=off on the client: a server from another CA gets through. */
    s.other_ca = true;
    dir = tls_test_pki_dir(pki, "srv-other-ca-unverified", true, &s);
    cli = (Side) { .creds = tls_test_creds_x509_ok(good_client_dir, false, false, true),
                   .hostname = "localhost" };
    srv = (Side) { .creds = tls_test_creds_x509_ok(dir, true, false, false) };
    handshake(&cli, &srv);
    g_assert_null(cli.err);
    g_assert_null(srv.err);
    send_check(cli.ch, srv.ch, 1000, 3, 8);
    side_clear(&cli);
    side_clear(&srv);
}

static void test_authz(void)
{
    Authz deny = { .allowed = "CN=someone else" };
    Authz allow = { .allowed = NULL };
    Side cli, srv;

    cli = (Side) { .creds = tls_test_creds_x509_ok(good_client_dir, false, true, true),
                   .hostname = "127.0.0.1" };
    srv = (Side) { .creds = tls_test_creds_x509_ok(good_server_dir, true, true, true), .authz = &deny };
    handshake(&cli, &srv);
    g_assert_null(srv.ch);
    assert_err(srv.err, "TLS x509 authz check for");
    /* The identity is the client's distinguished name. */
    g_assert_nonnull(strstr(deny.asked, "CN=client"));
    assert_read_fails(cli.ch);
    allow.allowed = deny.asked;
    side_clear(&cli);
    side_clear(&srv);

    cli = (Side) { .creds = tls_test_creds_x509_ok(good_client_dir, false, true, true),
                   .hostname = "127.0.0.1" };
    srv = (Side) { .creds = tls_test_creds_x509_ok(good_server_dir, true, true, true), .authz = &allow };
    handshake(&cli, &srv);
    g_assert_null(srv.err);
    send_check(srv.ch, cli.ch, 5000, 2, 9);
    side_clear(&cli);
    side_clear(&srv);
    g_free(allow.asked);
    g_free(deny.asked);
}

static void test_endpoint_mismatch(void)
{
    Side cli = { .creds = tls_test_creds_x509_ok(good_server_dir, true, true, true) };
    Side srv = { .creds = tls_test_creds_x509_ok(good_server_dir, true, true, true) };
    int sv[2];

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
    close(sv[1]);
    cli.inner = channel_socket_new(sv[0]);
    side_run(&cli);
    g_assert_null(cli.ch);
    assert_err(cli.err, "Expecting TLS credentials with a client endpoint");
    side_clear(&cli);
    side_clear(&srv);
}

/* ---- psk, anon ---- */

static void test_psk(void)
{
    static const char *const good[] = { "qemu", "0123456789abcdef0123456789abcdef",
                                        "other", "ffeeddcc", NULL };
    static const char *const bad[] = { "qemu", "00112233445566778899aabbccddeeff", NULL };
    g_autofree char *sdir = tls_test_psk_dir(pki, "psk-server", good);
    g_autofree char *cdir = tls_test_psk_dir(pki, "psk-client", good);
    g_autofree char *bdir = tls_test_psk_dir(pki, "psk-bad", bad);
    Authz allow = { .allowed = "qemu" };
    TLSCredsOptions o = { .type = "tls-creds-psk", .dir = cdir, .username = "nobody" };
    Error *err = NULL;
    Side cli, srv;

    cli = (Side) { .creds = creds_kind("tls-creds-psk", cdir, false, NULL) };
    srv = (Side) { .creds = creds_kind("tls-creds-psk", sdir, true, NULL), .authz = &allow };
    handshake(&cli, &srv);
    g_assert_null(cli.err);
    g_assert_null(srv.err);
    g_assert_cmpstr(allow.asked, ==, "qemu");
    send_check(cli.ch, srv.ch, 70000, 9, 10);
    side_clear(&cli);
    side_clear(&srv);
    g_free(allow.asked);

    /* The wrong key: neither side gets a session. */
    cli = (Side) { .creds = creds_kind("tls-creds-psk", bdir, false, NULL) };
    srv = (Side) { .creds = creds_kind("tls-creds-psk", sdir, true, NULL) };
    handshake(&cli, &srv);
    g_assert_null(cli.ch);
    g_assert_null(srv.ch);
    assert_err(cli.err, "TLS handshake failed: ");
    assert_err(srv.err, "TLS handshake failed: ");
    side_clear(&cli);
    side_clear(&srv);

    g_assert_null(tls_creds_new(&o, &err));
    assert_err(err, "Username nobody not found in pre-shared key file");
    error_free(err);
}

static void test_anon(void)
{
    Side cli = { .creds = creds_kind("tls-creds-anon", NULL, false, NULL) };
    Side srv = { .creds = creds_kind("tls-creds-anon", NULL, true, NULL) };

    handshake(&cli, &srv);
    g_assert_null(cli.err);
    g_assert_null(srv.err);
    g_assert_cmpint(tls_creds_kind(cli.creds), ==, TLS_CREDS_ANON);
    send_check(srv.ch, cli.ch, 100000, 4, 11);
    side_clear(&cli);
    side_clear(&srv);
}

/* ---- cancel ---- */

static void test_cancel_handshake(void)
{
    Side srv = { .creds = tls_test_creds_x509_ok(good_server_dir, true, true, true), .server = true };
    Later l = { .delay_us = 100000 };
    gint64 t0;
    GThread *th;
    int sv[2];

    /* A client that connects and says nothing: the server waits in its handshake. */
    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
    srv.inner = channel_socket_new(sv[1]);
    l.ch = channel_ref(srv.inner);
    th = g_thread_new("cancel", shutdown_later, &l);
    t0 = g_get_monotonic_time();
    side_run(&srv);
    g_assert_cmpint(g_get_monotonic_time() - t0, <, WAIT_US);
    g_thread_join(th);
    g_assert_null(srv.ch);
    assert_err(srv.err, "TLS handshake cancelled");
    channel_unref(l.ch);
    close(sv[0]);
    side_clear(&srv);
}

int main(int argc, char **argv)
{
    TLSTestCert s = tls_test_cert_server();
    TLSTestCert c = tls_test_cert_client();
    int ret;

    g_test_init(&argc, &argv, NULL);
    pki = tls_test_pki_new();
    good_server_dir = tls_test_pki_dir(pki, "server", true, &s);
    good_client_dir = tls_test_pki_dir(pki, "client", false, &c);
    g_test_add_func("/tls/data/both-ways", test_data);
    g_test_add_func("/tls/data/duplex", test_duplex);
    g_test_add_func("/tls/data/pending-nonblock", test_pending_nonblock);
    g_test_add_func("/tls/data/nonblock-write", test_nonblock_write);
    g_test_add_func("/tls/eof/bye", test_bye_eof);
    g_test_add_func("/tls/eof/premature", test_premature_eof);
    g_test_add_func("/tls/eof/unref-sends-bye", test_unref_sends_bye);
    g_test_add_func("/tls/eof/own-shutdown", test_own_shutdown);
    g_test_add_func("/tls/shutdown/wakes-reader", test_shutdown_wakes_reader);
    g_test_add_func("/tls/refuse/server-cert", test_refuse_server);
    g_test_add_func("/tls/refuse/client-cert", test_refuse_client);
    g_test_add_func("/tls/refuse/authz", test_authz);
    g_test_add_func("/tls/refuse/endpoint", test_endpoint_mismatch);
    g_test_add_func("/tls/verify-off", test_verify_off);
    g_test_add_func("/tls/psk", test_psk);
    g_test_add_func("/tls/anon", test_anon);
    g_test_add_func("/tls/cancel/handshake", test_cancel_handshake);
    ret = g_test_run();
    g_free(good_server_dir);
    g_free(good_client_dir);
    tls_test_pki_free(pki);
    return ret;
}

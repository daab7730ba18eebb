/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz target: the TLS row's record path after a good handshake
 * (io/channel-tls.c). Per input, our row (a PSK server) handshakes with a
 * raw gnutls peer over a socketpair; the input then says what the peer
 * puts on the wire, op by op:
 *
 *   0 RECORD  le16 length (mod 2048), payload: one real record
 *   1 RAW     length byte, bytes: written as they are
 *   2 FLIP    le16 offset, mask: flips bits in the next record's bytes
 *   3 TRUNC   le16 length: cuts the next record to that many bytes
 *   4 BYE     a close_notify
 *   5 ALERT   description byte: a fatal alert
 *   6 BIG     fill byte: a 16 KiB record
 *   7 KEYUPD  a TLS 1.3 KeyUpdate
 *
 * and closes. Our reader reads until end of file or an error. Real
 * records carry a MAC under keys made for this session, so mutated ones
 * and raw bytes exercise the header and length checks and the refusal
 * paths, real ones the decryption and the partial reads.
 *
 * Checked: what the reader gets is a prefix of the real records'
 * payloads in order (nothing forged, nothing reordered); a clean end of
 * file only after a close_notify; with no mutating op, exactly the
 * payloads before the first close_notify, then EOF (or -ECONNRESET
 * without one); the error text is printable.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "io/channel-tls.h"
#include "fuzz.h"
#include <sys/socket.h>

#define PSK_HEX "8a2f55d19c0e4b7da36c11f0e9b2d4c7"
#define MAX_OUT (1 << 20)

bool authz_is_allowed(Authz *a, const char *identity, Error **errp)
{
    abort();                    /* no authz on this server */
}

static TLSCreds *server_creds;
static gnutls_psk_client_credentials_t peer_creds;
static char *psk_dir;

typedef struct Peer {
    int fd;
    const uint8_t *ops;
    size_t ops_len;
    gnutls_session_t s;
    GByteArray *capture;        /* non-NULL: push appends here instead of sending */
    GByteArray *expect;         /* real records' payloads, in order */
    bool mutated;               /* a RAW, FLIP, TRUNC or ALERT op ran */
    bool bye;                   /* a close_notify went out */
    bool handshake_ok;
    int keyupdates;             /* KEYUPD ops sent */
} Peer;

static ssize_t peer_push(gnutls_transport_ptr_t p, const void *buf, size_t len)
{
    Peer *peer = p;

    if (peer->capture) {
        g_byte_array_append(peer->capture, buf, len);
        return len;
    }
    return send(peer->fd, buf, len, MSG_NOSIGNAL);
}

static ssize_t peer_pull(gnutls_transport_ptr_t p, void *buf, size_t len)
{
    return recv(((Peer *)p)->fd, buf, len, 0);
}

static size_t take(const uint8_t **ops, size_t *left, size_t n, uint8_t *out)
{
    n = MIN(n, *left);
    memcpy(out, *ops, n);
    *ops += n;
    *left -= n;
    return n;
}

static unsigned take16(const uint8_t **ops, size_t *left)
{
    uint8_t b[2] = { 0, 0 };

    take(ops, left, 2, b);
    return b[0] | b[1] << 8;
}

/* Runs one op into @out: the bytes the peer's record functions produced, mutated as asked. */
static void peer_ops(Peer *p, GByteArray *out)
{
    const uint8_t *ops = p->ops;
    size_t left = p->ops_len;
    int flip_off = -1, flip_mask = 0, trunc = -1;

    while (left && out->len < MAX_OUT) {
        uint8_t op = *ops++ % 8, buf[2048];
        size_t n;

        left--;
        g_byte_array_set_size(p->capture, 0);
        switch (op) {
        case 0:
            n = take(&ops, &left, take16(&ops, &left) % sizeof(buf), buf);
            if (n && !p->bye && gnutls_record_send(p->s, buf, n) == (ssize_t)n) {
                g_byte_array_append(p->expect, buf, n);
            }
            break;
        case 1:
            n = take(&ops, &left, 1, buf) ? buf[0] : 0;
            n = take(&ops, &left, n, buf);
            g_byte_array_append(out, buf, n);
            p->mutated |= n > 0;
            break;
        case 2:
            flip_off = take16(&ops, &left);
            flip_mask = take(&ops, &left, 1, buf) ? buf[0] | 1 : 1;
            continue;
        case 3:
            trunc = take16(&ops, &left);
            continue;
        case 4:
            if (!p->bye && gnutls_bye(p->s, GNUTLS_SHUT_WR) == 0) {
                p->bye = true;
            }
            break;
        case 5:
            if (!p->bye) {
                gnutls_alert_send(p->s, GNUTLS_AL_FATAL,
                                  take(&ops, &left, 1, buf) ? buf[0] : 0);
                p->mutated = true;
            }
            break;
        case 6: {
            static uint8_t big[16384];

            memset(big, take(&ops, &left, 1, buf) ? buf[0] : 0, sizeof(big));
            if (!p->bye && gnutls_record_send(p->s, big, sizeof(big)) == sizeof(big)) {
                g_byte_array_append(p->expect, big, sizeof(big));
            }
            break;
        }
        case 7:
            if (!p->bye) {
                gnutls_session_key_update(p->s, 0);
                p->keyupdates++;
            }
            break;
        }
        /* A pending FLIP or TRUNC applies to what this op produced. */
        if (flip_off >= 0 && p->capture->len) {
            p->capture->data[flip_off % p->capture->len] ^= flip_mask;
            p->mutated = true;
            flip_off = -1;
        }
        if (trunc >= 0 && p->capture->len) {
            g_byte_array_set_size(p->capture, trunc % p->capture->len);
            p->mutated = true;
            trunc = -1;
        }
        g_byte_array_append(out, p->capture->data, p->capture->len);
    }
}

static gpointer peer_run(gpointer opaque)
{
    Peer *p = opaque;
    GByteArray *out = g_byte_array_new();
    int r;

    gnutls_init(&p->s, GNUTLS_CLIENT | GNUTLS_NO_TICKETS);
    gnutls_priority_set_direct(p->s, "NORMAL:+ECDHE-PSK:+DHE-PSK:+PSK", NULL);
    gnutls_credentials_set(p->s, GNUTLS_CRD_PSK, peer_creds);
    gnutls_transport_set_ptr(p->s, p);
    gnutls_transport_set_push_function(p->s, peer_push);
    gnutls_transport_set_pull_function(p->s, peer_pull);
    do {
        r = gnutls_handshake(p->s);
    } while (r < 0 && !gnutls_error_is_fatal(r));
    p->handshake_ok = r == 0;
    if (p->handshake_ok) {
        p->capture = g_byte_array_new();
        peer_ops(p, out);
        for (size_t off = 0; off < out->len;) {
            ssize_t n = send(p->fd, out->data + off, out->len - off, MSG_NOSIGNAL);

            if (n <= 0) {
                break;          /* our reader gave up: fine */
            }
            off += n;
        }
        g_byte_array_free(p->capture, true);
    }
    shutdown(p->fd, SHUT_WR);
    g_byte_array_free(out, true);
    return NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    g_autofree char *keys = NULL;
    gnutls_datum_t key = { (unsigned char *)PSK_HEX, strlen(PSK_HEX) };
    TLSCredsOptions o = { .type = "tls-creds-psk", .id = "fuzz", .endpoint_server = true };

    psk_dir = g_dir_make_tmp("fuzz-tls-XXXXXX", NULL);
    keys = g_build_filename(psk_dir, "keys.psk", NULL);
    if (!psk_dir || !g_file_set_contents(keys, "qemu:" PSK_HEX "\n", -1, NULL)) {
        abort();
    }
    o.dir = psk_dir;
    server_creds = tls_creds_new(&o, &error_abort);
    /* The keys are in memory now; the server reads the file at each handshake. */
    gnutls_psk_allocate_client_credentials(&peer_creds);
    gnutls_psk_set_client_credentials(peer_creds, "qemu", &key, GNUTLS_PSK_KEY_HEX);
    return 0;
}

static void assert_printable(const char *msg)
{
    for (const char *c = msg; *c; c++) {
        if (*c < 0x20 || *c > 0x7e) {
            fprintf(stderr, "unprintable error text: %s\n", msg);
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Peer p = { .ops = data, .ops_len = size, .expect = g_byte_array_new() };
    GByteArray *got = g_byte_array_new();
    Channel *ch;
    GThread *th;
    ssize_t n = 0;
    int sv[2];

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        abort();
    }
    p.fd = sv[0];
    th = g_thread_new("peer", peer_run, &p);
    ch = channel_tls_server_new(channel_socket_new(sv[1]), server_creds, NULL, NULL);
    if (!ch) {
        abort();                /* a good handshake is the target's premise */
    }
    for (;;) {
        uint8_t buf[5000];
        struct iovec iov = { buf, 1 + got->len % sizeof(buf) };    /* odd sizes */

        n = channel_readv(ch, &iov, 1, 0);
        if (n == -EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        g_byte_array_append(got, buf, n);
    }
    g_thread_join(th);
    assert(p.handshake_ok);
    /* Nothing forged, nothing reordered. */
    assert(got->len <= p.expect->len);
    assert(!got->len || !memcmp(got->data, p.expect->data, got->len));
    if (n == 0) {
        assert(p.bye);          /* a clean end only after a close_notify */
    } else {
        assert(channel_tls_last_error(ch));
        assert_printable(channel_tls_last_error(ch));
    }
    /*
     * A burst of KeyUpdates is a flood gnutls refuses ("Too many handshake
     * packets have been received"): a refusal, not lost data.
     */
    if (n < 0 && p.keyupdates > 1 &&
        strstr(channel_tls_last_error(ch), "Too many handshake packets")) {
        p.mutated = true;
    }
    if (!p.mutated && p.expect->len < MAX_OUT / 2) {
        /* Clean input: every payload, then the end the peer chose. */
        assert(got->len == p.expect->len);
        assert(p.bye ? n == 0 : n == -ECONNRESET);
    }
    channel_unref(ch);
    close(sv[0]);
    gnutls_deinit(p.s);
    g_byte_array_free(got, true);
    g_byte_array_free(p.expect, true);
    return 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The TLS row (include/io/channel-tls.h): GnuTLS's record layer over
 * another channel, the handshake run blocking in the caller's thread.
 * docs/devel/tls.md has the whole story.
 *
 * Invariant: a reader gets exactly the plaintext the peer's row wrote, in
 * order, or an error (never bytes that did not authenticate, never a
 * silent truncation); and no thread stays blocked in the row once the
 * channel (or its inner channel) is shut down.
 *
 * Why it holds:
 * 1. Every byte a read returns comes out of gnutls_record_recv, which
 *    returns a record's plaintext only once its AEAD tag verified, in
 *    sequence-number order. Reads go straight into the caller's iovec;
 *    the only plaintext kept is gnutls's remainder of a record larger
 *    than the read, which pending() reports.
 * 2. End of file is reported only after the peer's close_notify (gnutls
 *    returns 0), or when we shut the channel down ourselves. An EOF on
 *    the inner channel without it is -ECONNRESET: an attacker who cuts
 *    the TCP connection cannot make a truncated stream look complete.
 * 3. The row blocks only inside the inner channel (pull, push, and the
 *    pull_timeout's poll in 100 ms slices that look at the shut bits), and
 *    the shutdown hook shuts the inner channel down, whose own contract
 *    wakes those; the core then turns what the row returns into EOF or
 *    -EPIPE. Shutdown never calls gnutls, so it is safe against a thread
 *    inside gnutls_record_send/recv.
 * 4. One reader and one writer may be inside gnutls at once, which gnutls
 *    allows on a session (one thread sending, one receiving). The gnutls
 *    we build on answers a TLS 1.3 key update on its next send, not inside
 *    the receive; push_lock keeps the inner channel at one writer at a
 *    time should a version or an alert path ever write from a receive.
 *    The transport's errors go through the thread's errno, never
 *    gnutls_transport_set_errno() (one field per session, raced on).
 *
 * Writes: the plaintext of a writev (a QEMUFile flush: record headers and
 * 4 KiB pages) is gathered into full 16 KiB records in a buffer the row
 * owns (no allocation per call); a part of one iovec that fills a record
 * alone is sent from the caller's memory. Each record goes out in one
 * vectored write of gnutls's header and ciphertext.
 *
 * Non-blocking writes follow gnutls's rule: after -EAGAIN (or a short
 * count), the record gnutls took is already encrypted and queued, so the
 * next writev must start with the same bytes; it then flushes that record
 * and reports its length.
 *
 * tests/unit/test-channel-tls.c checks each rule; test-channel-tls-faults
 * drives the handshake and the records through a corrupting relay.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "io/channel-tls.h"
#include "channel-row.h"
#include <poll.h>

/* TLS's largest record payload (RFC 8446 5.1). */
#define TLS_RECORD_MAX 16384
/*
 * Ciphertext read ahead of gnutls, which pulls a record's 5-byte header and
 * then its body: two reads of the inner channel per 16 KiB without it. On
 * a migration's destination that was 68000 recvmsg calls per 512 MiB, the
 * bound of the whole transfer (measured: 4.4 s for 1 GiB against 0.7 s in
 * plaintext). One read of up to this much feeds about 16 records.
 */
#define TLS_READ_AHEAD (256 * 1024)

typedef struct TLSChannel {
    Channel base;
    Channel *inner;             /* our reference; read-only */
    TLSCreds *creds;            /* our reference; read-only */
    gnutls_session_t session;   /* reader and writer threads, as gnutls allows */
    GMutex push_lock;           /* serializes writes to inner */
    int write_flags;            /* atomic: the current write's CHANNEL_NONBLOCK, for push */
    int read_flags;             /* the reader's: the current read's flags, for pull */
    int pull_errno;             /* the reader's: errno of pull's last failure */
    bool pull_eagain;           /* the reader's: pull's last failure was the inner EAGAIN */
    int push_errno;             /* under push_lock: errno of push's last failure */
    /* The writer's: */
    uint8_t *wbuf;              /* TLS_RECORD_MAX bytes: plaintext gathered into a record */
    size_t wqueued;             /* a record gnutls holds after EAGAIN: its plaintext length */
    int write_err;              /* sticky -errno once a write failed */
    bool bye_sent;
    /* The reader's: */
    uint8_t *rabuf;             /* TLS_READ_AHEAD bytes of ciphertext, allocated on first use */
    size_t rapos;               /* first byte gnutls has not pulled yet */
    size_t ralen;               /* end of what the inner channel gave */
    int read_err;               /* sticky -errno once a read failed */
    bool read_eof;              /* close_notify came */
    /*
     * Each set at most once, by its owner thread (reader, writer), so a
     * pointer handed out stays valid and unchanged for the channel's life;
     * first_error (atomic) points at whichever was set first.
     */
    char read_msg[256];
    char write_msg[256];
    const char *first_error;
    const char *read_detail;    /* atomic: read_msg once it is written, else NULL */
    const char *write_detail;   /* atomic: write_msg once it is written, else NULL */
} TLSChannel;

static bool is_tls(Channel *c);

static TLSChannel *tls_of(Channel *c)
{
    return (TLSChannel *)c;
}

static void tls_set_msg(TLSChannel *t, char *buf, size_t size, const char **slot,
                        const char *fmt, ...) G_GNUC_PRINTF(5, 6);

static void tls_set_msg(TLSChannel *t, char *buf, size_t size, const char **slot,
                        const char *fmt, ...)
{
    const char *expected = NULL;
    va_list ap;

    if (buf[0]) {
        return;                 /* the first failure says why; later ones follow from it */
    }
    va_start(ap, fmt);
    g_vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    __atomic_store_n(slot, buf, __ATOMIC_RELEASE);
    __atomic_compare_exchange_n(&t->first_error, &expected, buf, false, __ATOMIC_RELEASE,
                                __ATOMIC_RELAXED);
}

const char *channel_tls_last_error(Channel *c)
{
    if (!c || !is_tls(c)) {
        return NULL;
    }
    return __atomic_load_n(&tls_of(c)->first_error, __ATOMIC_ACQUIRE);
}

/* The error_detail hook: this direction's own failure, so a write error never reads "Cannot read". */
static const char *tls_error_detail(Channel *c, bool write)
{
    TLSChannel *t = tls_of(c);

    return __atomic_load_n(write ? &t->write_detail : &t->read_detail, __ATOMIC_ACQUIRE);
}

/* ---- gnutls's transport: the inner channel ---- */

static ssize_t tls_pull(gnutls_transport_ptr_t p, void *buf, size_t len)
{
    TLSChannel *t = p;
    struct iovec iov = { buf, len };
    bool ahead = len < TLS_READ_AHEAD;
    ssize_t n;

    if (t->rapos < t->ralen) {
        n = MIN(len, t->ralen - t->rapos);
        memcpy(buf, t->rabuf + t->rapos, n);
        t->rapos += n;
        return n;
    }
    if (ahead) {
        if (!t->rabuf) {
            t->rabuf = g_malloc(TLS_READ_AHEAD);
        }
        iov = (struct iovec) { t->rabuf, TLS_READ_AHEAD };
    }
    do {
        n = channel_readv(t->inner, &iov, 1, t->read_flags);
    } while (n == -EINTR);
    if (n > 0 && ahead) {
        t->rapos = MIN((size_t)n, len);
        t->ralen = n;
        memcpy(buf, t->rabuf, t->rapos);
        return t->rapos;
    }
    t->pull_eagain = n == -EAGAIN;
    if (n < 0) {
        t->pull_errno = -n;
        /*
         * errno, not gnutls_transport_set_errno(): that is one field of the
         * session, which the reader and the writer would race on; gnutls
         * reads the thread's errno when none was set.
         */
        errno = -n == EAGAIN ? EAGAIN : EIO;
        return -1;
    }
    return n;
}

static ssize_t tls_push(gnutls_transport_ptr_t p, const giovec_t *iov, int cnt)
{
    TLSChannel *t = p;
    int flags = __atomic_load_n(&t->write_flags, __ATOMIC_RELAXED);
    ssize_t n;

    g_mutex_lock(&t->push_lock);
    do {
        /* giovec_t has struct iovec's layout (gnutls.h says so). */
        n = channel_writev(t->inner, (const struct iovec *)iov, cnt, flags);
    } while (n == -EINTR);
    if (n < 0) {
        t->push_errno = -n;
    }
    g_mutex_unlock(&t->push_lock);
    if (n < 0) {
        errno = -n == EAGAIN ? EAGAIN : EIO;     /* per thread: see tls_pull */
        return -1;
    }
    return n;
}

/*
 * gnutls asks this before a read that has a deadline (the handshake's).
 * Bytes in the inner read-ahead count as readable; the poll looks at the
 * shut bits every 100 ms so a shutdown of a row whose fd poll cannot see
 * (a unix socket shut for writing only) still ends the wait.
 */
static int tls_pull_timeout(gnutls_transport_ptr_t p, unsigned ms)
{
    TLSChannel *t = p;
    gint64 end = ms == GNUTLS_INDEFINITE_TIMEOUT ? -1 : g_get_monotonic_time() + ms * 1000LL;

    for (;;) {
        struct pollfd pfd = { .fd = channel_fd(t->inner), .events = POLLIN };
        int slice = 100, r;

        if (t->rapos < t->ralen || channel_pending(t->inner) ||
            channel_is_shut_down(t->inner, CHANNEL_SHUT_READ)) {
            return 1;           /* the read then gets the bytes, or EOF */
        }
        if (end >= 0) {
            gint64 left = (end - g_get_monotonic_time()) / 1000;

            if (left <= 0) {
                return 0;
            }
            slice = MIN(slice, (int)left);
        }
        r = poll(&pfd, 1, slice);
        if (r > 0) {
            return 1;
        }
        if (r < 0 && errno != EINTR) {
            return -1;          /* errno is poll's */
        }
    }
}

/* ---- reads ---- */

static ssize_t tls_read_fail(TLSChannel *t, ssize_t r)
{
    int err;

    if (r == GNUTLS_E_AGAIN) {
        return -EAGAIN;
    }
    if (r == GNUTLS_E_INTERRUPTED) {
        return -EINTR;
    }
    if (channel_is_shut_down(t->inner, CHANNEL_SHUT_READ) ||
        channel_is_shut_down(&t->base, CHANNEL_SHUT_READ)) {
        return 0;               /* we shut it down: end of file, as for any row */
    }
    if (r == GNUTLS_E_PULL_ERROR && t->pull_errno) {
        err = -t->pull_errno;
    } else if (r == GNUTLS_E_PREMATURE_TERMINATION) {
        err = -ECONNRESET;      /* EOF without close_notify: a cut, not an end */
    } else {
        err = -EPROTO;          /* a record that did not authenticate or parse, an alert */
    }
    if (r == GNUTLS_E_FATAL_ALERT_RECEIVED) {
        /* The peer refused us after the handshake (our certificate, authz): say how. */
        tls_set_msg(t, t->read_msg, sizeof(t->read_msg), &t->read_detail,
                    "Cannot read from TLS channel: %s (%s)",
                    gnutls_strerror(r), gnutls_alert_get_name(gnutls_alert_get(t->session)));
    } else {
        tls_set_msg(t, t->read_msg, sizeof(t->read_msg), &t->read_detail,
                    "Cannot read from TLS channel: %s",
                    r == GNUTLS_E_PULL_ERROR && t->pull_errno ? g_strerror(t->pull_errno)
                                                            : gnutls_strerror(r));
    }
    t->read_err = err;
    return err;
}

static ssize_t tls_readv(Channel *c, const struct iovec *iov, int cnt, int *fds, size_t *nfds,
                         int flags)
{
    TLSChannel *t = tls_of(c);
    ssize_t total = 0;

    if (t->read_err) {
        return t->read_err;
    }
    if (t->read_eof) {
        return 0;
    }
    t->read_flags = flags;
    for (int i = 0; i < cnt; i++) {
        size_t off = 0;

        while (off < iov[i].iov_len) {
            ssize_t r;

            /* Past the first bytes, take only what is decrypted already: never block. */
            if (total && !gnutls_record_check_pending(t->session)) {
                return total;
            }
            r = gnutls_record_recv(t->session, (uint8_t *)iov[i].iov_base + off,
                                   iov[i].iov_len - off);
            if (r == GNUTLS_E_WARNING_ALERT_RECEIVED || r == GNUTLS_E_GOT_APPLICATION_DATA ||
                ((r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) &&
                 !(flags & CHANNEL_NONBLOCK) && !t->pull_eagain)) {
                /*
                 * Nothing for the reader, the next record may be: a warning,
                 * or a post-handshake message (a TLS 1.3 KeyUpdate) after
                 * which gnutls asks to be called again.
                 */
                continue;
            }
            if (r == 0) {
                t->read_eof = true;
                return total;
            }
            if (r < 0) {
                return total ? total : tls_read_fail(t, r);
            }
            off += r;
            total += r;
        }
    }
    return total;
}

/*
 * Decrypted bytes, and ciphertext read ahead: a waiter that polls the inner
 * fd when this says 0 must not sleep on records we already hold. (A read
 * then may still wait for the rest of a record the peer is sending.)
 */
static size_t tls_pending(Channel *c)
{
    TLSChannel *t = tls_of(c);

    return gnutls_record_check_pending(t->session) + (t->ralen - t->rapos);
}

/* ---- writes ---- */

/* How long a write that found the session invalidated waits for the reader's reason. */
#define TLS_WHY_WAIT_MS 200

static ssize_t tls_write_fail(TLSChannel *t, ssize_t r)
{
    int err;

    if (r == GNUTLS_E_AGAIN) {
        return -EAGAIN;
    }
    g_mutex_lock(&t->push_lock);
    err = t->push_errno;
    g_mutex_unlock(&t->push_lock);
    if (channel_is_shut_down(t->inner, CHANNEL_SHUT_WRITE) ||
        channel_is_shut_down(&t->base, CHANNEL_SHUT_WRITE)) {
        err = EPIPE;
    }
    if (r == GNUTLS_E_PUSH_ERROR && err) {
        tls_set_msg(t, t->write_msg, sizeof(t->write_msg), &t->write_detail,
                    "Cannot write to TLS channel: %s",
                    g_strerror(err));
        t->write_err = -err;
    } else {
        /*
         * A session the reader saw end (the peer's alert: it refused us)
         * fails every write with gnutls's "invalidated": say what the peer said.
         */
        const char *peer = __atomic_load_n(&t->read_detail, __ATOMIC_ACQUIRE);

        /*
         * gnutls invalidates the session inside the reader's recv, before
         * that recv returns and the reader says why: a write between the
         * two gets here first. Give the reader a moment (a failure path).
         */
        for (int i = 0; !peer && r == GNUTLS_E_INVALID_SESSION && i < TLS_WHY_WAIT_MS; i++) {
            g_usleep(1000);
            peer = __atomic_load_n(&t->read_detail, __ATOMIC_ACQUIRE);
        }
        tls_set_msg(t, t->write_msg, sizeof(t->write_msg), &t->write_detail,
                    "Cannot write to TLS channel: %s%s%s%s", gnutls_strerror(r),
                    peer ? " (after " : "", peer ? peer : "", peer ? ")" : "");
        t->write_err = -EIO;
    }
    return t->write_err;
}

/* One record; a blocking one is retried until gnutls has sent all of it. */
static ssize_t tls_send_record(TLSChannel *t, const void *buf, size_t len, int flags)
{
    ssize_t r = gnutls_record_send(t->session, buf, len);

    while (r == GNUTLS_E_INTERRUPTED || (r == GNUTLS_E_AGAIN && !(flags & CHANNEL_NONBLOCK))) {
        /* The record is encrypted and queued: flushing it takes no data. */
        r = gnutls_record_send(t->session, NULL, 0);
    }
    return r;
}

static ssize_t tls_writev(Channel *c, const struct iovec *iov, int cnt, const int *fds,
                          size_t nfds, int flags)
{
    TLSChannel *t = tls_of(c);
    ssize_t total = 0;
    int i = 0;
    size_t off = 0;

    if (t->write_err) {
        return t->write_err;
    }
    if (t->bye_sent) {
        return -EPIPE;
    }
    __atomic_store_n(&t->write_flags, flags, __ATOMIC_RELAXED);
    if (t->wqueued) {
        /* The caller's first wqueued bytes are the record gnutls holds (see the top). */
        ssize_t r = tls_send_record(t, NULL, 0, flags);
        size_t len = t->wqueued;

        if (r < 0) {
            return tls_write_fail(t, r);
        }
        t->wqueued = 0;
        return len;
    }
    while (i < cnt) {
        const uint8_t *rec;
        size_t len = 0;
        ssize_t r;

        if (off == iov[i].iov_len) {
            i++;
            off = 0;
            continue;
        }
        if (iov[i].iov_len - off >= TLS_RECORD_MAX) {
            /* A whole record in one iovec: encrypt from the caller's memory. */
            rec = (const uint8_t *)iov[i].iov_base + off;
            len = TLS_RECORD_MAX;
            off += len;
        } else {
            while (i < cnt && len < TLS_RECORD_MAX) {
                size_t l = MIN(iov[i].iov_len - off, TLS_RECORD_MAX - len);

                memcpy(t->wbuf + len, (const uint8_t *)iov[i].iov_base + off, l);
                len += l;
                off += l;
                if (off == iov[i].iov_len) {
                    i++;
                    off = 0;
                }
            }
            rec = t->wbuf;
        }
        if (!len) {
            break;
        }
        r = tls_send_record(t, rec, len, flags);
        if (r == GNUTLS_E_AGAIN) {
            /* Queued in gnutls: the next writev starts with these bytes again. */
            t->wqueued = len;
            return total ? total : -EAGAIN;
        }
        if (r < 0) {
            return total ? total : tls_write_fail(t, r);
        }
        total += r;
        if ((size_t)r < len) {
            /*
             * A peer that limits records below 16 KiB (record_size_limit):
             * gnutls took only part. Stop here, so the caller resumes at
             * the first byte not sent and nothing goes out of order.
             */
            break;
        }
    }
    return total;
}

int channel_tls_bye(Channel *c)
{
    TLSChannel *t = tls_of(c);
    int r;

    assert(is_tls(c));
    if (t->write_err) {
        return t->write_err;
    }
    if (t->bye_sent) {
        return 0;
    }
    __atomic_store_n(&t->write_flags, 0, __ATOMIC_RELAXED);
    do {
        r = gnutls_bye(t->session, GNUTLS_SHUT_WR);
    } while (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED);
    if (r < 0) {
        return tls_write_fail(t, r);
    }
    t->bye_sent = true;
    return 0;
}

/* ---- life ---- */

static void tls_shutdown(Channel *c, ChannelShutdown how)
{
    /* Never gnutls here: a writer may be inside it (see the top, rule 3). */
    channel_shutdown(tls_of(c)->inner, how);
}

static int tls_close(Channel *c)
{
    TLSChannel *t = tls_of(c);

    /*
     * A stream that ended well gets its close_notify, so the peer reads a
     * clean EOF. Non-blocking: the last unref may run in the main loop, and
     * a peer that stopped reading must not hold it up (it then sees a cut).
     */
    if (t->session && !t->bye_sent && !t->write_err && !t->read_err &&
        !channel_is_shut_down(t->inner, CHANNEL_SHUT_WRITE) &&
        !channel_is_shut_down(c, CHANNEL_SHUT_WRITE)) {
        __atomic_store_n(&t->write_flags, CHANNEL_NONBLOCK, __ATOMIC_RELAXED);
        gnutls_bye(t->session, GNUTLS_SHUT_WR);
    }
    if (t->session) {
        gnutls_deinit(t->session);
    }
    g_mutex_clear(&t->push_lock);
    g_free(t->wbuf);
    g_free(t->rabuf);
    tls_creds_unref(t->creds);
    return channel_unref(t->inner);
}

static int tls_fd(Channel *c)
{
    return channel_fd(tls_of(c)->inner);
}

static char *tls_describe(Channel *c)
{
    return g_strdup_printf("tls over %s", channel_peer(tls_of(c)->inner));
}

/* Two rows that differ only in DUPLEX, which the row has if inner has it. */
#define TLS_OPS(feat) {             \
    .kind = "tls",                  \
    .features = (feat),             \
    .readv = tls_readv,             \
    .writev = tls_writev,           \
    .shutdown = tls_shutdown,       \
    .close = tls_close,             \
    .fd = tls_fd,                   \
    .pending = tls_pending,         \
    .describe = tls_describe,       \
    .error_detail = tls_error_detail, \
    .end_write = channel_tls_bye,   \
}
static const ChannelOps tls_ops = TLS_OPS(CHANNEL_FEATURE_DUPLEX);
static const ChannelOps tls_ops_simplex = TLS_OPS(0);

static bool is_tls(Channel *c)
{
    return c->ops == &tls_ops || c->ops == &tls_ops_simplex;
}

/* ---- the handshake ---- */

/*
 * Tells the peer why we end the session (best effort, never blocking: the
 * peer may not be reading).
 */
static void tls_send_alert(TLSChannel *t, int gnutls_err, gnutls_alert_description_t desc)
{
    if (channel_is_shut_down(t->inner, CHANNEL_SHUT_WRITE)) {
        return;
    }
    __atomic_store_n(&t->write_flags, CHANNEL_NONBLOCK, __ATOMIC_RELAXED);
    if (gnutls_err) {
        gnutls_alert_send_appropriate(t->session, gnutls_err);
    } else {
        gnutls_alert_send(t->session, GNUTLS_AL_FATAL, desc);
    }
    __atomic_store_n(&t->write_flags, 0, __ATOMIC_RELAXED);
}

static bool tls_handshake(TLSChannel *t, Error **errp)
{
    int r;

    do {
        r = gnutls_handshake(t->session);
    } while (r < 0 && !gnutls_error_is_fatal(r));
    if (r == 0) {
        return true;
    }
    if (channel_is_shut_down(t->inner, CHANNEL_SHUT_BOTH)) {
        error_setg(errp, "TLS handshake cancelled");
        return false;
    }
    if (r == GNUTLS_E_FATAL_ALERT_RECEIVED) {
        error_setg(errp, "TLS handshake failed: %s (%s)", gnutls_strerror(r),
                   gnutls_alert_get_name(gnutls_alert_get(t->session)));
    } else {
        error_setg(errp, "TLS handshake failed: %s", gnutls_strerror(r));
        tls_send_alert(t, r, 0);
    }
    return false;
}

static Channel *tls_new(Channel *inner, TLSCreds *creds, bool server, const char *hostname,
                        Authz *authz, Error **errp)
{
    TLSChannel *t = g_new0(TLSChannel, 1);
    g_autofree char *identity = NULL;
    int ret;

    t->inner = inner;
    t->creds = tls_creds_ref(creds);
    t->wbuf = g_malloc(TLS_RECORD_MAX);
    g_mutex_init(&t->push_lock);
    channel_init(&t->base, channel_has_feature(inner, CHANNEL_FEATURE_DUPLEX)
                                ? &tls_ops : &tls_ops_simplex);
    if (tls_creds_is_server(creds) != server) {
        error_setg(errp, "Expecting TLS credentials with a %s endpoint",
                   server ? "server" : "client");
        goto fail;
    }
    /*
     * No session tickets: there is no resumption to offer, and a server's
     * tickets would be one more write outside the writer's thread.
     */
    ret = gnutls_init(&t->session, (server ? GNUTLS_SERVER : GNUTLS_CLIENT) | GNUTLS_NO_TICKETS);
    if (ret < 0) {
        t->session = NULL;
        error_setg(errp, "Cannot initialize TLS session: %s", gnutls_strerror(ret));
        goto fail;
    }
    if (!tls_creds_session_setup(creds, t->session, errp)) {
        goto fail;
    }
    gnutls_transport_set_ptr(t->session, t);
    gnutls_transport_set_pull_function(t->session, tls_pull);
    gnutls_transport_set_vec_push_function(t->session, tls_push);
    gnutls_transport_set_pull_timeout_function(t->session, tls_pull_timeout);
    /* Cancelling is channel_shutdown(inner)'s job, and the caller's deadline. */
    gnutls_handshake_set_timeout(t->session, 0);
    if (!tls_handshake(t, errp)) {
        goto fail;
    }
    if (!tls_creds_check_peer(creds, t->session, server ? NULL : hostname, &identity, errp)) {
        tls_send_alert(t, 0, GNUTLS_A_BAD_CERTIFICATE);
        goto fail;
    }
    if (server && authz) {
        if (!identity) {
            error_setg(errp, "Cannot check authorization: the TLS peer has no identity");
            tls_send_alert(t, 0, GNUTLS_A_ACCESS_DENIED);
            goto fail;
        }
        if (!authz_is_allowed(authz, identity, errp)) {
            tls_send_alert(t, 0, GNUTLS_A_ACCESS_DENIED);
            goto fail;
        }
    }
    return &t->base;

fail:
    /* No close_notify for a session that never began. */
    t->bye_sent = true;
    channel_unref(&t->base);
    return NULL;
}

Channel *channel_tls_client_new(Channel *inner, TLSCreds *creds, const char *hostname,
                                Error **errp)
{
    return tls_new(inner, creds, false, hostname, NULL, errp);
}

Channel *channel_tls_server_new(Channel *inner, TLSCreds *creds, Authz *authz, Error **errp)
{
    return tls_new(inner, creds, true, NULL, authz, errp);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * TLS on a migration's connections (tls.h has the contract).
 *
 * Why cancelling works: every handshake, client or server, registers the
 * raw channel it runs over in MigTLS.active before it starts and removes
 * it when it ends, both under MigTLS.lock; mig_tls_cancel() sets
 * .cancelled and shuts down every registered channel under the same lock.
 * So a handshake either registered first (and is woken: a blocked read or
 * write on a shut-down channel returns at once, include/io/channel.h) or
 * sees .cancelled when it tries to register (and never starts). Nothing
 * waits inside the lock.
 *
 * Why nothing outlives its owner: each accept thread holds a reference to
 * the MigTLS and to its channel until its main-loop callback (which joins
 * it) ran; the migration's own reference goes in mig_tls_release(), so the
 * last of them frees.
 */
#include "qemu/osdep.h"
#include <sys/socket.h>
#include <sys/stat.h>
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "qemu/bswap.h"
#include "qemu/thread.h"
#include "io/channel-tls.h"
#include "system/user-objects.h"
#include "migration/core/options.h"
#include "tls.h"

/* A peer gets this long to finish its handshake and send its first word (as the plain peek). */
#define ACCEPT_TIMEOUT_S 30
/*
 * Server handshakes in flight at most (each is a thread for up to 30 s):
 * more than a source ever opens at once (its stream, its multifd channels
 * and its preempt channel connect one after the other), so a host that
 * floods the port cannot make thread creation fail for the real load.
 */
#define ACCEPTS_MAX 32

struct MigTLS {
    /* Read-only after mig_tls_new(). */
    TLSCreds *creds;
    Authz *authz;               /* server only; NULL: whoever the credentials admit */
    char *hostname;             /* client only; NULL: no name check (psk, anon) */
    int refs;                   /* atomic: the migration's, and one per accept thread */

    int accepting;              /* main loop: server handshakes started, not yet finished */
    GMutex lock;
    GPtrArray *active;          /* lock: raw channels of the handshakes in flight */
    bool cancelled;             /* lock: set once, never cleared */
};

typedef struct Accept {
    MigTLS *t;                  /* a reference */
    Channel *raw;               /* the thread's until it ends */
    Channel *raw_main;          /* main loop's reference, for the deadline; dropped at the end */
    Channel *ch;                /* the result (NULL on failure), for the callback */
    uint32_t first;
    Error *err;
    MigTLSAccepted *accepted;
    void *opaque;
    QemuThread thread;
    guint timeout;              /* main loop: the deadline's source */
    bool timed_out;             /* main loop: the deadline cut it */
} Accept;

static MigTLS *mig_tls_ref(MigTLS *t)
{
    __atomic_fetch_add(&t->refs, 1, __ATOMIC_RELAXED);
    return t;
}

static void mig_tls_unref(MigTLS *t)
{
    if (__atomic_fetch_sub(&t->refs, 1, __ATOMIC_ACQ_REL) != 1) {
        return;
    }
    tls_creds_unref(t->creds);
    if (t->authz) {
        authz_unref(t->authz);
    }
    g_free(t->hostname);
    g_ptr_array_free(t->active, true);
    g_mutex_clear(&t->lock);
    g_free(t);
}

/* tcp:HOST:PORT's host, brackets of an IPv6 address removed; NULL for other URIs. */
static char *uri_host(const char *uri)
{
    const char *rest, *colon;

    if (!g_str_has_prefix(uri, "tcp:")) {
        return NULL;
    }
    rest = uri + 4;
    colon = strrchr(rest, ':');
    if (!colon || colon == rest) {
        return NULL;
    }
    if (rest[0] == '[' && colon > rest + 1 && colon[-1] == ']') {
        return g_strndup(rest + 1, colon - rest - 2);
    }
    return g_strndup(rest, colon - rest);
}

/* fd:N of a socket: TLS needs a peer that answers the handshake. */
static bool fd_is_socket(const char *uri)
{
    struct stat st;
    char *end;
    long fd = strtol(uri + 3, &end, 10);

    return *end == '\0' && fd >= 0 && fd <= INT_MAX && fstat(fd, &st) == 0 &&
           S_ISSOCK(st.st_mode);
}

static bool transport_has_peer(const char *uri, Error **errp)
{
    if (g_str_has_prefix(uri, "tcp:") || g_str_has_prefix(uri, "unix:") ||
        (g_str_has_prefix(uri, "fd:") && fd_is_socket(uri))) {
        return true;
    }
    /*
     * QEMU starts a handshake here anyway and fails late (a file) or
     * waits for ever (a command that never answers): refuse at once.
     */
    error_setg(errp, "TLS needs a connection to a peer (tcp:, unix:, or fd: of a socket); "
               "'%.*s' has none: unset tls-creds for it", (int)strcspn(uri, ":") + 1, uri);
    return false;
}

bool mig_tls_new(MigTLS **out, const char *uri, bool server, Error **errp)
{
    const char *creds_id = migrate_tls_creds();
    const char *authz_id = migrate_tls_authz();
    const char *hostname = migrate_tls_hostname();
    g_autofree char *host = NULL;
    TLSCreds *creds;
    MigTLS *t;

    *out = NULL;
    if (!creds_id || !*creds_id) {
        return true;
    }
    if (!transport_has_peer(uri, errp)) {
        return false;
    }
    creds = user_objects_tls_creds(creds_id, errp);
    if (!creds) {
        return false;
    }
    if (tls_creds_is_server(creds) != server) {
        error_setg(errp, "Expected TLS credentials for a %s endpoint", server ? "server" : "client");
        tls_creds_unref(creds);
        return false;
    }
    t = g_new0(MigTLS, 1);
    t->creds = creds;
    t->refs = 1;
    g_mutex_init(&t->lock);
    t->active = g_ptr_array_new();
    if (server && authz_id && *authz_id) {
        t->authz = user_objects_authz(authz_id, errp);
        if (!t->authz) {
            mig_tls_unref(t);
            return false;
        }
    }
    if (!server) {
        host = hostname && *hostname ? g_strdup(hostname) : uri_host(uri);
        if (!host && tls_creds_kind(creds) == TLS_CREDS_X509) {
            error_setg(errp, "No hostname for certificate validation");
            mig_tls_unref(t);
            return false;
        }
        t->hostname = g_steal_pointer(&host);
    }
    *out = t;
    return true;
}

/* Registers @raw for cancel; false if the migration was cancelled already. */
static bool active_add(MigTLS *t, Channel *raw)
{
    bool ok;

    g_mutex_lock(&t->lock);
    ok = !t->cancelled;
    if (ok) {
        g_ptr_array_add(t->active, raw);
    }
    g_mutex_unlock(&t->lock);
    return ok;
}

static void active_remove(MigTLS *t, Channel *raw)
{
    g_mutex_lock(&t->lock);
    g_ptr_array_remove_fast(t->active, raw);
    g_mutex_unlock(&t->lock);
}

Channel *mig_tls_client(MigTLS *t, Channel *raw, Error **errp)
{
    Channel *ch;

    if (!t || !raw) {
        return raw;
    }
    if (!active_add(t, raw)) {
        channel_unref(raw);
        error_setg(errp, "TLS handshake cancelled");
        return NULL;
    }
    /* A reference of our own: the constructor drops @raw's on failure, and cancel may use it. */
    channel_ref(raw);
    ch = channel_tls_client_new(raw, t->creds, t->hostname, errp);
    active_remove(t, raw);
    channel_unref(raw);
    return ch;
}

/* Main loop: the thread is done (this was its last act): hand over or report. */
static void accept_finish(void *opaque)
{
    Accept *a = opaque;
    bool cancelled;

    qemu_thread_join(&a->thread);
    a->t->accepting--;
    if (a->timeout) {
        g_source_remove(a->timeout);
    }
    if (a->timed_out) {
        /* Even one that made it just in time: its socket is shut down now. */
        g_clear_pointer(&a->ch, channel_unref);
        error_free(a->err);
        a->err = NULL;
        error_setg(&a->err, "incoming migration: a TLS peer (%s) did not finish its handshake "
                   "and send its first bytes within %d s; closed it", channel_peer(a->raw_main),
                   ACCEPT_TIMEOUT_S);
    }
    channel_unref(a->raw_main);
    g_mutex_lock(&a->t->lock);
    cancelled = a->t->cancelled;
    g_mutex_unlock(&a->t->lock);
    if (a->ch && !cancelled) {
        a->accepted(a->ch, a->first, a->opaque);
    } else {
        if (a->ch) {
            channel_unref(a->ch);
        }
        if (a->err && !cancelled) {
            /* The peer failed to authenticate: it ends nothing of ours. */
            error_report_err(a->err);
            a->err = NULL;
        }
    }
    error_free(a->err);
    mig_tls_unref(a->t);
    g_free(a);
}

/* Main loop: a peer that neither finishes nor fails is cut at the deadline. */
static gboolean accept_timeout(gpointer opaque)
{
    Accept *a = opaque;

    a->timeout = 0;
    a->timed_out = true;
    channel_shutdown(a->raw_main, CHANNEL_SHUT_BOTH);
    return G_SOURCE_REMOVE;
}

static void *accept_thread(void *opaque)
{
    Accept *a = opaque;
    uint8_t word[4];
    ssize_t n;

    if (!active_add(a->t, a->raw)) {
        channel_unref(a->raw);
        a->raw = NULL;
        qemu_bh_schedule_oneshot(accept_finish, a);
        return NULL;
    }
    channel_ref(a->raw);
    a->ch = channel_tls_server_new(a->raw, a->t->creds, a->t->authz, &a->err);
    if (a->ch) {
        /* The first word tells the main stream from a multifd or preempt channel. */
        n = channel_peek(a->ch, word, sizeof(word), 0);
        if (n != sizeof(word)) {
            const char *why = n < 0 ? channel_error_detail(a->ch, false) : NULL;

            /* A client that refused us after a TLS 1.3 handshake says why in an alert. */
            error_setg(&a->err, "incoming migration: a TLS connection from %s: %s",
                       channel_peer(a->ch), why ? why : "closed before its first bytes");
            g_clear_pointer(&a->ch, channel_unref);
        } else {
            a->first = ldl_be_p(word);
        }
    }
    active_remove(a->t, a->raw);
    channel_unref(a->raw);
    a->raw = NULL;
    qemu_bh_schedule_oneshot(accept_finish, a);
    return NULL;
}

void mig_tls_accept(MigTLS *t, Channel *raw, MigTLSAccepted *accepted, void *opaque)
{
    Accept *a;
    Error *err = NULL;

    if (t->accepting >= ACCEPTS_MAX) {
        error_setg(&err, "incoming migration: %d TLS handshakes in flight already; closed a "
                   "connection from %s", t->accepting, channel_peer(raw));
        error_report_err(err);
        channel_unref(raw);
        return;
    }
    t->accepting++;
    a = g_new0(Accept, 1);
    *a = (Accept) { .t = mig_tls_ref(t), .raw = raw, .raw_main = channel_ref(raw),
                    .accepted = accepted, .opaque = opaque };
    /* Before the thread starts: the thread cannot finish before the main loop runs again. */
    a->timeout = g_timeout_add_seconds(ACCEPT_TIMEOUT_S, accept_timeout, a);
    if (qemu_thread_create(&a->thread, "mig/tls-accept", accept_thread, a) != 0) {
        error_setg(&err, "incoming migration: cannot start a TLS handshake thread");
        error_report_err(err);
        g_source_remove(a->timeout);
        channel_unref(a->raw_main);
        channel_unref(raw);
        t->accepting--;
        mig_tls_unref(a->t);
        g_free(a);
    }
}

void mig_tls_cancel(MigTLS *t)
{
    if (!t) {
        return;
    }
    g_mutex_lock(&t->lock);
    t->cancelled = true;
    for (guint i = 0; i < t->active->len; i++) {
        channel_shutdown(g_ptr_array_index(t->active, i), CHANNEL_SHUT_BOTH);
    }
    g_mutex_unlock(&t->lock);
}

void mig_tls_release(MigTLS *t)
{
    if (t) {
        mig_tls_cancel(t);
        mig_tls_unref(t);
    }
}

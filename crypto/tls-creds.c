/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * TLS credentials, the part every kind shares (include/crypto/tls-creds.h):
 * options, references, the priority string and the session setup. The
 * kinds are rows (tls-creds-int.h): tls-creds-x509.c, tls-creds-psk.c,
 * tls-creds-anon.c.
 *
 * Invariant: a TLSCreds is immutable between tls_creds_new() and its last
 * unref, so any number of handshakes in any threads may use it at once.
 * It holds because every field is written in tls_creds_new() before the
 * pointer is returned, the hooks called later only read, and the gnutls
 * structures they hand to sessions (credentials, priority cache) are ones
 * gnutls documents as shareable once set up.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "tls-creds-int.h"

static const TLSCredsRow *const rows[] = {
    &tls_creds_x509_row,
    &tls_creds_psk_row,
    &tls_creds_anon_row,
};

char *tls_creds_path(TLSCreds *c, const char *name)
{
    return g_build_filename(c->dir, name, NULL);
}

bool tls_creds_file_usable(const char *path, bool required, Error **errp)
{
    if (access(path, R_OK) == 0) {
        return true;
    }
    if (required || errno != ENOENT) {
        /* A file that is there but unreadable is an error even when optional. */
        error_setg(errp, "Unable to access credentials %s: %s", path, g_strerror(errno));
    }
    return false;
}

bool tls_creds_load_dh(TLSCreds *c, Error **errp)
{
    g_autofree char *path = NULL;
    Error *local = NULL;
    gnutls_datum_t data;
    int ret;

    if (!c->dir) {
        return true;
    }
    path = tls_creds_path(c, "dh-params.pem");
    if (!tls_creds_file_usable(path, false, &local)) {
        if (local) {
            error_propagate(errp, local);
            return false;
        }
        return true;
    }
    ret = gnutls_load_file(path, &data);
    if (ret < 0) {
        error_setg(errp, "Unable to read DH parameters %s: %s", path, gnutls_strerror(ret));
        return false;
    }
    ret = gnutls_dh_params_init(&c->dh);
    if (ret >= 0) {
        ret = gnutls_dh_params_import_pkcs3(c->dh, &data, GNUTLS_X509_FMT_PEM);
    }
    gnutls_free(data.data);
    if (ret < 0) {
        error_setg(errp, "Unable to load DH parameters from %s: %s", path, gnutls_strerror(ret));
        return false;
    }
    return true;
}

static void tls_creds_free(TLSCreds *c)
{
    if (c->row && c->row->release) {
        c->row->release(c);
    }
    if (c->dh) {
        gnutls_dh_params_deinit(c->dh);
    }
    if (c->priority) {
        gnutls_priority_deinit(c->priority);
    }
    g_free(c->id);
    g_free(c->dir);
    g_free(c->priority_text);
    g_free(c->username);
    g_free(c);
}

/* Whether this CPU encrypts AES-GCM in hardware (AES-NI and carry-less multiply). */
static bool tls_creds_aes_fast(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_cpu_supports("aes") && __builtin_cpu_supports("pclmul");
#else
    return false;
#endif
}

/*
 * The default: QEMU's "NORMAL" plus the kind's key exchanges, with two
 * changes for speed that keep every suite NORMAL allows. With AES in
 * hardware, ChaCha20-Poly1305 goes last: a TLS 1.3 PSK session can only
 * use SHA-256 suites, and NORMAL lists ChaCha20 before AES-128-GCM, which
 * is ten times faster here (gnutls-cli --benchmark-ciphers: 4.9 against
 * 0.42 GB/s). A server also applies its own order, so a QEMU client's
 * list (ChaCha20 second) does not pick the slow one.
 */
static char *tls_creds_default_priority(TLSCreds *c)
{
    return g_strconcat("NORMAL", c->row->priority_extra,
                       tls_creds_aes_fast() ? ":-CHACHA20-POLY1305:+CHACHA20-POLY1305" : "",
                       c->server ? ":%SERVER_PRECEDENCE" : "", NULL);
}

static bool tls_creds_set_priority(TLSCreds *c, const char *given, Error **errp)
{
    const char *err_pos = NULL;
    int ret;

    c->priority_text = given ? g_strdup(given) : tls_creds_default_priority(c);
    /* Parsed once here: a bad string is the object's error, not each handshake's. */
    ret = gnutls_priority_init(&c->priority, c->priority_text, &err_pos);
    if (ret < 0) {
        c->priority = NULL;
        error_setg(errp, "Unable to prepare priority string '%s': %s (near '%s')",
                   c->priority_text, gnutls_strerror(ret), err_pos ? err_pos : "");
        return false;
    }
    return true;
}

TLSCreds *tls_creds_new(const TLSCredsOptions *o, Error **errp)
{
    const TLSCredsRow *row = NULL;
    TLSCreds *c;

    for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
        if (o->type && !strcmp(o->type, rows[i]->type)) {
            row = rows[i];
        }
    }
    if (!row) {
        error_setg(errp, "Invalid object type '%s'", o->type ? o->type : "");
        return NULL;
    }
    if (row->dir_required && (!o->dir || !*o->dir)) {
        error_setg(errp, "Missing 'dir' property value");
        return NULL;
    }
    c = g_new0(TLSCreds, 1);
    c->row = row;
    c->refs = 1;
    c->id = g_strdup(o->id ? o->id : "");
    c->dir = o->dir && *o->dir ? g_strdup(o->dir) : NULL;
    c->server = o->endpoint_server;
    c->verify_peer = o->verify_peer;
    if (!tls_creds_set_priority(c, o->priority, errp) || !row->load(c, o, errp)) {
        tls_creds_free(c);
        return NULL;
    }
    return c;
}

TLSCreds *tls_creds_ref(TLSCreds *c)
{
    __atomic_fetch_add(&c->refs, 1, __ATOMIC_RELAXED);
    return c;
}

void tls_creds_unref(TLSCreds *c)
{
    if (c && __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        tls_creds_free(c);
    }
}

bool tls_creds_in_use(TLSCreds *c)
{
    return __atomic_load_n(&c->refs, __ATOMIC_ACQUIRE) > 1;
}

TLSCredsKind tls_creds_kind(const TLSCreds *c)
{
    return c->row->kind;
}

bool tls_creds_is_server(const TLSCreds *c)
{
    return c->server;
}

const char *tls_creds_id(const TLSCreds *c)
{
    return c->id;
}

bool tls_creds_session_setup(TLSCreds *c, gnutls_session_t s, Error **errp)
{
    int ret = gnutls_priority_set(s, c->priority);

    if (ret < 0) {
        error_setg(errp, "Unable to set TLS session priority %s: %s", c->priority_text,
                   gnutls_strerror(ret));
        return false;
    }
    return c->row->session_setup(c, s, errp);
}

bool tls_creds_check_peer(TLSCreds *c, gnutls_session_t s, const char *hostname,
                          char **identity, Error **errp)
{
    *identity = NULL;
    return c->row->check_peer(c, s, hostname, identity, errp);
}

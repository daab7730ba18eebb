/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * TLS credentials: QEMU's tls-creds-x509, tls-creds-psk and tls-creds-anon
 * objects, loaded and checked once when the object is made (a missing or
 * unreadable file, a bad key password or, with sanity-check, a certificate
 * unfit for its endpoint is an error then, not at the first handshake).
 *
 * How to use it:
 *
 *   TLSCredsOptions o = { .type = "tls-creds-x509", .id = "tls0",
 *                         .dir = "/etc/pki/qemu", .endpoint_server = true,
 *                         .verify_peer = true, .sanity_check = true };
 *   TLSCreds *c = tls_creds_new(&o, errp);       // one reference
 *   ...
 *   Channel *t = channel_tls_server_new(ch, c, authz, errp);
 *                                                  // include/io/channel-tls.h
 *   tls_creds_unref(c);
 *
 * Thread contract: made and dropped by whoever holds a reference (the
 * object registry holds one for as long as the object exists; a channel
 * holds one for its life). Everything here but ref/unref is read-only
 * after tls_creds_new(), so handshakes in any number of threads may share
 * one TLSCreds. gnutls's credentials structures are documented as safe to
 * share between sessions once set up.
 */
#ifndef CRYPTO_TLS_CREDS_H
#define CRYPTO_TLS_CREDS_H

#include <stdbool.h>
#include <gnutls/gnutls.h>
#include "qemu/typedefs.h"

typedef struct TLSCreds TLSCreds;

typedef enum TLSCredsKind {
    TLS_CREDS_X509,
    TLS_CREDS_PSK,
    TLS_CREDS_ANON,
} TLSCredsKind;

/* The properties of QEMU's objects; strings are copied. */
typedef struct TLSCredsOptions {
    const char *type;           /* "tls-creds-x509", "tls-creds-psk", "tls-creds-anon" */
    const char *id;             /* for messages */
    const char *dir;            /* x509, psk: required; anon: optional (dh-params.pem) */
    bool endpoint_server;       /* endpoint=server (default: client) */
    bool verify_peer;           /* verify-peer (QEMU's default: on) */
    const char *priority;       /* gnutls priority string; NULL: the default */
    const char *username;       /* psk, client endpoint: the identity (default "qemu") */
    const char *key_password;   /* x509: server-key.pem/client-key.pem's password (passwordid) */
    bool sanity_check;          /* x509: check the certificates' fitness at load (default on) */
} TLSCredsOptions;

/* Loads and checks; NULL with @errp set in QEMU's words. */
TLSCreds *tls_creds_new(const TLSCredsOptions *o, Error **errp);
TLSCreds *tls_creds_ref(TLSCreds *c);
void tls_creds_unref(TLSCreds *c);
/* Whether anyone besides one holder (the registry) holds it: object-del refuses then. */
bool tls_creds_in_use(TLSCreds *c);

TLSCredsKind tls_creds_kind(const TLSCreds *c);
bool tls_creds_is_server(const TLSCreds *c);
const char *tls_creds_id(const TLSCreds *c);

/*
 * For io/channel-tls.c: sets @s (made for this endpoint) up with the
 * priority and the credentials, and a server's certificate request
 * (required with verify-peer).
 */
bool tls_creds_session_setup(TLSCreds *c, gnutls_session_t s, Error **errp);
/*
 * After a handshake: with verify-peer, checks the peer's certificate chain
 * against the CA, its validity dates and, on a client, that it names
 * @hostname (NULL: no name check). Sets *@identity (g_free) to what
 * authorization looks at: the x509 peer's distinguished name, the PSK
 * client's username; NULL when there is none (anon, or no certificate
 * with verify-peer off).
 */
bool tls_creds_check_peer(TLSCreds *c, gnutls_session_t s, const char *hostname,
                          char **identity, Error **errp);

#endif

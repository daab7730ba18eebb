/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to crypto/: the TLSCreds struct and the row each kind of
 * credentials (x509, psk, anon) implements. tls-creds.c owns the common
 * part (options, references, priority, session setup) and calls the row's
 * hooks; a kind never branches on another kind.
 *
 * Thread contract: load runs once in tls_creds_new() before anyone else
 * sees the object; session_setup and check_peer run in any handshaking
 * thread and only read the struct; release runs once, on the last unref.
 */
#ifndef CRYPTO_TLS_CREDS_INT_H
#define CRYPTO_TLS_CREDS_INT_H

#include "crypto/tls-creds.h"

typedef struct TLSCredsRow {
    const char *type;           /* QEMU's object type name */
    TLSCredsKind kind;
    /* Appended to "NORMAL" when no priority is given: the key exchanges this kind needs. */
    const char *priority_extra;
    bool dir_required;
    /* Reads the files in c->dir and makes the gnutls credentials. */
    bool (*load)(TLSCreds *c, const TLSCredsOptions *o, Error **errp);
    /* Puts the credentials on a session (the priority is already set). */
    bool (*session_setup)(TLSCreds *c, gnutls_session_t s, Error **errp);
    /* After a handshake: see tls_creds_check_peer(). */
    bool (*check_peer)(TLSCreds *c, gnutls_session_t s, const char *hostname,
                       char **identity, Error **errp);
    void (*release)(TLSCreds *c);
} TLSCredsRow;


/* All fields are read-only after tls_creds_new() but refs. */
struct TLSCreds {
    const TLSCredsRow *row;
    int refs;                   /* atomic */
    char *id;
    char *dir;                  /* NULL: none given (anon only) */
    bool server;
    bool verify_peer;
    char *priority_text;        /* for messages */
    gnutls_priority_t priority;
    /* The kind's credentials; only the row's own are set. */
    gnutls_certificate_credentials_t x509;
    gnutls_psk_server_credentials_t psk_server;
    gnutls_psk_client_credentials_t psk_client;
    gnutls_anon_server_credentials_t anon_server;
    gnutls_anon_client_credentials_t anon_client;
    gnutls_dh_params_t dh;      /* dh-params.pem if there was one */
    char *username;             /* psk client: the identity it sends */
};

extern const TLSCredsRow tls_creds_x509_row;
extern const TLSCredsRow tls_creds_psk_row;
extern const TLSCredsRow tls_creds_anon_row;

/* dir/name, g_free'd by the caller. */
char *tls_creds_path(TLSCreds *c, const char *name);
/*
 * Whether dir/name can be read: false with QEMU's "Unable to access
 * credentials" error when @required, quietly when not (and the file is
 * then simply absent).
 */
bool tls_creds_file_usable(const char *path, bool required, Error **errp);
/*
 * Loads dir/dh-params.pem into c->dh if present: false with @errp if it is
 * there and broken.
 */
bool tls_creds_load_dh(TLSCreds *c, Error **errp);

#endif

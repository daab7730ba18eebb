/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Test certificates made in-process with gnutls's x509 API, written into
 * directories with QEMU's file names (ca-cert.pem, server-cert.pem, ...),
 * for tests of the TLS credentials and channels.
 *
 * How to use it:
 *
 *   TLSTestPKI *pki = tls_test_pki_new();            // a temp dir, two CAs
 *   TLSTestCert leaf = tls_test_cert_server();       // "localhost", 127.0.0.1
 *   leaf.not_after = -3600;                          // make it expired
 *   char *dir = tls_test_pki_dir(pki, "srv-expired", true, &leaf);
 *   ...                                              // tls-creds-x509 dir=dir
 *   g_free(dir);
 *   tls_test_pki_free(pki);                          // removes every file
 *
 * Thread contract: one thread makes directories; the files may then be
 * read from anywhere.
 */
#ifndef TESTS_UNIT_TLS_CERTS_H
#define TESTS_UNIT_TLS_CERTS_H

#include <stdbool.h>
#include <time.h>
#include "qemu/typedefs.h"
#include "crypto/tls-creds.h"

typedef struct TLSTestPKI TLSTestPKI;

typedef struct TLSTestCert {
    const char *cn;             /* the subject's common name */
    const char *dns;            /* a DNS subjectAltName, or NULL */
    const char *ip;             /* an IPv4 subjectAltName, or NULL */
    bool server;                /* purpose: TLS server (else TLS client) */
    bool is_ca;                 /* basic constraints say CA (a CA used as a leaf) */
    bool other_ca;              /* signed by the unrelated CA, not the directory's */
    long not_before;            /* activation, seconds from now (negative: past) */
    long not_after;             /* expiration, seconds from now */
} TLSTestCert;

/* A good server certificate for "localhost" and 127.0.0.1, valid for a day. */
TLSTestCert tls_test_cert_server(void);
/* A good client certificate (CN "client"), valid for a day. */
TLSTestCert tls_test_cert_client(void);

TLSTestPKI *tls_test_pki_new(void);
/*
 * Makes the directory @name with ca-cert.pem (the good CA) and, if @leaf,
 * server-cert.pem/server-key.pem (@server) or client-cert.pem/
 * client-key.pem. Returns its path (g_free).
 */
char *tls_test_pki_dir(TLSTestPKI *p, const char *name, bool server, const TLSTestCert *leaf);
/* Makes the directory @name with keys.psk holding "user:hexkey" lines (NULL-ended pairs). */
char *tls_test_psk_dir(TLSTestPKI *p, const char *name, const char *const *user_key_pairs);
void tls_test_pki_free(TLSTestPKI *p);

/* tls-creds-x509 (id "tls0") on @dir, as a test names its options; NULL with @errp. */
TLSCreds *tls_test_creds_x509(const char *dir, bool server, bool verify, bool sanity,
                              Error **errp);
/* The same, aborting the test if it fails. */
TLSCreds *tls_test_creds_x509_ok(const char *dir, bool server, bool verify, bool sanity);

#endif

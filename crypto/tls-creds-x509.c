/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tls-creds-x509: certificates from QEMU's file names in dir (ca-cert.pem,
 * ca-crl.pem, server-cert.pem/server-key.pem or client-cert.pem/
 * client-key.pem, dh-params.pem), checked at load with sanity-check, and
 * the peer's chain, dates and name checked after each handshake with
 * verify-peer.
 *
 * Why check our own certificates at load: a certificate unfit for its
 * endpoint (expired, not from the CA, a CA used as a leaf, a critical
 * purpose that forbids the endpoint) otherwise fails only at the first
 * handshake, on the peer's side, with a message about the peer.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "tls-creds-int.h"
#include <gnutls/x509.h>

/* More CA certificates than any sane ca-cert.pem holds; beyond it, an error. */
#define MAX_CA_CERTS 64

/* QEMU's words for the verification status bits, most telling first. */
static const char *x509_status_text(unsigned status)
{
    if (status & GNUTLS_CERT_SIGNER_NOT_FOUND) {
        return "The certificate hasn't got a known issuer";
    }
    if (status & GNUTLS_CERT_REVOKED) {
        return "The certificate has been revoked";
    }
    if (status & GNUTLS_CERT_EXPIRED) {
        return "The certificate has expired";
    }
    if (status & GNUTLS_CERT_NOT_ACTIVATED) {
        return "The certificate is not yet activated";
    }
    if (status & GNUTLS_CERT_INSECURE_ALGORITHM) {
        return "The certificate uses an insecure algorithm";
    }
    if (status & GNUTLS_CERT_INVALID) {
        return "The certificate is not trusted";
    }
    return "Invalid certificate";
}

/* ---- sanity check of our own certificates ---- */

static bool x509_check_times(gnutls_x509_crt_t crt, const char *path, const char *what,
                             Error **errp)
{
    time_t now = time(NULL);

    if (gnutls_x509_crt_get_expiration_time(crt) < now) {
        error_setg(errp, "The %s certificate %s has expired", what, path);
        return false;
    }
    if (gnutls_x509_crt_get_activation_time(crt) > now) {
        error_setg(errp, "The %s certificate %s is not yet active", what, path);
        return false;
    }
    return true;
}

static bool x509_check_constraints(gnutls_x509_crt_t crt, const char *path, bool server,
                                   bool is_ca, Error **errp)
{
    int st = gnutls_x509_crt_get_basic_constraints(crt, NULL, NULL, NULL);

    if (st > 0 && !is_ca) {
        error_setg(errp, "The certificate %s basic constraints show a CA, but we need one for a %s",
                   path, server ? "server" : "client");
        return false;
    }
    if (st == 0 && is_ca) {
        error_setg(errp, "The certificate %s basic constraints do not show a CA", path);
        return false;
    }
    if (st == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE && is_ca) {
        error_setg(errp, "The certificate %s is missing basic constraints for a CA", path);
        return false;
    }
    if (st < 0 && st != GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE) {
        error_setg(errp, "Unable to query certificate %s basic constraints: %s", path,
                   gnutls_strerror(st));
        return false;
    }
    return true;
}

/* Key usage and purpose only bind when marked critical, as in QEMU. */
static bool x509_check_usage(gnutls_x509_crt_t crt, const char *path, bool is_ca,
                             Error **errp)
{
    unsigned usage = 0, critical = 0;
    int st = gnutls_x509_crt_get_key_usage(crt, &usage, &critical);

    if (st < 0 || !critical) {
        return true;            /* absent (any use) or advisory */
    }
    if (is_ca && !(usage & GNUTLS_KEY_KEY_CERT_SIGN)) {
        error_setg(errp, "Certificate %s usage does not permit certificate signing", path);
        return false;
    }
    if (!is_ca && !(usage & GNUTLS_KEY_DIGITAL_SIGNATURE)) {
        error_setg(errp, "Certificate %s usage does not permit digital signature", path);
        return false;
    }
    if (!is_ca && !(usage & GNUTLS_KEY_KEY_ENCIPHERMENT)) {
        error_setg(errp, "Certificate %s usage does not permit key encipherment", path);
        return false;
    }
    return true;
}

static bool x509_check_purpose(gnutls_x509_crt_t crt, const char *path, bool server,
                               Error **errp)
{
    bool fits = false, any_critical = false, any = false;

    for (unsigned i = 0;; i++) {
        char oid[128];
        size_t len = sizeof(oid);
        unsigned critical = 0;
        int st = gnutls_x509_crt_get_key_purpose_oid(crt, i, oid, &len, &critical);

        if (st == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE) {
            break;
        }
        if (st < 0) {
            error_setg(errp, "Unable to query certificate %s key purpose: %s", path,
                       gnutls_strerror(st));
            return false;
        }
        any = true;
        any_critical |= critical;
        if (!strcmp(oid, GNUTLS_KP_ANY) ||
            !strcmp(oid, server ? GNUTLS_KP_TLS_WWW_SERVER : GNUTLS_KP_TLS_WWW_CLIENT)) {
            fits = true;
        }
    }
    if (any && any_critical && !fits) {
        error_setg(errp, "Certificate %s purpose does not allow use with a TLS %s", path,
                   server ? "server" : "client");
        return false;
    }
    return true;
}

static gnutls_x509_crt_t x509_load_one(const char *path, Error **errp)
{
    gnutls_x509_crt_t crt = NULL;
    gnutls_datum_t data;
    int ret = gnutls_load_file(path, &data);

    if (ret < 0) {
        error_setg(errp, "Unable to read certificate %s: %s", path, gnutls_strerror(ret));
        return NULL;
    }
    ret = gnutls_x509_crt_init(&crt);
    if (ret >= 0) {
        ret = gnutls_x509_crt_import(crt, &data, GNUTLS_X509_FMT_PEM);
    }
    gnutls_free(data.data);
    if (ret < 0) {
        error_setg(errp, "Unable to import certificate %s: %s", path, gnutls_strerror(ret));
        if (crt) {
            gnutls_x509_crt_deinit(crt);
        }
        return NULL;
    }
    return crt;
}

static bool x509_sanity_check(TLSCreds *c, const char *ca_path, const char *cert_path,
                              Error **errp)
{
    gnutls_x509_crt_t cas[MAX_CA_CERTS];
    unsigned ncas = MAX_CA_CERTS;
    gnutls_x509_crt_t crt = NULL;
    gnutls_datum_t data;
    bool ok = false;
    int ret = gnutls_load_file(ca_path, &data);

    if (ret < 0) {
        error_setg(errp, "Unable to import CA certificate list %s", ca_path);
        return false;
    }
    ret = gnutls_x509_crt_list_import(cas, &ncas, &data, GNUTLS_X509_FMT_PEM,
                                      GNUTLS_X509_CRT_LIST_IMPORT_FAIL_IF_EXCEED);
    gnutls_free(data.data);
    if (ret < 0 || ncas == 0) {
        error_setg(errp, "Unable to import CA certificate list %s", ca_path);
        return false;
    }
    for (unsigned i = 0; i < ncas; i++) {
        if (!x509_check_times(cas[i], ca_path, "CA", errp) ||
            !x509_check_constraints(cas[i], ca_path, c->server, true, errp) ||
            !x509_check_usage(cas[i], ca_path, true, errp)) {
            goto out;
        }
    }
    if (cert_path) {
        const char *what = c->server ? "server" : "client";
        unsigned status = 0;

        crt = x509_load_one(cert_path, errp);
        if (!crt ||
            !x509_check_times(crt, cert_path, what, errp) ||
            !x509_check_constraints(crt, cert_path, c->server, false, errp) ||
            !x509_check_usage(crt, cert_path, false, errp) ||
            !x509_check_purpose(crt, cert_path, c->server, errp)) {
            goto out;
        }
        ret = gnutls_x509_crt_list_verify(&crt, 1, cas, ncas, NULL, 0, 0, &status);
        if (ret < 0 || status) {
            error_setg(errp, "Our own certificate %s failed validation against %s: %s",
                       cert_path, ca_path,
                       ret < 0 ? gnutls_strerror(ret) : x509_status_text(status));
            goto out;
        }
    }
    ok = true;
out:
    if (crt) {
        gnutls_x509_crt_deinit(crt);
    }
    for (unsigned i = 0; i < ncas; i++) {
        gnutls_x509_crt_deinit(cas[i]);
    }
    return ok;
}

/* ---- the row ---- */

static bool x509_load(TLSCreds *c, const TLSCredsOptions *o, Error **errp)
{
    g_autofree char *ca = tls_creds_path(c, "ca-cert.pem");
    g_autofree char *crl = tls_creds_path(c, "ca-crl.pem");
    g_autofree char *cert = tls_creds_path(c, c->server ? "server-cert.pem" : "client-cert.pem");
    g_autofree char *key = tls_creds_path(c, c->server ? "server-key.pem" : "client-key.pem");
    Error *local = NULL;
    bool have_crl, have_cert = false;
    int ret;

    /* A client's certificate is optional: only a server with verify-peer asks for it. */
    if (!tls_creds_file_usable(ca, true, errp)) {
        return false;
    }
    have_crl = tls_creds_file_usable(crl, false, &local);
    if (!local) {
        have_cert = tls_creds_file_usable(cert, c->server, &local);
    }
    if (!local && (have_cert || c->server)) {
        tls_creds_file_usable(key, true, &local);
    }
    if (local) {
        error_propagate(errp, local);
        return false;
    }
    if (o->sanity_check && !x509_sanity_check(c, ca, have_cert ? cert : NULL, errp)) {
        return false;
    }
    ret = gnutls_certificate_allocate_credentials(&c->x509);
    if (ret < 0) {
        c->x509 = NULL;
        error_setg(errp, "Cannot allocate credentials: %s", gnutls_strerror(ret));
        return false;
    }
    ret = gnutls_certificate_set_x509_trust_file(c->x509, ca, GNUTLS_X509_FMT_PEM);
    if (ret < 0) {
        error_setg(errp, "Cannot load CA certificate '%s': %s", ca, gnutls_strerror(ret));
        return false;
    }
    if (have_cert) {
        ret = gnutls_certificate_set_x509_key_file2(c->x509, cert, key, GNUTLS_X509_FMT_PEM,
                                                    o->key_password, 0);
        if (ret < 0) {
            error_setg(errp, "Cannot load certificate '%s' & key '%s': %s", cert, key,
                       gnutls_strerror(ret));
            return false;
        }
    }
    if (have_crl) {
        ret = gnutls_certificate_set_x509_crl_file(c->x509, crl, GNUTLS_X509_FMT_PEM);
        if (ret < 0) {
            error_setg(errp, "Cannot load CRL '%s': %s", crl, gnutls_strerror(ret));
            return false;
        }
    }
    if (c->server) {
        if (!tls_creds_load_dh(c, errp)) {
            return false;
        }
        /* Without a file, the RFC 7919 groups: no slow generation at start. */
        if (c->dh) {
            gnutls_certificate_set_dh_params(c->x509, c->dh);
        } else {
            gnutls_certificate_set_known_dh_params(c->x509, GNUTLS_SEC_PARAM_MEDIUM);
        }
    }
    return true;
}

static bool x509_session_setup(TLSCreds *c, gnutls_session_t s, Error **errp)
{
    int ret = gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, c->x509);

    if (ret < 0) {
        error_setg(errp, "Cannot set session credentials: %s", gnutls_strerror(ret));
        return false;
    }
    if (c->server) {
        /*
         * REQUEST, not REQUIRE, as QEMU: a client without a certificate
         * then fails in x509_check_peer with QEMU's "No certificate was
         * found", and learns it from our alert on its first read.
         */
        gnutls_certificate_server_set_request(s, c->verify_peer ? GNUTLS_CERT_REQUEST
                                                                : GNUTLS_CERT_IGNORE);
    }
    return true;
}

static char *x509_dn(gnutls_x509_crt_t crt, Error **errp)
{
    size_t len = 0;
    char *dn;
    int ret = gnutls_x509_crt_get_dn(crt, NULL, &len);

    if (ret != GNUTLS_E_SHORT_MEMORY_BUFFER && ret < 0) {
        error_setg(errp, "Cannot get client distinguished name: %s", gnutls_strerror(ret));
        return NULL;
    }
    dn = g_malloc0(len + 1);
    ret = gnutls_x509_crt_get_dn(crt, dn, &len);
    if (ret < 0) {
        g_free(dn);
        error_setg(errp, "Cannot get client distinguished name: %s", gnutls_strerror(ret));
        return NULL;
    }
    return dn;
}

static bool x509_check_peer(TLSCreds *c, gnutls_session_t s, const char *hostname,
                            char **identity, Error **errp)
{
    const gnutls_datum_t *certs;
    unsigned ncerts = 0, status = 0;
    gnutls_x509_crt_t crt;
    time_t now = time(NULL);
    bool ok = false;
    int ret;

    if (!c->verify_peer) {
        /* An unverified name must not reach authorization: no identity. */
        return true;
    }
    ret = gnutls_certificate_verify_peers2(s, &status);
    if (ret < 0) {
        error_setg(errp, "Verify failed: %s", gnutls_strerror(ret));
        return false;
    }
    if (status) {
        error_setg(errp, "%s", x509_status_text(status));
        return false;
    }
    if (gnutls_certificate_type_get(s) != GNUTLS_CRT_X509) {
        error_setg(errp, "Only x509 certificates are supported");
        return false;
    }
    certs = gnutls_certificate_get_peers(s, &ncerts);
    if (!certs || !ncerts) {
        error_setg(errp, "No certificate peers");
        return false;
    }
    ret = gnutls_x509_crt_init(&crt);
    if (ret < 0) {
        error_setg(errp, "Cannot initialize certificate: %s", gnutls_strerror(ret));
        return false;
    }
    /* The leaf: verify_peers2 covered the chain; the dates are checked here again, as QEMU does. */
    ret = gnutls_x509_crt_import(crt, &certs[0], GNUTLS_X509_FMT_DER);
    if (ret < 0) {
        error_setg(errp, "Cannot import certificate: %s", gnutls_strerror(ret));
    } else if (gnutls_x509_crt_get_expiration_time(crt) < now) {
        error_setg(errp, "The certificate has expired");
    } else if (gnutls_x509_crt_get_activation_time(crt) > now) {
        error_setg(errp, "The certificate is not yet activated");
    } else if (!c->server && hostname && !gnutls_x509_crt_check_hostname(crt, hostname)) {
        error_setg(errp, "Certificate does not match the hostname %s", hostname);
    } else {
        *identity = x509_dn(crt, errp);
        ok = *identity != NULL;
    }
    gnutls_x509_crt_deinit(crt);
    return ok;
}

static void x509_release(TLSCreds *c)
{
    if (c->x509) {
        gnutls_certificate_free_credentials(c->x509);
    }
}

const TLSCredsRow tls_creds_x509_row = {
    .type = "tls-creds-x509",
    .kind = TLS_CREDS_X509,
    .priority_extra = "",
    .dir_required = true,
    .load = x509_load,
    .session_setup = x509_session_setup,
    .check_peer = x509_check_peer,
    .release = x509_release,
};

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Test certificates made with gnutls's x509 API (tls-certs.h). ECDSA P-256
 * keys, made once per PKI, so a directory costs a signature, not a key
 * generation.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "crypto/tls-creds.h"
#include "tls-certs.h"
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <arpa/inet.h>

struct TLSTestPKI {
    char *root;                 /* the temp dir holding every directory made */
    gnutls_x509_privkey_t ca_key, other_key, leaf_key;
    gnutls_x509_crt_t ca, other;
    unsigned serial;
};

TLSTestCert tls_test_cert_server(void)
{
    return (TLSTestCert) { .cn = "localhost", .dns = "localhost", .ip = "127.0.0.1",
                           .server = true, .not_before = -3600, .not_after = 86400 };
}

TLSTestCert tls_test_cert_client(void)
{
    return (TLSTestCert) { .cn = "client", .server = false,
                           .not_before = -3600, .not_after = 86400 };
}

static gnutls_x509_privkey_t make_key(void)
{
    gnutls_x509_privkey_t k;

    g_assert_cmpint(gnutls_x509_privkey_init(&k), ==, 0);
    g_assert_cmpint(gnutls_x509_privkey_generate(k, GNUTLS_PK_ECDSA,
                                                 GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1),
                                                 0), ==, 0);
    return k;
}

/* Subject, dates, key and extensions of @spec, signed by @issuer (NULL: self-signed). */
static gnutls_x509_crt_t make_cert(TLSTestPKI *p, const TLSTestCert *spec,
                                   gnutls_x509_privkey_t key, gnutls_x509_crt_t issuer,
                                   gnutls_x509_privkey_t issuer_key)
{
    gnutls_x509_crt_t c;
    time_t now = time(NULL);
    unsigned char serial[4];
    unsigned char keyid[64];
    size_t keyid_len = sizeof(keyid);

    p->serial++;
    memcpy(serial, &p->serial, sizeof(serial));
    serial[0] &= 0x7f;          /* positive */
    g_assert_cmpint(gnutls_x509_crt_init(&c), ==, 0);
    g_assert_cmpint(gnutls_x509_crt_set_version(c, 3), ==, 0);
    g_assert_cmpint(gnutls_x509_crt_set_serial(c, serial, sizeof(serial)), ==, 0);
    g_assert_cmpint(gnutls_x509_crt_set_dn_by_oid(c, GNUTLS_OID_X520_ORGANIZATION_NAME, 0,
                                                  "qemu-mig test", 13), ==, 0);
    g_assert_cmpint(gnutls_x509_crt_set_dn_by_oid(c, GNUTLS_OID_X520_COMMON_NAME, 0, spec->cn,
                                                  strlen(spec->cn)), ==, 0);
    g_assert_cmpint(gnutls_x509_crt_set_activation_time(c, now + spec->not_before), ==, 0);
    g_assert_cmpint(gnutls_x509_crt_set_expiration_time(c, now + spec->not_after), ==, 0);
    g_assert_cmpint(gnutls_x509_crt_set_key(c, key), ==, 0);
    g_assert_cmpint(gnutls_x509_crt_set_basic_constraints(c, spec->is_ca, -1), ==, 0);
    if (spec->is_ca && !issuer) {
        g_assert_cmpint(gnutls_x509_crt_set_key_usage(c, GNUTLS_KEY_KEY_CERT_SIGN |
                                                         GNUTLS_KEY_CRL_SIGN), ==, 0);
    } else {
        g_assert_cmpint(gnutls_x509_crt_set_key_usage(c, GNUTLS_KEY_DIGITAL_SIGNATURE |
                                                         GNUTLS_KEY_KEY_ENCIPHERMENT), ==, 0);
        g_assert_cmpint(gnutls_x509_crt_set_key_purpose_oid(
                            c, spec->server ? GNUTLS_KP_TLS_WWW_SERVER : GNUTLS_KP_TLS_WWW_CLIENT,
                            0), ==, 0);
    }
    if (spec->dns) {
        g_assert_cmpint(gnutls_x509_crt_set_subject_alt_name(c, GNUTLS_SAN_DNSNAME, spec->dns,
                                                             strlen(spec->dns),
                                                             GNUTLS_FSAN_APPEND), ==, 0);
    }
    if (spec->ip) {
        struct in_addr a;

        g_assert_cmpint(inet_pton(AF_INET, spec->ip, &a), ==, 1);
        g_assert_cmpint(gnutls_x509_crt_set_subject_alt_name(c, GNUTLS_SAN_IPADDRESS, &a,
                                                             sizeof(a), GNUTLS_FSAN_APPEND), ==, 0);
    }
    g_assert_cmpint(gnutls_x509_crt_get_key_id(c, 0, keyid, &keyid_len), ==, 0);
    g_assert_cmpint(gnutls_x509_crt_set_subject_key_id(c, keyid, keyid_len), ==, 0);
    if (issuer) {
        keyid_len = sizeof(keyid);
        g_assert_cmpint(gnutls_x509_crt_get_subject_key_id(issuer, keyid, &keyid_len, NULL), ==, 0);
        g_assert_cmpint(gnutls_x509_crt_set_authority_key_id(c, keyid, keyid_len), ==, 0);
    }
    g_assert_cmpint(gnutls_x509_crt_sign2(c, issuer ? issuer : c,
                                          issuer ? issuer_key : key, GNUTLS_DIG_SHA256, 0), ==, 0);
    return c;
}

static void write_datum(const char *dir, const char *name, gnutls_datum_t *d)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);

    g_assert_true(g_file_set_contents(path, (const char *)d->data, d->size, NULL));
    gnutls_free(d->data);
}

static void write_cert(const char *dir, const char *name, gnutls_x509_crt_t c)
{
    gnutls_datum_t d;

    g_assert_cmpint(gnutls_x509_crt_export2(c, GNUTLS_X509_FMT_PEM, &d), ==, 0);
    write_datum(dir, name, &d);
}

static void write_key(const char *dir, const char *name, gnutls_x509_privkey_t k)
{
    gnutls_datum_t d;

    g_assert_cmpint(gnutls_x509_privkey_export2(k, GNUTLS_X509_FMT_PEM, &d), ==, 0);
    write_datum(dir, name, &d);
}

TLSTestPKI *tls_test_pki_new(void)
{
    TLSTestPKI *p = g_new0(TLSTestPKI, 1);
    TLSTestCert ca = { .cn = "qemu-mig test CA", .is_ca = true,
                       .not_before = -86400, .not_after = 10 * 86400 };
    TLSTestCert other = ca;

    other.cn = "some other CA";
    p->root = g_dir_make_tmp("tls-certs-XXXXXX", NULL);
    g_assert_nonnull(p->root);
    p->ca_key = make_key();
    p->other_key = make_key();
    p->leaf_key = make_key();
    p->ca = make_cert(p, &ca, p->ca_key, NULL, NULL);
    p->other = make_cert(p, &other, p->other_key, NULL, NULL);
    return p;
}

char *tls_test_pki_dir(TLSTestPKI *p, const char *name, bool server, const TLSTestCert *leaf)
{
    char *dir = g_build_filename(p->root, name, NULL);

    g_assert_cmpint(mkdir(dir, 0700), ==, 0);
    write_cert(dir, "ca-cert.pem", p->ca);
    if (leaf) {
        gnutls_x509_crt_t c = make_cert(p, leaf, p->leaf_key,
                                        leaf->other_ca ? p->other : p->ca,
                                        leaf->other_ca ? p->other_key : p->ca_key);

        write_cert(dir, server ? "server-cert.pem" : "client-cert.pem", c);
        write_key(dir, server ? "server-key.pem" : "client-key.pem", p->leaf_key);
        gnutls_x509_crt_deinit(c);
    }
    return dir;
}

char *tls_test_psk_dir(TLSTestPKI *p, const char *name, const char *const *pairs)
{
    char *dir = g_build_filename(p->root, name, NULL);
    g_autofree char *path = g_build_filename(dir, "keys.psk", NULL);
    GString *s = g_string_new(NULL);

    g_assert_cmpint(mkdir(dir, 0700), ==, 0);
    for (size_t i = 0; pairs[i] && pairs[i + 1]; i += 2) {
        g_string_append_printf(s, "%s:%s\n", pairs[i], pairs[i + 1]);
    }
    g_assert_true(g_file_set_contents(path, s->str, s->len, NULL));
    g_string_free(s, true);
    return dir;
}

static void rm_rf(const char *path)
{
    GDir *d = g_dir_open(path, 0, NULL);
    const char *n;

    if (d) {
        while ((n = g_dir_read_name(d))) {
            g_autofree char *sub = g_build_filename(path, n, NULL);

            rm_rf(sub);
        }
        g_dir_close(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

void tls_test_pki_free(TLSTestPKI *p)
{
    rm_rf(p->root);
    gnutls_x509_crt_deinit(p->ca);
    gnutls_x509_crt_deinit(p->other);
    gnutls_x509_privkey_deinit(p->ca_key);
    gnutls_x509_privkey_deinit(p->other_key);
    gnutls_x509_privkey_deinit(p->leaf_key);
    g_free(p->root);
    g_free(p);
}

TLSCreds *tls_test_creds_x509(const char *dir, bool server, bool verify, bool sanity,
                              Error **errp)
{
    TLSCredsOptions o = { .type = "tls-creds-x509", .id = "tls0", .dir = dir,
                          .endpoint_server = server, .verify_peer = verify,
                          .sanity_check = sanity };

    return tls_creds_new(&o, errp);
}

TLSCreds *tls_test_creds_x509_ok(const char *dir, bool server, bool verify, bool sanity)
{
    return tls_test_creds_x509(dir, server, verify, sanity, &error_abort);
}

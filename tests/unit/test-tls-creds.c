/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for loading TLS credentials (crypto/): QEMU's messages for a
 * missing file, the sanity check of our own certificates (expired, not
 * yet active, from another CA, a CA used as a leaf), a client without a
 * certificate, a PSK username missing from keys.psk, references.
 * Handshakes are test-channel-tls.c's.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "crypto/tls-creds.h"
#include "tls-certs.h"

static TLSTestPKI *pki;
static char *good_server_dir;

static void assert_err(Error *err, const char *text)
{
    g_assert_nonnull(err);
    if (!strstr(error_get_pretty(err), text)) {
        g_error("expected \"%s\" in \"%s\"", text, error_get_pretty(err));
    }
}

static void test_load_missing(void)
{
    g_autofree char *dir = g_build_filename(g_get_tmp_dir(), "no-such-tls-dir", NULL);
    g_autofree char *want = g_strdup_printf("Unable to access credentials %s/ca-cert.pem: "
                                            "No such file or directory", dir);
    g_autofree char *only_ca = tls_test_pki_dir(pki, "only-ca", true, NULL);
    g_autofree char *want_cert = g_strdup_printf("Unable to access credentials "
                                                 "%s/server-cert.pem: No such file", only_ca);
    Error *err = NULL;
    TLSCreds *c;

    g_assert_null(tls_test_creds_x509(dir, true, true, true, &err));
    g_assert_cmpstr(error_get_pretty(err), ==, want);
    error_free(err);
    err = NULL;
    /* A server needs its certificate; a client may go without one. */
    g_assert_null(tls_test_creds_x509(only_ca, true, true, true, &err));
    assert_err(err, want_cert);
    error_free(err);
    c = tls_test_creds_x509_ok(only_ca, false, true, true);
    g_assert_false(tls_creds_is_server(c));
    g_assert_cmpint(tls_creds_kind(c), ==, TLS_CREDS_X509);
    tls_creds_unref(c);
}

static void expect_load_error(const char *name, bool server, TLSTestCert leaf, const char *text)
{
    g_autofree char *dir = tls_test_pki_dir(pki, name, server, &leaf);
    Error *err = NULL;
    TLSCreds *c;

    g_assert_null(tls_test_creds_x509(dir, server, true, true, &err));
    assert_err(err, text);
    error_free(err);
    /* sanity-check=off loads it: the refusal was the check's. */
    c = tls_test_creds_x509_ok(dir, server, true, false);
    tls_creds_unref(c);
}

static void test_load_sanity(void)
{
    TLSTestCert s = tls_test_cert_server();
    TLSTestCert cl = tls_test_cert_client();

    s.not_after = -60;
    expect_load_error("load-expired", true, s, "has expired");
    s = tls_test_cert_server();
    s.not_before = 3600;
    expect_load_error("load-future", true, s, "is not yet active");
    s = tls_test_cert_server();
    s.other_ca = true;
    expect_load_error("load-other-ca", true, s,
                      "failed validation against");
    s = tls_test_cert_server();
    s.is_ca = true;
    expect_load_error("load-leaf-ca", true, s,
                      "basic constraints show a CA, but we need one for a server");
    cl.not_after = -60;
    expect_load_error("load-client-expired", false, cl, "The client certificate");
}

static void test_refcount(void)
{
    TLSCreds *c = tls_test_creds_x509_ok(good_server_dir, true, true, true);

    g_assert_false(tls_creds_in_use(c));
    tls_creds_ref(c);
    g_assert_true(tls_creds_in_use(c));
    tls_creds_unref(c);
    g_assert_false(tls_creds_in_use(c));
    g_assert_cmpstr(tls_creds_id(c), ==, "tls0");
    tls_creds_unref(c);
}

static void test_psk_username(void)
{
    static const char *const keys[] = { "qemu", "000102030405060708090a0b0c0d0e0f",
                                        "bad", "xyz", NULL };
    g_autofree char *dir = tls_test_psk_dir(pki, "psk", keys);
    TLSCredsOptions o = { .type = "tls-creds-psk", .dir = dir, .username = "nobody" };
    Error *err = NULL;
    TLSCreds *c;

    g_assert_null(tls_creds_new(&o, &err));
    assert_err(err, "Username nobody not found in pre-shared key file");
    error_free(err);
    err = NULL;
    o.username = "bad";
    g_assert_null(tls_creds_new(&o, &err));
    assert_err(err, "is not a hexadecimal string");
    error_free(err);
    o.username = NULL;          /* "qemu" */
    c = tls_creds_new(&o, &error_abort);
    g_assert_cmpint(tls_creds_kind(c), ==, TLS_CREDS_PSK);
    tls_creds_unref(c);
}

static void test_bad_priority(void)
{
    TLSCredsOptions o = { .type = "tls-creds-anon", .priority = "NORMAL:+NO-SUCH-THING" };
    Error *err = NULL;

    g_assert_null(tls_creds_new(&o, &err));
    assert_err(err, "Unable to prepare priority string 'NORMAL:+NO-SUCH-THING'");
    error_free(err);
}

int main(int argc, char **argv)
{
    TLSTestCert s = tls_test_cert_server();
    int ret;

    g_test_init(&argc, &argv, NULL);
    pki = tls_test_pki_new();
    good_server_dir = tls_test_pki_dir(pki, "server", true, &s);
    g_test_add_func("/tls-creds/missing", test_load_missing);
    g_test_add_func("/tls-creds/sanity", test_load_sanity);
    g_test_add_func("/tls-creds/refcount", test_refcount);
    g_test_add_func("/tls-creds/psk-username", test_psk_username);
    g_test_add_func("/tls-creds/bad-priority", test_bad_priority);
    ret = g_test_run();
    g_free(good_server_dir);
    tls_test_pki_free(pki);
    return ret;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tls-creds-anon: encryption without authentication (anonymous
 * Diffie-Hellman, TLS 1.2 only since TLS 1.3 has no anonymous key
 * exchange). No peer identity; dir, if given, may hold dh-params.pem.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "tls-creds-int.h"

static bool anon_load(TLSCreds *c, const TLSCredsOptions *o, Error **errp)
{
    int ret;

    if (!c->server) {
        ret = gnutls_anon_allocate_client_credentials(&c->anon_client);
        if (ret < 0) {
            c->anon_client = NULL;
            error_setg(errp, "Cannot allocate credentials: %s", gnutls_strerror(ret));
            return false;
        }
        return true;
    }
    ret = gnutls_anon_allocate_server_credentials(&c->anon_server);
    if (ret < 0) {
        c->anon_server = NULL;
        error_setg(errp, "Cannot allocate credentials: %s", gnutls_strerror(ret));
        return false;
    }
    if (!tls_creds_load_dh(c, errp)) {
        return false;
    }
    if (c->dh) {
        gnutls_anon_set_server_dh_params(c->anon_server, c->dh);
    } else {
        gnutls_anon_set_server_known_dh_params(c->anon_server, GNUTLS_SEC_PARAM_MEDIUM);
    }
    return true;
}

static bool anon_session_setup(TLSCreds *c, gnutls_session_t s, Error **errp)
{
    int ret = c->server ? gnutls_credentials_set(s, GNUTLS_CRD_ANON, c->anon_server)
                        : gnutls_credentials_set(s, GNUTLS_CRD_ANON, c->anon_client);

    if (ret < 0) {
        error_setg(errp, "Cannot set session credentials: %s", gnutls_strerror(ret));
        return false;
    }
    return true;
}

static bool anon_check_peer(TLSCreds *c, gnutls_session_t s, const char *hostname,
                            char **identity, Error **errp)
{
    return true;
}

static void anon_release(TLSCreds *c)
{
    if (c->anon_server) {
        gnutls_anon_free_server_credentials(c->anon_server);
    }
    if (c->anon_client) {
        gnutls_anon_free_client_credentials(c->anon_client);
    }
}

const TLSCredsRow tls_creds_anon_row = {
    .type = "tls-creds-anon",
    .kind = TLS_CREDS_ANON,
    .priority_extra = ":+ANON-ECDH:+ANON-DH",
    .dir_required = false,
    .load = anon_load,
    .session_setup = anon_session_setup,
    .check_peer = anon_check_peer,
    .release = anon_release,
};

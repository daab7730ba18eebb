/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tls-creds-psk: pre-shared keys from dir/keys.psk, lines "username:hexkey".
 * A server looks the client's username up in the file at each handshake
 * (gnutls reads it), so keys can be added without a restart; a client
 * takes its own username's key once, at load. The identity that
 * authorization sees is the client's username.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "tls-creds-int.h"

#define PSK_FILE "keys.psk"
/* gnutls's own limit on a PSK username; longer lines are someone else's. */
#define PSK_MAX_USERNAME 128

/* The hex key for @username in the file's @text, or NULL. */
static char *psk_find_key(const char *text, const char *username)
{
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    size_t ulen = strlen(username);

    for (size_t i = 0; lines[i]; i++) {
        char *l = g_strchomp(lines[i]);

        if (strncmp(l, username, ulen) == 0 && l[ulen] == ':') {
            return g_strdup(l + ulen + 1);
        }
    }
    return NULL;
}

static bool psk_hex_ok(const char *hex)
{
    size_t n = strlen(hex);

    if (n == 0 || n % 2) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (!g_ascii_isxdigit(hex[i])) {
            return false;
        }
    }
    return true;
}

static bool psk_load_client(TLSCreds *c, const char *path, Error **errp)
{
    g_autofree char *text = NULL;
    g_autofree char *hex = NULL;
    g_autoptr(GError) gerr = NULL;
    gnutls_datum_t key;
    int ret;

    if (!g_file_get_contents(path, &text, NULL, &gerr)) {
        error_setg(errp, "Unable to read %s: %s", path, gerr->message);
        return false;
    }
    hex = psk_find_key(text, c->username);
    if (!hex) {
        error_setg(errp, "Username %s not found in pre-shared key file %s", c->username, path);
        return false;
    }
    if (!psk_hex_ok(hex)) {
        error_setg(errp, "Key for username %s in %s is not a hexadecimal string", c->username,
                   path);
        return false;
    }
    ret = gnutls_psk_allocate_client_credentials(&c->psk_client);
    if (ret < 0) {
        c->psk_client = NULL;
        error_setg(errp, "Cannot allocate credentials: %s", gnutls_strerror(ret));
        return false;
    }
    key.data = (unsigned char *)hex;
    key.size = strlen(hex);
    ret = gnutls_psk_set_client_credentials(c->psk_client, c->username, &key,
                                            GNUTLS_PSK_KEY_HEX);
    if (ret < 0) {
        error_setg(errp, "Cannot set PSK client credentials: %s", gnutls_strerror(ret));
        return false;
    }
    return true;
}

static bool psk_load_server(TLSCreds *c, const char *path, Error **errp)
{
    int ret = gnutls_psk_allocate_server_credentials(&c->psk_server);

    if (ret < 0) {
        c->psk_server = NULL;
        error_setg(errp, "Cannot allocate credentials: %s", gnutls_strerror(ret));
        return false;
    }
    ret = gnutls_psk_set_server_credentials_file(c->psk_server, path);
    if (ret < 0) {
        error_setg(errp, "Cannot set PSK server credentials %s: %s", path, gnutls_strerror(ret));
        return false;
    }
    if (!tls_creds_load_dh(c, errp)) {
        return false;
    }
    if (c->dh) {
        gnutls_psk_set_server_dh_params(c->psk_server, c->dh);
    } else {
        gnutls_psk_set_server_known_dh_params(c->psk_server, GNUTLS_SEC_PARAM_MEDIUM);
    }
    return true;
}

static bool psk_load(TLSCreds *c, const TLSCredsOptions *o, Error **errp)
{
    g_autofree char *path = tls_creds_path(c, PSK_FILE);
    const char *user = o->username && *o->username ? o->username : "qemu";

    if (!tls_creds_file_usable(path, true, errp)) {
        return false;
    }
    if (c->server) {
        return psk_load_server(c, path, errp);
    }
    if (strlen(user) > PSK_MAX_USERNAME || strchr(user, ':') || strchr(user, '\n')) {
        error_setg(errp, "Invalid PSK username '%s'", user);
        return false;
    }
    c->username = g_strdup(user);
    return psk_load_client(c, path, errp);
}

static bool psk_session_setup(TLSCreds *c, gnutls_session_t s, Error **errp)
{
    int ret = c->server ? gnutls_credentials_set(s, GNUTLS_CRD_PSK, c->psk_server)
                        : gnutls_credentials_set(s, GNUTLS_CRD_PSK, c->psk_client);

    if (ret < 0) {
        error_setg(errp, "Cannot set session credentials: %s", gnutls_strerror(ret));
        return false;
    }
    return true;
}

/* The key proved itself in the handshake: only the server learns an identity. */
static bool psk_check_peer(TLSCreds *c, gnutls_session_t s, const char *hostname,
                           char **identity, Error **errp)
{
    const char *user;

    if (!c->server) {
        return true;
    }
    user = gnutls_psk_server_get_username(s);
    if (!user) {
        error_setg(errp, "No PSK username in the TLS session");
        return false;
    }
    *identity = g_strdup(user);
    return true;
}

static void psk_release(TLSCreds *c)
{
    if (c->psk_server) {
        gnutls_psk_free_server_credentials(c->psk_server);
    }
    if (c->psk_client) {
        gnutls_psk_free_client_credentials(c->psk_client);
    }
}

const TLSCredsRow tls_creds_psk_row = {
    .type = "tls-creds-psk",
    .kind = TLS_CREDS_PSK,
    .priority_extra = ":+ECDHE-PSK:+DHE-PSK:+PSK",
    .dir_required = true,
    .load = psk_load,
    .session_setup = psk_session_setup,
    .check_peer = psk_check_peer,
    .release = psk_release,
};

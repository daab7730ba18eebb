/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * An nbd node's server address, from options or from QEMU's filename
 * syntaxes (nbd-addr.h lists them). Names and paths are checked only for
 * what the protocol bounds (an export name of at most NBD_MAX_STRING
 * bytes); the connect says whether the rest exists.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/cutils.h"
#include "qemu/option.h"
#include "block/nbd-proto.h"
#include "nbd-addr.h"

#define NBD_DEFAULT_PORT_STR "10809"

void nbd_addr_clear(NbdAddr *a)
{
    g_free(a->path);
    g_free(a->host);
    g_free(a->port);
    g_free(a->export);
    memset(a, 0, sizeof(*a));
}

static bool parse_uri(const char *fn, NbdAddr *a, Error **errp)
{
    g_autoptr(GError) gerr = NULL;
    g_autoptr(GUri) uri = g_uri_parse(fn, G_URI_FLAGS_ENCODED_QUERY | G_URI_FLAGS_NON_DNS,
                                      &gerr);
    g_autoptr(GHashTable) params = NULL;
    const char *scheme, *path, *host, *query;
    int port;

    if (!uri) {
        error_setg(errp, "Invalid NBD URI '%s': %s", fn, gerr->message);
        return false;
    }
    scheme = g_uri_get_scheme(uri);
    path = g_uri_get_path(uri);
    host = g_uri_get_host(uri);
    query = g_uri_get_query(uri);
    port = g_uri_get_port(uri);
    a->is_unix = !strcmp(scheme, "nbd+unix");
    if (!a->is_unix && strcmp(scheme, "nbd") && strcmp(scheme, "nbd+tcp")) {
        error_setg(errp, "Invalid NBD URI '%s': unknown scheme '%s'", fn, scheme);
        return false;
    }
    a->export = g_strdup(path[0] == '/' ? path + 1 : path);
    if (a->is_unix) {
        const char *sock;

        if ((host && host[0]) || port != -1) {
            error_setg(errp, "Invalid NBD URI '%s': nbd+unix takes no host or port", fn);
            return false;
        }
        params = query ? g_uri_parse_params(query, -1, "&", G_URI_PARAMS_NONE, NULL) : NULL;
        sock = params ? g_hash_table_lookup(params, "socket") : NULL;
        if (!sock || !sock[0] || g_hash_table_size(params) != 1) {
            error_setg(errp, "Invalid NBD URI '%s': nbd+unix takes exactly ?socket=PATH", fn);
            return false;
        }
        a->path = g_strdup(sock);
        return true;
    }
    if (query) {
        error_setg(errp, "Invalid NBD URI '%s': nbd:// takes no query", fn);
        return false;
    }
    if (!host || !host[0]) {
        error_setg(errp, "Invalid NBD URI '%s': no host", fn);
        return false;
    }
    a->host = g_strdup(host);
    a->port = port == -1 ? g_strdup(NBD_DEFAULT_PORT_STR) : g_strdup_printf("%d", port);
    return true;
}

/* nbd:unix:PATH[:exportname=NAME] and nbd:HOST:PORT[:exportname=NAME] */
static bool parse_legacy(const char *fn, const char *rest, NbdAddr *a, Error **errp)
{
    const char *ex = strstr(rest, ":exportname=");
    g_autofree char *addr = g_strndup(rest, ex ? (size_t)(ex - rest) : strlen(rest));
    const char *p, *sep;

    a->export = g_strdup(ex ? ex + strlen(":exportname=") : "");
    if (strstart(addr, "unix:", &p)) {
        a->is_unix = true;
        a->path = g_strdup(p);
        if (!p[0]) {
            error_setg(errp, "Invalid NBD filename '%s': no socket path", fn);
            return false;
        }
        return true;
    }
    if (addr[0] == '[') {
        sep = strchr(addr, ']');
        if (!sep || sep[1] != ':') {
            error_setg(errp, "Invalid NBD filename '%s': expected [HOST]:PORT", fn);
            return false;
        }
        a->host = g_strndup(addr + 1, sep - addr - 1);
        a->port = g_strdup(sep + 2);
    } else {
        sep = strrchr(addr, ':');
        if (!sep) {
            error_setg(errp, "Invalid NBD filename '%s': expected HOST:PORT or unix:PATH", fn);
            return false;
        }
        a->host = g_strndup(addr, sep - addr);
        a->port = g_strdup(sep + 1);
    }
    if (!a->host[0] || !a->port[0]) {
        error_setg(errp, "Invalid NBD filename '%s': expected HOST:PORT", fn);
        return false;
    }
    return true;
}

bool nbd_addr_parse_filename(const char *fn, NbdAddr *a, Error **errp)
{
    const char *rest;

    nbd_addr_clear(a);
    if (strstr(fn, "://")) {
        return parse_uri(fn, a, errp);
    }
    if (strstart(fn, "nbd:", &rest)) {
        return parse_legacy(fn, rest, a, errp);
    }
    error_setg(errp, "Invalid NBD filename '%s'", fn);
    return false;
}

static bool check_export(const NbdAddr *a, Error **errp)
{
    if (strlen(a->export) > NBD_MAX_STRING) {
        error_setg(errp, "export name too long to send to server");
        return false;
    }
    return true;
}

bool nbd_addr_from_opts(QemuOpts *opts, const char *prefix, NbdAddr *a, Error **errp)
{
    const char *fn = qemu_opt_get(opts, "filename");
    const char *type = qemu_opt_get(opts, "server.type");
    bool legacy = qemu_opt_has(opts, "path") || qemu_opt_has(opts, "host");
    static const char *const server_keys[] = {
        "server.type", "server.path", "server.host", "server.port", "path", "host", "port",
        "export", NULL,
    };

    nbd_addr_clear(a);
    if (fn) {
        for (size_t i = 0; server_keys[i]; i++) {
            if (qemu_opt_has(opts, server_keys[i])) {
                error_setg(errp, "%s%s and a file name may not be specified at the same time",
                           prefix, server_keys[i]);
                return false;
            }
        }
        return nbd_addr_parse_filename(fn, a, errp) && check_export(a, errp);
    }
    a->export = g_strdup(qemu_opt_get(opts, "export") ?: "");
    if (legacy && type) {
        error_setg(errp, "Cannot use '%sserver' and path/host at the same time", prefix);
        return false;
    }
    if (legacy) {
        if (qemu_opt_has(opts, "path") && qemu_opt_has(opts, "host")) {
            error_setg(errp, "%spath and %shost may not be used at the same time",
                       prefix, prefix);
            return false;
        }
        a->is_unix = qemu_opt_has(opts, "path");
        a->path = g_strdup(qemu_opt_get(opts, "path"));
        a->host = g_strdup(qemu_opt_get(opts, "host"));
        a->port = g_strdup(qemu_opt_get(opts, "port") ?: NBD_DEFAULT_PORT_STR);
        return check_export(a, errp);
    }
    if (!type) {
        error_setg(errp, "NBD server address missing");
        return false;
    }
    if (!strcmp(type, "unix")) {
        a->is_unix = true;
        a->path = g_strdup(qemu_opt_get(opts, "server.path"));
        if (!a->path) {
            error_setg(errp, "Parameter '%sserver.path' is missing", prefix);
            return false;
        }
    } else if (!strcmp(type, "inet")) {
        a->host = g_strdup(qemu_opt_get(opts, "server.host"));
        a->port = g_strdup(qemu_opt_get(opts, "server.port"));
        if (!a->host || !a->port) {
            error_setg(errp, "Parameter '%sserver.%s' is missing", prefix,
                       a->host ? "port" : "host");
            return false;
        }
    } else {
        error_setg(errp, "Parameter '%sserver.type' does not accept value '%s'", prefix, type);
        return false;
    }
    return check_export(a, errp);
}

char *nbd_addr_to_filename(const NbdAddr *a)
{
    if (a->is_unix) {
        return a->export[0] ? g_strdup_printf("nbd+unix:///%s?socket=%s", a->export, a->path)
                            : g_strdup_printf("nbd+unix://?socket=%s", a->path);
    }
    if (strchr(a->host, ':')) {
        return a->export[0] ? g_strdup_printf("nbd://[%s]:%s/%s", a->host, a->port, a->export)
                            : g_strdup_printf("nbd://[%s]:%s", a->host, a->port);
    }
    return a->export[0] ? g_strdup_printf("nbd://%s:%s/%s", a->host, a->port, a->export)
                        : g_strdup_printf("nbd://%s:%s", a->host, a->port);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Character devices: creating them from -serial/-qmp/-monitor specs and
 * -chardev options, the stdio, null and file (a path or an fd set)
 * backends, and the name query-chardev gives each. Sockets are in
 * char-socket.c, pty in char-pty.c, the mux in char-mux.c; what they all
 * share (registry, frontend API, byte paths) in char.c.
 */
#include "qemu/osdep.h"
#include "qemu/cpr-fd.h"
#include "qapi/error.h"
#include "qemu/cutils.h"
#include "qemu/fdset.h"
#include "qemu/option.h"
#include "chardev/char.h"
#include "char-internal.h"

/* Only one chardev may own fds 0 and 1 (QEMU's rule). BQL. */
static bool stdio_in_use;

/* stdio, null and file need nothing beyond the core's defaults. */
static const ChardevOps null_ops = { .kind = CHR_NULL };
static const ChardevOps stdio_ops = { .kind = CHR_STDIO };
static const ChardevOps file_ops = { .kind = CHR_FILE };

char *qemu_chr_filename(Chardev *chr)
{
    g_autofree char *addr = NULL;

    switch (chr->ops->kind) {
    case CHR_NULL:
        return g_strdup("null");
    case CHR_STDIO:
        return g_strdup("stdio");
    case CHR_FILE:
        return g_strdup("file");
    case CHR_PTY:
        return g_strdup_printf("pty:%s", chr->pty_path);
    case CHR_MUX:
        return g_strdup("mux");
    case CHR_SOCKET:
        addr = chr_socket_address(chr);
        return g_strdup_printf("%s%s%s", chr->connected ? "" : "disconnected:", addr,
                               chr->server ? ",server=on" : "");
    }
    g_assert_not_reached();
}

/*
 * telnet=on: QEMU speaks telnet on such a socket (it offers to echo and to
 * suppress go-ahead, and strips what the client negotiates from the
 * guest's input). Ours is a raw socket: a telnet client's negotiation
 * bytes would reach the guest as input, so it is refused, not half done.
 */
#define TELNET_REFUSED "telnet=on is not supported by this build; use a raw socket"

static bool chr_refuse_telnet(QemuOpts *opts, Error **errp)
{
    bool telnet = false;

    if (!qemu_opt_get_bool(opts, "telnet", false, &telnet, errp)) {
        return false;
    }
    if (telnet) {
        error_setg(errp, TELNET_REFUSED);
        return false;
    }
    return true;
}

static Chardev *chr_open_stdio(const char *label, Error **errp)
{
    Chardev *chr;

    if (stdio_in_use) {
        error_setg(errp, "cannot use stdio by multiple character devices");
        return NULL;
    }
    stdio_in_use = true;
    chr = chr_alloc(label, &stdio_ops);
    chr->in_fd = 0;
    chr->out_fd = 1;
    chr->connected = true;
    return chr;
}

static Chardev *chr_open_file(const char *label, const char *path, bool append, Error **errp)
{
    Chardev *chr;
    /*
     * A live update's new process goes on where the old one wrote: the
     * guest's console is one story, not two (never truncated).
     */
    bool keep = append || cpr_fd_received();
    int fd = qemu_open(path, O_WRONLY | O_CREAT | (keep ? O_APPEND : O_TRUNC), 0666, errp);

    if (fd < 0) {
        return NULL;
    }
    chr = chr_alloc(label, &file_ops);
    chr->out_fd = fd;
    chr->connected = true;
    return chr;
}

Chardev *qemu_chr_new(const char *label, const char *spec, Error **errp)
{
    const char *rest;

    if (!strcmp(spec, "none")) {
        return NULL;
    }
    if (!strcmp(spec, "null") || !strcmp(spec, "vc") || g_str_has_prefix(spec, "vc:")) {
        return chr_alloc(label, &null_ops);
    }
    if (!strcmp(spec, "stdio")) {
        return chr_open_stdio(label, errp);
    }
    if (!strcmp(spec, "pty")) {
        return chr_open_pty(label, errp);
    }
    if (strstart(spec, "mon:", &rest)) {
        g_autofree char *be_label = g_strdup_printf("%s-base", label);
        Chardev *be;

        if (g_str_has_prefix(rest, "chardev:") || g_str_has_prefix(rest, "mon:")) {
            error_setg(errp, "'%s' is not a valid char driver", spec);
            return NULL;
        }
        be = qemu_chr_new(be_label, rest, errp);
        return be ? chr_mux_new(label, be, errp) : NULL;
    }
    if (strstart(spec, "chardev:", &rest)) {
        Chardev *chr = qemu_chr_find(rest);
        if (!chr) {
            error_setg(errp, "chardev '%s' not found", rest);
        }
        return chr;
    }
    if (strstart(spec, "file:", &rest)) {
        return chr_open_file(label, rest, false, errp);
    }
    if (strstart(spec, "telnet:", &rest)) {
        error_setg(errp, TELNET_REFUSED " (tcp:%s)", rest);
        return NULL;
    }
    if (strstart(spec, "unix:", &rest) || strstart(spec, "tcp:", &rest)) {
        bool is_unix = spec[0] == 'u';
        g_autofree char *addr = NULL;
        const char *comma = strchr(rest, ',');
        SocketSpec ss = { 0 };
        QemuOpts *opts = NULL;
        Chardev *chr;

        addr = comma ? g_strndup(rest, comma - rest) : g_strdup(rest);
        if (comma) {
            opts = qemu_opts_parse_legacy(comma + 1, NULL, errp);
            if (!opts) {
                return NULL;
            }
        }
        /* QEMU's legacy syntax: a bare unix:/tcp: is a client unless server is given. */
        if (opts && (!chr_refuse_telnet(opts, errp) ||
                     !socket_spec_from_opts(opts, &ss, false, errp))) {
            qemu_opts_del(opts);
            return NULL;
        }
        qemu_opts_del(opts);
        if (is_unix) {
            ss.path = addr;
        } else {
            char *colon = strrchr(addr, ':');
            if (!colon) {
                error_setg(errp, "tcp chardev address '%s' lacks a port", addr);
                return NULL;
            }
            *colon = '\0';
            ss.host = addr;
            ss.port = colon + 1;
        }
        chr = chr_open_socket(label, &ss, errp);
        return chr;
    }
    error_setg(errp, "'%s' is not a valid char driver", spec);
    return NULL;
}

static Chardev *chr_new_backend(QemuOpts *opts, Error **errp);

/* -chardev ...: the backend (a mux over it with mux=on), and its logfile=. */
Chardev *qemu_chr_new_from_opts(QemuOpts *opts, Error **errp)
{
    static const char *const known[] = {
        "backend", "id", "path", "host", "port", "fd", "server", "wait", "append", "mux",
        "signal", "logfile", "logappend", "telnet", "nodelay", NULL,
    };
    const char *logfile = qemu_opt_get(opts, "logfile");
    bool logappend = false;
    int log_fd = -1;
    Chardev *chr;

    if (!qemu_opts_check_known(opts, known, errp) || !chr_refuse_telnet(opts, errp) ||
        !qemu_opt_get_bool(opts, "logappend", false, &logappend, errp)) {
        return NULL;
    }
    if (logfile) {
        log_fd = qemu_open(logfile, O_WRONLY | O_CREAT | (logappend ? O_APPEND : O_TRUNC),
                           0666, errp);
        if (log_fd < 0) {
            return NULL;
        }
    }
    chr = chr_new_backend(opts, errp);
    if (!chr) {
        if (log_fd >= 0) {
            close(log_fd);
        }
        return NULL;
    }
    if (log_fd >= 0) {
        /* The mux writes through its backend: the log is the backend's. */
        Chardev *be = chr->inner ? chr->inner : chr;

        be->log_fd = log_fd;
    }
    return chr;
}

static Chardev *chr_new_backend(QemuOpts *opts, Error **errp)
{
    const char *backend = qemu_opt_get(opts, "backend");
    const char *id = qemu_opt_get(opts, "id");
    bool mux;

    if (!backend) {
        error_setg(errp, "chardev: \"backend\" is missing");
        return NULL;
    }
    if (!id) {
        error_setg(errp, "Parameter 'id' is missing");
        return NULL;
    }
    if (qemu_chr_find(id)) {
        error_setg(errp, "Duplicate ID '%s' for chardev", id);
        return NULL;
    }
    if (!qemu_opt_get_bool(opts, "mux", false, &mux, errp)) {
        return NULL;
    }
    if (mux) {
        /* QEMU's shape: the backend as "ID-base", the mux the frontends name as "ID". */
        g_autofree char *mux_id = g_strdup(id);
        g_autofree char *be_id = g_strdup_printf("%s-base", id);
        Chardev *be;

        qemu_opt_set(opts, "mux", "off");
        qemu_opt_set(opts, "id", be_id);
        be = chr_new_backend(opts, errp);
        return be ? chr_mux_new(mux_id, be, errp) : NULL;
    }
    if (!strcmp(backend, "pty")) {
        return chr_open_pty(id, errp);
    }
    if (!strcmp(backend, "null")) {
        return chr_alloc(id, &null_ops);
    }
    if (!strcmp(backend, "stdio")) {
        return chr_open_stdio(id, errp);
    }
    if (!strcmp(backend, "file")) {
        bool append = false;
        const char *path = qemu_opt_get(opts, "path");
        if (!path) {
            error_setg(errp, "chardev: file: no filename given");
            return NULL;
        }
        if (!qemu_opt_get_bool(opts, "append", false, &append, errp)) {
            return NULL;
        }
        return chr_open_file(id, path, append, errp);
    }
    if (!strcmp(backend, "socket")) {
        SocketSpec ss = { 0 };

        if (!socket_spec_from_opts(opts, &ss, false, errp)) {
            return NULL;
        }
        ss.path = qemu_opt_get(opts, "path");
        ss.host = qemu_opt_get(opts, "host");
        ss.port = qemu_opt_get(opts, "port");
        ss.fd = qemu_opt_get(opts, "fd");
        if (ss.fd) {
            if (ss.path || ss.host || ss.port) {
                error_setg(errp, "fd=%s: a socket given as fd cannot also have path, "
                           "host or port", ss.fd);
                return NULL;
            }
            return chr_open_socket(id, &ss, errp);
        }
        if (!ss.path && !ss.port) {
            error_setg(errp, "chardev: socket: no host given");
            return NULL;
        }
        if (!ss.host) {
            ss.host = "localhost";
        }
        return chr_open_socket(id, &ss, errp);
    }
    error_setg(errp, "'%s' is not a valid char driver name", backend);
    return NULL;
}

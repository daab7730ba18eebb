/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Character devices: the public API (include/chardev/char.h), the spec
 * and -chardev parsers, and the stdio, null and file (a path or an fd
 * set) backends; sockets are in char-socket.c, pty in char-pty.c, the
 * mux in char-mux.c. Input is read in the main loop; output is written
 * by whoever holds the BQL: to stdio and files synchronously, to a
 * socket or a pty through a queue that never blocks the writer.
 */
#include "qemu/osdep.h"
#include "qemu/cpr-fd.h"
#include "qapi/error.h"
#include "qemu/sockets.h"
#include "qemu/cutils.h"
#include "qemu/fdset.h"
#include "qemu/option.h"
#include "qemu/main-loop.h"
#include "chardev/char.h"
#include "char-internal.h"
#include <poll.h>
#include <termios.h>
#include <sys/socket.h>

static GPtrArray *chardevs;
static bool stdio_in_use;
static bool stdio_tty_saved;
static struct termios stdio_saved_tty;

/* A socket client may leave this much unread output before it is dropped. */
#define CHR_OUT_MAX (32 * MiB)
/* A pty's reader may leave this much unread; what comes after is dropped. */
#define CHR_PTY_OUT_MAX (1 * MiB)

Chardev *qemu_chr_find(const char *id)
{
    for (guint i = 0; chardevs && i < chardevs->len; i++) {
        Chardev *chr = g_ptr_array_index(chardevs, i);
        if (!strcmp(chr->label, id)) {
            return chr;
        }
    }
    return NULL;
}

const char *qemu_chr_label(Chardev *chr)
{
    return chr->label;
}

Chardev *qemu_chr_nth(guint i)
{
    return chardevs && i < chardevs->len ? g_ptr_array_index(chardevs, i) : NULL;
}

bool qemu_chr_frontend_open(Chardev *chr)
{
    return chr->has_fe;
}

char *qemu_chr_filename(Chardev *chr)
{
    g_autofree char *addr = NULL;

    switch (chr->kind) {
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

Chardev *chr_alloc(const char *label, ChardevKind kind)
{
    Chardev *chr = g_new0(Chardev, 1);

    chr->label = g_strdup(label);
    chr->kind = kind;
    chr->in_fd = chr->out_fd = chr->listen_fd = chr->log_fd = -1;
    if (!chardevs) {
        chardevs = g_ptr_array_new();
    }
    g_ptr_array_add(chardevs, chr);
    return chr;
}

void chr_send_event(Chardev *chr, ChardevEvent ev)
{
    if (chr->has_fe && chr->fe.event) {
        chr->fe.event(chr->fe.opaque, ev);
    }
}

void chr_close_msgfds(Chardev *chr)
{
    for (int i = 0; i < chr->nmsgfds; i++) {
        close(chr->msgfds[i]);
    }
    chr->nmsgfds = 0;
}

int qemu_chr_take_msgfd(Chardev *chr)
{
    if (chr->kind == CHR_MUX) {
        return qemu_chr_take_msgfd(chr_mux_backend(chr));
    }
    return chr->nmsgfds ? chr->msgfds[--chr->nmsgfds] : -1;
}

/* read() that keeps the fds a unix socket passes along (close-on-exec, as ours always are). */
static ssize_t chr_read_with_fds(Chardev *chr, uint8_t *buf, size_t want)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * CHR_MAX_MSGFDS)];
    } control;
    struct iovec iov = { .iov_base = buf, .iov_len = want };
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1,
        .msg_control = control.buf, .msg_controllen = sizeof(control.buf),
    };
    ssize_t n;

    if (chr->kind != CHR_SOCKET) {
        return read(chr->in_fd, buf, want);
    }
    n = recvmsg(chr->in_fd, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0) {
        return n;
    }
    chr_close_msgfds(chr);
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        size_t nfds;

        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
            continue;
        }
        nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < nfds; i++) {
            int fd;

            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (chr->nmsgfds < CHR_MAX_MSGFDS) {
                chr->msgfds[chr->nmsgfds++] = fd;
            } else {
                close(fd);
            }
        }
    }
    return n;
}

static gboolean chr_input_ready(GIOChannel *ch, GIOCondition cond, gpointer opaque)
{
    Chardev *chr = opaque;
    uint8_t buf[4096];
    size_t want = sizeof(buf);
    ssize_t n;

    if (chr->has_fe && chr->fe.can_read) {
        want = MIN(want, chr->fe.can_read(chr->fe.opaque));
        if (!want) {
            /* Frontend is full; it calls qemu_chr_fe_accept_input() later. */
            chr->input_paused = true;
            chr->in_watch = 0;
            return G_SOURCE_REMOVE;
        }
    }
    n = chr_read_with_fds(chr, buf, want);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
        return G_SOURCE_CONTINUE;
    }
    if (n <= 0) {
        chr->in_watch = 0;
        if (chr->kind == CHR_SOCKET) {
            chr_client_close(chr);
        } else if (chr->kind == CHR_PTY) {
            /* EIO: the last reader closed the slave. */
            chr_pty_hangup(chr);
        }
        /* stdin at EOF: stop watching so the loop does not spin. */
        return G_SOURCE_REMOVE;
    }
    if (chr->has_fe && chr->fe.read) {
        chr->fe.read(chr->fe.opaque, buf, n);
    }
    return G_SOURCE_CONTINUE;
}

void chr_watch_input(Chardev *chr)
{
    GIOChannel *ch;

    /* A pty master without a reader only ever says HUP: the timer watches it instead. */
    if (chr->in_fd < 0 || chr->in_watch || (chr->kind == CHR_PTY && !chr->connected)) {
        return;
    }
    ch = g_io_channel_unix_new(chr->in_fd);
    chr->in_watch = g_io_add_watch(ch, G_IO_IN | G_IO_HUP | G_IO_ERR, chr_input_ready, chr);
    g_io_channel_unref(ch);
}

void qemu_chr_fe_accept_input(Chardev *chr)
{
    if (chr->kind == CHR_MUX) {
        chr_mux_accept_input(chr);
        return;
    }
    if (chr->input_paused) {
        chr->input_paused = false;
        chr_watch_input(chr);
    }
}

static void chr_opened_bh(void *opaque)
{
    Chardev *chr = opaque;

    if (chr->connected) {
        chr_send_event(chr, CHR_EVENT_OPENED);
    }
    chr_watch_input(chr);
}

void qemu_chr_fe_set_handlers(Chardev *chr, const CharFrontend *fe)
{
    if (chr->kind == CHR_MUX) {
        chr_mux_add_frontend(chr, fe);
        return;
    }
    chr->fe = *fe;
    chr->has_fe = true;
    if (chr->connected) {
        /*
         * The frontend must see OPENED (a QMP greeting) before any input:
         * read nothing until the bottom half has delivered it.
         */
        qemu_bh_schedule_oneshot(chr_opened_bh, chr);
    } else {
        chr_watch_input(chr);
    }
}

bool qemu_chr_fe_busy(Chardev *chr)
{
    return chr->kind == CHR_MUX ? chr_mux_full(chr) : chr->has_fe;
}

bool qemu_chr_is_stdio(Chardev *chr)
{
    return chr->kind == CHR_STDIO;
}

/* Sends what is queued for a socket client or a pty's reader without blocking. */
static void chr_socket_flush(Chardev *chr)
{
    while (chr->outbuf->len && chr->out_fd >= 0) {
        ssize_t n = chr->kind == CHR_PTY
                  ? write(chr->out_fd, chr->outbuf->data, chr->outbuf->len)
                  : send(chr->out_fd, chr->outbuf->data, chr->outbuf->len,
                         MSG_NOSIGNAL | MSG_DONTWAIT);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && errno == EAGAIN && chr->kind == CHR_PTY && chr_pty_hung_up(chr)) {
            /*
             * A master whose reader left takes output until its buffer is
             * full and never says EIO; with input paused nothing else
             * would notice.
             */
            chr_pty_hangup(chr);
            break;
        }
        if (n < 0 && errno == EAGAIN) {
            break;
        }
        if (n <= 0 && chr->kind == CHR_PTY) {
            chr_pty_hangup(chr);
            break;
        }
        if (n <= 0) {
            /* The peer vanished; stop writing to it, input will see EOF. */
            chr->out_fd = -1;
            g_byte_array_set_size(chr->outbuf, 0);
            break;
        }
        g_byte_array_remove_range(chr->outbuf, 0, n);
    }
}

static gboolean chr_socket_writable(GIOChannel *ch, GIOCondition cond, gpointer opaque)
{
    Chardev *chr = opaque;

    chr_socket_flush(chr);
    if (chr->outbuf->len && chr->out_fd >= 0) {
        return G_SOURCE_CONTINUE;
    }
    chr->out_watch = 0;
    /* Output drained: a frontend that stopped reading may take input again. */
    qemu_chr_fe_accept_input(chr);
    return G_SOURCE_REMOVE;
}

/* logfile=: a file, so a blocking write; a failing log is left, once, with a warning. */
static void chr_log_write(Chardev *chr, const void *buf, size_t len)
{
    size_t done = 0;

    while (done < len) {
        ssize_t n = write(chr->log_fd, (const uint8_t *)buf + done, len - done);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            warn_report("chardev '%s': writing its log failed: %s; no longer logging",
                        chr->label, n < 0 ? g_strerror(errno) : "short write");
            close(chr->log_fd);
            chr->log_fd = -1;
            return;
        }
        done += n;
    }
}

size_t qemu_chr_out_pending(Chardev *chr)
{
    if (chr->kind == CHR_MUX) {
        return qemu_chr_out_pending(chr_mux_backend(chr));
    }
    return chr->outbuf ? chr->outbuf->len : 0;
}

int qemu_chr_write_all(Chardev *chr, const void *buf, size_t len)
{
    size_t done = 0;

    if (chr->kind == CHR_MUX) {
        return chr_mux_write(chr, buf, len);
    }
    if (chr->log_fd >= 0) {
        chr_log_write(chr, buf, len);
    }
    if (chr->kind == CHR_PTY && !chr->connected && !chr_pty_poll_reader(chr)) {
        return len;             /* no reader: dropped, as QEMU 7.2 does */
    }
    if (!chr->connected || chr->out_fd < 0) {
        return len;             /* nobody listening: output is dropped */
    }
    if (chr->kind == CHR_PTY && chr->outbuf->len + len > CHR_PTY_OUT_MAX) {
        /*
         * A reader that opened the slave and stopped reading must not stall
         * the guest's UART (the vCPU writes with the BQL held): drop.
         */
        return len;
    }
    if (chr->kind == CHR_SOCKET || chr->kind == CHR_PTY) {
        /*
         * Never block on a socket client: a client that stops reading would
         * otherwise stall whoever writes with the BQL held (monitors, the
         * UART, hence the whole VM). Queue, send what the socket takes now,
         * and give up on a client that lets too much pile up.
         */
        if (chr->outbuf->len + len > CHR_OUT_MAX) {
            warn_report("chardev '%s': client is not reading its output, disconnecting",
                        chr->label);
            g_byte_array_set_size(chr->outbuf, 0);
            chr_client_close(chr);
            return -EPIPE;
        }
        g_byte_array_append(chr->outbuf, buf, len);
        chr_socket_flush(chr);
        if (chr->outbuf->len && chr->out_fd >= 0 && !chr->out_watch) {
            GIOChannel *ch = g_io_channel_unix_new(chr->out_fd);
            chr->out_watch = g_io_add_watch(ch, G_IO_OUT | G_IO_ERR | G_IO_HUP,
                                            chr_socket_writable, chr);
            g_io_channel_unref(ch);
        }
        return chr->out_fd >= 0 ? (int)len : -EPIPE;
    }
    while (done < len) {
        ssize_t n = write(chr->out_fd, (const uint8_t *)buf + done, len - done);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && errno == EAGAIN) {
            struct pollfd pfd = { .fd = chr->out_fd, .events = POLLOUT };
            poll(&pfd, 1, 1000);
            continue;
        }
        if (n <= 0) {
            return n < 0 ? -errno : -EPIPE;
        }
        done += n;
    }
    return len;
}

void qemu_chr_set_raw(Chardev *chr)
{
    struct termios tty;

    if (chr->kind == CHR_MUX) {
        qemu_chr_set_raw(chr_mux_backend(chr));
        return;
    }
    if (chr->kind != CHR_STDIO || !isatty(0) || tcgetattr(0, &tty) < 0) {
        return;
    }
    if (!stdio_tty_saved) {
        stdio_saved_tty = tty;
        stdio_tty_saved = true;
    }
    /* No echo or line editing, but keep ISIG so Ctrl-C still stops us. */
    tty.c_iflag &= ~(IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR | IGNCR | ICRNL | IXON);
    tty.c_oflag |= OPOST;
    tty.c_lflag &= ~(ECHO | ECHONL | ICANON | IEXTEN);
    tty.c_cflag &= ~(CSIZE | PARENB);
    tty.c_cflag |= CS8;
    tty.c_cc[VMIN] = 1;
    tty.c_cc[VTIME] = 0;
    tcsetattr(0, TCSANOW, &tty);
}

void qemu_chr_cleanup_all(void)
{
    if (stdio_tty_saved) {
        tcsetattr(0, TCSANOW, &stdio_saved_tty);
    }
    for (guint i = 0; chardevs && i < chardevs->len; i++) {
        Chardev *chr = g_ptr_array_index(chardevs, i);
        if (chr->unix_path) {
            unlink(chr->unix_path);
        }
    }
}

static Chardev *chr_open_stdio(const char *label, Error **errp)
{
    Chardev *chr;

    if (stdio_in_use) {
        error_setg(errp, "cannot use stdio by multiple character devices");
        return NULL;
    }
    stdio_in_use = true;
    chr = chr_alloc(label, CHR_STDIO);
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
    chr = chr_alloc(label, CHR_FILE);
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
        return chr_alloc(label, CHR_NULL);
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
        if (opts && !socket_spec_from_opts(opts, &ss, false, errp)) {
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

    if (!qemu_opts_check_known(opts, known, errp) ||
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
        Chardev *be = chr->kind == CHR_MUX ? chr_mux_backend(chr) : chr;

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
        return chr_alloc(id, CHR_NULL);
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

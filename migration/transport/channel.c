/* SPDX-License-Identifier: GPL-2.0-or-later */
/* URI transports for migration: sockets, commands, files and inherited fds. */
#include "qemu/osdep.h"
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include "qapi/error.h"
#include "qemu/sockets.h"
#include "qemu/cutils.h"
#include "qemu/main-loop.h"
#include "channel.h"
#include <netdb.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

typedef struct Listener {
    int fd;
    guint watch;
    char *unix_path;
    MigChannelReady *ready;
    void *opaque;
} Listener;

/* Only one incoming migration at a time; main thread only. */
static Listener *listener;

static void peeks_drop(void);

static bool parse_host_port(const char *addr, char **host, char **port, Error **errp)
{
    const char *colon = strrchr(addr, ':');

    if (!colon || !colon[1]) {
        error_setg(errp, "address '%s' lacks a port", addr);
        return false;
    }
    if (addr[0] == '[') {
        const char *end = strchr(addr, ']');
        if (!end || end + 1 != colon) {
            error_setg(errp, "invalid IPv6 address '%s'", addr);
            return false;
        }
        *host = g_strndup(addr + 1, end - addr - 1);
    } else {
        *host = g_strndup(addr, colon - addr);
    }
    *port = g_strdup(colon + 1);
    return true;
}

static bool parse_file_uri(const char *spec, char **path, uint64_t *offset, Error **errp)
{
    const char *comma = strrchr(spec, ',');
    const char *val;

    *offset = 0;
    if (comma && strstart(comma + 1, "offset=", &val)) {
        if (qemu_strtosz(val, NULL, offset) < 0) {
            error_setg(errp, "file URI has an invalid offset '%s'", val);
            return false;
        }
        *path = g_strndup(spec, comma - spec);
    } else {
        *path = g_strdup(spec);
    }
    if (!**path) {
        error_setg(errp, "file URI lacks a path");
        g_free(*path);
        return false;
    }
    return true;
}

bool mig_channel_file_path(const char *uri, char **path, uint64_t *offset, Error **errp)
{
    const char *rest;

    if (!strstart(uri, "file:", &rest)) {
        error_setg(errp, "'%s' is not a file: URI", uri);
        return false;
    }
    return parse_file_uri(rest, path, offset, errp);
}

static int parse_fd(const char *s, Error **errp)
{
    int fd;

    if (qemu_strtoi(s, NULL, 10, &fd) < 0 || fd < 0) {
        error_setg(errp, "fd: expects a file descriptor number, got '%s'", s);
        return -1;
    }
    if (fcntl(fd, F_GETFD) < 0) {
        error_setg_errno(errp, errno, "fd: %d is not an open file descriptor", fd);
        return -1;
    }
    return fd;
}

bool mig_channel_check_uri(const char *uri, Error **errp)
{
    const char *rest;
    g_autofree char *a = NULL, *b = NULL;
    uint64_t off;

    if (strstart(uri, "tcp:", &rest)) {
        return parse_host_port(rest, &a, &b, errp);
    }
    if (strstart(uri, "unix:", &rest) || strstart(uri, "exec:", &rest)) {
        if (!*rest) {
            error_setg(errp, "'%s' lacks a %s", uri, uri[0] == 'u' ? "path" : "command");
            return false;
        }
        return true;
    }
    if (strstart(uri, "file:", &rest)) {
        return parse_file_uri(rest, &a, &off, errp);
    }
    if (strstart(uri, "fd:", &rest)) {
        return parse_fd(rest, errp) >= 0;
    }
    error_setg(errp, "unknown migration protocol: %s", uri);
    return false;
}

static int tcp_connect(const char *addr, Error **errp)
{
    g_autofree char *host = NULL, *port = NULL;
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
    struct addrinfo *res, *ai;
    int fd = -1, err, saved = ECONNREFUSED;

    if (!parse_host_port(addr, &host, &port, errp)) {
        return -1;
    }
    err = getaddrinfo(*host ? host : "localhost", port, &hints, &res);
    if (err) {
        error_setg(errp, "address resolution failed for %s: %s", addr, gai_strerror(err));
        return -1;
    }
    for (ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            break;
        }
        saved = errno;
        if (fd >= 0) {
            close(fd);
        }
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        error_setg_errno(errp, saved, "Failed to connect to '%s'", addr);
    }
    return fd;
}

static Channel *file_open(const char *spec, bool outgoing, Error **errp)
{
    g_autofree char *path = NULL;
    uint64_t offset;
    int fd;

    if (!parse_file_uri(spec, &path, &offset, errp)) {
        return NULL;
    }
    fd = open(path, outgoing ? (O_WRONLY | O_CREAT | (offset ? 0 : O_TRUNC) | O_CLOEXEC)
                             : (O_RDONLY | O_CLOEXEC), 0600);
    if (fd < 0) {
        error_setg_errno(errp, errno, "Could not open '%s'", path);
        return NULL;
    }
    if (offset && lseek(fd, offset, SEEK_SET) < 0) {
        error_setg_errno(errp, errno, "cannot seek '%s' to offset %" PRIu64, path, offset);
        close(fd);
        return NULL;
    }
    return channel_file_new(fd, path);
}

/* fd:N, as a channel of the row its fstat says. */
static Channel *fd_open(const char *s, Error **errp)
{
    int fd = parse_fd(s, errp);

    return fd < 0 ? NULL : channel_fd_new(fd, errp);
}

Channel *mig_channel_connect(const char *uri, Error **errp)
{
    const char *rest;
    int fd;

    if (strstart(uri, "tcp:", &rest)) {
        fd = tcp_connect(rest, errp);
        return fd < 0 ? NULL : channel_socket_new(fd);
    } else if (strstart(uri, "unix:", &rest)) {
        fd = unix_connect_path(rest, errp);
        return fd < 0 ? NULL : channel_socket_new(fd);
    } else if (strstart(uri, "exec:", &rest)) {
        return channel_command_spawn(rest, true, errp);
    } else if (strstart(uri, "file:", &rest)) {
        return file_open(rest, true, errp);
    } else if (strstart(uri, "fd:", &rest)) {
        return fd_open(rest, errp);
    }
    error_setg(errp, "unknown migration protocol: %s", uri);
    return NULL;
}

typedef struct ReadyCall {
    MigChannelReady *ready;
    void *opaque;
    Channel *ch;
} ReadyCall;

static void ready_bh(void *opaque)
{
    ReadyCall *rc = opaque;

    rc->ready(rc->ch, rc->opaque);
    g_free(rc);
}

static void schedule_ready(MigChannelReady *ready, void *opaque, Channel *ch)
{
    ReadyCall *rc = g_new0(ReadyCall, 1);

    *rc = (ReadyCall) { .ready = ready, .opaque = opaque, .ch = ch };
    qemu_bh_schedule_oneshot(ready_bh, rc);
}

static void listener_free(void)
{
    if (!listener) {
        return;
    }
    if (listener->watch) {
        g_source_remove(listener->watch);
    }
    close(listener->fd);
    if (listener->unix_path) {
        unlink(listener->unix_path);
        g_free(listener->unix_path);
    }
    g_clear_pointer(&listener, g_free);
}

void mig_channel_listen_cancel(void)
{
    listener_free();
    peeks_drop();
}

static gboolean listener_accept(GIOChannel *ch, GIOCondition cond, gpointer opaque)
{
    int fd = accept4(listener->fd, NULL, NULL, SOCK_CLOEXEC);
    Listener *l = listener;

    if (fd < 0) {
        return G_SOURCE_CONTINUE;
    }
    if (l->ready(channel_socket_new(fd), l->opaque) && listener == l) {
        return G_SOURCE_CONTINUE;
    }
    /* Every connection this migration needs arrived: stop listening now. */
    if (listener == l) {
        listener->watch = 0;
        listener_free();
    }
    return G_SOURCE_REMOVE;
}

typedef struct PeekWait {
    Channel *ch;                /* ours until handed to @peeked */
    MigChannelPeeked *peeked;
    void *opaque;
    guint watch;                /* readable or hung up */
    guint timer;                /* armed once part of the word came: give up on too little */
    gint64 deadline;            /* monotonic us, from the accept */
} PeekWait;

/* Main thread: connections still being told apart; dropped by listen_cancel. */
static GList *pending_peeks;

#define PEEK_TIMEOUT_US (30 * G_USEC_PER_SEC)

/* The watch or the timer ended the wait (@ok: the word is there); the other goes too. */
static void peek_done(PeekWait *pw, bool ok, uint32_t word)
{
    pending_peeks = g_list_remove(pending_peeks, pw);
    if (pw->watch) {
        g_source_remove(pw->watch);
    }
    if (pw->timer) {
        g_source_remove(pw->timer);
    }
    if (ok) {
        pw->peeked(pw->ch, GUINT32_FROM_BE(word), pw->opaque);
    } else {
        /* Closed, failed, or too few bytes for too long. */
        channel_unref(pw->ch);
        pw->peeked(NULL, 0, pw->opaque);
    }
    g_free(pw);
}

static gboolean peek_timeout(gpointer opaque);

static gboolean peek_ready(GIOChannel *gch, GIOCondition cond, gpointer opaque)
{
    PeekWait *pw = opaque;
    uint32_t word = 0;
    /*
     * The bytes stay in the channel's read-ahead, so the stream's reader
     * gets them first: a peek that a TLS row can do too (no MSG_PEEK).
     */
    ssize_t n = channel_peek(pw->ch, &word, sizeof(word), CHANNEL_NONBLOCK);

    if (n == -EAGAIN && !(cond & (G_IO_HUP | G_IO_ERR))) {
        /*
         * Part of the word: wait for the rest, but not for ever. (A peer
         * that says nothing at all is waited for, as it always was.)
         */
        if (channel_pending(pw->ch) && !pw->timer) {
            gint64 left = MAX(pw->deadline - g_get_monotonic_time(), 0);

            pw->timer = g_timeout_add(left / 1000, peek_timeout, pw);
        }
        return G_SOURCE_CONTINUE;
    }
    pw->watch = 0;
    peek_done(pw, n == sizeof(word), word);
    return G_SOURCE_REMOVE;
}

static gboolean peek_timeout(gpointer opaque)
{
    PeekWait *pw = opaque;

    pw->timer = 0;
    peek_done(pw, false, 0);
    return G_SOURCE_REMOVE;
}

void mig_channel_peek_be32(Channel *ch, MigChannelPeeked *peeked, void *opaque)
{
    PeekWait *pw = g_new0(PeekWait, 1);
    GIOChannel *gch = g_io_channel_unix_new(channel_fd(ch));

    *pw = (PeekWait) { .ch = ch, .peeked = peeked, .opaque = opaque,
                       .deadline = g_get_monotonic_time() + PEEK_TIMEOUT_US };
    pending_peeks = g_list_prepend(pending_peeks, pw);
    pw->watch = g_io_add_watch(gch, G_IO_IN | G_IO_HUP | G_IO_ERR, peek_ready, pw);
    g_io_channel_unref(gch);
}

/* Connections never told apart: nobody will take them now. */
static void peeks_drop(void)
{
    for (GList *l = pending_peeks; l; l = l->next) {
        PeekWait *pw = l->data;

        g_source_remove(pw->watch);
        if (pw->timer) {
            g_source_remove(pw->timer);
        }
        channel_unref(pw->ch);
        g_free(pw);
    }
    g_clear_pointer(&pending_peeks, g_list_free);
}

static int listen_socket(const char *uri, char **unix_path, Error **errp)
{
    const char *rest;
    int fd = -1, one = 1;

    if (strstart(uri, "unix:", &rest)) {
        fd = unix_listen_private(rest, errp);
        if (fd >= 0) {
            *unix_path = g_strdup(rest);
        }
        return fd;
    } else {
        g_autofree char *host = NULL, *port = NULL;
        struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
        struct addrinfo *res;
        int err;

        strstart(uri, "tcp:", &rest);
        if (!parse_host_port(rest, &host, &port, errp)) {
            return -1;
        }
        err = getaddrinfo(*host ? host : NULL, port, &hints, &res);
        if (err) {
            error_setg(errp, "address resolution failed for %s: %s", rest, gai_strerror(err));
            return -1;
        }
        fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0) {
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        }
        /* A backlog for the multifd channels, which connect right after the stream. */
        if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 16) < 0) {
            error_setg_errno(errp, errno, "Failed to bind socket to %s", rest);
            freeaddrinfo(res);
            goto fail;
        }
        freeaddrinfo(res);
        return fd;
    }
fail:
    if (fd >= 0) {
        close(fd);
    }
    return -1;
}

bool mig_channel_listen(const char *uri, MigChannelReady *ready, void *opaque, Error **errp)
{
    const char *rest;
    Channel *ch;
    int fd;

    if (strstart(uri, "tcp:", &rest) || strstart(uri, "unix:", &rest)) {
        char *unix_path = NULL;
        GIOChannel *gch;

        /*
         * One listener at a time: a migrate-recover's replaces what the
         * migration still had open (its socket and struct were lost
         * before). First, or freeing the old one would unlink a unix: path
         * the new one just bound.
         */
        listener_free();
        fd = listen_socket(uri, &unix_path, errp);
        if (fd < 0) {
            return false;
        }
        listener = g_new0(Listener, 1);
        listener->fd = fd;
        listener->unix_path = unix_path;
        listener->ready = ready;
        listener->opaque = opaque;
        gch = g_io_channel_unix_new(fd);
        listener->watch = g_io_add_watch(gch, G_IO_IN, listener_accept, NULL);
        g_io_channel_unref(gch);
        return true;
    }
    if (strstart(uri, "exec:", &rest)) {
        ch = channel_command_spawn(rest, false, errp);
    } else if (strstart(uri, "file:", &rest)) {
        ch = file_open(rest, false, errp);
    } else if (strstart(uri, "fd:", &rest)) {
        ch = fd_open(rest, errp);
    } else {
        error_setg(errp, "unknown migration protocol: %s", uri);
        return false;
    }
    if (!ch) {
        return false;
    }
    schedule_ready(ready, opaque, ch);
    return true;
}

int mig_channel_unsent_bytes(Channel *ch)
{
    int n = 0;

    /*
     * tcp: not yet acknowledged; unix: not yet read by the peer. Not I/O,
     * so the raw fd (channel_fd) is the documented way; other rows fail
     * the ioctl and count 0, as before.
     */
    if (!ch || ioctl(channel_fd(ch), SIOCOUTQ, &n) < 0) {
        return 0;
    }
    return n;
}

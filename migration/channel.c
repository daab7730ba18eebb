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
#include <sys/wait.h>
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

static int exec_spawn(const char *cmd, bool outgoing, GPid *child, Error **errp)
{
    char *argv[] = { (char *)"/bin/sh", (char *)"-c", (char *)cmd, NULL };
    g_autoptr(GError) gerr = NULL;
    int in_fd = -1, out_fd = -1;

    if (!g_spawn_async_with_pipes(NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, child,
                                  outgoing ? &in_fd : NULL, outgoing ? NULL : &out_fd, NULL,
                                  &gerr)) {
        error_setg(errp, "failed to run '%s': %s", cmd, gerr->message);
        return -1;
    }
    /*
     * A 64 KiB pipe makes the writer and the command trade the CPU every
     * 16 pages; 1 MiB (the unprivileged maximum) lets each side run for a
     * while. Best effort: the pipe still works at its default size.
     */
    fcntl(outgoing ? in_fd : out_fd, F_SETPIPE_SZ, 1 << 20);
    return outgoing ? in_fd : out_fd;
}

static int file_open(const char *spec, bool outgoing, Error **errp)
{
    g_autofree char *path = NULL;
    uint64_t offset;
    int fd;

    if (!parse_file_uri(spec, &path, &offset, errp)) {
        return -1;
    }
    fd = open(path, outgoing ? (O_WRONLY | O_CREAT | (offset ? 0 : O_TRUNC) | O_CLOEXEC)
                             : (O_RDONLY | O_CLOEXEC), 0600);
    if (fd < 0) {
        error_setg_errno(errp, errno, "Could not open '%s'", path);
        return -1;
    }
    if (offset && lseek(fd, offset, SEEK_SET) < 0) {
        error_setg_errno(errp, errno, "cannot seek '%s' to offset %" PRIu64, path, offset);
        close(fd);
        return -1;
    }
    return fd;
}

bool mig_channel_connect(const char *uri, MigChannel *ch, Error **errp)
{
    const char *rest;

    ch->fd = -1;
    ch->child = 0;
    ch->is_file = false;
    if (strstart(uri, "tcp:", &rest)) {
        ch->fd = tcp_connect(rest, errp);
    } else if (strstart(uri, "unix:", &rest)) {
        ch->fd = unix_connect_path(rest, errp);
    } else if (strstart(uri, "exec:", &rest)) {
        ch->fd = exec_spawn(rest, true, &ch->child, errp);
    } else if (strstart(uri, "file:", &rest)) {
        ch->fd = file_open(rest, true, errp);
        ch->is_file = true;
    } else if (strstart(uri, "fd:", &rest)) {
        ch->fd = parse_fd(rest, errp);
    } else {
        error_setg(errp, "unknown migration protocol: %s", uri);
    }
    return ch->fd >= 0;
}

int mig_channel_reap(GPid child)
{
    int status = 0;

    if (child > 0 && RETRY_ON_EINTR(waitpid(child, &status, 0)) == child) {
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    return -1;
}

static void mig_channel_child_reaped(GPid pid, gint status, gpointer data)
{
    g_spawn_close_pid(pid);
}

void mig_channel_reap_later(GPid child)
{
    if (child > 0) {
        g_child_watch_add(child, mig_channel_child_reaped, NULL);
    }
}

typedef struct ReadyCall {
    MigChannelReady *ready;
    void *opaque;
    int fd;
    GPid child;
} ReadyCall;

static void ready_bh(void *opaque)
{
    ReadyCall *rc = opaque;

    rc->ready(rc->fd, rc->child, rc->opaque);
    g_free(rc);
}

static void schedule_ready(MigChannelReady *ready, void *opaque, int fd, GPid child)
{
    ReadyCall *rc = g_new0(ReadyCall, 1);

    *rc = (ReadyCall) { .ready = ready, .opaque = opaque, .fd = fd, .child = child };
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
    if (l->ready(fd, 0, l->opaque) && listener == l) {
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
    int fd;
    MigChannelPeeked *peeked;
    void *opaque;
    guint source;               /* the watch or the retry timer */
    gint64 deadline;            /* monotonic us: give up on a peer that says too little */
} PeekWait;

/* Main thread: connections still being told apart; closed by listen_cancel. */
static GList *pending_peeks;

#define PEEK_TIMEOUT_US (30 * G_USEC_PER_SEC)

static gboolean peek_ready(GIOChannel *ch, GIOCondition cond, gpointer opaque);

static gboolean peek_retry(gpointer opaque)
{
    PeekWait *pw = opaque;
    GIOChannel *ch = g_io_channel_unix_new(pw->fd);

    pw->source = g_io_add_watch(ch, G_IO_IN | G_IO_HUP | G_IO_ERR, peek_ready, pw);
    g_io_channel_unref(ch);
    return G_SOURCE_REMOVE;
}

static gboolean peek_ready(GIOChannel *ch, GIOCondition cond, gpointer opaque)
{
    PeekWait *pw = opaque;
    uint32_t word;
    ssize_t n = recv(pw->fd, &word, sizeof(word), MSG_PEEK | MSG_DONTWAIT);

    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return G_SOURCE_CONTINUE;
    }
    if (n > 0 && n < (ssize_t)sizeof(word) && !(cond & (G_IO_HUP | G_IO_ERR)) &&
        g_get_monotonic_time() < pw->deadline) {
        /* Part of the word: look again soon rather than spin on readable data. */
        pw->source = g_timeout_add(5, peek_retry, pw);
        return G_SOURCE_REMOVE;
    }
    pending_peeks = g_list_remove(pending_peeks, pw);
    if (n < (ssize_t)sizeof(word)) {
        /* Closed, failed, or too few bytes for too long. */
        close(pw->fd);
        pw->peeked(-1, 0, pw->opaque);
    } else {
        pw->peeked(pw->fd, GUINT32_FROM_BE(word), pw->opaque);
    }
    g_free(pw);
    return G_SOURCE_REMOVE;
}

void mig_channel_peek_be32(int fd, MigChannelPeeked *peeked, void *opaque)
{
    PeekWait *pw = g_new0(PeekWait, 1);

    *pw = (PeekWait) { .fd = fd, .peeked = peeked, .opaque = opaque,
                       .deadline = g_get_monotonic_time() + PEEK_TIMEOUT_US };
    pending_peeks = g_list_prepend(pending_peeks, pw);
    peek_retry(pw);
}

/* Connections never told apart: nobody will take them now. */
static void peeks_drop(void)
{
    for (GList *l = pending_peeks; l; l = l->next) {
        PeekWait *pw = l->data;

        g_source_remove(pw->source);
        close(pw->fd);
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
    GPid child = 0;
    int fd;

    if (strstart(uri, "tcp:", &rest) || strstart(uri, "unix:", &rest)) {
        char *unix_path = NULL;
        GIOChannel *ch;

        fd = listen_socket(uri, &unix_path, errp);
        if (fd < 0) {
            return false;
        }
        listener = g_new0(Listener, 1);
        listener->fd = fd;
        listener->unix_path = unix_path;
        listener->ready = ready;
        listener->opaque = opaque;
        ch = g_io_channel_unix_new(fd);
        listener->watch = g_io_add_watch(ch, G_IO_IN, listener_accept, NULL);
        g_io_channel_unref(ch);
        return true;
    }
    if (strstart(uri, "exec:", &rest)) {
        fd = exec_spawn(rest, false, &child, errp);
    } else if (strstart(uri, "file:", &rest)) {
        fd = file_open(rest, false, errp);
    } else if (strstart(uri, "fd:", &rest)) {
        fd = parse_fd(rest, errp);
    } else {
        error_setg(errp, "unknown migration protocol: %s", uri);
        return false;
    }
    if (fd < 0) {
        return false;
    }
    schedule_ready(ready, opaque, fd, child);
    return true;
}

int mig_channel_unsent_bytes(int fd)
{
    int n = 0;

    /* tcp: not yet acknowledged; unix: not yet read by the peer. */
    if (ioctl(fd, SIOCOUTQ, &n) < 0) {
        return 0;
    }
    return n;
}

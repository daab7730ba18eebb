/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Socket backends: unix and tcp, opened by us or inherited as fd=N, a
 * server with one client at a time or a client. What they write goes
 * through the core's queue (char.c), never blocking the writer.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/sockets.h"
#include "qemu/option.h"
#include "char-internal.h"
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <sys/un.h>

static gboolean chr_socket_accept(GIOChannel *ch, GIOCondition cond, gpointer opaque);
static void chr_client_close(Chardev *chr);

static const ChardevOps socket_ops = {
    .kind = CHR_SOCKET,
    .hangup = chr_client_close,
};

/* A socket's address as QEMU names it, fd-passed ones by what the fd is bound to. */
char *chr_socket_address(Chardev *chr)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    int fd = chr->listen_fd >= 0 ? chr->listen_fd : chr->in_fd;

    if (strncmp(chr->desc, "fd:", 3) || fd < 0 ||
        getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
        return g_strdup(chr->desc);
    }
    if (ss.ss_family == AF_UNIX) {
        return g_strdup_printf("unix:%s", ((struct sockaddr_un *)&ss)->sun_path);
    }
    if (ss.ss_family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)&ss;
        char host[INET_ADDRSTRLEN];

        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        return g_strdup_printf("tcp:%s:%u", host, ntohs(in->sin_port));
    }
    return g_strdup(chr->desc);
}

/* The client is gone (EOF, error, or dropped): CLOSED, and a server listens again. */
static void chr_client_close(Chardev *chr)
{
    if (!chr->connected) {
        return;
    }
    if (chr->out_watch) {
        g_source_remove(chr->out_watch);
        chr->out_watch = 0;
    }
    if (chr->outbuf) {
        g_byte_array_set_size(chr->outbuf, 0);
    }
    if (chr->in_watch) {
        g_source_remove(chr->in_watch);
        chr->in_watch = 0;
    }
    if (chr->in_fd >= 0) {
        close(chr->in_fd);
    }
    chr_close_msgfds(chr);
    chr->in_fd = chr->out_fd = -1;
    chr->connected = false;
    chr->input_paused = false;
    chr_send_event(chr, CHR_EVENT_CLOSED);
    if (chr->server) {
        /* Ready for the next client. */
        GIOChannel *ch = g_io_channel_unix_new(chr->listen_fd);
        chr->listen_watch = g_io_add_watch(ch, G_IO_IN, chr_socket_accept, chr);
        g_io_channel_unref(ch);
    }
}

void qemu_chr_disconnect(Chardev *chr)
{
    if (chr->ops == &socket_ops) {
        chr_client_close(chr);
    }
}

static void chr_socket_attach_client(Chardev *chr, int fd)
{
    int one = 1;

    if (!strncmp(chr->desc, "tcp:", 4)) {
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    chr->in_fd = chr->out_fd = fd;
    chr->connected = true;
    if (chr->has_fe) {
        chr_watch_input(chr);
        chr_send_event(chr, CHR_EVENT_OPENED);
    }
}

static gboolean chr_socket_accept(GIOChannel *ch, GIOCondition cond, gpointer opaque)
{
    Chardev *chr = opaque;
    int fd = accept4(chr->listen_fd, NULL, NULL, SOCK_CLOEXEC);

    if (fd < 0) {
        return G_SOURCE_CONTINUE;
    }
    /* One client at a time: stop accepting until this one leaves. */
    chr->listen_watch = 0;
    chr_socket_attach_client(chr, fd);
    return G_SOURCE_REMOVE;
}

Chardev *chr_open_socket(const char *label, const SocketSpec *ss, Error **errp)
{
    Chardev *chr;
    int fd;

    if (ss->fd) {
        fd = socket_inherited_fd(ss->fd, ss->server, errp);
    } else if (ss->path) {
        fd = ss->server ? unix_listen_private(ss->path, errp) : unix_connect_path(ss->path, errp);
    } else {
        fd = ss->server ? inet_listen_host_port(ss->host, ss->port, AF_UNSPEC, false, false, 1,
                                                errp)
                        : inet_connect_host_port(ss->host && *ss->host ? ss->host : "localhost",
                                                 ss->port, errp);
    }
    if (fd < 0) {
        return NULL;
    }
    chr = chr_alloc(label, &socket_ops);
    chr->outbuf = g_byte_array_new();
    chr->server = ss->server;
    chr->desc = ss->fd     ? g_strdup_printf("fd:%s", ss->fd)
              : ss->path ? g_strdup_printf("unix:%s", ss->path)
                         : g_strdup_printf("tcp:%s:%s", ss->host, ss->port);
    if (!ss->server) {
        chr_socket_attach_client(chr, fd);
        return chr;
    }
    chr->listen_fd = fd;
    if (ss->path) {
        chr->unix_path = g_strdup(ss->path);
    }
    if (ss->wait) {
        int cfd;

        info_report("QEMU waiting for connection on: disconnected:%s,server=on", chr->desc);
        cfd = RETRY_ON_EINTR(accept4(fd, NULL, NULL, SOCK_CLOEXEC));
        if (cfd >= 0) {
            chr_socket_attach_client(chr, cfd);
            return chr;
        }
    }
    {
        GIOChannel *ch = g_io_channel_unix_new(fd);
        chr->listen_watch = g_io_add_watch(ch, G_IO_IN, chr_socket_accept, chr);
        g_io_channel_unref(ch);
    }
    return chr;
}

bool socket_spec_from_opts(QemuOpts *opts, SocketSpec *ss, bool default_server,
                                  Error **errp)
{
    ss->server = default_server;
    ss->wait = true;
    if (!qemu_opt_get_bool(opts, "server", default_server, &ss->server, errp) ||
        !qemu_opt_get_bool(opts, "wait", true, &ss->wait, errp)) {
        return false;
    }
    if (!ss->server) {
        ss->wait = false;
    }
    return true;
}

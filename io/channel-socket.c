/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The socket row: a connected stream socket (tcp:, unix:, an inherited
 * one). shutdown(2) wakes a thread blocked in recvmsg/sendmsg, so the row
 * needs no wake fd (a non-blocking socket's wait says how it is woken:
 * socket_again). Unix sockets carry fds (SCM_RIGHTS).
 */
#include "qemu/osdep.h"
#include "channel-row.h"
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>

typedef struct SocketChannel {
    Channel base;
    int fd;                     /* read-only while the channel lives */
} SocketChannel;

static int socket_fd(Channel *c)
{
    return ((SocketChannel *)c)->fd;
}

/*
 * A non-blocking socket (an inherited one may be): wait as a blocking one
 * would. shutdown(2) makes poll() report a read shutdown, but a unix
 * socket shut down for writing only reports nothing to a writer waiting
 * for room: so the wait looks at the channel's shut bits every 100 ms.
 */
static ssize_t socket_again(Channel *c, short events, int flags)
{
    ChannelShutdown dir = events == POLLIN ? CHANNEL_SHUT_READ : CHANNEL_SHUT_WRITE;
    struct pollfd pfd = { .fd = socket_fd(c), .events = events };
    int r;

    if (flags & CHANNEL_NONBLOCK) {
        return -EAGAIN;
    }
    while ((r = poll(&pfd, 1, 100)) == 0 && !channel_is_shut_down(c, dir)) {
        /* Nothing yet, not shut down: wait on. */
    }
    if (r < 0) {
        return -errno;
    }
    /* Ready, or shut down (the core then returns EOF or EPIPE): try again. */
    return -EINTR;
}

static ssize_t socket_readv(Channel *c, const struct iovec *iov, int cnt, int *fds, size_t *nfds,
                            int flags)
{
    union {
        struct cmsghdr hdr;
        char buf[CMSG_SPACE(sizeof(int) * CHANNEL_MAX_FDS)];
    } ctl;
    struct msghdr msg = { .msg_iov = (struct iovec *)iov, .msg_iovlen = cnt };
    size_t max = nfds ? MIN(*nfds, CHANNEL_MAX_FDS) : 0;
    ssize_t n;

    if (max) {
        /*
         * Room for the most a message may carry, whatever the caller
         * takes: what it has no room for is closed here, the same way
         * every time, rather than by the kernel's padding rules.
         */
        msg.msg_control = ctl.buf;
        msg.msg_controllen = sizeof(ctl.buf);
        *nfds = 0;
    }
    n = recvmsg(socket_fd(c), &msg,
                MSG_CMSG_CLOEXEC | ((flags & CHANNEL_NONBLOCK) ? MSG_DONTWAIT : 0));
    if (n < 0) {
        return errno == EAGAIN ? socket_again(c, POLLIN, flags) : -errno;
    }
    for (struct cmsghdr *cm = max ? CMSG_FIRSTHDR(&msg) : NULL; cm;
         cm = CMSG_NXTHDR(&msg, cm)) {
        size_t got;

        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) {
            continue;
        }
        got = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < got; i++) {
            int fd;

            memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
            if (*nfds < max) {
                fds[(*nfds)++] = fd;
            } else {
                close(fd);
            }
        }
    }
    if (max && (msg.msg_flags & MSG_CTRUNC)) {
        /*
         * More than CHANNEL_MAX_FDS fds: the kernel closed the rest, so
         * the message cannot be delivered whole; its bytes were consumed
         * (channel.h). A reader that asks for no fds at all gets the
         * bytes; fds sent along are closed by the kernel, as for any
         * socket reader.
         */
        for (size_t i = 0; i < *nfds; i++) {
            close(fds[i]);
        }
        *nfds = 0;
        return -ENOBUFS;
    }
    return n;
}

static ssize_t socket_writev(Channel *c, const struct iovec *iov, int cnt, const int *fds,
                             size_t nfds, int flags)
{
    union {
        struct cmsghdr hdr;
        char buf[CMSG_SPACE(sizeof(int) * CHANNEL_MAX_FDS)];
    } ctl;
    struct msghdr msg = { .msg_iov = (struct iovec *)iov, .msg_iovlen = cnt };
    ssize_t n;

    if (nfds) {
        struct cmsghdr *cm;

        memset(&ctl, 0, sizeof(ctl));
        msg.msg_control = ctl.buf;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
    }
    /* A peer that went away is an error here, never a SIGPIPE. */
    n = sendmsg(socket_fd(c), &msg,
                MSG_NOSIGNAL | ((flags & CHANNEL_NONBLOCK) ? MSG_DONTWAIT : 0));
    if (n < 0) {
        return errno == EAGAIN ? socket_again(c, POLLOUT, flags) : -errno;
    }
    return n;
}

static void socket_shutdown(Channel *c, ChannelShutdown how)
{
    int sh = how == CHANNEL_SHUT_BOTH ? SHUT_RDWR
             : how == CHANNEL_SHUT_READ ? SHUT_RD : SHUT_WR;

    /* Wakes recvmsg/sendmsg/poll in other threads; the fd stays open. */
    shutdown(socket_fd(c), sh);
}

static int socket_close(Channel *c)
{
    return close(socket_fd(c)) < 0 ? -errno : 0;
}

static char *socket_describe(Channel *c)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    char host[INET6_ADDRSTRLEN];

    if (getpeername(socket_fd(c), (struct sockaddr *)&ss, &len) < 0) {
        return g_strdup_printf("socket fd %d", socket_fd(c));
    }
    switch (ss.ss_family) {
    case AF_INET: {
        struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

        inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
        return g_strdup_printf("tcp %s:%u", host, ntohs(sin->sin_port));
    }
    case AF_INET6: {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

        inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
        return g_strdup_printf("tcp [%s]:%u", host, ntohs(sin6->sin6_port));
    }
    case AF_UNIX: {
        struct sockaddr_un *sun = (struct sockaddr_un *)&ss;
        size_t n = len > offsetof(struct sockaddr_un, sun_path)
                   ? len - offsetof(struct sockaddr_un, sun_path) : 0;

        /* The peer of an accepted connection is usually unnamed. */
        return n && sun->sun_path[0] ? g_strdup_printf("unix %.*s", (int)n, sun->sun_path)
                                     : g_strdup("unix socket");
    }
    default:
        return g_strdup_printf("socket fd %d", socket_fd(c));
    }
}

/* Unix sockets: the same row, with fd passing. */
static const ChannelOps unix_socket_ops = {
    .kind = "unix socket",
    .features = CHANNEL_FEATURE_FD_PASS | CHANNEL_FEATURE_DUPLEX,
    .readv = socket_readv,
    .writev = socket_writev,
    .shutdown = socket_shutdown,
    .close = socket_close,
    .fd = socket_fd,
    .describe = socket_describe,
};

/* TCP (and any other family): SCM_RIGHTS does not exist there. */
static const ChannelOps inet_socket_ops = {
    .kind = "socket",
    .features = CHANNEL_FEATURE_DUPLEX,
    .readv = socket_readv,
    .writev = socket_writev,
    .shutdown = socket_shutdown,
    .close = socket_close,
    .fd = socket_fd,
    .describe = socket_describe,
};

Channel *channel_socket_new(int fd)
{
    SocketChannel *s = g_new0(SocketChannel, 1);
    struct sockaddr_storage ss = { 0 };
    socklen_t len = sizeof(ss);
    bool is_unix = getsockname(fd, (struct sockaddr *)&ss, &len) == 0 &&
                   ss.ss_family == AF_UNIX;

    s->fd = fd;
    channel_init(&s->base, is_unix ? &unix_socket_ops : &inet_socket_ops);
    return &s->base;
}

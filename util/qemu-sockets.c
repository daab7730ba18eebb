/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Listening sockets. A Unix socket file takes its mode from the umask at
 * bind(); under umask 000 any local user could connect. Linux derives that
 * mode from the socket's own inode (mode & ~umask), so an fchmod() of the
 * unbound socket closes the window that a chmod() after bind() would leave.
 * Also the checks on a socket inherited from our parent (fd=N).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/cutils.h"
#include "qemu/sockets.h"
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

/* @un := @path, or false with @errp set if it does not fit. */
static bool unix_sockaddr(struct sockaddr_un *un, const char *path, Error **errp)
{
    if (strlen(path) >= sizeof(un->sun_path)) {
        error_setg(errp, "UNIX socket path '%s' is too long", path);
        return false;
    }
    memset(un, 0, sizeof(*un));
    un->sun_family = AF_UNIX;
    strcpy(un->sun_path, path);
    return true;
}

int unix_connect_path(const char *path, Error **errp)
{
    struct sockaddr_un un;
    int fd;

    if (!unix_sockaddr(&un, path, errp)) {
        return -1;
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&un, sizeof(un)) < 0) {
        error_setg_errno(errp, errno, "Failed to connect to '%s'", path);
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    return fd;
}

int inet_connect_host_port(const char *host, const char *port, Error **errp)
{
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
    struct addrinfo *res;
    int fd = -1, err, saved = ECONNREFUSED;

    err = getaddrinfo(host, port, &hints, &res);
    if (err) {
        error_setg(errp, "address resolution failed for %s:%s: %s", host, port,
                   gai_strerror(err));
        return -1;
    }
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        int one = 1;

        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
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
        error_setg_errno(errp, saved, "Failed to connect to '%s:%s'", host, port);
    }
    return fd;
}

int inet_listen_host_port(const char *host, const char *port, int family, bool numeric,
                          bool keepalive, int backlog, Error **errp)
{
    struct addrinfo hints = { .ai_family = family, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_PASSIVE | (numeric ? AI_NUMERICHOST : 0) };
    struct addrinfo *res;
    int fd = -1, err, saved = EADDRNOTAVAIL;

    err = getaddrinfo(host && *host ? host : NULL, port, &hints, &res);
    if (err) {
        error_setg(errp, "address resolution failed for %s:%s: %s", host ? host : "", port,
                   gai_strerror(err));
        return -1;
    }
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        int one = 1;

        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (keepalive) {
            setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
        }
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, backlog) < 0) {
            saved = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        error_setg_errno(errp, saved, "Failed to find an available port");
    }
    return fd;
}

int unix_listen_private(const char *path, Error **errp)
{
    static unsigned seq;        /* atomic: tells two listeners of one process apart */
    struct sockaddr_un un;
    struct stat st;
    g_autofree char *tmp = NULL;
    const char *at;
    int fd;

    if (!unix_sockaddr(&un, path, errp)) {
        return -1;
    }
    /*
     * The path appears only once it accepts: bind and listen under a
     * sibling name, then rename it into place. bind() alone makes the
     * file, and a client that saw it (waiting for the path, as a live
     * update's operator does before 'migrate') got ECONNREFUSED until
     * listen(); under ASan the window was wide enough to fail a test.
     * A path too long for the sibling name takes the window as before.
     */
    tmp = g_strdup_printf("%s.%d.%u", path, (int)getpid(),
                          __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
    if (strlen(tmp) < sizeof(un.sun_path)) {
        strcpy(un.sun_path, tmp);
        at = tmp;
    } else {
        at = path;
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        error_setg_errno(errp, errno, "Failed to create Unix socket");
        return -1;
    }
    if (fchmod(fd, S_IRUSR | S_IWUSR) < 0) {
        error_setg_errno(errp, errno, "Failed to restrict the mode of socket %s", path);
        goto fail;
    }
    unlink(at);
    if (bind(fd, (struct sockaddr *)&un, sizeof(un)) < 0) {
        error_setg_errno(errp, errno, "Failed to bind socket to %s", path);
        goto fail;
    }
    /* A kernel that ignored the fchmod: fix the file before anyone can use it. */
    if (stat(at, &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)) &&
        chmod(at, S_IRUSR | S_IWUSR) < 0) {
        error_setg_errno(errp, errno, "Failed to restrict the mode of socket %s", path);
        unlink(at);
        goto fail;
    }
    if (listen(fd, 16) < 0) {
        error_setg_errno(errp, errno, "Failed to listen on socket");
        unlink(at);
        goto fail;
    }
    /* Replaces a stale file at @path in one step, as the unlink before bind did. */
    if (at != path && rename(at, path) < 0) {
        error_setg_errno(errp, errno, "Failed to bind socket to %s", path);
        unlink(at);
        goto fail;
    }
    return fd;

fail:
    close(fd);
    return -1;
}

int socket_inherited_fd(const char *str, bool server, Error **errp)
{
    int fd, fdflags, type, listening;
    socklen_t len = sizeof(int);
    struct sockaddr_storage peer;
    socklen_t peer_len = sizeof(peer);

    if (qemu_strtoi(str, NULL, 10, &fd) < 0 || fd < 0) {
        error_setg(errp, "fd=%s: not a file descriptor number "
                   "(fds named by the getfd command are not supported)", str);
        return -1;
    }
    fdflags = fcntl(fd, F_GETFD);
    if (fdflags < 0) {
        error_setg(errp, "fd=%s: not an open file descriptor", str);
        return -1;
    }
    /*
     * Inherited fds have FD_CLOEXEC clear and all of ours have it set: a
     * number the parent did not pass may be one we opened since (the
     * main loop's, another chardev's), which must not be taken over.
     */
    if (fdflags & FD_CLOEXEC) {
        error_setg(errp, "fd=%s: not inherited (it is close-on-exec), already in use", str);
        return -1;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0) {
        error_setg(errp, "fd=%s: not a socket", str);
        return -1;
    }
    if (type != SOCK_STREAM) {
        error_setg(errp, "fd=%s: not a stream socket", str);
        return -1;
    }
    len = sizeof(int);
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0) {
        error_setg_errno(errp, errno, "fd=%s: cannot query the socket", str);
        return -1;
    }
    if (server) {
        /*
         * As QEMU does: a bound socket starts listening here, a listening
         * one keeps listening; a connected one fails.
         */
        if (listen(fd, 16) < 0) {
            error_setg_errno(errp, errno, "fd=%s: cannot listen on it (server=on)", str);
            return -1;
        }
    } else if (listening) {
        error_setg(errp, "fd=%s: a listening socket needs server=on", str);
        return -1;
    } else if (getpeername(fd, (struct sockaddr *)&peer, &peer_len) < 0) {
        error_setg_errno(errp, errno, "fd=%s: not a connected socket", str);
        return -1;
    }
    /* Ours from now on: a child of ours must not hold the monitor open. */
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
}

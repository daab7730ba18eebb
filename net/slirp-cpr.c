/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A hostfwd across a live update. The new process cannot bind a port the
 * old one holds, and a client's TCP connection to it would break, so the
 * bound socket itself crosses (cpr-transfer's channel, or cpr-exec's
 * inheritance). libslirp makes its hostfwd sockets itself (socket, bind,
 * listen) and has no call that adopts one, so:
 *  - the old process finds each hostfwd's socket among its fds by its
 *    address, right after libslirp made it, and keeps it by name for the
 *    cpr state (qemu/cpr-fd.h's preserved fds);
 *  - in the new process, libslirp's bind() is this file's (an executable's
 *    definition comes before libc's for the libraries it loads): while a
 *    hostfwd is set up whose name the old process handed over, the fresh
 *    socket is replaced by the inherited one (dup3), bound already (and
 *    listening, for TCP); every other bind goes to the kernel as before;
 *  - neither process polls libslirp's sockets while the guest is not its
 *    own, so neither reads the other's datagrams or connections.
 */
#include "qemu/osdep.h"
#include <sys/socket.h>
#include <sys/syscall.h>
#include <arpa/inet.h>
#include "qemu/cpr-fd.h"
#include "migration/misc.h"
#include "system/runstate.h"
#include "slirp-cpr.h"

/* Set around one slirp_add_hostfwd on the thread that makes it: the name to adopt. */
static __thread const char *bind_takeover;

int bind(int fd, __CONST_SOCKADDR_ARG addr, socklen_t len)
{
    if (bind_takeover) {
        int old = cpr_fd_take(bind_takeover);

        bind_takeover = NULL;
        if (old >= 0) {
            int ret = dup3(old, fd, O_CLOEXEC);
            int err = errno;

            close(old);
            errno = err;
            return ret < 0 ? -1 : 0;
        }
    }
    return syscall(SYS_bind, fd, addr.__sockaddr__, len);
}

static char *hostfwd_name(const NetSlirpHostFwd *fwd)
{
    char host[INET_ADDRSTRLEN];

    inet_ntop(AF_INET, &fwd->host_addr, host, sizeof(host));
    return g_strdup_printf("hostfwd:%s:%s:%d", fwd->udp ? "udp" : "tcp", host, fwd->host_port);
}

/* The socket libslirp bound for @fwd: ours with that type and address, or -1. */
static int hostfwd_find_fd(const NetSlirpHostFwd *fwd)
{
    g_autoptr(GDir) dir = g_dir_open("/proc/self/fd", 0, NULL);
    const char *ent;

    while (dir && (ent = g_dir_read_name(dir))) {
        int fd = atoi(ent), type;
        struct sockaddr_in sin;
        socklen_t tl = sizeof(type), sl = sizeof(sin);

        if (fd <= STDERR_FILENO ||
            getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 ||
            type != (fwd->udp ? SOCK_DGRAM : SOCK_STREAM) ||
            getsockname(fd, (struct sockaddr *)&sin, &sl) < 0 || sin.sin_family != AF_INET ||
            sin.sin_addr.s_addr != fwd->host_addr.s_addr ||
            ntohs(sin.sin_port) != fwd->host_port) {
            continue;
        }
        /* A TCP hostfwd's is the listening one, not a connection accepted on its port. */
        if (!fwd->udp) {
            int on = 0;
            socklen_t ol = sizeof(on);

            if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &ol) < 0 || !on) {
                continue;
            }
        }
        return fd;
    }
    return -1;
}

void net_slirp_cpr_adopt_begin(const NetSlirpHostFwd *fwd)
{
    static __thread char *name;

    g_free(name);
    name = hostfwd_name(fwd);
    /* Only a name the old process handed over; a port 0 rule binds anew. */
    bind_takeover = cpr_fd_received() && fwd->host_port ? name : NULL;
}

void net_slirp_cpr_adopt_end(const NetSlirpHostFwd *fwd, bool ok)
{
    g_autofree char *name = hostfwd_name(fwd);
    int fd;

    bind_takeover = NULL;
    if (!ok || !fwd->host_port) {
        return;
    }
    fd = hostfwd_find_fd(fwd);
    if (fd >= 0) {
        cpr_fd_preserve(name, fd);
    }
}

void net_slirp_cpr_forget(const NetSlirpHostFwd *fwd)
{
    g_autofree char *name = hostfwd_name(fwd);

    cpr_fd_unpreserve(name);
}

bool net_slirp_cpr_paused(void)
{
    return (cpr_fd_received() && runstate_check(RUN_STATE_INMIGRATE)) ||
           !migration_guest_owned_here(NULL);
}

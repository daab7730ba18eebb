/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fd:N: an inherited descriptor becomes the row its fstat() says it is.
 * A stream socket is the socket row (shutdown(2) wakes it, a return path
 * can use it); a regular file the file row (seekable); anything else (a
 * pipe, FIFO, character device, datagram socket) the pipe row, which waits
 * in poll() so that shutdown still wakes it.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "io/channel.h"
#include <sys/socket.h>

/*
 * A pipe's O_NONBLOCK belongs to its open file description, which our
 * parent may share: reopening a FIFO through /proc gives us our own. -1 if
 * that fails (another user's pipe, say): @fd is then used as it is, in
 * its own blocking mode (channel-command.c says how it is still woken).
 */
static int reopen_own(int fd, int accmode)
{
    g_autofree char *self = g_strdup_printf("/proc/self/fd/%d", fd);
    int nfd = open(self, accmode | O_NONBLOCK | O_CLOEXEC);

    if (nfd >= 0) {
        close(fd);
    }
    return nfd;
}

static Channel *pipe_row(int fd, int accmode, bool own, const char *desc, Error **errp)
{
    int rfd = accmode == O_WRONLY ? -1 : fd;
    int wfd = accmode == O_RDONLY ? -1 : fd;

    return own ? channel_pipe_new_own(rfd, wfd, desc, errp)
               : channel_pipe_new(rfd, wfd, desc, errp);
}

Channel *channel_fd_new(int fd, Error **errp)
{
    g_autofree char *desc = NULL;
    struct stat st;
    int fl, type = 0;
    socklen_t tl = sizeof(type);

    if (fstat(fd, &st) < 0 || (fl = fcntl(fd, F_GETFL)) < 0) {
        error_setg_errno(errp, errno, "fd: %d is not an open file descriptor", fd);
        return NULL;
    }
    if (S_ISSOCK(st.st_mode) && getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 &&
        type == SOCK_STREAM) {
        return channel_socket_new(fd);
    }
    desc = g_strdup_printf("fd %d", fd);
    if (S_ISREG(st.st_mode)) {
        return channel_file_new(fd, desc);
    }
    if (S_ISFIFO(st.st_mode)) {
        int own = reopen_own(fd, fl & O_ACCMODE);

        if (own >= 0) {
            return pipe_row(own, fl & O_ACCMODE, true, desc, errp);
        }
    }
    return pipe_row(fd, fl & O_ACCMODE, false, desc, errp);
}

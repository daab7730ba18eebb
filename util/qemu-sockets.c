/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Listening sockets. A Unix socket file takes its mode from the umask at
 * bind(); under umask 000 any local user could connect. Linux derives that
 * mode from the socket's own inode (mode & ~umask), so an fchmod() of the
 * unbound socket closes the window that a chmod() after bind() would leave.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/sockets.h"
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

int unix_listen_private(const char *path, Error **errp)
{
    struct sockaddr_un un = { .sun_family = AF_UNIX };
    struct stat st;
    int fd;

    if (strlen(path) >= sizeof(un.sun_path)) {
        error_setg(errp, "UNIX socket path '%s' is too long", path);
        return -1;
    }
    strcpy(un.sun_path, path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        error_setg_errno(errp, errno, "Failed to create Unix socket");
        return -1;
    }
    if (fchmod(fd, S_IRUSR | S_IWUSR) < 0) {
        error_setg_errno(errp, errno, "Failed to restrict the mode of socket %s", path);
        goto fail;
    }
    unlink(path);
    if (bind(fd, (struct sockaddr *)&un, sizeof(un)) < 0) {
        error_setg_errno(errp, errno, "Failed to bind socket to %s", path);
        goto fail;
    }
    /* A kernel that ignored the fchmod: fix the file before anyone can use it. */
    if (stat(path, &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)) &&
        chmod(path, S_IRUSR | S_IWUSR) < 0) {
        error_setg_errno(errp, errno, "Failed to restrict the mode of socket %s", path);
        unlink(path);
        goto fail;
    }
    if (listen(fd, 1) < 0) {
        error_setg_errno(errp, errno, "Failed to listen on socket");
        unlink(path);
        goto fail;
    }
    return fd;

fail:
    close(fd);
    return -1;
}

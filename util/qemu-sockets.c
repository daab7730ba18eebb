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

int unix_listen_private(const char *path, Error **errp)
{
    struct sockaddr_un un;
    struct stat st;
    int fd;

    if (!unix_sockaddr(&un, path, errp)) {
        return -1;
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
    if (listen(fd, 16) < 0) {
        error_setg_errno(errp, errno, "Failed to listen on socket");
        unlink(path);
        goto fail;
    }
    return fd;

fail:
    close(fd);
    return -1;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A live update's new process takes the cpr state (migration/misc.h's
 * cpr_incoming_receive): before the memory backends exist, so that each
 * RAM block maps the old process's memory instead of making its own.
 */
#include "qemu/osdep.h"
#include <sys/socket.h>
#include "qapi/error.h"
#include "qemu/cpr-fd.h"
#include "qemu/sockets.h"
#include "migration/misc.h"
#include "migration/core/channel-list.h"
#include "migration/core/cpr-state.h"
#include "migration/core/options.h"
#include "incoming.h"

/* The one connection the old process makes; the listener goes once it came. */
static int cpr_accept_one(const char *path, Error **errp)
{
    int lfd = unix_listen_private(path, errp);
    int fd;

    if (lfd < 0) {
        return -1;
    }
    do {
        fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        error_setg_errno(errp, errno, "cpr channel %s: accept", path);
    }
    close(lfd);
    unlink(path);
    return fd;
}

bool cpr_incoming_receive(const char *arg, Error **errp)
{
    g_autoptr(CprState) st = NULL;
    g_autofree char *uri = NULL;
    bool is_cpr;
    int fd;

    uri = migration_channel_json_uri(arg, &is_cpr, errp);
    if (!uri) {
        return false;
    }
    assert(is_cpr && g_str_has_prefix(uri, "unix:"));   /* channel-list.c's check */
    fd = cpr_accept_one(uri + strlen("unix:"), errp);
    if (fd < 0) {
        return false;
    }
    st = cpr_state_recv(fd, errp);
    if (!st) {
        close(fd);
        return false;
    }
    for (unsigned i = 0; i < st->n; i++) {
        cpr_fd_add(st->e[i].name, st->e[i].fd);
        st->e[i].fd = -1;       /* the table's now */
    }
    /* As QEMU's: the new process takes its mode from the old one. */
    migrate_set_mode(st->mode);
    migration_incoming_hold_cpr_conn(fd);
    return true;
}

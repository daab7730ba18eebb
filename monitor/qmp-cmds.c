/* SPDX-License-Identifier: GPL-2.0-or-later */
/* QMP commands owned by the monitor itself, and those on the fds its clients pass. */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands.h"
#include "chardev/char.h"
#include "qemu/fdset.h"
#include "monitor-internal.h"

static void close_fd(gpointer p)
{
    close(GPOINTER_TO_INT(p));
}

/* getfd: the fd that came with this command (SCM_RIGHTS), kept under @fdname. */
bool qmp_getfd(const char *fdname, Error **errp)
{
    Monitor *mon = monitor_cur();
    int fd = mon && mon->chr ? qemu_chr_take_msgfd(mon->chr) : -1;

    if (fd < 0) {
        error_setg(errp, "No file descriptor supplied via SCM_RIGHTS");
        return false;
    }
    if (g_ascii_isdigit(fdname[0])) {
        close(fd);
        error_setg(errp, "Parameter 'fdname' name must not start with a digit");
        return false;
    }
    if (!mon->fds) {
        mon->fds = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, close_fd);
    }
    /* A name given again replaces (and closes) the older fd, as in QEMU. */
    g_hash_table_insert(mon->fds, g_strdup(fdname), GINT_TO_POINTER(fd));
    return true;
}

bool qmp_closefd(const char *fdname, Error **errp)
{
    Monitor *mon = monitor_cur();

    if (!mon || !mon->fds || !g_hash_table_remove(mon->fds, fdname)) {
        error_setg(errp, "File descriptor named '%s' not found", fdname);
        return false;
    }
    return true;
}

int monitor_fd_take(const char *fdname, Error **errp)
{
    Monitor *mon = monitor_cur();
    gpointer key, value;

    if (!mon || !mon->fds || !g_hash_table_steal_extended(mon->fds, fdname, &key, &value)) {
        error_setg(errp, "File descriptor named '%s' has not been found", fdname);
        return -1;
    }
    g_free(key);
    return GPOINTER_TO_INT(value);
}

/* add-fd: the fd that came with this command, into an fd set (shared by all monitors). */
AddfdInfo *qmp_add_fd(bool has_fdset_id, int64_t fdset_id, const char *opaque, Error **errp)
{
    Monitor *mon = monitor_cur();
    int fd = mon && mon->chr ? qemu_chr_take_msgfd(mon->chr) : -1;
    AddfdInfo *info;
    int64_t id;

    if (fd < 0) {
        error_setg(errp, "No file descriptor supplied via SCM_RIGHTS");
        return NULL;
    }
    id = qemu_fdset_take_fd(has_fdset_id, fdset_id, fd, opaque, errp);
    if (id < 0) {
        close(fd);
        return NULL;
    }
    info = g_new0(AddfdInfo, 1);
    info->fdset_id = id;
    info->fd = fd;
    return info;
}

bool qmp_remove_fd(int64_t fdset_id, bool has_fd, int64_t fd, Error **errp)
{
    return qemu_fdset_remove_fd(fdset_id, has_fd, fd, errp);
}

/* Prepends each set, so the list ends up highest id first, as QEMU's does. */
static void fdset_to_info(int64_t set_id, const QemuFdsetFd *fds, guint nfds, void *opaque)
{
    FdsetInfoList **list = opaque, *elt = g_new0(FdsetInfoList, 1);
    FdsetFdInfoList **tail;

    elt->value = g_new0(FdsetInfo, 1);
    elt->value->fdset_id = set_id;
    tail = &elt->value->fds;
    for (guint i = 0; i < nfds; i++) {
        *tail = g_new0(FdsetFdInfoList, 1);
        (*tail)->value = g_new0(FdsetFdInfo, 1);
        (*tail)->value->fd = fds[i].fd;
        (*tail)->value->opaque = g_strdup(fds[i].opaque);
        tail = &(*tail)->next;
    }
    elt->next = *list;
    *list = elt;
}

FdsetInfoList *qmp_query_fdsets(Error **errp)
{
    FdsetInfoList *list = NULL;

    qemu_fdset_foreach(fdset_to_info, &list);
    return list;
}

VersionInfo *qmp_query_version(Error **errp)
{
    VersionInfo *info = g_new0(VersionInfo, 1);

    info->qemu = g_new0(VersionTriple, 1);
    info->qemu->major = QEMU_VERSION_MAJOR;
    info->qemu->minor = QEMU_VERSION_MINOR;
    info->qemu->micro = QEMU_VERSION_MICRO;
    info->package = g_strdup(QEMU_PKGVERSION);
    return info;
}

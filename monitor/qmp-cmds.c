/* SPDX-License-Identifier: GPL-2.0-or-later */
/* QMP commands owned by the monitor itself. */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands.h"
#include "chardev/char.h"
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

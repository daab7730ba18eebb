/* SPDX-License-Identifier: GPL-2.0-or-later */
/* QMP commands owned by the monitor itself. */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands.h"

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

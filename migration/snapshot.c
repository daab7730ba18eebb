/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Background snapshot. Not implemented yet: the capability is refused, so
 * none of these run (the background-snapshot issue replaces this file).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "migration.h"
#include "snapshot.h"

bool migration_background_snapshot_supported(void)
{
    return false;
}

bool migration_background_snapshot_check(Error **errp)
{
    error_setg(errp, "Background-snapshot is not supported by this build yet");
    return false;
}

void *bg_snapshot_thread(void *opaque)
{
    g_assert_not_reached();
}

void snapshot_cancel_notify(void)
{
}

void snapshot_fill_info(MigrationInfo *info)
{
}

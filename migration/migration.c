/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Migration state machine; the live migration issue fills this in. */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "migration/misc.h"

static bool autostart = true;

void migration_init(void)
{
}

void migration_set_autostart(bool on)
{
    autostart = on;
}

bool migration_incoming_start(const char *uri, Error **errp)
{
    error_setg(errp, "incoming migration is not supported yet");
    return false;
}

bool migration_set_global_property(const char *name, const char *value, Error **errp)
{
    error_setg(errp, "Property 'migration.%s' not found", name);
    return false;
}

bool migration_allows_cont(Error **errp)
{
    return true;
}

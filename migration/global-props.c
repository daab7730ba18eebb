/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * -global migration.PROP=VALUE on the command line: QEMU's x-CAPABILITY
 * properties go through migrate-set-capabilities (migration.c, with its
 * checks), the parameters straight to options.c. Above both: options.c
 * stays the bottom of migration/, calling nothing up.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands.h"
#include "migration/misc.h"
#include "migration/core/options.h"

bool migration_set_global_property(const char *name, const char *value, Error **errp)
{
    MigrationParameters p = { 0 };
    uint64_t v;

    /* QEMU's capability properties: x-NAME (NAME itself when it starts with x-). */
    for (int c = 0; c < MIGRATION_CAPABILITY__MAX; c++) {
        const char *cap = MigrationCapability_str(c);
        g_autofree char *prop = g_str_has_prefix(cap, "x-") ? g_strdup(cap)
                                                            : g_strconcat("x-", cap, NULL);
        MigrationCapabilityStatus st = { .capability = c };
        MigrationCapabilityStatusList l = { .value = &st };

        if (strcmp(name, prop)) {
            continue;
        }
        if (!strcmp(value, "on") || !strcmp(value, "true")) {
            st.state = true;
        } else if (strcmp(value, "off") && strcmp(value, "false")) {
            error_setg(errp, "Property 'migration.%s' expects on or off", name);
            return false;
        }
        return qmp_migrate_set_capabilities(&l, errp);
    }
    /* Ours, as a bool property: -global migration.x-mapped-ram-integrity=on. */
    if (!strcmp(name, "x-mapped-ram-integrity")) {
        if (!strcmp(value, "on") || !strcmp(value, "true")) {
            p.x_mapped_ram_integrity = true;
        } else if (strcmp(value, "off") && strcmp(value, "false")) {
            error_setg(errp, "Property 'migration.%s' expects on or off", name);
            return false;
        }
        p.has_x_mapped_ram_integrity = true;
        migrate_params_apply(&p);
        return true;
    }
    /* QEMU's -global migration.x-clear-bitmap-shift=N. */
    if (strcmp(name, "x-clear-bitmap-shift") && strcmp(name, "clear-bitmap-shift")) {
        error_setg(errp, "Property 'migration.%s' not found", name);
        return false;
    }
    if (!g_ascii_string_to_unsigned(value, 10, 0, 255, &v, NULL)) {
        error_setg(errp, "Property 'migration.%s' expects a number", name);
        return false;
    }
    p.has_x_clear_bitmap_shift = true;
    p.x_clear_bitmap_shift = v;
    /* On the command line: no migration runs yet. */
    if (!migrate_params_check(&p, errp)) {
        return false;
    }
    migrate_params_apply(&p);
    return true;
}

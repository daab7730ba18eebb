/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Migration entry points used outside migration/. */
#ifndef MIGRATION_MISC_H
#define MIGRATION_MISC_H

#include <stdbool.h>
#include "qemu/typedefs.h"

/* Registers the migration sections; @machine_type goes into every stream. */
void migration_init(const char *machine_type);
/*
 * -incoming URI|defer|JSON, JSON being one MigrationChannel object (QEMU
 * 10.0's form, e.g. {"channel-type": "main", "addr": {"transport":
 * "socket", "type": "unix", "path": "/tmp/s"}}).
 */
bool migration_incoming_start(const char *arg, Error **errp);
/* Checks an -incoming argument as it is parsed: a JSON channel must be one we take. */
bool migration_incoming_check(const char *arg, Error **errp);
/* Whether the destination starts the guest after loading (false with -S). */
void migration_set_autostart(bool autostart);
/*
 * cont is refused while an outgoing migration owns the VM state, and when
 * guest RAM is incomplete (migration_guest_ram_usable). BQL.
 */
bool migration_allows_cont(Error **errp);
/*
 * False (with @errp) when part of guest RAM will never arrive (a lazy
 * restore could not read its file): running, resetting (which writes the
 * boot data) or reading guest RAM from the monitor would wait for ever on
 * a missing page. BQL.
 */
bool migration_guest_ram_usable(Error **errp);
/* -global migration.NAME=VALUE */
bool migration_set_global_property(const char *name, const char *value, Error **errp);
/*
 * True while this destination runs the guest with RAM still arriving
 * (postcopy): a VMM read of a missing page waits for it. Any thread.
 */
bool migration_incoming_in_postcopy(void);
/* Defaults of capabilities and parameters; before option parsing. */
void migration_options_init(void);

#endif

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
/*
 * Checks an -incoming argument as it is parsed: a JSON channel must be one
 * we take. @is_cpr: it is a live update's cpr channel (a unix socket), for
 * cpr_incoming_receive rather than migration_incoming_start.
 */
bool migration_incoming_check(const char *arg, bool *is_cpr, Error **errp);
/*
 * A live update's new process, before it creates anything: waits on the
 * cpr channel @arg (-incoming's JSON object) for the old process, takes
 * the cpr state (the mode, the guest memory's fds, which the RAM blocks
 * then adopt by name) and holds the channel open until the main channel
 * listens. Blocks, as QEMU's does; exits nothing itself. Main thread.
 */
bool cpr_incoming_receive(const char *arg, Error **errp);
/*
 * The same after a cpr-exec: the state is in an inherited memfd named by
 * CPR_EXEC_STATE_ENV (migration/cpr-exec.h), the fds are inherited. True
 * (and nothing done) if the variable is not set. Main thread, at startup.
 */
bool cpr_exec_incoming_adopt(Error **errp);
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
/*
 * False (with @errp) once a live update (cpr-transfer) handed the guest
 * over: the new process runs it in this process's memory, so running,
 * resetting (which writes the boot data) or migrating it here would
 * corrupt it. BQL.
 */
bool migration_guest_owned_here(Error **errp);
/*
 * Handover: what only one running process may hold (an image's write
 * lock), released by a migration's source as its guest stops for the
 * switchover and taken by the destination before its guest first runs
 * (migration/core/handover.c). Registered at startup, main thread.
 *   release  source, BQL, guest stopped, before its device state leaves;
 *            false fails the migration and the guest runs on here
 *   take     destination before its guest runs, and 'cont' anywhere (a
 *            source whose migration completed takes back, or is refused);
 *            must be a no-op when nothing was released or taken yet
 */
typedef struct MigrationHandoverOps {
    const char *name;           /* for messages: "block" */
    /*
     * Source, mig/src, no BQL, the guest still running, just before it
     * stops for the switchover: do now what release would do, so that
     * release (inside the downtime) has only the last moments left.
     * True if there was anything to do (precopy then sends one more pass
     * before it stops: what the guest dirtied meanwhile). May be NULL;
     * never fails the migration.
     */
    bool (*prepare)(void *opaque);
    bool (*release)(void *opaque, Error **errp);
    bool (*take)(void *opaque, Error **errp);
} MigrationHandoverOps;
void migration_add_handover(const MigrationHandoverOps *ops, void *opaque);
/* Each prepare in order (mig/src, no BQL, the guest running); true if any had work. */
bool migration_handover_prepare(void);
/* Each release in order; on a failure the earlier ones take back. BQL. */
bool migration_handover_release(Error **errp);
/* Each take in order. BQL. */
bool migration_handover_take(Error **errp);
/*
 * A source giving its guest back: takes what it released, if it did.
 * False (reported) if that failed: the guest must not run. BQL.
 */
bool migration_handover_reclaim(void);
/* -global migration.NAME=VALUE */
bool migration_set_global_property(const char *name, const char *value, Error **errp);
/*
 * True while this destination runs the guest with RAM still arriving
 * (postcopy): a VMM read of a missing page waits for it. Any thread.
 */
bool migration_incoming_in_postcopy(void);
/* This process's command line (cpr-exec restarts it if the new binary fails). */
void migration_set_argv(int argc, char **argv);
/* Defaults of capabilities and parameters; before option parsing. */
void migration_options_init(void);

#endif

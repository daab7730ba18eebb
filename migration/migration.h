/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to migration/: the outgoing and incoming migration state. */
#ifndef MIGRATION_MIGRATION_H
#define MIGRATION_MIGRATION_H

#include "qapi/qapi-types.h"
#include "qemu/thread.h"
#include "channel.h"

typedef struct MigrationState {
    /* Changed only by migrate_set_state() (atomic compare-and-swap). */
    int state;                  /* MigrationStatus */

    /* Set by qmp_migrate (BQL) before the thread starts, then owned by it. */
    QemuThread thread;
    bool thread_running;        /* BQL */
    char *uri;
    MigChannel channel;
    QEMUFile *to_dst;           /* NULL until connected; shut down by cancel */
    GMutex file_lock;           /* protects to_dst against cancel's shutdown */

    /* Timing, ms / ns since start. Written by the migration thread. */
    int64_t start_ns;
    int64_t setup_ms;
    int64_t total_ms;           /* final, once finished */
    int64_t downtime_ms;
    int64_t expected_downtime_ms;
    int64_t downtime_start_ns;

    /* Bandwidth estimate of the last >= 100 ms window. */
    double bandwidth_bpms;      /* bytes per millisecond */
    uint64_t threshold_bytes;
    double mbps;
    uint64_t pages_per_second;
    uint64_t dirty_pages_rate;
    uint64_t precopy_bytes;
    uint64_t downtime_bytes;
    uint64_t transferred_final;

    bool vm_was_running;
    int result;                 /* outcome the thread reached, applied by cleanup */
    Error *error;               /* first error, BQL */
} MigrationState;

MigrationState *migrate_get_current(void);
/* Thread helpers shared by precopy and the background snapshot. */
QEMUFile *migration_open_output(MigrationState *s, uint64_t rate_limit, Error **errp);
/* Header, configuration and START sections, then setup -> active. */
bool migration_setup_sections(MigrationState *s, QEMUFile *f, Error **errp);
/* Records @err (if any) and hands cleanup to the main loop. Thread exit path. */
void migration_thread_end(MigrationState *s, Error *err);
/* Compare-and-swap @old -> @new; emits MIGRATION if it happened. Any thread. */
void migrate_set_state(int *state, int old, int new);
/* query-migrate for a destination (fills @info, returns it). */
MigrationInfo *migration_incoming_info(MigrationInfo *info);
bool migration_is_running(void);
bool migration_has_finished(void);
/* Emits MIGRATION_PASS (with the events capability); any thread. */
void migration_dirty_pass_event(uint64_t pass);
/* max-bandwidth changed: applies it to a running migration. */
void migration_rate_limit_changed(void);

/* Background snapshot (migration/snapshot.c). */
bool migration_background_snapshot_supported(void);
bool migration_background_snapshot_check(Error **errp);

/* Global state section (migration/global-state.c). */
void global_state_init(void);
/* Records the current run state for the stream (before stopping the VM). */
void global_state_store(void);
/* Run state saved by the source, or -1 if none was received. */
int global_state_get_runstate(void);

#endif

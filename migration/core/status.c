/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * MigrationStatus transitions and their events. Events need the BQL; the
 * callers run in the main loop (BQL held) and in mig/src (not held), so
 * each emission takes it only if needed.
 */
#include "qemu/osdep.h"
#include "qapi/qapi-events.h"
#include "qemu/main-loop.h"
#include "options.h"
#include "status.h"
#include "migration/trace.h"

void migrate_set_state_detail(int *state, int old, int new, XDowntimeInfo *downtime,
                              XIncomingDowntimeInfo *incoming_downtime)
{
    if (__atomic_compare_exchange_n(state, &old, new, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
        trace_migration_state(MigrationStatus_str(old), MigrationStatus_str(new));
        if (migrate_events()) {
            BQL_LOCK_GUARD();
            qapi_event_send_migration(new, downtime, incoming_downtime, NULL);
        }
    }
}

void migrate_set_state(int *state, int old, int new)
{
    migrate_set_state_detail(state, old, new, NULL, NULL);
}

int migrate_get_state(const int *state)
{
    return __atomic_load_n(state, __ATOMIC_ACQUIRE);
}

bool migration_status_is_running(int state)
{
    switch (state) {
    case MIGRATION_STATUS_SETUP:
    case MIGRATION_STATUS_ACTIVE:
    case MIGRATION_STATUS_PRE_SWITCHOVER:
    case MIGRATION_STATUS_DEVICE:
    case MIGRATION_STATUS_CANCELLING:
    case MIGRATION_STATUS_POSTCOPY_ACTIVE:
    case MIGRATION_STATUS_POSTCOPY_PAUSED:
    case MIGRATION_STATUS_POSTCOPY_RECOVER:
        return true;
    default:
        return false;
    }
}

void migration_pass_event(uint64_t pass, uint64_t remaining_bytes, uint64_t transferred)
{
    trace_migration_pass(pass, remaining_bytes, transferred);
    if (migrate_events()) {
        BQL_LOCK_GUARD();
        qapi_event_send_migration_pass(pass);
    }
}

void migration_converge_event(int status, const char *step, const char *reason)
{
    trace_migration_converge_step(step, reason);
    if (migrate_events()) {
        XConvergeStep cs = { .step = (char *)step, .reason = (char *)reason };

        BQL_LOCK_GUARD();
        qapi_event_send_migration(status, NULL, NULL, &cs);
    }
}

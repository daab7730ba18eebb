/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QMP set-/cancel-/query-vcpu-dirty-limit (QEMU 7.1's commands) on
 * system/dirtylimit.c. Main thread, BQL held. While a migration with the
 * dirty-limit capability runs, the limits are the migration's.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands.h"
#include "system/cpus.h"
#include "system/dirtylimit.h"
#include "migration.h"
#include "migration/core/options.h"

static bool dirtylimit_cmd_allowed(Error **errp)
{
    if (migration_is_running() && migrate_cap(MIGRATION_CAPABILITY_DIRTY_LIMIT)) {
        error_setg(errp, "dirty-limit live migration is running, do not set dirty page "
                   "limit by hand");
        return false;
    }
    return dirtylimit_supported(errp);
}

static bool dirtylimit_cpu_index_ok(bool has_cpu_index, int64_t cpu_index, Error **errp)
{
    if (has_cpu_index && (cpu_index < 0 || !vcpus || cpu_index >= vcpus->len)) {
        error_setg(errp, "incorrect cpu index specified");
        return false;
    }
    return true;
}

bool qmp_set_vcpu_dirty_limit(bool has_cpu_index, int64_t cpu_index, uint64_t dirty_rate,
                              Error **errp)
{
    if (!dirtylimit_cmd_allowed(errp) ||
        !dirtylimit_cpu_index_ok(has_cpu_index, cpu_index, errp)) {
        return false;
    }
    return dirtylimit_set(has_cpu_index ? cpu_index : -1, dirty_rate, true, errp);
}

bool qmp_cancel_vcpu_dirty_limit(bool has_cpu_index, int64_t cpu_index, Error **errp)
{
    if (!dirtylimit_cmd_allowed(errp) ||
        !dirtylimit_cpu_index_ok(has_cpu_index, cpu_index, errp)) {
        return false;
    }
    dirtylimit_cancel(has_cpu_index ? cpu_index : -1);
    return true;
}

DirtyLimitInfoList *qmp_query_vcpu_dirty_limit(Error **errp)
{
    DirtyLimitInfoList *head = NULL, **tail = &head;

    for (guint i = 0; vcpus && i < vcpus->len; i++) {
        DirtyLimitInfoList *e;

        if (!dirtylimit_vcpu_limited(i)) {
            continue;
        }
        e = g_new0(DirtyLimitInfoList, 1);
        e->value = g_new0(DirtyLimitInfo, 1);
        e->value->cpu_index = i;
        e->value->limit_rate = dirtylimit_vcpu_limit(i);
        e->value->current_rate = dirtylimit_vcpu_current_rate(i);
        *tail = e;
        tail = &e->next;
    }
    return head;
}

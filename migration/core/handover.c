/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What only one running process may hold, handed over with the guest
 * (include/migration/misc.h, "Handover"): today the images' write locks
 * and caches (block/, migration.c's registration in system/control/vl.c).
 *
 * The invariant: at no time do the source and the destination both hold
 * one. The source releases only with its guest stopped for good or until
 * it takes it back (precopy's and postcopy's switchover), before any of
 * its device state leaves; the destination takes before its guest first
 * runs. A source that gives its guest back after releasing takes first:
 * the destination never ran, so it holds nothing.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "migration/misc.h"

typedef struct Handover {
    const MigrationHandoverOps *ops;
    void *opaque;
} Handover;

/* Main thread, BQL: filled at startup, walked at the switchover and at 'cont'. */
static struct {
    GArray *list;               /* Handover, in registration order */
    bool released;              /* this process released and has not taken back */
} handovers;

void migration_add_handover(const MigrationHandoverOps *ops, void *opaque)
{
    Handover h = { .ops = ops, .opaque = opaque };

    if (!handovers.list) {
        handovers.list = g_array_new(false, false, sizeof(Handover));
    }
    g_array_append_val(handovers.list, h);
}

bool migration_handover_prepare(void)
{
    bool worked = false;

    /* The list is filled at startup and never changes after: no lock to read it. */
    for (guint i = 0; handovers.list && i < handovers.list->len; i++) {
        Handover *h = &g_array_index(handovers.list, Handover, i);

        if (h->ops->prepare) {
            worked |= h->ops->prepare(h->opaque);
        }
    }
    return worked;
}

bool migration_handover_release(Error **errp)
{
    for (guint i = 0; handovers.list && i < handovers.list->len; i++) {
        Handover *h = &g_array_index(handovers.list, Handover, i);

        if (!h->ops->release(h->opaque, errp)) {
            /* What the earlier ones let go, they take back: the guest stays here. */
            for (guint j = 0; j < i; j++) {
                Handover *e = &g_array_index(handovers.list, Handover, j);
                g_autoptr(Error) err = NULL;

                if (!e->ops->take(e->opaque, &err)) {
                    warn_report("%s: %s", e->ops->name, error_get_pretty(err));
                }
            }
            return false;
        }
    }
    handovers.released = true;
    return true;
}

bool migration_handover_take(Error **errp)
{
    for (guint i = 0; handovers.list && i < handovers.list->len; i++) {
        Handover *h = &g_array_index(handovers.list, Handover, i);

        if (!h->ops->take(h->opaque, errp)) {
            return false;
        }
    }
    handovers.released = false;
    return true;
}

bool migration_handover_reclaim(void)
{
    g_autoptr(Error) err = NULL;

    if (!handovers.released) {
        return true;
    }
    if (!migration_handover_take(&err)) {
        error_report("the guest stays paused: %s", error_get_pretty(err));
        return false;
    }
    return true;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * SaveVMHandlers: the ops table of a live (iterative) section such as
 * "ram". Callbacks are grouped by calling context; each states its return
 * contract.
 */
#ifndef MIGRATION_REGISTER_H
#define MIGRATION_REGISTER_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"

typedef struct SaveVMHandlers {
    /* ---- outgoing, mig/src thread, BQL held ---- */
    /* Start of migration: write the START payload. 0 or -errno. */
    int (*save_setup)(QEMUFile *f, void *opaque, Error **errp);
    /* VM stopped (precopy's switchover): write the END payload, everything left. 0 or -errno. */
    int (*save_complete)(QEMUFile *f, void *opaque);

    /* ---- outgoing, mig/src thread, BQL NOT held ---- */
    /* Write one PART payload. 1 = nothing left to send now, 0 = more, <0 error. */
    int (*save_iterate)(QEMUFile *f, void *opaque);
    /* Bytes still to send (cheap estimate). */
    uint64_t (*pending_estimate)(void *opaque);
    /* Bytes still to send after a fresh sync (takes the BQL itself if needed). */
    uint64_t (*pending_exact)(void *opaque);

    /* ---- outgoing, main thread, BQL held, after mig/src was joined ---- */
    /* End of migration, any outcome (setup may not have run): free what setup allocated. */
    void (*save_cleanup)(void *opaque);

    /* ---- incoming, mig/dst thread, BQL NOT held ---- */
    int (*load_setup)(QEMUFile *f, void *opaque, Error **errp);
    /* One START/PART/END payload. 0 or -errno with @errp set. */
    int (*load_state)(QEMUFile *f, void *opaque, int version_id, Error **errp);
    void (*load_cleanup)(void *opaque);
    /*
     * The stream's EOF, every section read, before the guest may run: a
     * last check of what arrived. 0 or -errno with @errp set. NULL: none.
     */
    int (*load_complete)(void *opaque, Error **errp);
} SaveVMHandlers;

void register_savevm_live(const char *idstr, uint32_t instance_id, int version_id,
                          const SaveVMHandlers *ops, void *opaque);

#endif

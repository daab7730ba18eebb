/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to migration/: the RAM section's source-side state. */
#ifndef MIGRATION_RAM_H
#define MIGRATION_RAM_H

#include "dirty.h"

typedef struct RAMState {
    DirtyTracker dt;
    bool tracking;              /* dt initialised */
    bool bg_snapshot;           /* no dirty logging: save linearly once */
    int cur_block;              /* scan position */
    uint64_t cur_page;
    RAMBlock *last_sent_block;  /* for the CONTINUE flag */
    bool in_downtime;           /* VM stopped: pages count as downtime bytes */

    /* Statistics: written by the migration thread, read by query-migrate. */
    uint64_t zero_pages;
    uint64_t normal_pages;
    uint64_t downtime_pages;
    uint64_t rounds;            /* scans that wrapped past the last block */
    uint64_t scan_ns;
} RAMState;

void ram_mig_init(void);
RAMState *ram_state_get(void);
void ram_save_page(RAMState *rs, QEMUFile *f, RAMBlock *rb, uint64_t page);
void ram_save_page_copy(RAMState *rs, QEMUFile *f, RAMBlock *rb, uint64_t page,
                        const uint8_t *data);

#endif

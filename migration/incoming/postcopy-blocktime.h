/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: postcopy-blocktime on the destination, QEMU's
 * measure. A vCPU is blocked from the moment the fault thread reads its
 * missing-page fault until that page is placed; postcopy-vcpu-blocktime
 * sums each vCPU's blocked time, postcopy-blocktime the time during which
 * every vCPU was blocked at once (the guest made no progress at all).
 * Faults of other threads (the VMM's) are not a vCPU's and are left out.
 */
#ifndef MIGRATION_POSTCOPY_BLOCKTIME_H
#define MIGRATION_POSTCOPY_BLOCKTIME_H

#include <stdbool.h>
#include <stdint.h>
#include "qapi/qapi-types.h"

/* mig/dst at LISTEN, vCPU threads running or not: start measuring (forgets the last run). */
void postcopy_blocktime_start(void);
bool postcopy_blocktime_on(void);
/* mig/pc-fault: thread @tid faulted on the page at host address @page_addr at @now_ns. */
void postcopy_blocktime_fault(uint32_t tid, uint64_t page_addr, int64_t now_ns);
/* A placing thread: the page at @page_addr is in; its waiters run again. */
void postcopy_blocktime_placed(uint64_t page_addr);
/* query-migrate (any thread): the blocktime fields, in milliseconds. */
void postcopy_blocktime_fill_info(MigrationInfo *info);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: the stream's COMMAND records (postcopy.h has the
 * layouts), as the outgoing modes write them; loadvm-cmd.h reads them.
 */
#ifndef MIGRATION_SAVEVM_CMD_H
#define MIGRATION_SAVEVM_CMD_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"

#define QEMU_VM_COMMAND 0x08

void qemu_savevm_send_open_return_path(QEMUFile *f);
void qemu_savevm_send_ping(QEMUFile *f, uint32_t value);
/* ADVISE with this host's page sizes. */
void qemu_savevm_send_postcopy_advise(QEMUFile *f);
void qemu_savevm_send_postcopy_listen(QEMUFile *f);
void qemu_savevm_send_postcopy_run(QEMUFile *f);
/* One DISCARD command: @n <= POSTCOPY_DISCARDS_PER_COMMAND runs of @block, in bytes. */
void qemu_savevm_send_postcopy_discard(QEMUFile *f, const char *block, const uint64_t *start,
                                       const uint64_t *len, int n);
/* Recovery: ask for the pages @block has on the destination (answered on the return path). */
void qemu_savevm_send_recv_bitmap(QEMUFile *f, const char *block);
/* Recovery: the source is ready to go on (answered by RESUME_ACK). */
void qemu_savevm_send_postcopy_resume(QEMUFile *f);
/* PACKAGED: the header; the caller puts the @len bytes of the blob after it. */
void qemu_savevm_send_packaged_header(QEMUFile *f, uint32_t len);

#endif

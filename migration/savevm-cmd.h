/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: the stream's COMMAND records (postcopy.h has the
 * layouts), written by the outgoing postcopy row and read by the loader.
 */
#ifndef MIGRATION_SAVEVM_CMD_H
#define MIGRATION_SAVEVM_CMD_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"

#define QEMU_VM_COMMAND 0x08

/* What the loader does after a command. */
typedef enum LoadVMCmdResult {
    LOADVM_CMD_ERROR = -1,
    LOADVM_CMD_CONTINUE = 0,
    LOADVM_CMD_QUIT = 1,        /* RUN: the end of a package */
} LoadVMCmdResult;

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

/*
 * loadvm_handle_command: the body of a COMMAND record other than PACKAGED
 * (whose blob savevm.c loads), hostile input: lengths, order and content
 * are checked before anything acts on them. @in_package: read from
 * inside a PACKAGED blob.
 */
LoadVMCmdResult loadvm_handle_command(QEMUFile *f, uint16_t cmd, uint16_t len, bool in_package,
                                      Error **errp);

/*
 * loadvm_wait_go: mig/dst, the load succeeded and SHUT 0 went back: wait
 * at most @timeout_ms for the source's go (PING GO, postcopy.h) on @f.
 * False with @errp set if it did not come: the connection ended, the
 * time ran out, or something else came.
 */
bool loadvm_wait_go(QEMUFile *f, int64_t timeout_ms, Error **errp);

#endif

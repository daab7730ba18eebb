/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: the loader's side of the stream's COMMAND
 * records (savevm-cmd.h writes them; postcopy.h has the layouts).
 */
#ifndef MIGRATION_LOADVM_CMD_H
#define MIGRATION_LOADVM_CMD_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"

/* What the loader does after a command. */
typedef enum LoadVMCmdResult {
    LOADVM_CMD_ERROR = -1,
    LOADVM_CMD_CONTINUE = 0,
    LOADVM_CMD_QUIT = 1,        /* RUN: the end of a package */
} LoadVMCmdResult;

/*
 * loadvm_handle_command: the body of a COMMAND record other than PACKAGED
 * (whose blob loadvm.c loads), hostile input: lengths, order and content
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

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cpr-exec's handshake between the old image and the new one (the same
 * process, across execve): the environment variables that carry it.
 */
#ifndef MIGRATION_CPR_EXEC_H
#define MIGRATION_CPR_EXEC_H

/* The number of an inherited memfd that holds the cpr state (cpr-state.h's bytes). */
#define CPR_EXEC_STATE_ENV "QEMU_MIG_CPR_EXEC_STATE"
/*
 * Set for the check run before the exec: the binary parses and checks its
 * options, then exits (0 if it would start), creating nothing.
 */
#define CPR_EXEC_PROBE_ENV "QEMU_MIG_CPR_EXEC_PROBE"

/*
 * The number of an inherited memfd that holds the way back (a rollback
 * record: cpr-state.h's cpr_rollback_encode), for a new image that fails
 * before the guest runs.
 */
#define CPR_EXEC_ROLLBACK_ENV "QEMU_MIG_CPR_EXEC_ROLLBACK"
/*
 * The pid of the task that holds the old image's address space across the
 * exec, so that its teardown is not in the guest's pause: the new image's
 * child (no exit signal), for it to reap.
 */
#define CPR_EXEC_REAP_ENV "QEMU_MIG_CPR_EXEC_REAP"

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: the cpr state, what a live update hands the new
 * process before it creates anything: the migration mode and, by name,
 * the fds of the guest's memory (docs/devel/live-update.md has the layout
 * and why each fd crosses).
 *
 * cpr-transfer sends it over the cpr channel, a unix socket, the fds as
 * SCM_RIGHTS beside the bytes:
 *
 *     CprFdEntry e[] = { { "ram0", fd, size }, ... };
 *     cpr_state_send(sock, MIG_MODE_CPR_TRANSFER, e, n, errp);      // old
 *     CprState *st = cpr_state_recv(sock, errp);                     // new
 *
 * cpr-exec writes the same bytes into a memfd that survives the exec
 * (cpr_state_encode); the entries then name the inherited fds by number
 * (cpr_state_parse, then cpr_state_adopt_inherited).
 *
 * Every length and count is checked before use (cpr_state_parse is pure,
 * and fuzzed: tests/fuzz/fuzz-cpr-state.c). Any thread; no shared state.
 */
#ifndef MIGRATION_CPR_STATE_H
#define MIGRATION_CPR_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "qapi/qapi-types.h"

/* More than a guest has RAM blocks (8 here); the kernel passes at most 253 fds per message. */
#define CPR_STATE_MAX_FDS 64
#define CPR_STATE_MAX_NAME 255

typedef struct CprFdEntry {
    char *name;                 /* a RAM block's id */
    int fd;                     /* ours (the sender's own, or one received), or -1 */
    int sender_fd;              /* parsed: the number the sender gave it (cpr-exec inherits it) */
    uint64_t size;              /* the block's bytes, for a clear refusal of another -m */
} CprFdEntry;

typedef struct CprState {
    MigMode mode;               /* cpr-transfer or cpr-exec */
    unsigned n;
    CprFdEntry e[CPR_STATE_MAX_FDS];
} CprState;

/* Closes the fds @st still holds (fd >= 0) and frees it. NULL is fine. */
void cpr_state_free(CprState *st);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(CprState, cpr_state_free)

/* The bytes of a state: @mode and the @n entries (their fd numbers too). */
GByteArray *cpr_state_encode(MigMode mode, const CprFdEntry *e, unsigned n);
/*
 * The state in @buf (@len bytes, exactly one state). Each entry's fd is -1
 * and sender_fd the sender's number, unchecked (cpr_state_recv gives the
 * entries the fds received; cpr-exec's receiver checks the inherited
 * ones). NULL with @errp set if anything is out of bounds or inconsistent.
 */
CprState *cpr_state_parse(const uint8_t *buf, size_t len, Error **errp);

/* Sends the state over the unix socket @sock, the fds beside it. Blocking. */
bool cpr_state_send(int sock, MigMode mode, const CprFdEntry *e, unsigned n, Error **errp);
/* Receives one state from @sock (blocking): its entries hold our fds, one per entry. */
CprState *cpr_state_recv(int sock, Error **errp);

/*
 * cpr-exec's way back: the old binary (@exe_fd, an fd of it that survives
 * the exec) and the arguments that restart it as the incoming side of the
 * same state. The new image executes it if it fails before the guest runs.
 */
GByteArray *cpr_rollback_encode(int exe_fd, char *const *argv);
/* The arguments (g_strfreev them) and the fd, or NULL with @errp set. */
char **cpr_rollback_parse(const uint8_t *buf, size_t len, int *exe_fd, Error **errp);
/*
 * cpr-exec's memfds: the whole content of @fd (closed here; at most 1 MiB),
 * its length in @len; NULL with @errp set (@what names it in the message).
 */
uint8_t *cpr_memfd_read(int fd, const char *what, size_t *len, Error **errp);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz target: the cpr state's decoders (migration/core/cpr-state.c), what
 * a live update's new process parses from whoever connects to its cpr
 * channel, or reads from cpr-exec's memfds: the state, and the rollback
 * record (each input goes to both). A refused input must come back NULL
 * with a message; an accepted one must encode back to the same bytes (the
 * sender's fd numbers included). Seeds: scripts/fuzz-corpus encodes states
 * of one to three RAM blocks and rollback records itself, and keeps a
 * state our binary sent.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "migration/core/cpr-state.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    return 0;
}

/* The rollback record: refused with a message, or the same bytes again. */
static void fuzz_rollback(const uint8_t *data, size_t size)
{
    Error *err = NULL;
    int exe_fd;
    g_auto(GStrv) argv = cpr_rollback_parse(data, size, &exe_fd, &err);
    g_autoptr(GByteArray) again = NULL;

    if (!argv) {
        assert(err && *error_get_pretty(err));
        error_free(err);
        return;
    }
    assert(argv[0]);
    again = cpr_rollback_encode(exe_fd, argv);
    assert(again->len == size && !memcmp(again->data, data, size));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Error *err = NULL;
    g_autoptr(CprState) st = cpr_state_parse(data, size, &err);
    g_autoptr(GByteArray) again = NULL;
    CprFdEntry e[CPR_STATE_MAX_FDS];

    fuzz_rollback(data, size);
    if (!st) {
        assert(err && *error_get_pretty(err));
        error_free(err);
        return 0;
    }
    assert(!err && st->n <= CPR_STATE_MAX_FDS);
    for (unsigned i = 0; i < st->n; i++) {
        assert(st->e[i].fd == -1 && st->e[i].name && *st->e[i].name);
        e[i] = st->e[i];
        e[i].fd = st->e[i].sender_fd;
    }
    again = cpr_state_encode(st->mode, e, st->n);
    assert(again->len == size && !memcmp(again->data, data, size));
    return 0;
}

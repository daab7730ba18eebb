/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The first-word table of incoming connections (incoming-sort.h). Rows in
 * order; the first that matches wins. A multifd channel is told by its
 * magic whether or not channels are expected (the receiver refuses one it
 * has no room for); the preempt channel has no magic of its own: it is
 * the one connection that starts as neither (a RAM record), so it matches
 * only while it is expected.
 */
#include "qemu/osdep.h"
#include "incoming-sort.h"
#include "migration/transport/multifd.h"
#include "migration/stream/savevm.h"
#include "migration/stream/savevm-cmd.h"

/* A recovered stream opens with a command (the source asks for the received bitmaps). */
static bool first_is_command(uint32_t first)
{
    return (first >> 24) == QEMU_VM_COMMAND;
}

static bool main_matches(uint32_t first, const IncomingExpect *want)
{
    return want->main && (want->recovering ? first_is_command(first)
                                            : first == QEMU_VM_FILE_MAGIC);
}

static bool multifd_matches(uint32_t first, const IncomingExpect *want)
{
    return !want->recovering && first == MULTIFD_MAGIC;
}

static bool preempt_matches(uint32_t first, const IncomingExpect *want)
{
    return want->preempt && (want->recovering ? !first_is_command(first)
                                               : first != QEMU_VM_FILE_MAGIC &&
                                                 first != MULTIFD_MAGIC);
}

static const struct {
    IncomingConnKind kind;
    bool (*matches)(uint32_t first, const IncomingExpect *want);
} incoming_conn_rows[] = {
    { INCOMING_CONN_MAIN, main_matches },
    { INCOMING_CONN_PREEMPT, preempt_matches },
    { INCOMING_CONN_MULTIFD, multifd_matches },
};

IncomingConnKind incoming_conn_sort(uint32_t first, const IncomingExpect *want)
{
    for (size_t i = 0; i < G_N_ELEMENTS(incoming_conn_rows); i++) {
        if (incoming_conn_rows[i].matches(first, want)) {
            return incoming_conn_rows[i].kind;
        }
    }
    return INCOMING_CONN_UNKNOWN;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: what an incoming connection is, told by its first
 * word (read ahead, still in the channel), as QEMU's destination tells
 * them: the migration stream, a multifd channel, or postcopy's preempt
 * channel. The one place that knows the first words; incoming.c hands
 * each kind to its owner.
 */
#ifndef MIGRATION_INCOMING_SORT_H
#define MIGRATION_INCOMING_SORT_H

#include <stdbool.h>
#include <stdint.h>

typedef enum IncomingConnKind {
    INCOMING_CONN_MAIN,         /* the migration stream (or a recovery's) */
    INCOMING_CONN_MULTIFD,      /* a multifd channel */
    INCOMING_CONN_PREEMPT,      /* postcopy-preempt's page channel */
    INCOMING_CONN_UNKNOWN,      /* none the migration still expects */
} IncomingConnKind;

/* Which connections the migration still expects (main thread). */
typedef struct IncomingExpect {
    bool recovering;            /* postcopy recovery: the stream opens with a command */
    bool main;                  /* the stream has not arrived yet */
    bool preempt;               /* postcopy-preempt is on and its channel has not arrived */
} IncomingExpect;

/* The kind of a connection whose first word (big-endian) is @first. */
IncomingConnKind incoming_conn_sort(uint32_t first, const IncomingExpect *want);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: multifd, the receiving side. The incoming side
 * hands every connection that starts with MULTIFD_MAGIC to
 * multifd_recv_add_channel(); each gets a thread that checks and places
 * its packets into guest RAM. mig/dst meets the channels at every
 * MULTIFD_FLUSH record (multifd_recv_flush). Everything a channel receives
 * is hostile input: each field is checked before a byte is placed.
 * multifd-send.c opens with the round protocol's invariant (rules 3 and 4
 * are this side's).
 *
 * Two levels: the global functions work on the receiver of the running
 * incoming migration (made at the first channel, freed by cleanup); the
 * multifd_receiver_* ones at the end on any instance
 * (tests/unit/test-multifd-rounds.c).
 */
#ifndef MIGRATION_MULTIFD_RECV_H
#define MIGRATION_MULTIFD_RECV_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"

typedef struct MultifdReceiver MultifdReceiver;

/*
 * Main thread: a connection that starts with MULTIFD_MAGIC. The first one
 * makes the receiver (multifd-channels and multifd-compression as set
 * now). Takes the caller's reference to @ch on success; false with @errp
 * if no more channels are expected, and the caller drops @ch then.
 */
bool multifd_recv_add_channel(Channel *ch, Error **errp);
/* Main thread: channel connections accepted so far, and how many are expected. */
int multifd_recv_channels_accepted(void);
int multifd_recv_channels_expected(void);
/* Main thread, before mig/dst starts: the main stream, shut down when a channel fails. */
void multifd_recv_set_main(QEMUFile *f);
/*
 * mig/dst, at a MULTIFD_FLUSH record: waits until every channel placed the
 * pages of this round, then lets them go on with the next. False with
 * @errp if a channel failed or ended first.
 */
bool multifd_recv_flush(Error **errp);
/* Any thread: the first channel failure, copied into @errp. False if none. */
bool multifd_recv_failed(Error **errp);
/* Any thread: blocked channel reads and a waiting flush fail at once (cancel). */
void multifd_recv_shutdown(void);
/* Main thread, after mig/dst was joined: stop and join the threads, close the channels. */
void multifd_recv_cleanup(void);

/* ---- Instance level (the global functions above forward to these) ---- */

/* A receiver for multifd-channels channels with multifd-compression as set now. */
MultifdReceiver *multifd_receiver_new(void);
/* As multifd_recv_add_channel(), for @mr. */
bool multifd_receiver_add_channel(MultifdReceiver *mr, Channel *ch, Error **errp);
/* As multifd_recv_set_main(), for @mr. */
void multifd_receiver_set_main(MultifdReceiver *mr, QEMUFile *f);
/* As multifd_recv_flush(), for @mr (one thread: mig/dst). */
bool multifd_receiver_flush(MultifdReceiver *mr, Error **errp);
/*
 * An observer of the rounds (a test's): @hook(@opaque, K) runs in the
 * flush of round K, under the receiver's lock, once every channel placed
 * its pages of round K and before any is let into round K+1, so guest RAM
 * holds exactly rounds 1..K. It must not call the receiver. Set it before
 * the first channel is added.
 */
typedef void MultifdRoundHook(void *opaque, uint64_t round);
void multifd_receiver_set_round_hook(MultifdReceiver *mr, MultifdRoundHook *hook, void *opaque);
/* As multifd_recv_failed(), for @mr. */
bool multifd_receiver_failed(MultifdReceiver *mr, Error **errp);
/* As multifd_recv_shutdown(), for @mr: the thread that adds channels. */
void multifd_receiver_shutdown(MultifdReceiver *mr);
/* The thread that adds channels, once no flush runs: stops (as shutdown), joins, frees. */
void multifd_receiver_free(MultifdReceiver *mr);

#endif

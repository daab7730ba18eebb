/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: multifd, the receiving side. The incoming side
 * hands every connection that starts with MULTIFD_MAGIC to
 * multifd_recv_add_channel(); each gets a thread that checks and places
 * its packets into guest RAM. mig/dst meets the channels at every
 * MULTIFD_FLUSH record (multifd_recv_flush). Everything a channel receives
 * is hostile input: each field is checked before a byte is placed.
 */
#ifndef MIGRATION_MULTIFD_RECV_H
#define MIGRATION_MULTIFD_RECV_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"

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

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Migration transports, found by URI prefix: tcp:HOST:PORT, unix:PATH,
 * exec:CMD (run by /bin/sh -c), file:PATH[,offset=N] and fd:N. Each
 * connection is handed out as a Channel (include/io/channel.h), which
 * owns its fd (and an exec: command's child, reaped after its close).
 */
#ifndef MIGRATION_CHANNEL_H
#define MIGRATION_CHANNEL_H

#include <glib.h>
#include <stdbool.h>
#include "qemu/typedefs.h"
#include "io/channel.h"

/* Checks the URI's syntax without touching anything. */
bool mig_channel_check_uri(const char *uri, Error **errp);
/* file:PATH[,offset=N]: the path (g_free it) and the offset; false if @uri is not one. */
bool mig_channel_file_path(const char *uri, char **path, uint64_t *offset, Error **errp);
/*
 * Outgoing: connect/open/spawn; may block (run it in the migration
 * thread). The channel (one reference, the caller's), or NULL with @errp.
 */
Channel *mig_channel_connect(const char *uri, Error **errp);

/*
 * A connection (or the file / command's channel) is ready; @ch's
 * reference is the callee's. For a listening socket, returns true to
 * accept another connection (multifd channels).
 */
typedef bool MigChannelReady(Channel *ch, void *opaque);
/*
 * Incoming: start listening (or open the file / spawn the command); @ready
 * runs later in the main loop with each connection. Errors that can be
 * seen at once (bad URI, bind failure, missing file) are returned.
 */
bool mig_channel_listen(const char *uri, MigChannelReady *ready, void *opaque, Error **errp);
/* Stops a listener that never got a connection. */
void mig_channel_listen_cancel(void);
/*
 * Main loop: once @ch (a socket) has its first 4 bytes, @peeked runs with
 * them (big-endian) and @ch, whose next read returns them again (they wait
 * in its read-ahead, not in the socket); or with NULL if the peer closed
 * first (@ch is then dropped). Tells the main stream from multifd channels.
 * Takes the caller's reference to @ch and hands it to @peeked.
 */
typedef void MigChannelPeeked(Channel *ch, uint32_t first_be32, void *opaque);
void mig_channel_peek_be32(Channel *ch, MigChannelPeeked *peeked, void *opaque);
/*
 * Bytes written to @ch that the peer has not taken yet (0 if unknown or
 * not a socket). Uses the raw fd (SIOCOUTQ), not I/O.
 */
int mig_channel_unsent_bytes(Channel *ch);

#endif

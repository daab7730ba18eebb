/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Migration transports, found by URI prefix: tcp:HOST:PORT, unix:PATH,
 * exec:CMD (run by /bin/sh -c), file:PATH[,offset=N] and fd:N.
 */
#ifndef MIGRATION_CHANNEL_H
#define MIGRATION_CHANNEL_H

#include <glib.h>
#include <stdbool.h>
#include "qemu/typedefs.h"

typedef struct MigChannel {
    int fd;
    GPid child;                 /* exec: the command, reaped by mig_channel_close() */
    bool is_file;
} MigChannel;

/* Checks the URI's syntax without touching anything. */
bool mig_channel_check_uri(const char *uri, Error **errp);
/* file:PATH[,offset=N]: the path (g_free it) and the offset; false if @uri is not one. */
bool mig_channel_file_path(const char *uri, char **path, uint64_t *offset, Error **errp);
/* Outgoing: connect/open/spawn; may block (run it in the migration thread). */
bool mig_channel_connect(const char *uri, MigChannel *ch, Error **errp);

/*
 * A connection (or the file / command's fd) is ready. For a listening
 * socket, returns true to accept another connection (multifd channels).
 */
typedef bool MigChannelReady(int fd, GPid child, void *opaque);
/*
 * Incoming: start listening (or open the file / spawn the command); @ready
 * runs later in the main loop with each connection's fd. Errors that can
 * be seen at once (bad URI, bind failure, missing file) are returned.
 */
bool mig_channel_listen(const char *uri, MigChannelReady *ready, void *opaque, Error **errp);
/* Stops a listener that never got a connection. */
void mig_channel_listen_cancel(void);
/*
 * Main loop: once @fd (a socket) has its first 4 bytes, @peeked runs with
 * them (big-endian) still unread; or with @fd < 0 if the peer closed first
 * (@fd is then closed). Tells the main stream from multifd channels.
 */
typedef void MigChannelPeeked(int fd, uint32_t first_be32, void *opaque);
void mig_channel_peek_be32(int fd, MigChannelPeeked *peeked, void *opaque);
/* Bytes written to socket @fd that the peer has not taken yet (0 if unknown). */
int mig_channel_unsent_bytes(int fd);
/* Waits for an exec: child (after its fd was closed). Returns its exit status. */
int mig_channel_reap(GPid child);
/* Reaps an exec: child (if @child > 0) whenever it exits, without blocking. Main loop. */
void mig_channel_reap_later(GPid child);

#endif

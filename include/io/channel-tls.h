/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The TLS row: a channel that wraps another one (a socket) and carries
 * TLS records over it. docs/devel/tls.md has the whole story.
 *
 * How to use it:
 *
 *   // in a thread that may block (never the main loop):
 *   Channel *t = channel_tls_client_new(sock, creds, "dst.example", errp);
 *   if (!t) { ... }                    // sock's reference is gone either way
 *   channel_write_all(t, buf, len);    // encrypted on the wire
 *   channel_tls_bye(t);                // optional: a clean close_notify
 *   channel_unref(t);
 *
 * Cancelling a handshake: hold a reference to the inner channel before the
 * call and channel_shutdown() it from any thread; the handshake then fails
 * promptly with an error that says it was cut.
 *
 * After the handshake the row keeps the channel contract of
 * include/io/channel.h: one reader and one writer thread at a time (gnutls
 * allows one of each on a session), shutdown from any thread,
 * channel_pending() reports decrypted bytes not yet read.
 */
#ifndef IO_CHANNEL_TLS_H
#define IO_CHANNEL_TLS_H

#include "io/channel.h"
#include "crypto/tls-creds.h"
#include "authz/authz.h"

/*
 * Client side: handshakes over @inner and checks the server (with
 * verify-peer, its chain and that it names @hostname; NULL skips the name
 * check). Takes @inner's reference whatever happens; NULL with @errp.
 */
Channel *channel_tls_client_new(Channel *inner, TLSCreds *creds, const char *hostname,
                                Error **errp);
/*
 * Server side: handshakes over @inner, checks the client (verify-peer)
 * and asks @authz (NULL: anyone the credentials let in) about its
 * identity. Takes @inner's reference whatever happens; NULL with @errp.
 */
Channel *channel_tls_server_new(Channel *inner, TLSCreds *creds, Authz *authz, Error **errp);
/* Sends close_notify (the writer's thread); the peer then reads a clean EOF. */
int channel_tls_bye(Channel *c);
/*
 * The first record-layer failure in QEMU's words ("Cannot read from TLS
 * channel: ...", "Cannot write to TLS channel: ..."), for the error a
 * caller reports after a read or write gave -errno; NULL if none, or if
 * @c is not a TLS channel. Any thread; the text stays valid and unchanged
 * for the channel's life.
 */
const char *channel_tls_last_error(Channel *c);

#endif

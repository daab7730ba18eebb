/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * TLS for one migration's connections: the main stream (and its return
 * path), every multifd channel, the postcopy preempt channel and a
 * recovery's. A MigTLS is the migration's settings (tls-creds, tls-authz,
 * tls-hostname), resolved once when it starts, plus the handshakes it has
 * in flight, so that cancelling it wakes every one of them.
 *
 * How to use it:
 *
 *   // qmp_migrate / migrate-incoming / migrate-recover (BQL):
 *   MigTLS *tls;
 *   if (!mig_tls_new(&tls, uri, false, errp)) { fail }   // tls NULL: plaintext
 *   // the source, in a thread that may block (mig/src):
 *   ch = mig_tls_client(tls, mig_channel_connect(uri, errp), errp);
 *   // the destination, in the main loop, with each accepted socket:
 *   mig_tls_accept(tls, ch, accepted_cb, opaque);   // cb: main loop, later
 *   // any thread: cancel
 *   mig_tls_cancel(tls);
 *   // BQL, when the migration ends
 *   mig_tls_release(tls);
 *
 * Threads: a client handshake runs in the caller's thread (mig/src or a
 * multifd connect: never the main loop); a server handshake runs in a
 * thread of its own ("mig/tls-accept"), never under the BQL, and hands its
 * channel back through a main-loop callback. Invariant: a channel is handed
 * to the migration only after its handshake and peer checks passed; a
 * failed one is reported and dropped, and the listener keeps listening
 * (a host that cannot authenticate cannot end an incoming migration).
 */
#ifndef MIGRATION_TRANSPORT_TLS_H
#define MIGRATION_TRANSPORT_TLS_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"

/*
 * BQL. Reads tls-creds, tls-authz (@server) and tls-hostname now. *@out is
 * NULL when tls-creds is empty (plaintext). Refuses what cannot work:
 * unknown or wrong-endpoint credentials, a transport without a peer to
 * handshake with (exec:, file:, an fd: that is not a socket), an x509
 * client with no host name to check.
 */
bool mig_tls_new(MigTLS **out, const char *uri, bool server, Error **errp);
/*
 * Any thread that may block: handshakes over @raw as the client and
 * returns the TLS channel. @t NULL returns @raw itself; @raw NULL returns
 * NULL (a failed connect, @errp already set). Takes @raw's reference.
 */
Channel *mig_tls_client(MigTLS *t, Channel *raw, Error **errp);
/*
 * Main loop: after a server handshake and a look at the first 4 bytes
 * (big-endian in @first; they stay unread), @ch (the callee's reference),
 * in the main loop with the BQL. Not called for a connection that failed
 * (reported with error_report) or after mig_tls_cancel().
 */
typedef void MigTLSAccepted(Channel *ch, uint32_t first, void *opaque);
/* Main loop: takes @raw's reference; @accepted runs later (or never). */
void mig_tls_accept(MigTLS *t, Channel *raw, MigTLSAccepted *accepted, void *opaque);
/*
 * Any thread: every handshake in flight fails promptly, later ones at
 * once, and no more accepted callbacks run. @t may be NULL.
 */
void mig_tls_cancel(MigTLS *t);
/* BQL: cancels and drops the caller's reference. @t may be NULL. */
void mig_tls_release(MigTLS *t);

#endif

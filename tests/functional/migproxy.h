/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A tcp forwarder for migration tests: carries every connection to a
 * destination's port both ways (the stream, the return path, any channel)
 * until the test cuts them all at once, the way a broken link or a killed
 * forwarding process would; connections made after a cut are carried again.
 */
#ifndef MIGPROXY_H
#define MIGPROXY_H

#include <stdint.h>

typedef struct MigProxy MigProxy;

/* A loopback tcp listener on a free port (*@port); asserts it could be made. */
int migproxy_tcp_listen(int *port);
/* A connection to loopback @port, or -1. */
int migproxy_tcp_connect(int port);

/* Forwards to the port of @dst_uri ("tcp:127.0.0.1:PORT"). */
MigProxy *migproxy_new(const char *dst_uri);
/* The URI a source migrates to instead ("tcp:127.0.0.1:PORT"). */
const char *migproxy_uri(MigProxy *p);
/* Closes every connection now, both ends; returns once they are closed. */
void migproxy_cut(MigProxy *p);
/* Bytes carried from the source side so far, over all connections. */
uint64_t migproxy_forwarded(MigProxy *p);
void migproxy_free(MigProxy *p);

#endif

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
/* Where migproxy_cut_near_end() cuts a precopy stream that ends with a vmdesc. */
typedef enum MigProxyEnd {
    MIGPROXY_END_NONE,
    MIGPROXY_END_IN_CPU,        /* 20 bytes into the "cpu" device section */
    MIGPROXY_END_IN_VMDESC,     /* half of the vmdesc's JSON arrived */
    MIGPROXY_END_IN_CHANNEL,    /* the stream whole, every multifd channel but its last 16 bytes */
} MigProxyEnd;

/*
 * Arms one deterministic cut near the end of the next migration's stream
 * (the connection starting with QEVM): from its "cpu" FULL section on,
 * the proxy holds what the source sends, and once it holds a whole vmdesc
 * (the source then only waits for the return path, or closes) it lets
 * through what @where says and cuts every connection. In
 * MIGPROXY_END_IN_CHANNEL mode it keeps each other connection's last 16
 * bytes back all along. Connections made after the cut are carried again.
 */
void migproxy_cut_near_end(MigProxy *p, MigProxyEnd where);
/* How many cuts migproxy_cut_near_end() made so far, once an armed one was made (30 s at most). */
int migproxy_end_cuts(MigProxy *p);
/* Bytes carried from the source side so far, over all connections. */
uint64_t migproxy_forwarded(MigProxy *p);
void migproxy_free(MigProxy *p);

#endif

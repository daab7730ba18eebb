/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * -netdev user: QEMU's user-mode network on libslirp. The options are
 * parsed into a NetSlirpConfig (net/slirp-opts.h, no libslirp needed) and a
 * backend is made from it (net/slirp.c). Same lock rule as net/net.h: BQL.
 */
#ifndef NET_SLIRP_H
#define NET_SLIRP_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <glib.h>

#include "qemu/typedefs.h"
#include "net/net.h"
#include "net/slirp-opts.h"

/*
 * net_slirp_create: a "user" backend @id from @cfg, its hostfwd rules bound.
 * Fails with "Could not set up host forwarding rule 'RULE'" when a host
 * port cannot be bound.
 */
NetClientState *net_slirp_create(const char *id, const NetSlirpConfig *cfg, Error **errp);

/* net_slirp_hostfwd_add: one more rule at run time (HMP hostfwd_add). */
bool net_slirp_hostfwd_add(NetClientState *nc, const char *rule, Error **errp);

/*
 * net_slirp_hostfwd_remove: drop the rule whose host side @rule names.
 * Returns 1 when removed, 0 when there was no such rule, -1 when @rule is
 * not "[tcp|udp]:[hostaddr]:hostport".
 */
int net_slirp_hostfwd_remove(NetClientState *nc, const char *rule);

/* net_slirp_connection_info: libslirp's socket table (HMP info usernet). */
char *net_slirp_connection_info(NetClientState *nc);

/*
 * Slirp's own state for migration: the DHCP leases and IP id (libslirp
 * saves no host-side sockets; hostfwd rules come from each side's command
 * line). The version goes into the stream with the bytes.
 */
int net_slirp_state_version(void);
GByteArray *net_slirp_state_save(NetClientState *nc);
bool net_slirp_state_load(NetClientState *nc, int version, const uint8_t *buf, size_t len,
                          Error **errp);

/* The largest slirp state the "slirp" section carries (libslirp 4.7 writes 131 bytes). */
#define NET_SLIRP_STATE_MAX 4096

/*
 * net_slirp_vmstate_register: the "slirp" device-state section of the user
 * backend @nc (net/slirp-vmstate.c): instance = creation order among user
 * backends, version = net_slirp_state_version(). Main thread, at creation.
 */
void net_slirp_vmstate_register(NetClientState *nc);

#endif

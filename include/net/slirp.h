/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * -netdev user: QEMU's user-mode network on libslirp. The options are
 * parsed into a NetSlirpConfig (net/slirp-opts.c, no libslirp needed) and a
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

/* One hostfwd=[tcp|udp]:[hostaddr]:hostport-[guestaddr]:guestport rule. */
typedef struct NetSlirpHostFwd {
    bool udp;
    struct in_addr host_addr;   /* INADDR_ANY when not given */
    int host_port;              /* 0..65535; 0 lets the host pick one */
    struct in_addr guest_addr;  /* 0 when not given: slirp's first DHCP address */
    int guest_port;             /* 1..65535 */
} NetSlirpHostFwd;

typedef struct NetSlirpConfig {
    bool ipv4, ipv6;            /* both on unless one is asked for alone */
    bool restricted;            /* restrict=on: no traffic beyond the host */
    struct in_addr net, mask;   /* 10.0.2.0/24 */
    struct in_addr host;        /* the guest-visible host: net .2 */
    struct in_addr dhcp_start;  /* net .15 */
    struct in_addr dns;         /* net .3 */
    struct in6_addr prefix6, host6, dns6;   /* fec0::/64, ::2, ::3 */
    uint8_t prefix6_len;
    char *hostname;             /* or NULL */
    char *domainname;           /* or NULL */
    GPtrArray *hostfwd_rules;   /* char *: each hostfwd= as given */
    GArray *hostfwds;           /* NetSlirpHostFwd, parsed, same order */
} NetSlirpConfig;

/*
 * net_slirp_hostfwd_parse: one rule, with QEMU's message on error:
 * "Invalid host forwarding rule 'RULE' (REASON)".
 */
bool net_slirp_hostfwd_parse(const char *rule, NetSlirpHostFwd *fwd, Error **errp);

/*
 * net_slirp_hostfwd_parse_host: the "[tcp|udp]:[hostaddr]:hostport" that
 * hostfwd_remove takes. False on a bad rule (HMP says "invalid format").
 */
bool net_slirp_hostfwd_parse_host(const char *rule, NetSlirpHostFwd *fwd);

/*
 * net_slirp_config_parse: the user-netdev options of @opts (a -netdev user
 * or -nic user option set; type, id, model and mac are the caller's) with
 * QEMU's defaults and messages. Unknown options are the caller's to refuse.
 */
NetSlirpConfig *net_slirp_config_parse(QemuOpts *opts, Error **errp);
void net_slirp_config_free(NetSlirpConfig *cfg);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(NetSlirpConfig, net_slirp_config_free)

/* The option names net_slirp_config_parse() reads, NULL-terminated. */
extern const char *const net_slirp_known_options[];
/* Options QEMU's -netdev user has and this binary refuses, NULL-terminated. */
extern const char *const net_slirp_unsupported_options[];

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

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * -netdev user's options as data (net/slirp-opts.c): the guest network's
 * addresses and the hostfwd rules, parsed and checked without libslirp.
 * net/slirp.c builds a backend from a NetSlirpConfig and parses
 * hostfwd_add/remove rules here; this side never calls into the backend,
 * which is why the types live in this header and not in net/slirp.h.
 */
#ifndef NET_SLIRP_OPTS_H
#define NET_SLIRP_OPTS_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <glib.h>

#include "qemu/typedefs.h"

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

#endif

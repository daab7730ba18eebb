/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * -netdev user options: the guest network's addresses (QEMU's defaults:
 * 10.0.2.0/24, host .2, DNS .3, DHCP from .15) and hostfwd rules, checked
 * in the order QEMU checks them and refused with its messages. No libslirp
 * here, so the unit test needs none.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/cutils.h"
#include "qemu/option.h"
#include "net/slirp-opts.h"
#include <arpa/inet.h>

const char *const net_slirp_known_options[] = {
    "net", "host", "dhcpstart", "dns", "restrict", "ipv4", "ipv6", "hostname",
    "domainname", "hostfwd", NULL,
};

const char *const net_slirp_unsupported_options[] = {
    "ip", "tftp", "bootfile", "smb", "smbserver", "guestfwd", "dnssearch",
    "tftp-server-name", "ipv6-net", "ipv6-prefix", "ipv6-prefixlen", "ipv6-host",
    "ipv6-dns", NULL,
};

/*
 * Cuts *pp at the first @sep: returns the text before it and leaves *pp
 * just past it, or returns NULL (and leaves *pp) when there is no @sep.
 */
static char *take_until(const char **pp, char sep)
{
    const char *end = strchr(*pp, sep);
    char *field;

    if (!end) {
        return NULL;
    }
    field = g_strndup(*pp, end - *pp);
    *pp = end + 1;
    return field;
}

/* A port number in [@min, 65535], all of @s (decimal, or 0x hex as QEMU). */
static bool parse_port(const char *s, int min, int *port)
{
    const char *end;
    int v;

    if (qemu_strtoi(s, &end, 0, &v) < 0 || *end || v < min || v > 65535) {
        return false;
    }
    *port = v;
    return true;
}

/* An empty field keeps *addr; otherwise it must be a dotted IPv4 address. */
static bool parse_optional_addr(const char *s, struct in_addr *addr)
{
    return !*s || inet_aton(s, addr);
}

/* "[tcp|udp]:[hostaddr]:" into @fwd; the reason for a failure in *reason. */
static bool parse_proto_and_host(const char **pp, NetSlirpHostFwd *fwd, const char **reason)
{
    g_autofree char *proto = take_until(pp, ':');
    g_autofree char *host = NULL;

    if (!proto) {
        *reason = "No : separators";
        return false;
    }
    if (!*proto || !strcmp(proto, "tcp")) {
        fwd->udp = false;
    } else if (!strcmp(proto, "udp")) {
        fwd->udp = true;
    } else {
        *reason = "Bad protocol name";
        return false;
    }
    host = take_until(pp, ':');
    if (!host) {
        *reason = "Missing : separator";
        return false;
    }
    if (!parse_optional_addr(host, &fwd->host_addr)) {
        *reason = "Bad host address";
        return false;
    }
    return true;
}

bool net_slirp_hostfwd_parse(const char *rule, NetSlirpHostFwd *fwd, Error **errp)
{
    NetSlirpHostFwd f = { .host_addr.s_addr = htonl(INADDR_ANY) };
    g_autofree char *host_port = NULL;
    g_autofree char *guest = NULL;
    const char *reason = NULL;
    const char *p = rule;

    if (!parse_proto_and_host(&p, &f, &reason)) {
        goto fail;
    }
    host_port = take_until(&p, '-');
    if (!host_port) {
        reason = "Bad host port separator";
        goto fail;
    }
    if (!parse_port(host_port, 0, &f.host_port)) {
        reason = "Bad host port";
        goto fail;
    }
    guest = take_until(&p, ':');
    if (!guest) {
        reason = "Missing guest address";
        goto fail;
    }
    if (!parse_optional_addr(guest, &f.guest_addr)) {
        reason = "Bad guest address";
        goto fail;
    }
    if (!parse_port(p, 1, &f.guest_port)) {
        reason = "Bad guest port";
        goto fail;
    }
    *fwd = f;
    return true;

fail:
    error_setg(errp, "Invalid host forwarding rule '%s' (%s)", rule, reason);
    return false;
}

bool net_slirp_hostfwd_parse_host(const char *rule, NetSlirpHostFwd *fwd)
{
    NetSlirpHostFwd f = { .host_addr.s_addr = htonl(INADDR_ANY) };
    const char *reason;
    const char *p = rule;

    if (!parse_proto_and_host(&p, &f, &reason) || !parse_port(p, 0, &f.host_port)) {
        return false;
    }
    *fwd = f;
    return true;
}

/*
 * The mask QEMU gives a net= without one: by address class, with the
 * private ranges' own sizes. Checked top to bottom, first match wins.
 */
static uint32_t default_mask(uint32_t addr)
{
    static const struct { uint32_t and, eq, mask; } classes[] = {
        { 0x80000000, 0x00000000, 0xff000000 },     /* class A */
        { 0xfff00000, 0xac100000, 0xfff00000 },     /* 172.16.0.0/12 */
        { 0xc0000000, 0x80000000, 0xffff0000 },     /* class B */
        { 0xffff0000, 0xc0a80000, 0xffff0000 },     /* 192.168.0.0/16 */
        { 0xffff0000, 0xc6120000, 0xfffe0000 },     /* 198.18.0.0/15 */
        { 0xe0000000, 0xe0000000, 0xffffff00 },
    };

    for (size_t i = 0; i < ARRAY_SIZE(classes); i++) {
        if ((addr & classes[i].and) == classes[i].eq) {
            return classes[i].mask;
        }
    }
    return 0xfffffff0;
}

/* net=ADDR[/MASK]: MASK is a prefix length (4-32) or a dotted mask. */
static bool parse_network(const char *spec, NetSlirpConfig *cfg, Error **errp)
{
    const char *slash = strchr(spec, '/');
    g_autofree char *addr = g_strndup(spec, slash ? (size_t)(slash - spec) : strlen(spec));
    uint32_t net, mask;

    if (!inet_aton(addr, &cfg->net)) {
        error_setg(errp, "Failed to parse netmask");
        return false;
    }
    net = ntohl(cfg->net.s_addr);
    if (!slash) {
        mask = default_mask(net);
    } else {
        const char *end;
        long bits;

        if (qemu_strtol(slash + 1, &end, 10, &bits) == 0 && !*end) {
            if (bits < 4 || bits > 32) {
                error_setg(errp, "Invalid netmask provided (must be in range 4-32)");
                return false;
            }
            mask = 0xffffffffu << (32 - bits);
        } else if (!slash[1]) {
            error_setg(errp, "Invalid netmask provided (must be in range 4-32)");
            return false;
        } else {
            struct in_addr m;

            if (!inet_aton(slash + 1, &m)) {
                error_setg(errp, "Failed to parse netmask (trailing chars)");
                return false;
            }
            mask = ntohl(m.s_addr);
        }
    }
    /* The guest's well-known addresses keep their place in the new network. */
    net &= mask;
    cfg->net.s_addr = htonl(net);
    cfg->mask.s_addr = htonl(mask);
    cfg->host.s_addr = htonl(net | (0x0202 & ~mask));
    cfg->dhcp_start.s_addr = htonl(net | (0x020f & ~mask));
    cfg->dns.s_addr = htonl(net | (0x0203 & ~mask));
    return true;
}

static bool in_network(const NetSlirpConfig *cfg, struct in_addr a)
{
    return (a.s_addr & cfg->mask.s_addr) == cfg->net.s_addr;
}

/* host=, dns=, dhcpstart=: parsed and related to each other as QEMU does. */
static bool parse_addresses(QemuOpts *opts, NetSlirpConfig *cfg, Error **errp)
{
    const char *host = qemu_opt_get(opts, "host");
    const char *dns = qemu_opt_get(opts, "dns");
    const char *dhcp = qemu_opt_get(opts, "dhcpstart");

    if (host && !inet_aton(host, &cfg->host)) {
        error_setg(errp, "Failed to parse host");
        return false;
    }
    if (!in_network(cfg, cfg->host)) {
        error_setg(errp, "Host doesn't belong to network");
        return false;
    }
    if (dns && !inet_aton(dns, &cfg->dns)) {
        error_setg(errp, "Failed to parse DNS");
        return false;
    }
    if (cfg->restricted && !in_network(cfg, cfg->dns)) {
        error_setg(errp, "DNS doesn't belong to network");
        return false;
    }
    if (cfg->dns.s_addr == cfg->host.s_addr) {
        error_setg(errp, "DNS must be different from host");
        return false;
    }
    if (dhcp && !inet_aton(dhcp, &cfg->dhcp_start)) {
        error_setg(errp, "Failed to parse DHCP start address");
        return false;
    }
    if (!in_network(cfg, cfg->dhcp_start)) {
        error_setg(errp, "DHCP doesn't belong to network");
        return false;
    }
    if (cfg->dhcp_start.s_addr == cfg->host.s_addr ||
        cfg->dhcp_start.s_addr == cfg->dns.s_addr) {
        error_setg(errp, "DHCP must be different from host and DNS");
        return false;
    }
    return true;
}

/* ipv4= and ipv6=: asking for one alone turns the other off, as in QEMU. */
static bool parse_ip_versions(QemuOpts *opts, NetSlirpConfig *cfg, Error **errp)
{
    bool has4 = qemu_opt_has(opts, "ipv4"), has6 = qemu_opt_has(opts, "ipv6");
    bool v4, v6;

    if (!qemu_opt_get_bool(opts, "ipv4", true, &v4, errp) ||
        !qemu_opt_get_bool(opts, "ipv6", true, &v6, errp)) {
        return false;
    }
    cfg->ipv4 = !((has6 && v6 && !has4) || (has4 && !v4));
    cfg->ipv6 = !((has4 && v4 && !has6) || (has6 && !v6));
    if (!cfg->ipv4 && (qemu_opt_has(opts, "net") || qemu_opt_has(opts, "host") ||
                       qemu_opt_has(opts, "dns"))) {
        error_setg(errp, "IPv4 disabled but netmask/host/dns provided");
        return false;
    }
    if (!cfg->ipv4 && !cfg->ipv6) {
        error_setg(errp, "IPv4 and IPv6 disabled");
        return false;
    }
    return true;
}

static bool parse_names(QemuOpts *opts, NetSlirpConfig *cfg, Error **errp)
{
    const char *hostname = qemu_opt_get(opts, "hostname");
    const char *domain = qemu_opt_get(opts, "domainname");

    if (domain && !*domain) {
        error_setg(errp, "'domainname' parameter cannot be empty");
        return false;
    }
    if (domain && strlen(domain) > 255) {
        error_setg(errp, "'domainname' parameter cannot exceed 255 bytes");
        return false;
    }
    if (hostname && strlen(hostname) > 255) {
        error_setg(errp, "'vhostname' parameter cannot exceed 255 bytes");
        return false;
    }
    cfg->hostname = g_strdup(hostname);
    cfg->domainname = g_strdup(domain);
    return true;
}

static bool parse_hostfwds(QemuOpts *opts, NetSlirpConfig *cfg, Error **errp)
{
    g_auto(GStrv) rules = qemu_opt_get_all(opts, "hostfwd");

    for (int i = 0; rules[i]; i++) {
        NetSlirpHostFwd fwd;

        if (!net_slirp_hostfwd_parse(rules[i], &fwd, errp)) {
            return false;
        }
        g_ptr_array_add(cfg->hostfwd_rules, g_strdup(rules[i]));
        g_array_append_val(cfg->hostfwds, fwd);
    }
    return true;
}

NetSlirpConfig *net_slirp_config_parse(QemuOpts *opts, Error **errp)
{
    g_autoptr(NetSlirpConfig) cfg = g_new0(NetSlirpConfig, 1);
    const char *net = qemu_opt_get(opts, "net");

    cfg->hostfwd_rules = g_ptr_array_new_with_free_func(g_free);
    cfg->hostfwds = g_array_new(FALSE, TRUE, sizeof(NetSlirpHostFwd));
    cfg->net.s_addr = htonl(0x0a000200);        /* 10.0.2.0 */
    cfg->mask.s_addr = htonl(0xffffff00);       /* /24 */
    cfg->host.s_addr = htonl(0x0a000202);       /* 10.0.2.2 */
    cfg->dhcp_start.s_addr = htonl(0x0a00020f); /* 10.0.2.15 */
    cfg->dns.s_addr = htonl(0x0a000203);        /* 10.0.2.3 */
    inet_pton(AF_INET6, "fec0::", &cfg->prefix6);
    cfg->prefix6_len = 64;
    cfg->host6 = cfg->prefix6;
    cfg->host6.s6_addr[15] |= 2;
    cfg->dns6 = cfg->prefix6;
    cfg->dns6.s6_addr[15] |= 3;

    if (!parse_ip_versions(opts, cfg, errp) ||
        !qemu_opt_get_bool(opts, "restrict", false, &cfg->restricted, errp) ||
        (net && !parse_network(net, cfg, errp)) ||
        !parse_addresses(opts, cfg, errp) ||
        !parse_names(opts, cfg, errp) ||
        !parse_hostfwds(opts, cfg, errp)) {
        return NULL;
    }
    return g_steal_pointer(&cfg);
}

void net_slirp_config_free(NetSlirpConfig *cfg)
{
    if (!cfg) {
        return;
    }
    g_free(cfg->hostname);
    g_free(cfg->domainname);
    if (cfg->hostfwd_rules) {
        g_ptr_array_unref(cfg->hostfwd_rules);
    }
    if (cfg->hostfwds) {
        g_array_unref(cfg->hostfwds);
    }
    g_free(cfg);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for net/slirp-opts.c: -netdev user's addresses (QEMU's
 * defaults, net=/host=/dns=/dhcpstart= and how they follow each other),
 * ipv4=/ipv6=, and hostfwd rules good and bad, with QEMU's messages
 * (compared with QEMU 7.2 on libslirp 4.7; where QEMU's number parser lets
 * an empty port through as 0, "udp::-1-:7", we say "Bad host port").
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/option.h"
#include "net/slirp-opts.h"
#include <arpa/inet.h>

static NetSlirpConfig *parse_ok(const char *params)
{
    g_autoptr(QemuOpts) opts = qemu_opts_parse(params, NULL, ERRP_ABORT);

    return net_slirp_config_parse(opts, ERRP_ABORT);
}

static void parse_fail(const char *params, const char *msg)
{
    g_autoptr(QemuOpts) opts = qemu_opts_parse(params, NULL, ERRP_ABORT);
    Error *err = NULL;

    g_assert_null(net_slirp_config_parse(opts, &err));
    g_assert_nonnull(err);
    if (strcmp(error_get_pretty(err), msg)) {
        g_error("'%s': got '%s', want '%s'", params, error_get_pretty(err), msg);
    }
    error_free(err);
}

static void assert_addr(struct in_addr a, const char *want)
{
    char s[INET_ADDRSTRLEN];

    inet_ntop(AF_INET, &a, s, sizeof(s));
    g_assert_cmpstr(s, ==, want);
}

static void test_defaults(void)
{
    g_autoptr(NetSlirpConfig) c = parse_ok("");
    char s6[INET6_ADDRSTRLEN];

    assert_addr(c->net, "10.0.2.0");
    assert_addr(c->mask, "255.255.255.0");
    assert_addr(c->host, "10.0.2.2");
    assert_addr(c->dns, "10.0.2.3");
    assert_addr(c->dhcp_start, "10.0.2.15");
    g_assert_true(c->ipv4 && c->ipv6);
    g_assert_false(c->restricted);
    g_assert_null(c->hostname);
    g_assert_cmpuint(c->hostfwds->len, ==, 0);
    inet_ntop(AF_INET6, &c->host6, s6, sizeof(s6));
    g_assert_cmpstr(s6, ==, "fec0::2");
    g_assert_cmpuint(c->prefix6_len, ==, 64);
}

static void test_network(void)
{
    static const struct {
        const char *params, *net, *mask, *host, *dns, *dhcp;
    } cases[] = {
        { "net=192.168.76.0/24", "192.168.76.0", "255.255.255.0", "192.168.76.2",
          "192.168.76.3", "192.168.76.15" },
        /* The host bits of net= are dropped; .2/.3/.15 keep their place. */
        { "net=10.9.8.7/16", "10.9.0.0", "255.255.0.0", "10.9.2.2", "10.9.2.3", "10.9.2.15" },
        { "net=10.0.2.0/255.255.255.0", "10.0.2.0", "255.255.255.0", "10.0.2.2", "10.0.2.3",
          "10.0.2.15" },
        /* No mask: by class, with the private ranges' sizes. */
        { "net=10.0.0.0", "10.0.0.0", "255.0.0.0", "10.0.2.2", "10.0.2.3", "10.0.2.15" },
        { "net=172.20.0.0", "172.16.0.0", "255.240.0.0", "172.16.2.2", "172.16.2.3",
          "172.16.2.15" },
        { "net=192.168.0.0", "192.168.0.0", "255.255.0.0", "192.168.2.2", "192.168.2.3",
          "192.168.2.15" },
        { "net=10.0.2.0/24,host=10.0.2.5,dns=10.0.2.6,dhcpstart=10.0.2.100", "10.0.2.0",
          "255.255.255.0", "10.0.2.5", "10.0.2.6", "10.0.2.100" },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(NetSlirpConfig) c = parse_ok(cases[i].params);

        assert_addr(c->net, cases[i].net);
        assert_addr(c->mask, cases[i].mask);
        assert_addr(c->host, cases[i].host);
        assert_addr(c->dns, cases[i].dns);
        assert_addr(c->dhcp_start, cases[i].dhcp);
    }
}

static void test_network_errors(void)
{
    parse_fail("net=foo", "Failed to parse netmask");
    parse_fail("net=10.0.5.0/33", "Invalid netmask provided (must be in range 4-32)");
    parse_fail("net=10.0.5.0/3", "Invalid netmask provided (must be in range 4-32)");
    parse_fail("net=10.0.5.0/", "Invalid netmask provided (must be in range 4-32)");
    parse_fail("net=10.0.2.0/255.x", "Failed to parse netmask (trailing chars)");
    parse_fail("host=x", "Failed to parse host");
    parse_fail("host=1.2.3.4", "Host doesn't belong to network");
    parse_fail("net=10.0.2.0/24,host=10.0.2.3", "DNS must be different from host");
    parse_fail("dns=x", "Failed to parse DNS");
    parse_fail("restrict=on,dns=8.8.8.8", "DNS doesn't belong to network");
    parse_fail("dhcpstart=x", "Failed to parse DHCP start address");
    parse_fail("dhcpstart=10.0.3.15", "DHCP doesn't belong to network");
    parse_fail("dhcpstart=10.0.2.2", "DHCP must be different from host and DNS");
    parse_fail("restrict=maybe", "Parameter 'restrict' expects 'on' or 'off'");
    parse_fail("ipv4=off,net=10.0.0.0/8", "IPv4 disabled but netmask/host/dns provided");
    parse_fail("ipv4=off,ipv6=off", "IPv4 and IPv6 disabled");
    parse_fail("domainname=", "'domainname' parameter cannot be empty");
}

static void test_ip_versions(void)
{
    g_autoptr(NetSlirpConfig) only6 = parse_ok("ipv6=on");
    g_autoptr(NetSlirpConfig) only4 = parse_ok("ipv4=on");
    g_autoptr(NetSlirpConfig) no6 = parse_ok("ipv6=off");
    g_autoptr(NetSlirpConfig) both = parse_ok("ipv4=on,ipv6=on,restrict=on");

    g_assert_true(!only6->ipv4 && only6->ipv6);
    g_assert_true(only4->ipv4 && !only4->ipv6);
    g_assert_true(no6->ipv4 && !no6->ipv6);
    g_assert_true(both->ipv4 && both->ipv6 && both->restricted);
}

static void test_hostfwd_good(void)
{
    static const struct {
        const char *rule;
        bool udp;
        const char *host;
        int hport;
        const char *guest;
        int gport;
    } cases[] = {
        { "udp::5555-:7", true, "0.0.0.0", 5555, "0.0.0.0", 7 },
        { "tcp:127.0.0.1:2222-10.0.2.15:22", false, "127.0.0.1", 2222, "10.0.2.15", 22 },
        { "::8080-:80", false, "0.0.0.0", 8080, "0.0.0.0", 80 },
        { "tcp::0-:22", false, "0.0.0.0", 0, "0.0.0.0", 22 },
        { "udp::65535-:65535", true, "0.0.0.0", 65535, "0.0.0.0", 65535 },
        { "tcp::0x16-:0x16", false, "0.0.0.0", 22, "0.0.0.0", 22 },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        NetSlirpHostFwd f;

        g_assert_true(net_slirp_hostfwd_parse(cases[i].rule, &f, ERRP_ABORT));
        g_assert_cmpint(f.udp, ==, cases[i].udp);
        assert_addr(f.host_addr, cases[i].host);
        g_assert_cmpint(f.host_port, ==, cases[i].hport);
        assert_addr(f.guest_addr, cases[i].guest);
        g_assert_cmpint(f.guest_port, ==, cases[i].gport);
    }
}

static void test_hostfwd_bad(void)
{
    static const struct { const char *rule, *reason; } cases[] = {
        { "foo", "No : separators" },
        { "", "No : separators" },
        { "sctp::1-:1", "Bad protocol name" },
        { "tcp:", "Missing : separator" },
        { "tcp:1.2.3.4.5:1-:2", "Bad host address" },
        { ":1-:2", "Bad host address" },
        { "tcp:1-:2", "Bad host address" },
        { "tcp::1", "Bad host port separator" },
        { "tcp::x-:1", "Bad host port" },
        { "udp::70000-:7", "Bad host port" },
        { "udp::-1-:7", "Bad host port" },
        { "udp::12ab-:7", "Bad host port" },
        { "tcp::1-", "Missing guest address" },
        { "tcp::1-x:1", "Bad guest address" },
        { "tcp::1-:0", "Bad guest port" },
        { "tcp::1-:", "Bad guest port" },
        { "tcp::1-:65536", "Bad guest port" },
        { "tcp::1-:22x", "Bad guest port" },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *want = g_strdup_printf("Invalid host forwarding rule '%s' (%s)",
                                                cases[i].rule, cases[i].reason);
        NetSlirpHostFwd f;
        Error *err = NULL;

        g_assert_false(net_slirp_hostfwd_parse(cases[i].rule, &f, &err));
        if (strcmp(error_get_pretty(err), want)) {
            g_error("got '%s', want '%s'", error_get_pretty(err), want);
        }
        error_free(err);
    }
}

static void test_hostfwd_in_options(void)
{
    g_autoptr(NetSlirpConfig) c =
        parse_ok("hostfwd=udp::5555-:7,hostfwd=tcp::2222-:22");
    NetSlirpHostFwd *f0 = &g_array_index(c->hostfwds, NetSlirpHostFwd, 0);
    NetSlirpHostFwd *f1 = &g_array_index(c->hostfwds, NetSlirpHostFwd, 1);

    g_assert_cmpuint(c->hostfwds->len, ==, 2);
    g_assert_cmpstr(g_ptr_array_index(c->hostfwd_rules, 0), ==, "udp::5555-:7");
    g_assert_cmpstr(g_ptr_array_index(c->hostfwd_rules, 1), ==, "tcp::2222-:22");
    g_assert_true(f0->udp && f0->host_port == 5555 && f0->guest_port == 7);
    g_assert_true(!f1->udp && f1->host_port == 2222 && f1->guest_port == 22);
    /* The first bad rule is the one reported, good ones before it or not. */
    parse_fail("hostfwd=udp::1-:7,hostfwd=bad,hostfwd=worse",
               "Invalid host forwarding rule 'bad' (No : separators)");
}

static void test_hostfwd_remove_syntax(void)
{
    static const struct { const char *rule; bool ok, udp; int port; } cases[] = {
        { "udp::5555", true, true, 5555 }, { "tcp:127.0.0.1:22", true, false, 22 },
        { "::22", true, false, 22 }, { "foo", false }, { "tcp:bad:1", false },
        { "sctp::1", false }, { "udp::x", false }, { "udp::", false }, { "udp:1", false },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        NetSlirpHostFwd f;

        g_assert_cmpint(net_slirp_hostfwd_parse_host(cases[i].rule, &f), ==, cases[i].ok);
        if (cases[i].ok) {
            g_assert_cmpint(f.udp, ==, cases[i].udp);
            g_assert_cmpint(f.host_port, ==, cases[i].port);
        }
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/net/user-opts/defaults", test_defaults);
    g_test_add_func("/net/user-opts/network", test_network);
    g_test_add_func("/net/user-opts/network-errors", test_network_errors);
    g_test_add_func("/net/user-opts/ip-versions", test_ip_versions);
    g_test_add_func("/net/user-opts/hostfwd-good", test_hostfwd_good);
    g_test_add_func("/net/user-opts/hostfwd-bad", test_hostfwd_bad);
    g_test_add_func("/net/user-opts/hostfwd-options", test_hostfwd_in_options);
    g_test_add_func("/net/user-opts/hostfwd-remove-syntax", test_hostfwd_remove_syntax);
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * -netdev user on the real binary, libslirp and real sockets: info network
 * and info usernet, hostfwd rules from the command line and from
 * hostfwd_add / hostfwd_remove (the host port is checked by binding it from
 * here), HMP's messages, and command lines that must be refused with one
 * QEMU-worded line: bad options, bad rules, ports already taken, backends
 * this binary does not have.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "qconn.h"

#define ARGS "-M microvm -enable-kvm -nodefaults -m 64M -S -kernel %s "

/* A port that was free for both UDP and TCP on 0.0.0.0 a moment ago. */
static int free_port(void)
{
    for (int tries = 0; tries < 100; tries++) {
        struct sockaddr_in a = { .sin_family = AF_INET };
        socklen_t alen = sizeof(a);
        int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        bool ok;

        g_assert_cmpint(bind(u, (struct sockaddr *)&a, sizeof(a)), ==, 0);
        g_assert_cmpint(getsockname(u, (struct sockaddr *)&a, &alen), ==, 0);
        ok = bind(t, (struct sockaddr *)&a, sizeof(a)) == 0;
        close(u);
        close(t);
        if (ok) {
            return ntohs(a.sin_port);
        }
    }
    g_error("no free port");
}

/* Whether this process can bind 0.0.0.0:@port (no SO_REUSEADDR): nobody holds it. */
static bool port_free(int type, int port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
    int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
    bool ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;

    close(fd);
    return ok;
}

static QConn *start_vm(VM **vmp, const char *name, const char *extra)
{
    g_autofree char *path = vmtest_sock_path("hmp");
    g_autofree char *banner = NULL;
    QConn *c;

    *vmp = vm_spawn(name, true, ARGS "-monitor unix:%s,server=on,wait=off %s",
                    vmtest_firmware(), path, extra);
    c = qc_connect_unix(*vmp, path);
    banner = qc_hmp_banner(c);
    return c;
}

static void test_info_network(void)
{
    int port = free_port();
    g_autofree char *extra = g_strdup_printf(
        "-netdev user,id=n0,hostfwd=udp::%d-:7 "
        "-netdev user,id=n1,net=192.168.7.0/24,restrict=on", port);
    g_autofree char *fwd = g_strdup_printf("* %5d       10.0.2.15     7", port);
    g_autofree char *via_qmp = NULL;
    QConn *c;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    c = start_vm(&vm, "info", extra);
    qc_assert_hmp(c, "info network",
                  "n0: index=0,type=user,net=10.0.2.0,restrict=off\n"
                  "n1: index=0,type=user,net=192.168.7.0,restrict=on\n");
    qc_assert_hmp_has(c, "info usernet", "Hub -1 (n0):\n  Protocol[State]    FD  Source Address");
    qc_assert_hmp_has(c, "info usernet", fwd);
    qc_assert_hmp_has(c, "info usernet", "Hub -1 (n1):\n");
    qc_assert_hmp_has(c, "help info", "info network  -- show the network state\n");
    /* The same through QMP's human-monitor-command (monitor line ends, as QEMU's). */
    via_qmp = vm_hmp(vm, "info network");
    g_assert_cmpstr(via_qmp, ==,
                    "n0: index=0,type=user,net=10.0.2.0,restrict=off\r\n"
                    "n1: index=0,type=user,net=192.168.7.0,restrict=on\r\n");
    /* QEMU warns about a backend no NIC uses; so do we. */
    vm_pump(vm, 100);
    g_assert_nonnull(strstr(vm->stderr_text->str,
                            "qemu-system-x86_64: warning: netdev n0 has no peer\n"));
    qc_close(c);
    vm_kill(vm);
}

/* assert_hmp with a command line made from @fmt and one port. */
static void assert_hmp_port(QConn *c, const char *fmt, int port, const char *want_fmt)
{
    g_autofree char *cmd = g_strdup_printf(fmt, port);
    g_autofree char *want = g_strdup_printf(want_fmt, port);

    qc_assert_hmp(c, cmd, want);
}

static void test_hostfwd(void)
{
    int uport = free_port(), tport = free_port();
    g_autofree char *extra = g_strdup_printf("-netdev user,id=n0,hostfwd=udp::%d-:7", uport);
    QConn *c;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    c = start_vm(&vm, "hostfwd", extra);
    /* The command line's rule holds its port from the start. */
    g_assert_false(port_free(SOCK_DGRAM, uport));

    g_assert_true(port_free(SOCK_STREAM, tport));
    assert_hmp_port(c, "hostfwd_add n0 tcp:127.0.0.1:%d-:22", tport, "");
    g_assert_false(port_free(SOCK_STREAM, tport));
    /* Twice: the port is taken, as QEMU words it. */
    assert_hmp_port(c, "hostfwd_add n0 tcp:127.0.0.1:%d-:22", tport,
                    "Could not set up host forwarding rule 'tcp:127.0.0.1:%d-:22'\n");
    assert_hmp_port(c, "hostfwd_remove n0 tcp:127.0.0.1:%d", tport,
                    "host forwarding rule for tcp:127.0.0.1:%d removed\n");
    g_assert_true(port_free(SOCK_STREAM, tport));
    assert_hmp_port(c, "hostfwd_remove n0 tcp:127.0.0.1:%d", tport,
                    "host forwarding rule for tcp:127.0.0.1:%d not found\n");

    /* Without a netdev id: the first user backend. */
    assert_hmp_port(c, "hostfwd_remove udp::%d", uport,
                    "host forwarding rule for udp::%d removed\n");
    g_assert_true(port_free(SOCK_DGRAM, uport));
    assert_hmp_port(c, "hostfwd_add udp::%d-:7", uport, "");
    g_assert_false(port_free(SOCK_DGRAM, uport));

    /* Bad input: QEMU's messages, and the monitor carries on. */
    qc_assert_hmp(c, "hostfwd_add nope tcp::1-:2", "unrecognized netdev id 'nope'\n");
    qc_assert_hmp(c, "hostfwd_add n0 foo",
                  "Invalid host forwarding rule 'foo' (No : separators)\n");
    qc_assert_hmp(c, "hostfwd_add n0 udp::99999-:7",
                  "Invalid host forwarding rule 'udp::99999-:7' (Bad host port)\n");
    qc_assert_hmp(c, "hostfwd_add n0 tcp::1-:0",
                  "Invalid host forwarding rule 'tcp::1-:0' (Bad guest port)\n");
    qc_assert_hmp(c, "hostfwd_remove foo", "invalid format\n");
    qc_assert_hmp(c, "hostfwd_remove n0 tcp:bad:1", "invalid format\n");
    qc_assert_hmp(c, "hostfwd_remove nope tcp::1", "unrecognized netdev id 'nope'\n");
    qc_assert_hmp_has(c, "help hostfwd_add",
                      "hostfwd_add [netdev_id] [tcp|udp]:[hostaddr]:hostport-[guestaddr]:guestport");
    /* A datagram for a guest that has no NIC yet is dropped, nothing more. */
    {
        struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(uport),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

        g_assert_cmpint(sendto(fd, "ping", 4, 0, (struct sockaddr *)&to, sizeof(to)), ==, 4);
        close(fd);
    }
    qc_assert_hmp(c, "info network", "n0: index=0,type=user,net=10.0.2.0,restrict=off\n");
    qc_close(c);
    vm_kill(vm);
}

static void test_no_netdev(void)
{
    QConn *c;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    c = start_vm(&vm, "none", "");
    qc_assert_hmp(c, "info network", "");
    qc_assert_hmp(c, "info usernet", "");
    qc_assert_hmp(c, "hostfwd_add udp::1-:7", "user mode network stack not in use\n");
    qc_assert_hmp(c, "hostfwd_remove udp::1", "user mode network stack not in use\n");
    qc_close(c);
    vm_kill(vm);
}

typedef struct BadCase {
    const char *args;           /* after ARGS; %d = a port the test holds */
    const char *expect;         /* substring of stderr */
} BadCase;

static const BadCase bad_cases[] = {
    { "-netdev user,id=n0,hostfwd=foo",
      "-netdev user,id=n0,hostfwd=foo: Invalid host forwarding rule 'foo' (No : separators)" },
    { "-netdev user,id=n0,hostfwd=udp::70000-:7",
      "Invalid host forwarding rule 'udp::70000-:7' (Bad host port)" },
    { "-netdev user,id=n0,hostfwd=sctp::1-:1",
      "Invalid host forwarding rule 'sctp::1-:1' (Bad protocol name)" },
    { "-netdev user,id=n0,hostfwd=tcp::1-x:1",
      "Invalid host forwarding rule 'tcp::1-x:1' (Bad guest address)" },
    { "-netdev user,id=n0,hostfwd=udp::%d-:7", "Could not set up host forwarding rule 'udp::" },
    { "-netdev tap,id=n0",
      "-netdev tap,id=n0: network backend 'tap' is not compiled into this binary" },
    { "-netdev bridge,id=n0", "network backend 'bridge' is not compiled into this binary" },
    { "-netdev socket,id=n0,listen=:1234",
      "network backend 'socket' is not compiled into this binary" },
    { "-netdev vhost-user,id=n0",
      "network backend 'vhost-user' is not compiled into this binary" },
    { "-netdev foo,id=n0", "-netdev foo,id=n0: Parameter 'type' does not accept value 'foo'" },
    { "-netdev id=n0", "-netdev id=n0: Parameter 'type' is missing" },
    { "-netdev user", "-netdev user: Parameter 'id' is missing" },
    { "-netdev user,id=0bad", "Parameter 'id' expects an identifier" },
    { "-netdev user,id=n0 -netdev user,id=n0", "-netdev user,id=n0: Duplicate ID 'n0' for netdev" },
    { "-netdev user,id=n0,bogus=1", "-netdev user,id=n0,bogus=1: Invalid parameter 'bogus'" },
    { "-netdev user,id=n0,smb=/tmp", "Parameter 'smb' is not supported by this binary" },
    { "-netdev user,id=n0,restrict=maybe", "Parameter 'restrict' expects 'on' or 'off'" },
    { "-netdev user,id=n0,net=foo", "-netdev user,id=n0,net=foo: Failed to parse netmask" },
    { "-netdev user,id=n0,net=10.0.5.0/33", "Invalid netmask provided (must be in range 4-32)" },
    { "-netdev user,id=n0,host=1.2.3.4", "Host doesn't belong to network" },
    { "-netdev user,id=n0,dhcpstart=10.0.2.2", "DHCP must be different from host and DNS" },
    { "-nic user,model=e1000", "-nic user,model=e1000: Unsupported NIC model: e1000" },
    { "-nic user,mac=zz", "-nic user,mac=zz: invalid syntax for ethernet address" },
    { "-nic user,mac=01:00:00:00:00:00", "NIC cannot have multicast MAC address" },
    { "-nic tap", "-nic tap: network backend 'tap' is not compiled into this binary" },
    { "-nic user,hostfwd=foo", "-nic user,hostfwd=foo: Invalid host forwarding rule 'foo'" },
    /* A good -nic now gets its virtio-net device: test-virtio-net has it. */
};

static void test_bad_cmdline(gconstpointer data)
{
    const BadCase *bc = data;
    int port = free_port();
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
    int held = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    g_autofree char *args = NULL;
    int status;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    /* The -nic case binds its own port after this one: keep only "taken" cases taken. */
    if (!strstr(bc->args, "-nic")) {
        g_assert_cmpint(bind(held, (struct sockaddr *)&a, sizeof(a)), ==, 0);
    }
    args = g_strdup_printf(bc->args, port);
    vm = vm_spawn("bad", false, ARGS "%s", vmtest_firmware(), args);
    status = vm_wait_exit(vm, 60);
    if (status != 1 || !strstr(vm->stderr_text->str, bc->expect)) {
        g_printerr("args: %s\nstatus: %d\nstderr: %s\n", args, status, vm->stderr_text->str);
    }
    g_assert_cmpint(status, ==, 1);
    g_assert_true(g_str_has_prefix(vm->stderr_text->str, "qemu-system-x86_64: "));
    g_assert_nonnull(strstr(vm->stderr_text->str, bc->expect));
    vm_kill(vm);
    close(held);
}

static void test_help(void)
{
    VM *vm = vm_spawn("help", false, "-netdev help");

    g_assert_cmpint(vm_wait_exit(vm, 30), ==, 0);
    g_assert_cmpuint(vm_count_lines(vm, "Available netdev backend types:"), ==, 1);
    g_assert_cmpuint(vm_count_lines(vm, "user"), ==, 1);
    vm_kill(vm);
    vm = vm_spawn("nichelp", false, "-nic user,model=help");
    g_assert_cmpint(vm_wait_exit(vm, 30), ==, 0);
    g_assert_cmpuint(vm_count_lines(vm, "virtio-net-device"), ==, 1);
    vm_kill(vm);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/net/info-network", test_info_network);
    g_test_add_func("/net/hostfwd", test_hostfwd);
    g_test_add_func("/net/no-netdev", test_no_netdev);
    g_test_add_func("/net/help", test_help);
    for (size_t i = 0; i < G_N_ELEMENTS(bad_cases); i++) {
        g_autofree char *name = g_strdup_printf("/net/bad/%zu", i);
        g_test_add_data_func(name, &bad_cases[i], test_bad_cmdline);
    }
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * -device virtio-net-device on the real binary: info network as QEMU prints
 * it (with -device, -nic, ids, MACs, a NIC without a netdev), -device help,
 * command lines refused with QEMU's words, and the device-state sections:
 * a migration to a file and a background snapshot both carry QEMU's
 * "virtio-mmio@<base>/virtio-net" and "slirp" (scripts/analyze-migration.py
 * reads them from the vmdesc),
 * and a destination with its own hostfwd port restores them.
 *
 * Then traffic: the firmware's udpecho mode answers datagrams that a
 * host socket sends through hostfwd during a background snapshot and
 * after it is restored, the reply count going on from the snapshot point
 * (live migration's traffic: test-net-migration).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "libvmtest.h"
#include "migtest.h"
#include "udptest.h"

#define ARGS "-M microvm -enable-kvm -nodefaults -m 64M -S -kernel %s "
#define NIC0 "virtio-net-device.0: index=0,type=nic,model=virtio-net-device,macaddr="

/* Whether @port is free on every address (hostfwd=udp::PORT binds 0.0.0.0). */
static bool udp_port_free(int port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    bool ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;

    close(fd);
    return ok;
}

/* HMP through QMP, with the monitor's "\r\n" turned into "\n". */
static char *hmp(VM *vm, const char *cmd)
{
    g_autofree char *out = vm_hmp(vm, "%s", cmd);
    g_auto(GStrv) parts = g_strsplit(out, "\r\n", -1);

    return g_strjoinv("\n", parts);
}

static void assert_info_network(VM *vm, const char *want)
{
    g_autofree char *out = hmp(vm, "info network");

    if (strcmp(out, want)) {
        g_error("info network:\n%s\nwanted:\n%s", out, want);
    }
}

static void test_info_network(void)
{
    int port = udptest_free_port();
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("info", true, ARGS "-netdev user,id=n0,hostfwd=udp::%d-:7 "
                  "-device virtio-net-device,netdev=n0", vmtest_firmware(), port);
    assert_info_network(vm, NIC0 "52:54:00:12:34:56\n"
                        " \\ n0: index=0,type=user,net=10.0.2.0,restrict=off\n");
    g_assert_false(udp_port_free(port));
    vm_pump(vm, 100);
    g_assert_null(strstr(vm->stderr_text->str, "has no peer"));
    vm_kill(vm);
}

/*
 * ids, MACs and defaults as QEMU 7.2 gives them: a given ..:56 makes the
 * next default ..:57; a device id may equal a netdev id; a NIC without a
 * netdev gets QEMU's warning; a -nic comes after the -device NICs.
 */
static void test_ids_and_macs(void)
{
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("ids", true, ARGS "-netdev user,id=n0 -netdev user,id=n1,net=10.0.3.0/24 "
                  "-device virtio-net-device,netdev=n0,mac=52:54:00:12:34:56 "
                  "-device virtio-net-device,netdev=n1,id=n1 -device virtio-net-device,id=lone "
                  "-nic user,model=virtio-net-device,mac=52:54:00:aa:bb:cc", vmtest_firmware());
    assert_info_network(vm, NIC0 "52:54:00:12:34:56\n"
                        " \\ n0: index=0,type=user,net=10.0.2.0,restrict=off\n"
                        "n1: index=0,type=nic,model=virtio-net-device,macaddr=52:54:00:12:34:57\n"
                        " \\ n1: index=0,type=user,net=10.0.3.0,restrict=off\n"
                        "lone: index=0,type=nic,model=virtio-net-device,macaddr=52:54:00:12:34:58\n"
                        "virtio-net-device.1: index=0,type=nic,model=virtio-net-device,"
                        "macaddr=52:54:00:aa:bb:cc\n"
                        " \\ #net000: index=0,type=user,net=10.0.2.0,restrict=off\n");
    vm_pump(vm, 100);
    g_assert_nonnull(strstr(vm->stderr_text->str,
                            "qemu-system-x86_64: warning: nic lone has no peer\n"));
    vm_kill(vm);
}

/* -nic alone: the device and its backend, with hostfwd bound. */
static void test_nic(void)
{
    int port = udptest_free_port();
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("nic", true, ARGS "-nic user,model=virtio-net-device,hostfwd=udp::%d-:7",
                  vmtest_firmware(), port);
    assert_info_network(vm, NIC0 "52:54:00:12:34:56\n"
                        " \\ #net000: index=0,type=user,net=10.0.2.0,restrict=off\n");
    g_assert_false(udp_port_free(port));
    vm_kill(vm);
}

static void test_help(void)
{
    VM *vm = vm_spawn("help", false, "-device help");

    g_assert_cmpint(vm_wait_exit(vm, 30), ==, 0);
    g_assert_cmpuint(vm_count_lines(vm, "name \"virtio-net-device\", bus virtio-bus"), ==, 1);
    g_assert_cmpuint(vm_count_lines(vm, "name \"isa-debug-exit\", bus ISA"), ==, 1);
    vm_kill(vm);
    vm = vm_spawn("devhelp", false, "-device virtio-net-device,help");
    g_assert_cmpint(vm_wait_exit(vm, 30), ==, 0);
    g_assert_cmpuint(vm_count_lines(vm, "virtio-net-device options:"), ==, 1);
    g_assert_cmpuint(vm_count_lines(vm, "  netdev=<str>"), ==, 1);
    g_assert_cmpuint(vm_count_lines(vm, "  mac=<str>"), ==, 1);
    vm_kill(vm);
}

typedef struct BadCase {
    const char *args;           /* after ARGS */
    const char *expect;         /* a substring of stderr (QEMU 7.2's words where it has them) */
} BadCase;

#define NINE_NICS "-device virtio-net-device -device virtio-net-device " \
    "-device virtio-net-device -device virtio-net-device -device virtio-net-device " \
    "-device virtio-net-device -device virtio-net-device -device virtio-net-device " \
    "-device virtio-net-device"

static const BadCase bad_cases[] = {
    { "-device virtio-net-device,netdev=x",
      "qemu-system-x86_64: -device virtio-net-device,netdev=x: "
      "Property 'virtio-net-device.netdev' can't find value 'x'" },
    { "-netdev user,id=n0 -device virtio-net-device,netdev=",
      "Property 'virtio-net-device.netdev' can't find value ''" },
    { "-netdev user,id=n0 -device virtio-net-device,netdev=n0 -device virtio-net-device,netdev=n0",
      "-device virtio-net-device,netdev=n0: "
      "Property 'virtio-net-device.netdev' can't take value 'n0', it's in use" },
    { "-netdev user,id=n0 -device virtio-net-device,netdev=n0,mac=zz",
      "-device virtio-net-device,netdev=n0,mac=zz: "
      "Property 'virtio-net-device.mac' doesn't take value 'zz'" },
    { "-device virtio-net-device,mac=", "Property 'virtio-net-device.mac' doesn't take value ''" },
    { "-device virtio-net-device,mrg_rxbuf=off",
      "-device virtio-net-device,mrg_rxbuf=off: Property 'virtio-net-device.mrg_rxbuf' not found" },
    { "-device virtio-net-device,id=9a", "Parameter 'id' expects an identifier" },
    { "-device virtio-net-device,id=a -device virtio-net-device,id=a",
      "-device virtio-net-device,id=a: Duplicate ID 'a' for device" },
    { "-device virtio-net-devic", "'virtio-net-devic' is not a valid device model name" },
    { "-machine acpi=off " NINE_NICS, "9 virtio devices given, but microvm has 8 virtio-mmio slots" },
    /* QEMU's default, ACPI: 24 slots on the second IOAPIC. */
    { NINE_NICS " " NINE_NICS " " NINE_NICS,
      "27 virtio devices given, but microvm has 24 virtio-mmio slots" },
};

static void test_bad_cmdline(gconstpointer data)
{
    const BadCase *bc = data;
    int status;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("bad", false, ARGS "%s", vmtest_firmware(), bc->args);
    status = vm_wait_exit(vm, 60);
    if (status != 1 || !strstr(vm->stderr_text->str, bc->expect)) {
        g_printerr("args: %s\nstatus: %d\nstderr: %s\n", bc->args, status,
                   vm->stderr_text->str);
    }
    g_assert_cmpint(status, ==, 1);
    g_assert_true(g_str_has_prefix(vm->stderr_text->str, "qemu-system-x86_64: "));
    g_assert_nonnull(strstr(vm->stderr_text->str, bc->expect));
    vm_kill(vm);
}

/* ---- The sections in real streams ---- */

static char *stream_path(const char *name)
{
    return g_strdup_printf("%s/%s.stream", vmtest_tmpdir(), name);
}

/* The vmdesc names both sections and their fields. */
static void assert_net_sections(const char *file)
{
    g_autofree char *desc = vmtest_analyze_stream(file, "desc", "");
    static const char *const want[] = {
        "\"virtio-mmio@00000000feb02e00/virtio-net\"", "\"virtio\"", "\"mac\"",
        "\"net_status\"", "\"virtio/virtqueues\"", "\"virtio_mmio/state\"", "\"slirp\"",
        "\"data\"",
    };

    for (size_t i = 0; i < G_N_ELEMENTS(want); i++) {
        if (!strstr(desc, want[i])) {
            g_error("vmdesc of %s lacks %s:\n%s", file, want[i], desc);
        }
    }
}

/*
 * The destination restores @file with its own hostfwd port; the sections
 * load (the guest goes on verifying) and its network is the same shape.
 */
static void restore_and_check(const char *file, const char *append, int pass)
{
    int port = udptest_free_port();
    g_autofree char *incoming = g_strdup_printf("exec:cat %s", file);
    g_autofree char *extra = g_strdup_printf("-netdev user,id=n0,hostfwd=udp::%d-:7 "
                                             "-device virtio-net-device,netdev=n0,"
                                             "mac=52:54:00:12:34:99", port);
    VM *dst = migtest_start_dest_extra("128M", append, false, incoming, extra);

    migtest_wait_incoming_done(dst);
    migtest_assert_guest_continues(dst, append, pass);
    /* The guest keeps the MAC it had on the source. */
    assert_info_network(dst, NIC0 "52:54:00:12:34:56\n"
                        " \\ n0: index=0,type=user,net=10.0.2.0,restrict=off\n");
    g_assert_false(udp_port_free(port));
    vm_kill(dst);
}

static char *source_extra(int port)
{
    return g_strdup_printf("-netdev user,id=n0,hostfwd=udp::%d-:7 "
                           "-device virtio-net-device,netdev=n0", port);
}

/* Migrates a verify guest with a NIC into the file @name; returns its path and last PASS. */
static char *save_stream(const char *name, const char *append, int *pass)
{
    char *file = stream_path(name);
    g_autofree char *extra = source_extra(udptest_free_port());
    JsonNode *info;
    VM *src;

    src = migtest_start_source_extra("128M", append, extra);
    *pass = migtest_last_pass(src);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': "
                              "{'uri': 'exec:cat > %s'}}", file));
    info = vm_wait_migration(src, "completed|failed", 300);
    g_assert_cmpstr(json_get_str(info, "status"), ==, "completed");
    json_node_unref(info);
    vm_kill(src);
    return file;
}

static void test_migrate_to_file(void)
{
    const char *append = "mode=verify mem=32";
    g_autofree char *file = NULL;
    int pass;

    if (!vmtest_require_kvm()) {
        return;
    }
    file = save_stream("mig", append, &pass);
    assert_net_sections(file);
    restore_and_check(file, append, pass);
}

/*
 * A copy of @file with the byte at @delta after section @idstr's header
 * (name, instance, version) replaced by @val.
 */
static char *corrupt_section(const char *file, const char *idstr, size_t delta, uint8_t val)
{
    g_autofree char *data = NULL;
    g_autofree char *needle = g_strdup_printf("%c%s", (int)strlen(idstr), idstr);
    /* QEMU's section names hold a '/'. */
    g_autofree char *safe = g_strdelimit(g_strdup(idstr), "/", '_');
    char *copy = g_strdup_printf("%s.%s-bad", file, safe);
    gsize len;
    char *at;

    g_assert_true(g_file_get_contents(file, &data, &len, NULL));
    at = memmem(data, len, needle, strlen(needle));
    g_assert_nonnull(at);
    at[strlen(needle) + 8 + delta] = val;
    g_assert_true(g_file_set_contents(copy, data, len, NULL));
    return copy;
}

/* A destination refuses a stream whose section says nonsense, naming what. */
static void test_hostile_sections(void)
{
    static const struct {
        const char *idstr;
        size_t delta;           /* into the section's fields */
        uint8_t val;
        const char *expect;
    } cases[] = {
        /* virtio-net's link status (be16) at 0x68 of QEMU's layout (qemu-interop.md). */
        { "virtio-mmio@00000000feb02e00/virtio-net", 0x69, 3, "error while loading state for "
          "instance 0x0 of device 'virtio-mmio@00000000feb02e00/virtio-net': virtio-net: "
          "virtio-net-device at 0xfeb02e00: status 0x3 is not 0x1" },
        /* The queue count (be32 at 0x20): 4, where QEMU's virtio-net has 3. */
        { "virtio-mmio@00000000feb02e00/virtio-net", 0x23, 4, "count 4 exceeds the maximum 3" },
        /* slirp: libslirp's bytes, which open with 0 (no guestfwd). */
        { "slirp", 0, 42, "slirp state of netdev 'n0' holds guestfwd sockets" },
    };
    const char *append = "mode=verify mem=32";
    g_autofree char *file = NULL;
    int pass;

    if (!vmtest_require_kvm()) {
        return;
    }
    file = save_stream("hostile", append, &pass);
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *bad = corrupt_section(file, cases[i].idstr, cases[i].delta,
                                               cases[i].val);
        g_autofree char *incoming = g_strdup_printf("exec:cat %s", bad);
        VM *dst = vm_spawn("dst", false, MIGTEST_BASE_ARGS "-m 128M -kernel %s -append '%s' "
                           "-netdev user,id=n0 -device virtio-net-device,netdev=n0 "
                           "-incoming '%s'", vmtest_firmware(), append, incoming);
        int status = vm_wait_exit(dst, 120);

        if (status != 1 || !strstr(dst->stderr_text->str, cases[i].expect)) {
            g_error("case %zu: status %d, stderr:\n%s", i, status, dst->stderr_text->str);
        }
        vm_kill(dst);
    }
}

static void test_background_snapshot(void)
{
    const char *append = "mode=verify mem=32";
    g_autofree char *file = stream_path("snap");
    g_autofree char *extra = source_extra(udptest_free_port());
    JsonNode *info;
    int pass;
    VM *src;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source_extra("128M", append, extra);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-capabilities', 'arguments': "
                              "{'capabilities': [{'capability': 'background-snapshot', "
                              "'state': true}]}}"));
    pass = migtest_last_pass(src);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': "
                              "{'uri': 'exec:cat > %s'}}", file));
    info = vm_wait_migration(src, "completed|failed", 300);
    g_assert_cmpstr(json_get_str(info, "status"), ==, "completed");
    json_node_unref(info);
    /* The source runs on with its network. */
    assert_info_network(src, NIC0 "52:54:00:12:34:56\n"
                        " \\ n0: index=0,type=user,net=10.0.2.0,restrict=off\n");
    vm_kill(src);
    assert_net_sections(file);
    restore_and_check(file, append, pass);
}

/* ---- Traffic: the firmware's udpecho through hostfwd ---- */

#define ECHO_APPEND "mode=udpecho port=7"

/*
 * Sends "c=@c hello" to 127.0.0.1:@port from @fd until an answer comes
 * (a datagram may be lost while a VM switches over; at most 10 s); returns
 * the guest's reply count, "seq=M c=@c hello".
 */
static int64_t udp_echo(VM *vm, int fd, int port, int c)
{
    g_autofree char *msg = g_strdup_printf("c=%d hello", c);
    gint64 end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

    while (g_get_monotonic_time() < end) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        char buf[256];
        ssize_t n;

        udptest_send(fd, port, msg, strlen(msg));
        while (poll(&p, 1, 500) == 1 && (n = recv(fd, buf, sizeof(buf) - 1, 0)) > 0) {
            const char *body;

            buf[n] = 0;
            body = strchr(buf, ' ');
            /* An answer to an earlier resend of an older datagram is skipped. */
            if (g_str_has_prefix(buf, "seq=") && body && !strcmp(body + 1, msg)) {
                return g_ascii_strtoll(buf + 4, NULL, 10);
            }
        }
        vm_pump(vm, 0);
    }
    g_error("no echo of '%s' through port %d", msg, port);
}

static VM *start_echo_dest(const char *incoming, int port)
{
    g_autofree char *extra = g_strdup_printf("-netdev user,id=n0,hostfwd=udp::%d-:7 "
                                             "-device virtio-net-device,netdev=n0", port);

    return migtest_start_dest_extra("64M", ECHO_APPEND, false, incoming, extra);
}

static void test_udpecho_snapshot(void)
{
    int sport = udptest_free_port(), dport = udptest_free_port();
    g_autofree char *extra = source_extra(sport);
    g_autofree char *file = stream_path("echo-snap");
    g_autofree char *incoming = g_strdup_printf("exec:cat %s", file);
    int fd = udptest_socket(0);
    int64_t at_snapshot;
    JsonNode *info;
    VM *src, *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source_extra("64M", ECHO_APPEND, extra);
    for (int c = 1; c <= 5; c++) {
        at_snapshot = udp_echo(src, fd, sport, c);
    }
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-capabilities', 'arguments': "
                              "{'capabilities': [{'capability': 'background-snapshot', "
                              "'state': true}]}}"));
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': "
                              "{'uri': 'exec:cat > %s'}}", file));
    /*
     * The snapshot point is the VM's short stop in setup (after RAM is
     * populated), not the command: traffic only once the guest runs again.
     */
    json_node_unref(vm_wait_event(src, "STOP", 120));
    json_node_unref(vm_wait_event(src, "RESUME", 120));
    /*
     * Traffic while the snapshot writes RAM out: the device thread's
     * writes into write-protected guest RAM wait for the snapshot's fault
     * handling (never for the BQL), and the snapshot keeps the old bytes.
     */
    for (int c = 6; c <= 25; c++) {
        g_assert_cmpint(udp_echo(src, fd, sport, c), >, at_snapshot);
    }
    {
        JsonNode *q = vm_qmp_ok(src, "{'execute': 'query-migrate'}");

        /* Usually "active": the echoes overlapped the RAM being written out. */
        g_test_message("snapshot %s after the echoes", json_get_str(q, "status"));
        json_node_unref(q);
    }
    info = vm_wait_migration(src, "completed|failed", 300);
    g_assert_cmpstr(json_get_str(info, "status"), ==, "completed");
    json_node_unref(info);
    /* The source answers on after the snapshot. */
    g_assert_cmpint(udp_echo(src, fd, sport, 26), >, at_snapshot);
    vm_kill(src);
    /* The restored guest is the snapshot's: its count goes on from there. */
    dst = start_echo_dest(incoming, dport);
    migtest_wait_incoming_done(dst);
    g_assert_cmpint(udp_echo(dst, fd, dport, 27), ==, at_snapshot + 1);
    vm_kill(dst);
    close(fd);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/virtio-net/info-network", test_info_network);
    g_test_add_func("/virtio-net/ids-and-macs", test_ids_and_macs);
    g_test_add_func("/virtio-net/nic", test_nic);
    g_test_add_func("/virtio-net/help", test_help);
    for (size_t i = 0; i < G_N_ELEMENTS(bad_cases); i++) {
        g_autofree char *name = g_strdup_printf("/virtio-net/bad/%zu", i);
        g_test_add_data_func(name, &bad_cases[i], test_bad_cmdline);
    }
    g_test_add_func("/virtio-net/migrate-to-file", test_migrate_to_file);
    g_test_add_func("/virtio-net/background-snapshot", test_background_snapshot);
    g_test_add_func("/virtio-net/hostile-sections", test_hostile_sections);
    g_test_add_func("/virtio-net/udpecho/snapshot", test_udpecho_snapshot);
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The workload firmware's network modes on real KVM, libslirp and host
 * sockets: udpecho answers numbered datagrams through hostfwd (one at a
 * time, a burst, a large one) with increasing reply numbers and counts no
 * loss; udpstream delivers its numbered datagrams at the set rate to a
 * host socket on 127.0.0.1 (slirp's 10.0.2.2) and counts the gaps in what
 * the host sends back; a guest without a virtio-net device says FAIL; and
 * the same echo exchange under QEMU 7.2 when it is installed.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "libvmtest.h"
#include "udptest.h"

#define BASE_ARGS "-M microvm -enable-kvm -cpu host -m 64M -nodefaults -no-user-config " \
                  "-nographic -serial stdio -device isa-debug-exit,iobase=0xf4,iosize=0x04 "
#define NET_ARGS  "-device virtio-net-device,netdev=n0 "
/* QEMU 7.2 names its transports on the command line only without ACPI, and
 * its virtio-mmio is legacy (version 1) unless told otherwise. */
#define QEMU72_ARGS "-M microvm,acpi=off -global virtio-mmio.force-legacy=false -enable-kvm " \
                    "-cpu host,-arch-capabilities -m 64M -nodefaults -no-user-config " \
                    "-display none -serial stdio "

#define REPLY_TIMEOUT_MS 5000
#define ONE_BY_ONE      50
#define BURST           100

/* "seq=M REST": M, and REST in *rest; fails the test on any other shape. */
static uint64_t parse_reply(const char *buf, const char **rest)
{
    char *end;
    uint64_t m;

    g_assert_true(g_str_has_prefix(buf, "seq="));
    m = g_ascii_strtoull(buf + 4, &end, 10);
    g_assert_true(end > buf + 4 && *end == ' ');
    *rest = end + 1;
    return m;
}

/*
 * The echo exchange with a guest answering on host port @port: numbered
 * datagrams one at a time, then a burst, then one of 1400 bytes. Every
 * reply carries the datagram whole, behind "seq=M " with M one more than
 * the reply before. Returns how many datagrams were sent.
 */
static int echo_exchange(int port)
{
    int fd = udptest_socket(0), c = 0;
    uint64_t seq = 0;
    char buf[2048], want[2048];
    struct sockaddr_in from;
    const char *rest;
    bool seen[BURST] = { 0 };

    for (int i = 0; i < ONE_BY_ONE; i++) {
        int n = snprintf(want, sizeof(want), "c=%d one by one", ++c);

        udptest_send(fd, port, want, n);
        if (udptest_recv(fd, buf, sizeof(buf), REPLY_TIMEOUT_MS, &from) < 0) {
            g_error("no echo of '%s' within %d ms", want, REPLY_TIMEOUT_MS);
        }
        g_assert_cmpint(ntohs(from.sin_port), ==, port);
        g_assert_cmpuint(parse_reply(buf, &rest), ==, ++seq);
        g_assert_cmpstr(rest, ==, want);
    }

    for (int i = 0; i < BURST; i++) {
        int n = snprintf(want, sizeof(want), "c=%d burst", c + 1 + i);

        udptest_send(fd, port, want, n);
    }
    for (int i = 0; i < BURST; i++) {
        int k;

        if (udptest_recv(fd, buf, sizeof(buf), REPLY_TIMEOUT_MS, &from) < 0) {
            g_error("burst: %d of %d echoes within %d ms each", i, BURST, REPLY_TIMEOUT_MS);
        }
        g_assert_cmpuint(parse_reply(buf, &rest), ==, ++seq);
        g_assert_cmpint(sscanf(rest, "c=%d burst", &k), ==, 1);
        g_assert_cmpint(k, >, c);
        g_assert_cmpint(k, <=, c + BURST);
        g_assert_false(seen[k - c - 1]);
        seen[k - c - 1] = true;
    }
    c += BURST;

    memset(want, 'x', 1400);
    snprintf(want, sizeof(want), "c=%d ", ++c);
    want[strlen(want)] = 'x';
    want[1400] = 0;
    udptest_send(fd, port, want, 1400);
    g_assert_cmpint(udptest_recv(fd, buf, sizeof(buf), REPLY_TIMEOUT_MS, &from), >, 1400);
    g_assert_cmpuint(parse_reply(buf, &rest), ==, ++seq);
    g_assert_cmpstr(rest, ==, want);
    close(fd);
    return c;
}

/* The guest's STAT line once it has seen @n datagrams: all answered, none lost. */
static void assert_guest_counted(VM *vm, int n)
{
    for (;;) {
        const char *l = vm_wait_line(vm, "STAT", 30);

        if (line_get_int(l, "received") < n) {
            continue;
        }
        g_assert_cmpint(line_get_int(l, "received"), ==, n);
        g_assert_cmpint(line_get_int(l, "sent"), ==, n);
        g_assert_cmpint(line_get_int(l, "lost"), ==, 0);
        g_assert_cmpint(line_get_int(l, "late"), ==, 0);
        g_assert_cmpint(line_get_int(l, "tx_full"), ==, 0);
        g_assert_cmpint(line_get_int(l, "bad"), ==, 0);
        return;
    }
}

static void test_udpecho(void)
{
    int port = udptest_free_port(), n;
    const char *l;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("echo", false, BASE_ARGS "-kernel %s -append 'mode=udpecho port=7 report_ms=500' "
                  "-netdev user,id=n0,hostfwd=udp:127.0.0.1:%d-:7 " NET_ARGS,
                  vmtest_firmware(), port);
    l = vm_wait_line(vm, "READY mode=udpecho", 60);
    g_assert_nonnull(strstr(l, " ip=10.0.2.15 "));
    g_assert_nonnull(strstr(l, " mac=52:54:00:12:34:56 "));
    /* QEMU's default microvm (ACPI): slot 23 of 24, on the second IOAPIC, named nowhere. */
    g_assert_nonnull(strstr(l, " transport=0xfeb02e00 found=probe irq=0 "));
    n = echo_exchange(port);
    assert_guest_counted(vm, n);
    g_assert_cmpuint(vm_count_lines(vm, "FAIL"), ==, 0);
    vm_kill(vm);
}

/*
 * udpstream at 100 datagrams per second to 10.0.2.2:P, which slirp sends
 * to the host's 127.0.0.1:P: 150 in a row, numbered without a gap, TSC
 * stamps increasing, not faster than the rate. Then the host answers to
 * where they came from with c=1, c=2, c=4: the guest counts 3 received, 1 lost.
 */
static void test_udpstream(void)
{
    int port = udptest_free_port(), fd = udptest_socket(port);
    uint64_t first = 0, last = 0, last_tsc = 0;
    gint64 t_first = 0, elapsed;
    struct sockaddr_in from;
    char buf[2048];
    VM *vm;

    if (!vmtest_require_kvm()) {
        close(fd);
        return;
    }
    vm = vm_spawn("stream", false, BASE_ARGS "-kernel %s "
                  "-append 'mode=udpstream rate=100 port=%d report_ms=500' "
                  "-netdev user,id=n0 " NET_ARGS, vmtest_firmware(), port);
    vm_wait_line(vm, "READY mode=udpstream", 60);
    for (int i = 0; i < 150; i++) {
        uint64_t seq, tsc;

        if (udptest_recv(fd, buf, sizeof(buf), REPLY_TIMEOUT_MS, &from) < 0) {
            g_error("udpstream: %d datagrams, then none for %d ms", i, REPLY_TIMEOUT_MS);
        }
        g_assert_cmpint(sscanf(buf, "seq=%" SCNu64 " tsc=%" SCNu64, &seq, &tsc), ==, 2);
        if (i == 0) {
            first = seq;
            t_first = g_get_monotonic_time();
        } else {
            g_assert_cmpuint(seq, ==, last + 1);
            g_assert_cmpuint(tsc, >, last_tsc);
        }
        last = seq;
        last_tsc = tsc;
    }
    /* 149 intervals of 10 ms; the host may see them bunched, never much faster. */
    elapsed = g_get_monotonic_time() - t_first;
    g_assert_cmpint(elapsed, >, 1200000);
    g_assert_cmpuint(last - first, ==, 149);

    g_assert_cmpint(ntohl(from.sin_addr.s_addr), ==, INADDR_LOOPBACK);
    for (int c = 1; c <= 4; c++) {
        if (c != 3) {
            char msg[16];
            int n = snprintf(msg, sizeof(msg), "c=%d", c);

            g_assert_cmpint(sendto(fd, msg, n, 0, (struct sockaddr *)&from, sizeof(from)), ==, n);
        }
    }
    for (;;) {
        const char *l = vm_wait_line(vm, "STAT", 30);

        if (line_get_int(l, "received") >= 3) {
            g_assert_cmpint(line_get_int(l, "received"), ==, 3);
            g_assert_cmpint(line_get_int(l, "lost"), ==, 1);
            g_assert_cmpint(line_get_int(l, "sent"), >=, 150);
            break;
        }
    }
    g_assert_cmpuint(vm_count_lines(vm, "FAIL"), ==, 0);
    close(fd);
    vm_kill(vm);
}

static void test_no_device(void)
{
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("nodev", false, BASE_ARGS "-kernel %s -append 'mode=udpecho'",
                  vmtest_firmware());
    vm_wait_line(vm, "FAIL virtio-net reason=no-device transports=0", 60);
    vm_wait_line(vm, "EXIT code=3", 30);
    /* isa-debug-exit: (3 << 1) | 1 */
    g_assert_cmpint(vm_wait_exit(vm, 30), ==, 7);
    g_assert_cmpuint(vm_count_lines(vm, "READY"), ==, 0);
    vm_kill(vm);
}

static void test_bad_params(void)
{
    static const char *const bad[] = {
        "mode=udpstream dst=10.0.2.2", "mode=udpstream dst=10.0.2.256:9",
        "mode=udpecho port=0", "mode=udpecho port=65536",
        "mode=udpecho virtio_mmio.device=512@0xfeb00000", "mode1=udpecho",
    };

    if (!vmtest_require_kvm()) {
        return;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        VM *vm = vm_spawn("badparam", false, BASE_ARGS "-smp 2 -kernel %s -append '%s'",
                          vmtest_firmware(), bad[i]);

        vm_wait_line(vm, "FAIL", 60);
        g_assert_cmpint(vm_wait_exit(vm, 30), ==, 5);   /* EXIT_PARAM */
        vm_kill(vm);
    }
}

static void test_udpecho_qemu72(void)
{
    int port = udptest_free_port(), n;
    const char *peer, *l;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    peer = vmtest_require_qemu72();
    if (!peer) {
        return;
    }
    vm = vm_spawn_binary("qemu72", peer, false, QEMU72_ARGS "-kernel %s "
                         "-append 'mode=udpecho port=7 report_ms=500' "
                         "-netdev user,id=n0,hostfwd=udp:127.0.0.1:%d-:7 " NET_ARGS,
                         vmtest_firmware(), port);
    l = vm_wait_line(vm, "READY mode=udpecho", 60);
    /* QEMU fills microvm's slots from the last one. */
    g_assert_nonnull(strstr(l, " found=cmdline "));
    n = echo_exchange(port);
    assert_guest_counted(vm, n);
    g_assert_cmpuint(vm_count_lines(vm, "FAIL"), ==, 0);
    vm_kill(vm);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/guest-net/no-device", test_no_device);
    g_test_add_func("/guest-net/bad-params", test_bad_params);
    g_test_add_func("/guest-net/udpecho", test_udpecho);
    g_test_add_func("/guest-net/udpstream", test_udpstream);
    g_test_add_func("/guest-net/udpecho-qemu72", test_udpecho_qemu72);
    return g_test_run();
}

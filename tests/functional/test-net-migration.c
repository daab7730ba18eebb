/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A guest's network across a live migration, on real KVM, libslirp and
 * host sockets: a host client sends numbered datagrams to the firmware's
 * UDP echo through the source's hostfwd port, and to the destination's
 * from the source's STOP event on (as a service address moves between
 * hosts); the exchange goes on after the switchover with loss only
 * between STOP and the later of RESUME and that move, the replies go on
 * from the source's count, and the destination's own hostfwd rule and the
 * device are there. (A restored background snapshot's echoes:
 * test-virtio-net's udpecho/snapshot.)
 */
#include <stdio.h>
#include <string.h>
#include "libvmtest.h"
#include "migtest.h"
#include "udptest.h"

#define MEM "256M"
#define APPEND "mode=udpecho port=7"
#define RATE 100                /* datagrams per second */
#define SETTLE_US (500 * 1000)  /* the last datagrams may still be on their way */

static char *net_args(int port)
{
    return g_strdup_printf("-netdev user,id=n0,hostfwd=udp:127.0.0.1:%d-:7 "
                           "-device virtio-net-device,netdev=n0", port);
}

static int64_t event_time_us(JsonNode *ev)
{
    return json_get_int(ev, "timestamp.seconds") * G_USEC_PER_SEC +
           json_get_int(ev, "timestamp.microseconds");
}

static void enable_events(VM *vm)
{
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'migrate-set-capabilities', 'arguments': "
                              "{'capabilities': [{'capability': 'events', 'state': true}]}}"));
}

static void assert_hmp_contains(VM *vm, const char *cmd, const char *part)
{
    g_autofree char *out = vm_hmp(vm, "%s", cmd);

    if (!strstr(out, part)) {
        g_error("'%s' lacks '%s':\n%s", cmd, part, out);
    }
}

static void test_live(const char *transport)
{
    g_autofree char *uri = migtest_uri(transport);
    int ports[2] = { udptest_free_port(), udptest_free_port() };
    g_autofree char *src_net = net_args(ports[0]);
    g_autofree char *dst_net = net_args(ports[1]);
    g_autofree char *dst_fwd = g_strdup_printf("127.0.0.1 %5d", ports[1]);
    int64_t start_us, stop_us, resume_us, moved_us;
    UdpEchoReport r;
    JsonNode *ev;
    UdpEcho *u;
    VM *src, *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source_extra(MEM, APPEND, src_net);
    u = udp_echo_start(&ports[0], 1, RATE);
    udp_echo_wait(u, RATE, 30);
    dst = migtest_start_dest_extra(MEM, APPEND, false, uri, dst_net);
    enable_events(src);
    start_us = udptest_now_us();
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", uri));
    ev = vm_wait_event(src, "STOP", 120);
    udp_echo_retarget(u, &ports[1], 1);
    moved_us = udptest_now_us();
    stop_us = event_time_us(ev);
    json_node_unref(ev);
    json_node_unref(migtest_wait_completed(src));
    migtest_wait_incoming_done(dst);
    ev = vm_wait_event(dst, "RESUME", 30);
    resume_us = event_time_us(ev);
    json_node_unref(ev);
    /* The destination's guest answers: a second's worth of new echoes. */
    udp_echo_wait(u, udp_echo_count(u) + RATE, 30);
    udp_echo_stop(u);
    udp_echo_report(u, start_us - G_USEC_PER_SEC, udptest_now_us(), SETTLE_US,
                    stop_us, MAX(resume_us, moved_us), &r);
    g_test_message("%s: sent %" G_GUINT64_FORMAT " lost %" G_GUINT64_FORMAT
                   " (outside the window %" G_GUINT64_FORMAT "), longest gap %" G_GINT64_FORMAT
                   " us, STOP..RESUME %" G_GINT64_FORMAT " us, moved %" G_GINT64_FORMAT
                   " us after STOP", transport, r.sent, r.lost, r.lost_outside, r.max_gap_us,
                   resume_us - stop_us, moved_us - stop_us);
    g_assert_cmpuint(r.sent, >, RATE);
    g_assert_cmpuint(r.lost_outside, ==, 0);
    /* The replies after the switchover go on from the source's count. */
    g_assert_cmpuint(r.first_seq_after, >, 0);
    /* Each side forwards its own port; the device is there and up. */
    assert_hmp_contains(dst, "info usernet", dst_fwd);
    assert_hmp_contains(dst, "info network", "virtio-net-device");
    g_assert_cmpuint(vm_count_lines(dst, "FAIL"), ==, 0);
    udp_echo_free(u);
    vm_kill(dst);
    vm_kill(src);
}

static void test_live_unix(void)
{
    test_live("unix");
}

static void test_live_tcp(void)
{
    test_live("tcp");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/net-migration/live-unix", test_live_unix);
    g_test_add_func("/net-migration/live-tcp", test_live_tcp);
    return g_test_run();
}

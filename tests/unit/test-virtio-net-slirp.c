/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * virtio-net in front of the real libslirp, on the virtio bench: a host
 * UDP socket sends to a hostfwd port, slirp hands the frame to the NIC in
 * the main loop, the device thread puts it into the fake driver's buffer;
 * the fake guest answers ARP and echoes UDP through its TX queue, and the
 * echo comes back to the host socket. Then the "slirp" section: it round
 * trips into a fresh backend, and hostile sections are refused with the
 * field named.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "qemu/option.h"
#include "hw/virtio/virtio-mmio.h"
#include "hw/virtio/virtio-net.h"
#include "net/slirp.h"
#include "system/ioport.h"
#include "virtio-net-test.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>
#include <linux/virtio_net.h>
#include <linux/virtio_ring.h>

#define QNUM 64
#define HDR VIRTIO_NET_HDR_LEN
#define ETH 14

static const MACAddr guest_mac = { { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 } };
static const uint8_t guest_ip[4] = { 10, 0, 2, 15 };

typedef struct Guest {
    VirtIONet *n;
    VirtIOMMIOState *mmio;
    VirtIONetMMIOQemu *sec;     /* its section, unregistered with it */
    NetClientState *backend;
    VNetDriver drv;
    uint16_t rx_seen;           /* used RX entries handled */
    unsigned int arp_replies, echoes;
} Guest;

static int free_udp_port(void)
{
    struct sockaddr_in a = { .sin_family = AF_INET };
    socklen_t alen = sizeof(a);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

    g_assert_cmpint(bind(fd, (struct sockaddr *)&a, sizeof(a)), ==, 0);
    g_assert_cmpint(getsockname(fd, (struct sockaddr *)&a, &alen), ==, 0);
    close(fd);
    return ntohs(a.sin_port);
}

static NetClientState *make_backend(const char *id, const char *params)
{
    g_autoptr(QemuOpts) opts = qemu_opts_parse(params, NULL, ERRP_ABORT);
    g_autoptr(NetSlirpConfig) cfg = net_slirp_config_parse(opts, ERRP_ABORT);
    NetClientState *nc = net_slirp_create(id, cfg, ERRP_ABORT);

    net_slirp_vmstate_register(nc);
    return nc;
}

static void guest_send(Guest *g, const uint8_t *frame, size_t len)
{
    vnet_tx_send(&g->drv, frame, len, false, true);
}

/* ARP request for our address: answer it. */
static void guest_arp(Guest *g, const uint8_t *f, size_t len)
{
    uint8_t out[ETH + 28];

    if (len < sizeof(out) || f[ETH + 7] != 1 || memcmp(f + ETH + 24, guest_ip, 4)) {
        return;
    }
    memcpy(out, f + 6, 6);
    memcpy(out + 6, guest_mac.a, 6);
    memcpy(out + 12, f + 12, 2);
    memcpy(out + ETH, f + ETH, 6);              /* htype, ptype, hlen, plen */
    out[ETH + 6] = 0, out[ETH + 7] = 2;         /* reply */
    memcpy(out + ETH + 8, guest_mac.a, 6);
    memcpy(out + ETH + 14, guest_ip, 4);
    memcpy(out + ETH + 18, f + ETH + 8, 10);    /* the asker's MAC and IP */
    guest_send(g, out, sizeof(out));
    g->arp_replies++;
}

/*
 * UDP to us: echo it by swapping addresses and ports, which leaves both
 * checksums as they are.
 */
static void guest_udp(Guest *g, const uint8_t *f, size_t len)
{
    g_autofree uint8_t *out = g_memdup2(f, len);
    uint8_t *ip = out + ETH, *udp = ip + (ip[0] & 0xf) * 4, tmp[6];

    if (memcmp(ip + 16, guest_ip, 4) || udp + 8 > out + len) {
        return;
    }
    memcpy(out, f + 6, 6);
    memcpy(out + 6, guest_mac.a, 6);
    memcpy(tmp, ip + 12, 4);
    memcpy(ip + 12, ip + 16, 4);
    memcpy(ip + 16, tmp, 4);
    memcpy(tmp, udp, 2);
    memcpy(udp, udp + 2, 2);
    memcpy(udp + 2, tmp, 2);
    guest_send(g, out, len);
    g->echoes++;
}

/* The guest's receive loop: every new used RX entry, then the buffer goes back. */
static void guest_poll(Guest *g)
{
    while (g->rx_seen != vtest_used_idx(&g->drv.rxq)) {
        uint32_t id, len;
        const uint8_t *f;

        vtest_used_elem(&g->drv.rxq, g->rx_seen++, &id, &len);
        g_assert_cmpuint(len, >=, HDR + ETH);
        f = vtest_gpa(vnet_rx_buf(id)) + HDR;
        len -= HDR;
        if (f[12] == 0x08 && f[13] == 0x06) {
            guest_arp(g, f, len);
        } else if (f[12] == 0x08 && f[13] == 0x00 && len >= ETH + 28 && f[ETH + 9] == 17) {
            guest_udp(g, f, len);
        }
        vnet_rx_post(&g->drv, 1, true);
    }
}

static void guest_setup(Guest *g, NetClientState *backend)
{
    VirtIONetConf conf = { .netdev = backend->name, .mac = guest_mac, .mac_given = true };

    memset(g, 0, sizeof(*g));
    g->backend = backend;
    g->n = virtio_net_create(&conf, ERRP_ABORT);
    g->mmio = virtio_mmio_create(&g->n->vdev, VNET_BASE, VNET_GSI, ERRP_ABORT);
    g->sec = virtio_net_mmio_state_add(g->mmio);
    vnet_driver_init(&g->drv, QNUM, (1ULL << VIRTIO_F_VERSION_1) | (1ULL << VIRTIO_NET_F_MAC));
    vnet_rx_post(&g->drv, QNUM, true);
}

static void guest_teardown(Guest *g)
{
    virtio_net_mmio_state_unregister(g->sec);
    virtio_mmio_destroy(g->mmio);
    virtio_net_destroy(g->n);
    io_range_table_free(mmio_table);
    mmio_table = io_range_table_new();
}

/* Sends @msg to 127.0.0.1:@port from @fd and waits (main loop running) for its echo. */
static void host_echo(Guest *g, int fd, int port, const char *msg)
{
    struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    gint64 end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    char buf[256];
    ssize_t n;

    g_assert_cmpint(sendto(fd, msg, strlen(msg), 0, (struct sockaddr *)&to, sizeof(to)), ==,
                    strlen(msg));
    while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) < 0) {
        g_assert_cmpint(errno, ==, EAGAIN);
        if (g_get_monotonic_time() > end) {
            g_error("no echo of '%s' (ARP replies %u, echoes %u)", msg, g->arp_replies,
                    g->echoes);
        }
        g_main_context_iteration(NULL, FALSE);
        guest_poll(g);
        g_usleep(200);
    }
    g_assert_cmpmem(buf, n, msg, strlen(msg));
}

static void test_udp_echo(void)
{
    int port = free_udp_port();
    g_autofree char *params = g_strdup_printf("hostfwd=udp:127.0.0.1:%d-:7", port);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    NetClientState *backend;
    Guest g;

    vtest_fakes_reset(false, false);
    backend = make_backend("n0", params);
    guest_setup(&g, backend);
    for (int i = 0; i < 20; i++) {
        g_autofree char *msg = g_strdup_printf("datagram %d", i);

        host_echo(&g, fd, port, msg);
    }
    g_assert_cmpuint(g.echoes, >=, 20);
    g_assert_cmpuint(g.arp_replies, >=, 1);
    close(fd);
    guest_teardown(&g);
    net_client_free(backend);
}

/* ---- The "slirp" section ---- */

static void slirp_load_expect_refused(const uint8_t *sec, size_t len, int version,
                                      const char *part)
{
    Error *err = NULL;

    g_assert_false(vtest_section_load_named("slirp", version, sec, len, &err));
    if (!strstr(error_get_pretty(err), part)) {
        g_error("refusal '%s' lacks '%s'", error_get_pretty(err), part);
    }
    error_free(err);
}

static void test_slirp_section(void)
{
    int port = free_udp_port();
    g_autofree char *params = g_strdup_printf("hostfwd=udp:127.0.0.1:%d-:7", port);
    g_autofree uint8_t *sec = NULL, *again = NULL, *bad = NULL;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    size_t len, len2;
    NetClientState *a, *b;
    Guest g;

    vtest_fakes_reset(false, false);
    a = make_backend("n0", params);
    guest_setup(&g, a);
    host_echo(&g, fd, port, "before the save");
    close(fd);
    guest_teardown(&g);
    sec = vtest_section_save_named("slirp", &len);
    /*
     * libslirp's bytes alone, as QEMU sends them: no guestfwd records (a
     * zero byte), the IP id, 16 DHCP leases of 8 bytes.
     */
    g_assert_cmpuint(len, ==, 1 + 2 + 16 * 8);
    g_assert_cmpuint(sec[0], ==, 0);

    /* A fresh backend (a destination) takes it, and saves the same bytes again. */
    b = make_backend("n1", "net=10.0.2.0/24");
    g_assert_true(vtest_section_load_named("slirp", 0, sec, len, ERRP_ABORT));
    again = vtest_section_save_named("slirp", &len2);
    g_assert_cmpmem(again, len2, sec, len);

    bad = g_memdup2(sec, len);
    bad[0] = 42;
    slirp_load_expect_refused(bad, len, 0, "holds guestfwd sockets");
    slirp_load_expect_refused(sec, len - 1, 0, "slirp");
    slirp_load_expect_refused(sec, len, net_slirp_state_version() + 1, "newer");
    net_client_free(b);
    net_client_free(a);
}

int main(int argc, char **argv)
{
    int ret;

    g_test_init(&argc, &argv, NULL);
    qemu_main_loop_init();
    vtest_init();
    g_test_add_func("/virtio-net/slirp/udp-echo", test_udp_echo);
    g_test_add_func("/virtio-net/slirp/section", test_slirp_section);
    ret = g_test_run();
    vtest_cleanup();
    return ret;
}

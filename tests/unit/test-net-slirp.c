/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for net/slirp.c on the real libslirp and real sockets, driven
 * by the default GLib main context as the binary's main loop drives it: a
 * fake guest NIC (it answers ARP and echoes UDP) behind a hostfwd rule gets
 * a datagram from a host socket and its echo comes back; hostfwd rules
 * really bind and unbind their host ports; slirp's state saves and loads;
 * a live update's new process adopts the hostfwd socket the old one handed
 * over instead of binding the port (net/slirp-cpr.c).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "qemu/option.h"
#include "net/net.h"
#include "net/slirp.h"
#include "qemu/cpr-fd.h"
#include "migration/misc.h"
#include "system/runstate.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

/* No incoming migration and our own guest: net/slirp-cpr.c's questions. */
bool runstate_check(RunState state)
{
    return state == RUN_STATE_RUNNING;
}

bool migration_guest_owned_here(Error **errp)
{
    return true;
}

static const MACAddr guest_mac = { { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 } };
static const uint8_t guest_ip[4] = { 10, 0, 2, 15 };

/* What the fake guest saw. */
static unsigned guest_udp_frames;

static NetClientState *make_backend(const char *id, const char *params)
{
    g_autoptr(QemuOpts) opts = qemu_opts_parse(params, NULL, ERRP_ABORT);
    g_autoptr(NetSlirpConfig) cfg = net_slirp_config_parse(opts, ERRP_ABORT);

    return net_slirp_create(id, cfg, ERRP_ABORT);
}

static uint16_t ip_checksum(const uint8_t *p, size_t len)
{
    uint32_t sum = 0;

    for (size_t i = 0; i + 1 < len; i += 2) {
        sum += (p[i] << 8) | p[i + 1];
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return ~sum;
}

/* The guest answers UDP by swapping addresses and ports, as mode=udpecho will. */
static void guest_echo_udp(NetClientState *nc, const uint8_t *buf, size_t len)
{
    g_autofree uint8_t *out = g_memdup2(buf, len);
    uint8_t *ip = out + 14, *udp;
    size_t ihl = (ip[0] & 0xf) * 4;
    uint8_t tmp[6];
    uint16_t sum;

    udp = ip + ihl;
    memcpy(out, buf + 6, 6);
    memcpy(out + 6, guest_mac.a, 6);
    memcpy(tmp, ip + 12, 4);
    memcpy(ip + 12, ip + 16, 4);
    memcpy(ip + 16, tmp, 4);
    ip[8] = 64;
    ip[10] = ip[11] = 0;
    sum = ip_checksum(ip, ihl);
    ip[10] = sum >> 8;
    ip[11] = sum;
    memcpy(tmp, udp, 2);
    memcpy(udp, udp + 2, 2);
    memcpy(udp + 2, tmp, 2);
    udp[6] = udp[7] = 0;        /* no UDP checksum: allowed over IPv4 */
    guest_udp_frames++;
    g_assert_cmpint(net_send_packet(nc, out, len), ==, len);
}

static ssize_t guest_receive(NetClientState *nc, const uint8_t *buf, size_t len)
{
    if (len >= 14 + 20 + 8 && buf[12] == 0x08 && buf[13] == 0x00 && buf[14 + 9] == 17 &&
        !memcmp(buf + 14 + 16, guest_ip, 4)) {
        guest_echo_udp(nc, buf, len);
    }
    return len;
}

static const NetClientInfo guest_info = {
    .type = NET_CLIENT_DRIVER_NIC,
    .receive = guest_receive,
};

/* "who-has 10.0.2.2 tell 10.0.2.15": slirp learns the guest's MAC from it. */
static void guest_send_arp(NetClientState *nc)
{
    uint8_t f[42] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

    memcpy(f + 6, guest_mac.a, 6);
    f[12] = 0x08, f[13] = 0x06;                 /* ARP */
    f[14] = 0, f[15] = 1, f[16] = 0x08, f[17] = 0;
    f[18] = 6, f[19] = 4, f[20] = 0, f[21] = 1; /* request */
    memcpy(f + 22, guest_mac.a, 6);
    memcpy(f + 28, guest_ip, 4);
    f[38] = 10, f[39] = 0, f[40] = 2, f[41] = 2;
    g_assert_cmpint(net_send_packet(nc, f, sizeof(f)), ==, sizeof(f));
}

/* A UDP port on 0.0.0.0 that nobody uses right now. */
static int free_udp_port(void)
{
    struct sockaddr_in a = { .sin_family = AF_INET };
    socklen_t alen = sizeof(a);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);

    g_assert_cmpint(bind(fd, (struct sockaddr *)&a, sizeof(a)), ==, 0);
    g_assert_cmpint(getsockname(fd, (struct sockaddr *)&a, &alen), ==, 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* Whether this process can bind 0.0.0.0:@port itself (no SO_REUSEADDR). */
static bool udp_port_free(int port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    bool ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;

    close(fd);
    return ok;
}

/* Runs the main context until @fd is readable or 10 s passed. */
static bool run_until_readable(int fd)
{
    gint64 end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

    while (g_get_monotonic_time() < end) {
        GPollFD p = { .fd = fd, .events = G_IO_IN };

        if (g_poll(&p, 1, 0) == 1) {
            return true;
        }
        /* One round of the loop without blocking: slirp polls, reads, sends. */
        g_main_context_iteration(NULL, FALSE);
        g_usleep(1000);
    }
    return false;
}

static void test_udp_echo_through_hostfwd(void)
{
    int port = free_udp_port();
    g_autofree char *params = g_strdup_printf("hostfwd=udp:127.0.0.1:%d-:7", port);
    NetClientState *backend = make_backend("n0", params);
    NetClientState *guest = net_nic_new(&guest_info, "virtio-net-device", NULL, "n0",
                                        &guest_mac, NULL, ERRP_ABORT);
    struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int host = socket(AF_INET, SOCK_DGRAM, 0);
    char buf[64] = { 0 };

    guest_send_arp(guest);
    for (int i = 0; i < 3; i++) {
        g_autofree char *msg = g_strdup_printf("datagram %d", i);

        g_assert_cmpint(sendto(host, msg, strlen(msg), 0, (struct sockaddr *)&to, sizeof(to)),
                        ==, strlen(msg));
        g_assert_true(run_until_readable(host));
        g_assert_cmpint(recv(host, buf, sizeof(buf) - 1, 0), ==, strlen(msg));
        g_assert_cmpstr(buf, ==, msg);
        memset(buf, 0, sizeof(buf));
    }
    g_assert_cmpuint(guest_udp_frames, ==, 3);
    close(host);
    net_client_free(guest);
    net_client_free(backend);
}

static void test_hostfwd_binds(void)
{
    int port = free_udp_port();
    g_autofree char *rule = g_strdup_printf("udp::%d-:7", port);
    g_autofree char *host = g_strdup_printf("udp::%d", port);
    NetClientState *backend = make_backend("n0", "");
    Error *err = NULL;

    g_assert_true(udp_port_free(port));
    g_assert_true(net_slirp_hostfwd_add(backend, rule, ERRP_ABORT));
    g_assert_false(udp_port_free(port));
    /* The same host port twice cannot be bound. */
    g_assert_false(net_slirp_hostfwd_add(backend, rule, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "Could not set up host forwarding rule"));
    error_free(err);
    g_assert_cmpint(net_slirp_hostfwd_remove(backend, host), ==, 1);
    g_assert_true(udp_port_free(port));
    g_assert_cmpint(net_slirp_hostfwd_remove(backend, host), ==, 0);
    g_assert_cmpint(net_slirp_hostfwd_remove(backend, "foo"), ==, -1);
    net_client_free(backend);
}

static void test_create_fails_on_bound_port(void)
{
    int port = free_udp_port();
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    g_autofree char *params = g_strdup_printf("hostfwd=udp::%d-:7", port);
    g_autofree char *want = g_strdup_printf("Could not set up host forwarding rule "
                                            "'udp::%d-:7'", port);
    g_autoptr(QemuOpts) opts = qemu_opts_parse(params, NULL, ERRP_ABORT);
    g_autoptr(NetSlirpConfig) cfg = net_slirp_config_parse(opts, ERRP_ABORT);
    Error *err = NULL;

    g_assert_cmpint(bind(fd, (struct sockaddr *)&a, sizeof(a)), ==, 0);
    g_assert_null(net_slirp_create("n0", cfg, &err));
    g_assert_cmpstr(error_get_pretty(err), ==, want);
    error_free(err);
    /* Nothing is left behind: the id is free again. */
    g_assert_null(net_find_netdev("n0"));
    g_assert_cmpuint(net_clients()->len, ==, 0);
    close(fd);
}

static void test_state_save_load(void)
{
    NetClientState *a = make_backend("a", "");
    NetClientState *b = make_backend("b", "");
    g_autoptr(GByteArray) state = net_slirp_state_save(a);
    int version = net_slirp_state_version();
    Error *err = NULL;

    g_assert_cmpint(version, >=, 4);
    g_assert_cmpuint(state->len, >, 0);
    g_assert_true(net_slirp_state_load(b, version, state->data, state->len, ERRP_ABORT));
    /* A stream from a newer libslirp, or none at all, is refused, not read. */
    g_assert_false(net_slirp_state_load(b, version + 1, state->data, state->len, &err));
    error_free_or_abort(&err);
    g_assert_false(net_slirp_state_load(b, version, NULL, 0, &err));
    error_free_or_abort(&err);
    /* Cut short or with bytes left over: libslirp would not notice, we do. */
    g_assert_false(net_slirp_state_load(b, version, state->data, state->len - 1, &err));
    error_free_or_abort(&err);
    g_byte_array_append(state, (const guint8 *)"x", 1);
    g_assert_false(net_slirp_state_load(b, version, state->data, state->len, &err));
    error_free_or_abort(&err);
    net_client_free(a);
    net_client_free(b);
}

static void test_info_str(void)
{
    NetClientState *a = make_backend("a", "net=192.168.7.0/24,restrict=on");

    g_assert_cmpstr(a->info_str, ==, "net=192.168.7.0,restrict=on");
    g_assert_cmpstr(a->model, ==, "user");
    g_assert_true(a->is_netdev);
    net_client_free(a);
}

static void preserved_name(const char *name, int fd, void *opaque)
{
    if (!strcmp(name, opaque)) {
        *(char *)opaque = 0;
    }
}

/*
 * The "old process's" bound socket handed over (cpr_fd_add): the hostfwd
 * takes it instead of binding (which would fail: it is bound), datagrams
 * sent to its port are echoed through it, and it is kept by name for the
 * next update.
 */
static void test_hostfwd_adopts_cpr_socket(void)
{
    int port = free_udp_port();
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int old = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), host = socket(AF_INET, SOCK_DGRAM, 0);
    g_autofree char *name = g_strdup_printf("hostfwd:udp:127.0.0.1:%d", port);
    g_autofree char *params = g_strdup_printf("hostfwd=udp:127.0.0.1:%d-:7", port);
    NetClientState *backend, *guest;
    char buf[64] = { 0 };

    g_assert_cmpint(bind(old, (struct sockaddr *)&a, sizeof(a)), ==, 0);
    cpr_fd_add(name, fcntl(old, F_DUPFD_CLOEXEC, 3));
    backend = make_backend("n0", params);
    g_assert_cmpint(cpr_fd_take(name), ==, -1);         /* taken by the hostfwd */
    guest = net_nic_new(&guest_info, "virtio-net-device", NULL, "n0", &guest_mac, NULL,
                        ERRP_ABORT);
    guest_send_arp(guest);
    g_assert_cmpint(sendto(host, "across", 6, 0, (struct sockaddr *)&a, sizeof(a)), ==, 6);
    g_assert_true(run_until_readable(host));
    g_assert_cmpint(recv(host, buf, sizeof(buf) - 1, 0), ==, 6);
    g_assert_cmpstr(buf, ==, "across");
    cpr_fd_preserved_foreach(preserved_name, name);
    g_assert_cmpstr(name, ==, "");
    close(host);
    close(old);
    net_client_free(guest);
    net_client_free(backend);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    /* The main thread of the binary holds the BQL in every callback; so do we. */
    bql_lock();
    g_test_add_func("/net/slirp/udp-echo", test_udp_echo_through_hostfwd);
    g_test_add_func("/net/slirp/hostfwd-binds", test_hostfwd_binds);
    g_test_add_func("/net/slirp/create-fails-bound", test_create_fails_on_bound_port);
    g_test_add_func("/net/slirp/state", test_state_save_load);
    g_test_add_func("/net/slirp/info-str", test_info_str);
    /* Last: it leaves this process a live update's destination (cpr_fd_received). */
    g_test_add_func("/net/slirp/hostfwd-adopts-cpr-socket", test_hostfwd_adopts_cpr_socket);
    return g_test_run();
}

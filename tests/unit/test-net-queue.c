/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for net/net.c: frames between two fake peers, a receiver that
 * refuses (the queue, its order and its bound), flushes from inside
 * receive(), send callbacks, pairing a NIC with a backend, and MAC parsing.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "net/net.h"

/* A fake client: records what it got, refuses while @closed. */
typedef struct FakePeer {
    NetClientState *nc;
    bool closed;
    GPtrArray *got;             /* GBytes */
    ssize_t answer;             /* what receive() returns when it takes a frame; 0 = len */
    bool flush_inside;          /* call net_flush_queued_packets() from receive() */
    bool echo;                  /* send every frame back from receive() */
    int sent_cbs;
    ssize_t last_sent_ret;
} FakePeer;

static ssize_t fake_receive(NetClientState *nc, const uint8_t *buf, size_t len)
{
    FakePeer *f = nc->opaque;

    if (f->closed) {
        return 0;
    }
    g_ptr_array_add(f->got, g_bytes_new(buf, len));
    if (f->flush_inside) {
        net_flush_queued_packets(nc);
    }
    if (f->echo) {
        net_send_packet(nc, buf, len);
    }
    return f->answer ? f->answer : (ssize_t)len;
}

static bool fake_can_receive(NetClientState *nc)
{
    return !((FakePeer *)nc->opaque)->closed;
}

static const NetClientInfo fake_backend_info = {
    .type = NET_CLIENT_DRIVER_USER,
    .receive = fake_receive,
};

/* The frontend says "not now" through can_receive, the backend through receive() 0. */
static const NetClientInfo fake_nic_info = {
    .type = NET_CLIENT_DRIVER_NIC,
    .receive = fake_receive,
    .can_receive = fake_can_receive,
};

static FakePeer backend, nic;

static void fake_sent(NetClientState *sender, ssize_t ret)
{
    FakePeer *f = sender->opaque;

    f->sent_cbs++;
    f->last_sent_ret = ret;
}

/* A backend "n0" and a NIC paired with it. */
static void setup_pair(void)
{
    const MACAddr mac = { { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 } };

    memset(&backend, 0, sizeof(backend));
    memset(&nic, 0, sizeof(nic));
    backend.got = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    nic.got = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    backend.nc = net_client_new(&fake_backend_info, "user", "n0", &backend);
    nic.nc = net_nic_new(&fake_nic_info, "virtio-net-device", NULL, "n0", &mac, &nic,
                         ERRP_ABORT);
}

static void teardown_pair(void)
{
    net_client_free(nic.nc);
    net_client_free(backend.nc);
    g_ptr_array_unref(backend.got);
    g_ptr_array_unref(nic.got);
    g_assert_cmpuint(net_clients()->len, ==, 0);
}

/* Frame number @n: 60 bytes, the first one holding @n. */
static ssize_t send_numbered(NetClientState *from, unsigned n, NetPacketSent *cb)
{
    uint8_t frame[60] = { 0 };

    frame[0] = n;
    return net_send_packet_async(from, frame, sizeof(frame), cb);
}

static unsigned frame_number(GPtrArray *got, guint i)
{
    return ((const uint8_t *)g_bytes_get_data(g_ptr_array_index(got, i), NULL))[0];
}

static void test_direct(void)
{
    setup_pair();
    g_assert_cmpint(send_numbered(backend.nc, 1, NULL), ==, 60);
    g_assert_cmpint(send_numbered(nic.nc, 2, NULL), ==, 60);
    g_assert_cmpuint(nic.got->len, ==, 1);
    g_assert_cmpuint(frame_number(nic.got, 0), ==, 1);
    g_assert_cmpuint(backend.got->len, ==, 1);
    g_assert_cmpuint(frame_number(backend.got, 0), ==, 2);
    g_assert_cmpuint(net_queued_packets(nic.nc), ==, 0);
    /* A receive() error reaches the sender; nothing is queued. */
    backend.answer = -EIO;
    g_assert_cmpint(send_numbered(nic.nc, 3, NULL), ==, -EIO);
    g_assert_cmpuint(net_queued_packets(backend.nc), ==, 0);
    teardown_pair();
}

static void test_sizes_and_no_peer(void)
{
    static uint8_t big[NET_MAX_FRAME_LEN + 1];
    NetClientState *lone;

    setup_pair();
    g_assert_cmpint(net_send_packet(backend.nc, big, 0), ==, -EMSGSIZE);
    g_assert_cmpint(net_send_packet(backend.nc, big, sizeof(big)), ==, -EMSGSIZE);
    g_assert_cmpint(net_send_packet(backend.nc, big, NET_MAX_FRAME_LEN), ==, NET_MAX_FRAME_LEN);
    teardown_pair();
    /* Unplugged: the frame is gone, the sender is told it went. */
    lone = net_client_new(&fake_backend_info, "user", "lone", NULL);
    g_assert_cmpint(net_send_packet(lone, big, 60), ==, 60);
    net_client_free(lone);
}

static void test_queue_order_and_flush(void)
{
    setup_pair();
    nic.closed = true;
    for (unsigned i = 0; i < 10; i++) {
        g_assert_cmpint(send_numbered(backend.nc, i, NULL), ==, 0);
    }
    g_assert_cmpuint(net_queued_packets(nic.nc), ==, 10);
    g_assert_cmpuint(nic.got->len, ==, 0);
    /* A flush while still closed delivers nothing and keeps everything. */
    net_flush_queued_packets(nic.nc);
    g_assert_cmpuint(net_queued_packets(nic.nc), ==, 10);
    nic.closed = false;
    /* Frames never overtake the ones that wait: this one queues behind them. */
    g_assert_cmpint(send_numbered(backend.nc, 10, NULL), ==, 0);
    net_flush_queued_packets(nic.nc);
    g_assert_cmpuint(net_queued_packets(nic.nc), ==, 0);
    g_assert_cmpuint(nic.got->len, ==, 11);
    for (unsigned i = 0; i < 11; i++) {
        g_assert_cmpuint(frame_number(nic.got, i), ==, i);
    }
    /* Empty again: straight through. */
    g_assert_cmpint(send_numbered(backend.nc, 11, NULL), ==, 60);
    teardown_pair();
}

/* A receiver that takes some frames, then refuses again, mid-flush. */
static ssize_t refuse_after_three(NetClientState *nc, const uint8_t *buf, size_t len)
{
    FakePeer *f = nc->opaque;

    if (f->got->len == 3) {
        return 0;
    }
    g_ptr_array_add(f->got, g_bytes_new(buf, len));
    return len;
}

static void test_flush_stops_when_refused(void)
{
    static const NetClientInfo info = {
        .type = NET_CLIENT_DRIVER_NIC,
        .receive = refuse_after_three,
    };
    const MACAddr mac = { { 0x52, 0x54, 0x00, 0x12, 0x34, 0x57 } };
    NetClientState *nc;

    setup_pair();
    net_client_free(nic.nc);
    nc = net_nic_new(&info, "virtio-net-device", "nic1", "n0", &mac, &nic, ERRP_ABORT);
    nic.nc = nc;
    for (unsigned i = 0; i < 3; i++) {
        g_assert_cmpint(send_numbered(backend.nc, i, NULL), ==, 60);
    }
    for (unsigned i = 3; i < 8; i++) {
        g_assert_cmpint(send_numbered(backend.nc, i, NULL), ==, 0);
    }
    net_flush_queued_packets(nc);
    g_assert_cmpuint(net_queued_packets(nc), ==, 5);
    /* The receiver makes room: the first waiting frame is still first. */
    g_ptr_array_set_size(nic.got, 0);
    net_flush_queued_packets(nc);
    g_assert_cmpuint(nic.got->len, ==, 3);
    g_assert_cmpuint(frame_number(nic.got, 0), ==, 3);
    g_assert_cmpuint(net_queued_packets(nc), ==, 2);
    teardown_pair();
}

static void test_queue_bound(void)
{
    setup_pair();
    nic.closed = true;
    for (unsigned i = 0; i < NET_QUEUE_MAX_FRAMES; i++) {
        g_assert_cmpint(send_numbered(backend.nc, i, NULL), ==, 0);
    }
    /* Full: refused and counted, never queued. */
    for (unsigned i = 0; i < 100; i++) {
        g_assert_cmpint(send_numbered(backend.nc, 0xff, NULL), ==, -ENOBUFS);
    }
    g_assert_cmpuint(net_queued_packets(nic.nc), ==, NET_QUEUE_MAX_FRAMES);
    g_assert_cmpuint(nic.nc->dropped, ==, 100);
    nic.closed = false;
    net_flush_queued_packets(nic.nc);
    g_assert_cmpuint(nic.got->len, ==, NET_QUEUE_MAX_FRAMES);
    g_assert_cmpuint(frame_number(nic.got, NET_QUEUE_MAX_FRAMES - 1), ==,
                     (NET_QUEUE_MAX_FRAMES - 1) & 0xff);
    teardown_pair();
}

static void test_sent_callback(void)
{
    setup_pair();
    nic.closed = true;
    g_assert_cmpint(send_numbered(backend.nc, 1, fake_sent), ==, 0);
    g_assert_cmpint(send_numbered(backend.nc, 2, NULL), ==, 0);
    g_assert_cmpint(backend.sent_cbs, ==, 0);
    nic.closed = false;
    net_flush_queued_packets(nic.nc);
    g_assert_cmpint(backend.sent_cbs, ==, 1);
    g_assert_cmpint(backend.last_sent_ret, ==, 60);
    teardown_pair();
}

static void test_reentrant(void)
{
    setup_pair();
    /* receive() flushes its own queue and answers at once: no recursion, no loss. */
    nic.closed = true;
    for (unsigned i = 0; i < 4; i++) {
        send_numbered(backend.nc, i, NULL);
    }
    nic.closed = false;
    nic.flush_inside = true;
    nic.echo = true;
    net_flush_queued_packets(nic.nc);
    g_assert_cmpuint(nic.got->len, ==, 4);
    g_assert_cmpuint(backend.got->len, ==, 4);
    for (unsigned i = 0; i < 4; i++) {
        g_assert_cmpuint(frame_number(nic.got, i), ==, i);
        g_assert_cmpuint(frame_number(backend.got, i), ==, i);
    }
    teardown_pair();
}

static void test_free_purges(void)
{
    setup_pair();
    nic.closed = true;
    send_numbered(backend.nc, 1, fake_sent);
    send_numbered(backend.nc, 2, fake_sent);
    /* The backend goes: its frames waiting at the NIC go with it, silently. */
    net_client_free(backend.nc);
    g_assert_null(nic.nc->peer);
    g_assert_cmpuint(net_queued_packets(nic.nc), ==, 0);
    g_assert_cmpint(backend.sent_cbs, ==, 0);
    net_client_free(nic.nc);
    g_ptr_array_unref(backend.got);
    g_ptr_array_unref(nic.got);
}

static void test_nic_pairing(void)
{
    const MACAddr mac = { { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 } };
    Error *err = NULL;

    setup_pair();
    g_assert_true(nic.nc->peer == backend.nc && backend.nc->peer == nic.nc);
    g_assert_cmpstr(nic.nc->name, ==, "virtio-net-device.0");
    g_assert_cmpstr(nic.nc->info_str, ==, "model=virtio-net-device,macaddr=52:54:00:12:34:56");
    g_assert_false(nic.nc->is_netdev);
    g_assert_true(net_find_netdev("n0") == backend.nc);
    g_assert_null(net_find_netdev("virtio-net-device.0"));
    g_assert_null(net_nic_new(&fake_nic_info, "virtio-net-device", NULL, "n0", &mac, NULL, &err));
    g_assert_cmpstr(error_get_pretty(err), ==,
                    "Property 'virtio-net-device.netdev' can't take value 'n0', it's in use");
    error_free(err);
    err = NULL;
    g_assert_null(net_nic_new(&fake_nic_info, "virtio-net-device", NULL, "n9", &mac, NULL, &err));
    g_assert_cmpstr(error_get_pretty(err), ==,
                    "Property 'virtio-net-device.netdev' can't find value 'n9'");
    error_free(err);
    teardown_pair();
}

static void test_macaddr(void)
{
    static const struct { const char *s; bool ok; uint8_t last; } cases[] = {
        { "52:54:00:12:34:56", true, 0x56 }, { "52-54-00-12-34-5", true, 0x05 },
        { "AA:bb:cc:dd:ee:FF", true, 0xff }, { "52:54:00:12:34", false },
        { "52:54:00:12:34:56:78", false }, { "zz:54:00:12:34:56", false },
        { "520:54:00:12:34:56", false }, { "", false }, { "52:54:00:12:34:56:", false },
    };
    MACAddr a, b;
    g_autofree char *str = NULL;

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        MACAddr m;

        g_assert_cmpint(net_parse_macaddr(cases[i].s, &m), ==, cases[i].ok);
        if (cases[i].ok) {
            g_assert_cmpuint(m.a[5], ==, cases[i].last);
        }
    }
    net_macaddr_default(&a);
    net_macaddr_default(&b);
    str = net_macaddr_str(&a);
    g_assert_cmpstr(str, ==, "52:54:00:12:34:56");
    g_assert_cmpuint(b.a[5], ==, 0x57);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    /* The layer asserts the BQL, as the main loop holds it. */
    bql_lock();
    g_test_add_func("/net/queue/direct", test_direct);
    g_test_add_func("/net/queue/sizes-no-peer", test_sizes_and_no_peer);
    g_test_add_func("/net/queue/order-flush", test_queue_order_and_flush);
    g_test_add_func("/net/queue/flush-stops", test_flush_stops_when_refused);
    g_test_add_func("/net/queue/bound", test_queue_bound);
    g_test_add_func("/net/queue/sent-callback", test_sent_callback);
    g_test_add_func("/net/queue/reentrant", test_reentrant);
    g_test_add_func("/net/queue/free-purges", test_free_purges);
    g_test_add_func("/net/nic-pairing", test_nic_pairing);
    g_test_add_func("/net/macaddr", test_macaddr);
    return g_test_run();
}

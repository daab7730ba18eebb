/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for hw/virtio/virtio-net.c on the virtio bench (virtio-test.c:
 * real guest RAM, fake KVM and run state, a fake driver that programs the
 * virtio-mmio transport) with a fake backend as the NIC's peer. The device
 * thread is real, and so is the main loop: the test thread holds the BQL
 * and runs the default context, as the main thread does, so every frame
 * crosses the threads the way it does in the binary.
 *
 * TX frames reach the peer in order; RX frames land in posted buffers with
 * the 12-byte header; with no buffers the net layer queues (bounded) and
 * flushes once buffers come; a peer that queues holds the device thread
 * back (bounded ring) and lets it go; a VM stop delivers what it can; hostile
 * chains and random garbage break the device, never the process; the
 * "virtio-net" section round-trips and refuses bad values.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "qemu/tsan.h"
#include "hw/virtio/virtio-mmio.h"
#include "hw/virtio/virtio-net.h"
#include "system/ioport.h"
#include "virtio-net-test.h"
#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>
#include <linux/virtio_net.h>
#include <linux/virtio_ring.h>

#define BASE VNET_BASE
#define GSI VNET_GSI
#define QNUM 256
#define BUF_LEN VNET_BUF_LEN
#define BIG_GPA 0x1a0000        /* room for a 70000-byte chain */
#define HDR VIRTIO_NET_HDR_LEN
#define NET_FEATURES ((1ULL << VIRTIO_F_VERSION_1) | (1ULL << VIRTIO_NET_F_MAC) | \
                      (1ULL << VIRTIO_NET_F_STATUS))

/* ---- A fake backend: records what it gets, refuses while closed ---- */

typedef struct FakeBackend {
    NetClientState *nc;
    bool closed;
    GPtrArray *got;             /* GBytes */
} FakeBackend;

static ssize_t fake_receive(NetClientState *nc, const uint8_t *buf, size_t len)
{
    FakeBackend *be = nc->opaque;

    if (be->closed) {
        return 0;
    }
    g_ptr_array_add(be->got, g_bytes_new(buf, len));
    return len;
}

static const NetClientInfo fake_backend_info = {
    .type = NET_CLIENT_DRIVER_USER,
    .receive = fake_receive,
};

/* ---- The fixture: a backend "n0", a NIC on it behind a transport at BASE ---- */

typedef struct Fixture {
    FakeBackend be;
    VirtIONet *n;
    VirtIOMMIOState *mmio;
    VirtIONetMMIOQemu *sec;     /* its section, unregistered with it */
    VNetDriver drv;
} Fixture;

static const MACAddr test_mac = { { 0x52, 0x54, 0x00, 0xab, 0xcd, 0x01 } };

static void fixture_setup_mac(Fixture *f, const MACAddr *mac)
{
    VirtIONetConf conf = { .netdev = (char *)"n0", .mac = *mac, .mac_given = true };

    memset(f, 0, sizeof(*f));
    vtest_fakes_reset(false, false);
    f->be.got = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    f->be.nc = net_client_new(&fake_backend_info, "user", "n0", &f->be);
    f->n = virtio_net_create(&conf, ERRP_ABORT);
    f->mmio = virtio_mmio_create(&f->n->vdev, BASE, GSI, ERRP_ABORT);
    f->sec = virtio_net_mmio_state_add(f->mmio);
}

static void fixture_setup(Fixture *f)
{
    fixture_setup_mac(f, &test_mac);
}

/* The device only: the transport and the NIC go, the backend stays. */
static void fixture_destroy_device(Fixture *f)
{
    virtio_net_mmio_state_unregister(f->sec);
    virtio_mmio_destroy(f->mmio);
    virtio_net_destroy(f->n);
    io_range_table_free(mmio_table);
    mmio_table = io_range_table_new();
}

static void fixture_teardown(Fixture *f)
{
    fixture_destroy_device(f);
    net_client_free(f->be.nc);
    g_ptr_array_unref(f->be.got);
    vtest_vm_set_running(true);
}

#define rd vnet_read
#define wr vnet_write
#define kick vnet_kick
#define device_broken vnet_broken
#define pump_for vnet_pump_for
#define pump_until(cond, f) vnet_pump_until(cond, f)
#define RX_BUF(i) vnet_rx_buf(i)

static void driver_init(Fixture *f)
{
    vnet_driver_init(&f->drv, QNUM, NET_FEATURES);
}

static void make_frame(uint8_t *buf, size_t len, unsigned int seq)
{
    for (size_t i = 0; i < len; i++) {
        buf[i] = (uint8_t)(seq * 7 + i);
    }
}

static void rx_post(Fixture *f, unsigned int count, bool do_kick)
{
    vnet_rx_post(&f->drv, count, do_kick);
}

/* Offers frame @seq of @len bytes; header and frame split if @split. */
static void tx_offer(Fixture *f, unsigned int seq, size_t len, bool split)
{
    uint8_t frame[1514];

    make_frame(frame, len, seq);
    vnet_tx_send(&f->drv, frame, len, split, false);
}

static void assert_frame(GBytes *b, size_t len, unsigned int seq)
{
    g_autofree uint8_t *want = g_malloc(len);
    gsize got_len;
    const uint8_t *got = g_bytes_get_data(b, &got_len);

    make_frame(want, len, seq);
    g_assert_cmpuint(got_len, ==, len);
    g_assert_cmpmem(got, got_len, want, len);
}

/* Used entry @i of the RX queue holds frame @seq of @len bytes behind the header. */
static void assert_rx_used(Fixture *f, uint16_t i, size_t len, unsigned int seq)
{
    static const uint8_t want_hdr[HDR] = { [10] = 1 };   /* num_buffers = 1 */
    g_autofree uint8_t *want = g_malloc(len);
    uint32_t id, used_len;
    const uint8_t *buf;

    vtest_used_elem(&f->drv.rxq, i, &id, &used_len);
    g_assert_cmpuint(used_len, ==, HDR + len);
    buf = vtest_gpa(RX_BUF(id));
    g_assert_cmpmem(buf, HDR, want_hdr, HDR);
    make_frame(want, len, seq);
    g_assert_cmpmem(buf + HDR, len, want, len);
}

static unsigned int want_got, want_rx_used, want_tx_used;

static bool got_enough(void *opaque)
{
    Fixture *f = opaque;

    return f->be.got->len >= want_got;
}

static bool rx_used_enough(void *opaque)
{
    Fixture *f = opaque;

    return vtest_used_idx(&f->drv.rxq) == (uint16_t)want_rx_used;
}

static bool tx_used_enough(void *opaque)
{
    Fixture *f = opaque;

    return vtest_used_idx(&f->drv.txq) == (uint16_t)want_tx_used;
}

/* The device thread found no buffer for the frame it holds. */
static bool rx_stalled(void *opaque)
{
    Fixture *f = opaque;
    bool stalled;

    tsan_g_mutex_lock(&f->n->ring_lock);
    stalled = f->n->rx_stalled;
    tsan_g_mutex_unlock(&f->n->ring_lock);
    return stalled;
}

/* Sends @count frames (seq from @first) from the backend to the guest. */
static void backend_send(Fixture *f, unsigned int first, unsigned int count, size_t len)
{
    for (unsigned int i = 0; i < count; i++) {
        uint8_t buf[1514];

        make_frame(buf, len, first + i);
        net_send_packet(f->be.nc, buf, len);
    }
}

/* ---- Identity ---- */

static void test_identity(void)
{
    Fixture f;
    uint64_t v;

    fixture_setup(&f);
    g_assert_cmpuint(rd(VIRTIO_MMIO_DEVICE_ID), ==, 1);
    wr(VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
    v = rd(VIRTIO_MMIO_DEVICE_FEATURES);
    wr(VIRTIO_MMIO_DEVICE_FEATURES_SEL, 1);
    v |= (uint64_t)rd(VIRTIO_MMIO_DEVICE_FEATURES) << 32;
    g_assert_cmphex(v, ==, NET_FEATURES | (1ULL << VIRTIO_RING_F_INDIRECT_DESC) |
                    (1ULL << VIRTIO_RING_F_EVENT_IDX));
    for (unsigned int q = 0; q < 3; q++) {
        wr(VIRTIO_MMIO_QUEUE_SEL, q);
        g_assert_cmpuint(rd(VIRTIO_MMIO_QUEUE_NUM_MAX), ==, q < 2 ? QNUM : 0);
    }
    /* Config: the MAC, then status LINK_UP; nothing after. */
    g_assert_true(io_range_read(mmio_table, BASE + VIRTIO_MMIO_CONFIG, 4, &v));
    g_assert_cmphex(v, ==, 0xab005452);
    g_assert_true(io_range_read(mmio_table, BASE + VIRTIO_MMIO_CONFIG + 4, 2, &v));
    g_assert_cmphex(v, ==, 0x01cd);
    g_assert_true(io_range_read(mmio_table, BASE + VIRTIO_MMIO_CONFIG + 6, 2, &v));
    g_assert_cmphex(v, ==, VIRTIO_NET_S_LINK_UP);
    g_assert_true(io_range_read(mmio_table, BASE + VIRTIO_MMIO_CONFIG + 8, 2, &v));
    g_assert_cmphex(v, ==, 0);
    /* The config is read-only: a write changes nothing. */
    g_assert_true(io_range_write(mmio_table, BASE + VIRTIO_MMIO_CONFIG, 1, 0xff));
    g_assert_true(io_range_read(mmio_table, BASE + VIRTIO_MMIO_CONFIG, 1, &v));
    g_assert_cmphex(v, ==, 0x52);
    g_assert_cmpstr(f.n->nc->info_str, ==, "model=virtio-net-device,macaddr=52:54:00:ab:cd:01");
    g_assert_true(f.n->nc->peer == f.be.nc);
    fixture_teardown(&f);
}

/* ---- TX ---- */

static void test_tx(void)
{
    Fixture f;
    unsigned int calls;

    fixture_setup(&f);
    driver_init(&f);
    calls = vtest_fake.line_calls;
    tx_offer(&f, 0, 60, true);
    tx_offer(&f, 1, 42, true);
    tx_offer(&f, 2, 1514, false);
    kick(VIRTIO_NET_TX_QUEUE);
    want_got = 3;
    g_assert_true(pump_until(got_enough, &f));
    assert_frame(g_ptr_array_index(f.be.got, 0), 60, 0);
    assert_frame(g_ptr_array_index(f.be.got, 1), 42, 1);
    assert_frame(g_ptr_array_index(f.be.got, 2), 1514, 2);
    /* Every chain came back with nothing written, and the driver heard of it. */
    g_assert_cmpuint(vtest_used_idx(&f.drv.txq), ==, 3);
    g_assert_cmpuint(__atomic_load_n(&vtest_fake.line_calls, __ATOMIC_SEQ_CST), >, calls);
    g_assert_cmpuint(rd(VIRTIO_MMIO_INTERRUPT_STATUS) & VIRTIO_ISR_VRING, !=, 0);
    g_assert_cmpuint(f.n->tx_frames, ==, 3);
    g_assert_false(device_broken());
    fixture_teardown(&f);
}

/*
 * A peer that queues: the first frame waits at the peer, the tx ring
 * fills, and the device thread leaves the rest in the avail ring. Once
 * the peer takes frames again everything goes, in order.
 */
static void test_tx_backpressure(void)
{
    const unsigned int total = 200;
    Fixture f;

    fixture_setup(&f);
    driver_init(&f);
    f.be.closed = true;
    for (unsigned int i = 0; i < total; i++) {
        tx_offer(&f, i, 100, false);
    }
    kick(VIRTIO_NET_TX_QUEUE);
    /* One at the peer, a full ring: no more chains taken. */
    want_tx_used = 1 + VIRTIO_NET_RING_FRAMES;
    g_assert_true(pump_until(tx_used_enough, &f));
    pump_for(50);
    g_assert_cmpuint(vtest_used_idx(&f.drv.txq), ==, 1 + VIRTIO_NET_RING_FRAMES);
    g_assert_cmpuint(net_queued_packets(f.be.nc), ==, 1);
    g_assert_true(f.n->tx_waiting);
    f.be.closed = false;
    net_flush_queued_packets(f.be.nc);
    want_got = total;
    g_assert_true(pump_until(got_enough, &f));
    for (unsigned int i = 0; i < total; i++) {
        assert_frame(g_ptr_array_index(f.be.got, i), 100, i);
    }
    want_tx_used = total;
    g_assert_true(pump_until(tx_used_enough, &f));
    fixture_teardown(&f);
}

/* A NIC without a peer (QEMU allows -device without netdev=): frames go nowhere. */
static void test_tx_no_peer(void)
{
    VirtIONetConf conf = { .mac = test_mac, .mac_given = true };
    Fixture f;

    fixture_setup(&f);
    fixture_destroy_device(&f);
    f.n = virtio_net_create(&conf, ERRP_ABORT);
    f.mmio = virtio_mmio_create(&f.n->vdev, BASE, GSI, ERRP_ABORT);
    f.sec = virtio_net_mmio_state_add(f.mmio);
    g_assert_null(f.n->nc->peer);
    driver_init(&f);
    tx_offer(&f, 0, 60, false);
    kick(VIRTIO_NET_TX_QUEUE);
    want_tx_used = 1;
    g_assert_true(pump_until(tx_used_enough, &f));
    g_assert_cmpuint(f.be.got->len, ==, 0);
    fixture_teardown(&f);
}

/* ---- RX ---- */

static void test_rx(void)
{
    Fixture f;

    fixture_setup(&f);
    driver_init(&f);
    rx_post(&f, 8, true);
    pump_for(20);
    backend_send(&f, 0, 3, 60);
    backend_send(&f, 3, 1, 1514);
    want_rx_used = 4;
    g_assert_true(pump_until(rx_used_enough, &f));
    for (unsigned int i = 0; i < 3; i++) {
        assert_rx_used(&f, i, 60, i);
    }
    assert_rx_used(&f, 3, 1514, 3);
    g_assert_cmpuint(rd(VIRTIO_MMIO_INTERRUPT_STATUS) & VIRTIO_ISR_VRING, !=, 0);
    g_assert_cmpuint(net_queued_packets(f.n->nc), ==, 0);
    fixture_teardown(&f);
}

/*
 * No buffers: the first frame waits in the device's ring, the rest in the
 * net layer's queue, which is bounded; buffers bring them all, in order.
 */
static void test_rx_no_buffers(void)
{
    Fixture f;
    unsigned int queued;

    fixture_setup(&f);
    driver_init(&f);
    backend_send(&f, 0, 1, 60);
    g_assert_true(pump_until(rx_stalled, &f));
    backend_send(&f, 1, 9, 60);
    pump_for(50);
    g_assert_cmpuint(vtest_used_idx(&f.drv.rxq), ==, 0);
    g_assert_cmpuint(net_queued_packets(f.n->nc), ==, 9);
    rx_post(&f, 10, true);
    want_rx_used = 10;
    g_assert_true(pump_until(rx_used_enough, &f));
    for (unsigned int i = 0; i < 10; i++) {
        assert_rx_used(&f, i, 60, i);
    }
    g_assert_cmpuint(net_queued_packets(f.n->nc), ==, 0);

    /* A flood with no buffers costs a bounded queue; the rest is dropped and counted. */
    backend_send(&f, 10, 1, 60);
    g_assert_true(pump_until(rx_stalled, &f));
    backend_send(&f, 11, 999, 60);
    pump_for(50);
    queued = net_queued_packets(f.n->nc);
    g_assert_cmpuint(queued, ==, NET_QUEUE_MAX_FRAMES);
    g_assert_cmpuint(f.n->nc->dropped, ==, 999 - NET_QUEUE_MAX_FRAMES);
    /* Two rounds of buffers (a ring holds 256) take the first 257 of them. */
    rx_post(&f, 200, true);
    want_rx_used = 210;
    g_assert_true(pump_until(rx_used_enough, &f));
    rx_post(&f, 57, true);
    want_rx_used = 267;
    g_assert_true(pump_until(rx_used_enough, &f));
    for (unsigned int i = 10; i < 267; i++) {
        assert_rx_used(&f, i, 60, i);
    }
    g_assert_cmpuint(net_queued_packets(f.n->nc), ==, 0);
    fixture_teardown(&f);
}

/* A buffer too small for the frame: the frame is dropped, the buffer kept for the next. */
static void test_rx_small_buffer(void)
{
    Fixture f;

    fixture_setup(&f);
    driver_init(&f);
    vtest_put_desc(&f.drv.rxq, 0, RX_BUF(0), HDR + 100, VRING_DESC_F_WRITE, 0);
    vtest_publish(&f.drv.rxq, 0);
    kick(VIRTIO_NET_RX_QUEUE);
    backend_send(&f, 0, 1, 1000);
    backend_send(&f, 1, 1, 100);
    want_rx_used = 1;
    g_assert_true(pump_until(rx_used_enough, &f));
    assert_rx_used(&f, 0, 100, 1);
    g_assert_cmpuint(f.n->rx_dropped, ==, 1);
    g_assert_false(device_broken());
    fixture_teardown(&f);
}

/*
 * VM stop: chains the driver offered without a kick stay where they are
 * (they migrate as ring indices); frames waiting in the device's ring go
 * into buffers posted without a kick, before the VM is counted as stopped.
 */
static void test_vm_stop(void)
{
    Fixture f;

    fixture_setup(&f);
    driver_init(&f);
    backend_send(&f, 0, 1, 60);
    pump_for(30);
    g_assert_cmpuint(net_queued_packets(f.n->nc), ==, 0);
    rx_post(&f, 4, false);
    tx_offer(&f, 0, 60, false);
    vtest_vm_set_running(false);
    g_assert_cmpuint(vtest_used_idx(&f.drv.rxq), ==, 1);
    assert_rx_used(&f, 0, 60, 0);
    /* Stopped: frames for the guest wait in the net layer. */
    backend_send(&f, 1, 2, 60);
    pump_for(30);
    g_assert_cmpuint(net_queued_packets(f.n->nc), ==, 2);
    g_assert_cmpuint(vtest_used_idx(&f.drv.txq), ==, 0);
    vtest_vm_set_running(true);
    want_got = 1;
    g_assert_true(pump_until(got_enough, &f));
    assert_frame(g_ptr_array_index(f.be.got, 0), 60, 0);
    want_rx_used = 3;
    g_assert_true(pump_until(rx_used_enough, &f));
    assert_rx_used(&f, 1, 60, 1);
    assert_rx_used(&f, 2, 60, 2);
    fixture_teardown(&f);
}

/* ---- The hostile guest ---- */

/* Offers one hand-made TX chain of descriptors [addr, len] and kicks. */
static void tx_offer_raw(Fixture *f, uint64_t addr, uint32_t len, uint16_t flags)
{
    vtest_put_desc(&f->drv.txq, 0, addr, len, flags, 0);
    vtest_publish(&f->drv.txq, 0);
    kick(VIRTIO_NET_TX_QUEUE);
}

static bool is_broken(void *opaque)
{
    return device_broken();
}

static void expect_broken_then_recover(Fixture *f)
{
    g_assert_true(pump_until(is_broken, f));
    /* A reset brings it back, and it works. */
    wr(VIRTIO_MMIO_STATUS, 0);
    g_assert_false(device_broken());
    driver_init(f);
    tx_offer(f, 77, 60, false);
    kick(VIRTIO_NET_TX_QUEUE);
    want_got = f->be.got->len + 1;
    g_assert_true(pump_until(got_enough, f));
    assert_frame(g_ptr_array_index(f->be.got, f->be.got->len - 1), 60, 77);
}

static void test_hostile_tx_short(void)
{
    Fixture f;

    fixture_setup(&f);
    driver_init(&f);
    tx_offer_raw(&f, vnet_tx_buf(0), HDR - 1, 0);
    expect_broken_then_recover(&f);
    fixture_teardown(&f);
}

static void test_hostile_tx_oversized(void)
{
    Fixture f;

    fixture_setup(&f);
    driver_init(&f);
    tx_offer_raw(&f, BIG_GPA, HDR + VIRTIO_NET_MAX_FRAME + 1, 0);
    expect_broken_then_recover(&f);
    fixture_teardown(&f);
}

/* An RX chain that cannot hold the header (here: device-readable only). */
static void test_hostile_rx_no_room(void)
{
    Fixture f;

    fixture_setup(&f);
    driver_init(&f);
    vtest_put_desc(&f.drv.rxq, 0, RX_BUF(0), BUF_LEN, 0, 0);
    vtest_publish(&f.drv.rxq, 0);
    kick(VIRTIO_NET_RX_QUEUE);
    backend_send(&f, 0, 1, 60);
    expect_broken_then_recover(&f);
    fixture_teardown(&f);
}

/* Seeded garbage in both rings, each round followed by a reset: never a crash. */
static void test_hostile_garbage(void)
{
    GRand *rand = g_rand_new_with_seed(17);
    Fixture f;
    unsigned int broken = 0;

    fixture_setup(&f);
    for (int round = 0; round < 200; round++) {
        VirtIOTestQueue *qs[2] = { &f.drv.rxq, &f.drv.txq };

        driver_init(&f);
        for (int k = 0; k < 2; k++) {
            for (unsigned int d = 0; d < 16; d++) {
                uint64_t addr = g_rand_boolean(rand) ? g_rand_int_range(rand, 0, VTEST_RAM_SIZE)
                                                     : ((uint64_t)g_rand_int(rand) << 20);
                uint32_t len = g_rand_int_range(rand, 0, 2 * HDR + 70000);
                uint16_t flags = g_rand_int(rand) & (VRING_DESC_F_NEXT | VRING_DESC_F_WRITE |
                                                    (round % 4 ? 0 : VRING_DESC_F_INDIRECT));

                vtest_put_desc(qs[k], d, addr, len, flags, g_rand_int_range(rand, 0, 20));
            }
            for (int c = 0; c < 4; c++) {
                vtest_publish(qs[k], g_rand_int_range(rand, 0, 18));
            }
            kick(k);
        }
        backend_send(&f, round, 2, 60);
        pump_for(2);
        broken += device_broken();
        wr(VIRTIO_MMIO_STATUS, 0);
    }
    g_assert_cmpuint(broken, >, 0);
    g_rand_free(rand);
    /* And after all that, an honest driver gets a working device. */
    driver_init(&f);
    tx_offer(&f, 5, 60, false);
    kick(VIRTIO_NET_TX_QUEUE);
    want_got = f.be.got->len + 1;
    g_assert_true(pump_until(got_enough, &f));
    assert_frame(g_ptr_array_index(f.be.got, f.be.got->len - 1), 60, 5);
    fixture_teardown(&f);
}

/* ---- Migration ---- */

static const MACAddr dst_mac = { { 0x52, 0x54, 0x00, 0xab, 0xcd, 0x02 } };

/* QEMU's name for the transport's section: its address, then the device type. */
#define NET_SECTION "virtio-mmio@00000000feb00000/virtio-net"

/* Offsets in the section (QEMU's layout, docs/devel/qemu-interop.md). */
#define OFF_NUM_QUEUES  0x20
#define OFF_NET_MAC     0x5a
#define OFF_TX_WAITING  0x60
#define OFF_NET_STATUS  0x68
#define OFF_PROMISC     0x6a
#define OFF_MAC_TABLE   0x6c
#define OFF_VLANS       0x70

/* The source's device goes; the destination's, with another MAC on its command line, comes. */
static void become_destination(Fixture *f)
{
    VirtIONetConf conf = { .netdev = (char *)"n0", .mac = dst_mac, .mac_given = true };

    fixture_destroy_device(f);
    f->n = virtio_net_create(&conf, ERRP_ABORT);
    f->mmio = virtio_mmio_create(&f->n->vdev, BASE, GSI, ERRP_ABORT);
    f->sec = virtio_net_mmio_state_add(f->mmio);
}

/* The source's state moves to a fresh device (same RAM), which carries on. */
static void test_migrate_round_trip(void)
{
    g_autofree uint8_t *sec = NULL, *again = NULL;
    size_t len, len2;
    Fixture f;
    uint64_t v;

    fixture_setup(&f);
    driver_init(&f);
    rx_post(&f, 4, true);
    tx_offer(&f, 0, 60, false);
    kick(VIRTIO_NET_TX_QUEUE);
    backend_send(&f, 0, 1, 60);
    want_rx_used = 1;
    g_assert_true(pump_until(rx_used_enough, &f));
    want_got = 1;
    g_assert_true(pump_until(got_enough, &f));
    vtest_vm_set_running(false);
    sec = vtest_section_save_named(NET_SECTION, &len);
    /* QEMU's: three queues (with its control queue), the MAC, link up, promiscuous. */
    g_assert_cmpuint(sec[OFF_NUM_QUEUES + 3], ==, 3);
    g_assert_cmpmem(sec + OFF_NET_MAC, 6, test_mac.a, 6);
    g_assert_cmphex(sec[OFF_NET_STATUS + 1], ==, VIRTIO_NET_S_LINK_UP);
    g_assert_cmphex(sec[OFF_PROMISC], ==, 1);
    g_assert_cmphex(sec[OFF_VLANS], ==, 0xff);

    /* The destination, then the stream. */
    become_destination(&f);
    g_assert_true(vtest_section_load_named(NET_SECTION, 0, sec, len, ERRP_ABORT));
    /* What it loaded saves as the same bytes. */
    again = vtest_section_save_named(NET_SECTION, &len2);
    g_assert_cmpmem(again, len2, sec, len);
    g_assert_true(io_range_read(mmio_table, BASE + VIRTIO_MMIO_CONFIG + 5, 1, &v));
    g_assert_cmphex(v, ==, 0x01);       /* the guest keeps the MAC it had */
    g_assert_cmpstr(f.n->nc->info_str, ==, "model=virtio-net-device,macaddr=52:54:00:ab:cd:01");
    vtest_vm_set_running(true);
    tx_offer(&f, 1, 70, false);
    kick(VIRTIO_NET_TX_QUEUE);
    want_got = 2;
    g_assert_true(pump_until(got_enough, &f));
    assert_frame(g_ptr_array_index(f.be.got, 1), 70, 1);
    backend_send(&f, 1, 1, 80);
    want_rx_used = 2;
    g_assert_true(pump_until(rx_used_enough, &f));
    assert_rx_used(&f, 1, 80, 1);
    /* A reset goes back to the MAC of this side's command line. */
    wr(VIRTIO_MMIO_STATUS, 0);
    g_assert_true(io_range_read(mmio_table, BASE + VIRTIO_MMIO_CONFIG + 5, 1, &v));
    g_assert_cmphex(v, ==, 0x02);
    fixture_teardown(&f);
}

/*
 * QEMU stops with tx_waiting = 1 when a TX pass is owed (the guest kicked,
 * the pass not run yet), and its destination runs that pass as the VM
 * starts. Ours takes the flag, and the frame the guest queued before the
 * stop goes out on the destination with no kick of its own.
 */
static void test_migrate_tx_waiting(void)
{
    g_autofree uint8_t *sec = NULL;
    size_t len;
    Fixture f;

    fixture_setup(&f);
    driver_init(&f);
    vtest_vm_set_running(false);
    /* Queued while stopped: the owed pass. */
    tx_offer(&f, 3, 90, false);
    sec = vtest_section_save_named(NET_SECTION, &len);
    g_assert_cmpuint(f.be.got->len, ==, 0);
    g_assert_cmphex(sec[OFF_TX_WAITING + 3], ==, 0);
    sec[OFF_TX_WAITING + 3] = 1;

    become_destination(&f);
    g_assert_true(vtest_section_load_named(NET_SECTION, 0, sec, len, ERRP_ABORT));
    vtest_vm_set_running(true);
    want_got = 1;
    g_assert_true(pump_until(got_enough, &f));
    assert_frame(g_ptr_array_index(f.be.got, 0), 90, 3);
    fixture_teardown(&f);
}

static void load_expect_refused(const uint8_t *sec, size_t len, const char *part)
{
    Error *err = NULL;

    g_assert_false(vtest_section_load_named(NET_SECTION, 0, sec, len, &err));
    if (!strstr(error_get_pretty(err), part)) {
        g_error("refusal '%s' lacks '%s'", error_get_pretty(err), part);
    }
    error_free(err);
}

/* A copy of @good with the byte at @off set to @val, refused naming @part. */
static void refused_with(const uint8_t *good, size_t len, size_t off, uint8_t val,
                         const char *part)
{
    g_autofree uint8_t *bad = g_memdup2(good, len);

    bad[off] = val;
    load_expect_refused(bad, len, part);
}

static void test_migrate_hostile(void)
{
    g_autofree uint8_t *good = NULL;
    size_t len;
    Fixture f;
    uint64_t v;

    fixture_setup(&f);
    driver_init(&f);
    vtest_vm_set_running(false);
    good = vtest_section_save_named(NET_SECTION, &len);
    good[OFF_NET_MAC + 3] = 0x11;
    refused_with(good, len, OFF_NET_STATUS + 1, 0, "status 0x0 is not 0x1");
    refused_with(good, len, OFF_NET_STATUS + 1, 3, "status 0x3 is not 0x1");
    refused_with(good, len, OFF_NET_STATUS, 0x80, "status 0x8001");
    refused_with(good, len, OFF_PROMISC, 0, "promisc");
    refused_with(good, len, OFF_MAC_TABLE + 3, 1, "exceeds the maximum");
    refused_with(good, len, OFF_NUM_QUEUES + 3, 4, "exceeds the maximum");
    refused_with(good, len, OFF_VLANS + 7, 0xfe, "vlans");
    /* The queue count says 2 here: the control queue's 18 bytes are the MAC, and so on. */
    refused_with(good, len, OFF_NUM_QUEUES + 3, 2, "virtio");
    load_expect_refused(good, len - 1, "virtio");
    /* None of it reached the device. */
    g_assert_true(io_range_read(mmio_table, BASE + VIRTIO_MMIO_CONFIG + 3, 1, &v));
    g_assert_cmphex(v, ==, 0xab);
    g_assert_cmpstr(f.n->nc->info_str, ==, "model=virtio-net-device,macaddr=52:54:00:ab:cd:01");
    g_assert_true(vtest_section_load_named(NET_SECTION, 0, good, len, ERRP_ABORT));
    g_assert_true(io_range_read(mmio_table, BASE + VIRTIO_MMIO_CONFIG + 3, 1, &v));
    g_assert_cmphex(v, ==, 0x11);
    fixture_teardown(&f);
}

int main(int argc, char **argv)
{
    int ret;

    g_test_init(&argc, &argv, NULL);
    /* The test thread is the main loop: it holds the BQL, and polls without it. */
    qemu_main_loop_init();
    vtest_init();
    g_test_add_func("/virtio-net/identity", test_identity);
    g_test_add_func("/virtio-net/tx", test_tx);
    g_test_add_func("/virtio-net/tx-backpressure", test_tx_backpressure);
    g_test_add_func("/virtio-net/tx-no-peer", test_tx_no_peer);
    g_test_add_func("/virtio-net/rx", test_rx);
    g_test_add_func("/virtio-net/rx-no-buffers", test_rx_no_buffers);
    g_test_add_func("/virtio-net/rx-small-buffer", test_rx_small_buffer);
    g_test_add_func("/virtio-net/vm-stop", test_vm_stop);
    g_test_add_func("/virtio-net/hostile/tx-short", test_hostile_tx_short);
    g_test_add_func("/virtio-net/hostile/tx-oversized", test_hostile_tx_oversized);
    g_test_add_func("/virtio-net/hostile/rx-no-room", test_hostile_rx_no_room);
    g_test_add_func("/virtio-net/hostile/garbage", test_hostile_garbage);
    g_test_add_func("/virtio-net/migrate/round-trip", test_migrate_round_trip);
    g_test_add_func("/virtio-net/migrate/hostile", test_migrate_hostile);
    g_test_add_func("/virtio-net/migrate/tx-waiting", test_migrate_tx_waiting);
    ret = g_test_run();
    vtest_cleanup();
    return ret;
}

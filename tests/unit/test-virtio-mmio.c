/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for hw/virtio/virtio-mmio.c and hw/virtio/virtio.c on the
 * bench of virtio-test.c: a fake driver programs the transport through its
 * registers over real guest RAM, a small echo device runs in the real
 * device thread, and a fake KVM records ioeventfd/irqfd assignments and
 * line levels, with the capabilities on or off per test so both the
 * eventfd and the exit/KVM_IRQ_LINE paths run. Hostile drivers: ring addresses
 * outside RAM, loops found by the device thread, DRIVER_OK without
 * FEATURES_OK, features without VERSION_1, registers written while a
 * queue is live; each marks the device NEEDS_RESET (one warning), and a
 * reset through Status brings it back.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/virtio/virtio.h"
#include "hw/virtio/virtio-mmio.h"
#include "system/ioport.h"
#include "system/memory.h"
#include "qemu/thread.h"
#include "qemu/userfaultfd.h"
#include "virtio-test.h"
#include <poll.h>
#include <sys/mman.h>
#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>
#include <linux/virtio_ring.h>

#define BASE 0xfeb00000ULL
#define GSI 5
#define QSIZE 16
#define DESC_GPA  0x10000
#define AVAIL_GPA 0x11000
#define USED_GPA  0x12000
#define BUF_GPA   0x20000
#define MISSING_GPA 0x40000     /* a page a userfaultfd never answers */
#define DEV_FEATURE_BIT 5       /* the echo device's one feature */

/* ---- The echo device: copies each chain's readable bytes into its writable ones ---- */

typedef struct EchoDevice {
    VirtIODevice vdev;
    unsigned int notifies;      /* queue_notify calls, atomic */
    unsigned int echoed;        /* chains returned, atomic */
    unsigned int starts, stops, resets;  /* BQL (the test thread) */
    uint8_t config[8];
} EchoDevice;

static void echo_queue_notify(VirtIODevice *vdev, VirtQueue *vq)
{
    EchoDevice *d = container_of(vdev, EchoDevice, vdev);
    VirtQueueElement *e;

    __atomic_fetch_add(&d->notifies, 1, __ATOMIC_SEQ_CST);
    while ((e = virtqueue_pop(vq))) {
        uint8_t buf[256];
        size_t n = virtqueue_elem_read(e, 0, buf, sizeof(buf));

        virtqueue_push(vq, e, virtqueue_elem_write(e, 0, buf, n));
        g_free(e);
        __atomic_fetch_add(&d->echoed, 1, __ATOMIC_SEQ_CST);
    }
    virtio_notify(vdev, vq);
}

static void echo_get_config(VirtIODevice *vdev, uint8_t *config)
{
    EchoDevice *d = container_of(vdev, EchoDevice, vdev);

    memcpy(config, d->config, sizeof(d->config));
}

static void echo_set_config(VirtIODevice *vdev, const uint8_t *config)
{
    EchoDevice *d = container_of(vdev, EchoDevice, vdev);

    /* Only the first 4 bytes are writable. */
    memcpy(d->config, config, 4);
}

static bool echo_start(VirtIODevice *vdev, Error **errp)
{
    container_of(vdev, EchoDevice, vdev)->starts++;
    return true;
}

static void echo_stop(VirtIODevice *vdev)
{
    container_of(vdev, EchoDevice, vdev)->stops++;
}

static void echo_reset(VirtIODevice *vdev)
{
    container_of(vdev, EchoDevice, vdev)->resets++;
}

static const VirtIODeviceOps echo_ops = {
    .name = "virtio-echo-device",
    .thread_name = "virtio-echo",
    .device_id = 42,
    .num_queues = 2,
    .queue_size = QSIZE,
    .config_size = 8,
    .features = 1ULL << DEV_FEATURE_BIT,
    .get_config = echo_get_config,
    .set_config = echo_set_config,
    .reset = echo_reset,
    .start = echo_start,
    .stop = echo_stop,
    .queue_notify = echo_queue_notify,
};

/* ---- The fixture: an echo device on a transport at BASE ---- */

typedef struct Fixture {
    EchoDevice dev;
    VirtIOMMIOState *mmio;
    VirtIOTestQueue q;          /* queue 0 */
} Fixture;

static uint32_t rd(uint64_t off)
{
    return vtest_read(BASE, off);
}

static void wr(uint64_t off, uint32_t v)
{
    vtest_write(BASE, off, v);
}

static void fixture_setup(Fixture *f, bool ioeventfd, bool irqfd)
{
    memset(f, 0, sizeof(*f));
    f->q = (VirtIOTestQueue) { .index = 0, .num = QSIZE, .desc = DESC_GPA,
                               .avail = AVAIL_GPA, .used = USED_GPA };
    vtest_fakes_reset(ioeventfd, irqfd);
    g_assert_true(virtio_device_init(&f->dev.vdev, &echo_ops, ERRP_ABORT));
    f->mmio = virtio_mmio_create(&f->dev.vdev, BASE, GSI, ERRP_ABORT);
}

static void fixture_teardown(Fixture *f)
{
    wr(VIRTIO_MMIO_STATUS, 0);
    virtio_mmio_destroy(f->mmio);
    g_assert_cmpint(vtest_fake.irq_fd, ==, -1);
    virtio_device_cleanup(&f->dev.vdev);
    /* Tables cannot drop a range: start the next test on a fresh one. */
    io_range_table_free(mmio_table);
    mmio_table = io_range_table_new();
}

#define STATUS_FEATURES_DONE (VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER | \
                              VIRTIO_CONFIG_S_FEATURES_OK)

/* The whole init sequence of a 1.x driver, queue 0 ready, DRIVER_OK. */
static void driver_init(Fixture *f, bool event_idx)
{
    uint64_t features = (1ULL << VIRTIO_F_VERSION_1) | (1ULL << DEV_FEATURE_BIT) |
                        (event_idx ? 1ULL << VIRTIO_RING_F_EVENT_IDX : 0);

    vtest_negotiate(BASE, features);
    g_assert_cmpuint(rd(VIRTIO_MMIO_STATUS), ==, STATUS_FEATURES_DONE);
    wr(VIRTIO_MMIO_QUEUE_SEL, 0);
    g_assert_cmpuint(rd(VIRTIO_MMIO_QUEUE_NUM_MAX), ==, QSIZE);
    vtest_queue_setup(BASE, &f->q);
    g_assert_cmpuint(rd(VIRTIO_MMIO_QUEUE_READY), ==, 1);
    wr(VIRTIO_MMIO_STATUS, STATUS_FEATURES_DONE | VIRTIO_CONFIG_S_DRIVER_OK);
    g_assert_cmpuint(rd(VIRTIO_MMIO_STATUS), ==, STATUS_FEATURES_DONE |
                     VIRTIO_CONFIG_S_DRIVER_OK);
}

/* Offers one out+in chain with @msg in descriptors 2*slot, 2*slot+1. */
static void driver_send(Fixture *f, unsigned int slot, const char *msg)
{
    size_t len = strlen(msg) + 1;

    memcpy(vtest_gpa(BUF_GPA + slot * 0x200), msg, len);
    vtest_put_desc(&f->q, 2 * slot, BUF_GPA + slot * 0x200, len, VRING_DESC_F_NEXT,
                   2 * slot + 1);
    vtest_put_desc(&f->q, 2 * slot + 1, BUF_GPA + slot * 0x200 + 0x100, 0x100,
                   VRING_DESC_F_WRITE, 0);
    vtest_publish(&f->q, 2 * slot);
}

/* A hostile queue 0 setup: size and ring addresses as given. */
static void driver_queue_setup(Fixture *f, uint32_t num, uint64_t desc, uint64_t avail,
                               uint64_t used)
{
    VirtIOTestQueue q = { .index = 0, .num = num, .desc = desc, .avail = avail,
                          .used = used };

    vtest_queue_setup(BASE, &q);
}

/* ---- Registers ---- */

static void test_identity(void)
{
    Fixture f;
    uint64_t v;

    fixture_setup(&f, false, false);
    g_assert_cmphex(rd(VIRTIO_MMIO_MAGIC_VALUE), ==, 0x74726976);
    g_assert_cmpuint(rd(VIRTIO_MMIO_VERSION), ==, 2);
    g_assert_cmpuint(rd(VIRTIO_MMIO_DEVICE_ID), ==, 42);
    g_assert_cmphex(rd(VIRTIO_MMIO_VENDOR_ID), ==, 0x554d4551);
    g_assert_cmpuint(rd(VIRTIO_MMIO_STATUS), ==, 0);
    /* Control registers are 32-bit only. */
    g_assert_true(io_range_read(mmio_table, BASE + VIRTIO_MMIO_MAGIC_VALUE, 2, &v));
    g_assert_cmpuint(v, ==, 0);
    g_assert_true(io_range_read(mmio_table, BASE + 2, 4, &v));
    g_assert_cmpuint(v, ==, 0);
    /* Queues that do not exist have QueueNumMax 0. */
    wr(VIRTIO_MMIO_QUEUE_SEL, 1);
    g_assert_cmpuint(rd(VIRTIO_MMIO_QUEUE_NUM_MAX), ==, QSIZE);
    wr(VIRTIO_MMIO_QUEUE_SEL, 2);
    g_assert_cmpuint(rd(VIRTIO_MMIO_QUEUE_NUM_MAX), ==, 0);
    wr(VIRTIO_MMIO_QUEUE_READY, 1);     /* no such queue: nothing happens */
    g_assert_cmpuint(rd(VIRTIO_MMIO_QUEUE_READY), ==, 0);
    wr(VIRTIO_MMIO_QUEUE_SEL, 0xffffffff);
    g_assert_cmpuint(rd(VIRTIO_MMIO_QUEUE_NUM_MAX), ==, 0);
    /* No shared memory regions: length -1. */
    g_assert_cmphex(rd(VIRTIO_MMIO_SHM_LEN_LOW), ==, 0xffffffff);
    g_assert_cmphex(rd(VIRTIO_MMIO_SHM_LEN_HIGH), ==, 0xffffffff);
    /* Past the config space, and past the window. */
    g_assert_true(io_range_read(mmio_table, BASE + VIRTIO_MMIO_CONFIG + 8, 1, &v));
    g_assert_cmpuint(v, ==, 0);
    g_assert_false(io_range_read(mmio_table, BASE + VIRTIO_MMIO_WINDOW_SIZE, 4, &v));
    /* The window is taken: a second transport there is refused. */
    {
        Error *err = NULL;

        g_assert_null(virtio_mmio_create(&f.dev.vdev, BASE + 0x100, GSI + 1, &err));
        g_assert_nonnull(strstr(error_get_pretty(err), "already in use"));
        error_free(err);
    }
    fixture_teardown(&f);
}

static void test_features(void)
{
    Fixture f;

    fixture_setup(&f, false, false);
    wr(VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
    g_assert_cmphex(rd(VIRTIO_MMIO_DEVICE_FEATURES), ==,
                    (1u << DEV_FEATURE_BIT) | (1u << VIRTIO_RING_F_INDIRECT_DESC) |
                    (1u << VIRTIO_RING_F_EVENT_IDX));
    wr(VIRTIO_MMIO_DEVICE_FEATURES_SEL, 1);
    g_assert_cmphex(rd(VIRTIO_MMIO_DEVICE_FEATURES), ==, 1u << (VIRTIO_F_VERSION_1 - 32));
    wr(VIRTIO_MMIO_DEVICE_FEATURES_SEL, 2);
    g_assert_cmphex(rd(VIRTIO_MMIO_DEVICE_FEATURES), ==, 0);

    /* A legacy driver (no VERSION_1) is refused: FEATURES_OK reads back clear. */
    vtest_negotiate(BASE, 1ULL << DEV_FEATURE_BIT);
    g_assert_cmpuint(rd(VIRTIO_MMIO_STATUS), ==,
                     VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER);
    /* So is one that takes a feature we never offered. */
    vtest_negotiate(BASE, (1ULL << VIRTIO_F_VERSION_1) | (1ULL << 7));
    g_assert_cmpuint(rd(VIRTIO_MMIO_STATUS) & VIRTIO_CONFIG_S_FEATURES_OK, ==, 0);
    /* A proper one is accepted, and cannot change its mind afterwards. */
    vtest_negotiate(BASE, (1ULL << VIRTIO_F_VERSION_1) | (1ULL << DEV_FEATURE_BIT));
    g_assert_cmpuint(rd(VIRTIO_MMIO_STATUS), ==, STATUS_FEATURES_DONE);
    wr(VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
    wr(VIRTIO_MMIO_DRIVER_FEATURES, 0);
    g_assert_true(virtio_has_feature(&f.dev.vdev, DEV_FEATURE_BIT));
    g_assert_true(virtio_has_feature(&f.dev.vdev, VIRTIO_F_VERSION_1));
    /* Reset forgets it all. */
    wr(VIRTIO_MMIO_STATUS, 0);
    g_assert_false(virtio_has_feature(&f.dev.vdev, VIRTIO_F_VERSION_1));
    g_assert_cmpuint(rd(VIRTIO_MMIO_STATUS), ==, 0);
    fixture_teardown(&f);
}

static void test_config_space(void)
{
    Fixture f;
    uint64_t v;
    uint32_t gen;

    fixture_setup(&f, false, false);
    memcpy(f.dev.config, "\x11\x22\x33\x44\x55\x66\x77\x88", 8);
    g_assert_true(io_range_read(mmio_table, BASE + VIRTIO_MMIO_CONFIG + 1, 1, &v));
    g_assert_cmphex(v, ==, 0x22);
    g_assert_true(io_range_read(mmio_table, BASE + VIRTIO_MMIO_CONFIG + 4, 4, &v));
    g_assert_cmphex(v, ==, 0x88776655);
    g_assert_true(io_range_read(mmio_table, BASE + VIRTIO_MMIO_CONFIG, 8, &v));
    g_assert_cmphex(v, ==, 0x8877665544332211ULL);
    /* A read reaching past the config space gets nothing. */
    g_assert_true(io_range_read(mmio_table, BASE + VIRTIO_MMIO_CONFIG + 6, 4, &v));
    g_assert_cmphex(v, ==, 0);
    g_assert_true(io_range_write(mmio_table, BASE + VIRTIO_MMIO_CONFIG, 2, 0xbeef));
    g_assert_cmphex(f.dev.config[0], ==, 0xef);
    g_assert_cmphex(f.dev.config[1], ==, 0xbe);
    g_assert_true(io_range_write(mmio_table, BASE + VIRTIO_MMIO_CONFIG + 7, 2, 0xffff));
    g_assert_cmphex(f.dev.config[7], ==, 0x88);
    gen = rd(VIRTIO_MMIO_CONFIG_GENERATION);
    virtio_notify_config(&f.dev.vdev);
    g_assert_cmpuint(rd(VIRTIO_MMIO_CONFIG_GENERATION), ==, gen + 1);
    /* Before DRIVER_OK, no config interrupt. */
    g_assert_cmpuint(rd(VIRTIO_MMIO_INTERRUPT_STATUS), ==, 0);
    fixture_teardown(&f);
}

/* ---- The data path, on both notification and both interrupt paths ---- */

static void run_echo(bool ioeventfd, bool irqfd)
{
    Fixture f;
    const char *msg = "ping through the ring";
    unsigned int resets;
    uint64_t cnt;

    fixture_setup(&f, ioeventfd, irqfd);
    g_assert_cmpint(virtio_mmio_uses_ioeventfd(f.mmio), ==, ioeventfd);
    g_assert_cmpint(virtio_mmio_uses_irqfd(f.mmio), ==, irqfd);
    if (irqfd) {
        g_assert_cmpint(vtest_fake.irqfd_gsi, ==, GSI);
    }
    driver_init(&f, false);
    g_assert_cmpuint(f.dev.starts, ==, 1);
    if (ioeventfd) {
        g_assert_cmpint(vtest_fake.ioeventfd_fd[0], >=, 0);
        g_assert_cmpint(vtest_fake.ioeventfd_fd[1], ==, -1);      /* queue 1 never ready */
        g_assert_cmphex(vtest_fake.ioeventfd_addr, ==, BASE + VIRTIO_MMIO_QUEUE_NOTIFY);
        g_assert_cmpuint(vtest_fake.ioeventfd_len, ==, 4);
    }
    driver_send(&f, 0, msg);
    if (ioeventfd) {
        /* What KVM does for the guest's 4-byte write of 0: no exit. */
        uint64_t one = 1;

        g_assert_cmpint(write(vtest_fake.ioeventfd_fd[0], &one, 8), ==, 8);
    } else {
        wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
    }
    g_assert_true(vtest_wait_used(&f.q, 1));
    g_assert_cmpstr((char *)vtest_gpa(BUF_GPA + 0x100), ==, msg);
    g_assert_cmphex(rd(VIRTIO_MMIO_INTERRUPT_STATUS), ==, VIRTIO_ISR_VRING);
    if (irqfd) {
        g_assert_cmpint(read(vtest_fake.irq_fd, &cnt, 8), ==, 8);
        g_assert_cmpuint(cnt, ==, 1);
        /* Still pending at the guest's EOI: asserted again. */
        cnt = 1;
        g_assert_cmpint(write(vtest_fake.resample_fd, &cnt, 8), ==, 8);
        while (g_main_context_iteration(NULL, FALSE)) {
        }
        g_assert_cmpint(read(vtest_fake.irq_fd, &cnt, 8), ==, 8);
        /* Acknowledged, then EOI: stays low. */
        wr(VIRTIO_MMIO_INTERRUPT_ACK, VIRTIO_ISR_VRING);
        cnt = 1;
        g_assert_cmpint(write(vtest_fake.resample_fd, &cnt, 8), ==, 8);
        while (g_main_context_iteration(NULL, FALSE)) {
        }
        g_assert_cmpint(read(vtest_fake.irq_fd, &cnt, 8), ==, -1);
        g_assert_cmpint(errno, ==, EAGAIN);
        g_assert_cmpuint(vtest_fake.line_calls, ==, 0);
    } else {
        g_assert_cmpint(__atomic_load_n(&vtest_fake.line_level, __ATOMIC_SEQ_CST), ==, 1);
        wr(VIRTIO_MMIO_INTERRUPT_ACK, VIRTIO_ISR_VRING);
        g_assert_cmpint(vtest_fake.line_level, ==, 0);
    }
    g_assert_cmphex(rd(VIRTIO_MMIO_INTERRUPT_STATUS), ==, 0);

    /* A second round trip, then the driver suppresses interrupts. */
    driver_send(&f, 1, "second");
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);        /* the exit path works with ioeventfd too */
    g_assert_true(vtest_wait_used(&f.q, 2));
    wr(VIRTIO_MMIO_INTERRUPT_ACK, VIRTIO_ISR_VRING);
    vtest_put16(AVAIL_GPA, VRING_AVAIL_F_NO_INTERRUPT);
    driver_send(&f, 2, "quiet");
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
    g_assert_true(vtest_wait_used(&f.q, 3));
    g_assert_true(vtest_wait_uint(&f.dev.notifies, 3));
    g_assert_cmphex(rd(VIRTIO_MMIO_INTERRUPT_STATUS), ==, 0);

    /* Reset: thread joined, ioeventfds gone, line low. */
    resets = f.dev.resets;
    wr(VIRTIO_MMIO_STATUS, 0);
    g_assert_cmpuint(f.dev.stops, ==, 1);
    g_assert_cmpuint(f.dev.resets, ==, resets + 1);
    g_assert_cmpint(vtest_fake.ioeventfd_fd[0], ==, -1);
    g_assert_cmpuint(rd(VIRTIO_MMIO_QUEUE_READY), ==, 0);
    fixture_teardown(&f);
}

static void test_echo_exits(void)
{
    run_echo(false, false);
}

static void test_echo_eventfds(void)
{
    run_echo(true, true);
}

/* Kicks while the VM is stopped wait; the thread is gone meanwhile. */
static void test_vm_stop(void)
{
    Fixture f;

    fixture_setup(&f, true, false);
    driver_init(&f, true);
    vtest_vm_set_running(false);
    g_assert_false(f.dev.vdev.thread_running);
    g_assert_cmpuint(f.dev.stops, ==, 1);
    driver_send(&f, 0, "while stopped");
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
    g_usleep(20000);
    g_assert_cmpuint(vtest_used_idx(&f.q), ==, 0);
    vtest_vm_set_running(true);
    g_assert_cmpuint(f.dev.starts, ==, 2);
    g_assert_true(vtest_wait_used(&f.q, 1));
    /* A chain offered, never kicked, before a stop is seen at the next start. */
    vtest_vm_set_running(false);
    driver_send(&f, 1, "never kicked");
    vtest_vm_set_running(true);
    g_assert_true(vtest_wait_used(&f.q, 2));
    fixture_teardown(&f);
}

/* ---- Hostile drivers ---- */

static void assert_needs_reset(Fixture *f)
{
    g_assert_cmpuint(rd(VIRTIO_MMIO_STATUS) & VIRTIO_CONFIG_S_NEEDS_RESET, !=, 0);
    g_assert_true(virtio_device_is_broken(&f->dev.vdev));
}

static void test_ring_outside_ram(void)
{
    Fixture f;

    fixture_setup(&f, true, false);
    vtest_negotiate(BASE, (1ULL << VIRTIO_F_VERSION_1));
    driver_queue_setup(&f, QSIZE, 0x100000000000ULL, AVAIL_GPA, USED_GPA);
    g_assert_cmpuint(rd(VIRTIO_MMIO_QUEUE_READY), ==, 0);
    g_assert_cmpint(vtest_fake.ioeventfd_fd[0], ==, -1);
    assert_needs_reset(&f);
    /* The driver cannot clear NEEDS_RESET by writing status... */
    wr(VIRTIO_MMIO_STATUS, STATUS_FEATURES_DONE | VIRTIO_CONFIG_S_DRIVER_OK);
    assert_needs_reset(&f);
    g_assert_false(f.dev.vdev.thread_running);
    /* ... only by a reset, after which the queue works again. */
    wr(VIRTIO_MMIO_STATUS, 0);
    g_assert_cmpuint(rd(VIRTIO_MMIO_STATUS), ==, 0);
    driver_init(&f, false);
    driver_send(&f, 0, "after reset");
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
    g_assert_true(vtest_wait_used(&f.q, 1));
    fixture_teardown(&f);
}

static void test_bad_queue_size(void)
{
    Fixture f;

    fixture_setup(&f, false, false);
    vtest_negotiate(BASE, (1ULL << VIRTIO_F_VERSION_1));
    /* Beyond 16 bits: must not wrap around to a valid 16. */
    driver_queue_setup(&f, 0x10010, DESC_GPA, AVAIL_GPA, USED_GPA);
    g_assert_cmpuint(rd(VIRTIO_MMIO_QUEUE_READY), ==, 0);
    assert_needs_reset(&f);
    fixture_teardown(&f);
}

/* The device thread finds a loop: broken, config interrupt, one warning. */
static void test_loop_in_thread(void)
{
    Fixture f;

    fixture_setup(&f, false, false);
    driver_init(&f, false);
    vtest_put_desc(&f.q, 0, BUF_GPA, 8, VRING_DESC_F_NEXT, 1);
    vtest_put_desc(&f.q, 1, BUF_GPA, 8, VRING_DESC_F_NEXT, 0);
    vtest_publish(&f.q, 0);
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
    g_assert_true(vtest_wait_uint(&f.dev.notifies, 1));
    g_assert_true(vtest_wait_uint((unsigned int *)&f.dev.vdev.broken, 1));
    assert_needs_reset(&f);
    g_assert_cmphex(rd(VIRTIO_MMIO_INTERRUPT_STATUS) & VIRTIO_ISR_CONFIG, ==,
                    VIRTIO_ISR_CONFIG);
    g_assert_cmpuint(f.dev.echoed, ==, 0);
    /* Further kicks do nothing; the queue is stopped. */
    driver_send(&f, 1, "ignored");
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
    g_usleep(20000);
    g_assert_cmpuint(vtest_used_idx(&f.q), ==, 0);
    /* A VM stop/start does not revive it. */
    vtest_vm_set_running(false);
    vtest_vm_set_running(true);
    g_assert_false(f.dev.vdev.thread_running);
    wr(VIRTIO_MMIO_STATUS, 0);
    g_assert_cmpuint(rd(VIRTIO_MMIO_STATUS), ==, 0);
    g_assert_cmpuint(rd(VIRTIO_MMIO_INTERRUPT_STATUS), ==, 0);
    fixture_teardown(&f);
}

static void test_driver_ok_without_features_ok(void)
{
    Fixture f;

    fixture_setup(&f, false, false);
    wr(VIRTIO_MMIO_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER);
    wr(VIRTIO_MMIO_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
                           VIRTIO_CONFIG_S_DRIVER_OK);
    assert_needs_reset(&f);
    g_assert_cmpuint(rd(VIRTIO_MMIO_STATUS) & VIRTIO_CONFIG_S_DRIVER_OK, ==, 0);
    g_assert_false(f.dev.vdev.thread_running);
    fixture_teardown(&f);
    /* Refused features, then DRIVER_OK anyway. */
    fixture_setup(&f, false, false);
    vtest_negotiate(BASE, 1ULL << DEV_FEATURE_BIT);
    wr(VIRTIO_MMIO_STATUS, STATUS_FEATURES_DONE | VIRTIO_CONFIG_S_DRIVER_OK);
    assert_needs_reset(&f);
    g_assert_false(f.dev.vdev.thread_running);
    fixture_teardown(&f);
}

/* Queue registers are frozen while the queue is live. */
static void test_live_queue_registers(void)
{
    Fixture f;

    fixture_setup(&f, false, false);
    driver_init(&f, false);
    wr(VIRTIO_MMIO_QUEUE_SEL, 0);
    wr(VIRTIO_MMIO_QUEUE_NUM, 2);
    wr(VIRTIO_MMIO_QUEUE_DESC_LOW, 0xdead0000);
    wr(VIRTIO_MMIO_QUEUE_USED_HIGH, 0xffffffff);
    g_assert_cmphex(rd(VIRTIO_MMIO_QUEUE_DESC_LOW), ==, DESC_GPA);
    g_assert_cmphex(rd(VIRTIO_MMIO_QUEUE_USED_HIGH), ==, 0);
    g_assert_cmpuint(virtio_get_queue(&f.dev.vdev, 0)->num, ==, QSIZE);
    driver_send(&f, 0, "still fine");
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
    g_assert_true(vtest_wait_used(&f.q, 1));
    /* Kicks for queues that do not exist or are not ready are dropped. */
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 1);
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 7);
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0xffffffff);
    /* QueueReady = 0 while running stops the queue (the thread is restarted). */
    wr(VIRTIO_MMIO_QUEUE_READY, 0);
    g_assert_cmpuint(rd(VIRTIO_MMIO_QUEUE_READY), ==, 0);
    g_assert_true(f.dev.vdev.thread_running);
    g_assert_false(virtio_device_is_broken(&f.dev.vdev));
    fixture_teardown(&f);
}

/* The warning goes to stderr once per device, however often it breaks. */
static void test_warn_once(void)
{
    if (g_test_subprocess()) {
        Fixture f;

        fixture_setup(&f, false, false);
        for (int i = 0; i < 3; i++) {
            vtest_negotiate(BASE, (1ULL << VIRTIO_F_VERSION_1));
            driver_queue_setup(&f, QSIZE, DESC_GPA, 3 * GiB, USED_GPA);
            assert_needs_reset(&f);
            wr(VIRTIO_MMIO_STATUS, 0);
        }
        fixture_teardown(&f);
        return;
    }
    g_test_trap_subprocess(NULL, 0, 0);
    g_test_trap_assert_passed();
    g_test_trap_assert_stderr("*warning: virtio-echo-device at 0xfeb00000: queue 0: driver "
                              "ring 0xc0000000+0x26 is outside guest RAM; device marked "
                              "broken until the driver resets it\n");
    g_test_trap_assert_stderr_unmatched("*warning*warning*");
}

/* ---- Migration: the transport's section ---- */

/* Byte offsets in the section (big-endian fields in table order). */
#define SEC_ISR         12
#define SEC_STATUS      16
#define SEC_FEATURES    17
#define SEC_BROKEN      29
#define SEC_NUM_QUEUES  30
#define SEC_QUEUE0      34
#define SEC_QUEUE_SIZE  34
#define SEC_Q_NUM       0
#define SEC_Q_DESC      3
#define SEC_Q_USED      19
#define SEC_Q_LAST_AVAIL 27

static void put_be(uint8_t *p, uint64_t v, int size)
{
    for (int i = size - 1; i >= 0; i--, v >>= 8) {
        p[i] = v;
    }
}

/*
 * A source that echoed one chain and then stopped with a second chain
 * offered but not kicked; the section it saves.
 */
static uint8_t *save_source(size_t *len, bool ioeventfd)
{
    Fixture f;
    uint8_t *sec;

    fixture_setup(&f, ioeventfd, false);
    driver_init(&f, true);
    driver_send(&f, 0, "before");
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
    g_assert_true(vtest_wait_used(&f.q, 1));
    vtest_vm_set_running(false);
    driver_send(&f, 1, "across");
    wr(VIRTIO_MMIO_QUEUE_SEL, 1);
    sec = vtest_section_save(len);
    g_assert_cmpuint(*len, ==, SEC_QUEUE0 + 2 * SEC_QUEUE_SIZE);
    /*
     * The source goes away before it runs again: its guest RAM stays, as the
     * stream carried it at the stop (the load checks the rings in it).
     */
    virtio_mmio_destroy(f.mmio);
    virtio_device_cleanup(&f.dev.vdev);
    vtest_vm_set_running(true);
    io_range_table_free(mmio_table);
    mmio_table = io_range_table_new();
    return sec;
}

static void test_migrate_round_trip(void)
{
    size_t len;
    g_autofree uint8_t *sec = save_source(&len, true);
    Fixture f;

    /* The destination: a fresh device, VM stopped while the state comes in. */
    fixture_setup(&f, true, false);
    vtest_vm_set_running(false);
    g_assert_true(vtest_section_load(sec, len, ERRP_ABORT));
    g_assert_cmpuint(rd(VIRTIO_MMIO_STATUS), ==, STATUS_FEATURES_DONE |
                     VIRTIO_CONFIG_S_DRIVER_OK);
    g_assert_true(virtio_has_feature(&f.dev.vdev, VIRTIO_RING_F_EVENT_IDX));
    g_assert_cmphex(rd(VIRTIO_MMIO_INTERRUPT_STATUS), ==, VIRTIO_ISR_VRING);
    g_assert_cmpint(vtest_fake.line_level, ==, 1);
    g_assert_cmpuint(rd(VIRTIO_MMIO_QUEUE_READY), ==, 0);      /* QueueSel was 1 */
    wr(VIRTIO_MMIO_QUEUE_SEL, 0);
    g_assert_cmpuint(rd(VIRTIO_MMIO_QUEUE_READY), ==, 1);
    g_assert_cmphex(rd(VIRTIO_MMIO_QUEUE_USED_LOW), ==, USED_GPA);
    g_assert_cmpint(vtest_fake.ioeventfd_fd[0], >=, 0);
    g_assert_false(f.dev.vdev.thread_running);
    /* The VM runs: the chain offered before the stop is served without a kick. */
    vtest_vm_set_running(true);
    g_assert_true(vtest_wait_used(&f.q, 2));
    g_assert_cmpstr((char *)vtest_gpa(BUF_GPA + 0x200 + 0x100), ==, "across");
    /* The driver carries on where it was. */
    f.q.avail_idx = 2;
    driver_send(&f, 2, "after");
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
    g_assert_true(vtest_wait_used(&f.q, 3));
    fixture_teardown(&f);
}

static void load_expect_refused(const uint8_t *good, size_t len, size_t off, uint64_t val,
                                int size, const char *needle)
{
    g_autofree uint8_t *bad = g_malloc(len + SEC_QUEUE_SIZE);
    Error *err = NULL;
    Fixture f;

    memcpy(bad, good, len);
    memcpy(bad + len, good + SEC_QUEUE0, SEC_QUEUE_SIZE);   /* a spare queue entry */
    put_be(bad + off, val, size);
    fixture_setup(&f, true, false);
    vtest_vm_set_running(false);
    g_assert_false(vtest_section_load(bad, len + SEC_QUEUE_SIZE, &err));
    g_test_message("refused: %s", error_get_pretty(err));
    g_assert_nonnull(strstr(error_get_pretty(err), needle));
    error_free(err);
    /* Nothing of it reached the device. */
    g_assert_cmpuint(rd(VIRTIO_MMIO_STATUS), ==, 0);
    g_assert_cmpuint(rd(VIRTIO_MMIO_QUEUE_READY), ==, 0);
    g_assert_cmpuint(rd(VIRTIO_MMIO_INTERRUPT_STATUS), ==, 0);
    g_assert_cmpint(vtest_fake.ioeventfd_fd[0], ==, -1);
    vtest_vm_set_running(true);
    fixture_teardown(&f);
}

static void test_migrate_hostile(void)
{
    size_t len;
    g_autofree uint8_t *good = save_source(&len, false);
    const size_t q0 = SEC_QUEUE0;

    load_expect_refused(good, len, q0 + SEC_Q_DESC, 0x100000000000ULL, 8,
                        "outside guest RAM");
    load_expect_refused(good, len, q0 + SEC_Q_DESC, DESC_GPA + 8, 8, "aligned");
    load_expect_refused(good, len, q0 + SEC_Q_NUM, 12, 2, "power of two");
    load_expect_refused(good, len, q0 + SEC_Q_NUM, 2 * QSIZE, 2, "above the maximum");
    load_expect_refused(good, len, q0 + SEC_Q_LAST_AVAIL, 100, 2, "is not used_idx");
    load_expect_refused(good, len, SEC_NUM_QUEUES, 3, 4, "3 queues in the stream");
    load_expect_refused(good, len, SEC_NUM_QUEUES, 17, 4, "exceeds the maximum 16");
    load_expect_refused(good, len, SEC_STATUS, 0x1f, 1, "invalid status");
    load_expect_refused(good, len, SEC_STATUS, VIRTIO_CONFIG_S_DRIVER_OK, 1,
                        "DRIVER_OK without FEATURES_OK");
    load_expect_refused(good, len, SEC_FEATURES, (1ULL << VIRTIO_F_VERSION_1) | (1 << 7), 8,
                        "does not offer");
    load_expect_refused(good, len, SEC_FEATURES, 1ULL << DEV_FEATURE_BIT, 8,
                        "without VIRTIO_F_VERSION_1");
    load_expect_refused(good, len, SEC_ISR, 4, 4, "invalid InterruptStatus");
}

/*
 * The section with one field changed loads; @broken: with the device
 * broken (NEEDS_RESET), its thread not started when the VM runs.
 */
static void load_expect_loaded(const uint8_t *good, size_t len, size_t off, uint64_t val,
                               int size, bool broken)
{
    g_autofree uint8_t *sec = g_memdup2(good, len);
    Fixture f;

    put_be(sec + off, val, size);
    fixture_setup(&f, true, false);
    vtest_vm_set_running(false);
    g_assert_true(vtest_section_load(sec, len, ERRP_ABORT));
    g_assert_cmpint(virtio_device_is_broken(&f.dev.vdev), ==, broken);
    vtest_vm_set_running(true);
    if (broken) {
        g_assert_false(f.dev.vdev.thread_running);
        assert_needs_reset(&f);
        g_assert_cmpuint(f.dev.notifies, ==, 0);
    }
    fixture_teardown(&f);
}

/*
 * The rings in guest RAM are the guest's to write: where they disagree with
 * the stream the device loads broken, as the first kick would have broken
 * it on the source, instead of the guest blocking its own migration.
 */
static void test_migrate_guest_rings(void)
{
    size_t len;
    g_autofree uint8_t *good = save_source(&len, false);
    VirtIOTestQueue q = { .index = 0, .num = QSIZE, .desc = DESC_GPA, .avail = AVAIL_GPA,
                          .used = USED_GPA };
    uint16_t used_idx;

    /* The guest wrote the device ring's idx. */
    memcpy(&used_idx, vtest_gpa(USED_GPA + 2), 2);
    memcpy(vtest_gpa(USED_GPA + 2), &(uint16_t){ 7 }, 2);
    load_expect_loaded(good, len, SEC_ISR, 0, 4, true);
    memcpy(vtest_gpa(USED_GPA + 2), &used_idx, 2);
    /* The guest offered a looping chain and never kicked (descriptors 2 -> 3 -> 2). */
    vtest_put_desc(&q, 3, BUF_GPA + 0x200 + 0x100, 0x100, VRING_DESC_F_NEXT, 2);
    load_expect_loaded(good, len, SEC_ISR, 0, 4, true);
    vtest_put_desc(&q, 3, BUF_GPA + 0x200 + 0x100, 0x100, VRING_DESC_F_WRITE, 0);
    /*
     * The device ring moved in the stream to another good place in RAM,
     * whose idx (the two chains offered) is not used_idx: the stream is
     * consistent in itself, and to the destination this is the guest's
     * write above.
     */
    load_expect_loaded(good, len, SEC_QUEUE0 + SEC_Q_USED, AVAIL_GPA, 8, true);
    /* Put back, the rings agree again and the device runs. */
    load_expect_loaded(good, len, SEC_ISR, 0, 4, false);
}

/*
 * The rings are read only for a device that will run them, and only when
 * guest RAM is all here: a device the guest broke on the source migrates
 * broken, one before DRIVER_OK has rings the driver may still be writing,
 * and under postcopy or lazy restore a read could wait forever.
 */
static void test_migrate_rings_not_read(void)
{
    size_t len;
    g_autofree uint8_t *sec = save_source(&len, false);
    GPtrArray *rbs = ram_blocks();

    /* Each with the device ring moved where test_migrate_guest_rings breaks the device. */
    put_be(sec + SEC_QUEUE0 + SEC_Q_USED, AVAIL_GPA, 8);
    /* Broken on the source: broken here, without a second warning. */
    load_expect_loaded(sec, len, SEC_BROKEN, 1, 1, true);
    load_expect_loaded(sec, len, SEC_STATUS, STATUS_FEATURES_DONE, 1, false);
    for (guint i = 0; i < rbs->len; i++) {
        ((RAMBlock *)g_ptr_array_index(rbs, i))->uffd_missing = 1;
    }
    load_expect_loaded(sec, len, SEC_ISR, 0, 4, false);
    for (guint i = 0; i < rbs->len; i++) {
        ((RAMBlock *)g_ptr_array_index(rbs, i))->uffd_missing = 0;
    }
}

static unsigned int lost_stop_done;    /* atomic */

static void *lost_stopper(void *opaque)
{
    vtest_vm_set_running(false);
    __atomic_store_n(&lost_stop_done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/*
 * Guest RAM lost (a lazy restore whose file failed) while the device
 * thread waits on a missing page of it, as virtio-net's does when a frame
 * comes for a buffer the restore never brought: the VM stop under the BQL
 * must not join that thread, which would wait forever. The device is left
 * broken, its thread behind; cleanup leaves it what it may still use, and
 * joins it once it did return. Runs last: the loss is for the process.
 */
static void test_lost_ram_thread_left_behind(void)
{
    int uffd = uffd_create(0);
    struct pollfd pfd = { .fd = uffd, .events = POLLIN };
    QemuThread stopper;
    Fixture f;

    if (uffd < 0) {
        g_test_skip("userfaultfd is not usable here");
        return;
    }
    fixture_setup(&f, false, false);
    driver_init(&f, false);
    g_assert_cmpint(madvise(vtest_gpa(MISSING_GPA), 4096, MADV_DONTNEED), ==, 0);
    g_assert_cmpint(uffd_register_missing(uffd, vtest_gpa(MISSING_GPA), 4096), ==, 0);
    vtest_put_desc(&f.q, 0, MISSING_GPA, 8, VRING_DESC_F_NEXT, 1);
    vtest_put_desc(&f.q, 1, BUF_GPA + 0x100, 0x100, VRING_DESC_F_WRITE, 0);
    vtest_publish(&f.q, 0);
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
    /* The thread's read of the chain's buffer is a fault that nobody answers. */
    g_assert_cmpint(poll(&pfd, 1, 5000), ==, 1);
    /*
     * The stop, in a thread of its own so that one that hangs fails the
     * test instead. While the page may still come it waits for the thread;
     * the loss, coming while it waits, releases it.
     */
    qemu_thread_create(&stopper, "lost-stopper", lost_stopper, NULL);
    g_usleep(100000);
    g_assert_cmpuint(__atomic_load_n(&lost_stop_done, __ATOMIC_SEQ_CST), ==, 0);
    guest_ram_set_lost();
    g_assert_true(vtest_wait_uint(&lost_stop_done, 1));
    qemu_thread_join(&stopper);
    g_assert_false(f.dev.vdev.thread_running);
    g_assert_true(f.dev.vdev.thread_abandoned);
    assert_needs_reset(&f);
    /* stop's flush would touch guest RAM under the BQL, maybe beside the thread. */
    g_assert_cmpuint(f.dev.stops, ==, 0);
    /* Never restarted. */
    vtest_vm_set_running(true);
    g_assert_false(f.dev.vdev.thread_running);
    vtest_vm_set_running(false);
    /* Cleanup does not wait either, and frees nothing the thread holds. */
    virtio_device_cleanup(&f.dev.vdev);
    g_assert_true(f.dev.vdev.thread_abandoned);
    g_assert_nonnull(f.dev.vdev.vq);
    g_assert_cmpuint(vtest_used_idx(&f.q), ==, 0);
    /*
     * Here only, the page comes after all (the range unregistered wakes the
     * thread, which reads zeros): the thread returns, and cleanup joins it.
     */
    g_assert_cmpint(uffd_unregister(uffd, vtest_gpa(MISSING_GPA), 4096), ==, 0);
    pfd = (struct pollfd) { .fd = f.dev.vdev.exit_fd, .events = POLLIN };
    g_assert_cmpint(poll(&pfd, 1, 5000), ==, 1);
    vtest_vm_set_running(true);
    close(uffd);
    fixture_teardown(&f);

    /*
     * A thread that was not waiting returns and is joined; stop is still
     * skipped (virtio-net's would write frames into guest RAM, with the BQL).
     */
    fixture_setup(&f, false, false);
    driver_init(&f, false);
    vtest_vm_set_running(false);
    g_assert_false(f.dev.vdev.thread_running);
    g_assert_false(f.dev.vdev.thread_abandoned);
    g_assert_false(virtio_device_is_broken(&f.dev.vdev));
    g_assert_cmpuint(f.dev.stops, ==, 0);
    vtest_vm_set_running(true);
    fixture_teardown(&f);
}

int main(int argc, char **argv)
{
    int ret;

    g_test_init(&argc, &argv, NULL);
    vtest_init();
    g_test_add_func("/virtio-mmio/identity", test_identity);
    g_test_add_func("/virtio-mmio/features", test_features);
    g_test_add_func("/virtio-mmio/config-space", test_config_space);
    g_test_add_func("/virtio-mmio/echo/exits", test_echo_exits);
    g_test_add_func("/virtio-mmio/echo/eventfds", test_echo_eventfds);
    g_test_add_func("/virtio-mmio/vm-stop", test_vm_stop);
    g_test_add_func("/virtio-mmio/hostile/ring-outside-ram", test_ring_outside_ram);
    g_test_add_func("/virtio-mmio/hostile/bad-queue-size", test_bad_queue_size);
    g_test_add_func("/virtio-mmio/hostile/loop-in-thread", test_loop_in_thread);
    g_test_add_func("/virtio-mmio/hostile/driver-ok-without-features-ok",
                    test_driver_ok_without_features_ok);
    g_test_add_func("/virtio-mmio/hostile/live-queue-registers", test_live_queue_registers);
    g_test_add_func("/virtio-mmio/hostile/warn-once", test_warn_once);
    g_test_add_func("/virtio-mmio/migrate/round-trip", test_migrate_round_trip);
    g_test_add_func("/virtio-mmio/migrate/hostile", test_migrate_hostile);
    g_test_add_func("/virtio-mmio/migrate/guest-rings", test_migrate_guest_rings);
    g_test_add_func("/virtio-mmio/migrate/rings-not-read", test_migrate_rings_not_read);
    g_test_add_func("/virtio-mmio/lost-ram/thread-left-behind",
                    test_lost_ram_thread_left_behind);
    ret = g_test_run();
    vtest_cleanup();
    return ret;
}

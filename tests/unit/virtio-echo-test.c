/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The echo device, the fixture and the fake driver of the virtio-mmio tests (virtio-echo-test.h). */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "system/ioport.h"
#include "system/memory.h"
#include "virtio-echo-test.h"
/* ---- The echo device: copies each chain's readable bytes into its writable ones ---- */



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

const VirtIODeviceOps echo_ops = {
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



uint32_t rd(uint64_t off)
{
    return vtest_read(BASE, off);
}

void wr(uint64_t off, uint32_t v)
{
    vtest_write(BASE, off, v);
}

void fixture_setup(Fixture *f, bool ioeventfd, bool irqfd)
{
    memset(f, 0, sizeof(*f));
    f->q = (VirtIOTestQueue) { .index = 0, .num = QSIZE, .desc = DESC_GPA,
                               .avail = AVAIL_GPA, .used = USED_GPA };
    vtest_fakes_reset(ioeventfd, irqfd);
    g_assert_true(virtio_device_init(&f->dev.vdev, &echo_ops, ERRP_ABORT));
    f->mmio = virtio_mmio_create(&f->dev.vdev, BASE, GSI, ERRP_ABORT);
}

void fixture_teardown(Fixture *f)
{
    wr(VIRTIO_MMIO_STATUS, 0);
    virtio_mmio_destroy(f->mmio);
    g_assert_cmpint(vtest_fake.irq_fd, ==, -1);
    virtio_device_cleanup(&f->dev.vdev);
    /* Tables cannot drop a range: start the next test on a fresh one. */
    io_range_table_free(mmio_table);
    mmio_table = io_range_table_new();
}



/* The whole init sequence of a 1.x driver, queue 0 ready, DRIVER_OK. */
void driver_init(Fixture *f, bool event_idx)
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
void driver_send(Fixture *f, unsigned int slot, const char *msg)
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
void driver_queue_setup(Fixture *f, uint32_t num, uint64_t desc, uint64_t avail,
                               uint64_t used)
{
    VirtIOTestQueue q = { .index = 0, .num = num, .desc = desc, .avail = avail,
                          .used = used };

    vtest_queue_setup(BASE, &q);
}

void assert_needs_reset(Fixture *f)
{
    g_assert_cmpuint(rd(VIRTIO_MMIO_STATUS) & VIRTIO_CONFIG_S_NEEDS_RESET, !=, 0);
    g_assert_true(virtio_device_is_broken(&f->dev.vdev));
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The fake virtio-net driver of virtio-net-test.h. */
#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "virtio-net-test.h"
#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>
#include <linux/virtio_ring.h>

#define RXQ_DESC 0x10000
#define TXQ_DESC 0x13000
#define RX_BUFS  0x40000            /* 256 x 2 KiB */
#define TX_BUFS  0x100000           /* 256 x 2 KiB */

uint64_t vnet_rx_buf(unsigned int id)
{
    return RX_BUFS + (uint64_t)(id % 256) * VNET_BUF_LEN;
}

uint64_t vnet_tx_buf(unsigned int id)
{
    return TX_BUFS + (uint64_t)(id % 256) * VNET_BUF_LEN;
}

uint32_t vnet_read(uint64_t off)
{
    return vtest_read(VNET_BASE, off);
}

void vnet_write(uint64_t off, uint32_t val)
{
    vtest_write(VNET_BASE, off, val);
}

void vnet_kick(unsigned int queue)
{
    vnet_write(VIRTIO_MMIO_QUEUE_NOTIFY, queue);
}

bool vnet_broken(void)
{
    return vnet_read(VIRTIO_MMIO_STATUS) & VIRTIO_CONFIG_S_NEEDS_RESET;
}

void vnet_driver_init(VNetDriver *d, unsigned int qnum, uint64_t features)
{
    uint32_t ok = VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
                  VIRTIO_CONFIG_S_FEATURES_OK;

    g_assert_cmpuint(qnum, <=, 256);
    memset(d, 0, sizeof(*d));
    d->rxq = (VirtIOTestQueue) { .index = 0, .num = qnum, .desc = RXQ_DESC,
                                 .avail = RXQ_DESC + 0x1000, .used = RXQ_DESC + 0x2000 };
    d->txq = (VirtIOTestQueue) { .index = 1, .num = qnum, .desc = TXQ_DESC,
                                 .avail = TXQ_DESC + 0x1000, .used = TXQ_DESC + 0x2000 };
    vtest_negotiate(VNET_BASE, features);
    g_assert_cmpuint(vnet_read(VIRTIO_MMIO_STATUS), ==, ok);
    vtest_queue_setup(VNET_BASE, &d->rxq);
    vtest_queue_setup(VNET_BASE, &d->txq);
    vnet_write(VIRTIO_MMIO_STATUS, ok | VIRTIO_CONFIG_S_DRIVER_OK);
    g_assert_cmpuint(vnet_read(VIRTIO_MMIO_STATUS), ==, ok | VIRTIO_CONFIG_S_DRIVER_OK);
}

void vnet_rx_post(VNetDriver *d, unsigned int count, bool kick)
{
    for (unsigned int i = 0; i < count; i++, d->rx_posted++) {
        unsigned int id = d->rx_posted % d->rxq.num;

        vtest_put_desc(&d->rxq, id, vnet_rx_buf(id), VNET_BUF_LEN, VRING_DESC_F_WRITE, 0);
        vtest_publish(&d->rxq, id);
    }
    if (kick) {
        vnet_kick(VIRTIO_NET_RX_QUEUE);
    }
}

void vnet_tx_send(VNetDriver *d, const void *frame, size_t len, bool split, bool kick)
{
    unsigned int id = d->tx_used_descs % d->txq.num;
    uint8_t *buf = vtest_gpa(vnet_tx_buf(id));

    g_assert_cmpuint(VNET_HDR + len, <=, VNET_BUF_LEN);
    memset(buf, 0, VNET_HDR);
    memcpy(buf + VNET_HDR, frame, len);
    if (split) {
        /* Two descriptors, so keep chains on even ids: they never wrap. */
        g_assert_cmpuint(id % 2, ==, 0);
        vtest_put_desc(&d->txq, id, vnet_tx_buf(id), VNET_HDR, VRING_DESC_F_NEXT, id + 1);
        vtest_put_desc(&d->txq, id + 1, vnet_tx_buf(id) + VNET_HDR, len, 0, 0);
        d->tx_used_descs++;
    } else {
        vtest_put_desc(&d->txq, id, vnet_tx_buf(id), VNET_HDR + len, 0, 0);
    }
    vtest_publish(&d->txq, id);
    d->tx_used_descs++;
    if (kick) {
        vnet_kick(VIRTIO_NET_TX_QUEUE);
    }
}

bool vnet_pump_until(bool (*cond)(void *opaque), void *opaque)
{
    gint64 end = g_get_monotonic_time() + VTEST_WAIT_US;

    while (!cond(opaque)) {
        if (g_get_monotonic_time() > end) {
            return false;
        }
        g_main_context_iteration(NULL, FALSE);
        g_usleep(200);
    }
    return true;
}

void vnet_pump_for(unsigned int ms)
{
    gint64 end = g_get_monotonic_time() + ms * 1000;

    while (g_get_monotonic_time() < end) {
        g_main_context_iteration(NULL, FALSE);
        g_usleep(500);
    }
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A fake virtio-net driver on the virtio bench (virtio-test.h), shared by
 * test-virtio-net and test-virtio-net-slirp: one device at VNET_BASE, its
 * RX and TX queues and buffers at fixed places in the bench's guest RAM,
 * and a way to run the main loop (the test thread holds the BQL, as the
 * main thread does, and polls without it).
 */
#ifndef TESTS_UNIT_VIRTIO_NET_TEST_H
#define TESTS_UNIT_VIRTIO_NET_TEST_H

#include <stdbool.h>
#include <stdint.h>
#include "hw/virtio/virtio-net.h"
#include "virtio-test.h"

#define VNET_BASE 0xfeb00000ULL
#define VNET_GSI 5
#define VNET_BUF_LEN 0x800          /* each posted RX buffer, each TX buffer */
#define VNET_HDR VIRTIO_NET_HDR_LEN

typedef struct VNetDriver {
    VirtIOTestQueue rxq, txq;
    unsigned int rx_posted;         /* RX buffers posted so far */
    unsigned int tx_used_descs;     /* TX descriptors filled so far */
} VNetDriver;

/* Guest-physical address of the buffer behind RX / TX descriptor @id. */
uint64_t vnet_rx_buf(unsigned int id);
uint64_t vnet_tx_buf(unsigned int id);

uint32_t vnet_read(uint64_t off);
void vnet_write(uint64_t off, uint32_t val);
void vnet_kick(unsigned int queue);
bool vnet_broken(void);

/* Negotiates @features, both queues of @qnum entries ready, DRIVER_OK. */
void vnet_driver_init(VNetDriver *d, unsigned int qnum, uint64_t features);
/* Posts @count RX buffers of VNET_BUF_LEN (one descriptor each). */
void vnet_rx_post(VNetDriver *d, unsigned int count, bool kick);
/*
 * Offers @frame behind a zero header (in one descriptor, or header and
 * frame in two if @split).
 */
void vnet_tx_send(VNetDriver *d, const void *frame, size_t len, bool split, bool kick);

/* Runs the main loop until @cond(@opaque) or VTEST_WAIT_US; false on timeout. */
bool vnet_pump_until(bool (*cond)(void *opaque), void *opaque);
/* Runs the main loop for @ms with nothing expected. */
void vnet_pump_for(unsigned int ms);

#endif

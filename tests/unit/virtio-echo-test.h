/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The virtio-mmio tests' bench on top of virtio-test.h: a small echo
 * device (copies each chain's readable bytes into its writable ones), the
 * transport at BASE, and a fake 1.x driver (virtio-echo-test.c). Shared by
 * test-virtio-mmio.c (registers, data path, hostile drivers) and
 * test-virtio-mmio-migrate.c (the transport's section).
 */
#ifndef TESTS_UNIT_VIRTIO_ECHO_TEST_H
#define TESTS_UNIT_VIRTIO_ECHO_TEST_H

#include "hw/virtio/virtio.h"
#include "hw/virtio/virtio-mmio.h"
#include "virtio-test.h"
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

typedef struct EchoDevice {
    VirtIODevice vdev;
    unsigned int notifies;      /* queue_notify calls, atomic */
    unsigned int echoed;        /* chains returned, atomic */
    unsigned int starts, stops, resets;  /* BQL (the test thread) */
    uint8_t config[8];
} EchoDevice;

extern const VirtIODeviceOps echo_ops;

/* An echo device on a transport at BASE, queue 0 described by @q. */
typedef struct Fixture {
    EchoDevice dev;
    VirtIOMMIOState *mmio;
    VirtIOTestQueue q;          /* queue 0 */
} Fixture;

#define STATUS_FEATURES_DONE (VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER | \
                              VIRTIO_CONFIG_S_FEATURES_OK)

/* Registers of the transport at BASE. */
uint32_t rd(uint64_t off);
void wr(uint64_t off, uint32_t v);
/* A fresh fake KVM (eventfd capabilities as given), device and transport. */
void fixture_setup(Fixture *f, bool ioeventfd, bool irqfd);
void fixture_teardown(Fixture *f);
/* The whole init sequence of a 1.x driver, queue 0 ready, DRIVER_OK. */
void driver_init(Fixture *f, bool event_idx);
/* Offers one out+in chain with @msg in descriptors 2*slot, 2*slot+1. */
void driver_send(Fixture *f, unsigned int slot, const char *msg);
/* The device marked itself NEEDS_RESET and broken. */
void assert_needs_reset(Fixture *f);
/* A hostile queue 0 setup: size and ring addresses as given. */
void driver_queue_setup(Fixture *f, uint32_t num, uint64_t desc, uint64_t avail,
                        uint64_t used);

#endif

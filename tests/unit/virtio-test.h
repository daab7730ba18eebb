/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A bench for virtio device tests without a guest: 2 MiB of real guest RAM
 * at 0 (system/memory.c), a fake KVM (records ioeventfd/irqfd assignments
 * and KVM_IRQ_LINE levels; capabilities switched per test), a fake run
 * state, and a fake driver that programs a virtio-mmio transport through
 * mmio_table, as a vCPU's MMIO exit would, and lays out split rings.
 * Link with the hw/virtio sources, system/memory.c and system/ioport.c.
 */
#ifndef TESTS_UNIT_VIRTIO_TEST_H
#define TESTS_UNIT_VIRTIO_TEST_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"
#include "migration/vmstate.h"

#define VTEST_RAM_SIZE (2 * MiB)
#define VTEST_WAIT_US (5 * G_USEC_PER_SEC)

/* What the fakes saw; tests read it and set the capabilities. */
typedef struct VirtIOTestFakes {
    bool ioeventfd_cap;
    bool irqfd_cap;
    int ioeventfd_fd[8];        /* by datamatch (queue index); -1: not assigned */
    uint64_t ioeventfd_addr;    /* the last assignment's */
    unsigned int ioeventfd_len;
    int irq_fd, resample_fd;    /* -1: no irqfd */
    int irqfd_gsi;
    int line_level;             /* last KVM_IRQ_LINE level (atomic) */
    unsigned int line_calls;    /* KVM_IRQ_LINE calls (atomic) */
    bool running;               /* runstate_is_running() */
    /* The last vmstate_register() call. */
    const VMStateDescription *vmsd;
    void *vmsd_opaque;
    uint32_t vmsd_instance;
    /* Every vmstate_register() call since the last reset, in order. */
    struct {
        const char *idstr;
        uint32_t instance;
        const VMStateDescription *vmsd;
        void *opaque;
    } sections[16];
    unsigned int n_sections;
} VirtIOTestFakes;

extern VirtIOTestFakes vtest_fake;

/* Once in main(): guest RAM, the fake KVM, an empty mmio_table. */
void vtest_init(void);
void vtest_cleanup(void);
/* Before creating a transport: forget what the fakes saw, set the KVM capabilities. */
void vtest_fakes_reset(bool ioeventfd, bool irqfd);
/* Runs the VM change state handlers, as vm_start()/vm_stop() do. */
void vtest_vm_set_running(bool running);
/* The last registered section, saved into a new buffer (g_free it). */
uint8_t *vtest_section_save(size_t *len);
/* Loads @data into the last registered section. */
bool vtest_section_load(const uint8_t *data, size_t len, Error **errp);
/*
 * The same for the most recent registration of section @idstr (a device
 * that registers more than one, or several devices), loaded at @version
 * (0: the section's own).
 */
uint8_t *vtest_section_save_named(const char *idstr, size_t *len);
bool vtest_section_load_named(const char *idstr, int version, const uint8_t *data, size_t len,
                              Error **errp);

/* ---- The fake driver ---- */

uint8_t *vtest_gpa(uint64_t gpa);
uint32_t vtest_read(hwaddr base, uint64_t off);
void vtest_write(hwaddr base, uint64_t off, uint32_t val);
/* Reset, ACKNOWLEDGE, DRIVER, @features, FEATURES_OK (which the device may refuse). */
void vtest_negotiate(hwaddr base, uint64_t features);

/* One queue as the driver sees it. */
typedef struct VirtIOTestQueue {
    unsigned int index;
    uint32_t num;               /* what QueueNum gets (may be hostile) */
    uint64_t desc, avail, used; /* ring addresses (may be hostile) */
    uint16_t avail_idx;         /* the driver's next avail idx */
} VirtIOTestQueue;

/* Zeroes the rings (if in RAM) and programs the queue; QueueReady = 1. */
void vtest_queue_setup(hwaddr base, VirtIOTestQueue *q);
void vtest_put_desc(VirtIOTestQueue *q, unsigned int i, uint64_t addr, uint32_t len,
                    uint16_t flags, uint16_t next);
/* Ring entry, then the index, with release order (what a driver does). */
void vtest_publish(VirtIOTestQueue *q, uint16_t head);
uint16_t vtest_used_idx(VirtIOTestQueue *q);
/* The used ring's entry @i: id and len. */
void vtest_used_elem(VirtIOTestQueue *q, uint16_t i, uint32_t *id, uint32_t *len);
void vtest_put16(uint64_t gpa, uint16_t val);

/* Wait (up to VTEST_WAIT_US) for a device thread's progress. */
bool vtest_wait_used(VirtIOTestQueue *q, uint16_t want);
bool vtest_wait_uint(unsigned int *p, unsigned int want);

#endif

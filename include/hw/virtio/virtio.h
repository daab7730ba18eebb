/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The virtio device core (virtio 1.x only): status and feature
 * negotiation, config space, the queues, interrupts through the transport,
 * "broken" handling (DEVICE_NEEDS_RESET), and a device thread that runs
 * the queues outside the BQL.
 *
 * A device model embeds a VirtIODevice, fills a VirtIODeviceOps and calls
 * virtio_device_init(); a transport (virtio-mmio.c) plugs it in. The
 * driver's kicks reach the device thread through one eventfd per queue
 * (the "host notifier"): KVM signals it directly (ioeventfd) or the
 * transport does on an MMIO exit. The thread runs while the driver has set
 * DRIVER_OK and the VM runs; it is joined before anything under the BQL
 * touches the queues again (reset, VM stop, migration).
 *
 * Lock rule: the device thread never takes the BQL, and never waits for
 * anything a BQL holder may wait for: the BQL holder joins it.
 */
#ifndef HW_VIRTIO_VIRTIO_H
#define HW_VIRTIO_VIRTIO_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include "qemu/typedefs.h"
#include "qemu/thread.h"
#include "hw/virtio/virtqueue.h"

/* InterruptStatus bits (virtio-mmio; the same meaning as PCI's ISR). */
#define VIRTIO_ISR_VRING    0x1
#define VIRTIO_ISR_CONFIG   0x2

/* VendorID: QEMU's ("QEMU"), so guests see what they see under QEMU. */
#define VIRTIO_VENDOR_ID_QEMU 0x554d4551

/* Ring features the core implements, offered with every device. */
#define VIRTIO_CORE_FEATURES ((1ULL << 32) /* VERSION_1 */ | \
                              (1ULL << 28) /* RING_F_INDIRECT_DESC */ | \
                              (1ULL << 29) /* RING_F_EVENT_IDX */)

typedef struct VirtIODevice VirtIODevice;
typedef struct VMChangeStateEntry VMChangeStateEntry;
typedef struct VirtIOMMIOState VirtIOMMIOState;

typedef struct VirtIODeviceOps {
    const char *name;           /* "virtio-net-device": messages */
    const char *thread_name;    /* the device thread's name (<= 15 chars) */
    uint16_t device_id;         /* DeviceID (VIRTIO_ID_NET, ...) */
    unsigned int num_queues;
    uint16_t queue_size;        /* QueueNumMax of each queue: power of two */
    uint32_t config_size;       /* bytes of device config space */
    uint64_t features;          /* device-type features offered */

    /* ---- Control plane: BQL held, device thread not running ---- */
    /* Refresh vdev->config before the driver reads it (may be NULL). */
    void (*get_config)(VirtIODevice *vdev, uint8_t *config);
    /* The driver wrote vdev->config (may be NULL: read-only config). */
    void (*set_config)(VirtIODevice *vdev, const uint8_t *config);
    /* Device reset: forget everything the driver set up (may be NULL). */
    void (*reset)(VirtIODevice *vdev);
    /*
     * The device is about to run (DRIVER_OK and the VM running): attach
     * backends. On failure the device is marked broken. May be NULL.
     */
    bool (*start)(VirtIODevice *vdev, Error **errp);
    /* The device thread is joined; the device runs no more (may be NULL). */
    void (*stop)(VirtIODevice *vdev);

    /* ---- Machine init, BQL ---- */
    /*
     * Registers the device-state section of this device behind the
     * virtio-mmio transport @mmio (QEMU's layout and name for the device
     * type). NULL: the device has no migratable state of its own.
     */
    void (*register_mmio_state)(VirtIOMMIOState *mmio);

    /* ---- Device thread, no BQL ---- */
    /*
     * The driver kicked @vq, or the device thread just started (each ready
     * queue gets one call then, for kicks that came while stopped).
     */
    void (*queue_notify)(VirtIODevice *vdev, VirtQueue *vq);
} VirtIODeviceOps;

/*
 * Raises @isr_bits in the transport's InterruptStatus and the interrupt
 * line. Any thread.
 */
typedef void VirtIORaiseFn(void *transport, uint32_t isr_bits);

struct VirtIODevice {
    const VirtIODeviceOps *ops;
    char *name;                 /* for messages: "virtio-net-device at 0xfeb00000" */

    /* Control plane (BQL); status is read atomically by any thread. */
    uint8_t status;             /* as accepted; NEEDS_RESET comes from broken */
    uint64_t host_features;     /* offered; fixed once plugged */
    uint64_t guest_features;    /* the driver's; binding once FEATURES_OK */
    uint8_t *config;            /* ops->config_size bytes */
    VirtQueue *vq;              /* ops->num_queues */
    int *notifier_fd;           /* host notifier eventfd per queue; fixed */

    /* Any thread, atomic. */
    uint32_t config_generation;
    int broken;                 /* the guest broke the device: NEEDS_RESET */
    int broken_warned;          /* the one warning was printed */

    /* The transport (set when plugged; fixed after). */
    VirtIORaiseFn *raise;
    void *transport;

    /* The device thread (BQL). */
    QemuThread thread;
    bool thread_running;
    int stop_fd;                /* eventfd: tells the thread to return */
    int exit_fd;                /* eventfd: the thread writes it as it returns */
    /*
     * Stopped without a join: guest RAM was lost while the thread ran, and
     * it may wait on a missing page forever. It is never restarted, and
     * what it may still use is never freed (virtio_device_thread_stop).
     */
    bool thread_abandoned;
    bool vm_running;            /* as the last VM change state said */
    VMChangeStateEntry *vm_change;
};

/*
 * virtio_device_init: set up @vdev for @ops (queues, config space, host
 * notifiers, VM run-state tracking). host_features starts as ops->features
 * plus VIRTIO_CORE_FEATURES; the device may change it before plugging.
 */
bool virtio_device_init(VirtIODevice *vdev, const VirtIODeviceOps *ops, Error **errp);
void virtio_device_cleanup(VirtIODevice *vdev);

VirtQueue *virtio_get_queue(VirtIODevice *vdev, unsigned int n);
bool virtio_has_feature(const VirtIODevice *vdev, unsigned int bit);
/* Status as the driver reads it: with NEEDS_RESET if broken. Any thread. */
uint8_t virtio_device_get_status(VirtIODevice *vdev);

/* ---- Called by the transport, BQL held ---- */
/* A driver's status write: negotiation, start/stop, and reset for 0. */
void virtio_device_set_status(VirtIODevice *vdev, uint8_t val);
void virtio_device_reset(VirtIODevice *vdev);
/* QueueReady=1 for queue @n: check and map its rings (broken on failure). */
bool virtio_queue_enable(VirtIODevice *vdev, unsigned int n);
void virtio_queue_disable(VirtIODevice *vdev, unsigned int n);
/* Stop (join) or restart the device thread as status and run state say. */
void virtio_device_update_running(VirtIODevice *vdev);

/*
 * The core's part of a device's migrated state (the transport's section
 * carries it with the queues). BQL, device thread stopped.
 */
typedef struct VirtIODeviceState {
    uint8_t status;             /* without NEEDS_RESET: that is @broken */
    uint64_t guest_features;
    uint32_t config_generation;
    bool broken;
} VirtIODeviceState;

void virtio_device_get_state(VirtIODevice *vdev, VirtIODeviceState *ds, VirtQueueState *qs);
/*
 * virtio_device_check_state: would @ds and the ops->num_queues entries of
 * @qs (from a stream) be a state this device can run? Known status bits,
 * features it offers (VERSION_1 once FEATURES_OK), DRIVER_OK only with
 * FEATURES_OK, every queue (virtqueue_check_state). Only what the stream
 * alone says: reads no guest RAM.
 */
bool virtio_device_check_state(VirtIODevice *vdev, const VirtIODeviceState *ds,
                               const VirtQueueState *qs, Error **errp);
/*
 * Applies a checked state; the thread starts when the VM runs. For a
 * running device (DRIVER_OK, not broken), unless guest RAM may still be
 * missing, the rings in guest RAM are read (virtqueue_check_rings): the
 * guest wrote them, so if they disagree the device is loaded broken
 * (NEEDS_RESET, one warning naming the device and the field), not refused.
 */
void virtio_device_set_state(VirtIODevice *vdev, const VirtIODeviceState *ds,
                             const VirtQueueState *qs);

/* ---- Any thread ---- */
/* Wakes the device thread for queue @n, as a driver's kick does. */
void virtio_queue_kick(VirtIODevice *vdev, unsigned int n);
/* Interrupts the driver for @vq if it wants one (see virtqueue_should_notify). */
void virtio_notify(VirtIODevice *vdev, VirtQueue *vq);
/* The device changed its config: new generation, config interrupt. */
void virtio_notify_config(VirtIODevice *vdev);
/*
 * virtio_error: the guest broke the device. Every queue stops, status
 * gets NEEDS_RESET (with a config interrupt once DRIVER_OK), and one line
 * goes to stderr the first time. Only a device reset brings it back.
 */
void virtio_error(VirtIODevice *vdev, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
bool virtio_device_is_broken(VirtIODevice *vdev);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * virtio-net (device id 1) on the virtio core: one receive queue (0), one
 * transmit queue (1), config space with the MAC and the link status.
 * Offered: VIRTIO_NET_F_MAC, VIRTIO_NET_F_STATUS, plus what the core
 * implements (VIRTIO_F_VERSION_1, indirect descriptors, event idx); no
 * offloads, no mergeable receive buffers, no control queue. Every frame
 * carries the 12-byte virtio 1.x header (struct virtio_net_hdr_v1).
 *
 * Two threads meet here. The device thread (no BQL, see virtio.h) owns the
 * queues; the net layer and its backend (slirp) run under the BQL in the
 * main loop (see net/net.h). Frames cross between them through two bounded
 * rings under one leaf lock:
 *
 *   guest TX chain --device thread: copy, push used--> tx ring
 *        --doorbell eventfd--> main loop: net_send_packet_async() to the peer
 *   peer frame --main loop: receive() copies--> rx ring
 *        --virtio_queue_kick(RX)--> device thread: into a posted rx buffer
 *
 * A full tx ring stops the device thread from taking more chains until the
 * main loop has drained it (then it kicks the TX queue); a full rx ring, or
 * a frame that found no posted buffer, makes receive() say "not now", so the
 * net layer queues (bounded) and the device thread rings the doorbell for a
 * net_flush_queued_packets() once the guest posts buffers again.
 */
#ifndef HW_VIRTIO_VIRTIO_NET_H
#define HW_VIRTIO_VIRTIO_NET_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include "qemu/typedefs.h"
#include "hw/virtio/virtio.h"
#include "hw/virtio/virtio-mmio.h"
#include "net/net.h"

#define VIRTIO_NET_RX_QUEUE     0
#define VIRTIO_NET_TX_QUEUE     1
#define VIRTIO_NET_QUEUE_SIZE   256
/* The virtio 1.x header (flags, gso_type, hdr_len, gso_size, csum_start, csum_offset, num_buffers). */
#define VIRTIO_NET_HDR_LEN      12
/* The largest frame we carry either way; a longer TX chain breaks the device. */
#define VIRTIO_NET_MAX_FRAME    65535
/* Config space as offered: mac[6], status (le16). */
#define VIRTIO_NET_CONFIG_SIZE  8

/*
 * Bounds of each ring between the threads: frames, and bytes (checked
 * before adding, so a ring holds at most VIRTIO_NET_RING_BYTES plus one
 * frame).
 */
#define VIRTIO_NET_RING_FRAMES  64
#define VIRTIO_NET_RING_BYTES   (256 * 1024)

/* -device virtio-net-device,netdev=ID[,mac=MAC][,id=ID], or a -nic. */
typedef struct VirtIONetConf {
    char *id;                   /* id=, or NULL: "virtio-net-device.N" */
    char *netdev;               /* netdev=, or NULL: a NIC without a peer */
    MACAddr mac;
    bool mac_given;             /* else QEMU's next default address */
    char *opt;                  /* "-device virtio-net-device,...", for messages */
} VirtIONetConf;

/* A frame on its way between the threads. */
typedef struct VirtIONetFrame {
    size_t len;
    uint8_t data[];
} VirtIONetFrame;

/* A bounded FIFO of frames; only under VirtIONet.ring_lock. */
typedef struct VirtIONetRing {
    VirtIONetFrame *slot[VIRTIO_NET_RING_FRAMES];
    unsigned int head;          /* oldest frame */
    unsigned int count;
    size_t bytes;               /* sum of the frames' len */
} VirtIONetRing;

/* The device's own migrated state (virtio-net-mmio-state.c puts it in QEMU's layout). */
typedef struct VirtIONetMigState {
    uint8_t mac[6];
    uint16_t status;
} VirtIONetMigState;

typedef struct VirtIONet {
    VirtIODevice vdev;

    /* Fixed at creation. */
    NetClientState *nc;         /* our NIC client; its peer is the backend (BQL) */
    MACAddr conf_mac;           /* what the command line gave; reset goes back to it */
    int doorbell_fd;            /* eventfd: device thread -> main loop */
    guint doorbell_watch;       /* its main-loop source */

    /* Config space and the main-loop side (BQL). */
    uint8_t mac[6];
    uint16_t status;            /* VIRTIO_NET_S_LINK_UP */
    bool rx_enabled;            /* the device runs: receive() may take frames */
    bool tx_waiting;            /* a frame waits at the peer for our sent callback */

    /* Shared between the device thread and the BQL holder (ring_lock, a leaf). */
    GMutex ring_lock;
    VirtIONetRing tx;           /* frames the guest sent, for the main loop */
    VirtIONetRing rx;           /* frames for the guest, for the device thread */
    bool tx_stalled;            /* device thread stopped taking TX chains: tx was full */
    bool rx_stalled;            /* rx's first frame found no posted buffer */
    bool rx_refused;            /* receive()/can_receive() said no: flush when there is room */

    /* Counters (atomic; written by the thread that does the work). */
    uint64_t tx_frames;         /* handed to the peer */
    uint64_t rx_frames;         /* written into guest buffers */
    uint64_t rx_dropped;        /* did not fit the guest's buffer */
    uint64_t tx_dropped;        /* empty frames */
} VirtIONet;

/*
 * virtio_net_create: a device for @conf, paired with its backend and with
 * its "virtio-net" section registered. Errors are QEMU's ("Property
 * 'virtio-net-device.netdev' can't find value 'x'"). BQL, before machine
 * init (which puts it behind a transport).
 */
VirtIONet *virtio_net_create(const VirtIONetConf *conf, Error **errp);
/* Tests and teardown: after the transport is destroyed. BQL. */
void virtio_net_destroy(VirtIONet *n);

/*
 * Migration, BQL held, device thread stopped. @vdev is a virtio-net's
 * (vdev->ops->device_id == VIRTIO_ID_NET). _check refuses what this device
 * cannot be; _apply (after a passed check) cannot fail.
 */
void virtio_net_mig_save(VirtIODevice *vdev, VirtIONetMigState *m);
bool virtio_net_mig_check(VirtIODevice *vdev, const VirtIONetMigState *m, Error **errp);
void virtio_net_mig_apply(VirtIODevice *vdev, const VirtIONetMigState *m);

/*
 * virtio_net_mmio_state_register: the device-state section of the
 * virtio-net behind @mmio, in QEMU's layout and under QEMU's name
 * ("virtio-mmio@<base>/virtio-net", instance 0, version 11). Machine
 * init, BQL, once per transport. The machine keeps it for the process's
 * life; virtio_net_mmio_state_unregister() is for a transport that goes
 * away first (tests).
 */
typedef struct VirtIONetMMIOQemu VirtIONetMMIOQemu;
void virtio_net_mmio_state_register(VirtIOMMIOState *mmio);
/* The same, returning what virtio_net_mmio_state_unregister() takes. */
VirtIONetMMIOQemu *virtio_net_mmio_state_add(VirtIOMMIOState *mmio);
void virtio_net_mmio_state_unregister(VirtIONetMMIOQemu *q);

/*
 * virtio_net_conf_parse: the options of one -device virtio-net-device
 * (driver= already checked) with QEMU's messages ("Property
 * 'virtio-net-device.mac' doesn't take value 'zz'"). Creates nothing.
 */
bool virtio_net_conf_parse(QemuOpts *opts, VirtIONetConf *conf, Error **errp);
void virtio_net_conf_free(VirtIONetConf *conf);
/* -device virtio-net-device,help */
void virtio_net_print_help(void);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * virtio-blk (device id 2) on the virtio core, over a BlockBackend of the
 * block layer (include/block/block.h). Requests: IN, OUT, FLUSH, GET_ID,
 * DISCARD and WRITE_ZEROES; features as QEMU 7.2 offers them for a
 * virtio-blk-device (docs/devel/virtio.md, "virtio-blk").
 *
 * Three kinds of thread meet here:
 *
 *   device thread   pops chains, checks them, hands each request to a
 *                   worker (adjacent reads or writes of one pass merged
 *                   into one job); pushes finished requests to the used
 *                   ring
 *   workers         (a small pool) run the blocking blk_* call of one
 *                   request or merged job, then queue it as done and kick
 *                   its queue
 *   main loop (BQL) the control plane, and the werror/rerror actions
 *                   (blk_error_action needs the BQL): workers ring a
 *                   doorbell eventfd for it
 *
 *   guest chain --device thread: check--> worker: blk_preadv/pwritev/...
 *        --done list, kick--> device thread: status byte, used ring, irq
 *
 * A request lives in exactly one place at a time: a worker's queue (alone
 * or in the merged job its head leads), the done list, or the held list
 * (failed under werror/rerror=stop, retried alone when the VM runs
 * again); between its pop and its submission, in the device thread's run,
 * which is submitted before the pass that popped it ends. Before the device state is saved the stop hook
 * waits for every worker and pushes what is done (the drain), so the only
 * requests a stopped device can still own are held ones (and those a
 * migration brought that have not run yet): the device state carries them
 * (virtio-blk-held.c).
 */
#ifndef HW_VIRTIO_VIRTIO_BLK_H
#define HW_VIRTIO_VIRTIO_BLK_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include "qemu/typedefs.h"
#include "block/block.h"
#include "qemu/worker-pool.h"
#include "hw/virtio/virtio.h"
#include "hw/virtio/virtio-mmio.h"
#include "migration/vmstate.h"

/*
 * QueueNumMax as QEMU's virtio-mmio says it (VIRTQUEUE_MAX_SIZE); seg_max
 * is QEMU's queue-size default (256) less two (the header and the status).
 */
#define VIRTIO_BLK_QUEUE_SIZE   1024
#define VIRTIO_BLK_SEG_MAX      254
/* The legacy geometry QEMU 7.2 shows for a raw image: 16 heads, 63 sectors a track. */
#define VIRTIO_BLK_HEADS        16
#define VIRTIO_BLK_SECS         63
#define VIRTIO_BLK_MAX_CYLS     16383
/* Config space as offered: struct virtio_blk_config up to unused1[3]. */
#define VIRTIO_BLK_CONFIG_SIZE  60
/* The serial GET_ID returns: at most 20 bytes, not NUL-terminated when full. */
#define VIRTIO_BLK_ID_BYTES     20
/* QEMU's max-discard-sectors and max-write-zeroes-sectors defaults. */
#define VIRTIO_BLK_MAX_DISCARD_SECTORS  4194303
/*
 * Worker threads per device, each with its own queue (requests go round
 * robin): one per request of a queue depth of 32, or storage that serves
 * requests in parallel sees at most this many at once (4 kept random reads
 * at QD32 at 0.7x and sequential writes at 0.3x QEMU 7.2's, whose
 * aio=threads pool grows to 64; docs/benchmarks.md, issue 39).
 */
#define VIRTIO_BLK_WORKERS      32
/* Queues a device may have (num-queues=): virtio-mmio's migration bound. */
#define VIRTIO_BLK_MAX_QUEUES   16

/* -device virtio-blk-device,drive=ID[,serial=,logical_block_size=,...] */
typedef struct VirtIOBlkConf {
    char *id;                   /* id=, or NULL */
    char *drive;                /* drive=: a -drive id or a node name (required) */
    char *serial;               /* serial=, or NULL: GET_ID answers empty */
    uint32_t logical_block_size;        /* power of two, 512 B .. 2 MiB */
    uint32_t physical_block_size;       /* >= logical */
    uint16_t num_queues;
    char *opt;                  /* "-device virtio-blk-device,...", for messages */
} VirtIOBlkConf;

typedef struct VirtIOBlockReq VirtIOBlockReq;

typedef struct VirtIOBlock {
    VirtIODevice vdev;
    VirtIODeviceOps ops;        /* the template with this device's num_queues; fixed */

    /* Fixed at creation. */
    BlockBackend *blk;
    VirtIOBlkConf conf;
    bool read_only;
    WorkerPool *pool;
    int doorbell_fd;            /* eventfd: workers -> main loop (error actions) */
    guint doorbell_watch;

    /* Shared between workers, the device thread and the BQL holder (lock, a leaf). */
    GMutex lock;
    GQueue done;                /* VirtIOBlockReq: finished, status set, not yet pushed */
    GQueue held;                /* VirtIOBlockReq: failed with action STOP, for a retry */
    /*
     * VirtIOBlkLoaded: chains a migration stream brought as in flight (the
     * source's held requests), for the device thread to take before it
     * pops new ones. Not counted in in_flight until it takes them.
     */
    GQueue loaded;
    GQueue events;              /* VirtIOBlkEvent: error actions for the main loop */

    /* Disk size in 512-byte sectors: written under the BQL, read by the device thread (atomic). */
    uint64_t capacity;
    /* Config's writeback: the driver's (CONFIG_WCE), else the drive's cache mode (atomic). */
    int writeback;

    /* The device thread (or the BQL holder while it is joined). */
    unsigned int next_worker;   /* round-robin over the pool */
    /* Requests popped and not yet pushed or dropped (atomic: any thread reads it). */
    unsigned int in_flight;

    /* Counters (atomic). */
    uint64_t reads, writes, flushes, errors;
} VirtIOBlock;

/*
 * virtio_blk_create: a device for @conf on the backend @conf->drive of
 * @bl, with QEMU's messages ("drive property not set", "Property
 * 'virtio-blk-device.drive' can't find value 'x'", "Drive 'd0' is already
 * in use by another device"). BQL, before machine init.
 */
VirtIOBlock *virtio_blk_create(BlockLayer *bl, const VirtIOBlkConf *conf, Error **errp);
/* Tests and teardown: after the transport is destroyed. BQL. */
void virtio_blk_destroy(VirtIOBlock *b);

/* virtio-blk.c's part of creation, for virtio-blk-conf.c: @b's conf, blk, read_only set. */
bool virtio_blk_init(VirtIOBlock *b, Error **errp);
void virtio_blk_fini(VirtIOBlock *b);

/*
 * virtio_blk_conf_parse: the options of one -device virtio-blk-device
 * (driver= already checked), checked with QEMU's messages. Creates nothing.
 */
bool virtio_blk_conf_parse(QemuOpts *opts, VirtIOBlkConf *conf, Error **errp);
void virtio_blk_conf_free(VirtIOBlkConf *conf);
void virtio_blk_print_help(void);

/*
 * Migration, BQL held, device thread stopped and drained. Requests held
 * for a retry (werror=stop) move with the device state, in QEMU's list
 * (virtio-blk-held.c): a section embeds a VirtIOBlkInFlight, lists it as
 * VMSTATE_CUSTOM(..., virtio_blk_vmstate_inflight) and calls:
 *   save  _count (the chains each queue keeps in use) before the fields
 *   load  _check (every record against the queues and guest RAM, nothing
 *         applied), the queues' load, then _apply (cannot fail)
 */
typedef struct VirtIOBlkInFlight {
    VirtIOBlock *b;                     /* fixed */
    const uint32_t *num_queues;         /* fixed: where the stream's queue count is loaded */
    GPtrArray *records;                 /* staging (BQL): the records as read */
    GPtrArray *checked;                 /* staging (BQL): their chains, checked */
} VirtIOBlkInFlight;

extern const VMStateCustom virtio_blk_vmstate_inflight;
void virtio_blk_inflight_init(VirtIOBlkInFlight *s, VirtIOBlock *b, const uint32_t *num_queues);
/* Forgets what a load staged. */
void virtio_blk_inflight_reset(VirtIOBlkInFlight *s);
/* @inuse (a queue count of entries): requests in flight per queue; false if one is not carried. */
bool virtio_blk_inflight_count(VirtIOBlkInFlight *s, uint16_t *inuse, Error **errp);
/* @queue_num: the stream's queue sizes. @inuse: what the queues must keep in use. */
bool virtio_blk_inflight_check(VirtIOBlkInFlight *s, const uint32_t *queue_num,
                               uint16_t *inuse, Error **errp);
void virtio_blk_inflight_apply(VirtIOBlkInFlight *s);

/* The config space as the driver reads it (VIRTIO_BLK_CONFIG_SIZE bytes). */
void virtio_blk_mig_config(VirtIODevice *vdev, uint8_t *config);
/* Config's writeback byte as the driver left it (off: every write goes through FUA). */
void virtio_blk_mig_set_writeback(VirtIODevice *vdev, bool on);

/*
 * virtio_blk_mmio_state_register: the device-state section of the
 * virtio-blk behind @mmio, in QEMU's layout and under QEMU's name
 * ("virtio-mmio@<base>/virtio-blk", instance 0, version 2). Machine init,
 * BQL, once per transport.
 */
void virtio_blk_mmio_state_register(VirtIOMMIOState *mmio);

#endif

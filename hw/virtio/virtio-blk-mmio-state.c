/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A virtio-blk behind virtio-mmio, in the section QEMU 7.2 sends for it:
 * "virtio-mmio@<base, 16 hex digits>/virtio-blk", instance 0, version 2,
 * one field "virtio": QEMU's generic head (virtio-mmio-qemu.h) with a
 * 57-byte config cache, then virtio-blk's own part, the requests QEMU had
 * in flight (each a 1 byte and the request, then a 0 byte), then the
 * generic subsections. Learned from QEMU 7.2's streams of a microvm
 * guest, paused, after the firmware's blkverify ran, and stopped by
 * werror=stop or rerror=stop with requests held (docs/devel/qemu-interop.md,
 * "virtio-blk").
 *
 * We drain before saving, so the only requests in flight are those held
 * for a retry: they go in QEMU's list, and a stream's come back held
 * (virtio-blk-held.c). BQL held, device thread stopped, for both
 * directions.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/virtio/virtio-blk.h"
#include "virtio-mmio-qemu.h"
#include <linux/virtio_ids.h>

/* The config cache QEMU 7.2 sends (up to write_zeroes_may_unmap); later QEMUs send more. */
#define QEMU_BLK_CONFIG_LEN     57
#define QEMU_BLK_CONFIG_MAX     128
#define QEMU_BLK_WRITEBACK      32      /* offset of the writeback byte */

typedef struct VirtIOBlkMMIOQemu {
    QemuVirtioImage img;        /* first: the shared subsections see it at offset 0 */
    VirtIOBlkInFlight reqs;     /* virtio-blk's own part: the requests in flight */
} VirtIOBlkMMIOQemu;

/* The shared head and subsections address the image through the device's struct. */
QEMU_BUILD_BUG_ON(offsetof(VirtIOBlkMMIOQemu, img) != 0);

static bool virtio_blk_qemu_pre_save(void *opaque, Error **errp)
{
    VirtIOBlkMMIOQemu *q = opaque;
    VirtIODevice *vdev = q->img.vdev;
    uint8_t config[VIRTIO_BLK_CONFIG_SIZE];

    if (!virtio_blk_inflight_count(&q->reqs, q->img.inuse, errp) ||
        !qemu_virtio_image_save(&q->img, vdev->ops->num_queues, 0, errp)) {
        return false;
    }
    virtio_blk_mig_config(vdev, config);
    q->img.config_len = QEMU_BLK_CONFIG_LEN;
    memcpy(q->img.config, config, QEMU_BLK_CONFIG_LEN);
    return true;
}

static bool virtio_blk_qemu_pre_load(void *opaque, Error **errp)
{
    VirtIOBlkMMIOQemu *q = opaque;

    qemu_virtio_image_pre_load(&q->img);
    virtio_blk_inflight_reset(&q->reqs);
    return true;
}

static bool virtio_blk_qemu_post_load(void *opaque, int version_id, Error **errp)
{
    VirtIOBlkMMIOQemu *q = opaque;
    VirtIODevice *vdev = q->img.vdev;
    uint32_t queue_num[VIRTIO_BLK_MAX_QUEUES] = { 0 };

    /* The stream's queue sizes, where it has the device's queues (the image's load checks). */
    for (unsigned int i = 0; i < MIN(q->img.num_queues, vdev->ops->num_queues); i++) {
        queue_num[i] = q->img.vq[i].num;
    }
    if (!virtio_blk_inflight_check(&q->reqs, queue_num, q->img.inuse, errp) ||
        !qemu_virtio_image_load(&q->img, VIRTIO_BLK_MAX_QUEUES, errp)) {
        virtio_blk_inflight_reset(&q->reqs);
        return false;
    }
    virtio_blk_inflight_apply(&q->reqs);
    /* The driver's write cache choice (CONFIG_WCE) is in QEMU's config cache. */
    if (q->img.config_len > QEMU_BLK_WRITEBACK) {
        virtio_blk_mig_set_writeback(vdev, q->img.config[QEMU_BLK_WRITEBACK] != 0);
    }
    return true;
}

/* The field QEMU's vmdesc calls "virtio" (type "virtio"): its inside. */
static const VMStateDescription vmstate_qemu_virtio_blk = {
    .name = "virtio",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_load = virtio_blk_qemu_pre_load,
    .fields = (const VMStateField[]) {
        QEMU_VIRTIO_HEAD_FIELDS(QEMU_BLK_CONFIG_MAX, VIRTIO_BLK_MAX_QUEUES),
        /* virtio-blk's own: the list of requests in flight */
        VMSTATE_CUSTOM(reqs, VirtIOBlkMMIOQemu, virtio_blk_vmstate_inflight),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription *const[]) {
        &qemu_vmstate_64bit_features,
        &qemu_vmstate_virtqueues,
        &qemu_vmstate_extra_state,
        &qemu_vmstate_started,
        NULL
    },
};

static const VMStateDescription vmstate_virtio_blk_mmio = {
    .name = "virtio-blk",
    .size = sizeof(VirtIOBlkMMIOQemu),
    .version_id = 2,
    .minimum_version_id = 2,
    .pre_save = virtio_blk_qemu_pre_save,
    .post_load = virtio_blk_qemu_post_load,
    .fields = (const VMStateField[]) {
        {
            .name = "virtio", .type = VMS_STRUCT, .offset = 0,
            .size = sizeof(VirtIOBlkMMIOQemu), .vmsd = &vmstate_qemu_virtio_blk,
        },
        VMSTATE_END_OF_LIST()
    },
};

void virtio_blk_mmio_state_register(VirtIOMMIOState *mmio)
{
    /* Lives as long as the process: sections cannot be unregistered. */
    VirtIOBlkMMIOQemu *q = g_new0(VirtIOBlkMMIOQemu, 1);
    g_autofree char *idstr = g_strdup_printf("virtio-mmio@%016" PRIx64 "/virtio-blk",
                                             (uint64_t)virtio_mmio_base(mmio));

    qemu_virtio_image_init(&q->img, mmio, QEMU_BLK_CONFIG_MAX);
    assert(q->img.vdev->ops->device_id == VIRTIO_ID_BLOCK);
    virtio_blk_inflight_init(&q->reqs, container_of(q->img.vdev, VirtIOBlock, vdev),
                             &q->img.num_queues);
    vmstate_register(idstr, 0, &vmstate_virtio_blk_mmio, q);
}

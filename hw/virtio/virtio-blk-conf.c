/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * -device virtio-blk-device: its options, checked with QEMU 7.2's messages
 * (learned by running it), and the creation of a device on its drive.
 * BQL, before machine init (which puts each device behind a transport).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "qemu/option.h"
#include "hw/virtio/virtio-blk.h"

#define BLOCK_SIZE_MIN  512
#define BLOCK_SIZE_MAX  (2 * 1024 * 1024)

void virtio_blk_print_help(void)
{
    printf("virtio-blk-device options:\n"
           "  drive=<str>            - Node name or ID of a block device to use as a backend\n"
           "  logical_block_size=<size> - A power of two between 512 B and 2 MiB (default: 0)\n"
           "  bootindex=<int32>\n"
           "  num-queues=<uint16>    -  (default: 65535)\n"
           "  physical_block_size=<size> - A power of two between 512 B and 2 MiB (default: 0)\n"
           "  serial=<str>\n");
}

/* QEMU's checks of a block size property, with its two messages. */
static bool block_size_get(QemuOpts *opts, const char *name, uint64_t *out, Error **errp)
{
    if (!qemu_opt_get_size(opts, name, 0, out, errp)) {
        return false;
    }
    /* 0 (the default, also given explicitly) means the backend's: 512 here. */
    if (!qemu_opt_has(opts, name) || *out == 0) {
        return true;
    }
    if (*out < BLOCK_SIZE_MIN || *out > BLOCK_SIZE_MAX) {
        error_setg(errp, "Property .%s doesn't take value %" PRIu64 " (minimum: %d, "
                   "maximum: %d)", name, *out, BLOCK_SIZE_MIN, BLOCK_SIZE_MAX);
        return false;
    }
    if (*out & (*out - 1)) {
        error_setg(errp, "Property .%s doesn't take value '%" PRIu64 "', it's not a power "
                   "of 2", name, *out);
        return false;
    }
    return true;
}

bool virtio_blk_conf_parse(QemuOpts *opts, VirtIOBlkConf *conf, Error **errp)
{
    static const char *const known[] = { "driver", "drive", "id", "serial",
                                         "logical_block_size", "physical_block_size",
                                         "num-queues", "bootindex", NULL };
    const char *bootindex = qemu_opt_get(opts, "bootindex");
    uint64_t lbs, pbs, nq;
    gint64 unused;

    memset(conf, 0, sizeof(*conf));
    for (size_t i = 0; i < qemu_opts_count(opts); i++) {
        const char *name = qemu_opts_nth(opts, i)->name;
        bool found = false;

        for (size_t k = 0; known[k] && !found; k++) {
            found = !strcmp(known[k], name);
        }
        if (!found) {
            error_setg(errp, "Property 'virtio-blk-device.%s' not found", name);
            return false;
        }
    }
    /*
     * libvirt passes bootindex=1 for a domain's first disk. The firmware
     * is loaded with -kernel here, so the order is checked and unused, as
     * QEMU 7.2's microvm takes any integer.
     */
    if (bootindex && !g_ascii_string_to_signed(bootindex, 10, INT32_MIN, INT32_MAX, &unused,
                                               NULL)) {
        error_setg(errp, "Parameter 'bootindex' expects integer");
        return false;
    }
    if (!block_size_get(opts, "logical_block_size", &lbs, errp) ||
        !block_size_get(opts, "physical_block_size", &pbs, errp) ||
        !qemu_opt_get_number(opts, "num-queues", 1, &nq, errp)) {
        return false;
    }
    /* 0 means "the backend's": ours are always 512-byte sectors. */
    lbs = lbs ? lbs : BLOCK_SIZE_MIN;
    pbs = pbs ? pbs : MAX(lbs, BLOCK_SIZE_MIN);
    if (lbs > pbs) {
        error_setg(errp, "logical_block_size > physical_block_size not supported");
        return false;
    }
    /* 65535 is QEMU's "auto": one queue for a virtio-blk-device. */
    if (nq == 65535) {
        nq = 1;
    }
    if (nq == 0) {
        error_setg(errp, "num-queues property must be larger than 0");
        return false;
    }
    if (nq > VIRTIO_BLK_MAX_QUEUES) {
        error_setg(errp, "num-queues property must be at most %d", VIRTIO_BLK_MAX_QUEUES);
        return false;
    }
    if (!qemu_opt_get(opts, "drive")) {
        error_setg(errp, "drive property not set");
        return false;
    }
    conf->id = g_strdup(qemu_opt_get(opts, "id"));
    conf->drive = g_strdup(qemu_opt_get(opts, "drive"));
    conf->serial = g_strdup(qemu_opt_get(opts, "serial"));
    conf->logical_block_size = lbs;
    conf->physical_block_size = pbs;
    conf->num_queues = nq;
    return true;
}

void virtio_blk_conf_free(VirtIOBlkConf *conf)
{
    g_free(conf->id);
    g_free(conf->drive);
    g_free(conf->serial);
    g_free(conf->opt);
    memset(conf, 0, sizeof(*conf));
}

static void conf_copy(VirtIOBlkConf *dst, const VirtIOBlkConf *src)
{
    *dst = *src;
    dst->id = g_strdup(src->id);
    dst->drive = g_strdup(src->drive);
    dst->serial = g_strdup(src->serial);
    dst->opt = g_strdup(src->opt);
}

/*
 * The backend: writable unless the drive is read-only (then the device
 * offers VIRTIO_BLK_F_RO, as QEMU's does). One attach: a write lock held
 * by another process is then refused as QEMU refuses it ("Failed to get
 * "write" lock"), not as a read-only attach's conflict.
 */
static BlockBackend *virtio_blk_attach(BlockLayer *bl, const VirtIOBlkConf *conf,
                                       bool *read_only, Error **errp)
{
    const char *dev_name = conf->id ? conf->id : "virtio-blk-device";
    BlockBackend *blk = blk_attach(bl, conf->drive, dev_name,
                                   BLK_PERM_READ | BLK_PERM_WRITE_IF_ALLOWED, errp);

    if (blk) {
        *read_only = blk_is_read_only(blk);
    }
    return blk;
}

VirtIOBlock *virtio_blk_create(BlockLayer *bl, const VirtIOBlkConf *conf, Error **errp)
{
    g_autofree VirtIOBlock *b = g_new0(VirtIOBlock, 1);

    assert(bql_locked());
    if (!conf->drive) {
        error_setg(errp, "drive property not set");
        return NULL;
    }
    b->blk = virtio_blk_attach(bl, conf, &b->read_only, errp);
    if (!b->blk) {
        return NULL;
    }
    conf_copy(&b->conf, conf);
    if (!virtio_blk_init(b, errp)) {
        blk_detach(b->blk);
        virtio_blk_conf_free(&b->conf);
        return NULL;
    }
    return g_steal_pointer(&b);
}

void virtio_blk_destroy(VirtIOBlock *b)
{
    assert(bql_locked());
    virtio_blk_fini(b);
    blk_detach(b->blk);
    virtio_blk_conf_free(&b->conf);
    g_free(b);
}

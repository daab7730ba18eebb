/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The images' part of a migration's handover (include/migration/misc.h):
 * the source writes everything back and drops its write locks as its
 * guest stops for the switchover (bdrv_inactivate_all); the destination,
 * whose images opened inactive (-incoming), reloads and locks them before
 * its guest runs (bdrv_activate_all). The devices have drained by then:
 * a stopped VM has no request in flight (virtio-blk's stop hook).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "migration/misc.h"
#include "block-int.h"

static bool block_any_inactive(BlockLayer *bl)
{
    for (guint i = 0; i < bl->nodes->len; i++) {
        BlockDriverState *bs = g_ptr_array_index(bl->nodes, i);

        if (bs->open_flags & BDRV_O_INACTIVE) {
            return true;
        }
    }
    return false;
}

static bool block_handover_release(void *opaque, Error **errp)
{
    BlockLayer *bl = opaque;

    if (bdrv_inactivate_all(bl, errp) < 0) {
        error_prepend(errp, "Failed to inactivate the images: ");
        /* Whatever went inactive comes back, with its locks: the guest runs on here. */
        bdrv_activate_all(bl, NULL);
        return false;
    }
    return true;
}

/* A no-op while every image is active (the contract: 'cont' calls it every time). */
static bool block_handover_take(void *opaque, Error **errp)
{
    BlockLayer *bl = opaque;

    if (!block_any_inactive(bl)) {
        return true;
    }
    if (bdrv_activate_all(bl, errp) < 0) {
        error_prepend(errp, "Could not take the images: ");
        return false;
    }
    return true;
}

static const MigrationHandoverOps block_handover_ops = {
    .name = "block",
    .release = block_handover_release,
    .take = block_handover_take,
};

void block_layer_register_handover(BlockLayer *bl)
{
    migration_add_handover(&block_handover_ops, bl);
}

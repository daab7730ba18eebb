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
#include "qemu/main-loop.h"
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

/*
 * The guest still runs: every node's flush now (qcow2 writes its tables
 * back, the file its host data), so that the flush inside the stop only
 * has the last moments' writes. The downtime of a guest writing 2000 IOPS
 * to a qcow2 image was 646 ms, almost all of it one fdatasync at the
 * switchover. Flushing is a request (any thread); the node list is the
 * BQL's, so it is copied, with references, under it.
 */
static bool block_handover_prepare(void *opaque)
{
    BlockLayer *bl = opaque;
    g_autoptr(GPtrArray) nodes = g_ptr_array_new();

    bql_lock();
    for (guint i = bl->nodes->len; i-- > 0;) {
        BlockDriverState *bs = g_ptr_array_index(bl->nodes, i);

        if (!(bs->open_flags & BDRV_O_INACTIVE) && !bs->read_only) {
            bs->refcnt++;
            g_ptr_array_add(nodes, bs);
        }
    }
    bql_unlock();
    /* Parents first, as inactivation: a format's tables reach its file before the file's flush. */
    for (guint i = 0; i < nodes->len; i++) {
        bdrv_flush(g_ptr_array_index(nodes, i));
    }
    bql_lock();
    for (guint i = 0; i < nodes->len; i++) {
        bdrv_unref(g_ptr_array_index(nodes, i));
    }
    bql_unlock();
    return nodes->len > 0;
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

/*
 * Nothing to reload while every image is active (the contract: 'cont'
 * calls it every time), but the layer leaves -incoming here in any case.
 */
static bool block_handover_take(void *opaque, Error **errp)
{
    BlockLayer *bl = opaque;

    if (!block_any_inactive(bl)) {
        /*
         * Every image is ours already (a storage migration's destination:
         * nbd-server-add activated its exported disk), yet the layer must
         * leave -incoming all the same, or every node opened from now on
         * opens inactive: the next storage migration's mirror target was
         * refused as "not writable" (scripts/storage-soak, hop 2).
         */
        bl->incoming = false;
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
    .prepare = block_handover_prepare,
    .release = block_handover_release,
    .take = block_handover_take,
};

void block_layer_register_handover(BlockLayer *bl)
{
    migration_add_handover(&block_handover_ops, bl);
}

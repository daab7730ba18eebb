/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Inactivating and activating nodes: a migration's handover of the
 * images (block-migration.c calls these at the switchover) and an NBD
 * export's activation of the node it exports on a destination. The
 * locks they drop and take are block.c's (bdrv_refresh_perms); its
 * invariant is why the source and the destination never both write.
 *
 * Everything here runs under the BQL with no request in flight on the
 * nodes that change; a node that is active already may be serving
 * requests (an export's), so activation leaves it alone.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "block/job.h"
#include "block-int.h"

/*
 * Parents first: a format writes its caches back through its file child,
 * which is still active; then the file child flushes. The locks go last,
 * once every node is inactive, so no other process writes before our last
 * write reached the file.
 */
int bdrv_inactivate_all(BlockLayer *bl, Error **errp)
{
    /*
     * The jobs first: a mirror copies what is still dirty and flushes its
     * target (the destination must find the guest's last writes there),
     * then issues nothing while its nodes are inactive.
     */
    if (job_registry_drain_all(bl->jobs, errp) < 0) {
        return -EIO;
    }
    for (guint i = bl->nodes->len; i-- > 0;) {
        BlockDriverState *bs = g_ptr_array_index(bl->nodes, i);
        int ret;

        if (bs->open_flags & BDRV_O_INACTIVE) {
            continue;
        }
        if (bs->drv->inactivate) {
            ret = bs->drv->inactivate(bs, errp);
            if (ret < 0) {
                return ret;
            }
        }
        ret = bdrv_flush(bs);
        if (ret < 0) {
            error_setg_errno(errp, -ret, "Failed to flush '%s'", bs->node_name);
            return ret;
        }
        bs->open_flags |= BDRV_O_INACTIVE;
    }
    bdrv_refresh_perms(bl, NULL);       /* dropping locks does not fail */
    return 0;
}

/*
 * Children first: the locks are taken before anything is read (a format
 * reloads its caches through its active file child), so nobody else writes
 * what we load. Only the nodes in @set that are inactive change: one that
 * is active already (an exported node, bdrv_activate) holds its lock and
 * may be serving requests, so its caches are neither reloaded nor dropped.
 * On failure those nodes go back to inactive, without locks.
 */
static int activate_nodes(BlockLayer *bl, GHashTable *set, Error **errp)
{
    g_autoptr(GPtrArray) changed = g_ptr_array_new();
    guint i;

    for (i = 0; i < bl->nodes->len; i++) {
        BlockDriverState *bs = g_ptr_array_index(bl->nodes, i);

        if ((!set || g_hash_table_contains(set, bs)) && (bs->open_flags & BDRV_O_INACTIVE)) {
            bs->open_flags &= ~BDRV_O_INACTIVE;
            g_ptr_array_add(changed, bs);
        }
    }
    if (!changed->len) {
        return 0;
    }
    if (!bdrv_refresh_perms(bl, errp)) {
        goto fail;
    }
    for (i = 0; i < changed->len; i++) {
        BlockDriverState *bs = g_ptr_array_index(changed, i);

        if (bs->drv->activate && bs->drv->activate(bs, errp) < 0) {
            goto fail;
        }
        bdrv_node(bs)->length = bs->drv->getlength(bs);
    }
    return 0;

fail:
    for (i = 0; i < changed->len; i++) {
        BlockDriverState *bs = g_ptr_array_index(changed, i);

        bs->open_flags |= BDRV_O_INACTIVE;
    }
    bdrv_refresh_perms(bl, NULL);
    return -EPERM;
}

int bdrv_activate_all(BlockLayer *bl, Error **errp)
{
    int ret;

    bl->incoming = false;
    ret = activate_nodes(bl, NULL, errp);
    if (ret == 0) {
        job_registry_resume_all(bl->jobs);     /* the jobs drained at inactivation */
    }
    return ret;
}

static void add_subtree(GHashTable *set, BlockDriverState *bs)
{
    for (; bs; bs = bs->backing) {
        g_hash_table_add(set, bs);
        if (bs->file) {
            add_subtree(set, bs->file);
        }
    }
}

int bdrv_activate(BlockDriverState *bs, Error **errp)
{
    g_autoptr(GHashTable) set = g_hash_table_new(NULL, NULL);

    add_subtree(set, bs);
    return activate_nodes(bs->bl, set, errp);
}

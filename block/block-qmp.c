/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * query-block, query-named-block-nodes, query-blockstats and HMP "info
 * block", in QEMU 7.2's shape (member names and order of lists as it
 * answers). The machine's layer is current_machine->block; BQL.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands.h"
#include "hw/boards.h"
#include "monitor/hmp.h"
#include "monitor/monitor.h"
#include "qemu/tsan.h"
#include "block-int.h"

static BlockLayer *machine_block(void)
{
    return current_machine ? current_machine->block : NULL;
}

/* qcow2's members, present or not by version as QEMU 7.2 gives them. */
static ImageInfoSpecific *format_specific(const BdrvFormatInfo *fi)
{
    ImageInfoSpecific *spec = g_new0(ImageInfoSpecific, 1);
    ImageInfoSpecificQCow2 *q = g_new0(ImageInfoSpecificQCow2, 1);
    bool v3 = !strcmp(fi->compat, "1.1");

    q->compat = g_strdup(fi->compat);
    q->compression_type = g_strdup(fi->compression_type);
    q->refcount_bits = fi->refcount_bits;
    q->has_lazy_refcounts = q->has_corrupt = q->has_extended_l2 = v3;
    q->lazy_refcounts = fi->lazy_refcounts;
    q->corrupt = fi->corrupt;
    q->extended_l2 = fi->extended_l2;
    spec->type = g_strdup("qcow2");
    spec->data = q;
    return spec;
}

static BlockDeviceInfo *node_info(BlockDriverState *bs, bool writeback)
{
    BlockDeviceInfo *info = g_new0(BlockDeviceInfo, 1);
    ImageInfo *image = g_new0(ImageInfo, 1);
    BlockDriverState *b, *alloc = bs;
    int depth = 0;

    for (b = bs->backing; b; b = b->backing) {
        depth++;
    }
    info->file = g_strdup(bs->filename);
    info->node_name = g_strdup(bs->node_name);
    info->ro = bs->read_only;
    info->drv = g_strdup(bs->drv->format_name);
    info->backing_file = bs->backing ? g_strdup(bs->backing->filename) : NULL;
    info->backing_file_depth = depth;
    info->detect_zeroes = (BlockdevDetectZeroesOptions)bdrv_node(bs)->detect_zeroes;
    info->cache = g_new0(BlockdevCacheInfo, 1);
    info->cache->writeback = writeback;
    info->cache->direct = bs->open_flags & BDRV_O_NOCACHE;
    info->cache->no_flush = bs->open_flags & BDRV_O_NO_FLUSH;

    image->filename = g_strdup(bs->filename);
    image->format = g_strdup(bs->drv->format_name);
    image->has_dirty_flag = true;
    image->virtual_size = MAX(bdrv_getlength(bs), 0);
    /* The bytes on the host: the node's own count, else its file's (a format's). */
    while (!alloc->drv->get_allocated_size && alloc->file) {
        alloc = alloc->file;
    }
    if (alloc->drv->get_allocated_size) {
        int64_t sz = alloc->drv->get_allocated_size(alloc);

        if (sz >= 0) {
            image->has_actual_size = true;
            image->actual_size = sz;
        }
    }
    image->backing_filename = g_strdup(info->backing_file);
    if (bs->drv->get_info) {
        BdrvFormatInfo fi = { 0 };

        bs->drv->get_info(bs, &fi);
        image->dirty_flag = fi.dirty;
        if (fi.cluster_size) {
            image->has_cluster_size = true;
            image->cluster_size = fi.cluster_size;
        }
        if (fi.compat) {
            image->format_specific = format_specific(&fi);
        }
    }
    info->image = image;
    return info;
}

BlockInfoList *qmp_query_block(Error **errp)
{
    BlockLayer *bl = machine_block();
    BlockInfoList *head = NULL, **tail = &head;

    for (guint i = 0; bl && i < bl->backends->len; i++) {
        BlockBackend *blk = g_ptr_array_index(bl->backends, i);
        BlockInfo *info;

        if (blk->user) {
            continue;           /* an export's: QEMU lists drives and devices' only */
        }
        info = g_new0(BlockInfo, 1);

        info->device = g_strdup(blk->name);
        info->qdev = g_strdup(blk->dev_name);
        info->type = g_strdup("unknown");
        info->removable = !blk->dev_name;
        info->inserted = node_info(blk->root, blk->write_cache);
        if (blk_iostatus_enabled(blk)) {
            info->has_io_status = true;
            info->io_status = (BlockDeviceIoStatus)blk->iostatus;
        }
        *tail = g_new0(BlockInfoList, 1);
        (*tail)->value = info;
        tail = &(*tail)->next;
    }
    return head;
}

BlockDeviceInfoList *qmp_query_named_block_nodes(bool has_flat, bool flat, Error **errp)
{
    BlockLayer *bl = machine_block();
    BlockDeviceInfoList *head = NULL, **tail = &head;

    /* Top nodes first, as QEMU lists them: ours are kept children first. */
    for (guint i = bl ? bl->nodes->len : 0; i-- > 0;) {
        *tail = g_new0(BlockDeviceInfoList, 1);
        (*tail)->value = node_info(g_ptr_array_index(bl->nodes, i), true);
        tail = &(*tail)->next;
    }
    return head;
}

static BlockDeviceStats *stats_new(void)
{
    BlockDeviceStats *s = g_new0(BlockDeviceStats, 1);

    return s;
}

static BlockStats *node_stats(BlockDriverState *bs)
{
    BlockStats *st = g_new0(BlockStats, 1);

    /* Nodes count nothing of their own here: only the backend's requests are timed. */
    st->node_name = g_strdup(bs->node_name);
    st->stats = stats_new();
    if (bs->file) {
        st->parent = node_stats(bs->file);
    }
    if (bs->backing) {
        st->backing = node_stats(bs->backing);
    }
    return st;
}

static BlockDeviceStats *backend_stats(BlockBackend *blk)
{
    BlockDeviceStats *s = stats_new();
    BlockAcctCounters c;

    tsan_g_mutex_lock(&blk->stats_lock);
    c = blk->stats;
    tsan_g_mutex_unlock(&blk->stats_lock);
    s->rd_bytes = c.bytes[BLOCK_ACCT_READ];
    s->wr_bytes = c.bytes[BLOCK_ACCT_WRITE];
    s->unmap_bytes = c.bytes[BLOCK_ACCT_DISCARD];
    s->rd_operations = c.ops[BLOCK_ACCT_READ];
    s->wr_operations = c.ops[BLOCK_ACCT_WRITE];
    s->flush_operations = c.ops[BLOCK_ACCT_FLUSH];
    s->unmap_operations = c.ops[BLOCK_ACCT_DISCARD];
    s->rd_total_time_ns = c.total_time_ns[BLOCK_ACCT_READ];
    s->wr_total_time_ns = c.total_time_ns[BLOCK_ACCT_WRITE];
    s->flush_total_time_ns = c.total_time_ns[BLOCK_ACCT_FLUSH];
    s->unmap_total_time_ns = c.total_time_ns[BLOCK_ACCT_DISCARD];
    s->wr_highest_offset = c.wr_highest_offset;
    s->rd_merged = c.merged[BLOCK_ACCT_READ];
    s->wr_merged = c.merged[BLOCK_ACCT_WRITE];
    s->failed_rd_operations = c.failed_ops[BLOCK_ACCT_READ];
    s->failed_wr_operations = c.failed_ops[BLOCK_ACCT_WRITE];
    s->failed_flush_operations = c.failed_ops[BLOCK_ACCT_FLUSH];
    s->failed_unmap_operations = c.failed_ops[BLOCK_ACCT_DISCARD];
    s->account_invalid = true;
    s->account_failed = true;
    if (c.last_ns) {
        s->has_idle_time_ns = true;
        s->idle_time_ns = get_clock_ns() - c.last_ns;
    }
    return s;
}

BlockStatsList *qmp_query_blockstats(bool has_query_nodes, bool query_nodes, Error **errp)
{
    BlockLayer *bl = machine_block();
    BlockStatsList *head = NULL, **tail = &head;

    if (bl && has_query_nodes && query_nodes) {
        for (guint i = bl->nodes->len; i-- > 0;) {
            *tail = g_new0(BlockStatsList, 1);
            (*tail)->value = node_stats(g_ptr_array_index(bl->nodes, i));
            tail = &(*tail)->next;
        }
        return head;
    }
    for (guint i = 0; bl && i < bl->backends->len; i++) {
        BlockBackend *blk = g_ptr_array_index(bl->backends, i);
        BlockStats *st;

        if (blk->user) {
            continue;
        }
        st = node_stats(blk->root);

        qapi_free_BlockDeviceStats(st->stats);
        st->stats = backend_stats(blk);
        st->device = g_strdup(blk->name);
        st->qdev = g_strdup(blk->dev_name);
        *tail = g_new0(BlockStatsList, 1);
        (*tail)->value = st;
        tail = &(*tail)->next;
    }
    return head;
}

/* QEMU's "info block": one paragraph per drive. */
void hmp_info_block(Monitor *mon, const HMPArgs *args)
{
    BlockLayer *bl = machine_block();

    bool first = true;

    for (guint i = 0; bl && i < bl->backends->len; i++) {
        BlockBackend *blk = g_ptr_array_index(bl->backends, i);
        BlockDriverState *bs = blk->root;
        int flags = bs->open_flags;

        if (blk->user) {
            continue;
        }
        if (!first) {
            monitor_printf(mon, "\n");
        }
        first = false;
        if (blk->name[0]) {
            monitor_printf(mon, "%s (%s)", blk->name, bs->node_name);
        } else {
            monitor_printf(mon, "%s", bs->node_name);
        }
        monitor_printf(mon, ": %s (%s%s)\n", bs->filename, bs->drv->format_name,
                       bs->read_only ? ", read-only" : "");
        if (blk->dev_name) {
            monitor_printf(mon, "    Attached to:      %s\n", blk->dev_name);
        } else {
            monitor_printf(mon, "    Removable device: not locked, tray closed\n");
        }
        if (blk_iostatus_enabled(blk) && blk->iostatus != BLOCK_IOSTATUS_OK) {
            monitor_printf(mon, "    I/O status:       %s\n",
                           blk->iostatus == BLOCK_IOSTATUS_NOSPACE ? "nospace" : "failed");
        }
        monitor_printf(mon, "    Cache mode:       %s%s%s\n",
                       blk->write_cache ? "writeback" : "writethrough",
                       (flags & BDRV_O_NOCACHE) ? ", direct" : "",
                       (flags & BDRV_O_NO_FLUSH) ? ", ignore flushes" : "");
        if (bs->backing) {
            int depth = 0;

            for (BlockDriverState *b = bs->backing; b; b = b->backing) {
                depth++;
            }
            monitor_printf(mon, "    Backing file:     %s (chain depth: %d)\n",
                           bs->backing->filename, depth);
        }
        if (bdrv_node(bs)->detect_zeroes != BDRV_DETECT_ZEROES_OFF) {
            monitor_printf(mon, "    Detect zeroes:    %s\n",
                           bdrv_node(bs)->detect_zeroes == BDRV_DETECT_ZEROES_ON ? "on"
                                                                                : "unmap");
        }
    }
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Backends: what a device holds. A -drive makes one (named by its id) at
 * parse time; a device takes it with blk_attach, or takes a node by name,
 * which makes an anonymous one that its detach frees. One device per
 * backend. Requests here are the device's: checked against the drive
 * (read-only, inactive), timed and counted for query-blockstats.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-events.h"
#include "qemu/bufferiszero.h"
#include "qemu/iov.h"
#include "qemu/tsan.h"
#include "system/runstate.h"
#include "block/job.h"
#include "block-int.h"

BlockBackend *blk_new(BlockLayer *bl, const char *name, BlockDriverState *root)
{
    BlockBackend *blk = g_new0(BlockBackend, 1);

    blk->bl = bl;
    blk->name = g_strdup(name);
    blk->root = root;
    root->refcnt++;
    blk->write_cache = true;
    blk->on_read_error = BLOCKDEV_ON_ERROR_REPORT;
    blk->on_write_error = BLOCKDEV_ON_ERROR_ENOSPC;
    pthread_rwlockattr_t attr;

    g_mutex_init(&blk->stats_lock);
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&blk->hook_lock, &attr);
    pthread_rwlock_init(&blk->root_lock, &attr);
    pthread_rwlockattr_destroy(&attr);
    g_ptr_array_add(bl->backends, blk);
    return blk;
}

void blk_free(BlockBackend *blk)
{
    g_ptr_array_remove(blk->bl->backends, blk);
    bdrv_refresh_perms(blk->bl, NULL);  /* dropping locks does not fail */
    bdrv_unref(blk->root);
    g_mutex_clear(&blk->stats_lock);
    pthread_rwlock_destroy(&blk->hook_lock);
    pthread_rwlock_destroy(&blk->root_lock);
    g_free(blk->name);
    g_free(blk->dev_name);
    g_free(blk->if_name);
    g_free(blk);
}

/* Backends first (each drops its top node), then the nodes nobody holds. */
void block_layer_free(BlockLayer *bl)
{
    if (!bl) {
        return;
    }
    /* Jobs first: their threads use the nodes and backends. */
    job_registry_free(bl->jobs);
    bl->jobs = NULL;
    while (bl->backends->len) {
        blk_free(g_ptr_array_index(bl->backends, bl->backends->len - 1));
    }
    /* Nodes nobody holds any more (-blockdev's): parents first. */
    while (bl->nodes->len) {
        BlockDriverState *bs = g_ptr_array_index(bl->nodes, bl->nodes->len - 1);

        bs->refcnt = 1;
        bdrv_unref(bs);
    }
    g_ptr_array_free(bl->nodes, TRUE);
    g_ptr_array_free(bl->backends, TRUE);
    g_free(bl);
}

/* The backend whose top node is @bs, if any. */
static BlockBackend *blk_by_root(BlockLayer *bl, BlockDriverState *bs)
{
    for (guint i = 0; i < bl->backends->len; i++) {
        BlockBackend *blk = g_ptr_array_index(bl->backends, i);

        if (blk->root == bs && !blk->user) {
            return blk;
        }
    }
    return NULL;
}

BlockBackend *blk_attach(BlockLayer *bl, const char *drive, const char *dev_name,
                         unsigned perm, Error **errp)
{
    BlockBackend *blk = blk_by_name(bl, drive);
    BlockDriverState *bs;

    if (!blk) {
        bs = bdrv_find_node(bl, drive);
        if (!bs) {
            /*
             * QEMU names the property by the device type: @dev_name's first
             * word when it is one ("virtio-blk-device at 0x..."), else the
             * only type that takes drives here (@dev_name is the device's id).
             */
            int type_len = strcspn(dev_name, " ");
            bool is_type = type_len > 7 && !strncmp(dev_name + type_len - 7, "-device", 7);

            error_setg(errp, "Property '%.*s.drive' can't find value '%s'",
                       is_type ? type_len : (int)strlen("virtio-blk-device"),
                       is_type ? dev_name : "virtio-blk-device", drive);
            return NULL;
        }
        blk = blk_by_root(bl, bs);
        if (!blk) {
            blk = blk_new(bl, "", bs);
            blk->anonymous = true;
        }
    }
    if (blk->dev_name) {
        error_setg(errp, "Drive '%s' is already in use by another device", drive);
        return NULL;
    }
    if (perm & BLK_PERM_WRITE_IF_ALLOWED) {
        perm = (perm & ~BLK_PERM_WRITE_IF_ALLOWED) |
               (blk->root->read_only ? 0 : BLK_PERM_WRITE);
    }
    if ((perm & BLK_PERM_WRITE) && blk->root->read_only) {
        error_setg(errp, "Block node is read-only");
        goto fail;
    }
    blk->dev_name = g_strdup(dev_name);
    blk->perm = perm & (BLK_PERM_READ | BLK_PERM_WRITE);
    if (!bdrv_refresh_perms(bl, errp)) {
        g_clear_pointer(&blk->dev_name, g_free);
        blk->perm = 0;
        goto fail;
    }
    return blk;

fail:
    if (blk->anonymous) {
        blk_free(blk);
    }
    return NULL;
}

BlockBackend *blk_attach_user(BlockLayer *bl, const char *drive, const char *user,
                              unsigned perm, Error **errp)
{
    BlockBackend *blk = blk_by_name(bl, drive);
    BlockDriverState *bs = blk ? blk->root : bdrv_find_node(bl, drive);

    if (!bs) {
        error_setg(errp, "Cannot find device='%s' nor node-name='%s'", drive, drive);
        return NULL;
    }
    if ((perm & BLK_PERM_WRITE) && bs->read_only) {
        error_setg(errp, "Block node is read-only");
        return NULL;
    }
    blk = blk_new(bl, "", bs);
    blk->anonymous = true;
    blk->user = true;
    blk->dev_name = g_strdup(user);
    blk->perm = perm & (BLK_PERM_READ | BLK_PERM_WRITE);
    if (!bdrv_refresh_perms(bl, errp)) {
        blk_free(blk);
        return NULL;
    }
    return blk;
}

void blk_detach(BlockBackend *blk)
{
    if (!blk) {
        return;
    }
    g_clear_pointer(&blk->dev_name, g_free);
    blk->perm = 0;
    if (blk->anonymous) {
        blk_free(blk);
    } else {
        bdrv_refresh_perms(blk->bl, NULL);
    }
}

/* ---- Requests ---- */

void blk_account(BlockBackend *blk, BlockAcctType type, uint64_t bytes, uint64_t ns,
                 bool failed)
{
    if (type >= BLOCK_ACCT__MAX) {
        return;
    }
    tsan_g_mutex_lock(&blk->stats_lock);
    if (failed) {
        blk->stats.failed_ops[type]++;
    } else {
        blk->stats.ops[type]++;
        blk->stats.bytes[type] += bytes;
    }
    blk->stats.total_time_ns[type] += ns;
    blk->stats.last_ns = get_clock_ns();
    tsan_g_mutex_unlock(&blk->stats_lock);
}

void blk_account_merged(BlockBackend *blk, BlockAcctType type, unsigned int n, uint64_t ns)
{
    if (type >= BLOCK_ACCT__MAX || !n) {
        return;
    }
    tsan_g_mutex_lock(&blk->stats_lock);
    blk->stats.ops[type] += n;
    blk->stats.merged[type] += n;
    blk->stats.total_time_ns[type] += ns;
    tsan_g_mutex_unlock(&blk->stats_lock);
}

static void blk_account_write_end(BlockBackend *blk, uint64_t end)
{
    tsan_g_mutex_lock(&blk->stats_lock);
    blk->stats.wr_highest_offset = MAX(blk->stats.wr_highest_offset, end);
    tsan_g_mutex_unlock(&blk->stats_lock);
}

/* The drive's own refusals, before a request reaches the node. */
static int blk_check(BlockBackend *blk, bool write)
{
    if (blk->root->open_flags & BDRV_O_INACTIVE) {
        return -EPERM;
    }
    if (write && !(blk->perm & BLK_PERM_WRITE)) {
        return -EPERM;
    }
    return 0;
}

int blk_preadv(BlockBackend *blk, uint64_t offset, const struct iovec *iov, int niov)
{
    uint64_t bytes = iov_size(iov, niov);
    int64_t t0 = get_clock_ns();
    int ret;

    pthread_rwlock_rdlock(&blk->root_lock);
    ret = blk_check(blk, false);
    if (ret == 0) {
        ret = bdrv_preadv(blk->root, offset, bytes, iov, niov);
    }
    pthread_rwlock_unlock(&blk->root_lock);
    blk_account(blk, BLOCK_ACCT_READ, bytes, get_clock_ns() - t0, ret < 0);
    return ret;
}

static bool iov_is_zero(const struct iovec *iov, int niov)
{
    for (int i = 0; i < niov; i++) {
        if (!buffer_is_zero(iov[i].iov_base, iov[i].iov_len)) {
            return false;
        }
    }
    return true;
}

/* ---- The write hook ---- */

int blk_set_write_hook(BlockBackend *blk, const BlkWriteHook *hook)
{
    int ret = 0;

    pthread_rwlock_wrlock(&blk->hook_lock);
    if (hook && blk->write_hook) {
        ret = -EBUSY;
    } else {
        blk->write_hook = hook;
    }
    pthread_rwlock_unlock(&blk->hook_lock);
    return ret;
}

void blk_writes_quiesce(BlockBackend *blk)
{
    pthread_rwlock_wrlock(&blk->hook_lock);
}

void blk_writes_resume(BlockBackend *blk)
{
    pthread_rwlock_unlock(&blk->hook_lock);
}

/*
 * The hook sees a write after the node has it: a job that copies a range
 * it found dirty reads the node after clearing the bit, so a write that
 * lands after that read sets the bit again here (setting it before the
 * write could let the copy read the old bytes and clear the new mark).
 */
static void blk_write_end(BlockBackend *blk, BlkHookOp op, uint64_t offset, uint64_t bytes,
                          const struct iovec *iov, int niov, bool reached, int ret)
{
    const BlkWriteHook *hook = blk->write_hook;

    /* A write the drive refused (inactive, read-only) changed nothing. */
    if (hook && reached) {
        hook->after(hook->opaque, op, offset, bytes, iov, niov, ret);
    }
    pthread_rwlock_unlock(&blk->hook_lock);
}

BlockBackend *blk_find(BlockLayer *bl, const char *name)
{
    BlockBackend *blk = blk_by_name(bl, name);
    BlockDriverState *bs;

    if (blk) {
        return blk;
    }
    bs = bdrv_find_node(bl, name);
    return bs ? blk_by_root(bl, bs) : NULL;
}

BlockDriverState *blk_bs(BlockBackend *blk)
{
    return __atomic_load_n(&blk->root, __ATOMIC_ACQUIRE);
}

void blk_requests_quiesce(BlockBackend *blk)
{
    pthread_rwlock_wrlock(&blk->root_lock);
}

void blk_requests_resume(BlockBackend *blk)
{
    pthread_rwlock_unlock(&blk->root_lock);
}

bool blk_replace_root(BlockBackend *blk, BlockDriverState *bs, Error **errp)
{
    BlockDriverState *old = blk->root;

    bs->refcnt++;
    /* Release: a lock-free reader (blk_getlength) sees the node whole. */
    __atomic_store_n(&blk->root, bs, __ATOMIC_RELEASE);
    /* The drive's write lock moves from the old image to the new one. */
    if (!bdrv_refresh_perms(blk->bl, errp)) {
        __atomic_store_n(&blk->root, old, __ATOMIC_RELEASE);
        bs->refcnt--;
        return false;
    }
    bdrv_unref(old);
    return true;
}

int blk_pwritev(BlockBackend *blk, uint64_t offset, const struct iovec *iov, int niov,
                int flags)
{
    uint64_t bytes = iov_size(iov, niov);
    int64_t t0 = get_clock_ns();
    BdrvNode *n;
    bool reached;
    int ret;

    pthread_rwlock_rdlock(&blk->root_lock);
    n = bdrv_node(blk->root);
    ret = blk_check(blk, true);
    reached = ret == 0;
    pthread_rwlock_rdlock(&blk->hook_lock);
    if (ret == 0) {
        /* detect-zeroes: a zero write costs no data copy, and may free space. */
        if (n->detect_zeroes != BDRV_DETECT_ZEROES_OFF && bytes && iov_is_zero(iov, niov)) {
            int zflags = flags & BDRV_REQ_FUA;

            if (n->detect_zeroes == BDRV_DETECT_ZEROES_UNMAP) {
                zflags |= BDRV_REQ_MAY_UNMAP;
            }
            ret = bdrv_pwrite_zeroes(blk->root, offset, bytes, zflags);
        } else {
            ret = bdrv_pwritev(blk->root, offset, bytes, iov, niov, flags);
        }
    }
    blk_write_end(blk, BLK_HOOK_WRITE, offset, bytes, iov, niov, reached, ret);
    pthread_rwlock_unlock(&blk->root_lock);
    blk_account(blk, BLOCK_ACCT_WRITE, bytes, get_clock_ns() - t0, ret < 0);
    if (ret == 0) {
        blk_account_write_end(blk, offset + bytes);
    }
    return ret;
}

int blk_pwrite_zeroes(BlockBackend *blk, uint64_t offset, uint64_t bytes, int flags)
{
    int64_t t0 = get_clock_ns();
    bool reached;
    int ret;

    pthread_rwlock_rdlock(&blk->root_lock);
    ret = blk_check(blk, true);
    reached = ret == 0;
    pthread_rwlock_rdlock(&blk->hook_lock);
    if (ret == 0) {
        ret = bdrv_pwrite_zeroes(blk->root, offset, bytes, flags);
    }
    blk_write_end(blk, BLK_HOOK_ZEROES, offset, bytes, NULL, 0, reached, ret);
    pthread_rwlock_unlock(&blk->root_lock);
    blk_account(blk, BLOCK_ACCT_WRITE, bytes, get_clock_ns() - t0, ret < 0);
    if (ret == 0) {
        blk_account_write_end(blk, offset + bytes);
    }
    return ret;
}

int blk_pdiscard(BlockBackend *blk, uint64_t offset, uint64_t bytes)
{
    int64_t t0 = get_clock_ns();
    bool reached;
    int ret;

    pthread_rwlock_rdlock(&blk->root_lock);
    ret = blk_check(blk, true);
    reached = ret == 0;
    pthread_rwlock_rdlock(&blk->hook_lock);
    if (ret == 0) {
        ret = bdrv_pdiscard(blk->root, offset, bytes);
    }
    blk_write_end(blk, BLK_HOOK_DISCARD, offset, bytes, NULL, 0, reached, ret);
    pthread_rwlock_unlock(&blk->root_lock);
    blk_account(blk, BLOCK_ACCT_DISCARD, bytes, get_clock_ns() - t0, ret < 0);
    return ret;
}

int blk_flush(BlockBackend *blk)
{
    int64_t t0 = get_clock_ns();
    int ret;

    pthread_rwlock_rdlock(&blk->root_lock);
    ret = blk_check(blk, false);
    if (ret == 0) {
        ret = bdrv_flush(blk->root);
    }
    pthread_rwlock_unlock(&blk->root_lock);
    blk_account(blk, BLOCK_ACCT_FLUSH, 0, get_clock_ns() - t0, ret < 0);
    return ret;
}

int blk_block_status(BlockBackend *blk, uint64_t offset, uint64_t bytes, uint64_t *pnum,
                     unsigned *status)
{
    int ret;

    pthread_rwlock_rdlock(&blk->root_lock);
    ret = blk_check(blk, false);
    if (ret == 0) {
        ret = bdrv_block_status(blk->root, offset, bytes, pnum, status);
    }
    pthread_rwlock_unlock(&blk->root_lock);
    return ret;
}

int64_t blk_getlength(BlockBackend *blk)
{
    return bdrv_getlength(blk_bs(blk));
}

bool blk_is_read_only(BlockBackend *blk)
{
    return blk_bs(blk)->read_only;
}

bool blk_enable_write_cache(BlockBackend *blk)
{
    return blk->write_cache;
}

const char *blk_name(BlockBackend *blk)
{
    return blk->name;
}

const char *blk_node_name(BlockBackend *blk)
{
    return blk->root->node_name;
}

/* ---- Errors ---- */

bool blk_iostatus_enabled(BlockBackend *blk)
{
    return blk->dev_name && (blk->on_write_error == BLOCKDEV_ON_ERROR_ENOSPC ||
                             blk->on_write_error == BLOCKDEV_ON_ERROR_STOP ||
                             blk->on_read_error == BLOCKDEV_ON_ERROR_STOP);
}

BlockErrorAction blk_get_error_action(BlockBackend *blk, bool is_read, int err)
{
    BlockdevOnError policy = is_read ? blk->on_read_error : blk->on_write_error;

    switch (policy) {
    case BLOCKDEV_ON_ERROR_ENOSPC:
        return abs(err) == ENOSPC ? BLOCK_ERROR_ACTION_STOP : BLOCK_ERROR_ACTION_REPORT;
    case BLOCKDEV_ON_ERROR_STOP:
        return BLOCK_ERROR_ACTION_STOP;
    case BLOCKDEV_ON_ERROR_IGNORE:
        return BLOCK_ERROR_ACTION_IGNORE;
    case BLOCKDEV_ON_ERROR_REPORT:
    default:
        return BLOCK_ERROR_ACTION_REPORT;
    }
}

void blk_error_action(BlockBackend *blk, BlockErrorAction action, bool is_read, int err)
{
    static const BlockIOErrorAction qapi_action[] = {
        [BLOCK_ERROR_ACTION_IGNORE] = BLOCKIO_ERROR_ACTION_IGNORE,
        [BLOCK_ERROR_ACTION_REPORT] = BLOCKIO_ERROR_ACTION_REPORT,
        [BLOCK_ERROR_ACTION_STOP] = BLOCKIO_ERROR_ACTION_STOP,
    };
    int e = abs(err);

    if ((unsigned)action > BLOCK_ERROR_ACTION_STOP) {
        action = BLOCK_ERROR_ACTION_REPORT;
    }
    if (action == BLOCK_ERROR_ACTION_STOP) {
        /* The status first: a query-block after the STOP event shows why. */
        blk->iostatus = e == ENOSPC ? BLOCK_IOSTATUS_NOSPACE : BLOCK_IOSTATUS_FAILED;
    }
    qapi_event_send_block_io_error(blk->name, blk->root->node_name,
                                   is_read ? IO_OPERATION_TYPE_READ : IO_OPERATION_TYPE_WRITE,
                                   qapi_action[action], blk_iostatus_enabled(blk),
                                   e == ENOSPC, strerror(e));
    if (action == BLOCK_ERROR_ACTION_STOP) {
        /* Through the main loop, as QEMU: a device thread may be the caller. */
        qemu_system_vmstop_request(RUN_STATE_IO_ERROR);
    }
}

/* A stop on error is over: 'cont' (or the device) resets the status, as QEMU. */
void blk_iostatus_reset_all(BlockLayer *bl)
{
    for (guint i = 0; i < bl->backends->len; i++) {
        BlockBackend *blk = g_ptr_array_index(bl->backends, i);

        blk->iostatus = BLOCK_IOSTATUS_OK;
    }
}

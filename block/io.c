/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Node requests: the checks every request gets before its driver sees it,
 * so no driver reads or writes outside what the node has:
 *   - offset + bytes does not overflow, and the iovec holds exactly bytes;
 *   - a format node is not growable: the range lies inside its length
 *     (a protocol node is: qcow2 appends clusters to its file);
 *   - nothing writes an inactive node (the image belongs to another
 *     process until activation) or a read-only one.
 * Any thread, several at once; nothing here takes a lock (length is
 * written only with no request in flight).
 */
#include "qemu/osdep.h"
#include "qemu/iov.h"
#include "block-int.h"

static int check_range(BlockDriverState *bs, uint64_t offset, uint64_t bytes)
{
    BdrvNode *n = bdrv_node(bs);

    if (offset > INT64_MAX || bytes > INT64_MAX - offset) {
        return -EIO;
    }
    if (!bs->drv->is_protocol && offset + bytes > (uint64_t)MAX(n->length, 0)) {
        return -EIO;
    }
    return 0;
}

static int check_write(BlockDriverState *bs, uint64_t offset, uint64_t bytes)
{
    if (bs->open_flags & BDRV_O_INACTIVE) {
        return -EPERM;
    }
    /*
     * Relaxed: the main thread may make a node read-only while a job's
     * workers write to it (test-mirror's target error does); a write
     * that raced it fails or lands, both of which the job handles.
     */
    if (__atomic_load_n(&bs->read_only, __ATOMIC_RELAXED)) {
        return -EACCES;
    }
    return check_range(bs, offset, bytes);
}

int bdrv_preadv(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                const struct iovec *iov, int niov)
{
    int ret = check_range(bs, offset, bytes);

    if (ret < 0) {
        return ret;
    }
    if (iov_size(iov, niov) != bytes) {
        return -EINVAL;
    }
    return bytes ? bs->drv->preadv(bs, offset, bytes, iov, niov) : 0;
}

int bdrv_pwritev(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                 const struct iovec *iov, int niov, int flags)
{
    int ret = check_write(bs, offset, bytes);

    if (ret < 0) {
        return ret;
    }
    if (iov_size(iov, niov) != bytes) {
        return -EINVAL;
    }
    if (!bytes) {
        return (flags & BDRV_REQ_FUA) ? bdrv_flush(bs) : 0;
    }
    return bs->drv->pwritev(bs, offset, bytes, iov, niov, flags);
}

int bdrv_pread(BlockDriverState *bs, uint64_t offset, void *buf, uint64_t bytes)
{
    struct iovec iov = { .iov_base = buf, .iov_len = bytes };

    return bdrv_preadv(bs, offset, bytes, &iov, 1);
}

int bdrv_pwrite(BlockDriverState *bs, uint64_t offset, const void *buf, uint64_t bytes,
                int flags)
{
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = bytes };

    return bdrv_pwritev(bs, offset, bytes, &iov, 1, flags);
}

int bdrv_pwrite_zeroes(BlockDriverState *bs, uint64_t offset, uint64_t bytes, int flags)
{
    int ret = check_write(bs, offset, bytes);

    if (ret < 0 || !bytes) {
        return ret;
    }
    /* Deallocating is a discard: only with discard=unmap, as QEMU. */
    if (!(bs->open_flags & BDRV_O_UNMAP)) {
        flags &= ~BDRV_REQ_MAY_UNMAP;
    }
    if (!bs->drv->pwrite_zeroes) {
        /* A driver without its own: zeroes written as data, a chunk at a time. */
        g_autofree void *zero = g_malloc0(MIN(bytes, 1 << 20));

        while (bytes && ret == 0) {
            struct iovec iov = { .iov_base = zero, .iov_len = MIN(bytes, 1 << 20) };

            ret = bs->drv->pwritev(bs, offset, iov.iov_len, &iov, 1, flags & BDRV_REQ_FUA);
            offset += iov.iov_len;
            bytes -= iov.iov_len;
        }
        return ret;
    }
    return bs->drv->pwrite_zeroes(bs, offset, bytes, flags);
}

int bdrv_pdiscard(BlockDriverState *bs, uint64_t offset, uint64_t bytes)
{
    int ret = check_write(bs, offset, bytes);

    if (ret < 0 || !bytes || !(bs->open_flags & BDRV_O_UNMAP) || !bs->drv->pdiscard) {
        return ret;
    }
    return bs->drv->pdiscard(bs, offset, bytes);
}

int bdrv_flush(BlockDriverState *bs)
{
    if (bs->open_flags & BDRV_O_INACTIVE) {
        return 0;               /* inactivation flushed; nothing was written since */
    }
    return bs->drv->flush ? bs->drv->flush(bs) : 0;
}

int bdrv_block_status(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                      uint64_t *pnum, unsigned *status)
{
    int ret = check_range(bs, offset, bytes);

    if (ret < 0) {
        return ret;
    }
    if (!bytes) {
        return -EINVAL;
    }
    /* An inactive format has no tables loaded: they belong to another process now. */
    if (bs->open_flags & BDRV_O_INACTIVE) {
        return -EPERM;
    }
    if (!bs->drv->block_status) {
        *pnum = bytes;
        *status = BDRV_BLOCK_DATA | BDRV_BLOCK_ALLOCATED;
        return 0;
    }
    ret = bs->drv->block_status(bs, offset, bytes, pnum, status);
    /* A driver that answered nothing would make its caller loop for ever. */
    if (ret == 0 && (*pnum == 0 || *pnum > bytes)) {
        return -EIO;
    }
    return ret;
}

int64_t bdrv_getlength(BlockDriverState *bs)
{
    if (!bs->drv->is_protocol) {
        return bdrv_node(bs)->length;
    }
    return bs->drv->getlength(bs);
}

int bdrv_truncate(BlockDriverState *bs, uint64_t length)
{
    if (!bs->drv->is_protocol || !bs->drv->truncate) {
        return -ENOTSUP;
    }
    if (bs->open_flags & BDRV_O_INACTIVE) {
        return -EPERM;
    }
    if (bs->read_only) {
        return -EACCES;
    }
    if (length > INT64_MAX) {
        return -EINVAL;
    }
    return bs->drv->truncate(bs, length);
}

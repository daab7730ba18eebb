/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The "raw" format: the guest's disk is its file child's bytes, from
 * offset= for size= bytes (QEMU's raw options; default the whole file).
 * No metadata, so no lock of its own: requests pass straight through, and
 * the layer checks them against the node's length before they get here.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/option.h"
#include "block-int.h"

typedef struct BDRVRawState {
    uint64_t offset;            /* fixed after open */
    uint64_t size;              /* fixed after open; 0: up to the file's end */
    bool has_size;
} BDRVRawState;

static const char *const raw_options[] = { "offset", "size", NULL };

static int raw_open(BlockDriverState *bs, QemuOpts *opts, int flags, Error **errp)
{
    BDRVRawState *s = bs->opaque;
    int64_t file_len = bdrv_getlength(bs->file);

    if (!bdrv_check_options(bs, opts, raw_options, errp) ||
        !qemu_opt_get_size(opts, "offset", 0, &s->offset, errp) ||
        !qemu_opt_get_size(opts, "size", 0, &s->size, errp)) {
        return -EINVAL;
    }
    s->has_size = qemu_opt_has(opts, "size");
    if (file_len < 0) {
        error_setg_errno(errp, -file_len, "Could not get the size of '%s'", bs->filename);
        return file_len;
    }
    if (s->offset > (uint64_t)file_len) {
        error_setg(errp, "Offset (%" PRIu64 ") cannot be greater than size of the "
                   "containing file (%" PRId64 ")", s->offset, file_len);
        return -EINVAL;
    }
    if (s->has_size && s->size % BDRV_SECTOR_SIZE) {
        error_setg(errp, "Specified size is not multiple of %d", BDRV_SECTOR_SIZE);
        return -EINVAL;
    }
    if (s->has_size && (s->size > (uint64_t)file_len - s->offset)) {
        error_setg(errp, "The sum of offset (%" PRIu64 ") and size (%" PRIu64 ") has to be "
                   "smaller or equal to the  actual size of the containing file (%" PRId64 ")",
                   s->offset, s->size, file_len);
        return -EINVAL;
    }
    return 0;
}

static int raw_preadv(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                      const struct iovec *iov, int niov)
{
    BDRVRawState *s = bs->opaque;

    return bdrv_preadv(bs->file, s->offset + offset, bytes, iov, niov);
}

/*
 * A probed raw image must not become another format under the guest's
 * hands: the next start would probe it as that format (and, say, follow
 * a backing file name the guest chose). So, as QEMU, a write that makes
 * block 0 look like a format is refused.
 */
static bool raw_block0_probes(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                              const struct iovec *iov, int niov)
{
    BDRVRawState *s = bs->opaque;
    uint8_t sector[BDRV_SECTOR_SIZE] = { 0 };
    uint64_t len = MIN(MAX(bdrv_getlength(bs), 0), BDRV_SECTOR_SIZE);
    uint64_t end = MIN(offset + bytes, len);

    if (bdrv_pread(bs->file, s->offset, sector, len) < 0) {
        return true;
    }
    /* The request's first end - offset bytes land on block 0 at @offset. */
    for (int i = 0; i < niov && offset < end; i++) {
        size_t n = MIN(iov[i].iov_len, end - offset);

        memcpy(sector + offset, iov[i].iov_base, n);
        offset += n;
    }
    for (size_t i = 0; bdrv_drivers[i]; i++) {
        if (bdrv_drivers[i]->probe && bdrv_drivers[i]->probe(sector, len) > 0) {
            return true;
        }
    }
    return false;
}

static int raw_pwritev(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                       const struct iovec *iov, int niov, int flags)
{
    BDRVRawState *s = bs->opaque;

    if (bdrv_node(bs)->probed && offset < BDRV_SECTOR_SIZE &&
        raw_block0_probes(bs, offset, bytes, iov, niov)) {
        return -EPERM;
    }

    return bdrv_pwritev(bs->file, s->offset + offset, bytes, iov, niov, flags);
}

static int raw_pwrite_zeroes(BlockDriverState *bs, uint64_t offset, uint64_t bytes, int flags)
{
    BDRVRawState *s = bs->opaque;

    return bdrv_pwrite_zeroes(bs->file, s->offset + offset, bytes, flags);
}

static int raw_pdiscard(BlockDriverState *bs, uint64_t offset, uint64_t bytes)
{
    BDRVRawState *s = bs->opaque;

    return bdrv_pdiscard(bs->file, s->offset + offset, bytes);
}

static int raw_flush(BlockDriverState *bs)
{
    return bdrv_flush(bs->file);
}

static int raw_block_status(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                            uint64_t *pnum, unsigned *status)
{
    BDRVRawState *s = bs->opaque;

    return bdrv_block_status(bs->file, s->offset + offset, bytes, pnum, status);
}

static int64_t raw_getlength(BlockDriverState *bs)
{
    BDRVRawState *s = bs->opaque;
    int64_t len;

    if (s->has_size) {
        return s->size;
    }
    len = bdrv_getlength(bs->file);
    return len < 0 ? len : len - (int64_t)MIN((uint64_t)len, s->offset);
}

const BlockDriver bdrv_raw = {
    .format_name = "raw",
    .instance_size = sizeof(BDRVRawState),
    .open = raw_open,
    .preadv = raw_preadv,
    .pwritev = raw_pwritev,
    .pwrite_zeroes = raw_pwrite_zeroes,
    .pdiscard = raw_pdiscard,
    .flush = raw_flush,
    .getlength = raw_getlength,
    .block_status = raw_block_status,
    .perm_passthrough = true,
};

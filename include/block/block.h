/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The block layer: image formats (raw, qcow2) over a protocol (a host
 * file), as a small graph of nodes, and one backend per device.
 *
 * How to use it:
 *
 *   bl = block_layer_new()                  one per process (the machine's)
 *   drive_parse(bl, "file=d.qcow2,if=none,id=d0", errp)     -drive
 *   blockdev_parse(bl, "driver=qcow2,node-name=n0,file.driver=file,"
 *                      "file.filename=d.qcow2", errp)       -blockdev
 *   blk = blk_attach(bl, "d0", "virtio-blk-device at 0x...", BLK_PERM_WRITE, errp)
 *                                           a device's drive= (backend id or node name)
 *   blk_preadv(blk, off, iov, n)            0 or -errno; any thread, blocking
 *   blk_pwritev(blk, off, iov, n, flags)    BDRV_REQ_FUA: on stable storage at return
 *   blk_pwrite_zeroes / blk_pdiscard / blk_flush
 *   blk_block_status(blk, off, len, &n, &st)  what the first n bytes read as (BDRV_BLOCK_*)
 *   blk_detach(blk)                         the device is gone
 *   bdrv_inactivate_all(bl, errp)           migration source, guest stopped, no request in flight
 *   bdrv_activate_all(bl, errp)             destination at the switchover, or a source taking its
 *                                           images back after a failed migration
 *   block_layer_free(bl)                    every node closed, every lock dropped
 *
 * Threads and locks:
 *   - Request functions (blk_preadv ... blk_getlength) may be called from
 *     any thread, several at once (a device's workers): a driver keeps its
 *     metadata consistent under its own lock (qcow2's tables), a protocol
 *     uses positional I/O only. They never take the BQL.
 *   - Everything else (parse, attach, detach, activate, inactivate, the
 *     QMP queries, free) runs under the BQL with no request in flight on
 *     the nodes it touches: the device drains its requests first.
 *
 * Ownership and migration (the invariant): at most one running process
 * writes an image. A node opened with BDRV_O_INACTIVE (a destination
 * started with -incoming) reads nothing it caches and writes nothing
 * before bdrv_activate_all(); activation reloads every cache (qcow2's
 * header, L1, refcount and L2 caches) from the image, which the source
 * wrote, and takes the image's write lock. bdrv_inactivate_all() writes
 * back every cached table and flushes (the destination must find every
 * acknowledged write and consistent metadata on storage) and then drops
 * the write lock; a request after it fails with -EPERM. The locks are
 * byte-range locks on the image file that QEMU's file.locking also honours,
 * so ours and QEMU never write one image at once either.
 */
#ifndef BLOCK_BLOCK_H
#define BLOCK_BLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include <glib.h>
#include "qemu/typedefs.h"

typedef struct BlockLayer BlockLayer;
typedef struct BlockDriver BlockDriver;
typedef struct BlockDriverState BlockDriverState;
typedef struct BlockBackend BlockBackend;

#define BDRV_SECTOR_SIZE 512

/* Request flags. */
#define BDRV_REQ_FUA        0x1     /* write through to stable storage before returning */
#define BDRV_REQ_MAY_UNMAP  0x2     /* write_zeroes may deallocate (virtio-blk's unmap bit) */

/*
 * Block status (bdrv_block_status): what a range of a node reads as.
 * DATA clear is a hole (the image stores nothing there); a hole reported
 * as data is always a correct answer, it only costs a copy.
 */
#define BDRV_BLOCK_DATA      0x1    /* stored: the image holds these bytes */
#define BDRV_BLOCK_ZERO      0x2    /* reads as zeroes */
#define BDRV_BLOCK_ALLOCATED 0x4    /* this node decides them, not its backing image */

/* Open flags (bs->open_flags). */
#define BDRV_O_RDWR         0x0001
#define BDRV_O_NOCACHE      0x0002  /* O_DIRECT: cache=none and directsync */
#define BDRV_O_NO_FLUSH     0x0004  /* cache=unsafe: flush is a no-op */
#define BDRV_O_INACTIVE     0x0008  /* a migration destination's image: see above */
#define BDRV_O_UNMAP        0x0010  /* discard=unmap: discards reach the image */
#define BDRV_O_NO_LOCK      0x0020  /* file.locking=off */

/* Permissions a backend's user asks for (blk_attach). */
#define BLK_PERM_READ       0x1
#define BLK_PERM_WRITE      0x2
/*
 * Write where the node allows it, read only where it is read-only (a
 * device that offers read-only media then): one attach, so the locks are
 * asked for at once and a conflict reads as QEMU's does.
 */
#define BLK_PERM_WRITE_IF_ALLOWED 0x4
/*
 * The rest are the block layer's own, for a protocol's set_lock: QEMU's
 * permission bits (its "consistent read" and "write" are the two above),
 * and the ones no other process may hold, shifted by 8. QEMU's image
 * locks are one byte per bit of each set (block/file-posix.c).
 */
#define BLK_PERM_RESIZE     0x8     /* a format growing its file (qcow2) */
#define BLK_PERM_UNSHARE(p) ((p) << 8)

/* QEMU's BlockdevOnError: what a failed request does (werror=, rerror=). */
typedef enum BlockdevOnError {
    BLOCKDEV_ON_ERROR_REPORT,       /* rerror default: the guest sees an I/O error */
    BLOCKDEV_ON_ERROR_IGNORE,
    BLOCKDEV_ON_ERROR_ENOSPC,       /* werror default: stop on ENOSPC, report the rest */
    BLOCKDEV_ON_ERROR_STOP,
} BlockdevOnError;

/* QEMU's BlockErrorAction, as the BLOCK_IO_ERROR event names it. */
typedef enum BlockErrorAction {
    BLOCK_ERROR_ACTION_IGNORE,
    BLOCK_ERROR_ACTION_REPORT,
    BLOCK_ERROR_ACTION_STOP,
} BlockErrorAction;

/*
 * What a format tells query-block beyond the members every node has
 * (QEMU's ImageInfo). QEMU's format-specific union has one row here,
 * qcow2's: @compat is NULL for every other format.
 */
typedef struct BdrvFormatInfo {
    uint64_t cluster_size;          /* 0: the format has none */
    bool dirty;                     /* qcow2's dirty bit: not closed cleanly */
    const char *compat;             /* "1.1" (version 3) or "0.10" (version 2) */
    const char *compression_type;   /* "zlib" or "zstd" */
    bool lazy_refcounts, corrupt, extended_l2;      /* version 3 only */
    unsigned refcount_bits;
} BdrvFormatInfo;

/*
 * A driver is a row: a format ("raw", "qcow2") opened over its file child,
 * or a protocol ("file") opened on a host path. A hook may be NULL where
 * the row says so; the callers never branch on the driver.
 */
struct BlockDriver {
    const char *format_name;        /* "file", "raw", "qcow2": the driver= value */
    size_t instance_size;           /* bs->opaque, zeroed */
    bool is_protocol;               /* opens options' filename itself, no file child */
    /*
     * Protocols: filenames starting with one of these ("nbd:") open with
     * this row where no driver is named (-drive file=, a mirror's target),
     * as QEMU's. NULL-terminated; NULL: none (the "file" row takes the rest).
     */
    const char *const *protocol_prefixes;
    /* Formats: how sure the first bytes are this format (0: not; raw is never probed). */
    int (*probe)(const uint8_t *buf, size_t len);

    /*
     * Open. A format finds its file child in bs->file (already open) and,
     * for a backing chain, opens bs->backing through bdrv_open_backing().
     * @opts holds this node's own options (their prefixes stripped).
     * On failure nothing is left open and @errp is set.
     */
    int (*open)(BlockDriverState *bs, QemuOpts *opts, int flags, Error **errp);
    void (*close)(BlockDriverState *bs);

    /* Requests, any thread (see the top). Offsets and lengths are bytes. */
    int (*preadv)(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                  const struct iovec *iov, int niov);
    int (*pwritev)(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                   const struct iovec *iov, int niov, int flags);
    int (*pwrite_zeroes)(BlockDriverState *bs, uint64_t offset, uint64_t bytes, int flags);
    int (*pdiscard)(BlockDriverState *bs, uint64_t offset, uint64_t bytes); /* NULL: no-op */
    int (*flush)(BlockDriverState *bs);
    int64_t (*getlength)(BlockDriverState *bs);
    /*
     * What the range reads as from @offset: BDRV_BLOCK_* in *@status for
     * the first *@pnum bytes (0 < *@pnum <= @bytes; the next call tells
     * the rest). Any thread. NULL: data, allocated, all of it.
     */
    int (*block_status)(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                        uint64_t *pnum, unsigned *status);
    /* Protocols: set the file's length (bdrv_truncate); NULL: -ENOTSUP. */
    int (*truncate)(BlockDriverState *bs, uint64_t length);
    /* Bytes the image takes on the host (query-block's actual-size); NULL: the child's. */
    int64_t (*get_allocated_size)(BlockDriverState *bs);
    /* What query-block says of the format beyond the common members; NULL: nothing. BQL. */
    void (*get_info)(BlockDriverState *bs, BdrvFormatInfo *info);

    /* Migration (BQL, no request in flight). NULL: nothing cached. */
    int (*inactivate)(BlockDriverState *bs, Error **errp);  /* write back, then forget nothing */
    int (*activate)(BlockDriverState *bs, Error **errp);    /* reload every cache from storage */

    /* Protocols: take or drop the image lock for @perm (BLK_PERM_*). NULL: no locking. */
    int (*set_lock)(BlockDriverState *bs, unsigned perm, Error **errp);

    /*
     * Formats: true for a format with no metadata of its own (raw), whose
     * file child is locked for exactly what its users take, as QEMU's raw.
     * false: the file child is taken for read (and write and resize when
     * the node is writable) and nobody else may write or resize it.
     */
    bool perm_passthrough;
};

/* One node of the graph. Fields fixed after open unless said. */
struct BlockDriverState {
    const BlockDriver *drv;
    void *opaque;                   /* drv->instance_size bytes */
    BlockLayer *bl;
    char *node_name;                /* given, or "#blockN" made up as QEMU does */
    char *filename;                 /* the host path at the bottom of this node */
    BlockDriverState *file;         /* a format's protocol child, or NULL */
    BlockDriverState *backing;      /* a backing image, or NULL */
    int open_flags;                 /* BDRV_O_*; BDRV_O_INACTIVE changes under the BQL */
    bool read_only;
    unsigned refcnt;                /* parents and backends holding it (BQL) */
};

/* ---- Nodes (BQL) ---- */
BlockLayer *block_layer_new(void);
/* -incoming: every node opened from now on opens with BDRV_O_INACTIVE. */
void block_layer_set_incoming(BlockLayer *bl);
void block_layer_free(BlockLayer *bl);
/* The drivers, by driver= name (NULL if unknown). */
const BlockDriver *bdrv_find_driver(const char *format_name);
BlockDriverState *bdrv_find_node(BlockLayer *bl, const char *node_name);
/* A format's backing image, by name, read-only, format probed or given. */
int bdrv_open_backing(BlockDriverState *bs, const char *filename, const char *format,
                      Error **errp);

/* Node-level requests (what a format calls on bs->file and bs->backing). */
int bdrv_preadv(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                const struct iovec *iov, int niov);
int bdrv_pwritev(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                 const struct iovec *iov, int niov, int flags);
int bdrv_pread(BlockDriverState *bs, uint64_t offset, void *buf, uint64_t bytes);
int bdrv_pwrite(BlockDriverState *bs, uint64_t offset, const void *buf, uint64_t bytes,
                int flags);
int bdrv_pwrite_zeroes(BlockDriverState *bs, uint64_t offset, uint64_t bytes, int flags);
int bdrv_pdiscard(BlockDriverState *bs, uint64_t offset, uint64_t bytes);
int bdrv_flush(BlockDriverState *bs);
int64_t bdrv_getlength(BlockDriverState *bs);
/* See BlockDriver.block_status; the range checked as a read's, @bytes > 0. */
int bdrv_block_status(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                      uint64_t *pnum, unsigned *status);
/* A protocol's length change (qcow2 growing its file); -ENOTSUP where not a file. */
int bdrv_truncate(BlockDriverState *bs, uint64_t length);

/* ---- Command line (BQL) ---- */
/* -drive: a format node over a file node, and a backend named by id=. */
bool drive_parse(BlockLayer *bl, const char *optstr, Error **errp);
/* -blockdev: key=value (dotted children: file.filename=) or JSON. */
bool blockdev_parse(BlockLayer *bl, const char *optstr, Error **errp);
/* Every -drive if=none that no device took: QEMU warns, and so do we. */
void drive_check_orphans(BlockLayer *bl);

/* ---- Backends: what a device holds ---- */
/*
 * blk_attach: the device @dev_name takes @drive (a -drive id or a node
 * name). One device per drive ("Drive 'd0' is already in use by ..." as
 * QEMU says otherwise); BLK_PERM_WRITE on a read-only node is refused.
 * @dev_name is what query-block's qdev and "info block" show (QEMU: the
 * device's id, else its QOM path); an unknown @drive is QEMU's "Property
 * 'virtio-blk-device.drive' can't find value", with @dev_name's first word
 * as the type when it ends in "-device".
 */
BlockBackend *blk_attach(BlockLayer *bl, const char *drive, const char *dev_name,
                         unsigned perm, Error **errp);
void blk_detach(BlockBackend *blk);
/*
 * blk_attach_user: a backend of its own on @drive's node (a -drive id or
 * a node name) for a user that is not a device and shares the node with
 * whatever device has it: an NBD export. query-block and query-blockstats
 * leave it out (QEMU lists drives and devices' backends only). Errors in
 * QEMU's words ("Cannot find device='x' nor node-name='x'"). blk_detach
 * frees it.
 */
BlockBackend *blk_attach_user(BlockLayer *bl, const char *drive, const char *user,
                              unsigned perm, Error **errp);

int blk_preadv(BlockBackend *blk, uint64_t offset, const struct iovec *iov, int niov);
int blk_pwritev(BlockBackend *blk, uint64_t offset, const struct iovec *iov, int niov,
                int flags);
int blk_pwrite_zeroes(BlockBackend *blk, uint64_t offset, uint64_t bytes, int flags);
int blk_pdiscard(BlockBackend *blk, uint64_t offset, uint64_t bytes);
int blk_flush(BlockBackend *blk);
int64_t blk_getlength(BlockBackend *blk);
int blk_block_status(BlockBackend *blk, uint64_t offset, uint64_t bytes, uint64_t *pnum,
                     unsigned *status);
bool blk_is_read_only(BlockBackend *blk);
/* cache=writeback/none/unsafe: the guest must flush (virtio-blk offers FLUSH). */
bool blk_enable_write_cache(BlockBackend *blk);
const char *blk_name(BlockBackend *blk);           /* the -drive id, or "" */
const char *blk_node_name(BlockBackend *blk);      /* its top node's */

/*
 * A write hook: one job (the mirror) sees every write of a backend once it
 * reached the node. @after runs in the writer's thread, after the node's
 * request returned @ret; @iov is the data of a BLK_HOOK_WRITE (NULL for
 * zeroes and discards). The hook holds the backend's hook lock for
 * reading, so it may block the write it sees (write-blocking mirror).
 */
typedef enum BlkHookOp { BLK_HOOK_WRITE, BLK_HOOK_ZEROES, BLK_HOOK_DISCARD } BlkHookOp;
typedef struct BlkWriteHook {
    void (*after)(void *opaque, BlkHookOp op, uint64_t offset, uint64_t bytes,
                  const struct iovec *iov, int niov, int ret);
    void *opaque;
} BlkWriteHook;
/*
 * Install @hook (NULL: remove it). BQL. Returns once no write that
 * started without it is in flight: every write from then on is seen.
 * -EBUSY when another hook is installed.
 */
int blk_set_write_hook(BlockBackend *blk, const BlkWriteHook *hook);
/*
 * New writes of @blk wait, and the call returns once none is in flight,
 * until blk_writes_resume(). Any thread but a writer's; reads go on.
 */
void blk_writes_quiesce(BlockBackend *blk);
void blk_writes_resume(BlockBackend *blk);
/*
 * Every new request of @blk (reads too) waits, and the call returns once
 * none is in flight, until blk_requests_resume(). BQL; never from a
 * thread that issues requests on @blk.
 */
void blk_requests_quiesce(BlockBackend *blk);
void blk_requests_resume(BlockBackend *blk);
/*
 * With its requests quiesced: @bs becomes the drive's node (a mirror's
 * pivot to its target), and the image locks follow. BQL. On failure
 * nothing changed.
 */
bool blk_replace_root(BlockBackend *blk, BlockDriverState *bs, Error **errp);
/* The backend named @name (a -drive id), else the one on the node named @name, else NULL. */
BlockBackend *blk_find(BlockLayer *bl, const char *name);
BlockDriverState *blk_bs(BlockBackend *blk);

/* werror=/rerror= for a failed request of errno @err: what to do. */
BlockErrorAction blk_get_error_action(BlockBackend *blk, bool is_read, int err);
/* The BLOCK_IO_ERROR event for @action (QEMU's fields), and the VM stop for STOP. BQL. */
void blk_error_action(BlockBackend *blk, BlockErrorAction action, bool is_read, int err);

/* 'cont': the stops on error are over; query-block's io-status is ok again, as QEMU. BQL. */
void blk_iostatus_reset_all(BlockLayer *bl);

/* query-blockstats' counters, any thread. */
typedef enum BlockAcctType { BLOCK_ACCT_READ, BLOCK_ACCT_WRITE, BLOCK_ACCT_FLUSH,
                             BLOCK_ACCT_DISCARD, BLOCK_ACCT__MAX } BlockAcctType;
void blk_account(BlockBackend *blk, BlockAcctType type, uint64_t bytes, uint64_t ns,
                 bool failed);
/*
 * A device merged @n more requests of @type into the one blk_* call it
 * just made (which counted one operation and all the bytes): they count as
 * operations too, and as query-blockstats' rd_merged/wr_merged, with @ns
 * of time between them. Any thread.
 */
void blk_account_merged(BlockBackend *blk, BlockAcctType type, unsigned int n, uint64_t ns);

/*
 * Every active node flushed, parents first (a format writes back its caches
 * through its file): the process is exiting, as QEMU's close of every
 * image. Requests may still run (device threads are not joined at exit).
 * Returns 0 or the first -errno.
 */
int bdrv_flush_all(BlockLayer *bl);

/* ---- Migration (BQL, no request in flight) ---- */
int bdrv_inactivate_all(BlockLayer *bl, Error **errp);
int bdrv_activate_all(BlockLayer *bl, Error **errp);
/*
 * @bs and the nodes below it (file, backing) active, as bdrv_activate_all
 * does for all: QEMU activates a node it exports, since a migration
 * destination's exported image is written before the switchover.
 */
int bdrv_activate(BlockDriverState *bs, Error **errp);
/* The two above as the migration's handover (migration_add_handover). Startup, BQL. */
void block_layer_register_handover(BlockLayer *bl);

#endif

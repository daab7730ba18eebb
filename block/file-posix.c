/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The "file" protocol: a host file, with positional I/O only so any
 * number of threads may use one node at once.
 *
 * Image locks, as QEMU 7.2 takes them (seen in /proc/locks while it runs):
 * shared OFD locks on single bytes, byte 100 + b for each permission bit b
 * held (0 consistent read, 1 write, 2 write unchanged, 3 resize) and byte
 * 200 + b for each one that no other process may hold. A raw drive with a
 * virtio-blk device holds 100, 101 and 201; read-only, 100 and 201; a qcow2
 * file 100, 101, 103, 201 and 203; an incoming (inactive) image none.
 * Taking a permission checks that nobody holds its "unshare" byte, and
 * unsharing one checks that nobody holds its permission byte: F_OFD_GETLK
 * for a write lock reports any other open file description's lock, never
 * our own. Since the locks are on open file descriptions, two opens in
 * one process exclude each other as two processes do.
 *
 * cache=none (BDRV_O_NOCACHE) opens with O_DIRECT; a request that the
 * kernel refuses for its alignment goes through a second, buffered open
 * of the same file (which takes no lock), so callers never align.
 */
#include "qemu/osdep.h"
#include <linux/falloc.h>
#include <sys/stat.h>
#include "qapi/error.h"
#include "qemu/fdset.h"
#include "qemu/iov.h"
#include "qemu/option.h"
#include "block-int.h"

#define LOCK_PERM_BASE    100
#define LOCK_SHARED_BASE  200
#define LOCK_BITS         4

typedef struct BDRVFileState {
    int fd;                 /* fixed after open; holds the locks */
    int fd_buffered;        /* O_DIRECT only: the same file without it, or -1 (fixed) */
    bool locking;           /* file.locking=on/auto (fixed) */
    unsigned locked;        /* set_lock's @perm now held (BQL) */
    /*
     * Changes made (writes, zeroes, discards: counted as each ends, atomic)
     * and of those, how many a completed flush began after (atomic). A
     * flush with nothing new skips its fdatasync: a qcow2 image's handover
     * flushed the file three times in a row inside the downtime, the
     * format's own flush, then the format node's, then the file node's.
     */
    uint64_t changes;
    uint64_t flushed_changes;
} BDRVFileState;

static void file_changed(BDRVFileState *s)
{
    __atomic_fetch_add(&s->changes, 1, __ATOMIC_RELEASE);
}

static const char *const lock_perm_names[LOCK_BITS] = {
    "consistent read", "write", "write unchanged", "resize",
};

static const char *const file_options[] = {
    "filename", "locking", "aio", "aio-max-batch", "drop-cache", "x-check-cache-dropped",
    NULL,
};

static int lock_byte(int fd, off_t byte, short type)
{
    struct flock fl = {
        .l_whence = SEEK_SET, .l_start = byte, .l_len = 1, .l_type = type,
    };

    return fcntl(fd, F_OFD_SETLK, &fl) < 0 ? -errno : 0;
}

/* Whether another open file description holds a lock on @byte. */
static bool byte_taken(int fd, off_t byte)
{
    struct flock fl = {
        .l_whence = SEEK_SET, .l_start = byte, .l_len = 1, .l_type = F_WRLCK,
    };

    return fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
}

static off_t lock_bit_byte(unsigned bit)
{
    return bit < 8 ? LOCK_PERM_BASE + bit : LOCK_SHARED_BASE + bit - 8;
}

static void unlock_bits(int fd, unsigned bits)
{
    for (unsigned b = 0; b < 16; b++) {
        if (bits & (1u << b)) {
            lock_byte(fd, lock_bit_byte(b), F_UNLCK);
        }
    }
}

static int file_set_lock(BlockDriverState *bs, unsigned perm, Error **errp)
{
    BDRVFileState *s = bs->opaque;
    unsigned add, got = 0;
    int ret;

    if (!s->locking) {
        return 0;
    }
    perm &= 0xf | (0xf << 8);
    add = perm & ~s->locked;
    for (unsigned b = 0; b < 16; b++) {
        if (!(add & (1u << b))) {
            continue;
        }
        ret = lock_byte(s->fd, lock_bit_byte(b), F_RDLCK);
        if (ret < 0) {
            error_setg_errno(errp, -ret, "Failed to lock byte %d", (int)lock_bit_byte(b));
            unlock_bits(s->fd, got);
            return ret;
        }
        got |= 1u << b;
    }
    /* Permissions first, then what we keep from others, as QEMU reports them. */
    for (unsigned b = 0; b < LOCK_BITS; b++) {
        if ((add & (1u << b)) && byte_taken(s->fd, LOCK_SHARED_BASE + b)) {
            error_setg(errp, "Failed to get \"%s\" lock", lock_perm_names[b]);
            goto conflict;
        }
    }
    for (unsigned b = 0; b < LOCK_BITS; b++) {
        if ((add & (1u << (b + 8))) && byte_taken(s->fd, LOCK_PERM_BASE + b)) {
            error_setg(errp, "Failed to get shared \"%s\" lock", lock_perm_names[b]);
            goto conflict;
        }
    }
    unlock_bits(s->fd, s->locked & ~perm);
    s->locked = perm;
    return 0;

conflict:
    error_append_hint(errp, "Is another process using the image [%s]?\n", bs->filename);
    unlock_bits(s->fd, got);
    return -EAGAIN;
}

static int file_open(BlockDriverState *bs, QemuOpts *opts, int flags, Error **errp)
{
    BDRVFileState *s = bs->opaque;
    BdrvNode *n = bdrv_node(bs);
    const char *locking = qemu_opt_get(opts, "locking");
    const char *aio = qemu_opt_get(opts, "aio");
    int oflags = (flags & BDRV_O_RDWR) ? O_RDWR : O_RDONLY;
    Error *local_err = NULL;
    struct stat st;

    s->fd = s->fd_buffered = -1;
    if (!bdrv_check_options(bs, opts, file_options, errp)) {
        return -EINVAL;
    }
    if (!bs->filename) {
        error_setg(errp, "Parameter '%sfilename' is missing", n->opt_prefix);
        return -EINVAL;
    }
    s->locking = !(flags & BDRV_O_NO_LOCK);
    if (locking) {
        if (!strcmp(locking, "off")) {
            s->locking = false;
        } else if (strcmp(locking, "on") && strcmp(locking, "auto")) {
            if (n->from_drive) {
                error_setg(errp, "invalid parameter value: %s", locking);
            } else {
                error_setg(errp, "Parameter '%slocking' does not accept value '%s'",
                           n->opt_prefix, locking);
            }
            return -EINVAL;
        }
    }
    if (aio && strcmp(aio, "threads") && strcmp(aio, "native") && strcmp(aio, "io_uring")) {
        if (n->from_drive) {
            error_setg(errp, "invalid aio option");
        } else {
            error_setg(errp, "Parameter '%saio' does not accept value '%s'", n->opt_prefix, aio);
        }
        return -EINVAL;
    }
    if (aio && !strcmp(aio, "native") && !(flags & BDRV_O_NOCACHE)) {
        error_setg(errp, "aio=native was specified, but it requires cache.direct=on, "
                   "which was not specified.");
        return -EINVAL;
    }
    s->fd = qemu_open(bs->filename, oflags | ((flags & BDRV_O_NOCACHE) ? O_DIRECT : 0), 0,
                      &local_err);
    if (s->fd < 0 && errno == EISDIR) {
        error_free(local_err);
        error_setg(errp, "'file' driver requires '%s' to be a regular file", bs->filename);
        return -EISDIR;
    }
    if (s->fd < 0) {
        int ret = -errno;

        error_propagate(errp, local_err);
        return ret;
    }
    if (fstat(s->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        error_setg(errp, "'file' driver requires '%s' to be a regular file", bs->filename);
        goto fail;
    }
    if (flags & BDRV_O_NOCACHE) {
        s->fd_buffered = qemu_open(bs->filename, oflags, 0, errp);
        if (s->fd_buffered < 0) {
            goto fail;
        }
    }
    return 0;

fail:
    qemu_close(s->fd);
    s->fd = -1;
    return -EINVAL;
}

static void file_close(BlockDriverState *bs)
{
    BDRVFileState *s = bs->opaque;

    if (s->fd >= 0) {
        qemu_close(s->fd);      /* drops every OFD lock it holds */
    }
    if (s->fd_buffered >= 0) {
        qemu_close(s->fd_buffered);
    }
}

/* One positional transfer of the whole iovec: EINTR retried, short I/O continued. */
static int file_rw(int fd, uint64_t offset, const struct iovec *iov, int niov, bool write)
{
    struct iovec local[16];
    struct iovec *v = niov <= 16 ? local : g_new(struct iovec, niov);
    struct iovec *cur = v;
    int cnt = niov, ret = 0;

    memcpy(v, iov, niov * sizeof(*iov));
    while (cnt > 0) {
        ssize_t n = write ? pwritev(fd, cur, MIN(cnt, IOV_MAX), offset)
                          : preadv(fd, cur, MIN(cnt, IOV_MAX), offset);

        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            ret = -errno;
            break;
        }
        if (n == 0) {
            if (write) {
                ret = -EIO;
                break;
            }
            /* Past the end of the file reads as zeroes: a growable node's hole. */
            for (int i = 0; i < cnt; i++) {
                memset(cur[i].iov_base, 0, cur[i].iov_len);
            }
            break;
        }
        offset += n;
        iov_advance(&cur, &cnt, n);
    }
    if (v != local) {
        g_free(v);
    }
    return ret;
}

/*
 * O_DIRECT wants the memory aligned as well as the offset and length, and
 * most callers' buffers come from g_malloc (an NBD request's payload, a
 * copy job's buffer): aligned only when glibc happened to mmap them. Such
 * a request whose offset and length are aligned goes through an aligned
 * bounce buffer instead of the buffered open: an NBD export took twice
 * QEMU's CPU per byte, most of it in the page cache's copy and locks.
 */
#define FILE_DIO_MEM_ALIGN      4096
#define FILE_DIO_ALIGN          512
#define FILE_BOUNCE_MAX         (1u << 20)

static bool file_mem_aligned(const struct iovec *iov, int niov)
{
    for (int i = 0; i < niov; i++) {
        if ((uintptr_t)iov[i].iov_base % FILE_DIO_MEM_ALIGN ||
            iov[i].iov_len % FILE_DIO_ALIGN) {
            return false;
        }
    }
    return true;
}

static int file_rw_bounced(int fd, uint64_t offset, const struct iovec *iov, int niov,
                           uint64_t bytes, bool write)
{
    size_t len = MIN(bytes, FILE_BOUNCE_MAX);
    uint64_t done = 0;
    void *buf;
    int ret = 0;

    if (posix_memalign(&buf, FILE_DIO_MEM_ALIGN, len)) {
        return -ENOMEM;
    }
    while (done < bytes && ret == 0) {
        struct iovec b = { .iov_base = buf, .iov_len = MIN(len, bytes - done) };

        if (write) {
            iov_copy_buf(iov, niov, done, buf, b.iov_len, 0);
        }
        ret = file_rw(fd, offset + done, &b, 1, write);
        if (ret == 0 && !write) {
            iov_copy_buf(iov, niov, done, buf, b.iov_len, 1);
        }
        done += b.iov_len;
    }
    free(buf);
    return ret;
}

static int file_io(BlockDriverState *bs, uint64_t offset, const struct iovec *iov, int niov,
                   bool write)
{
    BDRVFileState *s = bs->opaque;
    uint64_t bytes = iov_size(iov, niov);
    int ret;

    if (s->fd_buffered >= 0 && offset % FILE_DIO_ALIGN == 0 && bytes % FILE_DIO_ALIGN == 0 &&
        !file_mem_aligned(iov, niov)) {
        ret = file_rw_bounced(s->fd, offset, iov, niov, bytes, write);
    } else {
        ret = file_rw(s->fd, offset, iov, niov, write);
    }
    /* O_DIRECT refused the alignment: the buffered open does it, same file. */
    if (ret == -EINVAL && s->fd_buffered >= 0) {
        ret = file_rw(s->fd_buffered, offset, iov, niov, write);
    }
    return ret;
}

static int file_preadv(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                       const struct iovec *iov, int niov)
{
    return file_io(bs, offset, iov, niov, false);
}

static int file_flush(BlockDriverState *bs)
{
    BDRVFileState *s = bs->opaque;
    uint64_t changes = __atomic_load_n(&s->changes, __ATOMIC_ACQUIRE);

    if (bs->open_flags & BDRV_O_NO_FLUSH ||
        changes == __atomic_load_n(&s->flushed_changes, __ATOMIC_ACQUIRE)) {
        return 0;
    }
    while (fdatasync(s->fd) < 0) {
        if (errno != EINTR) {
            return -errno;
        }
    }
    /* A concurrent flush may store a smaller count: only one fdatasync more, later. */
    __atomic_store_n(&s->flushed_changes, changes, __ATOMIC_RELEASE);
    return 0;
}

static int file_pwritev(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                        const struct iovec *iov, int niov, int flags)
{
    int ret = file_io(bs, offset, iov, niov, true);

    file_changed(bs->opaque);
    if (ret == 0 && (flags & BDRV_REQ_FUA)) {
        ret = file_flush(bs);
    }
    return ret;
}

static int file_fallocate(int fd, int mode, uint64_t offset, uint64_t bytes)
{
    while (fallocate(fd, mode, offset, bytes) < 0) {
        if (errno != EINTR) {
            return -errno;
        }
    }
    return 0;
}

static int file_write_zero_buffers(BlockDriverState *bs, uint64_t offset, uint64_t bytes)
{
    const size_t chunk = 1 << 20;
    void *buf;
    int ret = 0;

    if (posix_memalign(&buf, 4096, MIN(bytes, chunk))) {
        return -ENOMEM;
    }
    memset(buf, 0, MIN(bytes, chunk));
    while (bytes && ret == 0) {
        struct iovec iov = { .iov_base = buf, .iov_len = MIN(bytes, chunk) };

        ret = file_io(bs, offset, &iov, 1, true);
        offset += iov.iov_len;
        bytes -= iov.iov_len;
    }
    free(buf);
    return ret;
}

static int file_pwrite_zeroes(BlockDriverState *bs, uint64_t offset, uint64_t bytes, int flags)
{
    BDRVFileState *s = bs->opaque;
    int ret = -EOPNOTSUPP;

    if (flags & BDRV_REQ_MAY_UNMAP) {
        struct stat st;

        ret = file_fallocate(s->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, bytes);
        /* A hole keeps the size: a write past the end must still grow the file. */
        if (ret == 0 && fstat(s->fd, &st) == 0 && (uint64_t)st.st_size < offset + bytes &&
            ftruncate(s->fd, offset + bytes) < 0) {
            ret = -errno;
        }
    }
    if (ret == -EOPNOTSUPP) {
        ret = file_fallocate(s->fd, FALLOC_FL_ZERO_RANGE, offset, bytes);
    }
    if (ret == -EOPNOTSUPP || ret == -EINVAL) {
        ret = file_write_zero_buffers(bs, offset, bytes);
    }
    file_changed(s);
    if (ret == 0 && (flags & BDRV_REQ_FUA)) {
        ret = file_flush(bs);
    }
    return ret;
}

static int file_pdiscard(BlockDriverState *bs, uint64_t offset, uint64_t bytes)
{
    BDRVFileState *s = bs->opaque;
    int ret = file_fallocate(s->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, bytes);

    file_changed(s);
    /* A discard is advice: a file system without holes ignores it, as QEMU does. */
    return ret == -EOPNOTSUPP ? 0 : ret;
}

static int64_t file_getlength(BlockDriverState *bs)
{
    BDRVFileState *s = bs->opaque;
    struct stat st;

    return fstat(s->fd, &st) < 0 ? -errno : st.st_size;
}

/*
 * Holes by SEEK_DATA and SEEK_HOLE. Both take the offset they start from,
 * so threads asking at once get right answers; the file position they
 * move is used by nobody (positional I/O only). A file system without
 * them answers data everywhere, which is never wrong.
 */
static int file_block_status(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                             uint64_t *pnum, unsigned *status)
{
    BDRVFileState *s = bs->opaque;
    off_t data = lseek(s->fd, offset, SEEK_DATA);
    off_t hole;

    *pnum = bytes;
    if (data < 0) {
        /* ENXIO: no data from @offset to the end (and past it, reads are zeroes). */
        *status = errno == ENXIO ? BDRV_BLOCK_ZERO | BDRV_BLOCK_ALLOCATED
                                 : BDRV_BLOCK_DATA | BDRV_BLOCK_ALLOCATED;
        return 0;
    }
    if ((uint64_t)data > offset) {
        *pnum = MIN(bytes, (uint64_t)data - offset);
        *status = BDRV_BLOCK_ZERO | BDRV_BLOCK_ALLOCATED;
        return 0;
    }
    hole = lseek(s->fd, offset, SEEK_HOLE);
    if (hole > 0 && (uint64_t)hole > offset) {
        *pnum = MIN(bytes, (uint64_t)hole - offset);
    }
    *status = BDRV_BLOCK_DATA | BDRV_BLOCK_ALLOCATED;
    return 0;
}

static int64_t file_get_allocated_size(BlockDriverState *bs)
{
    BDRVFileState *s = bs->opaque;
    struct stat st;

    return fstat(s->fd, &st) < 0 ? -errno : (int64_t)st.st_blocks * 512;
}

static int file_truncate(BlockDriverState *bs, uint64_t length)
{
    BDRVFileState *s = bs->opaque;
    int ret = ftruncate(s->fd, length) < 0 ? -errno : 0;

    file_changed(s);
    return ret;
}

const BlockDriver bdrv_file = {
    .format_name = "file",
    .instance_size = sizeof(BDRVFileState),
    .is_protocol = true,
    .open = file_open,
    .close = file_close,
    .preadv = file_preadv,
    .pwritev = file_pwritev,
    .pwrite_zeroes = file_pwrite_zeroes,
    .pdiscard = file_pdiscard,
    .flush = file_flush,
    .getlength = file_getlength,
    .block_status = file_block_status,
    .truncate = file_truncate,
    .get_allocated_size = file_get_allocated_size,
    .set_lock = file_set_lock,
};

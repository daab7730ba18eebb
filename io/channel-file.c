/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The file row: a regular file (file:, or an inherited fd that is one).
 * Reads and writes move the file position; positional I/O (preadv/pwritev,
 * the mapped-ram layout) leaves it alone. I/O on a regular file never
 * waits for a peer, so there is nothing for shutdown to wake: the core's
 * flags alone stop the next transfer.
 */
#include "qemu/osdep.h"
#include "channel-row.h"

typedef struct FileChannel {
    Channel base;
    int fd;                     /* read-only while the channel lives */
    char *path;                 /* read-only: for messages */
} FileChannel;

static int file_fd(Channel *c)
{
    return ((FileChannel *)c)->fd;
}

static ssize_t file_readv(Channel *c, const struct iovec *iov, int cnt, int *fds, size_t *nfds,
                          int flags)
{
    ssize_t n = readv(file_fd(c), iov, cnt);

    return n < 0 ? -errno : n;
}

static ssize_t file_writev(Channel *c, const struct iovec *iov, int cnt, const int *fds,
                           size_t nfds, int flags)
{
    ssize_t n = writev(file_fd(c), iov, cnt);

    return n < 0 ? -errno : n;
}

static ssize_t file_preadv(Channel *c, const struct iovec *iov, int cnt, uint64_t off)
{
    ssize_t n;

    if (off > INT64_MAX) {
        return -EINVAL;
    }
    n = preadv(file_fd(c), iov, cnt, off);
    return n < 0 ? -errno : n;
}

static ssize_t file_pwritev(Channel *c, const struct iovec *iov, int cnt, uint64_t off)
{
    ssize_t n;

    if (off > INT64_MAX) {
        return -EINVAL;
    }
    n = pwritev(file_fd(c), iov, cnt, off);
    return n < 0 ? -errno : n;
}

static int64_t file_seek(Channel *c, int64_t off, int whence)
{
    off_t pos = lseek(file_fd(c), off, whence);

    return pos < 0 ? -errno : pos;
}

static int file_close(Channel *c)
{
    FileChannel *f = (FileChannel *)c;

    g_free(f->path);
    return close(f->fd) < 0 ? -errno : 0;
}

static char *file_describe(Channel *c)
{
    return g_strdup_printf("file %s", ((FileChannel *)c)->path);
}

static const ChannelOps file_ops = {
    .kind = "file",
    .features = CHANNEL_FEATURE_SEEKABLE,
    .readv = file_readv,
    .writev = file_writev,
    .preadv = file_preadv,
    .pwritev = file_pwritev,
    .seek = file_seek,
    .close = file_close,
    .fd = file_fd,
    .describe = file_describe,
};

Channel *channel_file_new(int fd, const char *path)
{
    FileChannel *f = g_new0(FileChannel, 1);

    f->fd = fd;
    f->path = g_strdup(path);
    channel_init(&f->base, &file_ops);
    return &f->base;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A test-only block layer under qcow2: see block-fake.h. */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "block/qcow2-int.h"
#include "block-fake.h"

unsigned fake_flush_count;

/* ---- The node-level calls of include/block/block.h ---- */

int bdrv_preadv(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                const struct iovec *iov, int niov)
{
    return bs->drv->preadv(bs, offset, bytes, iov, niov);
}

int bdrv_pwritev(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                 const struct iovec *iov, int niov, int flags)
{
    if (bs->read_only) {
        return -EACCES;
    }
    return bs->drv->pwritev(bs, offset, bytes, iov, niov, flags);
}

int bdrv_pread(BlockDriverState *bs, uint64_t offset, void *buf, uint64_t bytes)
{
    struct iovec v = { buf, bytes };

    return bdrv_preadv(bs, offset, bytes, &v, 1);
}

int bdrv_pwrite(BlockDriverState *bs, uint64_t offset, const void *buf, uint64_t bytes,
                int flags)
{
    struct iovec v = { (void *)buf, bytes };

    return bdrv_pwritev(bs, offset, bytes, &v, 1, flags);
}

int bdrv_pwrite_zeroes(BlockDriverState *bs, uint64_t offset, uint64_t bytes, int flags)
{
    g_autofree void *zero = NULL;

    if (bs->drv->pwrite_zeroes) {
        return bs->drv->pwrite_zeroes(bs, offset, bytes, flags);
    }
    /* The fake files (and the crash test's recorder) take zeroes as data, as block/io.c does. */
    zero = g_malloc0(bytes);
    return bdrv_pwrite(bs, offset, zero, bytes, flags & BDRV_REQ_FUA);
}

int bdrv_pdiscard(BlockDriverState *bs, uint64_t offset, uint64_t bytes)
{
    return bs->drv->pdiscard ? bs->drv->pdiscard(bs, offset, bytes) : 0;
}

int bdrv_flush(BlockDriverState *bs)
{
    return bs->drv->flush(bs);
}

int64_t bdrv_getlength(BlockDriverState *bs)
{
    return bs->drv->getlength(bs);
}

int bdrv_truncate(BlockDriverState *bs, uint64_t length)
{
    return -ENOTSUP;
}

static BlockDriverState *node_new(const BlockDriver *drv, const char *filename)
{
    BlockDriverState *bs = g_new0(BlockDriverState, 1);

    bs->drv = drv;
    bs->opaque = g_malloc0(drv->instance_size);
    bs->filename = g_strdup(filename);
    bs->refcnt = 1;
    return bs;
}

static void node_free(BlockDriverState *bs)
{
    g_free(bs->opaque);
    g_free(bs->filename);
    g_free(bs->node_name);
    g_free(bs);
}

void fake_node_close(BlockDriverState *bs)
{
    if (!bs) {
        return;
    }
    if (bs->drv->close) {
        bs->drv->close(bs);
    }
    fake_node_close(bs->backing);
    fake_node_close(bs->file);
    node_free(bs);
}

BlockDriverState *fake_format_open(const BlockDriver *drv, BlockDriverState *file,
                                   int flags, Error **errp)
{
    BlockDriverState *bs = node_new(drv, file->filename);

    bs->file = file;
    bs->open_flags = flags;
    bs->read_only = !(flags & BDRV_O_RDWR);
    if (drv->open(bs, NULL, flags, errp) < 0) {
        fake_node_close(bs->backing);
        fake_node_close(file);
        node_free(bs);
        return NULL;
    }
    return bs;
}

static const BlockDriver fake_mem_row;

/*
 * Backing images: qcow2 when the format says so or the bytes do, else the
 * file itself (raw). An image in memory (a fuzz input) gets a raw memory
 * backing file of a pattern instead: names from hostile bytes never reach
 * the host's filesystem.
 */
int bdrv_open_backing(BlockDriverState *bs, const char *filename, const char *format,
                      Error **errp)
{
    BlockDriverState *file;
    uint8_t head[8] = { 0 };
    bool is_qcow2;

    if (bs->file && bs->file->drv == &fake_mem_row) {
        GByteArray *pattern = g_byte_array_sized_new(256 * KiB + 512);

        for (unsigned i = 0; i < 256 * KiB + 512; i++) {
            uint8_t b = i * 31 + (i >> 12);

            g_byte_array_append(pattern, &b, 1);
        }
        bs->backing = fake_mem_open(pattern, 0);
        bs->backing->read_only = true;
        return 0;
    }
    /* Relative to the image's directory, as block/block.c resolves it. */
    if (!g_path_is_absolute(filename) && bs->filename) {
        g_autofree char *dir = g_path_get_dirname(bs->filename);
        g_autofree char *path = g_build_filename(dir, filename, NULL);

        file = fake_file_open(path, false, errp);
    } else {
        file = fake_file_open(filename, false, errp);
    }
    if (!file) {
        return -ENOENT;
    }
    if (format) {
        is_qcow2 = !strcmp(format, "qcow2");
    } else {
        bdrv_pread(file, 0, head, sizeof(head));
        is_qcow2 = qcow2_probe(head, sizeof(head)) > 0;
    }
    if (is_qcow2) {
        bs->backing = fake_format_open(&bdrv_qcow2, file, 0, errp);
        return bs->backing ? 0 : -EINVAL;
    }
    bs->backing = file;
    return 0;
}

/* ---- The host file row ---- */

typedef struct FakeFile {
    int fd;                         /* fixed after open */
} FakeFile;

static int file_preadv(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                       const struct iovec *iov, int niov)
{
    FakeFile *f = bs->opaque;
    g_autofree uint8_t *buf = g_malloc(bytes);
    uint64_t done = 0, pos = 0;

    while (done < bytes) {
        ssize_t n = pread(f->fd, buf + done, bytes - done, offset + done);

        if (n < 0) {
            return -errno;
        }
        if (n == 0) {
            memset(buf + done, 0, bytes - done);    /* past the end: zeroes */
            break;
        }
        done += n;
    }
    for (int i = 0; i < niov; i++) {
        memcpy(iov[i].iov_base, buf + pos, iov[i].iov_len);
        pos += iov[i].iov_len;
    }
    return 0;
}

static int file_pwritev(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                        const struct iovec *iov, int niov, int flags)
{
    FakeFile *f = bs->opaque;

    for (int i = 0; i < niov; i++) {
        for (size_t done = 0; done < iov[i].iov_len;) {
            ssize_t n = pwrite(f->fd, (uint8_t *)iov[i].iov_base + done,
                               iov[i].iov_len - done, offset);

            if (n < 0) {
                return -errno;
            }
            done += n;
            offset += n;
        }
    }
    if (flags & BDRV_REQ_FUA) {
        return fdatasync(f->fd) < 0 ? -errno : 0;
    }
    return 0;
}

static int file_pdiscard(BlockDriverState *bs, uint64_t offset, uint64_t bytes)
{
    FakeFile *f = bs->opaque;

    return fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, bytes) < 0 ?
           -errno : 0;
}

static int file_flush(BlockDriverState *bs)
{
    FakeFile *f = bs->opaque;

    fake_flush_count++;
    return fdatasync(f->fd) < 0 ? -errno : 0;
}

static int64_t file_getlength(BlockDriverState *bs)
{
    FakeFile *f = bs->opaque;
    struct stat st;

    return fstat(f->fd, &st) < 0 ? -errno : st.st_size;
}

static void file_close(BlockDriverState *bs)
{
    close(((FakeFile *)bs->opaque)->fd);
}

static const BlockDriver fake_file_row = {
    .format_name = "file",
    .instance_size = sizeof(FakeFile),
    .is_protocol = true,
    .close = file_close,
    .preadv = file_preadv,
    .pwritev = file_pwritev,
    .pdiscard = file_pdiscard,
    .flush = file_flush,
    .getlength = file_getlength,
};

BlockDriverState *fake_file_open(const char *path, bool rw, Error **errp)
{
    int fd = open(path, rw ? O_RDWR : O_RDONLY);
    BlockDriverState *bs;

    if (fd < 0) {
        error_setg_errno(errp, errno, "Could not open '%s'", path);
        return NULL;
    }
    bs = node_new(&fake_file_row, path);
    ((FakeFile *)bs->opaque)->fd = fd;
    bs->read_only = !rw;
    bs->open_flags = rw ? BDRV_O_RDWR : 0;
    return bs;
}

/* ---- The in-memory row ---- */

typedef struct FakeWrite {
    uint64_t offset;
    GBytes *bytes;
} FakeWrite;

typedef struct FakeMem {
    GMutex lock;
    GByteArray *data;               /* lock; what reads see */
    uint64_t max;                   /* fixed */
    /* Journaling (fake_mem_journal()), lock: */
    GByteArray *durable;            /* the bytes as of the last flush; NULL: not journaling */
    GPtrArray *pending;             /* of FakeWrite: since the last flush, in order */
} FakeMem;

static void fake_write_free(gpointer p)
{
    FakeWrite *w = p;

    g_bytes_unref(w->bytes);
    g_free(w);
}

/* Record a write since the last flush (under m->lock). */
static void journal(FakeMem *m, uint64_t offset, const void *buf, uint64_t len)
{
    FakeWrite *w;

    if (!m->durable) {
        return;
    }
    w = g_new(FakeWrite, 1);
    w->offset = offset;
    w->bytes = g_bytes_new(buf, len);
    g_ptr_array_add(m->pending, w);
}

static void apply(GByteArray *a, uint64_t offset, const void *buf, uint64_t len)
{
    if (offset + len > a->len) {
        guint old = a->len;

        g_byte_array_set_size(a, offset + len);
        memset(a->data + old, 0, a->len - old);
    }
    memcpy(a->data + offset, buf, len);
}

static int mem_preadv(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                      const struct iovec *iov, int niov)
{
    FakeMem *m = bs->opaque;

    g_mutex_lock(&m->lock);
    for (int i = 0; i < niov; i++) {
        uint64_t have = offset < m->data->len ? MIN(iov[i].iov_len, m->data->len - offset) : 0;

        if (have) {
            memcpy(iov[i].iov_base, m->data->data + offset, have);
        }
        memset((uint8_t *)iov[i].iov_base + have, 0, iov[i].iov_len - have);
        offset += iov[i].iov_len;
    }
    g_mutex_unlock(&m->lock);
    return 0;
}

static int mem_pwritev(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                       const struct iovec *iov, int niov, int flags)
{
    FakeMem *m = bs->opaque;

    if (offset > m->max || bytes > m->max - offset) {
        return -ENOSPC;
    }
    g_mutex_lock(&m->lock);
    for (int i = 0; i < niov; i++) {
        apply(m->data, offset, iov[i].iov_base, iov[i].iov_len);
        journal(m, offset, iov[i].iov_base, iov[i].iov_len);
        offset += iov[i].iov_len;
    }
    if (m->durable && (flags & BDRV_REQ_FUA)) {
        g_byte_array_set_size(m->durable, 0);
        g_byte_array_append(m->durable, m->data->data, m->data->len);
        g_ptr_array_set_size(m->pending, 0);
    }
    g_mutex_unlock(&m->lock);
    return 0;
}

static int mem_pdiscard(BlockDriverState *bs, uint64_t offset, uint64_t bytes)
{
    FakeMem *m = bs->opaque;

    g_mutex_lock(&m->lock);
    if (offset < m->data->len) {
        uint64_t n = MIN(bytes, m->data->len - offset);
        g_autofree uint8_t *zeroes = g_malloc0(n);

        memset(m->data->data + offset, 0, n);
        journal(m, offset, zeroes, n);
    }
    g_mutex_unlock(&m->lock);
    return 0;
}

static int mem_flush(BlockDriverState *bs)
{
    FakeMem *m = bs->opaque;

    g_mutex_lock(&m->lock);
    fake_flush_count++;
    if (m->durable) {
        g_byte_array_set_size(m->durable, 0);
        g_byte_array_append(m->durable, m->data->data, m->data->len);
        g_ptr_array_set_size(m->pending, 0);
    }
    g_mutex_unlock(&m->lock);
    return 0;
}

void fake_mem_journal(BlockDriverState *bs)
{
    FakeMem *m = bs->opaque;

    g_mutex_lock(&m->lock);
    m->durable = g_byte_array_new();
    g_byte_array_append(m->durable, m->data->data, m->data->len);
    m->pending = g_ptr_array_new_with_free_func(fake_write_free);
    g_mutex_unlock(&m->lock);
}

GByteArray *fake_mem_crash(BlockDriverState *bs, GRand *r)
{
    FakeMem *m = bs->opaque;
    GByteArray *img = g_byte_array_new();

    g_mutex_lock(&m->lock);
    g_byte_array_append(img, m->durable->data, m->durable->len);
    for (guint i = 0; i < m->pending->len; i++) {
        FakeWrite *w = g_ptr_array_index(m->pending, i);
        gsize len;
        const void *p = g_bytes_get_data(w->bytes, &len);

        if (g_rand_boolean(r)) {
            apply(img, w->offset, p, len);
        }
    }
    g_mutex_unlock(&m->lock);
    return img;
}

static int64_t mem_getlength(BlockDriverState *bs)
{
    FakeMem *m = bs->opaque;
    int64_t len;

    g_mutex_lock(&m->lock);
    len = m->data->len;
    g_mutex_unlock(&m->lock);
    return len;
}

static void mem_close(BlockDriverState *bs)
{
    FakeMem *m = bs->opaque;

    g_byte_array_unref(m->data);
    if (m->durable) {
        g_byte_array_unref(m->durable);
        g_ptr_array_unref(m->pending);
    }
    g_mutex_clear(&m->lock);
}

static const BlockDriver fake_mem_row = {
    .format_name = "mem",
    .instance_size = sizeof(FakeMem),
    .is_protocol = true,
    .close = mem_close,
    .preadv = mem_preadv,
    .pwritev = mem_pwritev,
    .pdiscard = mem_pdiscard,
    .flush = mem_flush,
    .getlength = mem_getlength,
};

BlockDriverState *fake_mem_open(GByteArray *data, uint64_t max)
{
    BlockDriverState *bs = node_new(&fake_mem_row, NULL);
    FakeMem *m = bs->opaque;

    g_mutex_init(&m->lock);
    m->data = data;
    m->max = max;
    bs->open_flags = BDRV_O_RDWR;
    return bs;
}

GByteArray *fake_mem_data(BlockDriverState *bs)
{
    return ((FakeMem *)bs->opaque)->data;
}

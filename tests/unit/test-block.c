/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for the block layer core (block/): raw over file on a real
 * temporary file, opened as -drive and -blockdev do it.
 *   - requests: read back what was written, zeroes (allocating and
 *     punching), discard, flush, FUA; bounds and overflow refused before
 *     the file sees them; two threads writing at once;
 *   - image locks: two layers on one image exclude each other as two
 *     processes do (OFD locks belong to the open file description), on
 *     QEMU 7.2's bytes, checked from a third open; inactivation drops
 *     them and refuses requests, activation takes them back or fails
 *     without changing anything;
 *   - attach: QEMU's messages for an unknown drive, a drive in use, a
 *     read-only node;
 *   - werror/rerror: the action for each errno and the BLOCK_IO_ERROR
 *     event's fields (a fake event sender records them), the stop request;
 *   - option errors in QEMU's words for -drive and -blockdev;
 *   - QEMU 7.2 (when installed) and this layer on one image: each keeps the
 *     other out while it has a writing device, with QEMU's message.
 */
#include "qemu/osdep.h"
#include <sys/wait.h>
#include "qapi/error.h"
#include "qapi/qapi-events.h"
#include "block/block.h"
#include "block/block-int.h"
#include "qemu/bufferiszero.h"
#include "system/runstate.h"

/* ---- Fakes of what backend.c calls outside block/ ---- */

typedef struct FakeEvent {
    char *device, *node_name, *reason;
    IoOperationType operation;
    BlockIOErrorAction action;
    bool has_nospace, nospace;
    int count;
} FakeEvent;

/* The last BLOCK_IO_ERROR and the last stop request (main thread only: the tests). */
typedef struct Fakes {
    FakeEvent ev;
    int stops;
    RunState stop_state;
} Fakes;

static Fakes fakes;

void qapi_event_send_block_io_error(const char *device, const char *node_name,
                                    IoOperationType operation, BlockIOErrorAction action,
                                    bool has_nospace, bool nospace, const char *reason)
{
    g_free(fakes.ev.device);
    g_free(fakes.ev.node_name);
    g_free(fakes.ev.reason);
    fakes.ev.device = g_strdup(device);
    fakes.ev.node_name = g_strdup(node_name);
    fakes.ev.reason = g_strdup(reason);
    fakes.ev.operation = operation;
    fakes.ev.action = action;
    fakes.ev.has_nospace = has_nospace;
    fakes.ev.nospace = nospace;
    fakes.ev.count++;
}

void qemu_system_vmstop_request(RunState state)
{
    fakes.stops++;
    fakes.stop_state = state;
}

/*
 * ---- A fake format row, "testfmt" ----
 * A 4 KiB header ("TESTFMT" and NUL, a backing file name at 16) before the
 * guest's bytes. It probes, opens a backing image by name, and takes its
 * file for itself (perm_passthrough false), as qcow2 does, so the core's
 * probing, backing and permission rules are tested before qcow2 exists.
 */
#define TESTFMT_MAGIC "TESTFMT"
#define TESTFMT_DATA 4096

static int testfmt_probe(const uint8_t *buf, size_t len)
{
    return len >= 8 && !memcmp(buf, TESTFMT_MAGIC, 8) ? 100 : 0;
}

static int testfmt_open(BlockDriverState *bs, QemuOpts *opts, int flags, Error **errp)
{
    char hdr[16 + 256] = { 0 };
    int ret = bdrv_pread(bs->file, 0, hdr, sizeof(hdr));

    if (ret < 0 || memcmp(hdr, TESTFMT_MAGIC, 8)) {
        error_setg(errp, "not a testfmt image");
        return -EINVAL;
    }
    hdr[sizeof(hdr) - 1] = 0;
    if (hdr[16] && bdrv_open_backing(bs, hdr + 16, NULL, errp) < 0) {
        return -EINVAL;
    }
    return 0;
}

static int testfmt_preadv(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                          const struct iovec *iov, int niov)
{
    return bdrv_preadv(bs->file, TESTFMT_DATA + offset, bytes, iov, niov);
}

static int testfmt_pwritev(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                           const struct iovec *iov, int niov, int flags)
{
    return bdrv_pwritev(bs->file, TESTFMT_DATA + offset, bytes, iov, niov, flags);
}

static int testfmt_pwrite_zeroes(BlockDriverState *bs, uint64_t offset, uint64_t bytes,
                                 int flags)
{
    return bdrv_pwrite_zeroes(bs->file, TESTFMT_DATA + offset, bytes, flags);
}

static int testfmt_flush(BlockDriverState *bs)
{
    return bdrv_flush(bs->file);
}

static int64_t testfmt_getlength(BlockDriverState *bs)
{
    int64_t len = bdrv_getlength(bs->file);

    return len < TESTFMT_DATA ? 0 : len - TESTFMT_DATA;
}

static const BlockDriver bdrv_testfmt = {
    .format_name = "testfmt",
    .probe = testfmt_probe,
    .open = testfmt_open,
    .preadv = testfmt_preadv,
    .pwritev = testfmt_pwritev,
    .pwrite_zeroes = testfmt_pwrite_zeroes,
    .flush = testfmt_flush,
    .getlength = testfmt_getlength,
};

/* The rows this test's layer has (block/drivers.c's, plus the fake). */
const BlockDriver *const bdrv_drivers[] = { &bdrv_file, &bdrv_raw, &bdrv_testfmt, NULL };

/* ---- Helpers ---- */

#define IMG_SIZE (4 * 1024 * 1024)

static char *tmpdir;

static char *make_image(const char *name, uint64_t size)
{
    char *path = g_build_filename(tmpdir, name, NULL);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(ftruncate(fd, size), ==, 0);
    close(fd);
    return path;
}

/* *@errp holds an error saying @want; it is freed and *@errp is NULL again. */
static void assert_error(Error **errp, const char *want)
{
    g_assert_nonnull(*errp);
    if (!strstr(error_get_pretty(*errp), want)) {
        g_error("error '%s' lacks '%s'", error_get_pretty(*errp), want);
    }
    error_free(*errp);
    *errp = NULL;
}

static BlockLayer *open_drive(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
static BlockLayer *open_drive(const char *fmt, ...)
{
    BlockLayer *bl = block_layer_new();
    g_autofree char *opts = NULL;
    va_list ap;

    va_start(ap, fmt);
    opts = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_assert_true(drive_parse(bl, opts, &error_abort));
    return bl;
}

static int rw(BlockBackend *blk, bool write, uint64_t off, void *buf, size_t len, int flags)
{
    struct iovec iov = { .iov_base = buf, .iov_len = len };

    return write ? blk_pwritev(blk, off, &iov, 1, flags) : blk_preadv(blk, off, &iov, 1);
}

/* Whether any open file description holds a lock on @byte of @path (a fresh open asks). */
static bool byte_locked(const char *path, off_t byte)
{
    struct flock fl = { .l_whence = SEEK_SET, .l_start = byte, .l_len = 1,
                        .l_type = F_WRLCK };
    int fd = open(path, O_RDONLY);
    bool taken;

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(fcntl(fd, F_OFD_GETLK, &fl), ==, 0);
    taken = fl.l_type != F_UNLCK;
    close(fd);
    return taken;
}

/* The set of QEMU lock bytes held on @path, as a bitmask: bit b for 100+b, bit 8+b for 200+b. */
static unsigned locked_bytes(const char *path)
{
    unsigned mask = 0;

    for (int b = 0; b < 4; b++) {
        mask |= byte_locked(path, 100 + b) ? 1u << b : 0;
        mask |= byte_locked(path, 200 + b) ? 1u << (8 + b) : 0;
    }
    return mask;
}

/* ---- Tests ---- */

static void test_rw(void)
{
    g_autofree char *path = make_image("rw.img", IMG_SIZE);
    BlockLayer *bl = open_drive("file=%s,format=raw,if=none,id=d0,discard=unmap", path);
    BlockBackend *blk = blk_attach(bl, "d0", "virtio-blk-device at 0xfeb00e00",
                                   BLK_PERM_READ | BLK_PERM_WRITE, &error_abort);
    g_autofree uint8_t *buf = g_malloc(65536), *back = g_malloc(65536);
    struct stat st;

    g_assert_cmpint(blk_getlength(blk), ==, IMG_SIZE);
    g_assert_cmpstr(blk_name(blk), ==, "d0");
    g_assert_true(g_str_has_prefix(blk_node_name(blk), "#block"));
    g_assert_false(blk_is_read_only(blk));
    g_assert_true(blk_enable_write_cache(blk));

    for (int i = 0; i < 65536; i++) {
        buf[i] = i * 7 + 3;
    }
    g_assert_cmpint(rw(blk, true, 65536, buf, 65536, 0), ==, 0);
    g_assert_cmpint(rw(blk, true, 0, buf, 512, BDRV_REQ_FUA), ==, 0);
    g_assert_cmpint(rw(blk, false, 65536, back, 65536, 0), ==, 0);
    g_assert_cmpmem(buf, 65536, back, 65536);

    /* A scattered read: three pieces of one range. */
    {
        uint8_t a[100], b[1000], c[2996];
        struct iovec iov[3] = { { a, sizeof(a) }, { b, sizeof(b) }, { c, sizeof(c) } };

        g_assert_cmpint(blk_preadv(blk, 65536, iov, 3), ==, 0);
        g_assert_cmpmem(a, sizeof(a), buf, sizeof(a));
        g_assert_cmpmem(b, sizeof(b), buf + 100, sizeof(b));
        g_assert_cmpmem(c, sizeof(c), buf + 1100, sizeof(c));
    }

    /* Zeroes: allocating, then punching (discard=unmap lets MAY_UNMAP through). */
    g_assert_cmpint(blk_pwrite_zeroes(blk, 65536, 4096, 0), ==, 0);
    g_assert_cmpint(rw(blk, false, 65536, back, 8192, 0), ==, 0);
    g_assert_true(buffer_is_zero(back, 4096));
    g_assert_cmpmem(back + 4096, 4096, buf + 4096, 4096);
    g_assert_cmpint(blk_pwrite_zeroes(blk, 65536 + 4096, 65536 - 4096, BDRV_REQ_MAY_UNMAP),
                    ==, 0);
    g_assert_cmpint(rw(blk, false, 65536, back, 65536, 0), ==, 0);
    g_assert_true(buffer_is_zero(back, 65536));

    /* Discard deallocates: the file's blocks go down. */
    g_assert_cmpint(rw(blk, true, 1024 * 1024, buf, 65536, 0), ==, 0);
    g_assert_cmpint(blk_flush(blk), ==, 0);
    g_assert_cmpint(bdrv_flush_all(bl), ==, 0);
    g_assert_cmpint(stat(path, &st), ==, 0);
    {
        blkcnt_t before = st.st_blocks;

        g_assert_cmpint(blk_pdiscard(blk, 1024 * 1024, 65536), ==, 0);
        g_assert_cmpint(stat(path, &st), ==, 0);
        g_assert_cmpint(st.st_blocks, <, before);
    }
    g_assert_cmpint(st.st_size, ==, IMG_SIZE);

    /* Bounds: the end, past it, and offsets that overflow. */
    g_assert_cmpint(rw(blk, false, IMG_SIZE - 512, back, 512, 0), ==, 0);
    g_assert_cmpint(rw(blk, false, IMG_SIZE - 512, back, 1024, 0), ==, -EIO);
    g_assert_cmpint(rw(blk, true, IMG_SIZE, buf, 512, 0), ==, -EIO);
    g_assert_cmpint(rw(blk, true, UINT64_MAX - 100, buf, 512, 0), ==, -EIO);
    g_assert_cmpint(blk_pwrite_zeroes(blk, IMG_SIZE - 512, 1024, 0), ==, -EIO);
    g_assert_cmpint(blk_pdiscard(blk, INT64_MAX, INT64_MAX), ==, -EIO);
    g_assert_cmpint(stat(path, &st), ==, 0);
    g_assert_cmpint(st.st_size, ==, IMG_SIZE);

    blk_detach(blk);
    block_layer_free(bl);
}

typedef struct Writer {
    BlockBackend *blk;
    int id;
} Writer;

static gpointer writer_thread(gpointer opaque)
{
    Writer *w = opaque;
    uint8_t buf[4096];

    /* Writer i owns every other 4 KiB block, with its id in every byte. */
    for (int round = 0; round < 4; round++) {
        for (uint64_t blkno = w->id; blkno < IMG_SIZE / 4096; blkno += 2) {
            memset(buf, w->id + 1 + round, sizeof(buf));
            g_assert_cmpint(rw(w->blk, true, blkno * 4096, buf, sizeof(buf), 0), ==, 0);
        }
    }
    return NULL;
}

static void test_threads(void)
{
    g_autofree char *path = make_image("threads.img", IMG_SIZE);
    BlockLayer *bl = open_drive("file=%s,format=raw,if=none,id=d0,cache=none", path);
    BlockBackend *blk = blk_attach(bl, "d0", "virtio-blk-device at 0xfeb00e00",
                                   BLK_PERM_READ | BLK_PERM_WRITE, &error_abort);
    Writer w[2] = { { blk, 0 }, { blk, 1 } };
    GThread *t[2];
    uint8_t buf[4096];

    for (int i = 0; i < 2; i++) {
        t[i] = g_thread_new("writer", writer_thread, &w[i]);
    }
    for (int i = 0; i < 2; i++) {
        g_thread_join(t[i]);
    }
    for (uint64_t blkno = 0; blkno < IMG_SIZE / 4096; blkno++) {
        g_assert_cmpint(rw(blk, false, blkno * 4096, buf, sizeof(buf), 0), ==, 0);
        for (size_t i = 0; i < sizeof(buf); i++) {
            g_assert_cmpint(buf[i], ==, (blkno & 1) + 1 + 3);
        }
    }
    blk_detach(blk);
    block_layer_free(bl);
}

static void test_locks(void)
{
    g_autofree char *path = make_image("locks.img", IMG_SIZE);
    BlockLayer *a = open_drive("file=%s,format=raw,if=none,id=d0", path);
    BlockLayer *b;
    BlockBackend *ba, *bb;
    Error *err = NULL;
    uint8_t buf[512] = { 1 };

    /* A drive no device took only reads, as QEMU: byte 100. */
    g_assert_cmphex(locked_bytes(path), ==, 0x001);
    ba = blk_attach(a, "d0", "virtio-blk-device at 0xfeb00e00",
                    BLK_PERM_READ | BLK_PERM_WRITE, &error_abort);
    /* A writing device: 100, 101 and 201, QEMU 7.2's bytes for the same drive. */
    g_assert_cmphex(locked_bytes(path), ==, 0x203);

    /* A second open of the image (another layer) is another process to the locks. */
    b = open_drive("file=%s,format=raw,if=none,id=d0", path);
    bb = blk_attach(b, "d0", "virtio-blk-device at 0xfeb00e00",
                    BLK_PERM_READ | BLK_PERM_WRITE, &err);
    g_assert_null(bb);
    assert_error(&err, "Failed to get \"write\" lock");
    bb = blk_attach(b, "d0", "virtio-blk-device at 0xfeb00e00", BLK_PERM_READ, &err);
    g_assert_null(bb);
    assert_error(&err, "Failed to get shared \"write\" lock");
    /* The failed attaches took nothing and left the first layer's locks alone. */
    g_assert_cmphex(locked_bytes(path), ==, 0x203);

    /* Inactive: no lock (QEMU's incoming side holds none), and no request. */
    g_assert_cmpint(bdrv_inactivate_all(a, &error_abort), ==, 0);
    g_assert_cmphex(locked_bytes(path), ==, 0x001);     /* b's drive: read */
    g_assert_cmpint(rw(ba, true, 0, buf, sizeof(buf), 0), ==, -EPERM);
    g_assert_cmpint(rw(ba, false, 0, buf, sizeof(buf), 0), ==, -EPERM);

    /* Now the other one may write; the first cannot take its image back. */
    bb = blk_attach(b, "d0", "virtio-blk-device at 0xfeb00e00",
                    BLK_PERM_READ | BLK_PERM_WRITE, &error_abort);
    g_assert_cmpint(rw(bb, true, 0, buf, sizeof(buf), 0), ==, 0);
    g_assert_cmpint(bdrv_activate_all(a, &err), <, 0);
    assert_error(&err, "lock");
    g_assert_cmpint(rw(ba, true, 0, buf, sizeof(buf), 0), ==, -EPERM);
    g_assert_cmphex(locked_bytes(path), ==, 0x203);

    /* The other one leaves: activation takes the locks back and requests work again. */
    blk_detach(bb);
    block_layer_free(b);
    g_assert_cmphex(locked_bytes(path), ==, 0x000);
    g_assert_cmpint(bdrv_activate_all(a, &error_abort), ==, 0);
    g_assert_cmphex(locked_bytes(path), ==, 0x203);
    g_assert_cmpint(rw(ba, false, 0, buf, sizeof(buf), 0), ==, 0);
    g_assert_cmpint(buf[0], ==, 1);

    /* file.locking=off takes nothing and checks nothing. */
    b = open_drive("file=%s,format=raw,if=none,id=d0,file.locking=off", path);
    bb = blk_attach(b, "d0", "virtio-blk-device at 0xfeb00e00",
                    BLK_PERM_READ | BLK_PERM_WRITE, &error_abort);
    blk_detach(bb);
    block_layer_free(b);

    blk_detach(ba);
    g_assert_cmphex(locked_bytes(path), ==, 0x001);
    block_layer_free(a);
    g_assert_cmphex(locked_bytes(path), ==, 0x000);
}

static void test_readonly(void)
{
    g_autofree char *path = make_image("ro.img", IMG_SIZE);
    BlockLayer *bl = open_drive("file=%s,format=raw,if=none,id=d0,readonly=on", path);
    BlockBackend *blk;
    Error *err = NULL;
    uint8_t buf[512] = { 0 };

    g_assert_null(blk_attach(bl, "d0", "virtio-blk-device at 0xfeb00e00",
                             BLK_PERM_READ | BLK_PERM_WRITE, &err));
    assert_error(&err, "Block node is read-only");
    blk = blk_attach(bl, "d0", "virtio-blk-device at 0xfeb00e00", BLK_PERM_READ,
                     &error_abort);
    g_assert_true(blk_is_read_only(blk));
    /* A read-only device: 100 and 201, as QEMU. */
    g_assert_cmphex(locked_bytes(path), ==, 0x201);
    g_assert_cmpint(rw(blk, true, 0, buf, sizeof(buf), 0), ==, -EPERM);
    g_assert_cmpint(rw(blk, false, 0, buf, sizeof(buf), 0), ==, 0);
    blk_detach(blk);
    block_layer_free(bl);
}

static void test_attach(void)
{
    g_autofree char *path = make_image("attach.img", IMG_SIZE);
    g_autofree char *json = NULL;
    BlockLayer *bl = open_drive("file=%s,format=raw,if=none,id=d0", path);
    BlockBackend *blk, *blk2;
    Error *err = NULL;

    g_assert_null(blk_attach(bl, "x", "virtio-blk-device at 0xfeb00e00", BLK_PERM_READ, &err));
    assert_error(&err, "Property 'virtio-blk-device.drive' can't find value 'x'");
    g_assert_null(blk_attach(bl, "x", "vd0", BLK_PERM_READ, &err));
    assert_error(&err, "Property 'virtio-blk-device.drive' can't find value 'x'");
    blk = blk_attach(bl, "d0", "virtio-blk-device at 0xfeb00e00", BLK_PERM_READ, &error_abort);
    g_assert_null(blk_attach(bl, "d0", "virtio-blk-device at 0xfeb00c00", BLK_PERM_READ, &err));
    assert_error(&err, "Drive 'd0' is already in use by another device");
    blk_detach(blk);
    blk = blk_attach(bl, "d0", "virtio-blk-device at 0xfeb00c00", BLK_PERM_READ, &error_abort);
    blk_detach(blk);

    /* -blockdev: a file node, a raw node over it by name, a device on the raw node. */
    g_assert_true(blockdev_parse(bl, "driver=file,node-name=f0,filename=attach.img,"
                                 "locking=off", &err) == false);
    assert_error(&err, "Could not open 'attach.img'");
    json = g_strdup_printf("{\"driver\":\"file\",\"node-name\":\"f0\",\"filename\":\"%s\"}",
                           path);
    g_assert_true(blockdev_parse(bl, json, &error_abort));
    g_assert_true(blockdev_parse(bl, "driver=raw,node-name=n0,file=f0", &error_abort));
    g_assert_nonnull(bdrv_find_node(bl, "f0"));
    g_assert_true(bdrv_find_node(bl, "n0")->file == bdrv_find_node(bl, "f0"));
    blk2 = blk_attach(bl, "n0", "virtio-blk-device at 0xfeb00a00", BLK_PERM_READ,
                      &error_abort);
    g_assert_cmpstr(blk_name(blk2), ==, "");
    g_assert_cmpstr(blk_node_name(blk2), ==, "n0");
    g_assert_null(blk_attach(bl, "n0", "virtio-blk-device at 0xfeb00800", BLK_PERM_READ, &err));
    assert_error(&err, "Drive 'n0' is already in use by another device");
    blk_detach(blk2);
    block_layer_free(bl);
}

static void test_error_policy(void)
{
    g_autofree char *path = make_image("err.img", IMG_SIZE);
    BlockLayer *bl = open_drive("file=%s,format=raw,if=none,id=d0", path);
    BlockBackend *blk = blk_attach(bl, "d0", "virtio-blk-device at 0xfeb00e00",
                                   BLK_PERM_READ | BLK_PERM_WRITE, &error_abort);
    BlockLayer *bl2;
    BlockBackend *blk2;

    /* The defaults: werror=enospc, rerror=report. */
    g_assert_cmpint(blk_get_error_action(blk, false, ENOSPC), ==, BLOCK_ERROR_ACTION_STOP);
    g_assert_cmpint(blk_get_error_action(blk, false, -ENOSPC), ==, BLOCK_ERROR_ACTION_STOP);
    g_assert_cmpint(blk_get_error_action(blk, false, EIO), ==, BLOCK_ERROR_ACTION_REPORT);
    g_assert_cmpint(blk_get_error_action(blk, true, ENOSPC), ==, BLOCK_ERROR_ACTION_REPORT);

    memset(&fakes, 0, sizeof(fakes));
    blk_error_action(blk, BLOCK_ERROR_ACTION_STOP, false, ENOSPC);
    g_assert_cmpint(fakes.ev.count, ==, 1);
    g_assert_cmpstr(fakes.ev.device, ==, "d0");
    g_assert_cmpstr(fakes.ev.node_name, ==, blk_node_name(blk));
    g_assert_cmpint(fakes.ev.operation, ==, IO_OPERATION_TYPE_WRITE);
    g_assert_cmpint(fakes.ev.action, ==, BLOCKIO_ERROR_ACTION_STOP);
    g_assert_true(fakes.ev.has_nospace && fakes.ev.nospace);
    g_assert_cmpstr(fakes.ev.reason, ==, strerror(ENOSPC));
    g_assert_cmpint(fakes.stops, ==, 1);
    g_assert_cmpint(fakes.stop_state, ==, RUN_STATE_IO_ERROR);

    blk_error_action(blk, BLOCK_ERROR_ACTION_REPORT, true, EIO);
    g_assert_cmpint(fakes.ev.count, ==, 2);
    g_assert_cmpint(fakes.ev.operation, ==, IO_OPERATION_TYPE_READ);
    g_assert_cmpint(fakes.ev.action, ==, BLOCKIO_ERROR_ACTION_REPORT);
    g_assert_false(fakes.ev.nospace);
    g_assert_cmpint(fakes.stops, ==, 1);
    blk_detach(blk);
    block_layer_free(bl);

    bl2 = open_drive("file=%s,format=raw,if=none,id=d1,werror=stop,rerror=ignore", path);
    blk2 = blk_attach(bl2, "d1", "virtio-blk-device at 0xfeb00e00",
                      BLK_PERM_READ | BLK_PERM_WRITE, &error_abort);
    g_assert_cmpint(blk_get_error_action(blk2, false, EIO), ==, BLOCK_ERROR_ACTION_STOP);
    g_assert_cmpint(blk_get_error_action(blk2, true, EIO), ==, BLOCK_ERROR_ACTION_IGNORE);
    blk_detach(blk2);
    block_layer_free(bl2);

    bl2 = open_drive("file=%s,format=raw,if=none,id=d1,werror=report,rerror=report", path);
    blk2 = blk_attach(bl2, "d1", "virtio-blk-device at 0xfeb00e00",
                      BLK_PERM_READ | BLK_PERM_WRITE, &error_abort);
    g_assert_cmpint(blk_get_error_action(blk2, false, ENOSPC), ==, BLOCK_ERROR_ACTION_REPORT);
    blk_error_action(blk2, BLOCK_ERROR_ACTION_REPORT, false, ENOSPC);
    g_assert_false(fakes.ev.has_nospace);       /* no stop policy: QEMU leaves it out */
    blk_detach(blk2);
    block_layer_free(bl2);
}

static void test_bad_options(void)
{
    g_autofree char *path = make_image("opts.img", IMG_SIZE);
    static const struct {
        const char *opts;       /* "%s" is the image */
        const char *error;
    } drive_cases[] = {
        { "file=%s,format=raw,if=none,foo=1", "Block format 'raw' does not support the option 'foo'" },
        { "file=%s,format=raw,if=none,file.foo=1",
          "Block protocol 'file' does not support the option 'foo'" },
        { "file=%s,format=bogus,if=none", "Unknown driver 'bogus'" },
        { "file=%s,format=raw,cache=bogus", "invalid cache option" },
        { "file=%s,format=raw,aio=native", "aio=native was specified, but it requires "
          "cache.direct=on, which was not specified." },
        { "file=%s,format=raw,aio=bogus", "invalid aio option" },
        { "file=%s,format=raw,discard=bogus", "Invalid discard option" },
        { "file=%s,format=raw,detect-zeroes=bogus", "invalid parameter value: bogus" },
        { "file=%s,format=raw,detect-zeroes=unmap", "setting detect-zeroes to unmap is not "
          "allowed without setting discard operation to unmap" },
        { "file=%s,format=raw,werror=bogus", "'bogus' invalid write error action" },
        { "file=%s,format=raw,rerror=enospc", "'enospc' invalid read error action" },
        { "file=%s,format=raw,readonly=maybe", "Parameter 'read-only' expects 'on' or 'off'" },
        { "file=%s,format=raw,if=virtio", "No 'PCI' bus found for device 'virtio-blk-pci'" },
        { "file=%s,format=raw,if=ide", "machine type does not support if=ide,bus=0,unit=0" },
        { "file=%s,format=raw,node-name=#x", "Invalid node-name: '#x'" },
        { "file=%s,format=raw,id=#x", "Parameter 'id' expects an identifier" },
        { "file=%s.nope,format=raw", "Could not open" },
        { "file=%s,format=raw,file.locking=bogus", "invalid parameter value: bogus" },
        { "file=%s,format=raw,offset=5G", "Offset (5368709120) cannot be greater than size "
          "of the containing file (4194304)" },
        { "file=%s,format=raw,offset=1M,size=4M", "The sum of offset (1048576) and size "
          "(4194304) has to be smaller or equal to the  actual size of the containing file "
          "(4194304)" },
        { "file=%s,format=raw,size=1000", "Specified size is not multiple of 512" },
    };
    static const struct {
        const char *opts;
        const char *error;
    } blockdev_cases[] = {
        { "driver=raw,node-name=n0,file.driver=file,file.filename=%s,foo=1",
          "Parameter 'foo' is unexpected" },
        { "driver=raw,node-name=n0,file.driver=file,file.filename=%s,file.foo=1",
          "Parameter 'file.foo' is unexpected" },
        { "driver=bogus,node-name=n0,x=%s", "Parameter 'driver' does not accept value 'bogus'" },
        { "node-name=n0,x=%s", "Parameter 'driver' is missing" },
        { "driver=file,filename=%s", "'node-name' must be specified for the root node" },
        { "driver=raw,node-name=n0,x=%s", "Parameter 'file' is missing" },
        { "driver=raw,node-name=n0,file=nope,x=%s",
          "Cannot find device='nope' nor node-name='nope'" },
        { "driver=raw,node-name=n0,file.driver=file,file.filename=%s,discard=bad",
          "Parameter 'discard' does not accept value 'bad'" },
        { "driver=raw,node-name=n0,file.filename=%s", "Parameter 'file.driver' is missing" },
        { "{\"driver\":\"raw\",\"node-name\":\"n0\",\"file\":{\"driver\":\"file\","
          "\"filename\":\"%s\"},\"bad\":1}", "Parameter 'bad' is unexpected" },
        { "{\"driver\":\"raw\",%s", "JSON parse error" },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(drive_cases); i++) {
        BlockLayer *bl = block_layer_new();
        g_autofree char *opts = g_strdup_printf(drive_cases[i].opts, path);
        Error *err = NULL;

        g_assert_false(drive_parse(bl, opts, &err));
        assert_error(&err, drive_cases[i].error);
        block_layer_free(bl);
    }
    for (size_t i = 0; i < G_N_ELEMENTS(blockdev_cases); i++) {
        BlockLayer *bl = block_layer_new();
        g_autofree char *opts = g_strdup_printf(blockdev_cases[i].opts, path);
        Error *err = NULL;

        g_assert_false(blockdev_parse(bl, opts, &err));
        assert_error(&err, blockdev_cases[i].error);
        block_layer_free(bl);
    }
    /* Duplicates across options of one layer. */
    {
        BlockLayer *bl = open_drive("file=%s,format=raw,if=none,id=d0,node-name=n0", path);
        g_autofree char *dup_id = g_strdup_printf("file=%s,format=raw,id=d0", path);
        g_autofree char *dup_node = g_strdup_printf("file=%s,format=raw,node-name=n0", path);
        Error *err = NULL;

        g_assert_false(drive_parse(bl, dup_id, &err));
        assert_error(&err, "Duplicate ID 'd0' for drive");
        g_assert_false(drive_parse(bl, dup_node, &err));
        assert_error(&err, "Duplicate nodes with node-name='n0'");
        block_layer_free(bl);
    }
}

static void test_raw_offset_size(void)
{
    g_autofree char *path = make_image("window.img", IMG_SIZE);
    BlockLayer *bl = open_drive("file=%s,format=raw,if=none,id=d0,offset=1M,size=64K", path);
    BlockBackend *blk = blk_attach(bl, "d0", "virtio-blk-device at 0xfeb00e00",
                                   BLK_PERM_READ | BLK_PERM_WRITE, &error_abort);
    uint8_t buf[512];
    int fd;

    g_assert_cmpint(blk_getlength(blk), ==, 65536);
    memset(buf, 0x5a, sizeof(buf));
    g_assert_cmpint(rw(blk, true, 0, buf, sizeof(buf), 0), ==, 0);
    g_assert_cmpint(rw(blk, true, 65536, buf, sizeof(buf), 0), ==, -EIO);
    fd = open(path, O_RDONLY);
    memset(buf, 0, sizeof(buf));
    g_assert_cmpint(pread(fd, buf, sizeof(buf), 1024 * 1024), ==, sizeof(buf));
    g_assert_cmpint(buf[0], ==, 0x5a);
    close(fd);
    blk_detach(blk);
    block_layer_free(bl);
}

static char *make_testfmt(const char *name, const char *backing)
{
    char *path = make_image(name, TESTFMT_DATA + IMG_SIZE);
    char hdr[16 + 256] = TESTFMT_MAGIC;
    int fd = open(path, O_WRONLY);

    g_strlcpy(hdr + 16, backing ? backing : "", 256);
    g_assert_cmpint(pwrite(fd, hdr, sizeof(hdr), 0), ==, sizeof(hdr));
    close(fd);
    return path;
}

/* A -drive without format= probes; a format's backing opens by a relative name. */
static void test_probe_and_backing(void)
{
    g_autofree char *base = make_testfmt("base.tf", NULL);
    g_autofree char *top = make_testfmt("top.tf", "base.tf");
    g_autofree char *raw = make_image("probed.img", IMG_SIZE);
    BlockLayer *bl = open_drive("file=%s,if=none,id=d0", top);
    BlockBackend *blk = blk_attach(bl, "d0", "virtio-blk-device at 0xfeb00e00",
                                   BLK_PERM_READ | BLK_PERM_WRITE, &error_abort);
    BlockDriverState *bs = bdrv_find_node(bl, blk_node_name(blk));
    uint8_t sector[512] = TESTFMT_MAGIC;

    g_assert_cmpstr(bs->drv->format_name, ==, "testfmt");
    g_assert_cmpint(blk_getlength(blk), ==, IMG_SIZE);
    g_assert_nonnull(bs->backing);
    g_assert_cmpstr(bs->backing->filename, ==, base);
    g_assert_true(bs->backing->read_only);
    g_assert_cmpstr(bs->backing->drv->format_name, ==, "testfmt");
    /* A format's own file: read, write, resize, and nobody else writes or resizes. */
    g_assert_cmphex(locked_bytes(top), ==, 0xa0b);
    /* Its backing image: read, and nobody else writes or resizes it. */
    g_assert_cmphex(locked_bytes(base), ==, 0xa01);
    /* The format's guest bytes start after its header. */
    g_assert_cmpint(rw(blk, true, 0, sector, sizeof(sector), 0), ==, 0);
    blk_detach(blk);
    g_assert_cmphex(locked_bytes(top), ==, 0xa0b);     /* no device, still its own */
    block_layer_free(bl);
    g_assert_cmphex(locked_bytes(top) | locked_bytes(base), ==, 0);

    /* A probed raw image: block 0 must not turn into a format's header. */
    bl = open_drive("file=%s,if=none,id=d0", raw);
    blk = blk_attach(bl, "d0", "virtio-blk-device at 0xfeb00e00",
                     BLK_PERM_READ | BLK_PERM_WRITE, &error_abort);
    g_assert_cmpstr(bdrv_find_node(bl, blk_node_name(blk))->drv->format_name, ==, "raw");
    g_assert_cmpint(rw(blk, true, 0, sector, sizeof(sector), 0), ==, -EPERM);
    g_assert_cmpint(rw(blk, true, 0, sector + 8, 8, 0), ==, 0);     /* zeroes: fine */
    g_assert_cmpint(rw(blk, true, 512, sector, sizeof(sector), 0), ==, 0);
    blk_detach(blk);
    block_layer_free(bl);
    /* format=raw given: the user said what it is. */
    bl = open_drive("file=%s,if=none,id=d0,format=raw", raw);
    blk = blk_attach(bl, "d0", "virtio-blk-device at 0xfeb00e00",
                     BLK_PERM_READ | BLK_PERM_WRITE, &error_abort);
    g_assert_cmpint(rw(blk, true, 0, sector, sizeof(sector), 0), ==, 0);
    blk_detach(blk);
    block_layer_free(bl);
}

/*
 * Three layers (three processes, to the locks) on one image, in seeded
 * random steps: attach for read or write, detach, inactivate, activate.
 * A model predicts which steps succeed; after each step the invariant is
 * checked: at most one active layer writes the image, a writer is alone
 * among the active devices, and every active writer's write lands.
 */
#define NLAYERS 3

typedef struct LayerModel {
    BlockLayer *bl;
    BlockBackend *blk;          /* attached, or NULL */
    unsigned perm;
    bool active;
} LayerModel;

/* Whether layer @me's device with @perm fits beside the other active devices. */
static bool model_fits(LayerModel *m, int me, unsigned perm)
{
    for (int i = 0; i < NLAYERS; i++) {
        if (i == me || !m[i].active || !m[i].blk) {
            continue;
        }
        /* Every device unshares write, so a writer excludes every other device. */
        if ((perm & BLK_PERM_WRITE) || (m[i].perm & BLK_PERM_WRITE)) {
            return false;
        }
    }
    return true;
}

static void test_locks_random(void)
{
    g_autofree char *path = make_image("random.img", IMG_SIZE);
    LayerModel m[NLAYERS];
    uint8_t buf[512];

    for (int i = 0; i < NLAYERS; i++) {
        m[i] = (LayerModel) { .bl = open_drive("file=%s,format=raw,if=none,id=d0", path),
                              .active = true };
    }
    for (int step = 0; step < 2000; step++) {
        int me = g_test_rand_int_range(0, NLAYERS);
        LayerModel *l = &m[me];
        Error *err = NULL;
        int writers = 0;

        switch (g_test_rand_int_range(0, 4)) {
        case 0: {       /* attach */
            unsigned perm = BLK_PERM_READ |
                            (g_test_rand_int_range(0, 2) ? BLK_PERM_WRITE : 0);
            bool want;

            if (l->blk || !l->active) {
                break;
            }
            want = model_fits(m, me, perm);
            l->blk = blk_attach(l->bl, "d0", "virtio-blk-device at 0xfeb00e00", perm, &err);
            g_assert_true(!!l->blk == want);
            if (err) {
                g_assert_nonnull(strstr(error_get_pretty(err), "lock"));
                error_free(err);
            }
            l->perm = l->blk ? perm : 0;
            break;
        }
        case 1:         /* detach */
            blk_detach(l->blk);
            l->blk = NULL;
            l->perm = 0;
            break;
        case 2:         /* inactivate (a migration source handing over) */
            g_assert_cmpint(bdrv_inactivate_all(l->bl, &error_abort), ==, 0);
            l->active = false;
            break;
        case 3: {       /* activate (a destination at the switchover) */
            bool want = l->active || !l->blk || model_fits(m, me, l->perm);
            int ret = bdrv_activate_all(l->bl, &err);

            g_assert_true((ret == 0) == want);
            error_free(err);
            l->active = ret == 0;
            break;
        }
        }

        /* The invariant, on the real layers. */
        for (int i = 0; i < NLAYERS; i++) {
            if (m[i].blk && m[i].active && (m[i].perm & BLK_PERM_WRITE)) {
                writers++;
                g_assert_true(model_fits(m, i, m[i].perm));
                memset(buf, step & 0xff, sizeof(buf));
                g_assert_cmpint(rw(m[i].blk, true, 0, buf, sizeof(buf), 0), ==, 0);
            } else if (m[i].blk) {
                g_assert_cmpint(rw(m[i].blk, true, 0, buf, sizeof(buf), 0), ==,
                                -EPERM);
            }
        }
        g_assert_cmpint(writers, <=, 1);
        g_assert_true(!!(locked_bytes(path) & 0x2) == (writers == 1));
    }
    for (int i = 0; i < NLAYERS; i++) {
        blk_detach(m[i].blk);
        block_layer_free(m[i].bl);
    }
    g_assert_cmphex(locked_bytes(path), ==, 0);
}

/*
 * QEMU 7.2 and us on one image, when it is installed: whoever has it with a
 * writing device first keeps the other out, with QEMU's message both ways.
 */
#define QEMU72 "/usr/bin/qemu-system-x86_64"

static GPid qemu_spawn(const char *path, GError **gerr, int *err_fd)
{
    g_autofree char *drive = g_strdup_printf("file=%s,if=none,id=d0,format=raw", path);
    const char *argv[] = {
        QEMU72, "-M", "microvm", "-nodefaults", "-display", "none", "-S",
        "-drive", drive, "-device", "virtio-blk-device,drive=d0", NULL,
    };
    GPid pid = 0;

    g_assert_true(g_spawn_async_with_pipes(NULL, (char **)argv, NULL,
                                           G_SPAWN_DO_NOT_REAP_CHILD |
                                           G_SPAWN_STDOUT_TO_DEV_NULL,
                                           NULL, NULL, &pid, NULL, NULL, err_fd, gerr));
    return pid;
}

static void test_qemu_interop(void)
{
    g_autofree char *path = make_image("interop.img", IMG_SIZE);
    BlockLayer *bl;
    BlockBackend *blk;
    Error *err = NULL;
    GPid pid;
    int err_fd, status;
    char msg[4096] = "";
    ssize_t n, got = 0;

    if (!g_file_test(QEMU72, G_FILE_TEST_IS_EXECUTABLE)) {
        g_test_skip("QEMU 7.2 is not installed");
        return;
    }
    /* QEMU first: once its write byte shows, our attach is refused. */
    pid = qemu_spawn(path, NULL, &err_fd);
    for (int i = 0; i < 1000 && locked_bytes(path) != 0x203; i++) {
        g_usleep(10 * 1000);
    }
    g_assert_cmphex(locked_bytes(path), ==, 0x203);
    bl = open_drive("file=%s,format=raw,if=none,id=d0", path);
    g_assert_null(blk_attach(bl, "d0", "virtio-blk-device at 0xfeb00e00",
                             BLK_PERM_READ | BLK_PERM_WRITE, &err));
    g_assert_nonnull(err);
    g_assert_cmpstr(error_get_pretty(err), ==, "Failed to get \"write\" lock");
    error_free(err);
    err = NULL;
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    g_spawn_close_pid(pid);
    close(err_fd);

    /* Us first: QEMU exits with its own message. */
    blk = blk_attach(bl, "d0", "virtio-blk-device at 0xfeb00e00",
                     BLK_PERM_READ | BLK_PERM_WRITE, &error_abort);
    pid = qemu_spawn(path, NULL, &err_fd);
    while ((n = read(err_fd, msg + got, sizeof(msg) - 1 - got)) > 0) {
        got += n;
    }
    msg[got] = 0;
    waitpid(pid, &status, 0);
    g_spawn_close_pid(pid);
    close(err_fd);
    g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    g_assert_nonnull(strstr(msg, "Failed to get \"write\" lock"));
    g_assert_nonnull(strstr(msg, "Is another process using the image"));
    blk_detach(blk);
    block_layer_free(bl);
}

int main(int argc, char **argv)
{
    int ret;

    g_test_init(&argc, &argv, NULL);
    tmpdir = g_dir_make_tmp("test-block-XXXXXX", NULL);
    g_assert_nonnull(tmpdir);
    g_test_add_func("/block/rw", test_rw);
    g_test_add_func("/block/threads", test_threads);
    g_test_add_func("/block/locks", test_locks);
    g_test_add_func("/block/readonly", test_readonly);
    g_test_add_func("/block/attach", test_attach);
    g_test_add_func("/block/error-policy", test_error_policy);
    g_test_add_func("/block/bad-options", test_bad_options);
    g_test_add_func("/block/raw-offset-size", test_raw_offset_size);
    g_test_add_func("/block/probe-and-backing", test_probe_and_backing);
    g_test_add_func("/block/locks-random", test_locks_random);
    g_test_add_func("/block/qemu-interop", test_qemu_interop);
    ret = g_test_run();
    {
        g_autoptr(GDir) d = g_dir_open(tmpdir, 0, NULL);
        const char *name;

        while (d && (name = g_dir_read_name(d))) {
            g_autofree char *p = g_build_filename(tmpdir, name, NULL);

            unlink(p);
        }
    }
    rmdir(tmpdir);
    return ret;
}

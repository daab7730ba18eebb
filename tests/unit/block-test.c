/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the block layer's unit tests share (block-test.h): fakes of the
 * two functions block/ calls outside itself, a qcow2-like format row and
 * the table of rows the tests' layers have, and helpers on real images.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "block-test.h"

/* ---- Fakes of what backend.c calls outside block/ ---- */

/*
 * What the fakes saw: the fake functions have no instance to write to, so
 * this one does (the tests' main thread only).
 */
Fakes block_test_fakes;

void qapi_event_send_block_io_error(const char *device, const char *node_name,
                                    IoOperationType operation, BlockIOErrorAction action,
                                    bool has_nospace, bool nospace, const char *reason)
{
    g_free(block_test_fakes.ev.device);
    g_free(block_test_fakes.ev.node_name);
    g_free(block_test_fakes.ev.reason);
    block_test_fakes.ev.device = g_strdup(device);
    block_test_fakes.ev.node_name = g_strdup(node_name);
    block_test_fakes.ev.reason = g_strdup(reason);
    block_test_fakes.ev.operation = operation;
    block_test_fakes.ev.action = action;
    block_test_fakes.ev.has_nospace = has_nospace;
    block_test_fakes.ev.nospace = nospace;
    block_test_fakes.ev.count++;
}

void qemu_system_vmstop_request(RunState state)
{
    block_test_fakes.stops++;
    block_test_fakes.stop_state = state;
}

/*
 * ---- A fake format row, "testfmt" ----
 * A 4 KiB header ("TESTFMT" and NUL, a backing file name at 16) before the
 * guest's bytes. It probes, opens a backing image by name, and takes its
 * file for itself (perm_passthrough false), as qcow2 does, so the core's
 * probing, backing and permission rules are tested before qcow2 exists.
 */
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


/* The directory of the images (set up by block_test_init). */
static char *tmpdir;

char *make_image(const char *name, uint64_t size)
{
    char *path = g_build_filename(tmpdir, name, NULL);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(ftruncate(fd, size), ==, 0);
    close(fd);
    return path;
}

/* *@errp holds an error saying @want; it is freed and *@errp is NULL again. */
void assert_error(Error **errp, const char *want)
{
    g_assert_nonnull(*errp);
    if (!strstr(error_get_pretty(*errp), want)) {
        g_error("error '%s' lacks '%s'", error_get_pretty(*errp), want);
    }
    error_free(*errp);
    *errp = NULL;
}

BlockLayer *open_drive(const char *fmt, ...)
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

int rw(BlockBackend *blk, bool write, uint64_t off, void *buf, size_t len, int flags)
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
unsigned locked_bytes(const char *path)
{
    unsigned mask = 0;

    for (int b = 0; b < 4; b++) {
        mask |= byte_locked(path, 100 + b) ? 1u << b : 0;
        mask |= byte_locked(path, 200 + b) ? 1u << (8 + b) : 0;
    }
    return mask;
}

char *make_testfmt(const char *name, const char *backing)
{
    char *path = make_image(name, TESTFMT_DATA + IMG_SIZE);
    char hdr[16 + 256] = TESTFMT_MAGIC;
    int fd = open(path, O_WRONLY);

    g_strlcpy(hdr + 16, backing ? backing : "", 256);
    g_assert_cmpint(pwrite(fd, hdr, sizeof(hdr), 0), ==, sizeof(hdr));
    close(fd);
    return path;
}

void block_test_init(int *argc, char ***argv)
{
    g_test_init(argc, argv, NULL);
    tmpdir = g_dir_make_tmp("test-block-XXXXXX", NULL);
    g_assert_nonnull(tmpdir);
}

int block_test_run(void)
{
    int ret = g_test_run();
    g_autoptr(GDir) d = g_dir_open(tmpdir, 0, NULL);
    const char *name;

    while (d && (name = g_dir_read_name(d))) {
        g_autofree char *p = g_build_filename(tmpdir, name, NULL);

        unlink(p);
    }
    rmdir(tmpdir);
    return ret;
}

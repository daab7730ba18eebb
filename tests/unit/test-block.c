/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for the block layer core (block/): raw over file on real
 * temporary files, opened as -drive and -blockdev do it.
 *   - requests: read back what was written, zeroes (allocating and
 *     punching), discard, flush, FUA; bounds and overflow refused before
 *     the file sees them; two threads writing at once;
 *   - attach: QEMU's messages for an unknown drive and a drive in use;
 *     -blockdev nodes by name and in JSON;
 *   - werror/rerror: the action for each errno and the BLOCK_IO_ERROR
 *     event's fields (a fake event sender records them), the stop request;
 *   - option errors in QEMU's words for -drive and -blockdev;
 *   - raw's offset= and size=; format probing and a backing image by a
 *     relative name, with a fake qcow2-like row (block-test.c).
 * The image locks are test-block-locks.c's.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bufferiszero.h"
#include "block-test.h"

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

/*
 * cache=none with buffers that are not page aligned (g_malloc's, as an
 * NBD payload's or a copy job's): the data is right and goes around the
 * page cache (a bounce buffer, not the buffered open), so nothing of the
 * file is resident after it (where the filesystem has O_DIRECT at all).
 */
static void test_direct_unaligned_memory(void)
{
    g_autofree char *path = make_image("direct.img", IMG_SIZE);
    BlockLayer *bl = open_drive("file=%s,format=raw,if=none,id=d0,cache=none", path);
    BlockBackend *blk = blk_attach(bl, "d0", "virtio-blk-device at 0xfeb00e00",
                                   BLK_PERM_READ | BLK_PERM_WRITE, &error_abort);
    g_autofree uint8_t *mem = g_malloc(3 * 65536), *back_mem = g_malloc(3 * 65536);
    uint8_t *buf = mem + 4096 - ((uintptr_t)mem % 4096) + 8;     /* 8 past a page */
    uint8_t *back = back_mem + 4096 - ((uintptr_t)back_mem % 4096) + 24;
    struct iovec parts[3] = { { buf, 512 }, { buf + 512, 3072 }, { buf + 3584, 65536 - 3584 } };
    unsigned char vec[IMG_SIZE / 4096];
    int fd = open(path, O_RDONLY | O_DIRECT);
    bool direct = fd >= 0;
    void *map;

    if (fd >= 0) {
        close(fd);
    }
    for (int i = 0; i < 65536; i++) {
        buf[i] = i * 13 + 5;
    }
    g_assert_cmpint(blk_pwritev(blk, 8192, parts, 3, 0), ==, 0);
    g_assert_cmpint(rw(blk, false, 8192, back, 65536, 0), ==, 0);
    g_assert_cmpmem(buf, 65536, back, 65536);
    /* An unaligned length still works (the buffered open). */
    g_assert_cmpint(rw(blk, true, 100000, buf, 1000, 0), ==, 0);
    g_assert_cmpint(rw(blk, false, 100000, back, 1000, 0), ==, 0);
    g_assert_cmpmem(buf, 1000, back, 1000);
    blk_detach(blk);
    block_layer_free(bl);
    if (direct) {
        fd = open(path, O_RDONLY);
        map = mmap(NULL, IMG_SIZE, PROT_READ, MAP_SHARED, fd, 0);
        g_assert_true(map != MAP_FAILED);
        g_assert_cmpint(mincore(map, IMG_SIZE, vec), ==, 0);
        /* Pages 2..17 are the aligned request's: none came through the page cache. */
        for (int i = 2; i < 18; i++) {
            g_assert_cmpint(vec[i] & 1, ==, 0);
        }
        munmap(map, IMG_SIZE);
        close(fd);
    }
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

/* Block status over raw and file, a user backend beside a device's, an export's activation. */
static void test_status_and_user(void)
{
    g_autofree char *path = make_image("status.img", IMG_SIZE);
    BlockLayer *bl = block_layer_new();
    g_autofree char *opts = g_strdup_printf("file=%s,format=raw,if=none,id=d0", path);
    g_autofree uint8_t *buf = g_malloc(65536);
    BlockBackend *dev, *user, *other;
    BlockDriverState *bs;
    Error *err = NULL;
    uint64_t pnum;
    unsigned st;

    /* A destination's image: inactive, no request, until the export activates it. */
    block_layer_set_incoming(bl);
    g_assert_true(drive_parse(bl, opts, &error_abort));
    dev = blk_attach(bl, "d0", "virtio-blk-device at 0xfeb00e00",
                     BLK_PERM_READ | BLK_PERM_WRITE, &error_abort);
    g_assert_null(blk_attach_user(bl, "x", "nbd export 'x'", BLK_PERM_READ, &err));
    assert_error(&err, "Cannot find device='x' nor node-name='x'");
    user = blk_attach_user(bl, "d0", "nbd export 'd0'", BLK_PERM_READ | BLK_PERM_WRITE,
                           &error_abort);
    bs = bdrv_find_node(bl, blk_node_name(user));
    g_assert_cmpint(blk_block_status(user, 0, 4096, &pnum, &st), ==, -EPERM);
    g_assert_cmpint(bdrv_activate(bs, &error_abort), ==, 0);
    g_assert_false(bs->open_flags & BDRV_O_INACTIVE);
    g_assert_false(bs->file->open_flags & BDRV_O_INACTIVE);
    /* A device still cannot take the node by name: the user's backend is not a drive. */
    other = blk_attach(bl, blk_node_name(user), "vd1", BLK_PERM_READ, &err);
    g_assert_null(other);
    assert_error(&err, "is already in use by another device");

    memset(buf, 0x5a, 65536);
    g_assert_cmpint(rw(user, true, 1 << 20, buf, 65536, 0), ==, 0);
    g_assert_cmpint(blk_block_status(user, 0, IMG_SIZE, &pnum, &st), ==, 0);
    if (st & BDRV_BLOCK_DATA) {
        g_test_message("no SEEK_HOLE on this file system: data everywhere");
        g_assert_cmpuint(pnum, ==, IMG_SIZE);
    } else {
        g_assert_cmpuint(st, ==, BDRV_BLOCK_ZERO | BDRV_BLOCK_ALLOCATED);
        g_assert_cmpuint(pnum, ==, 1 << 20);
        g_assert_cmpint(blk_block_status(user, 1 << 20, IMG_SIZE - (1 << 20), &pnum, &st), ==,
                        0);
        g_assert_cmpuint(st, ==, BDRV_BLOCK_DATA | BDRV_BLOCK_ALLOCATED);
        g_assert_cmpuint(pnum, >=, 65536);
        g_assert_cmpuint(pnum, <, IMG_SIZE - (1 << 20));
    }
    /* Past the end of the format node, nothing; an empty range is refused. */
    g_assert_cmpint(blk_block_status(user, IMG_SIZE - 512, 1024, &pnum, &st), ==, -EIO);
    g_assert_cmpint(blk_block_status(user, 0, 0, &pnum, &st), ==, -EINVAL);
    /* The switchover's activation leaves the active node alone and succeeds. */
    g_assert_cmpint(bdrv_activate_all(bl, &error_abort), ==, 0);
    g_assert_cmpint(rw(dev, false, 1 << 20, buf, 65536, 0), ==, 0);
    g_assert_cmpint(buf[0], ==, 0x5a);
    blk_detach(user);
    blk_detach(dev);
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

    memset(&block_test_fakes, 0, sizeof(block_test_fakes));
    blk_error_action(blk, BLOCK_ERROR_ACTION_STOP, false, ENOSPC);
    g_assert_cmpint(block_test_fakes.ev.count, ==, 1);
    g_assert_cmpstr(block_test_fakes.ev.device, ==, "d0");
    g_assert_cmpstr(block_test_fakes.ev.node_name, ==, blk_node_name(blk));
    g_assert_cmpint(block_test_fakes.ev.operation, ==, IO_OPERATION_TYPE_WRITE);
    g_assert_cmpint(block_test_fakes.ev.action, ==, BLOCKIO_ERROR_ACTION_STOP);
    g_assert_true(block_test_fakes.ev.has_nospace && block_test_fakes.ev.nospace);
    g_assert_cmpstr(block_test_fakes.ev.reason, ==, strerror(ENOSPC));
    g_assert_cmpint(block_test_fakes.stops, ==, 1);
    g_assert_cmpint(block_test_fakes.stop_state, ==, RUN_STATE_IO_ERROR);

    blk_error_action(blk, BLOCK_ERROR_ACTION_REPORT, true, EIO);
    g_assert_cmpint(block_test_fakes.ev.count, ==, 2);
    g_assert_cmpint(block_test_fakes.ev.operation, ==, IO_OPERATION_TYPE_READ);
    g_assert_cmpint(block_test_fakes.ev.action, ==, BLOCKIO_ERROR_ACTION_REPORT);
    g_assert_false(block_test_fakes.ev.nospace);
    g_assert_cmpint(block_test_fakes.stops, ==, 1);
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
    g_assert_false(block_test_fakes.ev.has_nospace);       /* no stop policy: QEMU leaves it out */
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
        { "file=%s,format=raw,if=none,serial=x",
          "Block format 'raw' does not support the option 'serial'" },
        { "file=%s,format=raw,if=none,snapshot=on",
          "-drive snapshot= is not supported by this machine" },
        { "file=%s,format=raw,if=none,foo=1",
          "Block format 'raw' does not support the option 'foo'" },
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

int main(int argc, char **argv)
{
    block_test_init(&argc, &argv);
    g_test_add_func("/block/rw", test_rw);
    g_test_add_func("/block/threads", test_threads);
    g_test_add_func("/block/direct-unaligned-memory", test_direct_unaligned_memory);
    g_test_add_func("/block/attach", test_attach);
    g_test_add_func("/block/status-and-user", test_status_and_user);
    g_test_add_func("/block/error-policy", test_error_policy);
    g_test_add_func("/block/bad-options", test_bad_options);
    g_test_add_func("/block/raw-offset-size", test_raw_offset_size);
    g_test_add_func("/block/probe-and-backing", test_probe_and_backing);
    return block_test_run();
}

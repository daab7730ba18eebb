/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qcow2 through the real block layer (block/: -drive, backends, the file
 * row, image locks, activation), on images QEMU's qemu-img makes and
 * then judges:
 *   - a -drive of a qcow2 image with a relative raw backing name: the
 *     format probed, the chain opened; seeded random writes, zeroes,
 *     discards (discard=unmap) and reads through a backend against a
 *     model; afterwards qemu-img check finds no error or leak and
 *     qemu-img compare finds the model;
 *   - the lock bytes are QEMU 7.2's for a qcow2 drive, and while our
 *     backend writes the image QEMU's qemu-img cannot open it;
 *   - a migration handover between two layers (a source and a destination
 *     started with -incoming): the destination opens inactive, the source
 *     writes, inactivates, the destination activates and reads everything,
 *     writes, and QEMU finds the result consistent.
 * Skipped without qemu-img (qemu-utils, scripts/install-deps.sh).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-events.h"
#include "block/block.h"
#include "system/runstate.h"
#include "system/user-objects.h"

#define SEED 0x51c0

/* ---- Fakes of what backend.c calls outside block/ (no error policy is exercised) ---- */

void qapi_event_send_block_io_error(const char *device, const char *node_name,
                                    IoOperationType operation, BlockIOErrorAction action,
                                    bool has_nospace, bool nospace, const char *reason)
{
    g_assert_not_reached();
}

void qemu_system_vmstop_request(RunState state)
{
    g_assert_not_reached();
}

/* The nbd row's tls-creds= lookup (system/control/user-objects.c): no objects here. */
TLSCreds *user_objects_tls_creds(const char *id, Error **errp)
{
    error_setg(errp, "No TLS credentials with id '%s'", id);
    return NULL;
}

/* ---- Helpers ---- */

static char *tmpdir;

static bool have_qemu_img(void)
{
    g_autofree char *p = g_find_program_in_path("qemu-img");

    if (!p) {
        g_test_skip("qemu-img not installed (qemu-utils, scripts/install-deps.sh)");
    }
    return p != NULL;
}

static int run(char **out, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static int run(char **out, const char *fmt, ...)
{
    g_autofree char *cmd = NULL, *o = NULL, *e = NULL;
    GError *err = NULL;
    int status;
    va_list ap;

    va_start(ap, fmt);
    cmd = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (!g_spawn_command_line_sync(cmd, &o, &e, &status, &err)) {
        g_error("%s: %s", cmd, err->message);
    }
    if (out) {
        *out = g_strconcat(o, e, NULL);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
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

/* QEMU's lock bytes held on @path: bit b for byte 100 + b, bit 8 + b for 200 + b. */
static unsigned locked_bytes(const char *path)
{
    unsigned mask = 0;

    for (int b = 0; b < 4; b++) {
        mask |= byte_locked(path, 100 + b) ? 1u << b : 0;
        mask |= byte_locked(path, 200 + b) ? 1u << (8 + b) : 0;
    }
    return mask;
}

static BlockLayer *open_drive(bool incoming, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static BlockLayer *open_drive(bool incoming, const char *fmt, ...)
{
    BlockLayer *bl = block_layer_new();
    g_autofree char *opts = NULL;
    va_list ap;

    va_start(ap, fmt);
    opts = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (incoming) {
        block_layer_set_incoming(bl);
    }
    g_assert_true(drive_parse(bl, opts, &error_abort));
    return bl;
}

static BlockBackend *attach(BlockLayer *bl)
{
    return blk_attach(bl, "d0", "virtio-blk-device at 0xfeb00e00",
                      BLK_PERM_READ | BLK_PERM_WRITE, &error_abort);
}

static void check_all(BlockBackend *blk, const uint8_t *model, uint64_t size)
{
    g_autofree uint8_t *buf = g_malloc(size);
    struct iovec v = { buf, size };

    g_assert_cmpint(blk_preadv(blk, 0, &v, 1), ==, 0);
    g_assert_true(memcmp(buf, model, size) == 0);
}

/* Writes, zeroes, discards and reads at random, the model kept alongside. */
static void random_io(BlockBackend *blk, uint8_t *model, uint64_t size, GRand *r, int steps)
{
    g_autofree uint8_t *buf = g_malloc(256 * KiB);

    for (int i = 0; i < steps; i++) {
        uint64_t len = g_rand_int_range(r, 1, 512) * 512;
        uint64_t off = g_rand_int_range(r, 0, (size - len) / 512 + 1) * 512ull;
        struct iovec v = { buf, len };
        int op = g_rand_int_range(r, 0, 8);

        if (op < 4) {
            memset(buf, g_rand_int(r), len);
            g_assert_cmpint(blk_pwritev(blk, off, &v, 1, op == 3 ? BDRV_REQ_FUA : 0), ==, 0);
            memcpy(model + off, buf, len);
        } else if (op == 4) {
            g_assert_cmpint(blk_pwrite_zeroes(blk, off, len, BDRV_REQ_MAY_UNMAP), ==, 0);
            memset(model + off, 0, len);
        } else if (op == 5) {
            /* With a backing file, v3 discards to zero clusters; the rest stays. */
            g_assert_cmpint(blk_pdiscard(blk, off, len), ==, 0);
            g_assert_cmpint(blk_preadv(blk, off, &v, 1), ==, 0);
            for (uint64_t j = 0; j < len; j++) {
                g_assert_true(buf[j] == model[off + j] || buf[j] == 0);
            }
            memcpy(model + off, buf, len);
        } else {
            g_assert_cmpint(blk_preadv(blk, off, &v, 1), ==, 0);
            g_assert_true(memcmp(buf, model + off, len) == 0);
        }
    }
}

/* QEMU's verdict on the image: no error, no leak, the model's bytes. */
static void qemu_judges(const char *img, const uint8_t *model, uint64_t size)
{
    g_autofree char *raw = g_build_filename(tmpdir, "model.raw", NULL);
    g_autofree char *out = NULL;

    g_assert_true(g_file_set_contents(raw, (const char *)model, size, NULL));
    g_assert_cmpint(run(&out, "qemu-img check -f qcow2 %s", img), ==, 0);
    g_assert_null(strstr(out, "leaked"));
    g_assert_cmpint(run(NULL, "qemu-img compare -f qcow2 -F raw %s %s", img, raw), ==, 0);
}

/* An image over a relative raw backing file, the model holding the backing bytes. */
static char *make_image(const char *name, uint64_t size, uint8_t *model, GRand *r)
{
    g_autofree char *base = g_build_filename(tmpdir, "base.raw", NULL);
    char *img = g_build_filename(tmpdir, name, NULL);
    uint64_t blen = size / 2 + 4096;
    g_autofree uint8_t *bdata = g_malloc(blen);

    for (uint64_t i = 0; i < blen; i++) {
        bdata[i] = g_rand_int(r);
    }
    g_assert_true(g_file_set_contents(base, (const char *)bdata, blen, NULL));
    memset(model, 0, size);
    memcpy(model, bdata, blen);
    /* -u: the backing name stays relative ("base.raw"), as the layer must resolve it. */
    g_assert_cmpint(run(NULL, "sh -c 'cd %s && qemu-img create -q -f qcow2 -u -b base.raw "
                        "-F raw -o cluster_size=4096 %s %" PRIu64 "'", tmpdir, name, size),
                    ==, 0);
    return img;
}

/* ---- Tests ---- */

static void test_drive(void)
{
    uint64_t size = 8 * MiB;
    g_autofree uint8_t *model = g_malloc(size);
    GRand *r = g_rand_new_with_seed(SEED);
    g_autofree char *img = NULL;
    g_autofree char *out = NULL;
    BlockLayer *bl;
    BlockBackend *blk;

    if (!have_qemu_img()) {
        return;
    }
    img = make_image("drive.qcow2", size, model, r);
    bl = open_drive(false, "file=%s,if=none,id=d0,discard=unmap", img);
    /* QEMU 7.2's bytes for a read-write qcow2 drive: 100, 101, 103, 201, 203. */
    g_assert_cmphex(locked_bytes(img), ==, 0xa0b);
    blk = attach(bl);
    g_assert_cmphex(locked_bytes(img), ==, 0xa0b);
    g_assert_cmpint(blk_getlength(blk), ==, size);
    check_all(blk, model, size);
    random_io(blk, model, size, r, 400);
    check_all(blk, model, size);
    g_assert_cmpint(blk_flush(blk), ==, 0);

    /* Our write lock is QEMU's: qemu-img may not even read the image now. */
    g_assert_cmpint(run(&out, "qemu-img check -f qcow2 %s", img), !=, 0);
    g_assert_nonnull(strstr(out, "lock"));

    blk_detach(blk);
    block_layer_free(bl);
    qemu_judges(img, model, size);
    g_rand_free(r);
}

static void test_handover(void)
{
    uint64_t size = 4 * MiB;
    g_autofree uint8_t *model = g_malloc(size);
    GRand *r = g_rand_new_with_seed(SEED + 1);
    g_autofree char *img = NULL;
    BlockLayer *src, *dst;
    BlockBackend *bsrc, *bdst;

    if (!have_qemu_img()) {
        return;
    }
    img = make_image("handover.qcow2", size, model, r);
    src = open_drive(false, "file=%s,if=none,id=d0,discard=unmap", img);
    bsrc = attach(src);
    /* The destination started with -incoming: it opens the image without taking it. */
    dst = open_drive(true, "file=%s,if=none,id=d0,discard=unmap", img);
    bdst = attach(dst);
    g_assert_cmphex(locked_bytes(img), ==, 0xa0b);      /* the source's alone */

    random_io(bsrc, model, size, r, 200);
    g_assert_cmpint(bdrv_inactivate_all(src, &error_abort), ==, 0);
    g_assert_cmphex(locked_bytes(img), ==, 0);
    g_assert_cmpint(bdrv_activate_all(dst, &error_abort), ==, 0);
    g_assert_cmphex(locked_bytes(img), ==, 0xa0b);
    check_all(bdst, model, size);
    random_io(bdst, model, size, r, 200);
    /* And back, as after a failed migration the source takes its image again. */
    g_assert_cmpint(bdrv_inactivate_all(dst, &error_abort), ==, 0);
    g_assert_cmpint(bdrv_activate_all(src, &error_abort), ==, 0);
    check_all(bsrc, model, size);
    random_io(bsrc, model, size, r, 100);

    blk_detach(bdst);
    block_layer_free(dst);
    blk_detach(bsrc);
    block_layer_free(src);
    qemu_judges(img, model, size);
    g_rand_free(r);
}

int main(int argc, char **argv)
{
    int ret;

    g_test_init(&argc, &argv, NULL);
    tmpdir = g_dir_make_tmp("test-block-qcow2-XXXXXX", NULL);
    g_test_add_func("/block-qcow2/drive", test_drive);
    g_test_add_func("/block-qcow2/handover", test_handover);
    ret = g_test_run();
    run(NULL, "rm -rf %s", tmpdir);
    g_free(tmpdir);
    return ret;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for the block layer's image locks (block/file-posix.c's
 * set_lock, block.c's bdrv_refresh_perms) on real temporary files:
 *   - two layers on one image exclude each other as two processes do (OFD
 *     locks belong to the open file description), on QEMU 7.2's bytes,
 *     read from a third open; inactivation drops them and refuses
 *     requests, activation takes them back or fails without changing
 *     anything; a read-only device's bytes;
 *   - three layers in seeded random steps against a model of the locks;
 *   - QEMU 7.2 (when installed) and this layer on one image: each keeps the
 *     other out while it has a writing device, with QEMU's message.
 */
#include "qemu/osdep.h"
#include <sys/wait.h>
#include "qapi/error.h"
#include "block-test.h"

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
    block_test_init(&argc, &argv);
    g_test_add_func("/block-locks/two-layers", test_locks);
    g_test_add_func("/block-locks/readonly", test_readonly);
    g_test_add_func("/block-locks/random", test_locks_random);
    g_test_add_func("/block-locks/qemu-interop", test_qemu_interop);
    return block_test_run();
}

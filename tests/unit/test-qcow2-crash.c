/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Crash tests of the qcow2 row (block/qcow2*.c) over the test block
 * layer's journaling memory row (block-fake.h). See test_crash() below;
 * the other qcow2 unit tests are in test-qcow2.c.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "block/qcow2-int.h"
#include "block-fake.h"
#include "qcow2-test.h"

#define SEED 0x9c0e2

/*
 * ---- Crashes ----
 * The image lives in a journaling memory row (block-fake.h): at random
 * points, what a power cut could leave (the bytes as of the last flush plus
 * any subset of the writes since) goes to a file, and then: `qemu-img
 * check` finds no error (leaks are allowed: exit status 0 or 3), and every
 * guest byte not written since the guest's last flush reads as it was then.
 * This is the ordering argument of qcow2-refcount.c and qcow2-cache.c
 * tested: remove a flush between refcounts and L2 entries, and it fails.
 */
typedef struct CrashCfg {
    const char *name;
    const char *create_opts;
    uint64_t size;
    uint64_t max_len;
    /*
     * Every L2 table allocated first (the image filled, then discarded),
     * then only writes and crashes: no flush but what the caches' order
     * needs, so L2 tables are evicted with entries whose refcounts are
     * not yet stable (new L2 tables and frees flush, and hide it).
     */
    bool writes_only;
} CrashCfg;

static const CrashCfg crash_cfgs[] = {
    { "mixed-4k", "cluster_size=4096", 4 * MiB, 40 * KiB },
    { "mixed-512", "cluster_size=512,refcount_bits=64", 4 * MiB, 16 * KiB },
    { "writes-only-512", "cluster_size=512", 4 * MiB, 4 * KiB, .writes_only = true },
};

static void test_crash(gconstpointer opaque)
{
    const CrashCfg *cfg = opaque;
    g_autofree char *img = path("crash.qcow2");
    g_autofree char *left = path("crash-left.qcow2");
    g_autofree char *data = NULL;
    g_autofree uint8_t *model = g_malloc0(cfg->size);
    g_autofree uint8_t *stable = g_malloc0(cfg->size);     /* the model at the last flush */
    g_autofree uint8_t *since = g_malloc0(cfg->size);      /* 1: written since that flush */
    g_autofree uint8_t *buf = g_malloc(cfg->max_len);
    GRand *r = g_rand_new_with_seed(SEED + 3);
    BlockDriverState *file, *bs;
    GByteArray *bytes;
    gsize len;
    int crashes = 0;

    if (!have_qemu_img()) {
        return;
    }
    g_assert_cmpint(run(NULL, "qemu-img create -q -f qcow2 -o %s %s %" PRIu64,
                        cfg->create_opts, img, cfg->size), ==, 0);
    g_assert_true(g_file_get_contents(img, &data, &len, NULL));
    bytes = g_byte_array_new();
    g_byte_array_append(bytes, (const uint8_t *)data, len);
    file = fake_mem_open(bytes, 256 * MiB);
    fake_mem_journal(file);
    bs = fake_format_open(&bdrv_qcow2, file, BDRV_O_RDWR | BDRV_O_UNMAP, &error_abort);
    if (cfg->writes_only) {
        memset(buf, 0x5a, cfg->max_len);
        for (uint64_t off = 0; off < cfg->size; off += cfg->max_len) {
            g_assert_cmpint(bdrv_pwrite(bs, off, buf, cfg->max_len, 0), ==, 0);
        }
        g_assert_cmpint(bs->drv->pdiscard(bs, 0, cfg->size), ==, 0);
        g_assert_cmpint(bs->drv->flush(bs), ==, 0);
    }

    for (int step = 0; step < 1200; step++) {
        uint64_t n = g_rand_int_range(r, 1, cfg->max_len + 1);
        uint64_t off = (uint64_t)g_rand_double_range(r, 0, cfg->size - n + 1);
        /* Crashes are dear (qemu-img check): 1 in 40 steps, many requests between. */
        int op = g_rand_int_range(r, 0, 40);

        if (cfg->writes_only && op < 39) {
            op = 0;
        }

        if (op < 24) {
            struct iovec v = { buf, n };

            memset(buf, g_rand_int(r), n);
            g_assert_cmpint(bs->drv->pwritev(bs, off, n, &v, 1, 0), ==, 0);
            memcpy(model + off, buf, n);
            memset(since + off, 1, n);
        } else if (op < 32) {
            g_assert_cmpint(bs->drv->pwrite_zeroes(bs, off, n, op & 1 ? BDRV_REQ_MAY_UNMAP : 0),
                            ==, 0);
            memset(model + off, 0, n);
            memset(since + off, 1, n);
        } else if (op < 36) {
            /* Whole clusters read zeroes after it (no backing file), the rest is untouched. */
            uint64_t cs = ((BDRVQcow2State *)bs->opaque)->cluster_size;
            uint64_t first = QEMU_ALIGN_UP(off, cs), end = QEMU_ALIGN_DOWN(off + n, cs);

            g_assert_cmpint(bs->drv->pdiscard(bs, off, n), ==, 0);
            if (first < end) {
                memset(model + first, 0, end - first);
                memset(since + first, 1, end - first);
            }
        } else if (op < 39) {
            g_assert_cmpint(bs->drv->flush(bs), ==, 0);
            memcpy(stable, model, cfg->size);
            memset(since, 0, cfg->size);
        } else {
            GByteArray *crashed = fake_mem_crash(file, r);
            g_autofree uint8_t *got = g_malloc(cfg->size);
            g_autofree char *out = NULL;
            struct iovec v = { got, cfg->size };
            BlockDriverState *after;
            int rc;

            g_assert_true(g_file_set_contents(left, (const char *)crashed->data, crashed->len,
                                              NULL));
            g_byte_array_unref(crashed);
            rc = run(&out, "qemu-img check -f qcow2 %s", left);
            if (rc != 0 && rc != 3) {
                g_error("%s, step %d: the image a crash left has errors:\n%s",
                        cfg->name, step, out);
            }
            after = open_ok(left, 0);
            g_assert_cmpint(after->drv->preadv(after, 0, cfg->size, &v, 1), ==, 0);
            for (uint64_t i = 0; i < cfg->size; i++) {
                if (!since[i] && got[i] != stable[i]) {
                    g_error("step %d: flushed byte %#" PRIx64 " lost: %#x, expected %#x",
                            step, i, got[i], stable[i]);
                }
            }
            fake_node_close(after);
            crashes++;
        }
    }
    fake_node_close(bs);
    g_test_message("%d crashes", crashes);
    g_rand_free(r);
}

int main(int argc, char **argv)
{
    int ret;

    g_test_init(&argc, &argv, NULL);
    qcow2_test_dir_init("test-qcow2-crash");
    for (size_t i = 0; i < ARRAY_SIZE(crash_cfgs); i++) {
        g_autofree char *name = g_strdup_printf("/qcow2/crash/%s", crash_cfgs[i].name);

        g_test_add_data_func(name, &crash_cfgs[i], test_crash);
    }
    ret = g_test_run();
    qcow2_test_dir_cleanup();
    return ret;
}

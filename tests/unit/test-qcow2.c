/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for the qcow2 format row (block/qcow2*.c) over a test-only
 * block layer (block-fake.c: a host file row, the node-level calls).
 *
 * Images come from QEMU's own qemu-img (Debian's qemu-utils); our driver
 * writes them at seeded random offsets with random lengths, zeroes and
 * discards, and every read is compared with a model buffer. Afterwards
 * QEMU judges the result: `qemu-img check` finds no error and no leak,
 * and `qemu-img compare` finds the image identical to a raw file holding
 * the model. Covered: cluster sizes 512 B..2 MiB (512 B clusters grow the
 * refcount table), every refcount width, v2 and v3, raw and qcow2 backing
 * files (shorter than the image too), compressed clusters (read, and
 * copied on write), internal snapshots and the dirty bit (read-only
 * only), the inactivate/activate handover between two nodes, threads,
 * headers QEMU refuses (refused here with QEMU's message) and hostile L2
 * entries. Crashes: test-qcow2-crash.c; helpers: qcow2-test.c.
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qapi/error.h"
#include "block/qcow2-int.h"
#include "block-fake.h"
#include "qcow2-test.h"

#define SEED 0x9c0e2

/* ---- Random I/O against a model ---- */

typedef struct RandomCfg {
    const char *create_opts;        /* qemu-img create -o ... */
    uint64_t size;
    uint64_t max_len;
    int steps;
    bool backing;                   /* a raw backing file, shorter than the image */
    bool backing_qcow2;             /* ... a qcow2 one written by us */
    bool grows_rct;                 /* the refcount table must move to a bigger place */
} RandomCfg;

static void random_steps(BlockDriverState *bs, uint8_t *model, const uint8_t *backing,
                         uint64_t size, GRand *r, int steps, uint64_t max_len)
{
    g_autofree uint8_t *buf = g_malloc(max_len);

    for (int i = 0; i < steps; i++) {
        uint64_t len = g_rand_int_range(r, 1, max_len + 1);
        uint64_t off = (uint64_t)g_rand_double_range(r, 0, size - len + 1);
        int op = g_rand_int_range(r, 0, 10);

        if (g_rand_boolean(r)) {
            /* Sector-aligned requests, as a guest mostly sends. */
            off &= ~511ull;
            len = MAX(512, len & ~511ull);
            len = MIN(len, size - off);
        }
        if (op < 5) {
            struct iovec v[2];
            uint8_t fill = g_rand_int(r);

            for (uint64_t j = 0; j < len; j++) {
                buf[j] = fill + j * 7 + (j >> 9);
            }
            v[0] = (struct iovec) { buf, len / 2 };
            v[1] = (struct iovec) { buf + len / 2, len - len / 2 };
            g_assert_cmpint(bs->drv->pwritev(bs, off, len, v, 2, op == 4 ? BDRV_REQ_FUA : 0),
                            ==, 0);
            memcpy(model + off, buf, len);
        } else if (op < 7) {
            int flags = op == 6 ? BDRV_REQ_MAY_UNMAP : 0;

            g_assert_cmpint(bs->drv->pwrite_zeroes(bs, off, len, flags), ==, 0);
            memset(model + off, 0, len);
        } else if (op == 7) {
            /*
             * Discard: whole clusters may read as zeroes afterwards (or, v2
             * with a backing file, as the backing file); the test reads
             * them back and takes whatever it finds, bounded to those two.
             */
            g_assert_cmpint(bs->drv->pdiscard(bs, off, len), ==, 0);
            {
                g_autofree uint8_t *got = g_malloc(len);
                struct iovec v = { got, len };

                g_assert_cmpint(bs->drv->preadv(bs, off, len, &v, 1), ==, 0);
                for (uint64_t j = 0; j < len; j++) {
                    if (got[j] != model[off + j] && (!backing || got[j] != backing[off + j])) {
                        g_assert_cmpint(got[j], ==, 0);
                    }
                }
                memcpy(model + off, got, len);
            }
        } else {
            check_read(bs, model, off, len);
        }
        if (op == 9 && g_rand_int_range(r, 0, 8) == 0) {
            g_assert_cmpint(bs->drv->flush(bs), ==, 0);
        }
    }
}

static void test_random(gconstpointer opaque)
{
    const RandomCfg *cfg = opaque;
    g_autofree char *img = path("random.qcow2");
    g_autofree char *base = path("base.img");
    g_autofree uint8_t *model = g_malloc0(cfg->size);
    g_autofree uint8_t *backing = NULL;
    GRand *r = g_rand_new_with_seed(SEED);
    BlockDriverState *bs;
    uint64_t rct_offset;

    if (!have_qemu_img()) {
        return;
    }
    if (cfg->backing || cfg->backing_qcow2) {
        uint64_t blen = cfg->size * 3 / 4 + 4096 + 512;
        g_autofree uint8_t *bdata = g_malloc(blen);

        for (uint64_t i = 0; i < blen; i++) {
            bdata[i] = g_rand_int(r);
        }
        if (cfg->backing_qcow2) {
            BlockDriverState *b;

            blen = QEMU_ALIGN_UP(blen, 512);
            bdata = g_realloc(bdata, blen);
            g_assert_cmpint(run(NULL, "qemu-img create -q -f qcow2 %s %" PRIu64, base, blen),
                            ==, 0);
            b = open_ok(base, BDRV_O_RDWR);
            g_assert_cmpint(bdrv_pwrite(b, 0, bdata, blen, 0), ==, 0);
            fake_node_close(b);
        } else {
            g_assert_true(g_file_set_contents(base, (const char *)bdata, blen, NULL));
        }
        memcpy(model, bdata, MIN(blen, cfg->size));
        backing = g_memdup2(model, cfg->size);
        g_assert_cmpint(run(NULL, "qemu-img create -q -f qcow2 -o %s -b %s -F %s %s %" PRIu64,
                            cfg->create_opts, base, cfg->backing_qcow2 ? "qcow2" : "raw",
                            img, cfg->size), ==, 0);
    } else {
        g_assert_cmpint(run(NULL, "qemu-img create -q -f qcow2 -o %s %s %" PRIu64,
                            cfg->create_opts, img, cfg->size), ==, 0);
    }

    rct_offset = header_field(img, 48);
    bs = open_ok(img, BDRV_O_RDWR | BDRV_O_UNMAP);
    g_assert_cmpint(bs->drv->getlength(bs), ==, cfg->size);
    check_whole(bs, model, cfg->size);
    random_steps(bs, model, backing, cfg->size, r, cfg->steps, cfg->max_len);
    check_whole(bs, model, cfg->size);
    fake_node_close(bs);
    if (cfg->grows_rct) {
        g_assert_cmphex(header_field(img, 48), !=, rct_offset);
    }

    qemu_judges(img, model, cfg->size);
    /* What we wrote reads back through a fresh open, after QEMU looked at it. */
    bs = open_ok(img, 0);
    check_whole(bs, model, cfg->size);
    fake_node_close(bs);
    g_rand_free(r);
    unlink(img);
    unlink(base);
}

static const RandomCfg random_cfgs[] = {
    { "cluster_size=65536", 64 * MiB, 300 * KiB, 400 },
    { "cluster_size=512", 3 * MiB + 1536, 8 * KiB, 1500 },
    /* 64 refcounts a block, 64 blocks a table cluster: 2 MiB before the table grows. */
    { "cluster_size=512,refcount_bits=64", 6 * MiB, 64 * KiB, 800, .grows_rct = true },
    { "cluster_size=4096,refcount_bits=1", 8 * MiB, 64 * KiB, 500 },
    { "cluster_size=4096,refcount_bits=8", 8 * MiB, 64 * KiB, 300 },
    { "cluster_size=4096,refcount_bits=64", 8 * MiB, 64 * KiB, 300 },
    { "cluster_size=2097152", 16 * MiB, 3 * MiB, 60 },
    { "compat=0.10,cluster_size=4096", 8 * MiB, 64 * KiB, 500 },
    { "cluster_size=4096", 8 * MiB + 512, 64 * KiB, 500, .backing = true },
    { "compat=0.10,cluster_size=4096", 8 * MiB, 64 * KiB, 500, .backing = true },
    { "cluster_size=8192", 8 * MiB, 64 * KiB, 400, .backing_qcow2 = true },
};

/* ---- Zero clusters, discard ---- */

static void test_zero_and_discard(void)
{
    g_autofree char *img = path("zero.qcow2");
    g_autofree char *out = NULL;
    uint64_t size = 4 * MiB, cs = 65536;
    g_autofree uint8_t *model = g_malloc0(size);
    g_autofree uint8_t *buf = g_malloc(cs * 4);
    BlockDriverState *bs;
    int64_t before, after;
    struct stat st;

    if (!have_qemu_img()) {
        return;
    }
    g_assert_cmpint(run(NULL, "qemu-img create -q -f qcow2 %s %" PRIu64, img, size), ==, 0);
    bs = open_ok(img, BDRV_O_RDWR | BDRV_O_UNMAP);
    memset(buf, 0xab, cs * 4);
    g_assert_cmpint(bdrv_pwrite(bs, 0, buf, cs * 4, 0), ==, 0);
    memset(model, 0xab, cs * 4);
    /* Zero flag, allocation kept: the file does not shrink, the clusters read zeroes. */
    g_assert_cmpint(bs->drv->pwrite_zeroes(bs, cs, cs, 0), ==, 0);
    memset(model + cs, 0, cs);
    check_whole(bs, model, size);
    g_assert_cmpint(bs->drv->flush(bs), ==, 0);
    g_assert_cmpint(run(&out, "qemu-img map --output=json -f qcow2 %s", img), ==, 0);
    g_assert_nonnull(strstr(out, "\"start\": 65536, \"length\": 65536, \"depth\": 0, "
                            "\"present\": true, \"zero\": true, \"data\": false"));
    g_clear_pointer(&out, g_free);
    /* Discard the last two: their clusters are freed and punched. */
    g_assert_cmpint(stat(img, &st), ==, 0);
    before = st.st_blocks;
    g_assert_cmpint(bs->drv->pdiscard(bs, 2 * cs, 2 * cs), ==, 0);
    memset(model + 2 * cs, 0, 2 * cs);
    g_assert_cmpint(bs->drv->flush(bs), ==, 0);
    g_assert_cmpint(stat(img, &st), ==, 0);
    after = st.st_blocks;
    g_assert_cmpint(after, <, before);
    check_whole(bs, model, size);
    /* The freed clusters are reused: the file does not grow. */
    g_assert_cmpint(bdrv_pwrite(bs, 3 * MiB, buf, cs * 2, 0), ==, 0);
    memcpy(model + 3 * MiB, buf, cs * 2);
    fake_node_close(bs);
    g_assert_cmpint(stat(img, &st), ==, 0);
    g_assert_cmpint(st.st_size, <=, 9 * cs);
    qemu_judges(img, model, size);
}

/* ---- Compressed clusters (made by qemu-img convert -c) ---- */

static void test_compressed(void)
{
    g_autofree char *raw = path("comp.raw");
    g_autofree char *img = path("comp.qcow2");
    uint64_t size = 2 * MiB;
    g_autofree uint8_t *model = g_malloc(size);
    GRand *r = g_rand_new_with_seed(SEED + 1);
    BlockDriverState *bs;

    if (!have_qemu_img()) {
        return;
    }
    for (uint64_t i = 0; i < size; i++) {
        model[i] = (i / 4096) % 3 ? (uint8_t)(i * 13 / 7) : g_rand_int(r);
    }
    g_assert_true(g_file_set_contents(raw, (const char *)model, size, NULL));
    g_assert_cmpint(run(NULL, "qemu-img convert -c -f raw -O qcow2 %s %s", raw, img), ==, 0);
    bs = open_ok(img, BDRV_O_RDWR | BDRV_O_UNMAP);
    check_whole(bs, model, size);
    /* Writes copy compressed clusters into plain ones and free the old runs. */
    random_steps(bs, model, NULL, size, r, 200, 100 * KiB);
    check_whole(bs, model, size);
    fake_node_close(bs);
    qemu_judges(img, model, size);
    g_rand_free(r);
}

/* ---- Images we only read ---- */

static void test_snapshots_readonly(void)
{
    g_autofree char *img = path("snap.qcow2");
    Error *err = NULL;
    BlockDriverState *bs;

    if (!have_qemu_img()) {
        return;
    }
    g_assert_cmpint(run(NULL, "qemu-img create -q -f qcow2 %s 1M", img), ==, 0);
    g_assert_cmpint(run(NULL, "qemu-img snapshot -c s1 %s", img), ==, 0);
    g_assert_null(open_qcow2(img, BDRV_O_RDWR, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "internal snapshots"));
    error_free(err);
    bs = open_ok(img, 0);
    g_assert_cmpint(bs->drv->pwritev(bs, 0, 0, NULL, 0, 0), ==, -EACCES);
    fake_node_close(bs);
}

/* ---- Headers QEMU refuses ---- */

typedef struct BadHeader {
    unsigned off;
    unsigned width;                 /* 4 or 8 */
    uint64_t value;
    bool rw;                        /* refused only for read-write */
    const char *msg;                /* QEMU 7.2's, or ours where we refuse more */
} BadHeader;

static const BadHeader bad_headers[] = {
    { 0, 4, 0x12345678, false, "Image is not in qcow2 format" },
    { 4, 4, 1, false, "Unsupported qcow2 version 1" },
    { 4, 4, 4, false, "Unsupported qcow2 version 4" },
    { 20, 4, 8, false, "Unsupported cluster size: 2^8" },
    { 20, 4, 22, false, "Unsupported cluster size: 2^22" },
    { 32, 4, 1, false, "Use of AES-CBC encrypted qcow2 images is no longer supported" },
    { 32, 4, 3, false, "Unsupported encryption method 3" },
    { 36, 4, 0, false, "L1 table is too small" },
    { 36, 4, 0x10000000, false, "Active L1 table too large" },
    { 40, 8, 0x30001, false, "Active L1 table offset invalid" },
    { 48, 8, 0x10001, false, "Reference count table offset invalid" },
    { 56, 4, 0, false, "Image does not contain a reference count table" },
    { 56, 4, 0x100000, false, "Reference count table too large" },
    { 72, 8, 2, true, "qcow2: Image is corrupt; cannot be opened read/write" },
    { 72, 8, 1, true, "Image is dirty" },
    { 72, 8, 4, false, "Unsupported qcow2 feature(s): external data file" },
    { 72, 8, 8, false, "qcow2: Compression type incompatible feature bit must not be set" },
    { 72, 8, 16, false, "Unsupported qcow2 feature(s): extended L2 entries" },
    { 72, 8, 1ull << 40, false,
      "Unsupported qcow2 feature(s): Unknown incompatible feature: 10000000000" },
    { 96, 4, 7, false, "Reference count entry width too large; may not exceed 64 bits" },
    { 100, 4, 50, false, "qcow2 header too short" },
    { 100, 4, 0x20000, false, "qcow2 header exceeds cluster size" },
    { 16, 4, 2000, false, "Backing file name too long" },
    { 24, 8, 1ull << 62, false, "Image is too big" },
};

static void test_bad_headers(void)
{
    g_autofree char *good = path("good.qcow2");
    g_autofree char *bad = path("bad.qcow2");
    g_autofree char *data = NULL;
    gsize len;

    if (!have_qemu_img()) {
        return;
    }
    g_assert_cmpint(run(NULL, "qemu-img create -q -f qcow2 %s 64M", good), ==, 0);
    g_assert_true(g_file_get_contents(good, &data, &len, NULL));
    for (size_t i = 0; i < ARRAY_SIZE(bad_headers); i++) {
        const BadHeader *b = &bad_headers[i];
        g_autofree char *copy = g_memdup2(data, len);
        Error *err = NULL;
        BlockDriverState *bs;

        if (b->width == 4) {
            stl_be_p(copy + b->off, b->value);
        } else {
            stq_be_p(copy + b->off, b->value);
        }
        if (b->off == 16) {
            stq_be_p(copy + 8, 0x200);      /* a backing name offset for its length */
        }
        g_assert_true(g_file_set_contents(bad, copy, len, NULL));
        bs = open_qcow2(bad, BDRV_O_RDWR, &err);
        g_assert_null(bs);
        if (!strstr(error_get_pretty(err), b->msg)) {
            g_error("header %zu: \"%s\", expected \"%s\"", i, error_get_pretty(err), b->msg);
        }
        error_free(err);
        err = NULL;
        bs = open_qcow2(bad, 0, &err);
        if (b->rw) {
            g_assert_nonnull(bs);
            fake_node_close(bs);
        } else {
            g_assert_null(bs);
            error_free(err);
        }
    }
}

/*
 * Hostile L2 entries, each in a fresh 1 MiB image of 64 KiB clusters whose
 * guest cluster 0 was written once: the entry for guest cluster 0 is
 * replaced by @entry(l1_off) and @op runs. Expected: @ret, the header
 * intact (the image opens read-only), and "corrupt: true" when @corrupt.
 */
typedef struct HostileL2 {
    const char *name;
    uint64_t (*entry)(uint64_t l1_off);
    int op;                         /* 0 write 512 B at 0, 1 discard cluster 0 */
    int ret;
    bool corrupt;
} HostileL2;

static uint64_t at_l1_table(uint64_t l1_off)
{
    return l1_off | QCOW2_OFLAG_COPIED;         /* written in place: onto the L1 table */
}

static uint64_t compressed_at_header(uint64_t l1_off)
{
    return QCOW2_OFLAG_COMPRESSED | 0;          /* one sector at offset 0 */
}

static uint64_t shared_uncounted(uint64_t l1_off)
{
    return 0x60000;     /* the first free cluster, no COPIED: copy-on-write onto itself */
}

static uint64_t unaligned(uint64_t l1_off)
{
    return 0x10200 | QCOW2_OFLAG_COPIED;
}

static const HostileL2 hostile_l2[] = {
    { "at-l1-table", at_l1_table, 0, -EIO, true },
    /* Freeing the "compressed data" would have punched the header away. */
    { "compressed-at-header", compressed_at_header, 1, -EIO, true },
    /* The copy would be given that very cluster, then lose it to the old reference's drop. */
    { "shared-uncounted", shared_uncounted, 0, -EIO, true },
    { "unaligned", unaligned, 0, -EIO, true },
};

static void test_hostile_l2(gconstpointer opaque)
{
    const HostileL2 *h = opaque;
    g_autofree char *img = path("hostile.qcow2");
    g_autofree char *out = NULL;
    uint8_t buf[512], be[8];
    struct iovec v = { buf, sizeof(buf) };
    BlockDriverState *bs;
    uint64_t l1_off, l2_off;
    int fd;

    if (!have_qemu_img()) {
        return;
    }
    memset(buf, 0x11, sizeof(buf));
    g_assert_cmpint(run(NULL, "qemu-img create -q -f qcow2 %s 1M", img), ==, 0);
    bs = open_ok(img, BDRV_O_RDWR);
    g_assert_cmpint(bdrv_pwrite(bs, 0, buf, sizeof(buf), 0), ==, 0);
    fake_node_close(bs);
    fd = open(img, O_RDWR);
    g_assert_cmpint(pread(fd, be, 8, 40), ==, 8);
    l1_off = ldq_be_p(be);
    g_assert_cmpint(pread(fd, be, 8, l1_off), ==, 8);
    l2_off = ldq_be_p(be) & QCOW2_OFFSET_MASK;
    stq_be_p(be, h->entry(l1_off));
    g_assert_cmpint(pwrite(fd, be, 8, l2_off), ==, 8);
    close(fd);

    bs = open_ok(img, BDRV_O_RDWR | BDRV_O_UNMAP);
    memset(buf, 0x22, sizeof(buf));
    if (h->op == 0) {
        g_assert_cmpint(bs->drv->pwritev(bs, 0, sizeof(buf), &v, 1, 0), ==, h->ret);
    } else {
        g_assert_cmpint(bs->drv->pdiscard(bs, 0, 65536), ==, h->ret);
    }
    fake_node_close(bs);
    bs = open_ok(img, 0);
    fake_node_close(bs);
    g_assert_cmpint(run(&out, "qemu-img info %s", img), ==, 0);
    g_assert_true(!!strstr(out, "corrupt: true") == h->corrupt);
    unlink(img);
}

/* ---- Migration: two nodes, one image, handed over ---- */

static void test_handover(void)
{
    g_autofree char *img = path("mig.qcow2");
    uint64_t size = 8 * MiB;
    g_autofree uint8_t *model = g_malloc0(size);
    GRand *r = g_rand_new_with_seed(SEED + 2);
    BlockDriverState *src, *dst;
    Error *err = NULL;

    if (!have_qemu_img()) {
        return;
    }
    g_assert_cmpint(run(NULL, "qemu-img create -q -f qcow2 -o cluster_size=4096 %s %" PRIu64,
                        img, size), ==, 0);
    src = open_ok(img, BDRV_O_RDWR | BDRV_O_UNMAP);
    dst = open_ok(img, BDRV_O_RDWR | BDRV_O_UNMAP | BDRV_O_INACTIVE);
    for (int round = 0; round < 4; round++) {
        BlockDriverState *t;
        struct iovec v = { model, 512 };

        random_steps(src, model, NULL, size, r, 150, 32 * KiB);
        g_assert_cmpint(src->drv->inactivate(src, &err), ==, 0);
        g_assert_cmpint(src->drv->preadv(src, 0, 512, &v, 1), ==, -EPERM);
        g_assert_cmpint(dst->drv->activate(dst, &err), ==, 0);
        check_whole(dst, model, size);
        t = src;
        src = dst;
        dst = t;
    }
    fake_node_close(dst);
    fake_node_close(src);
    qemu_judges(img, model, size);
    g_rand_free(r);
}

/*
 * A destination's inactive node opens an image whose source set the dirty
 * bit (QEMU's lazy refcounts), writes nothing (autoclear bits stay), and
 * runs the read-write checks only at activation.
 */
static void test_inactive_checks(void)
{
    g_autofree char *img = path("inactive.qcow2");
    g_autofree char *data = NULL;
    BlockDriverState *bs;
    Error *err = NULL;
    uint8_t be[8];
    gsize len;

    if (!have_qemu_img()) {
        return;
    }
    g_assert_cmpint(run(NULL, "qemu-img create -q -f qcow2 %s 1M", img), ==, 0);
    g_assert_true(g_file_get_contents(img, &data, &len, NULL));
    stq_be_p(data + 72, QCOW2_INCOMPAT_DIRTY);
    stq_be_p(data + 88, 1);                                 /* autoclear: bitmaps */
    g_assert_true(g_file_set_contents(img, data, len, NULL));
    bs = open_ok(img, BDRV_O_RDWR | BDRV_O_INACTIVE);
    g_assert_cmphex(header_field(img, 88), ==, 1);
    g_assert_cmpint(bs->drv->activate(bs, &err), <, 0);
    g_assert_nonnull(strstr(error_get_pretty(err), "dirty"));
    g_clear_pointer(&err, error_free);
    /* The source closed cleanly: now it activates, and clears the autoclear bit. */
    stq_be_p(be, 0);
    g_assert_cmpint(bdrv_pwrite(bs->file, 72, be, 8, 0), ==, 0);
    g_assert_cmpint(bs->drv->activate(bs, &err), ==, 0);
    g_assert_cmphex(header_field(img, 88), ==, 0);
    g_assert_cmpint(bdrv_pwrite(bs, 0, be, 8, 0), ==, 0);
    fake_node_close(bs);
    g_assert_cmpint(run(NULL, "qemu-img check -q %s", img), ==, 0);
}

/* ---- Threads: disjoint writers, zeroers, discarders and readers, then QEMU's check ---- */

typedef struct Worker {
    BlockDriverState *bs;
    uint8_t *model;
    uint64_t base, len;
    unsigned seed;
} Worker;

static gpointer worker(gpointer opaque)
{
    Worker *w = opaque;
    GRand *r = g_rand_new_with_seed(w->seed);
    uint8_t buf[20000];

    for (int i = 0; i < 300; i++) {
        uint64_t len = g_rand_int_range(r, 1, sizeof(buf));
        uint64_t off = w->base + g_rand_int_range(r, 0, w->len - len);
        struct iovec v = { buf, len };

        int op = g_rand_int_range(r, 0, 8);

        if (op < 4) {
            memset(buf, g_rand_int(r), len);
            g_assert_cmpint(w->bs->drv->pwritev(w->bs, off, len, &v, 1, 0), ==, 0);
            memcpy(w->model + off, buf, len);
        } else if (op == 4) {
            /* Frees clusters: io_lock exclusive against the others' data I/O. */
            g_assert_cmpint(w->bs->drv->pwrite_zeroes(w->bs, off, len, BDRV_REQ_MAY_UNMAP),
                            ==, 0);
            memset(w->model + off, 0, len);
        } else if (op == 5) {
            /* No backing file: discarded whole clusters read as zeroes. */
            uint64_t cs = ((BDRVQcow2State *)w->bs->opaque)->cluster_size;
            uint64_t first = QEMU_ALIGN_UP(off, cs), end = QEMU_ALIGN_DOWN(off + len, cs);

            g_assert_cmpint(w->bs->drv->pdiscard(w->bs, off, len), ==, 0);
            if (first < end) {
                memset(w->model + first, 0, end - first);
            }
        } else {
            g_assert_cmpint(w->bs->drv->preadv(w->bs, off, len, &v, 1), ==, 0);
            g_assert_cmpint(memcmp(buf, w->model + off, len), ==, 0);
        }
    }
    g_rand_free(r);
    return NULL;
}

static void test_threads(void)
{
    g_autofree char *img = path("threads.qcow2");
    uint64_t size = 16 * MiB, part = size / 4;
    g_autofree uint8_t *model = g_malloc0(size);
    Worker w[4];
    GThread *t[4];
    BlockDriverState *bs;

    if (!have_qemu_img()) {
        return;
    }
    g_assert_cmpint(run(NULL, "qemu-img create -q -f qcow2 -o cluster_size=4096 %s %" PRIu64,
                        img, size), ==, 0);
    bs = open_ok(img, BDRV_O_RDWR | BDRV_O_UNMAP);
    for (int i = 0; i < 4; i++) {
        /* Interleaved quarters: neighbours share L2 tables and refcount blocks. */
        w[i] = (Worker) { bs, model, i * part, part, SEED + 10 + i };
        t[i] = g_thread_new("qcow2-worker", worker, &w[i]);
    }
    for (int i = 0; i < 4; i++) {
        g_thread_join(t[i]);
    }
    check_whole(bs, model, size);
    fake_node_close(bs);
    qemu_judges(img, model, size);
}

/*
 * Writers that share every cluster: each owns one 512-byte slot of each
 * 4 KiB cluster, so first writes race to allocate the same guest cluster.
 * One allocation per cluster must win and the others write in place into
 * it: a cluster allocated twice loses a slot (the model says which) or
 * leaks a host cluster (qemu-img check says so).
 */
typedef struct SlotWriter {
    BlockDriverState *bs;
    uint8_t *model;
    uint64_t clusters;
    int slot;
} SlotWriter;

static gpointer slot_writer(gpointer opaque)
{
    SlotWriter *w = opaque;
    GRand *r = g_rand_new_with_seed(SEED + 40 + w->slot);
    g_autofree uint32_t *order = g_new(uint32_t, w->clusters);
    uint8_t buf[512];

    for (uint64_t c = 0; c < w->clusters; c++) {
        order[c] = c;
    }
    for (int round = 0; round < 3; round++) {
        for (uint64_t c = w->clusters - 1; c > 0; c--) {
            uint32_t k = g_rand_int_range(r, 0, c + 1), t = order[c];

            order[c] = order[k];
            order[k] = t;
        }
        for (uint64_t c = 0; c < w->clusters; c++) {
            uint64_t off = (uint64_t)order[c] * 4096 + w->slot * 512;
            struct iovec v = { buf, sizeof(buf) };

            memset(buf, 1 + ((order[c] * 7 + w->slot * 31 + round) & 0xfe), sizeof(buf));
            g_assert_cmpint(w->bs->drv->pwritev(w->bs, off, sizeof(buf), &v, 1, 0), ==, 0);
            memcpy(w->model + off, buf, sizeof(buf));
        }
    }
    g_rand_free(r);
    return NULL;
}

static void test_same_cluster_writers(void)
{
    g_autofree char *img = path("slots.qcow2");
    uint64_t size = 2 * MiB, clusters = size / 4096;
    g_autofree uint8_t *model = g_malloc0(size);
    SlotWriter w[4];
    GThread *t[4];
    BlockDriverState *bs;

    if (!have_qemu_img()) {
        return;
    }
    g_assert_cmpint(run(NULL, "qemu-img create -q -f qcow2 -o cluster_size=4096 %s %" PRIu64,
                        img, size), ==, 0);
    bs = open_ok(img, BDRV_O_RDWR | BDRV_O_UNMAP);
    for (int i = 0; i < 4; i++) {
        w[i] = (SlotWriter) { bs, model, clusters, i };
        t[i] = g_thread_new("qcow2-slots", slot_writer, &w[i]);
    }
    for (int i = 0; i < 4; i++) {
        g_thread_join(t[i]);
    }
    check_whole(bs, model, size);
    fake_node_close(bs);
    qemu_judges(img, model, size);
}

int main(int argc, char **argv)
{
    int ret;

    g_test_init(&argc, &argv, NULL);
    qcow2_test_dir_init("test-qcow2");
    for (size_t i = 0; i < ARRAY_SIZE(random_cfgs); i++) {
        g_autofree char *name = g_strdup_printf("/qcow2/random/%zu-%s%s", i,
                                                random_cfgs[i].create_opts,
                                                random_cfgs[i].backing ? "-backing" :
                                                random_cfgs[i].backing_qcow2 ?
                                                "-qcow2-backing" : "");

        g_test_add_data_func(name, &random_cfgs[i], test_random);
    }
    g_test_add_func("/qcow2/zero-and-discard", test_zero_and_discard);
    g_test_add_func("/qcow2/compressed", test_compressed);
    g_test_add_func("/qcow2/snapshots-readonly", test_snapshots_readonly);
    g_test_add_func("/qcow2/bad-headers", test_bad_headers);
    for (size_t i = 0; i < ARRAY_SIZE(hostile_l2); i++) {
        g_autofree char *name = g_strdup_printf("/qcow2/hostile-l2/%s", hostile_l2[i].name);

        g_test_add_data_func(name, &hostile_l2[i], test_hostile_l2);
    }
    g_test_add_func("/qcow2/handover", test_handover);
    g_test_add_func("/qcow2/inactive-checks", test_inactive_checks);
    g_test_add_func("/qcow2/threads", test_threads);
    g_test_add_func("/qcow2/same-cluster-writers", test_same_cluster_writers);
    ret = g_test_run();
    qcow2_test_dir_cleanup();
    return ret;
}

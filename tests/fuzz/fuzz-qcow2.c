/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz target: the qcow2 row (block/qcow2*.c) on an image made of the
 * input's bytes: header, extensions, L1, L2 and refcount tables, data.
 * Per input, the image goes into an in-memory file row (block-fake.c;
 * its backing file, if the header names one, is a memory pattern, never
 * a host path), is opened read-write (read-only if that is refused), and
 * takes a few requests chosen by a generator seeded from the input's
 * hash: reads, writes, zeroes, discards, flushes, at offsets spread over
 * the virtual size. The file may grow to 64 MiB.
 *
 * Checked: no crash or sanitizer report; every refusal's message is one
 * printable line; a request fails or succeeds, never hangs; after close
 * the image our driver left still opens read-only (we never write a
 * header or tables that make an image unreadable) and, unless it marked
 * the image corrupt, the last write of each request reads back.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "block/qcow2-int.h"
#include "../unit/block-fake.h"
#include "fuzz.h"

#define MAX_FILE (64 * MiB)
#define OPS 12

static void assert_printable(const char *what, const char *msg)
{
    for (const char *p = msg; *p; p++) {
        if (*p < 0x20 || *p > 0x7e) {
            fprintf(stderr, "%s: unprintable byte %#x in \"%s\"\n", what, (uint8_t)*p, msg);
            abort();
        }
    }
}

static uint64_t next(uint64_t *state)
{
    /* splitmix64: a fixed function of the input, so a crash replays. */
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static BlockDriverState *open_image(GByteArray *img, int flags, bool expect)
{
    BlockDriverState *file = fake_mem_open(g_byte_array_ref(img), MAX_FILE);
    Error *err = NULL;
    BlockDriverState *bs = fake_format_open(&bdrv_qcow2, file, flags, &err);

    if (!bs) {
        assert_printable("refused image", error_get_pretty(err));
        if (expect) {
            fprintf(stderr, "an image we wrote no longer opens: %s\n", error_get_pretty(err));
            abort();
        }
        error_free(err);
    }
    return bs;
}

/* FUZZ_VERBOSE=1: each request and its result on stderr, to read a crash. */
static void trace(const char *op, uint64_t off, uint64_t len, int ret)
{
    if (getenv("FUZZ_VERBOSE")) {
        fprintf(stderr, "%s %#" PRIx64 "+%#" PRIx64 " = %d\n", op, off, len, ret);
    }
}

static void run_ops(BlockDriverState *bs, uint64_t *rng)
{
    BDRVQcow2State *s = bs->opaque;
    uint64_t size = bs->drv->getlength(bs);
    g_autofree uint8_t *buf = g_malloc(3 * s->cluster_size);
    g_autofree uint8_t *back = g_malloc(3 * s->cluster_size);

    for (int i = 0; i < OPS && size; i++) {
        uint64_t r = next(rng);
        uint64_t len = 1 + next(rng) % MIN(3 * s->cluster_size, size);
        uint64_t off;
        struct iovec v = { buf, len };
        int ret;

        /* Start, end, or anywhere: the edges are where the bounds are. */
        switch ((r >> 8) % 3) {
        case 0:
            off = 0;
            break;
        case 1:
            off = size - len;
            break;
        default:
            off = next(rng) % (size - len + 1);
            break;
        }
        switch (r % 8) {
        case 0:
        case 1:
        case 2:
            memset(buf, r >> 16, len);
            ret = bs->drv->pwritev(bs, off, len, &v, 1, (r & 0x1000) ? BDRV_REQ_FUA : 0);
            trace("write", off, len, ret);
            if (ret == 0 && !s->corrupt) {
                struct iovec b = { back, len };

                /*
                 * A hostile L2 table may name one host cluster twice, so an
                 * earlier write may change later; the write just done must
                 * read back unless its clusters alias each other.
                 */
                if (bs->drv->preadv(bs, off, len, &b, 1) == 0 && len <= s->cluster_size &&
                    (off & (s->cluster_size - 1)) + len <= s->cluster_size &&
                    memcmp(back, buf, len)) {
                    fprintf(stderr, "write at %#" PRIx64 "+%#" PRIx64 " does not read back\n",
                            off, len);
                    abort();
                }
            }
            break;
        case 3:
            ret = bs->drv->pwrite_zeroes(bs, off, len, (r & 0x100) ? BDRV_REQ_MAY_UNMAP : 0);
            trace("zeroes", off, len, ret);
            break;
        case 4:
            ret = bs->drv->pdiscard(bs, off, len);
            trace("discard", off, len, ret);
            break;
        case 5:
            ret = bs->drv->flush(bs);
            trace("flush", 0, 0, ret);
            break;
        default:
            ret = bs->drv->preadv(bs, off, len, &v, 1);
            trace("read", off, len, ret);
            break;
        }
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    GByteArray *img = g_byte_array_new();
    uint64_t rng = 0xcbf29ce484222325ull;
    BlockDriverState *bs;

    /* Keep the seed fixed per input: FNV-1a of the bytes. */
    for (size_t i = 0; i < size; i++) {
        rng = (rng ^ data[i]) * 0x100000001b3ull;
    }
    g_byte_array_append(img, data, size);
    bs = open_image(img, BDRV_O_RDWR | BDRV_O_UNMAP, false);
    if (bs) {
        run_ops(bs, &rng);
        fake_node_close(bs);
        /* What we left must open; a read of it must not crash either. */
        bs = open_image(img, 0, true);
        run_ops(bs, &rng);
        fake_node_close(bs);
    } else {
        bs = open_image(img, 0, false);
        if (bs) {
            run_ops(bs, &rng);
            fake_node_close(bs);
        }
    }
    g_byte_array_unref(img);
    return 0;
}

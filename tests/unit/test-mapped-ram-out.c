/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The mapped-ram writer (migration/transport/mapped-ram-out.c) on a real temporary
 * file, with fake RAMBlocks and fake options: pages land at their offsets
 * from 0, 1 or 3 writer threads; a page put again and again ends with its
 * last content; a release callback runs only once its pages are in the
 * file; a write error fails the stream and leaves no trailer.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "qemu/bswap.h"
#include "qemu/xxh64.h"
#include "migration/transport/mapped-ram.h"
#include "migration/transport/mapped-ram-integrity.h"
#include "migration/transport/mapped-ram-out.h"
#include "migration/transport/ram-sink.h"
#include "migration/transport/channel.h"
#include "migration/core/options.h"
#include "io/channel.h"
#include "trace/trace.h"
#include "ram-codec-test-util.h"

/* ---- fakes ---- */

bool trace_active;

void trace_event_printf(const char *event, const char *fmt, ...)
{
}

static int fake_channels;       /* 0: multifd off */

bool migrate_multifd(void)
{
    return fake_channels > 0;
}

int migrate_multifd_channels(void)
{
    return fake_channels;
}

/* The sink's URI check asks it; mapped-ram's channels never compress. */
MultiFDCompression migrate_multifd_compression(void)
{
    return MULTIFD_COMPRESSION_NONE;
}

bool migrate_direct_io(void)
{
    return false;
}

bool migrate_mapped_ram(void)
{
    return true;
}

static bool fake_integrity;

bool migrate_mapped_ram_integrity(void)
{
    return fake_integrity;
}

bool mig_channel_file_path(const char *uri, char **path, uint64_t *offset, Error **errp)
{
    g_assert_true(g_str_has_prefix(uri, "file:"));
    *path = g_strdup(uri + 5);
    *offset = 0;
    return true;
}

static const BlockDef blocks[] = {
    { "microvm.ram", 2048 },        /* 8 MiB: 4 regions of 2 MiB */
    { "extra", 3 },
    { NULL, 0 },
};

/* ---- helpers ---- */

typedef struct Out {
    char *path;
    QEMUFile *f;
    MappedRamOut *m;
    RAMPageWriter w;
} Out;

static void out_open(Out *o, int channels, const char *path)
{
    int fd;
    g_autofree char *uri = NULL;

    fake_channels = channels;
    if (path) {
        o->path = g_strdup(path);
    } else {
        o->path = g_strdup_printf("%s/mr-out-XXXXXX", g_get_tmp_dir());
        fd = g_mkstemp(o->path);
        g_assert_cmpint(fd, >=, 0);
        close(fd);
    }
    fd = open(o->path, O_WRONLY | O_TRUNC);
    g_assert_cmpint(fd, >=, 0);
    o->f = qemu_file_new_output(channel_file_new(fd, o->path), "test stream");
    uri = g_strdup_printf("file:%s", o->path);
    g_assert_true(mapped_ram_out_open(uri, o->f, &error_abort));
    o->m = mapped_ram_out();
    g_assert_nonnull(o->m);
    o->w.ops = &ram_mapped_sink;
    o->w.sink = ram_mapped_sink.open(o->f, &(RAMSinkConfig) { 0 }, &error_abort);
    qemu_put_be32(o->f, 0x5145564d);   /* something before the block list */
    ram_put_block_list_sink(&o->w, o->f, false);
}

static bool out_finish(Out *o, Error **errp)
{
    bool ok;

    ram_put_eos(o->f);
    ok = mapped_ram_out_finish(o->m, o->f, errp);
    mapped_ram_out_close();
    ram_sink_free(&o->w);
    g_assert_null(mapped_ram_out());
    qemu_fclose(o->f);
    return ok;
}

static void out_free(Out *o)
{
    if (g_str_has_prefix(o->path, g_get_tmp_dir())) {
        unlink(o->path);
    }
    g_free(o->path);
}

static unsigned long *bmap_copy;

/* Reads the file's header of block @i (after its entry, found by name) and its bitmap. */
static void file_block(const uint8_t *file, size_t len, const RAMBlock *rb,
                       MappedRamHeader *h, const unsigned long **bmap)
{
    uint8_t idlen = strlen(rb->idstr);
    const uint8_t *p = memmem(file, len, rb->idstr, idlen);
    uint64_t next;

    g_assert_nonnull(p);
    g_assert_cmpuint(p[-1], ==, idlen);
    p += idlen;
    g_assert_cmpuint(ldq_be_p(p), ==, rb->used_length);
    p += 8;
    g_assert_true(mapped_ram_parse_header(p, rb->idstr, p - file, rb->used_length, len, h,
                                          &next, &error_abort));
    /* QEMU's layout puts the bitmap right after the header: not word aligned in the file. */
    g_free(bmap_copy);
    bmap_copy = g_memdup2(file + h->bitmap_offset, mapped_ram_bitmap_size(rb->used_length));
    *bmap = bmap_copy;
}

static void fill_page(uint8_t *page, uint32_t tag)
{
    for (size_t i = 0; i < TARGET_PAGE_SIZE; i += 4) {
        stl_be_p(page + i, tag ^ (uint32_t)i);
    }
}

/* ---- tests ---- */

/* Every page at its offset, zero pages as clear bits, the trailer last. */
static void test_layout(gconstpointer data)
{
    int channels = GPOINTER_TO_INT(data);
    FakeRAM *ram = fake_ram_new(blocks);
    RAMBlock *rb = fake_block(ram, 0), *ex = fake_block(ram, 1);
    g_autofree uint8_t *file = NULL;
    const unsigned long *bmap;
    MappedRamHeader h;
    gsize len;
    Out o = { 0 };

    for (uint64_t p = 0; p < block_pages(rb); p++) {
        fill_page(page_ptr(rb, p), p * 7 + 1);
    }
    fill_page(page_ptr(ex, 2), 0xabcdef);
    out_open(&o, channels, NULL);
    /* Out of order, some runs contiguous, every third page zero. */
    for (uint64_t p = block_pages(rb); p-- > 0;) {
        ram_put_page(&o.w, o.f, rb, p, p % 3 ? page_ptr(rb, p) : NULL);
    }
    ram_put_page(&o.w, o.f, ex, 2, page_ptr(ex, 2));
    ram_put_page(&o.w, o.f, ex, 0, NULL);
    g_assert_true(out_finish(&o, &error_abort));

    g_assert_true(g_file_get_contents(o.path, (char **)&file, &len, NULL));
    g_assert_cmpmem(file + len - MAPPED_RAM_TRAILER_SIZE, 8, MAPPED_RAM_TRAILER_MAGIC, 8);
    g_assert_cmpmem(file + len - 16, 16, "0000000000000000", 16);
    file_block(file, len, rb, &h, &bmap);
    g_assert_cmpuint(h.pages_offset % MAPPED_RAM_FILE_OFFSET_ALIGNMENT, ==, 0);
    for (uint64_t p = 0; p < block_pages(rb); p++) {
        g_assert_cmpint(test_bit(p, bmap), ==, p % 3 != 0);
        if (p % 3) {
            g_assert_cmpmem(file + h.pages_offset + p * TARGET_PAGE_SIZE, TARGET_PAGE_SIZE,
                            page_ptr(rb, p), TARGET_PAGE_SIZE);
        }
    }
    file_block(file, len, ex, &h, &bmap);
    g_assert_cmpuint(bmap[0], ==, 1UL << 2);
    g_assert_cmpmem(file + h.pages_offset + 2 * TARGET_PAGE_SIZE, TARGET_PAGE_SIZE,
                    page_ptr(ex, 2), TARGET_PAGE_SIZE);
    out_free(&o);
    fake_ram_check_guards(ram);
    fake_ram_free(ram);
}

typedef struct Release {
    const char *path;
    int64_t off;
    uint8_t want[TARGET_PAGE_SIZE];
    int ran;                    /* atomic */
    bool matched;
} Release;

static void check_written(void *opaque)
{
    Release *r = opaque;
    uint8_t got[TARGET_PAGE_SIZE];
    int fd = open(r->path, O_RDONLY);

    g_assert_cmpint(fd, >=, 0);
    r->matched = pread(fd, got, sizeof(got), r->off) == sizeof(got) &&
                 !memcmp(got, r->want, sizeof(got));
    close(fd);
    __atomic_store_n(&r->ran, 1, __ATOMIC_RELEASE);
}

/*
 * One page put 200 times from 200 buffers, each buffer released through a
 * callback that finds its content in the file: the last put wins, and no
 * callback runs before its write.
 */
static void test_rewrite_order(gconstpointer data)
{
    enum { N = 200 };
    int channels = GPOINTER_TO_INT(data);
    FakeRAM *ram = fake_ram_new(blocks);
    RAMBlock *rb = fake_block(ram, 0);
    g_autofree uint8_t *file = NULL;
    uint8_t (*bufs)[TARGET_PAGE_SIZE] = g_malloc(N * TARGET_PAGE_SIZE);
    Release *rel = g_new0(Release, N);
    const unsigned long *bmap;
    MappedRamHeader h;
    gsize len;
    Out o = { 0 };

    out_open(&o, channels, NULL);
    /* The headers are in the file already: the block list sought past each region. */
    g_assert_true(g_file_get_contents(o.path, (char **)&file, &len, NULL));
    file_block(file, len, rb, &h, &bmap);
    g_clear_pointer(&file, g_free);
    for (int i = 0; i < N; i++) {
        fill_page(bufs[i], 1000 + i);
        rel[i].path = o.path;
        rel[i].off = h.pages_offset + 9 * TARGET_PAGE_SIZE;
        memcpy(rel[i].want, bufs[i], TARGET_PAGE_SIZE);
        ram_put_page(&o.w, o.f, rb, 9, bufs[i]);
        /* Another page of the same region in between, coalesced or not. */
        ram_put_page(&o.w, o.f, rb, 10, bufs[i]);
        ram_writer_release_after(&o.w, o.f, check_written, &rel[i]);
    }
    g_assert_true(out_finish(&o, &error_abort));
    for (int i = 0; i < N; i++) {
        g_assert_cmpint(__atomic_load_n(&rel[i].ran, __ATOMIC_ACQUIRE), ==, 1);
        g_assert_true(rel[i].matched);
    }
    g_assert_true(g_file_get_contents(o.path, (char **)&file, &len, NULL));
    file_block(file, len, rb, &h, &bmap);
    g_assert_true(test_bit(9, bmap) && test_bit(10, bmap));
    g_assert_cmpmem(file + h.pages_offset + 9 * TARGET_PAGE_SIZE, TARGET_PAGE_SIZE,
                    bufs[N - 1], TARGET_PAGE_SIZE);
    g_free(bufs);
    g_free(rel);
    out_free(&o);
    fake_ram_free(ram);
}

/* A descriptor that fails every write: the stream fails, there is no trailer. */
static void test_write_error(gconstpointer data)
{
    int channels = GPOINTER_TO_INT(data);
    FakeRAM *ram = fake_ram_new(blocks);
    RAMBlock *rb = fake_block(ram, 0);
    Error *err = NULL;
    Out o = { 0 };

    fill_page(page_ptr(rb, 5), 5);
    out_open(&o, channels, "/dev/full");
    for (int i = 0; i < 64 && !qemu_file_get_error(o.f); i++) {
        ram_put_page(&o.w, o.f, rb, 5, page_ptr(rb, 5));
        ram_put_page(&o.w, o.f, rb, 700, page_ptr(rb, 5));
        g_usleep(1000);
    }
    g_assert_false(out_finish(&o, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "No space left on device"));
    error_free(err);
    out_free(&o);
    fake_ram_free(ram);
}

static void hash_range(uint64_t start, uint64_t end, void *opaque)
{
    Xxh64State *st = ((void **)opaque)[0];
    const uint8_t *file = ((void **)opaque)[1];

    xxh64_update(st, file + start, end - start);
}

/*
 * x-mapped-ram-integrity: pages put up to four times each from different
 * buffers (precopy's re-sends), some made zero again, by N writers; the
 * record must describe what the file holds at the end, region by region,
 * and the stream around the regions.
 */
static void test_integrity(gconstpointer data)
{
    int channels = GPOINTER_TO_INT(data);
    FakeRAM *ram = fake_ram_new(blocks);
    RAMBlock *rb = fake_block(ram, 0), *ex = fake_block(ram, 1);
    uint64_t npages = block_pages(rb);
    g_autofree uint8_t *bufs = g_malloc(4 * npages * TARGET_PAGE_SIZE);
    g_autofree int *last = g_new(int, npages);
    g_autofree uint8_t *file = NULL;
    g_autoptr(MappedRamIntegrity) r = NULL;
    GRand *rng = g_rand_new_with_seed(33 + channels);
    const unsigned long *bmap;
    uint64_t hex_len, pos;
    Xxh64State st;
    MappedRamHeader h;
    gsize len;
    Out o = { 0 };

    fake_integrity = true;
    out_open(&o, channels, NULL);
    for (uint64_t p = 0; p < npages; p++) {
        last[p] = -1;
    }
    for (int round = 0; round < 4; round++) {
        for (uint64_t p = 0; p < npages; p++) {
            uint8_t *b = bufs + (round * npages + p) * TARGET_PAGE_SIZE;

            if (round && g_rand_int_range(rng, 0, 3)) {
                continue;
            }
            fill_page(b, round << 24 | p);
            if (g_rand_int_range(rng, 0, 8) == 0) {
                ram_put_page(&o.w, o.f, rb, p, NULL);
                last[p] = -1;
            } else {
                ram_put_page(&o.w, o.f, rb, p, b);
                last[p] = round;
            }
        }
    }
    g_assert_true(out_finish(&o, &error_abort));
    fake_integrity = false;

    g_assert_true(g_file_get_contents(o.path, (char **)&file, &len, NULL));
    /* The trailer says a record precedes it: the record cannot vanish on its own. */
    g_assert_cmpmem(file + len - MAPPED_RAM_TRAILER_SIZE, 8, MAPPED_RAM_TRAILER_MAGIC_RECORD, 8);
    g_assert_true(mri_parse_footer(file + len - MAPPED_RAM_TRAILER_SIZE - MRI_FOOTER_SIZE, 0,
                                   len - MAPPED_RAM_TRAILER_SIZE, &hex_len, &error_abort));
    pos = len - MAPPED_RAM_TRAILER_SIZE - MRI_FOOTER_SIZE - hex_len;
    r = mri_decode((const char *)file + pos, hex_len, pos, &error_abort);
    g_assert_cmpuint(r->nblocks, ==, 2);
    xxh64_init(&st, 0);
    mri_stream_ranges(r, hash_range, (void *[]) { &st, file });
    g_assert_cmphex(xxh64_digest(&st), ==, r->stream_hash);
    file_block(file, len, rb, &h, &bmap);
    g_assert_cmpuint(r->blocks[0].pages_offset, ==, h.pages_offset);
    for (uint64_t p = 0; p < npages; p++) {
        g_assert_cmpint(test_bit(p, bmap), ==, last[p] >= 0);
        if (last[p] >= 0) {
            g_assert_cmpmem(file + h.pages_offset + p * TARGET_PAGE_SIZE, TARGET_PAGE_SIZE,
                            bufs + (last[p] * npages + p) * TARGET_PAGE_SIZE, TARGET_PAGE_SIZE);
        }
    }
    for (uint64_t g = 0; g < r->blocks[0].nregions; g++) {
        g_assert_true(mri_check_region(0, g, bmap, npages,
                                       file + h.pages_offset + g * MRI_REGION_PAGES *
                                       TARGET_PAGE_SIZE, r->blocks[0].region_hash[g]));
    }
    /* A block nothing was put in: one region, every page absent. */
    file_block(file, len, ex, &h, &bmap);
    g_assert_true(mri_check_region(1, 0, bmap, block_pages(ex), file + h.pages_offset,
                                   r->blocks[1].region_hash[0]));
    g_rand_free(rng);
    out_free(&o);
    fake_ram_free(ram);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    for (int ch = 0; ch <= 3; ch += (ch ? 2 : 1)) {
        g_autofree char *a = g_strdup_printf("/mapped-ram-out/layout/%d-writers", ch);
        g_autofree char *b = g_strdup_printf("/mapped-ram-out/rewrite-order/%d-writers", ch);
        g_autofree char *c = g_strdup_printf("/mapped-ram-out/write-error/%d-writers", ch);
        g_autofree char *d = g_strdup_printf("/mapped-ram-out/integrity/%d-writers", ch);

        g_test_add_data_func(a, GINT_TO_POINTER(ch), test_layout);
        g_test_add_data_func(b, GINT_TO_POINTER(ch), test_rewrite_order);
        g_test_add_data_func(c, GINT_TO_POINTER(ch), test_write_error);
        g_test_add_data_func(d, GINT_TO_POINTER(ch), test_integrity);
    }
    int ret = g_test_run();

    g_free(bmap_copy);
    return ret;
}

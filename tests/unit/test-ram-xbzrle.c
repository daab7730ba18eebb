/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for migration/transport/ram-xbzrle.c through the page codec, with fake
 * RAMBlocks: many rounds of re-sent pages (small changes, rewrites, zero
 * pages, a cache smaller than RAM so slots are evicted) load into a
 * destination that stays byte-identical; a page's first send is whole and
 * its next a delta; a page the guest writes after it was put goes out
 * as it was when put; XBZRLE records with a bad encoding byte, length or
 * delta are refused with QEMU's messages and the page untouched.
 */
#include "qemu/osdep.h"
#include <sys/mman.h>
#include "ram-codec-test-util.h"
#include "migration/transport/ram-sink.h"
#include "migration/transport/ram-xbzrle.h"
#include "io/channel.h"

/* The records sink's parts: the record writer and its encoder. */
typedef struct XWriter {
    RAMRecordWriter rec;
    XbzrleSender *xbzrle;
} XWriter;

/* As the records sink sends a page: through the encoder when there is one. */
static void send_page(XWriter *w, QEMUFile *f, RAMBlock *rb, uint64_t page,
                      const uint8_t *data)
{
    if (w->xbzrle) {
        xbzrle_put_page(w->xbzrle, &w->rec, f, rb, page, data);
    } else {
        ram_put_record(&w->rec, f, rb, page, data);
    }
}

/* Puts every page of @src's blocks (zero pages as ZERO) and EOS; returns the bytes. */
static GByteArray *send_round(XWriter *w, FakeRAM *src, bool with_list)
{
    QEMUFile *f = qemu_file_new_buffer_output();
    GByteArray *s = g_byte_array_new();
    const uint8_t *data;
    size_t len;

    if (with_list) {
        ram_put_block_list(f);
    }
    for (guint b = 0; b < src->blocks->len; b++) {
        RAMBlock *rb = fake_block(src, b);
        for (uint64_t p = 0; p < block_pages(rb); p++) {
            uint8_t *host = page_ptr(rb, p);
            send_page(w, f, rb, p, page_is(rb, p, 0) ? NULL : host);
        }
    }
    ram_put_eos(f);
    data = qemu_file_buffer_data(f, &len);
    g_byte_array_append(s, data, len);
    qemu_fclose(f);
    return s;
}

static void load_round(RAMPageReader *r, FakeRAM *dst, const GByteArray *s)
{
    Error *err = NULL;
    int loaded;
    size_t used;

    cur_ram = dst;
    if (load_chunks(r, s->data, s->len, 0, &loaded, &used, &err) < 0) {
        g_error("load failed: %s", error_get_pretty(err));
    }
    g_assert_cmpuint(used, ==, s->len);
}

static void assert_same_ram(FakeRAM *a, FakeRAM *b)
{
    for (guint i = 0; i < a->blocks->len; i++) {
        g_assert_cmpmem(fake_block(a, i)->host, fake_block(a, i)->used_length,
                        fake_block(b, i)->host, fake_block(b, i)->used_length);
    }
    fake_ram_check_guards(b);
}

/* One of: a few bytes changed, a run rewritten, the page zeroed, the page all new. */
static void dirty_page(GRand *r, uint8_t *p)
{
    switch (g_rand_int_range(r, 0, 8)) {
    case 0:
        memset(p, 0, TARGET_PAGE_SIZE);
        break;
    case 1:
        for (int i = 0; i < TARGET_PAGE_SIZE; i++) {
            p[i] = g_rand_int_range(r, 0, 256);
        }
        break;
    case 2: {
        int at = g_rand_int_range(r, 0, TARGET_PAGE_SIZE - 512);
        memset(p + at, g_rand_int_range(r, 1, 256), g_rand_int_range(r, 1, 512));
        break;
    }
    default:
        for (int k = g_rand_int_range(r, 1, 8); k > 0; k--) {
            p[g_rand_int_range(r, 0, TARGET_PAGE_SIZE)] ^= g_rand_int_range(r, 1, 256);
        }
        break;
    }
}

static void test_rounds_stay_identical(void)
{
    FakeRAM *src = fake_ram_new(pc_blocks);
    FakeRAM *dst = fake_ram_new(pc_blocks);
    GRand *r = g_rand_new_with_seed(0xb21e);
    XBZRLECacheStats *st;          /* flat: g_free() frees it */
    XWriter w;
    RAMPageReader rd = { 0 };

    memset(&w, 0, sizeof(w));
    ram_reader_reset(&rd);
    /* 8 slots for 22 pages: evictions happen. */
    w.xbzrle = xbzrle_sender_new(8 * TARGET_PAGE_SIZE, &error_abort);
    for (int round = 0; round < 200; round++) {
        g_autoptr(GByteArray) s = NULL;

        for (guint b = 0; b < src->blocks->len; b++) {
            RAMBlock *rb = fake_block(src, b);
            for (uint64_t p = 0; p < block_pages(rb); p++) {
                if (round == 0 || g_rand_int_range(r, 0, 3) == 0) {
                    dirty_page(r, page_ptr(rb, p));
                }
            }
        }
        s = send_round(&w, src, round == 0);
        load_round(&rd, dst, s);
        assert_same_ram(src, dst);
    }
    st = xbzrle_sender_stats(w.xbzrle);
    /* Slots depend on where the allocator put the blocks: only the order of magnitude is fixed. */
    g_assert_cmpint(st->pages, >, 10);
    g_assert_cmpint(st->cache_miss, >, 22);
    g_assert_cmpint(st->overflow, >, 0);
    g_assert_cmpint(st->bytes, >, 0);
    g_assert_cmpuint(st->cache_size, ==, 8 * TARGET_PAGE_SIZE);
    g_assert_cmpfloat(st->encoding_rate, >, 1.0);
    g_assert_cmpint(w.rec.xbzrle_pages, ==, st->pages);
    g_free(st);
    xbzrle_sender_free(w.xbzrle);
    g_rand_free(r);
    fake_ram_free(dst);
    fake_ram_free(src);
}

/* The first round caches what it sends: the second sends only the change. */
static void test_first_round_caches(void)
{
    FakeRAM *src = fake_ram_new(pc_blocks);
    g_autoptr(GByteArray) s1 = NULL, s2 = NULL, s3 = NULL;
    XBZRLECacheStats *st;          /* flat: g_free() frees it */
    RAMBlock *rb = fake_block(src, PC_RAM);
    XWriter w;

    memset(&w, 0, sizeof(w));
    w.xbzrle = xbzrle_sender_new(64 * TARGET_PAGE_SIZE, &error_abort);
    memset(page_ptr(rb, 3), 7, TARGET_PAGE_SIZE);
    s1 = send_round(&w, src, true);
    g_assert_cmpuint(w.rec.normal_pages, ==, 1);
    g_assert_cmpuint(w.rec.xbzrle_pages, ==, 0);
    page_ptr(rb, 3)[200] = 8;
    s2 = send_round(&w, src, false);
    g_assert_cmpuint(w.rec.normal_pages, ==, 1);
    g_assert_cmpuint(w.rec.xbzrle_pages, ==, 1);
    /* Unchanged since: nothing at all for it. */
    s3 = send_round(&w, src, false);
    g_assert_cmpuint(w.rec.normal_pages + w.rec.xbzrle_pages, ==, 2);
    st = xbzrle_sender_stats(w.xbzrle);
    g_assert_cmpint(st->cache_miss, ==, 1);
    g_assert_cmpint(st->pages, ==, 1);
    /* One byte changed at offset 200: lengths 200 (two bytes) and 1, then the byte. */
    g_assert_cmpint(st->bytes, ==, 4);
    g_free(st);
    xbzrle_sender_free(w.xbzrle);
    fake_ram_free(src);
}

/*
 * What an fd-backed stream (where a plain PAGE is sent by reference, at the
 * flush) carries for page @page of @rb put now (as ZERO if it is zero), with @after run between
 * the put and the flush, as the guest may write then.
 */
static GByteArray *put_then_write(XWriter *w, RAMBlock *rb, uint64_t page,
                                  void (*after)(uint8_t *p))
{
    int fd = memfd_create("stream", MFD_CLOEXEC);
    QEMUFile *f = qemu_file_new_output(channel_file_new(fd, "memfd"), "memfd");
    GByteArray *s = g_byte_array_new();
    off_t len;

    send_page(w, f, rb, page, page_is(rb, page, 0) ? NULL : page_ptr(rb, page));
    ram_put_eos(f);
    after(page_ptr(rb, page));
    qemu_fflush(f);
    len = lseek(fd, 0, SEEK_CUR);
    g_byte_array_set_size(s, len);
    g_assert_cmpint(pread(fd, s->data, len, 0), ==, len);
    qemu_fclose(f);
    return s;
}

static void guest_writes(uint8_t *p)
{
    memset(p + 2000, 0xee, 100);
}

static void guest_idle(uint8_t *p)
{
}

/* A source and a destination RAM, a writer with a cache of 64 pages, a reader. */
typedef struct Pair {
    FakeRAM *src, *dst;
    RAMBlock *rb;               /* the source's pc.ram */
    XWriter w;
    RAMPageReader rd;
} Pair;

/* Sets @p up; pair_first_round() then sends and loads all of the source's RAM. */
static void pair_start(Pair *p)
{
    p->src = fake_ram_new(pc_blocks);
    p->dst = fake_ram_new(pc_blocks);
    p->rb = fake_block(p->src, PC_RAM);
    memset(&p->w, 0, sizeof(p->w));
    memset(&p->rd, 0, sizeof(p->rd));
    ram_reader_reset(&p->rd);
    p->w.xbzrle = xbzrle_sender_new(64 * TARGET_PAGE_SIZE, &error_abort);
}

static void pair_first_round(Pair *p)
{
    GByteArray *s = send_round(&p->w, p->src, true);

    load_round(&p->rd, p->dst, s);
    g_byte_array_unref(s);
}

/* Sends page @page of pc.ram with @after between put and flush; the destination gets the put. */
static void pair_send_checked(Pair *p, uint64_t page, void (*after)(uint8_t *p))
{
    uint8_t want[TARGET_PAGE_SIZE];
    GByteArray *s;

    memcpy(want, page_ptr(p->rb, page), TARGET_PAGE_SIZE);
    s = put_then_write(&p->w, p->rb, page, after);
    load_round(&p->rd, p->dst, s);
    g_byte_array_unref(s);
    g_assert_cmpmem(page_ptr(fake_block(p->dst, PC_RAM), page), TARGET_PAGE_SIZE, want,
                    TARGET_PAGE_SIZE);
}

static void pair_end(Pair *p)
{
    xbzrle_sender_free(p->w.xbzrle);
    fake_ram_free(p->dst);
    fake_ram_free(p->src);
}

/* The guest writes a page after it was put and before the flush: what was put is what counts. */
static void test_write_after_put(void)
{
    Pair p;

    pair_start(&p);
    memset(page_ptr(p.rb, 1), 1, TARGET_PAGE_SIZE);
    pair_first_round(&p);
    /* A miss: page 6 went as ZERO, so it is not cached; it goes whole. */
    memset(page_ptr(p.rb, 6), 0x33, TARGET_PAGE_SIZE);
    pair_send_checked(&p, 6, guest_writes);
    /* Deltas, each written to after the put. */
    for (int step = 0; step < 3; step++) {
        page_ptr(p.rb, 1)[step * 10] = 0x40 + step;
        pair_send_checked(&p, 1, guest_writes);
    }
    pair_end(&p);
}

/* A page sent as ZERO while cached, then rewritten close to its old content. */
static void test_zero_page_drops_cached_copy(void)
{
    uint8_t old[TARGET_PAGE_SIZE];
    Pair p;

    pair_start(&p);
    memset(page_ptr(p.rb, 4), 0x77, TARGET_PAGE_SIZE);
    memcpy(old, page_ptr(p.rb, 4), TARGET_PAGE_SIZE);
    pair_first_round(&p);
    for (int step = 0; step < 3; step++) {
        if (step == 1) {
            memset(page_ptr(p.rb, 4), 0, TARGET_PAGE_SIZE);
        } else {
            memcpy(page_ptr(p.rb, 4), old, TARGET_PAGE_SIZE);
            page_ptr(p.rb, 4)[step] = 0x01;
        }
        pair_send_checked(&p, 4, guest_idle);
    }
    pair_end(&p);
}

/* An XBZRLE record for page 2 of pc.ram: encoding byte, length, delta bytes. */
static void expect_refused(uint8_t encoding, uint16_t len, const uint8_t *delta, size_t n,
                           const char *why)
{
    FakeRAM *ram = fake_ram_new(pc_blocks);
    RAMBlock *rb = fake_block(ram, PC_RAM);
    g_autoptr(GByteArray) s = listed_stream(ram);
    uint8_t hdr[3] = { encoding, len >> 8, len & 0xff };
    RAMPageReader rd = { 0 };
    Error *err = NULL;
    int loaded;

    memset(page_ptr(rb, 2), 0x5c, TARGET_PAGE_SIZE);
    put_header(s, 2 * TARGET_PAGE_SIZE, RAM_SAVE_FLAG_XBZRLE, rb->idstr);
    g_byte_array_append(s, hdr, sizeof(hdr));
    g_byte_array_append(s, delta, n);
    put_eos(s);
    ram_reader_reset(&rd);
    g_assert_cmpint(load_chunks(&rd, s->data, s->len, 0, &loaded, NULL, &err), <, 0);
    if (!strstr(error_get_pretty(err), why)) {
        g_error("expected '%s', got '%s'", why, error_get_pretty(err));
    }
    error_free(err);
    g_assert_true(page_is(rb, 2, 0x5c));
    fake_ram_free(ram);
}

static void test_hostile_records(void)
{
    static const uint8_t good[] = { 0x05, 0x01, 0xaa };
    static const uint8_t past_end[] = { 0xff, 0x1f, 0x02, 0xaa, 0xbb };
    uint8_t big[TARGET_PAGE_SIZE + 1] = { 0 };

    expect_refused(0x02, sizeof(good), good, sizeof(good), "wrong compression");
    expect_refused(0x01, 0, good, 0, "len overflow");
    expect_refused(0x01, TARGET_PAGE_SIZE + 1, big, sizeof(big), "len overflow");
    expect_refused(0x01, sizeof(past_end), past_end, sizeof(past_end), "decode error");
    /* The stream ends inside the delta (the EOS bytes are eaten as delta). */
    expect_refused(0x01, 200, good, sizeof(good), "reading an XBZRLE delta failed");
}

/*
 * The records sink with XBZRLE as its encoder (ram-sink-records.c): a
 * changed page goes as a delta; once postcopy began (the encoder parked)
 * it goes whole; after close the counters and xbzrle-cache still show.
 */
static void test_records_sink_parks_encoder(void)
{
    FakeRAM *src = fake_ram_new(pc_blocks);
    RAMBlock *rb = fake_block(src, PC_RAM);
    RAMPageWriter w;
    RAMSinkCounts c;
    MigrationInfo *info = g_new0(MigrationInfo, 1);
    QEMUFile *f = qemu_file_new_buffer_output();

    ram_writer_init_records(&w, xbzrle_sender_new(64 * TARGET_PAGE_SIZE, &error_abort));
    memset(page_ptr(rb, 5), 9, TARGET_PAGE_SIZE);
    ram_put_page(&w, f, rb, 5, page_ptr(rb, 5));       /* whole, and cached */
    page_ptr(rb, 5)[100] = 1;
    ram_put_page(&w, f, rb, 5, page_ptr(rb, 5));       /* a delta */
    w.ops->counts(w.sink, &c);
    g_assert_cmpuint(c.pages, ==, 1);
    g_assert_cmpuint(c.data_pages, ==, 2);
    g_assert_nonnull(w.ops->enter_postcopy);
    w.ops->enter_postcopy(w.sink);
    page_ptr(rb, 5)[100] = 2;
    ram_put_page(&w, f, rb, 5, page_ptr(rb, 5));       /* whole: the encoder is parked */
    ram_put_page(&w, f, rb, 6, NULL);
    w.ops->counts(w.sink, &c);
    g_assert_cmpuint(c.pages, ==, 3);
    g_assert_cmpuint(c.data_pages, ==, 3);
    w.ops->close(w.sink);
    info->ram = g_new0(MigrationStats, 1);
    w.ops->fill_info(w.sink, info);
    g_assert_cmpuint(info->ram->normal, ==, 2);
    g_assert_cmpuint(info->ram->duplicate, ==, 1);
    g_assert_cmpuint(info->ram->normal_bytes, ==, 2 * TARGET_PAGE_SIZE);
    g_assert_nonnull(info->xbzrle_cache);
    g_assert_cmpint(info->xbzrle_cache->pages, ==, 1);
    g_assert_cmpint(info->xbzrle_cache->cache_miss, ==, 1);
    g_free(info->xbzrle_cache);     /* flat structs */
    g_free(info->ram);
    g_free(info);
    ram_sink_free(&w);
    g_assert_null(w.sink);
    qemu_fclose(f);
    fake_ram_free(src);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/ram-xbzrle/rounds-stay-identical", test_rounds_stay_identical);
    g_test_add_func("/ram-xbzrle/first-round-caches", test_first_round_caches);
    g_test_add_func("/ram-xbzrle/write-after-put", test_write_after_put);
    g_test_add_func("/ram-xbzrle/zero-page-drops-cached-copy", test_zero_page_drops_cached_copy);
    g_test_add_func("/ram-xbzrle/hostile-records", test_hostile_records);
    g_test_add_func("/ram-xbzrle/records-sink-parks-encoder", test_records_sink_parks_encoder);
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for migration/transport/ram-codec.c (the "ram" section's page records)
 * over fake RAMBlocks fenced by guard pages. The writer's bytes are checked
 * against QEMU's layout built here by hand; seeded random precopy rounds must
 * load back byte for byte; the loader's rules for pages and the written bitmap.
 * Hostile streams are test-ram-codec-hostile.c's.
 */
#include "qemu/osdep.h"
#include "ram-codec-test-util.h"

#define SEED 0x7a3c0de5
#define RT_ROUNDS 8

static void fill_pattern(uint8_t *p, uint8_t seed)
{
    for (size_t i = 0; i < TARGET_PAGE_SIZE; i++) {
        p[i] = i * 31 + seed;
    }
}

/* Everything written to buffer output @f (which is closed). */
static GByteArray *take_output(QEMUFile *f)
{
    size_t len;
    const uint8_t *data = qemu_file_buffer_data(f, &len);
    GByteArray *s = g_byte_array_sized_new(len);

    g_byte_array_append(s, data, len);
    g_assert_cmpint(qemu_fclose(f), ==, 0);
    return s;
}

/* What buffer output @f got (it is closed) must be @want, byte for byte. */
static void assert_output(QEMUFile *f, const GByteArray *want)
{
    g_autoptr(GByteArray) got = take_output(f);
    guint n = MIN(got->len, want->len);

    for (guint i = 0; i < n; i++) {
        if (got->data[i] != want->data[i]) {
            g_test_message("first difference at byte %u of %u", i, want->len);
            g_assert_cmphex(got->data[i], ==, want->data[i]);
        }
    }
    g_assert_cmpuint(got->len, ==, want->len);
}

/* Loads all of @s with a fresh reader; it must succeed and use every byte. */
static void load_ok(const GByteArray *s)
{
    RAMPageReader r = { 0 };
    Error *err = NULL;
    int loaded;
    size_t used;
    int ret;

    ram_reader_reset(&r);
    ret = load_chunks(&r, s->data, s->len, 0, &loaded, &used, &err);
    if (err) {
        g_test_message("unexpected error: %s", error_get_pretty(err));
    }
    g_assert_null(err);
    g_assert_cmpint(ret, ==, 0);
    g_assert_cmpuint(used, ==, s->len);
}

/* ---- Writer: QEMU's exact bytes ---- */

/*
 * One record of pc.ram (or EOS), its bytes spelled out, so that a byte-order
 * slip shared by put_be64() and the unit shows. A PAGE's body follows them.
 */
typedef struct ExactRecord {
    uint64_t kind;              /* RAM_SAVE_FLAG_PAGE, _ZERO or _EOS */
    uint64_t page;
    uint8_t bytes[16];
    size_t len;
} ExactRecord;

static const ExactRecord exact_page = {
    RAM_SAVE_FLAG_PAGE, 3, { 0, 0, 0, 0, 0, 0, 0x30, 0x08, 6, 'p', 'c', '.', 'r', 'a', 'm' }, 15,
};
/* Page 0x180000 is at 6 GiB: the offset must not be cut to 32 bits. */
static const ExactRecord exact_zero = {
    RAM_SAVE_FLAG_ZERO, 0x180000,
    { 0, 0, 0, 0x01, 0x80, 0, 0, 0x02, 6, 'p', 'c', '.', 'r', 'a', 'm', 0 }, 16,
};
static const ExactRecord exact_eos = { RAM_SAVE_FLAG_EOS, 0, { 0, 0, 0, 0, 0, 0, 0, 0x10 }, 8 };

static void test_writer_exact(gconstpointer data)
{
    const ExactRecord *x = data;
    FakeRAM *ram = fake_ram_new(pc_blocks);
    RAMBlock *rb = fake_block(ram, PC_RAM);
    QEMUFile *f = qemu_file_new_buffer_output();
    g_autoptr(GByteArray) want = g_byte_array_new();
    RAMRecordWriter w;

    g_byte_array_append(want, x->bytes, x->len);
    if (x->kind == RAM_SAVE_FLAG_EOS) {
        ram_put_eos(f);
    } else {
        if (x->kind == RAM_SAVE_FLAG_PAGE) {
            fill_pattern(page_ptr(rb, x->page), 7);
            g_byte_array_append(want, page_ptr(rb, x->page), TARGET_PAGE_SIZE);
        }
        ram_record_writer_reset(&w);
        ram_put_record(&w, f, rb, x->page,
                     x->kind == RAM_SAVE_FLAG_PAGE ? page_ptr(rb, x->page) : NULL);
        g_assert_cmpuint(w.normal_pages, ==, x->kind == RAM_SAVE_FLAG_PAGE);
        g_assert_cmpuint(w.zero_pages, ==, x->kind == RAM_SAVE_FLAG_ZERO);
        g_assert_true(w.last_block == rb);
    }
    assert_output(f, want);
    fake_ram_free(ram);
}

#define STEP_RESET 100          /* WriterStep.block: reset the writer */
#define STEP_END 101

/* One ram_put_page() and the record it must put. */
typedef struct WriterStep {
    guint block;
    uint64_t page;
    bool data;                  /* a PAGE of a pattern, else a ZERO record */
    bool named;                 /* names its block, else CONTINUE */
} WriterStep;

/* CONTINUE (and no name) exactly when the block is the previous record's. */
static const WriterStep continue_steps[] = {
    { PC_RAM, 1, true, true }, { PC_RAM, 2, false, false }, { PC_RAM, 0, true, false },
    { PC_VRAM, 0, false, true }, { PC_VRAM, 1, true, false }, { PC_RAM, 3, false, true },
    { STEP_END },
};

/* After a reset the first record names its block again: a new stream's reader knows none. */
static const WriterStep reset_steps[] = {
    { PC_RAM, 1, true, true }, { PC_RAM, 2, false, false }, { STEP_RESET },
    { PC_RAM, 2, false, true }, { PC_RAM, 1, true, false }, { STEP_END },
};

static void test_writer_steps(gconstpointer data)
{
    FakeRAM *ram = fake_ram_new(pc_blocks);
    QEMUFile *f = qemu_file_new_buffer_output();
    g_autoptr(GByteArray) want = g_byte_array_new();
    uint64_t normal = 0, zero = 0;
    RAMRecordWriter w;

    ram_record_writer_reset(&w);
    for (const WriterStep *st = data; st->block != STEP_END; st++) {
        RAMBlock *rb;
        uint8_t *p;

        if (st->block == STEP_RESET) {
            ram_record_writer_reset(&w);
            g_assert_null(w.last_block);
            g_assert_cmpuint(w.normal_pages, ==, 0);
            g_assert_cmpuint(w.zero_pages, ==, 0);
            normal = zero = 0;
            continue;
        }
        rb = fake_block(ram, st->block);
        p = page_ptr(rb, st->page);
        /* Seeded by the page: a page sent twice reads the same both times. */
        if (st->data) {
            fill_pattern(p, st->block * 16 + st->page + 1);
        }
        ram_put_record(&w, f, rb, st->page, st->data ? p : NULL);
        put_header(want, st->page * TARGET_PAGE_SIZE,
                   (st->data ? RAM_SAVE_FLAG_PAGE : RAM_SAVE_FLAG_ZERO) |
                   (st->named ? 0 : RAM_SAVE_FLAG_CONTINUE), st->named ? rb->idstr : NULL);
        if (st->data) {
            g_byte_array_append(want, p, TARGET_PAGE_SIZE);
            normal++;
        } else {
            put_fill(want, 0, 1);
            zero++;
        }
    }
    g_assert_cmpuint(w.normal_pages, ==, normal);
    g_assert_cmpuint(w.zero_pages, ==, zero);
    assert_output(f, want);
    fake_ram_free(ram);
}

static void test_writer_block_list(void)
{
    /* 22 pages = 0x16000 bytes, | MEM_SIZE. */
    static const uint8_t total[] = { 0, 0, 0, 0, 0, 0x01, 0x60, 0x04 };
    FakeRAM *ram = fake_ram_new(pc_blocks);
    QEMUFile *f = qemu_file_new_buffer_output();
    g_autoptr(GByteArray) want = g_byte_array_new();

    ram_put_block_list(f);
    g_byte_array_append(want, total, sizeof(total));
    for (guint i = 0; i < ram->blocks->len; i++) {
        put_str(want, fake_block(ram, i)->idstr);
        put_be64(want, fake_block(ram, i)->used_length);
    }
    put_eos(want);
    assert_output(f, want);
    fake_ram_free(ram);
}

/* ---- Round trip: writer to loader ---- */

typedef struct PageRef {
    guint block;
    uint64_t page;
} PageRef;

/* New content for a page, the kinds a guest has: zero, almost zero, anything. */
static void mutate_page(GRand *rand, uint8_t *p)
{
    switch (g_rand_int_range(rand, 0, 4)) {
    case 0:
        memset(p, 0, TARGET_PAGE_SIZE);
        break;
    case 1:
        /* One non-zero byte anywhere must not pass for a zero page. */
        memset(p, 0, TARGET_PAGE_SIZE);
        p[g_rand_int_range(rand, 0, TARGET_PAGE_SIZE)] = g_rand_int_range(rand, 1, 256);
        break;
    default:
        for (size_t i = 0; i < TARGET_PAGE_SIZE; i += 4) {
            uint32_t v = g_rand_int(rand);

            memcpy(p + i, &v, 4);
        }
        break;
    }
}

static bool is_zero(const uint8_t *p)
{
    for (size_t i = 0; i < TARGET_PAGE_SIZE; i++) {
        if (p[i]) {
            return false;
        }
    }
    return true;
}

/*
 * A precopy in RT_ROUNDS chunks: the block list, a first pass over every
 * page, then passes that change and resend random pages (a page may go
 * zero to data to zero), each in random order across the blocks.
 */
static void test_roundtrip(gconstpointer data)
{
    guint32 seed = GPOINTER_TO_UINT(data);
    GRand *rand = g_rand_new_with_seed(seed);
    FakeRAM *src = fake_ram_new(pc_blocks);
    FakeRAM *dst;
    QEMUFile *f = qemu_file_new_buffer_output();
    g_autoptr(GArray) refs = g_array_new(FALSE, FALSE, sizeof(PageRef));
    g_autoptr(GByteArray) stream = NULL;
    unsigned long *sent_data[G_N_ELEMENTS(pc_blocks) - 1];
    uint64_t zero = 0, normal = 0;
    RAMRecordWriter w;
    RAMPageReader r = { 0 };
    Error *err = NULL;
    int loaded;
    size_t used;

    g_test_message("seed 0x%x", seed);
    for (guint b = 0; b < src->blocks->len; b++) {
        sent_data[b] = bitmap_new(block_pages(fake_block(src, b)));
        for (uint64_t p = 0; p < block_pages(fake_block(src, b)); p++) {
            PageRef ref = { b, p };

            g_array_append_val(refs, ref);
        }
    }

    ram_record_writer_reset(&w);
    ram_put_block_list(f);
    for (int round = 0; round < RT_ROUNDS; round++) {
        guint n = round ? g_rand_int_range(rand, 1, refs->len / 2) : refs->len;

        for (guint i = refs->len - 1; i > 0; i--) {
            guint j = g_rand_int_range(rand, 0, i + 1);
            PageRef t = g_array_index(refs, PageRef, i);

            g_array_index(refs, PageRef, i) = g_array_index(refs, PageRef, j);
            g_array_index(refs, PageRef, j) = t;
        }
        for (guint i = 0; i < n; i++) {
            PageRef *ref = &g_array_index(refs, PageRef, i);
            RAMBlock *rb = fake_block(src, ref->block);
            uint8_t *p = page_ptr(rb, ref->page);

            mutate_page(rand, p);
            if (is_zero(p)) {
                ram_put_record(&w, f, rb, ref->page, NULL);
                zero++;
            } else {
                ram_put_record(&w, f, rb, ref->page, p);
                set_bit(ref->page, sent_data[ref->block]);
                normal++;
            }
        }
        ram_put_eos(f);
        /* The pages went by reference: copy them out before the next round changes them. */
        qemu_fflush(f);
    }
    g_assert_cmpuint(w.zero_pages, ==, zero);
    g_assert_cmpuint(w.normal_pages, ==, normal);
    g_test_message("%" PRIu64 " zero and %" PRIu64 " normal pages", zero, normal);
    stream = take_output(f);

    dst = fake_ram_new(pc_blocks);
    ram_reader_reset(&r);
    g_assert_cmpint(load_chunks(&r, stream->data, stream->len, 1 + RT_ROUNDS, &loaded, &used,
                                &err), ==, 0);
    g_assert_null(err);
    g_assert_cmpint(loaded, ==, 1 + RT_ROUNDS);
    g_assert_cmpuint(used, ==, stream->len);

    for (guint b = 0; b < src->blocks->len; b++) {
        RAMBlock *s = fake_block(src, b);
        RAMBlock *d = fake_block(dst, b);

        for (uint64_t p = 0; p < block_pages(s); p++) {
            if (memcmp(page_ptr(s, p), page_ptr(d, p), TARGET_PAGE_SIZE)) {
                g_test_message("%s page %" PRIu64 " differs", s->idstr, p);
                g_assert_not_reached();
            }
            /* A page is written exactly if it ever came as data (zero records skip or clear). */
            g_assert_cmpint(test_bit(p, d->vmm_written_bmap), ==, test_bit(p, sent_data[b]));
        }
        g_free(sent_data[b]);
    }
    fake_ram_free(dst);
    fake_ram_free(src);
    g_rand_free(rand);
}

/* A 255-byte name is the longest a counted string holds: such a block must migrate. */
static void test_roundtrip_long_name(void)
{
    g_autofree char *name = g_strnfill(255, 'L');
    BlockDef defs[] = { { "pc.ram", 4 }, { name, 2 }, { NULL, 0 } };
    FakeRAM *src = fake_ram_new(defs);
    FakeRAM *dst;
    RAMBlock *rb = fake_block(src, 1);
    QEMUFile *f = qemu_file_new_buffer_output();
    g_autoptr(GByteArray) stream = NULL;
    RAMRecordWriter w;

    fill_pattern(page_ptr(rb, 1), 5);
    fill_pattern(page_ptr(rb, 0), 6);
    ram_record_writer_reset(&w);
    ram_put_block_list(f);
    ram_put_record(&w, f, rb, 1, page_ptr(rb, 1));
    ram_put_record(&w, f, fake_block(src, 0), 3, NULL);
    ram_put_record(&w, f, rb, 0, page_ptr(rb, 0));
    ram_put_eos(f);
    stream = take_output(f);

    dst = fake_ram_new(defs);
    load_ok(stream);
    g_assert_cmpmem(fake_block(dst, 1)->host, 2 * TARGET_PAGE_SIZE, rb->host,
                    2 * TARGET_PAGE_SIZE);
    fake_ram_free(dst);
    fake_ram_free(src);
}

/* ---- Loader: pages and the written bitmap ---- */

static void test_load_page_sets_written(void)
{
    FakeRAM *ram = fake_ram_new(pc_blocks);
    RAMBlock *rb = fake_block(ram, PC_RAM);
    g_autoptr(GByteArray) s = listed_stream(ram);

    put_page(s, 5, rb->idstr, 0x3c);
    put_eos(s);
    load_ok(s);
    g_assert_true(page_is(rb, 5, 0x3c));
    g_assert_true(test_bit(5, rb->vmm_written_bmap));
    g_assert_cmpuint(bitmap_count_one(rb->vmm_written_bmap, block_pages(rb)), ==, 1);
    g_assert_true(page_is(rb, 4, 0) && page_is(rb, 6, 0));
    fake_ram_free(ram);
}

/*
 * A clear bit says the page is still the kernel's zero page: the loader
 * must not touch it (that would allocate it). The 0x5a marker, which no
 * real unwritten page holds, shows whether it did.
 */
static void test_load_zero_unwritten(void)
{
    FakeRAM *ram = fake_ram_new(pc_blocks);
    RAMBlock *rb = fake_block(ram, PC_RAM);
    g_autoptr(GByteArray) s = listed_stream(ram);

    memset(page_ptr(rb, 4), 0x5a, TARGET_PAGE_SIZE);
    put_zero(s, 4, rb->idstr);
    put_eos(s);
    load_ok(s);
    g_assert_true(page_is(rb, 4, 0x5a));
    g_assert_false(test_bit(4, rb->vmm_written_bmap));
    fake_ram_free(ram);
}

/* A written page that holds data must be cleared by a ZERO record; a written zero page stays. */
static void test_load_zero_written(void)
{
    FakeRAM *ram = fake_ram_new(pc_blocks);
    RAMBlock *rb = fake_block(ram, PC_RAM);
    g_autoptr(GByteArray) s = listed_stream(ram);

    fill_pattern(page_ptr(rb, 6), 1);
    set_bit(6, rb->vmm_written_bmap);
    /* Only the last byte set: the whole page must be looked at. */
    page_ptr(rb, 8)[TARGET_PAGE_SIZE - 1] = 1;
    set_bit(8, rb->vmm_written_bmap);
    set_bit(7, rb->vmm_written_bmap);
    put_zero(s, 6, rb->idstr);
    put_zero(s, 7, NULL);
    put_zero(s, 8, NULL);
    put_eos(s);
    load_ok(s);
    for (uint64_t p = 6; p <= 8; p++) {
        g_assert_true(page_is(rb, p, 0));
        g_assert_true(test_bit(p, rb->vmm_written_bmap));
    }
    fake_ram_free(ram);
}

/* QEMU fills the page with a ZERO record's fill byte when it is not 0 (never sent today). */
static void test_load_zero_fill_byte(void)
{
    FakeRAM *ram = fake_ram_new(pc_blocks);
    RAMBlock *rb = fake_block(ram, PC_VRAM);
    g_autoptr(GByteArray) s = listed_stream(ram);

    put_zero_fill(s, 2, rb->idstr, 0x7f);
    put_eos(s);
    load_ok(s);
    g_assert_true(page_is(rb, 2, 0x7f));
    g_assert_true(test_bit(2, rb->vmm_written_bmap));
    g_assert_true(page_is(rb, 1, 0) && page_is(rb, 3, 0));
    fake_ram_free(ram);
}

/* The last page of a block is inside it: the boundary cuts on the right side. */
static void test_load_last_page(void)
{
    FakeRAM *ram = fake_ram_new(pc_blocks);
    g_autoptr(GByteArray) s = listed_stream(ram);

    put_page(s, PC_RAM_PAGES - 1, "pc.ram", 0xee);
    put_page(s, PC_ROM_PAGES - 1, fake_block(ram, PC_ROM)->idstr, 0xdd);
    put_eos(s);
    load_ok(s);
    g_assert_true(page_is(fake_block(ram, PC_RAM), PC_RAM_PAGES - 1, 0xee));
    g_assert_true(page_is(fake_block(ram, PC_ROM), PC_ROM_PAGES - 1, 0xdd));
    fake_ram_free(ram);
}

/* ram.c calls the loader once per chunk: it must stop right after the EOS. */
static void test_load_stops_at_eos(void)
{
    FakeRAM *ram = fake_ram_new(pc_blocks);
    g_autoptr(GByteArray) s = listed_stream(ram);
    guint chunk1 = s->len;
    RAMPageReader r = { 0 };
    QEMUFile *f;
    Error *err = NULL;

    put_page(s, 1, "pc.ram", 0x12);
    put_eos(s);
    f = qemu_file_new_buffer_input(s->data, s->len);
    ram_reader_reset(&r);
    g_assert_cmpint(ram_load_records(&r, f, &err), ==, 0);
    g_assert_null(err);
    g_assert_cmpuint(qemu_file_transferred(f), ==, chunk1);
    g_assert_true(r.have_sizes);
    g_assert_true(page_is(fake_block(ram, PC_RAM), 1, 0));
    g_assert_cmpint(ram_load_records(&r, f, &err), ==, 0);
    g_assert_null(err);
    g_assert_cmpuint(qemu_file_transferred(f), ==, s->len);
    g_assert_true(page_is(fake_block(ram, PC_RAM), 1, 0x12));
    g_assert_cmpint(qemu_fclose(f), ==, 0);
    fake_ram_free(ram);
}

int main(int argc, char **argv)
{
    static const guint32 seeds[] = { SEED, SEED + 1, SEED + 2 };

    g_test_init(&argc, &argv, NULL);
    g_test_add_data_func("/ram-codec/writer/page", &exact_page, test_writer_exact);
    g_test_add_data_func("/ram-codec/writer/zero-page", &exact_zero, test_writer_exact);
    g_test_add_data_func("/ram-codec/writer/continue", continue_steps, test_writer_steps);
    g_test_add_data_func("/ram-codec/writer/reset", reset_steps, test_writer_steps);
    g_test_add_func("/ram-codec/writer/block-list", test_writer_block_list);
    g_test_add_data_func("/ram-codec/writer/eos", &exact_eos, test_writer_exact);
    for (size_t i = 0; i < G_N_ELEMENTS(seeds); i++) {
        g_autofree char *path = g_strdup_printf("/ram-codec/roundtrip/random/%zu", i);

        g_test_add_data_func(path, GUINT_TO_POINTER(seeds[i]), test_roundtrip);
    }
    g_test_add_func("/ram-codec/roundtrip/name-255-bytes", test_roundtrip_long_name);
    g_test_add_func("/ram-codec/load/page-sets-written", test_load_page_sets_written);
    g_test_add_func("/ram-codec/load/zero-on-unwritten-page", test_load_zero_unwritten);
    g_test_add_func("/ram-codec/load/zero-on-written-page", test_load_zero_written);
    g_test_add_func("/ram-codec/load/zero-fill-byte", test_load_zero_fill_byte);
    g_test_add_func("/ram-codec/load/last-page", test_load_last_page);
    g_test_add_func("/ram-codec/load/stops-at-eos", test_load_stops_at_eos);
    return g_test_run();
}

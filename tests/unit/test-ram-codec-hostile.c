/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for migration/transport/ram-codec.c's loader on hostile streams (bad
 * flags, block names, lengths, offsets, every truncation), built by hand
 * over fake RAMBlocks fenced by guard pages: each must fail with a clear
 * error and never write outside a block, most of them before writing at all.
 */
#include "qemu/osdep.h"
#include "ram-codec-test-util.h"

/* What every truncated stream must say, wherever it was cut. */
#define MSG_EOF "unexpected end of migration stream"
#define MSG_FLAGS "Unknown combination of migration flags"
#define MSG_MEM_SIZE "unexpected MEM_SIZE record"
#define MSG_OFFSET "Illegal RAM offset"

/* Every byte of RAM with its guard pages, and the written bitmaps. */
static GByteArray *fake_ram_snapshot(FakeRAM *ram)
{
    GByteArray *s = g_byte_array_new();

    for (guint i = 0; i < ram->blocks->len; i++) {
        RAMBlock *rb = fake_block(ram, i);

        g_byte_array_append(s, rb->host - TARGET_PAGE_SIZE,
                            rb->used_length + 2 * TARGET_PAGE_SIZE);
        g_byte_array_append(s, (const guint8 *)rb->vmm_written_bmap,
                            BITS_TO_LONGS(block_pages(rb)) * sizeof(unsigned long));
    }
    return s;
}

/* @err says @msg (a substring); it is freed. */
static void assert_error(Error *err, const char *msg)
{
    g_assert_nonnull(err);
    g_assert_cmpuint(strlen(error_get_pretty(err)), >, 0);
    if (!strstr(error_get_pretty(err), msg)) {
        g_test_message("error \"%s\" does not say \"%s\"", error_get_pretty(err), msg);
        g_assert_not_reached();
    }
    error_free(err);
}

/*
 * @s is hostile: loading its first @nchunks chunks (0: all) with a fresh
 * reader must fail with a negative errno and an error saying @msg, and
 * leave every byte of RAM, guards and written bitmaps as it was: each bad
 * record here must be refused before a byte of its body is stored.
 */
static void assert_refused_n(FakeRAM *ram, const GByteArray *s, int nchunks, const char *msg,
                             const char *what)
{
    g_autoptr(GByteArray) before = fake_ram_snapshot(ram);
    g_autoptr(GByteArray) after = NULL;
    RAMPageReader r = { 0 };
    Error *err = NULL;
    int loaded;
    int ret;

    ram_reader_reset(&r);
    ret = load_chunks(&r, s->data, s->len, nchunks, &loaded, NULL, &err);
    if (ret >= 0 && what) {
        g_test_message("%s: accepted", what);
    }
    g_assert_cmpint(ret, <, 0);
    g_assert_cmpint(ret, >, -4096);
    if (what && err && !strstr(error_get_pretty(err), msg)) {
        g_test_message("%s:", what);
    }
    assert_error(err, msg);
    after = fake_ram_snapshot(ram);
    g_assert_cmpmem(after->data, after->len, before->data, before->len);
}

static void assert_refused(FakeRAM *ram, const GByteArray *s, const char *msg)
{
    assert_refused_n(ram, s, 0, msg, NULL);
}

/* ---- Flags ---- */

typedef struct BadFlags {
    const char *name;
    uint64_t offset;
    uint64_t flags;
} BadFlags;

static const BadFlags bad_flags[] = {
    { "full", 0x1000, RAM_SAVE_FLAG_FULL },
    { "hook", 0x1000, RAM_SAVE_FLAG_HOOK },
    { "compress-page", 0x1000, RAM_SAVE_FLAG_COMPRESS_PAGE },
    { "multifd-flush", 0x1000, RAM_SAVE_FLAG_MULTIFD_FLUSH },
    { "zero-page", 0x1000, RAM_SAVE_FLAG_ZERO | RAM_SAVE_FLAG_PAGE },
    { "zero-page-continue", 0x1000,
      RAM_SAVE_FLAG_ZERO | RAM_SAVE_FLAG_PAGE | RAM_SAVE_FLAG_CONTINUE },
    { "none-with-offset", 0x1000, 0 },
    { "none", 0, 0 },
    { "continue-alone", 0x1000, RAM_SAVE_FLAG_CONTINUE },
    { "eos-continue", 0, RAM_SAVE_FLAG_EOS | RAM_SAVE_FLAG_CONTINUE },
    { "eos-page", 0, RAM_SAVE_FLAG_EOS | RAM_SAVE_FLAG_PAGE },
    { "xbzrle-page", 0x1000, RAM_SAVE_FLAG_XBZRLE | RAM_SAVE_FLAG_PAGE },
    { "unknown-0x400", 0x1000, 0x400 },
    { "unknown-0x800", 0x1000, 0x800 },
    { "unknown-0x800-page", 0x1000, 0x800 | RAM_SAVE_FLAG_PAGE },
    { "all-but-mem-size", 0x1000, (TARGET_PAGE_SIZE - 1) & ~RAM_SAVE_FLAG_MEM_SIZE },
};

/*
 * Block list, a named ZERO record on unwritten page 0 of pc.ram (changes
 * nothing, but gives CONTINUE a block), then the record @offset | @flags
 * with a name unless CONTINUE and a page-sized body, then EOS.
 */
static void put_flags_stream(GByteArray *s, FakeRAM *ram, uint64_t offset, uint64_t flags)
{
    put_block_list(s, ram);
    put_zero(s, 0, "pc.ram");
    put_header(s, offset, flags, flags & RAM_SAVE_FLAG_CONTINUE ? NULL : "pc.ram");
    if ((flags & ~RAM_SAVE_FLAG_CONTINUE) == RAM_SAVE_FLAG_ZERO) {
        put_fill(s, 0, 1);
    } else {
        put_fill(s, 0xcc, TARGET_PAGE_SIZE);
    }
    put_eos(s);
}

static void test_bad_flags(gconstpointer data)
{
    const BadFlags *bf = data;
    FakeRAM *ram = fake_ram_new(pc_blocks);
    g_autoptr(GByteArray) s = g_byte_array_new();

    put_flags_stream(s, ram, bf->offset, bf->flags);
    assert_refused(ram, s, MSG_FLAGS);
    fake_ram_free(ram);
}

/* A multifd flush record reaches a reader without multifd channels. */
static void test_multifd_flush_without_multifd(void)
{
    FakeRAM *ram = fake_ram_new(pc_blocks);
    g_autoptr(GByteArray) s = g_byte_array_new();

    put_block_list(s, ram);
    put_header(s, 0, RAM_SAVE_FLAG_MULTIFD_FLUSH, NULL);
    put_eos(s);
    assert_refused(ram, s, "multifd is off here");
    fake_ram_free(ram);
}

/*
 * Every value of the flag bits, classified by QEMU's rules: MEM_SIZE once
 * and alone, EOS alone, ZERO or PAGE with or without CONTINUE; anything
 * else is refused.
 */
static void test_flags_exhaustive(void)
{
    FakeRAM *ram = fake_ram_new(pc_blocks);
    RAMBlock *rb = fake_block(ram, PC_RAM);
    unsigned accepted = 0;

    for (uint64_t flags = 0; flags < TARGET_PAGE_SIZE; flags++) {
        g_autoptr(GByteArray) s = g_byte_array_new();
        uint64_t kind = flags & ~RAM_SAVE_FLAG_CONTINUE;
        g_autofree char *what = g_strdup_printf("flags 0x%" PRIx64, flags);

        put_flags_stream(s, ram, TARGET_PAGE_SIZE, flags);
        if (flags & RAM_SAVE_FLAG_MEM_SIZE) {
            /* The block list came already. */
            assert_refused_n(ram, s, 2, MSG_MEM_SIZE, what);
        } else if (flags == RAM_SAVE_FLAG_EOS || kind == RAM_SAVE_FLAG_ZERO ||
                   kind == RAM_SAVE_FLAG_PAGE) {
            RAMPageReader r = { 0 };
            Error *err = NULL;
            int loaded;

            ram_reader_reset(&r);
            if (load_chunks(&r, s->data, s->len, 2, &loaded, NULL, &err) < 0) {
                g_test_message("%s: %s", what, error_get_pretty(err));
                g_assert_not_reached();
            }
            if (kind == RAM_SAVE_FLAG_PAGE) {
                g_assert_true(page_is(rb, 1, 0xcc));
            } else if (kind == RAM_SAVE_FLAG_ZERO) {
                g_assert_true(page_is(rb, 1, 0));
            }
            accepted++;
        } else if (kind == RAM_SAVE_FLAG_XBZRLE) {
            /* A known record whose body (0xcc...) is no XBZRLE header (test-ram-xbzrle has more). */
            assert_refused_n(ram, s, 2, "wrong compression", what);
        } else {
            assert_refused_n(ram, s, 2, MSG_FLAGS, what);
        }
    }
    /* EOS, ZERO, PAGE, and the last two with CONTINUE. */
    g_assert_cmpuint(accepted, ==, 5);
    fake_ram_free(ram);
}

/* ---- The block list ---- */

static void test_mem_size_with_flags(void)
{
    static const uint64_t extra[] = {
        RAM_SAVE_FLAG_CONTINUE, RAM_SAVE_FLAG_PAGE, RAM_SAVE_FLAG_ZERO, RAM_SAVE_FLAG_EOS,
        RAM_SAVE_FLAG_FULL, RAM_SAVE_FLAG_XBZRLE, 0x400,
    };
    FakeRAM *ram = fake_ram_new(pc_blocks);

    for (size_t i = 0; i < G_N_ELEMENTS(extra); i++) {
        g_autoptr(GByteArray) s = g_byte_array_new();
        g_autofree char *what = g_strdup_printf("MEM_SIZE | 0x%" PRIx64, extra[i]);

        put_block_list_as(s, ram, ram_blocks_total_bytes() | extra[i], -1, NULL, -1, 0);
        assert_refused_n(ram, s, 0, MSG_MEM_SIZE, what);
    }
    fake_ram_free(ram);
}

static void test_mem_size_twice(void)
{
    FakeRAM *ram = fake_ram_new(pc_blocks);
    g_autoptr(GByteArray) s = listed_stream(ram);

    put_block_list(s, ram);
    assert_refused(ram, s, MSG_MEM_SIZE);
    fake_ram_free(ram);
}

enum { REC_PAGE, REC_ZERO, REC_CONTINUE, REC_KINDS };

/*
 * A record at @offset the loader must refuse before storing its body: a
 * PAGE of 0xcc, a ZERO whose fill byte 0x7f would show, or a CONTINUE PAGE
 * (@idstr unused).
 */
static void put_bad_record(GByteArray *s, int kind, uint64_t offset, const char *idstr)
{
    if (kind == REC_ZERO) {
        put_header(s, offset, RAM_SAVE_FLAG_ZERO, idstr);
        put_fill(s, 0x7f, 1);
        return;
    }
    put_header(s, offset, RAM_SAVE_FLAG_PAGE | (kind == REC_CONTINUE ? RAM_SAVE_FLAG_CONTINUE : 0),
               kind == REC_CONTINUE ? NULL : idstr);
    put_fill(s, 0xcc, TARGET_PAGE_SIZE);
}

/* Without the block list the lengths were never checked: no page may land. */
static void test_page_before_block_list(void)
{
    FakeRAM *ram = fake_ram_new(pc_blocks);

    for (int kind = 0; kind < REC_KINDS; kind++) {
        g_autoptr(GByteArray) s = g_byte_array_new();

        put_bad_record(s, kind, TARGET_PAGE_SIZE, "pc.ram");
        put_eos(s);
        assert_refused(ram, s, "page record before the block list");
    }
    fake_ram_free(ram);
}

/* Near misses of real names: the match must be exact. */
static const char *const bad_names[] = {
    "nosuch", "pc.ra", "pc.ram2", "PC.RAM", "", "pc.ram ", "/rom@etc/acpi/table",
};

static void test_unknown_block_in_list(void)
{
    FakeRAM *ram = fake_ram_new(pc_blocks);

    for (size_t i = 0; i < G_N_ELEMENTS(bad_names); i++) {
        g_autoptr(GByteArray) s = g_byte_array_new();
        g_autofree char *msg = g_strdup_printf("Unknown ramblock \"%s\"", bad_names[i]);

        put_block_list_as(s, ram, ram_blocks_total_bytes(), PC_RAM, bad_names[i], -1, 0);
        assert_refused(ram, s, msg);
    }
    fake_ram_free(ram);
}

static void test_unknown_block_in_page(void)
{
    FakeRAM *ram = fake_ram_new(pc_blocks);

    for (size_t i = 0; i < G_N_ELEMENTS(bad_names); i++) {
        g_autoptr(GByteArray) s = listed_stream(ram);
        g_autofree char *msg = g_strdup_printf("Can't find block %s", bad_names[i]);

        put_page(s, 1, bad_names[i], 0xcc);
        put_eos(s);
        assert_refused(ram, s, msg);
    }
    fake_ram_free(ram);
}

/* Longest counted string, no such block: no overflow of the 256-byte name buffer. */
static void test_name_255_bytes(void)
{
    g_autofree char *name = g_strnfill(255, 'n');
    g_autofree char *list_msg = g_strdup_printf("Unknown ramblock \"%s\"", name);
    g_autofree char *page_msg = g_strdup_printf("Can't find block %s", name);
    FakeRAM *ram = fake_ram_new(pc_blocks);
    g_autoptr(GByteArray) in_list = g_byte_array_new();
    g_autoptr(GByteArray) in_page = listed_stream(ram);

    put_block_list_as(in_list, ram, ram_blocks_total_bytes(), PC_VRAM, name, -1, 0);
    assert_refused(ram, in_list, list_msg);
    put_zero(in_page, 0, name);
    put_eos(in_page);
    assert_refused(ram, in_page, page_msg);
    fake_ram_free(ram);
}

static void test_length_mismatch(void)
{
    static const uint64_t lens[] = {
        (PC_RAM_PAGES + 1) * TARGET_PAGE_SIZE, (PC_RAM_PAGES - 1) * TARGET_PAGE_SIZE, 0,
        1ULL << 63,
    };
    FakeRAM *ram = fake_ram_new(pc_blocks);
    uint64_t others = ram_blocks_total_bytes() - fake_block(ram, PC_RAM)->used_length;

    for (size_t i = 0; i < G_N_ELEMENTS(lens); i++) {
        g_autoptr(GByteArray) s = g_byte_array_new();

        /* The total agrees with the lengths sent: only the length itself is wrong. */
        put_block_list_as(s, ram, others + lens[i], -1, NULL, PC_RAM, lens[i]);
        assert_refused(ram, s, "Length mismatch: pc.ram");
    }
    fake_ram_free(ram);
}

/* x-ignore-shared's block list: each block's address after its length, @bad_idx's @bad. */
static GByteArray *ignore_shared_list(FakeRAM *ram, int bad_idx, uint64_t bad)
{
    GByteArray *s = g_byte_array_new();

    put_be64(s, ram_blocks_total_bytes() | RAM_SAVE_FLAG_MEM_SIZE);
    for (guint i = 0; i < ram->blocks->len; i++) {
        RAMBlock *rb = fake_block(ram, i);

        put_str(s, rb->idstr);
        put_be64(s, rb->used_length);
        put_be64(s, (int)i == bad_idx ? bad : rb->mr_addr);
    }
    put_eos(s);
    return s;
}

static int load_ignore_shared(RAMPageReader *r, const GByteArray *s, Error **errp)
{
    int loaded;

    ram_reader_reset(r);
    r->ignore_shared = true;
    return load_chunks(r, s->data, s->len, 0, &loaded, NULL, errp);
}

/*
 * pc.ram shared by name (a file mapped share=on) at address 0: the list
 * must give it that address (QEMU's check), and the pages of every other
 * block must come; another address, a block the source left out while it
 * is private here, and every truncation are refused.
 */
static void test_ignore_shared(void)
{
    FakeRAM *ram = fake_ram_new(pc_blocks);
    RAMBlock *pc_ram = fake_block(ram, PC_RAM);
    RAMPageReader r = { 0 };
    Error *err = NULL;

    pc_ram->shared = true;
    pc_ram->kind = RAM_BACKEND_FILE;
    fake_block(ram, PC_VRAM)->mr_addr = 0xe0000000;
    {
        g_autoptr(GByteArray) s = ignore_shared_list(ram, -1, 0);

        /* The ROM's and the VRAM's pages come; pc.ram's stay in the file. */
        put_zero(s, 0, "/rom@etc/acpi/tables");
        put_page(s, 1, "0000:00:02.0/vga.vram", 0x42);
        put_eos(s);
        g_assert_cmpint(load_ignore_shared(&r, s, &error_abort), ==, 0);
        g_assert_true(ram_load_check_ignored(&r, &error_abort));
        g_assert_true(page_is(fake_block(ram, PC_VRAM), 1, 0x42));
        /* Were pc.ram private here, its pages would never have come. */
        pc_ram->shared = false;
        g_assert_false(ram_load_check_ignored(&r, &err));
        assert_error(err, "no page of RAM block 'pc.ram' arrived");
        err = NULL;
        pc_ram->shared = true;
        ram_reader_reset(&r);
    }
    {
        g_autoptr(GByteArray) s = ignore_shared_list(ram, PC_RAM, 0x100000);

        g_assert_cmpint(load_ignore_shared(&r, s, &err), <, 0);
        assert_error(err, "Mismatched GPAs for block pc.ram");
        err = NULL;
        ram_reader_reset(&r);
    }
    {
        /* A private block's address is not checked: QEMU does not either. */
        g_autoptr(GByteArray) s = ignore_shared_list(ram, PC_ROM, 0x1234000);

        g_assert_cmpint(load_ignore_shared(&r, s, &error_abort), ==, 0);
        ram_reader_reset(&r);
    }
    {
        g_autoptr(GByteArray) s = ignore_shared_list(ram, -1, 0);

        for (guint cut = 8; cut < s->len - 8; cut++) {
            g_autoptr(GByteArray) t = g_byte_array_new();

            g_byte_array_append(t, s->data, cut);
            g_assert_cmpint(load_ignore_shared(&r, t, &err), <, 0);
            g_assert_nonnull(err);
            g_clear_pointer(&err, error_free);
            ram_reader_reset(&r);
        }
    }
    fake_ram_free(ram);
}

static void test_list_exceeds_total(void)
{
    FakeRAM *ram = fake_ram_new(pc_blocks);
    const uint64_t totals[] = {
        TARGET_PAGE_SIZE,                                /* below the first block */
        ram_blocks_total_bytes() - TARGET_PAGE_SIZE,     /* the last one does not fit */
    };

    for (size_t i = 0; i < G_N_ELEMENTS(totals); i++) {
        g_autoptr(GByteArray) s = g_byte_array_new();

        put_block_list_as(s, ram, totals[i], -1, NULL, -1, 0);
        assert_refused(ram, s, "block list exceeds the announced total");
    }
    fake_ram_free(ram);
}

/*
 * A total above the sum of the blocks: the reader goes on reading names and
 * takes the list's EOS word for one more (a 0-byte name), which does not
 * exist. Refused, whatever else comes after.
 */
static void test_list_short_of_total(void)
{
    FakeRAM *ram = fake_ram_new(pc_blocks);
    g_autoptr(GByteArray) s = g_byte_array_new();

    put_block_list_as(s, ram, ram_blocks_total_bytes() + TARGET_PAGE_SIZE, -1, NULL, -1, 0);
    put_page(s, 1, "pc.ram", 0xcc);
    put_eos(s);
    assert_refused(ram, s, "Unknown ramblock \"\"");
    fake_ram_free(ram);
}

/* ---- Page records: CONTINUE, offsets, truncation ---- */

static void test_continue_without_block(void)
{
    FakeRAM *ram = fake_ram_new(pc_blocks);
    g_autoptr(GByteArray) page = listed_stream(ram);
    g_autoptr(GByteArray) zero = listed_stream(ram);
    g_autoptr(GByteArray) named = listed_stream(ram);
    g_autoptr(GByteArray) bare = g_byte_array_new();
    RAMPageReader r = { 0 };
    Error *err = NULL;
    int loaded;

    put_page(page, 1, NULL, 0xcc);
    put_eos(page);
    assert_refused(ram, page, "CONTINUE flag without a previous block");
    put_zero_fill(zero, 1, NULL, 0x7f);
    put_eos(zero);
    assert_refused(ram, zero, "CONTINUE flag without a previous block");

    /* A reader reset for a new stream forgets the block of the last one, and its sizes. */
    put_zero(named, 0, "pc.ram");
    put_eos(named);
    ram_reader_reset(&r);
    g_assert_cmpint(load_chunks(&r, named->data, named->len, 0, &loaded, NULL, &err), ==, 0);
    g_assert_null(err);
    g_assert_true(r.last_block == fake_block(ram, PC_RAM));
    ram_reader_reset(&r);
    g_assert_null(r.last_block);
    g_assert_false(r.have_sizes);
    g_assert_cmpint(load_chunks(&r, page->data, page->len, 0, &loaded, NULL, &err), <, 0);
    assert_error(err, "CONTINUE flag without a previous block");
    err = NULL;
    ram_reader_reset(&r);
    put_page(bare, 1, "pc.ram", 0xcc);
    put_eos(bare);
    g_assert_cmpint(load_chunks(&r, bare->data, bare->len, 0, &loaded, NULL, &err), <, 0);
    assert_error(err, "page record before the block list");
    g_assert_true(page_is(fake_block(ram, PC_RAM), 1, 0));
    fake_ram_free(ram);
}

typedef struct BadOffset {
    guint block;
    uint64_t offset;
} BadOffset;

/* Offsets at or past the end of the block, including ones that wrap or lose high bits. */
static const BadOffset bad_offsets[] = {
    { PC_RAM, PC_RAM_PAGES * TARGET_PAGE_SIZE },            /* == used_length */
    { PC_RAM, (PC_RAM_PAGES + 1) * TARGET_PAGE_SIZE },
    { PC_ROM, PC_ROM_PAGES * TARGET_PAGE_SIZE },            /* fits pc.ram, not the ROM */
    { PC_RAM, 0xfffffffffffff000ULL },                      /* + a page wraps to 0 */
    { PC_RAM, 0x8000000000000000ULL },
    { PC_RAM, (1ULL << 32) + TARGET_PAGE_SIZE },            /* page 1 if cut to 32 bits */
    { PC_RAM, (1ULL << 63) + TARGET_PAGE_SIZE },
};

static void test_offset_past_block(void)
{
    FakeRAM *ram = fake_ram_new(pc_blocks);

    for (size_t i = 0; i < G_N_ELEMENTS(bad_offsets); i++) {
        const char *idstr = fake_block(ram, bad_offsets[i].block)->idstr;

        for (int kind = 0; kind < REC_KINDS; kind++) {
            g_autoptr(GByteArray) s = listed_stream(ram);
            g_autofree char *what = g_strdup_printf("%s offset 0x%" PRIx64 " kind %d", idstr,
                                                    bad_offsets[i].offset, kind);

            if (kind == REC_CONTINUE) {
                put_zero(s, 0, idstr);
            }
            put_bad_record(s, kind, bad_offsets[i].offset, idstr);
            put_eos(s);
            assert_refused_n(ram, s, 0, MSG_OFFSET, what);
        }
    }
    fake_ram_free(ram);
}

/*
 * A valid stream cut at every byte: each prefix must fail with the
 * end-of-stream error (after exactly the chunks it holds whole), never write
 * outside a block, and only the whole stream loads.
 */
static void test_truncated(void)
{
    FakeRAM *ram = fake_ram_new(pc_blocks);
    const char *vram = fake_block(ram, PC_VRAM)->idstr;
    g_autoptr(GByteArray) s = listed_stream(ram);
    guint chunk1 = s->len;

    put_page(s, 2, "pc.ram", 0x11);
    put_zero(s, 3, NULL);
    put_page(s, 1, vram, 0x22);
    put_page(s, 3, NULL, 0x33);
    put_zero(s, 0, fake_block(ram, PC_ROM)->idstr);
    put_eos(s);

    for (guint len = 0; len <= s->len; len++) {
        RAMPageReader r = { 0 };
        Error *err = NULL;
        int loaded;
        int ret;

        if (len == s->len) {
            /* Fresh RAM, so that the content checks below see this load alone. */
            fake_ram_free(ram);
            ram = fake_ram_new(pc_blocks);
        }
        ram_reader_reset(&r);
        ret = load_chunks(&r, s->data, len, 2, &loaded, NULL, &err);
        if (len == s->len) {
            g_assert_null(err);
            g_assert_cmpint(ret, ==, 0);
            g_assert_cmpint(loaded, ==, 2);
        } else {
            if (ret >= 0 || loaded != (len >= chunk1)) {
                g_test_message("prefix of %u bytes: ret %d after %d chunks", len, ret, loaded);
            }
            g_assert_cmpint(ret, <, 0);
            g_assert_cmpint(loaded, ==, len >= chunk1);
            assert_error(err, MSG_EOF);
        }
        fake_ram_check_guards(ram);
    }

    g_assert_true(page_is(fake_block(ram, PC_RAM), 2, 0x11));
    g_assert_true(page_is(fake_block(ram, PC_RAM), 3, 0));
    g_assert_true(page_is(fake_block(ram, PC_VRAM), 1, 0x22));
    g_assert_true(page_is(fake_block(ram, PC_VRAM), 3, 0x33));
    g_assert_cmpuint(bitmap_count_one(fake_block(ram, PC_RAM)->vmm_written_bmap,
                                      PC_RAM_PAGES), ==, 1);
    g_assert_cmpuint(bitmap_count_one(fake_block(ram, PC_VRAM)->vmm_written_bmap, 4), ==, 2);
    g_assert_cmpuint(bitmap_count_one(fake_block(ram, PC_ROM)->vmm_written_bmap,
                                      PC_ROM_PAGES), ==, 0);
    fake_ram_free(ram);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(bad_flags); i++) {
        g_autofree char *path = g_strdup_printf("/ram-codec/hostile/flags/%s",
                                                bad_flags[i].name);

        g_test_add_data_func(path, &bad_flags[i], test_bad_flags);
    }
    g_test_add_func("/ram-codec/hostile/flags/exhaustive", test_flags_exhaustive);
    g_test_add_func("/ram-codec/hostile/multifd-flush-without-multifd",
                    test_multifd_flush_without_multifd);
    g_test_add_func("/ram-codec/hostile/mem-size-with-flags", test_mem_size_with_flags);
    g_test_add_func("/ram-codec/hostile/mem-size-twice", test_mem_size_twice);
    g_test_add_func("/ram-codec/hostile/page-before-block-list", test_page_before_block_list);
    g_test_add_func("/ram-codec/hostile/unknown-block-in-list", test_unknown_block_in_list);
    g_test_add_func("/ram-codec/hostile/unknown-block-in-page", test_unknown_block_in_page);
    g_test_add_func("/ram-codec/hostile/name-255-bytes", test_name_255_bytes);
    g_test_add_func("/ram-codec/hostile/length-mismatch", test_length_mismatch);
    g_test_add_func("/ram-codec/hostile/ignore-shared", test_ignore_shared);
    g_test_add_func("/ram-codec/hostile/list-exceeds-total", test_list_exceeds_total);
    g_test_add_func("/ram-codec/hostile/list-short-of-total", test_list_short_of_total);
    g_test_add_func("/ram-codec/hostile/continue-without-block", test_continue_without_block);
    g_test_add_func("/ram-codec/hostile/offset-past-block", test_offset_past_block);
    g_test_add_func("/ram-codec/hostile/truncated", test_truncated);
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Shared by the migration/transport/ram-codec.c unit tests: fake RAMBlocks fenced by
 * guard pages, with the ram_blocks() fakes the unit links against (include
 * once per test program), streams built by hand in QEMU's layout sharing no
 * code with the unit, and a loader that runs it chunk by chunk as ram.c does.
 */
#ifndef TESTS_UNIT_RAM_CODEC_TEST_UTIL_H
#define TESTS_UNIT_RAM_CODEC_TEST_UTIL_H

#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "system/memory.h"
#include "migration/qemu-file.h"
#include "migration/transport/ram-codec.h"

#define GUARD_BYTE 0xa5

/* ---- Fake RAM: blocks whose host memory sits between two guard pages ---- */

typedef struct BlockDef {
    const char *idstr;
    uint64_t pages;
} BlockDef;

/* A small PC: RAM, a ROM and a device's VRAM, names spelled as QEMU's. */
static const BlockDef pc_blocks[] = {
    { "pc.ram", 16 },
    { "/rom@etc/acpi/tables", 2 },
    { "0000:00:02.0/vga.vram", 4 },
    { NULL, 0 },
};
enum { PC_RAM, PC_ROM, PC_VRAM };
#define PC_RAM_PAGES 16
#define PC_ROM_PAGES 2

typedef struct FakeRAM {
    GPtrArray *blocks;          /* RAMBlock *, in stream order */
} FakeRAM;

/* What ram_blocks() and ram_block_find() answer with: source or destination. */
static FakeRAM *cur_ram;
static uint8_t guard_page[TARGET_PAGE_SIZE];

GPtrArray *ram_blocks(void)
{
    return cur_ram->blocks;
}

RAMBlock *ram_block_find(const char *idstr)
{
    for (guint i = 0; i < cur_ram->blocks->len; i++) {
        RAMBlock *rb = g_ptr_array_index(cur_ram->blocks, i);

        if (!strcmp(rb->idstr, idstr)) {
            return rb;
        }
    }
    return NULL;
}

uint64_t ram_blocks_total_bytes(void)
{
    uint64_t total = 0;

    for (guint i = 0; i < cur_ram->blocks->len; i++) {
        total += ((RAMBlock *)g_ptr_array_index(cur_ram->blocks, i))->used_length;
    }
    return total;
}

static inline uint64_t block_pages(const RAMBlock *rb)
{
    return rb->used_length / TARGET_PAGE_SIZE;
}

static inline RAMBlock *fake_block(FakeRAM *ram, guint i)
{
    return g_ptr_array_index(ram->blocks, i);
}

static inline uint8_t *page_ptr(RAMBlock *rb, uint64_t page)
{
    return rb->host + page * TARGET_PAGE_SIZE;
}

/* Zeroed RAM laid out as @defs say, made the current RAM. */
static inline FakeRAM *fake_ram_new(const BlockDef *defs)
{
    FakeRAM *ram = g_new0(FakeRAM, 1);

    memset(guard_page, GUARD_BYTE, sizeof(guard_page));
    ram->blocks = g_ptr_array_new();
    for (; defs->idstr; defs++) {
        RAMBlock *rb = g_new0(RAMBlock, 1);
        uint64_t len = defs->pages * TARGET_PAGE_SIZE;
        uint8_t *alloc = g_malloc(len + 2 * TARGET_PAGE_SIZE);

        g_assert_cmpuint(g_strlcpy(rb->idstr, defs->idstr, sizeof(rb->idstr)), <,
                         sizeof(rb->idstr));
        /* A write just before or after the block lands in a guard page and shows. */
        memset(alloc, GUARD_BYTE, len + 2 * TARGET_PAGE_SIZE);
        rb->host = alloc + TARGET_PAGE_SIZE;
        memset(rb->host, 0, len);
        rb->used_length = len;
        rb->fd = -1;
        rb->vmm_written_bmap = bitmap_new(defs->pages);
        g_ptr_array_add(ram->blocks, rb);
    }
    cur_ram = ram;
    return ram;
}

static inline void fake_ram_check_guards(FakeRAM *ram)
{
    for (guint i = 0; i < ram->blocks->len; i++) {
        RAMBlock *rb = fake_block(ram, i);

        if (memcmp(rb->host - TARGET_PAGE_SIZE, guard_page, TARGET_PAGE_SIZE) ||
            memcmp(rb->host + rb->used_length, guard_page, TARGET_PAGE_SIZE)) {
            g_test_message("a write outside block %s", rb->idstr);
            g_assert_not_reached();
        }
    }
}

static inline void fake_ram_free(FakeRAM *ram)
{
    fake_ram_check_guards(ram);
    for (guint i = 0; i < ram->blocks->len; i++) {
        RAMBlock *rb = fake_block(ram, i);

        g_free(rb->host - TARGET_PAGE_SIZE);
        g_free(rb->vmm_written_bmap);
        g_free(rb);
    }
    g_ptr_array_free(ram->blocks, TRUE);
    if (cur_ram == ram) {
        cur_ram = NULL;
    }
    g_free(ram);
}

static inline bool page_is(const RAMBlock *rb, uint64_t page, uint8_t byte)
{
    const uint8_t *p = rb->host + page * TARGET_PAGE_SIZE;

    for (size_t i = 0; i < TARGET_PAGE_SIZE; i++) {
        if (p[i] != byte) {
            return false;
        }
    }
    return true;
}

/* ---- Streams built by hand in QEMU's layout, sharing no code with the unit ---- */

static inline void put_be64(GByteArray *s, uint64_t v)
{
    uint8_t b[8];

    for (int i = 0; i < 8; i++) {
        b[i] = v >> (56 - 8 * i);
    }
    g_byte_array_append(s, b, sizeof(b));
}

static inline void put_str(GByteArray *s, const char *str)
{
    size_t len = strlen(str);
    uint8_t n = len;

    g_assert_cmpuint(len, <=, 255);
    g_byte_array_append(s, &n, 1);
    g_byte_array_append(s, (const guint8 *)str, len);
}

static inline void put_fill(GByteArray *s, uint8_t byte, size_t n)
{
    guint old = s->len;

    g_byte_array_set_size(s, old + n);
    memset(s->data + old, byte, n);
}

/* be64 offset | flags, then the counted block id unless @idstr is NULL. */
static inline void put_header(GByteArray *s, uint64_t offset, uint64_t flags,
                              const char *idstr)
{
    put_be64(s, offset | flags);
    if (idstr) {
        put_str(s, idstr);
    }
}

/* A PAGE record of @byte; @idstr NULL means CONTINUE. */
static inline void put_page(GByteArray *s, uint64_t page, const char *idstr, uint8_t byte)
{
    put_header(s, page * TARGET_PAGE_SIZE,
               RAM_SAVE_FLAG_PAGE | (idstr ? 0 : RAM_SAVE_FLAG_CONTINUE), idstr);
    put_fill(s, byte, TARGET_PAGE_SIZE);
}

/* A ZERO record with fill byte @fill; @idstr NULL means CONTINUE. */
static inline void put_zero_fill(GByteArray *s, uint64_t page, const char *idstr,
                                 uint8_t fill)
{
    put_header(s, page * TARGET_PAGE_SIZE,
               RAM_SAVE_FLAG_ZERO | (idstr ? 0 : RAM_SAVE_FLAG_CONTINUE), idstr);
    put_fill(s, fill, 1);
}

static inline void put_zero(GByteArray *s, uint64_t page, const char *idstr)
{
    put_zero_fill(s, page, idstr, 0);
}

static inline void put_eos(GByteArray *s)
{
    put_be64(s, RAM_SAVE_FLAG_EOS);
}

/*
 * MEM_SIZE @total, then the blocks of @ram, the name of block @swap_idx and
 * the length of block @len_idx (each if >= 0) replaced, then EOS.
 */
static inline void put_block_list_as(GByteArray *s, FakeRAM *ram, uint64_t total,
                                     int swap_idx, const char *swap_name, int len_idx,
                                     uint64_t len)
{
    put_be64(s, total | RAM_SAVE_FLAG_MEM_SIZE);
    for (guint i = 0; i < ram->blocks->len; i++) {
        RAMBlock *rb = fake_block(ram, i);

        put_str(s, (int)i == swap_idx ? swap_name : rb->idstr);
        put_be64(s, (int)i == len_idx ? len : rb->used_length);
    }
    put_eos(s);
}

/* The block list a correct source sends for @ram. */
static inline void put_block_list(GByteArray *s, FakeRAM *ram)
{
    put_block_list_as(s, ram, ram_blocks_total_bytes(), -1, NULL, -1, 0);
}

/* A new stream that starts with put_block_list(). */
static inline GByteArray *listed_stream(FakeRAM *ram)
{
    GByteArray *s = g_byte_array_new();

    put_block_list(s, ram);
    return s;
}

/*
 * Loads @len bytes of @data as ram.c does: one ram_load_records() per chunk
 * with reader @r, stopping at the first failure, after @nchunks chunks or,
 * if @nchunks is 0, when the stream is used up. *@loaded counts the chunks
 * that loaded, *@used (if not NULL) the bytes consumed.
 */
static inline int load_chunks(RAMPageReader *r, const uint8_t *data, size_t len, int nchunks,
                              int *loaded, size_t *used, Error **errp)
{
    QEMUFile *f = qemu_file_new_buffer_input(data, len);
    int ret;

    *loaded = 0;
    for (;;) {
        ret = ram_load_records(r, f, errp);
        if (ret < 0) {
            break;
        }
        ++*loaded;
        if (nchunks ? *loaded == nchunks : qemu_file_transferred(f) >= len) {
            break;
        }
    }
    if (used) {
        *used = qemu_file_transferred(f);
    }
    qemu_fclose(f);
    return ret;
}

#endif

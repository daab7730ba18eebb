/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The integrity record of a mapped-ram file: hashes, encoding, checks (mapped-ram-integrity.h). */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "qemu/pagehash.h"
#include "qemu/xxh64.h"
#include "mapped-ram-integrity.h"

#define MRI_HDR_BYTES (4 + 4 + 8 + 8 + 8 + 4)
#define MRI_BLOCK_BYTES (1 + 8 + 8 + 8)      /* without its name and hashes */
#define MRI_READ_CHUNK (1024 * 1024)            /* the stream hash reads this much at a time */
#define MRI_SEED_REGION 0x4d52414d52454731ULL   /* distinct seeds: a page is never a region */

uint64_t mri_page_hash(const uint8_t *page)
{
    return pagehash(page, TARGET_PAGE_SIZE);
}

uint64_t mri_region_hash(uint32_t block, uint64_t region, uint32_t present,
                         const uint64_t hash[MRI_REGION_PAGES])
{
    uint8_t buf[4 + 8 + 4 + 8 * MRI_REGION_PAGES];

    stl_le_p(buf, block);
    stq_le_p(buf + 4, region);
    stl_le_p(buf + 12, present);
    for (int i = 0; i < MRI_REGION_PAGES; i++) {
        stq_le_p(buf + 16 + 8 * i, present & (1u << i) ? hash[i] : 0);
    }
    return xxh64(buf, sizeof(buf), MRI_SEED_REGION);
}

uint64_t mri_nregions(uint64_t used_length)
{
    uint64_t region = (uint64_t)MRI_REGION_PAGES * TARGET_PAGE_SIZE;

    return used_length / region + !!(used_length % region);
}

MappedRamIntegrity *mri_new(uint32_t nblocks)
{
    MappedRamIntegrity *r = g_new0(MappedRamIntegrity, 1);

    r->nblocks = nblocks;
    r->blocks = g_new0(MriBlock, nblocks);
    return r;
}

void mri_free(MappedRamIntegrity *r)
{
    if (!r) {
        return;
    }
    for (uint32_t i = 0; i < r->nblocks; i++) {
        g_free(r->blocks[i].name);
        g_free(r->blocks[i].region_hash);
    }
    g_free(r->blocks);
    g_free(r);
}

void mri_set_block(MappedRamIntegrity *r, uint32_t i, const char *name, uint64_t used_length,
                   uint64_t bitmap_offset, uint64_t pages_offset)
{
    MriBlock *b = &r->blocks[i];

    g_free(b->name);
    g_free(b->region_hash);
    b->name = g_strdup(name);
    b->used_length = used_length;
    b->bitmap_offset = bitmap_offset;
    b->pages_offset = pages_offset;
    b->nregions = mri_nregions(used_length);
    b->region_hash = g_new0(uint64_t, b->nregions);
}

static void put_le(GByteArray *a, uint64_t v, int bytes)
{
    uint8_t b[8];

    stq_le_p(b, v);
    g_byte_array_append(a, b, bytes);
}

char *mri_encode(const MappedRamIntegrity *r, size_t *len)
{
    g_autoptr(GByteArray) a = g_byte_array_new();
    GString *s;

    put_le(a, MRI_VERSION, 4);
    put_le(a, MRI_REGION_PAGES, 4);
    put_le(a, r->stream_start, 8);
    put_le(a, r->stream_end, 8);
    put_le(a, r->stream_hash, 8);
    put_le(a, r->nblocks, 4);
    for (uint32_t i = 0; i < r->nblocks; i++) {
        const MriBlock *b = &r->blocks[i];
        size_t n = strlen(b->name);

        g_assert(n > 0 && n <= 255);
        put_le(a, n, 1);
        g_byte_array_append(a, (const uint8_t *)b->name, n);
        put_le(a, b->used_length, 8);
        put_le(a, b->bitmap_offset, 8);
        put_le(a, b->pages_offset, 8);
        for (uint64_t j = 0; j < b->nregions; j++) {
            put_le(a, b->region_hash[j], 8);
        }
    }
    put_le(a, xxh64(a->data, a->len, 0), 8);
    s = g_string_sized_new(a->len * 2 + MRI_FOOTER_SIZE);
    for (guint i = 0; i < a->len; i++) {
        g_string_append_printf(s, "%02x", a->data[i]);
    }
    g_string_append_printf(s, "%s%016" PRIx64, MRI_FOOTER_MAGIC, (uint64_t)a->len * 2);
    *len = s->len;
    return g_string_free(s, false);
}

static bool hex_u64(const uint8_t *digits, uint64_t *v)
{
    char buf[17];
    guint64 x;

    memcpy(buf, digits, 16);
    buf[16] = '\0';
    for (int i = 0; i < 16; i++) {
        if (!g_ascii_isxdigit(buf[i]) || g_ascii_isupper(buf[i])) {
            return false;
        }
    }
    if (!g_ascii_string_to_unsigned(buf, 16, 0, UINT64_MAX, &x, NULL)) {
        return false;
    }
    *v = x;
    return true;
}

bool mri_parse_footer(const uint8_t buf[MRI_FOOTER_SIZE], uint64_t stream_start, uint64_t end,
                      uint64_t *hex_len, Error **errp)
{
    uint64_t n;

    *hex_len = 0;
    if (memcmp(buf, MRI_FOOTER_MAGIC, 8)) {
        return false;
    }
    if (!hex_u64(buf + 8, &n) || !n || n % 2 || end < stream_start + MRI_FOOTER_SIZE ||
        n > end - MRI_FOOTER_SIZE - stream_start) {
        error_setg(errp, "the mapped-ram file's integrity record is damaged: its footer "
                   "('%.24s') names no record that fits in the file", (const char *)buf);
        return true;
    }
    *hex_len = n;
    return true;
}

uint64_t mri_max_hex_len(const uint64_t *used_length, uint32_t nblocks)
{
    uint64_t n = MRI_HDR_BYTES + 8;

    for (uint32_t i = 0; i < nblocks; i++) {
        n += MRI_BLOCK_BYTES + 255 + 8 * mri_nregions(used_length[i]);
    }
    return 2 * n;
}

bool mri_check_hex_len(uint64_t hex_len, const uint64_t *used_length, uint32_t nblocks,
                       Error **errp)
{
    uint64_t max = mri_max_hex_len(used_length, nblocks);

    if (hex_len > max) {
        error_setg(errp, "the mapped-ram file's integrity record is damaged: its footer says "
                   "%" PRIu64 " bytes, more than a record of this machine's %u RAM blocks can "
                   "have (%" PRIu64 ")", hex_len, nblocks, max);
        return false;
    }
    return true;
}

/* A cursor over the decoded record: every read is bounds-checked. */
typedef struct MriIn {
    const uint8_t *p;
    size_t left;
} MriIn;

static bool get_le(MriIn *in, int bytes, uint64_t *v)
{
    uint8_t b[8] = { 0 };

    if (in->left < (size_t)bytes) {
        return false;
    }
    memcpy(b, in->p, bytes);
    in->p += bytes;
    in->left -= bytes;
    *v = ldq_le_p(b);
    return true;
}

static int unhex(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The blocks' regions lie after the stream's start, in order, apart, before its end. */
static bool mri_check_block(const MappedRamIntegrity *r, const MriBlock *b, uint64_t prev_end,
                            Error **errp)
{
    if (!b->used_length || b->used_length % TARGET_PAGE_SIZE ||
        b->bitmap_offset < prev_end || b->pages_offset < b->bitmap_offset ||
        b->pages_offset % TARGET_PAGE_SIZE || b->pages_offset > r->stream_end ||
        b->used_length > r->stream_end - b->pages_offset) {
        error_setg(errp, "the mapped-ram file's integrity record is damaged: block %s "
                   "(%" PRIu64 " bytes, bitmap at 0x%" PRIx64 ", pages at 0x%" PRIx64 ") does "
                   "not fit in the stream", b->name, b->used_length, b->bitmap_offset,
                   b->pages_offset);
        return false;
    }
    return true;
}

static bool mri_decode_blocks(MappedRamIntegrity *r, MriIn *in, Error **errp)
{
    uint64_t prev_end = r->stream_start;

    for (uint32_t i = 0; i < r->nblocks; i++) {
        MriBlock *b = &r->blocks[i];
        uint64_t n;

        if (!get_le(in, 1, &n) || !n || in->left < n) {
            goto short_record;
        }
        b->name = g_strndup((const char *)in->p, n);
        if (strlen(b->name) != n) {
            error_setg(errp, "the mapped-ram file's integrity record is damaged: block %u's "
                       "name has a NUL byte", i);
            return false;
        }
        in->p += n;
        in->left -= n;
        if (!get_le(in, 8, &b->used_length) || !get_le(in, 8, &b->bitmap_offset) ||
            !get_le(in, 8, &b->pages_offset)) {
            goto short_record;
        }
        if (!mri_check_block(r, b, prev_end, errp)) {
            return false;
        }
        prev_end = b->pages_offset + b->used_length;
        b->nregions = mri_nregions(b->used_length);
        /* The hashes must be there before they are allocated: no length is taken on trust. */
        if (b->nregions > in->left / 8) {
            goto short_record;
        }
        b->region_hash = g_new(uint64_t, b->nregions);
        for (uint64_t j = 0; j < b->nregions; j++) {
            get_le(in, 8, &b->region_hash[j]);
        }
    }
    if (in->left) {
        error_setg(errp, "the mapped-ram file's integrity record is damaged: %zu bytes "
                   "follow its last block", in->left);
        return false;
    }
    return true;

short_record:
    error_setg(errp, "the mapped-ram file's integrity record is damaged: it ends inside "
               "its block list");
    return false;
}

MappedRamIntegrity *mri_decode(const char *hex, size_t len, uint64_t pos, Error **errp)
{
    g_autofree uint8_t *bin = NULL;
    g_autoptr(MappedRamIntegrity) r = NULL;
    size_t n = len / 2;
    uint64_t version, region_pages, nblocks;
    MriIn in;

    if (len % 2 || n < MRI_HDR_BYTES + 8) {
        error_setg(errp, "the mapped-ram file's integrity record is damaged: %zu hex digits "
                   "are too few", len);
        return NULL;
    }
    /* @len comes from the file: never an abort for it (mri_check_hex_len bounds it first). */
    bin = g_try_malloc(n);
    if (!bin) {
        error_setg(errp, "the mapped-ram file's integrity record (%zu bytes) does not fit in "
                   "memory", n);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        int hi = unhex(hex[2 * i]), lo = unhex(hex[2 * i + 1]);

        if (hi < 0 || lo < 0) {
            error_setg(errp, "the mapped-ram file's integrity record is damaged: "
                       "not a hex digit at file offset 0x%" PRIx64, pos + 2 * i);
            return NULL;
        }
        bin[i] = hi << 4 | lo;
    }
    if (xxh64(bin, n - 8, 0) != ldq_le_p(bin + n - 8)) {
        error_setg(errp, "the mapped-ram file's integrity record is damaged: its checksum "
                   "does not match");
        return NULL;
    }
    in = (MriIn) { .p = bin, .left = n - 8 };
    get_le(&in, 4, &version);
    get_le(&in, 4, &region_pages);
    if (version != MRI_VERSION || region_pages != MRI_REGION_PAGES) {
        error_setg(errp, "the mapped-ram file's integrity record has version %" PRIu64
                   " with %" PRIu64 "-page regions; this QEMU reads version %d with %d",
                   version, region_pages, MRI_VERSION, MRI_REGION_PAGES);
        return NULL;
    }
    r = mri_new(0);
    get_le(&in, 8, &r->stream_start);
    get_le(&in, 8, &r->stream_end);
    get_le(&in, 8, &r->stream_hash);
    get_le(&in, 4, &nblocks);
    if (r->stream_end != pos || r->stream_start >= r->stream_end) {
        error_setg(errp, "the mapped-ram file's integrity record is damaged: it describes a "
                   "stream from 0x%" PRIx64 " to 0x%" PRIx64 ", but lies at 0x%" PRIx64,
                   r->stream_start, r->stream_end, pos);
        return NULL;
    }
    if (nblocks > MRI_MAX_BLOCKS) {
        error_setg(errp, "the mapped-ram file's integrity record is damaged: %" PRIu64
                   " blocks (at most %d)", nblocks, MRI_MAX_BLOCKS);
        return NULL;
    }
    g_free(r->blocks);
    r->nblocks = nblocks;
    r->blocks = g_new0(MriBlock, nblocks);
    if (!mri_decode_blocks(r, &in, errp)) {
        return NULL;
    }
    return g_steal_pointer(&r);
}

typedef struct MriStreamHash {
    int fd;
    Xxh64State st;
    uint8_t *buf;
    int err;                    /* the first read's errno */
} MriStreamHash;

static void mri_hash_range(uint64_t start, uint64_t end, void *opaque)
{
    MriStreamHash *h = opaque;

    while (start < end && !h->err) {
        size_t n = MIN(end - start, MRI_READ_CHUNK);

        if (!qemu_pread_full(h->fd, h->buf, n, start)) {
            h->err = errno ? errno : EIO;
            return;
        }
        xxh64_update(&h->st, h->buf, n);
        start += n;
    }
}

int mri_stream_hash(const MappedRamIntegrity *r, int fd, uint64_t *hash)
{
    MriStreamHash h = { .fd = fd, .buf = g_malloc(MRI_READ_CHUNK) };

    xxh64_init(&h.st, 0);
    mri_stream_ranges(r, mri_hash_range, &h);
    g_free(h.buf);
    if (h.err) {
        return -h.err;
    }
    *hash = xxh64_digest(&h.st);
    return 0;
}

void mri_stream_ranges(const MappedRamIntegrity *r,
                       void (*fn)(uint64_t start, uint64_t end, void *opaque), void *opaque)
{
    uint64_t at = r->stream_start;

    for (uint32_t i = 0; i < r->nblocks; i++) {
        const MriBlock *b = &r->blocks[i];

        if (b->bitmap_offset > at) {
            fn(at, b->bitmap_offset, opaque);
        }
        at = b->pages_offset + b->used_length;
    }
    if (r->stream_end > at) {
        fn(at, r->stream_end, opaque);
    }
}

bool mri_check_region(uint32_t block, uint64_t region, const unsigned long *present,
                      uint64_t npages, const uint8_t *data, uint64_t expect)
{
    uint64_t first = region * MRI_REGION_PAGES, hash[MRI_REGION_PAGES] = { 0 };
    uint32_t mask = 0;

    for (uint64_t k = 0; k < MRI_REGION_PAGES && first + k < npages; k++) {
        if (test_bit(first + k, present)) {
            mask |= 1u << k;
            hash[k] = mri_page_hash(data + k * TARGET_PAGE_SIZE);
        }
    }
    return mri_region_hash(block, region, mask, hash) == expect;
}

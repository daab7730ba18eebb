/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The "ram" section's page records (QEMU's format, see ram-codec.h): the
 * writer every page source sends through, and the destination's parser,
 * which treats the stream as hostile.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "qemu/bufferiszero.h"
#include "system/memory.h"
#include "migration/qemu-file.h"
#include "ram-codec.h"
#include "xbzrle.h"

/* ---- writer ---- */

void ram_record_writer_reset(RAMRecordWriter *w)
{
    memset(w, 0, sizeof(*w));
}

static void ram_put_page_header(RAMRecordWriter *w, QEMUFile *f, RAMBlock *rb, uint64_t offset,
                                uint64_t flags)
{
    if (rb == w->last_block) {
        flags |= RAM_SAVE_FLAG_CONTINUE;
    }
    qemu_put_be64(f, offset | flags);
    if (!(flags & RAM_SAVE_FLAG_CONTINUE)) {
        qemu_put_counted_string(f, rb->idstr);
        w->last_block = rb;
    }
}

static void count(uint64_t *c)
{
    __atomic_store_n(c, *c + 1, __ATOMIC_RELAXED);
}

void ram_put_zero_page(RAMRecordWriter *w, QEMUFile *f, RAMBlock *rb, uint64_t page)
{
    ram_put_page_header(w, f, rb, page << TARGET_PAGE_BITS, RAM_SAVE_FLAG_ZERO);
    qemu_put_byte(f, 0);
    count(&w->zero_pages);
}

void ram_put_page_copy(RAMRecordWriter *w, QEMUFile *f, RAMBlock *rb, uint64_t page,
                       const uint8_t *data)
{
    ram_put_page_header(w, f, rb, page << TARGET_PAGE_BITS, RAM_SAVE_FLAG_PAGE);
    qemu_put_buffer(f, data, TARGET_PAGE_SIZE);
    count(&w->normal_pages);
}

void ram_put_xbzrle(RAMRecordWriter *w, QEMUFile *f, RAMBlock *rb, uint64_t page,
                    const uint8_t *enc, size_t len)
{
    assert(len > 0 && len <= TARGET_PAGE_SIZE);
    ram_put_page_header(w, f, rb, page << TARGET_PAGE_BITS, RAM_SAVE_FLAG_XBZRLE);
    qemu_put_byte(f, RAM_XBZRLE_ENCODING);
    qemu_put_be16(f, len);
    qemu_put_buffer(f, enc, len);
    count(&w->xbzrle_pages);
}

void ram_put_record(RAMRecordWriter *w, QEMUFile *f, RAMBlock *rb, uint64_t page,
                    const uint8_t *data)
{
    if (!data) {
        ram_put_zero_page(w, f, rb, page);
    } else {
        ram_put_page_header(w, f, rb, page << TARGET_PAGE_BITS, RAM_SAVE_FLAG_PAGE);
        qemu_put_buffer_async(f, data, TARGET_PAGE_SIZE);
        count(&w->normal_pages);
    }
}

void ram_put_block_list_with(QEMUFile *f, bool addrs,
                             void (*put_block)(void *opaque, QEMUFile *f, RAMBlock *rb),
                             void *opaque)
{
    GPtrArray *rbs = ram_blocks();

    qemu_put_be64(f, ram_blocks_total_bytes() | RAM_SAVE_FLAG_MEM_SIZE);
    for (guint i = 0; i < rbs->len; i++) {
        RAMBlock *rb = g_ptr_array_index(rbs, i);

        qemu_put_counted_string(f, rb->idstr);
        qemu_put_be64(f, rb->used_length);
        /* Every block, ignored or not: the other side checks its shared ones' places. */
        if (addrs) {
            qemu_put_be64(f, rb->mr_addr);
        }
        if (put_block) {
            put_block(opaque, f, rb);
        }
    }
    ram_put_eos(f);
}

void ram_put_eos(QEMUFile *f)
{
    qemu_put_be64(f, RAM_SAVE_FLAG_EOS);
}

void ram_put_multifd_flush(QEMUFile *f)
{
    qemu_put_be64(f, RAM_SAVE_FLAG_MULTIFD_FLUSH);
}

/* ---- reader ---- */

void ram_reader_reset(RAMPageReader *r)
{
    g_free(r->stage);
    if (r->paged) {
        g_hash_table_destroy(r->paged);
    }
    memset(r, 0, sizeof(*r));
}

/* The source left @rb out: its memory is this side's already (options.h's migrate_ram_is_ignored). */
static bool ram_reader_block_ignored(const RAMPageReader *r, const RAMBlock *rb)
{
    return r->cpr ? ram_block_fd_shared(rb) : ram_block_shared_by_name(rb);
}

/*
 * x-ignore-shared: the block's place on the source, which a block left
 * out must share (QEMU's check). A block the source may have left out
 * while this side cannot see the same memory is refused at the end
 * (ram_load_check_ignored).
 */
static bool ram_load_block_addr(RAMPageReader *r, QEMUFile *f, RAMBlock *rb, Error **errp)
{
    uint64_t addr = qemu_get_be64(f);

    if (qemu_file_get_error(f)) {
        error_setg(errp, "ram: reading the block list failed: %s", qemu_file_error_msg(f));
        return false;
    }
    if (ram_reader_block_ignored(r, rb) && addr != rb->mr_addr) {
        error_setg(errp, "Mismatched GPAs for block %s %" PRId64 "!= %" PRId64, rb->idstr,
                   (int64_t)addr, (int64_t)rb->mr_addr);
        return false;
    }
    return true;
}

static bool ram_load_block_list(RAMPageReader *r, QEMUFile *f, uint64_t total, Error **errp)
{
    uint64_t seen = 0;

    while (seen < total) {
        char id[256];
        RAMBlock *rb;
        uint64_t len;

        qemu_get_counted_string(f, id);
        len = qemu_get_be64(f);
        if (qemu_file_get_error(f)) {
            error_setg(errp, "ram: reading the block list failed: %s", qemu_file_error_msg(f));
            return false;
        }
        rb = ram_block_find(id);
        if (!rb) {
            g_autofree char *safe = g_strescape(id, NULL);

            error_setg(errp, "Unknown ramblock \"%s\", cannot accept migration", safe);
            return false;
        }
        if (len != rb->used_length) {
            error_setg(errp, "Length mismatch: %s: 0x%" PRIx64 " in != 0x%" PRIx64, id, len,
                       rb->used_length);
            return false;
        }
        if (len > total - seen) {
            error_setg(errp, "ram: block list exceeds the announced total 0x%" PRIx64, total);
            return false;
        }
        if (r->ignore_shared && !ram_load_block_addr(r, f, rb, errp)) {
            return false;
        }
        if (r->map_block && !r->map_block(f, rb, r->map_opaque, errp)) {
            return false;
        }
        seen += len;
    }
    r->have_sizes = true;
    return true;
}

/* Block of a page record, or NULL with @errp set. */
static RAMBlock *ram_load_block(RAMPageReader *r, QEMUFile *f, uint64_t flags, Error **errp)
{
    char id[256];
    RAMBlock *rb;

    if (flags & RAM_SAVE_FLAG_CONTINUE) {
        if (!r->last_block) {
            error_setg(errp, "ram: CONTINUE flag without a previous block");
        }
        return r->last_block;
    }
    if (!qemu_get_counted_string(f, id)) {
        error_setg(errp, "ram: reading a block id failed: %s", qemu_file_error_msg(f));
        return NULL;
    }
    rb = ram_block_find(id);
    if (!rb) {
        g_autofree char *safe = g_strescape(id, NULL);

        error_setg(errp, "Can't find block %s", safe);
        return NULL;
    }
    r->last_block = rb;
    /* Only where the block changes, so a lookup per run of pages at most. */
    if (r->ignore_shared) {
        r->paged = r->paged ?: g_hash_table_new(NULL, NULL);
        g_hash_table_add(r->paged, rb);
    }
    return rb;
}

bool ram_load_check_ignored(RAMPageReader *r, Error **errp)
{
    GPtrArray *rbs = ram_blocks();

    if (!r->ignore_shared || r->map_block || r->multifd_flush || r->place) {
        return true;
    }
    for (guint i = 0; i < rbs->len; i++) {
        RAMBlock *rb = g_ptr_array_index(rbs, i);

        if (!ram_reader_block_ignored(r, rb) &&
            !(r->paged && g_hash_table_contains(r->paged, rb))) {
            if (r->cpr) {
                error_setg(errp, "cpr: no page of RAM block '%s' arrived, and the old process "
                           "did not hand over its memory", rb->idstr);
                return false;
            }
            error_setg(errp, "x-ignore-shared: no page of RAM block '%s' arrived: the source "
                       "left it out as shared memory, but here it is not a file mapped "
                       "with share=on (memory-backend-file,share=on on the same mem-path)",
                       rb->idstr);
            return false;
        }
    }
    return true;
}

/* The body of an XBZRLE record for @host (the page as this side holds it). */
static bool ram_load_xbzrle(QEMUFile *f, uint8_t *host, uint64_t addr, Error **errp)
{
    uint8_t enc[TARGET_PAGE_SIZE];
    uint8_t encoding = qemu_get_byte(f);
    uint16_t len = qemu_get_be16(f);

    if (qemu_file_get_error(f)) {
        error_setg(errp, "ram: reading an XBZRLE header failed: %s", qemu_file_error_msg(f));
        return false;
    }
    if (encoding != RAM_XBZRLE_ENCODING) {
        error_setg(errp, "Failed to load XBZRLE page - wrong compression! (0x%02x at 0x%" PRIx64
                   ")", encoding, addr);
        return false;
    }
    if (len == 0 || len > TARGET_PAGE_SIZE) {
        error_setg(errp, "Failed to load XBZRLE page - len overflow! (%u bytes at 0x%" PRIx64 ")",
                   len, addr);
        return false;
    }
    qemu_get_buffer(f, enc, len);
    if (qemu_file_get_error(f)) {
        error_setg(errp, "ram: reading an XBZRLE delta failed: %s", qemu_file_error_msg(f));
        return false;
    }
    if (xbzrle_decode(enc, len, host, TARGET_PAGE_SIZE) < 0) {
        error_setg(errp, "Failed to load XBZRLE page - decode error! (at 0x%" PRIx64 ")", addr);
        return false;
    }
    return true;
}

/* Postcopy: places the staged run, if any. */
static bool ram_load_flush_stage(RAMPageReader *r, Error **errp)
{
    unsigned n = r->stage_n;

    if (!n) {
        return true;
    }
    r->stage_n = 0;
    return r->place(r->place_opaque, r->stage_rb, r->stage_first, n,
                    r->stage_zero ? NULL : r->stage, errp);
}

/*
 * Postcopy: the page arrives whole in a buffer and is placed in one step;
 * guest memory is never read (a missing page would block this thread on
 * its own fault). Contiguous pages of a block are staged and placed by one
 * call; the run is placed as soon as the next record might not be there
 * yet, so a page a vCPU waits for never sits here while the reader waits.
 * XBZRLE needs the old page, so it has no place here.
 */
static bool ram_load_page_postcopy(RAMPageReader *r, QEMUFile *f, RAMBlock *rb, uint64_t page,
                                   uint64_t flags, Error **errp)
{
    bool data = flags & RAM_SAVE_FLAG_PAGE;
    uint8_t fill = 0;

    if (flags & RAM_SAVE_FLAG_XBZRLE) {
        error_setg(errp, "ram: an XBZRLE page in postcopy (block %s, offset 0x%" PRIx64 ")",
                   rb->idstr, page << TARGET_PAGE_BITS);
        return false;
    }
    if (!data) {
        fill = qemu_get_byte(f);
        data = fill != 0;
    }
    if (r->stage_n && (rb != r->stage_rb || page != r->stage_first + r->stage_n ||
                       !data != r->stage_zero || r->stage_n == RAM_STAGE_PAGES) &&
        !ram_load_flush_stage(r, errp)) {
        return false;
    }
    if (!r->stage_n) {
        r->stage_rb = rb;
        r->stage_first = page;
        r->stage_zero = !data;
    }
    if (!r->stage) {
        r->stage = g_malloc(RAM_STAGE_PAGES * TARGET_PAGE_SIZE);
    }
    if (flags & RAM_SAVE_FLAG_PAGE) {
        qemu_get_buffer(f, r->stage + r->stage_n * TARGET_PAGE_SIZE, TARGET_PAGE_SIZE);
    } else if (fill) {
        memset(r->stage + r->stage_n * TARGET_PAGE_SIZE, fill, TARGET_PAGE_SIZE);
    }
    if (qemu_file_get_error(f)) {
        error_setg(errp, "ram: %s", qemu_file_error_msg(f));
        return false;
    }
    r->stage_n++;
    /* The next record (header, block name, page) may not have arrived: place now. */
    if (qemu_file_input_buffered(f) < 8 + 256 + TARGET_PAGE_SIZE) {
        return ram_load_flush_stage(r, errp);
    }
    return true;
}

/* A ZERO, PAGE or XBZRLE record whose header was read. */
static bool ram_load_page(RAMPageReader *r, QEMUFile *f, uint64_t addr, uint64_t flags,
                          Error **errp)
{
    RAMBlock *rb;
    uint64_t page;
    uint8_t *host;

    if (!r->have_sizes) {
        error_setg(errp, "ram: page record before the block list");
        return false;
    }
    rb = ram_load_block(r, f, flags, errp);
    if (!rb) {
        return false;
    }
    if (addr >= rb->used_length) {
        error_setg(errp, "Illegal RAM offset 0x%" PRIx64 " in block %s (length 0x%" PRIx64 ")",
                   addr, rb->idstr, rb->used_length);
        return false;
    }
    page = addr >> TARGET_PAGE_BITS;
    host = rb->host + addr;
    if (r->place) {
        return ram_load_page_postcopy(r, f, rb, page, flags, errp);
    }
    if (flags & RAM_SAVE_FLAG_PAGE) {
        qemu_get_buffer(f, host, TARGET_PAGE_SIZE);
        set_bit_atomic(page, rb->vmm_written_bmap);
    } else if (flags & RAM_SAVE_FLAG_XBZRLE) {
        if (!ram_load_xbzrle(f, host, addr, errp)) {
            return false;
        }
        set_bit_atomic(page, rb->vmm_written_bmap);
    } else {
        uint8_t fill = qemu_get_byte(f);
        /*
         * QEMU's rule: a zero page that is already zero is not written, so
         * untouched memory stays unallocated. A page nobody wrote is known
         * zero without even reading it.
         */
        if (fill || (test_bit_atomic(page, rb->vmm_written_bmap) &&
                     !buffer_is_zero(host, TARGET_PAGE_SIZE))) {
            memset(host, fill, TARGET_PAGE_SIZE);
            set_bit_atomic(page, rb->vmm_written_bmap);
        } else if (r->map_zero && !test_bit_atomic(page, rb->vmm_written_bmap)) {
            /* The kernel's zero page, mapped: present, still no memory. */
            (void)*(volatile const uint8_t *)host;
            set_bit_atomic(page, rb->vmm_written_bmap);
        }
    }
    return true;
}

static int ram_load_records_staged(RAMPageReader *r, QEMUFile *f, Error **errp)
{
    for (;;) {
        uint64_t header = qemu_get_be64(f);
        uint64_t flags = header & ~TARGET_PAGE_MASK;
        uint64_t addr = header & TARGET_PAGE_MASK;

        if (qemu_file_get_error(f)) {
            error_setg(errp, "ram: %s", qemu_file_error_msg(f));
            return -EIO;
        }
        if (flags & RAM_SAVE_FLAG_MEM_SIZE) {
            if (flags != RAM_SAVE_FLAG_MEM_SIZE || r->have_sizes) {
                error_setg(errp, "ram: unexpected MEM_SIZE record (flags 0x%" PRIx64 ")", flags);
                return -EINVAL;
            }
            if (!ram_load_block_list(r, f, addr, errp)) {
                return -EINVAL;
            }
            continue;
        }
        if (flags == RAM_SAVE_FLAG_EOS) {
            return 0;
        }
        if (flags == RAM_SAVE_FLAG_MULTIFD_FLUSH && !addr) {
            if (!r->multifd_flush) {
                error_setg(errp, "ram: a multifd flush record, but multifd is off here "
                           "(set the multifd capability on both sides)");
                return -EINVAL;
            }
            if (!r->multifd_flush(errp)) {
                return -EIO;
            }
            continue;
        }
        switch (flags & ~RAM_SAVE_FLAG_CONTINUE) {
        case RAM_SAVE_FLAG_ZERO:
        case RAM_SAVE_FLAG_PAGE:
        case RAM_SAVE_FLAG_XBZRLE:
            if (r->map_block) {
                error_setg(errp, "ram: a page record (flags 0x%" PRIx64 ") in a mapped-ram "
                           "stream, whose pages are in the file", flags);
                return -EINVAL;
            }
            if (!ram_load_page(r, f, addr, flags, errp)) {
                return -EINVAL;
            }
            break;
        default:
            error_setg(errp, "Unknown combination of migration flags: 0x%" PRIx64, flags);
            return -EINVAL;
        }
    }
}

int ram_load_records(RAMPageReader *r, QEMUFile *f, Error **errp)
{
    int ret = ram_load_records_staged(r, f, errp);

    /* Whatever happened, no page read stays unplaced (an error keeps the first reason). */
    if (r->stage_n) {
        Error *err = NULL;

        if (!ram_load_flush_stage(r, ret < 0 ? &err : errp) && ret == 0) {
            ret = -EIO;
        }
        error_free(err);
    }
    return ret;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The mapped-ram file layout (mapped-ram.h). */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "qemu/bswap.h"
#include "mapped-ram.h"

uint64_t mapped_ram_bitmap_size(uint64_t used_length)
{
    return BITS_TO_LONGS(used_length >> TARGET_PAGE_BITS) * sizeof(unsigned long);
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

void mapped_ram_layout(uint64_t header_pos, uint64_t used_length, MappedRamHeader *h,
                       uint64_t *next_pos)
{
    h->version = MAPPED_RAM_HDR_VERSION;
    h->page_size = TARGET_PAGE_SIZE;
    h->bitmap_offset = header_pos + MAPPED_RAM_HDR_SIZE;
    h->pages_offset = align_up(h->bitmap_offset + mapped_ram_bitmap_size(used_length),
                               MAPPED_RAM_FILE_OFFSET_ALIGNMENT);
    *next_pos = h->pages_offset + used_length;
}

void mapped_ram_put_header(uint8_t buf[MAPPED_RAM_HDR_SIZE], const MappedRamHeader *h)
{
    stl_be_p(buf, h->version);
    stq_be_p(buf + 4, h->page_size);
    stq_be_p(buf + 12, h->bitmap_offset);
    stq_be_p(buf + 20, h->pages_offset);
}

bool mapped_ram_parse_header(const uint8_t buf[MAPPED_RAM_HDR_SIZE], const char *name,
                             uint64_t header_pos, uint64_t used_length, uint64_t file_size,
                             MappedRamHeader *h, uint64_t *next_pos, Error **errp)
{
    uint64_t bitmap_size = mapped_ram_bitmap_size(used_length);

    h->version = ldl_be_p(buf);
    h->page_size = ldq_be_p(buf + 4);
    h->bitmap_offset = ldq_be_p(buf + 12);
    h->pages_offset = ldq_be_p(buf + 20);
    if (h->version > MAPPED_RAM_HDR_VERSION || h->version == 0) {
        error_setg(errp, "Migration mapped-ram capability version not supported (expected "
                   "<= %d, got %u) in block %s", MAPPED_RAM_HDR_VERSION, h->version, name);
        return false;
    }
    if (h->page_size != TARGET_PAGE_SIZE) {
        error_setg(errp, "mapped-ram block %s has pages of %" PRIu64 " bytes, not %d", name,
                   h->page_size, (int)TARGET_PAGE_SIZE);
        return false;
    }
    /* Every comparison below is on values that cannot wrap: the file size bounds them first. */
    if (h->bitmap_offset < header_pos + MAPPED_RAM_HDR_SIZE || h->bitmap_offset > file_size ||
        bitmap_size > file_size - h->bitmap_offset) {
        error_setg(errp, "mapped-ram block %s: its bitmap (%" PRIu64 " bytes at 0x%" PRIx64
                   ") is not between its header and the end of the %" PRIu64 "-byte file",
                   name, bitmap_size, h->bitmap_offset, file_size);
        return false;
    }
    if (h->pages_offset % TARGET_PAGE_SIZE) {
        error_setg(errp, "Error reading ramblock %s pages, region has bad alignment", name);
        return false;
    }
    if (h->pages_offset < h->bitmap_offset + bitmap_size) {
        error_setg(errp, "mapped-ram block %s: its pages at 0x%" PRIx64 " overlap its bitmap "
                   "(0x%" PRIx64 "+%" PRIu64 ")", name, h->pages_offset, h->bitmap_offset,
                   bitmap_size);
        return false;
    }
    if (h->pages_offset > file_size || used_length > file_size - h->pages_offset) {
        error_setg(errp, "mapped-ram block %s: its %" PRIu64 " bytes of pages at 0x%" PRIx64
                   " go past the end of the %" PRIu64 "-byte file (truncated?)", name,
                   used_length, h->pages_offset, file_size);
        return false;
    }
    *next_pos = h->pages_offset + used_length;
    return true;
}

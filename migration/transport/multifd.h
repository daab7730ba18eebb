/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: the multifd wire format, QEMU's (multifd.h of
 * QEMU 9, whose packet header holds the zero-page count; all fields
 * big-endian, no padding).
 *
 * Every channel starts with one MultiFDInit, then carries packets: a
 * MultiFDPacket header, normal_pages + zero_pages be64 page offsets (the
 * normal ones first) inside the named RAMBlock, then next_packet_size
 * bytes of page data (normal_pages pages, compressed or not). A packet
 * with MULTIFD_FLAG_SYNC ends a dirty-sync round on its channel; the main
 * stream's RAM_SAVE_FLAG_MULTIFD_FLUSH record tells the destination to
 * wait for that round on every channel before it reads on.
 */
#ifndef MIGRATION_MULTIFD_H
#define MIGRATION_MULTIFD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "qemu/typedefs.h"

#define MULTIFD_MAGIC           0x11223344U
#define MULTIFD_VERSION         1
#define MULTIFD_FLAG_SYNC       (1u << 0)
/* Three bits of the flags hold the compression method. */
#define MULTIFD_FLAG_COMPRESSION_MASK (7u << 1)
#define MULTIFD_FLAG_NOCOMP     (0u << 1)
#define MULTIFD_FLAG_ZLIB       (1u << 1)
#define MULTIFD_FLAG_ZSTD       (2u << 1)

/* QEMU's MULTIFD_PACKET_SIZE: 512 KiB of pages per packet. */
#define MULTIFD_PACKET_SIZE     (512 * 1024)
#define MULTIFD_PACKET_PAGES    (MULTIFD_PACKET_SIZE / 4096)
#define MULTIFD_RAMBLOCK_NAME_LEN 256

typedef struct __attribute__((packed)) MultiFDInit {
    uint32_t magic;
    uint32_t version;
    uint8_t uuid[16];
    uint8_t id;
    uint8_t unused1[7];
    uint64_t unused2[4];
} MultiFDInit;

typedef struct __attribute__((packed)) MultiFDPacketHdr {
    uint32_t magic;
    uint32_t version;
    uint32_t flags;
    uint32_t pages_alloc;       /* the most pages a packet of this channel holds */
    uint32_t normal_pages;
    uint32_t next_packet_size;  /* bytes of page data after the offsets */
    uint64_t packet_num;
    uint32_t zero_pages;
    uint32_t unused32[1];
    uint64_t unused64[3];
    char ramblock[MULTIFD_RAMBLOCK_NAME_LEN];
} MultiFDPacketHdr;

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: multifd-compression (none, zlib, zstd) as rows of
 * one table. A channel thread owns one codec state per direction for the
 * whole migration: QEMU keeps one deflate/zstd stream per channel and ends
 * every packet with a flush, so each packet decodes on its own once the
 * packets before it on the same channel were decoded.
 *
 * The receiving side treats its input as hostile: a packet decodes to
 * exactly @n pages of TARGET_PAGE_SIZE, never a byte more; one that would
 * inflate past its pages, ends before filling them, or is corrupt is an
 * error with a message, and nothing is written past the pages given.
 */
#ifndef MIGRATION_MULTIFD_COMPRESS_H
#define MIGRATION_MULTIFD_COMPRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "qapi/qapi-types.h"

typedef struct MultifdCompressOps {
    const char *name;           /* "none", "zlib", "zstd" (MultiFDCompression) */
    uint32_t packet_flag;       /* MULTIFD_FLAG_NOCOMP / _ZLIB / _ZSTD (multifd.h) */

    /* ---- a sending channel thread ---- */
    /* @level: multifd-zlib-level / multifd-zstd-level. NULL + @errp on failure. */
    void *(*send_new)(int level, Error **errp);
    void (*send_free)(void *st);
    /*
     * Compresses the @n pages at @pages[i] (TARGET_PAGE_SIZE each) into
     * @out (@cap bytes, at least bound(@n)) as one packet body, ending
     * with a flush. Returns the body's length, or -1 with @errp set.
     */
    ssize_t (*compress)(void *st, const uint8_t *const *pages, uint32_t n,
                        uint8_t *out, size_t cap, Error **errp);
    /* The most bytes compress() can return for @n pages. */
    size_t (*bound)(uint32_t n);

    /* ---- a receiving channel thread ---- */
    void *(*recv_new)(Error **errp);
    void (*recv_free)(void *st);
    /*
     * Decodes the packet body @in[0..len) into exactly the @n pages at
     * @pages[i]. False with @errp set if the body is corrupt, decodes to
     * more or fewer than @n pages, or leaves input unused.
     */
    bool (*decompress)(void *st, const uint8_t *in, size_t len,
                       uint8_t *const *pages, uint32_t n, Error **errp);
} MultifdCompressOps;

/* The row for @method; never NULL (every MultiFDCompression value has one). */
const MultifdCompressOps *multifd_compress_ops(MultiFDCompression method);
/* The row whose packet_flag is @flag, or NULL (an unknown compression in a packet). */
const MultifdCompressOps *multifd_compress_ops_by_flag(uint32_t flag);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: the XBZRLE page delta, QEMU's encoding. The XOR
 * of the page as last sent and the page now is cut into alternating runs:
 *
 *   uleb128 unchanged-run length, uleb128 changed-run length, the changed
 *   bytes (new content), ... repeated; the first unchanged run may be 0,
 *   every changed run is at least 1 byte, and a trailing unchanged run is
 *   not written.
 *
 * Lengths fit a page, so a ULEB128 here is at most 2 bytes (< 16384).
 */
#ifndef MIGRATION_XBZRLE_H
#define MIGRATION_XBZRLE_H

#include <stddef.h>
#include <stdint.h>

/*
 * xbzrle_encode: the delta that turns @old into @new (both @len bytes,
 * @len < 16384 and a multiple of 8) in @out. Returns its length, 0 when
 * the pages are equal, or -1 when it would exceed @out_max bytes (then
 * the page goes whole; @out holds garbage).
 */
int xbzrle_encode(const uint8_t *old, const uint8_t *new, size_t len, uint8_t *out,
                  size_t out_max);

/*
 * xbzrle_decode: apply the delta @enc[0..enc_len) to @page (@len bytes,
 * the content the destination holds). Hostile input: the delta is checked
 * whole (every length, every run inside the page, nothing left over)
 * before a byte of @page changes. Returns 0, or -1 with @page untouched.
 */
int xbzrle_decode(const uint8_t *enc, size_t enc_len, uint8_t *page, size_t len);

#endif

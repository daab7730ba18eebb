/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: the destination's end of the return path (the
 * messages are in postcopy.h), written back to the source over the
 * migration socket by mig/dst (PONG, SHUT, RESUME_ACK, bitmaps) and
 * mig/pc-fault (page requests), one message at a time under one lock.
 * A write that fails marks the path broken; later ones are dropped (the
 * stream's reader sees the broken connection and says why).
 */
#ifndef MIGRATION_POSTCOPY_RP_DST_H
#define MIGRATION_POSTCOPY_RP_DST_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"

/* mig/dst: write back over @f's connection (a dup of it), replacing any earlier one. */
bool rp_dst_open(QEMUFile *f);
bool rp_dst_is_open(void);
void rp_dst_close(void);
/*
 * mig/dst: the source offered the switchover confirmation (PING
 * CONFIRM_OFFER, postcopy.h) and we accepted it: after SHUT 0 the guest
 * waits for the source's go. Stays set after the close; a new open clears it.
 */
void rp_dst_set_confirming(void);
bool rp_dst_confirming(void);

/* One message of @len (<= RP_MSG_MAX_LEN) bytes; false if the path is gone. */
bool rp_dst_send(uint16_t type, const uint8_t *data, uint16_t len);
bool rp_dst_send_be32(uint16_t type, uint32_t value);
/* REQ_PAGES or REQ_PAGES_ID (when the block changed since the last request): one page. */
bool rp_dst_request_page(RAMBlock *rb, uint64_t offset);
/*
 * RECV_BITMAP for @rb, then QEMU's trailer: be64 byte count, the @nwords
 * words of @bmap little-endian, be64 end marker.
 */
bool rp_dst_send_bitmap(RAMBlock *rb, const unsigned long *bmap, uint64_t nwords);

#endif

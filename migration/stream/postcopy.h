/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: postcopy's wire format, QEMU's layout.
 *
 * Main stream commands (savevm-cmd.c): QEMU_VM_COMMAND, be16 cmd, be16 len,
 * then len bytes (PACKAGED: be32 blob length, then the blob itself):
 *   OPEN_RETURN_PATH  -                    the destination may now write back
 *   PING              be32 value           answered by a PONG
 *   POSTCOPY_ADVISE   be64 page-size summary, be64 target page size
 *   POSTCOPY_LISTEN   -                    RAM from now on is placed atomically
 *   POSTCOPY_RUN      -                    start the guest
 *   POSTCOPY_RAM_DISCARD  u8 0, u8 n, n bytes of block name, u8 0,
 *                     then (be64 start, be64 length) pairs, in bytes
 *   PACKAGED          be32 len; a stream of sections and commands (the device
 *                     state, LISTEN, PING and RUN) the destination reads whole
 *
 * Return path (destination to source, the same socket; return-path.c):
 * be16 type, be16 len, then len bytes:
 *   SHUT       be32 0 = the load succeeded, else it failed
 *   PONG       be32 the PING's value
 *   REQ_PAGES_ID  be64 offset, be32 bytes, u8 n, n bytes of block name
 *   REQ_PAGES  be64 offset, be32 bytes (the block of the previous request)
 *
 * Our switchover confirmation (docs/devel/migration.md, "Who runs the
 * guest"), carried in QEMU's own records so that a QEMU peer on either end
 * only ever sees a PING it answers or a PONG it ignores:
 *   PING CONFIRM_OFFER  (source, after OPEN_RETURN_PATH) "I will send a go"
 *   PONG CONFIRM_ACCEPT (our destination's answer; QEMU's echoes the offer)
 *   PONG VMDESC_DAMAGED (destination, before SHUT 0) the device state loaded
 *                       whole but the trailing vmdesc did not arrive whole
 *   PING GO             (source, after the stream, once it got SHUT 0 and
 *                       committed) the destination may run the guest
 */
#ifndef MIGRATION_POSTCOPY_H
#define MIGRATION_POSTCOPY_H

enum {
    MIG_CMD_INVALID = 0,
    MIG_CMD_OPEN_RETURN_PATH,
    MIG_CMD_PING,
    MIG_CMD_POSTCOPY_ADVISE,
    MIG_CMD_POSTCOPY_LISTEN,
    MIG_CMD_POSTCOPY_RUN,
    MIG_CMD_POSTCOPY_RAM_DISCARD,
    MIG_CMD_PACKAGED,
    MIG_CMD_ENABLE_COLO,
    MIG_CMD_POSTCOPY_RESUME,
    MIG_CMD_RECV_BITMAP,
    /*
     * QEMU 10.0 sends it, empty, just before the RAM section's END at a
     * precopy's switchover (seen on the wire); it tells devices that track
     * the switchover, and we have none. We never send it: QEMU 7.2 refuses it.
     */
    MIG_CMD_SWITCHOVER_START,
    MIG_CMD_MAX
};

enum {
    MIG_RP_MSG_INVALID = 0,
    MIG_RP_MSG_SHUT,
    MIG_RP_MSG_PONG,
    MIG_RP_MSG_REQ_PAGES_ID,
    MIG_RP_MSG_REQ_PAGES,
    MIG_RP_MSG_RECV_BITMAP,
    MIG_RP_MSG_RESUME_ACK,
    MIG_RP_MSG_SWITCHOVER_ACK,
    MIG_RP_MSG_MAX
};

#define POSTCOPY_DISCARD_VERSION 0
/* Pairs per discard command, as QEMU sends them. */
#define POSTCOPY_DISCARDS_PER_COMMAND 12
/* The device state in one PACKAGED blob is at most this big (QEMU's limit). */
#define MAX_VM_CMD_PACKAGED_SIZE (1U << 24)
/* A return-path message's body is never longer (QEMU's). */
#define RP_MSG_MAX_LEN 512

/* The confirmation's PING and PONG values: no QEMU sends these (its PINGs count from 1). */
#define MIG_PING_CONFIRM_OFFER  0x51434f31u    /* "QCO1" */
#define MIG_PONG_CONFIRM_ACCEPT 0x51434131u    /* "QCA1" */
#define MIG_PONG_VMDESC_DAMAGED 0x51435644u    /* "QCVD" */
#define MIG_PING_GO             0x5143474fu    /* "QCGO" */
/*
 * How long either end waits for the other's word once the stream ended
 * (the source for SHUT, our destination for the go): generous, as the
 * destination may still be reading what the sockets held.
 */
#define MIGRATION_CONFIRM_TIMEOUT_MS 60000

#endif

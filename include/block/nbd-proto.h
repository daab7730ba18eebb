/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The NBD protocol's numbers, as the protocol document (NetworkBlockDevice
 * nbd, doc/proto.md) defines them, for the server (nbd/server*.c) and the
 * client (block/nbd*.c). Everything on the wire is big-endian. Only the
 * numbers live here: each side's parser bounds-checks what it reads.
 */
#ifndef BLOCK_NBD_PROTO_H
#define BLOCK_NBD_PROTO_H

#define NBD_DEFAULT_PORT                10809

/* Handshake: "NBDMAGIC", then "IHAVEOPT" (newstyle). */
#define NBD_INIT_MAGIC                  0x4e42444d41474943ULL
#define NBD_OPTS_MAGIC                  0x49484156454f5054ULL
#define NBD_REP_MAGIC                   0x0003e889045565a9ULL

/* Handshake flags (server, 16 bits) and client flags (32 bits). */
#define NBD_FLAG_FIXED_NEWSTYLE         (1u << 0)
#define NBD_FLAG_NO_ZEROES              (1u << 1)
#define NBD_FLAG_C_FIXED_NEWSTYLE       (1u << 0)
#define NBD_FLAG_C_NO_ZEROES            (1u << 1)

/* Options (client to server, during the handshake). */
#define NBD_OPT_EXPORT_NAME             1
#define NBD_OPT_ABORT                   2
#define NBD_OPT_LIST                    3
#define NBD_OPT_STARTTLS                5
#define NBD_OPT_INFO                    6
#define NBD_OPT_GO                      7
#define NBD_OPT_STRUCTURED_REPLY        8
#define NBD_OPT_LIST_META_CONTEXT       9
#define NBD_OPT_SET_META_CONTEXT        10
#define NBD_OPT_EXTENDED_HEADERS        11

/* Option replies. */
#define NBD_REP_ACK                     1
#define NBD_REP_SERVER                  2
#define NBD_REP_INFO                    3
#define NBD_REP_META_CONTEXT            4
#define NBD_REP_FLAG_ERROR              (1u << 31)
#define NBD_REP_ERR_UNSUP               (NBD_REP_FLAG_ERROR | 1)
#define NBD_REP_ERR_POLICY              (NBD_REP_FLAG_ERROR | 2)
#define NBD_REP_ERR_INVALID             (NBD_REP_FLAG_ERROR | 3)
#define NBD_REP_ERR_PLATFORM            (NBD_REP_FLAG_ERROR | 4)
#define NBD_REP_ERR_TLS_REQD            (NBD_REP_FLAG_ERROR | 5)
#define NBD_REP_ERR_UNKNOWN             (NBD_REP_FLAG_ERROR | 6)
#define NBD_REP_ERR_SHUTDOWN            (NBD_REP_FLAG_ERROR | 7)
#define NBD_REP_ERR_BLOCK_SIZE_REQD     (NBD_REP_FLAG_ERROR | 8)
#define NBD_REP_ERR_TOO_BIG             (NBD_REP_FLAG_ERROR | 9)

/* NBD_REP_INFO types (and what NBD_OPT_INFO/GO may ask for). */
#define NBD_INFO_EXPORT                 0
#define NBD_INFO_NAME                   1
#define NBD_INFO_DESCRIPTION            2
#define NBD_INFO_BLOCK_SIZE             3

/* Transmission flags (16 bits, with NBD_INFO_EXPORT). */
#define NBD_FLAG_HAS_FLAGS              (1u << 0)
#define NBD_FLAG_READ_ONLY              (1u << 1)
#define NBD_FLAG_SEND_FLUSH             (1u << 2)
#define NBD_FLAG_SEND_FUA               (1u << 3)
#define NBD_FLAG_ROTATIONAL             (1u << 4)
#define NBD_FLAG_SEND_TRIM              (1u << 5)
#define NBD_FLAG_SEND_WRITE_ZEROES      (1u << 6)
#define NBD_FLAG_SEND_DF                (1u << 7)
#define NBD_FLAG_CAN_MULTI_CONN         (1u << 8)
#define NBD_FLAG_SEND_RESIZE            (1u << 9)
#define NBD_FLAG_SEND_CACHE             (1u << 10)
#define NBD_FLAG_SEND_FAST_ZERO         (1u << 11)

/* Requests: magic (32), flags (16), type (16), cookie (64), offset (64), length (32). */
#define NBD_REQUEST_MAGIC               0x25609513u
#define NBD_REQUEST_SIZE                28
#define NBD_CMD_READ                    0
#define NBD_CMD_WRITE                   1
#define NBD_CMD_DISC                    2
#define NBD_CMD_FLUSH                   3
#define NBD_CMD_TRIM                    4
#define NBD_CMD_CACHE                   5
#define NBD_CMD_WRITE_ZEROES            6
#define NBD_CMD_BLOCK_STATUS            7
#define NBD_CMD_RESIZE                  8
#define NBD_CMD_FLAG_FUA                (1u << 0)
#define NBD_CMD_FLAG_NO_HOLE            (1u << 1)
#define NBD_CMD_FLAG_DF                 (1u << 2)
#define NBD_CMD_FLAG_REQ_ONE            (1u << 3)
#define NBD_CMD_FLAG_FAST_ZERO          (1u << 4)

/* Simple reply: magic (32), error (32), cookie (64). */
#define NBD_SIMPLE_REPLY_MAGIC          0x67446698u
#define NBD_SIMPLE_REPLY_SIZE           16
/* Structured reply chunk: magic (32), flags (16), type (16), cookie (64), length (32). */
#define NBD_STRUCTURED_REPLY_MAGIC      0x668e33efu
#define NBD_STRUCTURED_REPLY_SIZE       20
#define NBD_REPLY_FLAG_DONE             (1u << 0)
#define NBD_REPLY_TYPE_NONE             0
#define NBD_REPLY_TYPE_OFFSET_DATA      1
#define NBD_REPLY_TYPE_OFFSET_HOLE      2
#define NBD_REPLY_TYPE_BLOCK_STATUS     5
#define NBD_REPLY_TYPE_ERROR            ((1u << 15) | 1)
#define NBD_REPLY_TYPE_ERROR_OFFSET     ((1u << 15) | 2)

/* Errors on the wire (not the host's errno values, though most agree). */
#define NBD_SUCCESS                     0
#define NBD_EPERM                       1
#define NBD_EIO                         5
#define NBD_ENOMEM                      12
#define NBD_EINVAL                      22
#define NBD_ENOSPC                      28
#define NBD_EOVERFLOW                   75
#define NBD_ENOTSUP                     95
#define NBD_ESHUTDOWN                   108

/* The base:allocation meta context's status flags. */
#define NBD_META_BASE_ALLOCATION        "base:allocation"
#define NBD_STATE_HOLE                  (1u << 0)
#define NBD_STATE_ZERO                  (1u << 1)

/* Limits: strings (names, messages) and one request's payload. */
#define NBD_MAX_STRING                  4096
#define NBD_MAX_BUFFER_SIZE             (32u << 20)

#endif

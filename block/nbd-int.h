/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to the nbd client row (block/nbd*.c): what the handshake learnt
 * and the reply parser, which the fuzz target (tests/fuzz/fuzz-nbd-client.c)
 * drives without a socket or a thread.
 *
 * Files: nbd.c (the row: options, requests fitted to the server),
 * nbd-addr.c (options and filenames), nbd-client.c (a connection:
 * requests in flight, the receiving thread), nbd-handshake.c (fixed
 * newstyle negotiation), nbd-reply.c (one reply message read, checked
 * against its request and applied).
 * docs/devel/nbd-client.md has the story.
 */
#ifndef BLOCK_NBD_INT_H
#define BLOCK_NBD_INT_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include "qemu/typedefs.h"
#include "crypto/tls-creds.h"
#include "block/nbd-proto.h"

/* The wire's 16-bit fields (qemu/bswap.h has 32 and 64 only). */
static inline void nbd_st16(void *p, uint16_t v)
{
    uint8_t *b = p;

    b[0] = v >> 8;
    b[1] = v;
}

static inline uint16_t nbd_ld16(const void *p)
{
    const uint8_t *b = p;

    return (uint16_t)(b[0] << 8 | b[1]);
}

/* What the handshake learnt: fixed for the connection's life. */
typedef struct NbdExportInfo {
    uint64_t size;              /* bytes, at most INT64_MAX */
    uint16_t flags;             /* NBD_FLAG_* transmission flags */
    bool structured;            /* NBD_OPT_STRUCTURED_REPLY acknowledged */
    bool base_allocation;       /* base:allocation selected: BLOCK_STATUS may be sent */
    uint32_t context_id;        /* ... under this id */
    /* NBD_INFO_BLOCK_SIZE (defaults 1, 4096, 32 MiB), checked to be sane. */
    uint32_t min_block, pref_block, max_block;
} NbdExportInfo;

/*
 * nbd-handshake.c: the fixed newstyle negotiation on the connected *@c, in
 * the caller's thread (blocking): with @creds, NBD_OPT_STARTTLS first and
 * *@c replaced by a TLS channel over it (checking the server's name
 * against @hostname, NULL: no name check); then structured replies,
 * base:allocation, and NBD_OPT_GO for @export asking for its block sizes,
 * or NBD_OPT_EXPORT_NAME from a server without GO. 0, or -errno with
 * @errp set (the server's own message, made printable, where it gave one).
 */
int nbd_client_handshake(Channel **c, const char *export, TLSCreds *creds,
                         const char *hostname, NbdExportInfo *info, Error **errp);

/* ---- Replies (nbd-reply.c) ---- */

/*
 * Bounds on what one reply may make us keep: the disjoint ranges of one
 * READ that content chunks covered (adjacent ones merge, so a server that
 * sends its chunks in order keeps one), and the extents of one
 * BLOCK_STATUS chunk (we ask for one: NBD_CMD_FLAG_REQ_ONE).
 */
#define NBD_MAX_READ_RANGES 4096
#define NBD_MAX_EXTENTS 1024

typedef struct NbdRange {
    uint64_t start, end;        /* [start, end), relative to the request's offset */
} NbdRange;

/*
 * One request in flight, as the reply parser sees it. The submitter fills
 * the first part before the request is sent and does not touch the
 * request again until it is done; until then only the receiving thread
 * writes the rest (and the data into @iov).
 */
typedef struct NbdRequest {
    uint64_t cookie;
    uint16_t type;              /* NBD_CMD_* */
    uint16_t flags;             /* NBD_CMD_FLAG_* */
    uint64_t offset;
    uint32_t length;
    const struct iovec *iov;    /* READ: where the @length bytes go */
    int niov;

    int ret;                    /* 0, or the first error: -errno */
    /* READ: what content chunks described, sorted, disjoint and never adjacent */
    GArray *covered;            /* of NbdRange; NULL until the first chunk */
    uint64_t covered_bytes;
    /* BLOCK_STATUS: the first extent */
    bool has_status;
    uint32_t status_length;     /* clamped to @length */
    uint32_t status_flags;      /* NBD_STATE_* */
} NbdRequest;

typedef struct NbdReplyOps {
    /* Reads exactly the bytes of @iov: 0, or -errno (end of stream: -EPIPE). */
    int (*readv)(void *opaque, const struct iovec *iov, int niov);
    /* The request in flight with @cookie, or NULL (a reply to nothing). */
    NbdRequest *(*find)(void *opaque, uint64_t cookie);
} NbdReplyOps;

/*
 * Reads one message (a simple reply, or one structured chunk), checks
 * every field against its request and what was negotiated, and applies it
 * (data into the request's iovec, an error into ->ret, an extent).
 * Returns 1 when the request is complete (*@req set: its ->ret is the
 * result), 0 when more chunks follow, -EPROTO when the server broke the
 * protocol (the stream is out of step: the connection must go; no
 * request was completed), or the read's -errno.
 */
int nbd_reply_recv(const NbdReplyOps *ops, void *opaque, const NbdExportInfo *info,
                   NbdRequest **req);
/* The parser's state of @req (its covered ranges); the request itself is the caller's. */
void nbd_request_cleanup(NbdRequest *req);
/* An NBD_E* on the wire as -errno (unknown values are -EINVAL, as the protocol says). */
int nbd_errno_from_wire(uint32_t err);

/* ---- A connection (nbd-client.c) ---- */

typedef struct NbdClient NbdClient;

/*
 * The handshake on @ch (taken, whatever happens) for @export, over TLS
 * with @creds (a client's; NULL: in clear) checking @hostname, bounded by
 * @timeout_s seconds, then the receiving thread started. NULL with @errp
 * set on failure.
 */
NbdClient *nbd_client_open(Channel *ch, const char *export, TLSCreds *creds,
                           const char *hostname, uint64_t timeout_s, Error **errp);
/* What the handshake learnt (fixed). */
const NbdExportInfo *nbd_client_info(NbdClient *c);
/*
 * One request on the wire, waited for: 0 or -errno (-EIO once the
 * connection is gone). Any thread. @iov: a READ's destination or a
 * WRITE's data, exactly @length bytes; @status: a BLOCK_STATUS's extent.
 */
int nbd_client_request(NbdClient *c, uint16_t type, uint16_t flags, uint64_t offset,
                       uint32_t length, const struct iovec *iov, int niov,
                       NbdRequest *status);
/* A soft disconnect, the thread joined, everything freed. Nothing may be in flight. */
void nbd_client_close(NbdClient *c);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The NBD server inside nbd/: the pure parsers of what a client sends
 * (server-parse.c, which the unit test and tests/fuzz/fuzz-nbd-server.c
 * drive alone), and the server's instance, exports and clients
 * (server.c; server-handshake.c and server-client.c run in a client's
 * thread). The QMP side is server-qmp.c; docs/devel/nbd.md has the whole
 * story.
 *
 * Threads and locks:
 *   - main thread, BQL: start, stop, listen, accept, add and remove
 *     exports, join client threads, query-block-exports.
 *   - one thread per connection ("nbd/client"): the handshake, then it
 *     reads the client's requests and hands them to its workers
 *     ("nbd/workerN", joined by the client thread before it ends), which
 *     serve them through the export's BlockBackend (any thread may call
 *     blk_*) and send the replies under ClientState.send_lock. None of
 *     them takes the BQL.
 *   - NbdServer.lock guards the export list and each client's export and
 *     done flag as seen by the other side; it is never held across I/O.
 *
 * The invariant: an export's BlockBackend is detached only by the main
 * thread, after every client thread that could use it was joined. A
 * client takes an export only under NbdServer.lock from the list, and the
 * main thread takes an export off the list under the same lock before it
 * counts and joins its clients, so no client can pick it up in between.
 */
#ifndef NBD_SERVER_INT_H
#define NBD_SERVER_INT_H

#include "qemu/osdep.h"
#include "qemu/thread.h"
#include "block/block.h"
#include "block/nbd-proto.h"
#include "authz/authz.h"
#include "crypto/tls-creds.h"

/* ---- server-parse.c: pure, bounds-checked parsers ---- */

#define NBD_OPTION_HEADER_SIZE  16      /* magic (64), option (32), length (32) */
/*
 * The largest option payload read: an export name plus a few info
 * requests or meta context queries. Longer ones end the client (reading
 * and discarding megabytes of handshake helps no real client).
 */
#define NBD_MAX_OPTION_LENGTH   (4 * NBD_MAX_STRING + 64)
/* Info requests and meta context queries kept from one option; more are refused. */
#define NBD_MAX_INFO_REQUESTS   16
#define NBD_MAX_META_QUERIES    16

typedef struct NbdOptionHeader {
    uint32_t option;
    uint32_t length;
} NbdOptionHeader;

/* An option's payload, parsed: what the option kinds that take one carry. */
typedef struct NbdOption {
    char name[NBD_MAX_STRING + 1];      /* the export name, NUL-terminated */
    /* NBD_OPT_INFO / GO */
    uint16_t info[NBD_MAX_INFO_REQUESTS];
    unsigned n_info;
    /* NBD_OPT_LIST_META_CONTEXT / SET_META_CONTEXT */
    unsigned n_queries;
    bool query_base_allocation;         /* "base:allocation" asked for */
    bool query_base_all;                /* "base:" (every base context; LIST only) */
} NbdOption;

/* The header of an option: 0, or -EINVAL (bad magic), -E2BIG (payload too long). */
int nbd_parse_option_header(const uint8_t *buf, NbdOptionHeader *h);
/*
 * The payload of option @option, @len bytes: 0, or an NBD_REP_ERR_* to
 * answer (INVALID: malformed; TOO_BIG: more entries than kept), with
 * *@why saying what for a warning. Options without a payload must have
 * none; unknown ones are the caller's (NBD_REP_ERR_UNSUP), not checked.
 */
uint32_t nbd_parse_option(uint32_t option, const uint8_t *payload, uint32_t len,
                          NbdOption *out, const char **why);

/* A request header, host byte order. */
typedef struct NbdRequest {
    uint16_t flags;
    uint16_t type;
    uint64_t cookie;
    uint64_t offset;
    uint32_t length;
} NbdRequest;

/* What a request is checked against: the export and what was negotiated. */
typedef struct NbdRequestLimits {
    uint64_t size;              /* the export's length */
    bool writable;
    bool structured;            /* NBD_OPT_STRUCTURED_REPLY done */
    bool meta_allocation;       /* base:allocation selected for this export */
} NbdRequestLimits;

/*
 * A request header (NBD_REQUEST_SIZE bytes) checked against @lim. Returns
 * NBD_SUCCESS; an NBD_E* error to answer (the request is well-framed: a
 * WRITE's payload follows and must be read and dropped); or -1: the
 * stream can no longer be trusted (bad magic, a WRITE payload beyond
 * NBD_MAX_BUFFER_SIZE) and the client must go. *@why says why it failed.
 */
int nbd_parse_request(const uint8_t *buf, const NbdRequestLimits *lim, NbdRequest *req,
                      const char **why);

/* ---- server.c and server-client.c ---- */

typedef struct NbdServer NbdServer;
typedef struct NbdExport NbdExport;
typedef struct NbdClient NbdClient;

struct NbdExport {
    NbdServer *server;
    char *id;                   /* block-export-add's id (nbd-server-add: the name) (fixed) */
    char *name;                 /* what clients ask for (fixed) */
    char *description;          /* may be NULL (fixed) */
    char *node_name;            /* the exported node (fixed) */
    BlockBackend *blk;          /* fixed; detached by the main thread after the clients went */
    uint64_t size;              /* fixed at add */
    bool writable;              /* fixed */
    bool writethrough;          /* every write with FUA (fixed) */
};

struct NbdClient {
    NbdServer *server;
    Channel *ch;                /* the client thread reads and writes; anyone shuts it down */
    QemuThread thread;
    bool thread_started;        /* main thread */
    char *peer;                 /* for messages (fixed) */
    /* NbdServer.lock: */
    NbdExport *exp;             /* in transmission on it, or NULL */
    bool done;                  /* the thread is about to return: join it */
};

struct NbdServer {
    BlockLayer *bl;             /* fixed */
    int listen_fd;              /* main thread; -1 after stop */
    guint listen_watch;         /* main thread */
    char *unix_path;            /* unlinked at stop (main thread) */
    uint32_t max_connections;   /* 0: no limit (fixed) */
    TLSCreds *tls_creds;        /* a reference; NULL: no TLS (fixed) */
    Authz *tls_authz;           /* a reference; NULL: whoever the credentials admit (fixed) */
    GMutex lock;
    GPtrArray *exports;         /* NbdExport * (lock to read from a client; BQL to change) */
    GPtrArray *clients;         /* NbdClient * (main thread adds and reaps; lock) */
};

/* server.c, main thread */
/* Takes references to @creds and @authz (either may be NULL). */
NbdServer *nbd_server_new(BlockLayer *bl, uint32_t max_connections, TLSCreds *creds,
                          Authz *authz);
/* Listening on @fd (bound and listening; taken): accepts in the main loop. */
void nbd_server_listen(NbdServer *s, int fd, const char *unix_path);
/* Every client shut down and joined, every export freed, the listener closed. */
void nbd_server_free(NbdServer *s);
/* An export of @device's node (a drive id or node name) activated for it. */
NbdExport *nbd_export_add(NbdServer *s, const char *id, const char *device, const char *name,
                          const char *description, bool writable, bool writethrough,
                          Error **errp);
NbdExport *nbd_export_find_id(NbdServer *s, const char *id);
NbdExport *nbd_export_find_name(NbdServer *s, const char *name);     /* under s->lock */
/* @hard: its clients are cut off; otherwise refused while it has any. */
bool nbd_export_remove(NbdExport *exp, bool hard, Error **errp);

/* The context id SET_META_CONTEXT gives base:allocation (any number would do). */
#define NBD_META_ID_ALLOCATION  1

/* A client's protocol state, owned by its thread (server-handshake.c, server-client.c). */
typedef struct ClientState {
    NbdClient *c;
    NbdServer *s;
    Channel *ch;                /* NbdClient.ch, or the TLS channel over it */
    Channel *tls;               /* after STARTTLS: our reference to that TLS channel */
    /* Set by the handshake, then fixed while requests are served: */
    bool no_zeroes;             /* NBD_FLAG_C_NO_ZEROES: no 124 bytes after EXPORT_NAME */
    bool structured;            /* NBD_OPT_STRUCTURED_REPLY was acknowledged */
    bool meta_allocation;       /* SET_META_CONTEXT chose base:allocation ... */
    char meta_name[NBD_MAX_STRING + 1];     /* ... for the export of this name */
    NbdExport *exp;             /* in transmission */
    /* Transmission: */
    GMutex send_lock;           /* one reply on the channel at a time (reader and workers) */
    GMutex buf_lock;
    GPtrArray *free_bufs;       /* NbdBuf *, payload buffers to reuse (buf_lock) */
} ClientState;

/* server-handshake.c: 1 once in transmission, 0 when the client ended it, -errno otherwise. */
int nbd_handshake(ClientState *cs);
/* server-client.c: the thread's body (the handshake, then the requests). */
void *nbd_client_thread(void *opaque);

#endif

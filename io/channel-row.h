/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to io/: what a row implements. A row is one file that defines a
 * const ChannelOps, a struct that starts with a Channel, and a constructor
 * that fills the struct and calls channel_init(). docs/devel/channels.md
 * says what each hook must do; a hook may be NULL where the row cannot do
 * it, and the feature bits tell callers so.
 */
#ifndef IO_CHANNEL_ROW_H
#define IO_CHANNEL_ROW_H

#include "io/channel.h"

typedef struct ChannelOps {
    const char *kind;           /* "socket", "file", ... (messages and docs only) */
    unsigned features;          /* ChannelFeature bits */
    /*
     * One transfer, blocking unless CHANNEL_NONBLOCK: >= 1 byte moved, 0 at
     * EOF (reads), or -errno (-EAGAIN only with CHANNEL_NONBLOCK). A
     * blocked call must return once shutdown() ran for its direction.
     * @fds/@nfds are NULL/0 unless the row has CHANNEL_FEATURE_FD_PASS.
     * EINTR may be returned; the core retries.
     */
    ssize_t (*readv)(Channel *c, const struct iovec *iov, int cnt, int *fds, size_t *nfds,
                     int flags);
    ssize_t (*writev)(Channel *c, const struct iovec *iov, int cnt, const int *fds,
                      size_t nfds, int flags);
    /* CHANNEL_FEATURE_SEEKABLE: positional I/O, and lseek on the stream position. */
    ssize_t (*preadv)(Channel *c, const struct iovec *iov, int cnt, uint64_t off);
    ssize_t (*pwritev)(Channel *c, const struct iovec *iov, int cnt, uint64_t off);
    int64_t (*seek)(Channel *c, int64_t off, int whence);
    /*
     * Wakes threads blocked in the hooks above for @how, from any thread.
     * The core has already set its flags, so it may be called twice.
     * NULL for rows that never block (a regular file).
     */
    void (*shutdown)(Channel *c, ChannelShutdown how);
    /* The last reference went: release everything (fds, child). 0 or -errno. */
    int (*close)(Channel *c);
    /* channel_fd(): the descriptor to poll. */
    int (*fd)(Channel *c);
    /*
     * Bytes the row holds that a read returns without waiting (a TLS row's
     * decrypted records), which polling channel_fd() cannot see; the
     * reader's thread. NULL: none.
     */
    size_t (*pending)(Channel *c);
    /*
     * What the row knows of its first failure of a write (@write) or a
     * read beyond the -errno it returned (a TLS row's "Cannot read from TLS
     * channel: ..."), valid for the channel's life; NULL: nothing more.
     * Any thread.
     */
    const char *(*error_detail)(Channel *c, bool write);
    /*
     * channel_end_write(): the writer's thread says its stream is whole; a
     * row whose peer cannot tell a clean end from a cut by EOF alone (TLS:
     * close_notify) says so on the wire. NULL: EOF says it.
     */
    int (*end_write)(Channel *c);
    /* The peer for messages, g_free'd by the core; called once, by channel_init(). */
    char *(*describe)(Channel *c);
} ChannelOps;

/*
 * The core's part of every channel; a row's struct starts with it. Rows
 * never touch these fields except through the functions below.
 */
struct Channel {
    const ChannelOps *ops;      /* read-only after channel_init */
    char *peer;                 /* read-only after channel_init */
    int refs;                   /* atomic */
    int shut;                   /* atomic: ChannelShutdown bits, only ever set */
    /* The reader's: bytes put back or peeked, served before the row's. */
    uint8_t *ahead;
    size_t ahead_pos;           /* first unread byte */
    size_t ahead_len;           /* end of the unread bytes */
    size_t ahead_cap;
};

/* Called by a row's constructor once its own fields are set; one reference. */
void channel_init(Channel *c, const ChannelOps *ops);

/*
 * For rows whose fd shutdown(2) cannot wake (pipes): wait until @fd is
 * ready for @events or @wake_fd (an eventfd the row's shutdown signals)
 * is readable. 0 when @fd is ready, -ESHUTDOWN when woken, -errno.
 */
int channel_wait_fd(int fd, short events, int wake_fd);

#endif

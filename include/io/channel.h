/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Channels: one byte-stream type under every connection the migration
 * code uses (the main stream and its return path, multifd channels, the
 * postcopy preempt channel). docs/devel/channels.md has the whole story.
 *
 * How to use it:
 *
 *   Channel *c = channel_socket_new(fd);         // or channel_file_new(),
 *                                                // channel_command_spawn(),
 *                                                // channel_fd_new() for fd:N
 *   if (channel_write_all(c, hdr, sizeof(hdr)) < 0) { ... }
 *   ret = channel_read_all(c, buf, len);         // 0, 1 = EOF first, -errno
 *   ...
 *   channel_shutdown(c, CHANNEL_SHUT_BOTH);      // any thread: wakes the I/O
 *   channel_unref(c);                            // the last one closes
 *
 * A connection is a row: a const ChannelOps table of hooks (socket, file,
 * command/pipe; a TLS row would wrap another channel). Callers never ask a
 * channel what row it is: they test channel_has_feature() for what a row
 * may lack (fd passing, positional I/O, a way back to the same peer).
 *
 * Contract (who may call what from which thread):
 *
 * - At most one thread reads and at most one thread writes a channel at a
 *   time (they may be two different threads: the return path reads the
 *   main stream's socket while mig/src writes it). The read-ahead
 *   (channel_unread, channel_peek) belongs to the reader.
 * - channel_ref / channel_unref and channel_shutdown may be called from any
 *   thread by whoever holds a reference. The last unref closes the row
 *   (a command's child is then reaped later, never waited for).
 * - Reads and writes block until they moved at least one byte (or, for the
 *   *_all helpers, everything), unless CHANNEL_NONBLOCK is given.
 * - channel_shutdown(@how) guarantees: a thread blocked in a read (for
 *   CHANNEL_SHUT_READ) or a write (CHANNEL_SHUT_WRITE) on this channel
 *   returns promptly, whatever the row (sockets by shutdown(2), pipes by a
 *   wake eventfd next to the fd in poll()); from then on every read sees
 *   end of file and every write fails with -EPIPE, including those that
 *   start later. Shutdown is one-way: it is never undone. It does not
 *   close anything, so a racing reader never touches a reused fd.
 *
 * Error convention: -errno (never errno); 0 for end of file on a read. A
 * single transfer (channel_readv/writev) may return -EINTR: call it again;
 * the *_all helpers do. An empty iovec reads as end of file.
 *
 * SIGPIPE: the socket row never raises it; the pipe row relies on the
 * process ignoring it (the emulator does, and so must any program that
 * writes a pipe through this layer), so that a closed reader is -EPIPE.
 */
#ifndef IO_CHANNEL_H
#define IO_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include "qemu/typedefs.h"


typedef enum ChannelShutdown {
    CHANNEL_SHUT_READ = 1,
    CHANNEL_SHUT_WRITE = 2,
    CHANNEL_SHUT_BOTH = 3,
} ChannelShutdown;

/* What a row can do beyond plain blocking reads and writes. */
typedef enum ChannelFeature {
    CHANNEL_FEATURE_FD_PASS = 1 << 0,   /* readv_full/writev_full carry fds */
    CHANNEL_FEATURE_SEEKABLE = 1 << 1,  /* channel_seek, channel_preadv/pwritev */
    /* Reads come from the peer our writes go to (a return path can use it). */
    CHANNEL_FEATURE_DUPLEX = 1 << 2,
} ChannelFeature;

/* Flag for the readv/writev hooks and channel_peek: return -EAGAIN instead of waiting. */
#define CHANNEL_NONBLOCK 1
/* The most fds one message carries (fd passing). */
#define CHANNEL_MAX_FDS 16

/* ---- constructors (each takes ownership of the fds it is given) ---- */

/* A connected stream socket (tcp:, unix:, or an inherited socket). */
Channel *channel_socket_new(int fd);
/* A regular file at its current position; @path is for messages. */
Channel *channel_file_new(int fd, const char *path);
/*
 * exec:: run @cmd with /bin/sh -c; with @to_child we write its stdin,
 * otherwise we read its stdout. NULL with @errp set if it cannot start.
 */
Channel *channel_command_spawn(const char *cmd, bool to_child, Error **errp);
/*
 * A pipe, FIFO or character device: @rfd and/or @wfd (-1 if absent), in
 * the blocking mode they have (their description may be shared with
 * another process). NULL with @errp set if the wake-up cannot be made.
 */
Channel *channel_pipe_new(int rfd, int wfd, const char *desc, Error **errp);
/* The same over ends that are ours alone: made non-blocking, for speed. */
Channel *channel_pipe_new_own(int rfd, int wfd, const char *desc, Error **errp);
/*
 * fd:N: the socket or file row by what fstat says (a pipe or anything else
 * gets the pipe row). NULL with @errp set if @fd is not open.
 */
Channel *channel_fd_new(int fd, Error **errp);

/* ---- life ---- */

Channel *channel_ref(Channel *c);
/* Drops a reference; the last one closes the row: 0 or its -errno. */
int channel_unref(Channel *c);
/* Any thread holding a reference; see the contract above. */
void channel_shutdown(Channel *c, ChannelShutdown how);
/* Whether @how was shut down (any bit of it). */
bool channel_is_shut_down(Channel *c, ChannelShutdown how);

/* ---- what it is ---- */

bool channel_has_feature(Channel *c, ChannelFeature f);
/* The peer, for messages ("tcp 10.0.0.2:4444", "command 'cat > x'", ...). */
const char *channel_peer(Channel *c);
/*
 * The descriptor to poll for readability (or, with nothing to read, for
 * writability). Also the documented way to non-I/O uses of the fd: socket
 * options and SIOCOUTQ on a socket, fstat/pread/O_DIRECT reopen on a file.
 * Never read or write it directly: bytes may wait in the read-ahead, and a
 * TLS row's fd carries ciphertext. So before polling it for readability,
 * ask channel_pending(): what is there is readable without waiting.
 */
int channel_fd(Channel *c);

/* ---- one transfer (at least one byte; 0 = EOF on reads) ---- */

ssize_t channel_readv(Channel *c, const struct iovec *iov, int cnt, int flags);
ssize_t channel_writev(Channel *c, const struct iovec *iov, int cnt, int flags);
/*
 * With fds (CHANNEL_FEATURE_FD_PASS): @fds receives up to *@nfds descriptors
 * (close-on-exec, the caller's to close) that came with the bytes read, and
 * *@nfds is set to how many did; any beyond *@nfds are closed. A message
 * with more than CHANNEL_MAX_FDS fails with -ENOBUFS, its bytes consumed
 * (the stream is then out of step: give up on it). Bytes from the
 * read-ahead come without fds.
 */
ssize_t channel_readv_full(Channel *c, const struct iovec *iov, int cnt, int *fds, size_t *nfds,
                           int flags);
/* Sends @nfds fds (at most CHANNEL_MAX_FDS) with the first byte(s) of @iov (at least one). */
ssize_t channel_writev_full(Channel *c, const struct iovec *iov, int cnt, const int *fds,
                            size_t nfds, int flags);

/* ---- all of it (short transfers, EINTR and partial iovecs handled here) ---- */

/* 0 once all was read; 1 if EOF came before the first byte; -EPIPE at EOF after it; -errno. */
int channel_readv_all(Channel *c, const struct iovec *iov, int cnt);
int channel_read_all(Channel *c, void *buf, size_t len);
/* 0 once all was written, or -errno (-EPIPE after a write shutdown). */
int channel_writev_all(Channel *c, const struct iovec *iov, int cnt);
int channel_write_all(Channel *c, const void *buf, size_t len);
/* As channel_writev_all, with @fds sent along with the first bytes (@iov must not be empty). */
int channel_writev_all_fds(Channel *c, const struct iovec *iov, int cnt, const int *fds,
                           size_t nfds);

/* ---- read-ahead (the reader's) ---- */

/*
 * Puts @len bytes back in front of what the next read returns (a reader
 * that read too far, a listener that looked at the first word).
 */
void channel_unread(Channel *c, const void *buf, size_t len);
/*
 * Makes @len bytes available without consuming them and copies them to
 * @buf: @len, fewer at EOF, or -errno. With CHANNEL_NONBLOCK, -EAGAIN
 * while fewer than @len arrived (what did arrive is kept: call again when
 * the fd is readable).
 */
ssize_t channel_peek(Channel *c, void *buf, size_t len, int flags);
/*
 * Bytes a read returns without waiting: the read-ahead, plus what the row
 * holds that polling its fd cannot see (a TLS row's decrypted records).
 */
size_t channel_pending(Channel *c);
/*
 * After a read (@write false) or write gave -errno: the row's own words for why, if it
 * has more to say than strerror (a TLS record that failed its check);
 * NULL otherwise. Valid for the channel's life.
 */
const char *channel_error_detail(Channel *c, bool write);
/*
 * The writer's thread: everything it will ever write went out; the peer
 * may take the end that follows as a clean one (a TLS row sends its
 * close_notify now, which a shutdown before the close would prevent).
 * 0 or -errno. A no-op for rows whose EOF already says it.
 */
int channel_end_write(Channel *c);

/* ---- positional I/O (CHANNEL_FEATURE_SEEKABLE; else -ESPIPE) ---- */

/* lseek semantics on the stream position; drops the read-ahead. */
int64_t channel_seek(Channel *c, int64_t off, int whence);
ssize_t channel_preadv(Channel *c, const struct iovec *iov, int cnt, uint64_t off);
ssize_t channel_pwritev(Channel *c, const struct iovec *iov, int cnt, uint64_t off);

#endif

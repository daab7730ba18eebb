/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The channel core (include/io/channel.h): references, shutdown, the
 * read-ahead and the helpers that move everything.
 *
 * Invariant: the bytes a reader gets are exactly the peer's bytes, in
 * order, each once; and no hook runs on a row after its close hook.
 *
 * Why it holds:
 * 1. Bytes put back (channel_unread) or peeked (channel_peek) sit in the
 *    read-ahead, and every read takes from the read-ahead first and calls
 *    the row only once it is empty. channel_unread prepends, channel_peek
 *    appends what the row gives, so order is kept. Only the reader touches
 *    the read-ahead (the contract gives a channel one reader at a time), so
 *    it needs no lock.
 * 2. The *_all helpers advance a private copy of the iovec by what each
 *    transfer moved (iov_advance), so a short transfer resumes exactly
 *    after its last byte, in the middle of an iovec or not; EINTR moved
 *    nothing and is retried.
 * 3. The close hook runs when the reference count drops to 0, and every
 *    user (each thread that reads, writes or shuts down) holds a
 *    reference, so none can be inside a hook then. Shutdown never closes:
 *    it only sets a bit and wakes, so it is safe against a concurrent
 *    read or write.
 * 4. The shut bits are only ever set. The core tests them before each
 *    transfer, so a transfer that starts after channel_shutdown() fails
 *    without calling the row; one already inside the row is woken by the
 *    row's shutdown hook (its own guarantee) and, seeing the bit, reports
 *    EOF or -EPIPE whatever the row returned.
 *
 * Locks: none. The reference count and the shut bits are atomics; the
 * read-ahead is the reader's alone; the rows' fds are read-only while the
 * channel lives. Callers may hold their own locks around any call (the
 * destination's return path writes under its lock) since nothing here
 * waits for another thread except the peer.
 *
 * tests/unit/test-channel.c checks the invariant in seeded random steps
 * (read-ahead-random) and each rule on real fds.
 */
#include "qemu/osdep.h"
#include "qemu/iov.h"
#include "channel-row.h"
#include <poll.h>

void channel_init(Channel *c, const ChannelOps *ops)
{
    c->ops = ops;
    c->refs = 1;
    c->shut = 0;
    c->peer = ops->describe ? ops->describe(c) : g_strdup(ops->kind);
}

Channel *channel_ref(Channel *c)
{
    __atomic_fetch_add(&c->refs, 1, __ATOMIC_RELAXED);
    return c;
}

int channel_unref(Channel *c)
{
    int ret = 0;

    if (!c || __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) != 0) {
        return 0;
    }
    g_free(c->ahead);
    g_free(c->peer);
    if (c->ops->close) {
        ret = c->ops->close(c);
    }
    /* The row's struct starts with the Channel (channel-row.h). */
    g_free(c);
    return ret;
}

void channel_shutdown(Channel *c, ChannelShutdown how)
{
    __atomic_fetch_or(&c->shut, how, __ATOMIC_SEQ_CST);
    if (c->ops->shutdown) {
        c->ops->shutdown(c, how);
    }
}

bool channel_is_shut_down(Channel *c, ChannelShutdown how)
{
    return __atomic_load_n(&c->shut, __ATOMIC_ACQUIRE) & how;
}

bool channel_has_feature(Channel *c, ChannelFeature f)
{
    return c->ops->features & f;
}

const char *channel_peer(Channel *c)
{
    return c->peer;
}

int channel_fd(Channel *c)
{
    return c->ops->fd ? c->ops->fd(c) : -1;
}

/* ---- read-ahead ---- */

/* Bytes in the core's read-ahead. */
static size_t ahead_pending(Channel *c)
{
    return c->ahead_len - c->ahead_pos;
}

int channel_end_write(Channel *c)
{
    return c->ops->end_write ? c->ops->end_write(c) : 0;
}

const char *channel_error_detail(Channel *c, bool write)
{
    return c->ops->error_detail ? c->ops->error_detail(c, write) : NULL;
}

size_t channel_pending(Channel *c)
{
    return ahead_pending(c) + (c->ops->pending ? c->ops->pending(c) : 0);
}

/* Room for @len more bytes at the end of the read-ahead. */
static void ahead_reserve(Channel *c, size_t len)
{
    size_t have = ahead_pending(c);

    if (c->ahead_pos) {
        memmove(c->ahead, c->ahead + c->ahead_pos, have);
        c->ahead_pos = 0;
        c->ahead_len = have;
    }
    if (have + len > c->ahead_cap) {
        c->ahead_cap = MAX(have + len, 64);
        c->ahead = g_realloc(c->ahead, c->ahead_cap);
    }
}

void channel_unread(Channel *c, const void *buf, size_t len)
{
    size_t have = ahead_pending(c);

    if (!len) {
        return;
    }
    ahead_reserve(c, len);
    memmove(c->ahead + len, c->ahead, have);
    memcpy(c->ahead, buf, len);
    c->ahead_len = have + len;
}

/* Copies from the read-ahead into @iov: the count (0 if it is empty). */
static size_t ahead_take(Channel *c, const struct iovec *iov, int cnt)
{
    size_t done = 0;

    for (int i = 0; i < cnt && ahead_pending(c); i++) {
        size_t l = MIN(iov[i].iov_len, ahead_pending(c));

        memcpy(iov[i].iov_base, c->ahead + c->ahead_pos, l);
        c->ahead_pos += l;
        done += l;
    }
    if (!ahead_pending(c)) {
        c->ahead_pos = c->ahead_len = 0;
    }
    return done;
}

ssize_t channel_peek(Channel *c, void *buf, size_t len, int flags)
{
    while (ahead_pending(c) < len) {
        size_t want = len - ahead_pending(c);
        struct iovec iov;
        ssize_t n;

        ahead_reserve(c, want);
        iov = (struct iovec) { c->ahead + c->ahead_len, want };
        n = channel_is_shut_down(c, CHANNEL_SHUT_READ) ? 0
            : c->ops->readv(c, &iov, 1, NULL, NULL, flags);
        if (n == -EINTR) {
            continue;
        }
        if (n < 0) {
            return n;
        }
        if (n == 0) {
            break;
        }
        c->ahead_len += n;
    }
    len = MIN(len, ahead_pending(c));
    memcpy(buf, c->ahead + c->ahead_pos, len);
    return len;
}

/* ---- one transfer ---- */

ssize_t channel_readv_full(Channel *c, const struct iovec *iov, int cnt, int *fds, size_t *nfds,
                           int flags)
{
    size_t got;
    ssize_t n;

    /* After a read shutdown every read is end of file, read-ahead or not (channel.h). */
    got = channel_is_shut_down(c, CHANNEL_SHUT_READ) ? 0 : ahead_take(c, iov, cnt);

    if (nfds) {
        assert(!*nfds || channel_has_feature(c, CHANNEL_FEATURE_FD_PASS));
        if (got) {
            *nfds = 0;
        }
    }
    if (got) {
        return got;
    }
    if (channel_is_shut_down(c, CHANNEL_SHUT_READ)) {
        if (nfds) {
            *nfds = 0;
        }
        return 0;
    }
    n = c->ops->readv(c, iov, cnt, nfds && *nfds ? fds : NULL, nfds && *nfds ? nfds : NULL,
                      flags);
    if (channel_is_shut_down(c, CHANNEL_SHUT_READ) && n < 0 && n != -EINTR) {
        /* Woken by shutdown: as a socket's reader sees it, end of file. */
        n = 0;
    }
    if (n <= 0 && nfds) {
        *nfds = 0;
    }
    return n;
}

ssize_t channel_readv(Channel *c, const struct iovec *iov, int cnt, int flags)
{
    return channel_readv_full(c, iov, cnt, NULL, NULL, flags);
}

ssize_t channel_writev_full(Channel *c, const struct iovec *iov, int cnt, const int *fds,
                            size_t nfds, int flags)
{
    ssize_t n;

    assert(!nfds || (channel_has_feature(c, CHANNEL_FEATURE_FD_PASS) &&
                     nfds <= CHANNEL_MAX_FDS));
    if (channel_is_shut_down(c, CHANNEL_SHUT_WRITE)) {
        return -EPIPE;
    }
    n = c->ops->writev(c, iov, cnt, nfds ? fds : NULL, nfds, flags);
    if (n < 0 && n != -EINTR && channel_is_shut_down(c, CHANNEL_SHUT_WRITE)) {
        n = -EPIPE;
    }
    return n;
}

ssize_t channel_writev(Channel *c, const struct iovec *iov, int cnt, int flags)
{
    return channel_writev_full(c, iov, cnt, NULL, 0, flags);
}

/* ---- all of it ---- */

/* Drops leading empty entries: a 0-byte transfer would read as EOF. */
static void iov_skip_empty(struct iovec **v, int *cnt)
{
    while (*cnt > 0 && !(*v)->iov_len) {
        (*v)++;
        (*cnt)--;
    }
}

/* A copy of @iov that the loops below may advance (the caller's stays as it was). */
static struct iovec *iov_copy(const struct iovec *iov, int cnt, struct iovec *local,
                              int nlocal)
{
    struct iovec *v = cnt <= nlocal ? local : g_new(struct iovec, cnt);

    memcpy(v, iov, cnt * sizeof(*iov));
    return v;
}

int channel_readv_all(Channel *c, const struct iovec *iov, int cnt)
{
    struct iovec local[256];     /* a QEMUFile flush has up to 256: no malloc per flush */
    struct iovec *copy = iov_copy(iov, cnt, local, ARRAY_SIZE(local));
    struct iovec *v = copy;
    bool started = false;
    int ret = 0;

    iov_skip_empty(&v, &cnt);
    while (cnt > 0) {
        ssize_t n = channel_readv(c, v, MIN(cnt, IOV_MAX), 0);

        if (n == -EINTR) {
            continue;
        }
        if (n < 0) {
            ret = n;
            break;
        }
        if (n == 0) {
            ret = started ? -EPIPE : 1;
            break;
        }
        started = true;
        iov_advance(&v, &cnt, n);
        iov_skip_empty(&v, &cnt);
    }
    if (copy != local) {
        g_free(copy);
    }
    return ret;
}

int channel_read_all(Channel *c, void *buf, size_t len)
{
    struct iovec iov = { .iov_base = buf, .iov_len = len };

    return channel_readv_all(c, &iov, 1);
}

int channel_writev_all_fds(Channel *c, const struct iovec *iov, int cnt, const int *fds,
                           size_t nfds)
{
    struct iovec local[256];     /* a QEMUFile flush has up to 256: no malloc per flush */
    struct iovec *copy = iov_copy(iov, cnt, local, ARRAY_SIZE(local));
    struct iovec *v = copy;
    int ret = 0;

    iov_skip_empty(&v, &cnt);
    while (cnt > 0) {
        ssize_t n = channel_writev_full(c, v, MIN(cnt, IOV_MAX), fds, nfds, 0);

        if (n == -EINTR) {
            continue;
        }
        if (n < 0) {
            ret = n;
            break;
        }
        /* The fds went with the first bytes. */
        nfds = 0;
        iov_advance(&v, &cnt, n);
        iov_skip_empty(&v, &cnt);
    }
    if (copy != local) {
        g_free(copy);
    }
    return ret;
}

int channel_writev_all(Channel *c, const struct iovec *iov, int cnt)
{
    return channel_writev_all_fds(c, iov, cnt, NULL, 0);
}

int channel_write_all(Channel *c, const void *buf, size_t len)
{
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

    return channel_writev_all(c, &iov, 1);
}

/* ---- positional ---- */

int64_t channel_seek(Channel *c, int64_t off, int whence)
{
    int64_t pos;

    if (!c->ops->seek) {
        return -ESPIPE;
    }
    if (whence == SEEK_CUR) {
        /* Relative to the next byte a read returns: the first one read ahead. */
        pos = c->ops->seek(c, 0, SEEK_CUR);
        if (pos < 0 || off == 0) {
            return pos < 0 ? pos : pos - (int64_t)ahead_pending(c);
        }
        off += pos - (int64_t)ahead_pending(c);
        whence = SEEK_SET;
    }
    pos = c->ops->seek(c, off, whence);
    /* Only a seek that happened makes what was read ahead stale. */
    if (pos >= 0) {
        c->ahead_pos = c->ahead_len = 0;
    }
    return pos;
}

ssize_t channel_preadv(Channel *c, const struct iovec *iov, int cnt, uint64_t off)
{
    return c->ops->preadv ? c->ops->preadv(c, iov, cnt, off) : -ESPIPE;
}

ssize_t channel_pwritev(Channel *c, const struct iovec *iov, int cnt, uint64_t off)
{
    return c->ops->pwritev ? c->ops->pwritev(c, iov, cnt, off) : -ESPIPE;
}

/* ---- for rows that wait in poll() ---- */

int channel_wait_fd(int fd, short events, int wake_fd)
{
    for (;;) {
        struct pollfd pfd[2] = { { .fd = fd, .events = events },
                                 { .fd = wake_fd, .events = POLLIN } };
        int r = poll(pfd, wake_fd >= 0 ? 2 : 1, -1);

        if (r < 0) {
            if (errno == EINTR) {
                return -EINTR;
            }
            return -errno;
        }
        if (wake_fd >= 0 && pfd[1].revents) {
            return -ESHUTDOWN;
        }
        if (pfd[0].revents) {
            /* POLLHUP/POLLERR too: the next transfer reports them. */
            return 0;
        }
    }
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The command/pipe row: exec:'s child over pipes, and any other fd that
 * shutdown(2) cannot wake (an fd: pipe or FIFO, a character device).
 *
 * Why it waits in poll(): shutdown(2) means nothing to a pipe, so a
 * thread blocked in write() on a command that stopped reading would stay
 * blocked until the command exits (migrate_cancel on exec: used to wait
 * for it). So a thread waits only in poll(), on the fd plus one eventfd
 * per direction, which shutdown signals and never drains. Two ways:
 *  - ends that are ours alone (exec:'s, a FIFO reopened through /proc)
 *    are non-blocking: a transfer is tried first (no extra syscall while
 *    the pipe has room), and only on EAGAIN does the thread poll. One
 *    poll() per time the pipe fills up, not one per page.
 *  - a descriptor whose open file description another process may share
 *    (an fd: pipe, terminal or device we could not reopen) keeps its
 *    blocking mode, which belongs to that description and so to the other
 *    holder too: the thread polls first, then reads what is there or
 *    writes at most PIPE_BUF bytes, which a pipe that polled writable
 *    takes without blocking.
 *
 * The child: closing the channel closes our ends (the command sees EOF or
 * EPIPE) and reaps the child when it exits, through a GLib child watch on
 * the main context, never with a blocking waitpid().
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "channel-row.h"
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/wait.h>

typedef struct PipeChannel {
    Channel base;
    /* Read-only while the channel lives; -1 for a direction it lacks. */
    int rfd;
    int wfd;                    /* may equal rfd (a read-write character device) */
    int wake_rd;                /* eventfd: signalled by a read shutdown, never drained */
    int wake_wr;                /* same, for writes */
    bool own;                   /* the ends are non-blocking and ours alone (see above) */
    GPid child;                 /* exec:, 0 otherwise; reaped after close */
    char *desc;
} PipeChannel;

/* Non-blocking: whether @fd is ready for the direction, or -ESHUTDOWN / -errno. */
static int pipe_ready_now(int fd, short events, int wake)
{
    struct pollfd pfd[2] = { { .fd = fd, .events = events }, { .fd = wake, .events = POLLIN } };
    int r = poll(pfd, 2, 0);

    if (r < 0) {
        return -errno;
    }
    if (pfd[1].revents) {
        return -ESHUTDOWN;
    }
    return pfd[0].revents ? 0 : -EAGAIN;
}

/*
 * One transfer on @fd (see the top of the file for the two ways). A
 * wake-up by shutdown reads as EOF, or as EPIPE for a write, as a
 * socket's would.
 */
static ssize_t pipe_xfer(PipeChannel *p, int fd, int wake, bool write, const struct iovec *iov,
                         int cnt, int flags)
{
    struct iovec capped[IOV_MAX];
    bool poll_first = !p->own;

    if (fd < 0) {
        return -EBADF;
    }
    if (write && !p->own) {
        /* A shared blocking end: no more than a writable pipe surely takes. */
        size_t left = PIPE_BUF;
        int n = 0;

        for (int i = 0; i < cnt && n < IOV_MAX && left; i++) {
            capped[n] = iov[i];
            capped[n].iov_len = MIN(iov[i].iov_len, left);
            left -= capped[n++].iov_len;
        }
        iov = capped;
        cnt = n;
    }
    for (;;) {
        ssize_t n;
        int r;

        if (poll_first) {
            r = flags & CHANNEL_NONBLOCK ? pipe_ready_now(fd, write ? POLLOUT : POLLIN, wake)
                                         : channel_wait_fd(fd, write ? POLLOUT : POLLIN, wake);
            if (r == -ESHUTDOWN) {
                return write ? -EPIPE : 0;
            }
            if (r < 0) {
                return r;
            }
        }
        /* SIGPIPE is ignored by the emulator (and the tests): EPIPE comes back. */
        n = write ? writev(fd, iov, cnt) : readv(fd, iov, cnt);
        if (n >= 0) {
            return n;
        }
        if (errno != EAGAIN) {
            return -errno;
        }
        if (flags & CHANNEL_NONBLOCK) {
            return -EAGAIN;
        }
        poll_first = true;
    }
}

static ssize_t pipe_readv(Channel *c, const struct iovec *iov, int cnt, int *fds, size_t *nfds,
                          int flags)
{
    PipeChannel *p = (PipeChannel *)c;

    return pipe_xfer(p, p->rfd, p->wake_rd, false, iov, cnt, flags);
}

static ssize_t pipe_writev(Channel *c, const struct iovec *iov, int cnt, const int *fds,
                           size_t nfds, int flags)
{
    PipeChannel *p = (PipeChannel *)c;

    return pipe_xfer(p, p->wfd, p->wake_wr, true, iov, cnt, flags);
}

static void pipe_shutdown(Channel *c, ChannelShutdown how)
{
    PipeChannel *p = (PipeChannel *)c;
    uint64_t one = 1;

    /* An eventfd never blocks a write of 1 unless it would overflow 2^64-2. */
    if ((how & CHANNEL_SHUT_READ) && p->wake_rd >= 0) {
        ssize_t n = write(p->wake_rd, &one, sizeof(one));
        (void)n;
    }
    if ((how & CHANNEL_SHUT_WRITE) && p->wake_wr >= 0) {
        ssize_t n = write(p->wake_wr, &one, sizeof(one));
        (void)n;
    }
}

static void pipe_child_exited(GPid pid, gint status, gpointer data)
{
    g_spawn_close_pid(pid);
}

static int pipe_close(Channel *c)
{
    PipeChannel *p = (PipeChannel *)c;
    int ret = 0;

    if (p->rfd >= 0 && close(p->rfd) < 0) {
        ret = -errno;
    }
    if (p->wfd >= 0 && p->wfd != p->rfd && close(p->wfd) < 0 && !ret) {
        ret = -errno;
    }
    if (p->wake_rd >= 0) {
        close(p->wake_rd);
    }
    if (p->wake_wr >= 0) {
        close(p->wake_wr);
    }
    if (p->child > 0) {
        int status;

        /*
         * Never wait: a command that ignores the EOF we just gave it must
         * not hold up whoever dropped the last reference (the main loop).
         */
        if (waitpid(p->child, &status, WNOHANG) == 0) {
            g_child_watch_add(p->child, pipe_child_exited, NULL);
        }
    }
    g_free(p->desc);
    return ret;
}

static int pipe_fd(Channel *c)
{
    PipeChannel *p = (PipeChannel *)c;

    return p->rfd >= 0 ? p->rfd : p->wfd;
}

static char *pipe_describe(Channel *c)
{
    return g_strdup(((PipeChannel *)c)->desc);
}

static const ChannelOps pipe_ops = {
    .kind = "pipe",
    .features = 0,
    .readv = pipe_readv,
    .writev = pipe_writev,
    .shutdown = pipe_shutdown,
    .close = pipe_close,
    .fd = pipe_fd,
    .describe = pipe_describe,
};

/*
 * The row over @rfd/@wfd (taken on success only), @own: non-blocking ends
 * that are ours alone. NULL with @errp set if a wake eventfd cannot be
 * made (without it a direction could not be woken).
 */
static Channel *pipe_channel_new(int rfd, int wfd, bool own, GPid child, char *desc,
                                 Error **errp)
{
    int wake_rd = rfd >= 0 ? eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) : -1;
    int wake_wr = wfd >= 0 ? eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) : -1;
    PipeChannel *p;

    if ((rfd >= 0 && wake_rd < 0) || (wfd >= 0 && wake_wr < 0)) {
        error_setg_errno(errp, errno, "cannot create an eventfd for %s", desc);
        if (wake_rd >= 0) {
            close(wake_rd);
        }
        if (wake_wr >= 0) {
            close(wake_wr);
        }
        g_free(desc);
        return NULL;
    }
    p = g_new0(PipeChannel, 1);
    p->rfd = rfd;
    p->wfd = wfd;
    p->own = own;
    p->child = child;
    p->desc = desc;
    p->wake_rd = wake_rd;
    p->wake_wr = wake_wr;
    channel_init(&p->base, &pipe_ops);
    return &p->base;
}

static void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);

    if (fl >= 0 && !(fl & O_NONBLOCK)) {
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    }
}

Channel *channel_pipe_new(int rfd, int wfd, const char *desc, Error **errp)
{
    return pipe_channel_new(rfd, wfd, false, 0, g_strdup(desc), errp);
}

Channel *channel_pipe_new_own(int rfd, int wfd, const char *desc, Error **errp)
{
    if (rfd >= 0) {
        set_nonblock(rfd);
    }
    if (wfd >= 0 && wfd != rfd) {
        set_nonblock(wfd);
    }
    return pipe_channel_new(rfd, wfd, true, 0, g_strdup(desc), errp);
}

Channel *channel_command_spawn(const char *cmd, bool to_child, Error **errp)
{
    char *argv[] = { (char *)"/bin/sh", (char *)"-c", (char *)cmd, NULL };
    g_autoptr(GError) gerr = NULL;
    int in_fd = -1, out_fd = -1, fd;
    Channel *ch;
    GPid child;

    if (!g_spawn_async_with_pipes(NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &child,
                                  to_child ? &in_fd : NULL, to_child ? NULL : &out_fd, NULL,
                                  &gerr)) {
        error_setg(errp, "failed to run '%s': %s", cmd, gerr->message);
        return NULL;
    }
    fd = to_child ? in_fd : out_fd;
    /*
     * A 64 KiB pipe makes the writer and the command trade the CPU every
     * 16 pages; 1 MiB (the unprivileged maximum) lets each side run for a
     * while. Best effort: the pipe still works at its default size.
     */
    fcntl(fd, F_SETPIPE_SZ, 1 << 20);
    /* Our end only (the child has the other one): O_NONBLOCK is ours alone. */
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    set_nonblock(fd);
    ch = pipe_channel_new(to_child ? -1 : fd, to_child ? fd : -1, true, child,
                          g_strdup_printf("command '%s'", cmd), errp);
    if (!ch) {
        /* The command sees EOF; it is reaped whenever it exits, never waited for. */
        close(fd);
        g_child_watch_add(child, pipe_child_exited, NULL);
    }
    return ch;
}

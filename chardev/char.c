/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The chardev core: the registry, the frontend API (include/chardev/char.h)
 * and the byte paths every backend shares. Input is read in the main loop;
 * output is written by whoever holds the BQL: to stdio and files
 * synchronously, to a socket or a pty through a queue that never blocks
 * the writer. What differs between backends comes through chr->ops
 * (char-internal.h): the backends (char-open.c, char-socket.c, char-pty.c,
 * char-mux.c) call into this file, never the other way round.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "chardev/char.h"
#include "char-internal.h"
#include <poll.h>
#include <termios.h>
#include <sys/socket.h>

/* Every chardev, in creation order (query-chardev's order). BQL. */
static GPtrArray *chardevs;
/* The terminal's settings before a UART took stdio raw, restored at exit. BQL. */
static bool stdio_tty_saved;
static struct termios stdio_saved_tty;

/* A socket client may leave this much unread output before it is dropped. */
#define CHR_OUT_MAX (32 * MiB)
/* A pty's reader may leave this much unread; what comes after is dropped. */
#define CHR_PTY_OUT_MAX (1 * MiB)

Chardev *qemu_chr_find(const char *id)
{
    for (guint i = 0; chardevs && i < chardevs->len; i++) {
        Chardev *chr = g_ptr_array_index(chardevs, i);
        if (!strcmp(chr->label, id)) {
            return chr;
        }
    }
    return NULL;
}

const char *qemu_chr_label(Chardev *chr)
{
    return chr->label;
}

Chardev *qemu_chr_nth(guint i)
{
    return chardevs && i < chardevs->len ? g_ptr_array_index(chardevs, i) : NULL;
}

bool qemu_chr_frontend_open(Chardev *chr)
{
    return chr->has_fe;
}


Chardev *chr_alloc(const char *label, const ChardevOps *ops)
{
    Chardev *chr = g_new0(Chardev, 1);

    chr->label = g_strdup(label);
    chr->ops = ops;
    chr->in_fd = chr->out_fd = chr->listen_fd = chr->log_fd = -1;
    if (!chardevs) {
        chardevs = g_ptr_array_new();
    }
    g_ptr_array_add(chardevs, chr);
    return chr;
}

void chr_send_event(Chardev *chr, ChardevEvent ev)
{
    if (chr->has_fe && chr->fe.event) {
        chr->fe.event(chr->fe.opaque, ev);
    }
}

void chr_close_msgfds(Chardev *chr)
{
    for (int i = 0; i < chr->nmsgfds; i++) {
        close(chr->msgfds[i]);
    }
    chr->nmsgfds = 0;
}

int qemu_chr_take_msgfd(Chardev *chr)
{
    if (chr->inner) {
        return qemu_chr_take_msgfd(chr->inner);
    }
    return chr->nmsgfds ? chr->msgfds[--chr->nmsgfds] : -1;
}

/* read() that keeps the fds a unix socket passes along (close-on-exec, as ours always are). */
static ssize_t chr_read_with_fds(Chardev *chr, uint8_t *buf, size_t want)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * CHR_MAX_MSGFDS)];
    } control;
    struct iovec iov = { .iov_base = buf, .iov_len = want };
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1,
        .msg_control = control.buf, .msg_controllen = sizeof(control.buf),
    };
    ssize_t n;

    if (chr->ops->kind != CHR_SOCKET) {
        return read(chr->in_fd, buf, want);
    }
    n = recvmsg(chr->in_fd, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0) {
        return n;
    }
    chr_close_msgfds(chr);
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        size_t nfds;

        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
            continue;
        }
        nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < nfds; i++) {
            int fd;

            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (chr->nmsgfds < CHR_MAX_MSGFDS) {
                chr->msgfds[chr->nmsgfds++] = fd;
            } else {
                close(fd);
            }
        }
    }
    return n;
}

static gboolean chr_input_ready(GIOChannel *ch, GIOCondition cond, gpointer opaque)
{
    Chardev *chr = opaque;
    uint8_t buf[4096];
    size_t want = sizeof(buf);
    ssize_t n;

    if (chr->has_fe && chr->fe.can_read) {
        want = MIN(want, chr->fe.can_read(chr->fe.opaque));
        if (!want) {
            /* Frontend is full; it calls qemu_chr_fe_accept_input() later. */
            chr->input_paused = true;
            chr->in_watch = 0;
            return G_SOURCE_REMOVE;
        }
    }
    n = chr_read_with_fds(chr, buf, want);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
        return G_SOURCE_CONTINUE;
    }
    if (n <= 0) {
        chr->in_watch = 0;
        /*
         * A socket's client left, a pty's last reader closed the slave
         * (EIO); stdin at EOF: stop watching so the loop does not spin.
         */
        if (chr->ops->hangup) {
            chr->ops->hangup(chr);
        }
        return G_SOURCE_REMOVE;
    }
    if (chr->has_fe && chr->fe.read) {
        chr->fe.read(chr->fe.opaque, buf, n);
    }
    return G_SOURCE_CONTINUE;
}

void chr_watch_input(Chardev *chr)
{
    GIOChannel *ch;

    /* A pty master without a reader only ever says HUP: the timer watches it instead. */
    if (chr->in_fd < 0 || chr->in_watch || (chr->ops->kind == CHR_PTY && !chr->connected)) {
        return;
    }
    ch = g_io_channel_unix_new(chr->in_fd);
    chr->in_watch = g_io_add_watch(ch, G_IO_IN | G_IO_HUP | G_IO_ERR, chr_input_ready, chr);
    g_io_channel_unref(ch);
}

void qemu_chr_fe_accept_input(Chardev *chr)
{
    if (chr->ops->accept_input) {
        chr->ops->accept_input(chr);
        return;
    }
    if (chr->input_paused) {
        chr->input_paused = false;
        chr_watch_input(chr);
    }
}

static void chr_opened_bh(void *opaque)
{
    Chardev *chr = opaque;

    if (chr->connected) {
        chr_send_event(chr, CHR_EVENT_OPENED);
    }
    chr_watch_input(chr);
}

void qemu_chr_fe_set_handlers(Chardev *chr, const CharFrontend *fe)
{
    if (chr->ops->add_frontend) {
        chr->ops->add_frontend(chr, fe);
        return;
    }
    chr->fe = *fe;
    chr->has_fe = true;
    if (chr->connected) {
        /*
         * The frontend must see OPENED (a QMP greeting) before any input:
         * read nothing until the bottom half has delivered it.
         */
        qemu_bh_schedule_oneshot(chr_opened_bh, chr);
    } else {
        chr_watch_input(chr);
    }
}

bool qemu_chr_fe_busy(Chardev *chr)
{
    return chr->ops->busy ? chr->ops->busy(chr) : chr->has_fe;
}

bool qemu_chr_is_stdio(Chardev *chr)
{
    return chr->ops->kind == CHR_STDIO;
}

/* Sends what is queued for a socket client or a pty's reader without blocking. */
static void chr_socket_flush(Chardev *chr)
{
    while (chr->outbuf->len && chr->out_fd >= 0) {
        ssize_t n = chr->ops->kind == CHR_PTY
                  ? write(chr->out_fd, chr->outbuf->data, chr->outbuf->len)
                  : send(chr->out_fd, chr->outbuf->data, chr->outbuf->len,
                         MSG_NOSIGNAL | MSG_DONTWAIT);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && errno == EAGAIN && chr->ops->peer_gone && chr->ops->peer_gone(chr)) {
            /*
             * A master whose reader left takes output until its buffer is
             * full and never says EIO; with input paused nothing else
             * would notice.
             */
            chr->ops->hangup(chr);
            break;
        }
        if (n < 0 && errno == EAGAIN) {
            break;
        }
        if (n <= 0 && chr->ops->kind == CHR_PTY) {
            /* The reader left between two writes: look for the next one. */
            chr->ops->hangup(chr);
            break;
        }
        if (n <= 0) {
            /* The peer vanished; stop writing to it, input will see EOF. */
            chr->out_fd = -1;
            g_byte_array_set_size(chr->outbuf, 0);
            break;
        }
        g_byte_array_remove_range(chr->outbuf, 0, n);
    }
}

static gboolean chr_socket_writable(GIOChannel *ch, GIOCondition cond, gpointer opaque)
{
    Chardev *chr = opaque;

    chr_socket_flush(chr);
    if (chr->outbuf->len && chr->out_fd >= 0) {
        return G_SOURCE_CONTINUE;
    }
    chr->out_watch = 0;
    /* Output drained: a frontend that stopped reading may take input again. */
    qemu_chr_fe_accept_input(chr);
    return G_SOURCE_REMOVE;
}

/* logfile=: a file, so a blocking write; a failing log is left, once, with a warning. */
static void chr_log_write(Chardev *chr, const void *buf, size_t len)
{
    size_t done = 0;

    while (done < len) {
        ssize_t n = write(chr->log_fd, (const uint8_t *)buf + done, len - done);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            warn_report("chardev '%s': writing its log failed: %s; no longer logging",
                        chr->label, n < 0 ? g_strerror(errno) : "short write");
            close(chr->log_fd);
            chr->log_fd = -1;
            return;
        }
        done += n;
    }
}

size_t qemu_chr_out_pending(Chardev *chr)
{
    if (chr->inner) {
        return qemu_chr_out_pending(chr->inner);
    }
    return chr->outbuf ? chr->outbuf->len : 0;
}

int qemu_chr_write_all(Chardev *chr, const void *buf, size_t len)
{
    size_t done = 0;

    if (chr->ops->write) {
        return chr->ops->write(chr, buf, len);
    }
    if (chr->log_fd >= 0) {
        chr_log_write(chr, buf, len);
    }
    if (!chr->connected && chr->ops->poll_reader && !chr->ops->poll_reader(chr)) {
        return len;             /* a pty without a reader: dropped, as QEMU 7.2 does */
    }
    if (!chr->connected || chr->out_fd < 0) {
        return len;             /* nobody listening: output is dropped */
    }
    if (chr->ops->kind == CHR_PTY && chr->outbuf->len + len > CHR_PTY_OUT_MAX) {
        /*
         * A reader that opened the slave and stopped reading must not stall
         * the guest's UART (the vCPU writes with the BQL held): drop.
         */
        return len;
    }
    if (chr->outbuf) {
        /*
         * Never block on a socket client: a client that stops reading would
         * otherwise stall whoever writes with the BQL held (monitors, the
         * UART, hence the whole VM). Queue, send what the socket takes now,
         * and give up on a client that lets too much pile up.
         */
        if (chr->outbuf->len + len > CHR_OUT_MAX) {
            warn_report("chardev '%s': client is not reading its output, disconnecting",
                        chr->label);
            g_byte_array_set_size(chr->outbuf, 0);
            chr->ops->hangup(chr);
            return -EPIPE;
        }
        g_byte_array_append(chr->outbuf, buf, len);
        chr_socket_flush(chr);
        if (chr->outbuf->len && chr->out_fd >= 0 && !chr->out_watch) {
            GIOChannel *ch = g_io_channel_unix_new(chr->out_fd);
            chr->out_watch = g_io_add_watch(ch, G_IO_OUT | G_IO_ERR | G_IO_HUP,
                                            chr_socket_writable, chr);
            g_io_channel_unref(ch);
        }
        return chr->out_fd >= 0 ? (int)len : -EPIPE;
    }
    while (done < len) {
        ssize_t n = write(chr->out_fd, (const uint8_t *)buf + done, len - done);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && errno == EAGAIN) {
            struct pollfd pfd = { .fd = chr->out_fd, .events = POLLOUT };
            poll(&pfd, 1, 1000);
            continue;
        }
        if (n <= 0) {
            return n < 0 ? -errno : -EPIPE;
        }
        done += n;
    }
    return len;
}

void qemu_chr_set_raw(Chardev *chr)
{
    struct termios tty;

    if (chr->inner) {
        qemu_chr_set_raw(chr->inner);
        return;
    }
    if (chr->ops->kind != CHR_STDIO || !isatty(0) || tcgetattr(0, &tty) < 0) {
        return;
    }
    if (!stdio_tty_saved) {
        stdio_saved_tty = tty;
        stdio_tty_saved = true;
    }
    /* No echo or line editing, but keep ISIG so Ctrl-C still stops us. */
    tty.c_iflag &= ~(IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR | IGNCR | ICRNL | IXON);
    tty.c_oflag |= OPOST;
    tty.c_lflag &= ~(ECHO | ECHONL | ICANON | IEXTEN);
    tty.c_cflag &= ~(CSIZE | PARENB);
    tty.c_cflag |= CS8;
    tty.c_cc[VMIN] = 1;
    tty.c_cc[VTIME] = 0;
    tcsetattr(0, TCSANOW, &tty);
}

void qemu_chr_cleanup_all(void)
{
    if (stdio_tty_saved) {
        tcsetattr(0, TCSANOW, &stdio_saved_tty);
    }
    for (guint i = 0; chardevs && i < chardevs->len; i++) {
        Chardev *chr = g_ptr_array_index(chardevs, i);
        if (chr->unix_path) {
            unlink(chr->unix_path);
        }
    }
}

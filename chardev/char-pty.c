/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The pty backend (-serial pty, -chardev pty): a pseudo-terminal whose
 * slave a user opens (screen, minicom, libvirt's "virsh console").
 *
 * Connected means "someone has the slave open": the master then polls
 * without POLLHUP. While nobody does, output is dropped (QEMU 7.2 does
 * the same: a guest must never stall on a console nobody reads), input
 * is not watched (the master would report HUP forever), and a timer
 * looks for a reader once a second, as QEMU's does; a write also looks,
 * so that the first line after a reader arrives is not lost.
 *
 * We open the slave once, to put it in raw mode, and close it at once:
 * holding it ourselves would make the master look connected forever.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "char-internal.h"
#include <glib-unix.h>
#include <poll.h>
#include <termios.h>

static gboolean pty_timer_cb(gpointer opaque);
static void pty_hangup(Chardev *chr);
static bool pty_hung_up(Chardev *chr);
static bool pty_poll_reader(Chardev *chr);

static const ChardevOps pty_ops = {
    .kind = CHR_PTY,
    .hangup = pty_hangup,
    .peer_gone = pty_hung_up,
    .poll_reader = pty_poll_reader,
};

static void pty_opened_bh(void *opaque)
{
    Chardev *chr = opaque;

    if (chr->connected) {
        chr_send_event(chr, CHR_EVENT_OPENED);
    }
}

static void pty_start_timer(Chardev *chr)
{
    if (!chr->pty_timer) {
        chr->pty_timer = g_timeout_add_seconds(1, pty_timer_cb, chr);
    }
}

/* Whether nobody has the slave open (the master polls HUP). */
static bool pty_hung_up(Chardev *chr)
{
    struct pollfd pfd = { .fd = chr->in_fd, .events = POLLIN };

    return poll(&pfd, 1, 0) < 0 || (pfd.revents & POLLHUP);
}

/* Whether a reader has the slave open now (connecting the chardev if one came). */
static bool pty_poll_reader(Chardev *chr)
{
    if (chr->connected) {
        return true;
    }
    if (pty_hung_up(chr)) {
        return false;
    }
    chr->connected = true;
    if (chr->pty_timer) {
        g_source_remove(chr->pty_timer);
        chr->pty_timer = 0;
    }
    chr_watch_input(chr);
    /* Not from here: the caller may be a frontend in the middle of a write. */
    qemu_bh_schedule_oneshot(pty_opened_bh, chr);
    return true;
}

static gboolean pty_timer_cb(gpointer opaque)
{
    Chardev *chr = opaque;

    if (chr->connected) {
        chr->pty_timer = 0;
        return G_SOURCE_REMOVE;
    }
    /* pty_poll_reader removes this timer (by id) when a reader came. */
    return pty_poll_reader(chr) ? G_SOURCE_REMOVE : G_SOURCE_CONTINUE;
}

/* The slave's reader went away (read or write failed): drop output, look for the next. */
static void pty_hangup(Chardev *chr)
{
    if (chr->in_watch) {
        g_source_remove(chr->in_watch);
        chr->in_watch = 0;
    }
    if (chr->out_watch) {
        g_source_remove(chr->out_watch);
        chr->out_watch = 0;
    }
    g_byte_array_set_size(chr->outbuf, 0);
    chr->input_paused = false;
    if (chr->connected) {
        chr->connected = false;
        chr_send_event(chr, CHR_EVENT_CLOSED);
    }
    pty_start_timer(chr);
}

static bool pty_slave_set_raw(const char *path, Error **errp)
{
    struct termios tty;
    int fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC);

    if (fd < 0) {
        error_setg_errno(errp, errno, "Failed to open %s", path);
        return false;
    }
    if (tcgetattr(fd, &tty) == 0) {
        cfmakeraw(&tty);
        tcsetattr(fd, TCSAFLUSH, &tty);
    }
    close(fd);
    return true;
}

Chardev *chr_open_pty(const char *label, Error **errp)
{
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    char *path;
    Chardev *chr;

    if (master < 0) {
        error_setg_errno(errp, errno, "Failed to create PTY");
        return NULL;
    }
    if (grantpt(master) < 0 || unlockpt(master) < 0 || !(path = ptsname(master))) {
        error_setg_errno(errp, errno, "Failed to create PTY");
        close(master);
        return NULL;
    }
    if (!pty_slave_set_raw(path, errp)) {
        close(master);
        return NULL;
    }
    if (!g_unix_set_fd_nonblocking(master, true, NULL)) {
        error_setg_errno(errp, errno, "Failed to create PTY");
        close(master);
        return NULL;
    }
    chr = chr_alloc(label, &pty_ops);
    chr->in_fd = chr->out_fd = master;
    chr->outbuf = g_byte_array_new();
    chr->pty_path = g_strdup(path);
    /*
     * libvirt finds the slave by this exact line (QEMU's). QEMU 7.2 prints
     * it on stdout, at once even into a pipe: so do we.
     */
    printf("char device redirected to %s (label %s)\n", path, label);
    fflush(stdout);
    pty_start_timer(chr);
    return chr;
}

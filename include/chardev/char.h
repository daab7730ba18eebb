/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Character devices: the byte pipes behind -serial, -qmp, -monitor and
 * -chardev (stdio, null, file, unix/tcp sockets, pty, and a mux that lets
 * several frontends share one of them). A frontend (UART, monitor)
 * attaches handlers; input arrives in the main loop with the BQL held.
 * All functions need the BQL.
 */
#ifndef CHARDEV_CHAR_H
#define CHARDEV_CHAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum ChardevEvent {
    CHR_EVENT_OPENED,           /* a peer is connected (or the backend is ready) */
    CHR_EVENT_CLOSED,           /* the peer went away */
    CHR_EVENT_MUX_IN,           /* a mux gave this frontend the focus back (C-a c) */
    CHR_EVENT_MUX_OUT,          /* a mux moved the focus to another frontend */
} ChardevEvent;

typedef struct CharFrontend {
    /* How many bytes the frontend can take now; 0 pauses input. */
    size_t (*can_read)(void *opaque);
    void (*read)(void *opaque, const uint8_t *buf, size_t len);
    void (*event)(void *opaque, ChardevEvent event);
    void *opaque;
} CharFrontend;

/*
 * qemu_chr_new: create a chardev from a -serial/-qmp/-monitor style spec:
 * "stdio", "null", "none", "file:PATH", "unix:PATH[,server=on,wait=off]",
 * "tcp:HOST:PORT[,server=on,wait=off]", "pty", "mon:SPEC" (a mux of SPEC,
 * labelled @label, for the UART and a monitor; the caller adds the
 * monitor), or "chardev:ID" for an existing one.
 * Returns NULL for "none" without setting @errp.
 */
Chardev *qemu_chr_new(const char *label, const char *spec, Error **errp);
/* From -chardev BACKEND,id=ID,... options. */
Chardev *qemu_chr_new_from_opts(QemuOpts *opts, Error **errp);
Chardev *qemu_chr_find(const char *id);
const char *qemu_chr_label(Chardev *chr);
/* For query-chardev: the @i'th chardev (NULL past the last), in creation order. */
Chardev *qemu_chr_nth(guint i);
/* QEMU's "filename": "file", "null", "stdio", "[disconnected:]unix:P[,server=on]", ... */
char *qemu_chr_filename(Chardev *chr);
/*
 * One of the file descriptors that came (SCM_RIGHTS, unix sockets) with
 * the bytes the frontend is handling now, or -1; the caller owns it.
 */
int qemu_chr_take_msgfd(Chardev *chr);
/* Whether a device (or monitor) reads and writes it. */
bool qemu_chr_frontend_open(Chardev *chr);

/* Attach @fe; if a peer is already connected the frontend gets OPENED soon. */
void qemu_chr_fe_set_handlers(Chardev *chr, const CharFrontend *fe);
/* True if the chardev takes no more frontends (one per chardev, a few on a mux). */
bool qemu_chr_fe_busy(Chardev *chr);
/* Writes everything (blocking) if a peer is connected; returns bytes or -errno. */
int qemu_chr_write_all(Chardev *chr, const void *buf, size_t len);
/* Output queued for a slow socket client (frontends pause input above a limit). */
size_t qemu_chr_out_pending(Chardev *chr);
/* Drops the connected client of a socket chardev (it may reconnect). */
void qemu_chr_disconnect(Chardev *chr);
/* Resume input after a frontend's can_read returned 0. */
void qemu_chr_fe_accept_input(Chardev *chr);
/* Raw terminal mode for stdio when a guest UART owns it. */
void qemu_chr_set_raw(Chardev *chr);
bool qemu_chr_is_stdio(Chardev *chr);

/* Restores the terminal; called at exit. */
void qemu_chr_cleanup_all(void);

#endif

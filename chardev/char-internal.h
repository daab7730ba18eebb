/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to chardev/: the Chardev instance, the hooks each kind of
 * backend gives the core (ChardevOps), and what char.c offers the
 * backends. The backends call the core; the core reaches a backend only
 * through its ops. Everything here runs in the main loop or with the BQL
 * held (include/chardev/char.h).
 */
#ifndef CHARDEV_CHAR_INTERNAL_H
#define CHARDEV_CHAR_INTERNAL_H

#include "chardev/char.h"
#include "qemu/option.h"

#define CHR_MAX_MSGFDS 16

typedef enum ChardevKind {
    CHR_NULL,
    CHR_STDIO,
    CHR_FILE,
    CHR_SOCKET,
    CHR_PTY,
    CHR_MUX,
} ChardevKind;

typedef struct MuxState MuxState;

/*
 * What one kind of backend does differently; a NULL hook means the
 * core's default. One static table per kind, in the backend's file.
 */
typedef struct ChardevOps {
    ChardevKind kind;
    /*
     * The peer went away (input at EOF or failed, or a socket client let
     * too much output pile up): a socket closes its client, a pty looks
     * for the next reader. NULL: input just stops being watched (stdin).
     */
    void (*hangup)(Chardev *chr);
    /* A pty's queued write would block: whether its reader left without an EIO. */
    bool (*peer_gone)(Chardev *chr);
    /*
     * Before output while not connected: whether a reader has come now
     * (connecting the chardev if so). NULL: output waits for connected.
     */
    bool (*poll_reader)(Chardev *chr);
    /*
     * A mux stands between its frontends and chr->inner: writing,
     * attaching a frontend, resuming input and "busy" are its own.
     */
    int (*write)(Chardev *chr, const void *buf, size_t len);
    void (*add_frontend)(Chardev *chr, const CharFrontend *fe);
    void (*accept_input)(Chardev *chr);
    bool (*busy)(Chardev *chr);
} ChardevOps;

/* Every field: BQL (main loop). */
struct Chardev {
    char *label;
    const ChardevOps *ops;
    /*
     * The chardev this one reads and writes through (a mux's backend),
     * whose fds, queue and terminal are the ones that count; NULL for
     * the others. Set once by the mux when it is created.
     */
    Chardev *inner;
    int in_fd;                  /* -1 when there is nothing to read */
    int out_fd;                 /* -1 when output is dropped */
    bool connected;             /* a peer reads: socket client, pty slave open */
    guint in_watch;
    CharFrontend fe;
    bool has_fe;
    bool input_paused;

    /* Sockets. */
    bool server;
    int listen_fd;
    guint listen_watch;
    char *desc;                 /* "unix:/path", "tcp:host:port" or "fd:N" for messages */
    GByteArray *outbuf;         /* output not yet taken by the peer (sockets, pty) */
    guint out_watch;
    char *unix_path;            /* unlinked when we created it */
    /*
     * File descriptors that came (SCM_RIGHTS) with the last read of a unix
     * socket: the frontend takes them while it handles those bytes (QMP's
     * getfd); what it leaves is closed at the next read. Main loop.
     */
    int msgfds[CHR_MAX_MSGFDS];
    int nmsgfds;

    /* pty: the slave's path, and the timer that looks for a reader while none. */
    char *pty_path;
    guint pty_timer;

    /* mux: the frontends sharing one backend (char-mux.c). */
    MuxState *mux;

    /*
     * logfile=: a copy of every byte the backend is given, read or not
     * (libvirt's <log file=...>, virtlogd's fd set); -1 without. Written
     * by qemu_chr_write_all's callers' thread (the BQL holder).
     */
    int log_fd;
};

/* char.c */
Chardev *chr_alloc(const char *label, const ChardevOps *ops);
void chr_watch_input(Chardev *chr);
void chr_send_event(Chardev *chr, ChardevEvent ev);
/* Closes the fds a unix socket's last read brought that the frontend left. */
void chr_close_msgfds(Chardev *chr);

/* char-socket.c */
typedef struct SocketSpec {
    const char *path;           /* unix */
    const char *host, *port;    /* tcp */
    const char *fd;             /* inherited: listening if server, else connected */
    bool server;
    bool wait;
} SocketSpec;
Chardev *chr_open_socket(const char *label, const SocketSpec *ss, Error **errp);
/* server=, wait= (wait only matters for a server); a legacy spec is a client by default. */
bool socket_spec_from_opts(QemuOpts *opts, SocketSpec *ss, bool default_server, Error **errp);
/* QEMU's name for its address: "unix:P", "tcp:H:P", fd-passed ones by what they are bound to. */
char *chr_socket_address(Chardev *chr);

/* char-pty.c */
Chardev *chr_open_pty(const char *label, Error **errp);

/* char-mux.c: a chardev that lets several frontends share @be, QEMU's Ctrl-A escapes. */
Chardev *chr_mux_new(const char *label, Chardev *be, Error **errp);

#endif

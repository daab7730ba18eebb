/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File descriptor sets (-add-fd) and the open() that understands them.
 *
 * A management program that may not let us open a file by name (libvirt
 * under SELinux, or with the file owned by another user) opens it itself,
 * passes the fd with "-add-fd fd=N,set=M" and names the file
 * "/dev/fdset/M". Every opener that goes through qemu_open() then gets a
 * duplicate of the fd of set M whose access mode is the one it asks for.
 */
#ifndef QEMU_FDSET_H
#define QEMU_FDSET_H

#include "qemu/typedefs.h"

#define QEMU_FDSET_PREFIX "/dev/fdset/"

/*
 * qemu_fdset_add_fd: put a duplicate of @fd, an fd our parent left open
 * for us, into set @set_id (created on first use; several fds may share
 * a set), with @opaque (may be NULL) as a note for the management
 * program. The set owns the duplicate (close-on-exec); @fd itself is left
 * alone. Refused: a negative set, stdin/stdout/stderr, an fd that is not
 * open, and one marked close-on-exec (none of ours can be inherited).
 */
bool qemu_fdset_add_fd(int64_t set_id, int fd, const char *opaque, Error **errp);

/* qemu_fdset_add_option: the argument of -add-fd, "fd=N,set=M[,opaque=STR]". */
bool qemu_fdset_add_option(const char *arg, Error **errp);

/* One fd of a set, as query-fdsets shows it. */
typedef struct QemuFdsetFd {
    int fd;                     /* ours, close-on-exec */
    char *opaque;               /* the management program's note, or NULL */
} QemuFdsetFd;

/*
 * qemu_fdset_take_fd: QMP add-fd. Puts @fd itself, one the monitor
 * received (so ours, close-on-exec), into set @set_id, or with
 * !@has_set_id into a new set with the lowest unused id. Returns the
 * set's id and owns @fd from then on; -1 with @errp set (and @fd still
 * the caller's) for a negative @set_id or @fd.
 */
int64_t qemu_fdset_take_fd(bool has_set_id, int64_t set_id, int fd, const char *opaque,
                           Error **errp);

/*
 * qemu_fdset_remove_fd: QMP remove-fd. Closes fd @fd of set @set_id, or
 * with !@has_fd every fd of it; a set left with no fd and no duplicate
 * open (see qemu_close()) is forgotten. Only an fd of the set is ever
 * closed: anything else fails with QEMU's "File descriptor named
 * 'fdset-id:M, fd:N' not found" (just 'fdset-id:M' without @has_fd).
 */
bool qemu_fdset_remove_fd(int64_t set_id, bool has_fd, int64_t fd, Error **errp);

/*
 * qemu_fdset_foreach: calls @fn for every set by increasing id, with its
 * fds oldest first (none for a set only kept by an open duplicate). It
 * runs under the sets' lock: @fn must not call qemu_fdset_* or qemu_open.
 */
typedef void QemuFdsetFunc(int64_t set_id, const QemuFdsetFd *fds, guint nfds, void *opaque);
void qemu_fdset_foreach(QemuFdsetFunc *fn, void *opaque);

/*
 * qemu_open: open(@path, @flags | O_CLOEXEC, @mode), except that
 * "/dev/fdset/M" gives a duplicate of the first fd of set M whose access
 * mode (O_RDONLY, O_WRONLY or O_RDWR) is exactly that of @flags, with
 * O_APPEND and O_NONBLOCK of @flags applied and the file truncated when
 * @flags would truncate it. Errors, as QEMU words them: "Could not open
 * '/dev/fdset/0': No such file or directory" for an empty or unknown set,
 * "...: Permission denied" when no fd of the set has that access mode.
 * Returns the new fd (close-on-exec), or -1 with @errp set and errno.
 */
int qemu_open(const char *path, int flags, mode_t mode, Error **errp);

/*
 * qemu_close: close(@fd), for an fd of qemu_open(). A duplicate of a set
 * keeps the set in use (listed, though its fds were all removed) until
 * it is closed here.
 */
int qemu_close(int fd);

/* qemu_fdsets_clear: close every fd of every set and forget the sets (tests). */
void qemu_fdsets_clear(void);

#endif

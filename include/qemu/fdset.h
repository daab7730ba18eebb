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

/* qemu_fdsets_clear: close every fd of every set and forget the sets (tests). */
void qemu_fdsets_clear(void);

#endif

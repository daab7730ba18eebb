/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The file a screendump writes.
 *
 * QEMU opens the target with O_TRUNC and unlinks it when a write fails:
 * a failure destroys what was there, even a device node (screendump onto
 * /dev/full removed the host's /dev/full), and a FIFO blocks the monitor
 * in open(). Here the target must be a new path or a regular file, checked
 * with (l)stat before anything is opened; the image goes to a file created
 * exclusively (O_EXCL) beside the target, so that the only thing a failure
 * ever unlinks is a file this call made, and a complete image is renamed
 * over the target in one step: the target is the old file or the new one,
 * never a truncated mix.
 *
 * Symlinks: the target is what the path resolves to, as for open(). A
 * symlink to a regular file stays a symlink and the file it names is
 * replaced; a dangling symlink, or one to anything else, is refused (we
 * would not know what we were creating).
 *
 * What a rename costs against QEMU's truncate: the target must be in a
 * directory we may create files in, and a replaced file is a new inode
 * (other hard links keep the old image). Its permission bits, and its
 * owner where we may set it, are copied from the old file.
 */
#include "qemu/osdep.h"
#include <glib/gstdio.h>
#include "qapi/error.h"
#include "screendump-file.h"

static bool screendump_refuse(const char *filename, const struct stat *st, Error **errp)
{
    if (S_ISREG(st->st_mode)) {
        return false;
    }
    error_setg(errp, "failed to open file '%s': it exists and is not a regular file",
               filename);
    return true;
}

/*
 * The path the image will be renamed to, and the old file's stat if there
 * is one (@exists). Only names are looked at here, nothing is opened.
 */
static char *screendump_resolve(const char *filename, struct stat *st, bool *exists,
                                Error **errp)
{
    char *target;

    *exists = false;
    if (lstat(filename, st) < 0) {
        if (errno == ENOENT) {
            return g_strdup(filename);
        }
        error_setg(errp, "failed to open file '%s': %s", filename, strerror(errno));
        return NULL;
    }
    if (!S_ISLNK(st->st_mode)) {
        if (screendump_refuse(filename, st, errp)) {
            return NULL;
        }
        *exists = true;
        return g_strdup(filename);
    }
    /* GLib allocates with malloc (since 2.46): realpath's result is g_free'd. */
    target = realpath(filename, NULL);
    if (!target) {
        error_setg(errp, "failed to open file '%s': %s", filename, strerror(errno));
        return NULL;
    }
    if (stat(target, st) < 0) {
        error_setg(errp, "failed to open file '%s': %s", filename, strerror(errno));
        g_free(target);
        return NULL;
    }
    if (screendump_refuse(filename, st, errp)) {
        g_free(target);
        return NULL;
    }
    *exists = true;
    return target;
}

bool screendump_file_open(ScreendumpFile *f, const char *filename, Error **errp)
{
    g_autofree char *dir = NULL;
    g_autofree char *base = NULL;
    struct stat st;
    bool exists;

    f->fd = -1;
    f->tmp = NULL;
    f->target = screendump_resolve(filename, &st, &exists, errp);
    if (!f->target) {
        return false;
    }
    dir = g_path_get_dirname(f->target);
    base = g_path_get_basename(f->target);
    /* Shortened so that a name near NAME_MAX still leaves room for ours. */
    f->tmp = g_strdup_printf("%s/.%.200s.XXXXXX", dir, base);
    /* O_CREAT | O_EXCL: the file is ours, and only ours is ever removed. */
    f->fd = g_mkstemp_full(f->tmp, O_WRONLY | O_CLOEXEC, 0666);
    if (f->fd < 0) {
        error_setg(errp, "failed to open file '%s': %s", filename, strerror(errno));
        g_clear_pointer(&f->tmp, g_free);
        g_clear_pointer(&f->target, g_free);
        return false;
    }
    if (exists) {
        /*
         * The old file's mode and owner, as O_TRUNC would have kept them;
         * an owner we may not give (not root) stays ours.
         */
        if (fchmod(f->fd, st.st_mode & 07777) < 0 ||
            (fchown(f->fd, st.st_uid, st.st_gid) < 0 && errno != EPERM)) {
            error_setg(errp, "failed to open file '%s': %s", filename, strerror(errno));
            screendump_file_abort(f);
            return false;
        }
    }
    return true;
}

bool screendump_file_commit(ScreendumpFile *f, Error **errp)
{
    struct stat st;
    int fd = f->fd;

    f->fd = -1;
    if (close(fd) < 0) {
        error_setg_errno(errp, errno, "Unable to write to file");
        screendump_file_abort(f);
        return false;
    }
    /*
     * Someone may have put a node at the target while we wrote: rename
     * would unlink it. Checked again here; what remains is a race with
     * another root process, which could unlink it itself.
     */
    if (lstat(f->target, &st) == 0 && screendump_refuse(f->target, &st, errp)) {
        screendump_file_abort(f);
        return false;
    }
    if (rename(f->tmp, f->target) < 0) {
        error_setg(errp, "failed to replace file '%s': %s", f->target, strerror(errno));
        screendump_file_abort(f);
        return false;
    }
    g_clear_pointer(&f->tmp, g_free);
    g_clear_pointer(&f->target, g_free);
    return true;
}

void screendump_file_abort(ScreendumpFile *f)
{
    if (f->fd >= 0) {
        close(f->fd);
        f->fd = -1;
    }
    if (f->tmp) {
        g_unlink(f->tmp);
    }
    g_clear_pointer(&f->tmp, g_free);
    g_clear_pointer(&f->target, g_free);
}

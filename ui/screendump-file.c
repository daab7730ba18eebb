/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The file a screendump writes.
 *
 * QEMU opens the target with O_TRUNC and unlinks it when a write fails:
 * a failure destroys what was there, even a device node (screendump onto
 * /dev/full removed the host's /dev/full), and a FIFO blocks the monitor
 * in open(). Here the target must be a new path or a regular file, checked
 * before anything is opened; the image goes to a file created exclusively
 * (O_EXCL) beside the target, so that the only thing a failure ever
 * unlinks is a file this call made, and a complete image is renamed over
 * the target in one step: the target is the old file or the new one,
 * never a truncated mix.
 *
 * No path is resolved in userspace. The target's directory is opened once
 * (O_PATH), by the kernel's walk and with its protections
 * (fs.protected_symlinks for a link on the way), and every later step
 * names the file relative to that descriptor: a directory on the path
 * swapped for a symlink after the open changes nothing. (realpath() and a
 * rename to its result let a user who planted /tmp/vm1.ppm -> /etc/shadow
 * have a root VMM replace /etc/shadow; readlink is not covered by
 * protected_symlinks, and the rename by nothing.)
 *
 * Symlinks as the last component are refused. Following one safely would
 * need the kernel to resolve it (it does, for open) and then a rename to
 * where it points, which is a path resolved in userspace again; writing
 * through it in place, as QEMU does, gives up the atomic replacement. A
 * client that wants the file a link names can name that file.
 *
 * An existing file owned by someone else in a sticky world-writable
 * directory (/tmp) is refused too, as fs.protected_regular=1 refuses
 * QEMU's open(O_CREAT): its owner would receive our image.
 *
 * What a rename costs against QEMU's truncate: the target must be in a
 * directory we may create files in, and a replaced file is a new inode
 * (other hard links keep the old image). Its permission bits, and its
 * owner where we may set it, are copied from the old file.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "screendump-file.h"

/*
 * Whether the existing entry @st of directory @dir (NULL: not looked at)
 * may be replaced; else @errp is set.
 */
static bool screendump_may_replace(const char *filename, const struct stat *st,
                                   const struct stat *dir, Error **errp)
{
    if (S_ISLNK(st->st_mode)) {
        error_setg(errp, "failed to open file '%s': it is a symbolic link "
                   "(name the file it points to)", filename);
        return false;
    }
    if (!S_ISREG(st->st_mode)) {
        error_setg(errp, "failed to open file '%s': it exists and is not a regular file",
                   filename);
        return false;
    }
    if (dir && (dir->st_mode & (S_ISVTX | S_IWOTH)) == (S_ISVTX | S_IWOTH) &&
        st->st_uid != geteuid() && st->st_uid != dir->st_uid) {
        error_setg(errp, "failed to open file '%s': it belongs to another user "
                   "in a sticky directory", filename);
        return false;
    }
    return true;
}

/* Splits @filename into its directory and last component; refuses "d/", "." and "..". */
static bool screendump_split(const char *filename, char **dir, char **base, Error **errp)
{
    const char *slash = strrchr(filename, '/');
    const char *name = slash ? slash + 1 : filename;

    if (!*name || !strcmp(name, ".") || !strcmp(name, "..")) {
        error_setg(errp, "failed to open file '%s': %s", filename, strerror(EISDIR));
        return false;
    }
    *dir = !slash ? g_strdup(".") : slash == filename ? g_strdup("/")
                                  : g_strndup(filename, slash - filename);
    *base = g_strdup(name);
    return true;
}

/* Creates our file beside the target: O_EXCL, so that it is ours alone. */
static bool screendump_create_tmp(ScreendumpFile *f, Error **errp)
{
    int err = EEXIST;

    for (int tries = 0; tries < 100 && err == EEXIST; tries++) {
        /* Shortened so that a name near NAME_MAX still leaves room for ours. */
        f->tmp = g_strdup_printf(".%.200s.%08x", f->base, g_random_int());
        f->fd = openat(f->dirfd, f->tmp,
                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (f->fd >= 0) {
            return true;
        }
        err = errno;
        g_clear_pointer(&f->tmp, g_free);
    }
    error_setg(errp, "failed to open file '%s': %s", f->filename, strerror(err));
    return false;
}

bool screendump_file_open(ScreendumpFile *f, const char *filename, Error **errp)
{
    g_autofree char *dir = NULL;
    struct stat st, dst;
    bool exists = true;

    *f = (ScreendumpFile) { .dirfd = -1, .fd = -1 };
    if (!screendump_split(filename, &dir, &f->base, errp)) {
        return false;
    }
    f->filename = g_strdup(filename);
    f->dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (f->dirfd < 0 || fstat(f->dirfd, &dst) < 0) {
        error_setg(errp, "failed to open file '%s': %s", filename, strerror(errno));
        screendump_file_abort(f);
        return false;
    }
    if (fstatat(f->dirfd, f->base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        if (errno != ENOENT) {
            error_setg(errp, "failed to open file '%s': %s", filename, strerror(errno));
            screendump_file_abort(f);
            return false;
        }
        exists = false;
    }
    if ((exists && !screendump_may_replace(filename, &st, &dst, errp)) ||
        !screendump_create_tmp(f, errp)) {
        screendump_file_abort(f);
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
    struct stat st, dst;
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
     * another process that may write in the directory, which could unlink
     * it itself. The rename replaces the entry, whatever it became; it
     * never writes through a link.
     */
    if (fstatat(f->dirfd, f->base, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        !screendump_may_replace(f->filename, &st,
                                fstat(f->dirfd, &dst) == 0 ? &dst : NULL, errp)) {
        screendump_file_abort(f);
        return false;
    }
    if (renameat(f->dirfd, f->tmp, f->dirfd, f->base) < 0) {
        error_setg(errp, "failed to replace file '%s': %s", f->filename, strerror(errno));
        screendump_file_abort(f);
        return false;
    }
    g_clear_pointer(&f->tmp, g_free);
    screendump_file_abort(f);
    return true;
}

void screendump_file_abort(ScreendumpFile *f)
{
    if (f->fd >= 0) {
        close(f->fd);
        f->fd = -1;
    }
    if (f->tmp) {
        unlinkat(f->dirfd, f->tmp, 0);
    }
    if (f->dirfd >= 0) {
        close(f->dirfd);
        f->dirfd = -1;
    }
    g_clear_pointer(&f->tmp, g_free);
    g_clear_pointer(&f->base, g_free);
    g_clear_pointer(&f->filename, g_free);
}

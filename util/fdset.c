/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File descriptor sets: -add-fd and QMP add-fd record fds by set number,
 * remove-fd closes them, query-fdsets lists them, and qemu_open() hands
 * out duplicates of them for "/dev/fdset/M". The duplicate shares
 * the open file description with the fd of the set (dup() semantics), so
 * its offset and its status flags (O_APPEND, O_NONBLOCK) are shared too:
 * an opener's flags are applied to the description, as open() would have
 * set them on a file of its own.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/cutils.h"
#include "qemu/fdset.h"
#include "qemu/option.h"

typedef struct Fdset {
    int64_t id;
    GArray *members;            /* of QemuFdsetFd, oldest first */
    GArray *dups;               /* of int: qemu_open()'s duplicates, until qemu_close() */
} Fdset;

/*
 * The sets, by increasing id. -add-fd fills them while the command line
 * is parsed, the QMP commands and qemu_open() use them later. All of
 * that is in the main loop today; fdsets_lock (guarding the array and
 * every set in it) keeps it correct should an opener run elsewhere.
 */
static GPtrArray *fdsets;
static GMutex fdsets_lock;

/* The status flags F_SETFL can change on Linux and open() would set. */
#define FDSET_SETTABLE_FLAGS (O_APPEND | O_NONBLOCK)

/* fdset_find, _get, _free_id, _release_if_unused: with fdsets_lock held. */
static Fdset *fdset_find(int64_t id)
{
    for (guint i = 0; fdsets && i < fdsets->len; i++) {
        Fdset *set = g_ptr_array_index(fdsets, i);
        if (set->id == id) {
            return set;
        }
    }
    return NULL;
}

static void fdset_member_clear(gpointer data)
{
    QemuFdsetFd *m = data;

    close(m->fd);
    g_free(m->opaque);
}

static void fdset_free(gpointer data)
{
    Fdset *set = data;

    g_array_free(set->members, TRUE);
    g_array_free(set->dups, TRUE);
    g_free(set);
}

/* Set @id, made (at its place in the order) if it does not exist. */
static Fdset *fdset_get(int64_t id)
{
    Fdset *set = fdset_find(id);
    guint pos = 0;

    if (set) {
        return set;
    }
    if (!fdsets) {
        fdsets = g_ptr_array_new_with_free_func(fdset_free);
    }
    while (pos < fdsets->len && ((Fdset *)g_ptr_array_index(fdsets, pos))->id < id) {
        pos++;
    }
    set = g_new0(Fdset, 1);
    set->id = id;
    set->members = g_array_new(FALSE, TRUE, sizeof(QemuFdsetFd));
    g_array_set_clear_func(set->members, fdset_member_clear);
    set->dups = g_array_new(FALSE, FALSE, sizeof(int));
    g_ptr_array_insert(fdsets, pos, set);
    return set;
}

/* The lowest id no set has (QEMU's choice for add-fd without fdset-id). */
static int64_t fdset_free_id(void)
{
    int64_t id = 0;

    for (guint i = 0; fdsets && i < fdsets->len; i++) {
        Fdset *set = g_ptr_array_index(fdsets, i);

        if (set->id != id) {
            break;      /* sorted: @id is a gap */
        }
        id++;
    }
    return id;
}

/* A set that holds no fd and has no duplicate out is of no use: forget it. */
static void fdset_release_if_unused(Fdset *set)
{
    if (!set->members->len && !set->dups->len) {
        g_ptr_array_remove(fdsets, set);
    }
}

bool qemu_fdset_add_fd(int64_t set_id, int fd, const char *opaque, Error **errp)
{
    QemuFdsetFd m = { .opaque = g_strdup(opaque) };
    int fdflags;

    if (set_id < 0) {
        error_setg(errp, "set=%" PRId64 ": a set is a non-negative number", set_id);
        goto fail;
    }
    if (fd <= STDERR_FILENO) {
        error_setg(errp, "fd=%d: cannot be a standard I/O stream", fd);
        goto fail;
    }
    fdflags = fcntl(fd, F_GETFD);
    if (fdflags < 0) {
        error_setg(errp, "fd=%d: not an open file descriptor", fd);
        goto fail;
    }
    /*
     * An inherited fd has FD_CLOEXEC clear (it survived exec), and we set
     * it on every fd we open: one with the flag set is ours, given by
     * mistake, and the set would close it under its real owner.
     */
    if (fdflags & FD_CLOEXEC) {
        error_setg(errp, "fd=%d: not inherited (it is close-on-exec), already in use", fd);
        goto fail;
    }
    m.fd = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
    if (m.fd < 0) {
        error_setg_errno(errp, errno, "fd=%d: cannot duplicate it", fd);
        goto fail;
    }
    g_mutex_lock(&fdsets_lock);
    g_array_append_val(fdset_get(set_id)->members, m);
    g_mutex_unlock(&fdsets_lock);
    return true;

fail:
    g_free(m.opaque);
    return false;
}

int64_t qemu_fdset_take_fd(bool has_set_id, int64_t set_id, int fd, const char *opaque,
                           Error **errp)
{
    QemuFdsetFd m = { .fd = fd };

    if (has_set_id && set_id < 0) {
        error_setg(errp, "Parameter 'fdset-id' expects a non-negative value");
        return -1;
    }
    if (fd < 0) {
        error_setg(errp, "No file descriptor supplied via SCM_RIGHTS");
        return -1;
    }
    m.opaque = g_strdup(opaque);
    g_mutex_lock(&fdsets_lock);
    if (!has_set_id) {
        set_id = fdset_free_id();
    }
    g_array_append_val(fdset_get(set_id)->members, m);
    g_mutex_unlock(&fdsets_lock);
    return set_id;
}

bool qemu_fdset_remove_fd(int64_t set_id, bool has_fd, int64_t fd, Error **errp)
{
    Fdset *set;
    bool done = false;

    g_mutex_lock(&fdsets_lock);
    set = fdset_find(set_id);
    if (set && !has_fd) {
        /* The whole set: done even when it holds no fd, as in QEMU. */
        g_array_set_size(set->members, 0);
        done = true;
    }
    for (guint i = 0; set && has_fd && i < set->members->len; i++) {
        if (g_array_index(set->members, QemuFdsetFd, i).fd == fd) {
            g_array_remove_index(set->members, i);      /* closes it */
            done = true;
            break;
        }
    }
    if (done) {
        fdset_release_if_unused(set);
    }
    g_mutex_unlock(&fdsets_lock);
    if (done) {
        return true;
    }
    if (has_fd) {
        error_setg(errp, "File descriptor named 'fdset-id:%" PRId64 ", fd:%" PRId64 "' not found",
                   set_id, fd);
    } else {
        error_setg(errp, "File descriptor named 'fdset-id:%" PRId64 "' not found", set_id);
    }
    return false;
}

void qemu_fdset_foreach(QemuFdsetFunc *fn, void *opaque)
{
    g_mutex_lock(&fdsets_lock);
    for (guint i = 0; fdsets && i < fdsets->len; i++) {
        Fdset *set = g_ptr_array_index(fdsets, i);

        fn(set->id, (const QemuFdsetFd *)set->members->data, set->members->len, opaque);
    }
    g_mutex_unlock(&fdsets_lock);
}

bool qemu_fdset_add_option(const char *arg, Error **errp)
{
    static const char *const known[] = { "fd", "set", "opaque", NULL };
    g_autoptr(QemuOpts) opts = qemu_opts_parse(arg, NULL, errp);
    uint64_t fd, set_id;

    if (!opts || !qemu_opts_check_known(opts, known, errp) ||
        !qemu_opt_get_number(opts, "fd", 0, &fd, errp) ||
        !qemu_opt_get_number(opts, "set", 0, &set_id, errp)) {
        return false;
    }
    if (!qemu_opt_has(opts, "fd")) {
        error_setg(errp, "Parameter 'fd' is missing");
        return false;
    }
    if (!qemu_opt_has(opts, "set")) {
        error_setg(errp, "Parameter 'set' is missing");
        return false;
    }
    if (fd > INT_MAX || set_id > INT64_MAX) {
        error_setg(errp, "fd or set out of range");
        return false;
    }
    return qemu_fdset_add_fd(set_id, fd, qemu_opt_get(opts, "opaque"), errp);
}

/*
 * Gives the duplicate what open(@flags) would have: its status flags, and
 * an empty file for O_TRUNC (or O_CREAT|O_EXCL, which asks for a new,
 * hence empty, file). open() ignores O_TRUNC on FIFOs and terminals, so
 * only a regular file is truncated.
 */
static bool fdset_apply_open_flags(int fd, int flags)
{
    int fl = fcntl(fd, F_GETFL);
    struct stat st;

    if (fl < 0 ||
        fcntl(fd, F_SETFL, (fl & ~FDSET_SETTABLE_FLAGS) | (flags & FDSET_SETTABLE_FLAGS)) < 0) {
        return false;
    }
    if ((flags & O_TRUNC) || (flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL)) {
        if (fstat(fd, &st) < 0 || (S_ISREG(st.st_mode) && ftruncate(fd, 0) < 0)) {
            return false;
        }
    }
    return true;
}

/*
 * The access mode must match exactly, not merely allow the request: a
 * set may hold a read-only and a read-write fd of one file, and a reader
 * must get the read-only one, never more access than it asked for.
 */
static int fdset_open_failed(const char *path, int err, Error **errp)
{
    error_setg_errno(errp, err, "Could not open '%s'", path);
    errno = err;
    return -1;
}

/* With fdsets_lock held. */
static int fdset_dup_matching(const char *path, int64_t id, int flags, Error **errp)
{
    Fdset *set = fdset_find(id);

    if (!set || !set->members->len) {
        return fdset_open_failed(path, ENOENT, errp);
    }
    for (guint i = 0; i < set->members->len; i++) {
        QemuFdsetFd *m = &g_array_index(set->members, QemuFdsetFd, i);
        int fl = fcntl(m->fd, F_GETFL);
        int dupfd;

        if (fl < 0 || (fl & O_ACCMODE) != (flags & O_ACCMODE)) {
            continue;
        }
        dupfd = fcntl(m->fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
        if (dupfd < 0 || !fdset_apply_open_flags(dupfd, flags)) {
            int saved = errno;

            if (dupfd >= 0) {
                close(dupfd);
            }
            return fdset_open_failed(path, saved, errp);
        }
        /* The set is in use while this is open: remove-fd keeps it listed. */
        g_array_append_val(set->dups, dupfd);
        return dupfd;
    }
    return fdset_open_failed(path, EACCES, errp);
}

int qemu_open(const char *path, int flags, mode_t mode, Error **errp)
{
    const char *set_str;
    int64_t id;
    int fd;

    if (strstart(path, QEMU_FDSET_PREFIX, &set_str)) {
        if (qemu_strtoi64(set_str, NULL, 10, &id) < 0 || id < 0) {
            error_setg(errp, "Could not parse fdset %s", path);
            errno = EINVAL;
            return -1;
        }
        g_mutex_lock(&fdsets_lock);
        fd = fdset_dup_matching(path, id, flags, errp);
        g_mutex_unlock(&fdsets_lock);
        return fd;
    }
    fd = open(path, flags | O_CLOEXEC, mode);
    return fd < 0 ? fdset_open_failed(path, errno, errp) : fd;
}

int qemu_close(int fd)
{
    g_mutex_lock(&fdsets_lock);
    for (guint i = 0; fdsets && i < fdsets->len; i++) {
        Fdset *set = g_ptr_array_index(fdsets, i);
        bool found = false;

        for (guint j = 0; j < set->dups->len && !found; j++) {
            if (g_array_index(set->dups, int, j) == fd) {
                g_array_remove_index_fast(set->dups, j);
                found = true;
            }
        }
        if (found) {
            fdset_release_if_unused(set);
            break;
        }
    }
    g_mutex_unlock(&fdsets_lock);
    return close(fd);
}

void qemu_fdsets_clear(void)
{
    g_mutex_lock(&fdsets_lock);
    g_clear_pointer(&fdsets, g_ptr_array_unref);
    g_mutex_unlock(&fdsets_lock);
}

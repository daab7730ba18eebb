/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for util/fdset.c: -add-fd takes only inherited fds and
 * numeric sets; qemu_open("/dev/fdset/M") gives a duplicate of the fd of
 * set M with exactly the requested access mode (checked for every mix of
 * modes in a set and every request), applies O_APPEND and O_TRUNC as
 * open() would, and fails with QEMU's errors for an unknown set or mode.
 * add-fd's sets (ids chosen or given), remove-fd (which closes only fds
 * of the named set) and a set kept while a duplicate of it is open.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/fdset.h"

static char *tmpdir;

static const int modes[] = { O_RDONLY, O_WRONLY, O_RDWR };

/* A file of tmpdir opened as an inherited fd would be: no close-on-exec. */
static int open_inherited(const char *name, int flags)
{
    g_autofree char *path = g_build_filename(tmpdir, name, NULL);
    int fd = open(path, flags | O_CREAT, 0600);

    g_assert_cmpint(fd, >, STDERR_FILENO);
    return fd;
}

static void assert_error(Error *err, const char *want)
{
    g_assert_nonnull(err);
    if (!strstr(error_get_pretty(err), want)) {
        g_error("error '%s' lacks '%s'", error_get_pretty(err), want);
    }
    error_free(err);
}

static bool same_file(int a, int b)
{
    struct stat sa, sb;

    g_assert_cmpint(fstat(a, &sa), ==, 0);
    g_assert_cmpint(fstat(b, &sb), ==, 0);
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static void test_option(void)
{
    int fd = open_inherited("opt", O_RDWR);
    g_autofree char *good = g_strdup_printf("fd=%d,set=3,opaque=rdwr:/a,,b", fd);
    g_autofree char *no_set = g_strdup_printf("fd=%d", fd);
    g_autofree char *bad_set = g_strdup_printf("fd=%d,set=x", fd);
    g_autofree char *neg_set = g_strdup_printf("fd=%d,set=-1", fd);
    g_autofree char *unknown = g_strdup_printf("fd=%d,set=1,flags=3", fd);
    int cloexec = open_inherited("cloexec", O_RDWR | O_CLOEXEC);
    g_autofree char *ours = g_strdup_printf("fd=%d,set=1", cloexec);
    Error *err = NULL;
    int got;

    g_assert_true(qemu_fdset_add_option(good, &error_abort));
    /* The set holds its own duplicate: the caller may close its fd. */
    close(fd);
    got = qemu_open("/dev/fdset/3", O_RDWR, 0, &error_abort);
    g_assert_cmpint(fcntl(got, F_GETFD) & FD_CLOEXEC, ==, FD_CLOEXEC);
    close(got);

    g_assert_false(qemu_fdset_add_option("set=1", &err));
    assert_error(err, "'fd' is missing");
    err = NULL;
    g_assert_false(qemu_fdset_add_option(no_set, &err));
    assert_error(err, "'set' is missing");
    err = NULL;
    g_assert_false(qemu_fdset_add_option(bad_set, &err));
    assert_error(err, "'set'");
    err = NULL;
    g_assert_false(qemu_fdset_add_option(neg_set, &err));
    assert_error(err, "'set'");
    err = NULL;
    g_assert_false(qemu_fdset_add_option(unknown, &err));
    assert_error(err, "'flags'");
    err = NULL;
    g_assert_false(qemu_fdset_add_option("fd=1,set=1", &err));
    assert_error(err, "fd=1: cannot be a standard I/O stream");
    err = NULL;
    /* fd was closed above: no longer open. */
    g_assert_false(qemu_fdset_add_fd(1, fd, NULL, &err));
    assert_error(err, "not an open file descriptor");
    err = NULL;
    g_assert_false(qemu_fdset_add_option(ours, &err));
    assert_error(err, "close-on-exec");
    close(cloexec);
    qemu_fdsets_clear();
}

static void test_errors(void)
{
    int ro = open_inherited("errors", O_RDONLY);
    Error *err = NULL;

    g_assert_cmpint(qemu_open("/dev/fdset/0", O_WRONLY, 0, &err), ==, -1);
    g_assert_cmpint(errno, ==, ENOENT);
    assert_error(err, "Could not open '/dev/fdset/0': No such file or directory");
    err = NULL;

    g_assert_true(qemu_fdset_add_fd(0, ro, NULL, &error_abort));
    close(ro);
    g_assert_cmpint(qemu_open("/dev/fdset/0", O_WRONLY | O_APPEND, 0, &err), ==, -1);
    g_assert_cmpint(errno, ==, EACCES);
    assert_error(err, "Could not open '/dev/fdset/0': Permission denied");
    err = NULL;

    g_assert_cmpint(qemu_open("/dev/fdset/1", O_RDONLY, 0, &err), ==, -1);
    assert_error(err, "No such file or directory");
    err = NULL;
    g_assert_cmpint(qemu_open("/dev/fdset/zero", O_RDONLY, 0, &err), ==, -1);
    g_assert_cmpint(errno, ==, EINVAL);
    assert_error(err, "Could not parse fdset /dev/fdset/zero");
    err = NULL;
    g_assert_cmpint(qemu_open("/dev/fdset/-1", O_RDONLY, 0, &err), ==, -1);
    assert_error(err, "Could not parse fdset");
    err = NULL;

    /* Not a set: an ordinary open, with its own error. */
    g_assert_cmpint(qemu_open("/nonexistent/x", O_RDONLY, 0, &err), ==, -1);
    assert_error(err, "Could not open '/nonexistent/x': No such file or directory");
    qemu_fdsets_clear();
}

/*
 * Every set made of a subset of the three access modes (each mode on a
 * file of its own, so the duplicate tells which fd it came from), asked
 * for every mode: the open succeeds exactly when the set has that mode,
 * and gives that fd's file, never a more capable one.
 */
static void test_access_modes(void)
{
    for (unsigned subset = 0; subset < 8; subset++) {
        int fds[3] = { -1, -1, -1 };

        for (int m = 0; m < 3; m++) {
            if (subset & (1u << m)) {
                g_autofree char *name = g_strdup_printf("mode%d", m);

                fds[m] = open_inherited(name, modes[m]);
                g_assert_true(qemu_fdset_add_fd(7, fds[m], name, &error_abort));
            }
        }
        for (int want = 0; want < 3; want++) {
            Error *err = NULL;
            int got = qemu_open("/dev/fdset/7", modes[want], 0, &err);

            if (fds[want] < 0) {
                g_assert_cmpint(got, ==, -1);
                assert_error(err, subset ? "Permission denied" : "No such file");
                continue;
            }
            g_assert_cmpint(got, >, STDERR_FILENO);
            g_assert_cmpint(fcntl(got, F_GETFL) & O_ACCMODE, ==, modes[want]);
            g_assert_true(same_file(got, fds[want]));
            close(got);
        }
        for (int m = 0; m < 3; m++) {
            if (fds[m] >= 0) {
                close(fds[m]);
            }
        }
        qemu_fdsets_clear();
    }
}

/* The first fd of the right mode wins, as in QEMU: several fds share a set. */
static void test_first_match(void)
{
    int a = open_inherited("first-a", O_WRONLY);
    int b = open_inherited("first-b", O_WRONLY);
    int got;

    g_assert_true(qemu_fdset_add_fd(2, a, NULL, &error_abort));
    g_assert_true(qemu_fdset_add_fd(2, b, NULL, &error_abort));
    got = qemu_open("/dev/fdset/2", O_WRONLY, 0, &error_abort);
    g_assert_true(same_file(got, a));
    close(got);
    close(a);
    close(b);
    qemu_fdsets_clear();
}

static void write_str(int fd, const char *s)
{
    g_assert_cmpint(write(fd, s, strlen(s)), ==, (ssize_t)strlen(s));
}

static char *read_file(const char *name)
{
    g_autofree char *path = g_build_filename(tmpdir, name, NULL);
    char *text;

    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    return text;
}

/*
 * O_APPEND reaches the shared file description even though the parent
 * opened the file without it: the output lands after what the file holds,
 * wherever the fd's offset was. Without it, O_TRUNC empties the file.
 */
static void test_append_and_trunc(void)
{
    int fd = open_inherited("append", O_WRONLY | O_TRUNC);
    g_autofree char *text = NULL;
    g_autofree char *text2 = NULL;
    int got;

    write_str(fd, "old\n");
    lseek(fd, 0, SEEK_SET);
    g_assert_true(qemu_fdset_add_fd(5, fd, NULL, &error_abort));
    got = qemu_open("/dev/fdset/5", O_WRONLY | O_CREAT | O_APPEND, 0666, &error_abort);
    g_assert_cmpint(fcntl(got, F_GETFL) & O_APPEND, ==, O_APPEND);
    write_str(got, "new\n");
    close(got);
    text = read_file("append");
    g_assert_cmpstr(text, ==, "old\nnew\n");

    got = qemu_open("/dev/fdset/5", O_WRONLY | O_CREAT | O_TRUNC, 0666, &error_abort);
    g_assert_cmpint(fcntl(got, F_GETFL) & O_APPEND, ==, 0);
    lseek(got, 0, SEEK_SET);
    write_str(got, "only\n");
    close(got);
    text2 = read_file("append");
    g_assert_cmpstr(text2, ==, "only\n");
    close(fd);
    qemu_fdsets_clear();
}

/* O_TRUNC on a pipe is ignored, as open() ignores it on a FIFO. */
static void test_trunc_pipe(void)
{
    int p[2];
    char buf[8] = { 0 };
    int got;

    g_assert_cmpint(pipe(p), ==, 0);
    g_assert_true(qemu_fdset_add_fd(6, p[1], NULL, &error_abort));
    got = qemu_open("/dev/fdset/6", O_WRONLY | O_CREAT | O_TRUNC, 0666, &error_abort);
    write_str(got, "pipe");
    g_assert_cmpint(read(p[0], buf, 4), ==, 4);
    g_assert_cmpstr(buf, ==, "pipe");
    close(got);
    close(p[0]);
    close(p[1]);
    qemu_fdsets_clear();
}

/* The sets as "id(opaque,...) ...", "-" for a NULL note, by increasing id. */
static void describe_set(int64_t set_id, const QemuFdsetFd *fds, guint nfds, void *opaque)
{
    GString *out = opaque;

    g_string_append_printf(out, "%s%" PRId64 "(", out->len ? " " : "", set_id);
    for (guint i = 0; i < nfds; i++) {
        g_string_append_printf(out, "%s%s", i ? "," : "", fds[i].opaque ?: "-");
    }
    g_string_append_c(out, ')');
}

static char *describe_sets(void)
{
    GString *out = g_string_new("");

    qemu_fdset_foreach(describe_set, out);
    return g_string_free(out, FALSE);
}

static void assert_sets(const char *want)
{
    g_autofree char *got = describe_sets();

    g_assert_cmpstr(got, ==, want);
}

static bool fd_is_open(int fd)
{
    return fcntl(fd, F_GETFD) >= 0;
}

/* An fd as the monitor receives one: ours, close-on-exec. */
static int received_fd(const char *name)
{
    g_autofree char *path = g_build_filename(tmpdir, name, NULL);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

    g_assert_cmpint(fd, >, STDERR_FILENO);
    return fd;
}

static void first_fd_of_set2(int64_t set_id, const QemuFdsetFd *fds, guint nfds, void *opaque)
{
    if (set_id == 2 && nfds) {
        *(int *)opaque = fds[0].fd;
    }
}

/*
 * add-fd: without an id a new set takes the lowest free one (filling
 * gaps left by -add-fd's own numbers), with one the fd joins that set,
 * and the set owns the very fd it was given; a negative id is refused
 * with the fd left to the caller.
 */
static void test_take_fd(void)
{
    int inherited = open_inherited("take-inherited", O_RDWR);
    int a = received_fd("take-a"), b = received_fd("take-b");
    int c = received_fd("take-c"), d = received_fd("take-d");
    int listed = -1, got;
    Error *err = NULL;

    g_assert_true(qemu_fdset_add_fd(1, inherited, "cmdline", &error_abort));
    close(inherited);
    g_assert_cmpint(qemu_fdset_take_fd(false, 0, a, NULL, &error_abort), ==, 0);
    g_assert_cmpint(qemu_fdset_take_fd(false, 0, b, "b", &error_abort), ==, 2);
    g_assert_cmpint(qemu_fdset_take_fd(true, 1, c, "c", &error_abort), ==, 1);
    g_assert_cmpint(qemu_fdset_take_fd(true, INT64_MAX, d, "d", &error_abort), ==, INT64_MAX);
    assert_sets("0(-) 1(cmdline,c) 2(b) 9223372036854775807(d)");

    g_assert_cmpint(qemu_fdset_take_fd(true, -1, 99, NULL, &err), ==, -1);
    assert_error(err, "Parameter 'fdset-id' expects a non-negative value");
    err = NULL;
    g_assert_cmpint(qemu_fdset_take_fd(false, 0, -1, NULL, &err), ==, -1);
    assert_error(err, "No file descriptor supplied via SCM_RIGHTS");
    assert_sets("0(-) 1(cmdline,c) 2(b) 9223372036854775807(d)");

    /* The set lists the fd it was given, and opens duplicates of it. */
    qemu_fdset_foreach(first_fd_of_set2, &listed);
    g_assert_cmpint(listed, ==, b);
    got = qemu_open("/dev/fdset/2", O_RDWR, 0, &error_abort);
    g_assert_true(same_file(got, b));
    g_assert_cmpint(qemu_close(got), ==, 0);
    qemu_fdsets_clear();
    g_assert_false(fd_is_open(a));
    g_assert_false(fd_is_open(d));
}

/*
 * remove-fd closes only fds of the named set, with QEMU's errors for
 * anything else; a set without fds is forgotten unless a duplicate of
 * one of its fds is still open, until qemu_close() of that duplicate.
 */
static void test_remove_fd(void)
{
    int a = received_fd("rm-a"), b = received_fd("rm-b"), c = received_fd("rm-c");
    int stranger = received_fd("rm-stranger");
    g_autofree char *want6 = g_strdup_printf("File descriptor named 'fdset-id:6, fd:%d' not found",
                                             a);
    g_autofree char *want4 = g_strdup_printf("File descriptor named 'fdset-id:4, fd:%d' not found",
                                             stranger);
    Error *err = NULL;
    int dup;

    g_assert_cmpint(qemu_fdset_take_fd(true, 4, a, "a", &error_abort), ==, 4);
    g_assert_cmpint(qemu_fdset_take_fd(true, 4, b, "b", &error_abort), ==, 4);
    g_assert_cmpint(qemu_fdset_take_fd(true, 5, c, "c", &error_abort), ==, 5);

    g_assert_false(qemu_fdset_remove_fd(6, false, 0, &err));
    assert_error(err, "File descriptor named 'fdset-id:6' not found");
    err = NULL;
    g_assert_false(qemu_fdset_remove_fd(6, true, a, &err));
    assert_error(err, want6);
    err = NULL;
    /* An fd of ours that is in another set, or in none, stays open. */
    g_assert_false(qemu_fdset_remove_fd(4, true, c, &err));
    error_free(err);
    err = NULL;
    g_assert_false(qemu_fdset_remove_fd(4, true, stranger, &err));
    assert_error(err, want4);
    err = NULL;
    g_assert_false(qemu_fdset_remove_fd(4, true, (int64_t)a + (1ll << 32), &err));
    error_free(err);
    err = NULL;
    g_assert_true(fd_is_open(c));
    g_assert_true(fd_is_open(stranger));
    close(stranger);

    g_assert_true(qemu_fdset_remove_fd(4, true, a, &error_abort));
    g_assert_false(fd_is_open(a));
    assert_sets("4(b) 5(c)");
    g_assert_true(qemu_fdset_remove_fd(4, true, b, &error_abort));
    g_assert_false(fd_is_open(b));
    assert_sets("5(c)");

    /* In use: the set stays, empty, while the duplicate is open. */
    dup = qemu_open("/dev/fdset/5", O_RDWR, 0, &error_abort);
    g_assert_true(qemu_fdset_remove_fd(5, false, 0, &error_abort));
    g_assert_false(fd_is_open(c));
    g_assert_true(fd_is_open(dup));
    assert_sets("5()");
    /* Removing from the set with no fd left: done for the whole set, not for one fd. */
    g_assert_true(qemu_fdset_remove_fd(5, false, 0, &error_abort));
    g_assert_false(qemu_fdset_remove_fd(5, true, c, &err));
    error_free(err);
    err = NULL;
    g_assert_cmpint(qemu_close(dup), ==, 0);
    assert_sets("");
    /* qemu_close() of an fd no set gave out is close(). */
    stranger = received_fd("rm-stranger");
    g_assert_cmpint(qemu_close(stranger), ==, 0);
    g_assert_false(fd_is_open(stranger));
    qemu_fdsets_clear();
}

/* Outside /dev/fdset/ qemu_open() is open() with close-on-exec. */
static void test_plain_path(void)
{
    g_autofree char *path = g_build_filename(tmpdir, "plain", NULL);
    int fd = qemu_open(path, O_WRONLY | O_CREAT, 0600, &error_abort);

    g_assert_cmpint(fcntl(fd, F_GETFD) & FD_CLOEXEC, ==, FD_CLOEXEC);
    close(fd);
    unlink(path);
}

static void remove_tmpdir(void)
{
    g_autoptr(GDir) dir = g_dir_open(tmpdir, 0, NULL);
    const char *name;

    while (dir && (name = g_dir_read_name(dir))) {
        g_autofree char *path = g_build_filename(tmpdir, name, NULL);
        unlink(path);
    }
    rmdir(tmpdir);
}

int main(int argc, char **argv)
{
    int ret;

    g_test_init(&argc, &argv, NULL);
    tmpdir = g_dir_make_tmp("test-fdset-XXXXXX", NULL);
    g_assert_nonnull(tmpdir);
    g_test_add_func("/fdset/option", test_option);
    g_test_add_func("/fdset/errors", test_errors);
    g_test_add_func("/fdset/access-modes", test_access_modes);
    g_test_add_func("/fdset/first-match", test_first_match);
    g_test_add_func("/fdset/append-and-trunc", test_append_and_trunc);
    g_test_add_func("/fdset/trunc-pipe", test_trunc_pipe);
    g_test_add_func("/fdset/plain-path", test_plain_path);
    g_test_add_func("/fdset/take-fd", test_take_fd);
    g_test_add_func("/fdset/remove-fd", test_remove_fd);
    ret = g_test_run();
    remove_tmpdir();
    g_free(tmpdir);
    return ret;
}

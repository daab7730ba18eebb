/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for util/qemu-sockets.c: a listening Unix socket is owner-only
 * (0600) whatever the umask, replaces a stale socket file, accepts a
 * client, and refuses paths it cannot use with a clear error. An inherited
 * fd is taken only when it is a stream socket in the state asked for.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/sockets.h"
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>

static char *tmpdir;

static void assert_owner_only(const char *path)
{
    struct stat st;

    g_assert_cmpint(stat(path, &st), ==, 0);
    g_assert_true(S_ISSOCK(st.st_mode));
    g_assert_cmpint(st.st_mode & 07777, ==, 0600);
}

static int connect_to(const char *path)
{
    struct sockaddr_un un = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    g_strlcpy(un.sun_path, path, sizeof(un.sun_path));
    g_assert_cmpint(fd, >=, 0);
    if (connect(fd, (struct sockaddr *)&un, sizeof(un)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Under every umask, 000 above all: the socket file is the only lock on the VM. */
static void test_owner_only(void)
{
    static const mode_t masks[] = { 0, 002, 022, 077 };

    for (size_t i = 0; i < G_N_ELEMENTS(masks); i++) {
        g_autofree char *path = g_strdup_printf("%s/s%zu.sock", tmpdir, i);
        mode_t old = umask(masks[i]);
        int fd = unix_listen_private(path, &error_abort);
        int c;

        umask(old);
        assert_owner_only(path);
        c = connect_to(path);
        g_assert_cmpint(c, >=, 0);
        close(c);
        close(fd);
        unlink(path);
    }
}

/* A socket file left by an earlier run is replaced, and the new one is private too. */
static void test_replaces_stale(void)
{
    g_autofree char *path = g_strdup_printf("%s/stale.sock", tmpdir);
    mode_t old = umask(0);
    int fd = unix_listen_private(path, &error_abort);
    int fd2;

    close(fd);
    chmod(path, 0777);
    fd2 = unix_listen_private(path, &error_abort);
    umask(old);
    assert_owner_only(path);
    close(fd2);
    unlink(path);
}

/*
 * The path appears only once it accepts (bound and listening under a
 * sibling name, then renamed): nothing of that name is left beside it,
 * and the file at the path is the listener's.
 */
static void test_appears_listening(void)
{
    g_autofree char *dir = g_strdup_printf("%s/appear", tmpdir);
    g_autofree char *path = g_strdup_printf("%s/a.sock", dir);
    GDir *d;
    const char *name;
    int fd, c, n = 0;

    g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
    fd = unix_listen_private(path, &error_abort);
    d = g_dir_open(dir, 0, NULL);
    g_assert_nonnull(d);
    while ((name = g_dir_read_name(d))) {
        g_assert_cmpstr(name, ==, "a.sock");
        n++;
    }
    g_dir_close(d);
    g_assert_cmpint(n, ==, 1);
    c = connect_to(path);
    g_assert_cmpint(c, >=, 0);
    close(c);
    close(fd);
    unlink(path);
    rmdir(dir);
}

static void test_bad_paths(void)
{
    g_autofree char *longp = g_strnfill(200, 'x');
    g_autofree char *missing = g_strdup_printf("%s/no/such/dir/s.sock", tmpdir);
    Error *err = NULL;

    g_assert_cmpint(unix_listen_private(longp, &err), ==, -1);
    g_assert_nonnull(strstr(error_get_pretty(err), "too long"));
    g_clear_pointer(&err, error_free);
    g_assert_cmpint(unix_listen_private(missing, &err), ==, -1);
    g_assert_nonnull(strstr(error_get_pretty(err), "Failed to bind socket to"));
    error_free(err);
}

/* A tcp listener (-chardev socket,server=on; nbd-server-start): connectable; a busy port and a bad host refused. */
static void test_inet_listen(void)
{
    struct sockaddr_in in;
    socklen_t len = sizeof(in);
    g_autofree char *port = NULL;
    Error *err = NULL;
    int fd = inet_listen_host_port("127.0.0.1", "0", AF_INET, true, true, 1, &error_abort);
    int c, keep = 0;
    socklen_t klen = sizeof(keep);

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(fcntl(fd, F_GETFD) & FD_CLOEXEC, !=, 0);
    g_assert_cmpint(getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &keep, &klen), ==, 0);
    g_assert_cmpint(keep, !=, 0);
    g_assert_cmpint(getsockname(fd, (struct sockaddr *)&in, &len), ==, 0);
    port = g_strdup_printf("%u", ntohs(in.sin_port));
    c = inet_connect_host_port("127.0.0.1", port, &error_abort);
    g_assert_cmpint(c, >=, 0);
    close(c);
    /* The port is taken: QEMU's words. */
    g_assert_cmpint(inet_listen_host_port("127.0.0.1", port, AF_UNSPEC, false, false, 1, &err),
                    ==, -1);
    g_assert_cmpstr(error_get_pretty(err), ==,
                    "Failed to find an available port: Address already in use");
    g_clear_pointer(&err, error_free);
    /* numeric=on: a name is no address. */
    g_assert_cmpint(inet_listen_host_port("localhost", "0", AF_UNSPEC, true, false, 1, &err),
                    ==, -1);
    g_assert_nonnull(strstr(error_get_pretty(err), "address resolution failed for localhost:0"));
    error_free(err);
    close(fd);
}

static void assert_inherited_refused(const char *str, bool server, const char *want)
{
    Error *err = NULL;

    g_assert_cmpint(socket_inherited_fd(str, server, &err), ==, -1);
    g_assert_nonnull(err);
    if (!strstr(error_get_pretty(err), want)) {
        g_error("fd=%s: error '%s' lacks '%s'", str, error_get_pretty(err), want);
    }
    error_free(err);
}

/* What -chardev socket,fd=N accepts: a listening socket with server=on, a connected one without. */
static void test_inherited_fd(void)
{
    g_autofree char *path = g_strdup_printf("%s/inherited.sock", tmpdir);
    int lfd = unix_listen_private(path, &error_abort);
    int bound = socket(AF_UNIX, SOCK_STREAM, 0);
    int unbound = socket(AF_UNIX, SOCK_STREAM, 0);
    int dgram = socket(AF_UNIX, SOCK_DGRAM, 0);
    struct sockaddr_un un = { .sun_family = AF_UNIX };
    int sv[2], p[2], c;
    char *s;

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
    g_assert_cmpint(pipe(p), ==, 0);
    g_strlcpy(un.sun_path, path, sizeof(un.sun_path));
    g_strlcat(un.sun_path, "2", sizeof(un.sun_path));
    g_assert_cmpint(bind(bound, (struct sockaddr *)&un, sizeof(un)), ==, 0);

    /* Ours (close-on-exec), so not inherited; cleared, it is taken as it is. */
    s = g_strdup_printf("%d", lfd);
    assert_inherited_refused(s, true, "not inherited (it is close-on-exec)");
    fcntl(lfd, F_SETFD, 0);
    g_assert_cmpint(socket_inherited_fd(s, true, &error_abort), ==, lfd);
    g_assert_cmpint(fcntl(lfd, F_GETFD) & FD_CLOEXEC, ==, FD_CLOEXEC);
    c = connect_to(path);
    g_assert_cmpint(c, >=, 0);
    close(c);
    fcntl(lfd, F_SETFD, 0);
    assert_inherited_refused(s, false, "a listening socket needs server=on");
    g_free(s);

    /* A bound socket starts listening, as QEMU makes it. */
    s = g_strdup_printf("%d", bound);
    g_assert_cmpint(socket_inherited_fd(s, true, &error_abort), ==, bound);
    c = connect_to(un.sun_path);
    g_assert_cmpint(c, >=, 0);
    close(c);
    g_free(s);

    s = g_strdup_printf("%d", sv[0]);
    g_assert_cmpint(socket_inherited_fd(s, false, &error_abort), ==, sv[0]);
    fcntl(sv[0], F_SETFD, 0);
    assert_inherited_refused(s, true, "cannot listen on it (server=on)");
    g_free(s);

    s = g_strdup_printf("%d", unbound);
    assert_inherited_refused(s, false, "not a connected socket");
    g_free(s);
    s = g_strdup_printf("%d", dgram);
    assert_inherited_refused(s, false, "not a stream socket");
    g_free(s);
    s = g_strdup_printf("%d", p[0]);
    assert_inherited_refused(s, true, "not a socket");
    g_free(s);
    assert_inherited_refused("1000000", true, "fd=1000000: not an open file descriptor");
    assert_inherited_refused("monitor", true, "fd=monitor: not a file descriptor number");
    assert_inherited_refused("-1", false, "not a file descriptor number");

    close(lfd);
    close(bound);
    close(unbound);
    close(dgram);
    close(sv[0]);
    close(sv[1]);
    close(p[0]);
    close(p[1]);
    unlink(path);
    unlink(un.sun_path);
}

int main(int argc, char **argv)
{
    int ret;

    g_test_init(&argc, &argv, NULL);
    tmpdir = g_dir_make_tmp("test-sockets-XXXXXX", NULL);
    g_assert_nonnull(tmpdir);
    g_test_add_func("/qemu-sockets/unix/owner-only", test_owner_only);
    g_test_add_func("/qemu-sockets/unix/replaces-stale", test_replaces_stale);
    g_test_add_func("/qemu-sockets/unix/bad-paths", test_bad_paths);
    g_test_add_func("/qemu-sockets/unix/appears-listening", test_appears_listening);
    g_test_add_func("/qemu-sockets/inherited-fd", test_inherited_fd);
    g_test_add_func("/qemu-sockets/inet/listen", test_inet_listen);
    ret = g_test_run();
    rmdir(tmpdir);
    g_free(tmpdir);
    return ret;
}

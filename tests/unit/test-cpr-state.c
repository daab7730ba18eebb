/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The cpr state (migration/core/cpr-state.c) between two ends of a real
 * unix socket pair: the fds that arrive are the memory that was sent; a
 * state that lies about its fds, or comes short, is refused and leaks no
 * fd. And the table the new process keeps them in (util/cpr-fd.c).
 */
#include "qemu/osdep.h"
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include "qapi/error.h"
#include "qemu/cpr-fd.h"
#include "migration/core/cpr-state.h"

static int memfd_of(const char *name, size_t size)
{
    int fd = syscall(SYS_memfd_create, name, MFD_CLOEXEC);

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(ftruncate(fd, size), ==, 0);
    return fd;
}

/* How many fds this process has open: none may leak. */
static unsigned open_fds(void)
{
    g_autoptr(GDir) d = g_dir_open("/proc/self/fd", 0, NULL);
    unsigned n = 0;

    while (g_dir_read_name(d)) {
        n++;
    }
    return n;
}

static void test_roundtrip(void)
{
    int sv[2], a = memfd_of("a", 8192), b = memfd_of("b", 4096);
    CprFdEntry e[] = { { .name = (char *)"ram0", .fd = a, .size = 8192 },
                       { .name = (char *)"vga.vram", .fd = b, .size = 4096 } };
    g_autoptr(CprState) st = NULL;
    uint8_t *sent, *seen;

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
    g_assert_true(cpr_state_send(sv[0], MIG_MODE_CPR_TRANSFER, e, 2, &error_abort));
    st = cpr_state_recv(sv[1], &error_abort);
    g_assert_cmpint(st->mode, ==, MIG_MODE_CPR_TRANSFER);
    g_assert_cmpuint(st->n, ==, 2);
    g_assert_cmpstr(st->e[0].name, ==, "ram0");
    g_assert_cmpstr(st->e[1].name, ==, "vga.vram");
    g_assert_cmpuint(st->e[0].size, ==, 8192);
    g_assert_cmpint(st->e[1].sender_fd, ==, b);
    /* The same memory: a write through the sender's mapping shows in the receiver's. */
    sent = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, a, 0);
    seen = mmap(NULL, 8192, PROT_READ, MAP_SHARED, st->e[0].fd, 0);
    g_assert_true(sent != MAP_FAILED && seen != MAP_FAILED);
    sent[4097] = 0x5a;
    g_assert_cmpint(seen[4097], ==, 0x5a);
    g_assert_cmpint(fcntl(st->e[0].fd, F_GETFD) & FD_CLOEXEC, ==, FD_CLOEXEC);
    munmap(sent, 8192);
    munmap(seen, 8192);
    close(a);
    close(b);
    close(sv[0]);
    close(sv[1]);
}

/* Bytes and fds the way a hostile peer sends them. */
static void send_raw(int sock, const void *buf, size_t len, const int *fds, unsigned nfds)
{
    union {
        char buf[CMSG_SPACE(sizeof(int) * 8)];
        struct cmsghdr align;
    } ctl = { 0 };
    struct iovec iov = { (void *)buf, len };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

    if (nfds) {
        struct cmsghdr *c;

        msg.msg_control = ctl.buf;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
    }
    g_assert_cmpint(sendmsg(sock, &msg, 0), ==, (ssize_t)len);
}

/* @buf from a peer that then hangs up: refused with @msg, and no fd of it stays open here. */
static void check_refused(const void *buf, size_t len, const int *fds, unsigned nfds,
                          const char *msg)
{
    int sv[2];
    unsigned before;
    Error *err = NULL;

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
    before = open_fds();
    send_raw(sv[0], buf, len, fds, nfds);
    close(sv[0]);
    g_assert_null(cpr_state_recv(sv[1], &err));
    g_assert_nonnull(strstr(error_get_pretty(err), msg));
    error_free(err);
    g_assert_cmpuint(open_fds(), ==, before - 1);   /* sv[0] closed, nothing received kept */
    close(sv[1]);
}

static void test_hostile(void)
{
    int m = memfd_of("m", 4096), fds[2] = { m, m };
    CprFdEntry one = { .name = (char *)"ram0", .fd = m, .size = 4096 };
    g_autoptr(GByteArray) good = cpr_state_encode(MIG_MODE_CPR_TRANSFER, &one, 1);
    g_autoptr(GByteArray) dup = NULL;
    CprFdEntry two[] = { one, one };

    check_refused("QMIGCPR0xxxxxxxxxxxx", 20, NULL, 0, "bad magic");
    check_refused(good->data, 12, NULL, 0, "closed it after 12 bytes");
    check_refused(good->data, good->len, NULL, 0, "1 entries, but 0 fds came with them");
    check_refused(good->data, good->len, fds, 2, "1 entries, but 2 fds came with them");
    check_refused(good->data, good->len - 1, &m, 1, "closed it after");
    dup = cpr_state_encode(MIG_MODE_CPR_TRANSFER, two, 2);
    check_refused(dup->data, dup->len, fds, 2, "'ram0' is named twice");
    good->data[11] = 9;     /* mode 9 */
    check_refused(good->data, good->len, &m, 1, "unknown migration mode 9");
    close(m);
}

static void test_fd_table(void)
{
    int a = memfd_of("a", 4096), b = memfd_of("b", 4096);

    g_assert_false(cpr_fd_received());
    g_assert_cmpint(cpr_fd_take("ram0"), ==, -1);
    cpr_fd_add("ram0", a);
    cpr_fd_add("vga.vram", b);
    g_assert_true(cpr_fd_received());
    g_assert_cmpint(cpr_fd_take("ram0"), ==, a);
    g_assert_cmpint(cpr_fd_take("ram0"), ==, -1);      /* taken once */
    g_assert_cmpuint(cpr_fd_close_unused(), ==, 1);
    g_assert_cmpint(fcntl(b, F_GETFD), ==, -1);         /* the table closed it */
    g_assert_true(cpr_fd_received());
    close(a);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cpr-state/roundtrip", test_roundtrip);
    g_test_add_func("/cpr-state/hostile", test_hostile);
    g_test_add_func("/cpr-state/fd-table", test_fd_table);
    return g_test_run();
}

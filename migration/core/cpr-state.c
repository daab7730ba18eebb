/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The cpr state's bytes and their passage over a unix socket (cpr-state.h).
 *
 * Layout, big-endian:
 *   header   8 bytes "QMIGCPR1", be32 mode, be32 count, be32 body length
 *   entries  count x { be64 size, be32 sender's fd, be16 name length, name }
 * and, on a socket, exactly count fds as SCM_RIGHTS, in entry order, on
 * the message carrying the header.
 */
#include "qemu/osdep.h"
#include <sys/socket.h>
#include "qapi/error.h"
#include "qemu/bswap.h"
#include "cpr-state.h"

#define CPR_MAGIC "QMIGCPR1"
#define CPR_HEADER_SIZE 20
#define CPR_ENTRY_FIXED 14
#define CPR_MAX_BODY (CPR_STATE_MAX_FDS * (CPR_ENTRY_FIXED + CPR_STATE_MAX_NAME))

void cpr_state_free(CprState *st)
{
    if (!st) {
        return;
    }
    for (unsigned i = 0; i < st->n; i++) {
        if (st->e[i].fd >= 0) {
            close(st->e[i].fd);
        }
        g_free(st->e[i].name);
    }
    g_free(st);
}

GByteArray *cpr_state_encode(MigMode mode, const CprFdEntry *e, unsigned n)
{
    GByteArray *b = g_byte_array_new();
    uint8_t hdr[CPR_HEADER_SIZE];
    size_t body = 0;

    for (unsigned i = 0; i < n; i++) {
        body += CPR_ENTRY_FIXED + strlen(e[i].name);
    }
    memcpy(hdr, CPR_MAGIC, 8);
    stl_be_p(hdr + 8, mode);
    stl_be_p(hdr + 12, n);
    stl_be_p(hdr + 16, body);
    g_byte_array_append(b, hdr, sizeof(hdr));
    for (unsigned i = 0; i < n; i++) {
        uint8_t fixed[CPR_ENTRY_FIXED];
        size_t len = strlen(e[i].name);

        stq_be_p(fixed, e[i].size);
        stl_be_p(fixed + 8, e[i].fd);
        fixed[12] = len >> 8;
        fixed[13] = len;
        g_byte_array_append(b, fixed, sizeof(fixed));
        g_byte_array_append(b, (const uint8_t *)e[i].name, len);
    }
    return b;
}

/* The header's body length and count, checked against each other and the bounds. */
static bool cpr_header_parse(const uint8_t *h, MigMode *mode, unsigned *count, size_t *body,
                             Error **errp)
{
    uint32_t m = ldl_be_p(h + 8), n = ldl_be_p(h + 12), len = ldl_be_p(h + 16);

    if (memcmp(h, CPR_MAGIC, 8)) {
        error_setg(errp, "cpr state: not a cpr state (bad magic)");
        return false;
    }
    if (m != MIG_MODE_CPR_TRANSFER && m != MIG_MODE_CPR_EXEC) {
        error_setg(errp, "cpr state: unknown migration mode %u", m);
        return false;
    }
    if (n > CPR_STATE_MAX_FDS) {
        error_setg(errp, "cpr state: %u fds, more than the %d a state may hand over", n,
                   CPR_STATE_MAX_FDS);
        return false;
    }
    if (len > CPR_MAX_BODY || len < (uint64_t)n * (CPR_ENTRY_FIXED + 1)) {
        error_setg(errp, "cpr state: a body of %u bytes cannot hold %u entries", len, n);
        return false;
    }
    *mode = m;
    *count = n;
    *body = len;
    return true;
}

CprState *cpr_state_parse(const uint8_t *buf, size_t len, Error **errp)
{
    g_autoptr(CprState) st = g_new0(CprState, 1);
    unsigned count;
    size_t body, off = CPR_HEADER_SIZE;

    if (len < CPR_HEADER_SIZE) {
        error_setg(errp, "cpr state: truncated header (%zu bytes)", len);
        return NULL;
    }
    if (!cpr_header_parse(buf, &st->mode, &count, &body, errp)) {
        return NULL;
    }
    if (len - CPR_HEADER_SIZE != body) {
        error_setg(errp, "cpr state: the body is %zu bytes, the header says %zu",
                   len - CPR_HEADER_SIZE, body);
        return NULL;
    }
    for (unsigned i = 0; i < count; i++) {
        CprFdEntry *e = &st->e[i];
        size_t nlen;

        if (len - off < CPR_ENTRY_FIXED) {
            error_setg(errp, "cpr state: entry %u is truncated", i);
            return NULL;
        }
        e->size = ldq_be_p(buf + off);
        e->fd = -1;
        e->sender_fd = (int32_t)ldl_be_p(buf + off + 8);
        nlen = (buf[off + 12] << 8) | buf[off + 13];
        off += CPR_ENTRY_FIXED;
        if (!nlen || nlen > CPR_STATE_MAX_NAME || len - off < nlen ||
            memchr(buf + off, 0, nlen)) {
            error_setg(errp, "cpr state: entry %u has a bad name", i);
            return NULL;
        }
        e->name = g_strndup((const char *)buf + off, nlen);
        st->n = i + 1;
        for (unsigned j = 0; j < i; j++) {
            if (!strcmp(st->e[j].name, e->name)) {
                error_setg(errp, "cpr state: '%s' is named twice", e->name);
                return NULL;
            }
        }
        off += nlen;
    }
    if (off != len) {
        error_setg(errp, "cpr state: %zu bytes after the last entry", len - off);
        return NULL;
    }
    return g_steal_pointer(&st);
}

bool cpr_state_send(int sock, MigMode mode, const CprFdEntry *e, unsigned n, Error **errp)
{
    g_autoptr(GByteArray) b = cpr_state_encode(mode, e, n);
    union {
        char buf[CMSG_SPACE(sizeof(int) * CPR_STATE_MAX_FDS)];
        struct cmsghdr align;
    } ctl;
    size_t off = 0;

    assert(n <= CPR_STATE_MAX_FDS);
    memset(&ctl, 0, sizeof(ctl));
    while (off < b->len) {
        struct iovec iov = { b->data + off, b->len - off };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
        ssize_t r;

        /* The fds ride with the first byte; a short write sends the rest plain. */
        if (off == 0 && n) {
            struct cmsghdr *c;

            msg.msg_control = ctl.buf;
            msg.msg_controllen = CMSG_SPACE(sizeof(int) * n);
            c = CMSG_FIRSTHDR(&msg);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(sizeof(int) * n);
            for (unsigned i = 0; i < n; i++) {
                memcpy(CMSG_DATA(c) + i * sizeof(int), &e[i].fd, sizeof(int));
            }
        }
        r = sendmsg(sock, &msg, MSG_NOSIGNAL);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            error_setg_errno(errp, r < 0 ? errno : EPIPE, "cpr channel: sending the cpr state");
            return false;
        }
        off += r;
    }
    return true;
}

/* Up to @len bytes into @buf; fds that come along are appended to @fds (closed on error). */
static ssize_t cpr_recv_some(int sock, uint8_t *buf, size_t len, int *fds, unsigned *nfds,
                             Error **errp)
{
    union {
        char buf[CMSG_SPACE(sizeof(int) * CPR_STATE_MAX_FDS)];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = { buf, len };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                          .msg_controllen = sizeof(ctl.buf) };
    bool too_many = false;
    ssize_t r;

    do {
        r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    } while (r < 0 && errno == EINTR);
    if (r < 0) {
        error_setg_errno(errp, errno, "cpr channel: receiving the cpr state");
        return -1;
    }
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        unsigned k;

        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
            continue;
        }
        k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (unsigned i = 0; i < k; i++) {
            int fd;

            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (*nfds < CPR_STATE_MAX_FDS) {
                fds[(*nfds)++] = fd;
            } else {
                close(fd);
                too_many = true;
            }
        }
    }
    if (msg.msg_flags & MSG_CTRUNC || too_many) {
        error_setg(errp, "cpr channel: more fds than a cpr state may hand over (%d)",
                   CPR_STATE_MAX_FDS);
        return -1;
    }
    return r;
}

/* Exactly @len bytes, or an error (the peer closing early is one). */
static bool cpr_recv_full(int sock, uint8_t *buf, size_t len, int *fds, unsigned *nfds,
                          Error **errp)
{
    for (size_t got = 0; got < len;) {
        ssize_t r = cpr_recv_some(sock, buf + got, len - got, fds, nfds, errp);

        if (r < 0) {
            return false;
        }
        if (r == 0) {
            error_setg(errp, "cpr channel: the old process closed it after %zu bytes of the "
                       "cpr state", got);
            return false;
        }
        got += r;
    }
    return true;
}

CprState *cpr_state_recv(int sock, Error **errp)
{
    int fds[CPR_STATE_MAX_FDS];
    unsigned nfds = 0, count;
    g_autofree uint8_t *buf = g_malloc(CPR_HEADER_SIZE);
    CprState *st = NULL;
    MigMode mode;
    size_t body;

    if (cpr_recv_full(sock, buf, CPR_HEADER_SIZE, fds, &nfds, errp) &&
        cpr_header_parse(buf, &mode, &count, &body, errp)) {
        buf = g_realloc(buf, CPR_HEADER_SIZE + body);
        if (cpr_recv_full(sock, buf + CPR_HEADER_SIZE, body, fds, &nfds, errp)) {
            st = cpr_state_parse(buf, CPR_HEADER_SIZE + body, errp);
        }
    }
    if (st && st->n != nfds) {
        error_setg(errp, "cpr state: %u entries, but %u fds came with them", st->n, nfds);
        g_clear_pointer(&st, cpr_state_free);
    }
    if (!st) {
        for (unsigned i = 0; i < nfds; i++) {
            close(fds[i]);
        }
        return NULL;
    }
    for (unsigned i = 0; i < nfds; i++) {
        st->e[i].fd = fds[i];
    }
    return st;
}

#define CPR_ROLLBACK_MAGIC "QMIGRBK1"
#define CPR_ROLLBACK_MAX_ARGS 4096

GByteArray *cpr_rollback_encode(int exe_fd, char *const *argv)
{
    GByteArray *b = g_byte_array_new();
    uint8_t fd[4];

    g_byte_array_append(b, (const uint8_t *)CPR_ROLLBACK_MAGIC, 8);
    stl_be_p(fd, exe_fd);
    g_byte_array_append(b, fd, 4);
    for (; *argv; argv++) {
        g_byte_array_append(b, (const uint8_t *)*argv, strlen(*argv) + 1);
    }
    return b;
}

char **cpr_rollback_parse(const uint8_t *buf, size_t len, int *exe_fd, Error **errp)
{
    g_autoptr(GPtrArray) args = g_ptr_array_new_with_free_func(g_free);
    size_t off = 12;

    if (len < 12 || memcmp(buf, CPR_ROLLBACK_MAGIC, 8)) {
        error_setg(errp, "cpr-exec: not a rollback record");
        return NULL;
    }
    *exe_fd = (int32_t)ldl_be_p(buf + 8);
    while (off < len) {
        const uint8_t *nul = memchr(buf + off, 0, len - off);

        if (!nul || args->len >= CPR_ROLLBACK_MAX_ARGS) {
            error_setg(errp, "cpr-exec: the rollback record's arguments are malformed");
            return NULL;
        }
        g_ptr_array_add(args, g_strdup((const char *)buf + off));
        off = nul - buf + 1;
    }
    if (!args->len) {
        error_setg(errp, "cpr-exec: the rollback record names no program");
        return NULL;
    }
    g_ptr_array_add(args, NULL);
    return (char **)g_ptr_array_free(g_steal_pointer(&args), FALSE);
}

uint8_t *cpr_memfd_read(int fd, const char *what, size_t *len, Error **errp)
{
    g_autofree uint8_t *buf = NULL;
    struct stat sb;
    ssize_t r;

    if (fstat(fd, &sb) < 0 || sb.st_size <= 0 || sb.st_size > (1 << 20)) {
        error_setg(errp, "cpr-exec: fd %d does not hold a %s", fd, what);
        close(fd);
        return NULL;
    }
    buf = g_malloc(sb.st_size);
    r = pread(fd, buf, sb.st_size, 0);
    close(fd);
    if (r != sb.st_size) {
        error_setg(errp, "cpr-exec: reading the %s from fd %d failed", what, fd);
        return NULL;
    }
    *len = sb.st_size;
    return g_steal_pointer(&buf);
}

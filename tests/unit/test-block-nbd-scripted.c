/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The nbd client row through the real block layer against scripted
 * servers of our own, for what a real server does not do:
 *   - /nbd-scripted/...: a server that breaks the protocol (a reply to an
 *     unknown cookie, a bad magic, a data chunk outside its request, an
 *     unknown chunk type) fails its connection and nothing else: every
 *     request then fails with -EIO, the node stays and reports its length;
 *     an error chunk fails its request only, the next one succeeds;
 *   - /nbd-scripted/silent: a server that never speaks fails the open at
 *     open-timeout, with a message that says so.
 */
#include "qemu/osdep.h"
#include <sys/socket.h>
#include "qapi/error.h"
#include "qapi/qapi-events.h"
#include "qemu/bswap.h"
#include "qemu/sockets.h"
#include "block/block.h"
#include "block/nbd-int.h"
#include "system/runstate.h"
#include "system/user-objects.h"

/* ---- Fakes of what block/ calls outside it ---- */

void qapi_event_send_block_io_error(const char *device, const char *node_name,
                                    IoOperationType operation, BlockIOErrorAction action,
                                    bool has_nospace, bool nospace, const char *reason)
{
}

void qemu_system_vmstop_request(RunState state)
{
    g_assert_not_reached();
}

TLSCreds *user_objects_tls_creds(const char *id, Error **errp)
{
    error_setg(errp, "No TLS credentials with id '%s'", id);
    return NULL;
}

static char *tmpdir;

/* ---- Scripted servers that break the protocol ---- */

typedef enum Script {
    BAD_COOKIE,                 /* a simple reply to a cookie nobody sent */
    BAD_MAGIC,                  /* a reply that is not one */
    DATA_OUTSIDE,               /* a data chunk past its request's end */
    UNKNOWN_TYPE,               /* a chunk type without the error bit */
    ERROR_CHUNK,                /* an error chunk: the request fails, the connection stays */
} Script;

typedef struct Scripted {
    Script script;
    int listen_fd;
} Scripted;

static void wr(int fd, const void *p, size_t n)
{
    g_assert_cmpint(write(fd, p, n), ==, n);
}

static bool rd(int fd, void *p, size_t n)
{
    size_t got = 0;

    while (got < n) {
        ssize_t r = read(fd, (uint8_t *)p + got, n - got);

        if (r <= 0) {
            return false;
        }
        got += r;
    }
    return true;
}

static void opt_reply(int fd, uint32_t opt, uint32_t type)
{
    uint8_t b[20];

    stq_be_p(b, NBD_REP_MAGIC);
    stl_be_p(b + 8, opt);
    stl_be_p(b + 12, type);
    stl_be_p(b + 16, 0);
    wr(fd, b, sizeof(b));
}

static void chunk_hdr(int fd, uint16_t flags, uint16_t type, uint64_t cookie, uint32_t len)
{
    uint8_t b[20];

    stl_be_p(b, NBD_STRUCTURED_REPLY_MAGIC);
    nbd_st16(b + 4, flags);
    nbd_st16(b + 6, type);
    stq_be_p(b + 8, cookie);
    stl_be_p(b + 16, len);
    wr(fd, b, sizeof(b));
}

static gpointer scripted_server(gpointer opaque)
{
    Scripted *sc = opaque;
    bool structured = sc->script != BAD_COOKIE && sc->script != BAD_MAGIC;
    int fd = accept(sc->listen_fd, NULL, NULL);
    uint8_t b[64 * 1024];
    int nreq = 0;

    g_assert_cmpint(fd, >=, 0);
    stq_be_p(b, NBD_INIT_MAGIC);
    stq_be_p(b + 8, NBD_OPTS_MAGIC);
    nbd_st16(b + 16, NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES);
    wr(fd, b, 18);
    g_assert_true(rd(fd, b, 4));
    for (;;) {
        uint32_t opt, len;

        g_assert_true(rd(fd, b, 16));
        opt = ldl_be_p(b + 8);
        len = ldl_be_p(b + 12);
        g_assert_cmpuint(len, <, sizeof(b));
        g_assert_true(rd(fd, b, len));
        if (opt == NBD_OPT_EXPORT_NAME) {
            break;
        }
        /* Structured replies maybe; no GO, no contexts: the EXPORT_NAME path. */
        opt_reply(fd, opt, opt == NBD_OPT_STRUCTURED_REPLY && structured ? NBD_REP_ACK
                                                                          : NBD_REP_ERR_UNSUP);
    }
    stq_be_p(b, 1 * MiB);
    nbd_st16(b + 8, NBD_FLAG_HAS_FLAGS | NBD_FLAG_READ_ONLY);
    wr(fd, b, 10);
    while (rd(fd, b, NBD_REQUEST_SIZE)) {
        uint64_t cookie = ldq_be_p(b + 8), off = ldq_be_p(b + 16);
        uint32_t len = ldl_be_p(b + 24);

        if (nbd_ld16(b + 6) == NBD_CMD_DISC) {
            break;
        }
        g_assert_cmpuint(nbd_ld16(b + 6), ==, NBD_CMD_READ);
        g_assert_cmpuint(len, <=, sizeof(b) - 8);
        nreq++;
        switch (sc->script) {
        case BAD_COOKIE:
            stl_be_p(b, NBD_SIMPLE_REPLY_MAGIC);
            stl_be_p(b + 4, 0);
            stq_be_p(b + 8, cookie + 1000);
            wr(fd, b, 16);
            break;
        case BAD_MAGIC:
            memset(b, 0x55, 16);
            wr(fd, b, 16);
            break;
        case DATA_OUTSIDE:
            chunk_hdr(fd, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_OFFSET_DATA, cookie, 8 + 1);
            stq_be_p(b, off + len);
            wr(fd, b, 9);
            break;
        case UNKNOWN_TYPE:
            chunk_hdr(fd, NBD_REPLY_FLAG_DONE, 77, cookie, 0);
            break;
        case ERROR_CHUNK:
            if (nreq == 1) {
                chunk_hdr(fd, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_ERROR, cookie, 6 + 4);
                stl_be_p(b, NBD_ENOSPC);
                nbd_st16(b + 4, 4);
                memcpy(b + 6, "full", 4);
                wr(fd, b, 10);
            } else {
                chunk_hdr(fd, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_OFFSET_DATA, cookie, 8 + len);
                stq_be_p(b, off);
                memset(b + 8, 0x3c, len);
                wr(fd, b, 8 + len);
            }
            break;
        }
    }
    close(fd);
    return NULL;
}

static void test_scripted(gconstpointer data)
{
    Scripted sc = { .script = GPOINTER_TO_INT(data) };
    g_autofree char *path = g_build_filename(tmpdir, "scripted.sock", NULL);
    g_autofree char *opts = NULL;
    uint8_t buf[4096];
    struct iovec v = { buf, sizeof(buf) };
    BlockLayer *bl = block_layer_new();
    BlockBackend *blk;
    GThread *t;

    sc.listen_fd = unix_listen_private(path, &error_abort);
    t = g_thread_new("scripted", scripted_server, &sc);
    opts = g_strdup_printf("driver=nbd,node-name=s,server.type=unix,server.path=%s,"
                           "read-only=on", path);
    g_assert_true(blockdev_parse(bl, opts, &error_abort));
    blk = blk_attach(bl, "s", "test", BLK_PERM_READ, &error_abort);
    if (sc.script == ERROR_CHUNK) {
        /* The request's own error; the connection goes on. */
        g_assert_cmpint(blk_preadv(blk, 0, &v, 1), ==, -ENOSPC);
        g_assert_cmpint(blk_preadv(blk, 0, &v, 1), ==, 0);
        g_assert_cmpuint(buf[0], ==, 0x3c);
        g_assert_cmpuint(buf[4095], ==, 0x3c);
    } else {
        g_assert_cmpint(blk_preadv(blk, 0, &v, 1), ==, -EIO);
        g_assert_cmpint(blk_preadv(blk, 0, &v, 1), ==, -EIO);
    }
    g_assert_cmpint(blk_getlength(blk), ==, 1 * MiB);
    blk_detach(blk);
    block_layer_free(bl);
    g_thread_join(t);
    close(sc.listen_fd);
}

/* A server that never speaks (qemu-nbd busy with another client): the open gives up. */
static void test_silent(void)
{
    g_autofree char *path = g_build_filename(tmpdir, "silent.sock", NULL);
    g_autofree char *opts = NULL;
    int fd = unix_listen_private(path, &error_abort);
    BlockLayer *bl = block_layer_new();
    Error *err = NULL;
    gint64 t0 = g_get_monotonic_time();

    /* Never accepted: the connect succeeds from the backlog, no greeting comes. */
    opts = g_strdup_printf("driver=nbd,node-name=q,server.type=unix,server.path=%s,"
                           "open-timeout=1", path);
    g_assert_false(blockdev_parse(bl, opts, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "did not complete the handshake within 1 s"));
    g_assert_cmpint(g_get_monotonic_time() - t0, <, 5 * G_USEC_PER_SEC);
    error_free(err);
    block_layer_free(bl);
    close(fd);
}

int main(int argc, char **argv)
{
    g_autofree char *cmd = NULL;
    int ret;

    g_test_init(&argc, &argv, NULL);
    signal(SIGPIPE, SIG_IGN);
    tmpdir = g_dir_make_tmp("test-block-nbd-scripted-XXXXXX", NULL);
    g_test_add_data_func("/nbd-scripted/bad-cookie", GINT_TO_POINTER(BAD_COOKIE), test_scripted);
    g_test_add_data_func("/nbd-scripted/bad-magic", GINT_TO_POINTER(BAD_MAGIC), test_scripted);
    g_test_add_data_func("/nbd-scripted/data-outside", GINT_TO_POINTER(DATA_OUTSIDE),
                         test_scripted);
    g_test_add_data_func("/nbd-scripted/unknown-type", GINT_TO_POINTER(UNKNOWN_TYPE),
                         test_scripted);
    g_test_add_data_func("/nbd-scripted/error-chunk", GINT_TO_POINTER(ERROR_CHUNK),
                         test_scripted);
    g_test_add_func("/nbd-scripted/silent", test_silent);
    ret = g_test_run();
    cmd = g_strdup_printf("rm -rf %s", tmpdir);
    g_spawn_command_line_sync(cmd, NULL, NULL, NULL, NULL);
    return ret;
}

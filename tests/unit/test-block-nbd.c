/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The nbd client row (block/nbd*.c) through the real block layer, against
 * QEMU's own server (qemu-nbd, Debian's qemu-utils):
 *   - /nbd/qemu-nbd/unix: -blockdev driver=nbd over a unix socket to a
 *     qcow2 image; four threads write and read patterns at once (one
 *     write larger than a request may be, so it goes in pieces), FUA,
 *     flush, write zeroes with and without unmap, discard, block status on
 *     the sparse image; afterwards qemu-img compare finds our model;
 *   - /nbd/qemu-nbd/tcp: -drive file=nbd://... and file=nbd:HOST:PORT:
 *     exportname=..., a read-only export, the filename the node shows;
 *   - /nbd/qemu-nbd/killed: the server killed (SIGKILL) while four threads
 *     read: every request fails with -EIO within a bounded time, the node
 *     stays and fails later requests at once, the layer closes;
 * (tests/unit/test-block-nbd-scripted.c has servers of our own that break
 * the protocol; test-nbd-reply.c the reply parser alone and the filenames.)
 * The qemu-nbd parts are skipped without qemu-nbd and qemu-img.
 */
#include "qemu/osdep.h"
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include "qapi/error.h"
#include "qapi/qapi-events.h"
#include "qemu/bswap.h"
#include "qemu/sockets.h"
#include "block/block.h"
#include "block/nbd-int.h"
#include "system/runstate.h"
#include "system/user-objects.h"

#define SEED 0x4e42
#define IMG_SIZE (64 * MiB)

/* ---- Fakes of what backend.c calls outside block/ ---- */

void qapi_event_send_block_io_error(const char *device, const char *node_name,
                                    IoOperationType operation, BlockIOErrorAction action,
                                    bool has_nospace, bool nospace, const char *reason)
{
}

void qemu_system_vmstop_request(RunState state)
{
    g_assert_not_reached();
}

/* The nbd row's tls-creds= lookup (system/control/user-objects.c): no objects here. */
TLSCreds *user_objects_tls_creds(const char *id, Error **errp)
{
    error_setg(errp, "No TLS credentials with id '%s'", id);
    return NULL;
}

/* ---- Helpers ---- */

static char *tmpdir;

static bool have_tools(void)
{
    g_autofree char *a = g_find_program_in_path("qemu-nbd");
    g_autofree char *b = g_find_program_in_path("qemu-img");

    if (!a || !b) {
        g_test_skip("qemu-nbd or qemu-img not installed (qemu-utils)");
    }
    return a && b;
}

static int run(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
static int run(const char *fmt, ...)
{
    g_autofree char *cmd = NULL, *o = NULL, *e = NULL;
    GError *err = NULL;
    int status;
    va_list ap;

    va_start(ap, fmt);
    cmd = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (!g_spawn_command_line_sync(cmd, &o, &e, &status, &err)) {
        g_error("%s: %s", cmd, err->message);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status)) {
        g_printerr("%s: %s%s", cmd, o, e);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A qemu-nbd serving @img as export "exp": its pid (from its pid file). */
typedef struct Server {
    pid_t pid;
    char *sock;                 /* unix, or NULL */
    int port;                   /* tcp, or 0 */
} Server;

static int free_port(void)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    g_assert_cmpint(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    g_assert_cmpint(getsockname(fd, (struct sockaddr *)&sa, &len), ==, 0);
    close(fd);
    return ntohs(sa.sin_port);
}

static Server serve(const char *img, bool tcp, const char *extra)
{
    g_autofree char *pidfile = g_build_filename(tmpdir, "nbd.pid", NULL);
    g_autofree char *pidtext = NULL;
    g_autofree char *where = NULL;
    Server s = { 0 };

    unlink(pidfile);
    if (tcp) {
        s.port = free_port();
        where = g_strdup_printf("-b 127.0.0.1 -p %d", s.port);
    } else {
        s.sock = g_build_filename(tmpdir, "nbd.sock", NULL);
        where = g_strdup_printf("--socket=%s", s.sock);
    }
    /* --fork returns once the socket listens. */
    /* @extra may say how to open the image itself (--image-opts ...): then no -f. */
    g_assert_cmpint(run("qemu-nbd --fork --persistent --pid-file=%s %s -x exp %s %s %s",
                        pidfile, strstr(extra, "--image-opts") ? "" : "-f qcow2", where, extra,
                        img), ==, 0);
    g_assert_true(g_file_get_contents(pidfile, &pidtext, NULL, NULL));
    s.pid = atoi(pidtext);
    g_assert_cmpint(s.pid, >, 0);
    return s;
}

static void server_stop(Server *s)
{
    kill(s->pid, SIGKILL);
    /* Not our child (it forked): wait until the pid is gone. */
    for (int i = 0; i < 500 && kill(s->pid, 0) == 0; i++) {
        g_usleep(10 * 1000);
    }
    g_free(s->sock);
    s->sock = NULL;
}

static char *make_image(const char *name)
{
    char *img = g_build_filename(tmpdir, name, NULL);

    g_assert_cmpint(run("qemu-img create -q -f qcow2 %s %d", img, (int)IMG_SIZE), ==, 0);
    return img;
}

static void qemu_compares(const char *img, const uint8_t *model)
{
    g_autofree char *raw = g_build_filename(tmpdir, "model.raw", NULL);

    g_assert_true(g_file_set_contents(raw, (const char *)model, IMG_SIZE, NULL));
    g_assert_cmpint(run("qemu-img check -q -f qcow2 %s", img), ==, 0);
    g_assert_cmpint(run("qemu-img compare -q -f qcow2 -F raw %s %s", img, raw), ==, 0);
}

static BlockBackend *attach(BlockLayer *bl, const char *name)
{
    return blk_attach(bl, name, "test", BLK_PERM_READ | BLK_PERM_WRITE, &error_abort);
}

static void check_range(BlockBackend *blk, const uint8_t *model, uint64_t off, uint64_t len)
{
    g_autofree uint8_t *buf = g_malloc(len);
    struct iovec v = { buf, len };

    g_assert_cmpint(blk_preadv(blk, off, &v, 1), ==, 0);
    g_assert_true(memcmp(buf, model + off, len) == 0);
}

/* ---- Against qemu-nbd ---- */

typedef struct Worker {
    BlockBackend *blk;
    uint8_t *model;             /* this worker's region only */
    uint64_t base, size;
    guint32 seed;
    int fails;                  /* /killed: requests that failed, and how */
    int last_error;
    volatile bool *stop;
} Worker;

/* Writes (some FUA, some in two iovecs) and reads in the worker's own region. */
static gpointer write_worker(gpointer opaque)
{
    Worker *w = opaque;
    g_autoptr(GRand) r = g_rand_new_with_seed(w->seed);
    g_autofree uint8_t *buf = g_malloc(256 * KiB);

    for (int i = 0; i < 60; i++) {
        uint64_t len = g_rand_int_range(r, 1, 512) * 512;
        uint64_t off = w->base + g_rand_int_range(r, 0, (w->size - len) / 512 + 1) * 512ull;
        struct iovec v[2] = { { buf, len / 2 }, { buf + len / 2, len - len / 2 } };

        if (g_rand_boolean(r)) {
            for (uint64_t j = 0; j < len; j++) {
                buf[j] = g_rand_int(r);
            }
            g_assert_cmpint(blk_pwritev(w->blk, off, v, 2, i % 5 ? 0 : BDRV_REQ_FUA), ==, 0);
            memcpy(w->model + off - w->base, buf, len);
        } else {
            g_assert_cmpint(blk_preadv(w->blk, off, v, 2), ==, 0);
            g_assert_true(memcmp(buf, w->model + off - w->base, len) == 0);
        }
    }
    return NULL;
}

static void test_unix(void)
{
    g_autofree char *img = NULL, *opts = NULL;
    g_autofree uint8_t *model = g_malloc0(IMG_SIZE);
    g_autofree uint8_t *big = g_malloc(40 * MiB);
    BlockDriverState *bs;
    BlockLayer *bl;
    BlockBackend *blk;
    GThread *t[4];
    Worker w[4];
    uint64_t pnum;
    unsigned st;
    Server s;
    struct iovec v = { big, 40 * MiB };

    if (!have_tools()) {
        return;
    }
    img = make_image("unix.qcow2");
    s = serve(img, false, "");
    bl = block_layer_new();
    opts = g_strdup_printf("driver=nbd,node-name=nbd0,server.type=unix,server.path=%s,"
                           "export=exp,discard=unmap", s.sock);
    g_assert_true(blockdev_parse(bl, opts, &error_abort));
    bs = bdrv_find_node(bl, "nbd0");
    g_assert_cmpint(bdrv_getlength(bs), ==, IMG_SIZE);
    g_assert_true(g_str_has_prefix(bs->filename, "nbd+unix:///exp?socket="));
    blk = attach(bl, "nbd0");

    /* A fresh image is one hole that reads as zeroes. */
    g_assert_cmpint(bdrv_block_status(bs, 0, IMG_SIZE, &pnum, &st), ==, 0);
    g_assert_cmpuint(st, ==, BDRV_BLOCK_ZERO | BDRV_BLOCK_ALLOCATED);
    g_assert_cmpuint(pnum, ==, IMG_SIZE);

    /* Four writers at once, each in its own 4 MiB. */
    for (int i = 0; i < 4; i++) {
        w[i] = (Worker) { .blk = blk, .model = model + i * 4 * MiB, .base = i * 4 * MiB,
                          .size = 4 * MiB, .seed = SEED + i };
        t[i] = g_thread_new("writer", write_worker, &w[i]);
    }
    for (int i = 0; i < 4; i++) {
        g_thread_join(t[i]);
    }
    g_assert_cmpint(bdrv_block_status(bs, 0, IMG_SIZE, &pnum, &st), ==, 0);
    g_assert_true(st & BDRV_BLOCK_DATA);

    /* More than one request may carry (32 MiB): it goes in pieces. */
    for (uint64_t j = 0; j < 40 * MiB; j++) {
        big[j] = j * 7 + (j >> 20);
    }
    g_assert_cmpint(blk_pwritev(blk, 20 * MiB, &v, 1, 0), ==, 0);
    memcpy(model + 20 * MiB, big, 40 * MiB);
    g_assert_cmpint(blk_flush(blk), ==, 0);
    check_range(blk, model, 0, IMG_SIZE);

    /* Zeroes kept allocated, zeroes that may unmap, a discard (reads back as zeroes here). */
    g_assert_cmpint(blk_pwrite_zeroes(blk, 1 * MiB, 64 * KiB, 0), ==, 0);
    memset(model + 1 * MiB, 0, 64 * KiB);
    g_assert_cmpint(blk_pwrite_zeroes(blk, 30 * MiB, 2 * MiB, BDRV_REQ_MAY_UNMAP), ==, 0);
    memset(model + 30 * MiB, 0, 2 * MiB);
    g_assert_cmpint(bdrv_block_status(bs, 30 * MiB, 2 * MiB, &pnum, &st), ==, 0);
    g_assert_true(st & BDRV_BLOCK_ZERO);
    g_assert_cmpint(blk_pdiscard(blk, 40 * MiB, 1 * MiB), ==, 0);
    check_range(blk, model, 0, 40 * MiB);
    {
        g_autofree uint8_t *buf = g_malloc(1 * MiB);
        struct iovec dv = { buf, 1 * MiB };

        /* A discard may leave the data or zeroes: take what it left. */
        g_assert_cmpint(blk_preadv(blk, 40 * MiB, &dv, 1), ==, 0);
        for (uint64_t j = 0; j < 1 * MiB; j++) {
            g_assert_true(buf[j] == model[40 * MiB + j] || buf[j] == 0);
        }
        memcpy(model + 40 * MiB, buf, 1 * MiB);
    }
    check_range(blk, model, 0, IMG_SIZE);
    /* Past the end is refused by the row (a protocol node is not bounds-checked above). */
    g_assert_cmpint(blk_pwrite_zeroes(blk, IMG_SIZE - 512, 1024, 0), <, 0);
    g_assert_cmpint(blk_flush(blk), ==, 0);

    blk_detach(blk);
    block_layer_free(bl);
    server_stop(&s);
    qemu_compares(img, model);
}

static void test_tcp(void)
{
    g_autofree char *img = NULL, *opts = NULL, *opts2 = NULL, *opts3 = NULL;
    g_autofree uint8_t *model = g_malloc0(IMG_SIZE);
    g_autofree uint8_t *buf = g_malloc(64 * KiB);
    struct iovec v = { buf, 64 * KiB };
    Error *err = NULL;
    BlockLayer *bl;
    BlockBackend *blk;
    Server s;

    if (!have_tools()) {
        return;
    }
    img = make_image("tcp.qcow2");
    s = serve(img, true, "");
    bl = block_layer_new();
    opts = g_strdup_printf("file=nbd://127.0.0.1:%d/exp,format=raw,if=none,id=d0", s.port);
    g_assert_true(drive_parse(bl, opts, &error_abort));
    blk = attach(bl, "d0");
    memset(buf, 0xa5, 64 * KiB);
    g_assert_cmpint(blk_pwritev(blk, 4096, &v, 1, BDRV_REQ_FUA), ==, 0);
    memset(model + 4096, 0xa5, 64 * KiB);
    check_range(blk, model, 0, 1 * MiB);
    blk_detach(blk);
    block_layer_free(bl);

    /* The legacy syntax, probing the format (raw over nbd, with QEMU's warning). */
    bl = block_layer_new();
    opts2 = g_strdup_printf("file=nbd:127.0.0.1:%d:exportname=exp,if=none,id=d1",
                            s.port);
    g_assert_true(drive_parse(bl, opts2, &error_abort));
    blk = attach(bl, "d1");
    check_range(blk, model, 0, 1 * MiB);
    blk_detach(blk);
    block_layer_free(bl);
    server_stop(&s);

    /* A read-only export: refused read-write (as QEMU), taken read-only. */
    s = serve(img, true, "-r");
    bl = block_layer_new();
    opts3 = g_strdup_printf("driver=nbd,node-name=ro,server.type=inet,server.host=127.0.0.1,"
                            "server.port=%d,export=exp", s.port);
    g_assert_false(blockdev_parse(bl, opts3, &err));
    g_assert_cmpstr(error_get_pretty(err), ==, "NBD export is read-only");
    g_clear_pointer(&err, error_free);
    g_free(opts3);
    opts3 = g_strdup_printf("driver=nbd,node-name=ro,server.type=inet,server.host=127.0.0.1,"
                            "server.port=%d,export=exp,auto-read-only=on", s.port);
    g_assert_true(blockdev_parse(bl, opts3, &error_abort));
    g_assert_true(bdrv_find_node(bl, "ro")->read_only);
    block_layer_free(bl);

    /* An export that is not there: the server's refusal, in words. */
    bl = block_layer_new();
    g_free(opts3);
    opts3 = g_strdup_printf("driver=nbd,node-name=no,server.type=inet,server.host=127.0.0.1,"
                            "server.port=%d,export=nosuch,read-only=on", s.port);
    g_assert_false(blockdev_parse(bl, opts3, &err));
    g_test_message("%s", error_get_pretty(err));
    g_assert_nonnull(strstr(error_get_pretty(err), "nosuch"));
    error_free(err);
    block_layer_free(bl);
    server_stop(&s);
}

/* Sector i of the shared 64 KiB at 1 MiB belongs to worker i % 2: both write into every block. */
static gpointer sector_worker(gpointer opaque)
{
    Worker *w = opaque;
    g_autoptr(GRand) r = g_rand_new_with_seed(w->seed);
    uint8_t buf[512];
    struct iovec v = { buf, sizeof(buf) };

    for (int i = 0; i < 200; i++) {
        uint64_t sector = g_rand_int_range(r, 0, 64) * 2 + w->base;

        memset(buf, g_rand_int(r), sizeof(buf));
        g_assert_cmpint(blk_pwritev(w->blk, 1 * MiB + sector * 512, &v, 1, 0), ==, 0);
        memcpy(w->model + sector * 512, buf, sizeof(buf));
    }
    return NULL;
}

/*
 * A server that wants 4 KiB-aligned requests (blkdebug's align under
 * qemu-nbd: NBD_INFO_BLOCK_SIZE minimum 4096): unaligned reads, writes
 * and zeroes still land, and two threads writing alternate sectors of the
 * same blocks lose nothing (read-modify-write against plain writes).
 */
static void test_aligned_server(void)
{
    g_autofree char *img = NULL, *opts = NULL, *spec = NULL;
    g_autofree uint8_t *model = g_malloc0(IMG_SIZE);
    g_autofree uint8_t *buf = g_malloc(10000);
    struct iovec v = { buf, 10000 };
    BlockLayer *bl;
    BlockBackend *blk;
    GThread *t[2];
    Worker w[2];
    Server s;

    if (!have_tools()) {
        return;
    }
    img = make_image("aligned.qcow2");
    spec = g_strdup_printf("driver=blkdebug,align=4096,image.driver=qcow2,"
                           "image.file.driver=file,image.file.filename=%s", img);
    s = serve(spec, false, "--image-opts");
    bl = block_layer_new();
    opts = g_strdup_printf("driver=nbd,node-name=a,server.type=unix,server.path=%s,"
                           "export=exp", s.sock);
    g_assert_true(blockdev_parse(bl, opts, &error_abort));
    blk = attach(bl, "a");
    for (int i = 0; i < 10000; i++) {
        buf[i] = i * 13;
    }
    g_assert_cmpint(blk_pwritev(blk, 4096 * 3 + 100, &v, 1, BDRV_REQ_FUA), ==, 0);
    memcpy(model + 4096 * 3 + 100, buf, 10000);
    g_assert_cmpint(blk_pwrite_zeroes(blk, 4096 * 3 + 1000, 5000, 0), ==, 0);
    memset(model + 4096 * 3 + 1000, 0, 5000);
    g_assert_cmpint(blk_pdiscard(blk, 100, 1000), ==, 0);
    check_range(blk, model, 0, 1 * MiB);
    check_range(blk, model, 4096 * 3 + 7, 333);

    for (int i = 0; i < 2; i++) {
        w[i] = (Worker) { .blk = blk, .model = model + 1 * MiB, .base = i, .seed = SEED + i };
        t[i] = g_thread_new("sectors", sector_worker, &w[i]);
    }
    for (int i = 0; i < 2; i++) {
        g_thread_join(t[i]);
    }
    check_range(blk, model, 0, 2 * MiB);
    /* qemu-nbd is killed, not stopped: its qcow2 caches go to disk on a flush only. */
    g_assert_cmpint(blk_flush(blk), ==, 0);
    blk_detach(blk);
    block_layer_free(bl);
    server_stop(&s);
    qemu_compares(img, model);
}

static gpointer read_worker(gpointer opaque)
{
    Worker *w = opaque;
    g_autofree uint8_t *buf = g_malloc(1 * MiB);
    struct iovec v = { buf, 1 * MiB };

    while (!*w->stop) {
        int ret = blk_preadv(w->blk, w->base, &v, 1);

        if (ret < 0) {
            w->last_error = ret;
            /* Polled by the main thread before the join. */
            __atomic_store_n(&w->fails, 1, __ATOMIC_RELEASE);
            break;
        }
    }
    return NULL;
}

static void test_killed(void)
{
    g_autofree char *img = NULL, *opts = NULL;
    g_autofree uint8_t *buf = g_malloc(4096);
    struct iovec v = { buf, 4096 };
    volatile bool stop = false;
    gint64 t0;
    BlockLayer *bl;
    BlockBackend *blk;
    GThread *t[4];
    Worker w[4];
    Server s;

    if (!have_tools()) {
        return;
    }
    img = make_image("killed.qcow2");
    s = serve(img, false, "");
    bl = block_layer_new();
    opts = g_strdup_printf("driver=nbd,node-name=k,server.type=unix,server.path=%s,export=exp",
                           s.sock);
    g_assert_true(blockdev_parse(bl, opts, &error_abort));
    blk = attach(bl, "k");
    for (int i = 0; i < 4; i++) {
        w[i] = (Worker) { .blk = blk, .base = i * MiB, .stop = &stop };
        t[i] = g_thread_new("reader", read_worker, &w[i]);
    }
    g_usleep(200 * 1000);
    t0 = g_get_monotonic_time();
    server_stop(&s);
    /* Bounded: every reader is out within 10 s (a hang fails here, not at the timeout). */
    for (int i = 0; i < 4; i++) {
        while (!__atomic_load_n(&w[i].fails, __ATOMIC_ACQUIRE) &&
               g_get_monotonic_time() - t0 < 10 * G_USEC_PER_SEC) {
            g_usleep(10 * 1000);
        }
        g_assert_cmpint(__atomic_load_n(&w[i].fails, __ATOMIC_ACQUIRE), ==, 1);
        g_assert_cmpint(w[i].last_error, ==, -EIO);
        g_thread_join(t[i]);
    }
    /* The node stays, and says so at once. */
    g_assert_cmpint(blk_preadv(blk, 0, &v, 1), ==, -EIO);
    g_assert_cmpint(blk_pwritev(blk, 0, &v, 1, 0), ==, -EIO);
    g_assert_cmpint(blk_flush(blk), ==, -EIO);
    g_assert_cmpint(blk_getlength(blk), ==, IMG_SIZE);
    blk_detach(blk);
    block_layer_free(bl);
}

int main(int argc, char **argv)
{
    int ret;

    g_test_init(&argc, &argv, NULL);
    signal(SIGPIPE, SIG_IGN);
    tmpdir = g_dir_make_tmp("test-block-nbd-XXXXXX", NULL);
    g_test_add_func("/nbd/qemu-nbd/unix", test_unix);
    g_test_add_func("/nbd/qemu-nbd/tcp", test_tcp);
    g_test_add_func("/nbd/qemu-nbd/aligned", test_aligned_server);
    g_test_add_func("/nbd/qemu-nbd/killed", test_killed);
    ret = g_test_run();
    run("rm -rf %s", tmpdir);
    return ret;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz target: the NBD server (nbd/server-client.c and the parsers of
 * nbd/server-parse.c) as a client's bytes reach it. The input is all a
 * client sends after the server's greeting: its flags, options, then
 * requests (with write payloads). It goes into one end of a socketpair
 * whose other end is served by the server's own client thread, on a
 * writable export of a 1 MiB raw image in a temporary file; what the
 * server answers is read and dropped.
 *
 * Checked: no crash or sanitizer report; the client thread ends once the
 * input does (a malformed header ends it, never the process); the export
 * is still there and serves the next input.
 *
 * Seeds (scripts/fuzz-corpus): handshakes through EXPORT_NAME, GO with
 * structured replies and base:allocation, then reads, writes, zeroes,
 * trims, flushes and block status, encoded there.
 */
#include "qemu/osdep.h"
#include <sys/socket.h>
#include "qapi/error.h"
#include "io/channel.h"
#include "qemu/tsan.h"
#include "nbd/server-int.h"
#include "fuzz.h"

#define IMAGE_SIZE (1 << 20)

static NbdServer *server;
static char *image_dir;

static void cleanup(void)
{
    g_autofree char *path = g_build_filename(image_dir, "disk.raw", NULL);

    unlink(path);
    rmdir(image_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    g_autofree char *path = NULL, *opts = NULL;
    BlockLayer *bl = block_layer_new();
    int fd;

    signal(SIGPIPE, SIG_IGN);
    image_dir = g_dir_make_tmp("fuzz-nbd-XXXXXX", NULL);
    g_assert(image_dir);
    atexit(cleanup);
    path = g_build_filename(image_dir, "disk.raw", NULL);
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    g_assert(fd >= 0 && ftruncate(fd, IMAGE_SIZE) == 0);
    close(fd);
    opts = g_strdup_printf("driver=raw,node-name=n0,file.driver=file,file.filename=%s", path);
    if (!blockdev_parse(bl, opts, &error_abort)) {
        abort();
    }
    server = nbd_server_new(bl, 0, NULL, NULL);
    if (!nbd_export_add(server, "e0", "n0", "disk", "fuzzed", true, false, &error_abort)) {
        abort();
    }
    return 0;
}

/* Reads and drops what the server answers, until it closes. */
static void *drain(void *opaque)
{
    int fd = GPOINTER_TO_INT(opaque);
    char buf[65536];

    while (read(fd, buf, sizeof(buf)) > 0) {
    }
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    NbdClient c = { .server = server, .peer = (char *)"fuzz" };
    QemuThread client, drainer;
    size_t done = 0;
    int sv[2];

    g_assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    c.ch = channel_socket_new(sv[0]);
    g_assert(qemu_thread_create(&client, "nbd/fuzz", nbd_client_thread, &c) == 0);
    g_assert(qemu_thread_create(&drainer, "nbd/drain", drain, GINT_TO_POINTER(sv[1])) == 0);
    while (done < size) {
        ssize_t n = write(sv[1], data + done, size - done);

        if (n <= 0) {
            break;                      /* the server ended the client early: fine */
        }
        done += n;
    }
    shutdown(sv[1], SHUT_WR);
    qemu_thread_join(&client);
    g_assert(c.done);
    qemu_thread_join(&drainer);
    channel_unref(c.ch);
    close(sv[1]);
    /* The export outlives any client. */
    tsan_g_mutex_lock(&server->lock);
    g_assert(nbd_export_find_name(server, "disk"));
    tsan_g_mutex_unlock(&server->lock);
    return 0;
}

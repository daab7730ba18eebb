/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The rest of the fault matrix (test-migration-fail.c has the first part):
 * a tcp connection cut by a forwarding process in the middle, a
 * destination that stops reading, migrate_cancel when there is nothing to
 * cancel, a file: migration and a background snapshot into a full
 * filesystem, and snapshot files cut short. In each the source keeps
 * running its verify guest, both sides say what went wrong, a destination
 * never runs a guest from an incomplete stream, and a second migration
 * succeeds.
 */
#include <errno.h>
#include <sched.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "libvmtest.h"
#include "migproxy.h"
#include "migtest.h"

#define MEM "256M"
#define APPEND "mode=verify mem=128"

/* ---- a forwarding process that cuts the connection ---- */

typedef struct Cutter {
    int listen_fd;
    int dst_port;
    uint64_t cut_after;         /* bytes forwarded source -> destination before the cut */
    uint64_t forwarded;         /* the thread's, read after joining it */
    GThread *thread;
} Cutter;

/* Forwards the source's bytes to the destination, then closes both ends at once. */
static gpointer cutter_thread(gpointer opaque)
{
    Cutter *c = opaque;
    int src = accept(c->listen_fd, NULL, NULL);
    int dst = migproxy_tcp_connect(c->dst_port);
    static char buf[65536];
    uint64_t done = 0;

    g_assert_cmpint(src, >=, 0);
    g_assert_cmpint(dst, >=, 0);
    while (done < c->cut_after) {
        ssize_t n = read(src, buf, MIN(sizeof(buf), c->cut_after - done));
        if (n <= 0) {
            break;
        }
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(dst, buf + off, n - off);
            g_assert_cmpint(w, >, 0);
            off += w;
        }
        done += n;
    }
    shutdown(src, SHUT_RDWR);
    shutdown(dst, SHUT_RDWR);
    close(src);
    close(dst);
    c->forwarded = done;
    return NULL;
}

static void test_tcp_cut(void)
{
    g_autofree char *dst_uri = NULL;
    g_autofree char *via = NULL;
    Cutter c = { .cut_after = 8 << 20 };
    int via_port;
    JsonNode *info;
    VM *src, *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source(MEM, APPEND);
    dst_uri = migtest_uri("tcp");
    c.dst_port = atoi(strrchr(dst_uri, ':') + 1);
    dst = migtest_start_dest(MEM, APPEND, false, dst_uri);
    c.listen_fd = migproxy_tcp_listen(&via_port);
    c.thread = g_thread_new("cutter", cutter_thread, &c);
    via = g_strdup_printf("tcp:127.0.0.1:%d", via_port);
    /* 32 MiB/s: the cut comes well before the 128 MiB work area is across. */
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'max-bandwidth': 33554432}}"));
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", via));
    info = vm_wait_migration(src, "completed|failed|cancelled", 120);
    g_assert_cmpstr(json_get_str(info, "status"), ==, "failed");
    g_assert_nonnull(strstr(json_get_str(info, "error-desc"),
                            "the destination closed the connection"));
    json_node_unref(info);
    g_thread_join(c.thread);
    close(c.listen_fd);
    g_assert_cmpuint(c.forwarded, ==, c.cut_after);
    g_assert_cmpint(vm_wait_exit(dst, 60), ==, 1);
    g_assert_nonnull(strstr(dst->stderr_text->str, "load of migration failed"));
    g_assert_cmpuint(vm_count_lines(dst, "PASS"), ==, 0);
    vm_kill(dst);
    migtest_assert_source_alive(src);
    migtest_migrate_again_ok(src, MEM, APPEND);
    vm_kill(src);
}

/*
 * A destination that accepts the connection and never reads: the source
 * blocks once the socket buffers are full. migrate_cancel must still end
 * the migration (there is no stall timeout parameter; QEMU has none).
 */
static void test_dest_stops_reading(void)
{
    g_autofree char *path = g_strdup_printf("%s/never-reads.sock", vmtest_tmpdir());
    struct sockaddr_un un = { .sun_family = AF_UNIX };
    int64_t before, after;
    JsonNode *info;
    int fd;
    VM *src;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source(MEM, APPEND);
    g_strlcpy(un.sun_path, path, sizeof(un.sun_path));
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    g_assert_cmpint(bind(fd, (struct sockaddr *)&un, sizeof(un)), ==, 0);
    g_assert_cmpint(listen(fd, 1), ==, 0);     /* the kernel completes the connect; no accept */
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': 'unix:%s'}}",
                              path));
    json_node_unref(vm_wait_migration(src, "active", 60));
    /* Stuck: nothing more goes out over a second. */
    do {
        info = vm_qmp_ok(src, "{'execute': 'query-migrate'}");
        before = json_has(info, "ram") ? json_get_int(info, "ram.transferred") : -1;
        json_node_unref(info);
        vm_pump(src, 1000);
        info = vm_qmp_ok(src, "{'execute': 'query-migrate'}");
        after = json_has(info, "ram") ? json_get_int(info, "ram.transferred") : -2;
        g_assert_cmpstr(json_get_str(info, "status"), ==, "active");
        json_node_unref(info);
    } while (after != before);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate_cancel'}"));
    json_node_unref(vm_wait_migration(src, "cancelled", 30));
    close(fd);
    migtest_assert_source_alive(src);
    migtest_migrate_again_ok(src, MEM, APPEND);
    vm_kill(src);
}

/* migrate_cancel with no migration, and after one completed: a no-op, as in QEMU. */
static void test_cancel_nothing(void)
{
    g_autofree char *uri = NULL;
    JsonNode *info;
    VM *src, *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source(MEM, APPEND);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate_cancel'}"));
    info = vm_qmp_ok(src, "{'execute': 'query-migrate'}");
    g_assert_false(json_has(info, "status"));
    json_node_unref(info);
    migtest_assert_source_alive(src);

    uri = migtest_uri("unix");
    dst = migtest_start_dest(MEM, APPEND, false, uri);
    migtest_migrate_expect(src, uri, "completed", NULL);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate_cancel'}"));
    info = vm_qmp_ok(src, "{'execute': 'query-migrate'}");
    g_assert_cmpstr(json_get_str(info, "status"), ==, "completed");
    json_node_unref(info);
    migtest_wait_incoming_done(dst);
    migtest_assert_guest_continues(dst, APPEND, 0);
    vm_kill(dst);
    vm_kill(src);
}

/* ---- full filesystem, cut snapshot files ---- */

static void enable_background_snapshot(VM *vm, bool on)
{
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'migrate-set-capabilities', 'arguments': "
                              "{'capabilities': [{'capability': 'background-snapshot', "
                              "'state': %s}]}}", on ? "true" : "false"));
}

/* A destination given @file refuses it: exit 1, the reason on stderr, no guest run. */
static void assert_restore_refused(const char *file, const char *why)
{
    /* No QMP: a file is refused so fast that the process may be gone before a client connects. */
    VM *dst = vm_spawn("dst", false, MIGTEST_BASE_ARGS "-m %s -kernel %s -append '%s' "
                       "-incoming 'file:%s'", MEM, vmtest_firmware(), APPEND, file);

    g_assert_cmpint(vm_wait_exit(dst, 60), ==, 1);
    if (!strstr(dst->stderr_text->str, why)) {
        g_error("restoring %s: expected '%s' in: %s", file, why, dst->stderr_text->str);
    }
    g_assert_cmpuint(vm_count_lines(dst, "PASS"), ==, 0);
    vm_kill(dst);
}

/*
 * A 16 MiB tmpfs at @dir, or a loud skip (mounting needs root). It lives
 * in a mount namespace of this process and the VMs it starts, so it goes
 * away with them even if the test dies before it unmounts.
 */
static bool mount_small_tmpfs(const char *dir)
{
    g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
    if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
        mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=0700") < 0) {
        g_autofree char *why = g_strdup_printf("cannot mount a small tmpfs (%s); this test "
                                               "needs root", g_strerror(errno));
        vmtest_skip(why);
        return false;
    }
    return true;
}

static void test_full_filesystem(void)
{
    g_autofree char *dir = g_strdup_printf("%s/full", vmtest_tmpdir());
    g_autofree char *file = g_strdup_printf("%s/precopy.mig", dir);
    g_autofree char *snap = g_strdup_printf("%s/snapshot.mig", dir);
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    g_autofree char *snap_uri = g_strdup_printf("file:%s", snap);
    VM *src;

    if (!vmtest_require_kvm() || !mount_small_tmpfs(dir)) {
        return;
    }
    src = migtest_start_source(MEM, APPEND);
    migtest_migrate_expect(src, uri, "failed", "No space left on device");
    migtest_assert_source_alive(src);
    assert_restore_refused(file, "load of migration failed");
    g_assert_cmpint(unlink(file), ==, 0);

    enable_background_snapshot(src, true);
    migtest_migrate_expect(src, snap_uri, "failed", "No space left on device");
    /* Every page write-unprotected again: the guest verifies its whole area on. */
    migtest_assert_source_alive(src);
    assert_restore_refused(snap, "load of migration failed");
    enable_background_snapshot(src, false);
    g_assert_cmpint(umount(dir), ==, 0);

    migtest_migrate_again_ok(src, MEM, APPEND);
    vm_kill(src);
}

/* Offset of the vmdesc record (0x06, be32 length, JSON to the end) in @d. */
static size_t vmdesc_offset(const uint8_t *d, size_t len)
{
    for (size_t off = len - 5; off > 0; off--) {
        uint32_t n = (uint32_t)d[off + 1] << 24 | d[off + 2] << 16 | d[off + 3] << 8 | d[off + 4];
        if (d[off] == 0x06 && n == len - off - 5 && d[off - 1] == 0x00) {
            return off;
        }
    }
    g_assert_not_reached();
}

/*
 * A snapshot file cut before its EOF never restores. One whose device
 * state and EOF are whole but whose vmdesc (the record our sources always
 * end with) is missing or cut restores with a warning: its source stopped
 * for good, and the guest is whole (QEMU does not need the vmdesc either).
 * The whole file restores and the guest goes on verifying.
 */
static void test_partial_snapshot(void)
{
    g_autofree char *file = g_strdup_printf("%s/whole.snap", vmtest_tmpdir());
    g_autofree char *cut = g_strdup_printf("%s/cut.snap", vmtest_tmpdir());
    g_autofree char *incoming = g_strdup_printf("file:%s", file);
    g_autofree char *cut_incoming = g_strdup_printf("file:%s", cut);
    g_autofree gchar *data = NULL;
    gsize len;
    size_t cuts[4];
    int pass;
    VM *src, *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source(MEM, APPEND);
    enable_background_snapshot(src, true);
    /* The file holds the guest as it was when the snapshot started. */
    pass = migtest_last_pass(src);
    migtest_migrate_expect(src, incoming, "completed", NULL);
    vm_kill(src);

    g_assert_true(g_file_get_contents(file, &data, &len, NULL));
    cuts[0] = len / 2;
    cuts[1] = vmdesc_offset((const uint8_t *)data, len) - 1;    /* without the EOF byte */
    cuts[2] = cuts[1] + 1;                                      /* ends with the EOF byte */
    cuts[3] = len - 1;                                          /* the vmdesc cut short */
    for (size_t i = 0; i < 2; i++) {
        g_assert_true(g_file_set_contents(cut, data, cuts[i], NULL));
        assert_restore_refused(cut, "load of migration failed");
    }
    for (size_t i = 2; i < G_N_ELEMENTS(cuts); i++) {
        g_assert_true(g_file_set_contents(cut, data, cuts[i], NULL));
        dst = migtest_start_dest(MEM, APPEND, false, cut_incoming);
        migtest_wait_incoming_done(dst);
        g_assert_nonnull(strstr(dst->stderr_text->str, "warning: the device state loaded "
                                "whole; the stream's trailing description is damaged: "));
        migtest_assert_guest_continues(dst, APPEND, pass);
        vm_kill(dst);
    }
    dst = migtest_start_dest(MEM, APPEND, false, incoming);
    migtest_wait_incoming_done(dst);
    g_assert_null(strstr(dst->stderr_text->str, "trailing description"));
    migtest_assert_guest_continues(dst, APPEND, pass);
    vm_kill(dst);
    unlink(cut);
    unlink(file);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/migration-faults/tcp-cut", test_tcp_cut);
    g_test_add_func("/migration-faults/dest-stops-reading", test_dest_stops_reading);
    g_test_add_func("/migration-faults/cancel-nothing", test_cancel_nothing);
    g_test_add_func("/migration-faults/full-filesystem", test_full_filesystem);
    g_test_add_func("/migration-faults/partial-snapshot", test_partial_snapshot);
    return g_test_run();
}

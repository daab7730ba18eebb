/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Migrations that go wrong: unreachable destination, a destination killed
 * mid-stream, migrate_cancel, a full disk, an exec command that exits early,
 * a source that dies. The source must report failed/cancelled with a
 * reason, keep its guest running with no lost work (the verify firmware
 * keeps passing) and accept a new migration; a destination whose source
 * died exits with status 1 and says why.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "libvmtest.h"
#include "migtest.h"

#define MEM "256M"
#define APPEND "mode=verify mem=128"

/*
 * A source, a destination on a fresh @transport URI (returned in *@uri),
 * and a migration between them at 8 MiB/s, slow enough to interfere with
 * mid-stream; returns once it is active.
 */
static VM *start_slow_migration(const char *transport, char **uri, VM **dst)
{
    VM *src = migtest_start_source(MEM, APPEND);

    *uri = migtest_uri(transport);
    *dst = migtest_start_dest(MEM, APPEND, false, *uri);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'max-bandwidth': 8388608}}"));
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", *uri));
    json_node_unref(vm_wait_migration(src, "active", 60));
    return src;
}

static void test_unreachable(void)
{
    g_autofree char *path = g_strdup_printf("%s/nobody-listens.sock", vmtest_tmpdir());
    g_autofree char *uri = g_strdup_printf("unix:%s", path);
    VM *src;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source(MEM, APPEND);
    migtest_migrate_expect(src, uri, "failed", "Failed to connect");
    migtest_migrate_expect(src, "tcp:127.0.0.1:1", "failed", "Failed to connect");
    migtest_assert_source_alive(src);
    migtest_migrate_again_ok(src, MEM, APPEND);
    vm_kill(src);
}

static void test_bad_uri(void)
{
    VM *src;
    JsonNode *r;
    g_autofree char *desc = NULL;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source(MEM, APPEND);
    r = vm_qmp(src, "{'execute': 'migrate', 'arguments': {'uri': 'carrier-pigeon:x'}}");
    desc = vm_qmp_error_desc(r, NULL);
    g_assert_nonnull(strstr(desc, "unknown migration protocol"));
    json_node_unref(r);
    migtest_assert_source_alive(src);
    vm_kill(src);
}

static void test_dest_dies(void)
{
    g_autofree char *uri = NULL;
    VM *src, *dst;
    JsonNode *info;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = start_slow_migration("unix", &uri, &dst);
    info = migtest_kill_dest_mid_stream(src, dst, "ram.transferred");
    /* Not just "Broken pipe": say who went away. */
    g_assert_nonnull(strstr(json_get_str(info, "error-desc"), "the destination closed the connection"));
    json_node_unref(info);
    migtest_assert_source_alive(src);
    migtest_migrate_again_ok(src, MEM, APPEND);
    vm_kill(src);
}

/*
 * A destination started with more RAM refuses the stream (its block list
 * does not match) and exits; the source says the destination went away,
 * keeps running, and migrates to a right one.
 */
static void test_dest_refuses(gconstpointer data)
{
    bool return_path = GPOINTER_TO_INT(data);
    g_autofree char *uri = NULL;
    VM *src, *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source(MEM, APPEND);
    if (return_path) {
        /* The source also hears back on the return path: it fails all the same. */
        json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-capabilities', 'arguments': "
                                  "{'capabilities': [{'capability': 'return-path', "
                                  "'state': true}]}}"));
    }
    uri = migtest_uri("unix");
    dst = migtest_start_dest("512M", APPEND, false, uri);
    migtest_migrate_expect(src, uri, "failed", "the destination closed the connection");
    g_assert_cmpint(vm_wait_exit(dst, 60), ==, 1);
    g_assert_nonnull(strstr(dst->stderr_text->str, "Length mismatch"));
    vm_kill(dst);
    migtest_assert_source_alive(src);
    migtest_migrate_again_ok(src, MEM, APPEND);
    vm_kill(src);
}

/* The destination's incoming migration reached @want (query-migrate). */
static void wait_incoming_status(VM *dst, const char *want)
{
    JsonNode *info = vm_wait_migration(dst, want, 60);

    json_node_unref(info);
}

/*
 * A source that sends the stream's header and then nothing, keeping the
 * connection open, would leave the destination loading for ever:
 * migrate_cancel on the destination ends it (exit 1, the guest never
 * ran). Cancelling while it still listens ends it too.
 */
static void test_dest_cancel(void)
{
    static const char header[] = "QEVM\0\0\0\3\7\0\0\0\7microvm";
    g_autofree char *uri = NULL;
    struct sockaddr_un un = { .sun_family = AF_UNIX };
    int fd;
    VM *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    uri = migtest_uri("unix");
    dst = migtest_start_dest(MEM, APPEND, false, uri);
    wait_incoming_status(dst, "setup");
    g_strlcpy(un.sun_path, uri + strlen("unix:"), sizeof(un.sun_path));
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    g_assert_cmpint(connect(fd, (struct sockaddr *)&un, sizeof(un)), ==, 0);
    g_assert_cmpint(write(fd, header, sizeof(header) - 1), ==, sizeof(header) - 1);
    wait_incoming_status(dst, "active");
    json_node_unref(vm_qmp_ok(dst, "{'execute': 'migrate_cancel'}"));
    g_assert_cmpint(vm_wait_exit(dst, 60), ==, 1);
    g_assert_nonnull(strstr(dst->stderr_text->str, "incoming migration cancelled"));
    g_assert_cmpuint(vm_count_lines(dst, "PASS"), ==, 0);
    close(fd);
    vm_kill(dst);

    g_free(uri);
    uri = migtest_uri("unix");
    dst = migtest_start_dest(MEM, APPEND, false, uri);
    wait_incoming_status(dst, "setup");
    json_node_unref(vm_qmp_ok(dst, "{'execute': 'migrate_cancel'}"));
    g_assert_cmpint(vm_wait_exit(dst, 60), ==, 1);
    g_assert_nonnull(strstr(dst->stderr_text->str, "before a source connected"));
    vm_kill(dst);
}

static void test_cancel(void)
{
    g_autofree char *uri = NULL;
    VM *src, *dst;
    JsonNode *info;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = start_slow_migration("tcp", &uri, &dst);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate_cancel'}"));
    info = vm_wait_migration(src, "cancelled", 60);
    json_node_unref(info);
    /* The destination saw a truncated stream: it must not run a guest from it. */
    g_assert_cmpint(vm_wait_exit(dst, 60), ==, 1);
    g_assert_nonnull(strstr(dst->stderr_text->str, "load of migration failed"));
    vm_kill(dst);
    migtest_assert_source_alive(src);
    migtest_migrate_again_ok(src, MEM, APPEND);
    vm_kill(src);
}

static void test_disk_full(void)
{
    VM *src;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source(MEM, APPEND);
    /* /dev/full: every write fails with ENOSPC, like a full disk. */
    migtest_migrate_expect(src, "file:/dev/full", "failed", "No space left on device");
    migtest_assert_source_alive(src);
    vm_kill(src);
}

static void test_exec_exits_early(void)
{
    VM *src;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source(MEM, APPEND);
    migtest_migrate_expect(src, "exec:head -c 100000 > /dev/null", "failed", "Broken pipe");
    migtest_assert_source_alive(src);
    migtest_migrate_again_ok(src, MEM, APPEND);
    vm_kill(src);
}

static void test_source_dies(void)
{
    g_autofree char *uri = NULL;
    VM *src, *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = start_slow_migration("unix", &uri, &dst);
    kill(src->pid, SIGKILL);
    g_assert_cmpint(vm_wait_exit(dst, 60), ==, 1);
    g_assert_nonnull(strstr(dst->stderr_text->str, "load of migration failed"));
    g_assert_cmpuint(vm_count_lines(dst, "PASS"), ==, 0);
    vm_kill(dst);
    vm_kill(src);
}

/*
 * xbzrle-cache-size: not a power of two, or below a page, is refused (QMP
 * and HMP); one far beyond the host's memory is accepted, as QEMU accepts
 * it, and used only up to the guest's RAM, so the migration still works.
 */
static void test_xbzrle_cache_size(void)
{
    g_autofree char *uri = migtest_uri("unix");
    g_autofree char *desc = NULL, *hmp = NULL;
    const char *idle = "mode=idle mem=8";
    VM *src, *dst;
    JsonNode *r;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source("64M", idle);
    r = vm_qmp(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                    "{'xbzrle-cache-size': 4097}}");
    desc = vm_qmp_error_desc(r, NULL);
    g_assert_nonnull(strstr(desc, "xbzrle_cache_size"));
    json_node_unref(r);
    hmp = vm_hmp(src, "migrate_set_parameter xbzrle-cache-size 1K");
    g_assert_nonnull(strstr(hmp, "xbzrle_cache_size"));
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-capabilities', 'arguments': "
                              "{'capabilities': [{'capability': 'xbzrle', 'state': true}]}}"));
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'xbzrle-cache-size': 4611686018427387904}}"));
    dst = migtest_start_dest("64M", idle, false, uri);
    migtest_migrate_expect(src, uri, "completed", NULL);
    r = vm_qmp_ok(src, "{'execute': 'query-migrate'}");
    /* The RAM blocks (64 MiB and QEMU's 80 KiB of ROM blocks) rounded up to a power of two. */
    g_assert_cmpint(json_get_int(r, "xbzrle-cache.cache-size"), ==, 128 << 20);
    json_node_unref(r);
    r = vm_qmp_ok(src, "{'execute': 'query-migrate-parameters'}");
    g_assert_cmpint(json_get_int(r, "xbzrle-cache-size"), ==, 4611686018427387904LL);
    json_node_unref(r);
    migtest_wait_incoming_done(dst);
    vm_kill(dst);
    vm_kill(src);
}

static void test_capabilities(void)
{
    VM *src;
    JsonNode *r;
    g_autofree char *desc = NULL;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = vm_spawn("caps", true, MIGTEST_BASE_ARGS "-m 64M -kernel %s -append 'mode=idle mem=8'",
                   vmtest_firmware());
    r = vm_qmp(src, "{'execute': 'migrate-set-capabilities', 'arguments': "
                    "{'capabilities': [{'capability': 'x-colo', 'state': true}]}}");
    desc = vm_qmp_error_desc(r, NULL);
    g_assert_nonnull(strstr(desc, "'x-colo' is not supported"));
    json_node_unref(r);
    r = vm_qmp_ok(src, "{'execute': 'query-migrate-capabilities'}");
    /*
     * Only what this build implements (of QEMU 7.2's 21, dirty-limit, mapped-ram
     * and our x-lazy-restore): a client turns on what it is shown.
     */
    g_assert_cmpuint(json_array_get_length(json_node_get_array(r)), ==, 14);
    {
        g_autofree char *all = json_to_string(r, false);

        g_assert_null(strstr(all, "\"x-colo\""));
        g_assert_null(strstr(all, "\"rdma-pin-all\""));
        g_assert_nonnull(strstr(all, "\"return-path\""));
        g_assert_nonnull(strstr(all, "\"background-snapshot\""));
        g_assert_nonnull(strstr(all, "\"x-ignore-shared\""));
        g_assert_nonnull(strstr(all, "\"pause-before-switchover\""));
    }
    json_node_unref(r);
    r = vm_qmp(src, "{'execute': 'migrate-set-parameters', 'arguments': {'downtime-limit': 2000001}}");
    g_free(desc);
    desc = vm_qmp_error_desc(r, NULL);
    g_assert_nonnull(strstr(desc, "downtime_limit"));
    json_node_unref(r);
    r = vm_qmp_ok(src, "{'execute': 'query-migrate-parameters'}");
    g_assert_cmpint(json_get_int(r, "max-bandwidth"), ==, 134217728);
    g_assert_cmpint(json_get_int(r, "downtime-limit"), ==, 300);
    /* QEMU's defaults: 2 channels, no compression, zero pages found in the channels. */
    g_assert_cmpint(json_get_int(r, "multifd-channels"), ==, 2);
    g_assert_cmpstr(json_get_str(r, "multifd-compression"), ==, "none");
    g_assert_cmpstr(json_get_str(r, "zero-page-detection"), ==, "multifd");
    json_node_unref(r);
    {
        g_autofree char *out = vm_hmp(src, "migrate_set_parameter multifd-compression lz4");
        g_assert_nonnull(strstr(out, "does not accept value 'lz4'"));
    }
    {
        g_autofree char *out = vm_hmp(src, "migrate_set_parameter max-bandwidth 64");
        g_assert_cmpstr(out, ==, "");
        r = vm_qmp_ok(src, "{'execute': 'query-migrate-parameters'}");
        g_assert_cmpint(json_get_int(r, "max-bandwidth"), ==, 64 << 20);
        json_node_unref(r);
    }
    {
        g_autofree char *out = vm_hmp(src, "info migrate_capabilities");
        g_assert_nonnull(strstr(out, "events: off"));
    }
    vm_kill(src);
}

/*
 * A QEMU 7.2 destination. One without a serial port refuses our stream at
 * its end (our "serial" section, after all of RAM): with the defaults, it
 * echoes our confirmation offer instead of accepting it, so the source
 * completes as it did before it had a return path (QEMU runs the guest
 * before it says SHUT, which may never come); with return-path set by the
 * user, the source waits for its SHUT as QEMU's source does, and resumes
 * when the return path ends without one. One like ours takes the stream
 * (issue 37) and says SHUT: completed.
 */
static void run_to_qemu72(const char *peer, bool dst_refuses, bool return_path_set,
                          const char *want)
{
    g_autofree char *uri = migtest_uri("tcp");
    JsonNode *info;
    VM *src, *dst;

    src = migtest_start_source(MEM, APPEND);
    if (return_path_set) {
        json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-capabilities', 'arguments': "
                                  "{'capabilities': [{'capability': 'return-path', "
                                  "'state': true}]}}"));
    }
    dst = vm_spawn_binary("qemu72", peer, false,
                          "-M microvm -enable-kvm -cpu host,-arch-capabilities -m %s -nodefaults "
                          "-no-user-config -nographic -serial %s -kernel %s -append '%s' "
                          "-incoming %s", MEM, dst_refuses ? "none" : "stdio", vmtest_firmware(),
                          APPEND, uri);
    g_usleep(500 * 1000);   /* its listener */
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'downtime-limit': 30000}}"));
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", uri));
    info = vm_wait_migration(src, "completed|failed", 120);
    g_test_message("source: %s (%s); QEMU 7.2 said: %s", json_get_str(info, "status"),
                   json_has(info, "error-desc") ? json_get_str(info, "error-desc") : "",
                   dst->stderr_text->str);
    g_assert_cmpstr(json_get_str(info, "status"), ==, want);
    if (!strcmp(want, "completed")) {
        g_autofree char *st = vm_status(src);

        g_assert_cmpstr(st, ==, "postmigrate");
    } else {
        g_assert_nonnull(strstr(json_get_str(info, "error-desc"),
                                "the destination did not confirm the load"));
        migtest_assert_source_alive(src);
    }
    json_node_unref(info);
    vm_kill(dst);
    vm_kill(src);
}

static void test_qemu72_destination(void)
{
    const char *peer;

    if (!vmtest_require_kvm() || !(peer = vmtest_require_qemu72())) {
        return;
    }
    /* No serial port on QEMU's side: "Unknown savevm section or instance 'serial' 0". */
    run_to_qemu72(peer, true, false, "completed");
    run_to_qemu72(peer, true, true, "failed");
    run_to_qemu72(peer, false, true, "completed");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/migration-fail/unreachable", test_unreachable);
    g_test_add_func("/migration-fail/bad-uri", test_bad_uri);
    g_test_add_func("/migration-fail/dest-dies", test_dest_dies);
    g_test_add_data_func("/migration-fail/dest-refuses", GINT_TO_POINTER(false),
                         test_dest_refuses);
    g_test_add_data_func("/migration-fail/dest-refuses-return-path", GINT_TO_POINTER(true),
                         test_dest_refuses);
    g_test_add_func("/migration-fail/cancel", test_cancel);
    g_test_add_func("/migration-fail/dest-cancel", test_dest_cancel);
    g_test_add_func("/migration-fail/disk-full", test_disk_full);
    g_test_add_func("/migration-fail/exec-exits-early", test_exec_exits_early);
    g_test_add_func("/migration-fail/source-dies", test_source_dies);
    g_test_add_func("/migration-fail/capabilities", test_capabilities);
    g_test_add_func("/migration-fail/xbzrle-cache-size", test_xbzrle_cache_size);
    g_test_add_func("/migration-fail/qemu72-destination", test_qemu72_destination);
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Background snapshots (userfaultfd write protection) of running guests:
 * HMP and QMP paths, restore (twice) with the verify firmware carrying on
 * with no FAIL, byte-identical RAM for a paused guest, cancel mid-way, an
 * output that dies mid-way, refused capability combinations, and a guest
 * whose RAM spans two slots.
 *
 * The verify firmware is the checker: the restored CPU state resumes the
 * pass that was running at the snapshot point, so any page saved after the
 * guest changed it (or not at all) makes it print FAIL.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "libvmtest.h"
#include "migtest.h"

static char *snap_path(const char *name)
{
    return g_strdup_printf("%s/%s.snap", vmtest_tmpdir(), name);
}

static void enable_background_snapshot(VM *vm)
{
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'migrate-set-capabilities', 'arguments': "
                              "{'capabilities': [{'capability': 'background-snapshot', "
                              "'state': true}]}}"));
}

static void wait_snapshot_done(VM *src)
{
    JsonNode *info = vm_wait_migration(src, "completed|failed|cancelled", 300);

    if (strcmp(json_get_str(info, "status"), "completed")) {
        g_autofree char *s = json_to_string(info, TRUE);
        g_error("snapshot did not complete: %s", s);
    }
    g_assert_true(json_has(info, "x-background-snapshot.faults"));
    json_node_unref(info);
}

/*
 * A source of @mem running the firmware with @append (and @extra), whose
 * background snapshot to @uri completed; *@pass: the verify pass before it.
 */
static VM *snapshot_running(int *pass, const char *mem, const char *append, const char *extra,
                            const char *uri)
{
    VM *src = migtest_start_source_extra(mem, append, extra);

    enable_background_snapshot(src);
    *pass = migtest_last_pass(src);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", uri));
    wait_snapshot_done(src);
    return src;
}

/* Restores @file into a fresh instance and checks the guest carries on. */
static void restore_and_check_extra(const char *mem, const char *append, const char *incoming,
                                    bool paused, int pass_before, const char *extra)
{
    VM *dst = migtest_start_dest_extra(mem, append, paused, incoming, extra);

    migtest_wait_incoming_done(dst);
    if (paused) {
        g_autofree char *st = vm_status(dst);
        g_assert_cmpstr(st, ==, "paused");
        json_node_unref(vm_qmp_ok(dst, "{'execute': 'cont'}"));
    }
    migtest_assert_guest_continues(dst, append, pass_before);
    vm_kill(dst);
}

static void restore_and_check(const char *mem, const char *append, const char *incoming,
                              bool paused, int pass_before)
{
    restore_and_check_extra(mem, append, incoming, paused, pass_before, "");
}

static void test_hmp_snapshot_restore_twice(void)
{
    const char *append = "mode=verify mem=384";
    g_autofree char *file = snap_path("hmp");
    g_autofree char *incoming = g_strdup_printf("exec:cat %s", file);
    g_autofree char *out = NULL;
    int pass;
    VM *src;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source("512M", append);
    out = vm_hmp(src, "migrate_set_capability background-snapshot on");
    g_assert_cmpstr(out, ==, "");
    g_clear_pointer(&out, g_free);
    pass = migtest_last_pass(src);
    out = vm_hmp(src, "migrate -d \"exec:cat > %s\"", file);
    g_assert_cmpstr(out, ==, "");
    g_clear_pointer(&out, g_free);
    wait_snapshot_done(src);
    out = vm_hmp(src, "info migrate");
    g_assert_nonnull(strstr(out, "Migration status: completed"));
    g_assert_nonnull(strstr(out, "fault latency histogram"));
    /*
     * The default 1 GiB fault buffer, capped at RAM's regions: 256 of 2 MiB
     * for the 512 MiB of microvm.ram, and one each for QEMU's four ROM blocks.
     */
    g_assert_nonnull(strstr(out, "fault buffer: 532480 KiB"));
    /* The source guest keeps running, unharmed. */
    {
        int last = migtest_last_pass(src);
        const char *l;

        do {
            l = vm_wait_line(src, "PASS", 60);
        } while (line_get_int(l, "n") <= last);
        g_assert_cmpuint(vm_count_lines(src, "FAIL"), ==, 0);
    }
    vm_kill(src);
    restore_and_check("512M", append, incoming, false, pass);
    restore_and_check("512M", append, incoming, true, pass);
}

static void test_qmp_snapshot_paused_identical(void)
{
    const char *append = "mode=verify mem=128";
    g_autofree char *file = snap_path("paused");
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    VM *src, *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source("256M", append);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'stop'}"));
    enable_background_snapshot(src);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", uri));
    wait_snapshot_done(src);
    /* A guest paused when the snapshot started stays paused. */
    {
        g_autofree char *st = vm_status(src);
        g_assert_cmpstr(st, ==, "paused");
    }
    dst = migtest_start_dest("256M", append, true, uri);
    migtest_wait_incoming_done(dst);
    migtest_assert_ram_identical(src, dst, "256M");
    vm_kill(dst);
    vm_kill(src);
}

/*
 * A fault buffer of two regions under a guest that writes all the time:
 * faults outrun the output, so the fault thread waits for the writer to
 * hand runs back. Nothing may be lost or deadlock on that path.
 */
static void test_small_buffer(void)
{
    const char *append = "mode=verify mem=384";
    g_autofree char *file = snap_path("small");
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    JsonNode *info, *r;
    int pass;
    VM *src;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source("512M", append);
    r = vm_qmp(src, "{'execute': 'migrate-set-parameters', 'arguments': "
               "{'x-background-snapshot-buffer-size': 1048576}}");
    {
        g_autofree char *desc = vm_qmp_error_desc(r, NULL);
        g_assert_nonnull(strstr(desc, "at least 2 MiB"));
    }
    json_node_unref(r);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'x-background-snapshot-buffer-size': 4194304, "
                              "'max-bandwidth': 268435456}}"));
    enable_background_snapshot(src);
    pass = migtest_last_pass(src);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", uri));
    info = vm_wait_migration(src, "completed|failed|cancelled", 300);
    g_assert_cmpstr(json_get_str(info, "status"), ==, "completed");
    g_assert_cmpint(json_get_int(info, "x-background-snapshot.buffer-size"), ==, 4 << 20);
    g_assert_cmpint(json_get_int(info, "x-background-snapshot.buffer-peak"), <=, 4 << 20);
    g_assert_cmpint(json_get_int(info, "x-background-snapshot.faults"), >, 0);
    /* Two region runs cannot keep up: faults fall back to small copies. */
    g_test_message("small-copy faults: %" G_GINT64_FORMAT,
                   json_get_int(info, "x-background-snapshot.small-faults"));
    g_assert_cmpint(json_get_int(info, "x-background-snapshot.small-faults"), >, 0);
    json_node_unref(info);
    vm_kill(src);
    /* The verify firmware fails if a page of a small copy was saved wrong. */
    restore_and_check("512M", append, uri, false, pass);
}

/*
 * After a snapshot that did not complete: the source guest is running and
 * verifies its whole area @passes more times with no FAIL.
 */
static void assert_source_runs_on(VM *src, int passes)
{
    int pass = migtest_last_pass(src);
    const char *l;

    do {
        l = vm_wait_line(src, "PASS", 60);
    } while (line_get_int(l, "n") < pass + passes);
    g_assert_cmpuint(vm_count_lines(src, "FAIL"), ==, 0);
    {
        g_autofree char *st = vm_status(src);
        g_assert_cmpstr(st, ==, "running");
    }
}

static void test_cancel(void)
{
    const char *append = "mode=verify mem=384";
    g_autofree char *file = snap_path("cancel");
    JsonNode *info;
    VM *src;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source("512M", append);
    /* A bandwidth the user set is honoured: slow enough to cancel mid-way. */
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'max-bandwidth': 33554432}}"));
    enable_background_snapshot(src);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': 'file:%s'}}",
                              file));
    for (;;) {
        info = vm_qmp_ok(src, "{'execute': 'query-migrate'}");
        if (json_has(info, "ram") && json_get_int(info, "ram.transferred") > 32 << 20) {
            json_node_unref(info);
            break;
        }
        json_node_unref(info);
        vm_pump(src, 50);
    }
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate_cancel'}"));
    info = vm_wait_migration(src, "cancelled", 60);
    json_node_unref(info);
    /* Everything unprotected: the guest runs on and verifies its whole area. */
    assert_source_runs_on(src, 3);
    vm_kill(src);
}

/*
 * The output dies mid-snapshot (the reader exits after 32 MiB): the snapshot
 * fails with the write error, every page is unprotected (the guest verifies
 * its whole area again), and a second snapshot from the same instance
 * completes and restores.
 */
static void test_output_dies(void)
{
    const char *append = "mode=verify mem=384";
    g_autofree char *file = snap_path("after-fail");
    g_autofree char *incoming = g_strdup_printf("file:%s", file);
    JsonNode *info;
    int pass;
    VM *src;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source("512M", append);
    enable_background_snapshot(src);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': "
                              "{'uri': 'exec:head -c 33554432 >/dev/null'}}"));
    info = vm_wait_migration(src, "failed", 120);
    g_assert_nonnull(strstr(json_get_str(info, "error-desc"), "Broken pipe"));
    json_node_unref(info);
    assert_source_runs_on(src, 2);
    pass = migtest_last_pass(src);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': 'file:%s'}}",
                              file));
    wait_snapshot_done(src);
    vm_kill(src);
    restore_and_check("512M", append, incoming, false, pass);
}

static void test_refused_combinations(void)
{
    static const char *const caps[] = {
        "postcopy-ram", "multifd", "auto-converge", "xbzrle", "compress", "return-path",
        "validate-uuid", "zero-copy-send", "pause-before-switchover", "release-ram",
    };
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("caps", true, MIGTEST_BASE_ARGS "-m 64M -kernel %s -append 'mode=idle mem=8'",
                  vmtest_firmware());
    for (size_t i = 0; i < G_N_ELEMENTS(caps); i++) {
        g_autofree char *desc = NULL;
        g_autofree char *want = g_strdup_printf("Background-snapshot is not compatible with %s",
                                                caps[i]);
        JsonNode *r = vm_qmp(vm, "{'execute': 'migrate-set-capabilities', 'arguments': "
                                 "{'capabilities': [{'capability': 'background-snapshot', "
                                 "'state': true}, {'capability': '%s', 'state': true}]}}",
                             caps[i]);
        desc = vm_qmp_error_desc(r, NULL);
        g_assert_cmpstr(desc, ==, want);
        json_node_unref(r);
    }
    /* Alone it is accepted, and shows in query-migrate-capabilities. */
    enable_background_snapshot(vm);
    {
        g_autofree char *out = vm_hmp(vm, "info migrate_capabilities");
        g_assert_nonnull(strstr(out, "background-snapshot: on"));
    }
    vm_kill(vm);
}

/* Shared memory (memfd) is write-protected too on this kernel. */
static void test_memfd_backend(void)
{
    const char *append = "mode=verify mem=128";
    const char *obj = "-object memory-backend-memfd,id=m0,size=256M,share=on "
                      "-machine memory-backend=m0";
    g_autofree char *file = snap_path("memfd");
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    VM *src;
    int pass;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = snapshot_running(&pass, "256M", append, obj, uri);
    vm_kill(src);
    restore_and_check_extra("256M", append, uri, false, pass, obj);
}

/* RAM above max-ram-below-4g is a second KVM slot of the same block. */
static void test_highmem(void)
{
    const char *append = "mode=verify mem=768";
    const char *split = "-machine max-ram-below-4g=384M";
    g_autofree char *file = snap_path("highmem");
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    int pass;
    VM *src;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = snapshot_running(&pass, "1G", append, split, uri);
    vm_kill(src);
    restore_and_check_extra("1G", append, uri, false, pass, split);
}

/*
 * The downtime of a background snapshot, phase by phase: RAM is protected
 * before the stop (protect-time-us, outside it), and only the pages
 * written since are protected again inside it (write-protect). Which
 * pages those are is tested on a real userfaultfd in
 * tests/unit/test-snapshot-fault.c: here the window is too short to
 * count on a write in it. The guest restored from the file verifies on.
 */
static void test_downtime_phases(void)
{
    const char *append = "mode=verify mem=256";
    g_autofree char *file = snap_path("phases");
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    JsonNode *info;
    int64_t total;
    int pass;
    VM *src;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = snapshot_running(&pass, "1G", append, "", uri);
    info = vm_qmp_ok(src, "{'execute': 'query-migrate'}");
    total = json_get_int(info, "x-downtime.total");
    g_test_message("downtime %" PRId64 " us: stop-vcpus %" PRId64 ", device-state %" PRId64
                   ", write-protect %" PRId64 " (%" PRId64 " pages); protected before the "
                   "stop in %" PRId64 " us", total, json_get_int(info, "x-downtime.stop-vcpus"),
                   json_get_int(info, "x-downtime.device-state"),
                   json_get_int(info, "x-downtime.write-protect"),
                   json_get_int(info, "x-background-snapshot.reprotect-pages"),
                   json_get_int(info, "x-background-snapshot.protect-time-us"));
    g_assert_cmpint(total, >, 0);
    g_assert_cmpint(json_get_int(info, "x-downtime.stop-vcpus") +
                    json_get_int(info, "x-downtime.device-state") +
                    json_get_int(info, "x-downtime.write-protect") +
                    json_get_int(info, "x-downtime.unattributed"), ==, total);
    g_assert_cmpint(json_get_int(info, "x-downtime.final-sync"), ==, 0);
    g_assert_cmpint(json_get_int(info, "x-downtime.last-ram"), ==, 0);
    g_assert_cmpint(json_get_int(info, "downtime"), ==, total / 1000);
    json_node_unref(info);
    g_assert_cmpuint(vm_count_lines(src, "FAIL"), ==, 0);
    vm_kill(src);
    restore_and_check("1G", append, uri, false, pass);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/snapshot/hmp-restore-twice", test_hmp_snapshot_restore_twice);
    g_test_add_func("/snapshot/qmp-paused-identical", test_qmp_snapshot_paused_identical);
    g_test_add_func("/snapshot/small-buffer", test_small_buffer);
    g_test_add_func("/snapshot/cancel", test_cancel);
    g_test_add_func("/snapshot/output-dies", test_output_dies);
    g_test_add_func("/snapshot/refused-combinations", test_refused_combinations);
    g_test_add_func("/snapshot/memfd-backend", test_memfd_backend);
    g_test_add_func("/snapshot/highmem", test_highmem);
    g_test_add_func("/snapshot/downtime-phases", test_downtime_phases);
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Live migration between real instances: every transport, idle and
 * dirtying guests, -incoming defer, XBZRLE, byte-identical RAM with -S,
 * the user's stop and cont during a precopy (QEMU 7.2 allows both: a guest
 * stopped at the switchover arrives paused), and the verify firmware
 * carrying on at the destination with no FAIL.
 *
 * A second dirty pass is guaranteed the way QEMU's tests do it: start with
 * a bandwidth too low to converge, wait for dirty-sync-count >= 2, then
 * raise bandwidth and downtime so the switchover can happen.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "libvmtest.h"
#include "migtest.h"

typedef struct MigrateCase {
    const char *name;
    const char *transport;      /* "unix", "tcp", "exec", "file", "defer" */
    const char *append;         /* firmware parameters */
    const char *mem;            /* -m */
    bool dst_paused;            /* -S on the destination, compare RAM */
    bool hmp;                   /* drive the source through HMP "migrate -d" */
    const char *extra;          /* more arguments for both sides, or NULL */
    bool xbzrle;                /* the xbzrle capability, a 256 MiB cache */
    const char *midway;         /* "stop" or "stop-cont": the user's, during the precopy */
    bool return_path;           /* the return-path capability (as libvirt sets it) */
} MigrateCase;

/*
 * report_ms=250: a mode=dirty guest's STAT lines are what the source's start and
 * migtest_assert_guest_continues wait for; 250 ms apart they say the same as a
 * second apart (the guest paces its writes per write, not per period).
 */
#define DIRTY200 "mode=dirty mem=128 rate=200 report_ms=250"
#define DIRTY300 "mode=dirty mem=128 rate=300 report_ms=250"
static const MigrateCase cases[] = {
    { "unix-verify", "unix", "mode=verify mem=128", "256M", false, false, NULL },
    /* With return-path, as libvirt migrates: the source completes on the destination's word. */
    { "tcp-return-path-verify", "tcp", "mode=verify mem=128", "256M", false, false, NULL, false,
      NULL, true },
    { "exec-dirty", "exec", DIRTY200, "256M", false, false, NULL },
    { "file-verify", "file", "mode=verify mem=64", "256M", false, false, NULL },
    /*
     * The vCPU states only QEMU's optional "cpu" subsections carry; the
     * guest checks them after every pass (tests/guest/cpustate.c).
     */
    { "unix-cpustate-verify", "unix", "mode=verify mem=64 cpustate=x87,avx512,tscdl,misc,tscadj,pv",
      "128M", false, false, NULL },
    { "defer-idle", "defer", "mode=idle mem=32", "128M", false, false, NULL },
    { "hmp-unix-dirty", "unix", DIRTY300 " pattern=seq", "256M", false, true, NULL },
    { "unix-paused-identical", "unix", DIRTY300, "256M", true, false, NULL },
    { "tcp-highmem-identical", "tcp", "mode=verify mem=768", "1G", true, false,
      "-machine max-ram-below-4g=256M" },
    { "unix-xbzrle-paused-identical", "unix", DIRTY300, "256M", true, false,
      NULL, true },
    { "hmp-tcp-xbzrle-verify", "tcp", "mode=verify mem=128", "256M", false, true, NULL, true },
    { "unix-stop-cont-midway", "unix", DIRTY300, "256M", false, false, NULL,
      false, "stop-cont" },
    { "unix-stop-midway-identical", "unix", DIRTY300, "256M", false, false,
      NULL, false, "stop" },
};

static void assert_status(VM *vm, const char *want)
{
    g_autofree char *st = vm_status(vm);

    g_assert_cmpstr(st, ==, want);
}

static void assert_migration_status(VM *vm, const char *want)
{
    JsonNode *r = vm_qmp_ok(vm, "{'execute': 'query-migrate'}");

    g_assert_cmpstr(json_get_str(r, "status"), ==, want);
    json_node_unref(r);
}

static int64_t dirty_sync_count(VM *vm)
{
    JsonNode *r = vm_qmp_ok(vm, "{'execute': 'query-migrate'}");
    int64_t n = json_has(r, "ram") ? json_get_int(r, "ram.dirty-sync-count") : 0;

    g_assert_cmpstr(json_get_str(r, "status"), !=, "failed");
    json_node_unref(r);
    return n;
}

/*
 * A precopy too slow to converge; once it is in its second pass the user
 * stops the guest (and resumes it for "stop-cont") while it keeps going,
 * then bandwidth and downtime are raised so it can finish.
 */
static void migrate_stopping_midway(VM *src, const char *uri, const char *midway)
{
    gint64 end = g_get_monotonic_time() + 240 * G_USEC_PER_SEC;

    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'max-bandwidth': 134217728, 'downtime-limit': 1}}"));
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", uri));
    while (dirty_sync_count(src) < 2) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        vm_pump(src, 50);
    }
    /* Slow enough that a stopped guest's last pass cannot end while we look (~1 s). */
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'max-bandwidth': 8388608}}"));
    json_node_unref(vm_qmp_ok(src, "{'execute': 'stop'}"));
    assert_status(src, "paused");
    vm_pump(src, 300);
    assert_migration_status(src, "active");
    if (!strcmp(midway, "stop-cont")) {
        json_node_unref(vm_qmp_ok(src, "{'execute': 'cont'}"));
        assert_status(src, "running");
        vm_pump(src, 300);
        assert_migration_status(src, "active");
    }
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'max-bandwidth': 4294967296, 'downtime-limit': 30000}}"));
}

/* The xbzrle capability and a cache as big as the guest, the way the case drives the source. */
static void enable_xbzrle(VM *src, bool hmp)
{
    if (hmp) {
        g_autofree char *a = vm_hmp(src, "migrate_set_capability xbzrle on");
        g_autofree char *b = vm_hmp(src, "migrate_set_parameter xbzrle-cache-size 256M");
        g_assert_cmpstr(a, ==, "");
        g_assert_cmpstr(b, ==, "");
    } else {
        json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-capabilities', 'arguments': "
                                  "{'capabilities': [{'capability': 'xbzrle', 'state': true}]}}"));
        json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                                  "{'xbzrle-cache-size': 268435456}}"));
    }
}

/* query-migrate's xbzrle-cache after the migration; a dirtying guest's small writes went as deltas. */
static void check_xbzrle(VM *src, const MigrateCase *c, JsonNode *info)
{
    g_autofree char *hmp = vm_hmp(src, "info migrate");

    g_assert_true(json_has(info, "xbzrle-cache"));
    g_assert_cmpint(json_get_int(info, "xbzrle-cache.cache-size"), ==, 256 << 20);
    g_assert_cmpint(json_get_int(info, "xbzrle-cache.cache-miss"), >, 0);
    if (strstr(c->append, "mode=dirty")) {
        g_assert_cmpint(json_get_int(info, "xbzrle-cache.pages"), >, 0);
        g_assert_cmpint(json_get_int(info, "xbzrle-cache.bytes"), >, 0);
    }
    g_assert_nonnull(strstr(hmp, "\nxbzrle pages: "));
    g_assert_nonnull(strstr(hmp, "\nxbzrle cache miss rate: "));
}

static void test_migrate(gconstpointer data)
{
    const MigrateCase *c = data;
    g_autofree char *uri = NULL, *incoming = NULL, *file = NULL;
    VM *src, *dst;
    JsonNode *info;
    int pass_before;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source_extra(c->mem, c->append, c->extra ? c->extra : "");
    pass_before = migtest_last_pass(src);
    if (c->xbzrle) {
        enable_xbzrle(src, c->hmp);
    }
    if (c->return_path) {
        json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-capabilities', 'arguments': "
                                  "{'capabilities': [{'capability': 'return-path', "
                                  "'state': true}]}}"));
    }

    if (!strcmp(c->transport, "file")) {
        file = g_strdup_printf("%s/%s.mig", vmtest_tmpdir(), c->name);
        uri = g_strdup_printf("file:%s", file);
    } else {
        uri = migtest_uri(c->transport);
    }
    incoming = !strcmp(c->transport, "exec") ? migtest_exec_incoming(uri)
               : !strcmp(c->transport, "defer") ? g_strdup("defer")
               : !strcmp(c->transport, "file") ? NULL : g_strdup(uri);

    if (file) {
        /* File: the whole stream is written first, then loaded. */
        migtest_slow_then_fast(src, uri, false);
        info = vm_wait_migration(src, "completed|failed", 300);
        g_assert_cmpstr(json_get_str(info, "status"), ==, "completed");
        json_node_unref(info);
        dst = migtest_start_dest_extra(c->mem, c->append, c->dst_paused, uri,
                                       c->extra ? c->extra : "");
    } else {
        dst = migtest_start_dest_extra(c->mem, c->append, c->dst_paused, incoming,
                                       c->extra ? c->extra : "");
        if (!strcmp(c->transport, "defer")) {
            g_free(uri);
            uri = migtest_uri("unix");
            json_node_unref(vm_qmp_ok(dst, "{'execute': 'migrate-incoming', 'arguments': "
                                      "{'uri': '%s'}}", uri));
        }
        if (c->midway) {
            migrate_stopping_midway(src, uri, c->midway);
        } else {
            migtest_slow_then_fast(src, uri, c->hmp);
        }
        info = migtest_wait_completed(src);
        if (c->xbzrle) {
            check_xbzrle(src, c, info);
        }
        json_node_unref(info);
    }
    {
        g_autofree char *st = vm_status(src);
        g_assert_cmpstr(st, ==, "postmigrate");
    }
    if (c->return_path) {
        /*
         * The source completed on the destination's word (SHUT 0), then
         * told it to go on: the destination completes, nothing fails.
         */
        JsonNode *d = vm_wait_migration(dst, "completed|failed", 60);

        g_assert_cmpstr(json_get_str(d, "status"), ==, "completed");
        json_node_unref(d);
    }
    migtest_wait_incoming_done(dst);
    if (c->dst_paused || (c->midway && !strcmp(c->midway, "stop"))) {
        /* -S, or a source guest stopped at the switchover: the destination waits paused. */
        g_autofree char *st = vm_status(dst);
        g_assert_cmpstr(st, ==, "paused");
        migtest_assert_ram_identical_split(src, dst, c->mem, c->extra ? 256 << 20 : 3ULL << 30);
        json_node_unref(vm_qmp_ok(dst, "{'execute': 'cont'}"));
    } else {
        g_autofree char *st = vm_status(dst);
        g_assert_cmpstr(st, ==, "running");
    }
    migtest_assert_guest_continues(dst, c->append, pass_before);
    vm_kill(src);
    vm_kill(dst);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *path = g_strdup_printf("/migration/%s", cases[i].name);
        g_test_add_data_func(path, &cases[i], test_migrate);
    }
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Observability: -trace file= gets timestamped migration trace points,
 * query-stats/query-stats-schemas and "info stats" return KVM's binary
 * statistics, and scripts/kvm_stat prints timestamped counter deltas.
 */
#include <stdio.h>
#include <string.h>
#include "libvmtest.h"
#include "migtest.h"

static void test_trace_file(void)
{
    g_autofree char *trace = g_build_filename(vmtest_tmpdir(), "mig.trace", NULL);
    g_autofree char *extra = g_strdup_printf("-trace file=%s", trace);
    g_autofree char *uri = migtest_uri("unix");
    g_autofree char *text = NULL;
    const char *append = "mode=dirty mem=128 rate=100";
    VM *src, *dst;
    JsonNode *info;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source_extra("256M", append, extra);
    dst = migtest_start_dest("256M", append, false, uri);
    migtest_slow_then_fast(src, uri, false);
    info = vm_wait_migration(src, "completed|failed", 120);
    g_assert_cmpstr(json_get_str(info, "status"), ==, "completed");
    json_node_unref(info);
    vm_kill(src);
    vm_kill(dst);
    g_assert_true(g_file_get_contents(trace, &text, NULL, NULL));
    /* Every stage of the pipeline shows up, each line with a wall-clock stamp. */
    g_assert_nonnull(strstr(text, " dirty_sync_start pass="));
    g_assert_nonnull(strstr(text, " dirty_sync_end pass="));
    g_assert_nonnull(strstr(text, " dirty_clear slot="));
    g_assert_nonnull(strstr(text, " migration_pass pass="));
    g_assert_nonnull(strstr(text, " migration_switchover pending="));
    g_assert_nonnull(strstr(text, " savevm_device_save idstr=cpu"));
    g_assert_true(g_regex_match_simple("^20[0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9:.]+Z \\+[0-9.]+ ",
                                       text, G_REGEX_MULTILINE, 0));
}

static void test_query_stats(void)
{
    VM *vm;
    JsonNode *r;
    JsonArray *a;
    g_autofree char *out = NULL;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("stats", true, MIGTEST_BASE_ARGS "-smp 2 -m 128M -kernel %s -append 'mode=idle mem=8'",
                  vmtest_firmware());
    r = vm_qmp_ok(vm, "{'execute': 'query-stats', 'arguments': {'target': 'vm'}}");
    a = json_node_get_array(r);
    g_assert_cmpuint(json_array_get_length(a), ==, 1);
    g_assert_cmpstr(json_object_get_string_member(json_array_get_object_element(a, 0), "provider"),
                    ==, "kvm");
    json_node_unref(r);
    r = vm_qmp_ok(vm, "{'execute': 'query-stats', 'arguments': {'target': 'vcpu', "
                      "'providers': [{'provider': 'kvm', 'names': ['exits', 'halt_exits']}]}}");
    a = json_node_get_array(r);
    g_assert_cmpuint(json_array_get_length(a), ==, 2);
    g_assert_cmpuint(json_array_get_length(json_object_get_array_member(
        json_array_get_object_element(a, 0), "stats")), ==, 2);
    json_node_unref(r);
    r = vm_qmp_ok(vm, "{'execute': 'query-stats-schemas'}");
    g_assert_cmpuint(json_array_get_length(json_node_get_array(r)), ==, 2);
    json_node_unref(r);
    r = vm_qmp(vm, "{'execute': 'query-stats', 'arguments': {'target': 'disk'}}");
    g_free(vm_qmp_error_desc(r, NULL));
    json_node_unref(r);
    out = vm_hmp(vm, "info stats vcpu exits");
    g_assert_nonnull(strstr(out, "provider: kvm"));
    g_assert_nonnull(strstr(out, "exits: "));
    vm_kill(vm);
}

static void test_kvm_stat_script(void)
{
    g_autofree char *sock = g_build_filename(vmtest_tmpdir(), "kvmstat.sock", NULL);
    g_autofree char *cmd = NULL, *out = NULL, *err = NULL;
    int status;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("kvmstat", true, MIGTEST_BASE_ARGS "-m 128M -kernel %s -append 'mode=dirty mem=32 rate=50' "
                  "-qmp unix:%s,server=on,wait=off", vmtest_firmware(), sock);
    vm_wait_line(vm, "READY", 60);
    cmd = g_strdup_printf("%s/scripts/kvm_stat -s %s -l -i 0.5 -c 3", VMTEST_SOURCE_DIR, sock);
    g_assert_true(g_spawn_command_line_sync(cmd, &out, &err, &status, NULL));
    g_assert_cmpint(status, ==, 0);
    /* A header, then three timestamped lines. */
    g_assert_true(g_regex_match_simple("^time +exits", out, G_REGEX_MULTILINE, 0));
    {
        g_auto(GStrv) lines = g_strsplit(out, "\n", -1);

        g_assert_cmpint(g_strv_length(lines), >=, 5);
    }
    g_assert_true(g_regex_match_simple("^20[0-9-]+T[0-9:.]+Z +[0-9]+", out, G_REGEX_MULTILINE, 0));
    vm_kill(vm);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/observe/trace-file", test_trace_file);
    g_test_add_func("/observe/query-stats", test_query_stats);
    g_test_add_func("/observe/kvm-stat-script", test_kvm_stat_script);
    return g_test_run();
}

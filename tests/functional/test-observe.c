/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Observability: -trace file= gets timestamped migration trace points,
 * query-stats/query-stats-schemas and "info stats" return KVM's binary
 * statistics, and scripts/qemu-mig-kvmstat prints timestamped counter deltas.
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
    cmd = g_strdup_printf("%s/scripts/qemu-mig-kvmstat -s %s -l -i 0.5 -c 3", VMTEST_SOURCE_DIR, sock);
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

/* Adds the TRACE_EVENT(name, names used in the sources under @dir to @names. */
static void collect_trace_events(const char *dir, GHashTable *names)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    g_autoptr(GRegex) re = g_regex_new("TRACE_EVENT\\(([a-z0-9_]+),", 0, 0, NULL);
    const char *ent;

    g_assert_nonnull(d);
    while ((ent = g_dir_read_name(d))) {
        g_autofree char *path = g_build_filename(dir, ent, NULL);
        g_autofree char *text = NULL;
        g_autoptr(GMatchInfo) m = NULL;

        if (!g_str_has_suffix(ent, ".c") && !g_str_has_suffix(ent, ".h")) {
            continue;
        }
        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        g_regex_match(re, text, 0, &m);
        while (g_match_info_matches(m)) {
            g_hash_table_add(names, g_match_info_fetch(m, 1));
            g_match_info_next(m, NULL);
        }
    }
}

/* -trace help lists exactly the trace points the sources define. */
static void test_trace_help(void)
{
    static const char *const dirs[] = { "migration", "accel/kvm", "system", "hw", "hw/display",
                                        "monitor", "ui", "net" };
    g_autoptr(GHashTable) src = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autofree char *cmd = g_strdup_printf("%s -trace help", vmtest_binary());
    g_autofree char *out = NULL;
    g_auto(GStrv) lines = NULL;
    int status, n = 0;

    for (size_t i = 0; i < G_N_ELEMENTS(dirs); i++) {
        g_autofree char *dir = g_build_filename(VMTEST_SOURCE_DIR, dirs[i], NULL);
        collect_trace_events(dir, src);
    }
    g_assert_cmpuint(g_hash_table_size(src), >, 5);
    g_assert_true(g_spawn_command_line_sync(cmd, &out, NULL, &status, NULL));
    g_assert_cmpint(status, ==, 0);
    lines = g_strsplit(out, "\n", -1);
    for (int i = 0; lines[i]; i++) {
        if (*lines[i]) {
            if (!g_hash_table_contains(src, lines[i])) {
                g_error("-trace help lists %s, which no source defines", lines[i]);
            }
            n++;
        }
    }
    g_assert_cmpint(n, ==, g_hash_table_size(src));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/observe/trace-file", test_trace_file);
    g_test_add_func("/observe/trace-help", test_trace_help);
    g_test_add_func("/observe/query-stats", test_query_stats);
    g_test_add_func("/observe/kvm-stat-script", test_kvm_stat_script);
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Migrations that finish on their own (issue 41), on real KVM: a guest
 * that dirties as fast as the default max-bandwidth completes with the
 * defaults (the switchover on the predicted downtime); a guest that
 * outruns the link takes each x-converge-policy step in turn, announced by
 * a MIGRATION event and shown in info migrate; the completion timeout
 * jumps to the last step; x-progress never runs backwards (every poll of
 * every migration of the C suite checks it, vm_wait_migration).
 */
#include <stdio.h>
#include <string.h>
#include "libvmtest.h"
#include "migtest.h"

#define RING "-accel kvm,dirty-ring-size=4096"
/* About 200 MB/s at random over 192 MiB; the link gets 40 MiB/s, the stop 50 ms. */
#define OUTRUN_MEM "384M"
#define OUTRUN_APPEND "mode=dirty mem=192 rate=200 pattern=random"
#define OUTRUN_BANDWIDTH (40 << 20)

/* The guest: rewrites 128 MiB as fast as dirty tracking lets it (~128 MiB/s here). */
#define VERIFY_MEM "384M"
#define VERIFY_APPEND "mode=verify mem=128"

/* Polls query-migrate until it leaves @while_in ("setup|active|..."); returns the reply. */
static JsonNode *poll_migration(VM *src, const char *while_in, int timeout_s,
                                double *max_predicted_ms)
{
    g_auto(GStrv) states = g_strsplit(while_in, "|", -1);
    gint64 end = g_get_monotonic_time() + timeout_s * G_USEC_PER_SEC;

    for (;;) {
        JsonNode *info = vm_qmp_ok(src, "{'execute': 'query-migrate'}");

        vm_check_progress(src, info);
        if (max_predicted_ms && json_has(info, "x-downtime-predicted.total")) {
            *max_predicted_ms = MAX(*max_predicted_ms,
                                    json_get_int(info, "x-downtime-predicted.total") / 1000.0);
        }
        if (!g_strv_contains((const char *const *)states, json_get_str(info, "status"))) {
            return info;
        }
        json_node_unref(info);
        if (g_get_monotonic_time() > end) {
            g_error("the migration did not leave %s in %d s", while_in, timeout_s);
        }
        vm_pump(src, 100);
    }
}

/* The MIGRATION event that announces @step; its reason contains @why. */
static void expect_step_event(VM *src, const char *step, const char *why)
{
    for (;;) {
        JsonNode *ev = vm_wait_event(src, "MIGRATION", 120);

        if (json_has(ev, "data.x-converge.step")) {
            g_assert_cmpstr(json_get_str(ev, "data.x-converge.step"), ==, step);
            g_assert_nonnull(strstr(json_get_str(ev, "data.x-converge.reason"), why));
            json_node_unref(ev);
            return;
        }
        json_node_unref(ev);
    }
}

static void set_caps(VM *vm, const char *caps)
{
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'migrate-set-capabilities', 'arguments': "
                              "{'capabilities': [%s]}}", caps));
}

/*
 * The outrunning guest under @policy (a JSON list) with capabilities @cap
 * (NULL: none; postcopy-ram on both sides); returns the source, migrating.
 */
static VM *start_outrun(VM **dst, const char *uri, const char *cap, const char *policy,
                        const char *extra_params, const char *accel)
{
    VM *src = migtest_start_source_extra(OUTRUN_MEM, OUTRUN_APPEND, accel);
    g_autoptr(GString) caps = g_string_new("{'capability': 'events', 'state': true}");
    bool postcopy = cap && strstr(cap, "postcopy-ram");

    /* @cap: capability names separated by "', '" (a list written inside quotes). */
    if (cap) {
        g_auto(GStrv) names = g_strsplit(cap, "', '", -1);

        for (int i = 0; names[i]; i++) {
            g_string_append_printf(caps, ", {'capability': '%s', 'state': true}", names[i]);
        }
    }
    /* Paused: its RAM is compared with the source's before it runs (postcopy: it runs). */
    *dst = migtest_start_dest_extra(OUTRUN_MEM, OUTRUN_APPEND, !postcopy, NULL, accel);
    if (postcopy) {
        set_caps(*dst, "{'capability': 'postcopy-ram', 'state': true}");
    }
    json_node_unref(vm_qmp_ok(*dst, "{'execute': 'migrate-incoming', 'arguments': "
                              "{'uri': '%s'}}", uri));
    set_caps(src, caps->str);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'max-bandwidth': %d, 'downtime-limit': 50, "
                              "'x-converge-policy': %s %s}}", OUTRUN_BANDWIDTH, policy,
                              extra_params));
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", uri));
    return src;
}

/* The guest dirtying as fast as the default link completes with the defaults. */
static void test_defaults_finish(void)
{
    g_autofree char *uri = migtest_uri("unix");
    g_autofree char *hmp = NULL;
    double predicted_max = 0;
    JsonNode *info;
    VM *src, *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source(VERIFY_MEM, VERIFY_APPEND);
    dst = migtest_start_dest(VERIFY_MEM, VERIFY_APPEND, true, uri);
    /* A budget too large to count in nanoseconds is no budget, not an overflow. */
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'x-completion-timeout': 18446744073709551615}}"));
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", uri));
    info = poll_migration(src, "setup|active|device", 120, &predicted_max);
    g_assert_cmpstr(json_get_str(info, "status"), ==, "completed");
    /* Within downtime-limit's default, and the prediction it was decided on is kept. */
    g_assert_cmpint(json_get_int(info, "downtime"), <=, 300);
    g_assert_cmpint(json_get_int(info, "x-downtime-predicted.total"), >, 0);
    g_assert_cmpint(json_get_int(info, "x-downtime-predicted.total"), <=, 300 * 1000);
    g_assert_cmpint(json_get_int(info, "x-downtime.expected"), ==,
                    json_get_int(info, "x-downtime-predicted.total"));
    g_assert_cmpstr(json_get_str(info, "x-downtime-predicted.rate-source"), !=, "none");
    g_assert_cmpfloat(json_get_double(info, "x-progress.percent"), ==, 100);
    g_assert_cmpstr(json_get_str(info, "x-progress.phase"), ==, "completed");
    g_assert_cmpstr(json_get_str(info, "x-progress.step"), ==, "none");
    g_test_message("downtime %" PRId64 " ms, predicted %" PRId64 " us, total %" PRId64
                   " ms, passes %" PRId64, json_get_int(info, "downtime"),
                   json_get_int(info, "x-downtime-predicted.total"),
                   json_get_int(info, "total-time"), json_get_int(info, "ram.dirty-sync-count"));
    json_node_unref(info);
    hmp = vm_hmp(src, "info migrate");
    g_assert_nonnull(strstr(hmp, "progress: 100.0 %, phase completed"));
    g_assert_nonnull(strstr(hmp, "downtime predicted: stop-vcpus "));
    migtest_wait_incoming_done(dst);
    migtest_assert_ram_identical(src, dst, VERIFY_MEM);
    json_node_unref(vm_qmp_ok(dst, "{'execute': 'cont'}"));
    migtest_assert_guest_continues(dst, VERIFY_APPEND, 0);
    vm_kill(src);
    vm_kill(dst);
}

/* QEMU's rule (x-switchover-rule bandwidth), no policy: the same guest does not finish in 8 s. */
static void test_bandwidth_rule(void)
{
    g_autofree char *uri = migtest_uri("unix");
    g_autofree char *hmp = NULL;
    JsonNode *info;
    VM *src, *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source(VERIFY_MEM, VERIFY_APPEND);
    dst = migtest_start_dest(VERIFY_MEM, VERIFY_APPEND, false, uri);
    hmp = vm_hmp(src, "migrate_set_parameter x-switchover-rule bandwidth");
    g_assert_cmpstr(hmp, ==, "");
    g_free(hmp);
    /* And QEMU's "run for ever": no policy. */
    hmp = vm_hmp(src, "migrate_set_parameter x-converge-policy none");
    g_assert_cmpstr(hmp, ==, "");
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", uri));
    for (int i = 0; i < 80; i++) {
        info = vm_qmp_ok(src, "{'execute': 'query-migrate'}");
        vm_check_progress(src, info);
        g_assert_true(!strcmp(json_get_str(info, "status"), "active") ||
                      (i < 20 && !strcmp(json_get_str(info, "status"), "setup")));
        json_node_unref(info);
        vm_pump(src, 100);
    }
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate_cancel'}"));
    json_node_unref(vm_wait_migration(src, "cancelled", 30));
    migtest_assert_source_alive(src);
    vm_kill(src);
    vm_kill(dst);
}

/*
 * A stalled migration takes its policy's steps in turn: @first (set up by
 * @extra_params not to help), then @step. Both announced, and it completes.
 */
static void run_step(const char *first, const char *step, const char *caps,
                     const char *extra_params, const char *accel)
{
    g_autofree char *uri = migtest_uri("unix");
    g_autofree char *policy = g_strdup_printf("['%s:2', '%s:2']", first, step);
    g_autofree char *hmp = NULL;
    g_autofree char *want = NULL;
    JsonNode *info;
    VM *src, *dst;

    src = start_outrun(&dst, uri, caps, policy, extra_params, accel);
    expect_step_event(src, first, "stalled ");
    expect_step_event(src, step, "stalled ");
    hmp = vm_hmp(src, "info migrate");
    want = g_strdup_printf("converge step: %s (stalled ", step);
    if (!strstr(hmp, want)) {
        /* Seen once in make check (auto-converge after dirty-limit): what did it say? */
        g_error("expected '%s' in 'info migrate':\n%s", want, hmp);
    }
    info = poll_migration(src, "setup|active|device|postcopy-active", 300, NULL);
    g_assert_cmpstr(json_get_str(info, "status"), ==, "completed");
    g_assert_cmpstr(json_get_str(info, "x-progress.step"), ==, step);
    g_assert_nonnull(strstr(json_get_str(info, "x-progress.reason"), "stalled "));
    if (strcmp(step, "postcopy")) {
        g_assert_cmpint(json_get_int(info, "downtime"), <=, 50);
    }
    json_node_unref(info);
    migtest_wait_incoming_done(dst);
    if (strcmp(step, "postcopy")) {
        migtest_assert_ram_identical(src, dst, OUTRUN_MEM);
        json_node_unref(vm_qmp_ok(dst, "{'execute': 'cont'}"));
    }
    migtest_assert_guest_continues(dst, OUTRUN_APPEND, 0);
    vm_kill(src);
    vm_kill(dst);
}

/* A throttle of 5% at most leaves the guest outrunning the link: dirty-limit next. */
static void test_step_dirty_limit(void)
{
    if (vmtest_require_kvm()) {
        run_step("auto-converge", "dirty-limit", "dirty-limit",
                 ", 'max-cpu-throttle': 5, 'cpu-throttle-initial': 5, 'vcpu-dirty-limit': 5",
                 RING);
    }
}

/* A dirty limit of 1000 MB/s holds nothing back: the throttle next. */
static void test_step_auto_converge(void)
{
    if (vmtest_require_kvm()) {
        run_step("dirty-limit", "auto-converge", "dirty-limit",
                 ", 'vcpu-dirty-limit': 1000, 'cpu-throttle-initial': 60, "
                 "'cpu-throttle-increment': 20", RING);
    }
}

static void test_step_postcopy(void)
{
    if (vmtest_require_kvm()) {
        run_step("auto-converge", "postcopy", "auto-converge', 'postcopy-ram",
                 ", 'max-cpu-throttle': 5, 'cpu-throttle-initial': 5", "");
    }
}

/* The last resort: the migration fails with the reason, and the guest runs on here. */
static void run_cancel(const char *policy, const char *extra_params, const char *why)
{
    g_autofree char *uri = migtest_uri("unix");
    JsonNode *info;
    VM *src, *dst;

    src = start_outrun(&dst, uri, NULL, policy, extra_params, "");
    expect_step_event(src, "cancel", why);
    info = poll_migration(src, "setup|active", 60, NULL);
    g_assert_cmpstr(json_get_str(info, "status"), ==, "failed");
    g_assert_nonnull(strstr(json_get_str(info, "error-desc"), "x-converge-policy cancelled it: "));
    g_assert_nonnull(strstr(json_get_str(info, "error-desc"), why));
    g_assert_cmpstr(json_get_str(info, "x-progress.phase"), ==, "failed");
    json_node_unref(info);
    migtest_assert_one_runs(src, dst, "failed");
    vm_kill(src);
    vm_kill(dst);
}

static void test_step_cancel(void)
{
    if (vmtest_require_kvm()) {
        run_cancel("['cancel:2']", "", "stalled ");
    }
}

/* x-completion-timeout: 2 s per GiB (the guest's 384 MiB count as 1 GiB) ends in the last step. */
static void test_completion_timeout(void)
{
    if (vmtest_require_kvm()) {
        run_cancel("['cancel:600']", ", 'x-completion-timeout': 2",
                   "completion timeout (2 s) passed");
    }
}

static void test_refusals(void)
{
    g_autofree char *uri = migtest_uri("unix");
    g_autofree char *migrate_cmd = g_strdup_printf("{'execute': 'migrate', 'arguments': "
                                                   "{'uri': '%s'}}", uri);
    g_autofree char *hmp = NULL;
    VM *src;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source(OUTRUN_MEM, OUTRUN_APPEND);
    vm_qmp_expect_error(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                        "{'x-converge-policy': ['throttle']}}", "'throttle' is not a step");
    vm_qmp_expect_error(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                        "{'x-converge-policy': ['dirty-limit:0']}}", "the window must be");
    vm_qmp_expect_error(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                        "{'x-converge-policy': ['cancel', 'auto-converge']}}",
                        "nothing may follow 'cancel'");
    vm_qmp_expect_error(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                        "{'x-converge-policy': ['auto-converge', 'auto-converge:3']}}",
                        "'auto-converge' is named twice");
    vm_qmp_expect_error(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                        "{'x-switchover-rule': 'qemu'}}", "");
    /* A step whose capability is off is refused at migrate, and nothing starts. */
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'x-converge-policy': ['auto-converge:5', 'dirty-limit', "
                              "'cancel']}}"));
    vm_qmp_expect_error(src, migrate_cmd, "x-converge-policy step 'dirty-limit' needs the "
                        "dirty-limit capability");
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'x-converge-policy': ['postcopy']}}"));
    vm_qmp_expect_error(src, migrate_cmd, "needs the postcopy-ram capability on both sides");
    g_assert_cmpstr(vm_status(src), ==, "running");
    /* HMP: the words, shown back; "none" clears. */
    hmp = vm_hmp(src, "migrate_set_parameter x-converge-policy dirty-limit:3 cancel");
    g_assert_cmpstr(hmp, ==, "");
    g_free(hmp);
    hmp = vm_hmp(src, "info migrate_parameters");
    g_assert_nonnull(strstr(hmp, "x-converge-policy: dirty-limit:3 cancel\r"));
    g_assert_nonnull(strstr(hmp, "x-switchover-rule: predicted\r"));
    g_free(hmp);
    g_free(vm_hmp(src, "migrate_set_parameter x-converge-policy none"));
    hmp = vm_hmp(src, "info migrate_parameters");
    g_assert_nonnull(strstr(hmp, "x-converge-policy: none\r"));
    vm_kill(src);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/slo/refusals", test_refusals);
    g_test_add_func("/slo/defaults-finish", test_defaults_finish);
    g_test_add_func("/slo/bandwidth-rule", test_bandwidth_rule);
    g_test_add_func("/slo/step/dirty-limit", test_step_dirty_limit);
    g_test_add_func("/slo/step/auto-converge", test_step_auto_converge);
    g_test_add_func("/slo/step/postcopy", test_step_postcopy);
    g_test_add_func("/slo/step/cancel", test_step_cancel);
    g_test_add_func("/slo/completion-timeout", test_completion_timeout);
    return g_test_run();
}

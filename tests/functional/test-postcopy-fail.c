/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Postcopy when things go wrong, QEMU's semantics: before the switchover a
 * failure leaves the source running; after it the guest's memory is split
 * between the hosts, so nothing resumes the source's guest, cancel is
 * refused, and a lost destination or a cut connection leaves the source
 * in postcopy-paused with an error saying why (and a cut destination
 * paused too, its guest alive). Never are both sides running.
 */
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>
#include "libvmtest.h"
#include "migproxy.h"
#include "migtest.h"

#define MEM "256M"
#define APPEND "mode=verify mem=192"
#define CANCEL_REFUSED "Postcopy migration in progress, cannot cancel."

static void set_postcopy(VM *vm, bool on)
{
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'migrate-set-capabilities', 'arguments': "
                              "{'capabilities': [{'capability': 'postcopy-ram', "
                              "'state': %s}]}}", on ? "true" : "false"));
}

static void set_preempt(VM *vm)
{
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'migrate-set-capabilities', 'arguments': "
                              "{'capabilities': [{'capability': 'postcopy-preempt', "
                              "'state': true}]}}"));
}

/* postcopy-ram on both sides, the destination first (and postcopy-preempt if @preempt). */
static void enable_postcopy_pair(VM *src, VM *dst, bool preempt)
{
    set_postcopy(dst, true);
    set_postcopy(src, true);
    if (preempt) {
        set_preempt(dst);
        set_preempt(src);
    }
}

static void expect_error(VM *vm, const char *cmd, const char *desc_part)
{
    JsonNode *r = vm_qmp(vm, "%s", cmd);
    g_autofree char *desc = vm_qmp_error_desc(r, NULL);

    if (!strstr(desc, desc_part)) {
        g_printerr("%s: got '%s', want '%s'\n", cmd, desc, desc_part);
    }
    g_assert_nonnull(strstr(desc, desc_part));
    json_node_unref(r);
}

/*
 * Migrate to @uri, switch to postcopy at once, with the rest paced at
 * 8 MiB/s so that the test has seconds to act while it runs.
 */
static void start_slow_postcopy(VM *src, const char *uri)
{
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'max-bandwidth': 134217728, 'downtime-limit': 1, "
                              "'max-postcopy-bandwidth': 8388608}}"));
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", uri));
    migtest_wait_ram_progress(src, "ram.transferred", 4 * 1024 * 1024);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-start-postcopy'}"));
    json_node_unref(vm_wait_migration(src, "postcopy-active", 60));
}

/* The source after a failure past the switchover: paused, stopped, refusing to go on alone. */
static void assert_source_paused(VM *src)
{
    JsonNode *info = vm_wait_migration(src, "postcopy-paused|completed|failed", 60);
    g_autofree char *st = NULL;

    g_assert_cmpstr(json_get_str(info, "status"), ==, "postcopy-paused");
    g_assert_nonnull(strstr(json_get_str(info, "error-desc"), "postcopy-paused"));
    json_node_unref(info);
    st = vm_status(src);
    g_assert_cmpstr(st, !=, "running");
    expect_error(src, "{'execute': 'cont'}", "There's a migration process in progress");
    expect_error(src, "{'execute': 'migrate', 'arguments': {'uri': 'unix:/nonexistent'}}",
                 "There's a migration process in progress");
    expect_error(src, "{'execute': 'migrate_cancel'}", CANCEL_REFUSED);
    g_assert_nonnull(strstr(src->stderr_text->str, "postcopy failed after the switchover"));
}

static void test_start_postcopy_refused(void)
{
    VM *src;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source(MEM, APPEND);
    expect_error(src, "{'execute': 'migrate-start-postcopy'}",
                 "Enable postcopy with migrate_set_capability before the start of migration");
    set_postcopy(src, true);
    expect_error(src, "{'execute': 'migrate-start-postcopy'}",
                 "Postcopy must be started after migration has been started");
    expect_error(src, "{'execute': 'migrate', 'arguments': {'uri': 'unix:/nonexistent', "
                 "'resume': true}}", "Cannot resume if there is no paused migration");
    expect_error(src, "{'execute': 'migrate-recover', 'arguments': {'uri': 'tcp:127.0.0.1:1'}}",
                 "Migrate recover can only be run when postcopy is paused.");
    {
        g_autofree char *out = vm_hmp(src, "migrate -d -r unix:/nonexistent");

        g_assert_nonnull(strstr(out, "Cannot resume if there is no paused migration"));
    }
    {
        g_autofree char *out = vm_hmp(src, "migrate_start_postcopy");

        g_assert_nonnull(strstr(out, "Postcopy must be started after migration has been started"));
    }
    expect_error(src, "{'execute': 'migrate-set-capabilities', 'arguments': {'capabilities': "
                 "[{'capability': 'multifd', 'state': true}]}}",
                 "Postcopy is not yet compatible with multifd");
    set_postcopy(src, false);
    expect_error(src, "{'execute': 'migrate-set-capabilities', 'arguments': {'capabilities': "
                 "[{'capability': 'postcopy-preempt', 'state': true}]}}",
                 "Postcopy preempt requires postcopy-ram");
    expect_error(src, "{'execute': 'migrate-set-capabilities', 'arguments': {'capabilities': "
                 "[{'capability': 'postcopy-ram', 'state': true}, "
                 "{'capability': 'background-snapshot', 'state': true}]}}",
                 "Background-snapshot is not compatible with postcopy-ram");
    migtest_assert_source_alive(src);
    vm_kill(src);
}

/* exec: has no way back: postcopy needs a return path. */
static void test_exec_uri(void)
{
    g_autofree char *uri = NULL;
    VM *src;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source(MEM, APPEND);
    set_postcopy(src, true);
    uri = migtest_uri("exec");
    {
        /* A reader of the fifo, so the command's open of it returns. */
        int fd = open(strstr(uri, "> ") + 2, O_RDONLY | O_NONBLOCK);

        g_assert_cmpint(fd, >=, 0);
        migtest_migrate_expect(src, uri, "failed", "Unable to open return-path for postcopy");
        close(fd);
    }
    migtest_assert_source_alive(src);
    vm_kill(src);
}

/* The destination refuses at ADVISE: before the switchover, so the source runs on. */
static void test_dest_without_capability(void)
{
    g_autofree char *uri = migtest_uri("unix");
    VM *src, *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source(MEM, APPEND);
    dst = migtest_start_dest(MEM, APPEND, false, uri);
    set_postcopy(src, true);
    migtest_migrate_expect(src, uri, "failed", NULL);
    g_assert_cmpint(vm_wait_exit(dst, 60), ==, 1);
    g_assert_nonnull(strstr(dst->stderr_text->str, "capability postcopy-ram is off here"));
    vm_kill(dst);
    migtest_assert_source_alive(src);
    set_postcopy(src, false);
    migtest_migrate_again_ok(src, MEM, APPEND);
    vm_kill(src);
}

/* Cancel is refused on both sides once the guest runs on the destination; it then completes. */
static void test_cancel_refused(void)
{
    g_autofree char *uri = migtest_uri("unix");
    int pass_before;
    VM *src, *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source(MEM, APPEND);
    pass_before = migtest_last_pass(src);
    dst = migtest_start_dest(MEM, APPEND, false, uri);
    enable_postcopy_pair(src, dst, false);
    start_slow_postcopy(src, uri);
    expect_error(src, "{'execute': 'migrate_cancel'}", CANCEL_REFUSED);
    json_node_unref(vm_wait_migration(dst, "postcopy-active", 60));
    expect_error(dst, "{'execute': 'migrate_cancel'}", CANCEL_REFUSED);
    {
        g_autofree char *out = vm_hmp(src, "migrate_cancel");

        g_assert_nonnull(strstr(out, CANCEL_REFUSED));
    }
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'max-postcopy-bandwidth': 0}}"));
    json_node_unref(vm_wait_migration(src, "completed", 120));
    json_node_unref(vm_wait_migration(dst, "completed", 60));
    migtest_assert_guest_continues(dst, APPEND, pass_before);
    vm_kill(src);
    vm_kill(dst);
}

/*
 * A destination that dies after the switchover takes the guest's newest
 * state with it; with postcopy-preempt, its second connection dies too.
 */
static void test_dest_killed(gconstpointer data)
{
    bool preempt = GPOINTER_TO_INT(data);
    g_autofree char *uri = migtest_uri("unix");
    VM *src, *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source(MEM, APPEND);
    dst = migtest_start_dest(MEM, APPEND, false, uri);
    enable_postcopy_pair(src, dst, preempt);
    start_slow_postcopy(src, uri);
    /* Let the guest there ask for pages, so the preempt channel carries some. */
    json_node_unref(vm_wait_migration(dst, "postcopy-active", 60));
    migtest_wait_ram_progress(src, "ram.postcopy-requests", 0);
    kill(dst->pid, SIGKILL);
    vm_kill(dst);
    assert_source_paused(src);
    vm_kill(src);
}

/* A connection cut after the switchover: both sides pause; the destination's guest lives on. */
static void test_connection_cut(void)
{
    g_autofree char *dst_uri = migtest_uri("tcp");
    MigProxy *proxy = migproxy_new(dst_uri);
    JsonNode *info;
    VM *src, *dst;

    if (!vmtest_require_kvm()) {
        migproxy_free(proxy);
        return;
    }
    src = migtest_start_source(MEM, APPEND);
    dst = migtest_start_dest(MEM, APPEND, false, dst_uri);
    enable_postcopy_pair(src, dst, false);
    start_slow_postcopy(src, migproxy_uri(proxy));
    json_node_unref(vm_wait_migration(dst, "postcopy-active", 60));
    migtest_wait_ram_progress(src, "ram.postcopy-bytes", 2 * 1024 * 1024);
    migproxy_cut(proxy);
    assert_source_paused(src);
    info = vm_wait_migration(dst, "postcopy-paused|completed|failed", 60);
    g_assert_cmpstr(json_get_str(info, "status"), ==, "postcopy-paused");
    json_node_unref(info);
    /* Alive, answering its monitor, and not ended as a failed load would be. */
    g_assert_false(dst->exited);
    g_assert_nonnull(strstr(dst->stderr_text->str, "Detected IO failure for postcopy"));
    g_assert_cmpuint(vm_count_lines(dst, "FAIL"), ==, 0);
    vm_kill(src);
    vm_kill(dst);
    migproxy_free(proxy);
}

/*
 * A connection cut after the switchover, then recovered: migrate-recover
 * on the destination, migrate with resume on the source (HMP for one
 * side, QMP for the other), and the migration completes with the guest's
 * memory whole (the verify firmware checks every page it reads).
 */
typedef struct RecoverCase {
    bool preempt;
    bool dst_paused;            /* -S and a dirtying guest: compare RAM at the end */
} RecoverCase;

static const RecoverCase recover_plain = { false, false };
static const RecoverCase recover_preempt = { true, false };
static const RecoverCase recover_identical = { false, true };

static void test_recover(gconstpointer data)
{
    const RecoverCase *rc = data;
    bool preempt = rc->preempt;
    const char *append = rc->dst_paused ? "mode=dirty mem=192 rate=300 pattern=random" : APPEND;
    g_autofree char *dst_uri = migtest_uri("tcp");
    g_autofree char *again_uri = migtest_uri(preempt ? "tcp" : "unix");
    MigProxy *proxy = migproxy_new(dst_uri);
    int pass_before;
    JsonNode *info;
    VM *src, *dst;

    if (!vmtest_require_kvm()) {
        migproxy_free(proxy);
        return;
    }
    src = migtest_start_source(MEM, append);
    pass_before = migtest_last_pass(src);
    dst = migtest_start_dest(MEM, append, rc->dst_paused, dst_uri);
    enable_postcopy_pair(src, dst, preempt);
    start_slow_postcopy(src, migproxy_uri(proxy));
    json_node_unref(vm_wait_migration(dst, "postcopy-active", 60));
    migtest_wait_ram_progress(src, "ram.postcopy-bytes", 2 * 1024 * 1024);
    migproxy_cut(proxy);
    json_node_unref(vm_wait_migration(src, "postcopy-paused", 60));
    json_node_unref(vm_wait_migration(dst, "postcopy-paused", 60));
    expect_error(src, "{'execute': 'migrate-recover', 'arguments': {'uri': 'unix:/x'}}",
                 "Migrate recover can only be run when postcopy is paused.");
    /* Paused both: a recovery needs a way back, so not exec:. */
    expect_error(dst, "{'execute': 'migrate-recover', 'arguments': {'uri': 'exec:cat'}}",
                 "postcopy recovery needs a tcp: or unix: URI");
    expect_error(src, "{'execute': 'migrate', 'arguments': {'uri': 'exec:cat', 'resume': true}}",
                 "postcopy recovery needs a tcp: or unix: URI");
    {
        g_autofree char *out = vm_hmp(dst, "migrate_recover %s", again_uri);

        g_assert_cmpstr(out, ==, "");
    }
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': '%s', "
                              "'resume': true}}", again_uri));
    json_node_unref(vm_wait_migration(src, "postcopy-active|completed", 60));
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'max-postcopy-bandwidth': 0}}"));
    info = vm_wait_migration(src, "completed|postcopy-paused|failed", 120);
    g_assert_cmpstr(json_get_str(info, "status"), ==, "completed");
    g_assert_cmpint(json_get_int(info, "ram.postcopy-bytes"), >, 2 * 1024 * 1024);
    json_node_unref(info);
    info = vm_wait_migration(dst, "completed|postcopy-paused|failed", 60);
    g_assert_cmpstr(json_get_str(info, "status"), ==, "completed");
    json_node_unref(info);
    {
        g_autofree char *st = vm_status(src);

        g_assert_cmpstr(st, ==, "postmigrate");
    }
    if (rc->dst_paused) {
        migtest_assert_ram_identical(src, dst, MEM);
        json_node_unref(vm_qmp_ok(dst, "{'execute': 'cont'}"));
    }
    migtest_assert_guest_continues(dst, append, pass_before);
    vm_kill(src);
    vm_kill(dst);
    migproxy_free(proxy);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/postcopy-fail/start-postcopy-refused", test_start_postcopy_refused);
    g_test_add_func("/postcopy-fail/exec-uri", test_exec_uri);
    g_test_add_func("/postcopy-fail/dest-without-capability", test_dest_without_capability);
    g_test_add_func("/postcopy-fail/cancel-refused", test_cancel_refused);
    g_test_add_data_func("/postcopy-fail/dest-killed", GINT_TO_POINTER(false), test_dest_killed);
    g_test_add_data_func("/postcopy-fail/preempt-dest-killed", GINT_TO_POINTER(true),
                         test_dest_killed);
    g_test_add_func("/postcopy-fail/connection-cut", test_connection_cut);
    g_test_add_data_func("/postcopy-fail/recover", &recover_plain, test_recover);
    g_test_add_data_func("/postcopy-fail/preempt-recover", &recover_preempt, test_recover);
    g_test_add_data_func("/postcopy-fail/recover-identical", &recover_identical, test_recover);
    return g_test_run();
}

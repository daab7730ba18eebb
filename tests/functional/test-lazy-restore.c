/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A lazy restore (x-lazy-restore) whose file becomes unreadable under the
 * running guest, on real KVM and a real file: the file is truncated while
 * the restore is still faulting pages in. The destination must not leave
 * its guest "running" and blocked on a page that cannot come: a MIGRATION
 * event says failed, the VM stops in io-error (STOP event, query-status,
 * info status), query-migrate gives the reason, and cont, system_reset,
 * pmemsave and xp are refused rather than run or read a guest whose memory
 * is missing. The guest never sees a wrong page (no FAIL line) and quit
 * still ends the process cleanly. The same with -S, where the guest never
 * ran and the failure is the prefetch's.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "libvmtest.h"
#include "migtest.h"

#define MEM "512M"
#define APPEND "mode=verify mem=384"
#define LAZY_ARGS "-global migration.x-lazy-restore=on -global migration.x-events=on"
#define RAM_INCOMPLETE "Guest RAM is incomplete (lazy restore: reading page "

/* A background snapshot with mapped-ram of a running verify guest into @file. */
static void snapshot(const char *file)
{
    VM *src = migtest_start_source(MEM, APPEND);
    JsonNode *info;

    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-capabilities', 'arguments': "
                              "{'capabilities': [{'capability': 'background-snapshot', "
                              "'state': true}, {'capability': 'mapped-ram', 'state': true}]}}"));
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': 'file:%s'}}",
                              file));
    info = vm_wait_migration(src, "completed|failed|cancelled", 300);
    g_assert_cmpstr(json_get_str(info, "status"), ==, "completed");
    json_node_unref(info);
    vm_kill(src);
}

static char *lazy_status(VM *dst)
{
    JsonNode *info = vm_qmp_ok(dst, "{'execute': 'query-migrate'}");
    char *st = g_strdup(json_has(info, "x-lazy-restore.status") ?
                        json_get_str(info, "x-lazy-restore.status") : "none");

    json_node_unref(info);
    return st;
}

/* Waits for a MIGRATION event with @status, passing over the load's own. */
static void wait_migration_event(VM *vm, const char *status)
{
    for (;;) {
        JsonNode *ev = vm_wait_event(vm, "MIGRATION", 60);
        bool found = !strcmp(json_get_str(ev, "data.status"), status);

        json_node_unref(ev);
        if (found) {
            return;
        }
    }
}

/*
 * A destination restoring a copy of @snap lazily, its file truncated while
 * the restore still faults; NULL if the prefetch had every page before the
 * truncation (the race is lost; the caller tries again).
 */
static VM *restore_and_truncate(const char *snap, const char *copy, bool paused)
{
    g_autofree char *contents = NULL;
    g_autofree char *uri = g_strdup_printf("file:%s", copy);
    g_autofree char *st = NULL;
    gsize len;
    VM *dst;

    g_assert_true(g_file_get_contents(snap, &contents, &len, NULL));
    g_assert_true(g_file_set_contents(copy, contents, len, NULL));
    dst = migtest_start_dest_extra(MEM, APPEND, paused, uri, LAZY_ARGS);
    migtest_wait_incoming_done(dst);
    /* The header, bitmaps and device state are behind us; the pages are not. */
    g_assert_cmpint(truncate(copy, 1 << 20), ==, 0);
    st = lazy_status(dst);
    if (!strcmp(st, "resident")) {
        g_test_message("the restore was resident before the truncation: again");
        vm_kill(dst);
        return NULL;
    }
    return dst;
}

/*
 * Whether @vm still holds what a lazy restore had: one of its threads
 * (mig/lr-fault, mig/lr-pfN) or a descriptor of @file.
 */
static bool holds_restore(VM *vm, const char *file)
{
    g_autofree char *tasks = g_strdup_printf("/proc/%d/task", (int)vm->pid);
    g_autofree char *fds = g_strdup_printf("/proc/%d/fd", (int)vm->pid);
    bool held = false;
    struct dirent *e;
    DIR *d = opendir(tasks);

    g_assert_nonnull(d);
    while (!held && (e = readdir(d))) {
        g_autofree char *path = g_strdup_printf("%s/%s/comm", tasks, e->d_name);
        g_autofree char *comm = NULL;

        held = e->d_name[0] != '.' && g_file_get_contents(path, &comm, NULL, NULL) &&
               g_str_has_prefix(comm, "mig/lr-");
    }
    closedir(d);
    d = opendir(fds);
    g_assert_nonnull(d);
    while (!held && (e = readdir(d))) {
        g_autofree char *path = g_strdup_printf("%s/%s", fds, e->d_name);
        g_autofree char *target = g_file_read_link(path, NULL);

        held = target && !strcmp(target, file);
    }
    closedir(d);
    return held;
}

/* The VM's state after the failure: io-error, the reason, nothing runs or reads the guest. */
static void check_stopped(VM *dst, const char *copy)
{
    g_autofree char *pmem = g_strdup_printf("%s/pmem.out", vmtest_tmpdir());
    g_autofree char *hmp = NULL;
    JsonNode *r;

    r = vm_qmp_ok(dst, "{'execute': 'query-status'}");
    g_assert_cmpstr(json_get_str(r, "status"), ==, "io-error");
    g_assert_false(json_node_get_boolean(json_object_get_member(json_node_get_object(r),
                                                                "running")));
    json_node_unref(r);
    hmp = vm_hmp(dst, "info status");
    g_assert_nonnull(strstr(hmp, "VM status: paused (io-error)"));
    r = vm_qmp_ok(dst, "{'execute': 'query-migrate'}");
    g_assert_cmpstr(json_get_str(r, "status"), ==, "failed");
    g_assert_cmpstr(json_get_str(r, "x-lazy-restore.status"), ==, "failed");
    g_assert_nonnull(strstr(json_get_str(r, "error-desc"), "lazy restore: reading page "));
    /* The file ends early: a short read, which is an I/O error (not "Success"). */
    g_assert_nonnull(strstr(json_get_str(r, "error-desc"), "from the file failed: "
                            "Input/output error"));
    json_node_unref(r);
    /*
     * The failed restore gives back its threads and the file (the
     * userfaultfd stays: waiters on its pages must not get zeros).
     */
    for (int i = 0; i < 100 && holds_restore(dst, copy); i++) {
        g_usleep(100000);
    }
    g_assert_false(holds_restore(dst, copy));
    g_assert_nonnull(strstr(dst->stderr_text->str, "the guest's memory is incomplete and "
                            "the guest cannot run"));

    /* Nothing may run the guest on, or read, memory that will never come. */
    vm_qmp_expect_error(dst, "{'execute': 'cont'}", RAM_INCOMPLETE);
    vm_qmp_expect_error(dst, "{'execute': 'system_reset'}", RAM_INCOMPLETE);
    g_free(hmp);
    hmp = g_strdup_printf("{'execute': 'migrate', 'arguments': {'uri': 'file:%s.out'}}", copy);
    vm_qmp_expect_error(dst, hmp, RAM_INCOMPLETE);
    r = vm_qmp(dst, "{'execute': 'pmemsave', 'arguments': {'val': 0, 'size': 536870912, "
               "'filename': '%s'}}", pmem);
    g_assert_true(json_has(r, "error"));
    json_node_unref(r);
    unlink(pmem);
    g_free(hmp);
    hmp = vm_hmp(dst, "xp /4x 0x500000");
    g_assert_nonnull(strstr(hmp, RAM_INCOMPLETE));
    g_free(hmp);
    hmp = vm_hmp(dst, "info status");
    g_assert_nonnull(strstr(hmp, "VM status: paused (io-error)"));
    /* What the guest did see was right. */
    vm_pump(dst, 0);
    g_assert_cmpuint(vm_count_lines(dst, "FAIL"), ==, 0);

    json_node_unref(vm_qmp_ok(dst, "{'execute': 'quit'}"));
    g_assert_cmpint(vm_wait_exit(dst, 60), ==, 0);
    vm_free(dst);
}

/*
 * @paused: the destination has -S, so the guest never ran and no vCPU
 * waits on a page; the failure comes from the prefetch alone.
 */
static void truncated_under_restore(bool paused)
{
    g_autofree char *snap = g_strdup_printf("%s/lazy.snap", vmtest_tmpdir());
    g_autofree char *copy = g_strdup_printf("%s/lazy-copy.snap", vmtest_tmpdir());
    VM *dst = NULL;

    if (!vmtest_require_kvm()) {
        return;
    }
    snapshot(snap);
    for (int i = 0; i < 3 && !dst; i++) {
        dst = restore_and_truncate(snap, copy, paused);
    }
    g_assert_nonnull(dst);
    /* Told, and stopped for the reason, where it used to stay "running". */
    wait_migration_event(dst, "failed");
    if (!paused) {
        /* The kick ended the vCPU's wait on a missing page. */
        json_node_unref(vm_wait_event(dst, "STOP", 60));
    }
    check_stopped(dst, copy);
    unlink(copy);
    unlink(snap);
}

static void test_file_truncated(void)
{
    truncated_under_restore(false);
}

static void test_file_truncated_paused(void)
{
    truncated_under_restore(true);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/lazy-restore/file-truncated", test_file_truncated);
    g_test_add_func("/lazy-restore/file-truncated-paused", test_file_truncated_paused);
    return g_test_run();
}

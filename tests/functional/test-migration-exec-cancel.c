/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * migrate_cancel of a migration into an exec: command that stopped
 * reading. The command's pipe fills up and the migration thread blocks
 * writing to it; shutdown(2) cannot wake a pipe, so the channel's pipe row
 * must (a wake eventfd beside the fd in poll). Without that, the status
 * stayed "cancelling" until the command exited (here: 120 s).
 *
 * Checked: cancel answers at once; the status becomes "cancelled" within
 * seconds while the command still runs; the guest keeps running; the
 * source holds no end of the command's pipe any more; the command, once it
 * exits, is reaped (no zombie); and a new migration works. And the other
 * way: a destination reading from a command that sends nothing ends its
 * load on migrate_cancel.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include "libvmtest.h"
#include "migtest.h"

#define MEM "256M"
#define APPEND "mode=verify mem=128"

/* The pids of @pid's children (all its threads'). */
static GHashTable *children_of(GPid pid)
{
    g_autofree char *dir = g_strdup_printf("/proc/%d/task", pid);
    GHashTable *set = g_hash_table_new(NULL, NULL);
    DIR *d = opendir(dir);
    struct dirent *e;

    g_assert_nonnull(d);
    while ((e = readdir(d))) {
        g_autofree char *path = g_strdup_printf("%s/%s/children", dir, e->d_name);
        g_autofree char *text = NULL;
        g_auto(GStrv) pids = NULL;

        if (e->d_name[0] == '.' || !g_file_get_contents(path, &text, NULL, NULL)) {
            continue;
        }
        pids = g_strsplit(g_strstrip(text), " ", -1);
        for (int i = 0; pids[i]; i++) {
            if (*pids[i]) {
                g_hash_table_add(set, GINT_TO_POINTER(atoi(pids[i])));
            }
        }
    }
    closedir(d);
    return set;
}

/* The command the migration started: the one child of @src not in @before. */
static GPid wait_new_child(VM *src, GHashTable *before)
{
    gint64 end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;

    while (g_get_monotonic_time() < end) {
        g_autoptr(GHashTable) now = children_of(src->pid);
        GHashTableIter it;
        gpointer key;

        g_hash_table_iter_init(&it, now);
        while (g_hash_table_iter_next(&it, &key, NULL)) {
            if (!g_hash_table_contains(before, key)) {
                return GPOINTER_TO_INT(key);
            }
        }
        g_usleep(10 * 1000);
    }
    g_assert_not_reached();
}

/* Waits until the pipe on @child's stdin is full: the migration thread is blocked writing. */
static ino_t wait_pipe_full(GPid child)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/fd/0", child);
    gint64 end = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    struct stat st;
    int fd, size, queued = 0;

    /* Between fork and exec its stdin may not be the pipe yet. */
    while ((stat(path, &st) < 0 || !S_ISFIFO(st.st_mode)) && g_get_monotonic_time() < end) {
        g_usleep(10 * 1000);
    }
    /* Another reader of the same pipe: it only looks (FIONREAD), never reads. */
    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(fstat(fd, &st), ==, 0);
    g_assert_true(S_ISFIFO(st.st_mode));
    size = fcntl(fd, F_GETPIPE_SZ);
    g_assert_cmpint(size, >, 0);
    /* Full up to its last partly filled pages: the writer waits for room. */
    while (g_get_monotonic_time() < end) {
        g_assert_cmpint(ioctl(fd, FIONREAD, &queued), ==, 0);
        if (queued + 65536 >= size) {
            break;
        }
        g_usleep(10 * 1000);
    }
    close(fd);
    g_assert_cmpint(queued + 65536, >=, size);
    return st.st_ino;
}

/*
 * Waits until @src's migration thread sleeps in a write to the pipe (in
 * the kernel's write, or in poll() waiting for room), not in a rate-limit
 * pause: only then does the cancel test what it means to.
 */
static void wait_writer_blocked(VM *src)
{
    g_autofree char *dir = g_strdup_printf("/proc/%d/task", src->pid);
    gint64 end = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    int seen = 0;

    while (seen < 3 && g_get_monotonic_time() < end) {
        DIR *d = opendir(dir);
        struct dirent *e;
        bool blocked = false;

        g_assert_nonnull(d);
        while ((e = readdir(d))) {
            g_autofree char *comm_path = g_strdup_printf("%s/%s/comm", dir, e->d_name);
            g_autofree char *sc_path = g_strdup_printf("%s/%s/syscall", dir, e->d_name);
            g_autofree char *comm = NULL, *sc = NULL;
            long nr;

            if (e->d_name[0] == '.' || !g_file_get_contents(comm_path, &comm, NULL, NULL) ||
                strcmp(g_strstrip(comm), "mig/src") ||
                !g_file_get_contents(sc_path, &sc, NULL, NULL)) {
                continue;
            }
            nr = strtol(sc, NULL, 10);
            /* x86-64: write, writev, poll, ppoll */
            blocked = nr == 1 || nr == 20 || nr == 7 || nr == 271;
        }
        closedir(d);
        seen = blocked ? seen + 1 : 0;
        g_usleep(20 * 1000);
    }
    g_assert_cmpint(seen, ==, 3);
}

/* Whether @pid has an fd on the pipe with inode @ino. */
static bool holds_pipe(GPid pid, ino_t ino)
{
    g_autofree char *dir = g_strdup_printf("/proc/%d/fd", pid);
    g_autofree char *want = g_strdup_printf("pipe:[%lu]", (unsigned long)ino);
    DIR *d = opendir(dir);
    struct dirent *e;
    bool found = false;

    g_assert_nonnull(d);
    while ((e = readdir(d)) && !found) {
        g_autofree char *path = g_strdup_printf("%s/%s", dir, e->d_name);
        g_autofree char *target = g_file_read_link(path, NULL);

        found = target && !strcmp(target, want);
    }
    closedir(d);
    return found;
}

/* 'Z' for a zombie, 0 once the process is gone (reaped). */
static char proc_state(GPid pid)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/stat", pid);
    g_autofree char *text = NULL;
    const char *p;

    if (!g_file_get_contents(path, &text, NULL, NULL)) {
        return 0;
    }
    p = strrchr(text, ')');
    return p && p[1] && p[2] ? p[2] : '?';
}

static void test_cancel_stuck_command(void)
{
    g_autoptr(GHashTable) before = NULL;
    VM *src;
    GPid child;
    ino_t pipe_ino;
    gint64 t0, end;
    JsonNode *info;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source(MEM, APPEND);
    /* No rate-limit pauses: the thread writes until the pipe stops it. */
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'max-bandwidth': 4294967296}}"));
    before = children_of(src->pid);
    /*
     * sleep never reads its stdin: once the pipe is full, every write
     * blocks. exec: the shell's child is sleep itself, so killing it below
     * leaves nothing behind; 120 s bounds what a failed run leaves.
     */
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': "
                              "{'uri': 'exec:exec sleep 120'}}"));
    child = wait_new_child(src, before);
    pipe_ino = wait_pipe_full(child);
    wait_writer_blocked(src);
    g_assert_true(holds_pipe(src->pid, pipe_ino));

    t0 = g_get_monotonic_time();
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate_cancel'}"));
    g_assert_cmpint(g_get_monotonic_time() - t0, <, 5 * G_USEC_PER_SEC);
    /* Not when the command exits (in 600 s): now. */
    info = vm_wait_migration(src, "cancelled|failed|completed", 20);
    g_assert_cmpstr(json_get_str(info, "status"), ==, "cancelled");
    json_node_unref(info);
    g_assert_cmpint(g_get_monotonic_time() - t0, <, 20 * G_USEC_PER_SEC);
    /* The command still runs, but the source let go of its pipe. */
    g_assert_cmpint(proc_state(child), !=, 0);
    g_assert_false(holds_pipe(src->pid, pipe_ino));
    migtest_assert_source_alive(src);

    /* When the command ends, the source reaps it without anyone waiting on it. */
    g_assert_cmpint(kill(child, SIGKILL), ==, 0);
    end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
    while (proc_state(child) && g_get_monotonic_time() < end) {
        g_usleep(10 * 1000);
    }
    g_assert_cmpint(proc_state(child), ==, 0);

    migtest_migrate_again_ok(src, MEM, APPEND);
    vm_kill(src);
}

/*
 * The other direction: a destination loading from a command that sends
 * nothing. Its mig/dst thread waits in a read of the pipe; migrate_cancel
 * there must end the load (the process exits 1, the guest never ran), not
 * wait for the command.
 */
static void test_dest_cancel_silent_command(void)
{
    g_autoptr(GHashTable) none = g_hash_table_new(NULL, NULL);
    VM *dst;
    GPid child;
    JsonNode *info;

    if (!vmtest_require_kvm()) {
        return;
    }
    /* Its stderr elsewhere: the harness reads the VM's until every holder closed it. */
    dst = migtest_start_dest(MEM, APPEND, false, "exec:exec sleep 120 2>/dev/null");
    info = vm_wait_migration(dst, "active", 30);
    json_node_unref(info);
    child = wait_new_child(dst, none);
    json_node_unref(vm_qmp_ok(dst, "{'execute': 'migrate_cancel'}"));
    g_assert_cmpint(vm_wait_exit(dst, 20), ==, 1);
    g_assert_nonnull(strstr(dst->stderr_text->str, "incoming migration cancelled"));
    g_assert_cmpuint(vm_count_lines(dst, "PASS"), ==, 0);
    /* Its parent is gone: nothing of the test may outlive it. */
    kill(child, SIGKILL);
    vm_kill(dst);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/migration/exec/cancel-stuck-command", test_cancel_stuck_command);
    g_test_add_func("/migration/exec/dest-cancel-silent-command",
                    test_dest_cancel_silent_command);
    return g_test_run();
}

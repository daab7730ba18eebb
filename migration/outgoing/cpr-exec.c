/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The cpr-exec row of the outgoing modes: a live update in place. The
 * guest's RAM never moves and the PID stays: the guest is stopped, its
 * vCPU and device state written to the migrate URI (a file), and this
 * process then executes cpr-exec-command, which inherits the memory's fds
 * and finds them, by name, in a memfd named by an environment variable
 * (the cpr state's bytes: migration/core/cpr-state.h). Before anything
 * stops, the command is run once with CPR_EXEC_PROBE_ENV set: a binary
 * that is missing or refuses its options is found while the guest runs
 * on. An exec that fails gives the guest back here; a new image (ours)
 * that fails before the guest runs executes this binary again, which
 * loads the same state (cpr_rollback_encode). docs/devel/live-update.md
 * tells the order and why each fd survives.
 */
#include "qemu/osdep.h"
#include <sys/syscall.h>
#include <sched.h>
#include <sys/wait.h>
#include "qapi/error.h"
#include "system/runstate.h"
#include "migration/cpr-exec.h"
#include "migration/misc.h"
#include "migration/core/options.h"
#include "migration/core/status.h"
#include "migration/transport/ram.h"
#include "outgoing.h"
#include "cpr.h"

/* How long the probe of the new binary may take (it parses options and exits). */
#define CPR_EXEC_PROBE_TIMEOUT_MS 30000

/*
 * This process's own command line, for the way back (cpr_rollback_encode):
 * set once by migration_set_argv at startup, read by the main thread. The
 * process's, not a migration's, so it lives here rather than in a state.
 */
static char **own_argv;

void migration_set_argv(int argc, char **argv)
{
    g_strfreev(own_argv);
    own_argv = g_new0(char *, argc + 1);
    for (int i = 0; i < argc; i++) {
        own_argv[i] = g_strdup(argv[i]);
    }
}

static bool cpr_exec_selected(void)
{
    return migrate_mode() == MIG_MODE_CPR_EXEC;
}

static void cpr_exec_init(MigrationState *s, void *ms)
{
    ram_select_source(&cpr_ram_source, ms);
}

static bool cpr_exec_check_start(MigrationState *s, const char *uri, Error **errp)
{
    if (!migrate_cpr_exec_command()) {
        error_setg(errp, "cpr-exec: set the cpr-exec-command parameter first (the new "
                   "binary, its options and an -incoming naming the migrate URI)");
        return false;
    }
    /* The new process reads the state after the exec: nothing may stream it live. */
    if (!g_str_has_prefix(uri, "file:")) {
        error_setg(errp, "cpr-exec: the main channel must be a file (file:PATH), which "
                   "the new process names in its -incoming, not '%s'", uri);
        return false;
    }
    return cpr_check_start(errp);
}

/* cpr-exec-command as an argv (g_strfreev it). */
static char **cpr_exec_argv(void)
{
    GPtrArray *a = g_ptr_array_new();

    for (const strList *l = migrate_cpr_exec_command(); l; l = l->next) {
        g_ptr_array_add(a, g_strdup(l->value));
    }
    g_ptr_array_add(a, NULL);
    return (char **)g_ptr_array_free(a, FALSE);
}

/* The probe's last line of stderr, for the error. */
static char *cpr_exec_probe_stderr(int fd)
{
    g_autoptr(GString) out = g_string_new(NULL);
    char buf[4096];
    ssize_t r;
    g_auto(GStrv) lines = NULL;
    guint n;

    while ((r = read(fd, buf, sizeof(buf))) > 0 && out->len < 65536) {
        g_string_append_len(out, buf, r);
    }
    lines = g_strsplit(g_strstrip(out->str), "\n", -1);
    n = g_strv_length(lines);
    return g_strdup(n ? lines[n - 1] : "");
}

/*
 * mig/src, the guest running: the command must start and accept its
 * options (our binary exits 0 after parsing them when CPR_EXEC_PROBE_ENV
 * is set). Polled, so that migrate_cancel ends the wait.
 */
static bool cpr_exec_before_connect(MigrationState *s, void *ms, Error **errp)
{
    g_auto(GStrv) argv = cpr_exec_argv();
    g_auto(GStrv) envp = g_environ_setenv(g_get_environ(), CPR_EXEC_PROBE_ENV, "1", TRUE);
    g_autoptr(GError) gerr = NULL;
    int64_t deadline = get_clock_ns() + CPR_EXEC_PROBE_TIMEOUT_MS * 1000000LL;
    int err_fd = -1, status;
    GPid pid;

    if (!g_spawn_async_with_pipes(NULL, argv, envp,
                                  G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD |
                                  G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, &pid, NULL, NULL,
                                  &err_fd, &gerr)) {
        error_setg(errp, "cpr-exec: cannot execute '%s': %s", argv[0], gerr->message);
        return false;
    }
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (migrate_get_state(&s->state) == MIGRATION_STATUS_CANCELLING ||
            get_clock_ns() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            close(err_fd);
            error_setg(errp, "cpr-exec: %s", get_clock_ns() > deadline
                       ? "the new binary did not answer its options within 30 s"
                       : "cancelled while the new binary was checked");
            return false;
        }
        g_usleep(10000);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status)) {
        g_autofree char *why = cpr_exec_probe_stderr(err_fd);

        close(err_fd);
        error_setg(errp, "cpr-exec: '%s' refused to start (%s %d)%s%s", argv[0],
                   WIFEXITED(status) ? "exit status" : "signal",
                   WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                   *why ? ": " : "", why);
        return false;
    }
    close(err_fd);
    return true;
}

static void cpr_exec_set_cloexec(const CprFdEntry *e, unsigned n, bool on)
{
    for (unsigned i = 0; i < n; i++) {
        int fl = fcntl(e[i].fd, F_GETFD);

        fcntl(e[i].fd, F_SETFD, on ? fl | FD_CLOEXEC : fl & ~FD_CLOEXEC);
    }
}

/*
 * The way back, for a new image that fails before the guest runs: an fd
 * of this binary (which may be gone from the disk by then) and this
 * process's arguments with an -incoming of the state file, in a memfd
 * that crosses the exec. Returns the memfd (and the binary's fd in
 * @exe_fd), or -1: the update then goes on without a way back.
 */
static int cpr_exec_rollback_record(const char *uri, int *exe_fd)
{
    g_autoptr(GPtrArray) args = g_ptr_array_new();
    g_autoptr(GByteArray) b = NULL;
    int fd;

    if (!own_argv) {
        return -1;
    }
    *exe_fd = open("/proc/self/exe", O_RDONLY);      /* no CLOEXEC: it must cross */
    if (*exe_fd < 0) {
        warn_report("cpr-exec: no way back if the new binary fails: /proc/self/exe: %s",
                    strerror(errno));
        return -1;
    }
    for (char **a = own_argv; *a; a++) {
        g_ptr_array_add(args, *a);
    }
    g_ptr_array_add(args, (char *)"-incoming");
    g_ptr_array_add(args, (char *)uri);
    g_ptr_array_add(args, NULL);
    b = cpr_rollback_encode(*exe_fd, (char *const *)args->pdata);
    fd = syscall(SYS_memfd_create, "cpr-exec-rollback", 0);
    if (fd < 0 || write(fd, b->data, b->len) != (ssize_t)b->len) {
        warn_report("cpr-exec: no way back if the new binary fails: %s", strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        close(*exe_fd);
        return -1;
    }
    return fd;
}

/*
 * The old image's address space outlives the exec by a moment. Tearing it
 * down is the exec's last step otherwise, and with guest RAM mapped 4 KiB
 * at a time (shmem here has no huge pages) that is about 80 ms per 4 GiB
 * of populated RAM inside the guest's pause. A task that shares the
 * address space (CLONE_VM, not a thread: the exec does not end it) keeps
 * it alive, waits for the exec (the close-on-exec write end of @pipe
 * closes) and exits, so the teardown runs there, beside the new image's
 * start. The new image reaps it (CPR_EXEC_REAP_ENV). It runs on its own
 * stack and only calls close, read and _exit.
 */
typedef struct CprExecHolder {
    int read_fd, write_fd;
} CprExecHolder;

static int cpr_exec_holder(void *opaque)
{
    CprExecHolder *h = opaque;
    char c;

    close(h->write_fd);                 /* its copy: only the exec may close the last one */
    while (read(h->read_fd, &c, 1) > 0) {
    }
    _exit(0);
}

#define CPR_EXEC_HOLDER_STACK (64 * 1024)

/* The holder's pid, or -1 (then the exec tears the address space down itself). */
static pid_t cpr_exec_hold_mm(int *write_fd)
{
    static CprExecHolder h;
    static char *stack;
    int p[2];
    pid_t pid;

    if (!stack) {
        stack = g_malloc(CPR_EXEC_HOLDER_STACK);
    }
    if (pipe2(p, O_CLOEXEC) < 0) {
        return -1;
    }
    h = (CprExecHolder) { .read_fd = p[0], .write_fd = p[1] };
    /* No exit signal: the new image reaps it with __WALL. */
    pid = clone(cpr_exec_holder, stack + CPR_EXEC_HOLDER_STACK, CLONE_VM, &h);
    close(p[0]);
    if (pid < 0) {
        close(p[1]);
        return -1;
    }
    *write_fd = p[1];
    return pid;
}

/* The exec failed: the holder ends (its read sees EOF) and is reaped here. */
static void cpr_exec_release_mm(pid_t pid, int write_fd)
{
    int status;

    if (pid < 0) {
        return;
    }
    close(write_fd);
    waitpid(pid, &status, __WALL);
}

/*
 * Main thread, the state file written and closed: become the new binary.
 * Returns only if the exec failed, everything undone.
 */
static bool cpr_exec_hand_over(MigrationState *s, void *ms, Error **errp)
{
    CprFdEntry e[CPR_STATE_MAX_FDS];
    unsigned n = cpr_fd_entries(e);
    g_autoptr(GByteArray) b = cpr_state_encode(MIG_MODE_CPR_EXEC, e, n);
    g_auto(GStrv) argv = cpr_exec_argv();
    g_auto(GStrv) envp = NULL;
    g_autofree char *fdstr = NULL;
    int sfd = syscall(SYS_memfd_create, "cpr-exec-state", 0);     /* no CLOEXEC: it must cross */
    int rb_fd, exe_fd = -1, holder_fd = -1;
    pid_t holder;

    if (sfd < 0) {
        error_setg_errno(errp, errno, "cpr-exec: memfd for the cpr state");
        return false;
    }
    if (write(sfd, b->data, b->len) != (ssize_t)b->len) {
        error_setg_errno(errp, errno, "cpr-exec: writing the cpr state");
        close(sfd);
        return false;
    }
    fdstr = g_strdup_printf("%d", sfd);
    envp = g_environ_setenv(g_get_environ(), CPR_EXEC_STATE_ENV, fdstr, TRUE);
    rb_fd = cpr_exec_rollback_record(s->uri, &exe_fd);
    if (rb_fd >= 0) {
        g_autofree char *rbstr = g_strdup_printf("%d", rb_fd);

        envp = g_environ_setenv(envp, CPR_EXEC_ROLLBACK_ENV, rbstr, TRUE);
    }
    holder = cpr_exec_hold_mm(&holder_fd);
    if (holder >= 0) {
        g_autofree char *pidstr = g_strdup_printf("%d", holder);

        envp = g_environ_setenv(envp, CPR_EXEC_REAP_ENV, pidstr, TRUE);
    }
    cpr_exec_set_cloexec(e, n, false);
    fflush(NULL);
    execvpe(argv[0], argv, envp);
    error_setg_errno(errp, errno, "cpr-exec: cannot execute '%s'", argv[0]);
    cpr_exec_release_mm(holder, holder_fd);
    cpr_exec_set_cloexec(e, n, true);
    close(sfd);
    if (rb_fd >= 0) {
        close(rb_fd);
        close(exe_fd);
    }
    return false;
}

const MigrationOutMode cpr_exec_mode = {
    .name = "cpr-exec",
    .hands_over_memory = true,
    .state_size = sizeof(PrecopyState),
    .selected = cpr_exec_selected,
    .init = cpr_exec_init,
    .check_start = cpr_exec_check_start,
    .downtime_info = cpr_downtime_info,
    .before_connect = cpr_exec_before_connect,
    .stream_start = cpr_stream_start,
    .switchover_ready = cpr_switchover_ready,
    .complete = cpr_complete,
    .hand_over = cpr_exec_hand_over,
    .cleanup = cpr_cleanup,
};

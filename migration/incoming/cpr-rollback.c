/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cpr-exec's way back to the old binary (cpr-rollback.h). */
#include "qemu/osdep.h"
#include <sys/syscall.h>
#include "qapi/error.h"
#include "migration/cpr-exec.h"
#include "cpr-rollback.h"

/*
 * Armed at startup, disarmed when the guest loaded, read by the exit
 * handler: the process's one way back, set before any thread exists
 * (exit runs the handler in whichever thread exits, after the others
 * have stopped mattering).
 */
static struct {
    bool armed;
    bool registered;            /* atexit done (it cannot be undone) */
    int exe_fd;                 /* the old binary, close-on-exec until used */
    char **argv;
    unsigned n;
    CprFdEntry e[CPR_STATE_MAX_FDS];    /* our own duplicates of the memory's fds */
} rollback = { .exe_fd = -1 };

void cpr_rollback_disarm(void)
{
    if (!rollback.armed) {
        return;
    }
    rollback.armed = false;
    close(rollback.exe_fd);
    rollback.exe_fd = -1;
    for (unsigned i = 0; i < rollback.n; i++) {
        close(rollback.e[i].fd);
        g_free(rollback.e[i].name);
    }
    rollback.n = 0;
    g_clear_pointer(&rollback.argv, g_strfreev);
}

/* exit() before the guest loaded: become the old binary again, with the same memory. */
static void cpr_rollback_run(void)
{
    g_autoptr(GByteArray) b = NULL;
    g_auto(GStrv) envp = NULL;
    g_autofree char *fdstr = NULL;
    int sfd;

    if (!rollback.armed) {
        return;
    }
    rollback.armed = false;
    fprintf(stderr, "cpr-exec: the new binary stopped before the guest ran; "
            "the old binary takes the guest back\n");
    b = cpr_state_encode(MIG_MODE_CPR_EXEC, rollback.e, rollback.n);
    sfd = syscall(SYS_memfd_create, "cpr-exec-state", 0);
    if (sfd < 0 || write(sfd, b->data, b->len) != (ssize_t)b->len) {
        fprintf(stderr, "cpr-exec: no way back (%s): the guest is lost\n", strerror(errno));
        return;
    }
    for (unsigned i = 0; i < rollback.n; i++) {
        fcntl(rollback.e[i].fd, F_SETFD, 0);
    }
    fcntl(rollback.exe_fd, F_SETFD, FD_CLOEXEC);    /* fexecve needs it only to start */
    fdstr = g_strdup_printf("%d", sfd);
    envp = g_environ_setenv(g_get_environ(), CPR_EXEC_STATE_ENV, fdstr, TRUE);
    envp = g_environ_unsetenv(envp, CPR_EXEC_ROLLBACK_ENV);
    fflush(NULL);
    fexecve(rollback.exe_fd, rollback.argv, envp);
    fprintf(stderr, "cpr-exec: cannot execute the old binary again (%s): the guest is lost\n",
            strerror(errno));
}

bool cpr_rollback_arm(int record_fd, const CprState *st, Error **errp)
{
    size_t len;
    g_autofree uint8_t *buf = cpr_memfd_read(record_fd, "rollback record", &len, errp);

    if (!buf) {
        return false;
    }
    cpr_rollback_disarm();
    rollback.argv = cpr_rollback_parse(buf, len, &rollback.exe_fd, errp);
    if (!rollback.argv) {
        return false;
    }
    if (rollback.exe_fd <= STDERR_FILENO || fcntl(rollback.exe_fd, F_GETFD) < 0) {
        error_setg(errp, "cpr-exec: the rollback record names fd %d, which this process did "
                   "not inherit", rollback.exe_fd);
        g_clear_pointer(&rollback.argv, g_strfreev);
        return false;
    }
    fcntl(rollback.exe_fd, F_SETFD, FD_CLOEXEC);
    /* Ours: whatever takes or closes the originals, these stay for the way back. */
    for (unsigned i = 0; i < st->n; i++) {
        rollback.e[i] = (CprFdEntry) {
            .name = g_strdup(st->e[i].name), .size = st->e[i].size,
            .fd = fcntl(st->e[i].sender_fd, F_DUPFD_CLOEXEC, 3),
        };
        rollback.n = i + 1;
        if (rollback.e[i].fd < 0) {
            error_setg_errno(errp, errno, "cpr-exec: keeping fd %d for the way back",
                             st->e[i].sender_fd);
            rollback.armed = true;
            cpr_rollback_disarm();
            return false;
        }
    }
    rollback.armed = true;
    if (!rollback.registered) {
        rollback.registered = true;
        atexit(cpr_rollback_run);
    }
    return true;
}

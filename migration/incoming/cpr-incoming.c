/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A live update's new process takes the cpr state (migration/misc.h's
 * cpr_incoming_receive from the cpr channel, cpr_exec_incoming_adopt from
 * what the exec left it): before the memory backends exist, so that each
 * RAM block maps the old process's memory instead of making its own.
 */
#include "qemu/osdep.h"
#include <sys/socket.h>
#include <sys/wait.h>
#include "qemu/thread.h"
#include "qapi/error.h"
#include "qemu/cpr-fd.h"
#include "qemu/cutils.h"
#include "qemu/sockets.h"
#include "migration/misc.h"
#include "migration/cpr-exec.h"
#include "migration/core/channel-list.h"
#include "migration/core/cpr-state.h"
#include "migration/core/options.h"
#include "incoming.h"
#include "cpr-rollback.h"

/* The one connection the old process makes; the listener goes once it came. */
static int cpr_accept_one(const char *path, Error **errp)
{
    int lfd = unix_listen_private(path, errp);
    int fd;

    if (lfd < 0) {
        return -1;
    }
    do {
        fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        error_setg_errno(errp, errno, "cpr channel %s: accept", path);
    }
    close(lfd);
    unlink(path);
    return fd;
}

bool cpr_incoming_receive(const char *arg, Error **errp)
{
    g_autoptr(CprState) st = NULL;
    g_autofree char *uri = NULL;
    bool is_cpr;
    int fd;

    uri = migration_channel_json_uri(arg, &is_cpr, errp);
    if (!uri) {
        return false;
    }
    assert(is_cpr && g_str_has_prefix(uri, "unix:"));   /* channel-list.c's check */
    fd = cpr_accept_one(uri + strlen("unix:"), errp);
    if (fd < 0) {
        return false;
    }
    st = cpr_state_recv(fd, errp);
    if (!st) {
        close(fd);
        return false;
    }
    for (unsigned i = 0; i < st->n; i++) {
        cpr_fd_add(st->e[i].name, st->e[i].fd);
        st->e[i].fd = -1;       /* the table's now */
    }
    /* As QEMU's: the new process takes its mode from the old one. */
    migrate_set_mode(st->mode);
    migration_incoming_hold_cpr_conn(fd);
    return true;
}

/* The cpr state's bytes in the inherited memfd @fd (closed here). */
static CprState *cpr_exec_read_state(int fd, Error **errp)
{
    size_t len;
    g_autofree uint8_t *buf = cpr_memfd_read(fd, "cpr state", &len, errp);

    return buf ? cpr_state_parse(buf, len, errp) : NULL;
}

/* The old image's address space goes in this thread's time, not the main one's. */
static void *cpr_exec_reap(void *opaque)
{
    int status;

    waitpid(GPOINTER_TO_INT(opaque), &status, __WALL);
    return NULL;
}

/* The task that held the old image's memory map (CPR_EXEC_REAP_ENV) is ours to reap. */
static void cpr_exec_reap_holder(void)
{
    const char *v = getenv(CPR_EXEC_REAP_ENV);
    QemuThread t;
    int pid;

    if (!v) {
        return;
    }
    g_unsetenv(CPR_EXEC_REAP_ENV);
    if (qemu_strtoi(v, NULL, 10, &pid) < 0 || pid <= 1) {
        return;
    }
    qemu_thread_create(&t, "cpr-reap", cpr_exec_reap, GINT_TO_POINTER(pid));
    pthread_detach(t.thread);     /* nothing waits for it; the process may end first */
}

bool cpr_exec_incoming_adopt(Error **errp)
{
    const char *v = getenv(CPR_EXEC_STATE_ENV);
    g_autoptr(CprState) st = NULL;
    Error *rb_err = NULL;
    const char *rb;
    int fd;

    cpr_exec_reap_holder();
    if (!v) {
        return true;
    }
    if (qemu_strtoi(v, NULL, 10, &fd) < 0 || fd <= STDERR_FILENO || fcntl(fd, F_GETFD) < 0) {
        error_setg(errp, "cpr-exec: %s=%s names no inherited fd", CPR_EXEC_STATE_ENV, v);
        return false;
    }
    /* Not for whatever this process runs next (an exec: migration's command). */
    g_unsetenv(CPR_EXEC_STATE_ENV);
    st = cpr_exec_read_state(fd, errp);
    if (!st) {
        return false;
    }
    /* Armed first: whatever fails from here on, the old binary takes the guest back. */
    rb = getenv(CPR_EXEC_ROLLBACK_ENV);
    if (rb) {
        int rb_fd;

        if (qemu_strtoi(rb, NULL, 10, &rb_fd) < 0 || rb_fd <= STDERR_FILENO ||
            fcntl(rb_fd, F_GETFD) < 0) {
            warn_report("cpr-exec: %s=%s names no inherited fd: no way back",
                        CPR_EXEC_ROLLBACK_ENV, rb);
        } else if (!cpr_rollback_arm(rb_fd, st, &rb_err)) {
            warn_report_err(rb_err);
        }
        g_unsetenv(CPR_EXEC_ROLLBACK_ENV);
    }
    if (st->mode != MIG_MODE_CPR_EXEC) {
        error_setg(errp, "cpr-exec: the inherited state is for mode %s", MigMode_str(st->mode));
        return false;
    }
    for (unsigned i = 0; i < st->n; i++) {
        int efd = st->e[i].sender_fd;

        if (efd <= STDERR_FILENO || fcntl(efd, F_GETFD) < 0) {
            error_setg(errp, "cpr-exec: RAM block '%s' names fd %d, which this process did "
                       "not inherit", st->e[i].name, efd);
            return false;
        }
    }
    for (unsigned i = 0; i < st->n; i++) {
        int efd = st->e[i].sender_fd;

        /* Ours now, and not the next exec's. */
        fcntl(efd, F_SETFD, fcntl(efd, F_GETFD) | FD_CLOEXEC);
        cpr_fd_add(st->e[i].name, efd);
    }
    migrate_set_mode(st->mode);
    return true;
}

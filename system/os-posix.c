/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The process around the VM: -daemonize, -D and -pidfile (include/system/os-posix.h). */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "system/os-posix.h"
#include <sys/file.h>
#include <syslog.h>

/* -daemonize: the parent exits once the child reports that init succeeded. Main thread. */
static int daemon_pipe = -1;
/* -D: where a daemon's stderr goes; -1 for syslog. Main thread, set while parsing. */
static int log_fd = -1;

bool os_set_logfile(const char *path, Error **errp)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

    if (fd < 0) {
        error_setg(errp, "Error opening logfile %s: %s", path, g_strerror(errno));
        return false;
    }
    if (log_fd >= 0) {
        close(log_fd);
    }
    log_fd = fd;
    return true;
}

/* Each line written to stderr, as one syslog message; runs until every writer is gone. */
static gpointer stderr_to_syslog(gpointer opaque)
{
    FILE *in = opaque;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;

    while ((n = getline(&line, &cap, in)) > 0) {
        if (line[n - 1] == '\n') {
            line[n - 1] = '\0';
        }
        syslog(LOG_ERR, "%s", line);
    }
    free(line);
    fclose(in);
    return NULL;
}

/*
 * A daemon's stderr: error_report() and warnings still have to reach an
 * operator after the terminal is gone, so never /dev/null (as QEMU does
 * without -D): the -D file, else syslog under the process's name.
 */
static int daemon_stderr_fd(void)
{
    int fds[2];
    FILE *in;

    if (log_fd >= 0) {
        return log_fd;
    }
    if (pipe2(fds, O_CLOEXEC) < 0 || !(in = fdopen(fds[0], "r"))) {
        return -1;
    }
    openlog(error_get_progname(), LOG_PID, LOG_DAEMON);
    g_thread_unref(g_thread_new("stderr-syslog", stderr_to_syslog, in));
    return fds[1];
}

void os_daemonize(void)
{
    int fds[2];
    pid_t pid;

    if (pipe(fds) < 0) {
        error_report("-daemonize: pipe failed: %s", g_strerror(errno));
        exit(1);
    }
    pid = fork();
    if (pid < 0) {
        error_report("-daemonize: fork failed: %s", g_strerror(errno));
        exit(1);
    }
    if (pid > 0) {
        uint8_t status = 1;
        close(fds[1]);
        if (RETRY_ON_EINTR(read(fds[0], &status, 1)) != 1) {
            status = 1;
        }
        exit(status);
    }
    close(fds[0]);
    daemon_pipe = fds[1];
    setsid();
}

void os_setup_post(void)
{
    int null;

    if (daemon_pipe < 0) {
        return;
    }
    null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        int err_fd = daemon_stderr_fd();

        dup2(null, 0);
        dup2(null, 1);
        dup2(err_fd >= 0 ? err_fd : null, 2);
        if (err_fd >= 0 && err_fd != log_fd) {
            close(err_fd);
        }
        close(null);
    }
    if (write(daemon_pipe, "", 1) != 1) {
        /* Parent is gone; nothing to tell. */
    }
    close(daemon_pipe);
    daemon_pipe = -1;
}

static char *pidfile_path;

static void pidfile_remove(void)
{
    if (pidfile_path) {
        unlink(pidfile_path);
    }
}

bool pidfile_create(const char *path, Error **errp)
{
    g_autofree char *pid = g_strdup_printf("%d\n", (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

    if (fd < 0) {
        error_setg_errno(errp, errno, "cannot open pid file");
        return false;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        error_setg(errp, "Failed to get \"write\" lock on pid file (is another QEMU running?)");
        close(fd);
        return false;
    }
    if (ftruncate(fd, 0) < 0 || write(fd, pid, strlen(pid)) != (ssize_t)strlen(pid)) {
        error_setg_errno(errp, errno, "Failed to write pid file");
        close(fd);
        return false;
    }
    /* Keep fd open: the lock lives as long as we do. */
    pidfile_path = g_strdup(path);
    atexit(pidfile_remove);
    return true;
}

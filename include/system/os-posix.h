/* SPDX-License-Identifier: GPL-2.0-or-later */
/* -daemonize and -pidfile, as QEMU does them on POSIX hosts. */
#ifndef SYSTEM_OS_POSIX_H
#define SYSTEM_OS_POSIX_H

#include <stdbool.h>
#include "qemu/typedefs.h"

/* -daemonize: fork; the parent waits and exits with the child's init status. */
void os_daemonize(void);
/*
 * -D FILE: open (and truncate) FILE now, as QEMU does; once daemonized,
 * stderr goes there. Without it a daemon's stderr goes to syslog.
 */
bool os_set_logfile(const char *path, Error **errp);
/*
 * Init succeeded: detach stdin/stdout, point stderr at the -D file or
 * syslog, and release the waiting parent (after os_daemonize).
 */
void os_setup_post(void);
/* -pidfile: write our pid under an exclusive lock, removed at exit. */
bool pidfile_create(const char *path, Error **errp);

#endif

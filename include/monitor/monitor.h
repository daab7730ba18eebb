/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Monitors: QMP (JSON) and HMP (human) sessions on chardevs. Several may
 * exist at once; each serves one client at a time.
 */
#ifndef MONITOR_MONITOR_H
#define MONITOR_MONITOR_H

#include <stdbool.h>
#include "qemu/typedefs.h"

/*
 * Creating a monitor takes two calls, in this order, on the main thread
 * before the main loop runs:
 *
 *   mon = monitor_new(chr, errp);        the generic part: output, events
 *   monitor_qmp_init(mon, pretty);       or monitor_hmp_init(mon): the
 *                                        flavour takes the chardev's input
 *
 * The split keeps monitor.c below its flavours (it never calls them).  A
 * monitor left without a flavour reads nothing and is never freed.
 */
/* A monitor on @chr; NULL and an error if another frontend holds @chr. */
Monitor *monitor_new(Chardev *chr, Error **errp);
/* Makes @mon a QMP monitor (JSON; @pretty: indented replies). */
void monitor_qmp_init(Monitor *mon, bool pretty);
/* Makes @mon an HMP monitor (the "(qemu) " prompt). */
void monitor_hmp_init(Monitor *mon);
/* The monitor running the current command (QMP or HMP), or NULL. */
Monitor *monitor_cur(void);
/*
 * The fd the current monitor's client passed with getfd under @fdname,
 * now the caller's (QEMU's "fd:NAME" URIs). -1 and an error if none.
 */
int monitor_fd_take(const char *fdname, Error **errp);
/* HMP output; no-op for QMP monitors. */
void monitor_printf(Monitor *mon, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
void monitor_puts(Monitor *mon, const char *s);
bool monitor_is_qmp(const Monitor *mon);
/*
 * Stop reading commands from an interactive HMP session until
 * monitor_resume() (HMP "migrate" without -d waits like this). Returns false
 * (and does nothing) for monitors that cannot wait, e.g. human-monitor-command.
 */
bool monitor_suspend(Monitor *mon);
void monitor_resume(Monitor *mon);

/* Guest name from -name, for query-name. */
void qemu_set_name(const char *name);
const char *qemu_get_name(void);
/* Guest UUID from -uuid (valid, checked by the caller), for query-uuid. */
void qemu_set_uuid(const char *uuid);
const char *qemu_get_uuid(void);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to monitor/: the Monitor object shared by the QMP and HMP sessions. */
#ifndef MONITOR_INTERNAL_H
#define MONITOR_INTERNAL_H

#include "monitor/hmp.h"
#include "monitor/monitor.h"
#include "monitor/qmp-dispatch.h"

/* Input bound for one HMP line; longer lines are refused, not buffered. */
#define HMP_MAX_LINE 4096

struct Monitor {
    Chardev *chr;               /* NULL for the capture monitor of human-monitor-command */
    bool qmp;                   /* set once by monitor_qmp_init(), before any I/O */
    bool pretty;                /* QMP only; set with qmp */
    bool connected;

    /* getfd's file descriptors by name (name -> fd); the monitor owns them. Main loop. */
    GHashTable *fds;

    /* QMP session. */
    bool negotiated;            /* capabilities negotiation done */
    QmpSplitter splitter;

    /* HMP session. */
    GString *line;              /* the line being typed */
    bool line_overflow;         /* current line exceeded HMP_MAX_LINE */
    bool last_cr;               /* the last byte read was '\r' (it may end a "\r\n") */
    bool echo;                  /* readline-style echo (not on a cooked tty) */
    GString *capture;           /* output of human-monitor-command */
    bool suspended;             /* a command is still running: queue input */
    GString *pending;           /* input received while suspended */
};

typedef struct HMPCommand HMPCommand;

/* Runs one HMP command line on @mon (also used by human-monitor-command). */
void hmp_handle_command(Monitor *mon, const char *cmdline);
/*
 * The two halves of hmp_handle_command(): look up @cmdline's command and
 * parse its arguments into @args (NULL after printing why on @mon, or for
 * an empty line), then run it (which frees @args).
 */
const HMPCommand *hmp_parse_command(Monitor *mon, const char *cmdline, HMPArgs *args);
void hmp_run_command(Monitor *mon, const HMPCommand *cmd, HMPArgs *args);
/* Frees what hmp_parse_command() put in @args (for a parsed line that is not run). */
void hmp_args_free(HMPArgs *args);
/* Sets the current monitor for the duration of a command; returns the old one. */
Monitor *monitor_set_cur(Monitor *mon);
/* Writes raw bytes to the monitor's chardev (or capture buffer). */
void monitor_write(Monitor *mon, const char *buf, size_t len);
/* All monitors, for event broadcast. */
GPtrArray *monitor_list(void);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to monitor/: the HMP command tables. */
#ifndef MONITOR_HMP_COMMANDS_H
#define MONITOR_HMP_COMMANDS_H

#include "monitor/hmp.h"

typedef struct HMPCommand {
    const char *name;           /* "cont|c": aliases separated by '|' */
    const char *args_type;      /* see monitor/hmp.c */
    const char *params;         /* shown by help */
    const char *help;
    HMPHandler *handler;
    const struct HMPCommand *sub;   /* "info" subcommands */
} HMPCommand;

extern const HMPCommand hmp_cmds[];
extern const HMPCommand hmp_info_cmds[];

HMPHandler hmp_help_cmd, hmp_info;

#endif

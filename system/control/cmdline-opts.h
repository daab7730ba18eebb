/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The key=value parameters of vl.c's options, once: vl.c checks a line
 * against them and query-command-line-options reports them, so that what
 * a client is told is what the parser takes.
 */
#ifndef SYSTEM_CMDLINE_OPTS_H
#define SYSTEM_CMDLINE_OPTS_H

#include "qapi/qapi-types.h"
#include "qemu/option.h"

typedef struct CmdlineParam {
    const char *name;
    CommandLineParameterType type;
} CmdlineParam;

typedef struct CmdlineOption {
    const char *option;         /* QEMU's name for it: "machine", "smp-opts", ... */
    const CmdlineParam *params; /* ended by a NULL name */
} CmdlineOption;

/* "Invalid parameter 'foo'" for the first parameter @option does not take. */
bool cmdline_check_params(QemuOpts *opts, const char *option, Error **errp);

#endif

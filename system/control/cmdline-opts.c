/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The key=value parameters of vl.c's options (cmdline-opts.h), and
 * query-command-line-options, which reports them.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands.h"
#include "cmdline-opts.h"

#define S COMMAND_LINE_PARAMETER_TYPE_STRING
#define B COMMAND_LINE_PARAMETER_TYPE_BOOLEAN
#define N COMMAND_LINE_PARAMETER_TYPE_NUMBER
#define Z COMMAND_LINE_PARAMETER_TYPE_SIZE

static const CmdlineParam machine_params[] = {
    { "type", S }, { "memory-backend", S }, { "accel", S }, { "pic", S }, { "pit", S },
    { "rtc", S }, { "isa-serial", B }, { "x-option-roms", B }, { "auto-kernel-cmdline", B },
    { "acpi", S }, { "ioapic2", S }, { "pcie", S }, { "usb", B }, { "graphics", B },
    { "dump-guest-core", B }, { "mem-merge", B }, { "kernel-irqchip", S },
    { "max-ram-below-4g", Z }, { "aux-ram-share", B }, { NULL },
};

static const CmdlineParam accel_params[] = {
    { "accel", S }, { "dirty-ring-size", N }, { "x-dirty-log", S }, { "kernel-irqchip", S },
    { "kvm-shadow-mem", Z }, { NULL },
};

static const CmdlineParam memory_params[] = {
    { "size", Z }, { "slots", N }, { "maxmem", Z }, { NULL },
};

static const CmdlineParam smp_params[] = {
    { "cpus", N }, { "sockets", N }, { "dies", N }, { "clusters", N }, { "cores", N },
    { "threads", N }, { "maxcpus", N }, { NULL },
};

static const CmdlineParam mon_params[] = {
    { "chardev", S }, { "mode", S }, { "pretty", B }, { "id", S }, { NULL },
};

static const CmdlineParam name_params[] = {
    { "guest", S }, { "process", S }, { "debug-threads", B }, { NULL },
};

static const CmdlineParam overcommit_params[] = {
    { "mem-lock", B }, { "cpu-pm", B }, { NULL },
};

static const CmdlineParam rtc_params[] = {
    { "base", S }, { "clock", S }, { "driftfix", S }, { NULL },
};

static const CmdlineParam boot_params[] = {
    { "strict", B }, { NULL },
};

static const CmdlineParam msg_params[] = {
    { "timestamp", B }, { NULL },
};

static const CmdlineParam audiodev_params[] = {
    { "id", S }, { "driver", S }, { NULL },
};

static const CmdlineOption cmdline_options[] = {
    { "machine", machine_params },
    { "accel", accel_params },
    { "memory", memory_params },
    { "smp-opts", smp_params },
    { "mon", mon_params },
    { "name", name_params },
    { "overcommit", overcommit_params },
    { "rtc", rtc_params },
    { "boot-opts", boot_params },
    { "msg", msg_params },
    { "audiodev", audiodev_params },
};

static const CmdlineOption *cmdline_option_find(const char *option)
{
    for (size_t i = 0; i < G_N_ELEMENTS(cmdline_options); i++) {
        if (!strcmp(cmdline_options[i].option, option)) {
            return &cmdline_options[i];
        }
    }
    return NULL;
}

bool cmdline_check_params(QemuOpts *opts, const char *option, Error **errp)
{
    const CmdlineOption *o = cmdline_option_find(option);
    g_autofree const char **known = NULL;
    size_t n = 0;

    g_assert(o);
    while (o->params[n].name) {
        n++;
    }
    known = g_new0(const char *, n + 1);
    for (size_t i = 0; i < n; i++) {
        known[i] = o->params[i].name;
    }
    return qemu_opts_check_known(opts, known, errp);
}

static CommandLineOptionInfo *cmdline_option_info(const CmdlineOption *o)
{
    CommandLineOptionInfo *info = g_new0(CommandLineOptionInfo, 1);
    CommandLineParameterInfoList **tail = &info->parameters;

    info->option = g_strdup(o->option);
    for (const CmdlineParam *p = o->params; p->name; p++) {
        CommandLineParameterInfo *pi = g_new0(CommandLineParameterInfo, 1);

        pi->name = g_strdup(p->name);
        pi->type = p->type;
        *tail = g_new0(CommandLineParameterInfoList, 1);
        (*tail)->value = pi;
        tail = &(*tail)->next;
    }
    return info;
}

CommandLineOptionInfoList *qmp_query_command_line_options(const char *option, Error **errp)
{
    CommandLineOptionInfoList *head = NULL, **tail = &head;

    for (size_t i = 0; i < G_N_ELEMENTS(cmdline_options); i++) {
        if (option && strcmp(option, cmdline_options[i].option)) {
            continue;
        }
        *tail = g_new0(CommandLineOptionInfoList, 1);
        (*tail)->value = cmdline_option_info(&cmdline_options[i]);
        tail = &(*tail)->next;
    }
    if (option && !head) {
        error_setg(errp, "invalid option name: %s", option);
    }
    return head;
}

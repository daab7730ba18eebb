/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz target: HMP command lines (the input cut at newlines), through the
 * line parser and into the real handlers of the paused fuzz machine, with
 * the output captured as human-monitor-command captures it. Lines for
 * commands that reach outside the process or would end or run it (quit,
 * cont, system_reset, system_powerdown, pmemsave, migrate, migrate_incoming)
 * are parsed but not run.
 */
#include "qemu/osdep.h"
#include "monitor/monitor-internal.h"
#include "monitor/hmp-commands.h"
#include "fuzz.h"

static HMPHandler *const not_run[] = {
    hmp_quit, hmp_cont, hmp_system_reset, hmp_system_powerdown, hmp_pmemsave, hmp_migrate,
    hmp_migrate_incoming,
};

static bool may_run(const HMPCommand *cmd)
{
    for (size_t i = 0; i < G_N_ELEMENTS(not_run); i++) {
        if (cmd->handler == not_run[i]) {
            return false;
        }
    }
    return true;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_machine_start((*argv)[0]);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Monitor mon = { .qmp = false, .connected = true };
    g_autofree char *text = g_strndup((const char *)data, size);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);

    mon.capture = g_string_new(NULL);
    for (int i = 0; lines[i]; i++) {
        HMPArgs args;
        const HMPCommand *cmd = hmp_parse_command(&mon, lines[i], &args);

        if (cmd && may_run(cmd)) {
            hmp_run_command(&mon, cmd, &args);
        } else if (cmd) {
            hmp_args_free(&args);
        }
    }
    g_string_free(mon.capture, TRUE);
    return 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* qemu-system-x86_64: build the machine, then run the main loop until shutdown. */
#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "system/runstate.h"
#include "system/system.h"

int main(int argc, char **argv)
{
    int status = 0;

    /*
     * GLib makes the C locale behind g_ascii_strtoull() and the
     * g_ascii_string_to_*() checks on first use, once for the process.
     * Threads that race into that first use can leave errno set, and
     * g_ascii_string_to_unsigned() then refuses a valid number: a
     * mapped-ram destination whose loader parsed the file's completion
     * marker while the main thread parsed its first QMP number refused a
     * good file, about once in a thousand runs (1.5 % of processes whose
     * four threads parse their first number together). Made here, before
     * any thread exists.
     */
    g_ascii_strtoull("0", NULL, 10);
    qemu_init(argc, argv);
    qemu_main_loop_run();
    qemu_shutdown_requested(&status);
    fflush(stdout);
    /*
     * vCPU threads are parked; exiting here (not joining them) is what QEMU
     * does too: the kernel tears the VM down with the process.
     */
    return status;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* qemu-system-x86_64: build the machine, then run the main loop until shutdown. */
#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "system/runstate.h"
#include "system/system.h"

int main(int argc, char **argv)
{
    int status = 0;

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

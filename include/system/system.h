/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Process-level entry points (system/control/vl.c). */
#ifndef SYSTEM_SYSTEM_H
#define SYSTEM_SYSTEM_H

/* Parses the command line and builds the machine; exits(1) on any error. */
void qemu_init(int argc, char **argv);

#endif

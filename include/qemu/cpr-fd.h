/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File descriptors the process this one replaces handed over (live update:
 * cpr-transfer's cpr channel, cpr-exec's inheritance), by name.
 *
 *     cpr_fd_add("ram0", fd);                // the incoming side, at startup
 *     ...
 *     int fd = cpr_fd_take(opts->id);        // a RAM block's creator: -1 if none
 *     ...
 *     cpr_fd_close_unused();                 // once the machine exists
 *
 * A taker owns the fd from then on. Main thread only: all of it happens
 * while the process starts, before any other thread exists.
 *
 * A process-wide table rather than an instance: what the old process
 * handed over belongs to the process, like its environment, and the
 * creators that take from it (memory backends, devices' RAM) share no
 * owner that could carry it to them.
 */
#ifndef QEMU_CPR_FD_H
#define QEMU_CPR_FD_H

#include <stdbool.h>

/* Keeps @fd (now the table's) under @name; a second fd of one name replaces and closes the first. */
void cpr_fd_add(const char *name, int fd);
/* The fd named @name, removed from the table (the caller's now), or -1. */
int cpr_fd_take(const char *name);
/* Whether this process received anything (it is a live update's destination). */
bool cpr_fd_received(void);
/* Closes every fd nobody took; returns how many. */
unsigned cpr_fd_close_unused(void);

/*
 * The other side: fds besides guest RAM that a live update hands over (a
 * hostfwd's bound socket), kept by name by whoever owns them. The owner
 * keeps the fd open and removes it before it closes it.
 */
void cpr_fd_preserve(const char *name, int fd);
void cpr_fd_unpreserve(const char *name);
/* @fn for each preserved fd, in no particular order. */
void cpr_fd_preserved_foreach(void (*fn)(const char *name, int fd, void *opaque), void *opaque);

#endif

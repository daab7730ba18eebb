/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Named threads: every thread we create has a name visible in /proc (STYLE 8). */
#ifndef QEMU_THREAD_H
#define QEMU_THREAD_H

#include <pthread.h>
#include <stdbool.h>

typedef struct QemuThread {
    pthread_t thread;
} QemuThread;

/*
 * qemu_thread_create: start @fn(@arg) in a new thread named @name (at most
 * 15 characters are kept by the kernel). Returns 0 or -errno.
 */
int qemu_thread_create(QemuThread *t, const char *name, void *(*fn)(void *), void *arg);
void *qemu_thread_join(QemuThread *t);
/* Kernel thread id of the calling thread (what /proc/PID/task lists). */
int qemu_get_thread_id(void);

#endif

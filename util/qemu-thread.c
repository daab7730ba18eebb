/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Thin pthread wrapper that names threads so top/perf/migbench can find them. */
#include "qemu/osdep.h"
#include "qemu/thread.h"
#include <sys/syscall.h>

int qemu_thread_create(QemuThread *t, const char *name, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    int ret;

    /* New threads start with every signal blocked; a thread unblocks what it handles. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    ret = pthread_create(&t->thread, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (ret) {
        return -ret;
    }
    if (name) {
        char buf[16];

        g_strlcpy(buf, name, sizeof(buf));
        pthread_setname_np(t->thread, buf);
    }
    return 0;
}

void *qemu_thread_join(QemuThread *t)
{
    void *ret = NULL;

    pthread_join(t->thread, &ret);
    return ret;
}

int qemu_get_thread_id(void)
{
    return syscall(SYS_gettid);
}

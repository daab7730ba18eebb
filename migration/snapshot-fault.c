/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The background snapshot's fault thread "mig/uffd": waits on the
 * userfaultfd for write faults on protected guest RAM, hands each to the
 * page source (snapshot_ram_handle_fault) and records how long the vCPU
 * waited, in a log2 histogram. It never takes the BQL: a BQL holder may
 * itself be waiting on a protected page that only this thread can release.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/thread.h"
#include "qemu/userfaultfd.h"
#include "latency-hist.h"
#include "snapshot-fault.h"
#include "snapshot-ram.h"
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>

typedef struct SnapFaultThread {
    /* The snapshot mode's, in mig/src (start) and whoever stops it. */
    QemuThread thread;
    bool running;
    int uffd;
    int stop_fd;                /* eventfd: tells mig/uffd to end */

    /* Written by mig/uffd only (relaxed atomics), read by query-migrate. */
    uint64_t faults;
    uint64_t out_of_order;      /* faults that saved pages themselves */
    LatencyHist lat;
} SnapFaultThread;

static SnapFaultThread sft = { .uffd = -1, .stop_fd = -1 };

static void snap_count(uint64_t *counter, uint64_t n)
{
    __atomic_store_n(counter, *counter + n, __ATOMIC_RELAXED);
}

static void snap_record_fault(uint64_t latency_ns, bool out_of_order)
{
    snap_count(&sft.faults, 1);
    snap_count(&sft.out_of_order, out_of_order);
    latency_hist_record_ns(&sft.lat, latency_ns);
}

static void *snap_fault_thread(void *opaque)
{
    struct pollfd pfd[2] = {
        { .fd = sft.uffd, .events = POLLIN },
        { .fd = sft.stop_fd, .events = POLLIN },
    };
    uint64_t addrs[64];

    /*
     * A vCPU is stopped while this thread works: run it ahead of the bulk
     * writer (and of the output command) when the host is busy. Raising
     * priority needs CAP_SYS_NICE; without it this stays a no-op.
     */
    setpriority(PRIO_PROCESS, qemu_get_thread_id(), -10);
    for (;;) {
        int64_t t_wake;
        int n;

        if (RETRY_ON_EINTR(poll(pfd, 2, -1)) < 0 || (pfd[1].revents & POLLIN)) {
            break;
        }
        t_wake = get_clock_ns();
        n = uffd_read_wp_faults(sft.uffd, addrs, ARRAY_SIZE(addrs));
        for (int i = 0; i < n; i++) {
            SnapFaultOutcome o = snapshot_ram_handle_fault(addrs[i], t_wake);

            if (o != SNAP_FAULT_IGNORED) {
                snap_record_fault(get_clock_ns() - t_wake, o == SNAP_FAULT_SAVED);
            }
        }
    }
    return NULL;
}

void snapshot_fault_reset_stats(void)
{
    assert(!sft.running);
    sft.faults = sft.out_of_order = 0;
    memset(&sft.lat, 0, sizeof(sft.lat));
}

bool snapshot_fault_start(int uffd, Error **errp)
{
    int ret;

    assert(!sft.running);
    sft.uffd = uffd;
    sft.stop_fd = eventfd(0, EFD_CLOEXEC);
    if (sft.stop_fd < 0) {
        error_setg_errno(errp, errno, "eventfd failed");
        return false;
    }
    ret = qemu_thread_create(&sft.thread, "mig/uffd", snap_fault_thread, NULL);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "cannot create the snapshot fault thread");
        close(sft.stop_fd);
        sft.stop_fd = -1;
        return false;
    }
    sft.running = true;
    return true;
}

void snapshot_fault_stop(void)
{
    uint64_t one = 1;

    if (!sft.running) {
        return;
    }
    snapshot_ram_stopping();
    /* An eventfd write of 1 only fails on counter overflow, which one writer cannot reach. */
    (void)!write(sft.stop_fd, &one, sizeof(one));
    qemu_thread_join(&sft.thread);
    sft.running = false;
    close(sft.stop_fd);
    sft.stop_fd = -1;
    sft.uffd = -1;
}

void snapshot_fault_fill_info(XBackgroundSnapshotInfo *x)
{
    x->faults = __atomic_load_n(&sft.faults, __ATOMIC_RELAXED);
    x->pages_out_of_order = __atomic_load_n(&sft.out_of_order, __ATOMIC_RELAXED);
    x->fault_latency_max_us = __atomic_load_n(&sft.lat.max_us, __ATOMIC_RELAXED);
    x->fault_latency_histogram = latency_hist_buckets(&sft.lat);
    x->fault_latency_p50_us = latency_hist_percentile_us(&sft.lat, 50);
    x->fault_latency_p99_us = latency_hist_percentile_us(&sft.lat, 99);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The background snapshot's fault thread "mig/uffd", a fault server
 * (uffd-server.h) whose row hands each write fault on protected guest RAM
 * to the page source (snapshot_ram_handle_fault: copy the region out,
 * unprotect it) and counts the faults that saved pages themselves. The
 * server records how long the vCPU waited. Like every fault server it
 * never takes the BQL: a BQL holder may itself be waiting on a protected
 * page that only this thread can release.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/thread.h"
#include "qemu/userfaultfd.h"
#include "migration/core/latency-hist.h"
#include "snapshot-fault.h"
#include "snapshot-ram.h"
#include "migration/core/uffd-server.h"
#include <sys/resource.h>


/* mig/uffd, before the first fault. */
static void snap_fault_begin(void *opaque)
{
    /*
     * A vCPU is stopped while this thread works: run it ahead of the bulk
     * writer (and of the output command) when the host is busy. Raising
     * priority needs CAP_SYS_NICE; without it this stays a no-op.
     */
    setpriority(PRIO_PROCESS, qemu_get_thread_id(), -10);
}

/* mig/uffd: a write fault; missing-page faults are not the snapshot's. */
static UffdFaultOutcome snap_fault(void *opaque, const UffdFault *f)
{
    SnapFault *sf = opaque;
    SnapFaultOutcome o;

    if (!(f->flags & UFFD_PAGEFAULT_FLAG_WP)) {
        return UFFD_FAULT_IGNORED;
    }
    o = snapshot_ram_handle_fault(sf->ram, f->addr, f->t_read);
    if (o == SNAP_FAULT_IGNORED) {
        return UFFD_FAULT_IGNORED;
    }
    if (o == SNAP_FAULT_SAVED) {
        __atomic_store_n(&sf->out_of_order, sf->out_of_order + 1, __ATOMIC_RELAXED);
    }
    /* Saved here, or waited for the saver: either way the vCPU runs again. */
    return UFFD_FAULT_SERVED;
}

static const UffdServerOps snap_fault_ops = {
    .what = "snapshot",
    .begin = snap_fault_begin,
    .fault = snap_fault,
};

bool snapshot_fault_start(SnapFault *sf, int uffd, SnapRam *ram, Error **errp)
{
    sf->ram = ram;
    return uffd_server_start(&sf->server, "mig/uffd", uffd, &snap_fault_ops, sf, errp);
}

void snapshot_fault_stop(SnapFault *sf)
{
    if (!uffd_server_running(&sf->server)) {
        return;
    }
    /* Faults in progress give up; those left queued stay so until the unprotect wakes them. */
    snapshot_ram_stopping(sf->ram);
    uffd_server_stop(&sf->server);
}

void snapshot_fault_fill_info(SnapFault *sf, XBackgroundSnapshotInfo *x)
{
    const LatencyHist *lat = uffd_server_latency(&sf->server);
    UffdServerStats st;

    uffd_server_get_stats(&sf->server, &st);
    x->faults = st.served;
    x->pages_out_of_order = __atomic_load_n(&sf->out_of_order, __ATOMIC_RELAXED);
    x->fault_latency_max_us = __atomic_load_n(&lat->max_us, __ATOMIC_RELAXED);
    x->fault_latency_histogram = latency_hist_buckets(lat);
    x->fault_latency_sum_ns = latency_hist_sum_ns(lat);
    x->fault_latency_p50_us = latency_hist_percentile_us(lat, 50);
    x->fault_latency_p99_us = latency_hist_percentile_us(lat, 99);
}

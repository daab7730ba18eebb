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
#include "qemu/tsan.h"
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

/*
 * mig/uffd, a write fault before the freeze: the page is not the
 * snapshot's yet, so it is only unprotected (which wakes the writer) and
 * recorded for the freeze. False once frozen: the snapshot's fault, even
 * one queued before the stop (the page is then as it was at the stop).
 */
static bool unprotect_before_freeze(SnapFault *sf, const UffdFault *f)
{
    uintptr_t page = f->addr & ~(uintptr_t)(TARGET_PAGE_SIZE - 1);
    bool done = false;

    tsan_g_mutex_lock(&sf->freeze_lock);
    if (!sf->frozen) {
        int ret;

        if (!sf->touched) {
            sf->touched = g_array_new(false, false, sizeof(uintptr_t));
        }
        g_array_append_val(sf->touched, page);
        ret = uffd_change_protection(sf->uffd, (void *)page, TARGET_PAGE_SIZE, false);
        /*
         * The writer waits on; the freeze fails the snapshot and its
         * cleanup unprotects all, which wakes it. Never saved from here:
         * the page is not yet what the snapshot must hold.
         */
        if (ret < 0 && !sf->unprotect_err) {
            sf->unprotect_err = -ret;
        }
        done = true;
    }
    tsan_g_mutex_unlock(&sf->freeze_lock);
    return done;
}

bool snapshot_fault_freeze(SnapFault *sf, uint64_t *pages, Error **errp)
{
    g_autoptr(GArray) touched = NULL;
    bool ok = true;

    tsan_g_mutex_lock(&sf->freeze_lock);
    __atomic_store_n(&sf->frozen, true, __ATOMIC_RELEASE);
    touched = sf->touched;
    sf->touched = NULL;
    if (sf->unprotect_err) {
        error_setg_errno(errp, sf->unprotect_err, "unprotecting a page written before the "
                         "snapshot's stop failed");
        ok = false;
    }
    tsan_g_mutex_unlock(&sf->freeze_lock);
    *pages = touched ? touched->len : 0;
    for (guint i = 0; ok && touched && i < touched->len; i++) {
        uintptr_t page = g_array_index(touched, uintptr_t, i);
        int ret = uffd_change_protection(sf->uffd, (void *)page, TARGET_PAGE_SIZE, true);

        if (ret < 0) {
            error_setg_errno(errp, -ret, "write-protecting a page written before the "
                             "snapshot's stop failed");
            ok = false;
        }
    }
    return ok;
}

/* mig/uffd: a write fault; missing-page faults are not the snapshot's. */
static UffdFaultOutcome snap_fault(void *opaque, const UffdFault *f)
{
    SnapFault *sf = opaque;
    SnapFaultOutcome o;

    if (!(f->flags & UFFD_PAGEFAULT_FLAG_WP)) {
        return UFFD_FAULT_IGNORED;
    }
    if (!__atomic_load_n(&sf->frozen, __ATOMIC_ACQUIRE) && unprotect_before_freeze(sf, f)) {
        return UFFD_FAULT_SERVED;
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
    sf->uffd = uffd;
    sf->frozen = false;
    sf->unprotect_err = 0;
    return uffd_server_start(&sf->server, "mig/uffd", uffd, &snap_fault_ops, sf, errp);
}

void snapshot_fault_stop(SnapFault *sf)
{
    if (uffd_server_running(&sf->server)) {
        /* Faults in progress give up; those left queued stay so until the unprotect wakes them. */
        snapshot_ram_stopping(sf->ram);
        uffd_server_stop(&sf->server);
    }
    tsan_g_mutex_lock(&sf->freeze_lock);
    if (sf->touched) {
        g_array_free(sf->touched, true);
        sf->touched = NULL;
    }
    tsan_g_mutex_unlock(&sf->freeze_lock);
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

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The background-snapshot row of the outgoing modes: the stream holds
 * guest RAM exactly as it was when the snapshot started, saved while the
 * guest keeps running.
 *
 *   setup:    populate RAM -> copy buffers -> register RAM with a
 *             userfaultfd, start mig/uffd -> write-protect all RAM (the
 *             guest runs on; mig/uffd only unprotects what it writes) ->
 *             stop VM -> device state into a memory buffer -> protect
 *             again the pages written since -> resume VM
 *   iterate:  the "ram" section saves every page once (snapshot-ram.c),
 *             the copies taken for write faults first
 *   complete: stop mig/uffd -> unprotect and unregister -> device buffer,
 *             EOF and vmdesc
 *
 * Nothing here takes the BQL while RAM is protected: a BQL holder (a
 * monitor command, a reset loading the kernel) may itself be waiting on a
 * protected page, and only mig/uffd or the unprotect here can release it.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "qemu/userfaultfd.h"
#include "system/memory.h"
#include "system/runstate.h"
#include "migration/qemu-file.h"
#include "migration/core/options.h"
#include "outgoing.h"
#include "migration/transport/ram.h"
#include "migration/transport/ram-source.h"
#include "migration/stream/savevm.h"
#include "snapshot-fault.h"
#include "snapshot-ram.h"

/* The row's state (MigrationState.mode_state). */
typedef struct SnapshotState {
    /*
     * mig/src while the snapshot runs; the cleanup hook (main thread) after
     * mig/src was joined.
     */
    int uffd;                   /* registered, write-protected guest RAM; -1 if none */
    QEMUFile *devices;          /* device state captured at the freeze */

    /* Written by mig/src, read by query-migrate; zeroed with the state at each migrate. */
    const char *protection;     /* how RAM was protected; NULL until it was */
    uint64_t protect_ns;
    uint64_t populate_ns;
    uint64_t reprotect_pages;   /* written between the protection and the stop */
    /* The downtime's phases (x-downtime); valid once the VM ran again. */
    bool phases_valid;
    int64_t stop_ns, dev_ns, wp_ns, total_ns;

    SnapRam ram;                /* the page source's state (snapshot-ram.h) */
    SnapFault fault;            /* mig/uffd (snapshot-fault.h) */
} SnapshotState;

static bool snapshot_selected(void)
{
    return migrate_background_snapshot();
}

static void snapshot_init(MigrationState *s, void *ms)
{
    SnapshotState *ss = ms;

    ss->uffd = -1;
    ram_select_source(&snapshot_ram_source, &ss->ram);
}

/* QEMU's checks: the kernel has WP, and every writable RAMBlock registers. */
static bool snapshot_check_caps(const bool *old_caps, const bool *new_caps, Error **errp)
{
    RAMBlock *rb;
    int fd;

    if (!new_caps[MIGRATION_CAPABILITY_BACKGROUND_SNAPSHOT] ||
        old_caps[MIGRATION_CAPABILITY_BACKGROUND_SNAPSHOT]) {
        return true;
    }
    if (!(uffd_query_features() & UFFD_FEATURE_PAGEFAULT_FLAG_WP) ||
        (fd = uffd_create(UFFD_FEATURE_PAGEFAULT_FLAG_WP)) < 0) {
        error_setg(errp, "Background-snapshot is not supported by host kernel");
        return false;
    }
    RAMBLOCK_FOREACH_WRITABLE(rb) {
        if (uffd_register_wp(fd, rb->host, rb->used_length) < 0) {
            close(fd);
            error_setg(errp, "Background-snapshot is not compatible with guest memory "
                       "configuration");
            return false;
        }
        uffd_unregister(fd, rb->host, rb->used_length);
    }
    close(fd);
    return true;
}

/*
 * Maps every never-touched page (to the zero page) so that write protection
 * has a PTE to mark. Done before the VM stops: it takes a while for big
 * guests and pages the guest touches meanwhile are populated anyway.
 *
 * UFFD_FEATURE_WP_UNPOPULATED would make this unnecessary, but on this
 * kernel (6.18, kvm-pvm) protecting unpopulated ranges with it left the
 * guest taking ~37,000 KVM write faults a second after the snapshot, for
 * good (KVM stat pf_fixed); populated ranges do not show it. So we populate
 * first and enable the feature only as a backstop for pages that lose their
 * mapping between populate and protect.
 */
static void snapshot_populate_all(SnapshotState *ss)
{
    int64_t t0 = get_clock_ns();
    RAMBlock *rb;

    RAMBLOCK_FOREACH_WRITABLE(rb) {
        if (madvise(rb->host, rb->used_length, 22 /* MADV_POPULATE_READ */) == 0) {
            continue;
        }
        for (uint64_t off = 0; off < rb->used_length; off += TARGET_PAGE_SIZE) {
            (void)*(volatile uint8_t *)(rb->host + off);
        }
    }
    ss->populate_ns = get_clock_ns() - t0;
}

/*
 * Stops mig/uffd, then unprotects (which wakes any vCPU waiting on a
 * fault) and unregisters all RAM. Whoever calls it owns ss->uffd.
 */
static void snapshot_unprotect_all(SnapshotState *ss)
{
    RAMBlock *rb;

    snapshot_fault_stop(&ss->fault);
    if (ss->uffd < 0) {
        return;
    }
    RAMBLOCK_FOREACH_WRITABLE(rb) {
        uffd_change_protection(ss->uffd, rb->host, rb->used_length, false);
        uffd_unregister(ss->uffd, rb->host, rb->used_length);
    }
    close(ss->uffd);
    ss->uffd = -1;
}

/*
 * Before the VM stops: a userfaultfd with all writable RAM registered for
 * write protection, and mig/uffd serving it. Nothing is protected yet, so
 * no fault comes; registering (which splits and marks VMAs) and starting
 * the thread are thus out of the downtime.
 */
static bool snapshot_register_all(SnapshotState *ss, Error **errp)
{
    bool unpopulated = uffd_query_features() & UFFD_FEATURE_WP_UNPOPULATED;
    RAMBlock *rb;
    int fd;

    fd = uffd_create(UFFD_FEATURE_PAGEFAULT_FLAG_WP |
                     (unpopulated ? UFFD_FEATURE_WP_UNPOPULATED : 0));
    if (fd < 0) {
        error_setg_errno(errp, -fd, "cannot create a userfaultfd");
        return false;
    }
    ss->uffd = fd;
    ss->protection = unpopulated ? "populate+wp-unpopulated" : "populate";
    RAMBLOCK_FOREACH_WRITABLE(rb) {
        int ret = uffd_register_wp(fd, rb->host, rb->used_length);

        if (ret < 0) {
            error_setg_errno(errp, -ret, "registering '%s' with userfaultfd failed", rb->idstr);
            snapshot_unprotect_all(ss);
            return false;
        }
    }
    /* Faults can come the moment the VM runs again after the protection: serve them from now on. */
    snapshot_ram_start(&ss->ram, fd);
    if (!snapshot_fault_start(&ss->fault, fd, &ss->ram, errp)) {
        snapshot_unprotect_all(ss);
        return false;
    }
    return true;
}

/* Write-protects all registered RAM, the guest still running (see snapshot_freeze). */
static bool snapshot_protect_all(SnapshotState *ss, Error **errp)
{
    int64_t t0 = get_clock_ns();
    RAMBlock *rb;

    RAMBLOCK_FOREACH_WRITABLE(rb) {
        int ret = uffd_change_protection(ss->uffd, rb->host, rb->used_length, true);

        if (ret < 0) {
            error_setg_errno(errp, -ret, "write-protecting '%s' failed", rb->idstr);
            snapshot_unprotect_all(ss);
            return false;
        }
    }
    ss->protect_ns = get_clock_ns() - t0;
    return true;
}

/*
 * Protect RAM, then stop, save devices into a buffer, protect again what
 * was written since, resume. Protecting 3 GiB took 1.6-4.6 ms, all of it
 * in the downtime when done with the VM stopped (QEMU's order); the
 * guest now runs through it, and a page it writes meanwhile is only
 * unprotected and recorded by mig/uffd (snapshot_fault_freeze), not
 * saved: the snapshot's instant is the stop. BQL taken here.
 */
static bool snapshot_freeze(MigrationState *s, SnapshotState *ss, Error **errp)
{
    int64_t t_stop, t_dev, t_wp;
    bool ok;

    if (!snapshot_protect_all(ss, errp)) {
        return false;
    }
    bql_lock();
    migration_stop_vm_locked(s, RUN_STATE_PAUSED);
    t_stop = get_clock_ns();
    ok = qemu_savevm_state_devices(ss->devices, NULL, errp);
    t_dev = get_clock_ns();
    ok = ok && snapshot_fault_freeze(&ss->fault, &ss->reprotect_pages, errp);
    t_wp = get_clock_ns();
    if (s->vm_was_running) {
        vm_start();
    }
    ss->total_ns = get_clock_ns() - s->downtime_start_ns;
    s->downtime_ms = ss->total_ns / 1000000;
    ss->stop_ns = t_stop - s->downtime_start_ns;
    ss->dev_ns = t_dev - t_stop;
    ss->wp_ns = t_wp - t_dev;
    ss->phases_valid = ok;
    bql_unlock();
    return ok;
}

static bool snapshot_setup(MigrationState *s, void *ms, QEMUFile *f, Error **errp)
{
    SnapshotState *ss = ms;

    ss->devices = qemu_file_new_buffer_output();
    snapshot_populate_all(ss);
    return snapshot_ram_prepare(&ss->ram, errp) && snapshot_register_all(ss, errp) &&
           snapshot_freeze(s, ss, errp);
}

static bool snapshot_switchover_ready(MigrationState *s, void *ms, bool all_sent)
{
    return all_sent;    /* every page is in the stream */
}

/* RAM is complete: now the device state captured at the start, EOF, vmdesc. */
static bool snapshot_complete(MigrationState *s, void *ms, QEMUFile *f, Error **errp)
{
    SnapshotState *ss = ms;
    const uint8_t *data;
    size_t len;

    snapshot_unprotect_all(ss);
    data = qemu_file_buffer_data(ss->devices, &len);
    qemu_put_buffer(f, data, len);
    qemu_fflush(f);
    if (qemu_file_get_error(f)) {
        error_setg(errp, "%s", qemu_file_error_msg(f));
        return false;
    }
    s->precopy_bytes = qemu_file_transferred(f);
    return true;
}

/* A snapshot that did not finish still has guest RAM write-protected. */
static void snapshot_cleanup(MigrationState *s, void *ms)
{
    SnapshotState *ss = ms;

    snapshot_unprotect_all(ss);
    if (ss->devices) {
        qemu_fclose(ss->devices);
        ss->devices = NULL;
    }
}

static void snapshot_fill_info(const MigrationState *s, void *ms, MigrationInfo *info)
{
    SnapshotState *ss = ms;
    XBackgroundSnapshotInfo *x = snapshot_info_get(info);

    x->protection = g_strdup(ss->protection ? ss->protection : "none");
    x->protect_time_us = ss->protect_ns / 1000;
    x->reprotect_pages = ss->reprotect_pages;
    x->populate_time_us = ss->populate_ns / 1000;
    snapshot_fault_fill_info(&ss->fault, x);
}

/* Where the downtime went; resuming the vCPUs is the unattributed rest. */
static XDowntimeInfo *snapshot_downtime_info(const MigrationState *s, void *ms)
{
    SnapshotState *ss = ms;
    XDowntimeInfo *d;

    if (!ss->phases_valid) {
        return NULL;
    }
    d = g_new0(XDowntimeInfo, 1);
    d->stop_vcpus = ss->stop_ns / 1000;
    d->device_state = ss->dev_ns / 1000;
    d->has_write_protect = true;
    d->write_protect = ss->wp_ns / 1000;
    d->total = ss->total_ns / 1000;
    d->unattributed = d->total - MIN(d->total, d->stop_vcpus + d->device_state + d->write_protect);
    return d;
}

const MigrationOutMode snapshot_mode = {
    .name = "background-snapshot",
    .bandwidth_only_if_set = true,
    .state_size = sizeof(SnapshotState),
    .selected = snapshot_selected,
    .init = snapshot_init,
    .check_caps = snapshot_check_caps,
    .fill_info = snapshot_fill_info,
    .downtime_info = snapshot_downtime_info,
    .cleanup = snapshot_cleanup,
    .setup = snapshot_setup,
    .switchover_ready = snapshot_switchover_ready,
    .complete = snapshot_complete,
};

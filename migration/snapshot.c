/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Background snapshot: the stream holds guest RAM exactly as it was when the
 * snapshot started, saved while the guest keeps running.
 *
 *   stop VM -> device state into a memory buffer -> write-protect all RAM
 *   (userfaultfd) -> resume VM -> RAM saved once, linearly, by the normal
 *   RAM save loop, which writes the copies taken for write faults first (a
 *   fault copies the page's 2 MiB region, or a small range when the buffer
 *   is full, then unprotects it, waking the vCPU; snapshot-ram.c) ->
 *   unregister -> device buffer + EOF.
 *
 * The thread never takes the BQL while RAM is protected: a BQL holder (a
 * monitor command, a reset loading the kernel) may itself be waiting on a
 * protected page, and only this thread can release it.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "qemu/userfaultfd.h"
#include "system/memory.h"
#include "system/runstate.h"
#include "migration/qemu-file.h"
#include "migration.h"
#include "options.h"
#include "savevm.h"
#include "snapshot.h"
#include <poll.h>

#define HIST_BUCKETS 21         /* [0,1) us, [1,2), [2,4), ... [2^19 us, inf) */

typedef struct SnapshotState {
    /* Owned by the snapshot thread; the main thread touches it only in
     * snapshot_cleanup(), after the thread was joined. */
    int uffd;
    bool protected;

    /* Statistics: written by the thread, read by query-migrate. */
    bool ran;
    const char *protection;         /* "wp-unpopulated" or "populate" */
    uint64_t protect_ns;
    uint64_t populate_ns;
    uint64_t faults;
    uint64_t out_of_order;
    uint64_t hist[HIST_BUCKETS];
    uint64_t lat_max_us;
} SnapshotState;

static SnapshotState snap = { .uffd = -1 };

bool migration_background_snapshot_supported(void)
{
    return (uffd_query_features() & UFFD_FEATURE_PAGEFAULT_FLAG_WP) != 0;
}

/* QEMU's checks: the kernel has WP, and every writable RAMBlock registers. */
bool migration_background_snapshot_check(Error **errp)
{
    GPtrArray *rbs = ram_blocks();
    int fd;

    if (!migration_background_snapshot_supported()) {
        error_setg(errp, "Background-snapshot is not supported by host kernel");
        return false;
    }
    fd = uffd_create(UFFD_FEATURE_PAGEFAULT_FLAG_WP);
    if (fd < 0) {
        error_setg(errp, "Background-snapshot is not supported by host kernel");
        return false;
    }
    for (guint i = 0; i < rbs->len; i++) {
        RAMBlock *rb = g_ptr_array_index(rbs, i);

        if (rb->readonly) {
            continue;
        }
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

/* Reads every page once so WP without WP_UNPOPULATED sees a PTE to protect. */
static void snapshot_populate(RAMBlock *rb)
{
    if (madvise(rb->host, rb->used_length, 22 /* MADV_POPULATE_READ */) == 0) {
        return;
    }
    for (uint64_t off = 0; off < rb->used_length; off += TARGET_PAGE_SIZE) {
        (void)*(volatile uint8_t *)(rb->host + off);
    }
}

static void snapshot_unprotect_all(void)
{
    GPtrArray *rbs = ram_blocks();

    /* The fault thread uses the userfaultfd: end it first. */
    snapshot_ram_stop();

    if (snap.uffd < 0) {
        return;
    }
    for (guint i = 0; i < rbs->len; i++) {
        RAMBlock *rb = g_ptr_array_index(rbs, i);

        if (!rb->readonly) {
            /* Unprotect first: it wakes any vCPU waiting on a fault. */
            uffd_change_protection(snap.uffd, rb->host, rb->used_length, false);
            uffd_unregister(snap.uffd, rb->host, rb->used_length);
        }
    }
    close(snap.uffd);
    snap.uffd = -1;
    snap.protected = false;
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
static void snapshot_populate_all(void)
{
    GPtrArray *rbs = ram_blocks();
    int64_t t0 = get_clock_ns();

    for (guint i = 0; i < rbs->len; i++) {
        RAMBlock *rb = g_ptr_array_index(rbs, i);
        if (!rb->readonly) {
            snapshot_populate(rb);
        }
    }
    snap.populate_ns = get_clock_ns() - t0;
}

/* Registers and write-protects all writable RAM. VM stopped. */
static bool snapshot_protect_all(Error **errp)
{
    bool unpopulated = uffd_query_features() & UFFD_FEATURE_WP_UNPOPULATED;
    GPtrArray *rbs = ram_blocks();
    int64_t t0;

    snap.uffd = uffd_create(UFFD_FEATURE_PAGEFAULT_FLAG_WP |
                            (unpopulated ? UFFD_FEATURE_WP_UNPOPULATED : 0));
    if (snap.uffd < 0) {
        error_setg_errno(errp, -snap.uffd, "cannot create a userfaultfd");
        snap.uffd = -1;
        return false;
    }
    snap.protection = unpopulated ? "populate+wp-unpopulated" : "populate";
    t0 = get_clock_ns();
    for (guint i = 0; i < rbs->len; i++) {
        RAMBlock *rb = g_ptr_array_index(rbs, i);
        int ret;

        if (rb->readonly) {
            continue;
        }
        ret = uffd_register_wp(snap.uffd, rb->host, rb->used_length);
        if (ret == 0) {
            ret = uffd_change_protection(snap.uffd, rb->host, rb->used_length, true);
        }
        if (ret < 0) {
            error_setg_errno(errp, -ret, "write-protecting '%s' failed", rb->idstr);
            snapshot_unprotect_all();
            return false;
        }
    }
    snap.protect_ns = get_clock_ns() - t0;
    snap.protected = true;
    /* Faults can come the moment the VM runs again: serve them from now on. */
    if (!snapshot_ram_start(snap.uffd, errp)) {
        snapshot_unprotect_all();
        return false;
    }
    return true;
}

void snapshot_record_fault(uint64_t latency_us, bool out_of_order)
{
    int b = 0;

    snap.faults++;
    if (out_of_order) {
        snap.out_of_order++;
    }
    while (b < HIST_BUCKETS - 1 && latency_us >= (1ULL << b)) {
        b++;
    }
    snap.hist[b]++;
    snap.lat_max_us = MAX(snap.lat_max_us, latency_us);
}

/* Percentile of the latency histogram: the upper edge of its bucket. */
static uint64_t snapshot_percentile(double pct)
{
    uint64_t total = 0, seen = 0;

    for (int b = 0; b < HIST_BUCKETS; b++) {
        total += snap.hist[b];
    }
    if (!total) {
        return 0;
    }
    for (int b = 0; b < HIST_BUCKETS; b++) {
        seen += snap.hist[b];
        if (seen * 100.0 >= pct * total) {
            return b == 0 ? 1 : MIN(1ULL << b, MAX(snap.lat_max_us, 1));
        }
    }
    return snap.lat_max_us;
}

void snapshot_fill_info(MigrationInfo *info)
{
    XBackgroundSnapshotInfo *x;
    uint64List **tail;

    if (!snap.ran) {
        return;
    }
    x = g_new0(XBackgroundSnapshotInfo, 1);
    x->protection = g_strdup(snap.protection ? snap.protection : "none");
    x->protect_time_us = snap.protect_ns / 1000;
    x->populate_time_us = snap.populate_ns / 1000;
    x->faults = snap.faults;
    x->pages_out_of_order = snap.out_of_order;
    tail = &x->fault_latency_histogram;
    for (int b = 0; b < HIST_BUCKETS; b++) {
        uint64List *e = g_new0(uint64List, 1);
        e->value = snap.hist[b];
        *tail = e;
        tail = &e->next;
    }
    x->fault_latency_p50_us = snapshot_percentile(50);
    x->fault_latency_p99_us = snapshot_percentile(99);
    x->fault_latency_max_us = snap.lat_max_us;
    snapshot_ram_buffer_stats(&x->buffer_size, &x->buffer_peak, &x->small_faults);
    info->x_background_snapshot = x;
}

void snapshot_cancel_notify(void)
{
    /* The thread polls its state between runs; nothing to wake. */
}

void snapshot_cleanup(void)
{
    snapshot_unprotect_all();
}

/* Waits for the rate-limit window to end (faults are served meanwhile by mig/uffd). */
static void snapshot_wait(int64_t deadline_ns)
{
    int64_t now = get_clock_ns();

    if (now < deadline_ns) {
        g_usleep((deadline_ns - now) / 1000);
    }
}

/* Stop, save devices into @dev, protect RAM, resume. BQL taken here. */
static bool snapshot_freeze(MigrationState *s, QEMUFile *dev, Error **errp)
{
    bool ok;

    bql_lock();
    s->downtime_start_ns = get_clock_ns();
    s->vm_was_running = runstate_is_running();
    global_state_store();
    vm_stop_force_state(RUN_STATE_PAUSED);
    ok = qemu_savevm_state_devices(dev, errp) && snapshot_protect_all(errp);
    if (s->vm_was_running) {
        vm_start();
    }
    s->downtime_ms = (get_clock_ns() - s->downtime_start_ns) / 1000000;
    bql_unlock();
    return ok;
}

void *bg_snapshot_thread(void *opaque)
{
    MigrationState *s = opaque;
    uint64_t rate = migrate_max_bandwidth_user_set() ? migrate_max_bandwidth() / 10 : 0;
    QEMUFile *dev = qemu_file_new_buffer_output();
    Error *err = NULL;
    QEMUFile *f;

    memset(&snap, 0, sizeof(snap));
    snap.uffd = -1;
    snap.ran = true;
    f = migration_open_output(s, rate, &err);
    if (!f || !migration_setup_sections(s, f, &err)) {
        goto out;
    }
    snapshot_populate_all();
    if (!snapshot_ram_prepare(&err) || !snapshot_freeze(s, dev, &err)) {
        goto out;
    }

    while (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == MIGRATION_STATUS_ACTIVE) {
        int64_t window_end = get_clock_ns() + 100 * 1000000LL;
        int ret = qemu_savevm_state_iterate(f);

        if (ret < 0 || qemu_file_get_error(f)) {
            error_setg(&err, "%s", qemu_file_error_msg(f));
            goto out;
        }
        if (ret == 1) {
            break;          /* every page is in the stream */
        }
        if (qemu_file_rate_limit(f)) {
            snapshot_wait(window_end);
            qemu_file_reset_rate_window(f);
        }
    }
    if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == MIGRATION_STATUS_ACTIVE) {
        const uint8_t *data;
        size_t len;

        snapshot_unprotect_all();
        /* RAM is complete: now the device state captured at the start, EOF, vmdesc. */
        data = qemu_file_buffer_data(dev, &len);
        qemu_put_buffer(f, data, len);
        qemu_fflush(f);
        if (qemu_file_get_error(f)) {
            error_setg(&err, "%s", qemu_file_error_msg(f));
        } else {
            s->precopy_bytes = qemu_file_transferred(f);
            s->result = MIGRATION_STATUS_COMPLETED;
        }
    }
out:
    qemu_fclose(dev);
    migration_thread_end(s, err);
    return NULL;
}

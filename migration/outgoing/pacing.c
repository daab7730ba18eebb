/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Pacing of the outgoing migration (pacing.h): the max-bandwidth limit per
 * window, the sleep between windows that cancel or a new limit cuts short,
 * and what each window measures (bandwidth, the switchover threshold, the
 * expected downtime). Below migration.c, which runs the windows.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "migration/qemu-file.h"
#include "migration/dirty/converge.h"
#include "migration/core/options.h"
#include "outgoing.h"
#include "pacing.h"
#include "migration/transport/ram.h"
#include "migration/stream/savevm.h"
#include "migration/core/status.h"

/* The data rate is measured over at least this much sending. */
#define LINK_DATA_MIN_BYTES (4 << 20)
#define LINK_DATA_MIN_MS    30.0

/* Switchover estimate before any busy window was measured, if unlimited. */
#define DEFAULT_BANDWIDTH_BPMS (1024.0 * 1024)

/* max-bandwidth changed or cancel: apply the limit and end the pacing sleep. */
void rate_limit_changed(MigrationState *s)
{
    g_mutex_lock(&s->file_lock);
    if (s->to_dst && migrate_get_state(&s->state) == MIGRATION_STATUS_ACTIVE) {
        qemu_file_set_rate_limit(s->to_dst, migrate_max_bandwidth() / RATE_WINDOWS_PER_S);
    }
    g_mutex_unlock(&s->file_lock);
    g_mutex_lock(&s->rate_lock);
    s->rate_kick = true;
    g_cond_broadcast(&s->rate_cond);
    g_mutex_unlock(&s->rate_lock);
}

static bool switchover_pause(MigrationState *s)
{
    bool go;

    g_mutex_lock(&s->rate_lock);
    while (!s->switchover_go &&
           migrate_get_state(&s->state) == MIGRATION_STATUS_PRE_SWITCHOVER) {
        g_cond_wait(&s->rate_cond, &s->rate_lock);
    }
    go = s->switchover_go;
    s->switchover_go = false;
    g_mutex_unlock(&s->rate_lock);
    return go;
}

bool switchover_pause_if_asked(MigrationState *s, int *from, Error **errp)
{
    *from = MIGRATION_STATUS_ACTIVE;
    if (!migrate_pause_before_switchover()) {
        return true;
    }
    migrate_set_state(&s->state, MIGRATION_STATUS_ACTIVE, MIGRATION_STATUS_PRE_SWITCHOVER);
    bql_unlock();
    if (!switchover_pause(s)) {
        bql_lock();
        error_setg(errp, "migration cancelled in pre-switchover");
        return false;
    }
    bql_lock();
    *from = MIGRATION_STATUS_PRE_SWITCHOVER;
    return true;
}

/* Sleeps until @deadline_ns unless cancel or a bandwidth change wakes us; returns ns slept. */
int64_t rate_wait(MigrationState *s, int64_t deadline_ns)
{
    int64_t t0 = get_clock_ns();

    g_mutex_lock(&s->rate_lock);
    while (!s->rate_kick && get_clock_ns() < deadline_ns) {
        gint64 end = g_get_monotonic_time() + (deadline_ns - get_clock_ns()) / 1000;
        g_cond_wait_until(&s->rate_cond, &s->rate_lock, end);
    }
    s->rate_kick = false;
    g_mutex_unlock(&s->rate_lock);
    return get_clock_ns() - t0;
}

/*
 * What a switchover now would take: the final sync, then @remaining bytes
 * sent without max-bandwidth's limit (QEMU divides by the limited rate,
 * which overstates a throttled migration's downtime many times). The
 * user's avail-switchover-bandwidth wins. 0 before the link was measured.
 */
double migration_expected_downtime_ms(const MigrationState *s, uint64_t remaining)
{
    double switchover_bpms = migrate_avail_switchover_bandwidth()
                             ? migrate_avail_switchover_bandwidth() / 1000.0 : s->bandwidth_bpms;
    double rate = migrate_avail_switchover_bandwidth() || !s->unlimited_bpms
                  ? switchover_bpms : MAX(s->unlimited_bpms, switchover_bpms);

    return rate > 0 ? s->sync_cost_ns / 1e6 + remaining / rate : 0;
}

void rate_window_start(RateWindow *w, QEMUFile *f)
{
    *w = (RateWindow) { .start_ns = get_clock_ns(), .start_bytes = qemu_file_transferred(f),
                        .start_pages = ram_pages_sent(),
                        .start_data_pages = ram_data_pages_sent(), .busy = true };
}

void rate_window_update(MigrationState *s, RateWindow *w, QEMUFile *f)
{
    int64_t now = get_clock_ns();
    double ms = (now - w->start_ns) / 1e6;
    uint64_t bytes = qemu_file_transferred(f) - w->start_bytes;
    uint64_t remaining = qemu_savevm_pending(false);
    /*
     * multifd-compression drains the remaining bytes faster than they fill
     * the link: the switchover threshold needs the faster rate, or a
     * compressible guest would look as if it never converged. Not for
     * XBZRLE: measured, the page rate put its switchover later in a round
     * and the downtime past its limit (108 ms for 100), where the byte
     * rate met the targets.
     */
    bool compressed = ram_transport_drains_faster();
    uint64_t drained = !compressed ? bytes
                       : MAX(bytes, (ram_data_pages_sent() - w->start_data_pages) *
                                    TARGET_PAGE_SIZE);
    double switchover_bpms, threshold;

    if (ms < RATE_WINDOW_MS) {
        return;
    }
    /* An idle window says nothing about the link: keep the last estimate. */
    if (w->busy) {
        double sending_ms = ms - w->waited_ns / 1e6;

        s->bandwidth_bpms = drained / ms;
        uint64_t data = (ram_data_pages_sent() - w->start_data_pages) * TARGET_PAGE_SIZE;

        /* Too short a time sending (a tiny max-bandwidth) tells nothing. */
        if (sending_ms >= RATE_WINDOW_MS / 10) {
            /* In the remaining count's unit: pages (a zero page is 4 KiB of it). */
            s->unlimited_bpms = (ram_pages_sent() - w->start_pages) * TARGET_PAGE_SIZE /
                                sending_ms;
        }
        /*
         * The data rate, over as many windows as it takes: a window's
         * share of max-bandwidth sent fast takes less than the 10 ms
         * above, and leaving those out kept only the slow ones (a third
         * of what the switchover then sent). Zero pages of a first pass
         * go 10x faster than what a switchover has left: not counted.
         */
        s->link_acc_bytes += data;
        s->link_acc_ms += data ? sending_ms : 0;
        if (s->link_acc_ms >= LINK_DATA_MIN_MS && s->link_acc_bytes >= LINK_DATA_MIN_BYTES) {
            s->link_data_bpms = s->link_acc_bytes / s->link_acc_ms;
            s->link_acc_bytes = 0;
            s->link_acc_ms = 0;
        }
    }
    /* avail-switchover-bandwidth: what the user says the switchover may use (QEMU 8.2). */
    switchover_bpms = migrate_avail_switchover_bandwidth()
                      ? migrate_avail_switchover_bandwidth() / 1000.0 : s->bandwidth_bpms;
    /*
     * avail-switchover-bandwidth may be anything up to UINT64_MAX: the
     * product can pass 2^64, whose conversion to an integer is undefined.
     */
    threshold = (switchover_bpms ?: DEFAULT_BANDWIDTH_BPMS) * migrate_downtime_limit();
    s->threshold_bytes = threshold < 0x1p64 ? (uint64_t)threshold : UINT64_MAX;
    s->mbps = bytes * 8.0 / ms / 1000.0;
    s->pages_per_second = (ram_pages_sent() - w->start_pages) * 1000.0 / ms;
    if (switchover_bpms > 0 && bytes > 10000) {
        s->expected_downtime_ms = migration_expected_downtime_ms(s, remaining);
    }
    /* x-switchover-rule predicted: the threshold and expected downtime from the model. */
    if (s->conv.active) {
        convergence_window(s, remaining);
    }
    converge_tick(s->bandwidth_bpms);
    w->start_ns = now;
    w->start_bytes = qemu_file_transferred(f);
    w->start_pages = ram_pages_sent();
    w->start_data_pages = ram_data_pages_sent();
    w->waited_ns = 0;
    w->busy = true;
    qemu_file_reset_rate_window(f);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * HMP calc_dirty_rate, info dirty_rate, set_vcpu_dirty_limit,
 * cancel_vcpu_dirty_limit and info vcpu_dirty_limit, in QEMU's shapes, on
 * the QMP commands.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands.h"
#include "monitor/hmp.h"
#include "monitor/monitor.h"

void hmp_calc_dirty_rate(Monitor *mon, const HMPArgs *args)
{
    bool ring = hmp_arg_bool(args, "dirty_ring", false);
    bool bitmap = hmp_arg_bool(args, "dirty_bitmap", false);
    int64_t sec = hmp_arg_int(args, "second", 0);
    bool has_pages = hmp_arg_has(args, "sample_pages_per_GB");
    DirtyRateMeasureMode mode = ring ? DIRTY_RATE_MEASURE_MODE_DIRTY_RING
                                : bitmap ? DIRTY_RATE_MEASURE_MODE_DIRTY_BITMAP
                                : DIRTY_RATE_MEASURE_MODE_PAGE_SAMPLING;
    Error *err = NULL;

    if (ring && bitmap) {
        monitor_printf(mon, "Either dirty ring or dirty bitmap can be specified!\n");
        return;
    }
    qmp_calc_dirty_rate(sec, false, TIME_UNIT_SECOND, has_pages,
                        hmp_arg_int(args, "sample_pages_per_GB", 0), true, mode, &err);
    if (err) {
        hmp_handle_error(mon, err);
        return;
    }
    monitor_printf(mon, "Starting dirty rate measurement with calc time %" PRId64 " seconds\n",
                   sec);
    monitor_printf(mon, "[Please use 'info dirty_rate' to check results]\n");
}

void hmp_info_dirty_rate(Monitor *mon, const HMPArgs *args)
{
    g_autoptr(DirtyRateInfo) info = qmp_query_dirty_rate(false, TIME_UNIT_SECOND, NULL);

    monitor_printf(mon, "Status: %s\n", DirtyRateStatus_str(info->status));
    monitor_printf(mon, "Start Time: %" PRId64 " (s)\n", info->start_time);
    if (info->mode == DIRTY_RATE_MEASURE_MODE_PAGE_SAMPLING) {
        monitor_printf(mon, "Sample Pages: %" PRIu64 " (per GB)\n", info->sample_pages);
    }
    monitor_printf(mon, "Period: %" PRId64 " (sec)\n", info->calc_time);
    monitor_printf(mon, "Mode: %s\n", DirtyRateMeasureMode_str(info->mode));
    monitor_printf(mon, "Dirty rate: ");
    if (info->has_dirty_rate) {
        monitor_printf(mon, "%" PRId64 " (MB/s)\n", info->dirty_rate);
        for (DirtyRateVcpuList *l = info->vcpu_dirty_rate; l; l = l->next) {
            monitor_printf(mon, "vcpu[%" PRId64 "], Dirty rate: %" PRId64 " (MB/s)\n",
                           l->value->id, l->value->dirty_rate);
        }
    } else {
        monitor_printf(mon, "(not ready)\n");
    }
}

void hmp_set_vcpu_dirty_limit(Monitor *mon, const HMPArgs *args)
{
    int64_t rate = hmp_arg_int(args, "dirty_rate", 0);
    Error *err = NULL;

    if (rate < 1) {
        monitor_printf(mon, "Error: dirty_rate must be at least 1 MB/s\n");
        return;
    }
    qmp_set_vcpu_dirty_limit(hmp_arg_has(args, "cpu_index"), hmp_arg_int(args, "cpu_index", 0),
                             rate, &err);
    hmp_handle_error(mon, err);
}

void hmp_cancel_vcpu_dirty_limit(Monitor *mon, const HMPArgs *args)
{
    Error *err = NULL;

    qmp_cancel_vcpu_dirty_limit(hmp_arg_has(args, "cpu_index"),
                                hmp_arg_int(args, "cpu_index", 0), &err);
    hmp_handle_error(mon, err);
}

void hmp_info_vcpu_dirty_limit(Monitor *mon, const HMPArgs *args)
{
    g_autoptr(DirtyLimitInfoList) list = qmp_query_vcpu_dirty_limit(NULL);

    if (!list) {
        monitor_printf(mon, "Dirty page limit not enabled!\n");
        return;
    }
    for (DirtyLimitInfoList *l = list; l; l = l->next) {
        monitor_printf(mon, "vcpu[%" PRId64 "], limit rate %" PRIu64 " (MB/s), current rate %"
                       PRIu64 " (MB/s)\n", l->value->cpu_index, l->value->limit_rate,
                       l->value->current_rate);
    }
}

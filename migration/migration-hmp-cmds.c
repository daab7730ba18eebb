/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * HMP migration commands: parse human arguments, call the qmp_* function,
 * print in QEMU's layout (info migrate, info migrate_capabilities,
 * info migrate_parameters).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands.h"
#include "qemu/cutils.h"
#include "qemu/main-loop.h"
#include "monitor/hmp.h"
#include "monitor/monitor.h"
#include "migration.h"
#include "migration/core/options.h"

static const char *onoff(bool b)
{
    return b ? "on" : "off";
}

static void hmp_info_migrate_globals(Monitor *mon)
{
    monitor_printf(mon, "globals:\n");
    monitor_printf(mon, "store-global-state: on\n");
    monitor_printf(mon, "only-migratable: off\n");
    monitor_printf(mon, "send-configuration: on\n");
    monitor_printf(mon, "send-section-footer: on\n");
    monitor_printf(mon, "decompress-error-check: on\n");
    monitor_printf(mon, "clear-bitmap-shift: %d\n", migrate_clear_bitmap_shift());
}

static void hmp_print_histogram(Monitor *mon, const char *what, const uint64List *hist)
{
    uint64_t lo = 0, hi = 1;

    monitor_printf(mon, "%s latency histogram (us):\n", what);
    for (const uint64List *l = hist; l; l = l->next) {
        if (l->value) {
            monitor_printf(mon, "  [%" PRIu64 ", %" PRIu64 ") %" PRIu64 "\n", lo, hi, l->value);
        }
        lo = hi;
        hi *= 2;
    }
}

void hmp_info_migrate(Monitor *mon, const HMPArgs *args)
{
    g_autoptr(MigrationInfo) info = qmp_query_migrate(NULL);

    hmp_info_migrate_globals(mon);
    if (info->has_status) {
        monitor_printf(mon, "Migration status: %s", MigrationStatus_str(info->status));
        if (info->status == MIGRATION_STATUS_FAILED && info->error_desc) {
            monitor_printf(mon, " (%s)\n", info->error_desc);
        } else {
            monitor_printf(mon, "\n");
        }
        if (info->has_total_time) {
            monitor_printf(mon, "total time: %" PRId64 " ms\n", info->total_time);
        }
        if (info->has_expected_downtime) {
            monitor_printf(mon, "expected downtime: %" PRId64 " ms\n", info->expected_downtime);
        }
        if (info->has_downtime) {
            monitor_printf(mon, "downtime: %" PRId64 " ms\n", info->downtime);
        }
        if (info->x_downtime) {
            XDowntimeInfo *d = info->x_downtime;

            monitor_printf(mon, "downtime phases: stop-vcpus %" PRIu64 " us, handover %" PRIu64
                           " us, final-sync %" PRIu64 " us, last-ram %" PRIu64
                           " us, device-state %" PRIu64 " us, unattributed %" PRIu64
                           " us (of %" PRIu64 " us, expected %" PRIu64 " us)\n",
                           d->stop_vcpus, d->handover, d->final_sync, d->last_ram,
                           d->device_state, d->unattributed, d->total, d->expected);
            if (d->has_write_protect) {
                monitor_printf(mon, "downtime write-protect: %" PRIu64 " us\n", d->write_protect);
            }
        }
        if (info->x_downtime_predicted) {
            XDowntimePrediction *d = info->x_downtime_predicted;

            monitor_printf(mon, "downtime predicted: stop-vcpus %" PRIu64 " us, handover %"
                           PRIu64 " us, final-sync %" PRIu64 " us, last-ram %" PRIu64
                           " us, device-state %" PRIu64 " us (of %" PRIu64 " us; %" PRIu64
                           " kbytes at %" PRIu64 " kbytes/s, rate from %s)\n",
                           d->stop_vcpus, d->handover, d->final_sync, d->last_ram,
                           d->device_state, d->total, d->remaining >> 10, d->rate >> 10,
                           d->rate_source);
        }
        if (info->x_progress) {
            XMigrationProgress *x = info->x_progress;

            monitor_printf(mon, "progress: %.1f %%, phase %s", x->percent, x->phase);
            if (x->has_time_left) {
                monitor_printf(mon, ", about %" PRIu64 " s left", (x->time_left + 999) / 1000);
            }
            monitor_printf(mon, "\n");
            if (strcmp(x->step, "none") || x->reason) {
                monitor_printf(mon, "converge step: %s%s%s%s\n", x->step,
                               x->reason ? " (" : "", x->reason ?: "", x->reason ? ")" : "");
            }
            if (x->next_step) {
                monitor_printf(mon, "next converge step: %s", x->next_step);
                if (x->has_next_step_in) {
                    monitor_printf(mon, " in %" PRIu64 " s if it stays stalled",
                                   (x->next_step_in + 999) / 1000);
                }
                monitor_printf(mon, "\n");
            }
        }
        if (info->x_incoming_downtime) {
            XIncomingDowntimeInfo *d = info->x_incoming_downtime;

            monitor_printf(mon, "downtime phases here: last-ram %" PRIu64 " us, device-state %"
                           PRIu64 " us, handoff %" PRIu64 " us, start-vcpus %" PRIu64
                           " us (of %" PRIu64 " us)\n", d->last_ram, d->device_state,
                           d->handoff, d->start_vcpus, d->total);
        }
        if (info->has_setup_time) {
            monitor_printf(mon, "setup: %" PRId64 " ms\n", info->setup_time);
        }
    }
    if (info->ram) {
        MigrationStats *r = info->ram;

        monitor_printf(mon, "transferred ram: %" PRId64 " kbytes\n", r->transferred >> 10);
        monitor_printf(mon, "throughput: %0.2f mbps\n", r->mbps);
        monitor_printf(mon, "remaining ram: %" PRId64 " kbytes\n", r->remaining >> 10);
        monitor_printf(mon, "total ram: %" PRId64 " kbytes\n", r->total >> 10);
        monitor_printf(mon, "duplicate: %" PRId64 " pages\n", r->duplicate);
        monitor_printf(mon, "skipped: %" PRId64 " pages\n", r->skipped);
        monitor_printf(mon, "normal: %" PRId64 " pages\n", r->normal);
        monitor_printf(mon, "normal bytes: %" PRId64 " kbytes\n", r->normal_bytes >> 10);
        monitor_printf(mon, "dirty sync count: %" PRId64 "\n", r->dirty_sync_count);
        monitor_printf(mon, "page size: %" PRId64 " kbytes\n", r->page_size >> 10);
        monitor_printf(mon, "multifd bytes: %" PRIu64 " kbytes\n", r->multifd_bytes >> 10);
        monitor_printf(mon, "pages-per-second: %" PRIu64 "\n", r->pages_per_second);
        if (r->dirty_pages_rate) {
            monitor_printf(mon, "dirty pages rate: %" PRId64 " pages\n", r->dirty_pages_rate);
        }
        if (r->precopy_bytes) {
            monitor_printf(mon, "precopy ram: %" PRIu64 " kbytes\n", r->precopy_bytes >> 10);
        }
        if (r->downtime_bytes) {
            monitor_printf(mon, "downtime ram: %" PRIu64 " kbytes\n", r->downtime_bytes >> 10);
        }
        if (r->postcopy_requests) {
            monitor_printf(mon, "postcopy request count: %" PRId64 "\n", r->postcopy_requests);
        }
        if (r->postcopy_bytes) {
            monitor_printf(mon, "postcopy ram: %" PRIu64 " kbytes\n", r->postcopy_bytes >> 10);
        }
    }
    if (info->has_cpu_throttle_percentage) {
        monitor_printf(mon, "cpu throttle percentage: %" PRId64 "\n",
                       info->cpu_throttle_percentage);
    }
    if (info->has_dirty_limit_throttle_time_per_round) {
        monitor_printf(mon, "dirty-limit throttle time: %" PRIu64 " us\n",
                       info->dirty_limit_throttle_time_per_round);
    }
    if (info->has_dirty_limit_ring_full_time) {
        monitor_printf(mon, "dirty-limit ring full time: %" PRIu64 " us\n",
                       info->dirty_limit_ring_full_time);
    }
    if (info->has_postcopy_blocktime) {
        g_autoptr(GString) per_vcpu = g_string_new("[");

        monitor_printf(mon, "postcopy blocktime: %u\n", info->postcopy_blocktime);
        for (const uint32List *l = info->postcopy_vcpu_blocktime; l; l = l->next) {
            g_string_append_printf(per_vcpu, "%s%u", per_vcpu->len > 1 ? ", " : "", l->value);
        }
        g_string_append_c(per_vcpu, ']');
        monitor_printf(mon, "postcopy vcpu blocktime: %s\n", per_vcpu->str);
    }
    if (info->x_postcopy) {
        XPostcopyInfo *pc = info->x_postcopy;

        monitor_printf(mon, "postcopy page requests: %" PRIu64 ", answered %" PRIu64
                       ", pages placed %" PRIu64 ", pages discarded %" PRIu64 "\n",
                       pc->page_requests, pc->requests_answered, pc->pages_placed,
                       pc->pages_discarded);
        monitor_printf(mon, "postcopy request latency: p50 %" PRIu64 " us, p99 %" PRIu64
                       " us, max %" PRIu64 " us\n", pc->request_latency_p50_us,
                       pc->request_latency_p99_us, pc->request_latency_max_us);
        hmp_print_histogram(mon, "postcopy request", pc->request_latency_histogram);
    }
    if (info->xbzrle_cache) {
        XBZRLECacheStats *x = info->xbzrle_cache;

        monitor_printf(mon, "cache size: %" PRIu64 " bytes\n", x->cache_size);
        monitor_printf(mon, "xbzrle transferred: %" PRId64 " kbytes\n", x->bytes >> 10);
        monitor_printf(mon, "xbzrle pages: %" PRId64 " pages\n", x->pages);
        monitor_printf(mon, "xbzrle cache miss: %" PRId64 " pages\n", x->cache_miss);
        monitor_printf(mon, "xbzrle cache miss rate: %0.2f\n", x->cache_miss_rate);
        monitor_printf(mon, "xbzrle encoding rate: %0.2f\n", x->encoding_rate);
        monitor_printf(mon, "xbzrle overflow: %" PRId64 "\n", x->overflow);
    }
    if (info->x_dirty_log) {
        XDirtyLogInfo *x = info->x_dirty_log;

        monitor_printf(mon, "x-dirty-log: mode %s, syncs %" PRIu64 ", sync time %" PRIu64
                       " us (max %" PRIu64 " us), pages merged %" PRIu64 ", scan time %" PRIu64
                       " us, clears %" PRIu64 " (%" PRIu64 " us), clear-bitmap-shift %" PRId64 "\n",
                       x->mode, x->syncs, x->sync_time_us_total, x->sync_time_us_max,
                       x->pages_merged, x->scan_time_us_total, x->clears, x->clear_time_us_total,
                       x->clear_bitmap_shift);
    }
    if (info->x_background_snapshot) {
        XBackgroundSnapshotInfo *bg = info->x_background_snapshot;

        monitor_printf(mon, "background snapshot: protection %s, protect %" PRIu64 " us, "
                       "populate %" PRIu64 " us\n", bg->protection, bg->protect_time_us,
                       bg->populate_time_us);
        monitor_printf(mon, "faults: %" PRIu64 ", pages saved out of order: %" PRIu64 "\n",
                       bg->faults, bg->pages_out_of_order);
        monitor_printf(mon, "fault latency: p50 %" PRIu64 " us, p99 %" PRIu64 " us, max %"
                       PRIu64 " us\n", bg->fault_latency_p50_us, bg->fault_latency_p99_us,
                       bg->fault_latency_max_us);
        monitor_printf(mon, "fault buffer: %" PRIu64 " KiB, peak %" PRIu64 " KiB, "
                       "small-copy faults %" PRIu64 "\n",
                       bg->buffer_size >> 10, bg->buffer_peak >> 10, bg->small_faults);
        hmp_print_histogram(mon, "fault", bg->fault_latency_histogram);
    }
    if (info->x_lazy_restore) {
        XLazyRestoreInfo *lr = info->x_lazy_restore;

        monitor_printf(mon, "lazy restore: %s, pages resident %" PRIu64 " of %" PRIu64
                       ", resident after %" PRIu64 " ms\n", lr->status, lr->pages_resident,
                       lr->pages_total, lr->time_to_resident_ms);
        monitor_printf(mon, "lazy restore faults: %" PRIu64 " (%" PRIu64 " pages read), "
                       "prefetched %" PRIu64 " kbytes\n", lr->faults, lr->pages_fault_read,
                       lr->bytes_prefetched >> 10);
        monitor_printf(mon, "lazy restore fault latency: p50 %" PRIu64 " us, p99 %" PRIu64
                       " us, max %" PRIu64 " us\n", lr->fault_latency_p50_us,
                       lr->fault_latency_p99_us, lr->fault_latency_max_us);
        hmp_print_histogram(mon, "lazy restore fault", lr->fault_latency_histogram);
    }
}

void hmp_info_migrate_capabilities(Monitor *mon, const HMPArgs *args)
{
    g_autoptr(MigrationCapabilityStatusList) caps = qmp_query_migrate_capabilities(NULL);

    for (MigrationCapabilityStatusList *l = caps; l; l = l->next) {
        monitor_printf(mon, "%s: %s\n", MigrationCapability_str(l->value->capability),
                       onoff(l->value->state));
    }
}

void hmp_info_migrate_parameters(Monitor *mon, const HMPArgs *args)
{
    g_autoptr(MigrationParameters) p = qmp_query_migrate_parameters(NULL);

    monitor_printf(mon, "announce-initial: %" PRIu64 " ms\n", p->announce_initial);
    monitor_printf(mon, "announce-max: %" PRIu64 " ms\n", p->announce_max);
    monitor_printf(mon, "announce-rounds: %" PRIu64 "\n", p->announce_rounds);
    monitor_printf(mon, "announce-step: %" PRIu64 " ms\n", p->announce_step);
    monitor_printf(mon, "compress-level: %u\n", p->compress_level);
    monitor_printf(mon, "compress-threads: %u\n", p->compress_threads);
    monitor_printf(mon, "compress-wait-thread: %s\n", onoff(p->compress_wait_thread));
    monitor_printf(mon, "decompress-threads: %u\n", p->decompress_threads);
    monitor_printf(mon, "throttle-trigger-threshold: %u\n", p->throttle_trigger_threshold);
    monitor_printf(mon, "cpu-throttle-initial: %u\n", p->cpu_throttle_initial);
    monitor_printf(mon, "cpu-throttle-increment: %u\n", p->cpu_throttle_increment);
    monitor_printf(mon, "cpu-throttle-tailslow: %s\n", onoff(p->cpu_throttle_tailslow));
    monitor_printf(mon, "max-cpu-throttle: %u\n", p->max_cpu_throttle);
    monitor_printf(mon, "tls-creds: '%s'\n", p->tls_creds);
    monitor_printf(mon, "tls-hostname: '%s'\n", p->tls_hostname);
    monitor_printf(mon, "max-bandwidth: %" PRIu64 " bytes/second\n", p->max_bandwidth);
    monitor_printf(mon, "downtime-limit: %" PRIu64 " ms\n", p->downtime_limit);
    monitor_printf(mon, "x-checkpoint-delay: %u ms\n", p->x_checkpoint_delay);
    monitor_printf(mon, "block-incremental: %s\n", onoff(p->block_incremental));
    monitor_printf(mon, "multifd-channels: %u\n", p->multifd_channels);
    monitor_printf(mon, "multifd-compression: %s\n",
                   MultiFDCompression_str(p->multifd_compression));
    monitor_printf(mon, "multifd-zlib-level: %u\n", p->multifd_zlib_level);
    monitor_printf(mon, "multifd-zstd-level: %u\n", p->multifd_zstd_level);
    monitor_printf(mon, "xbzrle-cache-size: %" PRIu64 " bytes\n", p->xbzrle_cache_size);
    monitor_printf(mon, "max-postcopy-bandwidth: %" PRIu64 "\n", p->max_postcopy_bandwidth);
    monitor_printf(mon, "tls-authz: '%s'\n", p->tls_authz);
    monitor_printf(mon, "zero-page-detection: %s\n",
                   ZeroPageDetection_str(p->zero_page_detection));
    monitor_printf(mon, "x-clear-bitmap-shift: %u\n", p->x_clear_bitmap_shift);
    monitor_printf(mon, "x-background-snapshot-buffer-size: %" PRIu64 " bytes\n",
                   p->x_background_snapshot_buffer_size);
    monitor_printf(mon, "direct-io: %s\n", onoff(p->direct_io));
    monitor_printf(mon, "x-mapped-ram-integrity: %s\n", onoff(p->x_mapped_ram_integrity));
    monitor_printf(mon, "avail-switchover-bandwidth: %" PRIu64 " bytes/second\n",
                   p->avail_switchover_bandwidth);
    monitor_printf(mon, "x-vcpu-dirty-limit-period: %" PRIu64 " ms\n",
                   p->x_vcpu_dirty_limit_period);
    monitor_printf(mon, "vcpu-dirty-limit: %" PRIu64 " MB/s\n", p->vcpu_dirty_limit);
    monitor_printf(mon, "mode: %s\n", MigMode_str(p->mode));
    monitor_printf(mon, "cpr-exec-command:");
    for (const strList *l = p->cpr_exec_command; l; l = l->next) {
        monitor_printf(mon, " %s", l->value);
    }
    monitor_printf(mon, "\n");
    monitor_printf(mon, "x-switchover-rule: %s\n", XSwitchoverRule_str(p->x_switchover_rule));
    monitor_printf(mon, "x-converge-policy:");
    for (const strList *l = p->x_converge_policy; l; l = l->next) {
        monitor_printf(mon, " %s", l->value);
    }
    monitor_printf(mon, "%s\n", p->x_converge_policy ? "" : " none");
    monitor_printf(mon, "x-completion-timeout: %" PRIu64 " s/GiB\n", p->x_completion_timeout);
}

/* HMP's "migrate" without -d: the monitor waits until the migration ends. */
static gboolean hmp_migrate_status_cb(gpointer opaque)
{
    Monitor *mon = opaque;
    g_autoptr(MigrationInfo) info = NULL;

    info = qmp_query_migrate(NULL);
    /* Paused is an outcome too: it waits for the user, not for us. */
    if (migration_is_running() && info->status != MIGRATION_STATUS_POSTCOPY_PAUSED) {
        return G_SOURCE_CONTINUE;
    }
    if (info->error_desc) {
        monitor_printf(mon, "%s\n", info->error_desc);
    }
    monitor_resume(mon);
    return G_SOURCE_REMOVE;
}

void hmp_migrate(Monitor *mon, const HMPArgs *args)
{
    Error *err = NULL;
    bool detach = hmp_arg_bool(args, "detach", false);

    if (!qmp_migrate(hmp_arg_str(args, "uri"), NULL, true, hmp_arg_bool(args, "blk", false),
                     true, hmp_arg_bool(args, "inc", false), true, detach, true,
                     hmp_arg_bool(args, "resume", false), &err)) {
        hmp_handle_error(mon, err);
        return;
    }
    if (!detach && monitor_suspend(mon)) {
        g_timeout_add(100, hmp_migrate_status_cb, mon);
    }
}

void hmp_migrate_incoming(Monitor *mon, const HMPArgs *args)
{
    Error *err = NULL;

    qmp_migrate_incoming(hmp_arg_str(args, "uri"), NULL, false, false, &err);
    hmp_handle_error(mon, err);
}

void hmp_migrate_cancel(Monitor *mon, const HMPArgs *args)
{
    Error *err = NULL;

    qmp_migrate_cancel(&err);
    hmp_handle_error(mon, err);
}

void hmp_migrate_continue(Monitor *mon, const HMPArgs *args)
{
    const char *name = hmp_arg_str(args, "state");
    MigrationStatus state;
    Error *err = NULL;

    if (!MigrationStatus_parse(name, &state)) {
        error_setg(&err, "Parameter 'state' does not accept value '%s'", name);
    } else {
        qmp_migrate_continue(state, &err);
    }
    hmp_handle_error(mon, err);
}

void hmp_migrate_recover(Monitor *mon, const HMPArgs *args)
{
    Error *err = NULL;

    qmp_migrate_recover(hmp_arg_str(args, "uri"), &err);
    hmp_handle_error(mon, err);
}

void hmp_migrate_start_postcopy(Monitor *mon, const HMPArgs *args)
{
    Error *err = NULL;

    qmp_migrate_start_postcopy(&err);
    hmp_handle_error(mon, err);
}

void hmp_migrate_set_capability(Monitor *mon, const HMPArgs *args)
{
    const char *name = hmp_arg_str(args, "capability");
    MigrationCapabilityStatus st = { .state = hmp_arg_bool(args, "state", false) };
    MigrationCapabilityStatusList l = { .value = &st };
    Error *err = NULL;

    if (!MigrationCapability_parse(name, &st.capability)) {
        error_setg(&err, "Parameter 'capability' does not accept value '%s'", name);
    } else {
        qmp_migrate_set_capabilities(&l, &err);
    }
    hmp_handle_error(mon, err);
}

typedef enum HmpParamKind {
    HP_U64,         /* plain number */
    HP_U8,
    HP_U32,
    HP_BOOL,
    HP_SIZE,        /* bytes, suffixes allowed */
    HP_SIZE_MIB,    /* bare number means MiB (max-bandwidth) */
    HP_STR,
    HP_STRLIST,     /* the words of the value (cpr-exec-command) */
    HP_ENUM,        /* a QAPI enum's name, parsed by the entry's parse function */
} HmpParamKind;

typedef struct HmpParam {
    const char *name;
    HmpParamKind kind;
    size_t has_off;
    size_t val_off;
    bool (*parse_enum)(const char *s, int *out);   /* HP_ENUM */
} HmpParam;

static bool hmp_parse_compression(const char *s, int *out)
{
    MultiFDCompression v;

    return MultiFDCompression_parse(s, &v) && (*out = v, true);
}

static bool hmp_parse_zero_page_detection(const char *s, int *out)
{
    ZeroPageDetection v;

    return ZeroPageDetection_parse(s, &v) && (*out = v, true);
}

static bool hmp_parse_switchover_rule(const char *s, int *out)
{
    XSwitchoverRule v;

    return XSwitchoverRule_parse(s, &v) && (*out = v, true);
}

static bool hmp_parse_mig_mode(const char *s, int *out)
{
    MigMode v;

    return MigMode_parse(s, &v) && (*out = v, true);
}

#define HPARAM(n, f, k) \
    { n, k, offsetof(MigrationParameters, has_##f), offsetof(MigrationParameters, f) }
#define HPARAM_STR(n, f) \
    { n, HP_STR, (size_t)-1, offsetof(MigrationParameters, f) }
#define HPARAM_ENUM(n, f, parse) \
    { n, HP_ENUM, offsetof(MigrationParameters, has_##f), offsetof(MigrationParameters, f), parse }

static const HmpParam hmp_params[] = {
    HPARAM("announce-initial", announce_initial, HP_U64),
    HPARAM("announce-max", announce_max, HP_U64),
    HPARAM("announce-rounds", announce_rounds, HP_U64),
    HPARAM("announce-step", announce_step, HP_U64),
    HPARAM("compress-level", compress_level, HP_U8),
    HPARAM("compress-threads", compress_threads, HP_U8),
    HPARAM("compress-wait-thread", compress_wait_thread, HP_BOOL),
    HPARAM("decompress-threads", decompress_threads, HP_U8),
    HPARAM("throttle-trigger-threshold", throttle_trigger_threshold, HP_U8),
    HPARAM("cpu-throttle-initial", cpu_throttle_initial, HP_U8),
    HPARAM("cpu-throttle-increment", cpu_throttle_increment, HP_U8),
    HPARAM("cpu-throttle-tailslow", cpu_throttle_tailslow, HP_BOOL),
    HPARAM("max-cpu-throttle", max_cpu_throttle, HP_U8),
    HPARAM_STR("tls-creds", tls_creds),
    HPARAM_STR("tls-hostname", tls_hostname),
    HPARAM_STR("tls-authz", tls_authz),
    HPARAM("max-bandwidth", max_bandwidth, HP_SIZE_MIB),
    HPARAM("downtime-limit", downtime_limit, HP_U64),
    HPARAM("x-checkpoint-delay", x_checkpoint_delay, HP_U32),
    HPARAM("block-incremental", block_incremental, HP_BOOL),
    HPARAM("multifd-channels", multifd_channels, HP_U8),
    HPARAM("xbzrle-cache-size", xbzrle_cache_size, HP_SIZE),
    HPARAM("max-postcopy-bandwidth", max_postcopy_bandwidth, HP_SIZE),
    HPARAM("multifd-zlib-level", multifd_zlib_level, HP_U8),
    HPARAM("multifd-zstd-level", multifd_zstd_level, HP_U8),
    HPARAM_ENUM("multifd-compression", multifd_compression, hmp_parse_compression),
    HPARAM_ENUM("zero-page-detection", zero_page_detection, hmp_parse_zero_page_detection),
    HPARAM("x-clear-bitmap-shift", x_clear_bitmap_shift, HP_U8),
    HPARAM("x-background-snapshot-buffer-size", x_background_snapshot_buffer_size, HP_SIZE),
    HPARAM("direct-io", direct_io, HP_BOOL),
    HPARAM("x-mapped-ram-integrity", x_mapped_ram_integrity, HP_BOOL),
    HPARAM("avail-switchover-bandwidth", avail_switchover_bandwidth, HP_SIZE),
    HPARAM("x-vcpu-dirty-limit-period", x_vcpu_dirty_limit_period, HP_U64),
    HPARAM("vcpu-dirty-limit", vcpu_dirty_limit, HP_U64),
    HPARAM_ENUM("mode", mode, hmp_parse_mig_mode),
    { "cpr-exec-command", HP_STRLIST, (size_t)-1, offsetof(MigrationParameters, cpr_exec_command) },
    HPARAM_ENUM("x-switchover-rule", x_switchover_rule, hmp_parse_switchover_rule),
    { "x-converge-policy", HP_STRLIST, (size_t)-1,
      offsetof(MigrationParameters, x_converge_policy) },
    HPARAM("x-completion-timeout", x_completion_timeout, HP_U64),
};

static bool hmp_parse_param(const HmpParam *hp, const char *value, MigrationParameters *p,
                            Error **errp)
{
    uint8_t *base = (uint8_t *)p;
    uint64_t v = 0;
    bool b;

    switch (hp->kind) {
    case HP_STR:
        *(char **)(base + hp->val_off) = g_strdup(value);
        return true;
    case HP_STRLIST: {
        /* As QEMU's HMP: the words of the rest of the line. */
        g_auto(GStrv) words = g_strsplit_set(value, " \t", -1);
        strList **tail = (strList **)(base + hp->val_off);

        for (char **w = words; *w; w++) {
            if (**w) {
                *tail = g_new0(strList, 1);
                (*tail)->value = g_strdup(*w);
                tail = &(*tail)->next;
            }
        }
        return true;
    }
    case HP_ENUM: {
        int e;

        if (!hp->parse_enum(value, &e)) {
            error_setg(errp, "Parameter '%s' does not accept value '%s'", hp->name, value);
            return false;
        }
        *(int *)(base + hp->val_off) = e;
        break;
    }
    case HP_BOOL:
        if (!qemu_parse_bool(value, &b)) {
            error_setg(errp, "Parameter '%s' expects 'on' or 'off'", hp->name);
            return false;
        }
        *(bool *)(base + hp->val_off) = b;
        break;
    case HP_SIZE:
    case HP_SIZE_MIB:
        if ((hp->kind == HP_SIZE ? qemu_strtosz(value, NULL, &v)
                                 : qemu_strtosz_MiB(value, NULL, &v)) < 0) {
            error_setg(errp, "Parameter '%s' expects a size", hp->name);
            return false;
        }
        *(uint64_t *)(base + hp->val_off) = v;
        break;
    default:
        if (qemu_strtou64(value, NULL, 0, &v) < 0 ||
            (hp->kind == HP_U8 && v > UINT8_MAX) || (hp->kind == HP_U32 && v > UINT32_MAX)) {
            error_setg(errp, "Parameter '%s' expects %s", hp->name,
                       hp->kind == HP_U8 ? "uint8" : hp->kind == HP_U32 ? "uint32" : "uint64");
            return false;
        }
        if (hp->kind == HP_U8) {
            *(uint8_t *)(base + hp->val_off) = v;
        } else if (hp->kind == HP_U32) {
            *(uint32_t *)(base + hp->val_off) = v;
        } else {
            *(uint64_t *)(base + hp->val_off) = v;
        }
        break;
    }
    *(bool *)(base + hp->has_off) = true;
    return true;
}

void hmp_migrate_set_parameter(Monitor *mon, const HMPArgs *args)
{
    const char *name = hmp_arg_str(args, "parameter");
    const char *value = hmp_arg_str(args, "value");
    g_autoptr(MigrationParameters) p = g_new0(MigrationParameters, 1);
    Error *err = NULL;

    for (size_t i = 0; i < ARRAY_SIZE(hmp_params); i++) {
        if (!strcmp(hmp_params[i].name, name)) {
            if (hmp_parse_param(&hmp_params[i], value, p, &err)) {
                qmp_migrate_set_parameters(p, &err);
            }
            hmp_handle_error(mon, err);
            return;
        }
    }
    error_setg(&err, "Parameter '%s' does not accept value '%s'", "parameter", name);
    hmp_handle_error(mon, err);
}

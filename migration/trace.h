/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Trace points of the migration pipeline (enable with -trace file=PATH).
 * Each is one branch on a global when tracing is off.
 */
#ifndef MIGRATION_TRACE_H
#define MIGRATION_TRACE_H

#include <inttypes.h>
#include "trace/trace.h"

/*
 * A rate (>= 0) as a whole number: the probes' arguments are integers, as
 * bpftrace reads no floating-point USDT argument ("8f@" in the note).
 */
#define TRACE_ROUND(x) ((uint64_t)((double)(x) + 0.5))

#define trace_dirty_sync_start(pass, remaining) \
    TRACE_EVENT(dirty_sync_start, "pass=%" PRIu64 " remaining_pages=%" PRIu64, \
                (uint64_t)(pass), (uint64_t)(remaining))
#define trace_dirty_sync_end(pass, new_pages, remaining, us) \
    TRACE_EVENT(dirty_sync_end, "pass=%" PRIu64 " new_pages=%" PRIu64 \
                " remaining_pages=%" PRIu64 " us=%" PRId64, (uint64_t)(pass), \
                (uint64_t)(new_pages), (uint64_t)(remaining), (int64_t)(us))
#define trace_dirty_clear(slot, first, npages) \
    TRACE_EVENT(dirty_clear, "slot=%d first=%" PRIu64 " pages=%" PRIu64, (int)(slot), \
                (uint64_t)(first), (uint64_t)(npages))
#define trace_migration_pass(pass, remaining_bytes, transferred) \
    TRACE_EVENT(migration_pass, "pass=%" PRIu64 " remaining=%" PRIu64 " transferred=%" PRIu64, \
                (uint64_t)(pass), (uint64_t)(remaining_bytes), (uint64_t)(transferred))
#define trace_migration_switchover(pending, threshold, bw_bytes_per_ms, decision) \
    TRACE_EVENT(migration_switchover, "pending=%" PRIu64 " threshold=%" PRIu64 \
                " bandwidth_bpms=%" PRIu64 " decision=%s", (uint64_t)(pending), \
                (uint64_t)(threshold), TRACE_ROUND(bw_bytes_per_ms), (decision))
#define trace_migration_converge(how, value) \
    TRACE_EVENT(migration_converge, "how=%s value=%" PRId64, (how), (int64_t)(value))
#define trace_migration_converge_step(step, reason) \
    TRACE_EVENT(migration_converge_step, "step=%s reason=\"%s\"", (step), (reason))
#define trace_migration_prediction(remaining, rate_bpms, link_bpms, total_us, fitting) \
    TRACE_EVENT(migration_prediction, "remaining=%" PRIu64 " rate_bpms=%" PRIu64 \
                " link_bpms=%" PRIu64 " total_us=%" PRIu64 " fitting=%" PRIu64, \
                (uint64_t)(remaining), TRACE_ROUND(rate_bpms), TRACE_ROUND(link_bpms), \
                (uint64_t)(total_us), (uint64_t)(fitting))
#define trace_migration_state(from, to) \
    TRACE_EVENT(migration_state, "from=%s to=%s", (from), (to))
#define trace_ram_iterate(pages, bytes, us) \
    TRACE_EVENT(ram_iterate, "pages=%" PRIu64 " bytes=%" PRIu64 " us=%" PRId64, \
                (uint64_t)(pages), (uint64_t)(bytes), (int64_t)(us))
#define trace_savevm_device_save(idstr, instance, us) \
    TRACE_EVENT(savevm_device_save, "idstr=%s instance=%u us=%" PRId64, (idstr), \
                (unsigned)(instance), (int64_t)(us))
#define trace_savevm_device_load(idstr, instance, us) \
    TRACE_EVENT(savevm_device_load, "idstr=%s instance=%u us=%" PRId64, (idstr), \
                (unsigned)(instance), (int64_t)(us))
#define trace_migration_downtime(stop_us, handover_us, sync_us, ram_us, devices_us, total_us) \
    TRACE_EVENT(migration_downtime, "stop_us=%" PRId64 " handover_us=%" PRId64 \
                " final_sync_us=%" PRId64 " last_ram_us=%" PRId64 " devices_us=%" PRId64 \
                " total_us=%" PRId64, \
                (int64_t)(stop_us), (int64_t)(handover_us), (int64_t)(sync_us), (int64_t)(ram_us), \
                (int64_t)(devices_us), (int64_t)(total_us))
#define trace_migration_incoming_downtime(ram_us, devices_us, handoff_us, start_us, total_us) \
    TRACE_EVENT(migration_incoming_downtime, "last_ram_us=%" PRIu64 " devices_us=%" PRIu64 \
                " handoff_us=%" PRIu64 " start_vcpus_us=%" PRIu64 " total_us=%" PRIu64, \
                (uint64_t)(ram_us), (uint64_t)(devices_us), (uint64_t)(handoff_us), \
                (uint64_t)(start_us), (uint64_t)(total_us))
#define trace_migration_postcopy_start(discarded_pages, package_bytes, downtime_ms) \
    TRACE_EVENT(migration_postcopy_start, "discarded_pages=%" PRIu64 " bytes=%" PRIu64 \
                " downtime_ms=%" PRId64, (uint64_t)(discarded_pages), (uint64_t)(package_bytes), \
                (int64_t)(downtime_ms))
#define trace_migration_postcopy_stopped(us) \
    TRACE_EVENT(migration_postcopy_stopped, "stop_us=%" PRId64, (int64_t)(us))
#define trace_migration_postcopy_switch(sync_us, discards_us, devices_us) \
    TRACE_EVENT(migration_postcopy_switch, "sync_us=%" PRId64 " discards_us=%" PRId64 \
                " devices_us=%" PRId64, (int64_t)(sync_us), (int64_t)(discards_us), \
                (int64_t)(devices_us))
#define trace_migration_postcopy_package(bytes, discarded_pages) \
    TRACE_EVENT(migration_postcopy_package, "bytes=%zu discarded_pages=%" PRIu64, \
                (size_t)(bytes), (uint64_t)(discarded_pages))
#define trace_postcopy_dst_step(step, us) \
    TRACE_EVENT(postcopy_dst_step, "step=%s us=%" PRId64, (step), (int64_t)(us))
#define trace_postcopy_preempt_end(why) \
    TRACE_EVENT(postcopy_preempt_end, "why=%s", (why))
#define trace_bg_snapshot_region(first, pages, copy_us, unprotect_us) \
    TRACE_EVENT(bg_snapshot_region, "first=%" PRIu64 " pages=%" PRIu64 " copy_us=%" PRId64 \
                " unprotect_us=%" PRId64, (uint64_t)(first), (uint64_t)(pages), \
                (int64_t)(copy_us), (int64_t)(unprotect_us))
#define trace_bg_snapshot_fault(region, pages, wait_run_us, total_us) \
    TRACE_EVENT(bg_snapshot_fault, "region=%" PRIu64 " pages=%" PRIu64 " wait_run_us=%" PRId64 \
                " total_us=%" PRId64, (uint64_t)(region), (uint64_t)(pages), \
                (int64_t)(wait_run_us), (int64_t)(total_us))

#define trace_mapped_ram_block(name, bitmap_off, pages_off, next) \
    TRACE_EVENT(mapped_ram_block, "block=%s bitmap_offset=%" PRIu64 " pages_offset=%" PRIu64 \
                " next=%" PRIu64, (name), (uint64_t)(bitmap_off), (uint64_t)(pages_off), \
                (uint64_t)(next))
#define trace_mapped_ram_finish(writers, us) \
    TRACE_EVENT(mapped_ram_finish, "writers=%d us=%" PRId64, (int)(writers), (int64_t)(us))
#define trace_mapped_ram_load_block(name, pages, lazy, us) \
    TRACE_EVENT(mapped_ram_load_block, "block=%s pages=%" PRIu64 " lazy=%d us=%" PRId64, \
                (name), (uint64_t)(pages), (int)(lazy), (int64_t)(us))

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Trace points: one line per event with a wall-clock timestamp (to line up
 * with the guest's output and qemu-mig-kvmstat) and a monotonic one, and a USDT
 * probe (provider "qemu", the trace point's name) that bpftrace, perf and
 * SystemTap attach to. Both off by default: a trace point costs one
 * predictable branch on two globals until -trace enables the lines or a
 * tracer attaches to its probe.
 *
 *   -trace file=PATH[,enable=GLOB]   -trace enable=GLOB (to stderr)
 *   bpftrace -e 'usdt:BINARY:qemu:migration_pass { printf("%d\n", arg0); }'
 *
 * How to add a trace point: name it in TRACE_EVENT_LIST below (a name
 * missing there does not compile), then
 *
 *   TRACE_EVENT(my_event, "a=%d s=%s", a, s);
 *
 * The probe's arguments are the format's, in order (arg0 is a), strings
 * as pointers (bpftrace's str(arg1)); at most 12. Arguments are evaluated
 * once per consumer, so they must have no side effects.
 */
#ifndef TRACE_TRACE_H
#define TRACE_TRACE_H

#include <stdbool.h>
#include "config-host.h"
#include "qemu/typedefs.h"

/*
 * Every trace point in the tree: -trace help lists these, and each has one
 * probe (test-usdt checks the binary's probe notes against -trace help).
 */
#define TRACE_EVENT_LIST(X) \
    X(bg_snapshot_fault) X(bg_snapshot_region) X(cpu_throttle_set) \
    X(cpu_throttle_vcpu_sleep) X(dirty_clear) X(dirty_sync_end) X(dirty_sync_start) \
    X(dirtylimit_set) X(dirtylimit_vcpu_rate) X(dirtylimit_vcpu_sleep) X(display_refresh) \
    X(kvm_clear_dirty_log) X(kvm_dirty_ring_reap) X(kvm_get_dirty_log) \
    X(kvm_pic_requeue_lost_irq) X(kvm_vcpu_exit_slow) X(mapped_ram_block) \
    X(mapped_ram_finish) X(mapped_ram_load_block) X(migration_converge) \
    X(migration_converge_step) X(migration_downtime) X(migration_incoming_downtime) \
    X(migration_pass) X(migration_postcopy_package) X(migration_postcopy_start) \
    X(migration_postcopy_stopped) X(migration_postcopy_switch) X(migration_prediction) \
    X(migration_state) X(migration_switchover) X(net_queue_full) X(postcopy_dst_step) \
    X(postcopy_preempt_end) X(ram_iterate) X(savevm_device_load) X(savevm_device_save) \
    X(slirp_guest_error) X(vga_load_no_vbe) X(vga_vbe_mode)

/* TRACE_ID_migration_pass...: only there so that an unlisted name fails to compile. */
#define TRACE_ID_(name) TRACE_ID_##name,
enum TraceEventId { TRACE_EVENT_LIST(TRACE_ID_) TRACE_EVENT_COUNT };
#undef TRACE_ID_

/* Set once at startup (before any thread), read everywhere. */
extern bool trace_active;

bool trace_parse_option(const char *arg, Error **errp);
/* Writes one event line if @event matches the enabled patterns. */
void trace_event_printf(const char *event, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

#ifdef CONFIG_USDT
/*
 * One semaphore per probe, counted up by the kernel while a tracer is
 * attached (uprobe ref_ctr_offset) so that the arguments are computed only
 * then. sys/sdt.h records its address in the probe's note, so there must be
 * one object per name in the binary: weak, every object file's copy is the
 * same one after linking (the unit tests, which link no trace.c, get it too).
 */
#define _SDT_HAS_SEMAPHORES 1
#define SDT_USE_VARIADIC 1
#include <sys/sdt.h>
#define TRACE_SEMAPHORE_(name) \
    __attribute__((weak, section(".probes"))) unsigned short qemu_##name##_semaphore;
TRACE_EVENT_LIST(TRACE_SEMAPHORE_)
#undef TRACE_SEMAPHORE_
#define TRACE_PROBE_ATTACHED(name) (qemu_##name##_semaphore != 0)
#define TRACE_PROBE(name, ...) STAP_PROBEV(qemu, name, __VA_ARGS__)
#else
#define TRACE_PROBE_ATTACHED(name) ((void)TRACE_ID_##name, false)
#define TRACE_PROBE(name, ...) do { } while (0)
#endif

/* For a trace point whose arguments cost a clock read or more to compute. */
#define TRACE_EVENT_ENABLED(name) \
    __builtin_expect(trace_active || TRACE_PROBE_ATTACHED(name), 0)

#define TRACE_EVENT(name, fmt, ...) \
    do { \
        if (TRACE_EVENT_ENABLED(name)) { \
            TRACE_PROBE(name, __VA_ARGS__); \
            if (trace_active) { \
                trace_event_printf(#name, fmt, __VA_ARGS__); \
            } \
        } \
    } while (0)

#endif

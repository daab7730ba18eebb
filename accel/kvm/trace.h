/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Trace points of the KVM layer: how long the dirty-log ioctls hold the
 * migration thread (and KVM's mmu_lock, which a faulting vCPU waits on),
 * and the vCPU exits that keep a vCPU out of the guest.
 */
#ifndef ACCEL_KVM_TRACE_H
#define ACCEL_KVM_TRACE_H

#include <inttypes.h>
#include "trace/trace.h"

#define trace_kvm_get_dirty_log(slot, npages, us) \
    TRACE_EVENT(kvm_get_dirty_log, "slot=%u npages=%" PRIu64 " us=%" PRId64, \
                (unsigned)(slot), (uint64_t)(npages), (int64_t)(us))
#define trace_kvm_clear_dirty_log(slot, first, npages, us) \
    TRACE_EVENT(kvm_clear_dirty_log, "slot=%u first=%" PRIu64 " npages=%" PRIu64 \
                " us=%" PRId64, (unsigned)(slot), (uint64_t)(first), (uint64_t)(npages), \
                (int64_t)(us))
#define trace_kvm_dirty_ring_reap(caller, entries, wait_us, reset_us, us) \
    TRACE_EVENT(kvm_dirty_ring_reap, "by=%s entries=%" PRIu64 " lock_wait_us=%" PRId64 \
                " reset_us=%" PRId64 " us=%" PRId64, (caller), (uint64_t)(entries), \
                (int64_t)(wait_us), (int64_t)(reset_us), (int64_t)(us))
/* Only exits whose handling kept the vCPU out of KVM_RUN for >= 50 us. */
#define trace_kvm_vcpu_exit_slow(cpu, reason, us) \
    TRACE_EVENT(kvm_vcpu_exit_slow, "cpu=%d reason=%u us=%" PRId64, (int)(cpu), \
                (unsigned)(reason), (int64_t)(us))
/* A QEMU stream's PIC had an IRQ in service that the vCPU never took: pending again. */
#define trace_kvm_pic_requeue_lost_irq(irq, vector) \
    TRACE_EVENT(kvm_pic_requeue_lost_irq, "irq=%u vector=%u", (unsigned)(irq), \
                (unsigned)(vector))

#endif

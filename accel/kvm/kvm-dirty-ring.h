/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to accel/kvm: the dirty-ring row of the dirty-log mode table. */
#ifndef ACCEL_KVM_DIRTY_RING_H
#define ACCEL_KVM_DIRTY_RING_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"

/* KVM_ENABLE_CAP with -accel kvm,dirty-ring-size=N; before any vCPU exists. */
bool kvm_dirty_ring_enable(KVMState *s, Error **errp);
/* Maps @cpu's ring. */
bool kvm_dirty_ring_vcpu_init(KVMState *s, CPUState *cpu, Error **errp);
/*
 * Harvests every vCPU's ring into the slots' harvest bitmaps, then resets
 * the rings. 0, or -errno if a reset failed in this logging session.
 */
int kvm_dirty_ring_reap(KVMState *s);
/* Some vCPU's ring holds at least @entries entries not harvested yet. */
bool kvm_dirty_ring_filling(KVMState *s, uint32_t entries);
/*
 * kvm-dirty-reaper.c: a thread that harvests the rings before one fills,
 * while a slot logs (started and stopped under kvm-dirty-clients.c's log_lock).
 */
void kvm_dirty_reaper_start(KVMState *s);
void kvm_dirty_reaper_stop(void);
/* slot->dirty_bmap := what the rings collected for @slot; starts a new round. */
int kvm_dirty_ring_sync_slot(KVMState *s, KVMSlot *slot);
/* @slot gains its first bitmap client (@on) or loses its last: its ring bitmap. */
void kvm_dirty_ring_track_slot(KVMState *s, KVMSlot *slot, bool on);
/*
 * The first slot starts logging / the last stops: the per-harvest count
 * bitmaps, and (start) a fresh start for a failed reset.
 */
void kvm_dirty_ring_log_start(KVMState *s);
void kvm_dirty_ring_log_stop(KVMState *s);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dirty-limit: a vCPU that dirties guest memory faster than its limit
 * (MB/s) sleeps off the excess in its own thread; a vCPU that dirties
 * nothing is never slowed. Built on the KVM dirty ring, whose per-vCPU
 * entries say who dirtied what (CPUState.dirty_pages). A "dirtylimit"
 * thread harvests the rings while any limit is set, keeps each vCPU's
 * current rate and kicks a vCPU that is over its budget. Limits come from
 * QMP set-vcpu-dirty-limit (BQL) or from a migration with the dirty-limit
 * capability (mig/src); see docs/devel/migration.md.
 */
#ifndef SYSTEM_DIRTYLIMIT_H
#define SYSTEM_DIRTYLIMIT_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"

#define DIRTYLIMIT_DEFAULT_PERIOD_MS 1000

/* Error unless the KVM dirty ring is on. */
bool dirtylimit_supported(Error **errp);
/*
 * Limit vCPU @cpu_index (-1: every vCPU) to @mbps MB/s (>= 1). @own_log:
 * the caller does not already keep the slots logging (QMP), so the limit
 * takes a dirty-ring counting reference until it is cancelled.
 */
bool dirtylimit_set(int cpu_index, uint64_t mbps, bool own_log, Error **errp);
/* Cancel @cpu_index's limit (-1: all). */
void dirtylimit_cancel(int cpu_index);
bool dirtylimit_in_service(void);
bool dirtylimit_vcpu_limited(int cpu_index);
/* The rate the thread computes per period, and the period (ms, 1..1000). */
void dirtylimit_set_period_ms(uint64_t ms);
uint64_t dirtylimit_vcpu_current_rate(int cpu_index);
uint64_t dirtylimit_vcpu_limit(int cpu_index);
/*
 * For query-migrate: the longest sleep one vCPU took in the last period
 * (us), and how long a limited vCPU takes to fill its ring at its current
 * rate (us, 0 if it dirties nothing).
 */
uint64_t dirtylimit_throttle_time_per_round_us(void);
uint64_t dirtylimit_ring_full_time_us(void);

/* @cpu's own thread, no BQL (system/cpu-throttle.c calls it). */
void dirtylimit_vcpu_wait(CPUState *cpu);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Throttling of the whole guest (auto-converge): every vCPU sleeps pct% of
 * its time, in slices of CPU_THROTTLE_TIMESLICE_NS of running. A
 * "cpu-throttle" thread kicks the vCPUs out of KVM_RUN once per period;
 * each vCPU then sleeps in its own thread, without the BQL, and wakes at
 * once for a pause or run_on_cpu. Setting and stopping: any thread.
 */
#ifndef SYSTEM_CPU_THROTTLE_H
#define SYSTEM_CPU_THROTTLE_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"

#define CPU_THROTTLE_PCT_MIN 1
#define CPU_THROTTLE_PCT_MAX 99
#define CPU_THROTTLE_TIMESLICE_NS 10000000LL

/* Throttle every vCPU to @pct% (clamped to 1..99); starts the thread. */
void cpu_throttle_set(int pct);
/* Back to full speed; the thread ends. */
void cpu_throttle_stop(void);
bool cpu_throttle_active(void);
int cpu_throttle_get_percentage(void);
/* Nanoseconds any vCPU slept for the throttle since the process started. */
uint64_t cpu_throttle_sleep_ns(void);

/*
 * @cpu's own thread, after KVM_RUN returned, without the BQL: sleep the
 * vCPU's share if the throttle thread asked for it, then the dirty-limit
 * budget (system/dirtylimit.c).
 */
void cpu_throttle_vcpu_wait(CPUState *cpu);

#endif

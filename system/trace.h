/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Trace points of the vCPU throttles (system/cpu-throttle.c, system/dirtylimit.c). */
#ifndef SYSTEM_TRACE_H
#define SYSTEM_TRACE_H

#include <inttypes.h>
#include "trace/trace.h"

#define trace_dirtylimit_set(cpu, mbps) \
    TRACE_EVENT(dirtylimit_set, "cpu=%d limit_mbps=%" PRIu64, (int)(cpu), (uint64_t)(mbps))
#define trace_dirtylimit_vcpu_sleep(cpu, limit, us) \
    TRACE_EVENT(dirtylimit_vcpu_sleep, "cpu=%d limit_mbps=%" PRIu64 " us=%" PRId64, (int)(cpu), \
                (uint64_t)(limit), (int64_t)(us))
#define trace_dirtylimit_vcpu_rate(cpu, limit, rate) \
    TRACE_EVENT(dirtylimit_vcpu_rate, "cpu=%d limit_mbps=%" PRIu64 " rate_mbps=%" PRIu64, \
                (int)(cpu), (uint64_t)(limit), (uint64_t)(rate))
#define trace_cpu_throttle_set(pct) \
    TRACE_EVENT(cpu_throttle_set, "pct=%d", (int)(pct))
#define trace_cpu_throttle_vcpu_sleep(cpu, pct, us) \
    TRACE_EVENT(cpu_throttle_vcpu_sleep, "cpu=%d pct=%d us=%" PRId64, (int)(cpu), (int)(pct), \
                (int64_t)(us))

#endif

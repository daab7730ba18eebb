/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: a log2 histogram of waits in microseconds, as
 * query-migrate shows them: [0,1), [1,2), [2,4), ... [2^19 us, inf). One
 * thread records (relaxed atomics); any thread reads.
 */
#ifndef MIGRATION_LATENCY_HIST_H
#define MIGRATION_LATENCY_HIST_H

#include <stdint.h>
#include "qapi/qapi-types.h"

#define LATENCY_HIST_BUCKETS 21

typedef struct LatencyHist {
    uint64_t count;
    uint64_t sum_ns;
    uint64_t max_us;
    uint64_t hist[LATENCY_HIST_BUCKETS];
} LatencyHist;

/* The recording thread only. */
void latency_hist_record_ns(LatencyHist *h, uint64_t ns);
/* The percentile @pct (0..100): the upper edge of its bucket, at most the maximum. */
uint64_t latency_hist_percentile_us(const LatencyHist *h, double pct);
/* The buckets as a QAPI list. */
uint64List *latency_hist_buckets(const LatencyHist *h);
/*
 * The sum of every wait recorded, in nanoseconds (Prometheus's _sum). Read
 * apart from the buckets, it may count one sample more or fewer than they
 * do while the recording thread runs, unless the reader holds the lock the
 * recorder holds (postcopy's); once recording stops it is exact.
 */
uint64_t latency_hist_sum_ns(const LatencyHist *h);

#endif

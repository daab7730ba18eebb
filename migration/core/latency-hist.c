/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Log2 latency histograms (latency-hist.h). */
#include "qemu/osdep.h"
#include "latency-hist.h"

static void hist_add(uint64_t *counter, uint64_t n)
{
    __atomic_store_n(counter, *counter + n, __ATOMIC_RELAXED);
}

void latency_hist_record_ns(LatencyHist *h, uint64_t ns)
{
    uint64_t us = ns / 1000;
    int b = 0;

    while (b < LATENCY_HIST_BUCKETS - 1 && us >= (1ULL << b)) {
        b++;
    }
    hist_add(&h->hist[b], 1);
    hist_add(&h->count, 1);
    hist_add(&h->sum_ns, ns);
    if (us > h->max_us) {
        __atomic_store_n(&h->max_us, us, __ATOMIC_RELAXED);
    }
}

uint64_t latency_hist_percentile_us(const LatencyHist *h, double pct)
{
    uint64_t hist[LATENCY_HIST_BUCKETS], total = 0, seen = 0;
    uint64_t max_us = __atomic_load_n(&h->max_us, __ATOMIC_RELAXED);

    for (int b = 0; b < LATENCY_HIST_BUCKETS; b++) {
        hist[b] = __atomic_load_n(&h->hist[b], __ATOMIC_RELAXED);
        total += hist[b];
    }
    if (!total) {
        return 0;
    }
    for (int b = 0; b < LATENCY_HIST_BUCKETS; b++) {
        seen += hist[b];
        if (seen * 100.0 >= pct * total) {
            return b == 0 ? 1 : MIN(1ULL << b, MAX(max_us, 1));
        }
    }
    return max_us;
}

uint64_t latency_hist_sum_ns(const LatencyHist *h)
{
    return __atomic_load_n(&h->sum_ns, __ATOMIC_RELAXED);
}

uint64List *latency_hist_buckets(const LatencyHist *h)
{
    uint64List *head = NULL, **tail = &head;

    for (int b = 0; b < LATENCY_HIST_BUCKETS; b++) {
        uint64List *e = g_new0(uint64List, 1);

        e->value = __atomic_load_n(&h->hist[b], __ATOMIC_RELAXED);
        *tail = e;
        tail = &e->next;
    }
    return head;
}

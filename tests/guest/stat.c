/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Per-period write statistics for the STAT lines: total MB, rate, and the
 * worst and 99th-percentile single-write latency from a histogram (1 us
 * buckets below 1024 us, power-of-two buckets above), all in integers.
 */
#include "workload.h"

/* "WORD cpu=N " (or "WORD " with one CPU): every line of a CPU starts so. */
void ln_tag(struct line *l, const char *word, int cpu)
{
    ln_str(l, word);
    ln_str(l, " ");
    if (cpu >= 0) {
        ln_str(l, "cpu=");
        ln_u64(l, (uint64_t)cpu);
        ln_str(l, " ");
    }
}

/* @deadline: the TSC at which seconds= ends the guest, or UINT64_MAX. */
void stat_start(struct wstat *s, int cpu, uint64_t report_ms, uint64_t deadline)
{
    uint64_t now = rdtsc();

    memset(s, 0, sizeof(*s));
    s->cpu = cpu;
    s->start = now;
    s->period_start = now;
    s->period = ms_to_tsc(report_ms);
    s->next_report = now + s->period;
    s->deadline = deadline;
}

/* About a millisecond: CPU 0 (or the only one) until the next PIT tick, an AP on its LAPIC. */
void stat_nap(struct wstat *s)
{
    if (s->cpu <= 0) {
        svc_sleep();
    } else {
        ap_nap();
    }
    s->wakeups++;
}

/* The next report is one period on; after a stop (a paused VM) restart the cadence. */
void stat_next_period(struct wstat *s, uint64_t now)
{
    s->period_start = now;
    s->period_wakeups = s->wakeups;
    s->next_report += s->period;
    if (s->next_report <= now) {
        s->next_report = now + s->period;
    }
}

/* Lower bound of a bucket, in microseconds. */
static uint64_t bucket_us(unsigned b)
{
    return b < HIST_LINEAR ? b : 1ULL << (b - HIST_LINEAR + 10);
}

uint64_t stat_p99_us(const struct wstat *s)
{
    uint64_t want = (s->period_writes * 99 + 99) / 100, seen = 0;
    unsigned b;

    if (!s->period_writes) {
        return 0;
    }
    for (b = 0; b < HIST_BUCKETS; b++) {
        seen += s->hist[b];
        if (seen >= want) {
            return bucket_us(b);
        }
    }
    return bucket_us(HIST_BUCKETS - 1);
}

void stat_report(struct wstat *s, uint64_t now)
{
    struct line l = { 0 };
    uint64_t us = tsc_to_us(now - s->period_start);
    /* MB/s = bytes per us; in tenths: writes * 4096 * 10 / us */
    uint64_t tenths = us ? s->period_writes * 40960 / us : 0;

    ln_tag(&l, "STAT", s->cpu);
    ln_str(&l, "t_ms=");
    ln_u64(&l, tsc_to_ms(now - s->start));
    ln_str(&l, " mb=");
    ln_u64(&l, s->writes * PAGE_SIZE / 1000000);
    ln_str(&l, " rate_mbps=");
    ln_tenths(&l, tenths);
    ln_str(&l, " max_write_us=");
    ln_u64(&l, tsc_to_us(s->max_tsc));
    ln_str(&l, " p99_write_us=");
    ln_u64(&l, stat_p99_us(s));
    ln_str(&l, " writes=");
    ln_u64(&l, s->period_writes);
    ln_str(&l, " slow_writes=");
    ln_u64(&l, s->period_slow);
    ln_str(&l, " wakeups=");
    ln_u64(&l, s->wakeups - s->period_wakeups);
    ln_emit(&l);

    memset(s->hist, 0, sizeof(s->hist));
    s->period_writes = 0;
    s->period_slow = 0;
    s->max_tsc = 0;
    stat_next_period(s, now);
}

/* compute: iterations in the period and per second over it, and since the start. */
void stat_report_compute(struct wstat *s, uint64_t now, uint64_t iters, uint64_t period_iters)
{
    struct line l = { 0 };
    uint64_t us = tsc_to_us(now - s->period_start);

    ln_tag(&l, "STAT", s->cpu);
    ln_str(&l, "t_ms=");
    ln_u64(&l, tsc_to_ms(now - s->start));
    ln_str(&l, " iters=");
    ln_u64(&l, period_iters);
    ln_str(&l, " ips=");
    /* period_iters * 1e6 / us without overflow (a period below ~5 years) */
    ln_u64(&l, us ? period_iters / us * 1000000 + period_iters % us * 1000000 / us : 0);
    ln_str(&l, " total_iters=");
    ln_u64(&l, iters);
    ln_emit(&l);
    stat_next_period(s, now);
}

/* Sleep until 'until' while keeping STAT lines and the seconds= limit. */
void stat_idle_until(struct wstat *s, uint64_t until)
{
    for (;;) {
        uint64_t now = rdtsc();

        stat_tick(s, now);
        if (now >= until) {
            return;
        }
        stat_nap(s);
    }
}

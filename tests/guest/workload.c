/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The CPL3 workload: parameters from the PVH command line, the work area
 * from the PVH memory map, the fills (random, zero, text, sparse, zeroed), and the
 * four modes. All loops run here because CPL3 runs natively under kvm-pvm
 * and CPL0 does not.
 */
#include "workload.h"

/* Indexes into the name tables below. */
enum mode { MODE_VERIFY, MODE_DIRTY, MODE_MEMUSER, MODE_IDLE, MODE_COMPUTE, MODE_UNSET };
enum pattern { PATTERN_RANDOM, PATTERN_SEQ };
enum fill { FILL_RANDOM, FILL_ZERO, FILL_TEXT, FILL_SPARSE, FILL_ZEROED };

static const char *const mode_names[] = { "verify", "dirty", "memuser", "idle", "compute", 0 };
static const char *const pattern_names[] = { "random", "seq", 0 };
static const char *const fill_names[] = { "random", "zero", "text", "sparse", "zeroed", 0 };

static struct {
    unsigned mode, pattern, fill;
    uint64_t mem_mb, rate, chunk_mb, idle_ms, report_ms, passes, seconds;
} P = {
    .mem_mb = 64, .chunk_mb = 16, .idle_ms = 1000, .report_ms = 1000,
};

/*
 * CPU 1's workload (mode1=dirty|compute, with mem1, rate1, pattern1;
 * unset ones take the unsuffixed value). Its area follows CPU 0's.
 */
#define UNSET UINT64_MAX
static struct {
    unsigned mode, pattern;
    uint64_t mem_mb, rate;
} P1 = { .mode = MODE_UNSET, .pattern = MODE_UNSET, .mem_mb = UNSET, .rate = UNSET };

static const struct {
    const char *key;
    uint64_t *val;
    uint64_t min, max;      /* bounds keep later arithmetic from overflowing */
} num_params[] = {
    { "mem", &P.mem_mb, 1, 1ULL << 24 },
    { "rate", &P.rate, 0, 1000000000 },
    { "chunk", &P.chunk_mb, 1, 1ULL << 24 },
    { "idle_ms", &P.idle_ms, 0, 1000000000 },
    { "report_ms", &P.report_ms, 1, 1000000000 },
    { "passes", &P.passes, 0, 1ULL << 40 },
    { "seconds", &P.seconds, 0, 1000000000 },
    { "mem1", &P1.mem_mb, 1, 1ULL << 24 },
    { "rate1", &P1.rate, 0, 1000000000 },
};

static const struct {
    const char *key;
    unsigned *val;
    const char *const *names;
} enum_params[] = {
    { "mode", &P.mode, mode_names },
    { "mode0", &P.mode, mode_names },
    { "mode1", &P1.mode, mode_names },
    { "pattern", &P.pattern, pattern_names },
    { "pattern1", &P1.pattern, pattern_names },
    { "fill", &P.fill, fill_names },
};

#define MAX_SEGS        32
#define MAX_MEMMAP      64
#define MAX_FAIL_LINES  10
#define CMDLINE_MAX     4096

/* The work area: RAM from WORK_BASE on, in memory-map order, holes skipped. */
static struct {
    uint64_t start, pages;
} segs[MAX_SEGS];
static unsigned nsegs;
static uint64_t area_pages;     /* CPU 0's share of the area; CPU 1's follows */
static uint64_t ap_pages;
static struct wstat st, st_ap;
static bool smp;                /* mode1= given: CPU 1 runs a workload too */
static volatile uint32_t bsp_ready;     /* CPU 0 parsed, built and filled the area */

static _Noreturn void bad_param(const char *key, size_t n)
{
    struct line l = { 0 };

    ln_str(&l, "FAIL bad-param key=");
    ln_mem(&l, key, n);
    ln_emit(&l);
    wl_exit(EXIT_PARAM);
}

static void set_param(const char *k, size_t kn, const char *v, size_t vn)
{
    unsigned i, j;
    uint64_t x;

    for (i = 0; i < sizeof(num_params) / sizeof(num_params[0]); i++) {
        if (mem_eq(k, kn, num_params[i].key)) {
            if (!parse_u64(v, vn, &x) || x < num_params[i].min ||
                x > num_params[i].max) {
                bad_param(k, kn);
            }
            *num_params[i].val = x;
            return;
        }
    }
    for (i = 0; i < sizeof(enum_params) / sizeof(enum_params[0]); i++) {
        if (mem_eq(k, kn, enum_params[i].key)) {
            for (j = 0; enum_params[i].names[j]; j++) {
                if (mem_eq(v, vn, enum_params[i].names[j])) {
                    *enum_params[i].val = j;
                    return;
                }
            }
            bad_param(k, kn);
        }
    }
    /* Unknown keys are ignored: the same -append may carry others. */
}

static void parse_cmdline(void)
{
    const char *s = (const char *)g_start_info->cmdline_paddr;
    size_t i = 0;

    if (!s) {
        return;
    }
    while (i < CMDLINE_MAX && s[i]) {
        size_t tok, eq = 0;

        while (s[i] == ' ' || s[i] == '\t' || s[i] == '\n') {
            i++;
        }
        tok = i;
        while (i < CMDLINE_MAX && s[i] && s[i] != ' ' && s[i] != '\t' &&
               s[i] != '\n') {
            if (s[i] == '=' && !eq) {
                eq = i;
            }
            i++;
        }
        if (eq) {
            set_param(s + tok, eq - tok, s + eq + 1, i - eq - 1);
        }
    }
}

/* Copy and sort the RAM ranges: the map is usually sorted, but need not be. */
static unsigned ram_ranges(struct hvm_memmap_entry *out)
{
    const struct hvm_start_info *si = g_start_info;
    const struct hvm_memmap_entry *m = (const void *)si->memmap_paddr;
    unsigned n = 0, i, j;

    if (si->version < 1 || !m) {
        return 0;
    }
    for (i = 0; i < si->memmap_entries && n < MAX_MEMMAP; i++) {
        if (m[i].type != HVM_MEMMAP_RAM) {
            continue;
        }
        for (j = n; j > 0 && out[j - 1].addr > m[i].addr; j--) {
            out[j] = out[j - 1];
        }
        out[j] = m[i];
        n++;
    }
    return n;
}

static void build_area(void)
{
    struct hvm_memmap_entry ram[MAX_MEMMAP];
    unsigned n = ram_ranges(ram), i;
    uint64_t need = (P.mem_mb + (smp && P1.mode == MODE_DIRTY ? P1.mem_mb : 0)) * MiB, have = 0;

    for (i = 0; i < n; i++) {
        uint64_t s = ram[i].addr, e = ram[i].addr + ram[i].size;

        s = (s < WORK_BASE ? WORK_BASE : s + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
        e = (e > g_map_top ? g_map_top : e) & ~(PAGE_SIZE - 1);
        if (e <= s) {
            continue;
        }
        have += e - s;
        if (need && nsegs < MAX_SEGS) {
            uint64_t take = e - s < need ? e - s : need;

            segs[nsegs].start = s;
            segs[nsegs].pages = take / PAGE_SIZE;
            nsegs++;
            need -= take;
            area_pages += take / PAGE_SIZE;
        }
    }
    if (need) {
        struct line l = { 0 };

        ln_str(&l, "FAIL mem-too-big have_mb=");
        ln_u64(&l, have / MiB);
        ln_str(&l, " memmap_entries=");
        ln_u64(&l, g_start_info->version >= 1 ? g_start_info->memmap_entries : 0);
        ln_emit(&l);
        wl_exit(EXIT_PARAM);
    }
    if (smp && P1.mode == MODE_DIRTY) {
        ap_pages = P1.mem_mb * MiB / PAGE_SIZE;
        area_pages -= ap_pages;
    }
}

static inline uint64_t page_addr(uint64_t idx)
{
    unsigned i;

    for (i = 0; idx >= segs[i].pages; i++) {
        idx -= segs[i].pages;
    }
    return segs[i].start + idx * PAGE_SIZE;
}

static inline uint64_t xorshift(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Random bytes, so that zero-page detection cannot shortcut migration. */
static void fill_area(void)
{
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    unsigned i;

    for (i = 0; i < nsegs; i++) {
        uint64_t *p = (uint64_t *)segs[i].start;
        uint64_t *end = p + segs[i].pages * (PAGE_SIZE / 8);

        while (p < end) {
            *p++ = xorshift(&x);
        }
    }
}

/*
 * Memory that compresses like real memory, for the compression benchmarks:
 * "text" is lines of words drawn from a small vocabulary (deflate and zstd
 * shrink it several times, no page is zero); "sparse" keeps 64 random bytes
 * at the start of each page and zeroes after them (mostly-zero pages that
 * zero-page detection must not skip).
 */
static void fill_area_text(void)
{
    static const char *const words[] = {
        "the", "of", "and", "to", "in", "is", "that", "for", "it", "with", "as", "was",
        "on", "be", "at", "by", "this", "from", "or", "an", "which", "are", "not", "have",
        "struct", "return", "static", "int", "void", "if", "else", "while",
    };
    uint64_t x = 0x2545f4914f6cdd1dULL, n = 0;
    unsigned i;

    for (i = 0; i < nsegs; i++) {
        char *p = (char *)segs[i].start;
        char *end = p + segs[i].pages * PAGE_SIZE;

        while (p < end) {
            const char *w = words[xorshift(&x) % (sizeof(words) / sizeof(words[0]))];

            while (*w && p < end) {
                *p++ = *w++;
            }
            if (p < end) {
                *p++ = ++n % 12 ? ' ' : '\n';
            }
        }
    }
}

static void fill_area_sparse(void)
{
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    unsigned i;

    for (i = 0; i < nsegs; i++) {
        for (uint64_t pg = 0; pg < segs[i].pages; pg++) {
            uint64_t *p = (uint64_t *)(segs[i].start + pg * PAGE_SIZE);

            for (unsigned k = 0; k < 8; k++) {
                p[k] = xorshift(&x);
            }
        }
    }
}

/*
 * "zeroed": one zero store per page. The pages are then the host's own
 * (populated, all zero), like memory a real guest used and freed, so the
 * migration must look at them to find they are zero; "zero" leaves pages
 * the host never populated.
 */
static void fill_area_zeroed(void)
{
    for (unsigned i = 0; i < nsegs; i++) {
        for (uint64_t pg = 0; pg < segs[i].pages; pg++) {
            *(volatile uint64_t *)(segs[i].start + pg * PAGE_SIZE) = 0;
        }
    }
}

static void fail_value(uint64_t page, uint64_t expected, uint64_t got)
{
    struct line l = { 0 };

    ln_str(&l, "FAIL page=");
    ln_hex(&l, page);
    ln_str(&l, " expected=");
    ln_u64(&l, expected);
    ln_str(&l, " got=");
    ln_u64(&l, got);
    ln_emit(&l);
}

static void fail_addr(uint64_t page, uint64_t got)
{
    struct line l = { 0 };

    ln_str(&l, "FAIL page=");
    ln_hex(&l, page);
    ln_str(&l, " expected_addr=");
    ln_hex(&l, page);
    ln_str(&l, " got_addr=");
    ln_hex(&l, got);
    ln_emit(&l);
}

/* One pass over the area; returns the number of bad pages. */
static uint64_t verify_pass(uint64_t n, uint64_t deadline)
{
    uint64_t bad = 0;
    unsigned i;

    for (i = 0; i < nsegs; i++) {
        uint64_t a = segs[i].start, end = a + segs[i].pages * PAGE_SIZE;

        for (; a < end; a += PAGE_SIZE) {
            volatile uint64_t *p = (volatile uint64_t *)a;

            if (n > 1) {
                uint64_t v = p[0], addr = p[1];

                if (v != n - 1 || addr != a) {
                    if (bad < MAX_FAIL_LINES) {
                        if (v != n - 1) {
                            fail_value(a, n - 1, v);
                        } else {
                            fail_addr(a, addr);
                        }
                    }
                    bad++;
                }
            }
            p[0] = n;
            p[1] = a;
            if (!(a & 0x3fffff) && rdtsc() >= deadline) {
                wl_exit(bad ? EXIT_VERIFY : EXIT_OK);
            }
        }
    }
    return bad;
}

static _Noreturn void run_verify(void)
{
    uint64_t deadline = P.seconds ? rdtsc() + ms_to_tsc(P.seconds * 1000) : UINT64_MAX;
    uint64_t n;

    for (n = 1;; n++) {
        uint64_t t0 = rdtsc(), bad = verify_pass(n, deadline);
        struct line l = { 0 };

        if (bad) {
            ln_str(&l, "FAIL pass=");
            ln_u64(&l, n);
            ln_str(&l, " bad_pages=");
            ln_u64(&l, bad);
            ln_emit(&l);
            wl_exit(EXIT_VERIFY);
        }
        ln_str(&l, "PASS n=");
        ln_u64(&l, n);
        ln_str(&l, " ms=");
        ln_u64(&l, tsc_to_ms(rdtsc() - t0));
        ln_str(&l, " us=");
        ln_u64(&l, tsc_to_us(rdtsc() - t0));
        ln_emit(&l);
        if ((P.passes && n >= P.passes) || rdtsc() >= deadline) {
            wl_exit(EXIT_OK);
        }
    }
}

/* One timed 64-bit store into a page, recorded in the histogram. */
static inline uint64_t timed_write(struct wstat *s, uint64_t addr, uint64_t value)
{
    uint64_t t0 = rdtsc_fenced(), t1;

    *(volatile uint64_t *)addr = value;
    t1 = rdtsc_fenced();
    stat_write(s, t1 - t0);
    return t1;
}

/*
 * A wait of about a millisecond. CPU 0 sleeps a PIT tick; CPU 1 spins on
 * the TSC instead: the PIT's interrupt reaches only CPU 0 (the LAPIC's
 * virtual wire), and a hlt there would never end.
 */
static void nap(bool bsp, struct wstat *s)
{
    if (bsp) {
        svc_sleep();
    } else {
        uint64_t until = rdtsc() + ms_to_tsc(1);

        while (rdtsc() < until) {
            asm volatile("pause");
        }
    }
    stat_tick(s, rdtsc());
}

/*
 * Writes follow a schedule (k-th write due at t0 + k * cycles_per_write).
 * Ahead by more than 1 ms: nap instead of spinning, so a throttled guest
 * leaves the host CPU alone. Short host stalls are caught up; behind by
 * more than 100 ms (a paused VM, migration downtime, writes made slow by
 * dirty tracking) the debt is forgotten instead of bursting.
 */
static _Noreturn void dirty_loop(struct wstat *s, uint64_t first, uint64_t pages, uint64_t rate,
                                 unsigned pattern, bool bsp)
{
    uint64_t x = 0x2545f4914f6cdd1dULL ^ first, idx = 0, k = 0;
    uint64_t one_ms = ms_to_tsc(1), max_debt = ms_to_tsc(100);
    /* TSC ticks per write, 16.16 fixed point: khz * 1000 * 4096 / (rate * 1e6) */
    uint64_t cpw = rate ? (g_tsc_khz * 4096 << 16) / (rate * 1000) : 0;
    uint64_t sched_t0 = s->start, sched_k0 = 0;

    for (;;) {
        uint64_t now, page;

        if (pattern == PATTERN_SEQ) {
            page = idx;
            if (++idx >= pages) {
                idx = 0;
            }
        } else {
            page = (uint64_t)(((unsigned __int128)xorshift(&x) * pages) >> 64);
        }
        now = timed_write(s, page_addr(first + page), ++k);
        stat_tick(s, now);
        if (!cpw) {
            continue;
        }

        uint64_t due = sched_t0 +
                       (uint64_t)(((unsigned __int128)(k - sched_k0) * cpw) >> 16);

        if (due > now + one_ms) {
            do {
                nap(bsp, s);
                now = rdtsc();
            } while (due > now + one_ms);
        } else if (now > due + max_debt) {
            sched_t0 = now;
            sched_k0 = k;
        }
    }
}

/*
 * A CPU loop that stores nothing: xorshift steps in a register, 4096 per
 * iteration of the count. Its STAT lines give iterations per second, so a
 * throttle that slows this CPU shows, and one that leaves it alone too.
 */
static _Noreturn void compute_loop(struct wstat *s, uint64_t report_ms, uint64_t seconds)
{
    uint64_t x = 0x9e3779b97f4a7c15ULL, iters = 0, period_iters = 0;
    uint64_t period = ms_to_tsc(report_ms), start = rdtsc(), period_start = start;
    uint64_t deadline = seconds ? start + ms_to_tsc(seconds * 1000) : UINT64_MAX;

    for (;;) {
        uint64_t now;

        for (int i = 0; i < 4096; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            asm volatile("" : "+r"(x));
        }
        iters++;
        period_iters++;
        now = rdtsc();
        if (now - period_start >= period) {
            struct line l = { 0 };
            uint64_t us = tsc_to_us(now - period_start);

            ln_str(&l, "STAT ");
            if (s->cpu >= 0) {
                ln_str(&l, "cpu=");
                ln_u64(&l, (uint64_t)s->cpu);
                ln_str(&l, " ");
            }
            ln_str(&l, "t_ms=");
            ln_u64(&l, tsc_to_ms(now - start));
            ln_str(&l, " iters=");
            ln_u64(&l, period_iters);
            ln_str(&l, " ips=");
            ln_u64(&l, us ? period_iters * 1000000 / us : 0);
            ln_str(&l, " total_iters=");
            ln_u64(&l, iters);
            ln_emit(&l);
            period_iters = 0;
            period_start = now;
        }
        if (now >= deadline) {
            wl_exit(EXIT_OK);
        }
    }
}

static _Noreturn void run_dirty(void)
{
    dirty_loop(&st, 0, area_pages, P.rate, P.pattern, true);
}

/* Sweep chunk by chunk with a rest in between: the page-aging pattern. */
static _Noreturn void run_memuser(void)
{
    uint64_t chunk = P.chunk_mb * (MiB / PAGE_SIZE), pos = 0, k = 0, i;

    if (chunk > area_pages) {
        chunk = area_pages;
    }
    for (;;) {
        for (i = 0; i < chunk; i++) {
            stat_tick(&st, timed_write(&st, page_addr(pos), ++k));
            if (++pos >= area_pages) {
                pos = 0;
            }
        }
        stat_idle_until(&st, rdtsc() + ms_to_tsc(P.idle_ms));
    }
}

static void print_ready(uint64_t fill_tsc)
{
    struct line l = { 0 };

    ln_str(&l, "READY mode=");
    ln_str(&l, mode_names[P.mode]);
    if (smp) {
        ln_str(&l, " cpu=0");
    }
    ln_str(&l, " mem_mb=");
    ln_u64(&l, P.mem_mb);
    ln_str(&l, " base=");
    ln_hex(&l, segs[0].start);
    ln_str(&l, " tsc_khz=");
    ln_u64(&l, g_tsc_khz);
    ln_str(&l, " clock=");
    ln_str(&l, g_clock);
    ln_str(&l, " pit_khz=");
    ln_u64(&l, g_pit_khz);
    ln_str(&l, " fill=");
    ln_str(&l, fill_names[P.fill]);
    ln_str(&l, " fill_ms=");
    ln_u64(&l, tsc_to_ms(fill_tsc));
    ln_str(&l, " segments=");
    ln_u64(&l, nsegs);
    ln_str(&l, " end=");
    ln_hex(&l, segs[nsegs - 1].start + segs[nsegs - 1].pages * PAGE_SIZE);
    ln_emit(&l);
}

/* CPU 1 at CPL3: waits for CPU 0 to lay out and fill the area, then runs mode1. */
_Noreturn void ap_user_main(void)
{
    struct line l = { 0 };

    while (!__atomic_load_n(&bsp_ready, __ATOMIC_ACQUIRE)) {
        asm volatile("pause");
    }
    ln_str(&l, "READY mode=");
    ln_str(&l, mode_names[P1.mode]);
    ln_str(&l, " cpu=1");
    if (P1.mode == MODE_DIRTY) {
        ln_str(&l, " mem_mb=");
        ln_u64(&l, P1.mem_mb);
        ln_str(&l, " base=");
        ln_hex(&l, page_addr(area_pages));
        ln_str(&l, " rate=");
        ln_u64(&l, P1.rate);
    }
    ln_emit(&l);
    stat_start(&st_ap, 1, P.report_ms, 0);
    if (P1.mode == MODE_DIRTY) {
        dirty_loop(&st_ap, area_pages, ap_pages, P1.rate, P1.pattern, false);
    }
    compute_loop(&st_ap, P.report_ms, 0);
}

/* mode1= names a per-CPU workload for CPU 1: dirty or compute, nothing else. */
static void check_smp_params(void)
{
    struct line l = { 0 };

    smp = P1.mode != MODE_UNSET;
    if (!smp) {
        return;
    }
    if (P1.mode != MODE_DIRTY && P1.mode != MODE_COMPUTE) {
        ln_str(&l, "FAIL bad-param key=mode1 (dirty or compute)");
        ln_emit(&l);
        wl_exit(EXIT_PARAM);
    }
    P1.mem_mb = P1.mem_mb == UNSET ? P.mem_mb : P1.mem_mb;
    P1.rate = P1.rate == UNSET ? P.rate : P1.rate;
    P1.pattern = P1.pattern == MODE_UNSET ? P.pattern : P1.pattern;
}

_Noreturn void user_main(void)
{
    uint64_t t0;

    time_init();
    parse_cmdline();
    check_smp_params();
    build_area();
    t0 = rdtsc();
    if (P.fill == FILL_RANDOM) {
        fill_area();
    } else if (P.fill == FILL_TEXT) {
        fill_area_text();
    } else if (P.fill == FILL_SPARSE) {
        fill_area_sparse();
    } else if (P.fill == FILL_ZEROED) {
        fill_area_zeroed();
    }
    print_ready(rdtsc() - t0);
    stat_start(&st, smp ? 0 : -1, P.report_ms, P.seconds);
    __atomic_store_n(&bsp_ready, 1, __ATOMIC_RELEASE);

    switch (P.mode) {
    case MODE_VERIFY:
        run_verify();
    case MODE_DIRTY:
        run_dirty();
    case MODE_MEMUSER:
        run_memuser();
    case MODE_COMPUTE:
        compute_loop(&st, P.report_ms, P.seconds);
    default:
        for (;;) {
            stat_idle_until(&st, UINT64_MAX);
        }
    }
}

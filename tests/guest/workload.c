/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The CPL3 workload: parameters from the PVH command line, the work area
 * from the PVH memory map (filled by fill.c), and the modes, on CPU 0 or,
 * with modeN= keys, one per CPU (the network modes are in net.c, virtiobad
 * in virtio-bad.c, draw in draw.c, vbebad in vbe-bad.c, cpustate= in cpustate.c,
 * blkverify in blk.c, blkbench in blkbench.c, blkhostile in blk-bad.c). All
 * loops run at CPL3 because it runs natively under kvm-pvm and CPL0 does not.
 */
#include "workload.h"

/* Indexes into the name tables below. */
enum mode { MODE_VERIFY, MODE_DIRTY, MODE_MEMUSER, MODE_IDLE, MODE_COMPUTE, MODE_UDPECHO,
            MODE_UDPSTREAM, MODE_VIRTIOBAD, MODE_DRAW, MODE_VBEBAD, MODE_BLKVERIFY,
            MODE_BLKHOSTILE, MODE_BLKBENCH };
enum pattern { PATTERN_RANDOM, PATTERN_SEQ };

static const char *const mode_names[] = {
    "verify", "dirty", "memuser", "idle", "compute", "udpecho", "udpstream", "virtiobad", "draw",
    "vbebad", "blkverify", "blkhostile", "blkbench", 0
};
static const char *const pattern_names[] = { "random", "seq", 0 };
static const char *const fill_names[] = { "random", "zero", "text", "sparse", "zeroed", 0 };

static struct {
    uint64_t mode, pattern, fill;
    uint64_t mem_mb, rate, chunk_mb, idle_ms, report_ms, passes, seconds;
    bool rate_given;            /* draw's default rate is 30 fps, not 0 */
} P = {
    .mem_mb = 64, .chunk_mb = 16, .idle_ms = 1000, .report_ms = 1000,
};

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
};

static const struct {
    const char *key;
    uint64_t *val;
    const char *const *names;
} enum_params[] = {
    { "mode", &P.mode, mode_names },
    { "pattern", &P.pattern, pattern_names },
    { "fill", &P.fill, fill_names },
};

/*
 * Per-CPU keys: KEYn (n = 0..MAX_CPUS-1) overrides KEY for CPU n. A modeN
 * with N >= 1 gives CPU N a workload (boot.c started it) and makes every
 * line of a CPU say cpu=N; mode0 alone only sets CPU 0's mode.
 */
enum { CK_MODE, CK_MEM, CK_RATE, CK_PATTERN, CK_KEYS };
static const char *const cpu_keys[CK_KEYS] = { "mode", "mem", "rate", "pattern" };

static struct cpu {
    uint64_t given[CK_KEYS];    /* values of the KEYn words */
    unsigned given_mask;        /* bit k: given[k] was on the command line */
    bool on;                    /* runs a workload */
    uint64_t mode, mem_mb, rate, pattern;       /* resolved */
    uint64_t first, pages;      /* its share of the work area, in area pages */
} cpus[MAX_CPUS];

#define MAX_MEMMAP      64
#define MAX_FAIL_LINES  10
#define CMDLINE_MAX     4096

struct area_seg g_segs[MAX_SEGS];
unsigned g_nsegs;
static uint64_t area_pages;     /* all CPUs' shares, CPU 0's first */
static bool smp;                /* a modeN= with N >= 1: a workload per CPU */
static uint64_t deadline;       /* seconds= as a TSC value, or UINT64_MAX */
static volatile uint32_t bsp_ready;     /* CPU 0 parsed, built and filled the area */
static uint64_t g_fill_tsc;     /* how long the fill took */

/* A mode with a device (virtio-net, the VBE display): CPU 0's, no area, its own READY. */
static bool is_net_mode(uint64_t mode)
{
    return mode == MODE_UDPECHO || mode == MODE_UDPSTREAM || mode == MODE_VIRTIOBAD ||
           mode == MODE_DRAW || mode == MODE_VBEBAD || mode == MODE_BLKVERIFY ||
           mode == MODE_BLKHOSTILE || mode == MODE_BLKBENCH;
}

static _Noreturn void bad_param(const char *key, size_t n)
{
    struct line l = { 0 };

    ln_str(&l, "FAIL bad-param key=");
    ln_mem(&l, key, n);
    ln_emit(&l);
    wl_exit(-1, EXIT_PARAM);
}

/*
 * KEY=VALUE against the tables: false for an unknown KEY, else true with
 * the value's destination (unsuffixed) and the checked value; a bad value
 * ends the guest naming FULL (the word's key as written).
 */
static bool param_value(const char *k, size_t kn, const char *v, size_t vn,
                        const char *full, size_t fulln, uint64_t **dst, uint64_t *x)
{
    unsigned i, j;

    for (i = 0; i < sizeof(num_params) / sizeof(num_params[0]); i++) {
        if (mem_eq(k, kn, num_params[i].key)) {
            if (!parse_u64(v, vn, x) || *x < num_params[i].min ||
                *x > num_params[i].max) {
                bad_param(full, fulln);
            }
            *dst = num_params[i].val;
            return true;
        }
    }
    for (i = 0; i < sizeof(enum_params) / sizeof(enum_params[0]); i++) {
        if (mem_eq(k, kn, enum_params[i].key)) {
            for (j = 0; enum_params[i].names[j]; j++) {
                if (mem_eq(v, vn, enum_params[i].names[j])) {
                    *dst = enum_params[i].val;
                    *x = j;
                    return true;
                }
            }
            bad_param(full, fulln);
        }
    }
    return false;
}

static void set_param(const char *k, size_t kn, const char *v, size_t vn)
{
    uint64_t *dst, x;
    size_t d = kn;
    unsigned i;
    enum net_param r;

    if (param_value(k, kn, v, vn, k, kn, &dst, &x)) {
        *dst = x;
        P.rate_given |= dst == &P.rate;
        return;
    }
    while (d > 0 && k[d - 1] >= '0' && k[d - 1] <= '9') {
        d--;
    }
    for (i = 0; d > 0 && d < kn && i < CK_KEYS; i++) {
        if (mem_eq(k, d, cpu_keys[i])) {
            struct cpu *c;

            /* One digit, as boot.c's scan for the CPUs to start. */
            if (kn - d != 1 || k[d] - '0' >= MAX_CPUS) {
                bad_param(k, kn);
            }
            param_value(k, d, v, vn, k, kn, &dst, &x);
            c = &cpus[k[d] - '0'];
            c->given[i] = x;
            c->given_mask |= 1u << i;
            return;
        }
    }
    /* Unknown keys are ignored: the same -append may carry others. */
    r = net_param(k, kn, v, vn);
    if (r == NET_PARAM_UNKNOWN) {
        r = vbad_param(k, kn, v, vn);
    }
    if (r == NET_PARAM_UNKNOWN) {
        r = draw_param(k, kn, v, vn);
    }
    if (r == NET_PARAM_UNKNOWN) {
        r = vbebad_param(k, kn, v, vn);
    }
    if (r == NET_PARAM_UNKNOWN) {
        r = cpustate_param(k, kn, v, vn);
    }
    if (r == NET_PARAM_UNKNOWN) {
        r = blk_param(k, kn, v, vn);
    }
    if (r == NET_PARAM_UNKNOWN) {
        r = blkbench_param(k, kn, v, vn);
    }
    if (r == NET_PARAM_BAD) {
        bad_param(k, kn);
    }
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
    uint64_t need = area_pages * PAGE_SIZE, have = 0;

    for (i = 0; i < n; i++) {
        uint64_t s = ram[i].addr, e = ram[i].addr + ram[i].size;

        s = (s < WORK_BASE ? WORK_BASE : s + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
        e = (e > g_map_top ? g_map_top : e) & ~(PAGE_SIZE - 1);
        if (e <= s) {
            continue;
        }
        have += e - s;
        if (need && g_nsegs < MAX_SEGS) {
            uint64_t take = e - s < need ? e - s : need;

            g_segs[g_nsegs].start = s;
            g_segs[g_nsegs].pages = take / PAGE_SIZE;
            g_nsegs++;
            need -= take;
        }
    }
    if (need) {
        struct line l = { 0 };

        ln_str(&l, "FAIL mem-too-big have_mb=");
        ln_u64(&l, have / MiB);
        ln_str(&l, " memmap_entries=");
        ln_u64(&l, g_start_info->version >= 1 ? g_start_info->memmap_entries : 0);
        ln_emit(&l);
        wl_exit(-1, EXIT_PARAM);
    }
}

static inline uint64_t page_addr(uint64_t idx)
{
    unsigned i;

    for (i = 0; idx >= g_segs[i].pages; i++) {
        idx -= g_segs[i].pages;
    }
    return g_segs[i].start + idx * PAGE_SIZE;
}

/*
 * The run of area pages from @idx that is contiguous in memory, up to
 * @end: its address, and its length in *n.
 */
static uint64_t page_run(uint64_t idx, uint64_t end, uint64_t *n)
{
    unsigned i;

    for (i = 0; idx >= g_segs[i].pages; i++) {
        idx -= g_segs[i].pages;
        end -= g_segs[i].pages;
    }
    *n = (end < g_segs[i].pages ? end : g_segs[i].pages) - idx;
    return g_segs[i].start + idx * PAGE_SIZE;
}

static void fail_value(int tag, uint64_t page, uint64_t expected, uint64_t got)
{
    struct line l = { 0 };

    ln_tag(&l, "FAIL", tag);
    ln_str(&l, "page=");
    ln_hex(&l, page);
    ln_str(&l, " expected=");
    ln_u64(&l, expected);
    ln_str(&l, " got=");
    ln_u64(&l, got);
    ln_emit(&l);
}

static void fail_addr(int tag, uint64_t page, uint64_t got)
{
    struct line l = { 0 };

    ln_tag(&l, "FAIL", tag);
    ln_str(&l, "page=");
    ln_hex(&l, page);
    ln_str(&l, " expected_addr=");
    ln_hex(&l, page);
    ln_str(&l, " got_addr=");
    ln_hex(&l, got);
    ln_emit(&l);
}

/* One pass over a CPU's share of the area; returns the number of bad pages. */
static uint64_t verify_pass(const struct cpu *c, int tag, uint64_t n, uint64_t deadline)
{
    uint64_t bad = 0, idx = c->first, last = c->first + c->pages, run;

    for (; idx < last; idx += run) {
        uint64_t a = page_run(idx, last, &run), end = a + run * PAGE_SIZE;

        for (; a < end; a += PAGE_SIZE) {
            volatile uint64_t *p = (volatile uint64_t *)a;

            if (n > 1) {
                uint64_t v = p[0], addr = p[1];

                if (v != n - 1 || addr != a) {
                    if (bad < MAX_FAIL_LINES) {
                        if (v != n - 1) {
                            fail_value(tag, a, n - 1, v);
                        } else {
                            fail_addr(tag, a, addr);
                        }
                    }
                    bad++;
                }
            }
            p[0] = n;
            p[1] = a;
            if (!(a & 0x3fffff) && rdtsc() >= deadline) {
                wl_exit(tag, bad ? EXIT_VERIFY : EXIT_OK);
            }
        }
    }
    return bad;
}

static _Noreturn void run_verify(const struct cpu *c, struct wstat *s)
{
    int tag = s->cpu;
    uint64_t n;

    /* cpustate= is CPU 0's (cpustate.c keeps one CPU's state). */
    bool cpustate = cpustate_wanted() && c == &cpus[0];

    if (cpustate) {
        cpustate_setup();
    }
    for (n = 1;; n++) {
        uint64_t t0 = rdtsc(), bad = verify_pass(c, tag, n, s->deadline);
        struct line l = { 0 };

        if (bad) {
            ln_tag(&l, "FAIL", tag);
            ln_str(&l, "pass=");
            ln_u64(&l, n);
            ln_str(&l, " bad_pages=");
            ln_u64(&l, bad);
            ln_emit(&l);
            wl_exit(tag, EXIT_VERIFY);
        }
        ln_tag(&l, "PASS", tag);
        ln_str(&l, "n=");
        ln_u64(&l, n);
        ln_str(&l, " ms=");
        ln_u64(&l, tsc_to_ms(rdtsc() - t0));
        ln_str(&l, " us=");
        ln_u64(&l, tsc_to_us(rdtsc() - t0));
        ln_emit(&l);
        if (cpustate) {
            cpustate_check();
        }
        if ((P.passes && n >= P.passes && tag <= 0) || rdtsc() >= s->deadline) {
            wl_exit(tag, EXIT_OK);
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
 * A wait of about a millisecond: CPU 0 sleeps until a PIT tick, an AP on
 * its own LAPIC timer (stat_nap, ap_nap).
 */
static void nap(struct wstat *s)
{
    stat_nap(s);
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
                                 uint64_t pattern)
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
                nap(s);
                now = rdtsc();
            } while (due > now + one_ms);
        } else if (now > due + max_debt) {
            sched_t0 = now;
            sched_k0 = k;
        }
    }
}

#define COMPUTE_BATCH   4096    /* iterations between two looks at the clock (~10 us) */

/*
 * A CPU loop that stores nothing: one iteration is one xorshift64 step of
 * a register (in asm, so the compiler can neither drop nor fold it, and
 * an iteration is the same instructions in every build); the counts stay
 * in registers, and the clock is read once per COMPUTE_BATCH iterations.
 * Its STAT lines give iterations per second, so a throttle that slows this
 * CPU shows, and one that leaves it alone too.
 */
static _Noreturn void compute_loop(struct wstat *s)
{
    uint64_t x = 0x9e3779b97f4a7c15ULL, iters = 0, period_iters = 0;

    for (;;) {
        uint64_t n = COMPUTE_BATCH, now;

        asm volatile("1:\n\t"
                     "mov %0, %%rdx\n\t"
                     "shl $13, %%rdx\n\t"
                     "xor %%rdx, %0\n\t"
                     "mov %0, %%rdx\n\t"
                     "shr $7, %%rdx\n\t"
                     "xor %%rdx, %0\n\t"
                     "mov %0, %%rdx\n\t"
                     "shl $17, %%rdx\n\t"
                     "xor %%rdx, %0\n\t"
                     "dec %1\n\t"
                     "jnz 1b"
                     : "+r"(x), "+r"(n) :: "rdx", "cc");
        iters += COMPUTE_BATCH;
        period_iters += COMPUTE_BATCH;
        now = rdtsc();
        if (now >= s->next_report) {
            stat_report_compute(s, now, iters, period_iters);
            period_iters = 0;
        }
        if (now >= s->deadline) {
            wl_exit(s->cpu, EXIT_OK);
        }
    }
}

/* Sweep chunk by chunk with a rest in between: the page-aging pattern. */
static _Noreturn void run_memuser(const struct cpu *c, struct wstat *s)
{
    uint64_t chunk = P.chunk_mb * (MiB / PAGE_SIZE), pos = 0, k = 0, i;

    if (chunk > c->pages) {
        chunk = c->pages;
    }
    for (;;) {
        for (i = 0; i < chunk; i++) {
            stat_tick(s, timed_write(s, page_addr(c->first + pos), ++k));
            if (++pos >= c->pages) {
                pos = 0;
            }
        }
        stat_idle_until(s, rdtsc() + ms_to_tsc(P.idle_ms));
    }
}

/*
 * READY for CPU @n. With one CPU its shape is the historical one; with a
 * workload per CPU, cpu=N follows mode= (harnesses look for "READY mode="),
 * a CPU without an area (compute) has no mem_mb/base/segments/end, and
 * rate/pattern (dirty) and how the CPU naps follow.
 */
static void print_ready(unsigned n, uint64_t fill_tsc)
{
    const struct cpu *c = &cpus[n];
    struct line l = { 0 };
    uint64_t run, segments = 0;

    ln_str(&l, "READY mode=");
    ln_str(&l, mode_names[c->mode]);
    if (smp) {
        ln_str(&l, " cpu=");
        ln_u64(&l, n);
    }
    if (c->pages) {
        ln_str(&l, " mem_mb=");
        ln_u64(&l, c->mem_mb);
        ln_str(&l, " base=");
        ln_hex(&l, page_addr(c->first));
    }
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
    if (c->pages) {
        for (uint64_t idx = c->first; idx < c->first + c->pages; idx += run) {
            page_run(idx, c->first + c->pages, &run);
            segments++;
        }
        ln_str(&l, " segments=");
        ln_u64(&l, segments);
        ln_str(&l, " end=");
        ln_hex(&l, page_addr(c->first + c->pages - 1) + PAGE_SIZE);
    }
    if (smp) {
        if (c->mode == MODE_DIRTY) {
            ln_str(&l, " rate=");
            ln_u64(&l, c->rate);
            ln_str(&l, " pattern=");
            ln_str(&l, pattern_names[c->pattern]);
        }
        ln_str(&l, n == 0 ? " nap=pit" : g_lapic_khz ? " nap=lapic" : " nap=spin");
        if (n && g_lapic_khz) {
            ln_str(&l, " lapic_khz=");
            ln_u64(&l, g_lapic_khz);
        }
    }
    ln_emit(&l);
}

/*
 * CPU @n's workload, on its own stack, with its own statistics. seconds=
 * and passes= are CPU 0's: the guest exits when CPU 0's workload is done
 * (its last STAT line out, as with one CPU), the APs' run until then. A
 * FAIL on any CPU ends the guest at once.
 */
static _Noreturn void run_cpu(unsigned n)
{
    const struct cpu *c = &cpus[n];
    struct wstat st;

    stat_start(&st, smp ? (int)n : -1, P.report_ms, n ? UINT64_MAX : deadline);
    switch (c->mode) {
    case MODE_VERIFY:
        run_verify(c, &st);
    case MODE_DIRTY:
        dirty_loop(&st, c->first, c->pages, c->rate, c->pattern);
    case MODE_MEMUSER:
        run_memuser(c, &st);
    case MODE_COMPUTE:
        compute_loop(&st);
    case MODE_UDPECHO:
    case MODE_UDPSTREAM:
        net_main(&st, c->mode == MODE_UDPSTREAM, c->rate);
    case MODE_VIRTIOBAD:
        vbad_main(&st);
    case MODE_DRAW:
        draw_main(&st, P.rate_given ? c->rate : 30);
    case MODE_VBEBAD:
        vbebad_main(&st);
    case MODE_BLKVERIFY:
        blk_verify_main(&st);
    case MODE_BLKHOSTILE:
        blk_hostile_main(&st);
    case MODE_BLKBENCH:
        blk_bench_main(&st);
    default:
        for (;;) {
            stat_idle_until(&st, UINT64_MAX);
        }
    }
}

/* An AP at CPL3: naps until CPU 0 laid out and filled the area, then runs its mode. */
_Noreturn void ap_user_main(unsigned n)
{
    while (!__atomic_load_n(&bsp_ready, __ATOMIC_ACQUIRE)) {
        ap_nap();
    }
    print_ready(n, g_fill_tsc);
    run_cpu(n);
}

/*
 * Each CPU's settings (KEYn, else KEY), and its share of the area: one
 * after another from WORK_BASE, CPU 0's first, for every CPU with a
 * workload that has memory (all but compute; with one CPU, every mode has
 * its area, as it always had). The CPUs with a workload must be those
 * boot.c started.
 */
static void layout_cpus(void)
{
    const uint64_t defaults[CK_KEYS] = { P.mode, P.mem_mb, P.rate, P.pattern };
    struct line l = { 0 };
    unsigned n, k;

    for (n = 1; n < MAX_CPUS; n++) {
        smp |= (cpus[n].given_mask >> CK_MODE) & 1;
    }
    for (n = 0; n < MAX_CPUS; n++) {
        struct cpu *c = &cpus[n];
        uint64_t v[CK_KEYS];

        for (k = 0; k < CK_KEYS; k++) {
            v[k] = c->given_mask & (1u << k) ? c->given[k] : defaults[k];
        }
        c->mode = v[CK_MODE];
        c->mem_mb = v[CK_MEM];
        c->rate = v[CK_RATE];
        c->pattern = v[CK_PATTERN];
        c->on = n == 0 || (c->given_mask & (1u << CK_MODE));
        if (n && c->on != !!(g_cpus_started & (1u << n))) {
            ln_str(&l, "FAIL cpu=");
            ln_u64(&l, n);
            ln_str(&l, " not-started");
            ln_emit(&l);
            wl_exit(-1, EXIT_SETUP);
        }
        /* One virtio-net device, one driver: the network modes are CPU 0's. */
        if (n && c->on && is_net_mode(c->mode)) {
            ln_str(&l, "FAIL cpu=");
            ln_u64(&l, n);
            ln_str(&l, " network modes run on cpu 0 only");
            ln_emit(&l);
            wl_exit(-1, EXIT_PARAM);
        }
        if (c->on && (!smp || c->mode != MODE_COMPUTE) && !is_net_mode(c->mode)) {
            c->first = area_pages;
            c->pages = c->mem_mb * (MiB / PAGE_SIZE);
            area_pages += c->pages;
        }
    }
}

_Noreturn void user_main(unsigned n)
{
    uint64_t t0;

    time_init();
    parse_cmdline();
    layout_cpus();
    build_area();
    t0 = rdtsc();
    fill_area((enum fill)P.fill);
    g_fill_tsc = rdtsc() - t0;
    /* A network mode says READY once its device is up. */
    if (!is_net_mode(cpus[n].mode)) {
        print_ready(n, g_fill_tsc);
    }
    deadline = P.seconds ? rdtsc() + ms_to_tsc(P.seconds * 1000) : UINT64_MAX;
    __atomic_store_n(&bsp_ready, 1, __ATOMIC_RELEASE);
    run_cpu(n);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mode=blkbench rw=read|write|randread|randwrite [bs=4096] [size_mb=N]
 * [depth=N] [iops=N]: fio-like device throughput on virtio-blk. Requests of
 * bs bytes over the first size_mb MiB of the disk (default: all of it),
 * depth of them in flight (blkverify's key, default 8), at iops a second
 * (blkverify's key; 0: as fast as the device takes them). Nothing is
 * verified (blkverify is the mode that checks data): every request's data
 * is one shared buffer, so a read's bytes are garbage and a write's are
 * whatever the last read left there.
 *
 * STAT each report_ms: iops, kib_s and mb_s (10^6 bytes) over the period,
 * lat_avg_us / lat_p99_us / lat_max_us of the requests completed in it
 * (submit to completion seen, so a host that stalls the vCPU counts), ios
 * since the start and inflight. Runs on CPU 0 beside modeN= workloads on
 * the other CPUs (a disk writer next to a dirtying CPU, say).
 */
#include "workload.h"
#include "virtio.h"
#include "vblk.h"

#define BB_MAX_BS       (64 * 1024)

enum rw { RW_READ, RW_WRITE, RW_RANDREAD, RW_RANDWRITE };
static const char *const rw_names[] = { "read", "write", "randread", "randwrite", 0 };

static struct {
    uint64_t rw, bs, size_mb;
} BBP = { .rw = RW_RANDREAD, .bs = 4096 };

/*
 * One buffer for every request in flight: the bytes are never looked at.
 * The device writes it (reads) while it reads it (writes): harmless here.
 */
static uint8_t bb_buf[BB_MAX_BS] __attribute__((section(".noinit"), aligned(4096)));

/* A run's state: blk_bench_main's stack, handed to the helpers. */
struct bench {
    uint64_t depth, iops;
    uint64_t blocks;            /* bs-sized blocks in the area */
    uint64_t next_block;        /* sequential modes: the next block */
    uint64_t rng;
    uint64_t t0[VBLK_MAX_SLOTS];        /* submit TSC; 0: slot free */
    uint64_t ios, period_ios, period_lat_tsc;
};

enum net_param blkbench_param(const char *k, size_t kn, const char *v, size_t vn)
{
    uint64_t x;

    if (mem_eq(k, kn, "rw")) {
        for (unsigned i = 0; rw_names[i]; i++) {
            if (mem_eq(v, vn, rw_names[i])) {
                BBP.rw = i;
                return NET_PARAM_OK;
            }
        }
        return NET_PARAM_BAD;
    }
    if (mem_eq(k, kn, "bs")) {
        /* Whole sectors, one descriptor of at most the shared buffer. */
        if (!parse_u64(v, vn, &x) || x < VBLK_SECTOR || x > BB_MAX_BS || x % VBLK_SECTOR) {
            return NET_PARAM_BAD;
        }
        BBP.bs = x;
        return NET_PARAM_OK;
    }
    if (mem_eq(k, kn, "size_mb")) {
        /* 2^30 MiB (an exbibyte) bounds the sector arithmetic below. */
        if (!parse_u64(v, vn, &x) || x < 1 || x > (1ULL << 30)) {
            return NET_PARAM_BAD;
        }
        BBP.size_mb = x;
        return NET_PARAM_OK;
    }
    return NET_PARAM_UNKNOWN;
}

static _Noreturn void bb_fail(struct wstat *s, const char *what, uint64_t a, uint64_t b,
                              enum exit_code code)
{
    struct line l = { 0 };

    ln_tag(&l, "FAIL", s->cpu);
    ln_str(&l, what);
    ln_key(&l, " a=", a);
    ln_key(&l, " b=", b);
    ln_emit(&l);
    wl_exit(s->cpu, code);
}

static void report(struct wstat *s, struct bench *b, uint64_t now)
{
    struct line l = { 0 };
    uint64_t us = tsc_to_us(now - s->period_start);
    uint64_t bytes = b->period_ios * BBP.bs;
    unsigned inflight = 0;

    for (unsigned i = 0; i < b->depth; i++) {
        inflight += b->t0[i] != 0;
    }
    ln_tag(&l, "STAT", s->cpu);
    ln_key(&l, "t_ms=", tsc_to_ms(now - s->start));
    ln_key(&l, " iops=", us ? b->period_ios * 1000000 / us : 0);
    ln_key(&l, " kib_s=", us ? bytes * 1000000 / 1024 / us : 0);
    ln_key(&l, " mb_s=", us ? bytes / us : 0);
    ln_key(&l, " lat_avg_us=",
           b->period_ios ? tsc_to_us(b->period_lat_tsc / b->period_ios) : 0);
    ln_key(&l, " lat_p99_us=", stat_p99_us(s));
    ln_key(&l, " lat_max_us=", tsc_to_us(s->max_tsc));
    ln_key(&l, " ios=", b->ios);
    ln_key(&l, " inflight=", inflight);
    ln_emit(&l);
    memset(s->hist, 0, sizeof(s->hist));
    s->period_writes = 0;
    s->period_slow = 0;
    s->max_tsc = 0;
    b->period_ios = 0;
    b->period_lat_tsc = 0;
    stat_next_period(s, now);
}

static void issue(struct bench *b, unsigned i)
{
    bool rnd = BBP.rw == RW_RANDREAD || BBP.rw == RW_RANDWRITE;
    bool wr = BBP.rw == RW_WRITE || BBP.rw == RW_RANDWRITE;
    uint64_t blk;

    if (rnd) {
        blk = xorshift(&b->rng) % b->blocks;
    } else {
        blk = b->next_block;
        b->next_block = blk + 1 < b->blocks ? blk + 1 : 0;
    }
    b->t0[i] = rdtsc() | 1;
    vblk_submit_buf(i, wr ? VBLK_T_OUT : VBLK_T_IN, blk * (BBP.bs / VBLK_SECTOR), bb_buf,
                    (uint32_t)BBP.bs);
}

/* Takes every completion; a FAIL for one that names no request of ours or is not OK. */
static void reap(struct wstat *s, struct bench *b, uint64_t now)
{
    uint16_t head;
    uint32_t len;
    uint8_t status;

    while (vblk_poll(&head, &len, &status)) {
        unsigned i = head / 3;

        if (head % 3 || i >= b->depth || !b->t0[i]) {
            bb_fail(s, "blkbench-bogus-completion", head, 0, EXIT_VERIFY);
        }
        if (status != VBLK_S_OK) {
            bb_fail(s, "blkbench-io-error", i, status, EXIT_VERIFY);
        }
        stat_write(s, now - b->t0[i]);
        b->period_lat_tsc += now - b->t0[i];
        b->t0[i] = 0;
        b->ios++;
        b->period_ios++;
    }
}

static void print_ready(struct bench *b)
{
    struct line l = { 0 };

    ln_str(&l, "READY mode=blkbench rw=");
    ln_str(&l, rw_names[BBP.rw]);
    ln_key(&l, " bs=", BBP.bs);
    ln_key(&l, " size_mb=", b->blocks * BBP.bs >> 20);
    ln_key(&l, " capacity=", g_vblk.capacity);
    ln_key(&l, " depth=", b->depth);
    ln_key(&l, " iops=", b->iops);
    ln_str(&l, " features=");
    ln_hex(&l, g_vblk.features);
    ln_emit(&l);
}

_Noreturn void blk_bench_main(struct wstat *s)
{
    /*
     * FLUSH negotiated, as Linux's driver does: the device's write cache is
     * on (virtio 1.x 5.2.6.2), so a write is not made durable one by one
     * (writethrough) but as fio in a Linux guest sees it. blkbench never flushes.
     */
    enum vnet_error err = vblk_setup(VBLK_F_FLUSH);
    struct line l = { 0 };
    struct bench b = { 0 };
    uint64_t next_issue, per_io, area;

    if (err != VNET_OK) {
        ln_tag(&l, "FAIL", s->cpu);
        ln_str(&l, "blk-setup error=");
        ln_str(&l, vnet_error_names[err]);
        ln_emit(&l);
        wl_exit(s->cpu, EXIT_SETUP);
    }
    blk_print_device();
    blk_depth_iops(&b.depth, &b.iops);
    /* capacity comes from the device: bounded before it is multiplied. */
    area = BBP.size_mb ? BBP.size_mb << 20
                       : (g_vblk.capacity < (1ULL << 50) ? g_vblk.capacity : 1ULL << 50) *
                         VBLK_SECTOR;
    b.blocks = area / BBP.bs;
    if (b.depth > g_vblk.slots || !b.blocks ||
        b.blocks * (BBP.bs / VBLK_SECTOR) > g_vblk.capacity) {
        ln_tag(&l, "FAIL", s->cpu);
        ln_str(&l, "blkbench-params: need bs <= size_mb <= capacity and depth <= slots");
        ln_key(&l, " capacity=", g_vblk.capacity);
        ln_key(&l, " slots=", g_vblk.slots);
        ln_emit(&l);
        wl_exit(s->cpu, EXIT_PARAM);
    }
    b.rng = rdtsc() | 1;
    print_ready(&b);
    stat_start(s, s->cpu, tsc_to_ms(s->period), s->deadline);
    per_io = b.iops ? g_tsc_khz * 1000 / b.iops : 0;
    next_issue = rdtsc();
    for (;;) {
        uint64_t now = rdtsc();
        bool issued = false, idle = true;

        reap(s, &b, now);
        for (unsigned i = 0; i < b.depth; i++) {
            if (b.t0[i]) {
                idle = false;
                continue;
            }
            if (per_io && now < next_issue) {
                break;
            }
            issue(&b, i);
            issued = true;
            idle = false;
            /* A backlog of more than a queue's worth is forgotten, not caught up in a burst. */
            next_issue += per_io;
            if (next_issue + per_io * b.depth < now) {
                next_issue = now;
            }
        }
        if (issued) {
            vblk_kick();
        }
        if (now >= s->next_report) {
            report(s, &b, now);
        }
        if (now >= s->deadline) {
            report(s, &b, now);
            wl_exit(s->cpu, EXIT_OK);
        }
        /* Nothing in flight and the next issue a while off: nap to the next tick. */
        if (idle && per_io && next_issue > now + ms_to_tsc(2)) {
            stat_nap(s);
        } else {
            asm volatile("pause");
        }
    }
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mode=blkverify [sectors=N] [iops=N] [depth=N]: writes numbered,
 * checksummed sectors over the disk (or its first N sectors) in sweeps,
 * reads each one back after its write completed, and re-reads random
 * earlier ones, with up to depth requests in flight (default 8) at iops
 * requests a second (0: as fast as it goes). The last acknowledged
 * generation of every sector is kept in RAM (it migrates with the guest),
 * and every read must return exactly it: a lost or torn write is a FAIL.
 *
 * Sector image (64 little-endian words): magic, sector number, generation,
 * 60 words derived from (sector, generation), and a checksum of the 63
 * before it (sector_sum). Write number g (from 1) goes to sector
 * (g - 1) % N, so from the STAT line's acked_gen=G (every write with a
 * generation up to G was acknowledged) the host knows, for every sector,
 * the last generation at most G that went there: the image must hold that
 * one or a later one (tests/functional/test-virtio-blk.py checks it).
 *
 * No two requests in flight touch one sector (a slot waits instead), so
 * what a read must return is known when it is issued.
 */
#include "workload.h"
#include "virtio.h"
#include "vblk.h"

#define MAX_SECTORS     65536           /* 32 MiB of disk: 256 KiB of table */
#define READBACK_RING   VBLK_MAX_SLOTS
#define REREAD_EVERY    4               /* one issue in four is a random re-read */

enum kind { K_FREE, K_WRITE, K_READ, K_FLUSH };

struct slot {
    enum kind kind;
    uint64_t sector;
    uint64_t gen;               /* a write's; a read's expected one (0: never written) */
    uint64_t t0;
};

static struct {
    uint64_t sectors, iops, depth;
} BP = { .depth = 8 };

/*
 * Last acknowledged generation per sector (0: never written); RAM, so it
 * migrates. 32 bits: four billion writes are days of this workload.
 */
static uint32_t acked[MAX_SECTORS] __attribute__((section(".noinit"), aligned(4096)));

static struct {
    struct slot slot[VBLK_MAX_SLOTS];
    uint64_t n;                 /* sectors in use */
    uint64_t next_gen;          /* the generation of the next write (from 1) */
    uint64_t readback[READBACK_RING];
    unsigned rb_head, rb_count;
    uint64_t issued, reads, writes, flushes, verified, max_lat, period_ios;
    uint64_t rng;
    bool want_flush;
} B;

enum net_param blk_param(const char *k, size_t kn, const char *v, size_t vn)
{
    uint64_t x;
    uint64_t *dst = mem_eq(k, kn, "sectors") ? &BP.sectors :
                    mem_eq(k, kn, "iops") ? &BP.iops :
                    mem_eq(k, kn, "depth") ? &BP.depth : NULL;

    if (!dst) {
        return NET_PARAM_UNKNOWN;
    }
    if (!parse_u64(v, vn, &x) || x > 1000000000 ||
        (dst == &BP.depth && (x < 1 || x > VBLK_MAX_SLOTS)) ||
        (dst == &BP.sectors && x > MAX_SECTORS)) {
        return NET_PARAM_BAD;
    }
    *dst = x;
    return NET_PARAM_OK;
}

/* blkbench takes the same depth= and iops= (one parser for the keys). */
void blk_depth_iops(uint64_t *depth, uint64_t *iops)
{
    *depth = BP.depth;
    *iops = BP.iops;
}

/* ---- the sector image ---- */

static uint64_t fill_word(uint64_t sector, uint64_t gen, unsigned i)
{
    uint64_t x = gen * 0x9e3779b97f4a7c15ULL ^ (sector + 1) * 0xc2b2ae3d27d4eb4fULL ^ i;

    return x ^ x >> 29;
}

static uint64_t sector_sum(const uint64_t *w)
{
    uint64_t s = 0;

    for (unsigned i = 0; i < VBLK_WORDS - 1; i++) {
        s += w[i] * (2 * i + 1);
    }
    return s;
}

static void sector_make(uint64_t *w, uint64_t sector, uint64_t gen)
{
    w[0] = VBLK_MAGIC;
    w[1] = sector;
    w[2] = gen;
    for (unsigned i = 3; i < VBLK_WORDS - 1; i++) {
        w[i] = fill_word(sector, gen, i);
    }
    w[VBLK_WORDS - 1] = sector_sum(w);
}

static bool all_zero(const uint64_t *w)
{
    for (unsigned i = 0; i < VBLK_WORDS; i++) {
        if (w[i]) {
            return false;
        }
    }
    return true;
}

/* ---- lines ---- */

static _Noreturn void fail(struct wstat *s, const char *what, uint64_t sector, uint64_t want,
                           uint64_t got)
{
    struct line l = { 0 };

    ln_tag(&l, "FAIL", s->cpu);
    ln_str(&l, what);
    ln_key(&l, " sector=", sector);
    ln_key(&l, " want_gen=", want);
    ln_key(&l, " got_gen=", got);
    ln_emit(&l);
    wl_exit(s->cpu, EXIT_VERIFY);
}

/* Every write with a generation up to this one was acknowledged. */
static uint64_t acked_gen(void)
{
    uint64_t g = B.next_gen - 1;

    for (unsigned i = 0; i < BP.depth; i++) {
        if (B.slot[i].kind == K_WRITE && B.slot[i].gen - 1 < g) {
            g = B.slot[i].gen - 1;
        }
    }
    return g;
}

static void report(struct wstat *s, uint64_t now)
{
    struct line l = { 0 };
    uint64_t us = tsc_to_us(now - s->period_start);
    unsigned inflight = 0;

    for (unsigned i = 0; i < BP.depth; i++) {
        inflight += B.slot[i].kind != K_FREE;
    }
    ln_tag(&l, "STAT", s->cpu);
    ln_key(&l, "t_ms=", tsc_to_ms(now - s->start));
    ln_key(&l, " iops=", us ? B.period_ios * 1000000 / us : 0);
    ln_key(&l, " reads=", B.reads);
    ln_key(&l, " writes=", B.writes);
    ln_key(&l, " flushes=", B.flushes);
    ln_key(&l, " verified=", B.verified);
    ln_key(&l, " max_lat_us=", tsc_to_us(B.max_lat));
    ln_key(&l, " inflight=", inflight);
    ln_key(&l, " acked_gen=", acked_gen());
    ln_key(&l, " sectors=", B.n);
    ln_emit(&l);
    B.period_ios = 0;
    B.max_lat = 0;
    stat_next_period(s, now);
}

/* ---- requests ---- */

static bool sector_busy(uint64_t sector)
{
    for (unsigned i = 0; i < BP.depth; i++) {
        if (B.slot[i].kind != K_FREE && B.slot[i].kind != K_FLUSH &&
            B.slot[i].sector == sector) {
            return true;
        }
    }
    return false;
}

static void issue(unsigned i, enum kind kind, uint64_t sector, uint64_t gen)
{
    B.slot[i] = (struct slot) { kind, sector, gen, rdtsc() };
    if (kind == K_WRITE) {
        sector_make((uint64_t *)vblk_buf(i), sector, gen);
        vblk_submit(i, VBLK_T_OUT, sector, VBLK_SECTOR);
    } else if (kind == K_READ) {
        memset(vblk_buf(i), 0xa5, VBLK_SECTOR);
        vblk_submit(i, VBLK_T_IN, sector, VBLK_SECTOR);
    } else {
        vblk_submit(i, VBLK_T_FLUSH, 0, 0);
    }
    B.issued++;
}

/* Picks and issues the next request in free slot @i; false if none may go now. */
static bool issue_next(unsigned i)
{
    uint64_t written = B.next_gen - 1 < B.n ? B.next_gen - 1 : B.n;
    uint64_t w = (B.next_gen - 1) % B.n;

    if (B.want_flush) {
        B.want_flush = false;
        issue(i, K_FLUSH, 0, 0);
        return true;
    }
    if (B.rb_count && !sector_busy(B.readback[B.rb_head])) {
        uint64_t sec = B.readback[B.rb_head];

        B.rb_head = (B.rb_head + 1) % READBACK_RING;
        B.rb_count--;
        issue(i, K_READ, sec, acked[sec]);
        return true;
    }
    if (written && B.issued % REREAD_EVERY == REREAD_EVERY - 1) {
        uint64_t r = xorshift(&B.rng) % written;

        if (!sector_busy(r)) {
            issue(i, K_READ, r, acked[r]);
            return true;
        }
    }
    if (sector_busy(w)) {
        return false;
    }
    issue(i, K_WRITE, w, B.next_gen++);
    return true;
}

static void check_read(struct wstat *s, const struct slot *sl, const uint64_t *w)
{
    if (!sl->gen) {
        /* Never written by this boot: whatever an earlier run left is fine. */
        return;
    }
    if (all_zero(w)) {
        fail(s, "blk-lost-write", sl->sector, sl->gen, 0);
    }
    if (w[0] != VBLK_MAGIC || w[1] != sl->sector || w[VBLK_WORDS - 1] != sector_sum(w)) {
        fail(s, "blk-torn-or-misplaced", sl->sector, sl->gen, w[2]);
    }
    if (w[2] != sl->gen) {
        fail(s, w[2] < sl->gen ? "blk-lost-write" : "blk-future-write", sl->sector, sl->gen,
             w[2]);
    }
    B.verified++;
}

/* Takes every completion; a FAIL for a status that is not OK or a read that lies. */
static void reap(struct wstat *s, uint64_t now)
{
    uint16_t head;
    uint32_t len;
    uint8_t status;

    while (vblk_poll(&head, &len, &status)) {
        unsigned i = head / 3;
        struct slot *sl = &B.slot[i];

        if (head % 3 || i >= BP.depth || sl->kind == K_FREE) {
            fail(s, "blk-bogus-completion", head, 0, 0);
        }
        if (status != VBLK_S_OK) {
            fail(s, "blk-io-error", sl->sector, sl->gen, status);
        }
        if (now - sl->t0 > B.max_lat) {
            B.max_lat = now - sl->t0;
        }
        B.period_ios++;
        if (sl->kind == K_WRITE) {
            acked[sl->sector] = (uint32_t)sl->gen;
            B.writes++;
            B.readback[(B.rb_head + B.rb_count) % READBACK_RING] = sl->sector;
            B.rb_count++;
        } else if (sl->kind == K_READ) {
            B.reads++;
            check_read(s, sl, (const uint64_t *)vblk_buf(i));
        } else {
            B.flushes++;
        }
        sl->kind = K_FREE;
    }
}

static void print_ready(struct wstat *s)
{
    struct line l = { 0 };

    ln_str(&l, "READY mode=blkverify");
    ln_key(&l, " sectors=", B.n);
    ln_key(&l, " capacity=", g_vblk.capacity);
    ln_key(&l, " depth=", BP.depth);
    ln_key(&l, " iops=", BP.iops);
    ln_str(&l, " features=");
    ln_hex(&l, g_vblk.features);
    ln_str(&l, " transport=");
    ln_hex(&l, g_vblk.base);
    ln_emit(&l);
    (void)s;
}

/* One line a tester compares with QEMU's: what the device offers and its config space. */
void blk_print_device(void)
{
    static const char hex[] = "0123456789abcdef";
    struct line l = { 0 };

    ln_str(&l, "BLKDEV offered=");
    ln_hex(&l, g_vblk.offered);
    ln_key(&l, " num_max=", g_vblk.num_max);
    ln_str(&l, " config=");
    for (unsigned i = 0; i < VBLK_CONFIG_BYTES; i++) {
        char c[2] = { hex[g_vblk.config[i] >> 4], hex[g_vblk.config[i] & 15] };

        ln_mem(&l, c, 2);
    }
    ln_emit(&l);
}

_Noreturn void blk_verify_main(struct wstat *s)
{
    enum vnet_error err = vblk_setup(VBLK_F_FLUSH);
    struct line l = { 0 };
    uint64_t next_issue, per_io;

    if (err != VNET_OK) {
        ln_tag(&l, "FAIL", s->cpu);
        ln_str(&l, "blk-setup error=");
        ln_str(&l, vnet_error_names[err]);
        ln_emit(&l);
        wl_exit(s->cpu, EXIT_SETUP);
    }
    blk_print_device();
    B.n = BP.sectors ? BP.sectors : g_vblk.capacity;
    B.n = B.n < MAX_SECTORS ? B.n : MAX_SECTORS;
    if (BP.depth > g_vblk.slots || B.n < 2 * BP.depth || B.n > g_vblk.capacity) {
        ln_tag(&l, "FAIL", s->cpu);
        ln_str(&l, "blk-params: need 2*depth <= sectors <= capacity and depth <= slots");
        ln_emit(&l);
        wl_exit(s->cpu, EXIT_PARAM);
    }
    memset(acked, 0, B.n * sizeof(acked[0]));
    B.next_gen = 1;
    B.rng = rdtsc() | 1;
    print_ready(s);
    stat_start(s, s->cpu, tsc_to_ms(s->period), s->deadline);
    per_io = BP.iops ? g_tsc_khz * 1000 / BP.iops : 0;
    next_issue = rdtsc();
    for (;;) {
        uint64_t now = rdtsc();
        bool issued = false, idle = true;

        reap(s, now);
        for (unsigned i = 0; i < BP.depth; i++) {
            if (B.slot[i].kind != K_FREE) {
                idle = false;
                continue;
            }
            if (per_io && now < next_issue) {
                break;
            }
            if (!issue_next(i)) {
                break;
            }
            issued = true;
            idle = false;
            /* A backlog of more than a queue's worth is forgotten, not caught up in a burst. */
            next_issue += per_io;
            if (next_issue + per_io * BP.depth < now) {
                next_issue = now;
            }
        }
        if (issued) {
            vblk_kick();
        }
        if (now >= s->next_report) {
            B.want_flush = !!(g_vblk.features & VBLK_F_FLUSH);
            report(s, now);
        }
        if (now >= s->deadline) {
            report(s, now);
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

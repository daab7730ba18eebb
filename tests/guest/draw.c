/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mode=draw: set a Bochs VBE mode (ports 0x1ce/0x1cf, which CPL3 cannot
 * reach under kvm-pvm, so through SVC_CALL) and draw frames at CPL3 into
 * the linear framebuffer (isa-vga's at 0xe0000000, or a PCI VGA's BAR 0,
 * so that QEMU's -M pc -vga std can be measured too), which the 0-4 GiB
 * identity map already covers with the user bit set.
 *
 * Frame n (from 0) is, for every pixel (x, y), the colour
 *     r = (x + 4n) & 255, g = (y + 2n) & 255, b = (x + y + n) & 255
 * except the first 32 pixels of line 0, the frame counter: pixel i is white
 * (255, 255, 255) if bit i of n is set, black otherwise. Each pixel is
 * stored in the mode's format: 32 bpp x8r8g8b8, 24 bpp b, g, r bytes,
 * 16 bpp r5g6b5 (the top bits of each channel), 8 bpp the 3-3-2 index
 * (r & 0xe0) | (g >> 3 & 0x1c) | (b >> 6) into a palette programmed so
 * that index to mean that colour's top bits.
 *
 * lines=K draws only K lines of each frame, lines nK to nK + K - 1 (modulo
 * the height), and the counter: each page is then written in bursts far
 * apart, so a dirty bit lost by the display or the migration shows as a
 * stale line long after (test-vga-draw's sparse case).
 */
#include "workload.h"
#include "vbe.h"

#define PTE_PWT         0x008ULL
#define PTE_PCD         0x010ULL
#define COUNTER_BITS    32

extern uint64_t pd[][512];

uint64_t vbe_lfb = LFB_ADDR;

#define PCI_CONFIG_ADDR 0xcf8
#define PCI_CONFIG_DATA 0xcfc
#define PCI_BOCHS_VGA   0x11111234u     /* device << 16 | vendor */

static uint32_t pci_config_read(unsigned dev, unsigned reg)
{
    outl(PCI_CONFIG_ADDR, 0x80000000u | dev << 11 | reg);
    return inl(PCI_CONFIG_DATA);
}

/* Bus 0 only: that is where -vga std sits. No PCI (microvm) reads all-ones. */
void vbe_find_lfb(void)
{
    for (unsigned dev = 0; dev < 32; dev++) {
        if (pci_config_read(dev, 0) == PCI_BOCHS_VGA) {
            uint32_t bar = pci_config_read(dev, 0x10) & ~0xfu;

            if (bar) {
                vbe_lfb = bar;
            }
            return;
        }
    }
}

static struct {
    uint64_t width, height, bpp, frames;
    uint64_t lines;             /* lines drawn per frame, 0: all */
} DP = { 640, 480, 32, 0, 0 };

struct vbe_setup {
    uint32_t width, height, bpp;        /* in */
    uint32_t id, vram;                  /* out: ID register, VRAM bytes */
    uint32_t xres, yres, got_bpp;       /* out: the mode read back */
};

/*
 * CPL0: probe, set the mode, and make the LFB write-back (boot.c made the
 * 3-4 GiB hole uncached; VRAM is RAM, and uncached stores would make
 * every frame slow).
 */
static uint64_t vbe_setup_cpl0(void *arg)
{
    struct vbe_setup *v = arg;
    uint64_t i;

    v->id = vbe_read(VBE_ID);
    if (v->id < VBE_ID_MIN || v->id > VBE_ID_MAX) {
        return 1;
    }
    v->vram = (uint32_t)vbe_read(VBE_VIDEO_MEMORY_64K) << 16;
    if ((uint64_t)v->width * v->height * (v->bpp / 8) > v->vram) {
        return 2;
    }
    vbe_find_lfb();
    vbe_write(VBE_ENABLE, 0);
    vbe_write(VBE_XRES, (uint16_t)v->width);
    vbe_write(VBE_YRES, (uint16_t)v->height);
    vbe_write(VBE_BPP, (uint16_t)v->bpp);
    vbe_write(VBE_ENABLE, VBE_ENABLED | VBE_LFB_ENABLED);
    v->xres = vbe_read(VBE_XRES);
    v->yres = vbe_read(VBE_YRES);
    v->got_bpp = vbe_read(VBE_BPP);
    if (v->bpp == 8) {
        /* DAC: 6 bits per channel; index i holds its 3-3-2 colour's top bits. */
        outb(0x3c8, 0);
        for (i = 0; i < 256; i++) {
            outb(0x3c9, (uint8_t)((i & 0xe0) >> 2));
            outb(0x3c9, (uint8_t)((i & 0x1c) << 1));
            outb(0x3c9, (uint8_t)((i & 0x03) << 4));
        }
    }
    return vbe_lfb_writeback(v->vram) ? 0 : 3;
}

bool vbe_lfb_writeback(uint64_t vram)
{
    uint64_t pages = (vram + (2 * MiB - 1)) / (2 * MiB);

    if (vbe_lfb < 3 * GiB || vbe_lfb % (2 * MiB) || vbe_lfb + pages * 2 * MiB > 4 * GiB) {
        return false;
    }
    for (uint64_t i = 0; i < pages; i++) {
        pd[3][(vbe_lfb - 3 * GiB) / (2 * MiB) + i] &= ~(PTE_PCD | PTE_PWT);
    }
    asm volatile("mov %%cr3, %%rax; mov %%rax, %%cr3" ::: "rax", "memory");
    return true;
}

enum net_param draw_param(const char *k, size_t kn, const char *v, size_t vn)
{
    uint64_t x;

    if (mem_eq(k, kn, "width") || mem_eq(k, kn, "height")) {
        if (!parse_u64(v, vn, &x) || x < 8 || x > 4096) {
            return NET_PARAM_BAD;
        }
        *(k[0] == 'w' ? &DP.width : &DP.height) = x;
        return NET_PARAM_OK;
    }
    if (mem_eq(k, kn, "bpp")) {
        if (!parse_u64(v, vn, &x) || (x != 8 && x != 16 && x != 24 && x != 32)) {
            return NET_PARAM_BAD;
        }
        DP.bpp = x;
        return NET_PARAM_OK;
    }
    if (mem_eq(k, kn, "lines")) {
        if (!parse_u64(v, vn, &x) || x > 4096) {
            return NET_PARAM_BAD;
        }
        DP.lines = x;
        return NET_PARAM_OK;
    }
    if (mem_eq(k, kn, "frames")) {
        if (!parse_u64(v, vn, &x)) {
            return NET_PARAM_BAD;
        }
        DP.frames = x;
        return NET_PARAM_OK;
    }
    return NET_PARAM_UNKNOWN;
}

static inline uint32_t pack(uint32_t r, uint32_t g, uint32_t b, unsigned bpp)
{
    switch (bpp) {
    case 32:
    case 24:
        return r << 16 | g << 8 | b;
    case 16:
        return (r >> 3) << 11 | (g >> 2) << 5 | b >> 3;
    default:
        return (r & 0xe0) | (g >> 3 & 0x1c) | b >> 6;
    }
}

static inline void put(uint8_t *p, uint32_t v, unsigned bpp)
{
    switch (bpp) {
    case 32:
        *(uint32_t *)p = v;
        break;
    case 24:
        p[0] = (uint8_t)v;
        p[1] = (uint8_t)(v >> 8);
        p[2] = (uint8_t)(v >> 16);
        break;
    case 16:
        *(uint16_t *)p = (uint16_t)v;
        break;
    default:
        *p = (uint8_t)v;
    }
}

/* Line @y of frame @n (the counter's pixels too, on line 0). */
static void draw_line(uint64_t n, unsigned y, unsigned w, unsigned bpp)
{
    unsigned bytes = bpp / 8, x = 0;
    uint8_t *p = (uint8_t *)vbe_lfb + (size_t)y * w * bytes;
    uint32_t white = pack(255, 255, 255, bpp);

    if (y == 0) {
        for (; x < COUNTER_BITS && x < w; x++, p += bytes) {
            put(p, (n >> x) & 1 ? white : 0, bpp);
        }
    }
    for (; x < w; x++, p += bytes) {
        put(p, pack((x + 4 * n) & 255, (y + 2 * n) & 255, (x + y + n) & 255, bpp), bpp);
    }
}

/* Frame @n: every line, or with lines=K only K of them, the next K each frame. */
static void draw_frame(uint64_t n, unsigned w, unsigned h, unsigned bpp)
{
    uint8_t *counter = (uint8_t *)vbe_lfb;
    uint32_t white = pack(255, 255, 255, bpp);

    if (!DP.lines) {
        for (unsigned y = 0; y < h; y++) {
            draw_line(n, y, w, bpp);
        }
        return;
    }
    for (uint64_t j = 0; j < DP.lines; j++) {
        draw_line(n, (unsigned)((n * DP.lines + j) % h), w, bpp);
    }
    for (unsigned x = 0; x < COUNTER_BITS && x < w; x++, counter += bpp / 8) {
        put(counter, (n >> x) & 1 ? white : 0, bpp);
    }
}

static void draw_report(struct wstat *s, uint64_t now, uint64_t frames, uint64_t period_frames)
{
    struct line l = { 0 };
    uint64_t us = tsc_to_us(now - s->period_start);

    ln_tag(&l, "STAT", s->cpu);
    ln_str(&l, "t_ms=");
    ln_u64(&l, tsc_to_ms(now - s->start));
    ln_str(&l, " frames=");
    ln_u64(&l, period_frames);
    ln_str(&l, " fps=");
    ln_tenths(&l, us ? period_frames * 10000000 / us : 0);
    ln_str(&l, " total_frames=");
    ln_u64(&l, frames);
    ln_emit(&l);
    stat_next_period(s, now);
}

_Noreturn void draw_main(struct wstat *s, uint64_t fps)
{
    struct vbe_setup v = { .width = (uint32_t)DP.width, .height = (uint32_t)DP.height,
                           .bpp = (uint32_t)DP.bpp };
    struct line l = { 0 };
    uint64_t r = svc_call(vbe_setup_cpl0, &v), frames = 0, period_frames = 0;
    uint64_t period = fps ? ms_to_tsc(1000) / fps : 0, next = rdtsc(), t0;

    if (r == 1) {
        ln_str(&l, "FAIL no-display vbe_id=");
        ln_hex(&l, v.id);
        ln_emit(&l);
        wl_exit(s->cpu, EXIT_SETUP);
    }
    if (r == 3) {
        ln_str(&l, "FAIL lfb-unmapped lfb=");
        ln_hex(&l, vbe_lfb);
        ln_emit(&l);
        wl_exit(s->cpu, EXIT_SETUP);
    }
    if (r == 2 || v.xres != v.width || v.yres != v.height || v.got_bpp != v.bpp) {
        ln_str(&l, "FAIL mode-refused vram=");
        ln_u64(&l, v.vram);
        ln_str(&l, " xres=");
        ln_u64(&l, v.xres);
        ln_str(&l, " yres=");
        ln_u64(&l, v.yres);
        ln_str(&l, " bpp=");
        ln_u64(&l, v.got_bpp);
        ln_emit(&l);
        wl_exit(s->cpu, EXIT_PARAM);
    }
    ln_str(&l, "READY mode=draw width=");
    ln_u64(&l, v.width);
    ln_str(&l, " height=");
    ln_u64(&l, v.height);
    ln_str(&l, " bpp=");
    ln_u64(&l, v.bpp);
    ln_str(&l, " rate=");
    ln_u64(&l, fps);
    ln_str(&l, " frames=");
    ln_u64(&l, DP.frames);
    ln_str(&l, " lines=");
    ln_u64(&l, DP.lines);
    ln_str(&l, " vbe_id=");
    ln_hex(&l, v.id);
    ln_str(&l, " lfb=");
    ln_hex(&l, vbe_lfb);
    ln_str(&l, " vram=");
    ln_u64(&l, v.vram);
    ln_str(&l, " tsc_khz=");
    ln_u64(&l, g_tsc_khz);
    ln_emit(&l);

    s->next_report = rdtsc() + s->period;
    s->period_start = rdtsc();
    for (;;) {
        uint64_t now;

        if (!DP.frames || frames < DP.frames) {
            t0 = rdtsc();
            draw_frame(frames, v.width, v.height, v.bpp);
            frames++;
            period_frames++;
            if (frames == DP.frames) {
                l.n = 0;
                ln_str(&l, "DRAWN frames=");
                ln_u64(&l, frames);
                ln_str(&l, " last=");
                ln_u64(&l, frames - 1);
                ln_str(&l, " frame_us=");
                ln_u64(&l, tsc_to_us(rdtsc() - t0));
                ln_emit(&l);
            }
        }
        now = rdtsc();
        if (now >= s->next_report) {
            draw_report(s, now, frames, period_frames);
            period_frames = 0;
        }
        if (now >= s->deadline) {
            wl_exit(s->cpu, EXIT_OK);
        }
        if (DP.frames && frames >= DP.frames) {
            stat_nap(s);
            continue;
        }
        if (period) {
            next += period;
            if (next < now) {
                next = now;     /* behind: no burst to catch up */
            }
            while (rdtsc() < next) {
                stat_nap(s);
            }
        }
    }
}

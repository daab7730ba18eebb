/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mode=vbebad case=NAME: a display driver that programs Bochs VBE with
 * nonsense (resolutions past VRAM and past the interface's maxima, unknown
 * depths, offsets and virtual widths beyond anything, registers that do
 * not exist) and reads back what the device made of it. The device must
 * refuse or clamp (hw/display/vbe.c: a refused depth keeps the old one;
 * sizes and offsets are cut until the visible area fits in VRAM); the
 * firmware checks from the registers alone that the area it would show
 * lies inside VRAM, fills exactly that area with 0xff bytes (white at
 * 32 bpp) at CPL3, and says so:
 *
 *   VBE case=NAME xres= yres= bpp= vwidth= vheight= xoff= yoff= bank=
 *       enable= vram= kept=0|1 inside=0|1
 *   DRAWN case=NAME bytes=N
 *
 * kept: every refused write left the register as it was (the bpp and index
 * cases). A screendump of the paused guest is then the clamped mode's
 * size and white all over: the display reads from where the registers
 * say, nothing outside VRAM (tests/functional/test-vga-hostile.c).
 */
#include "workload.h"
#include "vbe.h"

#define BPP_DEFAULT     32

/* The registers after a case, read back at CPL0. */
struct vbe_regs {
    uint32_t xres, yres, bpp, vwidth, vheight, xoff, yoff, bank, enable, vram;
    uint32_t kept;
};

struct vbebad_case {
    const char *name;
    void (*program)(struct vbe_regs *r);        /* at CPL0 */
};

static int the_case = -1;

static void mode_set(uint16_t xres, uint16_t yres, uint16_t bpp)
{
    vbe_write(VBE_ENABLE, 0);
    vbe_write(VBE_XRES, xres);
    vbe_write(VBE_YRES, yres);
    vbe_write(VBE_BPP, bpp);
    vbe_write(VBE_ENABLE, VBE_ENABLED | VBE_LFB_ENABLED);
}

/* Past the interface's 16000 x 12000 and past VRAM: cut to what fits. */
static void program_huge(struct vbe_regs *r)
{
    (void)r;
    mode_set(0xffff, 0xffff, BPP_DEFAULT);
}

/* Depths the device does not have: each write dropped, 32 bpp stays. */
static void program_bpp(struct vbe_regs *r)
{
    static const uint16_t bad[] = { 0, 1, 4, 7, 12, 31, 33, 64, 0x8020, 0xffff };

    mode_set(640, 480, BPP_DEFAULT);
    r->kept = 1;
    for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        vbe_write(VBE_BPP, bad[i]);
        r->kept &= vbe_read(VBE_BPP) == BPP_DEFAULT;
    }
}

/* A virtual width and offsets past everything: the visible area pulled back into VRAM. */
static void program_offsets(struct vbe_regs *r)
{
    (void)r;
    mode_set(640, 480, BPP_DEFAULT);
    vbe_write(VBE_VIRT_WIDTH, 0xffff);
    vbe_write(VBE_X_OFFSET, 0xffff);
    vbe_write(VBE_Y_OFFSET, 0xffff);
}

/*
 * A y offset within the virtual height whose area would run past VRAM's end
 * (4000 + 768 lines of 4 KiB > 16 MiB): dropped; then an x offset that fits.
 */
static void program_offset_edge(struct vbe_regs *r)
{
    (void)r;
    mode_set(1024, 768, BPP_DEFAULT);
    vbe_write(VBE_Y_OFFSET, 4000);
    vbe_write(VBE_X_OFFSET, 1000);
}

/* No size at all: the smallest mode. */
static void program_zero(struct vbe_regs *r)
{
    (void)r;
    mode_set(0, 0, BPP_DEFAULT);
}

/* Enabled small, then grown past VRAM while enabled (each write re-checked). */
static void program_grow(struct vbe_regs *r)
{
    (void)r;
    mode_set(64, 64, BPP_DEFAULT);
    vbe_write(VBE_XRES, 0xffff);
    vbe_write(VBE_YRES, 0xffff);
    vbe_write(VBE_BPP, 8);
    vbe_write(VBE_BPP, BPP_DEFAULT);
}

/* Registers that do not exist or are read-only, a bank past VRAM, a foreign ID. */
static void program_index(struct vbe_regs *r)
{
    static const uint16_t bad_index[] = { VBE_VIRT_HEIGHT, VBE_VIDEO_MEMORY_64K, 0xb, 0x1234,
                                          0xffff };
    uint16_t id = vbe_read(VBE_ID), vmem = vbe_read(VBE_VIDEO_MEMORY_64K);

    mode_set(640, 480, BPP_DEFAULT);
    for (unsigned i = 0; i < sizeof(bad_index) / sizeof(bad_index[0]); i++) {
        vbe_write(bad_index[i], 0xffff);
    }
    vbe_write(VBE_ID, 0x1234);
    vbe_write(VBE_BANK, 0xffff);
    r->kept = vbe_read(VBE_ID) == id && vbe_read(VBE_VIDEO_MEMORY_64K) == vmem &&
              vbe_read(0x1234) == 0 && vbe_read(0xffff) == 0 &&
              vbe_read(VBE_XRES) == 640 && vbe_read(VBE_YRES) == 480;
}

static const struct vbebad_case cases[] = {
    { "huge", program_huge },
    { "bpp", program_bpp },
    { "offsets", program_offsets },
    { "offset-edge", program_offset_edge },
    { "zero", program_zero },
    { "grow", program_grow },
    { "index", program_index },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

enum net_param vbebad_param(const char *k, size_t kn, const char *v, size_t vn)
{
    if (!mem_eq(k, kn, "case")) {
        return NET_PARAM_UNKNOWN;
    }
    for (unsigned i = 0; i < NCASES; i++) {
        if (mem_eq(v, vn, cases[i].name)) {
            the_case = (int)i;
            return NET_PARAM_OK;
        }
    }
    return NET_PARAM_BAD;
}

static uint64_t vbebad_program_cpl0(void *arg)
{
    struct vbe_regs *r = arg;
    uint32_t id = vbe_read(VBE_ID);

    if (id < VBE_ID_MIN || id > VBE_ID_MAX) {
        return 1;
    }
    r->vram = (uint32_t)vbe_read(VBE_VIDEO_MEMORY_64K) << 16;
    cases[the_case].program(r);
    r->xres = vbe_read(VBE_XRES);
    r->yres = vbe_read(VBE_YRES);
    r->bpp = vbe_read(VBE_BPP);
    r->vwidth = vbe_read(VBE_VIRT_WIDTH);
    r->vheight = vbe_read(VBE_VIRT_HEIGHT);
    r->xoff = vbe_read(VBE_X_OFFSET);
    r->yoff = vbe_read(VBE_Y_OFFSET);
    r->bank = vbe_read(VBE_BANK);
    r->enable = vbe_read(VBE_ENABLE);
    vbe_find_lfb();
    return vbe_lfb_writeback(r->vram) ? 0 : 3;
}

static uint64_t bytes_per_pixel(uint32_t bpp)
{
    return bpp == 15 ? 2 : bpp / 8;
}

/* The visible area from the registers alone lies inside VRAM. */
static bool area_inside(const struct vbe_regs *r)
{
    uint64_t bpp = bytes_per_pixel(r->bpp), line = r->vwidth * bpp;
    uint64_t start = r->yoff * line + r->xoff * bpp;

    return (r->enable & VBE_ENABLED) && bpp && r->xres && r->yres &&
           r->xres * bpp <= line && start + (r->yres - 1) * line + r->xres * bpp <= r->vram;
}

/* CPL3: 0xff into exactly the visible area; the bytes written. */
static uint64_t fill_visible(const struct vbe_regs *r)
{
    uint64_t bpp = bytes_per_pixel(r->bpp), line = r->vwidth * bpp;
    uint8_t *p = (uint8_t *)vbe_lfb + r->yoff * line + r->xoff * bpp;

    for (uint32_t y = 0; y < r->yres; y++, p += line) {
        uint64_t *q = (uint64_t *)p;
        uint64_t n = r->xres * bpp, i = 0;

        /* 8 bytes at a time where aligned: a 16 MiB area in a few ms. */
        for (; !((uintptr_t)(p + i) & 7) && i + 8 <= n; i += 8) {
            q[i / 8] = ~0ULL;
        }
        for (; i < n; i++) {
            p[i] = 0xff;
        }
    }
    return (uint64_t)r->yres * r->xres * bpp;
}

static void ln_kv(struct line *l, const char *key, uint64_t v)
{
    ln_str(l, key);
    ln_u64(l, v);
}

_Noreturn void vbebad_main(struct wstat *s)
{
    struct vbe_regs r = { 0 };
    struct line l = { 0 };
    bool inside;

    if (the_case < 0) {
        ln_str(&l, "FAIL vbebad reason=no-case (case=NAME)");
        ln_emit(&l);
        wl_exit(s->cpu, EXIT_PARAM);
    }
    if (svc_call(vbebad_program_cpl0, &r)) {
        ln_str(&l, "FAIL no-display case=");
        ln_str(&l, cases[the_case].name);
        ln_emit(&l);
        wl_exit(s->cpu, EXIT_SETUP);
    }
    inside = area_inside(&r);
    ln_str(&l, "VBE case=");
    ln_str(&l, cases[the_case].name);
    ln_kv(&l, " xres=", r.xres);
    ln_kv(&l, " yres=", r.yres);
    ln_kv(&l, " bpp=", r.bpp);
    ln_kv(&l, " vwidth=", r.vwidth);
    ln_kv(&l, " vheight=", r.vheight);
    ln_kv(&l, " xoff=", r.xoff);
    ln_kv(&l, " yoff=", r.yoff);
    ln_kv(&l, " bank=", r.bank);
    ln_str(&l, " enable=");
    ln_hex(&l, r.enable);
    ln_kv(&l, " vram=", r.vram);
    ln_kv(&l, " kept=", r.kept);
    ln_kv(&l, " inside=", inside);
    ln_emit(&l);
    if (!inside) {
        /* Writing it would reach past VRAM: the device let a bad mode through. */
        wl_exit(s->cpu, EXIT_VERIFY);
    }
    l.n = 0;
    ln_str(&l, "DRAWN case=");
    ln_str(&l, cases[the_case].name);
    ln_kv(&l, " bytes=", fill_visible(&r));
    ln_emit(&l);
    for (;;) {
        stat_idle_until(s, UINT64_MAX);
    }
}

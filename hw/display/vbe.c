/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Bochs VBE registers and the VGA DAC: what the guest may set, and the
 * clamping that keeps every enabled mode inside VRAM. The rules follow
 * QEMU's vbe_fixup_regs() (clamp rather than refuse: the DISPI interface
 * has no way to report an error), except that an unsupported bpp write is
 * dropped (QEMU turns it into 8; we have no planar 4 bpp either).
 */
#include "qemu/osdep.h"
#include "hw/display/vbe.h"

bool vbe_bpp_supported(uint32_t bpp)
{
    return bpp == 8 || bpp == 15 || bpp == 16 || bpp == 24 || bpp == 32;
}

uint32_t vbe_bytes_per_pixel(uint32_t bpp)
{
    return bpp == 15 ? 2 : bpp / 8;
}

static bool vbe_enabled(const VBEState *s)
{
    return s->regs[VBE_DISPI_INDEX_ENABLE] & VBE_DISPI_ENABLED;
}

void vbe_reset_regs(VBEState *s)
{
    s->index = 0;
    memset(s->regs, 0, sizeof(s->regs));
    s->regs[VBE_DISPI_INDEX_ID] = VBE_DISPI_ID5;
    s->regs[VBE_DISPI_INDEX_BPP] = 8;
    s->line_offset = 0;
    s->start = 0;
    s->generation++;
}

void vbe_reset(VBEState *s, uint64_t vram_size)
{
    /* Never repeat a generation: a display could take a new mode for one it has drawn. */
    uint32_t generation = s->generation;

    memset(s, 0, sizeof(*s));
    s->generation = generation;
    s->vram_size = vram_size;
    vbe_reset_regs(s);
}

uint16_t vbe_read_index(const VBEState *s)
{
    return s->index;
}

void vbe_write_index(VBEState *s, uint16_t val)
{
    s->index = val;
}

uint16_t vbe_read_data(const VBEState *s)
{
    if (s->index < VBE_DISPI_INDEX_NB) {
        if (s->regs[VBE_DISPI_INDEX_ENABLE] & VBE_DISPI_GETCAPS) {
            switch (s->index) {
            case VBE_DISPI_INDEX_XRES:
                return VBE_DISPI_MAX_XRES;
            case VBE_DISPI_INDEX_YRES:
                return VBE_DISPI_MAX_YRES;
            case VBE_DISPI_INDEX_BPP:
                return VBE_DISPI_MAX_BPP;
            }
        }
        return s->regs[s->index];
    }
    if (s->index == VBE_DISPI_INDEX_VIDEO_MEMORY_64K) {
        return MIN(s->vram_size / (64 * KiB), 0xffff);
    }
    return 0;
}

void vbe_fixup_regs(VBEState *s)
{
    uint16_t *r = s->regs;
    uint32_t bytespp, linelength, maxy;
    uint64_t offset;

    if (!vbe_enabled(s)) {
        return;
    }
    /* Writes never store an unsupported bpp; a bad loaded one is refused earlier. */
    if (!vbe_bpp_supported(r[VBE_DISPI_INDEX_BPP])) {
        r[VBE_DISPI_INDEX_BPP] = 8;
    }
    bytespp = vbe_bytes_per_pixel(r[VBE_DISPI_INDEX_BPP]);

    r[VBE_DISPI_INDEX_XRES] &= ~1u;
    if (r[VBE_DISPI_INDEX_XRES] == 0) {
        r[VBE_DISPI_INDEX_XRES] = 8;
    }
    r[VBE_DISPI_INDEX_XRES] = MIN(r[VBE_DISPI_INDEX_XRES], VBE_DISPI_MAX_XRES);
    r[VBE_DISPI_INDEX_VIRT_WIDTH] &= ~1u;
    r[VBE_DISPI_INDEX_VIRT_WIDTH] = MIN(r[VBE_DISPI_INDEX_VIRT_WIDTH], VBE_DISPI_MAX_XRES);
    r[VBE_DISPI_INDEX_VIRT_WIDTH] = MAX(r[VBE_DISPI_INDEX_VIRT_WIDTH], r[VBE_DISPI_INDEX_XRES]);
    linelength = r[VBE_DISPI_INDEX_VIRT_WIDTH] * bytespp;

    /* VRAM is at least 1 MiB and a line at most 64000 bytes: maxy >= 16. */
    maxy = MIN(s->vram_size / linelength, 0xffff);
    if (r[VBE_DISPI_INDEX_YRES] == 0) {
        r[VBE_DISPI_INDEX_YRES] = 1;
    }
    r[VBE_DISPI_INDEX_YRES] = MIN(r[VBE_DISPI_INDEX_YRES], VBE_DISPI_MAX_YRES);
    r[VBE_DISPI_INDEX_YRES] = MIN(r[VBE_DISPI_INDEX_YRES], maxy);

    r[VBE_DISPI_INDEX_X_OFFSET] = MIN(r[VBE_DISPI_INDEX_X_OFFSET], VBE_DISPI_MAX_XRES);
    r[VBE_DISPI_INDEX_Y_OFFSET] = MIN(r[VBE_DISPI_INDEX_Y_OFFSET], VBE_DISPI_MAX_YRES);
    offset = (uint64_t)r[VBE_DISPI_INDEX_X_OFFSET] * bytespp +
             (uint64_t)r[VBE_DISPI_INDEX_Y_OFFSET] * linelength;
    /*
     * offset + yres * linelength <= vram_size keeps the last visible byte
     * inside VRAM, since xres * bytespp <= linelength.
     */
    if (offset + (uint64_t)r[VBE_DISPI_INDEX_YRES] * linelength > s->vram_size) {
        r[VBE_DISPI_INDEX_Y_OFFSET] = 0;
        offset = (uint64_t)r[VBE_DISPI_INDEX_X_OFFSET] * bytespp;
        if (offset + (uint64_t)r[VBE_DISPI_INDEX_YRES] * linelength > s->vram_size) {
            r[VBE_DISPI_INDEX_X_OFFSET] = 0;
            offset = 0;
        }
    }
    r[VBE_DISPI_INDEX_VIRT_HEIGHT] = maxy;
    s->line_offset = linelength;
    s->start = offset;
    s->generation++;
}

void vbe_write_data(VBEState *s, uint16_t val, VBEWriteEffect *effect)
{
    uint16_t *r = s->regs;

    effect->clear_bytes = 0;
    switch (s->index) {
    case VBE_DISPI_INDEX_ID:
        if (val >= VBE_DISPI_ID0 && val <= VBE_DISPI_ID5) {
            r[VBE_DISPI_INDEX_ID] = val;
        }
        break;
    case VBE_DISPI_INDEX_BPP:
        if (!vbe_bpp_supported(val)) {
            break;              /* refused: the old depth stays */
        }
        /* fall through */
    case VBE_DISPI_INDEX_XRES:
    case VBE_DISPI_INDEX_YRES:
    case VBE_DISPI_INDEX_VIRT_WIDTH:
    case VBE_DISPI_INDEX_X_OFFSET:
    case VBE_DISPI_INDEX_Y_OFFSET:
        r[s->index] = val;
        vbe_fixup_regs(s);
        break;
    case VBE_DISPI_INDEX_BANK:
        /* Kept for the guest to read back; there is no banked window at 0xa0000 here. */
        r[VBE_DISPI_INDEX_BANK] = val & ((s->vram_size >> 16) - 1);
        break;
    case VBE_DISPI_INDEX_ENABLE:
        if ((val & VBE_DISPI_ENABLED) && !vbe_enabled(s)) {
            r[VBE_DISPI_INDEX_VIRT_WIDTH] = 0;
            r[VBE_DISPI_INDEX_X_OFFSET] = 0;
            r[VBE_DISPI_INDEX_Y_OFFSET] = 0;
            r[VBE_DISPI_INDEX_ENABLE] |= VBE_DISPI_ENABLED;
            vbe_fixup_regs(s);
            if (!(val & VBE_DISPI_NOCLEARMEM)) {
                effect->clear_bytes = (uint64_t)r[VBE_DISPI_INDEX_YRES] * s->line_offset;
            }
        }
        r[VBE_DISPI_INDEX_ENABLE] = val;
        s->generation++;
        break;
    default:
        break;                  /* VIRT_HEIGHT is computed; others do not exist */
    }
}

void vbe_get_mode(const VBEState *s, VBEMode *m)
{
    const uint16_t *r = s->regs;
    uint32_t bpp = r[VBE_DISPI_INDEX_BPP];

    memset(m, 0, sizeof(*m));
    if (!vbe_enabled(s) || !vbe_bpp_supported(bpp) || !r[VBE_DISPI_INDEX_XRES] ||
        !r[VBE_DISPI_INDEX_YRES]) {
        return;
    }
    m->xres = r[VBE_DISPI_INDEX_XRES];
    m->yres = r[VBE_DISPI_INDEX_YRES];
    m->bpp = bpp;
    m->line_offset = s->line_offset;
    m->start = s->start;
    m->dac_8bit = r[VBE_DISPI_INDEX_ENABLE] & VBE_DISPI_8BIT_DAC;
    /* The invariant of vbe.h, checked once more: the fixup is the only guard otherwise. */
    m->enabled = (uint64_t)m->xres * vbe_bytes_per_pixel(bpp) <= m->line_offset &&
                 m->start <= s->vram_size &&
                 (uint64_t)(m->yres - 1) * m->line_offset +
                 (uint64_t)m->xres * vbe_bytes_per_pixel(bpp) <= s->vram_size - m->start;
}

uint8_t vga_dac_read(VBEState *s, uint16_t port)
{
    uint8_t val;

    switch (port) {
    case VGA_DAC_READ_INDEX:
        return s->dac_state;
    case VGA_DAC_WRITE_INDEX:
        return s->dac_write_index;
    case VGA_DAC_DATA:
        val = s->palette[s->dac_read_index * 3 + s->dac_sub_index];
        if (++s->dac_sub_index == 3) {
            s->dac_sub_index = 0;
            s->dac_read_index++;
        }
        return val;
    }
    return 0xff;
}

void vga_dac_write(VBEState *s, uint16_t port, uint8_t val)
{
    switch (port) {
    case VGA_DAC_READ_INDEX:
        s->dac_read_index = val;
        s->dac_sub_index = 0;
        s->dac_state = 3;
        break;
    case VGA_DAC_WRITE_INDEX:
        s->dac_write_index = val;
        s->dac_sub_index = 0;
        s->dac_state = 0;
        break;
    case VGA_DAC_DATA:
        s->dac_cache[s->dac_sub_index] = val;
        if (++s->dac_sub_index == 3) {
            memcpy(&s->palette[s->dac_write_index * 3], s->dac_cache, 3);
            s->dac_sub_index = 0;
            s->dac_write_index++;
            s->generation++;
        }
        break;
    }
}

static uint32_t vga_c6_to_8(uint8_t v)
{
    v &= 0x3f;
    return (v << 2) | (v >> 4);
}

uint32_t vga_palette_rgb(const VBEState *s, unsigned i)
{
    const uint8_t *p = &s->palette[(i & 0xff) * 3];
    bool wide = s->regs[VBE_DISPI_INDEX_ENABLE] & VBE_DISPI_8BIT_DAC;
    uint32_t r = wide ? p[0] : vga_c6_to_8(p[0]);
    uint32_t g = wide ? p[1] : vga_c6_to_8(p[1]);
    uint32_t b = wide ? p[2] : vga_c6_to_8(p[2]);

    return (r << 16) | (g << 8) | b;
}

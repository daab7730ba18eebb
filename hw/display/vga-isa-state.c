/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * isa-vga's "vga" section v2, in the layout QEMU 7.2 and 10.0 send
 * (docs/devel/qemu-interop.md, "isa-vga"), so a guest with -device isa-vga
 * moves between QEMU and us.
 *
 * What the stream carries that we use: the DAC, the palette and, from a
 * stream of ours only, the Bochs VBE registers. QEMU's isa-vga carries no
 * VBE state (is_vbe_vmstate 0, vbe_* fields of whatever bytes it had), so a
 * VBE register file is taken only when vbe_regs[ID] holds a Bochs ID, which
 * ours always does; otherwise VBE is reset to off and our display stays
 * dark until the guest sets a mode again (the guest draws on into VRAM).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "trace/trace.h"
#include "vga-isa-state.h"

void vga_qemu_wire_init(VGAQemuWire *w, VBEState *vbe)
{
    memset(w, 0, sizeof(*w));
    w->vbe = vbe;
}

static uint32_t vga_bank_mask(const VBEState *v)
{
    return (v->vram_size >> 16) - 1;
}

static bool vga_pre_save(void *opaque, Error **errp)
{
    VGAQemuWire *w = opaque;
    VBEState *v = w->vbe;
    VBEMode m;

    /* The registers we do not emulate go as 0, which QEMU loads and runs on from. */
    vga_qemu_wire_init(w, v);
    w->dac_state = v->dac_state;
    w->dac_sub_index = v->dac_sub_index;
    w->dac_read_index = v->dac_read_index;
    w->dac_write_index = v->dac_write_index;
    memcpy(w->dac_cache, v->dac_cache, sizeof(w->dac_cache));
    memcpy(w->palette, v->palette, sizeof(w->palette));
    w->vbe_index = v->index;
    memcpy(w->vbe_regs, v->regs, sizeof(w->vbe_regs));
    vbe_get_mode(v, &m);
    if (m.enabled) {
        /* VRAM is at most 256 MiB (isa_vga_parse), so both fit. */
        w->vbe_start_addr = m.start;
        w->vbe_line_offset = m.line_offset;
    }
    w->vbe_bank_mask = vga_bank_mask(v);
    return true;
}

/*
 * A VBE register file from one of our streams, into @c (a copy of the
 * device's state). The registers a write would have clamped must already be
 * what the clamp gives: a source never sends anything else, so a difference
 * is a forged or broken stream.
 */
static bool vga_load_vbe(const VGAQemuWire *w, VBEState *c, Error **errp)
{
    VBEState fixed;

    c->index = w->vbe_index;
    memcpy(c->regs, w->vbe_regs, sizeof(c->regs));
    if (!vbe_bpp_supported(c->regs[VBE_DISPI_INDEX_BPP])) {
        error_setg(errp, "unsupported VBE bpp %u", c->regs[VBE_DISPI_INDEX_BPP]);
        return false;
    }
    if (w->vbe_bank_mask != vga_bank_mask(c)) {
        error_setg(errp, "VBE bank mask 0x%x is not this VRAM's (0x%x: %" PRIu64 " MiB)",
                   w->vbe_bank_mask, vga_bank_mask(c), c->vram_size >> 20);
        return false;
    }
    if (c->regs[VBE_DISPI_INDEX_BANK] > vga_bank_mask(c)) {
        error_setg(errp, "VBE bank %u past VRAM", c->regs[VBE_DISPI_INDEX_BANK]);
        return false;
    }
    fixed = *c;
    vbe_fixup_regs(&fixed);
    for (int i = 0; i < VBE_DISPI_INDEX_NB; i++) {
        if (fixed.regs[i] != c->regs[i]) {
            error_setg(errp, "VBE register %d is 0x%x, outside the mode's limits (0x%x)", i,
                       c->regs[i], fixed.regs[i]);
            return false;
        }
    }
    if (!(c->regs[VBE_DISPI_INDEX_ENABLE] & VBE_DISPI_ENABLED)) {
        /* Unused while VBE is off: the next enable computes them. */
        c->line_offset = 0;
        c->start = 0;
        return true;
    }
    if (w->vbe_start_addr != fixed.start || w->vbe_line_offset != fixed.line_offset) {
        error_setg(errp, "VBE start 0x%x and line offset %u do not match the mode's "
                   "(0x%" PRIx64 ", %u)", w->vbe_start_addr, w->vbe_line_offset, fixed.start,
                   fixed.line_offset);
        return false;
    }
    c->line_offset = fixed.line_offset;
    c->start = fixed.start;
    return true;
}

/*
 * Everything in the wire came from the stream; the device changes only
 * once all of it is checked. latch, sr, gr, ar, cr, msr, fcr, st00, st01
 * and bank_offset are QEMU's VGA text and planar modes, which we do not
 * emulate and no guest of ours can reach: read and ignored.
 */
static bool vga_post_load(void *opaque, int version_id, Error **errp)
{
    VGAQemuWire *w = opaque;
    VBEState c = *w->vbe;
    uint16_t id = w->vbe_regs[VBE_DISPI_INDEX_ID];

    if (w->dac_sub_index > 2 || (w->dac_state != 0 && w->dac_state != 3)) {
        error_setg(errp, "invalid DAC state (sub-index %u, state %u)", w->dac_sub_index,
                   w->dac_state);
        return false;
    }
    if (id >= VBE_DISPI_ID0 && id <= VBE_DISPI_ID5) {
        if (!vga_load_vbe(w, &c, errp)) {
            return false;
        }
    } else {
        TRACE_EVENT(vga_load_no_vbe, "vbe_id=0x%x: no VBE state in the stream "
                    "(QEMU's isa-vga); VBE off until the guest sets a mode", id);
        vbe_reset_regs(&c);
    }
    c.dac_state = w->dac_state;
    c.dac_sub_index = w->dac_sub_index;
    c.dac_read_index = w->dac_read_index;
    c.dac_write_index = w->dac_write_index;
    memcpy(c.dac_cache, w->dac_cache, sizeof(c.dac_cache));
    memcpy(c.palette, w->palette, sizeof(c.palette));
    c.generation++;             /* the display redraws all */
    *w->vbe = c;
    vga_qemu_wire_init(w, w->vbe);
    return true;
}

const VMStateDescription vmstate_vga = {
    .name = "vga",
    .size = sizeof(VGAQemuWire),
    .version_id = 2,
    .minimum_version_id = 2,
    .pre_save = vga_pre_save,
    .post_load = vga_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(latch, VGAQemuWire),
        VMSTATE_UINT8(sr_index, VGAQemuWire),
        VMSTATE_BUFFER(sr, VGAQemuWire),
        VMSTATE_UINT8(gr_index, VGAQemuWire),
        VMSTATE_BUFFER(gr, VGAQemuWire),
        VMSTATE_UINT8(ar_index, VGAQemuWire),
        VMSTATE_BUFFER(ar, VGAQemuWire),
        VMSTATE_INT32(ar_flip_flop, VGAQemuWire),
        VMSTATE_UINT8(cr_index, VGAQemuWire),
        VMSTATE_BUFFER(cr, VGAQemuWire),
        VMSTATE_UINT8(msr, VGAQemuWire),
        VMSTATE_UINT8(fcr, VGAQemuWire),
        VMSTATE_UINT8(st00, VGAQemuWire),
        VMSTATE_UINT8(st01, VGAQemuWire),
        VMSTATE_UINT8(dac_state, VGAQemuWire),
        VMSTATE_UINT8(dac_sub_index, VGAQemuWire),
        VMSTATE_UINT8(dac_read_index, VGAQemuWire),
        VMSTATE_UINT8(dac_write_index, VGAQemuWire),
        VMSTATE_BUFFER(dac_cache, VGAQemuWire),
        VMSTATE_BUFFER(palette, VGAQemuWire),
        VMSTATE_INT32(bank_offset, VGAQemuWire),
        VMSTATE_UINT8_EQUAL(is_vbe_vmstate, VGAQemuWire),
        VMSTATE_UINT16(vbe_index, VGAQemuWire),
        VMSTATE_UINT16_ARRAY(vbe_regs, VGAQemuWire, VBE_DISPI_INDEX_NB),
        VMSTATE_UINT32(vbe_start_addr, VGAQemuWire),
        VMSTATE_UINT32(vbe_line_offset, VGAQemuWire),
        VMSTATE_UINT32(vbe_bank_mask, VGAQemuWire),
        VMSTATE_END_OF_LIST()
    },
};

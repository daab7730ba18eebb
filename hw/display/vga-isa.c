/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * isa-vga on microvm: the Bochs VBE registers (vbe.c) on ports
 * 0x1ce/0x1cf, the DAC on 0x3c7..0x3c9, and the VRAM as its own RAMBlock
 * "vga.vram" mapped at 0xe0000000 (QEMU's VBE_DISPI_LFB_PHYSICAL_ADDRESS,
 * free on microvm: low RAM ends at 3 GiB, MMIO starts at 0xfeb00000).
 * Being guest RAM with its own KVM slot, the VRAM migrates in the RAM
 * section by its name and is written by the guest without exits; the
 * display finds the written lines through its dirty-log client. The
 * registers travel in QEMU's "vga" section (vga-isa-state.c).
 *
 * Not emulated: VGA text and planar modes, the 0xa0000 window (BANK is
 * stored but maps nothing). A guest without VBE set shows no picture.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/option.h"
#include "hw/boards.h"
#include "hw/display/vbe.h"
#include "hw/display/vga.h"
#include "migration/vmstate.h"
#include "system/ioport.h"
#include "system/memory.h"
#include "system/runstate.h"
#include "trace/trace.h"
#include "ui/console.h"
#include "vga-isa-state.h"

struct ISAVGAState {
    VBEState vbe;               /* registers and palette; BQL (vCPU exits, main loop) */
    VGAQemuWire wire;           /* the "vga" section's staging; BQL */
    RAMBlock *vram;             /* immutable */
    uint32_t palette_rgb[256];  /* vbe.palette widened, made per refresh; main thread */
    QemuConsole *con;           /* immutable */
};

uint64_t isa_vga_vram_size(uint32_t vgamem_mb)
{
    uint32_t mb = MIN(MAX(vgamem_mb, 1u), 512u);
    uint32_t pow2 = 1;

    while (pow2 < mb) {
        pow2 <<= 1;
    }
    return (uint64_t)pow2 * MiB;
}

bool isa_vga_parse(QemuOpts *opts, ISAVGAConf *conf, Error **errp)
{
    static const char *const known[] = { "driver", "id", "vgamem_mb", NULL };
    uint64_t mb;

    if (conf->present) {
        error_setg(errp, "Only one global VGA device can be used at a time");
        return false;
    }
    if (!qemu_opts_check_known(opts, known, errp) ||
        !qemu_opt_get_number(opts, "vgamem_mb", 8, &mb, errp)) {
        return false;
    }
    if (mb > UINT32_MAX) {
        error_setg(errp, "Parameter 'vgamem_mb' expects uint32_t");
        return false;
    }
    /*
     * QEMU takes any uint32 and clamps it; 257..512 round to 512 MiB,
     * which at 0xe0000000 would cover microvm's virtio-mmio, IOAPIC and
     * LAPIC windows.
     */
    if (isa_vga_vram_size(mb) > MICROVM_VIRTIO_MMIO_BASE - VBE_DISPI_LFB_PHYSICAL_ADDRESS) {
        error_setg(errp, "vgamem_mb=%" PRIu64 " gives %" PRIu64 " MiB of VRAM: at 0x%llx it "
                   "would overlap microvm's MMIO at 0x%llx (at most 256 MiB)", mb,
                   (uint64_t)(isa_vga_vram_size(mb) / MiB), (unsigned long long)VBE_DISPI_LFB_PHYSICAL_ADDRESS,
                   (unsigned long long)MICROVM_VIRTIO_MMIO_BASE);
        return false;
    }
    conf->present = true;
    conf->vgamem_mb = mb;
    g_free(conf->id);
    conf->id = g_strdup(qemu_opt_get(opts, "id"));
    return true;
}

/* Zeroes VRAM the way a VMM write does: migration and the display see it. */
static void isa_vga_clear_vram(ISAVGAState *s, uint64_t len)
{
    static const uint8_t zero[4096];

    len = MIN(len, s->vram->used_length);
    for (uint64_t off = 0; off < len; off += sizeof(zero)) {
        guest_phys_rw(VBE_DISPI_LFB_PHYSICAL_ADDRESS + off, (void *)zero,
                      MIN(sizeof(zero), len - off), true);
    }
}

static void isa_vga_trace_mode(ISAVGAState *s)
{
    VBEMode m;

    vbe_get_mode(&s->vbe, &m);
    TRACE_EVENT(vga_vbe_mode, "enabled=%d xres=%u yres=%u bpp=%u line=%u start=%" PRIu64,
                m.enabled, m.xres, m.yres, m.bpp, m.line_offset, m.start);
}

static uint64_t isa_vga_vbe_read(void *opaque, uint64_t addr, unsigned size)
{
    ISAVGAState *s = opaque;

    if (addr == 0) {
        return size == 4 ? vbe_read_index(&s->vbe) | (uint32_t)vbe_read_data(&s->vbe) << 16
                         : vbe_read_index(&s->vbe);
    }
    return vbe_read_data(&s->vbe);
}

static void isa_vga_vbe_write(void *opaque, uint64_t addr, uint64_t val, unsigned size)
{
    ISAVGAState *s = opaque;
    VBEWriteEffect effect;
    uint16_t index = s->vbe.index;

    if (addr == 0) {
        vbe_write_index(&s->vbe, val);
        if (size != 4) {
            return;
        }
        val >>= 16;             /* a 32-bit access is index, then data, as in QEMU */
    }
    vbe_write_data(&s->vbe, val, &effect);
    if (effect.clear_bytes) {
        isa_vga_clear_vram(s, effect.clear_bytes);
    }
    if (index == VBE_DISPI_INDEX_ENABLE) {
        isa_vga_trace_mode(s);
    }
}

static const IORangeOps isa_vga_vbe_ops = {
    .read = isa_vga_vbe_read,
    .write = isa_vga_vbe_write,
};

static uint64_t isa_vga_dac_read(void *opaque, uint64_t addr, unsigned size)
{
    ISAVGAState *s = opaque;

    return vga_dac_read(&s->vbe, VGA_DAC_READ_INDEX + addr);
}

static void isa_vga_dac_write(void *opaque, uint64_t addr, uint64_t val, unsigned size)
{
    ISAVGAState *s = opaque;

    vga_dac_write(&s->vbe, VGA_DAC_READ_INDEX + addr, val);
}

static const IORangeOps isa_vga_dac_ops = {
    .read = isa_vga_dac_read,
    .write = isa_vga_dac_write,
};

static void isa_vga_get_framebuffer(void *opaque, DisplayFramebuffer *fb)
{
    ISAVGAState *s = opaque;
    VBEMode m;

    vbe_get_mode(&s->vbe, &m);
    memset(fb, 0, sizeof(*fb));
    if (!m.enabled) {
        return;
    }
    if (m.bpp == 8) {
        for (unsigned i = 0; i < 256; i++) {
            s->palette_rgb[i] = vga_palette_rgb(&s->vbe, i);
        }
    }
    *fb = (DisplayFramebuffer) {
        .enabled = true, .width = m.xres, .height = m.yres, .bpp = m.bpp,
        .stride = m.line_offset, .start = m.start, .palette = s->palette_rgb,
        .generation = s->vbe.generation,
    };
}

static const GraphicHwOps isa_vga_hw_ops = {
    .get_framebuffer = isa_vga_get_framebuffer,
};

static void isa_vga_reset(void *opaque)
{
    ISAVGAState *s = opaque;

    vbe_reset(&s->vbe, s->vram->used_length);
}

ISAVGAState *isa_vga_init(const ISAVGAConf *conf, Error **errp)
{
    ISAVGAState *s = g_new0(ISAVGAState, 1);
    RAMBackendOpts o = { .id = "vga.vram", .kind = RAM_BACKEND_ANON, .aux = true,
                         .size = isa_vga_vram_size(conf->vgamem_mb) };

    s->vram = ram_block_create(&o, errp);
    if (!s->vram ||
        !guest_ram_map(s->vram, 0, VBE_DISPI_LFB_PHYSICAL_ADDRESS, o.size, errp)) {
        return NULL;
    }
    s->vram->mr_addr = VBE_DISPI_LFB_PHYSICAL_ADDRESS;
    pio_table = pio_table ?: io_range_table_new();
    if (io_range_add(pio_table, VBE_DISPI_IOPORT_INDEX, 3, &isa_vga_vbe_ops, s, "vbe") < 0 ||
        io_range_add(pio_table, VGA_DAC_READ_INDEX, 3, &isa_vga_dac_ops, s, "vga-dac") < 0) {
        error_setg(errp, "isa-vga: its I/O ports are already in use");
        return NULL;
    }
    vbe_reset(&s->vbe, o.size);
    vga_qemu_wire_init(&s->wire, &s->vbe);
    qemu_register_reset(isa_vga_reset, s);
    s->con = graphic_console_init(conf->id, &isa_vga_hw_ops, s, s->vram);
    return s;
}

void isa_vga_state_register(ISAVGAState *s)
{
    vmstate_register("vga", 0, &vmstate_vga, &s->wire);
}

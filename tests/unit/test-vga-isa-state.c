/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * isa-vga's "vga" section (hw/display/vga-isa-state.c) over memory-backed
 * QEMUFiles: QEMU's 1131-byte layout with our DAC, palette and VBE state in
 * it; a stream of ours brings a VBE mode back; QEMU's kind of stream (no
 * Bochs ID in vbe_regs) loads with VBE off and the palette kept; a refused
 * stream leaves the device as it was.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "../../hw/display/vga-isa-state.h"
#include "vmstate-sample.h"

#define VGA_SECTION_BYTES 1131      /* QEMU 7.2's and 10.0's "vga" v2 */
#define OFF_LATCH       0
#define OFF_CR          57
#define OFF_DAC_STATE   317
#define OFF_PALETTE     324
#define OFF_IS_VBE      1096
#define OFF_VBE_REGS    1099
#define OFF_VBE_START   1119
#define OFF_VBE_LINE    1123
#define OFF_VBE_MASK    1127

typedef struct Dev {
    VBEState vbe;
    VGAQemuWire wire;
} Dev;

static void vbe_set(VBEState *s, uint16_t index, uint16_t val)
{
    VBEWriteEffect e;

    vbe_write_index(s, index);
    vbe_write_data(s, val, &e);
}

static void dev_init(Dev *d)
{
    memset(d, 0, sizeof(*d));
    vbe_reset(&d->vbe, 8 * MiB);
    vga_qemu_wire_init(&d->wire, &d->vbe);
}

/* 640x480x32 at Y offset 10, palette entry 5 set, DAC left mid-write. */
static void dev_draw(Dev *d)
{
    vbe_set(&d->vbe, VBE_DISPI_INDEX_XRES, 640);
    vbe_set(&d->vbe, VBE_DISPI_INDEX_YRES, 480);
    vbe_set(&d->vbe, VBE_DISPI_INDEX_BPP, 32);
    vbe_set(&d->vbe, VBE_DISPI_INDEX_ENABLE, VBE_DISPI_ENABLED | VBE_DISPI_LFB_ENABLED);
    vbe_set(&d->vbe, VBE_DISPI_INDEX_Y_OFFSET, 10);
    vbe_set(&d->vbe, VBE_DISPI_INDEX_BANK, 3);
    vga_dac_write(&d->vbe, VGA_DAC_WRITE_INDEX, 5);
    vga_dac_write(&d->vbe, VGA_DAC_DATA, 0x3f);
    vga_dac_write(&d->vbe, VGA_DAC_DATA, 0x20);
    vga_dac_write(&d->vbe, VGA_DAC_DATA, 0x10);
    vga_dac_write(&d->vbe, VGA_DAC_DATA, 0x01);
}

static uint32_t be32_at(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

static void put_be16(uint8_t *p, uint16_t v)
{
    p[0] = v >> 8;
    p[1] = v;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    put_be16(p, v >> 16);
    put_be16(p + 2, v);
}

static uint8_t *save_dev(Dev *d, size_t *len)
{
    uint8_t *data = save_buf(&vmstate_vga, &d->wire, NULL, len);

    g_assert_cmpuint(*len, ==, VGA_SECTION_BYTES);
    return data;
}

static void test_save_layout(void)
{
    Dev d;
    g_autofree uint8_t *data = NULL;
    size_t len;

    dev_init(&d);
    dev_draw(&d);
    data = save_dev(&d, &len);
    /* The VGA registers we do not emulate go as zeroes. */
    for (size_t i = OFF_LATCH; i < OFF_DAC_STATE; i++) {
        g_assert_cmpuint(data[i], ==, 0);
    }
    g_assert_cmpuint(data[OFF_DAC_STATE + 1], ==, 1);      /* dac_sub_index */
    g_assert_cmpuint(data[OFF_DAC_STATE + 3], ==, 6);      /* dac_write_index */
    g_assert_cmpuint(data[OFF_PALETTE + 15], ==, 0x3f);
    g_assert_cmpuint(data[OFF_PALETTE + 17], ==, 0x10);
    g_assert_cmpuint(data[OFF_IS_VBE], ==, 0);
    g_assert_cmpuint(data[OFF_VBE_REGS], ==, 0xb0);
    g_assert_cmpuint(data[OFF_VBE_REGS + 1], ==, 0xc5);
    g_assert_cmpuint(be32_at(data + OFF_VBE_START), ==, 10 * 640 * 4);
    g_assert_cmpuint(be32_at(data + OFF_VBE_LINE), ==, 640 * 4);
    g_assert_cmpuint(be32_at(data + OFF_VBE_MASK), ==, 127);
}

static void test_ours_roundtrip(void)
{
    Dev src, dst;
    g_autofree uint8_t *data = NULL;
    uint32_t gen;
    size_t len;
    VBEMode m;

    dev_init(&src);
    dev_draw(&src);
    data = save_dev(&src, &len);
    dev_init(&dst);
    gen = dst.vbe.generation;
    g_assert_true(load_buf(&vmstate_vga, &dst.wire, 2, data, len, NULL, &error_abort));
    g_assert_cmpmem(dst.vbe.regs, sizeof(dst.vbe.regs), src.vbe.regs, sizeof(src.vbe.regs));
    g_assert_cmpuint(dst.vbe.index, ==, src.vbe.index);
    g_assert_cmpmem(dst.vbe.palette, 768, src.vbe.palette, 768);
    g_assert_cmpmem(dst.vbe.dac_cache, 3, src.vbe.dac_cache, 3);
    g_assert_cmpuint(dst.vbe.dac_sub_index, ==, 1);
    vbe_get_mode(&dst.vbe, &m);
    g_assert_true(m.enabled);
    g_assert_cmpuint(m.xres, ==, 640);
    g_assert_cmpuint(m.start, ==, 10 * 640 * 4);
    g_assert_cmpuint(m.line_offset, ==, 640 * 4);
    g_assert_cmpuint(dst.vbe.generation, >, gen);           /* the display redraws */
}

/*
 * QEMU's isa-vga: its VGA registers set, is_vbe_vmstate 0 and vbe_* bytes
 * of no meaning (these from a QEMU 10.0 stream of a guest at 640x480x32).
 */
static void test_qemu_stream(void)
{
    static const uint16_t regs[VBE_DISPI_INDEX_NB] = {
        0, 0, 0, 0xc900, 0x1d42, 0x55a1, 0, 0xd730, 0, 0,
    };
    Dev src, dst;
    g_autofree uint8_t *data = NULL;
    size_t len;
    VBEMode m;

    dev_init(&src);
    dev_draw(&src);
    data = save_dev(&src, &len);
    put_be32(data + OFF_LATCH, 0xe0000000);
    data[OFF_CR + 0x13] = 0x4f;
    for (int i = 0; i < VBE_DISPI_INDEX_NB; i++) {
        put_be16(data + OFF_VBE_REGS + 2 * i, regs[i]);
    }
    put_be32(data + OFF_VBE_START, 490916128);
    put_be32(data + OFF_VBE_LINE, 21921);
    put_be32(data + OFF_VBE_MASK, 0);
    /* The destination shows a mode of its own: the load must turn it off. */
    dev_init(&dst);
    dev_draw(&dst);
    memset(dst.vbe.palette, 0, sizeof(dst.vbe.palette));
    g_assert_true(load_buf(&vmstate_vga, &dst.wire, 2, data, len, NULL, &error_abort));
    vbe_get_mode(&dst.vbe, &m);
    g_assert_false(m.enabled);
    g_assert_cmphex(dst.vbe.regs[VBE_DISPI_INDEX_ID], ==, VBE_DISPI_ID5);
    g_assert_cmpuint(dst.vbe.regs[VBE_DISPI_INDEX_BPP], ==, 8);
    g_assert_cmpuint(dst.vbe.regs[VBE_DISPI_INDEX_XRES], ==, 0);
    g_assert_cmpuint(dst.vbe.index, ==, 0);
    /* The DAC and palette are QEMU's too: taken. */
    g_assert_cmpmem(dst.vbe.palette, 768, src.vbe.palette, 768);
    /* Nothing of the registers we ignore is kept for the next save. */
    g_free(data);
    data = save_dev(&dst, &len);
    g_assert_cmphex(be32_at(data + OFF_LATCH), ==, 0);
    g_assert_cmpuint(data[OFF_CR + 0x13], ==, 0);
}

/* Each nonsense value refused with its message, and the device unchanged. */
static void test_refusals(void)
{
    static const struct {
        size_t off;
        int bytes;
        uint32_t val;
        const char *msg;
    } bad[] = {
        { OFF_IS_VBE, 1, 1, "Failed to load vga:is_vbe_vmstate: 0 != 1" },
        { OFF_DAC_STATE, 1, 2, "invalid DAC state" },
        { OFF_DAC_STATE + 1, 1, 3, "invalid DAC state (sub-index 3" },
        { OFF_VBE_REGS + 2 * VBE_DISPI_INDEX_BPP, 2, 4, "unsupported VBE bpp 4" },
        { OFF_VBE_REGS + 2 * VBE_DISPI_INDEX_BANK, 2, 128, "VBE bank 128 past VRAM" },
        { OFF_VBE_MASK, 4, 255, "VBE bank mask 0xff is not this VRAM's" },
        { OFF_VBE_REGS + 2 * VBE_DISPI_INDEX_XRES, 2, 641, "VBE register 1 is 0x281" },
        { OFF_VBE_LINE, 4, 2564, "do not match the mode's" },
        { OFF_VBE_START, 4, 0, "do not match the mode's" },
    };
    Dev src;
    g_autofree uint8_t *good = NULL;
    size_t len;

    dev_init(&src);
    dev_draw(&src);
    good = save_dev(&src, &len);
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree uint8_t *data = g_memdup2(good, len);
        Error *err = NULL;
        Dev dst, before;

        if (bad[i].bytes == 1) {
            data[bad[i].off] = bad[i].val;
        } else if (bad[i].bytes == 2) {
            put_be16(data + bad[i].off, bad[i].val);
        } else {
            put_be32(data + bad[i].off, bad[i].val);
        }
        dev_init(&dst);
        before = dst;
        g_assert_false(load_buf(&vmstate_vga, &dst.wire, 2, data, len, NULL, &err));
        if (!strstr(error_get_pretty(err), bad[i].msg)) {
            g_error("case %zu: '%s' lacks '%s'", i, error_get_pretty(err), bad[i].msg);
        }
        error_free(err);
        g_assert_cmpmem(&dst.vbe, sizeof(dst.vbe), &before.vbe, sizeof(before.vbe));
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vga-state/save-layout", test_save_layout);
    g_test_add_func("/vga-state/ours-roundtrip", test_ours_roundtrip);
    g_test_add_func("/vga-state/qemu-stream", test_qemu_stream);
    g_test_add_func("/vga-state/refusals", test_refusals);
    return g_test_run();
}

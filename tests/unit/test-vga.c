/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Bochs VBE registers (hw/display/vbe.c) and the surface conversion
 * (ui/surface.c): nonsense modes are clamped or refused, no register
 * sequence leads a conversion past VRAM (a seeded fuzz over VRAM with a
 * guard page behind it), and each bpp converts to the expected pixels.
 */
#include "qemu/osdep.h"
#include "hw/display/vbe.h"
#include "ui/surface.h"

static void vbe_set(VBEState *s, uint16_t index, uint16_t val)
{
    VBEWriteEffect e;

    vbe_write_index(s, index);
    vbe_write_data(s, val, &e);
}

static uint16_t vbe_get(VBEState *s, uint16_t index)
{
    vbe_write_index(s, index);
    return vbe_read_data(s);
}

static void test_vbe_ids_and_caps(void)
{
    VBEState s = { 0 };

    vbe_reset(&s, 16 * MiB);
    g_assert_cmphex(vbe_get(&s, VBE_DISPI_INDEX_ID), ==, VBE_DISPI_ID5);
    vbe_set(&s, VBE_DISPI_INDEX_ID, VBE_DISPI_ID0);
    g_assert_cmphex(vbe_get(&s, VBE_DISPI_INDEX_ID), ==, VBE_DISPI_ID0);
    vbe_set(&s, VBE_DISPI_INDEX_ID, 0x1234);            /* not an ID: ignored */
    g_assert_cmphex(vbe_get(&s, VBE_DISPI_INDEX_ID), ==, VBE_DISPI_ID0);
    g_assert_cmpuint(vbe_get(&s, VBE_DISPI_INDEX_VIDEO_MEMORY_64K), ==, 256);
    g_assert_cmpuint(vbe_get(&s, 0x77), ==, 0);
    vbe_set(&s, VBE_DISPI_INDEX_ENABLE, VBE_DISPI_GETCAPS);
    g_assert_cmpuint(vbe_get(&s, VBE_DISPI_INDEX_XRES), ==, VBE_DISPI_MAX_XRES);
    g_assert_cmpuint(vbe_get(&s, VBE_DISPI_INDEX_YRES), ==, VBE_DISPI_MAX_YRES);
    g_assert_cmpuint(vbe_get(&s, VBE_DISPI_INDEX_BPP), ==, VBE_DISPI_MAX_BPP);
}

static void test_vbe_mode_set(void)
{
    VBEState s = { 0 };
    VBEWriteEffect e;
    VBEMode m;

    vbe_reset(&s, 16 * MiB);
    vbe_get_mode(&s, &m);
    g_assert_false(m.enabled);
    vbe_set(&s, VBE_DISPI_INDEX_XRES, 640);
    vbe_set(&s, VBE_DISPI_INDEX_YRES, 480);
    vbe_set(&s, VBE_DISPI_INDEX_BPP, 32);
    vbe_write_index(&s, VBE_DISPI_INDEX_ENABLE);
    vbe_write_data(&s, VBE_DISPI_ENABLED | VBE_DISPI_LFB_ENABLED, &e);
    g_assert_cmpuint(e.clear_bytes, ==, 480 * 2560);
    vbe_get_mode(&s, &m);
    g_assert_true(m.enabled);
    g_assert_cmpuint(m.xres, ==, 640);
    g_assert_cmpuint(m.yres, ==, 480);
    g_assert_cmpuint(m.line_offset, ==, 2560);
    g_assert_cmpuint(m.start, ==, 0);
    g_assert_cmpuint(vbe_get(&s, VBE_DISPI_INDEX_VIRT_HEIGHT), ==, 16 * MiB / 2560);
    /* Panning by offsets moves the start. */
    vbe_set(&s, VBE_DISPI_INDEX_Y_OFFSET, 10);
    vbe_set(&s, VBE_DISPI_INDEX_X_OFFSET, 4);
    vbe_get_mode(&s, &m);
    g_assert_cmpuint(m.start, ==, 10 * 2560 + 16);
    /* NOCLEARMEM on a re-enable keeps VRAM. */
    vbe_set(&s, VBE_DISPI_INDEX_ENABLE, 0);
    vbe_write_index(&s, VBE_DISPI_INDEX_ENABLE);
    vbe_write_data(&s, VBE_DISPI_ENABLED | VBE_DISPI_NOCLEARMEM, &e);
    g_assert_cmpuint(e.clear_bytes, ==, 0);
}

static void test_vbe_bad_modes(void)
{
    VBEState s = { 0 };
    VBEMode m;

    vbe_reset(&s, 1 * MiB);
    vbe_set(&s, VBE_DISPI_INDEX_ENABLE, VBE_DISPI_ENABLED);
    /* Unknown depths are refused: the old one stays. */
    for (unsigned bpp = 0; bpp < 64; bpp++) {
        vbe_set(&s, VBE_DISPI_INDEX_BPP, 16);
        vbe_set(&s, VBE_DISPI_INDEX_BPP, bpp);
        g_assert_cmpuint(vbe_get(&s, VBE_DISPI_INDEX_BPP), ==,
                         vbe_bpp_supported(bpp) ? bpp : 16);
    }
    vbe_set(&s, VBE_DISPI_INDEX_BPP, 0xffff);
    g_assert_cmpuint(vbe_get(&s, VBE_DISPI_INDEX_BPP), ==, 16);
    /* Too wide, too high for 1 MiB: clamped into VRAM. */
    vbe_set(&s, VBE_DISPI_INDEX_BPP, 32);
    vbe_set(&s, VBE_DISPI_INDEX_XRES, 0xffff);
    g_assert_cmpuint(vbe_get(&s, VBE_DISPI_INDEX_XRES), ==, VBE_DISPI_MAX_XRES);
    vbe_set(&s, VBE_DISPI_INDEX_YRES, 0xffff);
    vbe_get_mode(&s, &m);
    g_assert_true(m.enabled);
    g_assert_cmpuint(m.yres, ==, 1 * MiB / (VBE_DISPI_MAX_XRES * 4));
    g_assert_cmpuint((uint64_t)m.yres * m.line_offset, <=, 1 * MiB);
    /* Offsets that would push the picture past VRAM drop back to 0. */
    vbe_set(&s, VBE_DISPI_INDEX_Y_OFFSET, 5000);
    g_assert_cmpuint(vbe_get(&s, VBE_DISPI_INDEX_Y_OFFSET), ==, 0);
    vbe_set(&s, VBE_DISPI_INDEX_XRES, 8);
    vbe_set(&s, VBE_DISPI_INDEX_X_OFFSET, 0xffff);
    vbe_get_mode(&s, &m);
    g_assert_true(m.enabled);
    g_assert_cmpuint(m.start + (uint64_t)(m.yres - 1) * m.line_offset + m.xres * 4, <=, 1 * MiB);
    /* Zero sizes become the smallest mode. */
    vbe_set(&s, VBE_DISPI_INDEX_XRES, 0);
    vbe_set(&s, VBE_DISPI_INDEX_YRES, 0);
    g_assert_cmpuint(vbe_get(&s, VBE_DISPI_INDEX_XRES), ==, 8);
    g_assert_cmpuint(vbe_get(&s, VBE_DISPI_INDEX_YRES), ==, 1);
}

/* @size bytes of VRAM with an inaccessible page right behind them. */
static uint8_t *guarded_vram(uint64_t size)
{
    uint8_t *p = mmap(NULL, size + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                      -1, 0);

    g_assert_true(p != MAP_FAILED);
    g_assert_cmpint(mprotect(p + size, 4096, PROT_NONE), ==, 0);
    return p;
}

static void convert_whole_mode(const VBEState *s, uint8_t *vram)
{
    static uint32_t palette[256];
    DisplayFramebuffer fb;
    VBEMode m;
    pixman_image_t *dst, *src;

    vbe_get_mode(s, &m);
    if (!m.enabled) {
        return;
    }
    fb = (DisplayFramebuffer) { .enabled = true, .width = m.xres, .height = m.yres,
                                .bpp = m.bpp, .stride = m.line_offset, .start = m.start,
                                .palette = palette };
    dst = pixman_image_create_bits(PIXMAN_x8r8g8b8, fb.width, fb.height, NULL, 0);
    g_assert_nonnull(dst);
    src = display_wrap_framebuffer(&fb, vram);
    display_convert_lines(dst, src, &fb, vram, 0, fb.height);
    if (src) {
        pixman_image_unref(src);
    }
    pixman_image_unref(dst);
}

/*
 * Random register writes (a fixed seed): after each one an enabled mode
 * stays inside VRAM, and now and then a full conversion reads the whole
 * picture, which faults on the guard page if it ever reached past.
 */
static void test_vbe_fuzz(void)
{
    static const uint16_t interesting[] = {
        0, 1, 2, 7, 8, 15, 16, 24, 32, 33, 640, 1024, 4095, 4096, 12000, 16000, 16001,
        0x7fff, 0x8000, 0xfffe, 0xffff,
    };
    const uint64_t vram_size = 1 * MiB;
    uint8_t *vram = guarded_vram(vram_size);
    g_autoptr(GRand) rand = g_rand_new_with_seed(0x7e5a);
    VBEState s = { 0 };

    vbe_reset(&s, vram_size);
    for (int i = 0; i < 200000; i++) {
        uint16_t index = g_rand_int_range(rand, 0, 12);
        uint16_t val = g_rand_boolean(rand)
            ? interesting[g_rand_int_range(rand, 0, G_N_ELEMENTS(interesting))]
            : (uint16_t)g_rand_int(rand);
        VBEWriteEffect e;
        VBEMode m;

        if (index == VBE_DISPI_INDEX_ENABLE) {
            val &= VBE_DISPI_ENABLED | VBE_DISPI_8BIT_DAC | VBE_DISPI_NOCLEARMEM |
                   (g_rand_boolean(rand) ? 0 : VBE_DISPI_GETCAPS);
        }
        vbe_write_index(&s, index);
        vbe_write_data(&s, val, &e);
        g_assert_cmpuint(e.clear_bytes, <=, vram_size);
        vbe_get_mode(&s, &m);
        if (s.regs[VBE_DISPI_INDEX_ENABLE] & VBE_DISPI_ENABLED) {
            /* The clamp must produce a valid mode, not merely a hidden one. */
            g_assert_true(m.enabled);
            g_assert_cmpuint(m.start + (uint64_t)(m.yres - 1) * m.line_offset +
                             (uint64_t)m.xres * vbe_bytes_per_pixel(m.bpp), <=, vram_size);
        }
        if (i % 2000 == 0) {
            convert_whole_mode(&s, vram);
        }
    }
    munmap(vram, vram_size + 4096);
}

static void test_dac(void)
{
    VBEState s = { 0 };

    vbe_reset(&s, 16 * MiB);
    vga_dac_write(&s, VGA_DAC_WRITE_INDEX, 5);
    vga_dac_write(&s, VGA_DAC_DATA, 0x3f);
    vga_dac_write(&s, VGA_DAC_DATA, 0x20);
    vga_dac_write(&s, VGA_DAC_DATA, 0x01);
    g_assert_cmpuint(vga_dac_read(&s, VGA_DAC_WRITE_INDEX), ==, 6);
    g_assert_cmphex(vga_palette_rgb(&s, 5), ==, 0xff8204);
    vga_dac_write(&s, VGA_DAC_READ_INDEX, 5);
    g_assert_cmpuint(vga_dac_read(&s, VGA_DAC_READ_INDEX), ==, 3);
    g_assert_cmpuint(vga_dac_read(&s, VGA_DAC_DATA), ==, 0x3f);
    g_assert_cmpuint(vga_dac_read(&s, VGA_DAC_DATA), ==, 0x20);
    g_assert_cmpuint(vga_dac_read(&s, VGA_DAC_DATA), ==, 0x01);
    /* 8BIT_DAC: entries are taken as they are. */
    s.regs[VBE_DISPI_INDEX_ENABLE] = VBE_DISPI_8BIT_DAC;
    g_assert_cmphex(vga_palette_rgb(&s, 5), ==, 0x3f2001);
}

/* One 4x2 picture at @bpp, through pixman (and the direct path), against @want. */
static void check_conversion(uint32_t bpp, uint32_t width, const uint8_t *pixels, size_t bytes,
                             const uint32_t *want)
{
    static uint32_t palette[256];
    uint32_t bytespp = vbe_bytes_per_pixel(bpp);
    DisplayFramebuffer fb = { .enabled = true, .width = width, .height = 2, .bpp = bpp,
                              .stride = QEMU_ALIGN_UP(width * bytespp, 4), .start = 4,
                              .palette = palette };
    g_autofree uint8_t *vram = g_malloc0(fb.start + 2 * fb.stride);

    for (int i = 0; i < 256; i++) {
        palette[i] = 0x010101 * i;
    }
    for (int y = 0; y < 2; y++) {
        memcpy(vram + fb.start + y * fb.stride, pixels + y * width * bytespp, width * bytespp);
    }
    g_assert_cmpuint(bytes, ==, 2 * width * bytespp);
    for (int path = 0; path < 2; path++) {
        pixman_image_t *dst = pixman_image_create_bits(PIXMAN_x8r8g8b8, width, 2, NULL, 0);
        pixman_image_t *src = path ? NULL : display_wrap_framebuffer(&fb, vram);
        uint32_t *d = pixman_image_get_data(dst);
        int stride = pixman_image_get_stride(dst) / 4;

        g_assert_true(bpp == 8 || path || src);
        display_convert_lines(dst, src, &fb, vram, 0, 1);
        display_convert_lines(dst, src, &fb, vram, 1, 2);
        for (uint32_t y = 0; y < 2; y++) {
            for (uint32_t x = 0; x < width; x++) {
                g_assert_cmphex(d[y * stride + x] & 0xffffff, ==, want[y * width + x]);
            }
        }
        if (src) {
            pixman_image_unref(src);
        }
        pixman_image_unref(dst);
    }
}

static void test_convert_per_bpp(void)
{
    static const uint32_t want_rgb[8] = {
        0xff0000, 0x00ff00, 0x0000ff, 0xffffff, 0x000000, 0x808080, 0x123456, 0xfedcba,
    };
    static const uint8_t px32[] = {
        0x00, 0x00, 0xff, 0, 0x00, 0xff, 0x00, 0, 0xff, 0x00, 0x00, 0, 0xff, 0xff, 0xff, 0,
        0x00, 0x00, 0x00, 0, 0x80, 0x80, 0x80, 0, 0x56, 0x34, 0x12, 0, 0xba, 0xdc, 0xfe, 0,
    };
    uint8_t px24[24];
    /* 16 bpp: exact colours only where 5/6 bits hold them. */
    static const uint8_t px16[] = { 0x00, 0xf8, 0xe0, 0x07, 0x1f, 0x00, 0xff, 0xff,
                                    0x00, 0x00, 0x10, 0x84, 0x00, 0x00, 0x00, 0x00 };
    static const uint32_t want16[8] = { 0xff0000, 0x00ff00, 0x0000ff, 0xffffff,
                                        0, 0x848284, 0, 0 };
    static const uint8_t px15[] = { 0x00, 0x7c, 0xe0, 0x03, 0x1f, 0x00, 0xff, 0x7f,
                                    0x00, 0x00, 0x10, 0x42, 0x00, 0x00, 0x00, 0x00 };
    static const uint32_t want15[8] = { 0xff0000, 0x00ff00, 0x0000ff, 0xffffff,
                                        0, 0x848484, 0, 0 };
    static const uint8_t px8[] = { 0, 1, 0x80, 0xff, 0x12, 0x34, 0x56, 0x78 };
    static const uint32_t want8[8] = { 0, 0x010101, 0x808080, 0xffffff,
                                       0x121212, 0x343434, 0x565656, 0x787878 };

    for (int i = 0; i < 8; i++) {
        memcpy(px24 + i * 3, px32 + i * 4, 3);
    }
    check_conversion(32, 4, px32, sizeof(px32), want_rgb);
    check_conversion(24, 4, px24, sizeof(px24), want_rgb);
    check_conversion(16, 4, px16, sizeof(px16), want16);
    check_conversion(15, 4, px15, sizeof(px15), want15);
    check_conversion(8, 4, px8, sizeof(px8), want8);
}

/* A 24 bpp line pixman cannot wrap (9 bytes) goes through the direct path. */
static void test_convert_unaligned_24(void)
{
    DisplayFramebuffer fb = { .enabled = true, .width = 3, .height = 2, .bpp = 24, .stride = 9 };
    uint8_t vram[18];

    g_assert_null(display_wrap_framebuffer(&fb, vram));
}

static void test_ppm(void)
{
    g_autofree char *path = g_build_filename(g_get_tmp_dir(), "test-vga-XXXXXX", NULL);
    int fd = g_mkstemp(path);
    pixman_image_t *img = pixman_image_create_bits(PIXMAN_x8r8g8b8, 2, 1, NULL, 0);
    uint32_t *d = pixman_image_get_data(img);
    g_autofree char *text = NULL;
    gsize len;
    Error *err = NULL;
    static const char want[] = "P6\n2 1\n255\n\x12\x34\x56\xff\x00\x80";

    d[0] = 0xff123456;
    d[1] = 0x00ff0080;
    g_assert_true(display_ppm_save(fd, img, &err));
    close(fd);
    g_assert_true(g_file_get_contents(path, &text, &len, NULL));
    g_assert_cmpuint(len, ==, sizeof(want) - 1);
    g_assert_cmpmem(text, len, want, sizeof(want) - 1);
    unlink(path);
    pixman_image_unref(img);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vga/vbe/ids-and-caps", test_vbe_ids_and_caps);
    g_test_add_func("/vga/vbe/mode-set", test_vbe_mode_set);
    g_test_add_func("/vga/vbe/bad-modes", test_vbe_bad_modes);
    g_test_add_func("/vga/vbe/fuzz", test_vbe_fuzz);
    g_test_add_func("/vga/dac", test_dac);
    g_test_add_func("/vga/convert/per-bpp", test_convert_per_bpp);
    g_test_add_func("/vga/convert/unaligned-24", test_convert_unaligned_24);
    g_test_add_func("/vga/ppm", test_ppm);
    return g_test_run();
}

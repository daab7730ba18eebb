/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Framebuffer-to-surface conversion through pixman, and PPM output. No VM
 * state here: the unit test drives these directly.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "ui/surface.h"

pixman_format_code_t display_pixman_format(uint32_t bpp)
{
    /* VBE's direct-colour layouts are these pixman formats on a little-endian host. */
    switch (bpp) {
    case 15:
        return PIXMAN_x1r5g5b5;
    case 16:
        return PIXMAN_r5g6b5;
    case 24:
        return PIXMAN_r8g8b8;
    case 32:
        return PIXMAN_x8r8g8b8;
    }
    return 0;
}

pixman_image_t *display_wrap_framebuffer(const DisplayFramebuffer *fb, uint8_t *vram)
{
    pixman_format_code_t format = display_pixman_format(fb->bpp);

    if (!format || fb->stride % 4 || fb->start % 4 || fb->stride > INT_MAX) {
        return NULL;
    }
    return pixman_image_create_bits(format, fb->width, fb->height,
                                    (uint32_t *)(vram + fb->start), fb->stride);
}

static void display_convert_palette_lines(pixman_image_t *dst, const DisplayFramebuffer *fb,
                                          const uint8_t *vram, uint32_t y0, uint32_t y1)
{
    uint8_t *dbase = (uint8_t *)pixman_image_get_data(dst);
    int dstride = pixman_image_get_stride(dst);

    for (uint32_t y = y0; y < y1; y++) {
        const uint8_t *s = vram + fb->start + (uint64_t)y * fb->stride;
        uint32_t *d = (uint32_t *)(dbase + (size_t)y * dstride);

        for (uint32_t x = 0; x < fb->width; x++) {
            d[x] = fb->palette[s[x]];
        }
    }
}

/* 5- or 6-bit channel widened to 8 bits. */
static uint32_t display_widen(uint32_t v, int bits)
{
    return (v << (8 - bits)) | (v >> (2 * bits - 8));
}

static uint32_t display_pixel_rgb(const uint8_t *p, uint32_t bpp)
{
    uint32_t v;

    switch (bpp) {
    case 15:
        v = p[0] | (p[1] << 8);
        return display_widen((v >> 10) & 0x1f, 5) << 16 | display_widen((v >> 5) & 0x1f, 5) << 8 |
               display_widen(v & 0x1f, 5);
    case 16:
        v = p[0] | (p[1] << 8);
        return display_widen((v >> 11) & 0x1f, 5) << 16 | display_widen((v >> 5) & 0x3f, 6) << 8 |
               display_widen(v & 0x1f, 5);
    default:                    /* 24 and 32: B, G, R in memory */
        return p[2] << 16 | p[1] << 8 | p[0];
    }
}

/*
 * Lines pixman cannot wrap (it wants 4-byte aligned lines): a 24 bpp mode
 * whose line is not a multiple of 4 bytes, or an odd start offset.
 */
static void display_convert_direct_lines(pixman_image_t *dst, const DisplayFramebuffer *fb,
                                         const uint8_t *vram, uint32_t y0, uint32_t y1)
{
    uint8_t *dbase = (uint8_t *)pixman_image_get_data(dst);
    int dstride = pixman_image_get_stride(dst);
    uint32_t bytespp = fb->bpp == 15 ? 2 : fb->bpp / 8;

    for (uint32_t y = y0; y < y1; y++) {
        const uint8_t *s = vram + fb->start + (uint64_t)y * fb->stride;
        uint32_t *d = (uint32_t *)(dbase + (size_t)y * dstride);

        for (uint32_t x = 0; x < fb->width; x++) {
            d[x] = display_pixel_rgb(s + (size_t)x * bytespp, fb->bpp);
        }
    }
}

void display_convert_lines(pixman_image_t *dst, pixman_image_t *src, const DisplayFramebuffer *fb,
                           const uint8_t *vram, uint32_t y0, uint32_t y1)
{
    y1 = MIN(y1, fb->height);
    if (y0 >= y1) {
        return;
    }
    if (fb->bpp == 8) {
        display_convert_palette_lines(dst, fb, vram, y0, y1);
        return;
    }
    if (!src) {
        display_convert_direct_lines(dst, fb, vram, y0, y1);
        return;
    }
    /* SRC: a plain format conversion of the rectangle, no blending. */
    pixman_image_composite32(PIXMAN_OP_SRC, src, NULL, dst, 0, y0, 0, 0, 0, y0, fb->width,
                             y1 - y0);
}

static bool display_write_all(int fd, const void *buf, size_t len, Error **errp)
{
    const uint8_t *p = buf;

    while (len) {
        ssize_t n = write(fd, p, len);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            error_setg_errno(errp, n < 0 ? errno : EIO, "Unable to write to file");
            return false;
        }
        p += n;
        len -= n;
    }
    return true;
}

bool display_ppm_save(int fd, pixman_image_t *image, Error **errp)
{
    int width = pixman_image_get_width(image);
    int height = pixman_image_get_height(image);
    const uint8_t *base = (const uint8_t *)pixman_image_get_data(image);
    int stride = pixman_image_get_stride(image);
    g_autofree char *header = g_strdup_printf("P6\n%d %d\n%d\n", width, height, 255);
    g_autofree uint8_t *line = g_malloc((size_t)width * 3);

    if (!display_write_all(fd, header, strlen(header), errp)) {
        return false;
    }
    for (int y = 0; y < height; y++) {
        const uint32_t *s = (const uint32_t *)(base + (size_t)y * stride);

        for (int x = 0; x < width; x++) {
            line[x * 3] = s[x] >> 16;
            line[x * 3 + 1] = s[x] >> 8;
            line[x * 3 + 2] = s[x];
        }
        if (!display_write_all(fd, line, (size_t)width * 3, errp)) {
            return false;
        }
    }
    return true;
}

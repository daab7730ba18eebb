/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A framebuffer's picture without a VM (ui/surface.c): the framebuffer
 * as a device describes it, its conversion to an x8r8g8b8 pixman surface,
 * and PPM output. ui/console.c calls these for its refresh and screendump;
 * nothing here calls back into the console, which is why these
 * declarations are not in ui/console.h. The unit tests drive them alone.
 */
#ifndef UI_SURFACE_H
#define UI_SURFACE_H

#include <stdbool.h>
#include <stdint.h>
#include <pixman.h>
#include "qemu/typedefs.h"

/* The framebuffer as the device shows it right now. */
typedef struct DisplayFramebuffer {
    bool enabled;               /* false: no picture (no surface) */
    uint32_t width, height;
    uint32_t bpp;               /* 8 (palette), 15, 16, 24, 32 */
    uint32_t stride;            /* bytes per framebuffer line */
    uint64_t start;             /* bytes into the VRAM block */
    const uint32_t *palette;    /* 256 x 0x00RRGGBB, for 8 bpp */
    /* Changes whenever the picture changes other than by VRAM writes. */
    uint32_t generation;
} DisplayFramebuffer;

/* The pixman format of framebuffer lines at @bpp; 0 for 8 bpp (palette) or unknown. */
pixman_format_code_t display_pixman_format(uint32_t bpp);
/*
 * Converts framebuffer lines [y0, y1) of @fb from @vram into @dst
 * (x8r8g8b8, fb->width x fb->height). The caller has checked @fb against
 * the VRAM's size. @src: pixman's view of the framebuffer at @vram + start
 * (display_wrap_framebuffer), or NULL (8 bpp, or lines pixman cannot wrap).
 */
void display_convert_lines(pixman_image_t *dst, pixman_image_t *src, const DisplayFramebuffer *fb,
                           const uint8_t *vram, uint32_t y0, uint32_t y1);
/* pixman's view of @fb's lines in @vram, or NULL when pixman cannot wrap them. */
pixman_image_t *display_wrap_framebuffer(const DisplayFramebuffer *fb, uint8_t *vram);
/* Writes @image as a binary PPM (P6) to @fd. */
bool display_ppm_save(int fd, pixman_image_t *image, Error **errp);

#endif

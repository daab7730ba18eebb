/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The console: one graphic device's picture as a pixman image (the
 * "surface", always x8r8g8b8), kept up to date by a refresh that converts
 * only the framebuffer lines whose pages the guest wrote (the display's
 * KVM dirty-log client), and written out by screendump.
 *
 * ui/surface.c holds what needs no VM (conversion, PPM); ui/console.c the
 * console, its refresh timer and the screendump command.
 */
#ifndef UI_CONSOLE_H
#define UI_CONSOLE_H

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

typedef struct GraphicHwOps {
    /* Fills @fb from the device's registers. Main thread, BQL held. */
    void (*get_framebuffer)(void *opaque, DisplayFramebuffer *fb);
} GraphicHwOps;

typedef struct QemuConsole QemuConsole;

/* ui/surface.c */
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

/* ui/console.c */
/*
 * Registers the console of device @id (may be NULL) whose framebuffer
 * lives in @vram. Before display_init(). BQL.
 */
QemuConsole *graphic_console_init(const char *id, const GraphicHwOps *ops, void *opaque,
                                  RAMBlock *vram);
/*
 * Starts the display: with @refresh (any -display but none), each console
 * refreshes at 30 Hz with its own dirty-log client; without, only
 * screendump refreshes. After machine init. BQL.
 */
bool display_init(bool refresh, Error **errp);
/* Stops every console's refresh and dirty-log client, and frees them. BQL. */
void display_cleanup(void);
/* Brings the surface up to date now (what screendump does first). BQL. */
void graphic_hw_update(QemuConsole *con);
/* The surface (a black placeholder while the device shows nothing), or NULL. BQL. */
pixman_image_t *qemu_console_surface(QemuConsole *con);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The console: one graphic device's picture as a pixman image (the
 * "surface", always x8r8g8b8), kept up to date by a refresh that converts
 * only the framebuffer lines whose pages the guest wrote (the display's
 * KVM dirty-log client), and written out by screendump.
 *
 * ui/surface.c (ui/surface.h) holds what needs no VM: the framebuffer
 * description, conversion, PPM; ui/console.c (this header) the console,
 * its refresh timer and the screendump command, on top of it.
 */
#ifndef UI_CONSOLE_H
#define UI_CONSOLE_H

#include <stdbool.h>
#include <stdint.h>
#include <pixman.h>
#include "qemu/typedefs.h"
#include "ui/surface.h"

typedef struct GraphicHwOps {
    /* Fills @fb from the device's registers. Main thread, BQL held. */
    void (*get_framebuffer)(void *opaque, DisplayFramebuffer *fb);
} GraphicHwOps;

typedef struct QemuConsole QemuConsole;

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

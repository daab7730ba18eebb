/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * isa-vga: Bochs VBE graphics with a linear framebuffer, no text mode
 * (hw/display/vga-isa.c; docs/devel/display.md).
 */
#ifndef HW_DISPLAY_VGA_H
#define HW_DISPLAY_VGA_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"

/* From -device isa-vga[,vgamem_mb=N][,id=ID] or -vga std. */
typedef struct ISAVGAConf {
    bool present;
    uint32_t vgamem_mb;         /* as given (QEMU's default 8); isa_vga_init() clamps it */
    char *id;
    /*
     * How many -device virtio-*-device came before it on the command
     * line: QEMU sends device sections in -device order.
     */
    unsigned virtio_before;
} ISAVGAConf;

typedef struct ISAVGAState ISAVGAState;

/* Checks the -device isa-vga options into @conf (not yet created). */
bool isa_vga_parse(QemuOpts *opts, ISAVGAConf *conf, Error **errp);
/*
 * Creates the "vga.vram" RAMBlock, maps it at VBE_DISPI_LFB_PHYSICAL_ADDRESS
 * (before the KVM slots are made: it gets its own), claims the VBE and DAC
 * ports and makes the console. Machine init, BQL. NULL with @errp set on
 * failure.
 */
ISAVGAState *isa_vga_init(const ISAVGAConf *conf, Error **errp);
/*
 * Registers its "vga" section (QEMU's layout, v2). Apart from init, so the
 * machine can register it where QEMU's order puts it.
 */
void isa_vga_state_register(ISAVGAState *s);
/* The VRAM size @vgamem_mb gives, after QEMU's clamping (1..512, power of two). */
uint64_t isa_vga_vram_size(uint32_t vgamem_mb);

#endif

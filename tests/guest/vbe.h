/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Bochs VBE (DISPI) interface as the firmware's display modes use it:
 * the index/data ports, the register numbers, and port access. The ports
 * are out of CPL3's reach under kvm-pvm: callers run at CPL0 (SVC_CALL).
 */
#ifndef WORKLOAD_VBE_H
#define WORKLOAD_VBE_H

#include <stdbool.h>
#include <stdint.h>
#include "portio.h"

#define VBE_INDEX       0x1ce
#define VBE_DATA        0x1cf
#define VBE_ID          0
#define VBE_XRES        1
#define VBE_YRES        2
#define VBE_BPP         3
#define VBE_ENABLE      4
#define VBE_BANK        5
#define VBE_VIRT_WIDTH  6
#define VBE_VIRT_HEIGHT 7
#define VBE_X_OFFSET    8
#define VBE_Y_OFFSET    9
#define VBE_VIDEO_MEMORY_64K 0xa
#define VBE_ENABLED     0x01
#define VBE_LFB_ENABLED 0x40
#define VBE_ID_MIN      0xb0c0
#define VBE_ID_MAX      0xb0c5
#define LFB_ADDR        0xe0000000ULL   /* isa-vga's; a PCI VGA's is its BAR 0 */

/*
 * Where the linear framebuffer is: BAR 0 of a Bochs-compatible PCI VGA
 * (1234:1111, QEMU's -vga std on -M pc) if there is one, else LFB_ADDR.
 * Set at CPL0 by vbe_find_lfb(), read at CPL3 when drawing.
 */
extern uint64_t vbe_lfb;
void vbe_find_lfb(void);

static inline void vbe_write(uint16_t idx, uint16_t v)
{
    outw(VBE_INDEX, idx);
    outw(VBE_DATA, v);
}

static inline uint16_t vbe_read(uint16_t idx)
{
    outw(VBE_INDEX, idx);
    return inw(VBE_DATA);
}

/*
 * draw.c, at CPL0: the LFB's first @vram bytes write-back (boot.c made them
 * uncached); false if they are not all in the 3-4 GiB hole it maps.
 */
bool vbe_lfb_writeback(uint64_t vram);

#endif

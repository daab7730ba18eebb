/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Bochs VBE ("DISPI") register file and the VGA DAC palette, as
 * QEMU's isa-vga exposes them: index/data ports 0x1ce/0x1cf, DAC ports
 * 0x3c7..0x3c9. Pure logic over a VBEState (hw/display/vbe.c) so that a
 * unit test can drive every register combination without a guest.
 *
 * Everything here comes from the guest and is untrusted. The invariant
 * the rest of the display relies on: while the mode is enabled,
 *   start + (yres - 1) * line_offset + xres * bytes_per_pixel <= vram_size
 * (vbe_get_mode() checks it once more and reports an invalid mode as
 * disabled, so no reader of VRAM can go past its end).
 */
#ifndef HW_DISPLAY_VBE_H
#define HW_DISPLAY_VBE_H

#include <stdbool.h>
#include <stdint.h>

#define VBE_DISPI_IOPORT_INDEX          0x1ce
#define VBE_DISPI_IOPORT_DATA           0x1cf

#define VBE_DISPI_INDEX_ID              0x0
#define VBE_DISPI_INDEX_XRES            0x1
#define VBE_DISPI_INDEX_YRES            0x2
#define VBE_DISPI_INDEX_BPP             0x3
#define VBE_DISPI_INDEX_ENABLE          0x4
#define VBE_DISPI_INDEX_BANK            0x5
#define VBE_DISPI_INDEX_VIRT_WIDTH      0x6
#define VBE_DISPI_INDEX_VIRT_HEIGHT     0x7
#define VBE_DISPI_INDEX_X_OFFSET        0x8
#define VBE_DISPI_INDEX_Y_OFFSET        0x9
#define VBE_DISPI_INDEX_NB              0xa   /* registers held in VBEState.regs */
#define VBE_DISPI_INDEX_VIDEO_MEMORY_64K 0xa  /* read-only: VRAM size in 64 KiB */

#define VBE_DISPI_ID0                   0xb0c0
#define VBE_DISPI_ID5                   0xb0c5

#define VBE_DISPI_DISABLED              0x00
#define VBE_DISPI_ENABLED               0x01
#define VBE_DISPI_GETCAPS               0x02
#define VBE_DISPI_8BIT_DAC              0x20
#define VBE_DISPI_LFB_ENABLED           0x40
#define VBE_DISPI_NOCLEARMEM            0x80

#define VBE_DISPI_MAX_XRES              16000
#define VBE_DISPI_MAX_YRES              12000
#define VBE_DISPI_MAX_BPP               32

/* Where QEMU's isa-vga (and ours) puts the linear framebuffer. */
#define VBE_DISPI_LFB_PHYSICAL_ADDRESS  0xe0000000ULL

/* VGA DAC ports (palette for 8 bpp). */
#define VGA_DAC_READ_INDEX              0x3c7
#define VGA_DAC_WRITE_INDEX             0x3c8
#define VGA_DAC_DATA                    0x3c9

typedef struct VBEState {
    uint64_t vram_size;         /* bytes; immutable after vbe_reset() */
    /* Guest-written, and migrated ("vga" section). The owner's lock: the BQL. */
    uint16_t index;
    uint16_t regs[VBE_DISPI_INDEX_NB];
    uint8_t dac_state;          /* 0: last set was a write index, 3: a read index */
    uint8_t dac_sub_index;      /* 0..2: which of R, G, B comes next */
    uint8_t dac_read_index;
    uint8_t dac_write_index;
    uint8_t dac_cache[3];
    uint8_t palette[768];       /* 256 x R, G, B; 6-bit unless 8BIT_DAC */
    /* Derived by vbe_fixup_regs() while enabled, never migrated. BQL. */
    uint32_t line_offset;       /* bytes per line */
    uint64_t start;             /* byte offset of the first visible pixel */
    /*
     * Bumped whenever what is visible changes other than through VRAM
     * writes (mode, offsets, palette, a load): a display redraws all then.
     */
    uint32_t generation;
} VBEState;

/* What a display reads: a snapshot of the mode, checked against vram_size. */
typedef struct VBEMode {
    bool enabled;               /* false: nothing to show (or the mode is invalid) */
    uint32_t xres, yres;
    uint32_t bpp;               /* 8, 15, 16, 24 or 32 */
    uint32_t line_offset;       /* bytes */
    uint64_t start;             /* bytes into VRAM */
    bool dac_8bit;
} VBEMode;

/* What a data-port write asks the device to do besides changing registers. */
typedef struct VBEWriteEffect {
    uint64_t clear_bytes;       /* zero VRAM [0, clear_bytes): a mode was enabled */
} VBEWriteEffect;

void vbe_reset(VBEState *s, uint64_t vram_size);
/* The VBE registers alone as at reset (VBE off); the DAC and palette stay. */
void vbe_reset_regs(VBEState *s);
uint16_t vbe_read_index(const VBEState *s);
void vbe_write_index(VBEState *s, uint16_t val);
uint16_t vbe_read_data(const VBEState *s);
void vbe_write_data(VBEState *s, uint16_t val, VBEWriteEffect *effect);
/* Clamps the geometry registers of an enabled mode into VRAM (QEMU's rules). */
void vbe_fixup_regs(VBEState *s);
bool vbe_bpp_supported(uint32_t bpp);
/* Bytes per pixel of a supported bpp (15 takes 2). */
uint32_t vbe_bytes_per_pixel(uint32_t bpp);
void vbe_get_mode(const VBEState *s, VBEMode *mode);

uint8_t vga_dac_read(VBEState *s, uint16_t port);
void vga_dac_write(VBEState *s, uint16_t port, uint8_t val);
/* Palette entry @i as 0x00RRGGBB, widened from 6 bits unless 8BIT_DAC. */
uint32_t vga_palette_rgb(const VBEState *s, unsigned i);

#endif

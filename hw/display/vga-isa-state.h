/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * isa-vga's "vga" section v2 in QEMU's layout (vga-isa-state.c), private to
 * hw/display/. The device embeds a VGAQemuWire, points it at its VBEState
 * with vga_qemu_wire_init() and registers vmstate_vga with the wire as
 * opaque. Save fills the wire from the VBEState; load fills the wire, checks
 * it, and only then changes the VBEState. Both under the BQL (the section
 * hooks' context), as every access to the VBEState.
 */
#ifndef HW_DISPLAY_VGA_ISA_STATE_H
#define HW_DISPLAY_VGA_ISA_STATE_H

#include "hw/display/vbe.h"
#include "migration/vmstate.h"

/*
 * The section's fields, named and sized as QEMU's vmdesc names them
 * (docs/devel/qemu-vmdesc/vga-qemu-10.0.json). Staging only: its contents
 * mean nothing between a save or load and the next.
 */
typedef struct VGAQemuWire {
    /* QEMU's VGA registers, which we do not emulate: sent as 0, ignored in. */
    uint32_t latch;
    uint8_t sr_index;
    uint8_t sr[8];
    uint8_t gr_index;
    uint8_t gr[16];
    uint8_t ar_index;
    uint8_t ar[21];
    int32_t ar_flip_flop;
    uint8_t cr_index;
    uint8_t cr[256];
    uint8_t msr;
    uint8_t fcr;
    uint8_t st00;
    uint8_t st01;
    /* The DAC and palette: VBEState's. */
    uint8_t dac_state;
    uint8_t dac_sub_index;
    uint8_t dac_read_index;
    uint8_t dac_write_index;
    uint8_t dac_cache[3];
    uint8_t palette[768];
    int32_t bank_offset;        /* QEMU's banked window, which we lack: 0 */
    uint8_t is_vbe_vmstate;     /* always 0, as QEMU's isa-vga sends it */
    /* The VBE registers; from QEMU's isa-vga, meaningless bytes. */
    uint16_t vbe_index;
    uint16_t vbe_regs[VBE_DISPI_INDEX_NB];
    uint32_t vbe_start_addr;    /* VBEState.start: bytes into VRAM (0 with VBE off) */
    uint32_t vbe_line_offset;   /* VBEState.line_offset: bytes (0 with VBE off) */
    uint32_t vbe_bank_mask;     /* what a BANK write is masked with: VRAM / 64 KiB - 1 */
    VBEState *vbe;              /* the device's registers; immutable */
} VGAQemuWire;

extern const VMStateDescription vmstate_vga;

void vga_qemu_wire_init(VGAQemuWire *w, VBEState *vbe);

#endif

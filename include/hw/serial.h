/* SPDX-License-Identifier: GPL-2.0-or-later */
/* 16550A UART on the ISA bus (COM1 = 0x3f8, IRQ 4). */
#ifndef HW_SERIAL_H
#define HW_SERIAL_H

#include <stdbool.h>
#include <stdint.h>

#define UART_FIFO_SIZE 16

typedef struct SerialState {
    /* Guest-visible registers (migrated). */
    uint8_t rbr_fifo[UART_FIFO_SIZE];
    uint8_t rx_head;
    uint8_t rx_count;
    uint8_t ier;
    uint8_t iir;
    uint8_t lcr;
    uint8_t mcr;
    uint8_t lsr;
    uint8_t msr;
    uint8_t scr;
    uint8_t fcr;
    uint16_t divider;
    uint8_t thr_ipending;
    uint8_t rbr_vmstate;        /* migration staging: the byte waiting (QEMU's rbr) */

    /* Host side. */
    Chardev *chr;
    int irq;
    int irq_level;              /* last level given to KVM */
} SerialState;

/* Registers the UART at @base; output goes to @chr (may be NULL). */
SerialState *serial_isa_init(uint16_t base, int irq, Chardev *chr, Error **errp);
void serial_reset(SerialState *s);
/* Registers its "serial" section; the machine calls it in QEMU's section order. */
void serial_state_register(SerialState *s);
/* Recompute and deliver the interrupt line (after loading state). */
void serial_update_irq(SerialState *s);

#endif

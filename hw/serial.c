/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * 16550A UART. Transmission is instantaneous (the THR empties at once into
 * the chardev); received bytes queue in a 16-byte FIFO. Register accesses
 * come from vCPU threads with the BQL held; input from the main loop.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "chardev/char.h"
#include "hw/serial.h"
#include "migration/vmstate.h"
#include "system/ioport.h"
#include "system/kvm.h"
#include "system/runstate.h"

#define UART_LCR_DLAB   0x80
#define UART_IER_RDI    0x01
#define UART_IER_THRI   0x02
#define UART_IER_RLSI   0x04
#define UART_IER_MSI    0x08
#define UART_IIR_NO_INT 0x01
#define UART_IIR_RLSI   0x06
#define UART_IIR_RDI    0x04
#define UART_IIR_THRI   0x02
#define UART_IIR_MSI    0x00
#define UART_IIR_FE     0xc0
#define UART_LSR_DR     0x01
#define UART_LSR_OE     0x02
#define UART_LSR_THRE   0x20
#define UART_LSR_TEMT   0x40
#define UART_LSR_INT_ANY 0x1e
#define UART_MCR_LOOP   0x10
#define UART_MCR_OUT2   0x08
#define UART_MSR_DCD    0x80
#define UART_MSR_DSR    0x20
#define UART_MSR_CTS    0x10
#define UART_MSR_ANY_DELTA 0x0f
#define UART_FCR_FE     0x01
#define UART_FCR_RFR    0x02

void serial_update_irq(SerialState *s)
{
    uint8_t iir = UART_IIR_NO_INT;
    int level;

    if ((s->ier & UART_IER_RLSI) && (s->lsr & UART_LSR_INT_ANY)) {
        iir = UART_IIR_RLSI;
    } else if ((s->ier & UART_IER_RDI) && (s->lsr & UART_LSR_DR)) {
        iir = UART_IIR_RDI;
    } else if ((s->ier & UART_IER_THRI) && s->thr_ipending) {
        iir = UART_IIR_THRI;
    } else if ((s->ier & UART_IER_MSI) && (s->msr & UART_MSR_ANY_DELTA)) {
        iir = UART_IIR_MSI;
    }
    s->iir = iir | ((s->fcr & UART_FCR_FE) ? UART_IIR_FE : 0);
    level = !(iir & UART_IIR_NO_INT);
    if (level != s->irq_level && kvm_state) {
        s->irq_level = level;
        kvm_set_irq(kvm_state, s->irq, level);
    }
}

static void serial_rx_push(SerialState *s, uint8_t byte)
{
    if (s->rx_count == UART_FIFO_SIZE) {
        s->lsr |= UART_LSR_OE;
        return;
    }
    s->rbr_fifo[(s->rx_head + s->rx_count) % UART_FIFO_SIZE] = byte;
    s->rx_count++;
    s->lsr |= UART_LSR_DR;
}

static uint8_t serial_rx_pop(SerialState *s)
{
    uint8_t byte = 0;

    if (s->rx_count) {
        byte = s->rbr_fifo[s->rx_head];
        s->rx_head = (s->rx_head + 1) % UART_FIFO_SIZE;
        s->rx_count--;
    }
    if (!s->rx_count) {
        s->lsr &= ~UART_LSR_DR;
    }
    return byte;
}

static void serial_write(void *opaque, uint64_t addr, uint64_t val, unsigned size)
{
    SerialState *s = opaque;
    uint8_t v = val;

    switch (addr) {
    case 0:
        if (s->lcr & UART_LCR_DLAB) {
            s->divider = (s->divider & 0xff00) | v;
            break;
        }
        if (s->mcr & UART_MCR_LOOP) {
            serial_rx_push(s, v);
        } else if (s->chr) {
            qemu_chr_write_all(s->chr, &v, 1);
        }
        s->thr_ipending = 1;
        s->lsr |= UART_LSR_THRE | UART_LSR_TEMT;
        serial_update_irq(s);
        break;
    case 1:
        if (s->lcr & UART_LCR_DLAB) {
            s->divider = (s->divider & 0x00ff) | (v << 8);
            break;
        }
        /* Enabling THRI with an empty THR raises the interrupt at once. */
        if ((v & UART_IER_THRI) && !(s->ier & UART_IER_THRI)) {
            s->thr_ipending = 1;
        }
        s->ier = v & 0x0f;
        serial_update_irq(s);
        break;
    case 2:
        if (v & UART_FCR_RFR) {
            s->rx_head = s->rx_count = 0;
            s->lsr &= ~UART_LSR_DR;
        }
        s->fcr = v & 0xc9;
        serial_update_irq(s);
        break;
    case 3:
        s->lcr = v;
        break;
    case 4:
        s->mcr = v & 0x1f;
        break;
    case 7:
        s->scr = v;
        break;
    default:
        break;
    }
}

static uint64_t serial_read(void *opaque, uint64_t addr, unsigned size)
{
    SerialState *s = opaque;
    uint8_t ret = 0;

    switch (addr) {
    case 0:
        if (s->lcr & UART_LCR_DLAB) {
            return s->divider & 0xff;
        }
        ret = serial_rx_pop(s);
        serial_update_irq(s);
        if (s->chr && !s->rx_count) {
            qemu_chr_fe_accept_input(s->chr);
        }
        break;
    case 1:
        ret = (s->lcr & UART_LCR_DLAB) ? s->divider >> 8 : s->ier;
        break;
    case 2:
        ret = s->iir;
        /* Reading IIR acknowledges a THR-empty interrupt. */
        if ((ret & 0x0f) == UART_IIR_THRI) {
            s->thr_ipending = 0;
            serial_update_irq(s);
        }
        break;
    case 3:
        ret = s->lcr;
        break;
    case 4:
        ret = s->mcr;
        break;
    case 5:
        ret = s->lsr;
        if (s->lsr & (UART_LSR_OE | 0x1c)) {
            s->lsr &= ~(UART_LSR_OE | 0x1c);
            serial_update_irq(s);
        }
        break;
    case 6:
        if (s->mcr & UART_MCR_LOOP) {
            ret = (s->mcr & 0x0c) << 4 | (s->mcr & 0x02) << 3 | (s->mcr & 0x01) << 5;
        } else {
            ret = s->msr;
            s->msr &= ~UART_MSR_ANY_DELTA;
            serial_update_irq(s);
        }
        break;
    case 7:
        ret = s->scr;
        break;
    }
    return ret;
}

static const IORangeOps serial_ops = {
    .read = serial_read,
    .write = serial_write,
};

static size_t serial_can_receive(void *opaque)
{
    SerialState *s = opaque;

    /*
     * Without the FIFO, a 16550A holds one byte: taking more would keep
     * bytes QEMU's layout has no place for (its "serial" v3 carries rbr).
     */
    if (!(s->fcr & UART_FCR_FE)) {
        return s->rx_count ? 0 : 1;
    }
    return UART_FIFO_SIZE - s->rx_count;
}

static void serial_receive(void *opaque, const uint8_t *buf, size_t len)
{
    SerialState *s = opaque;

    for (size_t i = 0; i < len; i++) {
        serial_rx_push(s, buf[i]);
    }
    serial_update_irq(s);
}

void serial_reset(SerialState *s)
{
    s->rx_head = s->rx_count = 0;
    s->ier = 0;
    s->lcr = 0;
    s->mcr = UART_MCR_OUT2;
    s->lsr = UART_LSR_TEMT | UART_LSR_THRE;
    s->msr = UART_MSR_DCD | UART_MSR_DSR | UART_MSR_CTS;
    s->scr = 0;
    s->fcr = 0;
    s->divider = 12;            /* 9600 baud */
    s->thr_ipending = 0;
    serial_update_irq(s);
}

/*
 * QEMU's "serial" v3 carries the one received byte a UART without FIFO
 * holds (rbr), and the FIFO's contents only in a subsection whose layout we
 * have not seen: bytes queued behind the first are dropped, and said so.
 */
static bool serial_pre_save(void *opaque, Error **errp)
{
    SerialState *s = opaque;

    s->rbr_vmstate = s->rx_count ? s->rbr_fifo[s->rx_head] : 0;
    if (s->rx_count > 1) {
        warn_report("serial: %u received bytes in the FIFO are not migrated (only the first)",
                    s->rx_count - 1);
    }
    return true;
}

static bool serial_post_load(void *opaque, int version_id, Error **errp)
{
    SerialState *s = opaque;

    if (s->ier & ~0x0f || s->mcr & ~0x1f || s->fcr & ~0xc9) {
        error_setg(errp, "invalid register state (ier 0x%x, mcr 0x%x, fcr 0x%x)",
                   s->ier, s->mcr, s->fcr);
        return false;
    }
    /* A byte waits exactly when the line status says data ready. */
    s->rx_head = 0;
    s->rx_count = (s->lsr & UART_LSR_DR) ? 1 : 0;
    s->rbr_fifo[0] = s->rbr_vmstate;
    /* QEMU sends the THR-empty interrupt apart only when IIR does not show it; IIR does here. */
    s->thr_ipending = (s->iir & 0x0f) == UART_IIR_THRI;
    /*
     * Our transmitter sends each byte as the guest writes it: it is never
     * busy. QEMU's can be (its chardev was full), and the byte it held is
     * not in these fields: taken as is, THRE would stay clear for ever and
     * a guest that waits for it before each byte would wait for ever. The
     * transmitter is empty here, as after a byte went out.
     */
    if (!(s->lsr & UART_LSR_THRE)) {
        s->lsr |= UART_LSR_THRE | UART_LSR_TEMT;
        s->thr_ipending = 1;
    }
    /* Our line level is unknown to the new irqchip: always drive it once. */
    s->irq_level = -1;
    serial_update_irq(s);
    return true;
}

/* QEMU's UART state, "serial" v3 (its vmdesc: docs/devel/qemu-vmdesc/). */
static const VMStateDescription vmstate_serial_regs = {
    .name = "serial",
    .version_id = 3,
    .minimum_version_id = 3,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT16(divider, SerialState),
        { .name = "rbr", .type = VMS_UINT8, .size = 1, .offset = offsetof(SerialState, rbr_vmstate) },
        VMSTATE_UINT8(ier, SerialState),
        VMSTATE_UINT8(iir, SerialState),
        VMSTATE_UINT8(lcr, SerialState),
        VMSTATE_UINT8(mcr, SerialState),
        VMSTATE_UINT8(lsr, SerialState),
        VMSTATE_UINT8(msr, SerialState),
        VMSTATE_UINT8(scr, SerialState),
        { .name = "fcr_vmstate", .type = VMS_UINT8, .size = 1, .offset = offsetof(SerialState, fcr) },
        VMSTATE_END_OF_LIST()
    },
};

/* The ISA device's section wraps the UART's state in one struct field, as QEMU's does. */
static const VMStateDescription vmstate_serial = {
    .name = "serial",
    .size = sizeof(SerialState),
    .version_id = 3,
    .minimum_version_id = 3,
    .pre_save = serial_pre_save,
    .post_load = serial_post_load,
    .fields = (const VMStateField[]) {
        { .name = "state", .type = VMS_STRUCT, .offset = 0, .size = sizeof(SerialState),
          .vmsd = &vmstate_serial_regs },
        VMSTATE_END_OF_LIST()
    },
};

static void serial_reset_handler(void *opaque)
{
    serial_reset(opaque);
}

SerialState *serial_isa_init(uint16_t base, int irq, Chardev *chr, Error **errp)
{
    SerialState *s = g_new0(SerialState, 1);

    s->chr = chr;
    s->irq = irq;
    if (io_range_add(pio_table, base, 8, &serial_ops, s, "serial") < 0) {
        error_setg(errp, "I/O port range 0x%x-0x%x is already in use", base, base + 7);
        g_free(s);
        return NULL;
    }
    serial_reset(s);
    if (chr) {
        CharFrontend fe = {
            .can_read = serial_can_receive,
            .read = serial_receive,
            .opaque = s,
        };
        if (qemu_chr_fe_busy(chr)) {
            error_setg(errp, "chardev '%s' is already in use", qemu_chr_label(chr));
            return NULL;
        }
        qemu_chr_fe_set_handlers(chr, &fe);
        qemu_chr_set_raw(chr);
    }
    qemu_register_reset(serial_reset_handler, s);
    return s;
}

void serial_state_register(SerialState *s)
{
    vmstate_register("serial", 0, &vmstate_serial, s);
}

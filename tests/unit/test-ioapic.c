/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The userspace IOAPIC (hw/ioapic.c) alone: its registers, the MSI
 * messages it builds, level and edge delivery with Remote IRR, the EOI
 * register, the checks on loaded state, and a seeded random walk checking
 * after every step that no unmasked pin is left with work due and that a
 * level pin never delivers while its Remote IRR is set.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/ioapic.h"

typedef struct Msi {
    uint64_t addr;
    uint32_t data;
} Msi;

typedef struct Fixture {
    IOAPIC *io;
    GArray *sent;               /* Msi, in delivery order */
} Fixture;

static void fake_deliver(void *opaque, uint64_t addr, uint32_t data)
{
    Fixture *f = opaque;
    Msi m = { addr, data };

    g_array_append_val(f->sent, m);
}

static void fixture_init(Fixture *f)
{
    f->sent = g_array_new(FALSE, TRUE, sizeof(Msi));
    f->io = ioapic_new(fake_deliver, f);
}

static void fixture_fini(Fixture *f)
{
    ioapic_free(f->io);
    g_array_free(f->sent, TRUE);
}

static uint32_t reg_read(IOAPIC *io, uint8_t reg)
{
    ioapic_mmio_write(io, IOAPIC_IOREGSEL, reg, 4);
    return (uint32_t)ioapic_mmio_read(io, IOAPIC_IOWIN, 4);
}

static void reg_write(IOAPIC *io, uint8_t reg, uint32_t val)
{
    ioapic_mmio_write(io, IOAPIC_IOREGSEL, reg, 4);
    ioapic_mmio_write(io, IOAPIC_IOWIN, val, 4);
}

static void entry_write(IOAPIC *io, unsigned pin, uint64_t e)
{
    reg_write(io, 0x11 + 2 * pin, (uint32_t)(e >> 32));
    reg_write(io, 0x10 + 2 * pin, (uint32_t)e);
}

static uint64_t entry_read(IOAPIC *io, unsigned pin)
{
    return reg_read(io, 0x10 + 2 * pin) | (uint64_t)reg_read(io, 0x11 + 2 * pin) << 32;
}

static void eoi(IOAPIC *io, uint8_t vector)
{
    ioapic_mmio_write(io, IOAPIC_EOI, vector, 4);
}

static void test_registers(void)
{
    Fixture f;
    IOAPICRegs r;

    fixture_init(&f);
    /* 24 pins (maximum redirection entry 23), version 0x20, as QEMU's `info pic` shows. */
    g_assert_cmphex(reg_read(f.io, 0x01), ==, 0x00170020);
    g_assert_cmphex(reg_read(f.io, 0x00), ==, 0);
    reg_write(f.io, 0x00, 0xff000000);
    g_assert_cmphex(reg_read(f.io, 0x00), ==, 0x0f000000);      /* a 4-bit ID */
    g_assert_cmphex(reg_read(f.io, 0x02), ==, 0x0f000000);
    reg_write(f.io, 0x01, 0);                                      /* read-only */
    g_assert_cmphex(reg_read(f.io, 0x01), ==, 0x00170020);
    g_assert_cmphex(reg_read(f.io, 0x40), ==, 0);                  /* beyond the table */
    ioapic_mmio_write(f.io, IOAPIC_IOREGSEL, 0x23, 4);
    g_assert_cmphex(ioapic_mmio_read(f.io, IOAPIC_IOREGSEL, 4), ==, 0x23);
    /* Every pin starts masked, edge, vector 0. */
    for (unsigned pin = 0; pin < IOAPIC_NUM_PINS; pin++) {
        g_assert_cmphex(entry_read(f.io, pin), ==, IOAPIC_RTE_MASKED);
    }
    entry_write(f.io, 23, 0x0300000000008041ULL);
    g_assert_cmphex(entry_read(f.io, 23), ==, 0x0300000000008041ULL);
    ioapic_get_regs(f.io, &r);
    g_assert_cmphex(r.ioredtbl[23], ==, 0x0300000000008041ULL);
    g_assert_cmpuint(r.id, ==, 0xf);
    fixture_fini(&f);
}

static void test_msi_format(void)
{
    uint64_t addr;
    uint32_t data;

    /* Fixed, physical, APIC 2, vector 0x41, level: the trigger stays edge in the message. */
    ioapic_entry_msi(0x0200000000008041ULL, &addr, &data);
    g_assert_cmphex(addr, ==, 0xfee02000);
    g_assert_cmphex(data, ==, 0x41);
    /* Lowest priority, logical, destination 0x03. */
    ioapic_entry_msi(0x0300000000000931ULL, &addr, &data);
    g_assert_cmphex(addr, ==, 0xfee03004);
    g_assert_cmphex(data, ==, 0x131);
    /* NMI: delivery mode 4. */
    ioapic_entry_msi(0x0000000000000400ULL, &addr, &data);
    g_assert_cmphex(data, ==, 0x400);
}

static void test_level(void)
{
    Fixture f;

    fixture_init(&f);
    entry_write(f.io, 5, IOAPIC_RTE_LEVEL | 0x40);
    ioapic_set_irq(f.io, 5, true);
    g_assert_cmpuint(f.sent->len, ==, 1);
    g_assert_cmphex(g_array_index(f.sent, Msi, 0).data, ==, 0x40);
    g_assert_true(entry_read(f.io, 5) & IOAPIC_RTE_REMOTE_IRR);
    /* In service: the line staying high delivers nothing more. */
    ioapic_set_irq(f.io, 5, true);
    g_assert_cmpuint(f.sent->len, ==, 1);
    /* A guest write of the entry leaves Remote IRR alone (read-only). */
    entry_write(f.io, 5, IOAPIC_RTE_LEVEL | 0x40);
    g_assert_true(entry_read(f.io, 5) & IOAPIC_RTE_REMOTE_IRR);
    g_assert_cmpuint(f.sent->len, ==, 1);
    /* An EOI of another vector does nothing; of ours, with the line high, delivers again. */
    eoi(f.io, 0x41);
    g_assert_cmpuint(f.sent->len, ==, 1);
    eoi(f.io, 0x40);
    g_assert_cmpuint(f.sent->len, ==, 2);
    /* The line falling stands in for the EOI KVM never shows us. */
    ioapic_set_irq(f.io, 5, false);
    g_assert_false(entry_read(f.io, 5) & IOAPIC_RTE_REMOTE_IRR);
    g_assert_cmpuint(f.sent->len, ==, 2);
    ioapic_set_irq(f.io, 5, true);
    g_assert_cmpuint(f.sent->len, ==, 3);
    /* Masked: the line is kept in irr and delivered at unmasking. */
    ioapic_set_irq(f.io, 5, false);
    entry_write(f.io, 5, IOAPIC_RTE_LEVEL | IOAPIC_RTE_MASKED | 0x40);
    ioapic_set_irq(f.io, 5, true);
    g_assert_cmpuint(f.sent->len, ==, 3);
    entry_write(f.io, 5, IOAPIC_RTE_LEVEL | 0x40);
    g_assert_cmpuint(f.sent->len, ==, 4);
    /* Switching to edge clears Remote IRR (an old IOAPIC's EOI, as Linux does it). */
    entry_write(f.io, 5, IOAPIC_RTE_MASKED | 0x40);
    g_assert_false(entry_read(f.io, 5) & IOAPIC_RTE_REMOTE_IRR);
    fixture_fini(&f);
}

static void test_edge(void)
{
    Fixture f;
    IOAPICRegs r;

    fixture_init(&f);
    entry_write(f.io, 7, 0x51);
    ioapic_set_irq(f.io, 7, true);
    ioapic_set_irq(f.io, 7, true);          /* no new edge */
    g_assert_cmpuint(f.sent->len, ==, 1);
    ioapic_set_irq(f.io, 7, false);
    ioapic_set_irq(f.io, 7, true);
    g_assert_cmpuint(f.sent->len, ==, 2);
    g_assert_false(entry_read(f.io, 7) & IOAPIC_RTE_REMOTE_IRR);
    /* An edge while masked waits in irr. */
    ioapic_set_irq(f.io, 7, false);
    entry_write(f.io, 7, IOAPIC_RTE_MASKED | 0x51);
    ioapic_set_irq(f.io, 7, true);
    g_assert_cmpuint(f.sent->len, ==, 2);
    ioapic_get_regs(f.io, &r);
    g_assert_cmphex(r.irr, ==, 1u << 7);
    entry_write(f.io, 7, 0x51);
    g_assert_cmpuint(f.sent->len, ==, 3);
    ioapic_get_regs(f.io, &r);
    g_assert_cmphex(r.irr, ==, 0);
    /* Pins beyond the table are ignored. */
    ioapic_set_irq(f.io, IOAPIC_NUM_PINS, true);
    g_assert_cmpuint(f.sent->len, ==, 3);
    /* Reserved delivery modes and ExtINT send nothing; the edge waits, as masked. */
    for (uint64_t mode = 3; mode <= 7; mode++) {
        if (mode == 4 || mode == 5) {
            continue;
        }
        ioapic_set_irq(f.io, 7, false);
        entry_write(f.io, 7, mode << IOAPIC_RTE_DELMODE_SHIFT | 0x51);
        ioapic_set_irq(f.io, 7, true);
        g_assert_cmpuint(f.sent->len, ==, 3);
    }
    entry_write(f.io, 7, 0x51);
    g_assert_cmpuint(f.sent->len, ==, 4);
    fixture_fini(&f);
}

static void test_set_regs(void)
{
    Fixture f, g;
    IOAPICRegs r, back;
    Error *err = NULL;

    fixture_init(&f);
    fixture_init(&g);
    entry_write(f.io, 2, IOAPIC_RTE_LEVEL | 0x33);
    entry_write(f.io, 3, IOAPIC_RTE_MASKED | 0x34);
    ioapic_set_irq(f.io, 2, true);
    ioapic_set_irq(f.io, 3, true);
    ioapic_get_regs(f.io, &r);
    g_assert_cmphex(r.irr, ==, 0xc);

    /* Checked: a 4-bit ID, no irr bit beyond the pins; a refused load changes nothing. */
    back = r;
    back.id = 0x10;
    g_assert_false(ioapic_set_regs(g.io, &back, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "invalid IOAPIC state (id 16"));
    error_free(err);
    err = NULL;
    back = r;
    back.irr |= 1u << IOAPIC_NUM_PINS;
    g_assert_false(ioapic_set_regs(g.io, &back, &err));
    error_free(err);
    ioapic_get_regs(g.io, &back);
    g_assert_cmphex(back.ioredtbl[2], ==, IOAPIC_RTE_MASKED);

    /* Taken whole, and nothing delivered until the lines are driven again. */
    g_assert_true(ioapic_set_regs(g.io, &r, &error_abort));
    ioapic_get_regs(g.io, &back);
    g_assert_cmpmem(&back, sizeof(back), &r, sizeof(r));
    g_assert_cmpuint(g.sent->len, ==, 0);
    /* Pin 2 is in service (Remote IRR from the source): its line driven high again delivers nothing. */
    ioapic_set_irq(g.io, 2, true);
    g_assert_cmpuint(g.sent->len, ==, 0);
    eoi(g.io, 0x33);
    g_assert_cmpuint(g.sent->len, ==, 1);
    /* Pin 3's waiting edge is delivered at unmasking. */
    entry_write(g.io, 3, 0x34);
    g_assert_cmpuint(g.sent->len, ==, 2);
    g_assert_cmphex(g_array_index(g.sent, Msi, 1).data, ==, 0x34);

    /* Reset: masked, nothing pending. */
    ioapic_reset(g.io);
    ioapic_get_regs(g.io, &back);
    g_assert_cmphex(back.irr, ==, 0);
    g_assert_cmphex(back.ioredtbl[2], ==, IOAPIC_RTE_MASKED);
    fixture_fini(&f);
    fixture_fini(&g);
}

/*
 * Random steps on 4 pins (vector 0x60 + pin). After each: an unmasked
 * pin with irr set is a level pin in service (else something due was not
 * delivered), and during the step no level pin delivered that was in
 * service before it and saw neither an EOI of its vector nor its line fall.
 */
#define WALK_PINS 4

static void test_random_walk(void)
{
    for (uint32_t seed = 1; seed <= 20; seed++) {
        GRand *rnd = g_rand_new_with_seed(seed);
        Fixture f;

        fixture_init(&f);
        for (int step = 0; step < 2000; step++) {
            unsigned pin = g_rand_int_range(rnd, 0, WALK_PINS);
            int op = g_rand_int_range(rnd, 0, 5);
            bool released = false;      /* the step may end pin's service */
            IOAPICRegs before, after;
            guint sent0 = f.sent->len;

            ioapic_get_regs(f.io, &before);
            switch (op) {
            case 0:
            case 1: {
                bool level = g_rand_boolean(rnd);

                released = !level;
                ioapic_set_irq(f.io, pin, level);
                break;
            }
            case 2:
                entry_write(f.io, pin, (0x60 + pin) |
                            (g_rand_boolean(rnd) ? IOAPIC_RTE_LEVEL : 0) |
                            (g_rand_int_range(rnd, 0, 4) ? 0 : IOAPIC_RTE_MASKED));
                released = true;        /* to edge: no Remote IRR */
                break;
            case 3:
                eoi(f.io, 0x60 + pin);
                released = true;
                break;
            case 4:
                /* A migration of the state onto itself changes nothing. */
                g_assert_true(ioapic_set_regs(f.io, &before, &error_abort));
                for (unsigned p = 0; p < WALK_PINS; p++) {
                    ioapic_set_irq(f.io, p, (before.irr >> p) & 1 &&
                                   (before.ioredtbl[p] & IOAPIC_RTE_LEVEL));
                }
                break;
            }
            for (guint i = sent0; i < f.sent->len; i++) {
                unsigned p = (g_array_index(f.sent, Msi, i).data & 0xff) - 0x60;

                g_assert_cmpuint(p, <, WALK_PINS);
                if ((before.ioredtbl[p] & IOAPIC_RTE_REMOTE_IRR) &&
                    (before.ioredtbl[p] & IOAPIC_RTE_LEVEL) && !(released && p == pin)) {
                    g_error("seed %u step %d: pin %u delivered while in service", seed, step, p);
                }
            }
            ioapic_get_regs(f.io, &after);
            for (unsigned p = 0; p < WALK_PINS; p++) {
                uint64_t e = after.ioredtbl[p];

                if (!(e & IOAPIC_RTE_MASKED) && (after.irr >> p & 1) &&
                    !((e & IOAPIC_RTE_LEVEL) && (e & IOAPIC_RTE_REMOTE_IRR))) {
                    g_error("seed %u step %d op %d: pin %u left due (entry 0x%" PRIx64
                            ", irr 0x%x)", seed, step, op, p, e, after.irr);
                }
            }
        }
        fixture_fini(&f);
        g_rand_free(rnd);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/ioapic/registers", test_registers);
    g_test_add_func("/ioapic/msi-format", test_msi_format);
    g_test_add_func("/ioapic/level", test_level);
    g_test_add_func("/ioapic/edge", test_edge);
    g_test_add_func("/ioapic/set-regs", test_set_regs);
    g_test_add_func("/ioapic/random-walk", test_random_walk);
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * RAMBlock registration (system/memory.c): ram_blocks() lists blocks the
 * way QEMU's streams do, by capacity from the largest down and in creation
 * order among equals, whatever order a machine creates them in.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "system/memory.h"

static RAMBlock *block(const char *id, uint64_t size, uint64_t capacity)
{
    RAMBackendOpts o = { .id = id, .kind = RAM_BACKEND_ANON, .size = size,
                         .capacity = capacity };

    return ram_block_create(&o, &error_abort);
}

static void assert_order(const char *const *ids)
{
    GPtrArray *b = ram_blocks();
    guint n = 0;

    while (ids[n]) {
        n++;
    }
    g_assert_cmpuint(b->len, ==, n);
    for (guint i = 0; i < n; i++) {
        g_assert_cmpstr(((RAMBlock *)g_ptr_array_index(b, i))->idstr, ==, ids[i]);
    }
}

static void destroy_all(void)
{
    while (ram_blocks()->len) {
        ram_block_destroy(g_ptr_array_index(ram_blocks(), 0));
    }
}

/* microvm with ACPI and a 1 MiB vga.vram, created in the machine's order (as QEMU 10.0 lists them). */
static void test_order_by_capacity(void)
{
    static const char *const want[] = {
        "microvm.ram", "/rom@etc/acpi/tables", "vga.vram", "pc.bios",
        "/rom@etc/table-loader", "/rom@etc/acpi/rsdp", NULL,
    };

    block("microvm.ram", 64 * MiB, 0);
    block("/rom@etc/acpi/tables", 4 * KiB, 2 * MiB);
    block("pc.bios", 64 * KiB, 0);
    block("/rom@etc/table-loader", 4 * KiB, 64 * KiB);
    block("/rom@etc/acpi/rsdp", 4 * KiB, 0);
    block("vga.vram", 1 * MiB, 0);
    assert_order(want);
    g_assert_cmpuint(((RAMBlock *)g_ptr_array_index(ram_blocks(), 1))->capacity, ==, 2 * MiB);
    destroy_all();
}

/* -m 4M with an 8 MiB vga.vram: the VRAM comes first, as in QEMU's stream; ties keep creation order. */
static void test_order_small_ram_and_ties(void)
{
    static const char *const want[] = { "vga.vram", "microvm.ram", "pc.bios", NULL };
    static const char *const tie[] = { "a", "b", NULL };

    block("microvm.ram", 4 * MiB, 0);
    block("pc.bios", 64 * KiB, 0);
    block("vga.vram", 8 * MiB, 0);
    assert_order(want);
    destroy_all();
    block("a", 8 * MiB, 0);
    block("b", 8 * MiB, 0);
    assert_order(tie);
    destroy_all();
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/memory/order-by-capacity", test_order_by_capacity);
    g_test_add_func("/memory/order-small-ram-and-ties", test_order_small_ram_and_ties);
    return g_test_run();
}

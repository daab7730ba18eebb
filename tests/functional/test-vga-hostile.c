/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A guest programming Bochs VBE with nonsense (tests/guest/vbe-bad.c): each
 * case's registers read back clamped to a mode whose visible area lies in
 * VRAM (the firmware checks that from the registers and fills exactly
 * that area white), and the paused guest's screendump is that mode's size
 * and white all over: the display reads where the registers say and
 * nothing outside VRAM (an ASan build would catch a read past it).
 */
#include <glib.h>
#include "libvmtest.h"
#include "picture.h"

#define BASE_ARGS "-M microvm -enable-kvm -cpu host -nodefaults -no-user-config " \
                  "-serial stdio -m 64M "

typedef struct HostileCase {
    const char *name;
    const char *device;         /* -device ... */
    int xres, yres, xoff, yoff; /* expected; -1: not checked */
} HostileCase;

static const HostileCase cases[] = {
    { "huge", "isa-vga", 16000, 8 * 1024 * 1024 / 64000, 0, 0 },
    { "huge", "isa-vga,vgamem_mb=16", 16000, 16 * 1024 * 1024 / 64000, 0, 0 },
    { "huge", "isa-vga,vgamem_mb=1", 16000, 1024 * 1024 / 64000, 0, 0 },
    { "bpp", "isa-vga", 640, 480, 0, 0 },
    { "offsets", "isa-vga,vgamem_mb=16", 640, 16 * 1024 * 1024 / 64000, 0, 0 },
    { "offset-edge", "isa-vga", 1024, 768, 1000, 0 },
    { "zero", "isa-vga", 8, 1, 0, 0 },
    { "grow", "isa-vga", 16000, 8 * 1024 * 1024 / 64000, 0, 0 },
    { "index", "isa-vga", 640, 480, 0, 0 },
};

static void test_case(gconstpointer data)
{
    const HostileCase *c = data;
    const char *vbe;
    Picture p = { 0 };
    size_t white = 0;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn(c->name, true, BASE_ARGS "-kernel %s -device %s -append 'mode=vbebad case=%s'",
                  vmtest_firmware(), c->device, c->name);
    vbe = vm_wait_line(vm, "VBE case=", 120);
    g_test_message("%s", vbe);
    g_assert_cmpint(line_get_int(vbe, "inside"), ==, 1);
    g_assert_cmpint(line_get_int(vbe, "bpp"), ==, 32);
    g_assert_cmpint(line_get_int(vbe, "xres"), ==, c->xres);
    g_assert_cmpint(line_get_int(vbe, "yres"), ==, c->yres);
    g_assert_cmpint(line_get_int(vbe, "xoff"), ==, c->xoff);
    g_assert_cmpint(line_get_int(vbe, "yoff"), ==, c->yoff);
    if (!strcmp(c->name, "bpp") || !strcmp(c->name, "index")) {
        g_assert_cmpint(line_get_int(vbe, "kept"), ==, 1);
    }
    if (!strcmp(c->name, "index")) {
        g_assert_cmpint(line_get_int(vbe, "bank"), ==, 127);    /* masked to 8 MiB */
    }
    vm_wait_line(vm, "DRAWN case=", 120);
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'stop'}"));
    picture_screendump(vm, c->name, &p);
    g_assert_cmpint(p.w, ==, c->xres);
    g_assert_cmpint(p.h, ==, c->yres);
    for (size_t i = 0; i < (size_t)p.w * p.h * 3; i++) {
        white += p.rgb[i] == 255;
    }
    g_assert_cmpuint(white, ==, (size_t)p.w * p.h * 3);
    picture_free(&p);
    vm_kill(vm);
}

/* An unknown case name is the firmware's parameter error, not a device's. */
static void test_unknown_case(void)
{
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("unknown", true, BASE_ARGS "-kernel %s -device isa-vga "
                  "-append 'mode=vbebad case=nope'", vmtest_firmware());
    vm_wait_line(vm, "FAIL bad-param key=case", 120);
    vm_kill(vm);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *path = g_strdup_printf("/vga-hostile/%s/%s", cases[i].name,
                                                cases[i].device);

        g_test_add_data_func(path, &cases[i], test_case);
    }
    g_test_add_func("/vga-hostile/unknown-case", test_unknown_case);
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * -device isa-vga from outside: screendump's placeholder and errors (QEMU's words), the
 * vgamem_mb limits, and a migration that carries the "vga.vram" RAM
 * block and the "vbe" section while the 30 Hz display refresh (a second
 * dirty-log client) runs beside the migration's.
 *
 * Byte-exact screendumps of frames a guest drew (the firmware's mode=draw)
 * are in test-vga-draw.c; the conversion itself in tests/unit/test-vga.c.
 */
#include <glib.h>
#include <glib/gstdio.h>
#include "libvmtest.h"
#include "migtest.h"

#define BASE_ARGS "-M microvm -enable-kvm -cpu host -nodefaults -no-user-config " \
                  "-serial stdio "
#define IDLE "mode=idle mem=16 seconds=60"

static VM *start_idle(const char *name, const char *extra)
{
    VM *vm = vm_spawn(name, true, BASE_ARGS "-m 128M -kernel %s -append '" IDLE "' %s",
                      vmtest_firmware(), extra);

    vm_wait_line(vm, "READY", 120);
    return vm;
}

/* The placeholder QEMU shows before a guest sets a mode, without its line of text. */
static void assert_black_640x480(const char *file)
{
    static const char header[] = "P6\n640 480\n255\n";
    g_autofree char *data = NULL;
    gsize len;

    g_assert_true(g_file_get_contents(file, &data, &len, NULL));
    g_assert_cmpuint(len, ==, strlen(header) + 640 * 480 * 3);
    g_assert_cmpmem(data, strlen(header), header, strlen(header));
    for (gsize i = strlen(header); i < len; i++) {
        g_assert_cmpint(data[i], ==, 0);
    }
}

static void test_screendump_errors(void)
{
    g_autofree char *file = g_strdup_printf("%s/dump.ppm", vmtest_tmpdir());
    g_autofree char *hmp = NULL;
    JsonNode *info;
    g_autofree char *cmd = g_strdup_printf("{'execute': 'screendump', 'arguments': "
                                           "{'filename': '%s'}}", file);
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = start_idle("novga", "-display none");
    vm_qmp_expect_error(vm, "{'execute': 'screendump', 'arguments': {'filename': '/dev/null'}}",
                        "There is no console to take a screendump from");
    vm_kill(vm);

    vm = start_idle("vga", "-display none -device isa-vga,id=vga0");
    /* VBE is off (the firmware draws nothing): QEMU's 640x480 placeholder, black here. */
    json_node_unref(vm_qmp_ok(vm, "%s", cmd));
    assert_black_640x480(file);
    vm_qmp_expect_error(vm, "{'execute': 'screendump', 'arguments': "
                        "{'filename': '/dev/null', 'head': 1}}",
                        "'head' must be specified together with 'device'");
    vm_qmp_expect_error(vm, "{'execute': 'screendump', 'arguments': "
                        "{'filename': '/dev/null', 'device': 'nope'}}",
                        "Device 'nope' not found");
    g_unlink(file);
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'screendump', 'arguments': "
                              "{'filename': '%s', 'device': 'vga0', 'head': 0}}", file));
    assert_black_640x480(file);
    vm_qmp_expect_error(vm, "{'execute': 'screendump', 'arguments': "
                        "{'filename': '/dev/null', 'device': 'vga0', 'head': 1}}",
                        "Device vga0 (head 1) is not bound to a QemuConsole");
    vm_qmp_expect_error(vm, "{'execute': 'screendump', 'arguments': "
                        "{'filename': '/nonexistent/x.ppm'}}",
                        "failed to open file '/nonexistent/x.ppm': No such file or directory");
    vm_qmp_expect_error(vm, "{'execute': 'screendump', 'arguments': "
                        "{'filename': '/dev/null', 'format': 'png'}}",
                        "Parameter 'format' does not accept value 'png'");
    g_unlink(file);
    hmp = vm_hmp(vm, "screendump %s", file);
    g_assert_cmpstr(hmp, ==, "");
    assert_black_640x480(file);
    /* -display none: no timer, no dirty-log client; only the screendumps refreshed. */
    info = vm_qmp_ok(vm, "{'execute': 'x-query-display'}");
    g_assert_false(json_get_int(info, "dirty-client"));
    g_assert_cmpint(json_get_int(info, "refreshes"), ==, 4);
    json_node_unref(info);
    vm_kill(vm);
}

typedef struct BadVGA {
    const char *args;
    const char *expect;
} BadVGA;

static void test_bad_options(void)
{
    static const BadVGA bad[] = {
        { "-device isa-vga,vgamem_mb=512", "would overlap microvm's MMIO" },
        { "-device isa-vga,vgamem_mb=300", "gives 512 MiB of VRAM" },
        { "-device isa-vga,vgamem_mb=abc", "vgamem_mb" },
        { "-device isa-vga,bogus=1", "bogus" },
        { "-device isa-vga -vga std", "Only one global VGA device can be used at a time" },
        { "-vga cirrus", "only 'none' is accepted" },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        VM *vm = vm_spawn("bad", false, BASE_ARGS "-m 128M -kernel %s %s", vmtest_firmware(),
                          bad[i].args);
        int status = vm_wait_exit(vm, 60);

        g_assert_cmpint(status, ==, 1);
        if (!strstr(vm->stderr_text->str, bad[i].expect)) {
            g_error("%s: expected '%s' in: %s", bad[i].args, bad[i].expect,
                    vm->stderr_text->str);
        }
        vm_kill(vm);
    }
}

/*
 * A verifying guest with isa-vga and the display refreshing (no -display
 * none) migrates into a file: the stream lists "vga.vram" (16 MiB) and the
 * "vbe" section; a destination with isa-vga loads it and the guest runs
 * on; one without the device refuses the unknown block.
 */
static void test_migrate_vram_and_vbe(void)
{
    const char *append = "mode=verify mem=32";
    g_autofree char *file = g_strdup_printf("%s/vga.stream", vmtest_tmpdir());
    g_autofree char *incoming = g_strdup_printf("exec:cat %s", file);
    g_autofree char *summary = NULL, *desc = NULL, *dumpdir = NULL, *dumparg = NULL;
    g_autofree char *vram = NULL;
    gsize vram_len;
    JsonNode *info;
    VM *src, *dst;
    int pass;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source_extra("128M", append, "-device isa-vga,id=vga0");
    pass = migtest_last_pass(src);
    /* The default display refreshes at 30 Hz through its own dirty-log client. */
    info = vm_qmp_ok(src, "{'execute': 'x-query-display'}");
    g_assert_true(json_get_int(info, "dirty-client"));
    g_assert_cmpint(json_get_int(info, "refreshes"), >, 0);
    json_node_unref(info);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': "
                              "{'uri': 'exec:cat > %s'}}", file));
    info = vm_wait_migration(src, "completed|failed", 300);
    g_assert_cmpstr(json_get_str(info, "status"), ==, "completed");
    json_node_unref(info);
    vm_kill(src);

    summary = vmtest_analyze_stream(file, "summary", "");
    g_assert_nonnull(strstr(summary, "\"vga.vram\""));
    desc = vmtest_analyze_stream(file, "desc", "");
    g_assert_nonnull(strstr(desc, "\"vbe\""));
    g_assert_nonnull(strstr(desc, "\"palette\""));
    dumpdir = g_strdup_printf("%s/vga-dump", vmtest_tmpdir());
    g_mkdir_with_parents(dumpdir, 0700);
    dumparg = g_strdup_printf("--dump-memory %s", dumpdir);
    g_free(vmtest_analyze_stream(file, "summary", dumparg));
    {
        g_autofree char *path = g_strdup_printf("%s/vga.vram.bin", dumpdir);

        g_assert_true(g_file_get_contents(path, &vram, &vram_len, NULL));
        g_assert_cmpuint(vram_len, ==, 16 << 20);
    }

    dst = migtest_start_dest_extra("128M", append, false, incoming, "-device isa-vga,id=vga0");
    migtest_wait_incoming_done(dst);
    migtest_assert_guest_continues(dst, append, pass);
    vm_kill(dst);

    dst = vm_spawn("dst", false, MIGTEST_BASE_ARGS "-m 128M -kernel %s -append '%s' -incoming '%s'",
                   vmtest_firmware(), append, incoming);
    g_assert_cmpint(vm_wait_exit(dst, 60), ==, 1);
    g_assert_nonnull(strstr(dst->stderr_text->str,
                            "Unknown ramblock \"vga.vram\", cannot accept migration"));
    vm_kill(dst);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vga/screendump-errors", test_screendump_errors);
    g_test_add_func("/vga/bad-options", test_bad_options);
    g_test_add_func("/vga/migrate-vram-and-vbe", test_migrate_vram_and_vbe);
    return g_test_run();
}

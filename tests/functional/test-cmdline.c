/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Bad command lines: every one must exit with status 1 and one clear,
 * QEMU-style message on stderr, and never crash.
 */
#include <string.h>
#include "libvmtest.h"

typedef struct BadCase {
    const char *args;           /* %s = firmware */
    const char *expect;         /* substring of stderr */
} BadCase;

static const BadCase bad_cases[] = {
    { "-nonsense", "-nonsense: invalid option" },
    { "-m", "-m: requires an argument" },
    { "-m 2X -kernel %s", "-m 2X: Parameter 'size' expects a non-negative number below 2^64" },
    { "-m 0 -kernel %s", "-m 0: Invalid RAM size" },
    { "-smp foo -kernel %s", "-smp foo: Parameter 'cpus' expects a number" },
    { "-M pc -kernel %s", "-M pc: unsupported machine type" },
    { "-accel tcg -kernel %s", "-accel tcg: invalid accelerator tcg" },
    { "-accel kvm,dirty-ring-size=1000 -kernel %s", "must be a power of two" },
    { "-cpu host,+nonexistent -kernel %s", "Property 'host-x86_64-cpu.nonexistent' not found" },
    { "-cpu pentium -kernel %s", "unable to find CPU model 'pentium'" },
    { "-device e1000 -kernel %s", "-device e1000: 'e1000' is not a valid device model name" },
    { "-object memory-backend-ram,id=m0 -kernel %s", "can't create backend with size 0" },
    { "-object memory-backend-foo,id=m0,size=1G -kernel %s",
      "Parameter 'qom-type' does not accept value 'memory-backend-foo'" },
    { "-object memory-backend-ram,id=m0,size=1G,share=maybe -kernel %s",
      "Parameter 'share' expects 'on' or 'off'" },
    { "-machine memory-backend=nope -kernel %s", "Memory backend 'nope' not found" },
    { "-machine max-ram-below-4g=5G -kernel %s", "expects size less than or equal to 4G" },
    { "-machine max-ram-below-4g=1M -kernel %s", "expects a multiple of 2M, at least 16M" },
    { "-kernel /nonexistent/kernel", "could not open kernel file '/nonexistent/kernel'" },
    { "-kernel /etc/passwd", "could not load kernel '/etc/passwd': not an ELF file" },
    { "-m 1M -kernel %s", "but -m is only" },
    { "-serial bogus:x -kernel %s", "-serial bogus:x: 'bogus:x' is not a valid char driver" },
    { "-qmp unix:/nonexistent-dir/q.sock,server=on,wait=off -kernel %s", "Failed to bind socket" },
    { "-mon chardev=missing -kernel %s", "chardev 'missing' not found" },
    { "-display gtk -kernel %s", "Display 'gtk' is not available" },
    { "-global foo.bar=1 -kernel %s", "driver 'foo' not found" },
    { "-global migration.x-lazy-restore=maybe -kernel %s",
      "Property 'migration.x-lazy-restore' expects on or off" },
    { "-global migration.x-mapped-ram=on -global migration.x-xbzrle=on -kernel %s",
      "Mapped-ram migration is incompatible with xbzrle" },
    { "somefile.img", "disk images are not supported" },
    /* -drive and -blockdev, with QEMU 7.2's words (its binary checked on each). */
    { "-drive file=/nonexistent.img,if=none,id=d0 -kernel %s",
      "-drive file=/nonexistent.img,if=none,id=d0: Could not open '/nonexistent.img': "
      "No such file or directory" },
    { "-drive file=/x.img,if=none,format=bogus -kernel %s", "Unknown driver 'bogus'" },
    { "-drive file=/x.img,if=none,cache=bogus -kernel %s", "invalid cache option" },
    { "-drive file=/x.img,if=none,werror=bogus -kernel %s", "'bogus' invalid write error action" },
    { "-drive file=/x.img,if=virtio -kernel %s", "No 'PCI' bus found for device 'virtio-blk-pci'" },
    { "-drive file=/x.img,if=none,format=raw,aio=native -kernel %s",
      "aio=native was specified, but it requires cache.direct=on, which was not specified." },
    { "-drive file=/x.img,if=none,id=#d -kernel %s", "Parameter 'id' expects an identifier" },
    { "-drive file=/,if=none,format=raw,readonly=on -kernel %s",
      "'file' driver requires '/' to be a regular file" },
    { "-blockdev driver=bogus,node-name=n0 -kernel %s",
      "Parameter 'driver' does not accept value 'bogus'" },
    { "-blockdev driver=file,filename=/x.img -kernel %s",
      "'node-name' must be specified for the root node" },
    { "-blockdev driver=raw,node-name=n0,file=nope -kernel %s",
      "Cannot find device='nope' nor node-name='nope'" },
    { "-blockdev driver=raw,node-name=n0,file.driver=file,file.filename=/x.img,file.foo=1 "
      "-kernel %s", "Parameter 'file.foo' is unexpected" },
    { "-blockdev '{\"driver\":\"raw\",\"node-name\":\"n0\",\"file\":\"nope\"}' -kernel %s",
      "Cannot find device='nope' nor node-name='nope'" },
};

static void test_bad_cmdline(gconstpointer data)
{
    const BadCase *c = data;
    g_autofree char *args = g_strdup_printf(c->args, vmtest_firmware());
    VM *vm = vm_spawn("bad", false, "-nodefaults %s", args);
    int status = vm_wait_exit(vm, 60);

    if (status != 1 || !strstr(vm->stderr_text->str, c->expect) ||
        !g_str_has_prefix(vm->stderr_text->str, "qemu-system-x86_64: ")) {
        g_printerr("args: %s\nstatus: %d\nstderr: %s\n", args, status, vm->stderr_text->str);
    }
    g_assert_cmpint(status, ==, 1);
    g_assert_true(g_str_has_prefix(vm->stderr_text->str, "qemu-system-x86_64: "));
    g_assert_nonnull(strstr(vm->stderr_text->str, c->expect));
    vm_kill(vm);
}

static void test_help_and_version(void)
{
    VM *vm = vm_spawn("version", false, "-version");

    g_assert_cmpint(vm_wait_exit(vm, 30), ==, 0);
    vm_kill(vm);
    vm = vm_spawn("mhelp", false, "-M help");
    g_assert_cmpint(vm_wait_exit(vm, 30), ==, 0);
    g_assert_cmpuint(vm_count_lines(vm, "microvm"), ==, 1);
    vm_kill(vm);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(bad_cases); i++) {
        g_autofree char *name = g_strdup_printf("/cmdline/bad/%zu", i);
        g_test_add_data_func(name, &bad_cases[i], test_bad_cmdline);
    }
    g_test_add_func("/cmdline/help-version", test_help_and_version);
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A guest that programs its virtio-net device badly, on real KVM: the
 * firmware's mode=virtiobad does one hostile thing per case (rings outside
 * RAM, a descriptor loop, an oversized descriptor, indices beyond the
 * queue, ...). For each, the VMM must not crash (the exit status is the
 * firmware's, through isa-debug-exit), must print exactly one warning for
 * the broken device, in its own words, and the guest must see
 * DEVICE_NEEDS_RESET, reset the device and get a working one back (both
 * PASS lines). One case is a refusal instead (a feature the device did not
 * offer: FEATURES_OK reads back clear), and that prints nothing.
 */
#include <string.h>
#include "libvmtest.h"

#define VM_ARGS "-M microvm -enable-kvm -cpu host -m 64M -nodefaults -no-user-config " \
                "-nographic -serial stdio -netdev user,id=n0 " \
                "-device virtio-net-device,netdev=n0 " \
                "-device isa-debug-exit,iobase=0xf4,iosize=0x04 "

#define WARN_PREFIX "warning: virtio-net-device at 0xfeb02e00: "
#define WARN_SUFFIX "; device marked broken until the driver resets it"

typedef struct HostileCase {
    const char *name;
    /* What the VMM says, between WARN_PREFIX and WARN_SUFFIX; NULL: refused, not broken. */
    const char *warning;
} HostileCase;

/*
 * The firmware's tx descriptors are taken from the top: its first chain
 * starts at 255. Ring addresses are the firmware's (64 MiB of RAM).
 */
static const HostileCase cases[] = {
    { "desc-outside-ram", "queue 1: descriptor ring 0x3fff800+0x1000 is outside guest RAM" },
    { "avail-outside-ram", "queue 1: driver ring 0x10000000000+0x206 is outside guest RAM" },
    { "used-outside-ram", "queue 1: device ring 0xfeb02e00+0x806 is outside guest RAM" },
    { "desc-misaligned", "queue 1: descriptor ring at 0x" },
    { "queue-num-bad", "queue 1: size 3 is not a power of two" },
    { "queue-num-big", "queue 1: size 512 is above the maximum 256" },
    { "desc-loop", "queue 1: descriptor chain from 255 is longer than 256 (a loop)" },
    { "desc-oversized", "queue 1: descriptor 255 buffer 0x" },
    { "desc-past-end", "queue 1: descriptor 255 buffer 0x3fffff8+0x40 is outside guest RAM" },
    { "next-beyond", "queue 1: descriptor 255 has next 256, beyond 256" },
    { "index-beyond", "queue 1: avail ring names head 256, beyond the queue size 256" },
    { "avail-idx-jump", "queue 1: avail idx 257 is 257 ahead of 0, more than the queue size 256" },
    { "indirect-bad", "queue 1: indirect table 0x10000000000+0x80 is outside guest RAM" },
    { "indirect-unnegotiated", "queue 1: descriptor 255 is indirect, but "
                               "VIRTIO_RING_F_INDIRECT_DESC was not negotiated" },
    { "tx-short", "TX chain of 4 bytes is shorter than the 12-byte header" },
    { "rx-readonly", "RX buffer of 0 bytes cannot hold the 12-byte header" },
    { "driver-ok-early", "driver set DRIVER_OK without FEATURES_OK" },
    { "features-unoffered", NULL },
};

/* The non-empty lines of the VMM's stderr. */
static GPtrArray *stderr_lines(const VM *vm)
{
    g_auto(GStrv) all = g_strsplit(vm->stderr_text->str, "\n", -1);
    GPtrArray *out = g_ptr_array_new_with_free_func(g_free);

    for (char **p = all; *p; p++) {
        if (**p) {
            g_ptr_array_add(out, g_strdup(*p));
        }
    }
    return out;
}

static void test_case(gconstpointer data)
{
    const HostileCase *c = data;
    g_autofree char *pass = g_strdup_printf("PASS case=%s status=", c->name);
    g_autofree char *recovered = g_strdup_printf("PASS case=%s recovered=1 ", c->name);
    g_autoptr(GPtrArray) err = NULL;
    const char *l, *w;
    int64_t status;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn(c->name, false, VM_ARGS "-kernel %s -append 'mode=virtiobad case=%s'",
                  vmtest_firmware(), c->name);
    l = vm_wait_line(vm, "READY mode=virtiobad", 60);
    g_assert_nonnull(strstr(l, c->warning ? " expect=needs-reset " : " expect=refused "));
    l = vm_wait_line(vm, pass, 60);
    status = line_get_int(l, "status");
    if (c->warning) {
        g_assert_cmpint(status & 0x40, ==, 0x40);       /* DEVICE_NEEDS_RESET */
    } else {
        g_assert_cmpint(status & 0x48, ==, 0);          /* no FEATURES_OK, not broken */
    }
    vm_wait_line(vm, recovered, 60);
    vm_wait_line(vm, "EXIT code=0", 30);
    /* isa-debug-exit: (0 << 1) | 1, the firmware's code; a crash would be 128 + signal. */
    g_assert_cmpint(vm_wait_exit(vm, 30), ==, 1);
    g_assert_cmpuint(vm_count_lines(vm, "FAIL"), ==, 0);

    /* One line, the device's, in the VMM's words: nothing else went wrong. */
    err = stderr_lines(vm);
    if (!c->warning) {
        if (err->len) {
            g_error("%s: a refusal is no breakage, yet stderr has:\n%s", c->name,
                    vm->stderr_text->str);
        }
        vm_kill(vm);
        return;
    }
    if (err->len != 1) {
        g_error("%s: %u stderr lines, expected the one warning:\n%s", c->name, err->len,
                vm->stderr_text->str);
    }
    w = strstr(err->pdata[0], WARN_PREFIX);
    g_assert_nonnull(w);
    w += strlen(WARN_PREFIX);
    g_assert_true(g_str_has_prefix(w, c->warning));
    g_assert_true(g_str_has_suffix(w, WARN_SUFFIX));
    vm_kill(vm);
}

static void test_unknown_case(void)
{
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("nocase", false, VM_ARGS "-kernel %s -append 'mode=virtiobad case=nosuch'",
                  vmtest_firmware());
    vm_wait_line(vm, "FAIL bad-param key=case", 60);
    g_assert_cmpint(vm_wait_exit(vm, 30), ==, 5);       /* EXIT_PARAM */
    vm_kill(vm);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/virtio-hostile/unknown-case", test_unknown_case);
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *path = g_strdup_printf("/virtio-hostile/%s", cases[i].name);

        g_test_add_data_func(path, &cases[i], test_case);
    }
    return g_test_run();
}

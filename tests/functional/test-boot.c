/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Boot the workload firmware on real KVM in each mode and check its lines:
 * verify passes, dirty rate control, memuser/idle STAT lines, RAM above
 * 4 GiB, several vCPUs, a triple-faulting guest, and the same firmware
 * under QEMU 7.2 when that binary is installed.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "libvmtest.h"

#define BASE_ARGS "-M microvm -enable-kvm -cpu host -nodefaults -no-user-config -nographic " \
                  "-serial stdio -device isa-debug-exit,iobase=0xf4,iosize=0x04 "

static void test_verify_passes(void)
{
    VM *vm;
    const char *l;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("verify", false, BASE_ARGS "-m 512M -kernel %s -append 'mode=verify mem=256 passes=8'",
                  vmtest_firmware());
    l = vm_wait_line(vm, "READY", 60);
    g_assert_cmpint(line_get_int(l, "mem_mb"), ==, 256);
    for (int n = 1; n <= 8; n++) {
        l = vm_wait_line(vm, "PASS", 60);
        g_assert_cmpint(line_get_int(l, "n"), ==, n);
    }
    vm_wait_line(vm, "EXIT code=0", 30);
    /* isa-debug-exit: status (0 << 1) | 1 */
    g_assert_cmpint(vm_wait_exit(vm, 30), ==, 1);
    g_assert_cmpuint(vm_count_lines(vm, "FAIL"), ==, 0);
    vm_kill(vm);
}

static void test_dirty_rate(void)
{
    VM *vm;
    int good = 0;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("dirty", false, BASE_ARGS "-m 512M -kernel %s -append 'mode=dirty mem=128 rate=100 seconds=6'",
                  vmtest_firmware());
    vm_wait_line(vm, "READY", 60);
    /* Skip the first STAT (partial period); then the rate must hold within 10%. */
    vm_wait_line(vm, "STAT", 30);
    for (int i = 0; i < 4; i++) {
        const char *l = vm_wait_line(vm, "STAT", 30);
        double r = line_get_double(l, "rate_mbps");
        g_assert_cmpfloat(r, >=, 0);
        if (r > 90 && r < 110) {
            good++;
        }
        g_assert_cmpint(line_get_int(l, "max_write_us"), >=, 0);
        g_assert_cmpint(line_get_int(l, "p99_write_us"), >=, 0);
    }
    g_assert_cmpint(good, >=, 3);
    g_assert_cmpint(vm_wait_exit(vm, 60), ==, 1);
    vm_kill(vm);
}

static void test_dirty_unlimited(void)
{
    VM *vm;
    const char *l;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("dirty0", false, BASE_ARGS "-m 512M -kernel %s -append 'mode=dirty mem=128 rate=0 pattern=seq seconds=3'",
                  vmtest_firmware());
    vm_wait_line(vm, "READY", 60);
    vm_wait_line(vm, "STAT", 30);
    l = vm_wait_line(vm, "STAT", 30);
    /* Unlimited must beat the rate-limited case by far. */
    g_assert_cmpfloat(line_get_double(l, "rate_mbps"), >, 300);
    g_assert_cmpint(vm_wait_exit(vm, 60), ==, 1);
    vm_kill(vm);
}

static void test_memuser_and_idle(void)
{
    static const char *const modes[] = {
        "mode=memuser mem=64 chunk=16 idle_ms=200 seconds=3",
        "mode=idle mem=16 seconds=3",
    };

    if (!vmtest_require_kvm()) {
        return;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(modes); i++) {
        VM *vm = vm_spawn("mode", false, BASE_ARGS "-m 256M -kernel %s -append '%s'",
                          vmtest_firmware(), modes[i]);
        const char *l = vm_wait_line(vm, "READY", 60);

        g_assert_nonnull(strstr(l, i == 0 ? "mode=memuser" : "mode=idle"));
        l = vm_wait_line(vm, "STAT", 30);
        g_assert_cmpint(line_get_int(l, "t_ms"), >, 0);
        if (i == 1) {
            g_assert_cmpint(line_get_int(l, "mb"), ==, 0);
        }
        vm_wait_line(vm, "EXIT code=0", 30);
        g_assert_cmpint(vm_wait_exit(vm, 30), ==, 1);
        vm_kill(vm);
    }
}

static bool buffer_all(const uint8_t *p, size_t len, uint8_t byte)
{
    for (size_t i = 0; i < len; i++) {
        if (p[i] != byte) {
            return false;
        }
    }
    return true;
}

/* Reads @len bytes of guest memory at @gpa with pmemsave. */
static uint8_t *guest_bytes(VM *vm, uint64_t gpa, size_t len)
{
    g_autofree char *path = g_strdup_printf("%s/fill.pmem", vmtest_tmpdir());
    gchar *data;
    gsize n;

    json_node_unref(vm_qmp_ok(vm, "{'execute': 'pmemsave', 'arguments': {'val': %" PRIu64
                              ", 'size': %zu, 'filename': '%s'}}", gpa, len, path));
    g_assert_true(g_file_get_contents(path, &data, &n, NULL));
    g_assert_cmpuint(n, ==, len);
    return (uint8_t *)data;
}

/* The compressible fills: "text" is lines of words, "sparse" 64 random bytes then zeroes per page. */
static void test_fills(void)
{
    VM *vm;
    const char *l;
    g_autofree uint8_t *text = NULL, *sparse = NULL;
    size_t spaces = 0, newlines = 0;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("fill", true, BASE_ARGS "-m 64M -kernel %s -append 'mode=idle mem=8 fill=text'",
                  vmtest_firmware());
    l = vm_wait_line(vm, "READY", 60);
    g_assert_nonnull(strstr(l, " fill=text "));
    text = guest_bytes(vm, 0x400000 + 5 * 4096, 4096);
    for (size_t i = 0; i < 4096; i++) {
        g_assert_true(g_ascii_islower(text[i]) || text[i] == ' ' || text[i] == '\n');
        spaces += text[i] == ' ';
        newlines += text[i] == '\n';
    }
    g_assert_cmpuint(spaces, >, 400);
    g_assert_cmpuint(newlines, >, 40);
    vm_kill(vm);

    vm = vm_spawn("fill", true, BASE_ARGS "-m 64M -kernel %s -append 'mode=idle mem=8 fill=sparse'",
                  vmtest_firmware());
    l = vm_wait_line(vm, "READY", 60);
    g_assert_nonnull(strstr(l, " fill=sparse "));
    sparse = guest_bytes(vm, 0x400000 + 7 * 4096, 4096);
    g_assert_false(buffer_all(sparse, 64, 0));
    g_assert_true(buffer_all(sparse + 64, 4096 - 64, 0));
    vm_kill(vm);
}

/*
 * RAM above max-ram-below-4g lives at 4 GiB: a second KVM slot of the same
 * RAMBlock, and a second range in the guest's memory map.
 */
static void test_highmem(void)
{
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("highmem", true, BASE_ARGS "-m 1G -machine max-ram-below-4g=512M -kernel %s "
                  "-append 'mode=verify mem=896 passes=2'",
                  vmtest_firmware());
    vm_wait_line(vm, "READY", 120);
    vm_wait_line(vm, "PASS n=1", 120);
    vm_wait_line(vm, "PASS n=2", 120);
    g_assert_cmpint(vm_wait_exit(vm, 60), ==, 1);
    g_assert_cmpuint(vm_count_lines(vm, "FAIL"), ==, 0);
    vm_kill(vm);
}

static void test_smp(void)
{
    VM *vm;
    JsonNode *cpus;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("smp", true, BASE_ARGS "-smp 2 -m 256M -kernel %s -append 'mode=verify mem=32 passes=2'",
                  vmtest_firmware());
    cpus = vm_qmp_ok(vm, "{'execute': 'query-cpus-fast'}");
    g_assert_cmpuint(json_array_get_length(json_node_get_array(cpus)), ==, 2);
    json_node_unref(cpus);
    vm_wait_line(vm, "PASS n=2", 60);
    g_assert_cmpint(vm_wait_exit(vm, 30), ==, 1);
    vm_kill(vm);
}

/*
 * A PVH ELF whose entry is "ud2" with no IDT: #UD -> #NP -> #DF -> triple
 * fault. The VM must shut down cleanly (status 0, a SHUTDOWN event).
 */
static char *write_triple_fault_elf(void)
{
    static const unsigned char code[] = { 0x0f, 0x0b };     /* ud2 */
    unsigned char elf[0x200] = { 0 };
    char *path = g_build_filename(vmtest_tmpdir(), "triple.elf", NULL);
    /* ELF32 header */
    memcpy(elf, "\x7f" "ELF\x01\x01\x01", 7);
    elf[16] = 2;                /* ET_EXEC */
    elf[18] = 3;                /* EM_386 */
    elf[20] = 1;                /* EV_CURRENT */
    *(uint32_t *)(elf + 24) = 0x100000;     /* e_entry */
    *(uint32_t *)(elf + 28) = 52;           /* e_phoff */
    *(uint16_t *)(elf + 40) = 52;           /* e_ehsize */
    *(uint16_t *)(elf + 42) = 32;           /* e_phentsize */
    *(uint16_t *)(elf + 44) = 2;            /* e_phnum */
    /* PT_LOAD: file 0x100.. -> 0x100000 */
    *(uint32_t *)(elf + 52) = 1;
    *(uint32_t *)(elf + 56) = 0x100;
    *(uint32_t *)(elf + 60) = 0x100000;
    *(uint32_t *)(elf + 64) = 0x100000;
    *(uint32_t *)(elf + 68) = sizeof(code);
    *(uint32_t *)(elf + 72) = sizeof(code);
    *(uint32_t *)(elf + 76) = 5;
    /* PT_NOTE at 0x180 */
    *(uint32_t *)(elf + 84) = 4;
    *(uint32_t *)(elf + 88) = 0x180;
    *(uint32_t *)(elf + 100) = 20;
    memcpy(elf + 0x100, code, sizeof(code));
    *(uint32_t *)(elf + 0x180) = 4;         /* namesz */
    *(uint32_t *)(elf + 0x184) = 4;         /* descsz */
    *(uint32_t *)(elf + 0x188) = 18;        /* XEN_ELFNOTE_PHYS32_ENTRY */
    memcpy(elf + 0x18c, "Xen", 4);
    *(uint32_t *)(elf + 0x190) = 0x100000;
    g_assert_true(g_file_set_contents(path, (char *)elf, sizeof(elf), NULL));
    return path;
}

static void test_triple_fault(void)
{
    g_autofree char *elf = NULL;
    JsonNode *ev;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    elf = write_triple_fault_elf();
    /* As in QEMU: the machine resets, boots the same image, faults again. */
    vm = vm_spawn("triple", true, "-M microvm -enable-kvm -nodefaults -m 64M -S -kernel %s", elf);
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'cont'}"));
    for (int i = 0; i < 3; i++) {
        ev = vm_wait_event(vm, "RESET", 120);
        g_assert_true(json_get_bool(ev, "data.guest"));
        g_assert_cmpstr(json_get_str(ev, "data.reason"), ==, "guest-reset");
        json_node_unref(ev);
    }
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'quit'}"));
    vm_wait_exit(vm, 30);
    vm_kill(vm);

    /* -no-reboot: the reset is a shutdown, and the process ends. */
    vm = vm_spawn("triple", true, "-M microvm -enable-kvm -nodefaults -m 64M -S -no-reboot "
                  "-kernel %s", elf);
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'cont'}"));
    ev = vm_wait_event(vm, "SHUTDOWN", 120);
    g_assert_true(json_get_bool(ev, "data.guest"));
    g_assert_cmpstr(json_get_str(ev, "data.reason"), ==, "guest-reset");
    json_node_unref(ev);
    g_assert_cmpint(vm_wait_exit(vm, 30), ==, 0);
    vm_kill(vm);
}

/* Host memory from each backend: memfd (shared), a file (mem-path, prealloc). */
static void test_memory_backends(void)
{
    g_autofree char *file = g_build_filename(vmtest_tmpdir(), "guest-ram", NULL);
    const char *objs[] = {
        "-object memory-backend-memfd,id=mem0,size=256M,share=on -machine memory-backend=mem0",
        NULL,
        "-object memory-backend-ram,id=mem0,size=256M,prealloc=on -machine memory-backend=mem0",
    };
    g_autofree char *fileobj = g_strdup_printf(
        "-object memory-backend-file,id=mem0,size=256M,mem-path=%s,share=on,prealloc=on "
        "-machine memory-backend=mem0", file);

    if (!vmtest_require_kvm()) {
        return;
    }
    objs[1] = fileobj;
    for (size_t i = 0; i < G_N_ELEMENTS(objs); i++) {
        VM *vm = vm_spawn("backend", true, BASE_ARGS "%s -kernel %s -append 'mode=verify mem=128 passes=3'",
                          objs[i], vmtest_firmware());
        char *out = vm_hmp(vm, "info kvm");

        g_free(out);
        vm_wait_line(vm, "PASS n=3", 60);
        g_assert_cmpint(vm_wait_exit(vm, 30), ==, 1);
        g_assert_cmpuint(vm_count_lines(vm, "FAIL"), ==, 0);
        vm_kill(vm);
    }
    /* The file backend really holds the guest's RAM: the work area has the firmware's marks. */
    {
        g_autofree char *data = NULL;
        gsize len;
        g_assert_true(g_file_get_contents(file, &data, &len, NULL));
        g_assert_cmpuint(len, ==, 256 * 1024 * 1024);
        g_assert_cmphex(*(uint64_t *)(data + 0x400000 + 8), ==, 0x400000);
    }
}

static void test_under_qemu72(void)
{
    const char *peer;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    peer = vmtest_require_qemu72();
    if (!peer) {
        return;
    }
    vm = vm_spawn_binary("qemu72", peer, false,
                         "-M microvm -enable-kvm -cpu host,-arch-capabilities -m 512M -nodefaults "
                         "-no-user-config -nographic -serial stdio -kernel %s "
                         "-append 'mode=verify mem=128 passes=3' "
                         "-device isa-debug-exit,iobase=0xf4,iosize=0x04", vmtest_firmware());
    vm_wait_line(vm, "READY mode=verify", 60);
    vm_wait_line(vm, "PASS n=3", 60);
    g_assert_cmpint(vm_wait_exit(vm, 30), ==, 1);
    g_assert_cmpuint(vm_count_lines(vm, "FAIL"), ==, 0);
    vm_kill(vm);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/boot/verify-passes", test_verify_passes);
    g_test_add_func("/boot/dirty-rate", test_dirty_rate);
    g_test_add_func("/boot/dirty-unlimited", test_dirty_unlimited);
    g_test_add_func("/boot/memuser-idle", test_memuser_and_idle);
    g_test_add_func("/boot/fills", test_fills);
    g_test_add_func("/boot/highmem", test_highmem);
    g_test_add_func("/boot/smp", test_smp);
    g_test_add_func("/boot/memory-backends", test_memory_backends);
    g_test_add_func("/boot/triple-fault", test_triple_fault);
    g_test_add_func("/boot/qemu72-same-firmware", test_under_qemu72);
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * -device isa-vga from outside: screendump's placeholder and errors (QEMU's words), the
 * vgamem_mb limits, and a migration that carries the "vga.vram" RAM
 * block and the "vga" section while the 30 Hz display refresh (a second
 * dirty-log client) runs beside the migration's.
 *
 * Byte-exact screendumps of frames a guest drew (the firmware's mode=draw)
 * are in test-vga-draw.c; the conversion itself in tests/unit/test-vga.c.
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
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

static void screendump_expect_error(VM *vm, const char *file, const char *part)
{
    g_autofree char *cmd = g_strdup_printf("{'execute': 'screendump', 'arguments': "
                                           "{'filename': '%s'}}", file);

    vm_qmp_expect_error(vm, cmd, part);
}

static void assert_content(const char *file, const char *want)
{
    g_autofree char *data = NULL;

    g_assert_true(g_file_get_contents(file, &data, NULL, NULL));
    g_assert_cmpstr(data, ==, want);
}

static guint count_entries(const char *dir)
{
    GDir *d = g_dir_open(dir, 0, NULL);
    guint n = 0;

    g_assert_nonnull(d);
    while (g_dir_read_name(d)) {
        n++;
    }
    g_dir_close(d);
    return n;
}

/*
 * A small tmpfs in our own mount namespace (the VM spawned after inherits
 * it), so that a screendump fails for real with ENOSPC. False if we may
 * not mount (not root): that case is skipped.
 */
static bool mount_small_tmpfs(const char *dir)
{
    g_assert_cmpint(g_mkdir(dir, 0755), ==, 0);
    if (unshare(CLONE_NEWNS) < 0 ||
        mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
        mount("tmpfs", dir, "tmpfs", 0, "size=64k") < 0) {
        g_test_message("no small tmpfs (%s): the ENOSPC case is skipped", g_strerror(errno));
        return false;
    }
    return true;
}

/*
 * fs.protected_symlinks: a link in a sticky world-writable directory is
 * followed only for its owner (or the directory's).
 */
static bool protected_symlinks(void)
{
    g_autofree char *v = NULL;

    return g_file_get_contents("/proc/sys/fs/protected_symlinks", &v, NULL, NULL) &&
           v[0] == '1';
}

/*
 * A failed screendump loses nothing, and a target that is not a regular
 * file is refused before it is opened (issue 33: screendump onto /dev/full
 * as root unlinked the host's /dev/full). The device node here is our own,
 * made with /dev/full's numbers in the test's directory.
 */
static void test_screendump_target(void)
{
    g_autofree char *dir = g_strdup_printf("%s/targets", vmtest_tmpdir());
    g_autofree char *node = g_strdup_printf("%s/full", dir);
    g_autofree char *fifo = g_strdup_printf("%s/fifo", dir);
    g_autofree char *to_node = g_strdup_printf("%s/to-full", dir);
    g_autofree char *old = g_strdup_printf("%s/old.ppm", dir);
    g_autofree char *real = g_strdup_printf("%s/real.ppm", dir);
    g_autofree char *link = g_strdup_printf("%s/link.ppm", dir);
    g_autofree char *dangling = g_strdup_printf("%s/dangling.ppm", dir);
    g_autofree char *dirlink = g_strdup_printf("%s/dirlink", dir);
    g_autofree char *sticky = g_strdup_printf("%s/sticky", dir);
    g_autofree char *sticky_ours = g_strdup_printf("%s/ours.ppm", sticky);
    g_autofree char *secret = g_strdup_printf("%s/secret", dir);
    g_autofree char *planted = g_strdup_printf("%s/vm1.ppm", sticky);
    g_autofree char *theirs = g_strdup_printf("%s/theirs.ppm", sticky);
    g_autofree char *planted_dir = g_strdup_printf("%s/up", sticky);
    g_autofree char *planted_dir_file = g_strdup_printf("%s/up/secret", sticky);
    g_autofree char *small = g_strdup_printf("%s/small", dir);
    g_autofree char *small_old = g_strdup_printf("%s/old.ppm", small);
    bool have_small;
    struct stat st;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
    if (mknod(node, S_IFCHR | 0666, makedev(1, 7)) < 0) {
        vmtest_skip("mknod needs CAP_MKNOD");
        return;
    }
    g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
    have_small = mount_small_tmpfs(small);
    vm = start_idle("vga", "-display none -device isa-vga");

    screendump_expect_error(vm, node, "it exists and is not a regular file");
    g_assert_cmpint(lstat(node, &st), ==, 0);
    g_assert_true(S_ISCHR(st.st_mode));
    g_assert_cmpuint(st.st_rdev, ==, makedev(1, 7));
    /* Never opened: a FIFO without a reader would block the monitor. */
    screendump_expect_error(vm, fifo, "it exists and is not a regular file");
    g_assert_cmpint(lstat(fifo, &st), ==, 0);
    g_assert_true(S_ISFIFO(st.st_mode));
    screendump_expect_error(vm, dir, "it exists and is not a regular file");
    /* A symlink is refused whatever it names, and both stay. */
    g_assert_cmpint(symlink("full", to_node), ==, 0);
    screendump_expect_error(vm, to_node, "it is a symbolic link");
    g_assert_cmpint(lstat(to_node, &st), ==, 0);
    g_assert_true(S_ISLNK(st.st_mode));
    g_assert_cmpint(stat(to_node, &st), ==, 0);
    g_assert_true(S_ISCHR(st.st_mode));

    /* An existing regular file is replaced, keeping its mode. */
    g_assert_true(g_file_set_contents(old, "old", -1, NULL));
    g_assert_cmpint(chmod(old, 0640), ==, 0);
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'screendump', 'arguments': "
                              "{'filename': '%s'}}", old));
    assert_black_640x480(old);
    g_assert_cmpint(stat(old, &st), ==, 0);
    g_assert_cmpuint(st.st_mode & 07777, ==, 0640);

    /*
     * A symlink to a regular file too: renaming over what it names meant
     * resolving it in userspace, where fs.protected_symlinks does not
     * look. The file it names is left alone, and so is the link.
     */
    g_assert_true(g_file_set_contents(real, "old", -1, NULL));
    g_assert_cmpint(symlink("real.ppm", link), ==, 0);
    screendump_expect_error(vm, link, "it is a symbolic link");
    g_assert_cmpint(lstat(link, &st), ==, 0);
    g_assert_true(S_ISLNK(st.st_mode));
    assert_content(real, "old");
    g_assert_cmpint(symlink("nowhere.ppm", dangling), ==, 0);
    screendump_expect_error(vm, dangling, "it is a symbolic link");
    g_assert_false(g_file_test(dangling, G_FILE_TEST_EXISTS));
    /* A directory on the way may be a link: the kernel's walk follows it. */
    g_assert_cmpint(symlink("sticky", dirlink), ==, 0);
    g_assert_cmpint(g_mkdir(sticky, 0755), ==, 0);
    g_assert_cmpint(chmod(sticky, 01777), ==, 0);
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'screendump', 'arguments': "
                              "{'filename': '%s/ours.ppm'}}", dirlink));
    assert_black_640x480(sticky_ours);

    /*
     * The attack: in a sticky world-writable directory another user
     * plants vm1.ppm -> a file of ours (standing for /etc/shadow). The
     * link is refused and the file keeps its content; so is a regular
     * file of that user's, which would have received our image.
     */
    g_assert_true(g_file_set_contents(secret, "secret", -1, NULL));
    g_assert_cmpint(chmod(secret, 0600), ==, 0);
    g_assert_cmpint(symlink("../secret", planted), ==, 0);
    g_assert_cmpint(lchown(planted, 65534, 65534), ==, 0);
    screendump_expect_error(vm, planted, "it is a symbolic link");
    assert_content(secret, "secret");
    g_assert_cmpint(lstat(planted, &st), ==, 0);
    g_assert_true(S_ISLNK(st.st_mode));
    g_assert_true(g_file_set_contents(theirs, "theirs", -1, NULL));
    g_assert_cmpint(chown(theirs, 65534, 65534), ==, 0);
    screendump_expect_error(vm, theirs, "it belongs to another user in a sticky directory");
    assert_content(theirs, "theirs");
    /* Nor through a directory link of theirs, where the kernel refuses to follow. */
    if (protected_symlinks()) {
        g_assert_cmpint(symlink("..", planted_dir), ==, 0);
        g_assert_cmpint(lchown(planted_dir, 65534, 65534), ==, 0);
        screendump_expect_error(vm, planted_dir_file, "Permission denied");
        assert_content(secret, "secret");
    }
    g_assert_cmpuint(count_entries(sticky), ==, 3 + protected_symlinks());

    if (have_small) {
        /* 900 KiB of PPM into 64 KiB: the write fails, the old file stays whole. */
        g_assert_true(g_file_set_contents(small_old, "old content", -1, NULL));
        screendump_expect_error(vm, small_old, "No space left on device");
        assert_content(small_old, "old content");
        g_assert_cmpuint(count_entries(small), ==, 1);
    }
    /* A name near NAME_MAX still leaves room for the temporary file's. */
    {
        g_autofree char *longname = g_strnfill(250, 'p');
        g_autofree char *longpath = g_strdup_printf("%s/%s", dir, longname);

        json_node_unref(vm_qmp_ok(vm, "{'execute': 'screendump', 'arguments': "
                                  "{'filename': '%s'}}", longpath));
        assert_black_640x480(longpath);
    }
    /* No temporary file left behind by any of the above. */
    g_assert_cmpuint(count_entries(dir), ==, 12);
    vm_kill(vm);
    if (have_small) {
        umount2(small, MNT_DETACH);
    }
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
 * none) migrates into a file: the stream lists "vga.vram" (8 MiB, QEMU's
 * default) and the "vga" section; a destination with isa-vga loads it and the guest runs
 * on; one without the device refuses the unknown block.
 */
static void test_migrate_vram_and_vga(void)
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
    g_assert_nonnull(strstr(desc, "\"vga\""));
    g_assert_nonnull(strstr(desc, "\"is_vbe_vmstate\""));
    g_assert_nonnull(strstr(desc, "\"palette\""));
    dumpdir = g_strdup_printf("%s/vga-dump", vmtest_tmpdir());
    g_mkdir_with_parents(dumpdir, 0700);
    dumparg = g_strdup_printf("--dump-memory %s", dumpdir);
    g_free(vmtest_analyze_stream(file, "summary", dumparg));
    {
        g_autofree char *path = g_strdup_printf("%s/vga.vram.bin", dumpdir);

        g_assert_true(g_file_get_contents(path, &vram, &vram_len, NULL));
        g_assert_cmpuint(vram_len, ==, 8 << 20);
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
    g_test_add_func("/vga/screendump-target", test_screendump_target);
    g_test_add_func("/vga/bad-options", test_bad_options);
    g_test_add_func("/vga/migrate-vram-and-vga", test_migrate_vram_and_vga);
    return g_test_run();
}

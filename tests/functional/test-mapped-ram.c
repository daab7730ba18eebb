/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mapped-ram files: background snapshots of a dirtying verify guest written
 * in place (by 1, 2 or 4 writers, with and without direct-io), restored
 * eagerly and lazily (x-lazy-restore) with the firmware finding no FAIL; a
 * paused guest's file restored byte-identical; corrupt and incomplete files
 * refused before the guest runs; a full disk failing the snapshot cleanly.
 *
 * Disk full and the filesystem without O_DIRECT need mounts (tmpfs, ramfs):
 * the test runs as root, as .ci/run does, and says loudly when it cannot.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include "libvmtest.h"
#include "migtest.h"

#define MEM "512M"
#define APPEND "mode=verify mem=384"
#define SMALL_MEM "64M"
#define SMALL_APPEND "mode=verify mem=32"

/* A destination expected to refuse @incoming and exit: no QMP to wait for. */
static VM *start_refusing_dest(const char *mem, const char *append, const char *incoming,
                               bool lazy)
{
    return vm_spawn("dst", false, MIGTEST_BASE_ARGS "-m %s -kernel %s -append '%s' "
                    "-incoming '%s' %s", mem, vmtest_firmware(), append, incoming,
                    lazy ? "-global migration.x-lazy-restore=on" : "");
}

static char *snap_path(const char *name)
{
    return g_strdup_printf("%s/%s.snap", vmtest_tmpdir(), name);
}

static void set_caps(VM *vm, const char *caps)
{
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'migrate-set-capabilities', 'arguments': "
                              "{'capabilities': [%s]}}", caps));
}

#define CAP_ON(name) "{'capability': '" name "', 'state': true}"

static void set_writers(VM *vm, int channels, bool direct_io)
{
    if (channels) {
        set_caps(vm, CAP_ON("multifd"));
        json_node_unref(vm_qmp_ok(vm, "{'execute': 'migrate-set-parameters', 'arguments': "
                                  "{'multifd-channels': %d}}", channels));
    }
    if (direct_io) {
        json_node_unref(vm_qmp_ok(vm, "{'execute': 'migrate-set-parameters', 'arguments': "
                                  "{'direct-io': true}}"));
    }
}

static JsonNode *wait_done(VM *src, const char *want)
{
    JsonNode *info = vm_wait_migration(src, "completed|failed|cancelled", 300);

    if (strcmp(json_get_str(info, "status"), want)) {
        g_autofree char *s = json_to_string(info, TRUE);
        g_error("the snapshot ended otherwise than %s: %s", want, s);
    }
    return info;
}

/* A background snapshot with mapped-ram of a running source into @file. */
static void snapshot(VM *src, const char *file, int channels, bool direct_io)
{
    set_caps(src, CAP_ON("background-snapshot") ", " CAP_ON("mapped-ram"));
    set_writers(src, channels, direct_io);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': 'file:%s'}}",
                              file));
    json_node_unref(wait_done(src, "completed"));
}

/* Waits until the lazy restore of @dst has every page and has let go of userfaultfd. */
static void wait_resident(VM *dst)
{
    for (int i = 0; i < 600; i++) {
        JsonNode *info = vm_qmp_ok(dst, "{'execute': 'query-migrate'}");
        bool done = json_has(info, "x-lazy-restore.status") &&
                    !strcmp(json_get_str(info, "x-lazy-restore.status"), "resident");

        if (done) {
            g_assert_cmpint(json_get_int(info, "x-lazy-restore.pages-resident"), ==,
                            json_get_int(info, "x-lazy-restore.pages-total"));
            g_assert_cmpint(json_get_int(info, "x-lazy-restore.bytes-prefetched") +
                            json_get_int(info, "x-lazy-restore.pages-fault-read"), >, 0);
            json_node_unref(info);
            return;
        }
        json_node_unref(info);
        g_usleep(100 * 1000);
    }
    g_error("the lazy restore never became resident");
}

/*
 * Restores @file (eagerly, or lazily with -global migration.x-lazy-restore=on),
 * with @channels readers when non-zero, and checks the guest carries on.
 */
static void restore_and_check(const char *mem, const char *append, const char *file,
                              bool lazy, int channels, int pass_before)
{
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    VM *dst;

    if (channels) {
        dst = migtest_start_dest_extra(mem, append, false, NULL,
                                       lazy ? "-global migration.x-lazy-restore=on" : "");
        set_writers(dst, channels, false);
        json_node_unref(vm_qmp_ok(dst, "{'execute': 'migrate-incoming', 'arguments': "
                                  "{'uri': '%s'}}", uri));
    } else {
        dst = migtest_start_dest_extra(mem, append, false, uri,
                                       lazy ? "-global migration.x-lazy-restore=on" : "");
    }
    migtest_wait_incoming_done(dst);
    migtest_assert_guest_continues(dst, append, pass_before);
    if (lazy) {
        g_autofree char *out = NULL;

        wait_resident(dst);
        out = vm_hmp(dst, "info migrate");
        g_assert_nonnull(strstr(out, "lazy restore: resident"));
        g_assert_nonnull(strstr(out, "lazy restore fault latency histogram"));
        /* The guest goes on once userfaultfd is gone. */
        vm_wait_line(dst, "PASS", 60);
        g_assert_cmpuint(vm_count_lines(dst, "FAIL"), ==, 0);
    }
    vm_kill(dst);
}

/* The check, by HMP: a dirtying guest, restored eagerly and lazily, twice each. */
static void test_hmp_snapshot_restore(void)
{
    g_autofree char *file = snap_path("hmp");
    g_autofree char *out = NULL;
    int pass;
    VM *src;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source(MEM, APPEND);
    out = vm_hmp(src, "migrate_set_capability background-snapshot on");
    g_assert_cmpstr(out, ==, "");
    g_free(out);
    out = vm_hmp(src, "migrate_set_capability mapped-ram on");
    g_assert_cmpstr(out, ==, "");
    g_free(out);
    pass = migtest_last_pass(src);
    out = vm_hmp(src, "migrate -d file:%s", file);
    g_assert_cmpstr(out, ==, "");
    json_node_unref(wait_done(src, "completed"));
    /* The guest ran on, unharmed, and was not written twice. */
    migtest_assert_source_alive(src);
    vm_kill(src);
    for (int i = 0; i < 2; i++) {
        restore_and_check(MEM, APPEND, file, false, 0, pass);
        restore_and_check(MEM, APPEND, file, true, 0, pass);
    }
}

/* 1, 2 and 4 writers; read back by as many readers, eagerly and lazily. */
static void test_multifd_writers(void)
{
    static const int writers[] = { 1, 2, 4 };

    if (!vmtest_require_kvm()) {
        return;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(writers); i++) {
        g_autofree char *file = snap_path("writers");
        VM *src = migtest_start_source("256M", "mode=verify mem=192");
        int pass = migtest_last_pass(src);

        snapshot(src, file, writers[i], false);
        vm_kill(src);
        restore_and_check("256M", "mode=verify mem=192", file, false, writers[i], pass);
        restore_and_check("256M", "mode=verify mem=192", file, true, writers[i], pass);
    }
}

/* A paused guest's file, eager and lazy, with -S: RAM byte-identical to the source's. */
static void test_paused_identical(void)
{
    g_autofree char *file = snap_path("paused");
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    VM *src;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source("256M", "mode=verify mem=128");
    json_node_unref(vm_qmp_ok(src, "{'execute': 'stop'}"));
    snapshot(src, file, 2, false);
    for (int lazy = 0; lazy < 2; lazy++) {
        VM *dst = migtest_start_dest_extra("256M", "mode=verify mem=128", true, uri,
                                           lazy ? "-global migration.x-lazy-restore=on" : "");

        migtest_wait_incoming_done(dst);
        {
            g_autofree char *st = vm_status(dst);
            g_assert_cmpstr(st, ==, "paused");
        }
        migtest_assert_ram_identical(src, dst, "256M");
        if (lazy) {
            wait_resident(dst);
        }
        vm_kill(dst);
    }
    vm_kill(src);
}

/* Whether this process may mount filesystems; says loudly when not. */
static bool can_mount(void)
{
    if (geteuid() != 0) {
        vmtest_skip("mounting a small tmpfs / a ramfs needs root");
        return false;
    }
    return true;
}

static char *mount_dir(const char *fstype, const char *opts)
{
    g_autofree char *dir = g_strdup_printf("%s/%s-mnt", vmtest_tmpdir(), fstype);

    g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
    /* A run that failed half-way may have left it mounted. */
    umount2(dir, MNT_DETACH);
    if (mount("none", dir, fstype, 0, opts) < 0) {
        g_error("mount -t %s %s: %s", fstype, dir, g_strerror(errno));
    }
    return g_steal_pointer(&dir);
}

/* direct-io writes where O_DIRECT works, and is refused before writing where it does not. */
static void test_direct_io(void)
{
    g_autofree char *file = snap_path("dio");
    g_autofree char *dir = NULL, *bad = NULL, *desc = NULL;
    struct stat st;
    JsonNode *r;
    VM *src;
    int pass;

    if (!vmtest_require_kvm() || !can_mount()) {
        return;
    }
    src = migtest_start_source("256M", "mode=verify mem=192");
    pass = migtest_last_pass(src);
    snapshot(src, file, 2, true);
    restore_and_check("256M", "mode=verify mem=192", file, false, 0, pass);

    /* ramfs has no O_DIRECT (tmpfs has it since Linux 6.6). */
    dir = mount_dir("ramfs", NULL);
    bad = g_strdup_printf("%s/dio.snap", dir);
    r = vm_qmp(src, "{'execute': 'migrate', 'arguments': {'uri': 'file:%s'}}", bad);
    desc = vm_qmp_error_desc(r, NULL);
    g_assert_nonnull(strstr(desc, "does not support O_DIRECT"));
    json_node_unref(r);
    g_assert_cmpint(stat(bad, &st), ==, 0);
    g_assert_cmpint(st.st_size, ==, 0);
    migtest_assert_source_alive(src);
    vm_kill(src);
    g_assert_cmpint(umount2(dir, MNT_DETACH), ==, 0);
}

/* The first block's mapped-ram header: right after its counted id and be64 length. */
static long find_header(const uint8_t *buf, size_t len, uint64_t used_length)
{
    static const char id[] = "\x0bmicrovm.ram";

    for (size_t i = 0; i + sizeof(id) - 1 + 8 + 28 <= len; i++) {
        if (!memcmp(buf + i, id, sizeof(id) - 1)) {
            const uint8_t *l = buf + i + sizeof(id) - 1;
            uint64_t v = 0;

            for (int k = 0; k < 8; k++) {
                v = v << 8 | l[k];
            }
            if (v == used_length) {
                return i + sizeof(id) - 1 + 8;
            }
        }
    }
    return -1;
}

static void put_be64(uint8_t *p, uint64_t v)
{
    for (int k = 7; k >= 0; k--, v >>= 8) {
        p[k] = v;
    }
}

/* Writes @good with @len bytes, then patches it by @kind; the header is at @hdr. */
static void write_variant(const char *path, const uint8_t *good, size_t len, long hdr,
                          const char *kind)
{
    g_autofree uint8_t *b = g_memdup2(good, len);

    if (!strcmp(kind, "truncated")) {
        len /= 2;
    } else if (!strcmp(kind, "wrong-trailer")) {
        memcpy(b + len - 16, "00000000deadbeef", 16);
    } else if (!strcmp(kind, "version")) {
        b[hdr + 3] = 2;
    } else if (!strcmp(kind, "pages-past-end")) {
        put_be64(b + hdr + 20, 1ULL << 40);
    } else if (!strcmp(kind, "bitmap-overlap")) {
        /* Pages that start inside the room the block's bitmap needs. */
        uint64_t bm = 0;

        for (int k = 0; k < 8; k++) {
            bm = bm << 8 | b[hdr + 12 + k];
        }
        put_be64(b + hdr + 20, bm & ~4095ULL);
    }
    g_assert_true(g_file_set_contents(path, (const char *)b, len, NULL));
}

/* Each damage refused with a message naming it, before the guest runs, eager or lazy. */
static void test_corrupt_files(void)
{
    static const struct {
        const char *kind;
        const char *msg;
    } cases[] = {
        /*
         * Cut short: no marker, and not a whole stream either. (A whole
         * stream without our marker is how QEMU writes its files, and loads:
         * test-qemu-interop.py restores QEMU 10.0's.)
         */
        { "truncated", "completion marker is missing" },
        { "wrong-trailer", "does not belong to the stream" },
        { "version", "version not supported" },
        { "pages-past-end", "go past the end" },
        { "bitmap-overlap", "overlap its bitmap" },
    };
    g_autofree char *file = snap_path("good");
    g_autofree char *bad = snap_path("bad");
    g_autofree char *uri = g_strdup_printf("file:%s", bad);
    g_autofree uint8_t *good = NULL;
    gsize len;
    long hdr;
    VM *src;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source(SMALL_MEM, SMALL_APPEND);
    snapshot(src, file, 0, false);
    vm_kill(src);
    g_assert_true(g_file_get_contents(file, (char **)&good, &len, NULL));
    hdr = find_header(good, MIN(len, 65536), migtest_mem_bytes(SMALL_MEM));
    g_assert_cmpint(hdr, >, 0);
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        for (int lazy = 0; lazy < 2; lazy++) {
            VM *dst;

            write_variant(bad, good, len, hdr, cases[i].kind);
            dst = start_refusing_dest(SMALL_MEM, SMALL_APPEND, uri, lazy);
            g_assert_cmpint(vm_wait_exit(dst, 60), ==, 1);
            if (!strstr(dst->stderr_text->str, cases[i].msg)) {
                g_error("%s: expected '%s' in: %s", cases[i].kind, cases[i].msg,
                        dst->stderr_text->str);
            }
            /* The guest never ran: not one line from the restored firmware. */
            g_assert_cmpuint(vm_count_lines(dst, "PASS"), ==, 0);
            vm_free(dst);
        }
    }
}

/*
 * A disk that fills up mid-snapshot: the snapshot fails with the reason,
 * the guest runs on unprotected, and the partial file is refused.
 */
static void test_disk_full(void)
{
    g_autofree char *dir = NULL, *file = NULL, *uri = NULL;
    JsonNode *info;
    VM *src, *dst;

    if (!vmtest_require_kvm() || !can_mount()) {
        return;
    }
    dir = mount_dir("tmpfs", "size=96m");
    file = g_strdup_printf("%s/full.snap", dir);
    uri = g_strdup_printf("file:%s", file);
    for (int writers = 0; writers <= 2; writers += 2) {
        src = migtest_start_source(MEM, APPEND);
        set_caps(src, CAP_ON("background-snapshot") ", " CAP_ON("mapped-ram"));
        set_writers(src, writers, false);
        json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': "
                                  "{'uri': '%s'}}", uri));
        info = wait_done(src, "failed");
        g_assert_nonnull(strstr(json_get_str(info, "error-desc"), "No space left on device"));
        json_node_unref(info);
        /* Unprotected: the verify passes (which write all 384 MiB) go on. */
        migtest_assert_source_alive(src);
        vm_kill(src);
        dst = start_refusing_dest(MEM, APPEND, uri, false);
        g_assert_cmpint(vm_wait_exit(dst, 60), ==, 1);
        g_assert_nonnull(strstr(dst->stderr_text->str, "completion marker is missing"));
        vm_free(dst);
    }
    g_assert_cmpint(umount2(dir, MNT_DETACH), ==, 0);
}

/* A precopy (not a snapshot) of a new source into mapped-ram @file; returns its info. */
static JsonNode *precopy_to_file(VM **src, const char *file, const char *want)
{
    *src = migtest_start_source(MEM, APPEND);
    set_caps(*src, CAP_ON("mapped-ram"));
    json_node_unref(vm_qmp_ok(*src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'downtime-limit': 30000}}"));
    json_node_unref(vm_qmp_ok(*src, "{'execute': 'migrate', 'arguments': "
                              "{'uri': 'file:%s'}}", file));
    return wait_done(*src, want);
}

/*
 * A precopy into a mapped-ram file on a disk that holds its pages but not
 * what follows them (the page bitmaps, the trailer): the guest is stopped
 * at the switchover, and the file's finish fails after the device state
 * went out. It must not have been committed (postmigrate) before that:
 * failed, and the guest runs here again.
 */
static void test_disk_full_at_finish(void)
{
    g_autofree char *dir = NULL, *file = NULL, *opts = NULL;
    struct stat st;
    JsonNode *info;
    VM *src;

    if (!vmtest_require_kvm() || !can_mount()) {
        return;
    }
    /* The whole file's size on disk, first. */
    dir = mount_dir("tmpfs", "size=1g");
    file = g_strdup_printf("%s/finish.snap", dir);
    json_node_unref(precopy_to_file(&src, file, "completed"));
    vm_kill(src);
    g_assert_cmpint(stat(file, &st), ==, 0);
    g_assert_cmpint(umount2(dir, MNT_DETACH), ==, 0);
    /* 16 KiB short: the bitmaps of 512 MiB alone take that much. */
    opts = g_strdup_printf("size=%" PRIu64 "k", ((uint64_t)st.st_blocks * 512 - 16384) / 1024);
    g_free(dir);
    dir = mount_dir("tmpfs", opts);
    info = precopy_to_file(&src, file, "failed");
    g_test_message("source: %s", json_get_str(info, "error-desc"));
    g_assert_nonnull(strstr(json_get_str(info, "error-desc"), "No space left on device"));
    json_node_unref(info);
    migtest_assert_source_alive(src);
    vm_kill(src);
    g_assert_cmpint(umount2(dir, MNT_DETACH), ==, 0);
}

/* migrate @uri is refused at once with @msg in its error. */
static void expect_migrate_refused(VM *vm, const char *uri, const char *msg)
{
    JsonNode *r = vm_qmp(vm, "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", uri);
    g_autofree char *desc = vm_qmp_error_desc(r, NULL);

    if (!strstr(desc, msg)) {
        g_error("migrate %s: expected '%s', got '%s'", uri, msg, desc);
    }
    json_node_unref(r);
}

/* What mapped-ram cannot do, refused with QEMU's words where QEMU has them. */
static void test_refused(void)
{
    static const struct {
        const char *caps;
        const char *msg;
    } combos[] = {
        { CAP_ON("mapped-ram") ", " CAP_ON("xbzrle"),
          "Mapped-ram migration is incompatible with xbzrle" },
        { CAP_ON("mapped-ram") ", " CAP_ON("postcopy-ram"),
          "Mapped-ram migration is incompatible with postcopy" },
        { CAP_ON("background-snapshot") ", " CAP_ON("multifd"),
          "Background-snapshot is not compatible with multifd" },
    };
    g_autofree char *file = snap_path("refused");
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    g_autofree char *incoming = NULL;
    VM *vm, *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = migtest_start_source(SMALL_MEM, SMALL_APPEND);
    for (size_t i = 0; i < G_N_ELEMENTS(combos); i++) {
        JsonNode *r = vm_qmp(vm, "{'execute': 'migrate-set-capabilities', 'arguments': "
                                 "{'capabilities': [%s]}}", combos[i].caps);
        g_autofree char *desc = vm_qmp_error_desc(r, NULL);

        g_assert_cmpstr(desc, ==, combos[i].msg);
        json_node_unref(r);
    }
    set_caps(vm, CAP_ON("mapped-ram"));
    expect_migrate_refused(vm, "exec:cat", "Migration requires seekable transport (e.g. file)");
    set_writers(vm, 2, false);
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'multifd-compression': 'zlib'}}"));
    expect_migrate_refused(vm, uri, "incompatible with multifd compression");
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'multifd-compression': 'none', 'direct-io': true}}"));
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'migrate-set-capabilities', 'arguments': "
                              "{'capabilities': [{'capability': 'mapped-ram', 'state': false}, "
                              "{'capability': 'multifd', 'state': false}]}}"));
    expect_migrate_refused(vm, uri, "direct-io needs the mapped-ram capability");
    /* A mapped-ram stream read through a pipe: its pages are at offsets it cannot reach. */
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'direct-io': false}}"));
    set_caps(vm, CAP_ON("mapped-ram"));
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'stop'}"));
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'migrate', 'arguments': {'uri': 'file:%s'}}",
                              file));
    json_node_unref(wait_done(vm, "completed"));
    vm_kill(vm);
    incoming = g_strdup_printf("exec:cat %s", file);
    dst = start_refusing_dest(SMALL_MEM, SMALL_APPEND, incoming, false);
    g_assert_cmpint(vm_wait_exit(dst, 60), ==, 1);
    g_assert_nonnull(strstr(dst->stderr_text->str, "must be read from a file: URI"));
    vm_free(dst);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/mapped-ram/hmp-snapshot-restore", test_hmp_snapshot_restore);
    g_test_add_func("/mapped-ram/multifd-writers", test_multifd_writers);
    g_test_add_func("/mapped-ram/paused-identical", test_paused_identical);
    g_test_add_func("/mapped-ram/direct-io", test_direct_io);
    g_test_add_func("/mapped-ram/corrupt-files", test_corrupt_files);
    g_test_add_func("/mapped-ram/disk-full", test_disk_full);
    g_test_add_func("/mapped-ram/disk-full-at-finish", test_disk_full_at_finish);
    g_test_add_func("/mapped-ram/refused", test_refused);
    return g_test_run();
}

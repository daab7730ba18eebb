/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Hostile incoming streams: a good stream file is truncated at many offsets
 * (inside the header, a page header, a page, a device section, before EOF)
 * and corrupted byte by byte; each must make "-incoming file:" exit with
 * status 1 and a message, never crash and never start the guest. A stream
 * whose device state and EOF are whole but whose trailing vmdesc is cut
 * loads with a warning (its source stopped for good). The good file itself
 * loads and runs.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>
#include "libvmtest.h"
#include "migtest.h"

#define MEM "64M"
#define APPEND "mode=verify mem=16"

static char *good_stream;
static gsize good_len;

/* Offsets of interesting places in the good stream, found by walking it. */
static GArray *offsets;
/* Where the good stream's vmdesc record (0x06, be32 length, JSON) starts, after the EOF byte. */
static gsize vmdesc_at;

static gsize find_vmdesc(void)
{
    const guchar *d = (const guchar *)good_stream;

    for (gsize off = good_len - 5; off > 0; off--) {
        guint32 n = (guint32)d[off + 1] << 24 | d[off + 2] << 16 | d[off + 3] << 8 | d[off + 4];

        if (d[off] == 0x06 && n == good_len - off - 5 && d[off - 1] == 0x00) {
            return off;
        }
    }
    g_assert_not_reached();
}

static void make_good_stream(void)
{
    g_autofree char *path = g_strdup_printf("%s/good.mig", vmtest_tmpdir());
    VM *src;
    JsonNode *info;

    src = migtest_start_source(MEM, APPEND);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'stop'}"));
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': 'file:%s'}}", path));
    info = vm_wait_migration(src, "completed|failed", 120);
    g_assert_cmpstr(json_get_str(info, "status"), ==, "completed");
    json_node_unref(info);
    vm_kill(src);
    g_assert_true(g_file_get_contents(path, &good_stream, &good_len, NULL));
}

static void add_offset(gsize off)
{
    if (off < good_len) {
        g_array_append_val(offsets, off);
    }
}

/* Picks offsets: the header, the first page records, device sections, the end. */
static void choose_offsets(void)
{
    const guchar *s = (const guchar *)good_stream;
    gsize i;

    offsets = g_array_new(FALSE, FALSE, sizeof(gsize));
    for (i = 0; i < 24; i++) {
        add_offset(i);                          /* header and configuration */
    }
    for (i = 0; i + 8 < good_len && i < 200000; i++) {
        /* A be64 page header with the PAGE flag and block name "microvm.ram" follows. */
        if (s[i] == 11 && !memcmp(s + i + 1, "microvm.ram", 11) && i >= 8) {
            add_offset(i - 4);                  /* inside the page header */
            add_offset(i + 5);                  /* inside the block name */
            add_offset(i + 12 + 100);           /* inside the page data */
            break;
        }
    }
    for (i = 0; i + 4 < good_len; i++) {
        /* FULL sections (0x04) of devices: "cpu", "serial", "kvm-pit", ... */
        if (s[i] == 0x04 && i + 9 < good_len && (s[i + 5] == 3 && !memcmp(s + i + 6, "cpu", 3))) {
            add_offset(i + 1);
            add_offset(i + 20);
            add_offset(i + 300);
            add_offset(i + 2000);
        }
        if (s[i] == 0x04 && i + 12 < good_len && s[i + 5] == 6 && !memcmp(s + i + 6, "serial", 6)) {
            add_offset(i + 14);
        }
    }
    for (i = 1; i <= 64; i *= 2) {
        add_offset(good_len > i ? good_len - i : 0);   /* inside the vmdesc */
    }
    vmdesc_at = find_vmdesc();
    add_offset(vmdesc_at - 1);                  /* before the EOF byte */
    add_offset(vmdesc_at);                      /* the EOF byte, no vmdesc */
    add_offset(vmdesc_at + 3);                  /* inside the vmdesc's length */
    g_test_message("stream of %zu bytes, %u interesting offsets", good_len, offsets->len);
    /* Header (24) + a page record (3) + 4 per cpu + serial + end (7 + 3). */
    g_assert_cmpuint(offsets->len, >=, 24 + 3 + 4 + 1 + 10);
}

/*
 * Feeds @data to a fresh destination. Returns its exit status, or 0 if it
 * accepted the stream (it left inmigrate and is still alive).
 */
static int load_stream(const char *data, gsize len, char **err)
{
    g_autofree char *path = g_strdup_printf("%s/bad.mig", vmtest_tmpdir());
    g_autofree char *uri = NULL, *qmp_path = NULL;
    gint64 end = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    VM *dst;
    int status = -1;

    g_assert_true(g_file_set_contents(path, data, len, NULL));
    uri = g_strdup_printf("file:%s", path);
    /* -S: even an accepted stream must not run the guest here. */
    qmp_path = g_strdup_printf("%s/bad-qmp-%u.sock", vmtest_tmpdir(), g_random_int());
    dst = vm_spawn("dst", false, MIGTEST_BASE_ARGS "-S -m %s -kernel %s -append '%s' "
                   "-incoming %s -qmp unix:%s,server=on,wait=off",
                   MEM, vmtest_firmware(), APPEND, uri, qmp_path);
    while (status < 0) {
        vm_pump(dst, 50);
        if (dst->exited) {
            break;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        if (dst->qmp_fd < 0) {
            if (!dst->qmp_path) {
                dst->qmp_path = g_strdup(qmp_path);
            }
            if (!vm_try_qmp_connect(dst)) {
                break;
            }
        }
        {
            JsonNode *r = vm_try_qmp(dst, "{'execute': 'query-status'}");
            if (!r) {
                break;
            }
            if (strcmp(json_get_str(r, "return.status"), "inmigrate")) {
                status = 0;
            }
            json_node_unref(r);
        }
    }
    if (status < 0) {
        status = vm_wait_exit(dst, 10);
    }
    *err = g_strdup(dst->stderr_text->str);
    g_assert_cmpuint(vm_count_lines(dst, "PASS"), ==, 0);
    g_unlink(qmp_path);
    vm_kill(dst);
    return status;
}

static void test_good_stream_runs(void)
{
    g_autofree char *path = g_strdup_printf("%s/good2.mig", vmtest_tmpdir());
    g_autofree char *uri = NULL;
    VM *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    g_assert_true(g_file_set_contents(path, good_stream, good_len, NULL));
    uri = g_strdup_printf("file:%s", path);
    dst = migtest_start_dest(MEM, APPEND, false, uri);
    migtest_wait_incoming_done(dst);
    /* The source was stopped: the destination stays paused until cont. */
    {
        g_autofree char *st = vm_status(dst);
        g_assert_cmpstr(st, ==, "paused");
    }
    json_node_unref(vm_qmp_ok(dst, "{'execute': 'cont'}"));
    migtest_assert_guest_continues(dst, APPEND, 1);
    vm_kill(dst);
}

static void test_truncated(void)
{
    if (!vmtest_require_kvm()) {
        return;
    }
    for (guint k = 0; k < offsets->len; k++) {
        gsize off = g_array_index(offsets, gsize, k);
        g_autofree char *err = NULL;
        int status = load_stream(good_stream, off, &err);

        if (off >= vmdesc_at) {
            /* The device state and EOF are whole: loaded, and said so. */
            if (status != 0 || !strstr(err, "trailing description is damaged")) {
                g_printerr("truncated at %zu (vmdesc at %zu): status %d, stderr: %s\n", off,
                           vmdesc_at, status, err);
            }
            g_assert_cmpint(status, ==, 0);
            g_assert_nonnull(strstr(err, "qemu-system-x86_64: warning: the device state loaded "
                                    "whole; the stream's trailing description is damaged: "));
            continue;
        }
        if (status != 1 || !strstr(err, "load of migration failed")) {
            g_printerr("truncated at %zu: status %d, stderr: %s\n", off, status, err);
        }
        g_assert_cmpint(status, ==, 1);
        g_assert_nonnull(strstr(err, "qemu-system-x86_64: load of migration failed: "));
    }
}

static void test_corrupted(void)
{
    if (!vmtest_require_kvm()) {
        return;
    }
    for (guint k = 0; k < offsets->len; k++) {
        gsize off = g_array_index(offsets, gsize, k);
        g_autofree char *copy = g_memdup2(good_stream, good_len);
        g_autofree char *err = NULL;
        int status;

        /* Flipping bytes inside page data is legal (it is just data); elsewhere it must fail. */
        copy[off] ^= 0xff;
        status = load_stream(copy, good_len, &err);
        /* Either a clean refusal, or (for bytes that carry no structure) a clean load. */
        g_assert_true(status == 1 || status == 0);
        if (status == 1) {
            g_assert_nonnull(strstr(err, "load of migration failed"));
        }
    }
}

/*
 * The globalstate section names the run state the destination takes on.
 * One that no source can end in (inmigrate above all: the destination
 * would say "completed" yet stay in inmigrate, cont answering success and
 * the guest never running, as QEMU 7.2 does) must fail the load.
 */
static void test_bad_run_state(void)
{
    static const char paused[] = "\0\0\0\7paused";   /* be32 size, then the name */
    static const char *const bad[] = { "inmigrate", "shutdown", "internal-error", "colo" };
    const char *at;

    if (!vmtest_require_kvm()) {
        return;
    }
    /* The good stream's source was stopped: its globalstate says "paused". */
    at = memmem(good_stream, good_len, paused, sizeof(paused));
    g_assert_nonnull(at);
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *copy = g_memdup2(good_stream, good_len);
        g_autofree char *err = NULL;
        char *state = copy + (at - good_stream);
        size_t n = strlen(bad[i]) + 1;
        int status;

        /* The 100-byte buffer after the size holds the name and zero padding. */
        state[3] = n;
        memset(state + 4, 0, 100);
        memcpy(state + 4, bad[i], n);
        status = load_stream(copy, good_len, &err);
        if (status != 1 || !strstr(err, "not one a source can migrate from")) {
            g_printerr("run state %s: status %d, stderr: %s\n", bad[i], status, err);
        }
        g_assert_cmpint(status, ==, 1);
        g_assert_nonnull(strstr(err, "load of migration failed"));
        g_assert_nonnull(strstr(err, bad[i]));
    }
}

/* The globalstate FULL section header: type, be32 id, counted idstr, be32 instance, be32 version. */
static char *globalstate_header(char *stream)
{
    char *at = memmem(stream, good_len, "\x0bglobalstate", 12);

    g_assert_nonnull(at);
    g_assert_cmpint(at[-5], ==, 0x04);
    return at - 5;
}

/* Loads @copy, which must be refused with a message containing @want. */
static void assert_refused(const char *copy, const char *want, const char *what)
{
    g_autofree char *err = NULL;
    int status = load_stream(copy, good_len, &err);

    if (status != 1 || !strstr(err, want)) {
        g_printerr("%s: status %d, stderr: %s\n", what, status, err);
    }
    g_assert_cmpint(status, ==, 1);
    g_assert_nonnull(strstr(err, want));
}

/*
 * Section headers are hostile too: a version of 2^31 or more must not pass
 * the version check as a negative number; an id already given to another
 * section must be refused (and must not become the id we send next); names
 * that do not match are echoed with their control bytes escaped, so a
 * stream cannot write terminal escapes to stderr or raw bytes into QMP.
 */
static void test_bad_section_header(void)
{
    const char *ram = memmem(good_stream, good_len, "\x03ram", 4);

    if (!vmtest_require_kvm()) {
        return;
    }
    g_assert_nonnull(ram);
    {
        g_autofree char *copy = g_memdup2(good_stream, good_len);
        char *h = globalstate_header(copy);

        memcpy(h + 1 + 4 + 12 + 4, "\x80\x00\x00\x01", 4);
        assert_refused(copy, "unsupported version 2147483649 for 'globalstate'", "version");
    }
    {
        g_autofree char *copy = g_memdup2(good_stream, good_len);
        char *h = globalstate_header(copy);

        /* The id the ram section's START header gave itself. */
        memcpy(h + 1, ram - 4, 4);
        assert_refused(copy, "is already used by 'ram'", "duplicate id");
    }
    {
        g_autofree char *copy = g_memdup2(good_stream, good_len);
        char *h = globalstate_header(copy);
        g_autofree char *err = NULL;

        memcpy(h + 6, "globa\x1b[31mX", 11);
        assert_refused(copy, "Unknown savevm section or instance 'globa\\033[31mX' 0", "escape");
        load_stream(copy, good_len, &err);
        g_assert_null(strchr(err, 0x1b));
    }
}

int main(int argc, char **argv)
{
    int ret;

    g_test_init(&argc, &argv, NULL);
    if (vmtest_require_kvm()) {
        make_good_stream();
        choose_offsets();
    }
    g_test_add_func("/migration-stream/good-runs", test_good_stream_runs);
    g_test_add_func("/migration-stream/truncated", test_truncated);
    g_test_add_func("/migration-stream/corrupted", test_corrupted);
    g_test_add_func("/migration-stream/bad-run-state", test_bad_run_state);
    g_test_add_func("/migration-stream/bad-section-header", test_bad_section_header);
    ret = g_test_run();
    return ret;
}

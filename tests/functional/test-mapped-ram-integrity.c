/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The integrity record of mapped-ram files (x-mapped-ram-integrity): set
 * by QMP, HMP and -global; a precopy file whose pages were written several
 * times, a running guest's background snapshot, and a paused one's restored
 * eagerly and lazily (RAM identical); a corrupted page, a page moved to another valid place, a
 * flipped bitmap bit, a damaged device section and a damaged record
 * refused before the guest runs (eager) or before the region is placed
 * (lazy); a file without a record refused when integrity was asked for;
 * a damaged record footer or record, with a damaged page, refused with the
 * parameter off (the default).
 */
#include <stdio.h>
#include <string.h>
#include "libvmtest.h"
#include "migtest.h"

#define MEM "64M"
#define APPEND "mode=verify mem=32"

static char *snap_path(const char *name)
{
    return g_strdup_printf("%s/%s.snap", vmtest_tmpdir(), name);
}

static void qmp_void(VM *vm, const char *cmd)
{
    json_node_unref(vm_qmp_ok(vm, "%s", cmd));
}

static void set_integrity(VM *vm, bool on)
{
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'x-mapped-ram-integrity': %s}}", on ? "true" : "false"));
}

/* A mapped-ram migration of @src into @file: a background snapshot, or precopy. */
static void save(VM *src, const char *file, bool background, int channels, bool integrity)
{
    JsonNode *info;

    qmp_void(src, background ?
             "{'execute': 'migrate-set-capabilities', 'arguments': {'capabilities': ["
             "{'capability': 'background-snapshot', 'state': true}, "
             "{'capability': 'mapped-ram', 'state': true}]}}" :
             "{'execute': 'migrate-set-capabilities', 'arguments': {'capabilities': ["
             "{'capability': 'mapped-ram', 'state': true}]}}");
    if (channels) {
        qmp_void(src, "{'execute': 'migrate-set-capabilities', 'arguments': {'capabilities': ["
                 "{'capability': 'multifd', 'state': true}]}}");
        json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                                  "{'multifd-channels': %d}}", channels));
    }
    set_integrity(src, integrity);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': 'file:%s'}}",
                              file));
    info = vm_wait_migration(src, "completed|failed|cancelled", 300);
    if (strcmp(json_get_str(info, "status"), "completed")) {
        g_autofree char *s = json_to_string(info, TRUE);

        g_error("the mapped-ram migration did not complete: %s", s);
    }
    json_node_unref(info);
}

/* The file's first block (microvm.ram): its bitmap and pages offsets. */
static void find_block(const uint8_t *buf, size_t len, uint64_t *bitmap, uint64_t *pages)
{
    static const char id[] = "\x0bmicrovm.ram";
    uint64_t used = migtest_mem_bytes(MEM);

    for (size_t i = 0; i + sizeof(id) - 1 + 8 + 28 <= len; i++) {
        const uint8_t *p = buf + i + sizeof(id) - 1;
        uint64_t v = 0, b = 0, pg = 0;

        if (memcmp(buf + i, id, sizeof(id) - 1)) {
            continue;
        }
        for (int k = 0; k < 8; k++) {
            v = v << 8 | p[k];
            b = b << 8 | p[8 + 12 + k];
            pg = pg << 8 | p[8 + 20 + k];
        }
        if (v == used) {
            *bitmap = b;
            *pages = pg;
            return;
        }
    }
    g_error("no microvm.ram block header in the file");
}

static bool present(const uint8_t *buf, uint64_t bitmap, uint64_t page)
{
    return buf[bitmap + page / 8] & (1u << (page % 8));
}

/* The first present page at or after @from. */
static uint64_t present_page(const uint8_t *buf, uint64_t bitmap, uint64_t from)
{
    for (uint64_t p = from; p < migtest_mem_bytes(MEM) / 4096; p++) {
        if (present(buf, bitmap, p)) {
            return p;
        }
    }
    g_error("no present page after %" PRIu64, from);
}

/* A destination for @file that must refuse it with @msg and exit. */
static void expect_refused(const char *file, bool lazy, bool integrity, const char *msg)
{
    VM *dst = vm_spawn("dst", false, MIGTEST_BASE_ARGS "-m %s -kernel %s -append '%s' "
                       "-incoming 'file:%s' %s %s", MEM, vmtest_firmware(), APPEND, file,
                       lazy ? "-global migration.x-lazy-restore=on" : "",
                       integrity ? "-global migration.x-mapped-ram-integrity=on" : "");

    g_assert_cmpint(vm_wait_exit(dst, 60), ==, 1);
    if (!strstr(dst->stderr_text->str, msg)) {
        g_error("expected '%s' in: %s", msg, dst->stderr_text->str);
    }
    g_assert_cmpuint(vm_count_lines(dst, "PASS"), ==, 0);
    vm_free(dst);
}

/* The same with 2 multifd readers (and the checker behind them): -incoming defer, then the file. */
static void expect_refused_readers(const char *file, const char *msg)
{
    VM *dst = vm_spawn("dst", true, MIGTEST_BASE_ARGS "-m %s -kernel %s -append '%s' "
                       "-incoming defer", MEM, vmtest_firmware(), APPEND);

    qmp_void(dst, "{'execute': 'migrate-set-capabilities', 'arguments': {'capabilities': ["
             "{'capability': 'multifd', 'state': true}]}}");
    json_node_unref(vm_qmp_ok(dst, "{'execute': 'migrate-incoming', 'arguments': "
                              "{'uri': 'file:%s'}}", file));
    g_assert_cmpint(vm_wait_exit(dst, 60), ==, 1);
    if (!strstr(dst->stderr_text->str, msg)) {
        g_error("expected '%s' in: %s", msg, dst->stderr_text->str);
    }
    vm_free(dst);
}

/*
 * Lazy: the damaged region is never placed and the restore fails. Where
 * the background reader reaches it before the load has ended (a slow or
 * busy host), the load itself fails and the destination exits, as on any
 * refused stream: either way the guest never runs on those pages.
 */
static void expect_lazy_unplaced(const char *file, const char *msg)
{
    g_autofree char *qmp_path = g_strdup_printf("%s/lazy-qmp-%u.sock", vmtest_tmpdir(),
                                                g_random_int());
    /* Not vm_spawn's QMP: the load may fail, and the process exit, before QMP is up. */
    VM *dst = vm_spawn("dst", false, MIGTEST_BASE_ARGS "-S -m %s -kernel %s -append '%s' "
                       "-incoming 'file:%s' -global migration.x-lazy-restore=on "
                       "-qmp unix:%s,server=on,wait=off", MEM, vmtest_firmware(), APPEND,
                       file, qmp_path);
    bool gone;

    dst->qmp_path = g_strdup(qmp_path);
    gone = !vm_try_qmp_connect(dst);
    for (int i = 0; i < 300 && !strstr(dst->stderr_text->str, msg); i++) {
        vm_pump(dst, 100);
    }
    if (!strstr(dst->stderr_text->str, msg)) {
        g_error("expected '%s' in: %s", msg, dst->stderr_text->str);
    }
    vm_pump(dst, 300);      /* a failed load says so on the next line */
    if (gone || strstr(dst->stderr_text->str, "load of migration failed")) {
        g_assert_nonnull(strstr(dst->stderr_text->str, "load of migration failed"));
        g_assert_cmpint(vm_wait_exit(dst, 30), !=, 0);
        vm_kill(dst);
        return;
    }
    {
        JsonNode *st = vm_qmp_ok(dst, "{'execute': 'query-status'}");

        g_assert_cmpstr(json_get_str(st, "status"), !=, "running");
        json_node_unref(st);
    }
    {
        JsonNode *info = vm_qmp_ok(dst, "{'execute': 'query-migrate'}");

        g_assert_cmpstr(json_get_str(info, "x-lazy-restore.status"), ==, "failed");
        g_assert_cmpint(json_get_int(info, "x-lazy-restore.pages-resident"), <,
                        json_get_int(info, "x-lazy-restore.pages-total"));
        json_node_unref(info);
    }
    vm_kill(dst);
}

static void test_parameter(void)
{
    g_autofree char *out = NULL;
    JsonNode *p;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("vm", true, MIGTEST_BASE_ARGS "-m %s -kernel %s -append '%s' -S "
                  "-global migration.x-mapped-ram-integrity=on", MEM, vmtest_firmware(),
                  APPEND);
    p = vm_qmp_ok(vm, "{'execute': 'query-migrate-parameters'}");
    g_assert_true(json_get_int(p, "x-mapped-ram-integrity"));
    json_node_unref(p);
    out = vm_hmp(vm, "migrate_set_parameter x-mapped-ram-integrity off");
    g_assert_cmpstr(out, ==, "");
    g_free(out);
    out = vm_hmp(vm, "info migrate_parameters");
    g_assert_nonnull(strstr(out, "x-mapped-ram-integrity: off"));
    set_integrity(vm, true);
    p = vm_qmp_ok(vm, "{'execute': 'query-migrate-parameters'}");
    g_assert_true(json_get_int(p, "x-mapped-ram-integrity"));
    json_node_unref(p);
    vm_kill(vm);
}

/*
 * Precopy of a running guest with 2 writers (pages written several times),
 * then a paused guest's background snapshot: restored with integrity on,
 * eager and lazy, the guest goes on, RAM identical.
 */
static void test_restore(void)
{
    g_autofree char *file = snap_path("precopy");
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    VM *src, *dst;
    int pass;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source(MEM, APPEND);
    pass = migtest_last_pass(src);
    save(src, file, false, 2, true);
    vm_kill(src);
    for (int lazy = 0; lazy < 2; lazy++) {
        dst = migtest_start_dest_extra(MEM, APPEND, false, uri,
                                       lazy ? "-global migration.x-lazy-restore=on "
                                       "-global migration.x-mapped-ram-integrity=on" :
                                       "-global migration.x-mapped-ram-integrity=on");
        migtest_wait_incoming_done(dst);
        migtest_assert_guest_continues(dst, APPEND, pass);
        g_assert_cmpuint(vm_count_lines(dst, "FAIL"), ==, 0);
        vm_kill(dst);
    }
    /* Eager with 2 readers, checked behind them. */
    dst = migtest_start_dest_extra(MEM, APPEND, false, NULL,
                                   "-global migration.x-mapped-ram-integrity=on");
    qmp_void(dst, "{'execute': 'migrate-set-capabilities', 'arguments': {'capabilities': ["
             "{'capability': 'multifd', 'state': true}]}}");
    json_node_unref(vm_qmp_ok(dst, "{'execute': 'migrate-incoming', 'arguments': "
                              "{'uri': '%s'}}", uri));
    migtest_wait_incoming_done(dst);
    migtest_assert_guest_continues(dst, APPEND, pass);
    vm_kill(dst);

    /* A running guest's background snapshot: pages written while it dirties them. */
    src = migtest_start_source(MEM, APPEND);
    pass = migtest_last_pass(src);
    save(src, file, true, 0, true);
    vm_kill(src);
    dst = migtest_start_dest_extra(MEM, APPEND, false, uri,
                                   "-global migration.x-mapped-ram-integrity=on");
    migtest_wait_incoming_done(dst);
    migtest_assert_guest_continues(dst, APPEND, pass);
    g_assert_cmpuint(vm_count_lines(dst, "FAIL"), ==, 0);
    vm_kill(dst);

    src = migtest_start_source(MEM, APPEND);
    qmp_void(src, "{'execute': 'stop'}");
    save(src, file, true, 0, true);
    for (int lazy = 0; lazy < 2; lazy++) {
        dst = migtest_start_dest_extra(MEM, APPEND, true, uri,
                                       lazy ? "-global migration.x-lazy-restore=on" : "");
        migtest_wait_incoming_done(dst);
        migtest_assert_ram_identical(src, dst, MEM);
        vm_kill(dst);
    }
    vm_kill(src);
}

/* Writes @good patched at @off with @n bytes of @patch (or cut to @off when @patch is NULL). */
static void write_patched(const char *path, const uint8_t *good, size_t len, uint64_t off,
                          const uint8_t *patch, size_t n)
{
    g_autofree uint8_t *b = g_memdup2(good, len);

    if (patch) {
        memmove(b + off, patch, n);
    } else {
        len = off;
    }
    g_assert_true(g_file_set_contents(path, (const char *)b, len, NULL));
}

/*
 * @good with a bit of present page @p's data flipped, @patch written at
 * @off, and the trailer's magic made MRAMDONE (a file without a record)
 * when @plain_trailer.
 */
static void write_page_and_tail(const char *path, const uint8_t *good, size_t len,
                                uint64_t pages, uint64_t p, uint64_t off, const char *patch,
                                bool plain_trailer)
{
    g_autofree uint8_t *b = g_memdup2(good, len);

    b[pages + p * 4096 + 123] ^= 0x10;
    memcpy(b + off, patch, strlen(patch));
    if (plain_trailer) {
        memcpy(b + len - 24, "MRAMDONE", 8);
    }
    g_assert_true(g_file_set_contents(path, (const char *)b, len, NULL));
}

/*
 * The record's footer or bytes damaged, and a page too: refused by a
 * destination with the parameter off (the default), which must not take
 * the file for one without a record and load it unverified.
 */
static void expect_tail_damage_refused(const char *bad, const uint8_t *good, size_t len,
                                       uint64_t pages, uint64_t p)
{
    uint64_t footer = len - 24 - 24, hex_len;
    g_autofree char *longer = NULL;
    char digit[2] = { good[footer - 10] == 'a' ? 'b' : 'a', 0 };

    g_assert_cmpmem(good + footer, 8, "MRAMINTG", 8);
    g_assert_cmpmem(good + len - 24, 8, "MRAMDONR", 8);
    hex_len = g_ascii_strtoull((const char *)good + footer + 8, NULL, 16);
    /* The magic: the trailer still says there is a record. */
    write_page_and_tail(bad, good, len, pages, p, footer + 7, "H", false);
    expect_refused(bad, false, false, "there is no record's footer");
    /* ...and the trailer too: the stream does not end where a trailer begins. */
    write_page_and_tail(bad, good, len, pages, p, footer + 7, "H", true);
    expect_refused(bad, false, false, "its stream ends at");
    expect_refused(bad, true, false, "its stream ends at");
    /* The length: not hex, or one that points inside the vmdesc. */
    write_page_and_tail(bad, good, len, pages, p, footer + 8, "z", false);
    expect_refused(bad, false, false, "integrity record is damaged");
    longer = g_strdup_printf("%016" PRIx64, hex_len + 2);
    write_page_and_tail(bad, good, len, pages, p, footer + 8, longer, false);
    expect_refused(bad, false, false, "integrity record is damaged");
    /* A digit of the record. */
    write_page_and_tail(bad, good, len, pages, p, footer - 10, digit, false);
    expect_refused(bad, false, false, "integrity record is damaged");
    /* A length that fits in the file but not in any record of this machine's blocks. */
    g_free(longer);
    longer = g_strdup_printf("%016" PRIx64, (footer - 4096) & ~(uint64_t)1);
    write_page_and_tail(bad, good, len, pages, p, footer + 8, longer, false);
    expect_refused(bad, false, false, "more than a record of this machine's");
}

static void test_corrupt(void)
{
    g_autofree char *file = snap_path("good");
    g_autofree char *plain = snap_path("plain");
    g_autofree char *bad = snap_path("bad");
    g_autofree uint8_t *good = NULL;
    uint64_t bitmap, pages, p, q, dev;
    uint8_t byte;
    gsize len;
    VM *src;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source(MEM, APPEND);
    qmp_void(src, "{'execute': 'stop'}");
    save(src, file, true, 0, true);
    save(src, plain, true, 0, false);
    vm_kill(src);
    g_assert_true(g_file_get_contents(file, (char **)&good, &len, NULL));
    find_block(good, len, &bitmap, &pages);

    /* One bit of a present page's data. */
    p = present_page(good, bitmap, 300);
    byte = good[pages + p * 4096 + 123] ^ 0x10;
    write_patched(bad, good, len, pages + p * 4096 + 123, &byte, 1);
    expect_refused(bad, false, false, "do not match its integrity record");
    expect_refused_readers(bad, "do not match its integrity record");
    expect_lazy_unplaced(bad, "do not match its integrity record");
    expect_tail_damage_refused(bad, good, len, pages, p);

    /* A present page's content copied over another valid page of another region. */
    q = present_page(good, bitmap, (p / 16 + 1) * 16);
    write_patched(bad, good, len, pages + q * 4096, good + pages + p * 4096, 4096);
    if (memcmp(good + pages + p * 4096, good + pages + q * 4096, 4096)) {
        expect_refused(bad, false, false, "do not match its integrity record");
    }

    /* A bitmap bit cleared: the guest would get a zero page. */
    byte = good[bitmap + p / 8] & ~(1u << (p % 8));
    write_patched(bad, good, len, bitmap + p / 8, &byte, 1);
    expect_refused(bad, false, false, "do not match its integrity record");

    /* A device section's byte: the vmdesc's first byte after its 00 06 len header. */
    dev = len - 24 - 1;
    while (dev > 0 && !(good[dev - 1] == 0x00 && good[dev] == 0x06)) {
        dev--;
    }
    byte = good[dev - 8] ^ 1;   /* inside the last device section */
    write_patched(bad, good, len, dev - 8, &byte, 1);
    expect_refused(bad, false, false, "device state, block list or block headers");

    /* The record: a digit changed; cut off (trailer kept); a file without one. */
    byte = good[len - 24 - 24 - 10] == 'a' ? 'b' : 'a';
    write_patched(bad, good, len, len - 24 - 24 - 10, &byte, 1);
    expect_refused(bad, false, false, "integrity record is damaged");
    {
        /* Stripped: the stream, then the trailer at once. */
        uint64_t hex_len = g_ascii_strtoull((const char *)good + len - 40, NULL, 16);
        uint64_t end = len - 48 - hex_len;
        g_autofree uint8_t *cut = g_malloc(end + 24);

        g_assert_cmpmem(good + len - 48, 8, "MRAMINTG", 8);
        memcpy(cut, good, end);
        memcpy(cut + end, good + len - 24, 24);
        g_assert_true(g_file_set_contents(bad, (const char *)cut, end + 24, NULL));
        expect_refused(bad, false, false, "there is no record's footer");
        /* A file without a record, whole: only the parameter refuses it. */
        memcpy(cut + end, "MRAMDONE", 8);
        g_assert_true(g_file_set_contents(bad, (const char *)cut, end + 24, NULL));
        expect_refused(bad, false, true, "has no integrity record");
    }
    expect_refused(plain, false, true, "has no integrity record");
    expect_refused(plain, true, true, "has no integrity record");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/mapped-ram-integrity/parameter", test_parameter);
    g_test_add_func("/mapped-ram-integrity/restore", test_restore);
    g_test_add_func("/mapped-ram-integrity/corrupt", test_corrupt);
    return g_test_run();
}

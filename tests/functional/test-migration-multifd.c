/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * multifd between real instances: 1, 2 and 4 channels, each compression,
 * each zero-page detection, each dirty-log mode, over unix and tcp, driven
 * through QMP and HMP. Every case either compares the paused guests' RAM
 * byte for byte (-S on the destination) or lets the verify firmware check
 * its own memory at the destination; a second dirty pass is guaranteed
 * (migtest_slow_then_fast), so pages are re-sent on channels other than
 * the first copy's, which is what the rounds' ordering must survive.
 */
#include <stdio.h>
#include <string.h>
#include "libvmtest.h"
#include "migtest.h"

typedef struct MultifdCase {
    const char *name;
    const char *transport;      /* "unix" or "tcp" */
    const char *append;
    const char *mem;
    bool dst_paused;            /* -S on the destination, compare RAM */
    bool hmp;                   /* set everything and migrate through HMP */
    int channels;
    const char *compression;    /* multifd-compression */
    const char *zero_detect;    /* zero-page-detection, NULL = default (multifd) */
    const char *accel;          /* -accel, NULL = the default mode (clear-log here) */
    bool xbzrle;                /* also the xbzrle capability (multifd wins, as in QEMU) */
} MultifdCase;

/*
 * report_ms=250: a mode=dirty guest's STAT lines are what the source's start and
 * migtest_assert_guest_continues wait for; 250 ms apart they say the same as a
 * second apart (the guest paces its writes per write, not per period).
 */
#define DIRTY "mode=dirty mem=128 rate=300 report_ms=250"
#define VERIFY "mode=verify mem=128"

static const MultifdCase cases[] = {
    { "unix-1ch-identical", "unix", DIRTY, "256M", true, false, 1, "none" },
    { "unix-2ch-verify", "unix", VERIFY, "256M", false, false, 2, "none" },
    { "tcp-4ch-identical", "tcp", DIRTY, "256M", true, false, 4, "none" },
    { "hmp-unix-2ch-zstd-verify", "unix", VERIFY, "256M", false, true, 2, "zstd" },
    { "unix-2ch-zstd-identical", "unix", DIRTY " fill=text", "256M", true, false, 2, "zstd" },
    { "tcp-4ch-zlib-identical", "tcp", DIRTY " fill=text", "256M", true, false, 4, "zlib" },
    { "unix-1ch-zlib-verify", "unix", VERIFY, "256M", false, false, 1, "zlib" },
    { "unix-2ch-legacy-zero-identical", "unix", DIRTY " fill=sparse", "256M", true, false, 2,
      "none", "legacy" },
    { "unix-2ch-no-zero-detect-identical", "unix", DIRTY " fill=sparse", "256M", true, false, 2,
      "none", "none" },
    { "clear-log-2ch-zstd-identical", "unix", DIRTY, "256M", true, false, 2, "zstd", NULL,
      "kvm,x-dirty-log=clear" },
    { "get-log-4ch-zstd-identical", "unix", DIRTY " fill=text", "256M", true, false, 4, "zstd",
      NULL, "kvm,x-dirty-log=get" },
    { "ring-4ch-verify", "unix", VERIFY, "256M", false, false, 4, "none", NULL,
      "kvm,dirty-ring-size=4096" },
    { "ring-2ch-zlib-identical", "unix", DIRTY, "256M", true, false, 2, "zlib", NULL,
      "kvm,dirty-ring-size=4096" },
    { "xbzrle-too-2ch-identical", "unix", DIRTY, "256M", true, false, 2, "none", NULL, NULL,
      true },
};

/* The same multifd settings on @vm, the way the case drives it. */
static void set_multifd(VM *vm, const MultifdCase *c)
{
    if (c->hmp) {
        g_autofree char *a = vm_hmp(vm, "migrate_set_capability multifd on");
        g_autofree char *b = vm_hmp(vm, "migrate_set_parameter multifd-channels %d",
                                    c->channels);
        g_autofree char *d = vm_hmp(vm, "migrate_set_parameter multifd-compression %s",
                                    c->compression);
        g_autofree char *p = vm_hmp(vm, "info migrate_parameters");

        g_assert_cmpstr(a, ==, "");
        g_assert_cmpstr(b, ==, "");
        g_assert_cmpstr(d, ==, "");
        g_assert_nonnull(strstr(p, c->compression));
    } else {
        json_node_unref(vm_qmp_ok(vm, "{'execute': 'migrate-set-capabilities', 'arguments': "
                                  "{'capabilities': [{'capability': 'multifd', 'state': true}"
                                  "%s]}}", c->xbzrle ? ", {'capability': 'xbzrle', "
                                                       "'state': true}" : ""));
        json_node_unref(vm_qmp_ok(vm, "{'execute': 'migrate-set-parameters', 'arguments': "
                                  "{'multifd-channels': %d, 'multifd-compression': '%s'}}",
                                  c->channels, c->compression));
    }
    if (c->zero_detect) {
        json_node_unref(vm_qmp_ok(vm, "{'execute': 'migrate-set-parameters', 'arguments': "
                                  "{'zero-page-detection': '%s'}}", c->zero_detect));
    }
}

/* What query-migrate says the channels carried. */
static void check_counters(const MultifdCase *c, JsonNode *info)
{
    int64_t multifd = json_get_int(info, "ram.multifd-bytes");
    int64_t transferred = json_get_int(info, "ram.transferred");

    g_assert_cmpint(multifd, >, 0);
    g_assert_cmpint(transferred, >=, multifd);
    g_assert_cmpint(json_get_int(info, "ram.normal"), >, 0);
    if (c->zero_detect && !strcmp(c->zero_detect, "none")) {
        g_assert_cmpint(json_get_int(info, "ram.duplicate"), ==, 0);
    } else {
        /* Most of the 256 MiB is never written: zero pages, found somewhere. */
        g_assert_cmpint(json_get_int(info, "ram.duplicate"), >, 16384);
    }
    if (!strcmp(c->compression, "none")) {
        /* Whole pages on the channels: at least the normal pages' bytes. */
        g_assert_cmpint(multifd, >=, json_get_int(info, "ram.normal") * 4096);
    } else if (strstr(c->append, "fill=text")) {
        g_assert_cmpint(multifd, <, json_get_int(info, "ram.normal") * 4096 / 2);
    }
}

static void test_multifd(gconstpointer data)
{
    const MultifdCase *c = data;
    g_autofree char *uri = migtest_uri(c->transport);
    g_autofree char *extra = c->accel ? g_strdup_printf("-accel %s", c->accel) : g_strdup("");
    JsonNode *info;
    int pass_before;
    VM *src, *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = migtest_start_source_extra(c->mem, c->append, extra);
    pass_before = migtest_last_pass(src);
    dst = migtest_start_dest_extra(c->mem, c->append, c->dst_paused, uri, extra);
    /* QEMU's rule: the destination needs the capability and the same parameters. */
    set_multifd(dst, c);
    set_multifd(src, c);
    migtest_slow_then_fast(src, uri, c->hmp);
    info = migtest_wait_completed(src);
    check_counters(c, info);
    json_node_unref(info);
    migtest_wait_incoming_done(dst);
    if (c->dst_paused) {
        migtest_assert_ram_identical(src, dst, c->mem);
        json_node_unref(vm_qmp_ok(dst, "{'execute': 'cont'}"));
    }
    migtest_assert_guest_continues(dst, c->append, pass_before);
    vm_kill(src);
    vm_kill(dst);
}

/*
 * The source sends pages the kernel showed empty as zero without reading
 * them: a guest that first touches its memory while the first pass runs,
 * and does not touch it again before the migration ends, must still
 * arrive whole, whichever dirty-log mode catches its writes. The guest
 * leaves its area unwritten (fill=zero), then stores into random pages of
 * it at 40 MB/s (one store per page, ~10k pages a second of 98k): many
 * first stores land, ahead of the migration's cursor, in pages the source
 * saw empty when it started, and are not repeated before it ends.
 */
typedef struct FirstTouch {
    const char *name;
    bool multifd;
    const char *accel;          /* NULL: the default mode (clear-log here) */
} FirstTouch;

static const FirstTouch first_touch[] = {
    { "first-touch-clear-log", false, NULL },
    { "first-touch-get-log", false, "kvm,x-dirty-log=get" },
    { "first-touch-ring", false, "kvm,dirty-ring-size=4096" },
    { "first-touch-multifd", true, NULL },
    { "first-touch-multifd-get-log", true, "kvm,x-dirty-log=get" },
};

static void test_first_touch(gconstpointer data)
{
    const FirstTouch *ft = data;
    const MultifdCase c = { .name = ft->name,
                            .append = "mode=dirty mem=384 rate=40 pattern=random fill=zero",
                            .channels = 2, .compression = "none" };
    g_autofree char *uri = migtest_uri("unix");
    g_autofree char *extra = ft->accel ? g_strdup_printf("-accel %s", ft->accel)
                                       : g_strdup("");
    JsonNode *info;
    VM *src, *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = vm_spawn("src", true, MIGTEST_BASE_ARGS "-m 512M -kernel %s -append '%s' %s",
                   vmtest_firmware(), c.append, extra);
    dst = migtest_start_dest_extra("512M", c.append, true, uri, extra);
    if (ft->multifd) {
        set_multifd(dst, &c);
        set_multifd(src, &c);
    }
    vm_wait_line(src, "READY", 120);
    migtest_slow_then_fast(src, uri, false);
    info = vm_wait_migration(src, "completed|failed", 300);
    g_assert_cmpstr(json_get_str(info, "status"), ==, "completed");
    json_node_unref(info);
    migtest_wait_incoming_done(dst);
    migtest_assert_ram_identical(src, dst, "512M");
    json_node_unref(vm_qmp_ok(dst, "{'execute': 'cont'}"));
    migtest_assert_guest_continues(dst, c.append, 0);
    vm_kill(src);
    vm_kill(dst);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(first_touch); i++) {
        g_autofree char *path = g_strdup_printf("/migration-multifd/%s", first_touch[i].name);
        g_test_add_data_func(path, &first_touch[i], test_first_touch);
    }
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *path = g_strdup_printf("/migration-multifd/%s", cases[i].name);
        g_test_add_data_func(path, &cases[i], test_multifd);
    }
    return g_test_run();
}

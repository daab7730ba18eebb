/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * multifd when things go wrong: a destination without multifd, with
 * another compression or fewer channels, killed mid-stream, cancel in
 * setup and while active, URIs multifd cannot use, and connections whose
 * first word comes in pieces or not at all. In each the source
 * keeps running its verify guest, both sides say what went wrong, a
 * destination never runs a guest from an incomplete stream, and the same
 * source then migrates with multifd successfully.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "libvmtest.h"
#include "migtest.h"
#include "migproxy.h"

#define MEM "256M"
#define APPEND "mode=verify mem=128"

static void set_multifd(VM *vm, int channels, const char *compression)
{
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'migrate-set-capabilities', 'arguments': "
                              "{'capabilities': [{'capability': 'multifd', 'state': true}]}}"));
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'multifd-channels': %d, 'multifd-compression': '%s'}}",
                              channels, compression));
}

/* A multifd source, already working. */
static VM *start_source(void)
{
    VM *src = migtest_start_source(MEM, APPEND);

    set_multifd(src, 2, "zstd");
    return src;
}

/* After a failure the same source migrates with multifd to a right destination. */
static void migrate_again_ok(VM *src)
{
    g_autofree char *uri = migtest_uri("unix");
    VM *dst = migtest_start_dest(MEM, APPEND, false, uri);
    JsonNode *info;

    set_multifd(dst, 2, "zstd");
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'max-bandwidth': 4294967296, 'downtime-limit': 30000}}"));
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", uri));
    info = vm_wait_migration(src, "completed|failed", 300);
    g_assert_cmpstr(json_get_str(info, "status"), ==, "completed");
    g_assert_cmpint(json_get_int(info, "ram.multifd-bytes"), >, 0);
    json_node_unref(info);
    migtest_wait_incoming_done(dst);
    migtest_assert_guest_continues(dst, APPEND, 0);
    vm_kill(dst);
}

/* The destination refused the stream and exited without running the guest. */
static void assert_dest_refused(VM *dst, const char *why)
{
    g_assert_cmpint(vm_wait_exit(dst, 60), ==, 1);
    if (!strstr(dst->stderr_text->str, why)) {
        g_printerr("destination said: %s\n", dst->stderr_text->str);
    }
    g_assert_nonnull(strstr(dst->stderr_text->str, "load of migration failed"));
    g_assert_nonnull(strstr(dst->stderr_text->str, why));
    vm_kill(dst);
}

/* A destination whose multifd settings differ from the source's. */
typedef struct Mismatch {
    const char *name;
    const char *transport;
    int src_channels;
    int dst_channels;           /* 0: multifd off on the destination */
    const char *dst_compression;
    const char *dest_says;      /* in the destination's stderr */
} Mismatch;

static const Mismatch mismatches[] = {
    /*
     * multifd off there: the listener stops after the stream, and the
     * channels' connections race it closing: refused before the source
     * sent anything (the stream then ends before its header), or reset
     * later (the load stops at the first flush record, "multifd is off
     * here"). Either way the load fails.
     */
    { "dest-without-multifd", "unix", 2, 0, NULL, "load of migration failed" },
    { "dest-other-compression", "unix", 2, 2, "zlib",
      "compressed with zstd, but multifd-compression is zlib here" },
    /*
     * The listener closes once the stream and 2 channels arrived; the
     * source's third channel races that: accepted and refused ("more
     * channel connections than multifd-channels (2)"), or refused by the
     * closed port, and the source gives up and the stream ends early.
     */
    { "dest-fewer-channels", "tcp", 4, 2, "zstd", "load of migration failed" },
};

static void test_mismatch(gconstpointer data)
{
    const Mismatch *m = data;
    g_autofree char *uri = NULL;
    VM *src, *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = start_source();
    set_multifd(src, m->src_channels, "zstd");
    uri = migtest_uri(m->transport);
    dst = migtest_start_dest(MEM, APPEND, false, uri);
    if (m->dst_channels) {
        set_multifd(dst, m->dst_channels, m->dst_compression);
    }
    migtest_migrate_expect(src, uri, "failed", NULL);
    assert_dest_refused(dst, m->dest_says);
    migtest_assert_source_alive(src);
    set_multifd(src, 2, "zstd");
    migrate_again_ok(src);
    vm_kill(src);
}

/* A multifd migration at 8 MiB/s, active; the destination in *@dst. */
static VM *start_slow_migration(const char *transport, char **uri, VM **dst)
{
    VM *src = start_source();

    *uri = migtest_uri(transport);
    *dst = migtest_start_dest(MEM, APPEND, false, *uri);
    set_multifd(*dst, 2, "zstd");
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'max-bandwidth': 8388608}}"));
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", *uri));
    json_node_unref(vm_wait_migration(src, "active", 60));
    return src;
}

static void test_dest_dies(void)
{
    g_autofree char *uri = NULL;
    VM *src, *dst;
    JsonNode *info;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = start_slow_migration("unix", &uri, &dst);
    info = migtest_kill_dest_mid_stream(src, dst, "ram.multifd-bytes");
    json_node_unref(info);
    migtest_assert_source_alive(src);
    migrate_again_ok(src);
    vm_kill(src);
}

static void test_cancel_active(void)
{
    g_autofree char *uri = NULL;
    VM *src, *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = start_slow_migration("tcp", &uri, &dst);
    vm_pump(src, 300);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate_cancel'}"));
    json_node_unref(vm_wait_migration(src, "cancelled", 60));
    assert_dest_refused(dst, "load of migration failed");
    migtest_assert_source_alive(src);
    migrate_again_ok(src);
    vm_kill(src);
}

/*
 * Cancel at once, while the channels may still be connecting; then cancel
 * a destination whose channels never came.
 */
static void test_cancel_setup(void)
{
    g_autofree char *uri = migtest_uri("unix");
    g_autofree char *uri2 = migtest_uri("unix");
    VM *src, *dst, *dst2;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = start_source();
    dst = migtest_start_dest(MEM, APPEND, false, uri);
    set_multifd(dst, 2, "zstd");
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", uri));
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate_cancel'}"));
    json_node_unref(vm_wait_migration(src, "cancelled|failed", 60));
    g_assert_cmpint(vm_wait_exit(dst, 60), ==, 1);
    vm_kill(dst);
    migtest_assert_source_alive(src);

    /* A destination with 3 channels expected, 2 coming: it waits; cancel ends it. */
    dst2 = migtest_start_dest(MEM, APPEND, false, uri2);
    set_multifd(dst2, 3, "zstd");
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'max-bandwidth': 4294967296}}"));
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", uri2));
    vm_pump(dst2, 1000);
    json_node_unref(vm_qmp_ok(dst2, "{'execute': 'migrate_cancel'}"));
    g_assert_cmpint(vm_wait_exit(dst2, 60), ==, 1);
    g_assert_nonnull(strstr(dst2->stderr_text->str, "cancelled"));
    vm_kill(dst2);
    json_node_unref(vm_wait_migration(src, "failed", 60));
    migtest_assert_source_alive(src);
    migrate_again_ok(src);
    vm_kill(src);
}

/* exec:, fd: and (without mapped-ram) file: carry one stream: refused at once, on both sides. */
static void test_uri_refused(void)
{
    g_autofree char *file = g_strdup_printf("file:%s/mfd.mig", vmtest_tmpdir());
    VM *src, *dst;
    JsonNode *r;
    g_autofree char *desc = NULL;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = start_source();
    r = vm_qmp(src, "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", file);
    desc = vm_qmp_error_desc(r, NULL);
    g_assert_nonnull(strstr(desc, "multifd needs a tcp:"));
    json_node_unref(r);
    migtest_assert_source_alive(src);
    vm_kill(src);

    dst = migtest_start_dest(MEM, APPEND, false, "defer");
    set_multifd(dst, 2, "none");
    r = vm_qmp(dst, "{'execute': 'migrate-incoming', 'arguments': {'uri': 'exec:cat'}}");
    g_free(desc);
    desc = vm_qmp_error_desc(r, NULL);
    g_assert_nonnull(strstr(desc, "multifd needs a tcp:"));
    json_node_unref(r);
    vm_kill(dst);
}

/*
 * A connection cut near the end of a multifd migration with the defaults
 * (no return-path set by the user): the guest must end up running in
 * exactly one place. The cut points are found in the stream as it passes
 * (migproxy_cut_near_end), so every run cuts at the same place.
 */
typedef struct NearEndCut {
    const char *name;
    MigProxyEnd where;
    const char *dest_says;      /* in the destination's stderr */
    bool return_path_off;       /* the user set return-path off on the source */
    bool postcopy_ram;          /* postcopy-ram on both sides, never started */
} NearEndCut;

static const NearEndCut near_end_cuts[] = {
    /* The device state and EOF loaded; only the go is missing: paused there. */
    { "cut-in-vmdesc", MIGPROXY_END_IN_VMDESC, "did not confirm the switchover" },
    { "cut-in-cpu-section", MIGPROXY_END_IN_CPU, "load of migration failed" },
    { "cut-in-channel", MIGPROXY_END_IN_CHANNEL, "load of migration failed" },
    /*
     * No return path: the source completes once it wrote the stream; the
     * destination runs the whole device state and warns of the vmdesc.
     */
    { "cut-in-vmdesc-return-path-off", MIGPROXY_END_IN_VMDESC,
      "warning: the device state loaded whole; the stream's trailing description is damaged",
      true },
    /*
     * postcopy-ram on, but the guest converges before migrate-start-postcopy:
     * a precopy end, which must wait for the destination's word too. Not
     * multifd, which postcopy does not take yet.
     */
    { "cut-in-cpu-section-postcopy-ram", MIGPROXY_END_IN_CPU, "load of migration failed",
      false, true },
};

/* postcopy-ram on (multifd off: they do not go together yet), or back to multifd. */
static void set_postcopy_ram(VM *vm, bool on)
{
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'migrate-set-capabilities', 'arguments': "
                              "{'capabilities': [{'capability': 'multifd', 'state': %s}, "
                              "{'capability': 'postcopy-ram', 'state': %s}]}}",
                              on ? "false" : "true", on ? "true" : "false"));
}

static void test_near_end_cut(gconstpointer data)
{
    const NearEndCut *c = data;
    g_autofree char *uri = NULL;
    g_autofree char *desc = NULL;
    MigProxy *proxy;
    JsonNode *info;
    VM *src, *dst;

    if (!vmtest_require_kvm()) {
        return;
    }
    src = start_source();
    if (c->return_path_off) {
        json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-capabilities', 'arguments': "
                                  "{'capabilities': [{'capability': 'return-path', "
                                  "'state': false}]}}"));
    }
    uri = migtest_uri("tcp");
    dst = migtest_start_dest(MEM, APPEND, false, uri);
    set_multifd(dst, 2, "zstd");
    if (c->postcopy_ram) {
        set_postcopy_ram(src, true);
        set_postcopy_ram(dst, true);
    }
    proxy = migproxy_new(uri);
    migproxy_cut_near_end(proxy, c->where);
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'max-bandwidth': 4294967296, 'downtime-limit': 30000}}"));
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': '%s'}}",
                              migproxy_uri(proxy)));
    info = vm_wait_migration(src, "completed|failed", 300);
    if (migproxy_end_cuts(proxy) != 1) {
        g_printerr("no cut; source: %s %s\ndestination: %s\n", json_get_str(info, "status"),
                   json_has(info, "error-desc") ? json_get_str(info, "error-desc") : "",
                   dst->stderr_text->str);
    }
    g_assert_cmpint(migproxy_end_cuts(proxy), ==, 1);
    desc = g_strdup(json_has(info, "error-desc") ? json_get_str(info, "error-desc") : "");
    g_test_message("source: %s (%s)", json_get_str(info, "status"), desc);
    if (migtest_assert_one_runs(src, dst, json_get_str(info, "status")) &&
        !c->return_path_off) {
        /* Paused whole, and it says why; cont (the user's call) runs it. */
        JsonNode *d = vm_qmp_ok(dst, "{'execute': 'query-migrate'}");

        g_assert_cmpstr(json_get_str(d, "status"), ==, "failed");
        g_assert_nonnull(strstr(json_get_str(d, "error-desc"),
                                "run 'cont' here only if the source's guest is not running"));
        json_node_unref(d);
        json_node_unref(vm_qmp_ok(dst, "{'execute': 'cont'}"));
        migtest_assert_guest_continues(dst, APPEND, 0);
    }
    vm_pump(dst, 100);
    if (!strstr(dst->stderr_text->str, c->dest_says)) {
        g_printerr("destination said: %s\n", dst->stderr_text->str);
    }
    g_assert_nonnull(strstr(dst->stderr_text->str, c->dest_says));
    if (c->return_path_off) {
        g_assert_cmpstr(json_get_str(info, "status"), ==, "completed");
        migtest_assert_guest_continues(dst, APPEND, 0);
        json_node_unref(info);
        vm_kill(dst);
        migproxy_free(proxy);
        vm_kill(src);
        return;
    }
    /* The source resumed: it says why. */
    g_assert_nonnull(strstr(desc, "the destination did not confirm the load"));
    json_node_unref(info);
    vm_kill(dst);
    migproxy_free(proxy);
    migtest_assert_source_alive(src);
    if (c->postcopy_ram) {
        set_postcopy_ram(src, false);
    }
    migrate_again_ok(src);
    vm_kill(src);
}

/* A raw connection to the destination's unix: @uri. */
static int connect_unix(const char *uri)
{
    struct sockaddr_un un = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    g_strlcpy(un.sun_path, uri + strlen("unix:"), sizeof(un.sun_path));
    g_assert_cmpint(connect(fd, (struct sockaddr *)&un, sizeof(un)), ==, 0);
    return fd;
}

/*
 * The destination tells its connections apart by their first word, which
 * it reads ahead and leaves for the reader. A word that arrives in two
 * pieces is still the stream's (its reader then sees all of it: the
 * header is whole and the load fails only where the stream stops); a
 * connection that closes inside the word is neither, and the load fails
 * saying so.
 */
static void test_first_word(void)
{
    static const char header[] = "QEVM\0\0\0\3\7\0\0\0\7microvm";
    g_autofree char *uri = NULL;
    VM *dst;
    int fd;

    if (!vmtest_require_kvm()) {
        return;
    }
    uri = migtest_uri("unix");
    dst = migtest_start_dest(MEM, APPEND, false, uri);
    set_multifd(dst, 2, "none");
    fd = connect_unix(uri);
    g_assert_cmpint(write(fd, header, 2), ==, 2);
    g_usleep(100 * 1000);       /* the destination sees the first piece alone */
    g_assert_cmpint(write(fd, header + 2, sizeof(header) - 3), ==, sizeof(header) - 3);
    close(fd);
    /* Read whole: not "bad magic" (the reader lost the word), not "closed before it said". */
    g_assert_cmpint(vm_wait_exit(dst, 60), ==, 1);
    g_assert_nonnull(strstr(dst->stderr_text->str, "unexpected end of migration stream"));
    assert_dest_refused(dst, "load of migration failed");

    g_free(uri);
    uri = migtest_uri("unix");
    dst = migtest_start_dest(MEM, APPEND, false, uri);
    set_multifd(dst, 2, "none");
    fd = connect_unix(uri);
    g_assert_cmpint(write(fd, header, 2), ==, 2);
    close(fd);
    assert_dest_refused(dst, "a connection closed before it said whether it is the "
                        "migration stream or a multifd channel");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(mismatches); i++) {
        g_autofree char *path = g_strdup_printf("/migration-multifd-fail/%s",
                                                mismatches[i].name);
        g_test_add_data_func(path, &mismatches[i], test_mismatch);
    }
    for (size_t i = 0; i < G_N_ELEMENTS(near_end_cuts); i++) {
        g_autofree char *path = g_strdup_printf("/migration-multifd-fail/%s",
                                                near_end_cuts[i].name);
        g_test_add_data_func(path, &near_end_cuts[i], test_near_end_cut);
    }
    g_test_add_func("/migration-multifd-fail/dest-dies", test_dest_dies);
    g_test_add_func("/migration-multifd-fail/cancel-active", test_cancel_active);
    g_test_add_func("/migration-multifd-fail/cancel-setup", test_cancel_setup);
    g_test_add_func("/migration-multifd-fail/uri-refused", test_uri_refused);
    g_test_add_func("/migration-multifd-fail/first-word", test_first_word);
    return g_test_run();
}

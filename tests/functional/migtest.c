/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Shared steps of the migration tests: start pairs, drive QMP, check RAM and guest. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <unistd.h>
#include <glib/gstdio.h>
#include "migtest.h"

uint64_t migtest_mem_bytes(const char *mem)
{
    char *end;
    uint64_t v = g_ascii_strtoull(mem, &end, 10);

    switch (*end) {
    case 'G': return v << 30;
    case 'K': return v << 10;
    default:  return v << 20;
    }
}

VM *migtest_start_source(const char *mem, const char *append)
{
    return migtest_start_source_extra(mem, append, "");
}

VM *migtest_start_source_extra(const char *mem, const char *append, const char *extra)
{
    VM *src = vm_spawn("src", true, MIGTEST_BASE_ARGS "-m %s -kernel %s -append '%s' %s",
                       mem, vmtest_firmware(), append, extra);

    vm_wait_line(src, "READY", 120);
    if (strstr(append, "mode=verify")) {
        vm_wait_line(src, "PASS n=2", 60);
    } else {
        vm_wait_line(src, "STAT", 60);
    }
    return src;
}

VM *migtest_start_dest(const char *mem, const char *append, bool paused, const char *incoming)
{
    return migtest_start_dest_extra(mem, append, paused, incoming, "");
}

VM *migtest_start_dest_extra(const char *mem, const char *append, bool paused,
                             const char *incoming, const char *extra)
{
    return vm_spawn("dst", true, MIGTEST_BASE_ARGS "-m %s -kernel %s -append '%s' %s -incoming '%s' %s",
                    mem, vmtest_firmware(), append, paused ? "-S" : "", incoming ? incoming : "defer",
                    extra);
}

int migtest_last_pass(VM *src)
{
    int n = 0;

    vm_pump(src, 0);
    for (guint i = 0; i < src->serial_lines->len; i++) {
        const char *l = g_ptr_array_index(src->serial_lines, i);
        if (g_str_has_prefix(l, "PASS")) {
            n = MAX(n, line_get_int(l, "n"));
        }
    }
    return n;
}

static int free_tcp_port(void)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int port;

    g_assert_cmpint(bind(fd, (struct sockaddr *)&a, sizeof(a)), ==, 0);
    g_assert_cmpint(getsockname(fd, (struct sockaddr *)&a, &len), ==, 0);
    port = ntohs(a.sin_port);
    close(fd);
    return port;
}

char *migtest_uri(const char *transport)
{
    static int seq;

    if (!strcmp(transport, "tcp")) {
        return g_strdup_printf("tcp:127.0.0.1:%d", free_tcp_port());
    }
    if (!strcmp(transport, "exec")) {
        g_autofree char *fifo = g_strdup_printf("%s/mig-%d.fifo", vmtest_tmpdir(), ++seq);
        g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
        return g_strdup_printf("exec:cat > %s", fifo);
    }
    return g_strdup_printf("unix:%s/mig-%d.sock", vmtest_tmpdir(), ++seq);
}

char *migtest_exec_incoming(const char *uri)
{
    const char *fifo = strstr(uri, "> ") + 2;

    return g_strdup_printf("exec:cat %s", fifo);
}

void migtest_slow_then_fast(VM *src, const char *uri, bool hmp)
{
    gint64 end = g_get_monotonic_time() + 240 * G_USEC_PER_SEC;

    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-capabilities', 'arguments': "
                              "{'capabilities': [{'capability': 'events', 'state': true}]}}"));
    if (hmp) {
        g_free(vm_hmp(src, "migrate_set_parameter max-bandwidth 128"));
        g_free(vm_hmp(src, "migrate_set_parameter downtime-limit 1"));
        {
            g_autofree char *out = vm_hmp(src, "migrate -d %s", uri);
            g_assert_cmpstr(out, ==, "");
        }
    } else {
        json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                                  "{'max-bandwidth': 134217728, 'downtime-limit': 1}}"));
        json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", uri));
    }
    for (;;) {
        JsonNode *r = vm_qmp_ok(src, "{'execute': 'query-migrate'}");
        const char *st = json_get_str(r, "status");
        bool done = strcmp(st, "setup") && strcmp(st, "active");
        bool second = json_has(r, "ram") && json_get_int(r, "ram.dirty-sync-count") >= 2;

        json_node_unref(r);
        if (done || second) {
            break;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        vm_pump(src, 50);
    }
    if (hmp) {
        g_free(vm_hmp(src, "migrate_set_parameter max-bandwidth 4G"));
        g_free(vm_hmp(src, "migrate_set_parameter downtime-limit 30000"));
    } else {
        json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                                  "{'max-bandwidth': 4294967296, 'downtime-limit': 30000}}"));
    }
}

JsonNode *migtest_wait_completed(VM *src)
{
    JsonNode *info = vm_wait_migration(src, "completed|failed", 300);

    if (strcmp(json_get_str(info, "status"), "completed")) {
        g_autofree char *s = json_to_string(info, TRUE);
        g_printerr("%s\n", s);
    }
    g_assert_cmpstr(json_get_str(info, "status"), ==, "completed");
    g_assert_cmpint(json_get_int(info, "ram.dirty-sync-count"), >=, 2);
    return info;
}

void migtest_wait_ram_progress(VM *src, const char *field, int64_t bytes)
{
    for (;;) {
        JsonNode *info = vm_qmp_ok(src, "{'execute': 'query-migrate'}");
        bool done = json_get_int(info, field) > bytes;

        json_node_unref(info);
        if (done) {
            return;
        }
        vm_pump(src, 50);
    }
}

JsonNode *migtest_kill_dest_mid_stream(VM *src, VM *dst, const char *field)
{
    JsonNode *info;

    migtest_wait_ram_progress(src, field, 4 * 1024 * 1024);
    kill(dst->pid, SIGKILL);
    info = vm_wait_migration(src, "failed", 60);
    g_assert_true(json_has(info, "error-desc"));
    vm_kill(dst);
    return info;
}

void migtest_wait_incoming_done(VM *dst)
{
    gint64 end = g_get_monotonic_time() + 120 * G_USEC_PER_SEC;

    for (;;) {
        g_autofree char *st = vm_status(dst);
        if (strcmp(st, "inmigrate")) {
            return;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        vm_pump(dst, 50);
    }
}

static char *migtest_pmemsave(VM *vm, const char *tag, uint64_t addr, uint64_t size)
{
    g_autofree char *name = g_strdup_printf("%s-%s-%" PRIx64 ".ram", vm->name, tag, addr);
    char *path = vmtest_ram_dump_path(name, size);

    json_node_unref(vm_qmp_ok(vm, "{'execute': 'pmemsave', 'arguments': {'val': %" PRIu64
                              ", 'size': %" PRIu64 ", 'filename': '%s'}}", addr, size, path));
    return path;
}

static void assert_files_equal(const char *a, const char *b)
{
    g_autoptr(GMappedFile) ma = g_mapped_file_new(a, FALSE, NULL);
    g_autoptr(GMappedFile) mb = g_mapped_file_new(b, FALSE, NULL);
    const char *da, *db;
    gsize la;

    g_assert_nonnull(ma);
    g_assert_nonnull(mb);
    la = g_mapped_file_get_length(ma);
    g_assert_cmpuint(la, ==, g_mapped_file_get_length(mb));
    da = g_mapped_file_get_contents(ma);
    db = g_mapped_file_get_contents(mb);
    if (la && memcmp(da, db, la)) {
        gsize off = 0, diffs = 0;
        for (gsize i = 0; i < la; i += 4096) {
            if (memcmp(da + i, db + i, MIN(4096, la - i))) {
                if (!diffs++) {
                    off = i;
                }
            }
        }
        g_error("RAM differs: %zu pages, first at offset 0x%zx (%s vs %s; kept with "
                "VMTEST_KEEP_TMP=1)", diffs, off, a, b);
    }
    vmtest_ram_dump_unlink(a);
    vmtest_ram_dump_unlink(b);
}

void migtest_assert_ram_identical(VM *src, VM *dst, const char *mem)
{
    migtest_assert_ram_identical_split(src, dst, mem, 3ULL << 30);
}

void migtest_assert_ram_identical_split(VM *src, VM *dst, const char *mem, uint64_t below_4g)
{
    uint64_t size = migtest_mem_bytes(mem);
    uint64_t low = MIN(size, below_4g);
    g_autofree char *s1 = migtest_pmemsave(src, "low", 0, low);
    g_autofree char *d1 = migtest_pmemsave(dst, "low", 0, low);

    assert_files_equal(s1, d1);
    if (size > low) {
        g_autofree char *s2 = migtest_pmemsave(src, "high", 4ULL << 30, size - low);
        g_autofree char *d2 = migtest_pmemsave(dst, "high", 4ULL << 30, size - low);
        assert_files_equal(s2, d2);
    }
}

void migtest_assert_range_identical(VM *src, VM *dst, const char *tag, uint64_t addr,
                                    uint64_t size)
{
    g_autofree char *s = migtest_pmemsave(src, tag, addr, size);
    g_autofree char *d = migtest_pmemsave(dst, tag, addr, size);

    assert_files_equal(s, d);
}

void migtest_assert_guest_continues(VM *dst, const char *append, int pass_before)
{
    if (strstr(append, "mode=verify")) {
        const char *l = vm_wait_line(dst, "PASS", 120);
        g_assert_cmpint(line_get_int(l, "n"), >, pass_before);
        vm_wait_line(dst, "PASS", 60);
        vm_wait_line(dst, "PASS", 60);
    } else {
        vm_wait_line(dst, "STAT", 60);
        vm_wait_line(dst, "STAT", 60);
    }
    g_assert_cmpuint(vm_count_lines(dst, "FAIL"), ==, 0);
}

/* The source guest is still running and verifying: two more clean passes. */
void migtest_assert_source_alive(VM *src)
{
    g_autofree char *st = vm_status(src);
    int before = migtest_last_pass(src);
    const char *l;

    g_assert_cmpstr(st, ==, "running");
    do {
        l = vm_wait_line(src, "PASS", 60);
    } while (line_get_int(l, "n") <= before);
    vm_wait_line(src, "PASS", 60);
    g_assert_cmpuint(vm_count_lines(src, "FAIL"), ==, 0);
}

void migtest_migrate_expect(VM *src, const char *uri, const char *status, const char *desc_part)
{
    JsonNode *info;

    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'max-bandwidth': 4294967296, 'downtime-limit': 300}}"));
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", uri));
    info = vm_wait_migration(src, "completed|failed|cancelled", 120);
    g_assert_cmpstr(json_get_str(info, "status"), ==, status);
    if (desc_part && !strstr(json_get_str(info, "error-desc"), desc_part)) {
        g_printerr("error-desc \"%s\" lacks \"%s\"\n", json_get_str(info, "error-desc"),
                   desc_part);
        g_assert_not_reached();
    }
    json_node_unref(info);
}

/* After a failure the same source can migrate successfully. */
void migtest_migrate_again_ok(VM *src, const char *mem, const char *append)
{
    g_autofree char *uri = migtest_uri("unix");
    VM *dst = migtest_start_dest(mem, append, false, uri);
    JsonNode *info;

    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'max-bandwidth': 4294967296, 'downtime-limit': 30000}}"));
    json_node_unref(vm_qmp_ok(src, "{'execute': 'migrate', 'arguments': {'uri': '%s'}}", uri));
    info = vm_wait_migration(src, "completed|failed", 300);
    g_assert_cmpstr(json_get_str(info, "status"), ==, "completed");
    json_node_unref(info);
    migtest_wait_incoming_done(dst);
    migtest_assert_guest_continues(dst, append, 0);
    vm_kill(dst);
}

/* The destination's run state once it left inmigrate, or NULL if it exited. */
static char *migtest_dest_settled(VM *dst)
{
    gint64 end = g_get_monotonic_time() + 120 * G_USEC_PER_SEC;

    for (;;) {
        JsonNode *r;
        char *st;

        vm_pump(dst, 50);
        if (dst->exited) {
            return NULL;
        }
        r = vm_try_qmp(dst, "{'execute': 'query-status'}");
        if (!r) {
            return NULL;
        }
        st = g_strdup(json_get_str(r, "return.status"));
        json_node_unref(r);
        if (strcmp(st, "inmigrate")) {
            return st;
        }
        g_free(st);
        g_assert_cmpint(g_get_monotonic_time(), <, end);
    }
}

bool migtest_assert_one_runs(VM *src, VM *dst, const char *status)
{
    g_autofree char *src_st = vm_status(src);
    g_autofree char *dst_st = migtest_dest_settled(dst);

    g_test_message("source: migration %s, guest %s; destination: %s", status, src_st,
                   dst_st ? dst_st : "exited");
    if (!strcmp(status, "completed")) {
        g_assert_cmpstr(src_st, ==, "postmigrate");
        g_assert_cmpstr(dst_st, ==, "running");
        return true;
    }
    g_assert_cmpstr(status, ==, "failed");
    g_assert_cmpstr(src_st, ==, "running");
    if (!dst_st) {
        g_assert_cmpint(vm_wait_exit(dst, 10), ==, 1);
        return false;
    }
    g_assert_cmpstr(dst_st, !=, "running");
    /* Nothing starts it later on its own. */
    vm_pump(dst, 1000);
    if (!dst->exited) {
        g_autofree char *again = vm_status(dst);

        g_assert_cmpstr(again, !=, "running");
    }
    return !dst->exited;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QMP against a running verify guest: negotiation, every command and its
 * events, events seen by several clients (and not by one that has not
 * negotiated), -S prelaunch, reset, quit, and a pmemsave of the guest's
 * work area checked page by page. Hostile input and misbehaving clients
 * are in test-qmp-robust.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "qconn.h"

#define ARGS "-M microvm -enable-kvm -nodefaults -m 128M -kernel %s " \
             "-append 'mode=verify mem=32' -serial stdio "
#define WORK_BASE 0x400000
#define WORK_SIZE (32 << 20)
#define PAGE 4096

static void test_negotiation(void)
{
    g_autofree char *path = vmtest_sock_path("qmp");
    VM *vm;
    QConn *c;
    JsonNode *r;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("neg", false, ARGS "-qmp unix:%s,server=on,wait=off", vmtest_firmware(), path);
    c = qc_connect_unix(vm, path);
    qc_check_greeting(c);
    /* Before negotiation every other command is refused, the id still echoed. */
    r = qc_cmd(c, "{'execute': 'query-status', 'id': 7}");
    g_assert_cmpint(json_get_int(r, "id"), ==, 7);
    qmp_assert_error(r, "CommandNotFound",
                     "Expecting capabilities negotiation with 'qmp_capabilities'");
    qmp_assert_error(qc_cmd(c, "{'execute': 'nonexistent'}"), "CommandNotFound",
                     "Expecting capabilities negotiation");
    /* A capability we do not offer. */
    r = qc_cmd(c, "{'execute': 'qmp_capabilities', 'arguments': {'enable': ['oob']}}");
    qmp_assert_error(r, "GenericError", "oob");
    r = qc_cmd(c, "{'execute': 'qmp_capabilities', 'id': 'neg-1'}");
    g_assert_cmpstr(json_get_str(r, "id"), ==, "neg-1");
    g_assert_true(JSON_NODE_HOLDS_OBJECT(json_object_get_member(json_node_get_object(r),
                                                                "return")));
    json_node_unref(r);
    qmp_assert_error(qc_cmd(c, "{'execute': 'qmp_capabilities'}"), "CommandNotFound",
                     "Capabilities negotiation is already complete");
    /* The id is echoed whatever its type. */
    r = qc_cmd(c, "{'execute': 'query-status', 'id': {'a': [1, 'two', null], 'b': true}}");
    {
        JsonArray *a = json_object_get_array_member(
            json_object_get_object_member(json_node_get_object(r), "id"), "a");
        g_assert_cmpint(json_array_get_int_element(a, 0), ==, 1);
        g_assert_cmpstr(json_array_get_string_element(a, 1), ==, "two");
        g_assert_true(json_array_get_null_element(a, 2));
    }
    g_assert_cmpstr(json_get_str(r, "return.status"), ==, "running");
    json_node_unref(r);
    r = qc_cmd(c, "{'id': 12345678901, 'execute': 'query-version'}");
    g_assert_cmpint(json_get_int(r, "id"), ==, 12345678901LL);
    json_node_unref(r);
    r = qc_cmd(c, "{'execute': 'nope', 'id': 'err-id'}");
    g_assert_cmpstr(json_get_str(r, "id"), ==, "err-id");
    qmp_assert_error(r, "CommandNotFound", "The command nope has not been found");
    qc_close(c);

    /* A new client starts over: negotiation is per session. */
    c = qc_connect_unix(vm, path);
    qc_check_greeting(c);
    qmp_assert_error(qc_cmd(c, "{'execute': 'query-status'}"), "CommandNotFound", "Expecting");
    qc_cmd_ok(c, "{'execute': 'qmp_capabilities'}");
    qc_cmd_ok(c, "{'execute': 'query-status'}");
    qc_close(c);
    vm_kill(vm);
}

static const char *const all_commands[] = {
    "qmp_capabilities", "query-version", "query-commands", "query-qmp-schema", "quit",
    "query-status", "stop", "cont", "system_reset", "query-name", "query-kvm",
    "query-cpus-fast", "pmemsave", "human-monitor-command", "query-migrate",
    "migrate-set-capabilities", "query-migrate-capabilities", "migrate-set-parameters",
    "query-migrate-parameters", "migrate", "migrate-incoming", "migrate_cancel",
};

static void check_introspection(VM *vm)
{
    JsonNode *cmds = vm_qmp_ok(vm, "{'execute': 'query-commands'}");
    JsonNode *schema = vm_qmp_ok(vm, "{'execute': 'query-qmp-schema'}");
    g_autoptr(GHashTable) listed = g_hash_table_new(g_str_hash, g_str_equal);
    g_autoptr(GHashTable) in_schema = g_hash_table_new(g_str_hash, g_str_equal);
    JsonArray *a;

    g_assert_true(JSON_NODE_HOLDS_ARRAY(cmds));
    a = json_node_get_array(cmds);
    for (guint i = 0; i < json_array_get_length(a); i++) {
        JsonObject *o = json_array_get_object_element(a, i);
        g_hash_table_add(listed, (char *)json_object_get_string_member(o, "name"));
    }
    for (size_t i = 0; i < G_N_ELEMENTS(all_commands); i++) {
        if (!g_hash_table_contains(listed, all_commands[i])) {
            g_error("query-commands lacks %s", all_commands[i]);
        }
    }
    g_assert_true(JSON_NODE_HOLDS_ARRAY(schema));
    a = json_node_get_array(schema);
    g_assert_cmpuint(json_array_get_length(a), >, G_N_ELEMENTS(all_commands));
    for (guint i = 0; i < json_array_get_length(a); i++) {
        JsonObject *o = json_array_get_object_element(a, i);
        g_assert_true(json_object_has_member(o, "name"));
        g_assert_true(json_object_has_member(o, "meta-type"));
        if (!strcmp(json_object_get_string_member(o, "meta-type"), "command")) {
            g_hash_table_add(in_schema, (char *)json_object_get_string_member(o, "name"));
        }
    }
    /* Every listed command is described by the schema. */
    for (guint i = 0; i < json_array_get_length(json_node_get_array(cmds)); i++) {
        const char *name = json_object_get_string_member(
            json_array_get_object_element(json_node_get_array(cmds), i), "name");
        if (!g_hash_table_contains(in_schema, name)) {
            g_error("query-qmp-schema does not describe command %s", name);
        }
    }
    json_node_unref(cmds);
    json_node_unref(schema);
}

static void test_commands(void)
{
    g_autofree char *file = g_strdup_printf("%s/page.bin", vmtest_tmpdir());
    g_autofree char *out = NULL;
    g_autofree char *data = NULL;
    gsize len;
    JsonNode *r;
    JsonArray *cpus;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("cmds", true, ARGS "-smp 2 -name guest-one", vmtest_firmware());
    vm_wait_line(vm, "READY", 60);

    r = vm_qmp_ok(vm, "{'execute': 'query-version'}");
    g_assert_cmpint(json_get_int(r, "qemu.major"), >=, 7);
    json_get_int(r, "qemu.minor");
    json_get_int(r, "qemu.micro");
    json_get_str(r, "package");
    json_node_unref(r);

    vm_assert_status(vm, "running", true);
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'stop'}"));
    json_node_unref(vm_wait_event(vm, "STOP", 30));
    vm_assert_status(vm, "paused", false);
    out = vm_hmp(vm, "info status");
    g_assert_cmpstr(out, ==, "VM status: paused\r\n");
    g_clear_pointer(&out, g_free);
    /* stop twice is harmless */
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'stop'}"));
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'cont'}"));
    json_node_unref(vm_wait_event(vm, "RESUME", 30));
    vm_assert_status(vm, "running", true);
    out = vm_hmp(vm, "info status");
    g_assert_cmpstr(out, ==, "VM status: running\r\n");
    g_clear_pointer(&out, g_free);
    vm_assert_progress(vm);

    r = vm_qmp_ok(vm, "{'execute': 'query-name'}");
    g_assert_cmpstr(json_get_str(r, "name"), ==, "guest-one");
    json_node_unref(r);
    r = vm_qmp_ok(vm, "{'execute': 'query-kvm'}");
    g_assert_true(json_node_get_boolean(json_object_get_member(json_node_get_object(r),
                                                               "enabled")));
    g_assert_true(json_node_get_boolean(json_object_get_member(json_node_get_object(r),
                                                               "present")));
    json_node_unref(r);

    r = vm_qmp_ok(vm, "{'execute': 'query-cpus-fast'}");
    cpus = json_node_get_array(r);
    g_assert_cmpuint(json_array_get_length(cpus), ==, 2);
    for (guint i = 0; i < 2; i++) {
        JsonObject *o = json_array_get_object_element(cpus, i);
        g_assert_cmpint(json_object_get_int_member(o, "cpu-index"), ==, i);
        g_assert_cmpint(json_object_get_int_member(o, "thread-id"), >, 0);
        g_assert_cmpstr(json_object_get_string_member(o, "target"), ==, "x86_64");
        g_assert_true(json_object_has_member(o, "qom-path"));
    }
    g_assert_cmpint(json_object_get_int_member(json_array_get_object_element(cpus, 0), "thread-id"),
                    !=, json_object_get_int_member(json_array_get_object_element(cpus, 1),
                                                   "thread-id"));
    json_node_unref(r);

    check_introspection(vm);

    out = vm_hmp(vm, "info name");
    g_assert_cmpstr(out, ==, "guest-one\r\n");
    g_clear_pointer(&out, g_free);
    out = vm_hmp(vm, "info kvm");
    g_assert_cmpstr(out, ==, "kvm support: enabled\r\n");
    g_clear_pointer(&out, g_free);
    out = vm_hmp(vm, "no-such-command");
    g_assert_nonnull(strstr(out, "unknown command: 'no-such-command'"));
    g_clear_pointer(&out, g_free);

    /* pmemsave: exact size, contents of the first work page, errors. */
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'pmemsave', 'arguments': "
                              "{'val': %d, 'size': 8192, 'filename': '%s'}}", WORK_BASE, file));
    g_assert_true(g_file_get_contents(file, &data, &len, NULL));
    g_assert_cmpuint(len, ==, 8192);
    g_assert_cmphex(*(uint64_t *)(data + 8), ==, WORK_BASE);
    g_assert_cmphex(*(uint64_t *)(data + PAGE + 8), ==, WORK_BASE + PAGE);
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'pmemsave', 'arguments': "
                              "{'val': 0, 'size': 0, 'filename': '%s'}}", file));
    g_clear_pointer(&data, g_free);
    g_assert_true(g_file_get_contents(file, &data, &len, NULL));
    g_assert_cmpuint(len, ==, 0);
    qmp_assert_error(vm_qmp(vm, "{'execute': 'pmemsave', 'arguments': "
                            "{'val': 0, 'size': 4096, 'filename': '/nonexistent/dir/x'}}"),
                     "GenericError", "Could not open");
    qmp_assert_error(vm_qmp(vm, "{'execute': 'pmemsave', 'arguments': "
                            "{'val': 0, 'size': -1, 'filename': '%s'}}", file),
                     "GenericError", "size");
    qmp_assert_error(vm_qmp(vm, "{'execute': 'pmemsave', 'arguments': "
                            "{'val': -4096, 'size': 8192, 'filename': '%s'}}", file),
                     "GenericError", "wraps");
    vm_assert_progress(vm);
    vm_kill(vm);

    /* Without -name, query-name returns an empty object. */
    vm = vm_spawn("noname", true, ARGS, vmtest_firmware());
    r = vm_qmp_ok(vm, "{'execute': 'query-name'}");
    g_assert_cmpuint(json_object_get_size(json_node_get_object(r)), ==, 0);
    json_node_unref(r);
    out = vm_hmp(vm, "info name");
    g_assert_cmpstr(out, ==, "");
    vm_kill(vm);
}

static void test_system_reset(void)
{
    JsonNode *ev;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("reset", true, ARGS, vmtest_firmware());
    vm_wait_line(vm, "READY", 60);
    vm_wait_line(vm, "PASS n=3", 60);
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'system_reset'}"));
    ev = vm_wait_event(vm, "RESET", 30);
    g_assert_false(json_node_get_boolean(json_object_get_member(
        json_object_get_object_member(json_node_get_object(ev), "data"), "guest")));
    g_assert_cmpstr(json_get_str(ev, "data.reason"), ==, "host-qmp-system-reset");
    json_get_int(ev, "timestamp.seconds");
    json_get_int(ev, "timestamp.microseconds");
    json_node_unref(ev);
    /*
     * The firmware boots again: a second READY, then pass 1 of a new run.
     * The reset may cut a line short, so READY can follow a partial "PASS".
     */
    vm_wait_line_containing(vm, "READY mode=verify", 60);
    g_assert_cmpuint(vm_count_lines_containing(vm, "READY mode=verify"), ==, 2);
    vm_wait_line(vm, "PASS n=1 ", 60);
    vm_wait_line(vm, "PASS n=2 ", 60);
    vm_assert_status(vm, "running", true);

    /* A reset while paused stays paused; the new boot starts on cont. */
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'stop'}"));
    json_node_unref(vm_wait_event(vm, "STOP", 30));
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'system_reset'}"));
    json_node_unref(vm_wait_event(vm, "RESET", 30));
    vm_assert_status(vm, "paused", false);
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'cont'}"));
    vm_wait_line_containing(vm, "READY mode=verify", 60);
    g_assert_cmpuint(vm_count_lines_containing(vm, "READY mode=verify"), ==, 3);
    vm_wait_line(vm, "PASS n=2 ", 60);
    g_assert_cmpuint(vm_count_lines(vm, "FAIL"), ==, 0);
    vm_kill(vm);
}

static void test_quit(void)
{
    JsonNode *ev;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("quit", true, ARGS, vmtest_firmware());
    vm_wait_line(vm, "READY", 60);
    /* The reply may or may not beat the exit; the event must not. */
    json_node_unref(vm_try_qmp(vm, "{'execute': 'quit'}"));
    ev = vm_wait_event(vm, "SHUTDOWN", 30);
    g_assert_false(json_node_get_boolean(json_object_get_member(
        json_object_get_object_member(json_node_get_object(ev), "data"), "guest")));
    g_assert_cmpstr(json_get_str(ev, "data.reason"), ==, "host-qmp-quit");
    json_node_unref(ev);
    g_assert_cmpint(vm_wait_exit(vm, 30), ==, 0);
    vm_kill(vm);
}

static void test_prelaunch(void)
{
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("prelaunch", true, ARGS "-S", vmtest_firmware());
    vm_assert_status(vm, "prelaunch", false);
    /* Nothing runs: no READY within a generous moment, status unchanged. */
    g_assert_null(vm_try_wait_line(vm, "READY", 2));
    vm_assert_status(vm, "prelaunch", false);
    g_assert_cmpuint(vm->serial_lines->len, ==, 0);
    /* stop does not leave prelaunch (and says nothing), as in QEMU. */
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'stop'}"));
    vm_assert_status(vm, "prelaunch", false);
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'cont'}"));
    json_node_unref(vm_wait_event(vm, "RESUME", 30));
    for (GList *l = vm->events.head; l; l = l->next) {
        g_assert_cmpstr(json_get_str(l->data, "event"), !=, "STOP");
    }
    vm_wait_line(vm, "READY", 60);
    vm_assert_status(vm, "running", true);
    vm_assert_progress(vm);
    vm_kill(vm);
}

/*
 * Three monitors: A and B negotiate, C only reads its greeting. Events go
 * to A and B. Events are broadcast in the main loop in the same pass that
 * replies are sent, so C seeing its own reply with no event before it
 * proves it was not sent one.
 */
static void test_events_two_clients(void)
{
    g_autofree char *pa = vmtest_sock_path("a");
    g_autofree char *pb = vmtest_sock_path("b");
    g_autofree char *pc = vmtest_sock_path("c");
    QConn *a, *b, *c;
    JsonNode *n;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("events", false,
                  ARGS "-qmp unix:%s,server=on,wait=off -qmp unix:%s,server=on,wait=off "
                  "-qmp unix:%s,server=on,wait=off", vmtest_firmware(), pa, pb, pc);
    a = qc_connect_unix(vm, pa);
    b = qc_connect_unix(vm, pb);
    c = qc_connect_unix(vm, pc);
    qc_negotiate(a);
    qc_negotiate(b);
    qc_check_greeting(c);

    qc_cmd_ok(a, "{'execute': 'stop'}");
    qc_wait_event(a, "STOP");
    qc_wait_event(b, "STOP");
    qc_cmd_ok(b, "{'execute': 'cont'}");
    qc_wait_event(b, "RESUME");
    qc_wait_event(a, "RESUME");
    g_assert_cmpuint(g_queue_get_length(&a->events) + g_queue_get_length(&b->events), ==, 0);

    /* C: its first line after the greeting is the reply, not an event. */
    n = qc_cmd(c, "{'execute': 'qmp_capabilities', 'id': 'c'}");
    g_assert_cmpuint(g_queue_get_length(&c->events), ==, 0);
    g_assert_cmpstr(json_get_str(n, "id"), ==, "c");
    json_node_unref(n);
    /* Negotiated now: C gets the next events too. */
    qc_cmd_ok(a, "{'execute': 'stop'}");
    qc_wait_event(c, "STOP");
    qc_cmd_ok(c, "{'execute': 'cont'}");
    qc_wait_event(c, "RESUME");

    /* A client that left does not disturb the others. */
    qc_close(b);
    qc_cmd_ok(a, "{'execute': 'system_reset'}");
    qc_wait_event(a, "RESET");
    qc_wait_event(c, "RESET");
    qc_close(a);
    qc_close(c);
    vm_kill(vm);
}

/*
 * The verify firmware's work area, saved while the VM is stopped: every
 * page holds its own address at offset 8 and the number of the last pass
 * that wrote it at offset 0. A pass may have been cut short by the stop,
 * so pass numbers may differ by one, never more, and none is zero.
 */
static void test_pmemsave_workarea(void)
{
    g_autofree char *file = g_strdup_printf("%s/work.bin", vmtest_tmpdir());
    g_autofree char *data = NULL;
    uint64_t lo = UINT64_MAX, hi = 0;
    gsize len;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("workarea", true, ARGS, vmtest_firmware());
    g_assert_cmphex(line_get_int(vm_wait_line(vm, "READY", 60), "base"), ==, WORK_BASE);
    vm_wait_line(vm, "PASS n=5 ", 60);
    for (int round = 0; round < 3; round++) {
        json_node_unref(vm_qmp_ok(vm, "{'execute': 'stop'}"));
        json_node_unref(vm_wait_event(vm, "STOP", 30));
        json_node_unref(vm_qmp_ok(vm, "{'execute': 'pmemsave', 'arguments': "
                                  "{'val': %d, 'size': %d, 'filename': '%s'}}",
                                  WORK_BASE, WORK_SIZE, file));
        g_assert_true(g_file_get_contents(file, &data, &len, NULL));
        g_assert_cmpuint(len, ==, WORK_SIZE);
        lo = UINT64_MAX;
        hi = 0;
        for (gsize off = 0; off < len; off += PAGE) {
            uint64_t pass, addr;

            memcpy(&pass, data + off, 8);
            memcpy(&addr, data + off + 8, 8);
            if (addr != WORK_BASE + off) {
                g_error("page 0x%" PRIx64 " holds address 0x%" PRIx64, WORK_BASE + off, addr);
            }
            lo = MIN(lo, pass);
            hi = MAX(hi, pass);
        }
        g_test_message("round %d: passes %" PRIu64 "..%" PRIu64, round, lo, hi);
        g_assert_cmpuint(lo, >=, 5);
        g_assert_cmpuint(hi - lo, <=, 1);
        /* Stopped means stopped: a second save is identical. */
        {
            g_autofree char *again = NULL;
            gsize len2;
            json_node_unref(vm_qmp_ok(vm, "{'execute': 'pmemsave', 'arguments': "
                                      "{'val': %d, 'size': %d, 'filename': '%s.2'}}",
                                      WORK_BASE, WORK_SIZE, file));
            {
                g_autofree char *f2 = g_strdup_printf("%s.2", file);
                g_assert_true(g_file_get_contents(f2, &again, &len2, NULL));
            }
            g_assert_cmpuint(len2, ==, len);
            g_assert_true(memcmp(again, data, len) == 0);
        }
        g_clear_pointer(&data, g_free);
        json_node_unref(vm_qmp_ok(vm, "{'execute': 'cont'}"));
        json_node_unref(vm_wait_event(vm, "RESUME", 30));
        vm_assert_progress(vm);
    }
    vm_kill(vm);
}

static void assert_socket_owner_only(const char *path)
{
    struct stat st;

    g_assert_cmpint(stat(path, &st), ==, 0);
    g_assert_true(S_ISSOCK(st.st_mode));
    if ((st.st_mode & 07777) != 0600) {
        g_error("%s has mode %o: any local user could connect", path, st.st_mode & 07777);
    }
}

/*
 * Whoever connects to a monitor drives the VM, and whoever connects to an
 * incoming socket feeds it a stream: every socket we listen on is 0600,
 * even under umask 000.
 */
static void test_sockets_owner_only(void)
{
    g_autofree char *hmp = vmtest_sock_path("hmp");
    g_autofree char *chr = vmtest_sock_path("chr");
    g_autofree char *mig = vmtest_sock_path("mig");
    mode_t old;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    old = umask(0);
    vm = vm_spawn("perm", true, ARGS "-monitor unix:%s,server=on,wait=off "
                  "-chardev socket,id=c9,path=%s,server=on,wait=off -mon chardev=c9,mode=control "
                  "-incoming unix:%s", vmtest_firmware(), hmp, chr, mig);
    umask(old);
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'query-status'}"));
    assert_socket_owner_only(vm->qmp_path);
    assert_socket_owner_only(hmp);
    assert_socket_owner_only(chr);
    assert_socket_owner_only(mig);
    vm_kill(vm);
}

/* qom-list's answer as "name:type name:type ..." in its order. */
static char *qom_list(VM *vm, const char *path)
{
    JsonNode *r = vm_qmp_ok(vm, "{'execute': 'qom-list', 'arguments': {'path': '%s'}}", path);
    JsonArray *a = json_node_get_array(r);
    GString *s = g_string_new(NULL);

    for (guint i = 0; i < json_array_get_length(a); i++) {
        JsonObject *o = json_array_get_object_element(a, i);

        g_string_append_printf(s, "%s%s:%s", i ? " " : "",
                               json_object_get_string_member(o, "name"),
                               json_object_get_string_member(o, "type"));
    }
    json_node_unref(r);
    return g_string_free(s, FALSE);
}

/*
 * Issue 33: qom-list path=/ and path=/machine/unattached answered "Device
 * ... not found" although /machine listed unattached. QEMU 7.2 (microvm)
 * lists each child as child<TYPE> after "type", takes "//" and "/machine/"
 * as "/" and "/machine", and a partial path names the one object whose
 * path ends so ("unattached"; "" is ambiguous).
 */
static void test_qom_tree(void)
{
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("qom", true, ARGS "-smp 2 -device isa-vga,id=vga0", vmtest_firmware());
    vm_wait_line(vm, "READY", 60);
    {
        g_autofree char *root = qom_list(vm, "/");
        g_autofree char *root2 = qom_list(vm, "//");
        g_autofree char *unattached = qom_list(vm, "/machine/unattached");
        g_autofree char *partial = qom_list(vm, "unattached");
        g_autofree char *machine = qom_list(vm, "/machine/");
        g_autofree char *peripheral = qom_list(vm, "peripheral");
        JsonNode *r;

        g_assert_cmpstr(root, ==, "type:string machine:child<microvm-machine>");
        g_assert_cmpstr(root2, ==, root);
        g_assert_cmpstr(unattached, ==, "type:string device[0]:child<host-x86_64-cpu> "
                        "device[1]:child<host-x86_64-cpu>");
        g_assert_cmpstr(partial, ==, unattached);
        g_assert_cmpstr(machine, ==, "type:string peripheral:child<container> "
                        "unattached:child<container>");
        g_assert_cmpstr(peripheral, ==, "type:string vga0:child<isa-vga>");
        r = vm_qmp_ok(vm, "{'execute': 'qom-get', 'arguments': "
                      "{'path': '/', 'property': 'type'}}");
        g_assert_cmpstr(json_node_get_string(r), ==, "container");
        json_node_unref(r);
        r = vm_qmp_ok(vm, "{'execute': 'qom-get', 'arguments': "
                      "{'path': 'device[1]', 'property': 'type'}}");
        g_assert_cmpstr(json_node_get_string(r), ==, "host-x86_64-cpu");
        json_node_unref(r);
    }
    vm_qmp_expect_error(vm, "{'execute': 'qom-list', 'arguments': {'path': ''}}",
                        "Path '' is ambiguous");
    vm_qmp_expect_error(vm, "{'execute': 'qom-list', 'arguments': {'path': '/nope'}}",
                        "Device '/nope' not found");
    vm_qmp_expect_error(vm, "{'execute': 'qom-list', 'arguments': "
                        "{'path': '/machine/unattached/device[2]'}}",
                        "Device '/machine/unattached/device[2]' not found");
    vm_kill(vm);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/qmp/negotiation", test_negotiation);
    g_test_add_func("/qmp/commands", test_commands);
    g_test_add_func("/qmp/system-reset", test_system_reset);
    g_test_add_func("/qmp/quit", test_quit);
    g_test_add_func("/qmp/prelaunch", test_prelaunch);
    g_test_add_func("/qmp/events-two-clients", test_events_two_clients);
    g_test_add_func("/qmp/pmemsave-workarea", test_pmemsave_workarea);
    g_test_add_func("/qmp/sockets-owner-only", test_sockets_owner_only);
    g_test_add_func("/qmp/qom-tree", test_qom_tree);
    return g_test_run();
}

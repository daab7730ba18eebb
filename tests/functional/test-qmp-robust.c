/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QMP under hostile input and misbehaving clients: garbage, binary junk,
 * non-objects, bad members and arguments, huge and deeply nested input
 * each get an error (pure whitespace gets nothing) and the same session
 * carries on; clients that vanish mid-request, a second client queued
 * behind the first, and tcp and -chardev/-mon monitors. The verify guest
 * keeps passing throughout.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "qconn.h"

#define ARGS "-M microvm -enable-kvm -nodefaults -m 128M -kernel %s " \
             "-append 'mode=verify mem=32' -serial stdio "

/*
 * Sends @junk, then a newline and a valid request with a fresh id; reads
 * to its reply. Every reply before it must be an error; there must be at
 * least @min_errors of them (exactly none when @min_errors is 0), and if
 * @desc is given the first one must contain it.
 */
static void expect_errors(QConn *c, const void *junk, size_t len, int min_errors,
                          const char *desc)
{
    static int seq;
    g_autofree char *id = g_strdup_printf("sync-%d", ++seq);
    g_autofree char *sync = g_strdup_printf("\n{\"execute\": \"query-status\", "
                                            "\"id\": \"%s\"}\n", id);
    int errors = 0;

    qc_send(c, junk, len);
    qc_send_str(c, sync);
    for (;;) {
        JsonNode *r = qc_reply(c);
        JsonNode *rid = json_object_get_member(json_node_get_object(r), "id");

        if (rid && JSON_NODE_HOLDS_VALUE(rid) && json_node_get_value_type(rid) == G_TYPE_STRING &&
            !strcmp(json_node_get_string(rid), id)) {
            g_assert_cmpstr(json_get_str(r, "return.status"), ==, "running");
            json_node_unref(r);
            break;
        }
        if (!json_has(r, "error")) {
            g_autofree char *t = json_to_string(r, FALSE);
            g_error("case %s: expected an error, got %.200s", id, t);
        }
        if (errors++ == 0 && desc) {
            const char *cls;
            g_autofree char *d = vm_qmp_error_desc(r, &cls);
            if (!strstr(d, desc)) {
                g_error("case %s: error '%.200s' lacks '%s'", id, d, desc);
            }
        }
        json_node_unref(r);
    }
    if (min_errors == 0) {
        g_assert_cmpint(errors, ==, 0);
    } else if (errors < min_errors) {
        g_error("case %s: %d errors, expected at least %d", id, errors, min_errors);
    }
}

/* A string literal and its length without the terminating NUL. */
#define LIT(s) (s), (sizeof(s) - 1)

static void expect_error_str(QConn *c, const char *req, const char *desc)
{
    g_autofree char *j = qc_json(req);

    expect_errors(c, j, strlen(j), 1, desc);
}

static void test_malformed(void)
{
    g_autofree char *path = vmtest_sock_path("qmp");
    g_autoptr(GRand) rnd = g_rand_new_with_seed(0xbad);
    QConn *c;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("malformed", true, ARGS "-qmp unix:%s,server=on,wait=off",
                  vmtest_firmware(), path);
    vm_wait_line(vm, "READY", 60);
    c = qc_connect_unix(vm, path);
    qc_negotiate(c);

    expect_errors(c, LIT("hello world"), 2, "JSON parse error");
    expect_errors(c, LIT("  \t\r\n \n\n\r\n "), 0, NULL);
    {
        /* Binary junk, minus the four bytes that would open a value and swallow the rest. */
        uint8_t junk[2048];
        for (size_t i = 0; i < sizeof(junk); i++) {
            do {
                junk[i] = g_rand_int(rnd);
            } while (strchr("{[\"'", junk[i]) && junk[i]);
        }
        expect_errors(c, junk, sizeof(junk), 1, NULL);
        expect_errors(c, LIT("\0\0\0"), 1, NULL);
        expect_errors(c, LIT("{\"execute\": \"query-status\"\0}"), 1, NULL);
        expect_errors(c, LIT("{\"execute\": \"\xff\xfe\x80\"}"), 1, NULL);
    }
    expect_error_str(c, "[1, 2]", "QMP input must be a JSON object");
    expect_error_str(c, "42", "QMP input must be a JSON object");
    expect_error_str(c, "\"x\"", "QMP input must be a JSON object");
    expect_error_str(c, "null", "QMP input must be a JSON object");
    expect_error_str(c, "}", "JSON parse error");
    expect_error_str(c, "{}", "QMP input lacks member 'execute'");
    expect_error_str(c, "{'arguments': {}}", "QMP input lacks member 'execute'");
    expect_error_str(c, "{'id': 1}", "QMP input lacks member 'execute'");
    expect_error_str(c, "{'execute': 42}", "QMP input member 'execute' must be a string");
    expect_error_str(c, "{'execute': 'query-status', 'arguments': [1]}",
                     "QMP input member 'arguments' must be an object");
    expect_error_str(c, "{'execute': 'query-status', 'extra': 1}",
                     "QMP input member 'extra' is unexpected");
    expect_error_str(c, "{'execute': 'query-status',}", "JSON parse error");
    expect_error_str(c, "{'execute': 'query-status' 'x'}", "JSON parse error");
    expect_error_str(c, "{'execute': 'foo'}", "The command foo has not been found");
    expect_error_str(c, "{'execute': 'pmemsave', 'arguments': "
                     "{'val': 'abc', 'size': 1, 'filename': '/dev/null'}}",
                     "Invalid parameter type for 'val', expected: integer");
    expect_error_str(c, "{'execute': 'pmemsave', 'arguments': "
                     "{'val': 1.5, 'size': 1, 'filename': '/dev/null'}}",
                     "Invalid parameter type for 'val', expected: integer");
    expect_error_str(c, "{'execute': 'pmemsave', 'arguments': "
                     "{'val': 99999999999999999999999, 'size': 1, 'filename': '/dev/null'}}",
                     "Invalid parameter type for 'val', expected: integer");
    expect_error_str(c, "{'execute': 'pmemsave', 'arguments': "
                     "{'val': 1e999, 'size': 1, 'filename': '/dev/null'}}",
                     "number out of range");
    expect_error_str(c, "{'execute': 'pmemsave', 'arguments': {'val': 0, 'size': 1}}",
                     "Parameter 'filename' is missing");
    expect_error_str(c, "{'execute': 'pmemsave', 'arguments': "
                     "{'val': 0, 'size': 1, 'filename': ['/dev/null']}}",
                     "Invalid parameter type for 'filename', expected: string");
    expect_error_str(c, "{'execute': 'query-status', 'arguments': {'x': 1}}",
                     "Parameter 'x' is unexpected");
    expect_error_str(c, "{'execute': 'human-monitor-command', 'arguments': {}}",
                     "Parameter 'command-line' is missing");
    /* Two values in one go are two requests. */
    expect_errors(c, LIT("42 43"), 2, "QMP input must be a JSON object");

    /* Nesting: refused past the limit, fine below it. */
    {
        GString *deep = g_string_new("{'execute': 'query-status', 'arguments': {'a': ");
        for (int i = 0; i < 100000; i++) {
            g_string_append_c(deep, '[');
        }
        for (int i = 0; i < 100000; i++) {
            g_string_append_c(deep, ']');
        }
        g_string_append(deep, "}}");
        expect_error_str(c, deep->str, "nesting deeper than");
        g_string_truncate(deep, 0);
        for (int i = 0; i < 5000; i++) {
            g_string_append(deep, "{'a': ");
        }
        g_string_append(deep, "1");
        for (int i = 0; i < 5000; i++) {
            g_string_append_c(deep, '}');
        }
        expect_error_str(c, deep->str, "nesting deeper than");
        g_string_truncate(deep, 0);
        g_string_append(deep, "{'execute': 'query-status', 'id': ");
        for (int i = 0; i < 100; i++) {
            g_string_append_c(deep, '[');
        }
        for (int i = 0; i < 100; i++) {
            g_string_append_c(deep, ']');
        }
        g_string_append(deep, "}");
        {
            g_autofree char *j = qc_json(deep->str);
            JsonNode *r;
            qc_send_str(c, j);
            r = qc_reply(c);
            g_assert_true(json_has(r, "return"));
            json_node_unref(r);
        }
        g_string_free(deep, TRUE);
    }
    vm_assert_progress(vm);

    /*
     * 100,000 brackets that never close: one error, and the connection is
     * usable again from the next line (it used to swallow every command).
     */
    {
        g_autofree char *open = g_strnfill(100000, '[');

        expect_errors(c, open, 100000, 1, "nesting deeper than");
        expect_errors(c, open, 100000, 1, "nesting deeper than");
    }

    /* Huge input: MiBs of spaces (nothing), of one word, in a string, past the limit. */
    {
        size_t big = 4 << 20, huge = (64 << 20) + 4096;
        g_autofree char *buf = g_malloc(huge + 64);

        memset(buf, ' ', big);
        expect_errors(c, buf, big, 0, NULL);
        memset(buf, 'x', big);
        expect_errors(c, buf, big, 1, "JSON parse error");
        memcpy(buf, "{\"execute\": \"", 13);
        memset(buf + 13, 'a', big);
        memcpy(buf + 13 + big, "\"}", 2);
        expect_errors(c, buf, big + 15, 1, "has not been found");
        memcpy(buf, "{\"execute\": \"query-status\", \"id\": \"", 35);
        memset(buf + 35, 'b', huge);
        memcpy(buf + 35 + huge, "\"}", 2);
        expect_errors(c, buf, huge + 37, 1, "request larger than");
        memset(buf, 'y', huge);
        expect_errors(c, buf, huge, 1, "request larger than");
    }
    vm_assert_progress(vm);
    /* The untouched libvmtest connection still works too. */
    vm_assert_status(vm, "running", true);
    qc_close(c);
    vm_kill(vm);
}

/*
 * One client per monitor: a second one connects (the kernel queues it) but
 * is not served, not even a greeting, until the first leaves.
 */
static void test_one_client_at_a_time(void)
{
    g_autofree char *path = vmtest_sock_path("qmp");
    QConn *a, *b;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("queue", false, ARGS "-qmp unix:%s,server=on,wait=off", vmtest_firmware(), path);
    a = qc_connect_unix(vm, path);
    qc_negotiate(a);
    b = qc_connect_unix(vm, path);
    qc_send_str(b, "{\"execute\": \"qmp_capabilities\", \"id\": \"early\"}\n");
    /* A round trip on A after B connected: B has still heard nothing. */
    qc_cmd_ok(a, "{'execute': 'query-status'}");
    g_assert_null(qc_recv(b, 1000));
    g_assert_cmpuint(b->in->len, ==, 0);
    qc_cmd_ok(a, "{'execute': 'query-kvm'}");
    g_assert_null(qc_recv(b, 200));
    qc_close(a);
    /* Now B is served: greeting, then the request it queued meanwhile. */
    qc_check_greeting(b);
    {
        JsonNode *r = qc_reply(b);
        g_assert_cmpstr(json_get_str(r, "id"), ==, "early");
        g_assert_true(json_has(r, "return"));
        json_node_unref(r);
    }
    qc_cmd_ok(b, "{'execute': 'query-status'}");
    qc_close(b);
    vm_kill(vm);
}

/* Clients that leave with half a request, or before their reply; then a fresh one. */
static void test_client_vanishes(void)
{
    g_autofree char *path = vmtest_sock_path("qmp");
    g_autofree char *file = g_strdup_printf("%s/vanish.bin", vmtest_tmpdir());
    QConn *c;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("vanish", true, ARGS "-qmp unix:%s,server=on,wait=off", vmtest_firmware(), path);
    vm_wait_line(vm, "READY", 60);
    for (int round = 0; round < 3; round++) {
        /* Half a request, inside a string: must not leak into the next session. */
        c = qc_connect_unix(vm, path);
        qc_negotiate(c);
        qc_send_str(c, "{\"execute\": \"qmp_capab");
        qc_close(c);
        /* Never negotiated, half a request. */
        c = qc_connect_unix(vm, path);
        qc_send_str(c, "{\"execute\": [[[[");
        qc_close(c);
        /* A big command whose reply nobody reads. */
        c = qc_connect_unix(vm, path);
        qc_negotiate(c);
        {
            g_autofree char *req = g_strdup_printf(
                "{\"execute\": \"pmemsave\", \"arguments\": {\"val\": 0, \"size\": %d, "
                "\"filename\": \"%s\"}}\n{\"execute\": \"query-qmp-schema\"}\n", 64 << 20, file);
            qc_send_str(c, req);
        }
        qc_close(c);

        c = qc_connect_unix(vm, path);
        qc_check_greeting(c);
        qmp_assert_error(qc_cmd(c, "{'execute': 'query-status'}"), "CommandNotFound", "Expecting");
        qc_cmd_ok(c, "{'execute': 'qmp_capabilities'}");
        qc_cmd_ok(c, "{'execute': 'query-status'}");
        qc_close(c);
    }
    vm_assert_status(vm, "running", true);
    vm_assert_progress(vm);
    vm_kill(vm);
}

static JsonNode *read_pretty(QConn *c)
{
    gint64 end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;

    for (;;) {
        g_autoptr(JsonParser) p = json_parser_new();

        if (g_str_has_suffix(c->in->str, "}\r\n") &&
            json_parser_load_from_data(p, c->in->str, c->in->len, NULL)) {
            /* Really pretty: a newline before the final one. */
            g_assert_true(strchr(c->in->str, '\n') < c->in->str + c->in->len - 1);
            g_string_truncate(c->in, 0);
            return json_node_copy(json_parser_get_root(p));
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_assert_true(qc_read_some(c, 100));
    }
}

/* -qmp tcp:..., and a -chardev socket with -mon mode=control (and pretty output). */
static void test_other_transports(void)
{
    g_autofree char *path = vmtest_sock_path("chr");
    g_autofree char *ppath = vmtest_sock_path("pretty");
    int port;
    QConn *c;
    JsonNode *r;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    port = vmtest_free_tcp_port();
    vm = vm_spawn("transports", false,
                  ARGS "-qmp tcp:127.0.0.1:%d,server=on,wait=off "
                  "-chardev socket,id=c0,path=%s,server=on,wait=off -mon chardev=c0,mode=control "
                  "-chardev socket,id=c1,path=%s,server=on,wait=off "
                  "-mon chardev=c1,mode=control,pretty=on",
                  vmtest_firmware(), port, path, ppath);
    for (int i = 0; i < 2; i++) {
        c = qc_connect_tcp(vm, port);
        qc_negotiate(c);
        r = qc_cmd(c, "{'execute': 'query-status', 'id': 'tcp'}");
        g_assert_cmpstr(json_get_str(r, "return.status"), ==, "running");
        json_node_unref(r);
        qc_close(c);

        c = qc_connect_unix(vm, path);
        qc_negotiate(c);
        qc_cmd_ok(c, "{'execute': 'stop'}");
        qc_wait_event(c, "STOP");
        qc_cmd_ok(c, "{'execute': 'cont'}");
        qc_wait_event(c, "RESUME");
        qc_close(c);
    }
    /* Pretty replies span lines: read until the text parses as one JSON value. */
    c = qc_connect_unix(vm, ppath);
    qc_check_greeting(c);
    qc_send_str(c, "{\"execute\": \"qmp_capabilities\"}\n");
    r = read_pretty(c);
    g_assert_true(json_has(r, "return"));
    json_node_unref(r);
    qc_send_str(c, "{\"execute\": \"query-status\", \"id\": 1}\n");
    r = read_pretty(c);
    g_assert_cmpstr(json_get_str(r, "return.status"), ==, "running");
    g_assert_cmpint(json_get_int(r, "id"), ==, 1);
    json_node_unref(r);
    qc_close(c);
    vm_assert_progress(vm);
    vm_kill(vm);
}

/*
 * A client that sends requests and never reads the replies must not stall
 * the guest or the other monitors: socket output is queued (never written
 * with blocking I/O under the BQL), the monitor stops reading a client
 * whose replies pile up, and a client that lets 32 MiB pile up is dropped.
 */
static void test_slow_reader(void)
{
    g_autofree char *pa = vmtest_sock_path("a"), *pb = vmtest_sock_path("b");
    static const char req[] = "{\"execute\": \"query-qmp-schema\"}\n";
    gint64 end = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
    size_t sent = 0;
    QConn *a, *b;
    JsonNode *r;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("slowreader", false, ARGS "-qmp unix:%s,server=on,wait=off "
                  "-qmp unix:%s,server=on,wait=off", vmtest_firmware(), pa, pb);
    a = qc_connect_unix(vm, pa);
    b = qc_connect_unix(vm, pb);
    qc_negotiate(a);
    qc_negotiate(b);
    /* Flood A without reading until the socket pushes back (or 5 s). */
    while (g_get_monotonic_time() < end) {
        ssize_t n = send(a->fd, req, sizeof(req) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);

        if (n < 0 && errno == EAGAIN) {
            break;
        }
        g_assert_cmpint(n, >, 0);
        sent += n;
        vm_pump(vm, 0);
    }
    g_test_message("sent %zu bytes of requests without reading a reply", sent);
    qc_send_str(b, "{\"execute\": \"query-status\"}\n");
    r = qc_recv(b, 5000);
    g_assert_nonnull(r);
    g_assert_true(json_has(r, "return"));
    json_node_unref(r);
    vm_assert_progress(vm);
    qc_close(a);
    qc_close(b);
    vm_kill(vm);
}

/*
 * Numbers as QEMU 7.2 takes them (issue 33): a literal in [2^63, 2^64) is
 * unsigned, so no int argument takes it (json-glib stores it as a negative
 * int64, which int arguments took: calc-time 18446744073709551615 was -1),
 * while uint64 ones take it exactly; what is not a JSON number is refused.
 */
static void test_number_edges(void)
{
    JsonNode *r;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("numbers", true, ARGS, vmtest_firmware());
    vm_wait_line(vm, "READY", 60);
    vm_qmp_expect_error(vm, "{'execute': 'calc-dirty-rate', 'arguments': "
                        "{'calc-time': 9223372036854775808}}",
                        "Invalid parameter type for 'calc-time', expected: integer");
    vm_qmp_expect_error(vm, "{'execute': 'calc-dirty-rate', 'arguments': "
                        "{'calc-time': 18446744073709551615}}",
                        "Invalid parameter type for 'calc-time', expected: integer");
    /* calc-time * 1000 came before the range check: a signed overflow. */
    vm_qmp_expect_error(vm, "{'execute': 'calc-dirty-rate', 'arguments': "
                        "{'calc-time': 9300000000000000}}",
                        "Parameter 'calc-time' expects a value between 1 and 60 seconds");
    /* The same through HMP (a sanitizer build exits on the overflow). */
    {
        g_autofree char *out = vm_hmp(vm, "calc_dirty_rate 9300000000000000");

        g_assert_nonnull(strstr(out, "Parameter 'calc-time' expects a value between 1 and 60"));
        g_free(out);
        out = vm_hmp(vm, "calc_dirty_rate 9223372036854775808");
        g_assert_nonnull(strstr(out, "invalid number"));
    }
    vm_qmp_expect_error(vm, "{'execute': 'screendump', 'arguments': "
                        "{'filename': '/dev/null', 'head': 9223372036854775808}}",
                        "Invalid parameter type for 'head', expected: integer");
    vm_qmp_expect_error(vm, "{'execute': 'migrate-set-parameters', 'arguments': "
                        "{'cpu-throttle-initial': 18446744073709551615}}",
                        "Parameter 'cpu-throttle-initial' expects uint8_t");
    vm_qmp_expect_error(vm, "{'execute': 'calc-dirty-rate', 'arguments': {'calc-time': 0x10}}",
                        "JSON parse error, stray '0x10'");
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'migrate-set-parameters', 'arguments': "
                              "{'max-bandwidth': 18446744073709551615}}"));
    r = vm_qmp_ok(vm, "{'execute': 'query-migrate-parameters'}");
    g_assert_cmpuint((uint64_t)json_get_int(r, "max-bandwidth"), ==, UINT64_MAX);
    json_node_unref(r);
    vm_kill(vm);
}

/*
 * What json-glib's scanner takes and QEMU's lexer refuses: a comment
 * with a quote in it hid a million brackets from the nesting bound and
 * json-glib overflowed the VMM's stack, before capabilities negotiation;
 * '\' did the same; $ff was an integer the unsigned pairing never saw.
 */
static void test_json_glib_forms(void)
{
    g_autofree char *path = vmtest_sock_path("qmp");
    g_autofree char *open = g_strnfill(1000000, '[');
    g_autofree char *close = g_strnfill(1000000, ']');
    g_autofree char *req = NULL;
    g_autofree char *desc = NULL;
    const char *cls;
    QConn *c;
    JsonNode *r;
    VM *vm;

    if (!vmtest_require_kvm()) {
        return;
    }
    vm = vm_spawn("json-glib-forms", true, ARGS "-qmp unix:%s,server=on,wait=off",
                  vmtest_firmware(), path);
    vm_wait_line(vm, "READY", 60);
    c = qc_connect_unix(vm, path);
    qc_check_greeting(c);
    req = g_strdup_printf("{\"execute\": \"qmp_capabilities\", \"a\": /*\"*/ %s%s /*\"*/}\n",
                          open, close);
    qc_send_str(c, req);
    r = qc_reply(c);
    desc = vm_qmp_error_desc(r, &cls);
    g_assert_cmpstr(desc, ==, "JSON parse error, stray '/'");
    json_node_unref(r);
    qc_cmd_ok(c, "{'execute': 'qmp_capabilities'}");

    g_free(req);
    req = g_strdup_printf("{\"execute\": \"query-status\", \"arguments\": "
                          "{\"a\": '\\', \"b\": %s%s, \"c\": '}}", open, close);
    expect_errors(c, req, strlen(req), 1, "Parameter 'a' is unexpected");
    expect_errors(c, LIT("{\"execute\": \"calc-dirty-rate\", "
                         "\"arguments\": {\"calc-time\": $ffffffffffffffff}}"),
                  1, "JSON parse error, stray '$'");
    expect_errors(c, LIT("{\"execute\": \"query-status\", // x\n}"), 1,
                  "JSON parse error, stray '/'");
    qc_close(c);
    vm_kill(vm);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/qmp/malformed", test_malformed);
    g_test_add_func("/qmp/one-client-at-a-time", test_one_client_at_a_time);
    g_test_add_func("/qmp/client-vanishes", test_client_vanishes);
    g_test_add_func("/qmp/other-transports", test_other_transports);
    g_test_add_func("/qmp/slow-reader", test_slow_reader);
    g_test_add_func("/qmp/number-edges", test_number_edges);
    g_test_add_func("/qmp/json-glib-forms", test_json_glib_forms);
    return g_test_run();
}

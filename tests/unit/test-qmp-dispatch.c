/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The QAPI generator and the QMP dispatcher, end to end: requests as text
 * through qmp_dispatch_line() to fake handlers generated from
 * tests/unit/qapi-schema-test.json, and every error the protocol defines.
 */
#include "qemu/osdep.h"
#include <math.h>
#include "qapi/error.h"
#include "monitor/qmp-dispatch.h"
#include "test-qapi-types.h"
#include "test-qapi-visit.h"
#include "test-qapi-commands.h"
#include "test-qapi-events.h"

/* ---- Fake handlers: each records how it was called in last_call ---------- */

static char *last_call;

static void record(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
static void record(const char *fmt, ...)
{
    va_list ap;

    g_free(last_call);
    va_start(ap, fmt);
    last_call = g_strdup_vprintf(fmt, ap);
    va_end(ap);
}

static char *json_text(JsonNode *node)
{
    return node ? qmp_json_to_string(node, NULL) : g_strdup("(none)");
}

VersionInfo *qmp_query_version(Error **errp)
{
    VersionInfo *info = g_new0(VersionInfo, 1);

    info->qemu = g_new0(VersionTriple, 1);
    info->qemu->major = 7;
    info->qemu->minor = 2;
    info->qemu->micro = 50;
    info->package = g_strdup("");
    return info;
}

bool qmp_quit(Error **errp)
{
    record("quit");
    return true;
}

bool qmp_test_no_args(Error **errp)
{
    record("test-no-args");
    return true;
}

bool qmp_test_args(const char *uri, bool has_detach, bool detach,
                   bool has_count, int64_t count, const char *label,
                   int8_t level, bool has_mode, TestState mode, JsonNode *blob,
                   const TestInner *inner, Error **errp)
{
    g_autofree char *blob_text = json_text(blob);
    g_autofree char *count_text = g_strdup_printf("%" PRId64, count);

    record("uri=%s detach=%s count=%s label=%s level=%d mode=%s blob=%s "
           "inner=%s", uri,
           has_detach ? (detach ? "true" : "false") : "-",
           has_count ? count_text : "-",
           label ? label : "-", level, has_mode ? TestState_str(mode) : "-",
           blob ? blob_text : "-",
           inner ? (inner->label ? inner->label : "nolabel") : "-");
    return true;
}

bool qmp_test_set_caps(const TestCapStatusList *capabilities,
                       const strList *tags, Error **errp)
{
    GString *s = g_string_new("caps=");
    const TestCapStatusList *c;
    const strList *t;

    for (c = capabilities; c; c = c->next) {
        g_string_append_printf(s, "%s:%d,", TestCapability_str(c->value->capability),
                               c->value->state);
    }
    g_string_append(s, " tags=");
    for (t = tags; t; t = t->next) {
        g_string_append_printf(s, "%s,", t->value);
    }
    g_free(last_call);
    last_call = g_string_free(s, FALSE);
    return true;
}

bool qmp_test_boxed(const TestParams *arg, Error **errp)
{
    record("speed=%s name=%s enabled=%s caps=%s mode=%s",
           arg->has_speed ? "set" : "-", arg->name ? arg->name : "-",
           arg->has_enabled ? (arg->enabled ? "true" : "false") : "-",
           arg->caps ? "set" : "-",
           arg->has_mode ? TestState_str(arg->mode) : "-");
    return true;
}

bool qmp_test_struct_args(int64_t value, const char *label,
                          const TestStateList *states, Error **errp)
{
    int n = 0;

    for (; states; states = states->next) {
        n++;
    }
    record("value=%" PRId64 " label=%s states=%d", value,
           label ? label : "-", n);
    return true;
}

static TestInfo *make_info(const char *id, bool full)
{
    TestInfo *info = g_new0(TestInfo, 1);

    info->id = g_strdup(id);
    info->state = TEST_STATE_POST_COPY;
    info->names = g_new0(strList, 1);
    info->names->value = g_strdup("a");
    info->names->next = g_new0(strList, 1);
    info->names->next->value = g_strdup("b\"\n");
    if (full) {
        info->has_tag = true;
        info->tag = -5;
        info->has_total = true;
        info->total = 1ULL << 40;
        info->has_ratio = true;
        info->ratio = 0.5;
        info->counts = g_new0(intList, 1);
        info->counts->value = -1;
        info->caps = g_new0(TestCapStatusList, 1);
        info->caps->value = g_new0(TestCapStatus, 1);
        info->caps->value->capability = TEST_CAPABILITY_X_COLO;
        info->caps->value->state = true;
        info->inner = g_new0(TestInner, 1);
        info->inner->value = 42;
        info->inner->states = g_new0(TestStateList, 1);
        info->inner->states->value = TEST_STATE_FAILED;
        info->blob = json_from_string("{\"k\": [1, null]}", NULL);
        info->has_flag = true;
        info->flag = false;
        info->q_default = g_strdup("d");
    }
    return info;
}

TestInfo *qmp_test_query(bool has_full, bool full, Error **errp)
{
    return make_info("q", has_full && full);
}

TestInfoList *qmp_test_list(uint8_t count, Error **errp)
{
    TestInfoList *head = NULL, **tail = &head;
    unsigned i;

    for (i = 0; i < count; i++) {
        g_autofree char *id = g_strdup_printf("i%u", i);

        *tail = g_new0(TestInfoList, 1);
        (*tail)->value = make_info(id, false);
        tail = &(*tail)->next;
    }
    return head;
}

strList *qmp_test_str_list(Error **errp)
{
    strList *l = g_new0(strList, 1);

    l->value = g_strdup("only");
    return l;
}

JsonNode *qmp_test_echo(JsonNode *value, Error **errp)
{
    return json_node_copy(value);
}

char *qmp_test_str(Error **errp)
{
    return g_strdup("text");
}

TestNums *qmp_test_nums(int8_t i8, int16_t i16, int32_t i32, int64_t i64,
                        uint8_t u8, uint16_t u16, uint32_t u32, uint64_t u64,
                        uint64_t sz, double num, Error **errp)
{
    TestNums *n = g_new0(TestNums, 1);

    *n = (TestNums) { .i8 = i8, .i16 = i16, .i32 = i32, .i64 = i64,
                      .u8 = u8, .u16 = u16, .u32 = u32, .u64 = u64,
                      .sz = sz, .num = num };
    record("u64=%" PRIu64, u64);
    return n;
}

bool qmp_test_fail(bool has_not_found, bool not_found, Error **errp)
{
    if (has_not_found && not_found) {
        error_set(errp, ERROR_CLASS_DEVICE_NOT_FOUND, "Device 'x' not found");
    } else {
        error_setg(errp, "test failure");
    }
    return false;
}

bool qmp_test_bug_false(Error **errp)
{
    return false;
}

TestInner *qmp_test_bug_null(Error **errp)
{
    return NULL;
}

JsonNode *qmp_test_raw(JsonObject *args, Error **errp)
{
    JsonObject *o = json_object_new();
    JsonNode *node = json_node_alloc();

    json_object_set_int_member(o, "value",
                               args && json_object_has_member(args, "n") ?
                               json_object_get_int_member(args, "n") : -1);
    json_node_init_object(node, o);
    json_object_unref(o);
    return node;
}

/* ---- Event sink: "NAME data" per event ---------------------------------- */

static GPtrArray *events;

void monitor_qapi_event_emit(QAPIEvent event, JsonObject *data)
{
    g_autofree char *text = NULL;

    if (data) {
        JsonNode *node = json_node_alloc();

        json_node_init_object(node, data);
        json_object_unref(data);
        text = qmp_json_to_string(node, NULL);
        json_node_unref(node);
    }
    g_ptr_array_add(events, g_strdup_printf("%s %s", QAPIEvent_str(event),
                                            text ? text : "null"));
}

/* ---- Helpers ------------------------------------------------------------ */

/* @json re-serialised by json-glib, so expectations may use any spacing. */
static char *normalize(const char *json)
{
    GError *gerr = NULL;
    JsonNode *node = json_from_string(json, &gerr);
    char *text;

    g_assert_no_error(gerr);
    text = qmp_json_to_string(node, NULL);
    json_node_unref(node);
    return text;
}

/* Runs @req[0..len); returns the response text ("" for none). */
static char *run_len(const char *req, size_t len, bool negotiated, bool *done)
{
    JsonNode *rsp = qmp_dispatch_line(req, len, negotiated, done);
    char *text;

    if (!rsp) {
        return g_strdup("");
    }
    text = qmp_json_to_string(rsp, NULL);
    json_node_unref(rsp);
    return text;
}

static char *run_full(const char *req, bool negotiated, bool *done)
{
    return run_len(req, strlen(req), negotiated, done);
}

static char *run(const char *req)
{
    return run_full(req, true, NULL);
}

static void check_response(const char *req, const char *expected)
{
    g_autofree char *got = run(req);
    g_autofree char *want = normalize(expected);

    g_assert_cmpstr(got, ==, want);
}

static void check_return(const char *req, const char *ret)
{
    g_autofree char *expected = g_strdup_printf("{\"return\": %s}", ret);

    check_response(req, expected);
}

/* @desc ending in '*' matches any description starting with the rest. */
static void check_error_full(const char *req, bool negotiated,
                             const char *cls, const char *desc)
{
    g_autofree char *got = run_full(req, negotiated, NULL);
    JsonNode *node = json_from_string(got, NULL);
    JsonObject *rsp, *err;

    g_assert_nonnull(node);
    rsp = json_node_get_object(node);
    g_assert_true(json_object_has_member(rsp, "error"));
    g_assert_false(json_object_has_member(rsp, "return"));
    err = json_object_get_object_member(rsp, "error");
    g_assert_cmpstr(json_object_get_string_member(err, "class"), ==, cls);
    if (g_str_has_suffix(desc, "*")) {
        g_autofree char *prefix = g_strndup(desc, strlen(desc) - 1);

        g_assert_true(g_str_has_prefix(json_object_get_string_member(err, "desc"),
                                       prefix));
    } else {
        g_assert_cmpstr(json_object_get_string_member(err, "desc"), ==, desc);
    }
    g_assert_cmpuint(json_object_get_size(err), ==, 2);
    json_node_unref(node);
}

static void check_error(const char *req, const char *desc)
{
    check_error_full(req, true, "GenericError", desc);
}

/* A malformed request: a GenericError without "id". */
static void check_parse_error(const char *req, size_t len)
{
    g_autofree char *got = run_len(req, len, true, NULL);
    JsonNode *node = json_from_string(got, NULL);
    JsonObject *rsp;

    g_assert_nonnull(node);
    rsp = json_node_get_object(node);
    g_assert_true(json_object_has_member(rsp, "error"));
    g_assert_false(json_object_has_member(rsp, "id"));
    g_assert_cmpstr(json_object_get_string_member(
                        json_object_get_object_member(rsp, "error"), "class"),
                    ==, "GenericError");
    json_node_unref(node);
}

/* ---- Dispatch of good requests ------------------------------------------ */

static void test_dispatch_no_args(void)
{
    check_return("{\"execute\": \"test-no-args\"}", "{}");
    g_assert_cmpstr(last_call, ==, "test-no-args");
    check_return("{\"execute\": \"test-no-args\", \"arguments\": {}}", "{}");
    check_return("  {'execute': 'test-no-args'}\r\n", "{}");
}

static void test_dispatch_args(void)
{
    check_return("{\"execute\": \"test-args\", \"arguments\": "
                 "{\"uri\": \"tcp:0:4444\", \"level\": -3}}", "{}");
    g_assert_cmpstr(last_call, ==, "uri=tcp:0:4444 detach=- count=- label=- "
                    "level=-3 mode=- blob=- inner=-");

    check_return("{\"execute\": \"test-args\", \"arguments\": "
                 "{\"level\": 127, \"mode\": \"post-copy\", \"uri\": \"u\", "
                 "\"detach\": false, \"count\": 0, \"label\": \"L\", "
                 "\"blob\": [true, {\"x\": null}], "
                 "\"inner\": {\"value\": 1, \"label\": \"in\"}}}", "{}");
    g_assert_cmpstr(last_call, ==, "uri=u detach=false count=0 label=L "
                    "level=127 mode=post-copy blob=[true,{\"x\":null}] "
                    "inner=in");

    /* 'any' takes null too. */
    check_return("{\"execute\": \"test-args\", \"arguments\": "
                 "{\"uri\": \"u\", \"level\": 0, \"blob\": null}}", "{}");
    g_assert_cmpstr(last_call, ==, "uri=u detach=- count=- label=- level=0 "
                    "mode=- blob=null inner=-");
}

static void test_dispatch_lists(void)
{
    check_return("{\"execute\": \"test-set-caps\", \"arguments\": "
                 "{\"capabilities\": [{\"capability\": \"xbzrle\", "
                 "\"state\": true}, {\"state\": false, "
                 "\"capability\": \"zero-copy-send\"}], "
                 "\"tags\": [\"a\", \"b\"]}}", "{}");
    g_assert_cmpstr(last_call, ==, "caps=xbzrle:1,zero-copy-send:0, tags=a,b,");
    check_return("{\"execute\": \"test-set-caps\", \"arguments\": "
                 "{\"capabilities\": []}}", "{}");
    g_assert_cmpstr(last_call, ==, "caps= tags=");
}

static void test_dispatch_boxed(void)
{
    check_return("{\"execute\": \"test-boxed\"}", "{}");
    g_assert_cmpstr(last_call, ==, "speed=- name=- enabled=- caps=- mode=-");
    check_return("{\"execute\": \"test-boxed\", \"arguments\": "
                 "{\"speed\": 5, \"name\": \"n\", \"enabled\": true, "
                 "\"caps\": [], \"mode\": \"idle\"}}", "{}");
    /* An empty list is NULL, like an absent one. */
    g_assert_cmpstr(last_call, ==, "speed=set name=n enabled=true caps=- "
                    "mode=idle");
    check_error("{\"execute\": \"test-boxed\", \"arguments\": {\"speed\": -1.5}}",
                "Invalid parameter type for 'speed', expected: integer");
}

static void test_dispatch_struct_args(void)
{
    check_return("{\"execute\": \"test-struct-args\", \"arguments\": "
                 "{\"value\": 9, \"states\": [\"idle\", \"failed\"]}}", "{}");
    g_assert_cmpstr(last_call, ==, "value=9 label=- states=2");
    check_error("{\"execute\": \"test-struct-args\", \"arguments\": "
                "{\"value\": 9, \"states\": [\"idle\", \"bogus\"]}}",
                "Parameter 'states[1]' does not accept value 'bogus'");
}

static void test_dispatch_returns(void)
{
    check_return("{\"execute\": \"test-query\"}",
                 "{\"id\": \"q\", \"state\": \"post-copy\", "
                 "\"names\": [\"a\", \"b\\\"\\n\"]}");
    check_return("{\"execute\": \"test-query\", \"arguments\": {\"full\": true}}",
                 "{\"id\": \"q\", \"tag\": -5, \"state\": \"post-copy\", "
                 "\"total\": 1099511627776, \"ratio\": 0.5, "
                 "\"names\": [\"a\", \"b\\\"\\n\"], \"counts\": [-1], "
                 "\"caps\": [{\"capability\": \"x-colo\", \"state\": true}], "
                 "\"inner\": {\"value\": 42, \"states\": [\"failed\"]}, "
                 "\"blob\": {\"k\": [1, null]}, \"flag\": false, "
                 "\"default\": \"d\"}");
    check_return("{\"execute\": \"test-list\", \"arguments\": {\"count\": 0}}",
                 "[]");
    check_return("{\"execute\": \"test-list\", \"arguments\": {\"count\": 2}}",
                 "[{\"id\": \"i0\", \"state\": \"post-copy\", "
                 "\"names\": [\"a\", \"b\\\"\\n\"]}, "
                 "{\"id\": \"i1\", \"state\": \"post-copy\", "
                 "\"names\": [\"a\", \"b\\\"\\n\"]}]");
    check_return("{\"execute\": \"test-str-list\"}", "[\"only\"]");
    check_return("{\"execute\": \"test-str\"}", "\"text\"");
    check_return("{\"execute\": \"test-echo\", \"arguments\": "
                 "{\"value\": {\"deep\": [1, 2.5, \"x\", false, null]}}}",
                 "{\"deep\": [1, 2.5, \"x\", false, null]}");
    check_return("{\"execute\": \"test-raw\", \"arguments\": {\"n\": 7}}",
                 "{\"value\": 7}");
    check_return("{\"execute\": \"test-raw\"}", "{\"value\": -1}");
    check_error("{\"execute\": \"test-raw\", \"arguments\": {\"n\": \"7\"}}",
                "Invalid parameter type for 'n', expected: integer");
}

static const char *nums(const char *override)
{
    static char buf[512];

    snprintf(buf, sizeof(buf), "{\"execute\": \"test-nums\", \"arguments\": "
             "{%s%s\"i16\": -32768, \"i32\": 2147483647, "
             "\"u16\": 65535, \"u32\": 4294967295, "
             "\"u64\": 0, \"sz\": 4096, \"num\": 1}}",
             override, override[0] ? ", " : "");
    return buf;
}

static void test_dispatch_numbers(void)
{
    g_autofree char *ok = NULL;

    ok = run(nums("\"i8\": -128, \"i64\": -9223372036854775808, \"u8\": 255"));
    g_assert_nonnull(strstr(ok, "\"i8\":-128,"));
    g_assert_nonnull(strstr(ok, "\"i64\":-9223372036854775808,"));
    g_assert_nonnull(strstr(ok, "\"u32\":4294967295,"));
    g_assert_nonnull(strstr(ok, "\"num\":1.0"));

    check_error(nums("\"i8\": 128, \"i64\": 0, \"u8\": 0"),
                "Parameter 'i8' expects int8_t");
    check_error(nums("\"i8\": -129, \"i64\": 0, \"u8\": 0"),
                "Parameter 'i8' expects int8_t");
    check_error(nums("\"i8\": 0, \"i64\": 0, \"u8\": 256"),
                "Parameter 'u8' expects uint8_t");
    check_error(nums("\"i8\": 0, \"i64\": 0, \"u8\": -1"),
                "Parameter 'u8' expects uint8_t");
    check_error(nums("\"i8\": 1.0, \"i64\": 0, \"u8\": 0"),
                "Invalid parameter type for 'i8', expected: integer");
    check_error(nums("\"i8\": 0, \"i64\": \"1\", \"u8\": 0"),
                "Invalid parameter type for 'i64', expected: integer");
    /* Beyond what any integer type holds: a float, so a type error. */
    check_error(nums("\"i8\": 0, \"i64\": 99999999999999999999999, \"u8\": 0"),
                "Invalid parameter type for 'i64', expected: integer");
    check_error(nums("\"i8\": 0, \"i64\": -9223372036854775809, \"u8\": 0"),
                "Invalid parameter type for 'i64', expected: integer");
    check_error("{\"execute\": \"test-nums\", \"arguments\": {\"i8\": 0, "
                "\"i16\": 0, \"i32\": 0, \"i64\": 0, \"u8\": 0, \"u16\": 0, "
                "\"u32\": 0, \"u64\": 0, \"sz\": 0, \"num\": true}}",
                "Invalid parameter type for 'num', expected: number");

    /* uint64: the whole range, and negative numbers wrap as in QEMU. */
    g_free(run("{\"execute\": \"test-nums\", \"arguments\": {\"i8\": 0, "
               "\"i16\": 0, \"i32\": 0, \"i64\": 0, \"u8\": 0, \"u16\": 0, "
               "\"u32\": 0, \"u64\": 18446744073709551615, \"sz\": 0, "
               "\"num\": 0}}"));
    g_assert_cmpstr(last_call, ==, "u64=18446744073709551615");
    g_free(run("{\"execute\": \"test-nums\", \"arguments\": {\"i8\": 0, "
               "\"i16\": 0, \"i32\": 0, \"i64\": 0, \"u8\": 0, \"u16\": 0, "
               "\"u32\": 0, \"u64\": -2, \"sz\": 0, \"num\": 0}}"));
    g_assert_cmpstr(last_call, ==, "u64=18446744073709551614");
}

/* ---- Request errors ------------------------------------------------------ */

static void test_errors_request(void)
{
    check_error("[]", "QMP input must be a JSON object");
    check_error("42", "QMP input must be a JSON object");
    check_error("\"execute\"", "QMP input must be a JSON object");
    check_error("null", "QMP input must be a JSON object");
    check_error("{}", "QMP input lacks member 'execute'");
    check_error("{\"id\": 1}", "QMP input lacks member 'execute'");
    check_error("{\"execute\": 42}", "QMP input member 'execute' must be a string");
    check_error("{\"execute\": null}", "QMP input member 'execute' must be a string");
    check_error("{\"execute\": \"test-no-args\", \"arguments\": []}",
                "QMP input member 'arguments' must be an object");
    check_error("{\"execute\": \"test-no-args\", \"arguments\": null}",
                "QMP input member 'arguments' must be an object");
    check_error("{\"execute\": \"test-no-args\", \"foo\": 1}",
                "QMP input member 'foo' is unexpected");
    check_error("{\"execute\": \"test-no-args\", \"exec-oob\": \"x\"}",
                "QMP input member 'exec-oob' is unexpected");
    check_error_full("{\"execute\": \"foo\"}", true, "CommandNotFound",
                     "The command foo has not been found");
}

static void test_errors_negotiation(void)
{
    const char *caps = "{\"execute\": \"qmp_capabilities\"}";
    g_autofree char *rsp = NULL;
    bool done = true;

    check_error_full("{\"execute\": \"query-version\"}", false,
                     "CommandNotFound",
                     "Expecting capabilities negotiation with "
                     "'qmp_capabilities'");
    check_error_full("{\"execute\": \"foo\"}", false, "CommandNotFound",
                     "Expecting capabilities negotiation with "
                     "'qmp_capabilities'");
    /* Malformed requests keep their own errors. */
    check_error_full("{}", false, "GenericError",
                     "QMP input lacks member 'execute'");

    rsp = run_full("{\"execute\": \"query-version\"}", false, &done);
    g_assert_false(done);
    g_free(rsp);
    rsp = run_full(caps, false, &done);
    g_assert_cmpstr(rsp, ==, "{\"return\":{}}");
    g_assert_true(done);
    g_free(rsp);
    rsp = run_full("{\"execute\": \"qmp_capabilities\", \"arguments\": "
                   "{\"enable\": []}, \"id\": 3}", false, &done);
    g_assert_cmpstr(rsp, ==, "{\"return\":{},\"id\":3}");
    g_assert_true(done);

    check_error_full("{\"execute\": \"qmp_capabilities\", \"arguments\": "
                     "{\"enable\": [\"oob\"]}}", false, "GenericError",
                     "Capability 'oob' not available");
    check_error_full("{\"execute\": \"qmp_capabilities\", \"arguments\": "
                     "{\"enable\": [\"bogus\"]}}", false, "GenericError",
                     "Parameter 'enable[0]' does not accept value 'bogus'");
    check_error_full("{\"execute\": \"qmp_capabilities\", \"arguments\": "
                     "{\"enable\": \"oob\"}}", false, "GenericError",
                     "Invalid parameter type for 'enable', expected: array");

    g_free(rsp);
    rsp = run_full(caps, true, &done);
    g_assert_false(done);
    check_error_full(caps, true, "CommandNotFound",
                     "Capabilities negotiation is already complete, command "
                     "ignored");
}

static void test_errors_args(void)
{
    check_error("{\"execute\": \"test-args\", \"arguments\": {\"level\": 1}}",
                "Parameter 'uri' is missing");
    check_error("{\"execute\": \"test-args\", \"arguments\": {\"uri\": \"u\"}}",
                "Parameter 'level' is missing");
    check_error("{\"execute\": \"test-args\"}", "Parameter 'uri' is missing");
    check_error("{\"execute\": \"test-args\", \"arguments\": "
                "{\"uri\": \"u\", \"level\": 1, \"bogus\": 1}}",
                "Parameter 'bogus' is unexpected");
    check_error("{\"execute\": \"test-no-args\", \"arguments\": {\"x\": 1}}",
                "Parameter 'x' is unexpected");
    check_error("{\"execute\": \"test-args\", \"arguments\": "
                "{\"uri\": 1, \"level\": 1}}",
                "Invalid parameter type for 'uri', expected: string");
    check_error("{\"execute\": \"test-args\", \"arguments\": "
                "{\"uri\": \"u\", \"level\": 1, \"detach\": \"yes\"}}",
                "Invalid parameter type for 'detach', expected: boolean");
    check_error("{\"execute\": \"test-args\", \"arguments\": "
                "{\"uri\": \"u\", \"level\": 1, \"mode\": 1}}",
                "Invalid parameter type for 'mode', expected: string");
    check_error("{\"execute\": \"test-args\", \"arguments\": "
                "{\"uri\": \"u\", \"level\": 1, \"mode\": \"Running\"}}",
                "Parameter 'mode' does not accept value 'Running'");
    check_error("{\"execute\": \"test-args\", \"arguments\": "
                "{\"uri\": \"u\", \"level\": 1, \"inner\": []}}",
                "Invalid parameter type for 'inner', expected: object");
    check_error("{\"execute\": \"test-args\", \"arguments\": "
                "{\"uri\": \"u\", \"level\": 1, \"inner\": {}}}",
                "Parameter 'inner.value' is missing");
    check_error("{\"execute\": \"test-args\", \"arguments\": "
                "{\"uri\": \"u\", \"level\": 1, "
                "\"inner\": {\"value\": 1, \"states\": {}}}}",
                "Invalid parameter type for 'inner.states', expected: array");
    check_error("{\"execute\": \"test-args\", \"arguments\": "
                "{\"uri\": \"u\", \"level\": 1, "
                "\"inner\": {\"value\": 1, \"x\": 2}}}",
                "Parameter 'inner.x' is unexpected");
    check_error("{\"execute\": \"test-set-caps\", \"arguments\": "
                "{\"capabilities\": {}}}",
                "Invalid parameter type for 'capabilities', expected: array");
    check_error("{\"execute\": \"test-set-caps\", \"arguments\": "
                "{\"capabilities\": [1]}}",
                "Invalid parameter type for 'capabilities[0]', expected: "
                "object");
    check_error("{\"execute\": \"test-set-caps\", \"arguments\": "
                "{\"capabilities\": [{\"capability\": \"xbzrle\", "
                "\"state\": true}, {\"capability\": \"xbzrle\", "
                "\"state\": \"on\"}]}}",
                "Invalid parameter type for 'capabilities[1].state', "
                "expected: boolean");
    check_error("{\"execute\": \"test-set-caps\", \"arguments\": "
                "{\"capabilities\": [{\"capability\": \"xbzrle\", "
                "\"state\": true}, {\"capability\": \"nope\", "
                "\"state\": true}]}}",
                "Parameter 'capabilities[1].capability' does not accept "
                "value 'nope'");
    check_error("{\"execute\": \"test-set-caps\", \"arguments\": "
                "{\"capabilities\": [{\"capability\": \"xbzrle\"}]}}",
                "Parameter 'capabilities[0].state' is missing");
    check_error("{\"execute\": \"test-set-caps\", \"arguments\": "
                "{\"capabilities\": [{\"capability\": \"xbzrle\", "
                "\"state\": true, \"extra\": 1}]}}",
                "Parameter 'capabilities[0].extra' is unexpected");
    check_error("{\"execute\": \"test-set-caps\", \"arguments\": "
                "{\"capabilities\": [], \"tags\": [\"a\", 2]}}",
                "Invalid parameter type for 'tags[1]', expected: string");
}

static void test_errors_handler(void)
{
    check_error("{\"execute\": \"test-fail\"}", "test failure");
    check_error_full("{\"execute\": \"test-fail\", \"arguments\": "
                     "{\"not-found\": true}}", true, "DeviceNotFound",
                     "Device 'x' not found");
    check_error("{\"execute\": \"test-bug-false\"}",
                "Internal error: command 'test-bug-false' failed without "
                "reporting why");
    check_error("{\"execute\": \"test-bug-null\"}",
                "Internal error: command 'test-bug-null' failed without "
                "reporting why");
}

static void test_id(void)
{
    check_response("{\"execute\": \"test-no-args\", \"id\": 1}",
                   "{\"return\": {}, \"id\": 1}");
    check_response("{\"id\": \"libvirt-7\", \"execute\": \"test-no-args\"}",
                   "{\"return\": {}, \"id\": \"libvirt-7\"}");
    check_response("{\"execute\": \"test-no-args\", "
                   "\"id\": {\"a\": [1, {\"b\": null}]}}",
                   "{\"return\": {}, \"id\": {\"a\": [1, {\"b\": null}]}}");
    check_response("{\"execute\": \"test-no-args\", \"id\": null}",
                   "{\"return\": {}, \"id\": null}");
    check_response("{\"execute\": \"nope\", \"id\": [2]}",
                   "{\"error\": {\"class\": \"CommandNotFound\", "
                   "\"desc\": \"The command nope has not been found\"}, "
                   "\"id\": [2]}");
    check_response("{\"id\": 5, \"execute\": 1}",
                   "{\"error\": {\"class\": \"GenericError\", "
                   "\"desc\": \"QMP input member 'execute' must be a "
                   "string\"}, \"id\": 5}");
    check_response("{\"id\": 5}",
                   "{\"error\": {\"class\": \"GenericError\", "
                   "\"desc\": \"QMP input lacks member 'execute'\"}, "
                   "\"id\": 5}");
    check_response("{\"execute\": \"test-fail\", \"id\": \"f\"}",
                   "{\"error\": {\"class\": \"GenericError\", "
                   "\"desc\": \"test failure\"}, \"id\": \"f\"}");
    check_response("{\"execute\": \"test-args\", \"id\": 0}",
                   "{\"error\": {\"class\": \"GenericError\", "
                   "\"desc\": \"Parameter 'uri' is missing\"}, \"id\": 0}");
}

/* ---- Malformed JSON ------------------------------------------------------ */

static char *repeat(const char *unit, int n)
{
    GString *s = g_string_new(NULL);
    int i;

    for (i = 0; i < n; i++) {
        g_string_append(s, unit);
    }
    return g_string_free(s, FALSE);
}

static void test_json_malformed(void)
{
    static const char *const bad[] = {
        "{\"execute\":", "{\"execute\": \"test-no-args\"", "[1, 2",
        "{\"a\": 1,}", "nul", "}", "]", ",", ":", "{}}", "{]",
        "\"unterminated", "{\"a\" 1}", "-", "1e", "01x", "@",
        "{\"execute\": \"test-no-args\"} {}", "{} garbage",
        "{\"a\": NaN}", "{\"a\": \"\\ud800\"}", "{\"a\": 'x'",
    };
    static const char binary[] = "\xff\xfe\x00{\"execute\"\x01\x80";
    static const char nul[] = "{\"execute\": \"test-no-\0args\"}";
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(bad); i++) {
        check_parse_error(bad[i], strlen(bad[i]));
    }
    check_parse_error(binary, sizeof(binary) - 1);
    check_parse_error(nul, sizeof(nul) - 1);
    check_error("{\"a\": 1,}", "JSON parse error, *");
    check_error("{\"execute\": \"test-echo\", \"arguments\": "
                "{\"value\": -1.5e400}}", "JSON parse error, number out of range");
    check_return("{\"execute\": \"test-echo\", \"arguments\": "
                 "{\"value\": [1e-400, 1.5e300]}}", "[0.0, 1.5e300]");

    /* Nothing but white space: no response at all. */
    g_free(last_call);
    last_call = run_len("", 0, true, NULL);
    g_assert_cmpstr(last_call, ==, "");
    g_free(last_call);
    last_call = run_full(" \r\n\t", true, NULL);
    g_assert_cmpstr(last_call, ==, "");
}

static void test_json_nesting(void)
{
    g_autofree char *ok_open = repeat("[", QMP_MAX_NESTING);
    g_autofree char *ok_close = repeat("]", QMP_MAX_NESTING);
    g_autofree char *ok = g_strconcat(ok_open, ok_close, NULL);
    g_autofree char *deep = repeat("[", 100000);
    g_autofree char *deep_obj = repeat("{\"a\":", 5000);
    g_autofree char *deep_args = NULL;
    g_autofree char *just_over = g_strconcat("[", ok, "]", NULL);

    check_error(ok, "QMP input must be a JSON object");
    check_error(just_over, "JSON parse error, nesting deeper than 1024 levels");
    check_error(deep, "JSON parse error, nesting deeper than 1024 levels");
    check_error(deep_obj, "JSON parse error, nesting deeper than 1024 levels");
    deep_args = g_strdup_printf("{\"execute\": \"test-echo\", \"arguments\": "
                                "{\"value\": %s}}", deep);
    check_error(deep_args, "JSON parse error, nesting deeper than 1024 levels");
    /* Brackets inside strings do not count. */
    g_free(deep_args);
    deep_args = g_strdup_printf("{\"execute\": \"test-echo\", \"arguments\": "
                                "{\"value\": \"%s\"}}", deep);
    g_free(last_call);
    last_call = run(deep_args);
    g_assert_true(g_str_has_prefix(last_call, "{\"return\":\"[[[["));
}

static void test_json_serialize(void)
{
    JsonNode *node = json_from_string("{\"a\": \"x\\ny\\r\\u0001\", "
                                      "\"b\": [1, 2.5, true, null]}", NULL);
    size_t len;
    g_autofree char *text = qmp_json_to_string(node, &len);

    g_assert_cmpstr(text, ==, "{\"a\":\"x\\ny\\r\\u0001\","
                    "\"b\":[1,2.5,true,null]}");
    g_assert_cmpuint(len, ==, strlen(text));
    g_assert_null(strchr(text, '\n'));
    json_node_unref(node);
}

/* ---- The splitter -------------------------------------------------------- */

typedef struct SplitLog {
    GPtrArray *texts;
    int errors;
} SplitLog;

static void split_cb(void *opaque, const char *text, size_t len, Error *err)
{
    SplitLog *log = opaque;

    if (err) {
        g_assert_null(text);
        g_assert_true(g_str_has_prefix(error_get_pretty(err),
                                       "JSON parse error, "));
        log->errors++;
        g_ptr_array_add(log->texts, g_strdup("<error>"));
        error_free(err);
        return;
    }
    g_ptr_array_add(log->texts, g_strndup(text, len));
}

static void split(const char *input, size_t len, size_t chunk, SplitLog *log)
{
    QmpSplitter s;
    size_t i;

    log->texts = g_ptr_array_new_with_free_func(g_free);
    log->errors = 0;
    qmp_splitter_init(&s, split_cb, log);
    for (i = 0; i < len; i += chunk) {
        qmp_splitter_feed(&s, input + i, MIN(chunk, len - i));
    }
    qmp_splitter_flush(&s);
    qmp_splitter_destroy(&s);
}

static void test_splitter(void)
{
    static const char input[] =
        "{\"execute\":\"a\"}{\"execute\":\"b\"}\n"
        "  [1, {\"x\": \"}]\\\"{\"}]\r\n"
        "\"str\\\"ing\" 42 true}"
        "{'k': '}'}"
        "{\"partial\": ";
    static const char *const want[] = {
        "{\"execute\":\"a\"}", "{\"execute\":\"b\"}",
        "[1, {\"x\": \"}]\\\"{\"}]", "\"str\\\"ing\"", "42", "true", "}",
        "{'k': '}'}", "{\"partial\": ",
    };
    size_t chunk, i;

    for (chunk = 1; chunk <= sizeof(input); chunk += 7) {
        SplitLog log;

        split(input, sizeof(input) - 1, chunk, &log);
        g_assert_cmpuint(log.texts->len, ==, G_N_ELEMENTS(want));
        for (i = 0; i < G_N_ELEMENTS(want); i++) {
            g_assert_cmpstr(g_ptr_array_index(log.texts, i), ==, want[i]);
        }
        g_ptr_array_unref(log.texts);
    }
}

static void test_splitter_limits(void)
{
    g_autofree char *deep = repeat("[", 3000);
    g_autofree char *close = repeat("]", 3000);
    g_autofree char *input = g_strconcat("{\"a\":1}", deep, "{\"skipped\":1}",
                                         close, "{\"b\":2}", NULL);
    SplitLog log;

    split(input, strlen(input), 4096, &log);
    g_assert_cmpint(log.errors, ==, 1);
    g_assert_cmpuint(log.texts->len, ==, 3);
    g_assert_cmpstr(g_ptr_array_index(log.texts, 0), ==, "{\"a\":1}");
    g_assert_cmpstr(g_ptr_array_index(log.texts, 1), ==, "<error>");
    g_assert_cmpstr(g_ptr_array_index(log.texts, 2), ==, "{\"b\":2}");
    g_ptr_array_unref(log.texts);

    /* Unbalanced: the refused request ends with its line, and the next line is heard. */
    {
        g_autofree char *open = repeat("[", 100000);
        g_autofree char *lines = g_strconcat("{\"a\":1}", open, "{\"lost\":1}\n",
                                             "{\"b\":2}\n", open, NULL);

        split(lines, strlen(lines), 4096, &log);
    }
    g_assert_cmpint(log.errors, ==, 2);
    g_assert_cmpuint(log.texts->len, ==, 4);
    g_assert_cmpstr(g_ptr_array_index(log.texts, 0), ==, "{\"a\":1}");
    g_assert_cmpstr(g_ptr_array_index(log.texts, 1), ==, "<error>");
    g_assert_cmpstr(g_ptr_array_index(log.texts, 2), ==, "{\"b\":2}");
    g_assert_cmpstr(g_ptr_array_index(log.texts, 3), ==, "<error>");
    g_ptr_array_unref(log.texts);

    /* Each value the splitter delivers dispatches on its own. */
    {
        const char *two = "{\"execute\":\"test-str\",\"id\":1}"
                          "{\"execute\":\"test-no-args\"}";

        split(two, strlen(two), 3, &log);
    }
    g_assert_cmpuint(log.texts->len, ==, 2);
    for (guint i = 0; i < log.texts->len; i++) {
        const char *t = g_ptr_array_index(log.texts, i);
        g_autofree char *rsp = run_full(t, true, NULL);

        g_assert_cmpstr(rsp, ==, i == 0 ? "{\"return\":\"text\",\"id\":1}"
                                        : "{\"return\":{}}");
    }
    g_ptr_array_unref(log.texts);
}

/* A callback that resets the splitter, as a monitor does when a client quits. */
static void reset_cb(void *opaque, const char *text, size_t len, Error *err)
{
    QmpSplitter *s = opaque;

    g_assert_null(err);
    g_assert_cmpstr(text, ==, "{\"execute\":\"quit\"}");
    qmp_splitter_reset(s);
}

static void test_splitter_reset(void)
{
    const char *input = "{\"execute\":\"quit\"}{\"execute\":\"stop\"}[";
    QmpSplitter s;

    qmp_splitter_init(&s, reset_cb, &s);
    /* The second request must not be delivered: it belonged to the client
     * that went away. */
    qmp_splitter_feed(&s, input, strlen(input));
    qmp_splitter_flush(&s);
    qmp_splitter_destroy(&s);
}

/* ---- Events -------------------------------------------------------------- */

static void test_events(void)
{
    TestCapStatusList caps = {
        .value = &(TestCapStatus) { .capability = TEST_CAPABILITY_AUTO_CONVERGE,
                                    .state = true },
    };
    TestStateList states = { .value = TEST_STATE_IDLE };
    TestInner inner = { .value = -7, .label = (char *)"l", .states = &states };
    static const char *const want[] = {
        "TEST_EVENT_NONE null",
        "TEST_EVENT_A {\"guest\":true,\"reason\":\"running\"}",
        "TEST_EVENT_A {\"guest\":false,\"reason\":\"post-copy\","
        "\"detail\":\"why\",\"count\":4294967295,"
        "\"caps\":[{\"capability\":\"auto-converge\",\"state\":true}]}",
        "TEST_EVENT_BOXED {\"value\":-7,\"label\":\"l\",\"states\":[\"idle\"]}",
        "TEST_EVENT_NAMED {\"capability\":\"x-colo\",\"state\":false}",
    };
    size_t i;

    g_ptr_array_set_size(events, 0);
    qapi_event_send_test_event_none();
    qapi_event_send_test_event_a(true, TEST_STATE_RUNNING, NULL, false, 0, NULL);
    qapi_event_send_test_event_a(false, TEST_STATE_POST_COPY, "why", true,
                                 UINT32_MAX, &caps);
    qapi_event_send_test_event_boxed(&inner);
    qapi_event_send_test_event_named(TEST_CAPABILITY_X_COLO, false);
    g_assert_cmpuint(events->len, ==, G_N_ELEMENTS(want));
    for (i = 0; i < G_N_ELEMENTS(want); i++) {
        g_assert_cmpstr(g_ptr_array_index(events, i), ==, want[i]);
    }
    g_assert_cmpstr(QAPIEvent_str(QAPI_EVENT_TEST_EVENT_BOXED), ==,
                    "TEST_EVENT_BOXED");
    g_assert_cmpint(QAPI_EVENT__MAX, ==, 4);
}

/* ---- Introspection and query-commands ------------------------------------ */

static JsonObject *find_entity(JsonArray *list, const char *name)
{
    guint i;

    for (i = 0; i < json_array_get_length(list); i++) {
        JsonObject *o = json_array_get_object_element(list, i);

        if (!strcmp(json_object_get_string_member(o, "name"), name)) {
            return o;
        }
    }
    return NULL;
}

static void test_introspection(void)
{
    const char *req = "{\"execute\": \"query-qmp-schema\"}";
    JsonNode *rsp = qmp_dispatch_line(req, strlen(req), true, NULL);
    JsonArray *list, *members;
    JsonObject *o;
    g_autofree char *text = NULL;

    g_assert_nonnull(rsp);
    list = json_object_get_array_member(json_node_get_object(rsp), "return");
    g_assert_nonnull(list);

    o = find_entity(list, "test-args");
    g_assert_cmpstr(json_object_get_string_member(o, "meta-type"), ==, "command");
    g_assert_cmpstr(json_object_get_string_member(o, "arg-type"), ==,
                    "q_obj_test-args-arg");
    g_assert_cmpstr(json_object_get_string_member(o, "ret-type"), ==, "q_empty");
    o = find_entity(list, "test-list");
    g_assert_cmpstr(json_object_get_string_member(o, "ret-type"), ==,
                    "[TestInfo]");
    o = find_entity(list, "[TestInfo]");
    g_assert_cmpstr(json_object_get_string_member(o, "meta-type"), ==, "array");
    g_assert_cmpstr(json_object_get_string_member(o, "element-type"), ==,
                    "TestInfo");

    o = find_entity(list, "TestInfo");
    members = json_object_get_array_member(o, "members");
    /* Base members first; optional members carry "default": null. */
    text = normalize("{\"name\": \"id\", \"type\": \"str\"}");
    {
        JsonNode *n = json_array_get_element(members, 0);
        g_autofree char *got = qmp_json_to_string(n, NULL);

        g_assert_cmpstr(got, ==, text);
    }
    o = json_array_get_object_element(members, 1);
    g_assert_cmpstr(json_object_get_string_member(o, "name"), ==, "tag");
    g_assert_true(json_object_has_member(o, "default"));
    g_assert_true(JSON_NODE_HOLDS_NULL(json_object_get_member(o, "default")));

    o = find_entity(list, "TestState");
    g_assert_cmpstr(json_object_get_string_member(o, "meta-type"), ==, "enum");
    g_assert_cmpuint(json_array_get_length(
                         json_object_get_array_member(o, "values")), ==, 4);
    o = find_entity(list, "int8");
    g_assert_cmpstr(json_object_get_string_member(o, "json-type"), ==, "int");
    o = find_entity(list, "any");
    g_assert_cmpstr(json_object_get_string_member(o, "json-type"), ==, "value");
    o = find_entity(list, "TEST_EVENT_NONE");
    g_assert_cmpstr(json_object_get_string_member(o, "meta-type"), ==, "event");
    g_assert_cmpstr(json_object_get_string_member(o, "arg-type"), ==, "q_empty");
    g_assert_nonnull(find_entity(list, "q_empty"));
    /* Types no command or event uses are left out. */
    g_assert_null(find_entity(list, "TestPrefixed"));
    json_node_unref(rsp);
}

static void test_query_commands(void)
{
    const char *req = "{\"execute\": \"query-commands\"}";
    JsonNode *rsp = qmp_dispatch_line(req, strlen(req), true, NULL);
    JsonArray *list;

    list = json_object_get_array_member(json_node_get_object(rsp), "return");
    g_assert_cmpuint(json_array_get_length(list), ==, qmp_commands_count);
    g_assert_nonnull(find_entity(list, "qmp_capabilities"));
    g_assert_nonnull(find_entity(list, "test-nums"));
    g_assert_nonnull(qmp_find_command("test-raw"));
    g_assert_null(qmp_find_command("test_raw"));
    json_node_unref(rsp);
}

/* ---- Generated types ------------------------------------------------------ */

static void test_types(void)
{
    g_autoptr(TestInfo) info = make_info("t", true);
    g_autoptr(TestInfo) copy = qapi_TestInfo_clone(info);
    g_autoptr(TestInfo) back = NULL;
    g_autofree char *a = NULL, *b = NULL;
    JsonNode *node;
    TestState st;
    Error *err = NULL;

    g_assert_cmpstr(TestState_str(TEST_STATE_POST_COPY), ==, "post-copy");
    g_assert_true(TestState_parse("failed", &st));
    g_assert_cmpint(st, ==, TEST_STATE_FAILED);
    g_assert_false(TestState_parse("FAILED", &st));
    g_assert_false(TestState_parse(NULL, &st));
    g_assert_cmpstr(TestPrefixed_str(TPX_TWO_FIVE), ==, "two.five");
    g_assert_cmpstr(MultiFDTestCompression_str(MULTIFD_TEST_COMPRESSION_ZLIB),
                    ==, "zlib");
    g_assert_cmpint(TEST_CAPABILITY__MAX, ==, 4);

    /* The copy is deep: nothing shared. */
    g_assert_true(copy->id != info->id);
    g_assert_true(copy->caps != info->caps);
    g_assert_true(copy->caps->value != info->caps->value);
    g_assert_true(copy->inner->states != info->inner->states);
    g_assert_true(copy->blob != info->blob);

    node = qapi_TestInfo_to_json(copy);
    a = qmp_json_to_string(node, NULL);
    back = qapi_TestInfo_from_json(node, NULL, &err);
    g_assert_null(err);
    json_node_unref(node);
    node = qapi_TestInfo_to_json(back);
    b = qmp_json_to_string(node, NULL);
    json_node_unref(node);
    g_assert_cmpstr(a, ==, b);

    /* Base view of a derived struct. */
    g_assert_cmpstr(qapi_TestInfo_base(info)->id, ==, "t");

    node = json_from_string("[{\"capability\": \"xbzrle\", \"state\": 1}]", NULL);
    {
        TestCapStatusList *list = NULL;

        g_assert_false(qapi_TestCapStatusList_from_json(node, "caps", &list,
                                                        &err));
        g_assert_null(list);
        g_assert_cmpstr(error_get_pretty(err), ==,
                        "Invalid parameter type for 'caps[0].state', "
                        "expected: boolean");
        error_free(err);
    }
    json_node_unref(node);

    node = qapi_number_to_json(NAN);
    g_assert_true(JSON_NODE_HOLDS_NULL(node));
    json_node_unref(node);
    node = qapi_number_to_json(-INFINITY);
    g_assert_true(JSON_NODE_HOLDS_NULL(node));
    json_node_unref(node);

    qapi_free_TestInfo(NULL);
    qapi_free_TestInfoList(NULL);
    g_assert_null(qapi_TestInfo_clone(NULL));
}

int main(int argc, char **argv)
{
    int ret;

    g_test_init(&argc, &argv, NULL);
    events = g_ptr_array_new_with_free_func(g_free);

    g_test_add_func("/qmp/dispatch/no-args", test_dispatch_no_args);
    g_test_add_func("/qmp/dispatch/args", test_dispatch_args);
    g_test_add_func("/qmp/dispatch/lists", test_dispatch_lists);
    g_test_add_func("/qmp/dispatch/boxed", test_dispatch_boxed);
    g_test_add_func("/qmp/dispatch/struct-args", test_dispatch_struct_args);
    g_test_add_func("/qmp/dispatch/returns", test_dispatch_returns);
    g_test_add_func("/qmp/dispatch/numbers", test_dispatch_numbers);
    g_test_add_func("/qmp/errors/request", test_errors_request);
    g_test_add_func("/qmp/errors/negotiation", test_errors_negotiation);
    g_test_add_func("/qmp/errors/args", test_errors_args);
    g_test_add_func("/qmp/errors/handler", test_errors_handler);
    g_test_add_func("/qmp/id", test_id);
    g_test_add_func("/qmp/json/malformed", test_json_malformed);
    g_test_add_func("/qmp/json/nesting", test_json_nesting);
    g_test_add_func("/qmp/json/serialize", test_json_serialize);
    g_test_add_func("/qmp/splitter/stream", test_splitter);
    g_test_add_func("/qmp/splitter/limits", test_splitter_limits);
    g_test_add_func("/qmp/splitter/reset", test_splitter_reset);
    g_test_add_func("/qmp/events", test_events);
    g_test_add_func("/qmp/introspection", test_introspection);
    g_test_add_func("/qmp/query-commands", test_query_commands);
    g_test_add_func("/qapi/types", test_types);

    ret = g_test_run();
    g_ptr_array_unref(events);
    g_free(last_call);
    return ret;
}

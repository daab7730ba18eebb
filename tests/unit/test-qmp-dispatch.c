/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The QAPI generator and the QMP dispatcher, end to end: requests as text
 * through qmp_dispatch_line() to the fake handlers of qmp-test.c, every
 * error the protocol defines, events, introspection and the generated
 * types. Malformed JSON and the splitter are in test-qmp-json.c.
 */
#include "qemu/osdep.h"
#include <math.h>
#include "qapi/error.h"
#include "monitor/qmp-dispatch.h"
#include "qmp-test.h"

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
    g_test_add_func("/qmp/events", test_events);
    g_test_add_func("/qmp/introspection", test_introspection);
    g_test_add_func("/qmp/query-commands", test_query_commands);
    g_test_add_func("/qapi/types", test_types);

    ret = g_test_run();
    g_ptr_array_unref(events);
    g_free(last_call);
    return ret;
}

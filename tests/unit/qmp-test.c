/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the QMP unit tests share (qmp-test.h): fake handlers generated
 * from tests/unit/qapi-schema-test.json, each recording how it was called
 * in last_call, an event sink, and helpers that run a request as text.
 */
#include "qemu/osdep.h"
#include <math.h>
#include "qapi/error.h"
#include "monitor/qmp-dispatch.h"
#include "qmp-test.h"

/* ---- Fake handlers: each records how it was called in last_call ---------- */

char *last_call;

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

TestInfo *make_info(const char *id, bool full)
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

GPtrArray *events;

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
char *normalize(const char *json)
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
char *run_len(const char *req, size_t len, bool negotiated, bool *done)
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

char *run_full(const char *req, bool negotiated, bool *done)
{
    return run_len(req, strlen(req), negotiated, done);
}

char *run(const char *req)
{
    return run_full(req, true, NULL);
}

void check_response(const char *req, const char *expected)
{
    g_autofree char *got = run(req);
    g_autofree char *want = normalize(expected);

    g_assert_cmpstr(got, ==, want);
}

void check_return(const char *req, const char *ret)
{
    g_autofree char *expected = g_strdup_printf("{\"return\": %s}", ret);

    check_response(req, expected);
}

/* @desc ending in '*' matches any description starting with the rest. */
void check_error_full(const char *req, bool negotiated,
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

void check_error(const char *req, const char *desc)
{
    check_error_full(req, true, "GenericError", desc);
}

/* A malformed request: a GenericError without "id". */
void check_parse_error(const char *req, size_t len)
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

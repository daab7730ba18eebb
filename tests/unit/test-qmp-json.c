/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QMP's JSON input: malformed and deeply nested requests through the
 * dispatcher, serialisation, and the splitter that cuts a byte stream into
 * requests (limits, resets). Uses the fake handlers of qmp-test.c.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "monitor/qmp-dispatch.h"
#include "qmp-test.h"

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

int main(int argc, char **argv)
{
    int ret;

    g_test_init(&argc, &argv, NULL);
    events = g_ptr_array_new_with_free_func(g_free);
    g_test_add_func("/qmp/json/malformed", test_json_malformed);
    g_test_add_func("/qmp/json/nesting", test_json_nesting);
    g_test_add_func("/qmp/json/serialize", test_json_serialize);
    g_test_add_func("/qmp/splitter/stream", test_splitter);
    g_test_add_func("/qmp/splitter/limits", test_splitter_limits);
    g_test_add_func("/qmp/splitter/reset", test_splitter_reset);
    ret = g_test_run();
    g_ptr_array_unref(events);
    g_free(last_call);
    return ret;
}

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

/* ---- Integer literals at the edges of int64 and uint64 ------------------- */

/* test-nums with every member 0 but @member, which is @literal. */
static char *nums_with(const char *member, const char *literal)
{
    static const char *const names[] = {
        "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "sz", "num",
    };
    GString *req = g_string_new("{\"execute\": \"test-nums\", \"arguments\": {");

    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        g_string_append_printf(req, "%s\"%s\": %s", i ? ", " : "", names[i],
                               strcmp(names[i], member) ? "0" : literal);
    }
    g_string_append(req, "}}");
    return g_string_free(req, FALSE);
}

/* Runs test-nums with @member = @literal; last_call says what the handler got. */
static void run_nums(const char *member, const char *literal)
{
    g_autofree char *req = nums_with(member, literal);

    g_free(run(req));
}

static void check_nums_error(const char *member, const char *literal, const char *desc)
{
    g_autofree char *req = nums_with(member, literal);

    check_error(req, desc);
}

/* The response's @member, as json-glib prints it. */
static char *nums_result(const char *member, const char *literal)
{
    g_autofree char *req = nums_with(member, literal);
    g_autofree char *rsp = run(req);
    JsonNode *node = json_from_string(rsp, NULL);
    JsonObject *ret;
    char *text;

    g_assert_nonnull(node);
    ret = json_object_get_object_member(json_node_get_object(node), "return");
    g_assert_nonnull(ret);
    text = qmp_json_to_string(json_object_get_member(ret, member), NULL);
    json_node_unref(node);
    return text;
}

/*
 * QEMU 7.2 over QMP keeps a literal in [2^63, 2^64) unsigned (issue 33):
 * calc-dirty-rate calc-time=9223372036854775808 is "Invalid parameter type
 * for 'calc-time', expected: integer", max-bandwidth takes
 * 18446744073709551615 and -1 alike (two's complement), a uint8 refuses
 * both with "expects uint8_t". json-glib stores the literal as a negative
 * int64, which int types took.
 */
static void test_json_int_edges(void)
{
    static const char *const int_members[] = { "i8", "i16", "i32", "i64" };
    g_autofree char *r = NULL;

    for (size_t i = 0; i < G_N_ELEMENTS(int_members); i++) {
        g_autofree char *desc = g_strdup_printf("Invalid parameter type for '%s', "
                                                "expected: integer", int_members[i]);

        check_nums_error(int_members[i], "9223372036854775808", desc);
        check_nums_error(int_members[i], "18446744073709551615", desc);
        check_nums_error(int_members[i], "18446744073709551616", desc);
    }
    g_free(nums_result("i64", "9223372036854775807"));
    g_free(nums_result("i64", "-9223372036854775808"));
    r = nums_result("i64", "-1");
    g_assert_cmpstr(r, ==, "-1");

    /* uint64 and size: exact, and a negative literal is its two's complement. */
    run_nums("u64", "18446744073709551615");
    g_assert_cmpstr(last_call, ==, "u64=18446744073709551615");
    run_nums("u64", "9223372036854775808");
    g_assert_cmpstr(last_call, ==, "u64=9223372036854775808");
    run_nums("u64", "-1");
    g_assert_cmpstr(last_call, ==, "u64=18446744073709551615");
    run_nums("sz", "18446744073709551615");
    check_nums_error("u64", "18446744073709551616",
                     "Invalid parameter type for 'u64', expected: integer");

    /* Narrower unsigned types: out of range either way. */
    check_nums_error("u8", "18446744073709551615", "Parameter 'u8' expects uint8_t");
    check_nums_error("u8", "-1", "Parameter 'u8' expects uint8_t");
    check_nums_error("u32", "4294967296", "Parameter 'u32' expects uint32_t");
    check_nums_error("u32", "9223372036854775808", "Parameter 'u32' expects uint32_t");

    /* number: the unsigned value as a double, not -1.0. */
    g_free(r);
    r = nums_result("num", "18446744073709551615");
    g_assert_cmpfloat(g_ascii_strtod(r, NULL), ==, 18446744073709551615.0);
    g_free(r);
    r = nums_result("num", "-1");
    g_assert_cmpfloat(g_ascii_strtod(r, NULL), ==, -1.0);

    /*
     * A duplicate member frees the node it replaces; the -1 that follows
     * must not inherit the unsigned bit if it lands at the same address.
     */
    g_free(r);
    r = run("{\"execute\": \"test-nums\", \"arguments\": {\"i8\": 0, \"i16\": 0, "
            "\"i32\": 0, \"i64\": 18446744073709551615, \"i64\": -1, \"u8\": 0, "
            "\"u16\": 0, \"u32\": 0, \"u64\": 0, \"sz\": 0, \"num\": 0}}");
    g_assert_nonnull(strstr(r, "\"i64\":-1,"));
}

/* What QEMU's lexer refuses and json-glib would take. */
static void test_json_bad_numbers(void)
{
    static const char *const bad[] = { "0x10", "010", ".5", "1.", "+1", "00", "-", "1e+" };

    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *desc = g_strdup_printf("JSON parse error, stray '%s'", bad[i]);

        check_nums_error("i64", bad[i], desc);
    }
    check_nums_error("i64", "- 1", "JSON parse error, stray '-'");
    /* The reply must stay JSON: bytes that are not printable are escaped. */
    check_nums_error("i64", "1\xff\x01", "JSON parse error, stray '1\\xff\\x01'");
    run_nums("num", "-0.5e-3");
    run_nums("i64", "-0");
}

/* The parser's set names exactly the nodes of literals in [2^63, 2^64). */
static void test_json_unsigned_nodes(void)
{
    static const char text[] = "{\"a\": [1, 18446744073709551615, [-1, 9223372036854775808]], "
                               "\"b\": 9223372036854775807, \"c\": 1.5, \"d\": -1}";
    g_autoptr(GHashTable) set = NULL;
    Error *err = NULL;
    JsonNode *root = qmp_parse_request(text, strlen(text), &set, &err);
    JsonObject *o;
    JsonArray *a, *inner;

    g_assert_null(err);
    g_assert_nonnull(set);
    o = json_node_get_object(root);
    a = json_object_get_array_member(o, "a");
    inner = json_array_get_array_element(a, 2);
    g_assert_cmpuint(g_hash_table_size(set), ==, 2);
    g_assert_true(g_hash_table_contains(set, json_array_get_element(a, 1)));
    g_assert_true(g_hash_table_contains(set, json_array_get_element(inner, 1)));
    g_assert_false(g_hash_table_contains(set, json_array_get_element(inner, 0)));
    g_assert_false(g_hash_table_contains(set, json_object_get_member(o, "d")));
    json_node_unref(root);
    g_clear_pointer(&set, g_hash_table_unref);

    /* A lone number at the top level has no signal; it is still found. */
    root = qmp_parse_request("18446744073709551615", 20, &set, &err);
    g_assert_nonnull(set);
    g_assert_true(g_hash_table_contains(set, root));
    json_node_unref(root);
    g_clear_pointer(&set, g_hash_table_unref);

    /* Without such a literal there is no set to free. */
    root = qmp_parse_request("{\"a\": -1}", 9, &set, &err);
    g_assert_null(set);
    json_node_unref(root);

    /* json-glib would skip the comment: refused by the scan, as QEMU does. */
    root = qmp_parse_request("{\"a\": /* 5 */ 18446744073709551615}", 35, &set, &err);
    g_assert_null(root);
    g_assert_null(set);
    g_assert_cmpstr(error_get_pretty(err), ==, "JSON parse error, stray '/'");
    error_free(err);
}

/*
 * json-glib's scanner takes comments and $hex integers, which QEMU's lexer
 * refuses. Where the scan and json-glib part, a quote can hide brackets
 * from the nesting bound: a million of them overflowed the stack in
 * json-glib.
 */
static void test_json_scanner_forms(void)
{
    g_autofree char *open = repeat("[", 1000000);
    g_autofree char *close = repeat("]", 1000000);
    g_autofree char *req = NULL;

    req = g_strdup_printf("{\"execute\": \"test-echo\", \"arguments\": "
                          "{\"value\": /*\"*/ %s%s /*\"*/}}", open, close);
    check_error(req, "JSON parse error, stray '/'");
    g_free(req);
    req = g_strdup_printf("{\"execute\": \"test-echo\", \"arguments\": "
                          "{\"value\": [true/*\"*/%s%s/*\"*/]}}", open, close);
    check_error(req, "JSON parse error, stray '/'");
    check_error("{\"execute\": \"test-echo\", \"arguments\": {\"value\": // x\n1}}",
                "JSON parse error, stray '/'");
    check_nums_error("i64", "$ffffffffffffffff", "JSON parse error, stray '$'");
    check_nums_error("u64", "1$ff", "JSON parse error, stray '$'");
}

/* '\' is a whole string to json-glib, an open one to QEMU (QEMU's escapes). */
static void test_json_single_quotes(void)
{
    g_autofree char *open = repeat("[", 1000000);
    g_autofree char *close = repeat("]", 1000000);
    g_autofree char *req = NULL;

    req = g_strdup_printf("{\"execute\": \"test-echo\", \"arguments\": "
                          "{\"value\": '\\', \"x\": %s%s, \"y\": '}}", open, close);
    g_free(last_call);
    last_call = run(req);
    g_assert_true(g_str_has_prefix(last_call, "{\"return\":\"', \\\"x\\\": [[[["));
    /* QEMU's escapes, and a double quote inside. */
    check_return("{'execute': 'test-echo', 'arguments': {'value': 'a\\'\"\\\\\\u0041\\n'}}",
                 "\"a'\\\"\\\\A\\n\"");
    check_return("{'execute': 'test-echo', 'arguments': {'value': ['', '\"', 1]}}",
                 "[\"\", \"\\\"\", 1]");
    check_error("{'execute': 'test-echo', 'arguments': {'value': 'a\\'}}",
                "JSON parse error, *");
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

/*
 * A comment or $ is refused where it appears: a quote inside a comment
 * must not start a string that hides the brackets after it.
 */
static void test_splitter_comments(void)
{
    g_autofree char *open = repeat("[", 100000);
    g_autofree char *input = g_strconcat("{\"a\": /*\"*/ ", open, " /*\"*/}\n",
                                         "{\"b\":2} / {\"c\":3}\n",
                                         "{\"d\": $ff}{\"e\":5}", NULL);
    SplitLog log;

    split(input, strlen(input), 4096, &log);
    g_assert_cmpint(log.errors, ==, 3);
    g_assert_cmpuint(log.texts->len, ==, 6);
    g_assert_cmpstr(g_ptr_array_index(log.texts, 0), ==, "<error>");
    g_assert_cmpstr(g_ptr_array_index(log.texts, 1), ==, "{\"b\":2}");
    g_assert_cmpstr(g_ptr_array_index(log.texts, 2), ==, "<error>");
    g_assert_cmpstr(g_ptr_array_index(log.texts, 3), ==, "{\"c\":3}");
    g_assert_cmpstr(g_ptr_array_index(log.texts, 4), ==, "<error>");
    g_assert_cmpstr(g_ptr_array_index(log.texts, 5), ==, "{\"e\":5}");
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
    g_test_add_func("/qmp/json/int-edges", test_json_int_edges);
    g_test_add_func("/qmp/json/bad-numbers", test_json_bad_numbers);
    g_test_add_func("/qmp/json/unsigned-nodes", test_json_unsigned_nodes);
    g_test_add_func("/qmp/json/scanner-forms", test_json_scanner_forms);
    g_test_add_func("/qmp/json/single-quotes", test_json_single_quotes);
    g_test_add_func("/qmp/splitter/stream", test_splitter);
    g_test_add_func("/qmp/splitter/limits", test_splitter_limits);
    g_test_add_func("/qmp/splitter/comments", test_splitter_comments);
    g_test_add_func("/qmp/splitter/reset", test_splitter_reset);
    ret = g_test_run();
    g_ptr_array_unref(events);
    g_free(last_call);
    return ret;
}

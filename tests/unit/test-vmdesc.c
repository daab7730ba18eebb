/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for the vmdesc writer (migration/stream/vmdesc.c). The writer
 * replaced json-glib's JsonBuilder and JsonGenerator on the wire, so every
 * document here is also built by a JsonBuilder with the same calls, and the
 * two texts must be equal byte for byte (save U+001F, which json-glib left
 * raw). Each text must also parse with json-glib's parser into the tree
 * the calls describe. A seeded random walk of the grammar covers nesting
 * and commas beyond the hand-written cases; misuse must assert.
 */
#include "qemu/osdep.h"
#include <json-glib/json-glib.h>
#include "migration/vmdesc.h"

/* Both writers, driven by the same calls. */
typedef struct Twin {
    VMDescWriter *w;
    JsonBuilder *b;
} Twin;

static void twin_init(Twin *t)
{
    t->w = vmdesc_new();
    t->b = json_builder_new();
}

static void twin_destroy(Twin *t)
{
    vmdesc_free(t->w);
    g_object_unref(t->b);
}

static void twin_begin_object(Twin *t)
{
    vmdesc_begin_object(t->w);
    json_builder_begin_object(t->b);
}

static void twin_end_object(Twin *t)
{
    vmdesc_end_object(t->w);
    json_builder_end_object(t->b);
}

static void twin_begin_array(Twin *t)
{
    vmdesc_begin_array(t->w);
    json_builder_begin_array(t->b);
}

static void twin_end_array(Twin *t)
{
    vmdesc_end_array(t->w);
    json_builder_end_array(t->b);
}

static void twin_name(Twin *t, const char *name)
{
    vmdesc_set_member_name(t->w, name);
    json_builder_set_member_name(t->b, name);
}

static void twin_string(Twin *t, const char *s)
{
    vmdesc_add_string_value(t->w, s);
    json_builder_add_string_value(t->b, s);
}

static void twin_int(Twin *t, int64_t v)
{
    vmdesc_add_int_value(t->w, v);
    json_builder_add_int_value(t->b, v);
}

/*
 * The two texts are equal, and ours parses back into the builder's tree.
 * Returns our text (the writer's) for further checks.
 */
static const char *twin_check(Twin *t)
{
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(JsonNode) root = json_builder_get_root(t->b);
    g_autofree char *theirs = NULL;
    const char *ours;
    GError *err = NULL;
    gsize their_len;
    size_t len;

    ours = vmdesc_get_data(t->w, &len);
    g_assert_cmpuint(strlen(ours), ==, len);
    json_generator_set_root(gen, root);
    theirs = json_generator_to_data(gen, &their_len);
    g_assert_cmpstr(ours, ==, theirs);
    g_assert_cmpuint(len, ==, their_len);

    g_assert_true(json_parser_load_from_data(parser, ours, len, &err));
    g_assert_no_error(err);
    g_assert_true(json_node_equal(json_parser_get_root(parser), root));
    return ours;
}

/* ---- hand-written documents ---- */

static void test_empty_containers(void)
{
    Twin t;

    twin_init(&t);
    twin_begin_object(&t);
    twin_name(&t, "o");
    twin_begin_object(&t);
    twin_end_object(&t);
    twin_name(&t, "a");
    twin_begin_array(&t);
    twin_end_array(&t);
    twin_name(&t, "aa");
    twin_begin_array(&t);
    twin_begin_array(&t);
    twin_end_array(&t);
    twin_begin_object(&t);
    twin_end_object(&t);
    twin_end_array(&t);
    twin_end_object(&t);
    g_assert_cmpstr(twin_check(&t), ==, "{\"o\":{},\"a\":[],\"aa\":[[],{}]}");
    twin_destroy(&t);
}

/* The vmdesc's own shape: commas between members, elements and nested levels. */
static void test_nesting_commas(void)
{
    Twin t;

    twin_init(&t);
    twin_begin_object(&t);
    twin_name(&t, "page_size");
    twin_int(&t, 4096);
    twin_name(&t, "devices");
    twin_begin_array(&t);
    for (int d = 0; d < 2; d++) {
        twin_begin_object(&t);
        twin_name(&t, "name");
        twin_string(&t, d ? "cpu" : "timer");
        twin_name(&t, "fields");
        twin_begin_array(&t);
        twin_begin_object(&t);
        twin_name(&t, "struct");
        twin_begin_object(&t);
        twin_name(&t, "subsections");
        twin_begin_array(&t);
        twin_int(&t, 1);
        twin_string(&t, "x");
        twin_end_array(&t);
        twin_end_object(&t);
        twin_name(&t, "size");
        twin_int(&t, 12);
        twin_end_object(&t);
        twin_end_array(&t);
        twin_end_object(&t);
    }
    twin_end_array(&t);
    twin_end_object(&t);
    g_assert_cmpstr(twin_check(&t), ==,
                    "{\"page_size\":4096,\"devices\":["
                    "{\"name\":\"timer\",\"fields\":[{\"struct\":{\"subsections\":[1,\"x\"]},"
                    "\"size\":12}]},"
                    "{\"name\":\"cpu\",\"fields\":[{\"struct\":{\"subsections\":[1,\"x\"]},"
                    "\"size\":12}]}]}");
    twin_destroy(&t);
}

static void test_ints(void)
{
    static const int64_t values[] = {
        0, 1, -1, 9, 10, -10, 4096, INT32_MAX, INT32_MIN, (int64_t)UINT32_MAX + 1,
        1000000000000000000LL, -999999999999999999LL, INT64_MAX, INT64_MIN,
    };
    Twin t;

    twin_init(&t);
    twin_begin_array(&t);
    for (size_t i = 0; i < G_N_ELEMENTS(values); i++) {
        twin_int(&t, values[i]);
    }
    twin_end_array(&t);
    g_assert_cmpstr(twin_check(&t), ==,
                    "[0,1,-1,9,10,-10,4096,2147483647,-2147483648,4294967296,"
                    "1000000000000000000,-999999999999999999,"
                    "9223372036854775807,-9223372036854775808]");
    twin_destroy(&t);
}

/* A top-level scalar is a document too (RFC 8259); JsonBuilder refuses one. */
static void test_scalar_root(void)
{
    g_autoptr(VMDescWriter) w = vmdesc_new();
    g_autoptr(JsonParser) parser = json_parser_new();
    GError *err = NULL;
    const char *text;
    size_t len;

    vmdesc_add_string_value(w, "alone");
    text = vmdesc_get_data(w, &len);
    g_assert_cmpstr(text, ==, "\"alone\"");
    g_assert_true(json_parser_load_from_data(parser, text, len, &err));
    g_assert_no_error(err);
    g_assert_cmpstr(json_node_get_string(json_parser_get_root(parser)), ==, "alone");
}

/*
 * Every ASCII character but NUL and U+001F, then UTF-8 of two, three and
 * four bytes, in a name and in a value: json-glib's text exactly. (Bytes
 * that are not UTF-8 pass through as well, but json-glib's parser would
 * refuse the text; the names are C identifiers anyway.)
 */
static void test_escaping_as_json_glib(void)
{
    char s[256];
    size_t k = 0;
    Twin t;

    for (int c = 1; c < 128; c++) {
        if (c != 0x1f) {
            s[k++] = c;
        }
    }
    strcpy(s + k, "\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e");
    twin_init(&t);
    twin_begin_object(&t);
    twin_name(&t, s);
    twin_string(&t, s);
    twin_name(&t, "\"\\/\b\f\n\r\t\x7f\xc3\xa9");
    twin_string(&t, "");
    twin_end_object(&t);
    g_assert_nonnull(strstr(twin_check(&t),
                            "\"\\\"\\\\/\\b\\f\\n\\r\\t\\u007f\xc3\xa9\":\"\""));
    twin_destroy(&t);
}

/* U+001F: escaped (RFC 8259), where json-glib wrote it raw; it still parses back. */
static void test_escaping_unit_separator(void)
{
    g_autoptr(VMDescWriter) w = vmdesc_new();
    g_autoptr(JsonParser) parser = json_parser_new();
    GError *err = NULL;
    const char *text;
    size_t len;

    vmdesc_begin_array(w);
    vmdesc_add_string_value(w, "a\x1f" "b\x01" "c");
    vmdesc_end_array(w);
    text = vmdesc_get_data(w, &len);
    g_assert_cmpstr(text, ==, "[\"a\\u001fb\\u0001c\"]");
    g_assert_true(json_parser_load_from_data(parser, text, len, &err));
    g_assert_no_error(err);
    g_assert_cmpstr(json_array_get_string_element(json_node_get_array(json_parser_get_root(parser)), 0),
                    ==, "a\x1f" "b\x01" "c");
}

/* ---- a seeded random walk of the grammar ---- */

/*
 * A random UTF-8 string (no NUL, no U+001F): letters, any other ASCII,
 * now and then a character of several bytes; sometimes empty or long.
 */
static char *random_string(GRand *r, const char *prefix)
{
    GString *s = g_string_new(prefix);
    int n = g_rand_int_range(r, 0, g_rand_boolean(r) ? 6 : 80);

    for (int i = 0; i < n; i++) {
        int c;

        switch (g_rand_int_range(r, 0, 5)) {
        case 0:
            g_string_append(s, g_rand_boolean(r) ? "\xc3\xa9" : "\xe2\x82\xac");
            continue;
        case 1:
        case 2:
            c = g_rand_int_range(r, 1, 128);
            break;
        default:
            c = g_rand_int_range(r, 'a', 'z' + 1);
            break;
        }
        g_string_append_c(s, c == 0x1f ? '_' : c);
    }
    return g_string_free(s, FALSE);
}

static int64_t random_int(GRand *r)
{
    int64_t v = ((int64_t)g_rand_int(r) << 32) | g_rand_int(r);

    switch (g_rand_int_range(r, 0, 4)) {
    case 0:
        return v;
    case 1:
        return v % 1000;
    case 2:
        return g_rand_boolean(r) ? INT64_MAX : INT64_MIN;
    default:
        return (int32_t)v;
    }
}

/*
 * One random value at depth @depth: a scalar, or a container of up to
 * six random members or elements. Member names are made unique per
 * object (a counter prefix): json-glib keeps one member per name.
 */
static void random_value(Twin *t, GRand *r, int depth)
{
    /* The root is a container: JsonBuilder takes no scalar root. */
    int kind = depth == 0 ? g_rand_int_range(r, 2, 4)
             : depth >= 8 ? g_rand_int_range(r, 0, 2) : g_rand_int_range(r, 0, 4);
    int n = g_rand_int_range(r, 0, 7);

    switch (kind) {
    case 0: {
        g_autofree char *s = random_string(r, "");

        twin_string(t, s);
        break;
    }
    case 1:
        twin_int(t, random_int(r));
        break;
    case 2:
        twin_begin_object(t);
        for (int i = 0; i < n; i++) {
            g_autofree char *prefix = g_strdup_printf("%d", i);
            g_autofree char *name = random_string(r, prefix);

            twin_name(t, name);
            random_value(t, r, depth + 1);
        }
        twin_end_object(t);
        break;
    default:
        twin_begin_array(t);
        for (int i = 0; i < n; i++) {
            random_value(t, r, depth + 1);
        }
        twin_end_array(t);
        break;
    }
}

static void test_random_documents(void)
{
    guint32 seed = g_test_rand_int();
    g_autoptr(GRand) r = g_rand_new_with_seed(seed);

    g_test_message("seed %" PRIu32, seed);
    for (int doc = 0; doc < 300; doc++) {
        Twin t;

        twin_init(&t);
        random_value(&t, r, 0);
        twin_check(&t);
        twin_destroy(&t);
    }
}

/* ---- misuse asserts ---- */

typedef void (*MisuseFn)(VMDescWriter *w);

static void misuse_value_without_name(VMDescWriter *w)
{
    vmdesc_begin_object(w);
    vmdesc_add_int_value(w, 1);
}

static void misuse_name_in_array(VMDescWriter *w)
{
    vmdesc_begin_array(w);
    vmdesc_set_member_name(w, "a");
}

static void misuse_two_names(VMDescWriter *w)
{
    vmdesc_begin_object(w);
    vmdesc_set_member_name(w, "a");
    vmdesc_set_member_name(w, "b");
}

static void misuse_end_after_name(VMDescWriter *w)
{
    vmdesc_begin_object(w);
    vmdesc_set_member_name(w, "a");
    vmdesc_end_object(w);
}

static void misuse_wrong_end(VMDescWriter *w)
{
    vmdesc_begin_object(w);
    vmdesc_end_array(w);
}

static void misuse_end_at_root(VMDescWriter *w)
{
    vmdesc_end_object(w);
}

static void misuse_two_roots(VMDescWriter *w)
{
    vmdesc_add_int_value(w, 1);
    vmdesc_add_int_value(w, 2);
}

static void misuse_data_while_open(VMDescWriter *w)
{
    size_t len;

    vmdesc_begin_array(w);
    vmdesc_get_data(w, &len);
}

static void misuse_data_of_nothing(VMDescWriter *w)
{
    size_t len;

    vmdesc_get_data(w, &len);
}

static void test_misuse(gconstpointer data)
{
    MisuseFn fn = (MisuseFn)data;

    if (g_test_subprocess()) {
        g_autoptr(VMDescWriter) w = vmdesc_new();

        fn(w);
        return;
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_failed();
    g_test_trap_assert_stderr("*Assertion*");
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        MisuseFn fn;
    } misuses[] = {
        { "value-without-name", misuse_value_without_name },
        { "name-in-array", misuse_name_in_array },
        { "two-names", misuse_two_names },
        { "end-after-name", misuse_end_after_name },
        { "wrong-end", misuse_wrong_end },
        { "end-at-root", misuse_end_at_root },
        { "two-roots", misuse_two_roots },
        { "data-while-open", misuse_data_while_open },
        { "data-of-nothing", misuse_data_of_nothing },
    };

    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vmdesc/empty-containers", test_empty_containers);
    g_test_add_func("/vmdesc/nesting-commas", test_nesting_commas);
    g_test_add_func("/vmdesc/ints", test_ints);
    g_test_add_func("/vmdesc/scalar-root", test_scalar_root);
    g_test_add_func("/vmdesc/escaping/as-json-glib", test_escaping_as_json_glib);
    g_test_add_func("/vmdesc/escaping/unit-separator", test_escaping_unit_separator);
    g_test_add_func("/vmdesc/random-documents", test_random_documents);
    for (size_t i = 0; i < G_N_ELEMENTS(misuses); i++) {
        g_autofree char *path = g_strdup_printf("/vmdesc/misuse/%s", misuses[i].name);

        g_test_add_data_func(path, (gconstpointer)misuses[i].fn, test_misuse);
    }
    return g_test_run();
}

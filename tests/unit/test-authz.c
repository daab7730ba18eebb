/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The authorization objects: authz-simple, authz-list's exact and glob
 * rules under both default policies, the rule reader's refusals, and
 * authz-listfile's load, reload on change and refusal of a bad file.
 */
#include "qemu/osdep.h"
#include <glib/gstdio.h>
#include "qapi/error.h"
#include "authz/authz-objects.h"

static JsonObject *json_obj(const char *text)
{
    g_autoptr(JsonNode) n = json_from_string(text, NULL);

    g_assert_nonnull(n);
    return json_object_ref(json_node_get_object(n));
}

/* Whether @a allows @identity; a denial must say QEMU's words. */
static bool allowed(Authz *a, const char *identity)
{
    Error *err = NULL;
    bool ok = authz_is_allowed(a, identity, &err);

    if (ok) {
        g_assert_null(err);
    } else {
        g_autofree char *want = g_strdup_printf("TLS x509 authz check for %s is denied",
                                                identity);

        g_assert_nonnull(err);
        g_assert_cmpstr(error_get_pretty(err), ==, want);
        error_free(err);
    }
    return ok;
}

static void test_simple(void)
{
    Authz *a = authz_simple_new("a0", "CN=fred");
    Error *err = NULL;

    g_assert_cmpstr(authz_id(a), ==, "a0");
    g_assert_true(allowed(a, "CN=fred"));
    g_assert_false(allowed(a, "CN=fred2"));
    g_assert_false(allowed(a, "CN=fre"));
    g_assert_false(allowed(a, ""));
    /* No identity at all (no certificate): refused, not crashed. */
    g_assert_false(authz_is_allowed(a, NULL, &err));
    g_assert_nonnull(err);
    error_free(err);
    authz_unref(a);
}

static void test_refs(void)
{
    Authz *a = authz_simple_new("a0", "x");

    g_assert_false(authz_in_use(a));
    authz_ref(a);
    g_assert_true(authz_in_use(a));
    authz_unref(a);
    g_assert_false(authz_in_use(a));
    authz_unref(a);
}

static void test_list_deny_default(void)
{
    g_autoptr(JsonObject) p = json_obj(
        "{\"qom-type\": \"authz-list\", \"id\": \"l\", \"rules\": ["
        "{\"match\": \"fred\", \"policy\": \"allow\", \"format\": \"exact\"},"
        "{\"match\": \"danb\", \"policy\": \"deny\"},"
        "{\"match\": \"dan*\", \"policy\": \"allow\", \"format\": \"glob\"},"
        "{\"match\": \"bob*\", \"policy\": \"allow\"}]}");
    Authz *a = authz_list_new("l", p, &error_abort);

    g_assert_true(allowed(a, "fred"));
    g_assert_false(allowed(a, "fredx"));
    g_assert_false(allowed(a, "danb"));       /* the earlier deny wins over the glob */
    g_assert_true(allowed(a, "dan"));
    g_assert_true(allowed(a, "danielle"));
    g_assert_false(allowed(a, "bobby"));      /* exact by default: '*' is literal */
    g_assert_true(allowed(a, "bob*"));
    g_assert_false(allowed(a, "alice"));      /* default policy: deny */
    authz_unref(a);
}

static void test_list_allow_default(void)
{
    g_autoptr(JsonObject) p = json_obj(
        "{\"policy\": \"allow\", \"rules\": ["
        "{\"match\": \"CN=evil?\", \"policy\": \"deny\", \"format\": \"glob\"},"
        "{\"match\": \"CN=mallory\", \"policy\": \"deny\"}]}");
    Authz *a = authz_list_new("l", p, &error_abort);

    g_assert_false(allowed(a, "CN=evil1"));
    g_assert_true(allowed(a, "CN=evil12"));   /* '?' is one character */
    g_assert_false(allowed(a, "CN=mallory"));
    g_assert_true(allowed(a, "CN=alice"));
    authz_unref(a);

    /* No rules at all: the policy alone. */
    g_autoptr(JsonObject) empty = json_obj("{\"policy\": \"allow\"}");
    a = authz_list_new("l", empty, &error_abort);
    g_assert_true(allowed(a, "anyone"));
    authz_unref(a);
}

static void test_list_bad(void)
{
    static const struct {
        const char *json;
        const char *msg;
    } bad[] = {
        { "{\"policy\": \"maybe\"}", "Parameter 'policy' does not accept value 'maybe'" },
        { "{\"policy\": 1}", "Invalid parameter type for 'policy', expected: string" },
        { "{\"rules\": {}}", "Invalid parameter type for 'rules', expected: array" },
        { "{\"rules\": [1]}", "Invalid parameter type for 'rules[0]', expected: object" },
        { "{\"rules\": [{\"policy\": \"allow\"}]}", "Parameter 'rules[0].match' is missing" },
        { "{\"rules\": [{\"match\": \"a\", \"policy\": \"allow\"}, {\"match\": \"b\"}]}",
          "Parameter 'rules[1].policy' is missing" },
        { "{\"rules\": [{\"match\": 5, \"policy\": \"allow\"}]}",
          "Invalid parameter type for 'rules[0].match', expected: string" },
        { "{\"rules\": [{\"match\": \"a\", \"policy\": \"allow\", \"format\": \"regex\"}]}",
          "Parameter 'rules[0].format' does not accept value 'regex'" },
        { "{\"rules\": [{\"match\": \"a\", \"policy\": \"allow\", \"x\": 1}]}",
          "Parameter 'rules[0].x' is unexpected" },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(JsonObject) p = json_obj(bad[i].json);
        Error *err = NULL;

        g_assert_null(authz_list_new("l", p, &err));
        g_assert_nonnull(err);
        g_assert_cmpstr(error_get_pretty(err), ==, bad[i].msg);
        error_free(err);
    }
}

static char *write_tmp(const char *dir, const char *name, const char *text)
{
    char *path = g_build_filename(dir, name, NULL);

    g_assert_true(g_file_set_contents(path, text, -1, NULL));
    return path;
}

static void test_listfile(void)
{
    g_autofree char *dir = g_dir_make_tmp("test-authz-XXXXXX", NULL);
    g_autofree char *path = write_tmp(dir, "acl.json",
        "{\"policy\": \"deny\", \"rules\": [{\"match\": \"fred\", \"policy\": \"allow\"}]}");
    Authz *a = authz_listfile_new("f", path, true, &error_abort);
    Error *err = NULL;

    g_assert_true(allowed(a, "fred"));
    g_assert_false(allowed(a, "bob"));

    /* A new version (another inode, as editors and mv write it): read at the next check. */
    g_free(write_tmp(dir, "acl.json",
        "{\"policy\": \"deny\", \"rules\": [{\"match\": \"b*\", \"policy\": \"allow\","
        " \"format\": \"glob\"}]}"));
    g_assert_false(allowed(a, "fred"));
    g_assert_true(allowed(a, "bob"));

    /* A bad version: every check fails with why, until a good one appears. */
    g_free(write_tmp(dir, "acl.json", "{\"rules\": [{\"match\": \"bob\"}]}"));
    g_assert_false(authz_is_allowed(a, "bob", &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "Parameter 'rules[0].policy' is missing"));
    g_clear_pointer(&err, error_free);
    g_unlink(path);
    g_assert_false(authz_is_allowed(a, "bob", &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "Unable to read"));
    g_clear_pointer(&err, error_free);
    g_free(write_tmp(dir, "acl.json", "{\"policy\": \"allow\"}"));
    g_assert_true(allowed(a, "bob"));
    authz_unref(a);

    /* Without refresh the first version stays. */
    a = authz_listfile_new("f", path, false, &error_abort);
    g_free(write_tmp(dir, "acl.json", "{\"policy\": \"deny\"}"));
    g_assert_true(allowed(a, "bob"));
    authz_unref(a);
    g_unlink(path);
    g_rmdir(dir);
}

/* Rewritten in place (same inode): the size or mtime tells. */
static void test_listfile_in_place(void)
{
    g_autofree char *dir = g_dir_make_tmp("test-authz-XXXXXX", NULL);
    g_autofree char *path = write_tmp(dir, "acl.json", "{\"policy\": \"deny\"}");
    Authz *a = authz_listfile_new("f", path, true, &error_abort);
    FILE *f;

    g_assert_false(allowed(a, "x"));
    f = fopen(path, "w");
    g_assert_nonnull(f);
    fputs("{\"policy\": \"allow\"}", f);
    fclose(f);
    g_assert_true(allowed(a, "x"));
    authz_unref(a);
    g_unlink(path);
    g_rmdir(dir);
}

static void test_listfile_bad(void)
{
    g_autofree char *dir = g_dir_make_tmp("test-authz-XXXXXX", NULL);
    g_autofree char *missing = g_build_filename(dir, "none.json", NULL);
    g_autofree char *garbage = write_tmp(dir, "garbage.json", "garbage");
    g_autofree char *array = write_tmp(dir, "array.json", "[]");
    g_autofree char *extra = write_tmp(dir, "extra.json", "{\"policy\": \"deny\", \"x\": 1}");
    const char *paths[] = { missing, garbage, array, extra };
    const char *msgs[] = { "Unable to read", "Authorization list file", "not a JSON object",
                           "Parameter 'x' is unexpected" };

    for (size_t i = 0; i < G_N_ELEMENTS(paths); i++) {
        Error *err = NULL;

        g_assert_null(authz_listfile_new("f", paths[i], true, &err));
        g_assert_nonnull(err);
        if (!strstr(error_get_pretty(err), msgs[i])) {
            g_printerr("%s: %s\n", paths[i], error_get_pretty(err));
        }
        g_assert_nonnull(strstr(error_get_pretty(err), msgs[i]));
        error_free(err);
    }
    g_unlink(garbage);
    g_unlink(array);
    g_unlink(extra);
    g_rmdir(dir);
}

/* Checks in several threads while the file changes: no crash, and only the two answers. */
typedef struct Race {
    Authz *a;
    gint stop;
} Race;

static gpointer race_checker(gpointer opaque)
{
    Race *r = opaque;

    while (!g_atomic_int_get(&r->stop)) {
        Error *err = NULL;

        authz_is_allowed(r->a, "fred", &err);
        error_free(err);
    }
    return NULL;
}

static void test_listfile_threads(void)
{
    g_autofree char *dir = g_dir_make_tmp("test-authz-XXXXXX", NULL);
    g_autofree char *path = write_tmp(dir, "acl.json", "{\"policy\": \"deny\"}");
    Race r = { .a = authz_listfile_new("f", path, true, &error_abort) };
    GThread *t[3];

    for (int i = 0; i < 3; i++) {
        t[i] = g_thread_new("checker", race_checker, &r);
    }
    for (int i = 0; i < 200; i++) {
        g_free(write_tmp(dir, "acl.json", i % 2 ? "{\"policy\": \"deny\"}"
                                                 : "{\"policy\": \"allow\"}"));
    }
    g_free(write_tmp(dir, "acl.json", "{\"policy\": \"allow\"}"));
    g_atomic_int_set(&r.stop, 1);
    for (int i = 0; i < 3; i++) {
        g_thread_join(t[i]);
    }
    g_assert_true(allowed(r.a, "fred"));
    authz_unref(r.a);
    g_unlink(path);
    g_rmdir(dir);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/authz/simple", test_simple);
    g_test_add_func("/authz/refs", test_refs);
    g_test_add_func("/authz/list/deny-default", test_list_deny_default);
    g_test_add_func("/authz/list/allow-default", test_list_allow_default);
    g_test_add_func("/authz/list/bad", test_list_bad);
    g_test_add_func("/authz/listfile/reload", test_listfile);
    g_test_add_func("/authz/listfile/in-place", test_listfile_in_place);
    g_test_add_func("/authz/listfile/bad", test_listfile_bad);
    g_test_add_func("/authz/listfile/threads", test_listfile_threads);
    return g_test_run();
}

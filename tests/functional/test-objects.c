/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The objects made by name (system/control/user-objects.c): -object's
 * refusals and both of its syntaxes, QMP object-add / object-del, HMP
 * object_add / object_del, and qom-list-types / qom-list-properties. Each
 * refusal is checked with QEMU's words (as QEMU 7.2 and 10.0 print them).
 * No guest: -machine none (accel=tcg, so no KVM needed).
 */
#include <string.h>
#include <glib/gstdio.h>
#include "libvmtest.h"

#define NONE "-nodefaults -machine none,accel=tcg "

/* A directory with @file (NULL: none) holding @text, under the test's temp dir. */
static char *make_dir(const char *name, const char *file, const char *text)
{
    char *dir = g_build_filename(vmtest_tmpdir(), name, NULL);

    g_mkdir_with_parents(dir, 0700);
    if (file) {
        g_autofree char *path = g_build_filename(dir, file, NULL);

        g_assert_true(g_file_set_contents(path, text, -1, NULL));
    }
    return dir;
}

typedef struct BadCase {
    const char *args;           /* %1$s: a directory without credentials */
    const char *expect;
} BadCase;

static const BadCase bad_cases[] = {
    { "-object nope,id=x", "-object nope,id=x: Parameter 'qom-type' does not accept value 'nope'" },
    { "-object id=x", "Parameter 'qom-type' is missing" },
    { "-object authz-simple,identity=x", "Parameter 'id' is missing" },
    { "-object authz-simple,id=1x,identity=x", "Parameter 'id' expects an identifier" },
    { "-object authz-simple,id=a", "Parameter 'identity' is missing" },
    { "-object authz-simple,id=a,identity=x,foo=1", "Invalid parameter 'foo'" },
    { "-object authz-simple,id=a,identity=x -object authz-simple,id=a,identity=y",
      "Duplicate ID 'a' for object" },
    { "-object authz-list,id=a,policy=maybe", "Parameter 'policy' does not accept value 'maybe'" },
    { "-object '{\"qom-type\": \"authz-list\", \"id\": \"a\", \"rules\": [{\"policy\": \"allow\"}]}'",
      "Parameter 'rules[0].match' is missing" },
    { "-object '{\"qom-type\": \"authz-list\", \"id\": \"a\", \"rules\": "
      "[{\"match\": \"x\", \"policy\": \"allow\", \"format\": \"regex\"}]}'",
      "Parameter 'rules[0].format' does not accept value 'regex'" },
    { "-object '{\"qom-type\": \"authz-simple\", \"id\": \"a\", \"identity\": \"x\", \"foo\": 1}'",
      "Parameter 'foo' is unexpected" },
    { "-object '{\"qom-type\": \"tls-creds-anon\", \"id\": \"t\", \"verify-peer\": \"on\"}'",
      "Invalid parameter type for 'verify-peer', expected: boolean" },
    { "-object '{\"qom-type\": \"authz-simple\"'", "JSON parse error" },
    { "-object authz-listfile,id=a", "Parameter 'filename' is missing" },
    { "-object authz-list-file,id=a", "Parameter 'filename' is missing" },
    { "-object authz-listfile,id=a,filename=%1$s/none.json", "Unable to read" },
    { "-object secret,id=s", "Either 'file' or 'data' must be provided" },
    { "-object secret,id=s,data=x,file=/etc/hostname", "'file' and 'data' are mutually exclusive" },
    { "-object secret,id=s,data=@@,format=base64", "Base64 data contains invalid characters" },
    { "-object secret,id=s,data=x,format=hex", "Parameter 'format' does not accept value 'hex'" },
    { "-object tls-creds-anon,id=t,endpoint=both",
      "Parameter 'endpoint' does not accept value 'both'" },
    { "-object tls-creds-anon,id=t,verify-peer=maybe", "Parameter 'verify-peer' expects 'on' or 'off'" },
    { "-object tls-creds-x509,id=t", "Missing 'dir' property value" },
    { "-object tls-creds-x509,id=t,dir=%1$s", "Unable to access credentials %1$s/ca-cert.pem" },
    { "-object tls-creds-psk,id=t,dir=%1$s", "Unable to access credentials %1$s/keys.psk" },
    { "-object tls-creds-x509,id=t,dir=%1$s,passwordid=nope", "No secret with id 'nope'" },
    { "-object authz-simple,id=a,identity=x -object tls-creds-x509,id=t,dir=%1$s,passwordid=a",
      "Object with id 'a' is not a secret" },
    { "-object tls-creds-anon,id=t,username=u", "Invalid parameter 'username'" },
};

static void test_cmdline_bad(gconstpointer data)
{
    const BadCase *c = data;
    g_autofree char *empty = make_dir("empty", NULL, NULL);
    g_autofree char *args = g_strdup_printf(c->args, empty);
    g_autofree char *expect = g_strdup_printf(c->expect, empty);
    VM *vm = vm_spawn("bad", false, NONE "%s", args);
    int status = vm_wait_exit(vm, 30);

    if (status != 1 || !strstr(vm->stderr_text->str, expect)) {
        g_printerr("args: %s\nstatus: %d\nstderr: %s\n", args, status, vm->stderr_text->str);
    }
    g_assert_cmpint(status, ==, 1);
    g_assert_true(g_str_has_prefix(vm->stderr_text->str, "qemu-system-x86_64: -object "));
    g_assert_nonnull(strstr(vm->stderr_text->str, expect));
    vm_kill(vm);
}

/* Every type from the command line, in both syntaxes; the monitor then sees them by id. */
static void test_cmdline_ok(void)
{
    g_autofree char *psk = make_dir("psk", "keys.psk",
                                    "qemu:0123456789abcdef0123456789abcdef\n");
    g_autofree char *acl = make_dir("acl", "acl.json", "{\"policy\": \"allow\"}");
    g_autofree char *secret = make_dir("secret", "pw", "hunter2");
    static const char *const ids[] = { "sec0", "sec1", "anon0", "psk0", "simple0", "list0",
                                       "file0" };
    VM *vm = vm_spawn("ok", true, NONE
                      "-object secret,id=sec0,data=aHVudGVyMg==,format=base64 "
                      "-object secret,id=sec1,file=%s/pw "
                      "-object tls-creds-anon,id=anon0,endpoint=server,verify-peer=off "
                      "-object tls-creds-psk,id=psk0,dir=%s,endpoint=client,username=qemu "
                      "-object authz-simple,id=simple0,identity=CN=x "
                      "-object '{\"qom-type\": \"authz-list\", \"id\": \"list0\", "
                      "\"policy\": \"deny\", \"rules\": [{\"match\": \"CN=*\", "
                      "\"policy\": \"allow\", \"format\": \"glob\"}]}' "
                      "-object authz-listfile,id=file0,filename=%s/acl.json,refresh=on",
                      secret, psk, acl);

    for (size_t i = 0; i < G_N_ELEMENTS(ids); i++) {
        g_autofree char *cmd = g_strdup_printf(
            "{'execute': 'object-add', 'arguments': {'qom-type': 'authz-simple', "
            "'id': '%s', 'identity': 'y'}}", ids[i]);

        /* Taken: the command line made it. */
        vm_qmp_expect_error(vm, cmd, "attempt to add duplicate property");
        json_node_unref(vm_qmp_ok(vm, "{'execute': 'object-del', 'arguments': {'id': '%s'}}",
                                  ids[i]));
        /* Gone: the same id is free again. */
        json_node_unref(vm_qmp_ok(vm, "%s", cmd));
    }
    vm_kill(vm);
}

static void test_qmp(void)
{
    g_autofree char *acl = make_dir("acl2", "acl.json", "{\"policy\": \"deny\"}");
    VM *vm = vm_spawn("qmp", true, NONE);

    json_node_unref(vm_qmp_ok(vm, "{'execute': 'object-add', 'arguments': {"
                              "'qom-type': 'authz-simple', 'id': 'a', 'identity': 'x'}}"));
    vm_qmp_expect_error(vm, "{'execute': 'object-add', 'arguments': {"
                        "'qom-type': 'authz-simple', 'id': 'a', 'identity': 'x'}}",
                        "attempt to add duplicate property 'a' to object (type 'container')");
    vm_qmp_expect_error(vm, "{'execute': 'object-add', 'arguments': {"
                        "'qom-type': 'nope', 'id': 'b'}}",
                        "Parameter 'qom-type' does not accept value 'nope'");
    vm_qmp_expect_error(vm, "{'execute': 'object-add', 'arguments': {"
                        "'qom-type': 'authz-simple', 'id': 'b', 'identity': 'x', 'dir': '/'}}",
                        "Parameter 'dir' is unexpected");
    vm_qmp_expect_error(vm, "{'execute': 'object-add', 'arguments': {"
                        "'qom-type': 'authz-simple', 'id': 'b', 'identity': 5}}",
                        "Invalid parameter type for 'identity', expected: string");
    vm_qmp_expect_error(vm, "{'execute': 'object-add', 'arguments': {"
                        "'qom-type': 'tls-creds-anon', 'id': 'b', 'endpoint': 'foo'}}",
                        "Parameter 'endpoint' does not accept value 'foo'");
    vm_qmp_expect_error(vm, "{'execute': 'object-add', 'arguments': {"
                        "'qom-type': 'authz-list', 'id': 'b', "
                        "'rules': [{'match': 'a*', 'format': 'glob'}]}}",
                        "Parameter 'rules[0].policy' is missing");
    vm_qmp_expect_error(vm, "{'execute': 'object-add', 'arguments': {"
                        "'qom-type': 'authz-simple', 'id': '', 'identity': 'x'}}",
                        "Parameter 'id' expects an identifier");
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'object-add', 'arguments': {"
                              "'qom-type': 'authz-list', 'id': 'l', 'policy': 'allow', "
                              "'rules': [{'match': 'a*', 'format': 'glob', 'policy': 'deny'}]}}"));
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'object-add', 'arguments': {"
                              "'qom-type': 'authz-listfile', 'id': 'f', "
                              "'filename': '%s/acl.json', 'refresh': false}}", acl));
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'object-add', 'arguments': {"
                              "'qom-type': 'tls-creds-anon', 'id': 't', 'endpoint': 'server', "
                              "'verify-peer': false}}"));
    json_node_unref(vm_qmp_ok(vm, "{'execute': 'object-add', 'arguments': {"
                              "'qom-type': 'secret', 'id': 's', 'data': 'pw'}}"));
    vm_qmp_expect_error(vm, "{'execute': 'object-del', 'arguments': {'id': 'zz'}}",
                        "object 'zz' not found");
    for (const char *const *id = (const char *const[]) { "a", "l", "f", "t", "s", NULL }; *id;
         id++) {
        g_autofree char *again = g_strdup_printf(
            "{'execute': 'object-del', 'arguments': {'id': '%s'}}", *id);
        g_autofree char *gone = g_strdup_printf("object '%s' not found", *id);

        json_node_unref(vm_qmp_ok(vm, "%s", again));
        vm_qmp_expect_error(vm, again, gone);
    }
    vm_qmp_expect_error(vm, "{'execute': 'object-del', 'arguments': {}}",
                        "Parameter 'id' is missing");
    vm_kill(vm);
}

static void test_hmp(void)
{
    VM *vm = vm_spawn("hmp", true, NONE);
    g_autofree char *out = NULL;

    out = vm_hmp(vm, "object_add authz-simple,id=a,identity=x");
    g_assert_cmpstr(out, ==, "");
    g_free(out);
    out = vm_hmp(vm, "object_add authz-simple,id=a,identity=x");
    g_assert_nonnull(strstr(out, "Error: attempt to add duplicate property 'a' to object"));
    g_free(out);
    out = vm_hmp(vm, "object_add nope,id=b");
    g_assert_nonnull(strstr(out, "Error: Parameter 'qom-type' does not accept value 'nope'"));
    g_free(out);
    out = vm_hmp(vm, "object_add tls-creds-anon,id=t,verify-peer=maybe");
    g_assert_nonnull(strstr(out, "Error: Parameter 'verify-peer' expects 'on' or 'off'"));
    g_free(out);
    /* Text values are parsed as -object's are. */
    out = vm_hmp(vm, "object_add tls-creds-anon,id=t,verify-peer=off,endpoint=server");
    g_assert_cmpstr(out, ==, "");
    g_free(out);
    out = vm_hmp(vm, "object_del zz");
    g_assert_nonnull(strstr(out, "Error: object 'zz' not found"));
    g_free(out);
    out = vm_hmp(vm, "object_del a");
    g_assert_cmpstr(out, ==, "");
    g_free(out);
    out = vm_hmp(vm, "object_del a");
    g_assert_nonnull(strstr(out, "Error: object 'a' not found"));
    g_free(out);
    out = vm_hmp(vm, "object_del t");
    g_assert_cmpstr(out, ==, "");
    vm_kill(vm);
}

static bool list_has(JsonNode *list, const char *member, const char *value)
{
    JsonArray *a = json_node_get_array(list);

    for (guint i = 0; i < json_array_get_length(a); i++) {
        JsonObject *o = json_array_get_object_element(a, i);

        if (!g_strcmp0(json_object_get_string_member(o, member), value)) {
            return true;
        }
    }
    return false;
}

static void test_probe(void)
{
    VM *vm = vm_spawn("probe", true, NONE);
    JsonNode *r;

    r = vm_qmp_ok(vm, "{'execute': 'qom-list-types', 'arguments': {'implements': 'authz'}}");
    g_assert_true(list_has(r, "name", "authz-simple"));
    g_assert_true(list_has(r, "name", "authz-list"));
    g_assert_true(list_has(r, "name", "authz-listfile"));
    g_assert_true(list_has(r, "name", "authz-list-file"));
    g_assert_false(list_has(r, "name", "secret"));
    json_node_unref(r);
    r = vm_qmp_ok(vm, "{'execute': 'qom-list-types', 'arguments': {'implements': 'tls-creds'}}");
    g_assert_true(list_has(r, "name", "tls-creds-x509"));
    g_assert_true(list_has(r, "name", "tls-creds-psk"));
    g_assert_true(list_has(r, "name", "tls-creds-anon"));
    json_node_unref(r);
    r = vm_qmp_ok(vm, "{'execute': 'qom-list-properties', 'arguments': "
                  "{'typename': 'tls-creds-x509'}}");
    g_assert_true(list_has(r, "name", "passwordid"));
    g_assert_true(list_has(r, "name", "verify-peer"));
    json_node_unref(r);
    r = vm_qmp_ok(vm, "{'execute': 'qom-list-properties', 'arguments': "
                  "{'typename': 'authz-list'}}");
    g_assert_true(list_has(r, "name", "rules"));
    json_node_unref(r);
    vm_kill(vm);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(bad_cases); i++) {
        g_autofree char *path = g_strdup_printf("/objects/cmdline-bad/%zu", i);

        g_test_add_data_func(path, &bad_cases[i], test_cmdline_bad);
    }
    g_test_add_func("/objects/cmdline-ok", test_cmdline_ok);
    g_test_add_func("/objects/qmp", test_qmp);
    g_test_add_func("/objects/hmp", test_hmp);
    g_test_add_func("/objects/probe", test_probe);
    return g_test_run();
}

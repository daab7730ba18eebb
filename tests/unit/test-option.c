/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for util/option.c: splitting, escaping, implied keys, bare
 * flags, duplicates, typed getters and their QEMU-worded errors.
 */
#include "qemu/osdep.h"
#include "qemu/option.h"
#include "qapi/error.h"

/* Parse and expect success. */
static QemuOpts *parse_ok(const char *params, const char *implied_key)
{
    Error *err = NULL;
    QemuOpts *opts = qemu_opts_parse(params, implied_key, &err);

    g_assert_null(err);
    g_assert_nonnull(opts);
    return opts;
}

/* Parse and expect failure with exactly @msg. */
static void parse_fail(const char *params, const char *implied_key,
                       const char *msg)
{
    Error *err = NULL;
    QemuOpts *opts = qemu_opts_parse(params, implied_key, &err);

    g_assert_null(opts);
    g_assert_nonnull(err);
    g_assert_cmpstr(error_get_pretty(err), ==, msg);
    error_free(err);
}

static void test_parse_object(void)
{
    g_autoptr(QemuOpts) opts =
        parse_ok("memory-backend-ram,id=m0,size=1G,share=on", "qom-type");
    const QemuOpt *o;

    g_assert_cmpuint(qemu_opts_count(opts), ==, 4);
    o = qemu_opts_nth(opts, 0);
    g_assert_cmpstr(o->name, ==, "qom-type");
    g_assert_cmpstr(o->value, ==, "memory-backend-ram");
    g_assert_cmpstr(qemu_opts_nth(opts, 1)->name, ==, "id");
    g_assert_cmpstr(qemu_opts_nth(opts, 2)->name, ==, "size");
    g_assert_cmpstr(qemu_opts_nth(opts, 3)->name, ==, "share");
    g_assert_null(qemu_opts_nth(opts, 4));
    g_assert_cmpstr(qemu_opt_get(opts, "id"), ==, "m0");
    g_assert_cmpstr(qemu_opt_get(opts, "size"), ==, "1G");
    g_assert_cmpstr(qemu_opt_get(opts, "share"), ==, "on");
    g_assert_null(qemu_opt_get(opts, "prealloc"));
    g_assert_true(qemu_opt_has(opts, "id"));
    g_assert_false(qemu_opt_has(opts, "prealloc"));
}

static void test_parse_accel_qmp(void)
{
    g_autoptr(QemuOpts) accel = parse_ok("kvm,dirty-ring-size=4096", "accel");
    g_autoptr(QemuOpts) qmp =
        parse_ok("unix:/tmp/s,server=on,wait=off", "path");
    uint64_t n = 0;
    bool b = true;

    g_assert_cmpstr(qemu_opt_get(accel, "accel"), ==, "kvm");
    g_assert_true(qemu_opt_get_number(accel, "dirty-ring-size", 0, &n, NULL));
    g_assert_cmpuint(n, ==, 4096);

    g_assert_cmpstr(qemu_opt_get(qmp, "path"), ==, "unix:/tmp/s");
    g_assert_true(qemu_opt_get_bool(qmp, "server", false, &b, NULL));
    g_assert_true(b);
    g_assert_true(qemu_opt_get_bool(qmp, "wait", true, &b, NULL));
    g_assert_false(b);
}

static void test_parse_escaped_comma(void)
{
    g_autoptr(QemuOpts) a = parse_ok("path=/tmp/a,,b,id=x", NULL);
    g_autoptr(QemuOpts) b = parse_ok("/tmp/a,,b,,,id=y", "path");
    g_autoptr(QemuOpts) c = parse_ok("v=,,,,", NULL);
    g_autoptr(QemuOpts) d = parse_ok("v=x,,", NULL);

    g_assert_cmpuint(qemu_opts_count(a), ==, 2);
    g_assert_cmpstr(qemu_opt_get(a, "path"), ==, "/tmp/a,b");
    g_assert_cmpstr(qemu_opt_get(a, "id"), ==, "x");
    /* ",,," is an escaped comma, then the separator. */
    g_assert_cmpstr(qemu_opt_get(b, "path"), ==, "/tmp/a,b,");
    g_assert_cmpstr(qemu_opt_get(b, "id"), ==, "y");
    g_assert_cmpstr(qemu_opt_get(c, "v"), ==, ",,");
    g_assert_cmpstr(qemu_opt_get(d, "v"), ==, "x,");
}

static void test_parse_values(void)
{
    g_autoptr(QemuOpts) opts = parse_ok("a=,b=x=y,c=on,", NULL);

    /* Empty value, '=' inside a value, trailing comma ignored. */
    g_assert_cmpuint(qemu_opts_count(opts), ==, 3);
    g_assert_cmpstr(qemu_opt_get(opts, "a"), ==, "");
    g_assert_cmpstr(qemu_opt_get(opts, "b"), ==, "x=y");
    g_assert_cmpstr(qemu_opt_get(opts, "c"), ==, "on");
}

static void test_parse_bare_flag(void)
{
    g_autoptr(QemuOpts) a = parse_ok("server,wait=off", NULL);
    g_autoptr(QemuOpts) b = parse_ok("unix:/s,server", "path");
    bool v = false;

    g_assert_cmpstr(qemu_opt_get(a, "server"), ==, "on");
    g_assert_cmpstr(qemu_opt_get(a, "wait"), ==, "off");
    /* The implied key only applies to the first element. */
    g_assert_cmpstr(qemu_opt_get(b, "path"), ==, "unix:/s");
    g_assert_true(qemu_opt_get_bool(b, "server", false, &v, NULL));
    g_assert_true(v);
}

/*
 * QEMU's short-form booleans: "nowait" is wait=off (the bug was a key
 * "nowait" nobody reads, so wait stayed on), "nodelay" is its own key.
 */
static void test_parse_short_form(void)
{
    g_autoptr(QemuOpts) a = qemu_opts_parse_legacy("/s,server,nowait", "path", &error_abort);
    g_autoptr(QemuOpts) b = qemu_opts_parse_legacy("nodelay,noshare,wait=on,nowait", NULL,
                                                   &error_abort);
    g_autoptr(QemuOpts) c = qemu_opts_parse_legacy("no,nowait,wait", NULL, &error_abort);
    bool v = true;

    g_assert_cmpstr(qemu_opt_get(a, "path"), ==, "/s");
    g_assert_cmpstr(qemu_opt_get(a, "server"), ==, "on");
    g_assert_true(qemu_opt_get_bool(a, "wait", true, &v, &error_abort));
    g_assert_false(v);
    g_assert_false(qemu_opt_has(a, "nowait"));
    g_assert_cmpstr(qemu_opt_get(b, "nodelay"), ==, "on");
    g_assert_false(qemu_opt_has(b, "delay"));
    g_assert_cmpstr(qemu_opt_get(b, "share"), ==, "off");
    /* The last of wait=on and nowait wins. */
    g_assert_cmpstr(qemu_opt_get(b, "wait"), ==, "off");
    /* A bare "no" is no negation; "wait" after "nowait" wins. */
    g_assert_cmpstr(qemu_opt_get(c, "no"), ==, "on");
    g_assert_cmpstr(qemu_opt_get(c, "wait"), ==, "on");
}

/* QEMU 7.2's keyval options (-machine, -smp, -blockdev) take no short forms. */
static void test_parse_keyval_refuses_short_form(void)
{
    g_autoptr(QemuOpts) ok = qemu_opts_parse_keyval("microvm,acpi=off", "type", &error_abort);
    Error *err = NULL;

    g_assert_cmpstr(qemu_opt_get(ok, "type"), ==, "microvm");
    g_assert_null(qemu_opts_parse_keyval("microvm,dump-guest-core", "type", &err));
    g_assert_cmpstr(error_get_pretty(err), ==,
                    "Expected '=' after parameter 'dump-guest-core'");
    error_free_or_abort(&err);
    g_assert_null(qemu_opts_parse_keyval("driver=raw,noread-only", NULL, &err));
    g_assert_cmpstr(error_get_pretty(err), ==, "Expected '=' after parameter 'noread-only'");
    error_free_or_abort(&err);
}

/* The warning, as QEMU 7.2 words it, from qemu_opts_parse() only. */
static void test_parse_short_form_warning(void)
{
    if (g_test_subprocess()) {
        g_autoptr(QemuOpts) a = parse_ok("socket,id=x,server,nowait,nodelay", "backend");
        g_autoptr(QemuOpts) b = qemu_opts_parse_legacy("server,nowait", NULL, &error_abort);

        g_assert_cmpstr(qemu_opt_get(a, "wait"), ==, "off");
        g_assert_cmpstr(qemu_opt_get(b, "wait"), ==, "off");
        return;
    }
    g_test_trap_subprocess(NULL, 0, 0);
    g_test_trap_assert_passed();
    g_test_trap_assert_stderr("*warning: short-form boolean option 'server' deprecated\n"
                              "Please use server=on instead\n"
                              "*warning: short-form boolean option 'nowait' deprecated\n"
                              "Please use wait=off instead\n"
                              "*warning: short-form boolean option 'nodelay' deprecated\n"
                              "Please use nodelay=on instead\n");
    /* Three warnings, none from the legacy parse. */
    g_test_trap_assert_stderr_unmatched("*deprecated*deprecated*deprecated*deprecated*");
}

static void test_parse_implied_key(void)
{
    g_autoptr(QemuOpts) a = parse_ok("kvm", "accel");
    g_autoptr(QemuOpts) b = parse_ok("accel=tcg", "accel");
    g_autoptr(QemuOpts) c = parse_ok("kvm,accel=tcg", "accel");

    g_assert_cmpstr(qemu_opt_get(a, "accel"), ==, "kvm");
    g_assert_cmpuint(qemu_opts_count(a), ==, 1);
    /* Given explicitly, it is an ordinary key. */
    g_assert_cmpstr(qemu_opt_get(b, "accel"), ==, "tcg");
    g_assert_cmpstr(qemu_opt_get(c, "accel"), ==, "tcg");
    g_assert_cmpuint(qemu_opts_count(c), ==, 1);
}

static void test_parse_duplicates(void)
{
    g_autoptr(QemuOpts) opts = parse_ok("size=1G,id=a,size=2G,id=b,x=1", NULL);

    g_assert_cmpuint(qemu_opts_count(opts), ==, 3);
    g_assert_cmpstr(qemu_opt_get(opts, "size"), ==, "2G");
    g_assert_cmpstr(qemu_opt_get(opts, "id"), ==, "b");
    /* Position of first appearance is kept. */
    g_assert_cmpstr(qemu_opts_nth(opts, 0)->name, ==, "size");
    g_assert_cmpstr(qemu_opts_nth(opts, 1)->name, ==, "id");
    g_assert_cmpstr(qemu_opts_nth(opts, 2)->name, ==, "x");
}

static void test_get_all_repeats(void)
{
    g_autoptr(QemuOpts) opts =
        parse_ok("user,id=n0,hostfwd=udp::1-:7,hostfwd=tcp::2-:22,,x", "type");
    g_auto(GStrv) fwd = qemu_opt_get_all(opts, "hostfwd");
    g_auto(GStrv) none = qemu_opt_get_all(opts, "nope");
    g_auto(GStrv) after_set = NULL;

    g_assert_cmpuint(g_strv_length(fwd), ==, 2);
    g_assert_cmpstr(fwd[0], ==, "udp::1-:7");
    g_assert_cmpstr(fwd[1], ==, "tcp::2-:22,x");
    g_assert_cmpstr(qemu_opt_get(opts, "hostfwd"), ==, "tcp::2-:22,x");
    g_assert_cmpuint(g_strv_length(none), ==, 0);
    /* A programmatic set replaces the repeats too. */
    qemu_opt_set(opts, "hostfwd", "udp::3-:7");
    after_set = qemu_opt_get_all(opts, "hostfwd");
    g_assert_cmpuint(g_strv_length(after_set), ==, 1);
    g_assert_cmpstr(after_set[0], ==, "udp::3-:7");
}

static void test_parse_empty(void)
{
    g_autoptr(QemuOpts) a = parse_ok("", NULL);
    g_autoptr(QemuOpts) b = parse_ok("", "path");
    g_autoptr(QemuOpts) c = parse_ok(NULL, NULL);

    g_assert_cmpuint(qemu_opts_count(a), ==, 0);
    g_assert_cmpuint(qemu_opts_count(b), ==, 0);
    g_assert_cmpuint(qemu_opts_count(c), ==, 0);
    g_assert_null(qemu_opt_get(b, "path"));
}

static void test_parse_errors(void)
{
    parse_fail("=x", NULL, "Invalid parameter ''");
    parse_fail("a=1,=x", NULL, "Invalid parameter ''");
    parse_fail(",a=1", NULL, "Invalid parameter ''");
    parse_fail(",a=1", "path", "Invalid parameter ''");

    /* NULL errp: failure is still reported by the return value. */
    g_assert_null(qemu_opts_parse("=x", NULL, NULL));
}

static void test_get_bool(void)
{
    g_autoptr(QemuOpts) opts =
        parse_ok("a=on,b=off,c=yes,d=no,e=true,f=false,g=1,h=", NULL);
    static const struct {
        const char *name;
        bool val;
    } good[] = {
        { "a", true }, { "b", false }, { "c", true },
        { "d", false }, { "e", true }, { "f", false },
    };
    Error *err = NULL;
    bool v;
    size_t i;

    for (i = 0; i < ARRAY_SIZE(good); i++) {
        v = !good[i].val;
        g_assert_true(qemu_opt_get_bool(opts, good[i].name, !good[i].val, &v,
                                        &error_abort));
        g_assert_true(v == good[i].val);
    }

    /* Absent: the default. */
    v = false;
    g_assert_true(qemu_opt_get_bool(opts, "missing", true, &v, &error_abort));
    g_assert_true(v);

    v = true;
    g_assert_false(qemu_opt_get_bool(opts, "g", false, &v, &err));
    g_assert_true(v);   /* untouched on error */
    g_assert_cmpstr(error_get_pretty(err), ==,
                    "Parameter 'g' expects 'on' or 'off'");
    error_free_or_abort(&err);
    g_assert_false(qemu_opt_get_bool(opts, "h", false, &v, &err));
    g_assert_cmpstr(error_get_pretty(err), ==,
                    "Parameter 'h' expects 'on' or 'off'");
    error_free_or_abort(&err);
}

static void test_get_number(void)
{
    g_autoptr(QemuOpts) opts =
        parse_ok("a=4096,b=0x10,c=010,d=-1,e=12k,f=,g=18446744073709551616,"
                 "h=18446744073709551615", NULL);
    Error *err = NULL;
    uint64_t n;

    g_assert_true(qemu_opt_get_number(opts, "a", 0, &n, &error_abort));
    g_assert_cmpuint(n, ==, 4096);
    g_assert_true(qemu_opt_get_number(opts, "b", 0, &n, &error_abort));
    g_assert_cmpuint(n, ==, 16);
    g_assert_true(qemu_opt_get_number(opts, "c", 0, &n, &error_abort));
    g_assert_cmpuint(n, ==, 8);
    g_assert_true(qemu_opt_get_number(opts, "h", 0, &n, &error_abort));
    g_assert_cmpuint(n, ==, UINT64_MAX);
    g_assert_true(qemu_opt_get_number(opts, "missing", 77, &n, &error_abort));
    g_assert_cmpuint(n, ==, 77);

    n = 5;
    g_assert_false(qemu_opt_get_number(opts, "d", 0, &n, &err));
    g_assert_cmpuint(n, ==, 5);
    g_assert_cmpstr(error_get_pretty(err), ==,
                    "Parameter 'd' expects a number");
    error_free_or_abort(&err);
    g_assert_false(qemu_opt_get_number(opts, "e", 0, &n, &err));
    g_assert_cmpstr(error_get_pretty(err), ==,
                    "Parameter 'e' expects a number");
    error_free_or_abort(&err);
    g_assert_false(qemu_opt_get_number(opts, "f", 0, &n, &err));
    error_free_or_abort(&err);
    g_assert_false(qemu_opt_get_number(opts, "g", 0, &n, &err));
    g_assert_cmpstr(error_get_pretty(err), ==,
                    "Value '18446744073709551616' is too large "
                    "for parameter 'g'");
    error_free_or_abort(&err);
}

static void test_get_size(void)
{
    g_autoptr(QemuOpts) opts =
        parse_ok("size=1G,b=4096,c=1.5M,d=-1,e=1X,f=,g=16E,h=1.5", NULL);
    Error *err = NULL;
    uint64_t n;

    g_assert_true(qemu_opt_get_size(opts, "size", 0, &n, &error_abort));
    g_assert_cmpuint(n, ==, GiB);
    g_assert_true(qemu_opt_get_size(opts, "b", 0, &n, &error_abort));
    g_assert_cmpuint(n, ==, 4096);
    g_assert_true(qemu_opt_get_size(opts, "c", 0, &n, &error_abort));
    g_assert_cmpuint(n, ==, MiB + MiB / 2);
    g_assert_true(qemu_opt_get_size(opts, "missing", 128 * MiB, &n,
                                    &error_abort));
    g_assert_cmpuint(n, ==, 128 * MiB);

    n = 3;
    g_assert_false(qemu_opt_get_size(opts, "d", 0, &n, &err));
    g_assert_cmpuint(n, ==, 3);
    g_assert_cmpstr(error_get_pretty(err), ==,
                    "Parameter 'd' expects a non-negative number below 2^64");
    error_free_or_abort(&err);
    g_assert_false(qemu_opt_get_size(opts, "e", 0, &n, &err));
    g_assert_cmpstr(error_get_pretty(err), ==,
                    "Parameter 'e' expects a non-negative number below 2^64");
    error_free_or_abort(&err);
    g_assert_false(qemu_opt_get_size(opts, "f", 0, &n, &err));
    error_free_or_abort(&err);
    g_assert_false(qemu_opt_get_size(opts, "h", 0, &n, &err));
    error_free_or_abort(&err);
    g_assert_false(qemu_opt_get_size(opts, "g", 0, &n, &err));
    g_assert_cmpstr(error_get_pretty(err), ==,
                    "Value '16E' is out of range for parameter 'g'");
    error_free_or_abort(&err);
}

static void test_set(void)
{
    g_autoptr(QemuOpts) opts = qemu_opts_new();

    g_assert_cmpuint(qemu_opts_count(opts), ==, 0);
    qemu_opt_set(opts, "id", "a");
    qemu_opt_set(opts, "size", "1G");
    qemu_opt_set(opts, "id", "b");
    g_assert_cmpuint(qemu_opts_count(opts), ==, 2);
    g_assert_cmpstr(qemu_opt_get(opts, "id"), ==, "b");
    g_assert_cmpstr(qemu_opts_nth(opts, 0)->name, ==, "id");
    qemu_opts_del(NULL);
}

static int collect(void *opaque, const char *name, const char *value,
                   Error **errp)
{
    GString *s = opaque;

    g_string_append_printf(s, "%s=%s;", name, value);
    if (g_str_equal(name, "stop")) {
        error_setg(errp, "stopped at '%s'", value);
        return -1;
    }
    return 0;
}

static void test_foreach(void)
{
    g_autoptr(QemuOpts) a = parse_ok("x,b=2,a=1", "first");
    g_autoptr(QemuOpts) b = parse_ok("a=1,stop=here,c=3", NULL);
    g_autoptr(GString) s = g_string_new(NULL);
    Error *err = NULL;

    g_assert_cmpint(qemu_opt_foreach(a, collect, s, &error_abort), ==, 0);
    g_assert_cmpstr(s->str, ==, "first=x;b=2;a=1;");

    g_string_truncate(s, 0);
    g_assert_cmpint(qemu_opt_foreach(b, collect, s, &err), ==, -1);
    g_assert_cmpstr(s->str, ==, "a=1;stop=here;");
    g_assert_cmpstr(error_get_pretty(err), ==, "stopped at 'here'");
    error_free(err);
}

static void test_check_known(void)
{
    static const char *const known[] = {
        "qom-type", "id", "size", "share", NULL,
    };
    static const char *const none[] = { NULL };
    g_autoptr(QemuOpts) good =
        parse_ok("memory-backend-ram,id=m0,size=1G,share=on", "qom-type");
    g_autoptr(QemuOpts) bad =
        parse_ok("memory-backend-ram,id=m0,foo=1,bar=2", "qom-type");
    g_autoptr(QemuOpts) empty = parse_ok("", NULL);
    Error *err = NULL;

    g_assert_true(qemu_opts_check_known(good, known, &error_abort));
    g_assert_false(qemu_opts_check_known(bad, known, &err));
    /* The first unknown one is named. */
    g_assert_cmpstr(error_get_pretty(err), ==, "Invalid parameter 'foo'");
    error_free_or_abort(&err);
    g_assert_false(qemu_opts_check_known(good, none, &err));
    g_assert_cmpstr(error_get_pretty(err), ==, "Invalid parameter 'qom-type'");
    error_free_or_abort(&err);
    g_assert_false(qemu_opts_check_known(good, NULL, NULL));
    g_assert_true(qemu_opts_check_known(empty, NULL, &error_abort));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/option/parse/object", test_parse_object);
    g_test_add_func("/option/parse/accel-qmp", test_parse_accel_qmp);
    g_test_add_func("/option/parse/escaped-comma", test_parse_escaped_comma);
    g_test_add_func("/option/parse/values", test_parse_values);
    g_test_add_func("/option/parse/bare-flag", test_parse_bare_flag);
    g_test_add_func("/option/parse/implied-key", test_parse_implied_key);
    g_test_add_func("/option/parse/short-form", test_parse_short_form);
    g_test_add_func("/option/parse/short-form-warning", test_parse_short_form_warning);
    g_test_add_func("/option/parse/keyval", test_parse_keyval_refuses_short_form);
    g_test_add_func("/option/parse/duplicates", test_parse_duplicates);
    g_test_add_func("/option/get-all", test_get_all_repeats);
    g_test_add_func("/option/parse/empty", test_parse_empty);
    g_test_add_func("/option/parse/errors", test_parse_errors);
    g_test_add_func("/option/get-bool", test_get_bool);
    g_test_add_func("/option/get-number", test_get_number);
    g_test_add_func("/option/get-size", test_get_size);
    g_test_add_func("/option/set", test_set);
    g_test_add_func("/option/foreach", test_foreach);
    g_test_add_func("/option/check-known", test_check_known);
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Parsing of "key=value,..." option strings (-object, -accel, -qmp, ...)
 * into an ordered set with one entry per key, and typed getters that
 * report errors with QEMU's wording.
 */
#include "qemu/osdep.h"
#include "qemu/option.h"
#include "qemu/cutils.h"
#include "qapi/error.h"

struct QemuOpts {
    GArray *opts;   /* of QemuOpt, in order of first appearance */
    GArray *given;  /* of QemuOpt: every element as given, repeats included */
};

static void qemu_opt_clear(gpointer data)
{
    QemuOpt *opt = data;

    g_free(opt->name);
    g_free(opt->value);
}

QemuOpts *qemu_opts_new(void)
{
    QemuOpts *opts = g_new0(QemuOpts, 1);

    opts->opts = g_array_new(FALSE, TRUE, sizeof(QemuOpt));
    g_array_set_clear_func(opts->opts, qemu_opt_clear);
    opts->given = g_array_new(FALSE, TRUE, sizeof(QemuOpt));
    g_array_set_clear_func(opts->given, qemu_opt_clear);
    return opts;
}

void qemu_opts_del(QemuOpts *opts)
{
    if (!opts) {
        return;
    }
    g_array_free(opts->opts, TRUE);
    g_array_free(opts->given, TRUE);
    g_free(opts);
}

static QemuOpt *qemu_opt_find(QemuOpts *opts, const char *name)
{
    guint i;

    for (i = 0; i < opts->opts->len; i++) {
        QemuOpt *opt = &g_array_index(opts->opts, QemuOpt, i);

        if (g_str_equal(opt->name, name)) {
            return opt;
        }
    }
    return NULL;
}

/* Records one element as given, for qemu_opt_get_all(). */
static void qemu_opt_record(QemuOpts *opts, const char *name, const char *value)
{
    QemuOpt given = { g_strdup(name), g_strdup(value) };

    g_array_append_val(opts->given, given);
}

/* Sets @name to @value; the last value wins. */
static void qemu_opt_store(QemuOpts *opts, const char *name, const char *value)
{
    QemuOpt *opt = qemu_opt_find(opts, name);
    QemuOpt new_opt;

    if (opt) {
        g_free(opt->value);
        opt->value = g_strdup(value);
        return;
    }
    new_opt.name = g_strdup(name);
    new_opt.value = g_strdup(value);
    g_array_append_val(opts->opts, new_opt);
}

void qemu_opt_set(QemuOpts *opts, const char *name, const char *value)
{
    /* A programmatic set replaces every value given before, repeats too. */
    for (guint i = opts->given->len; i-- > 0;) {
        if (g_str_equal(g_array_index(opts->given, QemuOpt, i).name, name)) {
            g_array_remove_index(opts->given, i);
        }
    }
    qemu_opt_store(opts, name, value);
    qemu_opt_record(opts, name, value);
}

/*
 * Cut the next element out of *pp: up to a ',' that is not part of a
 * ",," escape (each ",," becomes one ','), or the end of the string.
 * *pp is left just past the separating comma.
 */
static char *next_element(const char **pp)
{
    const char *p = *pp;
    GString *elem = g_string_new(NULL);

    while (*p) {
        if (*p == ',') {
            if (p[1] != ',') {
                p++;
                break;
            }
            p++;
        }
        g_string_append_c(elem, *p++);
    }
    *pp = p;
    return g_string_free(elem, FALSE);
}

/*
 * Keys that begin with "no" but are not a negation: their short form
 * "nodelay" means nodelay=on, not delay=off. A new key beginning with
 * "no" must be listed here, or its short form turns into the wrong key.
 */
static const char *const no_prefixed_keys[] = { "nodelay", NULL };

/*
 * QEMU's short-form boolean, as 7.2 reads it: "server" is server=on and
 * "nowait" is wait=off (not nowait=on, which no parser reads: the bug
 * that kept wait on and blocked start-up on "-qmp unix:S,server,nowait").
 */
static void short_form_bool(const char *elem, const char **name, const char **value)
{
    *name = elem;
    *value = "on";
    if (g_str_has_prefix(elem, "no") && elem[2]) {
        for (const char *const *k = no_prefixed_keys; *k; k++) {
            if (g_str_equal(*k, elem)) {
                return;
            }
        }
        *name = elem + 2;
        *value = "off";
    }
}

/* What an element without '=' (past the implied key) means. */
typedef enum ShortForm {
    SHORT_WARN,                 /* a short-form boolean, with QEMU's warning */
    SHORT_QUIET,                /* the same, silently (legacy chardev specs) */
    SHORT_REFUSE,               /* an error (QEMU's keyval options) */
} ShortForm;

static QemuOpts *opts_parse(const char *params, const char *implied_key, ShortForm mode,
                            Error **errp)
{
    g_autoptr(QemuOpts) opts = qemu_opts_new();
    const char *p = params ? params : "";
    bool first = true;

    while (*p) {
        g_autofree char *elem = next_element(&p);
        char *eq = strchr(elem, '=');
        const char *name = elem;
        const char *value;

        if (eq) {
            *eq = '\0';
            value = eq + 1;
        } else if (first && implied_key && *elem) {
            name = implied_key;
            value = elem;
        } else if (*elem && mode == SHORT_REFUSE) {
            error_setg(errp, "Expected '=' after parameter '%s'", elem);
            return NULL;
        } else if (*elem) {
            short_form_bool(elem, &name, &value);
            if (mode == SHORT_WARN) {
                Error *w = NULL;

                error_setg(&w, "short-form boolean option '%s' deprecated", elem);
                error_append_hint(&w, "Please use %s=%s instead\n", name, value);
                warn_report_err(w);
            }
        } else {
            value = "on";
        }
        if (!*name) {
            error_setg(errp, "Invalid parameter ''");
            return NULL;
        }
        qemu_opt_store(opts, name, value);
        qemu_opt_record(opts, name, value);
        first = false;
    }
    return g_steal_pointer(&opts);
}

QemuOpts *qemu_opts_parse(const char *params, const char *implied_key,
                          Error **errp)
{
    return opts_parse(params, implied_key, SHORT_WARN, errp);
}

QemuOpts *qemu_opts_parse_legacy(const char *params, const char *implied_key,
                                 Error **errp)
{
    return opts_parse(params, implied_key, SHORT_QUIET, errp);
}

QemuOpts *qemu_opts_parse_keyval(const char *params, const char *implied_key,
                                 Error **errp)
{
    return opts_parse(params, implied_key, SHORT_REFUSE, errp);
}

const char *qemu_opt_get(QemuOpts *opts, const char *name)
{
    QemuOpt *opt = qemu_opt_find(opts, name);

    return opt ? opt->value : NULL;
}

char **qemu_opt_get_all(QemuOpts *opts, const char *name)
{
    GPtrArray *values = g_ptr_array_new();

    for (guint i = 0; i < opts->given->len; i++) {
        QemuOpt *opt = &g_array_index(opts->given, QemuOpt, i);

        if (g_str_equal(opt->name, name)) {
            g_ptr_array_add(values, g_strdup(opt->value));
        }
    }
    g_ptr_array_add(values, NULL);
    return (char **)g_ptr_array_free(values, FALSE);
}

bool qemu_opt_has(QemuOpts *opts, const char *name)
{
    return qemu_opt_find(opts, name) != NULL;
}

bool qemu_opt_get_bool(QemuOpts *opts, const char *name, bool def, bool *out,
                       Error **errp)
{
    const char *value = qemu_opt_get(opts, name);

    if (!value) {
        *out = def;
        return true;
    }
    if (!qemu_parse_bool(value, out)) {
        error_setg(errp, "Parameter '%s' expects 'on' or 'off'", name);
        return false;
    }
    return true;
}

bool qemu_opt_get_number(QemuOpts *opts, const char *name, uint64_t def,
                         uint64_t *out, Error **errp)
{
    const char *value = qemu_opt_get(opts, name);
    uint64_t n;
    int ret;

    if (!value) {
        *out = def;
        return true;
    }
    ret = qemu_strtou64(value, NULL, 0, &n);
    if (ret == -ERANGE) {
        error_setg(errp, "Value '%s' is too large for parameter '%s'",
                   value, name);
        return false;
    }
    if (ret < 0) {
        error_setg(errp, "Parameter '%s' expects a number", name);
        return false;
    }
    *out = n;
    return true;
}

bool qemu_opt_get_size(QemuOpts *opts, const char *name, uint64_t def,
                       uint64_t *out, Error **errp)
{
    const char *value = qemu_opt_get(opts, name);
    uint64_t n;
    int ret;

    if (!value) {
        *out = def;
        return true;
    }
    ret = qemu_strtosz(value, NULL, &n);
    if (ret == -ERANGE) {
        error_setg(errp, "Value '%s' is out of range for parameter '%s'",
                   value, name);
        return false;
    }
    if (ret < 0) {
        error_setg(errp, "Parameter '%s' expects a non-negative number "
                   "below 2^64", name);
        error_append_hint(errp, "Optional suffix k, M, G, T, P or E means "
                          "kilo-, mega-, giga-, tera-, peta-\n"
                          "and exabytes, respectively.\n");
        return false;
    }
    *out = n;
    return true;
}

size_t qemu_opts_count(const QemuOpts *opts)
{
    return opts->opts->len;
}

const QemuOpt *qemu_opts_nth(const QemuOpts *opts, size_t i)
{
    if (i >= opts->opts->len) {
        return NULL;
    }
    return &g_array_index(opts->opts, QemuOpt, i);
}

int qemu_opt_foreach(QemuOpts *opts, QemuOptLoopFunc func, void *opaque,
                     Error **errp)
{
    guint i;

    for (i = 0; i < opts->opts->len; i++) {
        QemuOpt *opt = &g_array_index(opts->opts, QemuOpt, i);
        int ret = func(opaque, opt->name, opt->value, errp);

        if (ret) {
            return ret;
        }
    }
    return 0;
}

static bool name_is_known(const char *const *known, const char *name)
{
    for (; known && *known; known++) {
        if (g_str_equal(*known, name)) {
            return true;
        }
    }
    return false;
}

bool qemu_opts_check_known(QemuOpts *opts, const char *const *known,
                           Error **errp)
{
    guint i;

    for (i = 0; i < opts->opts->len; i++) {
        QemuOpt *opt = &g_array_index(opts->opts, QemuOpt, i);

        if (!name_is_known(known, opt->name)) {
            error_setg(errp, "Invalid parameter '%s'", opt->name);
            return false;
        }
    }
    return true;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Error objects for the control plane and QEMU-style reporting on stderr.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"

struct Error {
    char *msg;
    GString *hint;
    ErrorClass cls;
    const char *src;
    int line;
};

Error *error_fatal;
Error *error_abort;

static char *progname;
/* Only the main thread processes options, so no lock. */
static char *cur_loc;
static GMutex report_lock;

static void error_handle_special(Error **errp, Error *err)
{
    if (errp == &error_abort) {
        fprintf(stderr, "Unexpected error in %s:%d:\n", err->src, err->line);
        error_report_err(err);
        abort();
    }
    if (errp == &error_fatal) {
        error_report_err(err);
        exit(1);
    }
}

static void error_setv(Error **errp, ErrorClass cls, const char *src, int line,
                       const char *fmt, va_list ap, const char *suffix)
{
    Error *err;

    if (!errp) {
        return;
    }
    assert(*errp == NULL || errp == &error_fatal || errp == &error_abort);
    err = g_new0(Error, 1);
    err->msg = g_strdup_vprintf(fmt, ap);
    if (suffix) {
        char *m = g_strdup_printf("%s: %s", err->msg, suffix);
        g_free(err->msg);
        err->msg = m;
    }
    err->cls = cls;
    err->src = src;
    err->line = line;
    error_handle_special(errp, err);
    *errp = err;
}

void error_setg_internal(Error **errp, ErrorClass cls, const char *file, int line,
                         const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    error_setv(errp, cls, file, line, fmt, ap, NULL);
    va_end(ap);
}

void error_setg_errno_internal(Error **errp, int os_errno, const char *file, int line,
                               const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    error_setv(errp, ERROR_CLASS_GENERIC_ERROR, file, line, fmt, ap,
               os_errno ? g_strerror(os_errno) : NULL);
    va_end(ap);
}

void error_propagate(Error **dst_errp, Error *local_err)
{
    if (!local_err) {
        return;
    }
    error_handle_special(dst_errp, local_err);
    if (dst_errp && !*dst_errp) {
        *dst_errp = local_err;
    } else {
        error_free(local_err);
    }
}

void error_prepend(Error **errp, const char *fmt, ...)
{
    va_list ap;
    char *pre, *m;

    if (!errp || !*errp) {
        return;
    }
    va_start(ap, fmt);
    pre = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    m = g_strconcat(pre, (*errp)->msg, NULL);
    g_free(pre);
    g_free((*errp)->msg);
    (*errp)->msg = m;
}

void error_append_hint(Error **errp, const char *fmt, ...)
{
    va_list ap;

    if (!errp || !*errp) {
        return;
    }
    if (!(*errp)->hint) {
        (*errp)->hint = g_string_new(NULL);
    }
    va_start(ap, fmt);
    g_string_append_vprintf((*errp)->hint, fmt, ap);
    va_end(ap);
}

const char *error_get_pretty(const Error *err)
{
    return err->msg;
}

ErrorClass error_get_class(const Error *err)
{
    return err->cls;
}

const char *error_class_name(ErrorClass cls)
{
    static const char *const names[] = {
        [ERROR_CLASS_GENERIC_ERROR] = "GenericError",
        [ERROR_CLASS_COMMAND_NOT_FOUND] = "CommandNotFound",
        [ERROR_CLASS_DEVICE_NOT_ACTIVE] = "DeviceNotActive",
        [ERROR_CLASS_DEVICE_NOT_FOUND] = "DeviceNotFound",
        [ERROR_CLASS_KVM_MISSING_CAP] = "KVMMissingCap",
    };
    return cls < ARRAY_SIZE(names) ? names[cls] : "GenericError";
}

Error *error_copy(const Error *err)
{
    Error *e = g_new0(Error, 1);

    e->msg = g_strdup(err->msg);
    e->cls = err->cls;
    e->src = err->src;
    e->line = err->line;
    if (err->hint) {
        e->hint = g_string_new(err->hint->str);
    }
    return e;
}

void error_free(Error *err)
{
    if (err) {
        g_free(err->msg);
        if (err->hint) {
            g_string_free(err->hint, TRUE);
        }
        g_free(err);
    }
}

void error_free_or_abort(Error **errp)
{
    assert(errp && *errp);
    error_free(*errp);
    *errp = NULL;
}

/* -msg timestamp=on: set once while parsing the command line. */
static bool report_timestamps;

void error_set_timestamps(bool on)
{
    report_timestamps = on;
}

static void vreport(const char *kind, const char *fmt, va_list ap)
{
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    g_autofree char *stamp = NULL;

    if (report_timestamps) {
        /* QEMU's form: the wall clock in ISO 8601, UTC, to the microsecond. */
        g_autoptr(GDateTime) now = g_date_time_new_now_utc();

        stamp = g_date_time_format_iso8601(now);
    }
    g_mutex_lock(&report_lock);
    fprintf(stderr, "%s%s%s: %s%s%s%s\n", stamp ? stamp : "", stamp ? " " : "",
            error_get_progname(), cur_loc ? cur_loc : "", cur_loc ? ": " : "", kind, msg);
    fflush(stderr);
    g_mutex_unlock(&report_lock);
}

void error_vreport(const char *fmt, va_list ap)
{
    vreport("", fmt, ap);
}

void error_report(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vreport("", fmt, ap);
    va_end(ap);
}

void warn_report(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vreport("warning: ", fmt, ap);
    va_end(ap);
}

void info_report(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vreport("info: ", fmt, ap);
    va_end(ap);
}

void error_report_err(Error *err)
{
    error_report("%s", err->msg);
    if (err->hint) {
        fputs(err->hint->str, stderr);
    }
    error_free(err);
}

void warn_report_err(Error *err)
{
    warn_report("%s", err->msg);
    if (err->hint) {
        fputs(err->hint->str, stderr);
    }
    error_free(err);
}

void error_set_progname(const char *argv0)
{
    const char *slash = strrchr(argv0, '/');

    g_free(progname);
    progname = g_strdup(slash ? slash + 1 : argv0);
}

const char *error_get_progname(void)
{
    return progname ? progname : "qemu-system-x86_64";
}

void loc_set_cmdline(const char *opt, const char *arg)
{
    g_free(cur_loc);
    cur_loc = arg ? g_strdup_printf("-%s %s", opt, arg) : g_strdup_printf("-%s", opt);
}

void loc_clear(void)
{
    g_free(cur_loc);
    cur_loc = NULL;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Error reporting for the control plane (option parsing, setup, QMP/HMP).
 *
 * Rules (as in QEMU): a function taking Error **errp returns success
 * (true / non-NULL / >= 0) and leaves *errp alone on success; on failure it
 * sets *errp exactly once and returns failure. Never both report and return
 * an error. Hot paths use 0/-errno instead; streams keep a sticky error.
 */
#ifndef QAPI_ERROR_H
#define QAPI_ERROR_H

typedef enum ErrorClass {
    ERROR_CLASS_GENERIC_ERROR,
    ERROR_CLASS_COMMAND_NOT_FOUND,
    ERROR_CLASS_DEVICE_NOT_ACTIVE,
    ERROR_CLASS_DEVICE_NOT_FOUND,
    ERROR_CLASS_KVM_MISSING_CAP,
} ErrorClass;

/* Pass as errp to exit(1) on error after reporting it / abort on error. */
extern Error *error_fatal;
extern Error *error_abort;
#define ERRP_FATAL (&error_fatal)
#define ERRP_ABORT (&error_abort)

void error_setg_internal(Error **errp, ErrorClass cls, const char *file, int line,
                         const char *fmt, ...) G_GNUC_PRINTF(5, 6);
void error_setg_errno_internal(Error **errp, int os_errno, const char *file, int line,
                               const char *fmt, ...) G_GNUC_PRINTF(5, 6);

#define error_setg(errp, ...) \
    error_setg_internal((errp), ERROR_CLASS_GENERIC_ERROR, __FILE__, __LINE__, __VA_ARGS__)
#define error_set(errp, cls, ...) \
    error_setg_internal((errp), (cls), __FILE__, __LINE__, __VA_ARGS__)
/* Appends ": strerror(os_errno)" like QEMU's error_setg_errno(). */
#define error_setg_errno(errp, os_errno, ...) \
    error_setg_errno_internal((errp), (os_errno), __FILE__, __LINE__, __VA_ARGS__)

/* Moves local_err into *dst_errp (or reports/aborts for the special ones). */
void error_propagate(Error **dst_errp, Error *local_err);
/* Prefixes the message of *errp, if set. */
void error_prepend(Error **errp, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* Appends a hint printed on a separate line by error_report_err(). */
void error_append_hint(Error **errp, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

const char *error_get_pretty(const Error *err);
ErrorClass error_get_class(const Error *err);
const char *error_class_name(ErrorClass cls);
Error *error_copy(const Error *err);
void error_free(Error *err);
void error_free_or_abort(Error **errp);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Error, error_free)

/* Reports err with error_report() and frees it. */
void error_report_err(Error *err);
void warn_report_err(Error *err);

/*
 * Human-facing messages on stderr: "qemu-system-x86_64: [location: ]msg".
 * The location is the command-line option being processed, if any.
 */
void error_report(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
void warn_report(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
void info_report(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
void error_vreport(const char *fmt, va_list ap) G_GNUC_PRINTF(1, 0);

void error_set_progname(const char *argv0);
const char *error_get_progname(void);
/* -msg timestamp=on: every report starts with the time (QEMU's form). */
void error_set_timestamps(bool on);
/* Location prefix for messages while one option is processed ("-m 2X"). */
void loc_set_cmdline(const char *opt, const char *arg);
void loc_clear(void);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMU-style "key=value,key2=value2" option strings, as taken by -object,
 * -accel, -qmp, -chardev and friends. A deliberately small replacement for
 * QemuOptsList: parse, look up typed values, reject unknown keys.
 */
#ifndef QEMU_OPTION_H
#define QEMU_OPTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <glib.h>

#include "qemu/typedefs.h"

typedef struct QemuOpt {
    char *name;
    char *value;
} QemuOpt;

/*
 * qemu_opts_parse: split @params into options.
 *
 * Elements are separated by ','; inside an element ",," stands for a
 * literal comma (so "path=/a,,b" is the value "/a,b"). Each element is
 * "name=value" (the value may be empty). An element without '=' is:
 *   - the value of @implied_key when it is the first element and
 *     @implied_key is not NULL ("unix:/tmp/s,server=on" with "path");
 *   - otherwise QEMU's short-form boolean: "name" means name=on and
 *     "noname" means name=off (but "nodelay" is nodelay=on), with QEMU
 *     7.2's deprecation warning on stderr.
 * A trailing ',' is ignored; an empty name ("=x", ",a=1") is an error.
 * When a name repeats, the last value wins and the option keeps the
 * position of its first occurrence. "" parses to an empty set.
 *
 * Returns: the options (free with qemu_opts_del()), or NULL with @errp set.
 */
QemuOpts *qemu_opts_parse(const char *params, const char *implied_key,
                          Error **errp);

/*
 * qemu_opts_parse_legacy: the same without the warning, for the legacy
 * specs of -serial, -qmp and -monitor ("unix:S,server,nowait"), where
 * QEMU 7.2 accepts the short forms silently.
 */
QemuOpts *qemu_opts_parse_legacy(const char *params, const char *implied_key,
                                 Error **errp);

/*
 * qemu_opts_parse_keyval: the same but refusing the short forms ("Expected
 * '=' after parameter 'x'"), as QEMU 7.2 does for the options it parses
 * with keyval: -machine, -smp, -blockdev.
 */
QemuOpts *qemu_opts_parse_keyval(const char *params, const char *implied_key,
                                 Error **errp);

/* qemu_opts_new: an empty set, e.g. to build options programmatically. */
QemuOpts *qemu_opts_new(void);

/* qemu_opts_del: free @opts and every string in it; NULL is fine. */
void qemu_opts_del(QemuOpts *opts);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QemuOpts, qemu_opts_del)

/* qemu_opt_set: add @name or replace its value (last wins, as in parsing). */
void qemu_opt_set(QemuOpts *opts, const char *name, const char *value);

/* qemu_opt_get: the raw value of @name, or NULL when absent. */
const char *qemu_opt_get(QemuOpts *opts, const char *name);

/*
 * qemu_opt_get_all: every value given for @name, in order, for the keys
 * that may repeat (-netdev user's hostfwd=). Returns a NULL-terminated
 * array, empty when @name is absent; free it with g_strfreev().
 */
char **qemu_opt_get_all(QemuOpts *opts, const char *name);

/* qemu_opt_has: whether @name was given at all. */
bool qemu_opt_has(QemuOpts *opts, const char *name);

/*
 * Typed getters. Each stores @def in *out when @name is absent, the parsed
 * value when it is valid, and otherwise sets @errp (QEMU's wording, e.g.
 * "Parameter 'share' expects 'on' or 'off'") and leaves *out alone.
 * Returns: true on success.
 *
 * qemu_opt_get_bool:   on/off, yes/no, true/false
 * qemu_opt_get_number: unsigned integer, decimal, 0x hex or 0 octal
 * qemu_opt_get_size:   qemu_strtosz() syntax ("4096", "1G", "1.5M")
 */
bool qemu_opt_get_bool(QemuOpts *opts, const char *name, bool def, bool *out,
                       Error **errp);
bool qemu_opt_get_number(QemuOpts *opts, const char *name, uint64_t def,
                         uint64_t *out, Error **errp);
bool qemu_opt_get_size(QemuOpts *opts, const char *name, uint64_t def,
                       uint64_t *out, Error **errp);

/* Iteration in order of first appearance: index 0 .. qemu_opts_count() - 1. */
size_t qemu_opts_count(const QemuOpts *opts);
const QemuOpt *qemu_opts_nth(const QemuOpts *opts, size_t i);

/*
 * qemu_opt_foreach: call @func on every option in order, stopping at the
 * first non-zero return value, which is returned (0 if all returned 0).
 */
typedef int (*QemuOptLoopFunc)(void *opaque, const char *name,
                               const char *value, Error **errp);
int qemu_opt_foreach(QemuOpts *opts, QemuOptLoopFunc func, void *opaque,
                     Error **errp);

/*
 * qemu_opts_check_known: fail with "Invalid parameter 'foo'" for the first
 * option whose name is not in the NULL-terminated array @known.
 */
bool qemu_opts_check_known(QemuOpts *opts, const char *const *known,
                           Error **errp);

#endif

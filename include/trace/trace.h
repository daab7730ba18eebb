/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Trace points: one line per event with a wall-clock timestamp (to line up
 * with the guest's output and qemu-mig-kvmstat) and a monotonic one. Off by default;
 * a disabled trace point costs one predictable branch on a global.
 *
 *   -trace file=PATH[,enable=GLOB]   -trace enable=GLOB (to stderr)
 */
#ifndef TRACE_TRACE_H
#define TRACE_TRACE_H

#include <stdbool.h>
#include "qemu/typedefs.h"

/* Set once at startup, read everywhere. */
extern bool trace_active;

bool trace_parse_option(const char *arg, Error **errp);
/* Writes one event line if @event matches the enabled patterns. */
void trace_event_printf(const char *event, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

#define TRACE_EVENT(event, ...) \
    do { \
        if (__builtin_expect(trace_active, 0)) { \
            trace_event_printf(event, __VA_ARGS__); \
        } \
    } while (0)

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Trace output: filtered by glob, written line-buffered to a file or stderr. */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/option.h"
#include "trace/trace.h"

bool trace_active;
static FILE *trace_out;
static GPtrArray *trace_patterns;   /* GPatternSpec*, empty = everything */
static GMutex trace_lock;
static int64_t trace_start_ns;

/* -trace help: TRACE_EVENT_LIST's names, in its order. */
#define TRACE_NAME_(name) #name,
static const char *const trace_event_names[] = { TRACE_EVENT_LIST(TRACE_NAME_) };
#undef TRACE_NAME_

static void trace_list_events(void)
{
    for (size_t i = 0; i < G_N_ELEMENTS(trace_event_names); i++) {
        printf("%s\n", trace_event_names[i]);
    }
}

static bool trace_event_wanted(const char *event)
{
    if (!trace_patterns || !trace_patterns->len) {
        return true;
    }
    for (guint i = 0; i < trace_patterns->len; i++) {
        if (g_pattern_spec_match_string(g_ptr_array_index(trace_patterns, i), event)) {
            return true;
        }
    }
    return false;
}

void trace_event_printf(const char *event, const char *fmt, ...)
{
    struct timespec rt;
    struct tm tm;
    va_list ap;
    int64_t mono;

    if (!trace_event_wanted(event)) {
        return;
    }
    clock_gettime(CLOCK_REALTIME, &rt);
    gmtime_r(&rt.tv_sec, &tm);
    mono = get_clock_ns() - trace_start_ns;
    g_mutex_lock(&trace_lock);
    fprintf(trace_out, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ +%" PRId64 ".%06" PRId64 " %s ",
            tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
            rt.tv_nsec / 1000, mono / 1000000000, (mono / 1000) % 1000000, event);
    va_start(ap, fmt);
    vfprintf(trace_out, fmt, ap);
    va_end(ap);
    fputc('\n', trace_out);
    g_mutex_unlock(&trace_lock);
}

static void trace_add_pattern(const char *pat)
{
    if (!trace_patterns) {
        trace_patterns = g_ptr_array_new();
    }
    g_ptr_array_add(trace_patterns, g_pattern_spec_new(pat));
}

bool trace_parse_option(const char *arg, Error **errp)
{
    static const char *const known[] = { "enable", "file", "events", NULL };
    g_autoptr(QemuOpts) opts = qemu_opts_parse(arg, "enable", errp);
    const char *file, *enable, *events;

    if (!opts || !qemu_opts_check_known(opts, known, errp)) {
        return false;
    }
    if (!g_strcmp0(qemu_opt_get(opts, "enable"), "help")) {
        trace_list_events();
        exit(0);
    }
    file = qemu_opt_get(opts, "file");
    enable = qemu_opt_get(opts, "enable");
    events = qemu_opt_get(opts, "events");
    if (events) {
        g_autofree char *text = NULL;
        g_auto(GStrv) lines = NULL;

        if (!g_file_get_contents(events, &text, NULL, NULL)) {
            error_setg(errp, "cannot read trace events file '%s'", events);
            return false;
        }
        lines = g_strsplit(text, "\n", -1);
        for (int i = 0; lines[i]; i++) {
            g_strstrip(lines[i]);
            if (*lines[i] && lines[i][0] != '#') {
                trace_add_pattern(lines[i]);
            }
        }
    }
    if (enable) {
        trace_add_pattern(enable);
    }
    if (file) {
        FILE *out = fopen(file, "w");
        if (!out) {
            error_setg_errno(errp, errno, "cannot open trace file '%s'", file);
            return false;
        }
        setvbuf(out, NULL, _IOLBF, 0);
        if (trace_out && trace_out != stderr) {
            fclose(trace_out);
        }
        trace_out = out;
    } else if (!trace_out) {
        trace_out = stderr;
    }
    trace_start_ns = get_clock_ns();
    trace_active = true;
    return true;
}

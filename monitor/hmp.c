/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * HMP sessions: line input with readline-style echo, the "(qemu) " prompt,
 * and argument parsing driven by each command's argument spec:
 *
 *   name:s   one word (or "quoted string")   name:S   the rest of the line
 *   name:i   integer (decimal or 0x hex)     name:o   size, bytes by default
 *   name:b   on|off                          name:-f  optional flag -f
 *   name:/   xp-style /FMT                   trailing ? = optional
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands.h"
#include "qemu/cutils.h"
#include "chardev/char.h"
#include "monitor/hmp.h"
#include "monitor-internal.h"
#include "hmp-commands.h"

const char *hmp_arg_str(const HMPArgs *a, const char *name)
{
    for (int i = 0; i < a->n; i++) {
        if (!strcmp(a->args[i].name, name) && a->args[i].present) {
            return a->args[i].str;
        }
    }
    return NULL;
}

int64_t hmp_arg_int(const HMPArgs *a, const char *name, int64_t def)
{
    for (int i = 0; i < a->n; i++) {
        if (!strcmp(a->args[i].name, name) && a->args[i].present) {
            return a->args[i].i;
        }
    }
    return def;
}

bool hmp_arg_bool(const HMPArgs *a, const char *name, bool def)
{
    for (int i = 0; i < a->n; i++) {
        if (!strcmp(a->args[i].name, name) && a->args[i].present) {
            return a->args[i].b;
        }
    }
    return def;
}

bool hmp_arg_has(const HMPArgs *a, const char *name)
{
    for (int i = 0; i < a->n; i++) {
        if (!strcmp(a->args[i].name, name)) {
            return a->args[i].present;
        }
    }
    return false;
}

void hmp_handle_error(Monitor *mon, Error *err)
{
    if (err) {
        monitor_printf(mon, "Error: %s\n", error_get_pretty(err));
        error_free(err);
    }
}

static const char *skip_spaces(const char *p)
{
    while (*p == ' ' || *p == '\t') {
        p++;
    }
    return p;
}

/* Reads one word or "quoted string" at *pp; NULL on a bad quote. */
static char *hmp_get_word(const char **pp)
{
    const char *p = skip_spaces(*pp);
    GString *s = g_string_new(NULL);

    if (*p == '"') {
        p++;
        while (*p && *p != '"') {
            if (*p == '\\' && p[1]) {
                p++;
                switch (*p) {
                case 'n': g_string_append_c(s, '\n'); break;
                case 'r': g_string_append_c(s, '\r'); break;
                default: g_string_append_c(s, *p); break;
                }
            } else {
                g_string_append_c(s, *p);
            }
            p++;
        }
        if (*p != '"') {
            g_string_free(s, TRUE);
            return NULL;
        }
        p++;
    } else {
        while (*p && *p != ' ' && *p != '\t') {
            g_string_append_c(s, *p++);
        }
    }
    *pp = p;
    return g_string_free(s, FALSE);
}

void hmp_args_free(HMPArgs *a)
{
    for (int i = 0; i < a->n; i++) {
        g_free(a->args[i].str);
    }
}

/* Parses @p against @spec into @a; prints the error and returns false if bad. */
static bool hmp_parse_args(Monitor *mon, const HMPCommand *cmd, const char *p, HMPArgs *a)
{
    g_auto(GStrv) specs = g_strsplit(cmd->args_type, ",", -1);

    a->n = 0;
    for (int k = 0; specs[k] && *specs[k]; k++) {
        g_autofree char *name = NULL;
        const char *colon = strchr(specs[k], ':');
        const char *type;
        bool optional;
        HMPArg *arg;

        if (!colon || a->n >= HMP_MAX_ARGS) {
            continue;
        }
        name = g_strndup(specs[k], colon - specs[k]);
        type = colon + 1;
        optional = type[strlen(type) - 1] == '?';
        arg = &a->args[a->n++];
        arg->name = g_intern_string(name);
        p = skip_spaces(p);

        if (type[0] == '-') {
            /* Flag: consume "-x" if it is next. */
            if (p[0] == '-' && p[1] == type[1] && (!p[2] || p[2] == ' ')) {
                arg->b = arg->present = true;
                p += 2;
            }
            continue;
        }
        if (!*p) {
            if (optional) {
                continue;
            }
            monitor_printf(mon, "%s: missing argument '%s'\n", cmd->name, name);
            return false;
        }
        switch (type[0]) {
        case 'S':
            arg->str = g_strdup(p);
            p += strlen(p);
            break;
        case '/':
            if (*p != '/') {
                if (optional) {
                    continue;
                }
                monitor_printf(mon, "%s: expected /FMT\n", cmd->name);
                return false;
            }
            /* fall through */
        case 's':
        case 'F':
            arg->str = hmp_get_word(&p);
            if (!arg->str) {
                monitor_printf(mon, "%s: unterminated string\n", cmd->name);
                return false;
            }
            break;
        case 'i':
        case 'o':
        case 'b': {
            g_autofree char *w = hmp_get_word(&p);
            uint64_t sz;
            int64_t v;

            if (!w) {
                monitor_printf(mon, "%s: unterminated string\n", cmd->name);
                return false;
            }
            if (type[0] == 'b') {
                if (!qemu_parse_bool(w, &arg->b)) {
                    monitor_printf(mon, "%s: expected 'on' or 'off' for '%s'\n", cmd->name, name);
                    return false;
                }
            } else if (type[0] == 'i') {
                if (qemu_strtoi64(w, NULL, 0, &v) < 0) {
                    monitor_printf(mon, "%s: invalid number '%s' for '%s'\n", cmd->name, w, name);
                    return false;
                }
                arg->i = v;
            } else {
                if (qemu_strtosz(w, NULL, &sz) < 0 || sz > INT64_MAX) {
                    monitor_printf(mon, "%s: invalid size '%s' for '%s'\n", cmd->name, w, name);
                    return false;
                }
                arg->i = sz;
            }
            break;
        }
        default:
            monitor_printf(mon, "%s: internal error: bad argument spec\n", cmd->name);
            return false;
        }
        arg->present = true;
    }
    p = skip_spaces(p);
    if (*p) {
        monitor_printf(mon, "%s: extraneous characters at the end of line\n", cmd->name);
        return false;
    }
    return true;
}

static const HMPCommand *hmp_find_cmd(const HMPCommand *table, const char *name)
{
    for (const HMPCommand *c = table; c->name; c++) {
        g_auto(GStrv) aliases = g_strsplit(c->name, "|", -1);
        for (int i = 0; aliases[i]; i++) {
            if (!strcmp(aliases[i], name)) {
                return c;
            }
        }
    }
    return NULL;
}

static void hmp_print_table(Monitor *mon, const HMPCommand *table, const char *prefix)
{
    for (const HMPCommand *c = table; c->name; c++) {
        monitor_printf(mon, "%s%s %s -- %s\n", prefix, c->name, c->params, c->help);
    }
}

void hmp_help_cmd(Monitor *mon, const HMPArgs *args)
{
    const char *name = hmp_arg_str(args, "name");

    if (name && !strcmp(name, "info")) {
        hmp_print_table(mon, hmp_info_cmds, "info ");
    } else if (name) {
        const HMPCommand *c = hmp_find_cmd(hmp_cmds, name);
        if (!c) {
            monitor_printf(mon, "unknown command: '%s'\n", name);
            return;
        }
        monitor_printf(mon, "%s %s -- %s\n", c->name, c->params, c->help);
    } else {
        hmp_print_table(mon, hmp_cmds, "");
    }
}

void hmp_info(Monitor *mon, const HMPArgs *args)
{
    hmp_print_table(mon, hmp_info_cmds, "info ");
}

const HMPCommand *hmp_parse_command(Monitor *mon, const char *cmdline, HMPArgs *args)
{
    const HMPCommand *table = hmp_cmds;
    const char *p = skip_spaces(cmdline);
    const HMPCommand *cmd = NULL;

    /* An optional argument that is absent keeps its zeroes (str NULL, not present). */
    *args = (HMPArgs) { 0 };
    while (*p) {
        g_autofree char *name = hmp_get_word(&p);

        if (!name || !*name) {
            break;
        }
        cmd = hmp_find_cmd(table, name);
        if (!cmd) {
            monitor_printf(mon, "unknown command: '%s%s'\n", table == hmp_info_cmds ? "info " : "",
                           name);
            return NULL;
        }
        if (!cmd->sub || !*skip_spaces(p)) {
            break;
        }
        table = cmd->sub;
    }
    if (!cmd) {
        return NULL;            /* empty line */
    }
    if (!hmp_parse_args(mon, cmd, p, args)) {
        hmp_args_free(args);
        return NULL;
    }
    return cmd;
}

void hmp_run_command(Monitor *mon, const HMPCommand *cmd, HMPArgs *args)
{
    Monitor *old = monitor_set_cur(mon);

    cmd->handler(mon, args);
    monitor_set_cur(old);
    hmp_args_free(args);
}

void hmp_handle_command(Monitor *mon, const char *cmdline)
{
    HMPArgs args;
    const HMPCommand *cmd = hmp_parse_command(mon, cmdline, &args);

    if (cmd) {
        hmp_run_command(mon, cmd, &args);
    }
}

static void hmp_prompt(Monitor *mon)
{
    monitor_write(mon, "(qemu) ", 7);
}

static void hmp_read(void *opaque, const uint8_t *buf, size_t len)
{
    Monitor *mon = opaque;

    for (size_t i = 0; i < len && mon->connected; i++) {
        if (mon->suspended) {
            if (mon->pending->len < HMP_MAX_LINE * 4) {
                g_string_append_len(mon->pending, (const char *)buf + i, len - i);
            }
            return;
        }
        char c = buf[i];
        bool after_cr = mon->last_cr;

        mon->last_cr = c == '\r';
        if (c == '\r' || c == '\n') {
            /* Treat \r\n as one end of line, even when a read splits the pair. */
            if (c == '\n' && after_cr) {
                continue;
            }
            if (mon->echo) {
                monitor_write(mon, "\r\n", 2);
            }
            if (mon->line_overflow) {
                monitor_printf(mon, "command line too long (at most %d characters)\n",
                               HMP_MAX_LINE);
            } else {
                hmp_handle_command(mon, mon->line->str);
            }
            g_string_truncate(mon->line, 0);
            mon->line_overflow = false;
            if (mon->connected && !mon->suspended) {
                hmp_prompt(mon);
            }
        } else if (c == 0x7f || c == 0x08) {
            if (mon->line->len) {
                g_string_truncate(mon->line, mon->line->len - 1);
                if (mon->echo) {
                    monitor_write(mon, "\b \b", 3);
                }
            }
        } else if ((unsigned char)c >= 0x20 || c == '\t') {
            if (mon->line->len >= HMP_MAX_LINE) {
                mon->line_overflow = true;
                continue;
            }
            g_string_append_c(mon->line, c);
            if (mon->echo) {
                monitor_write(mon, &c, 1);
            }
        }
    }
}

bool monitor_suspend(Monitor *mon)
{
    if (mon->qmp || mon->capture || !mon->connected) {
        return false;
    }
    mon->suspended = true;
    return true;
}

void monitor_resume(Monitor *mon)
{
    g_autoptr(GString) pending = NULL;

    if (!mon->suspended) {
        return;
    }
    mon->suspended = false;
    if (!mon->connected) {
        return;
    }
    hmp_prompt(mon);
    pending = mon->pending;
    mon->pending = g_string_new(NULL);
    hmp_read(mon, (const uint8_t *)pending->str, pending->len);
}

static size_t hmp_can_read(void *opaque)
{
    Monitor *mon = opaque;

    /* Stop reading commands while output piles up unread (backpressure). */
    return qemu_chr_out_pending(mon->chr) > 1 * MiB ? 0 : 4096;
}

static void hmp_event(void *opaque, ChardevEvent event)
{
    Monitor *mon = opaque;

    switch (event) {
    case CHR_EVENT_OPENED:
        mon->connected = true;
        mon->last_cr = false;
        g_string_truncate(mon->line, 0);
        monitor_printf(mon, "QEMU %s monitor - type 'help' for more information\n", QEMU_VERSION);
        hmp_prompt(mon);
        break;
    case CHR_EVENT_CLOSED:
        mon->connected = false;
        mon->suspended = false;
        g_string_truncate(mon->pending, 0);
        break;
    case CHR_EVENT_MUX_IN:
        /* Back from the guest's console (C-a c): QEMU shows the prompt again. */
        hmp_prompt(mon);
        break;
    case CHR_EVENT_MUX_OUT:
        monitor_printf(mon, "\n");
        break;
    }
}

void monitor_hmp_init(Monitor *mon)
{
    CharFrontend fe = {
        .can_read = hmp_can_read,
        .read = hmp_read,
        .event = hmp_event,
        .opaque = mon,
    };

    mon->line = g_string_new(NULL);
    mon->pending = g_string_new(NULL);
    /* A terminal in cooked mode echoes for us; sockets and pipes get readline's echo. */
    mon->echo = !(qemu_chr_is_stdio(mon->chr) && isatty(0));
    qemu_chr_fe_set_handlers(mon->chr, &fe);
}

char *qmp_human_monitor_command(const char *command_line, bool has_cpu_index,
                                int64_t cpu_index, Error **errp)
{
    Monitor mon = { .qmp = false, .connected = true };

    mon.capture = g_string_new(NULL);
    hmp_handle_command(&mon, command_line);
    return g_string_free(mon.capture, FALSE);
}

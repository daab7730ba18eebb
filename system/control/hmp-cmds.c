/* SPDX-License-Identifier: GPL-2.0-or-later */
/* HMP handlers for system/ commands: call the qmp_* function, print like QEMU. */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands.h"
#include "monitor/hmp.h"
#include "monitor/monitor.h"
#include "migration/misc.h"
#include "system/cpus.h"
#include "system/memory.h"

void hmp_info_status(Monitor *mon, const HMPArgs *args)
{
    g_autoptr(StatusInfo) info = qmp_query_status(NULL);

    monitor_printf(mon, "VM status: %s", info->running ? "running" : "paused");
    if (!info->running && info->status != RUN_STATE_PAUSED) {
        monitor_printf(mon, " (%s)", RunState_str(info->status));
    }
    monitor_printf(mon, "\n");
}

void hmp_info_version(Monitor *mon, const HMPArgs *args)
{
    g_autoptr(VersionInfo) info = qmp_query_version(NULL);

    monitor_printf(mon, "%" PRId64 ".%" PRId64 ".%" PRId64 "%s%s\n", info->qemu->major,
                   info->qemu->minor, info->qemu->micro, info->package[0] ? " " : "",
                   info->package);
}

void hmp_info_kvm(Monitor *mon, const HMPArgs *args)
{
    g_autoptr(KvmInfo) info = qmp_query_kvm(NULL);

    monitor_printf(mon, "kvm support: %s\n",
                   info->present ? (info->enabled ? "enabled" : "disabled") : "not compiled");
}

void hmp_info_name(Monitor *mon, const HMPArgs *args)
{
    g_autoptr(NameInfo) info = qmp_query_name(NULL);

    if (info->name) {
        monitor_printf(mon, "%s\n", info->name);
    }
}

void hmp_info_cpus(Monitor *mon, const HMPArgs *args)
{
    g_autoptr(CpuInfoFastList) list = qmp_query_cpus_fast(NULL);

    for (CpuInfoFastList *l = list; l; l = l->next) {
        monitor_printf(mon, "%c CPU #%" PRId64 ": thread_id=%" PRId64 "\n",
                       l->value->cpu_index == 0 ? '*' : ' ', l->value->cpu_index,
                       l->value->thread_id);
    }
}

void hmp_stop(Monitor *mon, const HMPArgs *args)
{
    qmp_stop(NULL);
}

void hmp_cont(Monitor *mon, const HMPArgs *args)
{
    Error *err = NULL;

    qmp_cont(&err);
    hmp_handle_error(mon, err);
}

void hmp_quit(Monitor *mon, const HMPArgs *args)
{
    qmp_quit(NULL);
}

void hmp_system_reset(Monitor *mon, const HMPArgs *args)
{
    Error *err = NULL;

    qmp_system_reset(&err);
    hmp_handle_error(mon, err);
}

void hmp_system_powerdown(Monitor *mon, const HMPArgs *args)
{
    qmp_system_powerdown(NULL);
}

void hmp_pmemsave(Monitor *mon, const HMPArgs *args)
{
    Error *err = NULL;

    qmp_pmemsave(hmp_arg_int(args, "val", 0), hmp_arg_int(args, "size", 0),
                 hmp_arg_str(args, "filename"), &err);
    hmp_handle_error(mon, err);
}

/* Parses "/[count][format][size]" as QEMU's xp does. */
static bool hmp_parse_fmt(const char *fmt, int64_t *count, char *format, int *wsize)
{
    const char *p = fmt + 1;

    *count = 1;
    *format = 'x';
    *wsize = 4;
    if (g_ascii_isdigit(*p)) {
        *count = g_ascii_strtoll(p, (char **)&p, 10);
    }
    for (; *p; p++) {
        switch (*p) {
        case 'x': case 'd': case 'u': case 'o': case 'c':
            *format = *p;
            break;
        case 'b': *wsize = 1; break;
        case 'h': *wsize = 2; break;
        case 'w': *wsize = 4; break;
        case 'g': *wsize = 8; break;
        default:
            return false;
        }
    }
    if (*format == 'c') {
        *wsize = 1;
    }
    return *count > 0 && *count <= 1024 * 1024;
}

void hmp_xp(Monitor *mon, const HMPArgs *args)
{
    const char *fmt = hmp_arg_str(args, "fmt");
    hwaddr addr = hmp_arg_int(args, "addr", 0);
    int64_t count;
    char format;
    int wsize, line_size;
    uint64_t len;
    Error *err = NULL;

    if (!hmp_parse_fmt(fmt, &count, &format, &wsize)) {
        monitor_printf(mon, "invalid format '%s'\n", fmt);
        return;
    }
    if (!migration_guest_ram_usable(&err)) {
        hmp_handle_error(mon, err);
        return;
    }
    len = count * wsize;
    line_size = wsize == 1 ? 8 : 16;
    while (len > 0) {
        uint8_t buf[16];
        int l = MIN(len, (uint64_t)line_size);

        monitor_printf(mon, "%016" PRIx64 ":", addr);
        if (!guest_phys_rw(addr, buf, l, false)) {
            monitor_printf(mon, " Cannot access memory\n");
            return;
        }
        for (int i = 0; i < l; i += wsize) {
            uint64_t v = 0;

            memcpy(&v, buf + i, wsize);
            switch (format) {
            case 'x':
                monitor_printf(mon, " 0x%0*" PRIx64, wsize * 2, v);
                break;
            case 'o':
                monitor_printf(mon, " %#*" PRIo64, wsize * 3, v);
                break;
            case 'u':
                monitor_printf(mon, " %*" PRIu64, wsize * 3, v);
                break;
            case 'd': {
                int64_t sv = wsize == 1 ? (int8_t)v : wsize == 2 ? (int16_t)v :
                             wsize == 4 ? (int32_t)v : (int64_t)v;
                monitor_printf(mon, " %*" PRId64, wsize * 3, sv);
                break;
            }
            case 'c':
                monitor_printf(mon, g_ascii_isprint(v) ? " '%c'" : " \\x%02x", (int)v);
                break;
            }
        }
        monitor_printf(mon, "\n");
        addr += l;
        len -= l;
    }
}

/* HMP "info stats vm|vcpu [NAME,...]": one line per statistic, QEMU's shape. */
void hmp_info_stats(Monitor *mon, const HMPArgs *args)
{
    const char *target = hmp_arg_str(args, "target");
    const char *names = hmp_arg_str(args, "names");
    g_autoptr(JsonObject) a = json_object_new();
    JsonNode *res;
    Error *err = NULL;

    if (strcmp(target, "vm") && strcmp(target, "vcpu")) {
        monitor_printf(mon, "invalid stats target %s (vm or vcpu)\n", target);
        return;
    }
    json_object_set_string_member(a, "target", target);
    if (names) {
        g_auto(GStrv) parts = g_strsplit(names, ",", -1);
        JsonArray *prov = json_array_new();
        JsonObject *p = json_object_new();
        JsonArray *n = json_array_new();

        for (int i = 0; parts[i]; i++) {
            json_array_add_string_element(n, parts[i]);
        }
        json_object_set_string_member(p, "provider", "kvm");
        json_object_set_array_member(p, "names", n);
        json_array_add_object_element(prov, p);
        json_object_set_array_member(a, "providers", prov);
    }
    res = qmp_query_stats(a, &err);
    if (!res) {
        hmp_handle_error(mon, err);
        return;
    }
    for (guint i = 0; i < json_array_get_length(json_node_get_array(res)); i++) {
        JsonObject *r = json_array_get_object_element(json_node_get_array(res), i);
        JsonArray *stats = json_object_get_array_member(r, "stats");

        monitor_printf(mon, "provider: kvm\n");
        if (json_object_has_member(r, "qom-path")) {
            monitor_printf(mon, "  %s:\n", json_object_get_string_member(r, "qom-path"));
        }
        for (guint k = 0; k < json_array_get_length(stats); k++) {
            JsonObject *st = json_array_get_object_element(stats, k);
            JsonNode *v = json_object_get_member(st, "value");

            if (JSON_NODE_HOLDS_ARRAY(v)) {
                JsonArray *h = json_node_get_array(v);
                GString *s = g_string_new(NULL);
                for (guint b = 0; b < json_array_get_length(h); b++) {
                    g_string_append_printf(s, "%s%" PRId64, b ? " " : "",
                                           json_array_get_int_element(h, b));
                }
                monitor_printf(mon, "    %s: [%s]\n", json_object_get_string_member(st, "name"),
                               s->str);
                g_string_free(s, TRUE);
            } else if (json_node_get_value_type(v) == G_TYPE_BOOLEAN) {
                monitor_printf(mon, "    %s: %s\n", json_object_get_string_member(st, "name"),
                               json_node_get_boolean(v) ? "yes" : "no");
            } else {
                monitor_printf(mon, "    %s: %" PRId64 "\n",
                               json_object_get_string_member(st, "name"), json_node_get_int(v));
            }
        }
    }
    json_node_unref(res);
}

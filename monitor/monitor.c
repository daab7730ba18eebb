/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Monitor core shared by QMP and HMP: creation, the current-monitor
 * pointer, output, and QAPI event broadcast to every negotiated QMP client.
 * Everything here runs with the BQL held.
 *
 * This is the bottom of monitor/: it never calls into a flavour (qmp.c,
 * hmp.c), which sit on top of it.  Whoever creates a monitor (system/'s
 * command line) makes the generic object with monitor_new() and then gives
 * it its flavour with monitor_qmp_init() or monitor_hmp_init().
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-events.h"
#include "qemu/main-loop.h"
#include "chardev/char.h"
#include "monitor-internal.h"

static GPtrArray *monitors;
static Monitor *cur_mon;
static char *guest_name;

GPtrArray *monitor_list(void)
{
    if (!monitors) {
        monitors = g_ptr_array_new();
    }
    return monitors;
}

Monitor *monitor_cur(void)
{
    return cur_mon;
}

Monitor *monitor_set_cur(Monitor *mon)
{
    Monitor *old = cur_mon;

    cur_mon = mon;
    return old;
}

bool monitor_is_qmp(const Monitor *mon)
{
    return mon->qmp;
}

void monitor_write(Monitor *mon, const char *buf, size_t len)
{
    if (mon->capture) {
        g_string_append_len(mon->capture, buf, len);
    } else if (mon->chr && mon->connected) {
        qemu_chr_write_all(mon->chr, buf, len);
    }
}

void monitor_puts(Monitor *mon, const char *s)
{
    /* HMP output ends lines with \r\n, human-monitor-command's too (as QEMU). */
    if (!mon || mon->qmp) {
        return;
    }
    for (const char *p = s; *p;) {
        const char *nl = strchr(p, '\n');
        if (!nl) {
            monitor_write(mon, p, strlen(p));
            break;
        }
        monitor_write(mon, p, nl - p);
        monitor_write(mon, "\r\n", 2);
        p = nl + 1;
    }
}

void monitor_printf(Monitor *mon, const char *fmt, ...)
{
    va_list ap;
    g_autofree char *s = NULL;

    va_start(ap, fmt);
    s = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    monitor_puts(mon, s);
}

Monitor *monitor_new(Chardev *chr, Error **errp)
{
    Monitor *mon;

    if (qemu_chr_fe_busy(chr)) {
        error_setg(errp, "chardev '%s' is already in use", qemu_chr_label(chr));
        return NULL;
    }
    mon = g_new0(Monitor, 1);
    mon->chr = chr;
    g_ptr_array_add(monitor_list(), mon);
    return mon;
}

static JsonNode *monitor_event_timestamp(void)
{
    int64_t now = get_clock_realtime_ns();
    JsonObject *ts = json_object_new();
    JsonNode *node = json_node_new(JSON_NODE_OBJECT);

    json_object_set_int_member(ts, "seconds", now / 1000000000LL);
    json_object_set_int_member(ts, "microseconds", (now / 1000) % 1000000);
    json_node_take_object(node, ts);
    return node;
}

void monitor_qapi_event_emit(QAPIEvent event, JsonObject *data)
{
    JsonObject *obj = json_object_new();
    JsonNode *node = json_node_new(JSON_NODE_OBJECT);
    g_autofree char *text = NULL;
    size_t len;

    assert(bql_locked());
    json_object_set_member(obj, "timestamp", monitor_event_timestamp());
    json_object_set_string_member(obj, "event", QAPIEvent_str(event));
    if (data) {
        json_object_set_object_member(obj, "data", data);
    }
    json_node_take_object(node, obj);
    text = qmp_json_to_wire(node, &len);
    json_node_unref(node);
    for (guint i = 0; monitors && i < monitors->len; i++) {
        Monitor *mon = g_ptr_array_index(monitors, i);
        if (mon->qmp && mon->connected && mon->negotiated) {
            monitor_write(mon, text, len);
            monitor_write(mon, "\r\n", 2);
        }
    }
}

void qemu_set_name(const char *name)
{
    g_free(guest_name);
    guest_name = g_strdup(name);
}

const char *qemu_get_name(void)
{
    return guest_name;
}

/* -uuid, for query-uuid; QEMU's all-zero UUID without one. Set while parsing. */
static char guest_uuid[37] = "00000000-0000-0000-0000-000000000000";

void qemu_set_uuid(const char *uuid)
{
    g_strlcpy(guest_uuid, uuid, sizeof(guest_uuid));
}

const char *qemu_get_uuid(void)
{
    return guest_uuid;
}

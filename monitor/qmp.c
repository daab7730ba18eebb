/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QMP sessions: greeting on connect, request splitting, dispatch, replies.
 * A client that leaves resets the session (negotiation starts over for the
 * next one). Runs in the main loop with the BQL held.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "chardev/char.h"
#include "monitor-internal.h"

static void qmp_send_node(Monitor *mon, JsonNode *node)
{
    g_autofree char *text = NULL;
    size_t len;

    if (mon->pretty) {
        g_autoptr(JsonGenerator) gen = json_generator_new();
        json_generator_set_pretty(gen, TRUE);
        json_generator_set_root(gen, node);
        text = json_generator_to_data(gen, &len);
    } else {
        text = qmp_json_to_wire(node, &len);
    }
    monitor_write(mon, text, len);
    monitor_write(mon, "\r\n", 2);
}

static void qmp_send_greeting(Monitor *mon)
{
    g_autofree char *greeting = g_strdup_printf(
        "{\"QMP\": {\"version\": {\"qemu\": {\"micro\": %d, \"minor\": %d, \"major\": %d}, "
        "\"package\": \"%s\"}, \"capabilities\": []}}\r\n",
        QEMU_VERSION_MICRO, QEMU_VERSION_MINOR, QEMU_VERSION_MAJOR, QEMU_PKGVERSION);

    monitor_write(mon, greeting, strlen(greeting));
}

static void qmp_handle_request(void *opaque, const char *text, size_t len, Error *err)
{
    Monitor *mon = opaque;
    JsonNode *resp;
    Monitor *old;
    bool done = false;

    if (err) {
        resp = qmp_error_response(err);
        error_free(err);
    } else {
        old = monitor_set_cur(mon);
        resp = qmp_dispatch_line(text, len, mon->negotiated, &done);
        monitor_set_cur(old);
    }
    if (!resp) {
        return;
    }
    if (done) {
        mon->negotiated = true;
    }
    /* The client may have gone while the command ran (quit, a dead socket). */
    if (mon->connected) {
        qmp_send_node(mon, resp);
    }
    json_node_unref(resp);
}

/* Stop taking requests while replies pile up unread (backpressure). */
#define MONITOR_OUT_HIGH (1 * MiB)

static size_t qmp_can_read(void *opaque)
{
    Monitor *mon = opaque;

    return qemu_chr_out_pending(mon->chr) > MONITOR_OUT_HIGH ? 0 : 4096;
}

static void qmp_read(void *opaque, const uint8_t *buf, size_t len)
{
    Monitor *mon = opaque;

    qmp_splitter_feed(&mon->splitter, (const char *)buf, len);
}

static void qmp_event(void *opaque, ChardevEvent event)
{
    Monitor *mon = opaque;

    switch (event) {
    case CHR_EVENT_OPENED:
        mon->connected = true;
        mon->negotiated = false;
        qmp_send_greeting(mon);
        break;
    case CHR_EVENT_CLOSED:
        mon->connected = false;
        mon->negotiated = false;
        /* Drop any half-received request of the old client. */
        qmp_splitter_destroy(&mon->splitter);
        qmp_splitter_init(&mon->splitter, qmp_handle_request, mon);
        break;
    default:
        /* A mux's focus changes mean nothing to a QMP client. */
        break;
    }
}

void monitor_qmp_init(Monitor *mon, bool pretty)
{
    CharFrontend fe = {
        .can_read = qmp_can_read,
        .read = qmp_read,
        .event = qmp_event,
        .opaque = mon,
    };

    /* Set before the handlers: an open chardev may greet the client at once. */
    mon->qmp = true;
    mon->pretty = pretty;
    qmp_splitter_init(&mon->splitter, qmp_handle_request, mon);
    qemu_chr_fe_set_handlers(mon->chr, &fe);
}

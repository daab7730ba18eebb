/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz target: bytes a QMP client sends, through the splitter, the request
 * parser and the dispatcher into the real command handlers of the paused
 * fuzz machine, each response written out as the monitor would. Each
 * input is a fresh session (capabilities negotiation first).
 *
 * Commands that reach outside the process or would end or run it (quit,
 * migrate, migrate-incoming, pmemsave, cont, system_reset, system_powerdown)
 * are parsed but not run; human-monitor-command is left to the HMP target.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "monitor/qmp-dispatch.h"
#include "fuzz.h"

static const char *const not_run[] = {
    "quit", "migrate", "migrate-incoming", "pmemsave", "cont", "system_reset",
    "system_powerdown", "human-monitor-command",
};

typedef struct Session {
    bool negotiated;
} Session;

static bool may_run(JsonNode *req)
{
    JsonObject *o;
    JsonNode *name;

    if (!JSON_NODE_HOLDS_OBJECT(req)) {
        return true;            /* refused by the dispatcher */
    }
    o = json_node_get_object(req);
    name = json_object_get_member(o, "execute");
    if (!name || !JSON_NODE_HOLDS_VALUE(name) || json_node_get_value_type(name) != G_TYPE_STRING) {
        return true;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(not_run); i++) {
        if (!strcmp(json_node_get_string(name), not_run[i])) {
            return false;
        }
    }
    return true;
}

/* What qmp.c's request handler does, minus the socket. */
static void handle_request(void *opaque, const char *text, size_t len, Error *err)
{
    Session *s = opaque;
    g_autoptr(GHashTable) unsigned_ints = NULL;
    JsonNode *req = NULL, *rsp;
    g_autofree char *wire = NULL;
    size_t wire_len;
    bool done = false;

    if (err) {
        rsp = qmp_error_response(err);
        error_free(err);
    } else {
        req = qmp_parse_request(text, len, &unsigned_ints, &err);
        if (!req && !err) {
            return;             /* white space */
        }
        if (req && !may_run(req)) {
            json_node_unref(req);
            return;
        }
        rsp = req ? qmp_dispatch(req, unsigned_ints, s->negotiated, &done) : qmp_error_response(err);
        error_free(err);
        if (req) {
            json_node_unref(req);
        }
    }
    assert(JSON_NODE_HOLDS_OBJECT(rsp));
    assert(json_object_has_member(json_node_get_object(rsp), "return") !=
           json_object_has_member(json_node_get_object(rsp), "error"));
    if (done) {
        s->negotiated = true;
    }
    wire = qmp_json_to_wire(rsp, &wire_len);
    assert(wire_len == strlen(wire));
    json_node_unref(rsp);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    /* Handlers run in the main loop's context: BQL held. */
    fuzz_machine_start((*argv)[0]);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Session s = { 0 };
    QmpSplitter sp;

    qmp_splitter_init(&sp, handle_request, &s);
    qmp_splitter_feed(&sp, (const char *)data, size);
    qmp_splitter_flush(&sp);
    qmp_splitter_destroy(&sp);
    return 0;
}

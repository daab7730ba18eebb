/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QMP dispatch: request checks, capabilities negotiation, the call through
 * the generated command table, responses, and cutting a byte stream into
 * JSON texts.  No I/O here; the monitor owns sockets and sessions.
 *
 * Everything that reaches json-glib has been bounded first: json-glib's
 * parser recurses per nesting level and crashes on deep input.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-json.h"
#include "monitor/qmp-dispatch.h"
#include "qmp-text.h"

#define QMP_CAPABILITIES "qmp_capabilities"

const QmpCommand *qmp_find_command(const char *name)
{
    size_t i;

    for (i = 0; i < qmp_commands_count; i++) {
        if (!strcmp(qmp_commands[i].name, name)) {
            return &qmp_commands[i];
        }
    }
    return NULL;
}

/* ---- Responses ---------------------------------------------------------- */

JsonNode *qmp_error_response(const Error *err)
{
    JsonObject *error = json_object_new();
    JsonObject *rsp = json_object_new();
    JsonNode *node = json_node_alloc();

    json_object_set_string_member(error, "class",
                                  error_class_name(error_get_class(err)));
    json_object_set_string_member(error, "desc", error_get_pretty(err));
    json_object_set_object_member(rsp, "error", error);
    json_node_init_object(node, rsp);
    json_object_unref(rsp);
    return node;
}

/* Consumes @err. */
static JsonNode *error_response_take(Error *err, JsonNode *id)
{
    JsonNode *rsp = qmp_error_response(err);

    if (id) {
        json_object_set_member(json_node_get_object(rsp), "id",
                               json_node_copy(id));
    }
    error_free(err);
    return rsp;
}

/* A node holding @o (consumed). */
static JsonNode *return_value(JsonObject *o)
{
    JsonNode *node = json_node_init_object(json_node_alloc(), o);

    json_object_unref(o);
    return node;
}

/* Consumes @ret. */
static JsonNode *return_response(JsonNode *ret, JsonNode *id)
{
    JsonObject *rsp = json_object_new();

    json_object_set_member(rsp, "return", ret);
    if (id) {
        json_object_set_member(rsp, "id", json_node_copy(id));
    }
    return return_value(rsp);
}

/*
 * json-glib writes compact JSON; QEMU separates members as {"a": 1, "b": 2}.
 * Scripts that grep QMP output expect QEMU's spacing, so add it (outside
 * strings only).
 */
static char *qmp_json_space_like_qemu(const char *in, size_t n, size_t *out_len)
{
    GString *out = g_string_sized_new(n + n / 8);
    bool in_str = false, esc = false;

    for (size_t i = 0; i < n; i++) {
        char c = in[i];

        g_string_append_c(out, c);
        if (in_str) {
            if (esc) {
                esc = false;
            } else if (c == '\\') {
                esc = true;
            } else if (c == '"') {
                in_str = false;
            }
        } else if (c == '"') {
            in_str = true;
        } else if (c == ':' || c == ',') {
            g_string_append_c(out, ' ');
        }
    }
    *out_len = out->len;
    return g_string_free(out, FALSE);
}

char *qmp_json_to_string(JsonNode *node, size_t *len)
{
    JsonGenerator *gen = json_generator_new();
    gsize n;
    char *text;

    json_generator_set_root(gen, node);
    text = json_generator_to_data(gen, &n);
    g_object_unref(gen);
    if (len) {
        *len = n;
    }
    return text;
}

char *qmp_json_to_wire(JsonNode *node, size_t *len)
{
    g_autofree char *compact = NULL;
    size_t n, m;
    char *text;

    compact = qmp_json_to_string(node, &n);
    text = qmp_json_space_like_qemu(compact, n, &m);
    if (len) {
        *len = m;
    }
    return text;
}

/* ---- Dispatch ----------------------------------------------------------- */

/*
 * Checks the members of a request object; returns the command name, and
 * the arguments (NULL if there are none) in *args.
 */
static const char *check_request(JsonObject *req, JsonObject **args,
                                  Error **errp)
{
    const char *name = NULL;
    GList *members, *l;
    bool ok = true;

    *args = NULL;
    members = json_object_get_members(req);
    for (l = members; l && ok; l = l->next) {
        const char *key = l->data;
        JsonNode *val = json_object_get_member(req, key);

        if (!strcmp(key, "execute")) {
            if (!JSON_NODE_HOLDS_VALUE(val) ||
                json_node_get_value_type(val) != G_TYPE_STRING) {
                error_setg(errp, "QMP input member 'execute' must be a string");
                ok = false;
            } else {
                name = json_node_get_string(val);
            }
        } else if (!strcmp(key, "arguments")) {
            if (!JSON_NODE_HOLDS_OBJECT(val)) {
                error_setg(errp, "QMP input member 'arguments' must be an "
                           "object");
                ok = false;
            } else {
                *args = json_node_get_object(val);
            }
        } else if (strcmp(key, "id")) {
            error_setg(errp, "QMP input member '%s' is unexpected", key);
            ok = false;
        }
    }
    g_list_free(members);
    if (ok && !name) {
        error_setg(errp, "QMP input lacks member 'execute'");
    }
    return ok ? name : NULL;
}

JsonNode *qmp_dispatch(JsonNode *request, GHashTable *unsigned_ints, bool negotiated,
                       bool *negotiation_done)
{
    Error *err = NULL;
    JsonObject *req, *args;
    JsonNode *id, *ret;
    const QmpCommand *cmd;
    GHashTable *old_unsigned;
    const char *name;
    bool is_caps;

    if (negotiation_done) {
        *negotiation_done = false;
    }
    if (!JSON_NODE_HOLDS_OBJECT(request)) {
        error_setg(&err, "QMP input must be a JSON object");
        return error_response_take(err, NULL);
    }
    req = json_node_get_object(request);
    id = json_object_get_member(req, "id");
    name = check_request(req, &args, &err);
    if (!name) {
        return error_response_take(err, id);
    }

    is_caps = !strcmp(name, QMP_CAPABILITIES);
    if (!negotiated && !is_caps) {
        error_set(&err, ERROR_CLASS_COMMAND_NOT_FOUND,
                  "Expecting capabilities negotiation with '%s'",
                  QMP_CAPABILITIES);
        return error_response_take(err, id);
    }
    if (negotiated && is_caps) {
        error_set(&err, ERROR_CLASS_COMMAND_NOT_FOUND,
                  "Capabilities negotiation is already complete, command "
                  "ignored");
        return error_response_take(err, id);
    }
    cmd = qmp_find_command(name);
    if (!cmd) {
        error_set(&err, ERROR_CLASS_COMMAND_NOT_FOUND,
                  "The command %s has not been found", name);
        return error_response_take(err, id);
    }

    /* The generated decoders get only nodes: see qapi_json_set_unsigned_ints(). */
    old_unsigned = qapi_json_set_unsigned_ints(unsigned_ints);
    ret = cmd->fn(args, &err);
    qapi_json_set_unsigned_ints(old_unsigned);
    if (!ret) {
        if (!err) {
            /* Marshallers always set an error; be safe anyway. */
            error_setg(&err, "Command '%s' failed", name);
        }
        return error_response_take(err, id);
    }
    error_free(err);        /* a marshaller bug: both result and error */
    if (is_caps && negotiation_done) {
        *negotiation_done = true;
    }
    return return_response(ret, id);
}

JsonNode *qmp_dispatch_line(const char *text, size_t len, bool negotiated,
                            bool *negotiation_done)
{
    g_autoptr(GHashTable) unsigned_ints = NULL;
    Error *err = NULL;
    JsonNode *req, *rsp;

    if (negotiation_done) {
        *negotiation_done = false;
    }
    req = qmp_parse_request(text, len, &unsigned_ints, &err);
    if (!req) {
        return err ? error_response_take(err, NULL) : NULL;
    }
    rsp = qmp_dispatch(req, unsigned_ints, negotiated, negotiation_done);
    json_node_unref(req);
    return rsp;
}

/* ---- Splitting a stream ------------------------------------------------- */

void qmp_splitter_init(QmpSplitter *s, QmpSplitterFunc *fn, void *opaque)
{
    memset(s, 0, sizeof(*s));
    s->fn = fn;
    s->opaque = opaque;
    s->buf = g_string_new(NULL);
}

void qmp_splitter_destroy(QmpSplitter *s)
{
    if (s->buf) {
        g_string_free(s->buf, TRUE);
        s->buf = NULL;
    }
}

/*
 * A value ended: deliver it (unless it was being skipped).  The splitter is
 * ready for the next value before the callback runs, and the text lives in
 * a buffer the splitter no longer owns, so the callback may reset (or
 * destroy and re-init) the splitter.
 */
static void splitter_emit(QmpSplitter *s)
{
    GString *text = s->buf;
    bool skipped = s->skipping;

    s->buf = g_string_new(NULL);
    s->skipping = false;
    s->in_word = false;
    if (!skipped && text->len) {
        s->fn(s->opaque, text->str, text->len, NULL);
    }
    g_string_free(text, TRUE);
}

/* The value being collected is refused: report it, skip the rest of it. */
static void splitter_refuse(QmpSplitter *s, Error *err)
{
    s->skipping = true;
    g_string_truncate(s->buf, 0);
    s->fn(s->opaque, NULL, 0, err);
}

static void splitter_append(QmpSplitter *s, char c)
{
    Error *err = NULL;

    if (s->skipping) {
        return;
    }
    g_string_append_c(s->buf, c);
    if (s->depth > QMP_MAX_NESTING) {
        error_setg(&err, "JSON parse error, nesting deeper than %d levels",
                   QMP_MAX_NESTING);
    } else if (s->buf->len > QMP_MAX_REQUEST_SIZE) {
        error_setg(&err, "JSON parse error, request larger than %d bytes",
                   QMP_MAX_REQUEST_SIZE);
    }
    if (err) {
        splitter_refuse(s, err);
    }
}

/* Forget the value being collected and any refusal in progress. */
static void splitter_clear(QmpSplitter *s)
{
    g_string_truncate(s->buf, 0);
    s->depth = 0;
    s->quote = 0;
    s->escape = false;
    s->in_word = false;
    s->skipping = false;
}

static void splitter_char(QmpSplitter *s, char c)
{
    if (s->skipping && c == '\n') {
        /*
         * A refused request ends at the bracket that balances it or at the
         * end of its line, whichever comes first: a client that opened
         * 100,000 brackets is heard again on its next line instead of
         * never (QEMU resets at the error and then waits for the rest).
         */
        splitter_clear(s);
        return;
    }
    if (s->quote) {
        splitter_append(s, c);
        if (s->escape) {
            s->escape = false;
        } else if (c == '\\') {
            s->escape = true;
        } else if (c == s->quote) {
            s->quote = 0;
            if (s->depth == 0) {
                splitter_emit(s);
            }
        }
        return;
    }
    if ((c == '/' || c == '$') && !s->skipping) {
        Error *err = NULL;

        /*
         * A comment or a $hex number, which json-glib takes and QEMU
         * refuses (qmp-parse.c): refused here too, because a quote inside
         * a comment would start a string for this splitter, and the
         * brackets after it would go uncounted and unbounded. Alone at the
         * top level it is an error of its own, as in QEMU; within a value
         * the value is skipped, to its end or its line's.
         */
        error_setg(&err, "JSON parse error, stray '%c'", c);
        if (s->depth == 0 && !s->in_word) {
            s->fn(s->opaque, NULL, 0, err);
        } else {
            splitter_refuse(s, err);
        }
        return;
    }
    if (s->in_word) {
        if (!qmp_is_delimiter(c)) {
            splitter_append(s, c);
            return;
        }
        splitter_emit(s);
    }
    if (s->depth == 0) {
        if (qmp_is_json_space(c)) {
            return;
        }
        if (c == '{' || c == '[') {
            s->depth = 1;
            splitter_append(s, c);
        } else if (c == '"' || c == '\'') {
            s->quote = c;
            splitter_append(s, c);
        } else if (c == '}' || c == ']' || c == ',' || c == ':') {
            /* A stray character: deliver it alone to get its error. */
            splitter_append(s, c);
            splitter_emit(s);
        } else {
            s->in_word = true;
            splitter_append(s, c);
        }
        return;
    }
    if (c == '{' || c == '[') {
        s->depth++;
    } else if (c == '}' || c == ']') {
        s->depth--;
    } else if (c == '"' || c == '\'') {
        s->quote = c;
    }
    splitter_append(s, c);
    if (s->depth == 0) {
        splitter_emit(s);
    }
}

void qmp_splitter_feed(QmpSplitter *s, const char *data, size_t len)
{
    size_t i;

    s->stop = false;
    for (i = 0; i < len && !s->stop; i++) {
        splitter_char(s, data[i]);
    }
}

void qmp_splitter_flush(QmpSplitter *s)
{
    s->depth = 0;
    s->quote = 0;
    s->escape = false;
    splitter_emit(s);
}

void qmp_splitter_reset(QmpSplitter *s)
{
    splitter_clear(s);
    s->stop = true;
}

/* ---- Commands of qapi/control.json served from the dispatcher ----------- */

JsonNode *qmp_qmp_capabilities(JsonObject *args, Error **errp)
{
    JsonNode *enable = args ? json_object_get_member(args, "enable") : NULL;

    /*
     * The marshaller has checked 'enable' against QMPCapability.  We offer
     * no capability (no out-of-band execution), so any is refused.
     */
    if (enable && json_array_get_length(json_node_get_array(enable))) {
        error_setg(errp, "Capability '%s' not available",
                   json_array_get_string_element(json_node_get_array(enable),
                                                 0));
        return NULL;
    }
    return return_value(json_object_new());
}

JsonNode *qmp_query_commands(JsonObject *args, Error **errp)
{
    JsonArray *list = json_array_sized_new(qmp_commands_count);
    JsonNode *node = json_node_alloc();
    size_t i;

    for (i = 0; i < qmp_commands_count; i++) {
        JsonObject *info = json_object_new();

        json_object_set_string_member(info, "name", qmp_commands[i].name);
        json_array_add_object_element(list, info);
    }
    json_node_init_array(node, list);
    json_array_unref(list);
    return node;
}

JsonNode *qmp_query_qmp_schema(JsonObject *args, Error **errp)
{
    GError *gerr = NULL;
    JsonNode *schema = json_from_string(qapi_introspect_json, &gerr);

    if (!schema) {
        /* Generated data; failing to parse it is our bug. */
        error_setg(errp, "Internal error: bad introspection data: %s",
                   gerr ? gerr->message : "empty");
        g_clear_error(&gerr);
    }
    return schema;
}

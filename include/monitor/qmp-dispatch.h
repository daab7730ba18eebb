/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QMP dispatch: from request text to response object, with no I/O.
 *
 * A QMP monitor reads bytes, cuts them into JSON texts with a QmpSplitter
 * (clients need not end requests with a newline), hands each text to
 * qmp_dispatch_line(), writes the response with qmp_json_to_string()
 * followed by "\r\n", and leaves capabilities-negotiation mode when
 * dispatch says qmp_capabilities succeeded.  The commands come from the
 * table that scripts/qapi-gen.py generates from the schema in qapi/.
 */
#ifndef MONITOR_QMP_DISPATCH_H
#define MONITOR_QMP_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <glib.h>
#include <json-glib/json-glib.h>
#include "qemu/typedefs.h"
#include "monitor/qmp-parse.h"

/*
 * One row of the generated command table.  @fn is the generated
 * marshaller: it checks @args (NULL when the request had no "arguments"),
 * calls the handler and returns the result as JSON ({} for commands
 * without 'returns'), or NULL with *errp set.
 */
typedef struct QmpCommand {
    const char *name;
    JsonNode *(*fn)(JsonObject *args, Error **errp);
    unsigned flags;             /* none defined yet */
} QmpCommand;

/* Generated (qapi-commands.c, qapi-introspect.c). */
extern const QmpCommand qmp_commands[];
extern const size_t qmp_commands_count;
/* The SchemaInfo list of query-qmp-schema, as JSON text. */
extern const char qapi_introspect_json[];

/* Largest request accepted (QEMU's token size limit). */
#define QMP_MAX_REQUEST_SIZE (64 * 1024 * 1024)

/* The command named @name, or NULL. */
const QmpCommand *qmp_find_command(const char *name);

/*
 * qmp_dispatch: run one request.
 *
 * @request: the parsed request (borrowed); anything but an object is
 *   rejected with "QMP input must be a JSON object".
 * @unsigned_ints: what qmp_parse_request() gave with @request (borrowed;
 *   may be NULL): the integer nodes whose literal was in [2^63, 2^64).
 * @negotiated: false while the monitor is in capabilities-negotiation
 *   mode, where only qmp_capabilities runs (anything else is
 *   CommandNotFound "Expecting capabilities negotiation with
 *   'qmp_capabilities'"); true afterwards, when qmp_capabilities is
 *   refused with CommandNotFound.
 * @negotiation_done: if not NULL, set to true when this request was a
 *   successful qmp_capabilities (the monitor must then switch to command
 *   mode and start sending events), false otherwise.
 *
 * Returns a new object {"return": ...} or {"error": {"class", "desc"}},
 * with the request's "id" (any JSON value) copied into it.  Never NULL.
 */
JsonNode *qmp_dispatch(JsonNode *request, GHashTable *unsigned_ints, bool negotiated,
                       bool *negotiation_done);

/*
 * qmp_dispatch_line: qmp_dispatch() on the JSON text @text[0..len), which
 * should hold one JSON value, as a QmpSplitter delivers it.  Malformed
 * text gets {"error": {"class": "GenericError", "desc": "JSON parse error,
 * ..."}} without "id".  Text that is only white space gets no response:
 * returns NULL.  Nesting deeper than QMP_MAX_NESTING is refused before
 * json-glib (which recurses) sees it.
 */
JsonNode *qmp_dispatch_line(const char *text, size_t len, bool negotiated,
                            bool *negotiation_done);


/* {"error": {"class": ..., "desc": ...}} for @err (which is not freed). */
JsonNode *qmp_error_response(const Error *err);

/*
 * @node as compact JSON on one line, without a line terminator (QMP ends
 * every message with "\r\n").  Caller frees; *len gets the length if
 * @len is not NULL.
 */
char *qmp_json_to_string(JsonNode *node, size_t *len);
/* The same with QEMU's spacing ({"return": {}}), as QMP sends it. */
char *qmp_json_to_wire(JsonNode *node, size_t *len);

/*
 * QmpSplitter: cuts a QMP byte stream into complete top-level JSON texts,
 * tracking only strings and bracket depth (json-glib does the parsing), so
 * clients need not end requests with a newline.  An unterminated request
 * takes everything up to the bracket that balances it, as in QEMU.
 * @fn gets each text with @err NULL; when a request nests deeper than
 * QMP_MAX_NESTING or grows past QMP_MAX_REQUEST_SIZE it gets @text NULL
 * and an error it must free (qmp_error_response() makes the reply), and
 * the rest of that request is skipped, up to the bracket that balances it
 * or the end of the line, whichever comes first.  @fn may call qmp_splitter_reset()
 * (a client went away): the rest of the data being fed is then dropped.
 */
typedef void QmpSplitterFunc(void *opaque, const char *text, size_t len,
                             Error *err);

typedef struct QmpSplitter {
    QmpSplitterFunc *fn;
    void *opaque;
    GString *buf;       /* the text of the value being collected */
    int depth;          /* open '{' and '[' */
    char quote;         /* '"' or '\'' inside a string, else 0 */
    bool escape;        /* previous char was a backslash inside a string */
    bool in_word;       /* inside a bare top-level token (number, true...) */
    bool skipping;      /* dropping a refused request (too big, too deep, a comment) */
    bool stop;          /* reset during a feed: drop the rest of it */
} QmpSplitter;

void qmp_splitter_init(QmpSplitter *s, QmpSplitterFunc *fn, void *opaque);
void qmp_splitter_feed(QmpSplitter *s, const char *data, size_t len);
/* Delivers a pending partial value (at end of input) to get its error. */
void qmp_splitter_flush(QmpSplitter *s);
/* Forgets any partial value; safe inside @fn. */
void qmp_splitter_reset(QmpSplitter *s);
void qmp_splitter_destroy(QmpSplitter *s);

/*
 * The commands of qapi/control.json that only need the dispatcher's data
 * ('gen': false, so they take and return JSON).  Prototypes repeat the
 * generated ones.
 */
JsonNode *qmp_qmp_capabilities(JsonObject *args, Error **errp);
JsonNode *qmp_query_commands(JsonObject *args, Error **errp);
JsonNode *qmp_query_qmp_schema(JsonObject *args, Error **errp);

#endif

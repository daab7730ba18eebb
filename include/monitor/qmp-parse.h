/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * From QMP text to a request (monitor/qmp-parse.c): the layer below the
 * dispatcher, which includes this; it knows nothing of commands.
 */
#ifndef MONITOR_QMP_PARSE_H
#define MONITOR_QMP_PARSE_H

#include <json-glib/json-glib.h>
#include "qapi/error.h"

/* QEMU's bound on JSON nesting in QMP input. */
#define QMP_MAX_NESTING 1024

/*
 * The first half of qmp_dispatch_line() (monitor/qmp-parse.c): the request
 * in @text[0..len), or NULL, with *errp set if the text is malformed,
 * without if it is only white space. The same bounds apply, and numbers
 * must be JSON numbers (no 0x10, 010, .5). *unsigned_ints gets NULL, or
 * for a request with integer literals in [2^63, 2^64) the set of their
 * nodes (a ref each), which json-glib stores as negative int64 values:
 * pass it to qmp_dispatch(), then g_hash_table_unref() it.
 */
JsonNode *qmp_parse_request(const char *text, size_t len, GHashTable **unsigned_ints,
                            Error **errp);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers for the code scripts/qapi-gen.py generates: decoding and encoding
 * of the builtin types, member lookup and QEMU's argument error messages.
 * Private to qapi/: only generated code, the QMP dispatcher and the
 * hand-written decoders of 'any' values use this.
 *
 * Decoders share one shape:
 *     bool qapi_T_from_json(JsonNode *node, const char *path, T *out,
 *                           Error **errp);
 * @path names the value in error messages ("caps[0].state"); NULL for a
 * value that is not inside anything.  On failure *out is left alone.
 */
#ifndef QAPI_QAPI_JSON_H
#define QAPI_QAPI_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include <json-glib/json-glib.h>
#include "qemu/typedefs.h"

/* "path.name" (or "name" at the top level); caller frees. */
char *qapi_path_member(const char *path, const char *name);
/* "path[index]"; caller frees. */
char *qapi_path_index(const char *path, guint index);

/* "Parameter 'path.name' is missing" */
void qapi_error_missing(Error **errp, const char *path, const char *name);
/* "Invalid parameter type for 'path', expected: @expected" */
void qapi_error_type(Error **errp, const char *path, const char *expected);

/* Member @name of @o, NULL if absent; @o may be NULL (no members at all). */
JsonNode *qapi_member(JsonObject *o, const char *name);
/*
 * Fails with "Parameter 'x' is unexpected" for the first member of @o whose
 * name is not in the NULL-terminated @names (which may itself be NULL).
 */
bool qapi_check_members(JsonObject *o, const char *path,
                        const char *const *names, Error **errp);

/* Type checks for compound values: NULL with *errp set on mismatch. */
JsonObject *qapi_object_from_json(JsonNode *node, const char *path,
                                  Error **errp);
JsonArray *qapi_array_from_json(JsonNode *node, const char *path,
                                Error **errp);
/* New nodes that take ownership of @o / @a. */
JsonNode *qapi_object_to_json(JsonObject *o);
JsonNode *qapi_array_to_json(JsonArray *a);

/* Index of @s in @lookup[0..count), or -1. */
int qapi_enum_lookup(const char *const *lookup, int count, const char *s);
bool qapi_enum_from_json(JsonNode *node, const char *path,
                         const char *const *lookup, int count, int *out,
                         Error **errp);

/*
 * Integer literals in [2^63, 2^64). json-glib (1.6) keeps every JSON
 * integer as an int64 and stores these wrapped (18446744073709551615 as
 * -1), so a node alone cannot tell them from negative literals. QEMU keeps
 * them unsigned: int and intN arguments refuse them ("Invalid parameter
 * type for 'x', expected: integer"), uint64 and size take them exactly,
 * number as a double, narrower unsigned types fail their range check.
 *
 * The parser lists such nodes (monitor/qmp-parse.c) and qmp_dispatch()
 * installs the list here for the time a command's marshaller runs: the
 * generated decoders get nothing but the node, and json-glib's tree has no
 * room for the bit. A NULL set means no node is unsigned. Main thread,
 * BQL, as the monitor's current-monitor pointer. Returns the previous set.
 */
GHashTable *qapi_json_set_unsigned_ints(GHashTable *nodes);
/* @node is an integer whose literal was in [2^63, 2^64) (see above). */
bool qapi_json_is_unsigned_int(JsonNode *node);

/* Builtin decoders; "Parameter 'x' expects uint8_t" for range errors. */
bool qapi_str_from_json(JsonNode *node, const char *path, char **out,
                        Error **errp);
bool qapi_int_from_json(JsonNode *node, const char *path, int64_t *out,
                        Error **errp);
bool qapi_int8_from_json(JsonNode *node, const char *path, int8_t *out,
                         Error **errp);
bool qapi_int16_from_json(JsonNode *node, const char *path, int16_t *out,
                          Error **errp);
bool qapi_int32_from_json(JsonNode *node, const char *path, int32_t *out,
                          Error **errp);
bool qapi_int64_from_json(JsonNode *node, const char *path, int64_t *out,
                          Error **errp);
bool qapi_uint8_from_json(JsonNode *node, const char *path, uint8_t *out,
                          Error **errp);
bool qapi_uint16_from_json(JsonNode *node, const char *path, uint16_t *out,
                           Error **errp);
bool qapi_uint32_from_json(JsonNode *node, const char *path, uint32_t *out,
                           Error **errp);
bool qapi_uint64_from_json(JsonNode *node, const char *path, uint64_t *out,
                           Error **errp);
bool qapi_size_from_json(JsonNode *node, const char *path, uint64_t *out,
                         Error **errp);
bool qapi_bool_from_json(JsonNode *node, const char *path, bool *out,
                         Error **errp);
bool qapi_number_from_json(JsonNode *node, const char *path, double *out,
                           Error **errp);
/* 'any' accepts every JSON value, null included; *out is a copy. */
bool qapi_any_from_json(JsonNode *node, const char *path, JsonNode **out,
                        Error **errp);

/*
 * Builtin encoders.  A NULL string encodes as "" and a NULL 'any' as null,
 * so that a handler bug yields odd output rather than a crash; a NaN or
 * infinite number, which JSON cannot express, encodes as null.  json-glib
 * holds integers as int64, so a uint64 above INT64_MAX comes out negative
 * (QEMU's input side reads such values back as the same uint64).
 */
JsonNode *qapi_str_to_json(const char *s);
JsonNode *qapi_int_to_json(int64_t v);
JsonNode *qapi_uint_to_json(uint64_t v);
JsonNode *qapi_bool_to_json(bool v);
JsonNode *qapi_number_to_json(double v);
JsonNode *qapi_any_to_json(const JsonNode *v);

void qapi_free_any(JsonNode *v);
JsonNode *qapi_any_clone(const JsonNode *v);

/*
 * For marshallers, after the handler ran: true if it succeeded.  @err is the
 * handler's error (consumed); @have_result whether it returned a result (or
 * true).  A handler that fails without an error, which is a bug, becomes a
 * GenericError naming the command instead of a crash.
 */
bool qapi_command_result_ok(bool have_result, Error *err, const char *command,
                            Error **errp);

#endif

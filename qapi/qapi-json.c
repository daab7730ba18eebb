/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Builtin-type decoders and encoders for generated QAPI code, with QEMU's
 * wording for argument errors (missing, unexpected, wrong type, out of
 * range, unknown enum value).
 */
#include "qemu/osdep.h"
#include <math.h>
#include "qapi/error.h"
#include "qapi/qapi-json.h"

/*
 * The current request's unsigned literals (qapi-json.h); set by
 * qmp_dispatch() around a marshaller, NULL otherwise. Main thread, BQL.
 */
static GHashTable *unsigned_ints;

GHashTable *qapi_json_set_unsigned_ints(GHashTable *nodes)
{
    GHashTable *old = unsigned_ints;

    unsigned_ints = nodes;
    return old;
}

bool qapi_json_is_unsigned_int(JsonNode *node)
{
    return unsigned_ints && g_hash_table_contains(unsigned_ints, node);
}

char *qapi_path_member(const char *path, const char *name)
{
    return path ? g_strdup_printf("%s.%s", path, name) : g_strdup(name);
}

char *qapi_path_index(const char *path, guint index)
{
    return g_strdup_printf("%s[%u]", path ? path : "<anonymous>", index);
}

void qapi_error_missing(Error **errp, const char *path, const char *name)
{
    g_autofree char *full = qapi_path_member(path, name);

    error_setg(errp, "Parameter '%s' is missing", full);
}

void qapi_error_type(Error **errp, const char *path, const char *expected)
{
    error_setg(errp, "Invalid parameter type for '%s', expected: %s",
               path ? path : "<anonymous>", expected);
}

static void qapi_error_range(Error **errp, const char *path, const char *type)
{
    error_setg(errp, "Parameter '%s' expects %s",
               path ? path : "<anonymous>", type);
}

JsonNode *qapi_member(JsonObject *o, const char *name)
{
    return o ? json_object_get_member(o, name) : NULL;
}

static bool name_in(const char *const *names, const char *name)
{
    for (; names && *names; names++) {
        if (!strcmp(*names, name)) {
            return true;
        }
    }
    return false;
}

bool qapi_check_members(JsonObject *o, const char *path,
                        const char *const *names, Error **errp)
{
    GList *members, *l;
    bool ok = true;

    if (!o) {
        return true;
    }
    members = json_object_get_members(o);
    for (l = members; l; l = l->next) {
        if (!name_in(names, l->data)) {
            g_autofree char *full = qapi_path_member(path, l->data);

            error_setg(errp, "Parameter '%s' is unexpected", full);
            ok = false;
            break;
        }
    }
    g_list_free(members);
    return ok;
}

JsonObject *qapi_object_from_json(JsonNode *node, const char *path,
                                  Error **errp)
{
    if (!JSON_NODE_HOLDS_OBJECT(node)) {
        qapi_error_type(errp, path, "object");
        return NULL;
    }
    return json_node_get_object(node);
}

JsonArray *qapi_array_from_json(JsonNode *node, const char *path,
                                Error **errp)
{
    if (!JSON_NODE_HOLDS_ARRAY(node)) {
        qapi_error_type(errp, path, "array");
        return NULL;
    }
    return json_node_get_array(node);
}

JsonNode *qapi_object_to_json(JsonObject *o)
{
    JsonNode *node = json_node_alloc();

    json_node_init_object(node, o);
    json_object_unref(o);
    return node;
}

JsonNode *qapi_array_to_json(JsonArray *a)
{
    JsonNode *node = json_node_alloc();

    json_node_init_array(node, a);
    json_array_unref(a);
    return node;
}

static bool holds(JsonNode *node, GType type)
{
    return JSON_NODE_HOLDS_VALUE(node) && json_node_get_value_type(node) == type;
}

int qapi_enum_lookup(const char *const *lookup, int count, const char *s)
{
    int i;

    for (i = 0; s && i < count; i++) {
        if (lookup[i] && !strcmp(lookup[i], s)) {
            return i;
        }
    }
    return -1;
}

bool qapi_enum_from_json(JsonNode *node, const char *path,
                         const char *const *lookup, int count, int *out,
                         Error **errp)
{
    const char *s;
    int i;

    if (!holds(node, G_TYPE_STRING)) {
        qapi_error_type(errp, path, "string");
        return false;
    }
    s = json_node_get_string(node);
    i = qapi_enum_lookup(lookup, count, s);
    if (i < 0) {
        error_setg(errp, "Parameter '%s' does not accept value '%s'",
                   path ? path : "<anonymous>", s);
        return false;
    }
    *out = i;
    return true;
}

bool qapi_str_from_json(JsonNode *node, const char *path, char **out,
                        Error **errp)
{
    if (!holds(node, G_TYPE_STRING)) {
        qapi_error_type(errp, path, "string");
        return false;
    }
    *out = g_strdup(json_node_get_string(node));
    return true;
}

/* Signed integers of every width go through here. */
static bool get_int(JsonNode *node, const char *path, int64_t min, int64_t max,
                    const char *type, int64_t *out, Error **errp)
{
    int64_t v;

    /* A literal above INT64_MAX is no signed integer, as in QEMU. */
    if (!holds(node, G_TYPE_INT64) || qapi_json_is_unsigned_int(node)) {
        qapi_error_type(errp, path, "integer");
        return false;
    }
    v = json_node_get_int(node);
    if (v < min || v > max) {
        qapi_error_range(errp, path, type);
        return false;
    }
    *out = v;
    return true;
}

/*
 * Unsigned integers: like QEMU, a negative JSON integer is taken as its
 * two's complement, which is also how json-glib stores literals between
 * INT64_MAX and UINT64_MAX: the cast gives both exactly.  Narrow types
 * then fail the range check.
 */
static bool get_uint(JsonNode *node, const char *path, uint64_t max,
                     const char *type, uint64_t *out, Error **errp)
{
    uint64_t v;

    if (!holds(node, G_TYPE_INT64)) {
        qapi_error_type(errp, path, "integer");
        return false;
    }
    v = (uint64_t)json_node_get_int(node);
    if (v > max) {
        qapi_error_range(errp, path, type);
        return false;
    }
    *out = v;
    return true;
}

#define DEFINE_INT_DECODER(name, ctype, min, max, type_name)                  \
bool qapi_##name##_from_json(JsonNode *node, const char *path, ctype *out,   \
                             Error **errp)                                    \
{                                                                             \
    int64_t v;                                                                \
                                                                              \
    if (!get_int(node, path, min, max, type_name, &v, errp)) {                \
        return false;                                                         \
    }                                                                         \
    *out = (ctype)v;                                                          \
    return true;                                                              \
}

#define DEFINE_UINT_DECODER(name, ctype, max, type_name)                      \
bool qapi_##name##_from_json(JsonNode *node, const char *path, ctype *out,   \
                             Error **errp)                                    \
{                                                                             \
    uint64_t v;                                                               \
                                                                              \
    if (!get_uint(node, path, max, type_name, &v, errp)) {                    \
        return false;                                                         \
    }                                                                         \
    *out = (ctype)v;                                                          \
    return true;                                                              \
}

DEFINE_INT_DECODER(int, int64_t, INT64_MIN, INT64_MAX, "int64_t")
DEFINE_INT_DECODER(int8, int8_t, INT8_MIN, INT8_MAX, "int8_t")
DEFINE_INT_DECODER(int16, int16_t, INT16_MIN, INT16_MAX, "int16_t")
DEFINE_INT_DECODER(int32, int32_t, INT32_MIN, INT32_MAX, "int32_t")
DEFINE_INT_DECODER(int64, int64_t, INT64_MIN, INT64_MAX, "int64_t")
DEFINE_UINT_DECODER(uint8, uint8_t, UINT8_MAX, "uint8_t")
DEFINE_UINT_DECODER(uint16, uint16_t, UINT16_MAX, "uint16_t")
DEFINE_UINT_DECODER(uint32, uint32_t, UINT32_MAX, "uint32_t")
DEFINE_UINT_DECODER(uint64, uint64_t, UINT64_MAX, "uint64_t")
DEFINE_UINT_DECODER(size, uint64_t, UINT64_MAX, "size")

bool qapi_bool_from_json(JsonNode *node, const char *path, bool *out,
                         Error **errp)
{
    if (!holds(node, G_TYPE_BOOLEAN)) {
        qapi_error_type(errp, path, "boolean");
        return false;
    }
    *out = json_node_get_boolean(node);
    return true;
}

bool qapi_number_from_json(JsonNode *node, const char *path, double *out,
                           Error **errp)
{
    if (holds(node, G_TYPE_INT64) && qapi_json_is_unsigned_int(node)) {
        *out = (double)(uint64_t)json_node_get_int(node);
        return true;
    }
    if (holds(node, G_TYPE_INT64)) {
        *out = (double)json_node_get_int(node);
        return true;
    }
    if (holds(node, G_TYPE_DOUBLE)) {
        *out = json_node_get_double(node);
        return true;
    }
    qapi_error_type(errp, path, "number");
    return false;
}

bool qapi_any_from_json(JsonNode *node, const char *path, JsonNode **out,
                        Error **errp)
{
    *out = json_node_copy(node);
    return true;
}

JsonNode *qapi_str_to_json(const char *s)
{
    JsonNode *node = json_node_alloc();

    return json_node_init_string(node, s ? s : "");
}

JsonNode *qapi_int_to_json(int64_t v)
{
    return json_node_init_int(json_node_alloc(), v);
}

JsonNode *qapi_uint_to_json(uint64_t v)
{
    return json_node_init_int(json_node_alloc(), (int64_t)v);
}

JsonNode *qapi_bool_to_json(bool v)
{
    return json_node_init_boolean(json_node_alloc(), v);
}

JsonNode *qapi_number_to_json(double v)
{
    /* JSON has no NaN or infinity (json-glib would write "inf.0"). */
    if (!isfinite(v)) {
        return json_node_init_null(json_node_alloc());
    }
    return json_node_init_double(json_node_alloc(), v);
}

JsonNode *qapi_any_to_json(const JsonNode *v)
{
    if (!v) {
        return json_node_init_null(json_node_alloc());
    }
    /* json_node_copy() does not modify its argument; it just isn't const. */
    return json_node_copy((JsonNode *)v);
}

void qapi_free_any(JsonNode *v)
{
    if (v) {
        json_node_unref(v);
    }
}

JsonNode *qapi_any_clone(const JsonNode *v)
{
    return v ? json_node_copy((JsonNode *)v) : NULL;
}

bool qapi_command_result_ok(bool have_result, Error *err, const char *command,
                            Error **errp)
{
    if (err) {
        error_propagate(errp, err);
        return false;
    }
    if (!have_result) {
        error_setg(errp, "Internal error: command '%s' failed without "
                   "reporting why", command);
        return false;
    }
    return true;
}

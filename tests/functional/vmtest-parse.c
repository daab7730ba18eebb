/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reading what a VM says (libvmtest.h): key=value pairs of its serial
 * lines, members of its QMP replies by dotted path, and our stream
 * analyzer's output for a stream it wrote.
 */
#include <stdlib.h>
#include <string.h>
#include "libvmtest.h"

int64_t line_get_int(const char *line, const char *key)
{
    g_autofree char *pat = g_strdup_printf(" %s=", key);
    const char *p = strstr(line, pat);

    return p ? g_ascii_strtoll(p + strlen(pat), NULL, 0) : -1;
}

double line_get_double(const char *line, const char *key)
{
    g_autofree char *pat = g_strdup_printf(" %s=", key);
    const char *p = strstr(line, pat);

    return p ? g_ascii_strtod(p + strlen(pat), NULL) : -1;
}

/* A dotted path of members, each optionally indexed: "ram.total", "list[0].id". */
static JsonNode *json_lookup(JsonNode *n, const char *path)
{
    g_auto(GStrv) parts = g_strsplit(path, ".", -1);

    for (int i = 0; parts[i] && n; i++) {
        /* "name[N]" (or "[N]" alone): element N of the array member. */
        char *bracket = strchr(parts[i], '[');
        JsonObject *o;

        if (bracket) {
            *bracket = '\0';
        }
        if (*parts[i]) {
            if (!JSON_NODE_HOLDS_OBJECT(n)) {
                return NULL;
            }
            o = json_node_get_object(n);
            n = json_object_has_member(o, parts[i]) ? json_object_get_member(o, parts[i]) : NULL;
        }
        if (bracket && n) {
            guint idx = strtoul(bracket + 1, NULL, 10);
            JsonArray *a = JSON_NODE_HOLDS_ARRAY(n) ? json_node_get_array(n) : NULL;

            n = a && idx < json_array_get_length(a) ? json_array_get_element(a, idx) : NULL;
        }
    }
    return n;
}

bool json_has(JsonNode *obj, const char *path)
{
    return json_lookup(obj, path) != NULL;
}

const char *json_get_str(JsonNode *obj, const char *path)
{
    JsonNode *n = json_lookup(obj, path);

    if (!n || !JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING) {
        g_error("JSON member %s is not a string", path);
    }
    return json_node_get_string(n);
}

int64_t json_get_int(JsonNode *obj, const char *path)
{
    JsonNode *n = json_lookup(obj, path);

    if (!n || !JSON_NODE_HOLDS_VALUE(n)) {
        g_error("JSON member %s is missing", path);
    }
    return json_node_get_int(n);
}

bool json_get_bool(JsonNode *obj, const char *path)
{
    JsonNode *n = json_lookup(obj, path);

    if (!n || !JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_BOOLEAN) {
        g_error("JSON member %s is not a boolean", path);
    }
    return json_node_get_boolean(n);
}

double json_get_double(JsonNode *obj, const char *path)
{
    JsonNode *n = json_lookup(obj, path);

    if (!n || !JSON_NODE_HOLDS_VALUE(n)) {
        g_error("JSON member %s is missing", path);
    }
    return json_node_get_value_type(n) == G_TYPE_DOUBLE ? json_node_get_double(n)
                                                        : json_node_get_int(n);
}

char *vmtest_analyze_stream(const char *file, const char *mode, const char *extra)
{
    g_autofree char *cmd = g_strdup_printf("python3 %s/scripts/analyze-migration.py -f %s -d %s %s",
                                           VMTEST_SOURCE_DIR, file, mode, extra);
    g_autofree char *err = NULL;
    char *out = NULL;
    int status;

    g_assert_true(g_spawn_command_line_sync(cmd, &out, &err, &status, NULL));
    if (status) {
        g_error("%s: %s", cmd, err);
    }
    return out;
}

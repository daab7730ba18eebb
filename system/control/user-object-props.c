/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Typed reads of a user object's properties (user-object-props.h). */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/cutils.h"
#include "user-object-props.h"

bool uo_props_check_known(const UOProps *p, const char *const *known, Error **errp)
{
    GList *members = json_object_get_members(p->o);
    bool ok = true;

    for (GList *l = members; l && ok; l = l->next) {
        const char *name = l->data;

        if (!strcmp(name, "qom-type") || !strcmp(name, "id") ||
            g_strv_contains((const char *const *)known, name)) {
            continue;
        }
        /* QEMU's keyval and QObject visitors word it differently. */
        if (p->text) {
            error_setg(errp, "Invalid parameter '%s'", name);
        } else {
            error_setg(errp, "Parameter '%s' is unexpected", name);
        }
        ok = false;
    }
    g_list_free(members);
    return ok;
}

static bool is_string(JsonNode *n)
{
    return JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING;
}

bool uo_prop_str(const UOProps *p, const char *name, bool required, const char **out,
                 Error **errp)
{
    JsonNode *n = json_object_get_member(p->o, name);

    *out = NULL;
    if (!n) {
        if (required) {
            error_setg(errp, "Parameter '%s' is missing", name);
        }
        return !required;
    }
    if (!is_string(n)) {
        error_setg(errp, "Invalid parameter type for '%s', expected: string", name);
        return false;
    }
    *out = json_node_get_string(n);
    return true;
}

bool uo_prop_bool(const UOProps *p, const char *name, bool def, bool *out, Error **errp)
{
    JsonNode *n = json_object_get_member(p->o, name);

    if (!n) {
        *out = def;
        return true;
    }
    if (p->text && is_string(n)) {
        if (!qemu_parse_bool(json_node_get_string(n), out)) {
            error_setg(errp, "Parameter '%s' expects 'on' or 'off'", name);
            return false;
        }
        return true;
    }
    if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_BOOLEAN) {
        error_setg(errp, "Invalid parameter type for '%s', expected: boolean", name);
        return false;
    }
    *out = json_node_get_boolean(n);
    return true;
}

bool uo_prop_enum(const UOProps *p, const char *name, const char *const *values, int def,
                  int *out, Error **errp)
{
    const char *v;

    if (!uo_prop_str(p, name, false, &v, errp)) {
        return false;
    }
    if (!v) {
        *out = def;
        return true;
    }
    for (int i = 0; values[i]; i++) {
        if (!strcmp(values[i], v)) {
            *out = i;
            return true;
        }
    }
    error_setg(errp, "Parameter '%s' does not accept value '%s'", name, v);
    return false;
}

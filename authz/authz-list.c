/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * authz-list: an ordered list of rules and a default policy, immutable
 * once made; and the JSON reader of that list, which authz-listfile
 * shares for its file. Every value from outside is checked here: a rule
 * list from a monitor or a file is untrusted text.
 */
#include "qemu/osdep.h"
#include <fnmatch.h>
#include "qapi/error.h"
#include "authz/authz-objects.h"
#include "authz-int.h"

static const char *const policy_names[] = { "deny", "allow", NULL };
static const char *const format_names[] = { "exact", "glob", NULL };

/*
 * @o's member @name (@path: how messages name it) as one of @names:
 * true with *@out set (@def when absent), false with QEMU's words.
 */
static bool json_enum_member(JsonObject *o, const char *name, const char *path,
                             const char *const *names, int def, int *out, Error **errp)
{
    JsonNode *n = json_object_get_member(o, name);
    const char *v;

    if (!n) {
        *out = def;
        return true;
    }
    if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING) {
        error_setg(errp, "Invalid parameter type for '%s', expected: string", path);
        return false;
    }
    v = json_node_get_string(n);
    for (int i = 0; names[i]; i++) {
        if (!strcmp(names[i], v)) {
            *out = i;
            return true;
        }
    }
    error_setg(errp, "Parameter '%s' does not accept value '%s'", path, v);
    return false;
}

static bool rule_from_json(JsonNode *n, guint i, AuthzRule *r, Error **errp)
{
    g_autofree char *path = g_strdup_printf("rules[%u]", i);
    g_autofree char *mpath = g_strdup_printf("rules[%u].match", i);
    g_autofree char *ppath = g_strdup_printf("rules[%u].policy", i);
    g_autofree char *fpath = g_strdup_printf("rules[%u].format", i);
    JsonObject *o;
    JsonNode *m;
    GList *members;
    int policy, format;

    if (!JSON_NODE_HOLDS_OBJECT(n)) {
        error_setg(errp, "Invalid parameter type for '%s', expected: object", path);
        return false;
    }
    o = json_node_get_object(n);
    members = json_object_get_members(o);
    for (GList *l = members; l; l = l->next) {
        if (strcmp(l->data, "match") && strcmp(l->data, "policy") && strcmp(l->data, "format")) {
            error_setg(errp, "Parameter '%s.%s' is unexpected", path, (char *)l->data);
            g_list_free(members);
            return false;
        }
    }
    g_list_free(members);
    m = json_object_get_member(o, "match");
    if (!m) {
        error_setg(errp, "Parameter '%s' is missing", mpath);
        return false;
    }
    if (!JSON_NODE_HOLDS_VALUE(m) || json_node_get_value_type(m) != G_TYPE_STRING) {
        error_setg(errp, "Invalid parameter type for '%s', expected: string", mpath);
        return false;
    }
    if (!json_object_has_member(o, "policy")) {
        error_setg(errp, "Parameter '%s' is missing", ppath);
        return false;
    }
    if (!json_enum_member(o, "policy", ppath, policy_names, 0, &policy, errp) ||
        !json_enum_member(o, "format", fpath, format_names, AUTHZ_FORMAT_EXACT, &format, errp)) {
        return false;
    }
    r->match = g_strdup(json_node_get_string(m));
    r->policy = policy;
    r->format = format;
    return true;
}

AuthzRules *authz_rules_from_json(JsonObject *o, bool strict, Error **errp)
{
    AuthzRules *r = g_new0(AuthzRules, 1);
    JsonNode *rules = json_object_get_member(o, "rules");
    int policy;

    if (strict) {
        GList *members = json_object_get_members(o);

        for (GList *l = members; l; l = l->next) {
            if (strcmp(l->data, "policy") && strcmp(l->data, "rules")) {
                error_setg(errp, "Parameter '%s' is unexpected", (char *)l->data);
                g_list_free(members);
                goto fail;
            }
        }
        g_list_free(members);
    }
    if (!json_enum_member(o, "policy", "policy", policy_names, AUTHZ_POLICY_DENY, &policy,
                          errp)) {
        goto fail;
    }
    r->policy = policy;
    if (rules && !JSON_NODE_HOLDS_NULL(rules)) {
        JsonArray *a;

        if (!JSON_NODE_HOLDS_ARRAY(rules)) {
            error_setg(errp, "Invalid parameter type for 'rules', expected: array");
            goto fail;
        }
        a = json_node_get_array(rules);
        r->rule = g_new0(AuthzRule, json_array_get_length(a));
        for (guint i = 0; i < json_array_get_length(a); i++) {
            if (!rule_from_json(json_array_get_element(a, i), i, &r->rule[i], errp)) {
                goto fail;
            }
            r->n++;
        }
    }
    return r;

fail:
    authz_rules_free(r);
    return NULL;
}

AuthzPolicy authz_rules_decide(const AuthzRules *r, const char *identity)
{
    for (guint i = 0; i < r->n; i++) {
        const AuthzRule *rule = &r->rule[i];
        bool hit = rule->format == AUTHZ_FORMAT_GLOB ? fnmatch(rule->match, identity, 0) == 0
                                                     : !strcmp(rule->match, identity);

        if (hit) {
            return rule->policy;
        }
    }
    return r->policy;
}

void authz_rules_free(AuthzRules *r)
{
    if (!r) {
        return;
    }
    for (guint i = 0; i < r->n; i++) {
        g_free(r->rule[i].match);
    }
    g_free(r->rule);
    g_free(r);
}

typedef struct AuthzList {
    Authz base;
    AuthzRules *rules;          /* immutable */
} AuthzList;

static AuthzAnswer list_check(Authz *a, const char *identity, Error **errp)
{
    AuthzList *l = container_of(a, AuthzList, base);

    return authz_rules_decide(l->rules, identity) == AUTHZ_POLICY_ALLOW ? AUTHZ_ALLOW
                                                                        : AUTHZ_DENY;
}

static void list_finalize(Authz *a)
{
    authz_rules_free(container_of(a, AuthzList, base)->rules);
}

static const AuthzOps list_ops = {
    .check = list_check,
    .finalize = list_finalize,
};

Authz *authz_list_new(const char *id, JsonObject *props, Error **errp)
{
    AuthzRules *rules = authz_rules_from_json(props, false, errp);
    AuthzList *l;

    if (!rules) {
        return NULL;
    }
    l = g_new0(AuthzList, 1);
    authz_init(&l->base, &list_ops, id);
    l->rules = rules;
    return &l->base;
}

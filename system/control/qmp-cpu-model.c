/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * query-cpu-model-expansion: what a CPU model with properties would be on
 * this host. libvirt asks it, on a -machine none probe, for the features
 * of "host" (static expansion), then for the full expansion of the answer,
 * and builds host-model and its CPU checks on what it is told, so every
 * property listed is one -cpu takes, with the value the vCPU would get.
 *
 * Models: host and max (KVM's host CPU, as -cpu takes them) and base (no
 * features, no identity: what a static expansion is expressed against).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands.h"
#include "qapi/qapi-json.h"
#include "system/kvm.h"

typedef struct CpuModel {
    const char *name;           /* "host", "max" or "base" */
    bool migratable;
    X86CpuIdentity id;
    bool *features;             /* indexed as kvm_cpu_feature_name() */
    size_t nfeatures;
} CpuModel;

static bool cpu_model_init(CpuModel *m, const char *name, Error **errp)
{
    bool host = !strcmp(name, "host") || !strcmp(name, "max");

    if (!host && strcmp(name, "base")) {
        error_setg(errp, "CPU model '%s' not found", name);
        return false;
    }
    if (host && !kvm_state) {
        /* -machine none,accel=tcg: no vCPU could be either, here. */
        error_setg(errp, "CPU model '%s' requires KVM", name);
        return false;
    }
    memset(m, 0, sizeof(*m));
    m->name = host ? (name[0] == 'h' ? "host" : "max") : "base";
    m->migratable = host;
    while (kvm_cpu_feature_name(m->nfeatures)) {
        m->nfeatures++;
    }
    m->features = g_new0(bool, m->nfeatures);
    if (host) {
        kvm_cpu_host_identity(&m->id);
        for (size_t i = 0; i < m->nfeatures; i++) {
            m->features[i] = kvm_cpu_host_feature(i, true);
        }
    }
    return true;
}

static bool prop_type_error(const char *name, const char *expected, Error **errp)
{
    error_setg(errp, "Invalid parameter type for '%s', expected: %s", name, expected);
    return false;
}

static bool prop_int(JsonNode *v, const char *name, int max, int *out, Error **errp)
{
    int64_t n;

    if (!JSON_NODE_HOLDS_VALUE(v) || json_node_get_value_type(v) != G_TYPE_INT64 ||
        qapi_json_is_unsigned_int(v)) {
        return prop_type_error(name, "integer", errp);
    }
    n = json_node_get_int(v);
    if (n < 0 || n > max) {
        error_setg(errp, "Property %s.%s doesn't take value %" PRId64 " (minimum: 0, "
                   "maximum: %d)", "x86_64-cpu", name, n, max);
        return false;
    }
    *out = n;
    return true;
}

static bool prop_str(JsonNode *v, const char *name, char *out, size_t size, Error **errp)
{
    const char *s;

    if (!JSON_NODE_HOLDS_VALUE(v) || json_node_get_value_type(v) != G_TYPE_STRING) {
        return prop_type_error(name, "string", errp);
    }
    s = json_node_get_string(v);
    if (strlen(s) >= size || (!strcmp(name, "vendor") && strlen(s) != 12)) {
        error_setg(errp, "Property '%s.%s' doesn't take value '%s'", "x86_64-cpu", name, s);
        return false;
    }
    g_strlcpy(out, s, size);
    return true;
}

/* One property of @props on @m, as -cpu NAME,PROP=VALUE would set it. */
static bool cpu_model_set(CpuModel *m, const char *name, JsonNode *v, Error **errp)
{
    int feature;

    if (!strcmp(name, "family")) {
        return prop_int(v, name, 0xff + 0xf, &m->id.family, errp);
    }
    if (!strcmp(name, "model")) {
        return prop_int(v, name, 0xff, &m->id.model, errp);
    }
    if (!strcmp(name, "stepping")) {
        return prop_int(v, name, 0xf, &m->id.stepping, errp);
    }
    if (!strcmp(name, "vendor")) {
        return prop_str(v, name, m->id.vendor, sizeof(m->id.vendor), errp);
    }
    if (!strcmp(name, "model-id")) {
        return prop_str(v, name, m->id.model_id, sizeof(m->id.model_id), errp);
    }
    feature = kvm_cpu_feature_index(name);
    if (feature < 0 && !(strcmp(name, "migratable") == 0 && strcmp(m->name, "base"))) {
        error_setg(errp, "Property '%s-x86_64-cpu.%s' not found", m->name, name);
        return false;
    }
    if (!JSON_NODE_HOLDS_VALUE(v) || json_node_get_value_type(v) != G_TYPE_BOOLEAN) {
        return prop_type_error(name, "boolean", errp);
    }
    if (feature < 0) {
        m->migratable = json_node_get_boolean(v);
        /* What migratable changes in the host model: the invariant TSC. */
        for (size_t i = 0; i < m->nfeatures; i++) {
            if (!strcmp(kvm_cpu_feature_name(i), "invtsc")) {
                m->features[i] = kvm_cpu_host_feature(i, m->migratable);
            }
        }
        return true;
    }
    m->features[feature] = json_node_get_boolean(v);
    return true;
}

static bool cpu_model_apply(CpuModel *m, JsonNode *props, Error **errp)
{
    JsonObject *o;
    g_autoptr(GList) names = NULL;

    if (!props) {
        return true;
    }
    if (!JSON_NODE_HOLDS_OBJECT(props)) {
        error_setg(errp, "Invalid parameter type for 'props', expected: dict");
        return false;
    }
    o = json_node_get_object(props);
    /* migratable first: a feature named with it wins, whatever the order. */
    if (json_object_has_member(o, "migratable") &&
        !cpu_model_set(m, "migratable", json_object_get_member(o, "migratable"), errp)) {
        return false;
    }
    names = json_object_get_members(o);
    for (GList *l = names; l; l = l->next) {
        if (strcmp(l->data, "migratable") &&
            !cpu_model_set(m, l->data, json_object_get_member(o, l->data), errp)) {
            return false;
        }
    }
    return true;
}

static JsonNode *cpu_model_props(const CpuModel *m, bool full)
{
    g_autoptr(JsonBuilder) b = json_builder_new();

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "vendor");
    json_builder_add_string_value(b, m->id.vendor);
    json_builder_set_member_name(b, "family");
    json_builder_add_int_value(b, m->id.family);
    json_builder_set_member_name(b, "model");
    json_builder_add_int_value(b, m->id.model);
    json_builder_set_member_name(b, "stepping");
    json_builder_add_int_value(b, m->id.stepping);
    json_builder_set_member_name(b, "model-id");
    json_builder_add_string_value(b, m->id.model_id);
    for (size_t i = 0; i < m->nfeatures; i++) {
        json_builder_set_member_name(b, kvm_cpu_feature_name(i));
        json_builder_add_boolean_value(b, m->features[i]);
    }
    if (full && strcmp(m->name, "base")) {
        json_builder_set_member_name(b, "migratable");
        json_builder_add_boolean_value(b, m->migratable);
    }
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

CpuModelExpansionInfo *qmp_query_cpu_model_expansion(CpuModelExpansionType type,
                                                     const CpuModelInfo *model,
                                                     Error **errp)
{
    CpuModelExpansionInfo *info;
    CpuModel m;
    bool full = type == CPU_MODEL_EXPANSION_TYPE_FULL;

    if (!cpu_model_init(&m, model->name, errp)) {
        return NULL;
    }
    if (!cpu_model_apply(&m, model->props, errp)) {
        g_free(m.features);
        return NULL;
    }
    info = g_new0(CpuModelExpansionInfo, 1);
    info->model = g_new0(CpuModelInfo, 1);
    info->model->name = g_strdup(full ? m.name : "base");
    info->model->props = cpu_model_props(&m, full);
    g_free(m.features);
    return info;
}

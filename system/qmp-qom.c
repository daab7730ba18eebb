/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qom-list and qom-get over the objects this binary has, at QEMU's paths:
 *   /machine                        the machine
 *   /machine/unattached/device[N]   vCPU N (QEMU's path for it too)
 *   /machine/peripheral             the devices created with an id
 *   /machine/peripheral/ID          one of them
 * A vCPU's properties are QEMU's basic ones and the CPUID features -cpu
 * takes, each true if the vCPU has it. libvirt reads them after start.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands.h"
#include "hw/boards.h"
#include "system/cpus.h"
#include "system/kvm.h"
#include "qom-tree.h"

typedef struct Peripheral {
    char *id;
    char *type;
} Peripheral;

/* Main thread: filled while parsing, read by the monitor. */
static GPtrArray *peripherals;

bool qom_peripheral_add(const char *id, const char *type, Error **errp)
{
    Peripheral *p;

    for (guint i = 0; peripherals && i < peripherals->len; i++) {
        if (!strcmp(((Peripheral *)g_ptr_array_index(peripherals, i))->id, id)) {
            error_setg(errp, "Duplicate ID '%s' for device", id);
            return false;
        }
    }
    if (!peripherals) {
        peripherals = g_ptr_array_new();
    }
    p = g_new0(Peripheral, 1);
    p->id = g_strdup(id);
    p->type = g_strdup(type);
    g_ptr_array_add(peripherals, p);
    return true;
}

static const Peripheral *peripheral_find(const char *id)
{
    for (guint i = 0; peripherals && i < peripherals->len; i++) {
        Peripheral *p = g_ptr_array_index(peripherals, i);

        if (!strcmp(p->id, id)) {
            return p;
        }
    }
    return NULL;
}

typedef enum { QOM_NONE, QOM_MACHINE, QOM_CPU, QOM_PERIPHERALS, QOM_PERIPHERAL } QomKind;

typedef struct QomObject {
    QomKind kind;
    int cpu;                    /* QOM_CPU */
    const Peripheral *dev;      /* QOM_PERIPHERAL */
} QomObject;

static QomObject qom_resolve(const char *path)
{
    QomObject o = { QOM_NONE };
    int n, end = 0;

    if (!strcmp(path, "/machine")) {
        o.kind = current_machine ? QOM_MACHINE : QOM_NONE;
    } else if (!strcmp(path, "/machine/peripheral")) {
        o.kind = QOM_PERIPHERALS;
    } else if (g_str_has_prefix(path, "/machine/peripheral/")) {
        o.dev = peripheral_find(path + strlen("/machine/peripheral/"));
        o.kind = o.dev ? QOM_PERIPHERAL : QOM_NONE;
    } else if (sscanf(path, "/machine/unattached/device[%d]%n", &n, &end) == 1 &&
               path[end] == '\0' && n >= 0 && vcpus && n < (int)vcpus->len) {
        o.kind = QOM_CPU;
        o.cpu = n;
    }
    return o;
}

static void add_prop(JsonArray *list, const char *name, const char *type)
{
    JsonObject *o = json_object_new();

    json_object_set_string_member(o, "name", name);
    json_object_set_string_member(o, "type", type);
    json_array_add_object_element(list, o);
}

static const char *const cpu_bool_props[] = {
    "realized", "hotplugged", "hotpluggable", "start-powered-off", "migratable",
};

JsonNode *qmp_qom_list(JsonObject *args, Error **errp)
{
    const char *path = json_object_get_string_member(args, "path");
    QomObject o = qom_resolve(path);
    JsonArray *list;
    JsonNode *n;

    if (o.kind == QOM_NONE) {
        error_set(errp, ERROR_CLASS_DEVICE_NOT_FOUND, "Device '%s' not found", path);
        return NULL;
    }
    list = json_array_new();
    add_prop(list, "type", "string");
    switch (o.kind) {
    case QOM_MACHINE:
        add_prop(list, "peripheral", "child<container>");
        add_prop(list, "unattached", "child<container>");
        break;
    case QOM_CPU:
        for (size_t i = 0; i < G_N_ELEMENTS(cpu_bool_props); i++) {
            add_prop(list, cpu_bool_props[i], "bool");
        }
        for (size_t i = 0; kvm_cpu_feature_name(i); i++) {
            add_prop(list, kvm_cpu_feature_name(i), "bool");
        }
        break;
    case QOM_PERIPHERALS:
        for (guint i = 0; peripherals && i < peripherals->len; i++) {
            Peripheral *p = g_ptr_array_index(peripherals, i);
            g_autofree char *t = g_strdup_printf("child<%s>", p->type);

            add_prop(list, p->id, t);
        }
        break;
    case QOM_PERIPHERAL:
        add_prop(list, "realized", "bool");
        break;
    case QOM_NONE:
        break;
    }
    n = json_node_alloc();
    json_node_init_array(n, list);
    json_array_unref(list);
    return n;
}

static JsonNode *bool_node(bool v)
{
    JsonNode *n = json_node_alloc();

    json_node_init_boolean(n, v);
    return n;
}

static JsonNode *string_node(const char *s)
{
    JsonNode *n = json_node_alloc();

    json_node_init_string(n, s);
    return n;
}

JsonNode *qmp_qom_get(JsonObject *args, Error **errp)
{
    const char *path = json_object_get_string_member(args, "path");
    const char *prop = json_object_get_string_member(args, "property");
    QomObject o = qom_resolve(path);
    int feature;

    if (o.kind == QOM_NONE) {
        error_set(errp, ERROR_CLASS_DEVICE_NOT_FOUND, "Device '%s' not found", path);
        return NULL;
    }
    if (!strcmp(prop, "type")) {
        return string_node(o.kind == QOM_MACHINE ? MACHINE_TYPE_NAME "-machine" :
                           o.kind == QOM_CPU ? "host-x86_64-cpu" :
                           o.kind == QOM_PERIPHERAL ? o.dev->type : "container");
    }
    if (o.kind == QOM_CPU) {
        if (!strcmp(prop, "realized")) {
            return bool_node(true);
        }
        if (!strcmp(prop, "hotplugged") || !strcmp(prop, "hotpluggable") ||
            !strcmp(prop, "start-powered-off")) {
            return bool_node(false);
        }
        if (!strcmp(prop, "migratable")) {
            return bool_node(kvm_cpu_migratable());
        }
        feature = kvm_cpu_feature_index(prop);
        if (feature >= 0) {
            return bool_node(kvm_cpu_feature_enabled(feature));
        }
    }
    if (o.kind == QOM_PERIPHERAL && !strcmp(prop, "realized")) {
        return bool_node(true);
    }
    error_setg(errp, "Property '%s' not found", prop);
    return NULL;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qom-list and qom-get over the objects this binary has, at QEMU's paths
 * (absolute, or partial as "unattached" for the one path ending so):
 *   /                               the root
 *   /machine                        the machine
 *   /machine/unattached             the vCPUs' container
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

typedef enum {
    QOM_NONE, QOM_ROOT, QOM_MACHINE, QOM_UNATTACHED, QOM_CPU, QOM_PERIPHERALS, QOM_PERIPHERAL
} QomKind;

typedef struct QomObject {
    QomKind kind;
    int cpu;                    /* QOM_CPU */
    const Peripheral *dev;      /* QOM_PERIPHERAL */
} QomObject;

/*
 * Every object of the tree, each by its components from the root:
 * calls @fn for each until it returns true. The tree is small and
 * changes only while the command line is parsed, so it is walked, not kept.
 */
typedef bool QomVisit(const QomObject *o, const char *const *parts, void *opaque);

static bool qom_visit(QomVisit *fn, void *opaque)
{
    const char *machine[] = { "machine", NULL };
    const char *containers[] = { "machine", "peripheral", NULL };
    QomObject o = { QOM_ROOT };
    const char *root[] = { NULL };

    if (fn(&o, root, opaque)) {
        return true;
    }
    if (!current_machine) {
        return false;
    }
    o.kind = QOM_MACHINE;
    if (fn(&o, machine, opaque)) {
        return true;
    }
    o.kind = QOM_PERIPHERALS;
    if (fn(&o, containers, opaque)) {
        return true;
    }
    containers[1] = "unattached";
    o.kind = QOM_UNATTACHED;
    if (fn(&o, containers, opaque)) {
        return true;
    }
    for (guint i = 0; vcpus && i < vcpus->len; i++) {
        g_autofree char *name = g_strdup_printf("device[%u]", i);
        const char *parts[] = { "machine", "unattached", name, NULL };
        QomObject cpu = { QOM_CPU, .cpu = i };

        if (fn(&cpu, parts, opaque)) {
            return true;
        }
    }
    for (guint i = 0; peripherals && i < peripherals->len; i++) {
        Peripheral *p = g_ptr_array_index(peripherals, i);
        const char *parts[] = { "machine", "peripheral", p->id, NULL };
        QomObject dev = { QOM_PERIPHERAL, .dev = p };

        if (fn(&dev, parts, opaque)) {
            return true;
        }
    }
    return false;
}

typedef struct QomLookup {
    const char *const *want;    /* the path's components, empty ones dropped */
    bool partial;               /* a path without the leading '/' */
    QomObject found;
    int matches;
} QomLookup;

static guint qom_parts_length(const char *const *parts)
{
    guint n = 0;

    while (parts[n]) {
        n++;
    }
    return n;
}

/*
 * QEMU's two kinds of path: "/a/b" from the root (empty components are
 * skipped: "//" is the root), and a partial "a/b" that names the one
 * object whose path ends that way.
 */
static bool qom_match(const QomObject *o, const char *const *parts, void *opaque)
{
    QomLookup *l = opaque;
    guint have = qom_parts_length(parts), want = qom_parts_length(l->want);

    if (l->partial ? want > have : want != have) {
        return false;
    }
    for (guint i = 0; i < want; i++) {
        if (strcmp(parts[have - want + i], l->want[i])) {
            return false;
        }
    }
    l->found = *o;
    /* A partial path must be unique: look on for a second match. */
    return !l->partial || ++l->matches > 1;
}

static QomObject qom_resolve(const char *path, Error **errp)
{
    g_auto(GStrv) split = g_strsplit(path, "/", -1);
    g_autoptr(GPtrArray) want = g_ptr_array_new();
    QomLookup l = { .partial = path[0] != '/', .found = { QOM_NONE } };

    for (guint i = 0; split[i]; i++) {
        if (split[i][0]) {
            g_ptr_array_add(want, split[i]);
        }
    }
    g_ptr_array_add(want, NULL);
    l.want = (const char *const *)want->pdata;
    qom_visit(qom_match, &l);
    /* QEMU: every object ends with "", so an empty partial path is ambiguous. */
    if (l.partial && (l.matches > 1 || !want->pdata[0])) {
        error_setg(errp, "Path '%s' is ambiguous", path);
        return (QomObject) { QOM_NONE };
    }
    if (l.found.kind == QOM_NONE) {
        error_set(errp, ERROR_CLASS_DEVICE_NOT_FOUND, "Device '%s' not found", path);
    }
    return l.found;
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
    QomObject o = qom_resolve(path, errp);
    JsonArray *list;
    JsonNode *n;

    if (o.kind == QOM_NONE) {
        return NULL;
    }
    list = json_array_new();
    add_prop(list, "type", "string");
    switch (o.kind) {
    case QOM_ROOT:
        add_prop(list, "machine", "child<" MACHINE_TYPE_NAME "-machine>");
        break;
    case QOM_UNATTACHED:
        for (guint i = 0; vcpus && i < vcpus->len; i++) {
            g_autofree char *name = g_strdup_printf("device[%u]", i);

            add_prop(list, name, "child<host-x86_64-cpu>");
        }
        break;
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
    QomObject o = qom_resolve(path, errp);
    int feature;

    if (o.kind == QOM_NONE) {
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

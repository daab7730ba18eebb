/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What this binary is, for management software that probes it before
 * using it (libvirt starts it with -machine none and asks): the target,
 * the machine types, the CPU models, the object types and the properties
 * each takes, and answers for the optional features it has not (TPM, SEV,
 * SGX). Every answer is what the command line and the devices accept;
 * a type or property is listed here only if -device, -object, -machine
 * or -cpu takes it.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands.h"
#include "hw/boards.h"
#include "system/kvm.h"

/* -smp's own limit (vl.c); KVM's may be lower. */
#define SMP_MAX_CPUS 1024

typedef struct ProbeProp {
    const char *name;
    const char *type;
    const char *description;
    /* default-value: JSON text, or NULL for none */
    const char *default_json;
} ProbeProp;

typedef struct ProbeType {
    const char *name;
    const char *parent;
    bool abstract;
    bool device;                /* device-list-properties describes it */
    const ProbeProp *props;     /* ended by a NULL name; NULL: none */
    bool cpu;                   /* and the CPUID features -cpu takes */
} ProbeType;

static const ProbeProp machine_props[] = {
    { "memory-backend", "link<memory-backend>", "the RAM backend's id (-object)", NULL },
    { "max-ram-below-4g", "size", "the most RAM below 4 GiB", NULL },
    { NULL },
};

static const ProbeProp backend_props_common[] = {
    { "size", "size", "the backend's size in bytes", NULL },
    { "share", "bool", "map the memory shared (MAP_SHARED)", "false" },
    { "prealloc", "bool", "allocate all of it at once", "false" },
    { NULL },
};

static const ProbeProp backend_file_props[] = {
    { "size", "size", "the backend's size in bytes", NULL },
    { "share", "bool", "map the memory shared (MAP_SHARED)", "false" },
    { "prealloc", "bool", "allocate all of it at once", "false" },
    { "mem-path", "str", "the file (or directory) to map", NULL },
    { NULL },
};

static const ProbeProp isa_debug_exit_props[] = {
    { "iobase", "uint32", NULL, "1281" },
    { "iosize", "uint32", NULL, "2" },
    { NULL },
};

static const ProbeProp isa_vga_props[] = {
    { "vgamem_mb", "uint32", NULL, "16" },
    { NULL },
};

static const ProbeProp virtio_net_props[] = {
    { "netdev", "str", "ID of a netdev to use as a backend", NULL },
    { "mac", "str", "Ethernet 6-byte MAC Address, example: 52:54:00:12:34:56", NULL },
    { NULL },
};

static const ProbeProp virtio_blk_props[] = {
    { "drive", "str", "Node name or ID of a block device to use as a backend", NULL },
    { "serial", "str", NULL, NULL },
    { "logical_block_size", "size", "A power of two between 512 B and 2 MiB", "0" },
    { "physical_block_size", "size", "A power of two between 512 B and 2 MiB", "0" },
    { "num-queues", "uint16", NULL, "65535" },
    { "bootindex", "int32", NULL, NULL },
    { NULL },
};

static const ProbeProp cpu_props[] = {
    { "migratable", "bool", "leave out what a destination host could not promise (invtsc)",
      "true" },
    { NULL },
};

static const ProbeProp secret_props[] = {
    { "data", "str", "the secret itself", NULL },
    { "file", "str", "a file holding the secret", NULL },
    { "format", "QCryptoSecretFormat", "raw or base64", "\"raw\"" },
    { NULL },
};

/* The tls-creds-* and authz-* objects (system/control/user-object-types.c). */
#define TLS_CREDS_COMMON_PROPS \
    { "endpoint", "QCryptoTLSCredsEndpoint", "client or server", "\"client\"" }, \
    { "dir", "str", "the directory of the certificates and keys", NULL }, \
    { "verify-peer", "bool", "the peer must present a valid certificate", "true" }, \
    { "priority", "str", "a GnuTLS priority string", NULL }

static const ProbeProp tls_creds_props[] = {
    TLS_CREDS_COMMON_PROPS,
    { NULL },
};

static const ProbeProp tls_creds_x509_props[] = {
    TLS_CREDS_COMMON_PROPS,
    { "sanity-check", "bool", "check the certificates when loading them", "true" },
    { "passwordid", "str", "the secret holding the private key's password", NULL },
    { NULL },
};

static const ProbeProp tls_creds_psk_props[] = {
    TLS_CREDS_COMMON_PROPS,
    { "username", "str", "the client's identity", "\"qemu\"" },
    { NULL },
};

static const ProbeProp authz_simple_props[] = {
    { "identity", "str", "the one identity allowed", NULL },
    { NULL },
};

static const ProbeProp authz_list_props[] = {
    { "policy", "QAuthZListPolicy", "the answer when no rule matches", "\"deny\"" },
    { "rules", "QAuthZListRule", "the rules, tried in order", NULL },
    { NULL },
};

static const ProbeProp authz_listfile_props[] = {
    { "filename", "str", "the JSON file of the policy and rules", NULL },
    { "refresh", "bool", "read the file again when it changes", "true" },
    { NULL },
};

static const ProbeProp isa_serial_props[] = {
    { "chardev", "str", "ID of a chardev to use as a backend", NULL },
    { "index", "uint32", NULL, "0" },
    { "iobase", "uint32", NULL, "1016" },
    { "irq", "uint32", NULL, "4" },
    { NULL },
};

/*
 * The PIIX4 power-management function's two sleep-state switches, listed
 * as QEMU lists them: libvirt writes <pm> (virt-install does by default) as
 * -global PIIX4_PM.disable_s3/disable_s4 only when the binary has them, and
 * refuses the domain otherwise. microvm never has this PCI function (its
 * one sleep state is S5, through the generic event device), so, as in
 * QEMU, the globals are taken with nothing to disable and -device refuses
 * the type (vl-devices.c, vl-parse.c).
 */
static const ProbeProp piix4_pm_props[] = {
    { "disable_s3", "uint8", NULL, "0" },
    { "disable_s4", "uint8", NULL, "0" },
    { NULL },
};

static const ProbeType probe_types[] = {
    { "object", NULL, true },
    { "machine", "object", true },
    { MACHINE_TYPE_NAME "-machine", "machine", false, false, machine_props },
    { "none-machine", "machine", false },
    { "cpu", "device", true },
    { "x86_64-cpu", "cpu", true },
    { "host-x86_64-cpu", "x86_64-cpu", false, false, cpu_props, true },
    { "max-x86_64-cpu", "x86_64-cpu", false, false, cpu_props, true },
    { "memory-backend", "object", true, false, backend_props_common },
    { "memory-backend-ram", "memory-backend", false, false, backend_props_common },
    { "memory-backend-memfd", "memory-backend", false, false, backend_props_common },
    { "memory-backend-file", "memory-backend", false, false, backend_file_props },
    { "secret", "object", false, false, secret_props },
    { "tls-creds", "object", true, false, tls_creds_props },
    { "tls-creds-x509", "tls-creds", false, false, tls_creds_x509_props },
    { "tls-creds-psk", "tls-creds", false, false, tls_creds_psk_props },
    { "tls-creds-anon", "tls-creds", false, false, tls_creds_props },
    { "authz", "object", true },
    { "authz-simple", "authz", false, false, authz_simple_props },
    { "authz-list", "authz", false, false, authz_list_props },
    { "authz-list-file", "authz", false, false, authz_listfile_props },
    { "authz-listfile", "authz", false, false, authz_listfile_props },
    { "device", "object", true },
    { "isa-serial", "isa-device", false, true, isa_serial_props },
    { "isa-device", "device", true },
    { "isa-debug-exit", "isa-device", false, true, isa_debug_exit_props },
    { "isa-vga", "isa-device", false, true, isa_vga_props },
    { "pci-device", "device", true },
    { "PIIX4_PM", "pci-device", false, true, piix4_pm_props },
    /*
     * The transport QEMU's microvm puts virtio devices on. libvirt allows
     * <address type='virtio-mmio'/> only when the binary lists this type.
     */
    { "sys-bus-device", "device", true },
    { "virtio-mmio", "sys-bus-device", false, true },
    { "virtio-device", "device", true },
    { "virtio-net-device", "virtio-device", false, true, virtio_net_props },
    { "virtio-blk-device", "virtio-device", false, true, virtio_blk_props },
};

static const ProbeType *probe_type_find(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(probe_types); i++) {
        if (!strcmp(probe_types[i].name, name)) {
            return &probe_types[i];
        }
    }
    return NULL;
}

static bool probe_type_derives(const ProbeType *t, const char *ancestor)
{
    while (t) {
        if (!strcmp(t->name, ancestor)) {
            return true;
        }
        t = t->parent ? probe_type_find(t->parent) : NULL;
    }
    return false;
}

static JsonNode *json_array_node(JsonArray *a)
{
    JsonNode *n = json_node_alloc();

    json_node_init_array(n, a);
    json_array_unref(a);
    return n;
}

JsonNode *qmp_qom_list_types(JsonObject *args, Error **errp)
{
    const char *implements = json_object_has_member(args, "implements") ?
                             json_object_get_string_member(args, "implements") : NULL;
    bool abstract = json_object_has_member(args, "abstract") &&
                    json_object_get_boolean_member(args, "abstract");
    JsonArray *list = json_array_new();

    for (size_t i = 0; i < G_N_ELEMENTS(probe_types); i++) {
        const ProbeType *t = &probe_types[i];
        JsonObject *o;

        if ((t->abstract && !abstract) || (implements && !probe_type_derives(t, implements))) {
            continue;
        }
        o = json_object_new();
        json_object_set_string_member(o, "name", t->name);
        if (t->abstract) {
            json_object_set_boolean_member(o, "abstract", true);
        }
        if (t->parent) {
            json_object_set_string_member(o, "parent", t->parent);
        }
        json_array_add_object_element(list, o);
    }
    return json_array_node(list);
}

static JsonNode *probe_props_node(const ProbeType *t)
{
    JsonArray *list = json_array_new();

    for (const ProbeProp *p = t->props; p && p->name; p++) {
        JsonObject *o = json_object_new();

        json_object_set_string_member(o, "name", p->name);
        json_object_set_string_member(o, "type", p->type);
        if (p->description) {
            json_object_set_string_member(o, "description", p->description);
        }
        if (p->default_json) {
            json_object_set_member(o, "default-value", json_from_string(p->default_json, NULL));
        }
        json_array_add_object_element(list, o);
    }
    for (size_t i = 0; t->cpu && kvm_cpu_feature_name(i); i++) {
        JsonObject *o = json_object_new();

        json_object_set_string_member(o, "name", kvm_cpu_feature_name(i));
        json_object_set_string_member(o, "type", "bool");
        json_array_add_object_element(list, o);
    }
    return json_array_node(list);
}

/* The type @args names, or NULL with QEMU's class and words (@what: "Class" or "Device"). */
static const ProbeType *probe_type_from_args(JsonObject *args, const char *what, Error **errp)
{
    const char *name = json_object_get_string_member(args, "typename");
    const ProbeType *t = probe_type_find(name);

    if (!t) {
        error_set(errp, ERROR_CLASS_DEVICE_NOT_FOUND, "%s '%s' not found", what, name);
    }
    return t;
}

JsonNode *qmp_qom_list_properties(JsonObject *args, Error **errp)
{
    const ProbeType *t = probe_type_from_args(args, "Class", errp);

    return t ? probe_props_node(t) : NULL;
}

JsonNode *qmp_device_list_properties(JsonObject *args, Error **errp)
{
    const ProbeType *t = probe_type_from_args(args, "Device", errp);

    if (!t) {
        return NULL;
    }
    if (!t->device || t->abstract) {
        error_setg(errp, "Parameter 'typename' expects a non-abstract device type");
        return NULL;
    }
    return probe_props_node(t);
}

TargetInfo *qmp_query_target(Error **errp)
{
    TargetInfo *info = g_new0(TargetInfo, 1);

    info->arch = SYS_EMU_TARGET_X86_64;
    return info;
}

static MachineInfo *machine_info(const char *name, bool is_default, int64_t cpu_max,
                                 const char *cpu_type, const char *ram_id)
{
    MachineInfo *m = g_new0(MachineInfo, 1);

    m->name = g_strdup(name);
    m->has_is_default = is_default;
    m->is_default = is_default;
    m->cpu_max = cpu_max;
    m->default_cpu_type = g_strdup(cpu_type);
    m->default_ram_id = g_strdup(ram_id);
    return m;
}

MachineInfoList *qmp_query_machines(Error **errp)
{
    MachineInfoList *none = g_new0(MachineInfoList, 1);
    MachineInfoList *head = g_new0(MachineInfoList, 1);

    head->value = machine_info(MACHINE_TYPE_NAME, true,
                               kvm_state ? MIN(SMP_MAX_CPUS, kvm_state->max_vcpus) : SMP_MAX_CPUS,
                               "host-x86_64-cpu",
                               MACHINE_TYPE_NAME ".ram");
    none->value = machine_info("none", false, 1, NULL, NULL);
    head->next = none;
    return head;
}

static CpuDefinitionInfoList *cpu_definition(const char *name, CpuDefinitionInfoList *next)
{
    CpuDefinitionInfoList *e = g_new0(CpuDefinitionInfoList, 1);
    CpuDefinitionInfo *d = g_new0(CpuDefinitionInfo, 1);

    d->name = g_strdup(name);
    d->has_migration_safe = true;
    d->migration_safe = false;
    d->typename = g_strdup_printf("%s-x86_64-cpu", name);
    e->value = d;
    e->next = next;
    return e;
}

/* -cpu takes host and max, both KVM's host CPU here. */
CpuDefinitionInfoList *qmp_query_cpu_definitions(Error **errp)
{
    return cpu_definition("host", cpu_definition("max", NULL));
}

strList *qmp_query_tpm_models(Error **errp)
{
    return NULL;
}

strList *qmp_query_tpm_types(Error **errp)
{
    return NULL;
}

SevCapability *qmp_query_sev_capabilities(Error **errp)
{
    error_setg(errp, "SEV is not available in this QEMU");
    return NULL;
}

SgxInfo *qmp_query_sgx_capabilities(Error **errp)
{
    error_setg(errp, "SGX is not available in this QEMU");
    return NULL;
}

IOThreadInfoList *qmp_query_iothreads(Error **errp)
{
    return NULL;
}

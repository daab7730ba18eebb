/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * KVM binary statistics (KVM_GET_STATS_FD) for query-stats, HMP
 * "info stats" and scripts/qemu-mig-kvmstat. Each VM/vCPU stats fd is opened once
 * and read with pread, which needs no vCPU lock: a running guest is not
 * disturbed by a reader.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands.h"
#include "system/cpus.h"
#include "system/kvm.h"

/* Stats descriptors (with their trailing names) and a data buffer, per fd. */
typedef struct KVMStatsSource {
    int fd;
    struct kvm_stats_header hdr;
    uint8_t *descs;             /* num_desc entries of desc_size bytes */
    size_t desc_size;
    uint64_t *data;
    size_t data_words;
} KVMStatsSource;

/* Opened on first use from the main thread (BQL), kept for the process life. */
static KVMStatsSource *vm_stats;
static GPtrArray *vcpu_stats;

/* Reads the layout of stats fd @fd (which it takes over). */
static KVMStatsSource *kvm_stats_open_fd(int fd, Error **errp)
{
    g_autofree KVMStatsSource *src = g_new0(KVMStatsSource, 1);
    size_t words = 0;

    if (fd < 0) {
        error_setg(errp, "KVM binary statistics are not available");
        return NULL;
    }
    if (pread(fd, &src->hdr, sizeof(src->hdr), 0) != sizeof(src->hdr) ||
        src->hdr.num_desc > 4096 || src->hdr.name_size > 4096) {
        error_setg(errp, "bad KVM stats header");
        close(fd);
        return NULL;
    }
    src->desc_size = sizeof(struct kvm_stats_desc) + src->hdr.name_size;
    src->descs = g_malloc0(src->desc_size * src->hdr.num_desc);
    if (pread(fd, src->descs, src->desc_size * src->hdr.num_desc, src->hdr.desc_offset) !=
        (ssize_t)(src->desc_size * src->hdr.num_desc)) {
        error_setg(errp, "reading KVM stats descriptors failed");
        g_free(src->descs);
        close(fd);
        return NULL;
    }
    for (uint32_t i = 0; i < src->hdr.num_desc; i++) {
        struct kvm_stats_desc *d = (void *)(src->descs + i * src->desc_size);
        d->name[src->hdr.name_size - 1] = '\0';
        words = MAX(words, d->offset / 8 + d->size);
    }
    src->data_words = words;
    src->data = g_new0(uint64_t, words);
    src->fd = fd;
    return g_steal_pointer(&src);
}

static struct kvm_stats_desc *kvm_stats_desc(KVMStatsSource *src, uint32_t i)
{
    return (struct kvm_stats_desc *)(src->descs + i * src->desc_size);
}

static bool kvm_stats_refresh(KVMStatsSource *src)
{
    ssize_t len = src->data_words * 8;

    return pread(src->fd, src->data, len, src->hdr.data_offset) == len;
}

static KVMStatsSource *kvm_stats_vm(Error **errp)
{
    if (!vm_stats && kvm_state) {
        int fd = ioctl(kvm_state->vmfd, KVM_GET_STATS_FD, NULL);
        vm_stats = kvm_stats_open_fd(fd, errp);
    }
    return vm_stats;
}

static KVMStatsSource *kvm_stats_vcpu(CPUState *cpu, Error **errp)
{
    if (!vcpu_stats) {
        vcpu_stats = g_ptr_array_new();
    }
    while (vcpu_stats->len <= (guint)cpu->cpu_index) {
        g_ptr_array_add(vcpu_stats, NULL);
    }
    if (!g_ptr_array_index(vcpu_stats, cpu->cpu_index)) {
        /*
         * The fd was opened when the vCPU was created: KVM_GET_STATS_FD is a
         * vCPU ioctl and would wait for KVM_RUN to return, which an AP that
         * waits for INIT/SIPI never does.
         */
        g_ptr_array_index(vcpu_stats, cpu->cpu_index) = kvm_stats_open_fd(cpu->stats_fd, errp);
        cpu->stats_fd = -1;
    }
    return g_ptr_array_index(vcpu_stats, cpu->cpu_index);
}

static bool name_wanted(JsonArray *names, const char *name)
{
    if (!names) {
        return true;
    }
    for (guint i = 0; i < json_array_get_length(names); i++) {
        if (!strcmp(json_array_get_string_element(names, i), name)) {
            return true;
        }
    }
    return false;
}

static JsonNode *kvm_stats_result(KVMStatsSource *src, const char *qom_path, JsonArray *names)
{
    JsonObject *res = json_object_new();
    JsonArray *stats = json_array_new();
    JsonNode *node = json_node_new(JSON_NODE_OBJECT);

    kvm_stats_refresh(src);
    for (uint32_t i = 0; i < src->hdr.num_desc; i++) {
        struct kvm_stats_desc *d = kvm_stats_desc(src, i);
        JsonObject *st;
        uint64_t *v = src->data + d->offset / 8;
        uint32_t type = d->flags & KVM_STATS_TYPE_MASK;

        if (!name_wanted(names, d->name)) {
            continue;
        }
        st = json_object_new();
        json_object_set_string_member(st, "name", d->name);
        if (type == KVM_STATS_TYPE_LINEAR_HIST || type == KVM_STATS_TYPE_LOG_HIST) {
            JsonArray *list = json_array_new();
            for (uint32_t k = 0; k < d->size; k++) {
                json_array_add_int_element(list, v[k]);
            }
            json_object_set_array_member(st, "value", list);
        } else if ((d->flags & KVM_STATS_UNIT_MASK) == KVM_STATS_UNIT_BOOLEAN) {
            json_object_set_boolean_member(st, "value", v[0] != 0);
        } else {
            json_object_set_int_member(st, "value", v[0]);
        }
        json_array_add_object_element(stats, st);
    }
    json_object_set_string_member(res, "provider", "kvm");
    if (qom_path) {
        json_object_set_string_member(res, "qom-path", qom_path);
    }
    json_object_set_array_member(res, "stats", stats);
    json_node_take_object(node, res);
    return node;
}

static bool vcpu_wanted(JsonArray *vcpus, const char *qom_path)
{
    return name_wanted(vcpus, qom_path);
}

JsonNode *qmp_query_stats(JsonObject *args, Error **errp)
{
    const char *target = json_object_get_string_member(args, "target");
    JsonArray *providers = json_object_has_member(args, "providers") ?
                           json_object_get_array_member(args, "providers") : NULL;
    JsonArray *vcpu_filter = json_object_has_member(args, "vcpus") ?
                             json_object_get_array_member(args, "vcpus") : NULL;
    GPtrArray *all_vcpus = vcpus;
    JsonArray *names = NULL;
    JsonArray *out = json_array_new();
    JsonNode *node = json_node_new(JSON_NODE_ARRAY);
    bool want_kvm = !providers;

    for (guint i = 0; providers && i < json_array_get_length(providers); i++) {
        JsonObject *p = json_array_get_object_element(providers, i);
        if (!strcmp(json_object_get_string_member(p, "provider"), "kvm")) {
            want_kvm = true;
            names = json_object_has_member(p, "names") ?
                    json_object_get_array_member(p, "names") : NULL;
        }
    }
    json_node_take_array(node, out);
    if (!want_kvm || !kvm_state) {
        return node;
    }
    if (!strcmp(target, "vm")) {
        KVMStatsSource *src = kvm_stats_vm(errp);
        if (!src) {
            json_node_unref(node);
            return NULL;
        }
        json_array_add_element(out, kvm_stats_result(src, NULL, names));
    } else if (!strcmp(target, "vcpu")) {
        for (guint i = 0; all_vcpus && i < all_vcpus->len; i++) {
            CPUState *cpu = g_ptr_array_index(all_vcpus, i);
            g_autofree char *path = g_strdup_printf("/machine/unattached/device[%d]",
                                                    cpu->cpu_index);
            KVMStatsSource *src;

            if (!vcpu_wanted(vcpu_filter, path)) {
                continue;
            }
            src = kvm_stats_vcpu(cpu, errp);
            if (!src) {
                json_node_unref(node);
                return NULL;
            }
            json_array_add_element(out, kvm_stats_result(src, path, names));
        }
    }
    return node;
}

static StatsSchemaValueList *kvm_stats_schema_values(KVMStatsSource *src)
{
    StatsSchemaValueList *head = NULL, **tail = &head;

    for (uint32_t i = 0; i < src->hdr.num_desc; i++) {
        struct kvm_stats_desc *d = kvm_stats_desc(src, i);
        StatsSchemaValue *v = g_new0(StatsSchemaValue, 1);
        StatsSchemaValueList *e = g_new0(StatsSchemaValueList, 1);
        uint32_t unit = d->flags & KVM_STATS_UNIT_MASK;

        v->name = g_strdup(d->name);
        v->type = (d->flags & KVM_STATS_TYPE_MASK) >> KVM_STATS_TYPE_SHIFT;
        if (unit != KVM_STATS_UNIT_NONE) {
            v->has_unit = true;
            v->unit = (unit >> KVM_STATS_UNIT_SHIFT) - 1;
            v->has_base = true;
            v->base = (d->flags & KVM_STATS_BASE_MASK) == KVM_STATS_BASE_POW2 ? 2 : 10;
        }
        v->exponent = d->exponent;
        if ((d->flags & KVM_STATS_TYPE_MASK) == KVM_STATS_TYPE_LINEAR_HIST) {
            v->has_bucket_size = true;
            v->bucket_size = d->bucket_size;
        }
        e->value = v;
        *tail = e;
        tail = &e->next;
    }
    return head;
}

StatsSchemaList *qmp_query_stats_schemas(bool has_provider, StatsProvider provider,
                                         Error **errp)
{
    StatsSchemaList *head = NULL, **tail = &head;
    KVMStatsSource *vm, *vcpu;

    if ((has_provider && provider != STATS_PROVIDER_KVM) || !kvm_state || !vcpus || !vcpus->len) {
        return NULL;
    }
    vm = kvm_stats_vm(errp);
    vcpu = vm ? kvm_stats_vcpu(g_ptr_array_index(vcpus, 0), errp) : NULL;
    if (!vcpu) {
        return NULL;
    }
    for (int t = 0; t < 2; t++) {
        StatsSchema *s = g_new0(StatsSchema, 1);
        StatsSchemaList *e = g_new0(StatsSchemaList, 1);

        s->provider = STATS_PROVIDER_KVM;
        s->target = t ? STATS_TARGET_VCPU : STATS_TARGET_VM;
        s->stats = kvm_stats_schema_values(t ? vcpu : vm);
        e->value = s;
        *tail = e;
        tail = &e->next;
    }
    return head;
}

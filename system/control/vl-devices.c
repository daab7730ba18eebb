/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The command line's devices and objects: -device (isa-debug-exit,
 * virtio-net-device, virtio-blk-device, isa-vga), -object memory-backend-*, checked into the
 * Config while parsing and created by qemu_init() in its order (vl.c);
 * the other -object types go to the object registry (user-objects.c).
 */
#include "qemu/osdep.h"
#include <json-glib/json-glib.h>
#include "qapi/error.h"
#include "qemu/option.h"
#include "hw/boards.h"
#include "hw/virtio/virtio-blk.h"
#include "hw/virtio/virtio-net.h"
#include "net/net.h"
#include "system/memory.h"
#include "system/user-objects.h"
#include "vl-config.h"
#include "vl-devices.h"
#include "qom-tree.h"

QemuOpts *vl_opts_parse_json_or_keyval(const char *arg, const char *implied_key, Error **errp)
{
    g_autoptr(GError) gerr = NULL;
    g_autoptr(JsonNode) root = NULL;
    g_autoptr(QemuOpts) opts = NULL;
    JsonObject *obj;
    GList *members;

    if (arg[0] != '{') {
        return qemu_opts_parse(arg, implied_key, errp);
    }
    root = json_from_string(arg, &gerr);
    if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
        error_setg(errp, "JSON parse error: %s", gerr ? gerr->message : "not an object");
        return NULL;
    }
    obj = json_node_get_object(root);
    opts = qemu_opts_new();
    members = json_object_get_members(obj);
    for (GList *l = members; l; l = l->next) {
        const char *key = l->data;
        JsonNode *v = json_object_get_member(obj, key);
        g_autofree char *text = NULL;

        if (!JSON_NODE_HOLDS_VALUE(v)) {
            error_setg(errp, "Parameter '%s': only strings, numbers and booleans are taken", key);
            g_list_free(members);
            return NULL;
        }
        switch (json_node_get_value_type(v) == G_TYPE_INT64 ? 'i' :
                json_node_get_value_type(v) == G_TYPE_BOOLEAN ? 'b' :
                json_node_get_value_type(v) == G_TYPE_STRING ? 's' : '?') {
        case 'i':
            text = g_strdup_printf("%" PRId64, json_node_get_int(v));
            break;
        case 'b':
            text = g_strdup(json_node_get_boolean(v) ? "on" : "off");
            break;
        case 's':
            text = g_strdup(json_node_get_string(v));
            break;
        default:
            error_setg(errp, "Parameter '%s' expects a string, an integer or a boolean", key);
            g_list_free(members);
            return NULL;
        }
        qemu_opt_set(opts, key, text);
    }
    g_list_free(members);
    return g_steal_pointer(&opts);
}

/*
 * -device isa-serial,chardev=ID[,index=0][,iobase=0x3f8][,irq=4]: microvm's
 * COM1 on that chardev (libvirt's spelling of -serial chardev:ID).
 */
static bool parse_isa_serial(Config *cfg, QemuOpts *opts, Error **errp)
{
    static const char *const known[] = { "driver", "id", "chardev", "index", "iobase", "irq",
                                         NULL };
    const char *chardev = qemu_opt_get(opts, "chardev");
    uint64_t index, iobase, irq;

    if (!qemu_opts_check_known(opts, known, errp) ||
        !qemu_opt_get_number(opts, "index", 0, &index, errp) ||
        !qemu_opt_get_number(opts, "iobase", 0x3f8, &iobase, errp) ||
        !qemu_opt_get_number(opts, "irq", 4, &irq, errp)) {
        return false;
    }
    if (index != 0 || iobase != 0x3f8 || irq != 4) {
        error_setg(errp, "microvm has one serial port: index 0, iobase 0x3f8, irq 4");
        return false;
    }
    if (!chardev) {
        error_setg(errp, "Property 'isa-serial.chardev' is required");
        return false;
    }
    if (cfg->serial_spec) {
        error_setg(errp, "microvm has a single serial port");
        return false;
    }
    cfg->serial_spec = g_strdup_printf("chardev:%s", chardev);
    return true;
}

/* Checked now, created after the backends (vl_create_virtio_devices). */
static bool parse_virtio_net_device(Config *cfg, const char *arg, QemuOpts *opts,
                                    Error **errp)
{
    VirtIONetConf *conf = g_new0(VirtIONetConf, 1);

    if (qemu_opt_has(opts, "help")) {
        virtio_net_print_help();
        exit(0);
    }
    if (!virtio_net_conf_parse(opts, conf, errp)) {
        g_free(conf);
        return false;
    }
    conf->opt = g_strdup_printf("-device %s", arg);
    g_ptr_array_add(cfg->nic_devices, conf);
    g_string_append_c(cfg->virtio_order, 'n');
    return true;
}

/* Checked now, created after the drives (vl_create_virtio_devices). */
static bool parse_virtio_blk_device(Config *cfg, const char *arg, QemuOpts *opts,
                                    Error **errp)
{
    VirtIOBlkConf *conf = g_new0(VirtIOBlkConf, 1);

    if (qemu_opt_has(opts, "help")) {
        virtio_blk_print_help();
        exit(0);
    }
    if (!virtio_blk_conf_parse(opts, conf, errp)) {
        g_free(conf);
        return false;
    }
    conf->opt = g_strdup_printf("-device %s", arg);
    g_ptr_array_add(cfg->blk_devices, conf);
    g_string_append_c(cfg->virtio_order, 'b');
    return true;
}

bool vl_parse_device(Config *cfg, const char *arg, Error **errp)
{
    static const char *const known[] = { "driver", "iobase", "iosize", "id", NULL };
    g_autoptr(QemuOpts) opts = vl_opts_parse_json_or_keyval(arg, "driver", errp);
    const char *driver;

    if (!opts) {
        return false;
    }
    driver = qemu_opt_get(opts, "driver");
    if (driver && strcmp(driver, "help") && qemu_opt_get(opts, "id") &&
        !qom_peripheral_add(qemu_opt_get(opts, "id"), driver, errp)) {
        return false;
    }
    if (driver && !strcmp(driver, "help")) {
        printf("Storage devices:\nname \"virtio-blk-device\", bus virtio-bus\n\n"
               "Network devices:\nname \"virtio-net-device\", bus virtio-bus\n\n"
               "Display devices:\nname \"isa-vga\", bus ISA\n\n"
               "Input devices:\nname \"isa-serial\", bus ISA\n\n"
               "Misc devices:\nname \"isa-debug-exit\", bus ISA\n");
        exit(0);
    }
    if (driver && !strcmp(driver, "isa-serial")) {
        return parse_isa_serial(cfg, opts, errp);
    }
    if (driver && !strcmp(driver, "virtio-net-device")) {
        return parse_virtio_net_device(cfg, arg, opts, errp);
    }
    if (driver && !strcmp(driver, "virtio-blk-device")) {
        return parse_virtio_blk_device(cfg, arg, opts, errp);
    }
    if (driver && !strcmp(driver, "isa-vga")) {
        if (qemu_opt_has(opts, "help")) {
            printf("isa-vga options:\n  vgamem_mb=<uint32>     -  (default: 8)\n");
            exit(0);
        }
        if (!isa_vga_parse(opts, &cfg->machine.vga, errp)) {
            return false;
        }
        cfg->machine.vga.virtio_before = cfg->virtio_order->len;
        return true;
    }
    if (driver && !strcmp(driver, "PIIX4_PM")) {
        /* Listed for its -global switches (qmp-probe.c), never pluggable: QEMU's words. */
        error_setg(errp, "Parameter 'driver' expects a pluggable device type");
        return false;
    }
    if (!driver || strcmp(driver, "isa-debug-exit")) {
        error_setg(errp, "'%s' is not a valid device model name", driver ? driver : "");
        return false;
    }
    if (cfg->machine.debug_exit.present) {
        error_setg(errp, "only one isa-debug-exit device is supported");
        return false;
    }
    if (!qemu_opts_check_known(opts, known, errp) ||
        !qemu_opt_get_number(opts, "iobase", 0x501, &cfg->machine.debug_exit.iobase, errp) ||
        !qemu_opt_get_number(opts, "iosize", 2, &cfg->machine.debug_exit.iosize, errp)) {
        return false;
    }
    cfg->machine.debug_exit.present = true;
    return true;
}

static bool is_memory_backend(const char *type)
{
    return type && (!strcmp(type, "memory-backend-ram") || !strcmp(type, "memory-backend-memfd") ||
                    !strcmp(type, "memory-backend-file"));
}

/*
 * A JSON -object that is not a memory backend: made now from the whole
 * JSON (authz-list's rules are an array, which the QemuOpts path cannot
 * hold).
 */
static bool vl_add_json_object(const char *arg, bool *handled, Error **errp)
{
    g_autoptr(GError) gerr = NULL;
    g_autoptr(JsonNode) root = json_from_string(arg, &gerr);
    JsonObject *obj;
    JsonNode *type;

    if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
        error_setg(errp, "JSON parse error: %s", gerr ? gerr->message : "not an object");
        *handled = true;
        return false;
    }
    obj = json_node_get_object(root);
    type = json_object_get_member(obj, "qom-type");
    if (type && JSON_NODE_HOLDS_VALUE(type) && json_node_get_value_type(type) == G_TYPE_STRING &&
        is_memory_backend(json_node_get_string(type))) {
        *handled = false;
        return true;
    }
    *handled = true;
    return user_objects_add_json(obj, USER_OBJECT_CMDLINE, errp);
}

/*
 * -object: memory backends are checked now and made by qemu_init() with
 * the machine; every other type is the object registry's, made now, in
 * command-line order, so a secret exists before the credentials naming it.
 */
bool vl_parse_object(Config *cfg, const char *arg, Error **errp)
{
    QemuOpts *opts;
    const char *type;

    if (arg[0] == '{') {
        bool handled;
        bool ok = vl_add_json_object(arg, &handled, errp);

        if (handled) {
            return ok;
        }
    }
    opts = vl_opts_parse_json_or_keyval(arg, "qom-type", errp);
    if (!opts) {
        return false;
    }
    type = qemu_opt_get(opts, "qom-type");
    if (!is_memory_backend(type)) {
        qemu_opts_del(opts);
        return user_objects_add_text(arg, USER_OBJECT_CMDLINE, errp);
    }
    if (!qemu_opt_get(opts, "id")) {
        error_setg(errp, "Parameter 'id' is missing");
        qemu_opts_del(opts);
        return false;
    }
    g_ptr_array_add(cfg->object_opts, opts);
    return true;
}

bool vl_create_memory_backend(QemuOpts *opts, Error **errp)
{
    static const char *const known[] = {
        "qom-type", "id", "size", "share", "prealloc", "mem-path", "merge", "dump", "policy",
        "host-nodes", "hugetlb", "seal", "discard-data", "reserve", "x-use-canonical-path-for-ramblock-id",
        NULL,
    };
    const char *type = qemu_opt_get(opts, "qom-type");
    RAMBackendOpts o = { .id = qemu_opt_get(opts, "id") };
    bool hugetlb = false;

    if (!qemu_opts_check_known(opts, known, errp) ||
        !qemu_opt_get_size(opts, "size", 0, &o.size, errp) ||
        !qemu_opt_get_bool(opts, "share", false, &o.share, errp) ||
        !qemu_opt_get_bool(opts, "prealloc", false, &o.prealloc, errp) ||
        !qemu_opt_get_bool(opts, "hugetlb", false, &hugetlb, errp)) {
        return false;
    }
    if (!o.size) {
        error_setg(errp, "can't create backend with size 0");
        return false;
    }
    if (hugetlb) {
        error_setg(errp, "hugetlb memory is not supported");
        return false;
    }
    if (!strcmp(type, "memory-backend-ram")) {
        o.kind = RAM_BACKEND_ANON;
    } else if (!strcmp(type, "memory-backend-memfd")) {
        o.kind = RAM_BACKEND_MEMFD;
    } else {
        o.kind = RAM_BACKEND_FILE;
        o.mem_path = qemu_opt_get(opts, "mem-path");
        if (!o.mem_path) {
            error_setg(errp, "can't create backend with 'mem-path' unset");
            return false;
        }
    }
    return ram_block_create(&o, errp) != NULL;
}

/*
 * The virtio devices, before the machine (which gives each a virtio-mmio
 * slot in this order): -device ones in command-line order, whatever their
 * kind, then one virtio-net per -nic, as QEMU creates its board NICs after
 * -device.
 */
void vl_create_virtio_devices(Config *cfg, BlockLayer *bl)
{
    Error *err = NULL;
    NICInfo *nd;
    guint n_net = 0, n_blk = 0;

    cfg->machine.virtio_devices = cfg->machine.virtio_devices ?: g_ptr_array_new();
    for (gsize i = 0; i < cfg->virtio_order->len; i++) {
        VirtIODevice *vdev;
        const char *opt;

        if (cfg->virtio_order->str[i] == 'n') {
            VirtIONetConf *conf = g_ptr_array_index(cfg->nic_devices, n_net++);
            VirtIONet *n = virtio_net_create(conf, &err);

            opt = conf->opt;
            vdev = n ? &n->vdev : NULL;
        } else {
            VirtIOBlkConf *conf = g_ptr_array_index(cfg->blk_devices, n_blk++);
            VirtIOBlock *b = virtio_blk_create(bl, conf, &err);

            opt = conf->opt;
            vdev = b ? &b->vdev : NULL;
        }
        if (!vdev) {
            error_prepend(&err, "%s: ", opt);
            error_report_err(err);
            exit(1);
        }
        g_ptr_array_add(cfg->machine.virtio_devices, vdev);
    }
    while ((nd = net_nic_take("virtio-net-device"))) {
        VirtIONetConf conf = { .netdev = nd->netdev->name, .mac = nd->mac, .mac_given = true };
        VirtIONet *n = virtio_net_create(&conf, &err);

        if (!n) {
            error_prepend(&err, "%s: ", nd->opt);
            error_report_err(err);
            exit(1);
        }
        g_ptr_array_add(cfg->machine.virtio_devices, &n->vdev);
    }
}

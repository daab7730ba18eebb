/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The command line's devices and objects: -device (isa-debug-exit,
 * virtio-net-device, isa-vga), -object memory-backend-*, checked into the
 * Config while parsing and created by qemu_init() in its order (vl.c).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/option.h"
#include "hw/boards.h"
#include "hw/virtio/virtio-net.h"
#include "net/net.h"
#include "system/memory.h"
#include "vl.h"

/* Checked now, created after the backends (vl_create_virtio_net_devices). */
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
    return true;
}

bool vl_parse_device(Config *cfg, const char *arg, Error **errp)
{
    static const char *const known[] = { "driver", "iobase", "iosize", "id", NULL };
    g_autoptr(QemuOpts) opts = qemu_opts_parse(arg, "driver", errp);
    const char *driver;

    if (!opts) {
        return false;
    }
    driver = qemu_opt_get(opts, "driver");
    if (driver && !strcmp(driver, "help")) {
        printf("Network devices:\nname \"virtio-net-device\", bus virtio-bus\n\n"
               "Display devices:\nname \"isa-vga\", bus ISA\n\n"
               "Misc devices:\nname \"isa-debug-exit\", bus ISA\n");
        exit(0);
    }
    if (driver && !strcmp(driver, "virtio-net-device")) {
        return parse_virtio_net_device(cfg, arg, opts, errp);
    }
    if (driver && !strcmp(driver, "isa-vga")) {
        if (qemu_opt_has(opts, "help")) {
            printf("isa-vga options:\n  vgamem_mb=<uint32>     -  (default: 16)\n");
            exit(0);
        }
        return isa_vga_parse(opts, &cfg->machine.vga, errp);
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

bool vl_parse_object(Config *cfg, const char *arg, Error **errp)
{
    QemuOpts *opts = qemu_opts_parse(arg, "qom-type", errp);
    const char *type;

    if (!opts) {
        return false;
    }
    type = qemu_opt_get(opts, "qom-type");
    if (!type || (strcmp(type, "memory-backend-ram") && strcmp(type, "memory-backend-memfd") &&
                  strcmp(type, "memory-backend-file"))) {
        error_setg(errp, "invalid object type: %s", type ? type : "");
        qemu_opts_del(opts);
        return false;
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
 * The virtio-net devices, before the machine (which gives each a
 * virtio-mmio slot in this order): -device ones in command-line order,
 * then one per -nic, as QEMU creates its board NICs after -device.
 */
void vl_create_virtio_net_devices(Config *cfg)
{
    Error *err = NULL;
    NICInfo *nd;

    cfg->machine.virtio_devices = cfg->machine.virtio_devices ?: g_ptr_array_new();
    for (guint i = 0; i < cfg->nic_devices->len; i++) {
        VirtIONetConf *conf = g_ptr_array_index(cfg->nic_devices, i);
        VirtIONet *n = virtio_net_create(conf, &err);

        if (!n) {
            error_prepend(&err, "%s: ", conf->opt);
            error_report_err(err);
            exit(1);
        }
        g_ptr_array_add(cfg->machine.virtio_devices, &n->vdev);
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

void vl_virtio_net_conf_destroy(gpointer p)
{
    virtio_net_conf_free(p);
    g_free(p);
}


/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Config's life: made empty before the command line is parsed, freed
 * once qemu_init() has created everything from it (vl-config.h).
 */
#include "qemu/osdep.h"
#include "qemu/option.h"
#include "hw/virtio/virtio-blk.h"
#include "hw/virtio/virtio-net.h"
#include "net/net.h"
#include "vl-config.h"

void vl_config_init(Config *cfg)
{
    *cfg = (Config) { 0 };
    cfg->chardev_opts = g_ptr_array_new();
    cfg->chardev_args = g_ptr_array_new_with_free_func(g_free);
    cfg->object_opts = g_ptr_array_new();
    cfg->monitors = g_ptr_array_new();
    cfg->netdevs = net_pending_new();
    cfg->nic_devices = g_ptr_array_new();
    cfg->drive_args = g_ptr_array_new_with_free_func(g_free);
    cfg->blockdev_args = g_ptr_array_new_with_free_func(g_free);
    cfg->blk_devices = g_ptr_array_new();
    cfg->virtio_order = g_string_new("");
}

static void monitor_config_free(gpointer p)
{
    MonitorConfig *mc = p;

    g_free(mc->spec);
    g_free(mc->chardev_id);
    g_free(mc);
}

static void virtio_net_conf_destroy(gpointer p)
{
    virtio_net_conf_free(p);
    g_free(p);
}

static void virtio_blk_conf_destroy(gpointer p)
{
    virtio_blk_conf_free(p);
    g_free(p);
}

void vl_config_free(Config *cfg)
{
    g_free(cfg->serial_spec);
    g_free(cfg->machine_accel);
    g_free(cfg->pidfile);
    g_free(cfg->incoming);
    g_free(cfg->cpr_incoming);
    g_ptr_array_set_free_func(cfg->chardev_opts, (GDestroyNotify)qemu_opts_del);
    g_ptr_array_set_free_func(cfg->object_opts, (GDestroyNotify)qemu_opts_del);
    g_ptr_array_set_free_func(cfg->monitors, monitor_config_free);
    g_ptr_array_free(cfg->chardev_opts, TRUE);
    g_ptr_array_free(cfg->chardev_args, TRUE);
    g_ptr_array_free(cfg->object_opts, TRUE);
    g_ptr_array_free(cfg->monitors, TRUE);
    g_ptr_array_unref(cfg->netdevs);
    g_ptr_array_free(cfg->drive_args, TRUE);
    g_ptr_array_free(cfg->blockdev_args, TRUE);
    g_ptr_array_set_free_func(cfg->nic_devices, virtio_net_conf_destroy);
    g_ptr_array_free(cfg->nic_devices, TRUE);
    g_ptr_array_set_free_func(cfg->blk_devices, virtio_blk_conf_destroy);
    g_ptr_array_free(cfg->blk_devices, TRUE);
    g_string_free(cfg->virtio_order, TRUE);
}

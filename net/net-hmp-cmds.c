/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * HMP for the network: info network, info usernet, hostfwd_add and
 * hostfwd_remove, printed and worded as QEMU's. QEMU has no QMP command
 * for any of them, so these call the net layer directly (main loop, BQL).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "monitor/hmp.h"
#include "monitor/monitor.h"
#include "net/net.h"
#include "net/slirp.h"

static void hmp_print_net_client(Monitor *mon, NetClientState *nc)
{
    /* index is the queue index; every client here has one queue. */
    monitor_printf(mon, "%s: index=0,type=%s,%s\n", nc->name,
                   net_client_driver_str(nc->info->type), nc->info_str);
}

void hmp_info_network(Monitor *mon, const HMPArgs *args)
{
    GPtrArray *all = net_clients();

    for (guint i = 0; i < all->len; i++) {
        NetClientState *nc = g_ptr_array_index(all, i);
        bool nic = nc->info->type == NET_CLIENT_DRIVER_NIC;

        /* A backend with a NIC is printed under that NIC. */
        if (!nc->peer || nic) {
            hmp_print_net_client(mon, nc);
        }
        if (nc->peer && nic) {
            monitor_printf(mon, " \\ ");
            hmp_print_net_client(mon, nc->peer);
        }
    }
}

void hmp_info_usernet(Monitor *mon, const HMPArgs *args)
{
    GPtrArray *all = net_clients();

    for (guint i = 0; i < all->len; i++) {
        NetClientState *nc = g_ptr_array_index(all, i);
        g_autofree char *info = NULL;

        if (nc->info->type != NET_CLIENT_DRIVER_USER) {
            continue;
        }
        info = net_slirp_connection_info(nc);
        /* There are no hubs here, so QEMU's hub number is always -1. */
        monitor_printf(mon, "Hub -1 (%s):\n%s", nc->name, info);
    }
}

/* The user backend @id names, or the first one when @id is NULL. */
static NetClientState *hmp_slirp_lookup(Monitor *mon, const char *id)
{
    GPtrArray *all = net_clients();
    NetClientState *nc;

    if (id) {
        nc = net_find_netdev(id);
        if (!nc) {
            monitor_printf(mon, "unrecognized netdev id '%s'\n", id);
            return NULL;
        }
        if (nc->info->type != NET_CLIENT_DRIVER_USER) {
            monitor_printf(mon, "invalid device specified\n");
            return NULL;
        }
        return nc;
    }
    for (guint i = 0; i < all->len; i++) {
        nc = g_ptr_array_index(all, i);
        if (nc->info->type == NET_CLIENT_DRIVER_USER) {
            return nc;
        }
    }
    monitor_printf(mon, "user mode network stack not in use\n");
    return NULL;
}

/* "[netdev_id] RULE": one argument is the rule, two are the id and the rule. */
static NetClientState *hmp_slirp_args(Monitor *mon, const HMPArgs *args, const char **rule)
{
    const char *arg1 = hmp_arg_str(args, "arg1");
    const char *arg2 = hmp_arg_str(args, "arg2");

    *rule = arg2 ? arg2 : arg1;
    return hmp_slirp_lookup(mon, arg2 ? arg1 : NULL);
}

void hmp_hostfwd_add(Monitor *mon, const HMPArgs *args)
{
    const char *rule;
    NetClientState *nc = hmp_slirp_args(mon, args, &rule);
    Error *err = NULL;

    if (nc && !net_slirp_hostfwd_add(nc, rule, &err)) {
        /* QEMU reports it with error_report(), which in HMP is the bare message. */
        monitor_printf(mon, "%s\n", error_get_pretty(err));
        error_free(err);
    }
}

void hmp_hostfwd_remove(Monitor *mon, const HMPArgs *args)
{
    const char *rule;
    NetClientState *nc = hmp_slirp_args(mon, args, &rule);
    int ret;

    if (!nc) {
        return;
    }
    ret = net_slirp_hostfwd_remove(nc, rule);
    if (ret < 0) {
        monitor_printf(mon, "invalid format\n");
        return;
    }
    monitor_printf(mon, "host forwarding rule for %s %s\n", rule, ret ? "removed" : "not found");
}

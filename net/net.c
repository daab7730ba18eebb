/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Net clients and the frames between peers. A frame goes straight to the
 * peer's receive() unless frames already wait for the peer or it refuses;
 * then it waits in the peer's queue, which never holds more than
 * NET_QUEUE_MAX_FRAMES (a guest that stops taking frames costs at most that
 * much memory). Everything here runs under the BQL (see include/net/net.h).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/cutils.h"
#include "qemu/main-loop.h"
#include "net/net.h"
#include "trace/trace.h"

typedef struct NetPacket {
    NetClientState *sender;
    NetPacketSent *sent_cb;
    size_t len;
    uint8_t data[];
} NetPacket;

/* Every client, in creation order (BQL). */
static GPtrArray *clients;

static const char *const driver_names[] = {
    [NET_CLIENT_DRIVER_NIC] = "nic",
    [NET_CLIENT_DRIVER_USER] = "user",
};

const char *net_client_driver_str(NetClientDriver type)
{
    return type < G_N_ELEMENTS(driver_names) ? driver_names[type] : "unknown";
}

GPtrArray *net_clients(void)
{
    if (!clients) {
        clients = g_ptr_array_new();
    }
    return clients;
}

/*
 * The client named @name among the backends (@netdev) or the NICs: the two
 * are separate namespaces, as QEMU's -netdev ids and -device ids are.
 */
static NetClientState *net_find_client(const char *name, bool netdev)
{
    GPtrArray *all = net_clients();

    for (guint i = 0; i < all->len; i++) {
        NetClientState *nc = g_ptr_array_index(all, i);

        if (nc->is_netdev == netdev && !strcmp(nc->name, name)) {
            return nc;
        }
    }
    return NULL;
}

/* "MODEL.N" with the first N no client uses, as QEMU names anonymous clients. */
static char *net_client_default_name(const char *model, bool netdev)
{
    for (unsigned n = 0;; n++) {
        char *name = g_strdup_printf("%s.%u", model, n);

        if (!net_find_client(name, netdev)) {
            return name;
        }
        g_free(name);
    }
}

NetClientState *net_client_new(const NetClientInfo *info, const char *model,
                               const char *name, void *opaque)
{
    NetClientState *nc = g_new0(NetClientState, 1);

    assert(bql_locked());
    nc->is_netdev = info->type != NET_CLIENT_DRIVER_NIC;
    assert(!name || !net_find_client(name, nc->is_netdev));
    nc->info = info;
    nc->model = g_strdup(model);
    nc->name = name ? g_strdup(name) : net_client_default_name(model, nc->is_netdev);
    nc->info_str = g_strdup("");
    nc->opaque = opaque;
    g_queue_init(&nc->incoming);
    g_ptr_array_add(net_clients(), nc);
    return nc;
}

/* Drops the frames waiting for @to that @sender sent (every sender if NULL). */
static void net_queue_purge(NetClientState *to, NetClientState *sender)
{
    GList *l = to->incoming.head;

    while (l) {
        GList *next = l->next;
        NetPacket *p = l->data;

        if (!sender || p->sender == sender) {
            g_queue_delete_link(&to->incoming, l);
            g_free(p);
        }
        l = next;
    }
}

void net_client_free(NetClientState *nc)
{
    assert(bql_locked());
    if (nc->peer) {
        net_queue_purge(nc->peer, nc);
        nc->peer->peer = NULL;
        nc->peer = NULL;
    }
    net_queue_purge(nc, NULL);
    if (nc->info->cleanup) {
        nc->info->cleanup(nc);
    }
    g_ptr_array_remove(net_clients(), nc);
    g_free(nc->name);
    g_free(nc->model);
    g_free(nc->info_str);
    g_free(nc);
}

void net_client_set_info_str(NetClientState *nc, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    g_free(nc->info_str);
    nc->info_str = g_strdup_vprintf(fmt, ap);
    va_end(ap);
}

NetClientState *net_find_netdev(const char *id)
{
    return net_find_client(id, true);
}

NetClientState *net_nic_new(const NetClientInfo *info, const char *model,
                            const char *name, const char *netdev_id,
                            const MACAddr *mac, void *opaque, Error **errp)
{
    NetClientState *backend = netdev_id ? net_find_netdev(netdev_id) : NULL;
    g_autofree char *macstr = net_macaddr_str(mac);
    NetClientState *nc;

    assert(info->type == NET_CLIENT_DRIVER_NIC);
    if (netdev_id && !backend) {
        error_setg(errp, "Property '%s.netdev' can't find value '%s'", model, netdev_id);
        return NULL;
    }
    if (backend && backend->peer) {
        error_setg(errp, "Property '%s.netdev' can't take value '%s', it's in use",
                   model, netdev_id);
        return NULL;
    }
    if (name && net_find_client(name, false)) {
        error_setg(errp, "Duplicate ID '%s' for device", name);
        return NULL;
    }
    nc = net_client_new(info, model, name, opaque);
    net_client_set_info_str(nc, "model=%s,macaddr=%s", model, macstr);
    if (backend) {
        nc->peer = backend;
        backend->peer = nc;
    }
    return nc;
}

/* 0 when @to cannot take a frame now, else what its receive() returned. */
static ssize_t net_deliver(NetClientState *to, const uint8_t *buf, size_t len)
{
    if (to->info->can_receive && !to->info->can_receive(to)) {
        return 0;
    }
    return to->info->receive(to, buf, len);
}

ssize_t net_send_packet_async(NetClientState *nc, const uint8_t *buf, size_t len,
                              NetPacketSent *sent_cb)
{
    NetClientState *peer = nc->peer;
    NetPacket *p;

    assert(bql_locked());
    if (len == 0 || len > NET_MAX_FRAME_LEN) {
        return -EMSGSIZE;
    }
    if (!peer) {
        return len;
    }
    /*
     * A frame may jump the queue only when nothing waits: otherwise a
     * receiver that just became ready would see frames out of order.
     */
    if (g_queue_is_empty(&peer->incoming) && !peer->flushing) {
        ssize_t ret = net_deliver(peer, buf, len);

        if (ret != 0) {
            return ret;
        }
    }
    if (peer->incoming.length >= NET_QUEUE_MAX_FRAMES) {
        peer->dropped++;
        TRACE_EVENT(net_queue_full, "to=%s from=%s len=%zu dropped=%" PRIu64,
                    peer->name, nc->name, len, peer->dropped);
        return -ENOBUFS;
    }
    p = g_malloc(sizeof(*p) + len);
    p->sender = nc;
    p->sent_cb = sent_cb;
    p->len = len;
    memcpy(p->data, buf, len);
    g_queue_push_tail(&peer->incoming, p);
    return 0;
}

ssize_t net_send_packet(NetClientState *nc, const uint8_t *buf, size_t len)
{
    return net_send_packet_async(nc, buf, len, NULL);
}

void net_flush_queued_packets(NetClientState *nc)
{
    assert(bql_locked());
    /*
     * receive() may send back (slirp answers at once) or call us again;
     * the outer loop keeps delivering, so a nested call has nothing to do.
     */
    if (nc->flushing) {
        return;
    }
    nc->flushing = true;
    while (!g_queue_is_empty(&nc->incoming)) {
        NetPacket *p = g_queue_peek_head(&nc->incoming);
        ssize_t ret = net_deliver(nc, p->data, p->len);

        if (ret == 0) {
            break;
        }
        g_queue_pop_head(&nc->incoming);
        if (p->sent_cb) {
            p->sent_cb(p->sender, ret);
        }
        g_free(p);
    }
    nc->flushing = false;
}

size_t net_queued_packets(NetClientState *nc)
{
    return nc->incoming.length;
}

bool net_id_wellformed(const char *id)
{
    return id_wellformed(id);
}

bool net_parse_macaddr(const char *str, MACAddr *mac)
{
    const char *p = str;

    for (int i = 0; i < 6; i++) {
        unsigned v = 0;
        int digits = 0;

        while (g_ascii_isxdigit(*p) && digits < 2) {
            v = v * 16 + g_ascii_xdigit_value(*p++);
            digits++;
        }
        if (!digits || (i < 5 && *p != ':' && *p != '-') || (i == 5 && *p)) {
            return false;
        }
        mac->a[i] = v;
        p += i < 5;
    }
    return true;
}

char *net_macaddr_str(const MACAddr *mac)
{
    return g_strdup_printf("%02x:%02x:%02x:%02x:%02x:%02x", mac->a[0], mac->a[1],
                           mac->a[2], mac->a[3], mac->a[4], mac->a[5]);
}

/*
 * QEMU's default addresses are 52:54:00:12:34:NN from NN = 0x56 up; a set
 * entry is an NN some NIC has, given or defaulted, so that a default never
 * repeats an address given on the command line before it. Main thread,
 * during init.
 */
static bool mac_default_used[256];

static bool net_macaddr_is_default_range(const MACAddr *mac)
{
    static const uint8_t base[5] = { 0x52, 0x54, 0x00, 0x12, 0x34 };

    return !memcmp(mac->a, base, sizeof(base)) && mac->a[5] >= 0x56;
}

void net_macaddr_mark_used(const MACAddr *mac)
{
    if (net_macaddr_is_default_range(mac)) {
        mac_default_used[mac->a[5]] = true;
    }
}

void net_macaddr_default(MACAddr *mac)
{
    const MACAddr base = { { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 } };
    unsigned nn = 0x56;

    /* All taken: QEMU then hands out ..:ff again and again; so do we. */
    while (nn < 0xff && mac_default_used[nn]) {
        nn++;
    }
    *mac = base;
    mac->a[5] = nn;
    net_macaddr_mark_used(mac);
}

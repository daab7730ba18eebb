/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * virtio-net: the data path and the crossing between the device thread
 * (queues, guest RAM, no BQL) and the main loop (the net layer and slirp,
 * BQL). See include/hw/virtio/virtio-net.h for the picture and
 * docs/devel/virtio.md for the reasoning.
 *
 * Who runs what:
 *   device thread   virtio_net_handle_tx(), virtio_net_handle_rx()
 *   main loop (BQL) virtio_net_doorbell(), receive()/can_receive(), the
 *                   sent callback, and the control plane (start, stop,
 *                   reset, config reads, migration)
 * The two share only the rings and flags under ring_lock, which is a leaf:
 * nothing else is taken, and no call that can block is made, while it is held.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "qemu/option.h"
#include "migration/vmstate.h"
#include "qemu/tsan.h"
#include "hw/virtio/virtio-net.h"
#include <glib-unix.h>
#include <sys/eventfd.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ids.h>
#include <linux/virtio_net.h>

/* ---- Rings (ring_lock held) ---- */

static bool ring_full(const VirtIONetRing *r)
{
    return r->count >= VIRTIO_NET_RING_FRAMES || r->bytes >= VIRTIO_NET_RING_BYTES;
}

/* Appends @f; returns whether the ring was empty before (the consumer may sleep). */
static bool ring_push(VirtIONetRing *r, VirtIONetFrame *f)
{
    assert(r->count < VIRTIO_NET_RING_FRAMES);
    r->slot[(r->head + r->count) % VIRTIO_NET_RING_FRAMES] = f;
    r->count++;
    r->bytes += f->len;
    return r->count == 1;
}

static VirtIONetFrame *ring_peek(const VirtIONetRing *r)
{
    return r->count ? r->slot[r->head] : NULL;
}

static VirtIONetFrame *ring_pop(VirtIONetRing *r)
{
    VirtIONetFrame *f = ring_peek(r);

    if (f) {
        r->head = (r->head + 1) % VIRTIO_NET_RING_FRAMES;
        r->count--;
        r->bytes -= f->len;
    }
    return f;
}

static void ring_clear(VirtIONetRing *r)
{
    VirtIONetFrame *f;

    while ((f = ring_pop(r))) {
        g_free(f);
    }
    r->head = 0;
}

static void virtio_net_lock(VirtIONet *n)
{
    tsan_g_mutex_lock(&n->ring_lock);
}

static void virtio_net_unlock(VirtIONet *n)
{
    tsan_g_mutex_unlock(&n->ring_lock);
}

/* Wakes the main loop (virtio_net_doorbell). Any thread. */
static void virtio_net_ring_doorbell(VirtIONet *n)
{
    uint64_t one = 1;

    /* EAGAIN: the counter is full, and so the fd readable already. */
    while (write(n->doorbell_fd, &one, sizeof(one)) < 0 && errno == EINTR) {
    }
}

/* ---- Device thread: TX ---- */

/*
 * One chain from the TX queue into a frame, the chain returned at once:
 * the guest may reuse its buffer as soon as the bytes are copied. NULL
 * with the device broken if the chain makes no sense.
 */
static VirtIONetFrame *virtio_net_tx_take(VirtIONet *n, VirtQueue *vq, VirtQueueElement *e)
{
    VirtIONetFrame *f;
    size_t len;

    if (e->out_len < VIRTIO_NET_HDR_LEN) {
        virtio_error(&n->vdev, "TX chain of %zu bytes is shorter than the %d-byte header",
                     e->out_len, VIRTIO_NET_HDR_LEN);
        return NULL;
    }
    len = e->out_len - VIRTIO_NET_HDR_LEN;
    if (len > VIRTIO_NET_MAX_FRAME) {
        virtio_error(&n->vdev, "TX frame of %zu bytes is larger than %d", len,
                     VIRTIO_NET_MAX_FRAME);
        return NULL;
    }
    /* The header's offload fields mean nothing without offloads: skipped. */
    f = g_malloc(sizeof(*f) + len);
    f->len = virtqueue_elem_read(e, VIRTIO_NET_HDR_LEN, f->data, len);
    virtqueue_push(vq, e, 0);
    return f;
}

/*
 * Moves TX chains into the tx ring until the queue is empty or the ring is
 * full. Returns false when it stopped because of a full ring.
 */
static bool virtio_net_tx_drain(VirtIONet *n, VirtQueue *vq, bool *pushed)
{
    for (;;) {
        VirtQueueElement *e;
        VirtIONetFrame *f;
        bool was_empty;

        virtio_net_lock(n);
        if (ring_full(&n->tx)) {
            /* The main loop kicks the TX queue once it has made room. */
            n->tx_stalled = true;
            virtio_net_unlock(n);
            return false;
        }
        virtio_net_unlock(n);
        e = virtqueue_pop(vq);
        if (!e) {
            return true;
        }
        f = virtio_net_tx_take(n, vq, e);
        g_free(e);
        if (!f) {
            return true;        /* broken: every queue is stopped now */
        }
        *pushed = true;
        if (!f->len) {
            __atomic_fetch_add(&n->tx_dropped, 1, __ATOMIC_RELAXED);
            g_free(f);
            continue;
        }
        virtio_net_lock(n);
        was_empty = ring_push(&n->tx, f);
        virtio_net_unlock(n);
        if (was_empty) {
            virtio_net_ring_doorbell(n);
        }
    }
}

static void virtio_net_handle_tx(VirtIONet *n, VirtQueue *vq)
{
    bool pushed = false;

    /* No kicks while we drain; after, look once more for what came meanwhile. */
    do {
        virtqueue_set_notification(vq, false);
        if (!virtio_net_tx_drain(n, vq, &pushed)) {
            break;
        }
        virtqueue_set_notification(vq, true);
    } while (!virtqueue_empty(vq));
    if (pushed) {
        virtio_notify(&n->vdev, vq);
    }
}

/* ---- Device thread (or the BQL holder while it is stopped): RX ---- */

/* Writes @f into @e behind a header that says "nothing to do, one buffer". */
static void virtio_net_rx_fill(VirtQueue *vq, VirtQueueElement *e, const VirtIONetFrame *f)
{
    uint8_t hdr[VIRTIO_NET_HDR_LEN] = { 0 };
    uint16_t num_buffers = GUINT16_TO_LE(1);

    /* The spec wants num_buffers = 1 when mergeable buffers are not negotiated. */
    memcpy(hdr + 10, &num_buffers, 2);
    virtqueue_elem_write(e, 0, hdr, sizeof(hdr));
    virtqueue_elem_write(e, VIRTIO_NET_HDR_LEN, f->data, f->len);
    virtqueue_push(vq, e, VIRTIO_NET_HDR_LEN + f->len);
}

/*
 * Moves frames from the rx ring into posted buffers until one of them runs
 * out. Whoever owns the queues calls it: the device thread, or the BQL
 * holder while the thread is joined.
 */
static void virtio_net_rx_deliver(VirtIONet *n, VirtQueue *vq)
{
    bool pushed = false, wake_main = false;

    for (;;) {
        VirtIONetFrame *f;
        VirtQueueElement *e;

        virtio_net_lock(n);
        f = ring_peek(&n->rx);
        virtio_net_unlock(n);
        if (!f) {
            /* Nothing to deliver: the driver's refills need not wake us. */
            virtqueue_set_notification(vq, false);
            break;
        }
        e = virtqueue_pop(vq);
        if (!e) {
            /* Ask for a kick when buffers come, then look once more. */
            virtqueue_set_notification(vq, true);
            if (!virtqueue_empty(vq)) {
                continue;
            }
            virtio_net_lock(n);
            n->rx_stalled = true;
            virtio_net_unlock(n);
            break;
        }
        if (e->in_len < VIRTIO_NET_HDR_LEN) {
            virtio_error(&n->vdev, "RX buffer of %zu bytes cannot hold the %d-byte header",
                         e->in_len, VIRTIO_NET_HDR_LEN);
            g_free(e);
            break;
        }
        if (e->in_len - VIRTIO_NET_HDR_LEN < f->len) {
            /* Without mergeable buffers a frame must fit one chain: drop the frame. */
            virtqueue_unpop(vq, e);
            __atomic_fetch_add(&n->rx_dropped, 1, __ATOMIC_RELAXED);
        } else {
            virtio_net_rx_fill(vq, e, f);
            __atomic_fetch_add(&n->rx_frames, 1, __ATOMIC_RELAXED);
            pushed = true;
        }
        g_free(e);
        virtio_net_lock(n);
        g_free(ring_pop(&n->rx));
        n->rx_stalled = false;
        /* Frames the net layer holds for us can come now. */
        wake_main |= n->rx_refused;
        virtio_net_unlock(n);
    }
    if (pushed) {
        virtio_notify(&n->vdev, vq);
    }
    if (wake_main) {
        virtio_net_ring_doorbell(n);
    }
}

static void virtio_net_queue_notify(VirtIODevice *vdev, VirtQueue *vq)
{
    VirtIONet *n = container_of(vdev, VirtIONet, vdev);

    if (vq->index == VIRTIO_NET_TX_QUEUE) {
        virtio_net_handle_tx(n, vq);
    } else {
        virtio_net_rx_deliver(n, vq);
    }
}

/* ---- Main loop (BQL): the net layer's side ---- */

static void virtio_net_tx_flush(VirtIONet *n);

/* The peer took the frame it had queued: go on with the rest. */
static void virtio_net_tx_sent(NetClientState *nc, ssize_t ret)
{
    VirtIONet *n = nc->opaque;

    n->tx_waiting = false;
    virtio_net_tx_flush(n);
}

/*
 * Hands the tx ring's frames to the peer, in order, until it is empty or
 * the peer queued one (then virtio_net_tx_sent() carries on). Kicks the TX
 * queue if the device thread had stopped for lack of room.
 */
static void virtio_net_tx_flush(VirtIONet *n)
{
    bool kick = false;

    assert(bql_locked());
    while (!n->tx_waiting) {
        VirtIONetFrame *f;

        virtio_net_lock(n);
        f = ring_pop(&n->tx);
        if (n->tx_stalled && !ring_full(&n->tx)) {
            n->tx_stalled = false;
            kick = true;
        }
        virtio_net_unlock(n);
        if (!f) {
            break;
        }
        /* 0: the peer queued a copy; anything else: taken or dropped there. */
        if (net_send_packet_async(n->nc, f->data, f->len, virtio_net_tx_sent) == 0) {
            n->tx_waiting = true;
        }
        __atomic_fetch_add(&n->tx_frames, 1, __ATOMIC_RELAXED);
        g_free(f);
    }
    if (kick) {
        virtio_queue_kick(&n->vdev, VIRTIO_NET_TX_QUEUE);
    }
}

/* The doorbell: frames to send, or room for frames the net layer holds. */
static gboolean virtio_net_doorbell(gint fd, GIOCondition cond, gpointer opaque)
{
    VirtIONet *n = opaque;
    uint64_t cnt;
    bool flush;

    while (read(fd, &cnt, sizeof(cnt)) < 0 && errno == EINTR) {
    }
    virtio_net_tx_flush(n);
    virtio_net_lock(n);
    flush = n->rx_refused && !n->rx_stalled && !ring_full(&n->rx);
    if (flush) {
        n->rx_refused = false;
    }
    virtio_net_unlock(n);
    if (flush) {
        net_flush_queued_packets(n->nc);
    }
    return G_SOURCE_CONTINUE;
}

/* Whether a frame now would be taken; records a refusal for a later flush. */
static bool virtio_net_rx_has_room_locked(VirtIONet *n)
{
    if (!n->rx_enabled || n->rx_stalled || ring_full(&n->rx)) {
        n->rx_refused = true;
        return false;
    }
    return true;
}

static bool virtio_net_can_receive(NetClientState *nc)
{
    VirtIONet *n = nc->opaque;
    bool ok;

    virtio_net_lock(n);
    ok = virtio_net_rx_has_room_locked(n);
    virtio_net_unlock(n);
    return ok;
}

/* A frame from the backend: copied into the rx ring for the device thread. */
static ssize_t virtio_net_receive(NetClientState *nc, const uint8_t *buf, size_t len)
{
    VirtIONet *n = nc->opaque;
    VirtIONetFrame *f;
    bool was_empty;

    if (len > VIRTIO_NET_MAX_FRAME) {
        return len;             /* no guest buffer could take it: dropped */
    }
    virtio_net_lock(n);
    if (!virtio_net_rx_has_room_locked(n)) {
        virtio_net_unlock(n);
        return 0;               /* the net layer queues it */
    }
    f = g_malloc(sizeof(*f) + len);
    f->len = len;
    memcpy(f->data, buf, len);
    was_empty = ring_push(&n->rx, f);
    virtio_net_unlock(n);
    if (was_empty) {
        virtio_queue_kick(&n->vdev, VIRTIO_NET_RX_QUEUE);
    }
    return len;
}

static const NetClientInfo virtio_net_info = {
    .type = NET_CLIENT_DRIVER_NIC,
    .receive = virtio_net_receive,
    .can_receive = virtio_net_can_receive,
};

/* ---- Control plane (BQL, device thread not running) ---- */

static void virtio_net_get_config(VirtIODevice *vdev, uint8_t *config)
{
    VirtIONet *n = container_of(vdev, VirtIONet, vdev);
    uint16_t status = GUINT16_TO_LE(n->status);

    memcpy(config, n->mac, 6);
    memcpy(config + 6, &status, 2);
}

static bool virtio_net_start(VirtIODevice *vdev, Error **errp)
{
    VirtIONet *n = container_of(vdev, VirtIONet, vdev);

    virtio_net_lock(n);
    n->rx_enabled = true;
    /* Whatever the net layer held while we were stopped comes now. */
    n->rx_refused = true;
    virtio_net_unlock(n);
    virtio_net_ring_doorbell(n);
    return true;
}

/*
 * The device thread is joined (VM stop, reset, a queue change). So that
 * nothing is half-way between the threads when the state is saved: the
 * frames the guest sent go to the backend now, and frames for the guest
 * go into the buffers it posted, if the driver still runs. Frames that
 * find no buffer stay in the rx ring for the next start; a migration does
 * not carry them (nor what the net layer queues), as QEMU carries neither.
 */
static void virtio_net_stop(VirtIODevice *vdev)
{
    VirtIONet *n = container_of(vdev, VirtIONet, vdev);
    VirtQueue *rxq = virtio_get_queue(vdev, VIRTIO_NET_RX_QUEUE);

    virtio_net_lock(n);
    n->rx_enabled = false;
    /* No thread to kick: the next start looks at every queue anyway. */
    n->tx_stalled = false;
    virtio_net_unlock(n);
    virtio_net_tx_flush(n);
    if ((vdev->status & VIRTIO_CONFIG_S_DRIVER_OK) && rxq->ready) {
        virtio_net_rx_deliver(n, rxq);
    }
}

static void virtio_net_reset(VirtIODevice *vdev)
{
    VirtIONet *n = container_of(vdev, VirtIONet, vdev);

    virtio_net_lock(n);
    ring_clear(&n->rx);
    n->rx_stalled = false;
    virtio_net_unlock(n);
    memcpy(n->mac, n->conf_mac.a, 6);
    n->status = VIRTIO_NET_S_LINK_UP;
}

static const VirtIODeviceOps virtio_net_ops = {
    .name = "virtio-net-device",
    .thread_name = "virtio-net",
    .device_id = VIRTIO_ID_NET,
    .num_queues = 2,
    .queue_size = VIRTIO_NET_QUEUE_SIZE,
    .config_size = VIRTIO_NET_CONFIG_SIZE,
    .features = 1ULL << VIRTIO_NET_F_MAC | 1ULL << VIRTIO_NET_F_STATUS,
    .get_config = virtio_net_get_config,
    .reset = virtio_net_reset,
    .start = virtio_net_start,
    .stop = virtio_net_stop,
    .register_mmio_state = virtio_net_mmio_state_register,
    .queue_notify = virtio_net_queue_notify,
};

/* ---- Migration (BQL, device thread stopped): virtio-net-mmio-state.c's ---- */

/*
 * Only the config space: virtio_net_stop() left nothing between the
 * threads that the destination would need (see there); the queues and
 * the driver's features are the transport's.
 */
void virtio_net_mig_save(VirtIODevice *vdev, VirtIONetMigState *m)
{
    VirtIONet *n = container_of(vdev, VirtIONet, vdev);

    memcpy(m->mac, n->mac, 6);
    m->status = n->status;
}

bool virtio_net_mig_check(VirtIODevice *vdev, const VirtIONetMigState *m, Error **errp)
{
    /* We never take the link down, and know no other status bit. */
    if (m->status != VIRTIO_NET_S_LINK_UP) {
        error_setg(errp, "%s: status 0x%x is not 0x%x (link up, the only status this "
                   "device has)", vdev->name, m->status, VIRTIO_NET_S_LINK_UP);
        return false;
    }
    return true;
}

void virtio_net_mig_apply(VirtIODevice *vdev, const VirtIONetMigState *m)
{
    VirtIONet *n = container_of(vdev, VirtIONet, vdev);
    MACAddr mac;
    g_autofree char *macstr = NULL;

    /* Any six bytes are a MAC (QEMU takes a multicast one too): the guest keeps its own. */
    memcpy(n->mac, m->mac, 6);
    memcpy(mac.a, m->mac, 6);
    macstr = net_macaddr_str(&mac);
    net_client_set_info_str(n->nc, "model=%s,macaddr=%s", n->nc->model, macstr);
}

/* ---- Options ---- */

void virtio_net_print_help(void)
{
    printf("virtio-net-device options:\n"
           "  mac=<str>              - Ethernet 6-byte MAC Address, example: 52:54:00:12:34:56\n"
           "  netdev=<str>           - ID of a netdev to use as a backend\n");
}

bool virtio_net_conf_parse(QemuOpts *opts, VirtIONetConf *conf, Error **errp)
{
    static const char *const known[] = { "driver", "netdev", "mac", "id", NULL };
    const char *id = qemu_opt_get(opts, "id");
    const char *mac = qemu_opt_get(opts, "mac");

    memset(conf, 0, sizeof(*conf));
    for (size_t i = 0; i < qemu_opts_count(opts); i++) {
        const char *name = qemu_opts_nth(opts, i)->name;
        bool found = false;

        for (size_t k = 0; known[k] && !found; k++) {
            found = !strcmp(known[k], name);
        }
        if (!found) {
            error_setg(errp, "Property '%s.%s' not found", virtio_net_ops.name, name);
            return false;
        }
    }
    if (id && !net_id_wellformed(id)) {
        error_setg(errp, "Parameter 'id' expects an identifier");
        error_append_hint(errp, "Identifiers consist of letters, digits, '-', '.', '_', "
                          "starting with a letter.\n");
        return false;
    }
    if (mac) {
        if (!net_parse_macaddr(mac, &conf->mac)) {
            error_setg(errp, "Property '%s.mac' doesn't take value '%s'", virtio_net_ops.name,
                       mac);
            return false;
        }
        conf->mac_given = true;
    }
    conf->id = g_strdup(id);
    conf->netdev = g_strdup(qemu_opt_get(opts, "netdev"));
    return true;
}

void virtio_net_conf_free(VirtIONetConf *conf)
{
    g_free(conf->id);
    g_free(conf->netdev);
    g_free(conf->opt);
    memset(conf, 0, sizeof(*conf));
}

/* ---- Creation ---- */

VirtIONet *virtio_net_create(const VirtIONetConf *conf, Error **errp)
{
    g_autofree VirtIONet *n = g_new0(VirtIONet, 1);
    MACAddr mac = conf->mac;

    assert(bql_locked());
    if (!conf->mac_given) {
        net_macaddr_default(&mac);
    } else {
        net_macaddr_mark_used(&mac);
    }
    n->nc = net_nic_new(&virtio_net_info, virtio_net_ops.name, conf->id, conf->netdev,
                        &mac, n, errp);
    if (!n->nc) {
        return NULL;
    }
    if (!virtio_device_init(&n->vdev, &virtio_net_ops, errp)) {
        net_client_free(n->nc);
        return NULL;
    }
    n->doorbell_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (n->doorbell_fd < 0) {
        error_setg_errno(errp, errno, "virtio-net-device: cannot create an eventfd");
        virtio_device_cleanup(&n->vdev);
        net_client_free(n->nc);
        return NULL;
    }
    n->doorbell_watch = g_unix_fd_add(n->doorbell_fd, G_IO_IN, virtio_net_doorbell, n);
    g_mutex_init(&n->ring_lock);
    n->conf_mac = mac;
    memcpy(n->mac, mac.a, 6);
    n->status = VIRTIO_NET_S_LINK_UP;
    return g_steal_pointer(&n);
}

void virtio_net_destroy(VirtIONet *n)
{
    assert(bql_locked());
    virtio_device_cleanup(&n->vdev);
    g_source_remove(n->doorbell_watch);
    close(n->doorbell_fd);
    ring_clear(&n->rx);
    ring_clear(&n->tx);
    g_mutex_clear(&n->ring_lock);
    net_client_free(n->nc);
    g_free(n);
}

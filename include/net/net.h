/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The net-client layer. A backend (-netdev user: net/slirp.c) and a
 * frontend (a NIC device model such as virtio-net) are two NetClientStates
 * that are each other's peer. Either side hands one Ethernet frame at a
 * time to the other with net_send_packet(); a frame the receiver cannot
 * take now waits in the receiver's queue, which is bounded
 * (NET_QUEUE_MAX_FRAMES), until the receiver calls
 * net_flush_queued_packets().
 *
 * Lock rule: every function declared here needs the BQL, and every
 * NetClientInfo callback is called with it held. The slirp backend runs in
 * the main loop, whose callbacks hold the BQL. A frontend calls in from a
 * vCPU thread inside its MMIO handler (which holds the BQL) or from a
 * main-loop handler (an ioeventfd); a frontend whose data path runs without
 * the BQL takes it around these calls, or hands the frame to the main loop
 * with qemu_bh_schedule_oneshot(). Receive callbacks may run from any
 * thread that holds the BQL.
 *
 * What a frontend calls (virtio-net):
 *   net_nic_new()               at realize: pair with -device ...,netdev=ID
 *   net_send_packet[_async]()   a frame from the guest (its TX queue)
 *   net_flush_queued_packets()  the guest gave RX buffers again
 *   net_client_free()           at unrealize
 * and implements NetClientInfo.receive (+ can_receive) for frames to the
 * guest. The machine takes -nic NICs with net_nic_take().
 */
#ifndef NET_NET_H
#define NET_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <glib.h>

#include "qemu/typedefs.h"

/* Frames one client may have waiting for it; more are dropped (counted). */
#define NET_QUEUE_MAX_FRAMES 256
/* Largest frame the layer carries (a 64 KiB GSO frame plus its headers). */
#define NET_MAX_FRAME_LEN (64 * 1024 + 256)

typedef enum NetClientDriver {
    NET_CLIENT_DRIVER_NIC,      /* a frontend; "type=nic" in info network */
    NET_CLIENT_DRIVER_USER,     /* -netdev user (libslirp) */
} NetClientDriver;

typedef struct MACAddr {
    uint8_t a[6];
} MACAddr;

typedef struct NetClientState NetClientState;

/*
 * Called once a frame that net_send_packet_async() queued at the peer has
 * been taken by it; @ret is the peer's receive() result (> 0 or -errno).
 */
typedef void NetPacketSent(NetClientState *sender, ssize_t ret);

typedef struct NetClientInfo {
    NetClientDriver type;
    /*
     * receive: one frame from the peer; @buf is only valid during the call.
     * Returns @len when the frame was taken (or deliberately dropped), 0 when
     * the client cannot take it now (the frame is queued; the client calls
     * net_flush_queued_packets() once it can take frames again), or -errno
     * when the frame is dropped because of an error.
     */
    ssize_t (*receive)(NetClientState *nc, const uint8_t *buf, size_t len);
    /* can_receive: optional. False holds frames in the queue, as receive() 0 does. */
    bool (*can_receive)(NetClientState *nc);
    /* cleanup: optional; frees what the owner keeps, just before @nc is freed. */
    void (*cleanup)(NetClientState *nc);
} NetClientInfo;

struct NetClientState {
    const NetClientInfo *info;  /* set at creation, never changes */
    char *name;                 /* -netdev id, or the NIC's name; unique; immutable */
    char *model;                /* "user", "virtio-net-device"; immutable */
    char *info_str;             /* the rest of its "info network" line (BQL) */
    bool is_netdev;             /* a backend (-netdev, -nic); immutable */
    void *opaque;               /* the owner's state; immutable */
    NetClientState *peer;       /* BQL; NULL while unpaired */
    /* Private to net/net.c, all under the BQL: */
    GQueue incoming;            /* NetPacket: frames waiting for this client */
    uint64_t dropped;           /* frames refused because incoming was full */
    bool flushing;              /* inside net_flush_queued_packets() */
};

const char *net_client_driver_str(NetClientDriver type);

/*
 * net_client_new: a client named @name (NULL: "MODEL.N", the first free N)
 * owned by @opaque, not yet paired. Backends are created this way.
 */
NetClientState *net_client_new(const NetClientInfo *info, const char *model,
                               const char *name, void *opaque);

/*
 * net_client_free: unpair @nc, drop the frames waiting for it and the frames
 * it sent that still wait at its peer (their NetPacketSent is not called),
 * call info->cleanup, and free it.
 */
void net_client_free(NetClientState *nc);

/* net_client_set_info_str: the text after "type=..." in info network. */
void net_client_set_info_str(NetClientState *nc, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

/* net_find_netdev: the backend with id @id, or NULL. */
NetClientState *net_find_netdev(const char *id);

/* net_clients: every client in creation order; the array belongs to net.c. */
GPtrArray *net_clients(void);

/*
 * net_nic_new: a frontend named @name (NULL: "MODEL.N") paired with the
 * backend @netdev_id (NULL: none, a NIC without a cable, as QEMU allows), its
 * info line "model=MODEL,macaddr=MAC". Fails (QEMU's wording, "Property
 * 'MODEL.netdev' can't find value 'n9'") when there is no such backend or it
 * already has a peer, and with "Duplicate ID 'x' for device" when a NIC has
 * that name (backends have their own names: a NIC may share a backend's).
 */
NetClientState *net_nic_new(const NetClientInfo *info, const char *model,
                            const char *name, const char *netdev_id,
                            const MACAddr *mac, void *opaque, Error **errp);

/*
 * net_send_packet_async: hand one frame from @nc to its peer. Frames already
 * waiting at the peer go first, so order is kept.
 * Returns: @len when the peer took it, or when @nc has no peer (a cable that
 * is not plugged in drops frames); the peer's -errno when it dropped it;
 * 0 when the frame was queued at the peer: @sent_cb(@nc, ret) runs once the
 * peer takes it, and the sender should send nothing more until then;
 * -ENOBUFS when the peer's queue is full (the frame is dropped and counted);
 * -EMSGSIZE when @len is 0 or above NET_MAX_FRAME_LEN.
 */
ssize_t net_send_packet_async(NetClientState *nc, const uint8_t *buf, size_t len,
                              NetPacketSent *sent_cb);

/* net_send_packet: net_send_packet_async() without a callback. */
ssize_t net_send_packet(NetClientState *nc, const uint8_t *buf, size_t len);

/*
 * net_flush_queued_packets: deliver the frames waiting for @nc, in order,
 * until @nc refuses one again (it stays first in the queue). Called by @nc
 * itself when it can take frames again; harmless when nothing waits, and a
 * call from inside @nc's own receive() returns at once.
 */
void net_flush_queued_packets(NetClientState *nc);

/* net_queued_packets: how many frames wait for @nc. */
size_t net_queued_packets(NetClientState *nc);

/*
 * net_id_wellformed: QEMU's rule for a -netdev or -device id: letters,
 * digits, '-', '.', '_', starting with a letter. One rule, so that a NIC's
 * id and its backend's are refused alike.
 */
bool net_id_wellformed(const char *id);

/* MAC addresses: "52:54:00:12:34:56" (':' or '-', 1-2 hex digits a byte). */
bool net_parse_macaddr(const char *str, MACAddr *mac);
char *net_macaddr_str(const MACAddr *mac);
/*
 * net_macaddr_default: QEMU's first default address (52:54:00:12:34:56 and
 * on) that no NIC has yet. net_macaddr_mark_used: a NIC was given @mac, so
 * no default repeats it. Main thread, during init.
 */
void net_macaddr_default(MACAddr *mac);
void net_macaddr_mark_used(const MACAddr *mac);

/*
 * A NIC asked for with -nic: the backend it created and the frontend the
 * machine should create for it.
 */
typedef struct NICInfo {
    char *model;                /* "virtio-net-device" (also when not given) */
    MACAddr mac;                /* given, or net_macaddr_default() */
    NetClientState *netdev;     /* the backend; set when backends are created */
    char *opt;                  /* the option as given, for messages */
    bool taken;                 /* a frontend was created for it */
} NICInfo;

/*
 * net_nic_take: for the machine's init: the next -nic of @model that no
 * frontend has taken yet, now marked taken, or NULL. The machine creates the
 * frontend with net_nic_new(..., nd->netdev->name, &nd->mac, ...).
 */
NICInfo *net_nic_take(const char *model);

/* For system/control/vl.c; in command-line order, main thread, BQL held once created. */

/*
 * net_client_parse: check one -netdev (@is_nic false) or -nic argument
 * completely (type, id, every option, hostfwd rules) and append what is to be
 * created to @pending. "-netdev help" and "-nic ...,model=help" print and exit.
 */
bool net_client_parse(GPtrArray *pending, const char *arg, bool is_nic, Error **errp);
/* net_pending_new: the array net_client_parse() fills; g_ptr_array_unref() frees it. */
GPtrArray *net_pending_new(void);

/*
 * net_clients_create: create the backends of @pending (-netdev ones first,
 * then -nic ones, as QEMU does), binding hostfwd ports. Errors carry the
 * option they came from ("-netdev user,...: Could not set up ...").
 */
bool net_clients_create(GPtrArray *pending, Error **errp);

/*
 * net_clients_check: after the machine was created. A -nic no frontend took
 * is an error (there is no NIC the guest would see); a backend without a peer
 * gets QEMU's warning ("netdev n0 has no peer").
 */
bool net_clients_check(Error **errp);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A virtio-net driver on virtio-mmio (version 2, split rings), as small as
 * the workload needs: one rx and one tx queue, no offloads, no interrupts.
 * Setup (probe, status handshake, features, queue registers) runs at CPL0
 * through SVC_CALL, as all device setup in this firmware does. The rings
 * are driven at CPL3, which is native under kvm-pvm where CPL0 is not: the
 * identity map is user-accessible, MMIO included, so CPL3 writes
 * QueueNotify itself and the VMM's ioeventfd takes it without a CPL0 step.
 */
#include "workload.h"
#include "virtio.h"

/* QEMU's microvm: slot i at 0xfeb00000 + 512 * i; 24 slots with its second IOAPIC. */
#define MICROVM_VIRTIO_BASE     0xfeb00000ULL
#define MICROVM_VIRTIO_SLOTS    24
#define MICROVM_VIRTIO_SIZE     512

#define RESET_POLLS             1000

struct vq_avail {
    uint16_t flags;
    uint16_t idx;
    uint16_t ring[VNET_QSIZE];
    uint16_t used_event;
};

struct vq_used_elem {
    uint32_t id;
    uint32_t len;
};

struct vq_used {
    uint16_t flags;
    uint16_t idx;
    struct vq_used_elem ring[VNET_QSIZE];
    uint16_t avail_event;
};

/*
 * One split virtqueue: the three rings the device reads and writes, then
 * the driver's own indices (CPL3 only). Indices run free over 16 bits and
 * are reduced modulo the size, a power of two, when a ring is indexed.
 */
struct vq {
    struct vq_desc desc[VNET_QSIZE];
    struct vq_avail avail;
    struct vq_used used __attribute__((aligned(4)));
    uint16_t size;
    uint16_t avail_idx;         /* the next avail entry the driver fills */
    uint16_t published;         /* avail_idx as the device last saw it */
    uint16_t last_used;         /* the next used entry the driver reads */
};

/*
 * Not zeroed at boot (that is CPL0 work, ~1 us a word): vnet_setup()
 * clears the rings at CPL3, and a buffer is read only after the device
 * wrote it (rx) or the driver did (tx).
 */
static struct vq rxq __attribute__((section(".noinit"), aligned(4096)));
static struct vq txq __attribute__((section(".noinit"), aligned(4096)));
static uint8_t rx_bufs[VNET_QSIZE][VNET_BUF_SIZE]
    __attribute__((section(".noinit"), aligned(4096)));
static uint8_t tx_bufs[VNET_QSIZE][VNET_BUF_SIZE]
    __attribute__((section(".noinit"), aligned(4096)));

/* tx descriptors the device has given back (descriptor i always holds tx_bufs[i]) */
static uint16_t tx_free[VNET_QSIZE];
static unsigned tx_nfree;

struct vnet_info g_vnet;

/* What vnet_setup() was asked to do differently (virtio-bad.c), or NULL. CPL0 reads it. */
static const struct vnet_bend *setup_bend;

/* Without VIRTIO_NET_F_MAC the driver picks the address: QEMU's default NIC's. */
static const uint8_t default_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

const char *const vnet_error_names[] = {
    [VNET_OK] = "ok",
    [VNET_NO_DEVICE] = "no-device",
    [VNET_BAD_VERSION] = "legacy-transport",
    [VNET_NO_VERSION_1] = "no-version-1",
    [VNET_FEATURES_REFUSED] = "features-refused",
    [VNET_NO_QUEUE] = "no-queue",
    [VNET_NEEDS_RESET] = "needs-reset",
};

/* ---- CPL0: setup, reached through SVC_CALL ---- */

/* The largest power of two that is at most both the device's maximum and ours. */
static uint16_t queue_size(uint32_t max)
{
    uint32_t n = VNET_QSIZE;

    while (n > max) {
        n >>= 1;
    }
    return (uint16_t)n;
}

/* A bend's field replaces what the driver would write, unless it is 0. */
static uint64_t bent_or(uint64_t ours, uint64_t bent)
{
    return bent ? bent : ours;
}

static enum vnet_error setup_queue(uint64_t b, unsigned idx, struct vq *q, uint16_t *size,
                                   uint32_t *num_max)
{
    static const struct vnet_bend none;
    const struct vnet_bend *w = idx == VQ_TX && setup_bend ? setup_bend : &none;
    uint32_t max;

    mmio_write(b, VMMIO_QUEUE_SEL, idx);
    max = mmio_read(b, VMMIO_QUEUE_NUM_MAX);
    *num_max = max;
    if (!max || mmio_read(b, VMMIO_QUEUE_READY)) {
        return VNET_NO_QUEUE;
    }
    /* A bent QueueNum is only written: the driver's rings keep their own size. */
    *size = queue_size(max);
    mmio_write(b, VMMIO_QUEUE_NUM, (uint32_t)bent_or(*size, w->tx_num));
    mmio_write64(b, VMMIO_QUEUE_DESC, bent_or((uint64_t)q->desc, w->tx_desc));
    mmio_write64(b, VMMIO_QUEUE_DRIVER, bent_or((uint64_t)&q->avail, w->tx_driver));
    mmio_write64(b, VMMIO_QUEUE_DEVICE, bent_or((uint64_t)&q->used, w->tx_device));
    mmio_write(b, VMMIO_QUEUE_READY, 1);
    return VNET_OK;
}

/* The device initialization of virtio 1.x section 3.1.1, steps 1 to 8. */
static enum vnet_error init_device(struct vnet_info *v, uint64_t b)
{
    uint32_t status, i;
    uint64_t offered, want;
    enum vnet_error err;

    mmio_write(b, VMMIO_STATUS, 0);
    for (i = 0; i < RESET_POLLS && mmio_read(b, VMMIO_STATUS); i++) {
        asm volatile("pause");
    }
    status = STATUS_ACKNOWLEDGE;
    mmio_write(b, VMMIO_STATUS, status);
    status |= STATUS_DRIVER;
    mmio_write(b, VMMIO_STATUS, status);

    mmio_write(b, VMMIO_DEVICE_FEATURES_SEL, 0);
    offered = mmio_read(b, VMMIO_DEVICE_FEATURES);
    mmio_write(b, VMMIO_DEVICE_FEATURES_SEL, 1);
    offered |= (uint64_t)mmio_read(b, VMMIO_DEVICE_FEATURES) << 32;
    v->offered = offered;
    if (!(offered & VIRTIO_F_VERSION_1)) {
        err = VNET_NO_VERSION_1;
        goto fail;
    }
    /* Nothing else: no offloads (frames are whole and checksummed), no
     * mergeable buffers (each rx buffer holds a whole frame), no event idx. */
    want = VIRTIO_F_VERSION_1 | (offered & VIRTIO_NET_F_MAC);
    if (setup_bend) {
        want |= offered & setup_bend->features;
    }
    mmio_write(b, VMMIO_DRIVER_FEATURES_SEL, 0);
    mmio_write(b, VMMIO_DRIVER_FEATURES, (uint32_t)want);
    mmio_write(b, VMMIO_DRIVER_FEATURES_SEL, 1);
    mmio_write(b, VMMIO_DRIVER_FEATURES, (uint32_t)(want >> 32));
    status |= STATUS_FEATURES_OK;
    mmio_write(b, VMMIO_STATUS, status);
    if (!(mmio_read(b, VMMIO_STATUS) & STATUS_FEATURES_OK)) {
        err = VNET_FEATURES_REFUSED;
        goto fail;
    }
    v->features = want;

    err = setup_queue(b, VQ_RX, &rxq, &v->rx_size, &v->num_max[VQ_RX]);
    if (err == VNET_OK) {
        err = setup_queue(b, VQ_TX, &txq, &v->tx_size, &v->num_max[VQ_TX]);
    }
    if (err != VNET_OK) {
        goto fail;
    }
    for (i = 0; i < 6; i++) {
        v->mac[i] = want & VIRTIO_NET_F_MAC
                    ? *(volatile uint8_t *)(b + VMMIO_CONFIG + i) : default_mac[i];
    }
    status |= STATUS_DRIVER_OK;
    mmio_write(b, VMMIO_STATUS, status);
    v->base = b;
    /* A bent setup goes on regardless, as a hostile driver would; its case reads Status. */
    if (!setup_bend && (mmio_read(b, VMMIO_STATUS) & STATUS_NEEDS_RESET)) {
        err = VNET_NEEDS_RESET;
        goto fail;
    }
    return VNET_OK;

fail:
    mmio_write(b, VMMIO_STATUS, status | STATUS_FAILED);
    return err;
}

/*
 * The first transport that holds a net device: the ones the command line
 * names, or, if it names none, each slot of QEMU's microvm layout (QEMU
 * names them only with acpi=off; with ACPI it describes them in the DSDT,
 * which this firmware does not read). Reading a slot is harmless: an empty
 * transport reads device ID 0, and no transport at all reads all ones or 0.
 */
static uint64_t setup_cpl0(void *arg)
{
    struct vnet_info *v = arg;
    unsigned n = v->nslots ? v->nslots : MICROVM_VIRTIO_SLOTS;
    enum vnet_error err = VNET_NO_DEVICE;

    v->probed = !v->nslots;
    for (unsigned i = 0; i < n; i++) {
        uint64_t b = v->nslots ? v->slot[i].base
                               : MICROVM_VIRTIO_BASE + i * MICROVM_VIRTIO_SIZE;
        uint32_t version;

        if (mmio_read(b, VMMIO_MAGIC) != VMMIO_MAGIC_VALUE ||
            mmio_read(b, VMMIO_DEVICE_ID) != VIRTIO_ID_NET) {
            continue;
        }
        version = mmio_read(b, VMMIO_VERSION);
        if (version != 2) {
            v->version = version;
            err = VNET_BAD_VERSION;
            continue;
        }
        v->irq = v->nslots ? v->slot[i].irq : 0;
        return init_device(v, b);
    }
    return err;
}

/* ---- CPL3: the rings ---- */

void vnet_rx_interrupts(void)
{
    __atomic_store_n(&rxq.avail.flags, 0, __ATOMIC_RELEASE);
}

/* Hands one rx buffer (back) to the device; vnet_kick() publishes it. */
void vnet_rx_done(uint16_t id)
{
    rxq.avail.ring[rxq.avail_idx % rxq.size] = id;
    rxq.avail_idx++;
}

/*
 * Clears the rings, runs setup at CPL0 (bent by @bend, if not NULL), then
 * fills the rx queue with every buffer and tells the device. The device
 * never interrupts: we poll, and VRING_AVAIL_F_NO_INTERRUPT saves it
 * raising a line nobody listens to. It may run again after the driver
 * reset the device: everything starts over.
 */
enum vnet_error vnet_setup(const struct vnet_bend *bend)
{
    enum vnet_error err;

    memset(&rxq, 0, sizeof(rxq));
    memset(&txq, 0, sizeof(txq));
    tx_nfree = 0;
    rxq.avail.flags = VRING_AVAIL_F_NO_INTERRUPT;
    txq.avail.flags = VRING_AVAIL_F_NO_INTERRUPT;
    setup_bend = bend;
    err = (enum vnet_error)svc_call(setup_cpl0, &g_vnet);
    if (err != VNET_OK) {
        return err;
    }
    rxq.size = g_vnet.rx_size;
    txq.size = g_vnet.tx_size;
    for (uint16_t i = 0; i < rxq.size; i++) {
        rxq.desc[i].addr = (uint64_t)rx_bufs[i];
        rxq.desc[i].len = VNET_BUF_SIZE;
        rxq.desc[i].flags = VRING_DESC_F_WRITE;
        vnet_rx_done(i);
    }
    for (uint16_t i = 0; i < txq.size; i++) {
        txq.desc[i].addr = (uint64_t)tx_bufs[i];
        tx_free[tx_nfree++] = i;
    }
    vnet_kick();
    return VNET_OK;
}

/*
 * The next frame the device put in the rx queue (past its net header), or
 * NULL. Its buffer stays ours until vnet_rx_done(@id). Entries that name
 * no buffer of ours, or a length that cannot be, are skipped (buffers
 * given back): the device is trusted no further than that.
 */
const uint8_t *vnet_rx_next(uint32_t *len, uint16_t *id)
{
    for (;;) {
        uint16_t used = __atomic_load_n(&rxq.used.idx, __ATOMIC_ACQUIRE);
        struct vq_used_elem e;

        if (rxq.last_used == used) {
            return NULL;
        }
        e = rxq.used.ring[rxq.last_used % rxq.size];
        rxq.last_used++;
        if (e.id >= rxq.size) {
            continue;
        }
        if (e.len <= VNET_HDR_LEN || e.len > VNET_BUF_SIZE) {
            vnet_rx_done((uint16_t)e.id);
            continue;
        }
        *id = (uint16_t)e.id;
        *len = e.len - VNET_HDR_LEN;
        return rx_bufs[e.id] + VNET_HDR_LEN;
    }
}

/* Takes back the tx buffers the device is done with. */
void vnet_tx_reclaim(void)
{
    uint16_t used = __atomic_load_n(&txq.used.idx, __ATOMIC_ACQUIRE);

    while (txq.last_used != used) {
        uint32_t id = txq.used.ring[txq.last_used % txq.size].id;

        txq.last_used++;
        if (id < txq.size && tx_nfree < txq.size) {
            tx_free[tx_nfree++] = (uint16_t)id;
        }
    }
}

/*
 * A tx buffer to build a frame in (ETH_FRAME_MAX bytes at the pointer), or
 * NULL when every buffer is with the device. Its net header is all zero:
 * no checksum offload, no segmentation.
 */
uint8_t *vnet_tx_alloc(uint16_t *id)
{
    if (!tx_nfree) {
        vnet_tx_reclaim();
        if (!tx_nfree) {
            return NULL;
        }
    }
    *id = tx_free[--tx_nfree];
    memset(tx_bufs[*id], 0, VNET_HDR_LEN);
    return tx_bufs[*id] + VNET_HDR_LEN;
}

/* Offers the frame in tx buffer @id; vnet_kick() publishes it. */
void vnet_tx_queue(uint16_t id, uint32_t frame_len)
{
    txq.desc[id].len = VNET_HDR_LEN + frame_len;
    txq.avail.ring[txq.avail_idx % txq.size] = id;
    txq.avail_idx++;
}

/*
 * Publishes what was added to a queue since the last call and notifies the
 * device unless it said it does not need to be (VRING_USED_F_NO_NOTIFY,
 * read after a full fence so a device that just cleared it is not missed).
 */
static void kick_queue(struct vq *q, unsigned idx)
{
    if (q->avail_idx == q->published) {
        return;
    }
    __atomic_store_n(&q->avail.idx, q->avail_idx, __ATOMIC_RELEASE);
    q->published = q->avail_idx;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (!(__atomic_load_n(&q->used.flags, __ATOMIC_RELAXED) & VRING_USED_F_NO_NOTIFY)) {
        mmio_write(g_vnet.base, VMMIO_QUEUE_NOTIFY, idx);
    }
}

void vnet_kick(void)
{
    kick_queue(&txq, VQ_TX);
    kick_queue(&rxq, VQ_RX);
}

/*
 * Queue @idx's rings as they are, for virtio-bad.c to write what no driver
 * should. The driver's own view of them is stale afterwards: only a device
 * reset and vnet_setup() make the two agree again.
 */
void vnet_rings(unsigned idx, struct vnet_rings *r)
{
    struct vq *q = idx == VQ_TX ? &txq : &rxq;

    r->desc = q->desc;
    r->avail_ring = q->avail.ring;
    r->avail_idx = &q->avail.idx;
    r->used_idx = &q->used.idx;
    r->size = q->size;
}

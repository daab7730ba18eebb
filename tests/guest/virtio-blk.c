/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A virtio-blk driver on virtio-mmio (version 2, one split ring), as small
 * as blkverify and blkhostile need: requests of whole sectors out of fixed
 * slots, completions polled, no interrupts. Setup runs at CPL0 through
 * SVC_CALL, as all device setup in this firmware does (virtio-net.c is
 * the model); the ring is driven at CPL3.
 *
 * Slot i owns descriptors 3i (header, driver to device), 3i + 1 (data)
 * and 3i + 2 (status, device to driver), and a VBLK_SLOT_BYTES buffer; a
 * completion names its head descriptor, so its slot is id / 3.
 */
#include "workload.h"
#include "virtio.h"
#include "vblk.h"

#define MICROVM_VIRTIO_BASE     0xfeb00000ULL
#define MICROVM_VIRTIO_SLOTS    24
#define MICROVM_VIRTIO_SIZE     512
#define RESET_POLLS             1000

struct bq_avail {
    uint16_t flags;
    uint16_t idx;
    uint16_t ring[VBLK_QSIZE];
    uint16_t used_event;
};

struct bq_used {
    uint16_t flags;
    uint16_t idx;
    struct {
        uint32_t id;
        uint32_t len;
    } ring[VBLK_QSIZE];
    uint16_t avail_event;
};

struct bq {
    struct vq_desc desc[VBLK_QSIZE];
    struct bq_avail avail;
    struct bq_used used __attribute__((aligned(4)));
    uint16_t size;
    uint16_t avail_idx;         /* the next avail entry the driver fills */
    uint16_t published;
    uint16_t last_used;
};

struct bq_hdr {
    uint32_t type;
    uint32_t ioprio;
    uint64_t sector;
};

/* Cleared at CPL3 by vblk_setup(), as virtio-net.c does (CPL0 is slow). */
static struct bq q __attribute__((section(".noinit"), aligned(4096)));
static struct bq_hdr hdrs[VBLK_MAX_SLOTS] __attribute__((section(".noinit"), aligned(64)));
static uint8_t statuses[VBLK_MAX_SLOTS] __attribute__((section(".noinit"), aligned(64)));
static uint8_t bufs[VBLK_MAX_SLOTS][VBLK_SLOT_BYTES]
    __attribute__((section(".noinit"), aligned(4096)));

struct vblk_info g_vblk;

/* ---- CPL0: setup ---- */

static uint16_t queue_size(uint32_t max)
{
    uint32_t n = VBLK_QSIZE;

    while (n > max) {
        n >>= 1;
    }
    return (uint16_t)n;
}

/* Device initialization (virtio 1.x 3.1.1) with @want's features, if offered. */
static enum vnet_error init_device(struct vblk_info *v, uint64_t b)
{
    uint32_t status, i, max;
    uint64_t offered, want;

    mmio_write(b, VMMIO_STATUS, 0);
    for (i = 0; i < RESET_POLLS && mmio_read(b, VMMIO_STATUS); i++) {
        asm volatile("pause");
    }
    status = STATUS_ACKNOWLEDGE | STATUS_DRIVER;
    mmio_write(b, VMMIO_STATUS, STATUS_ACKNOWLEDGE);
    mmio_write(b, VMMIO_STATUS, status);
    mmio_write(b, VMMIO_DEVICE_FEATURES_SEL, 0);
    offered = mmio_read(b, VMMIO_DEVICE_FEATURES);
    mmio_write(b, VMMIO_DEVICE_FEATURES_SEL, 1);
    offered |= (uint64_t)mmio_read(b, VMMIO_DEVICE_FEATURES) << 32;
    v->offered = offered;
    if (!(offered & VIRTIO_F_VERSION_1)) {
        mmio_write(b, VMMIO_STATUS, status | STATUS_FAILED);
        return VNET_NO_VERSION_1;
    }
    want = VIRTIO_F_VERSION_1 | (offered & v->want);
    mmio_write(b, VMMIO_DRIVER_FEATURES_SEL, 0);
    mmio_write(b, VMMIO_DRIVER_FEATURES, (uint32_t)want);
    mmio_write(b, VMMIO_DRIVER_FEATURES_SEL, 1);
    mmio_write(b, VMMIO_DRIVER_FEATURES, (uint32_t)(want >> 32));
    status |= STATUS_FEATURES_OK;
    mmio_write(b, VMMIO_STATUS, status);
    if (!(mmio_read(b, VMMIO_STATUS) & STATUS_FEATURES_OK)) {
        mmio_write(b, VMMIO_STATUS, status | STATUS_FAILED);
        return VNET_FEATURES_REFUSED;
    }
    v->features = want;
    mmio_write(b, VMMIO_QUEUE_SEL, 0);
    max = mmio_read(b, VMMIO_QUEUE_NUM_MAX);
    v->num_max = max;
    if (max < 3 || mmio_read(b, VMMIO_QUEUE_READY)) {
        mmio_write(b, VMMIO_STATUS, status | STATUS_FAILED);
        return VNET_NO_QUEUE;
    }
    v->qsize = queue_size(max);
    mmio_write(b, VMMIO_QUEUE_NUM, v->qsize);
    mmio_write64(b, VMMIO_QUEUE_DESC, (uint64_t)q.desc);
    mmio_write64(b, VMMIO_QUEUE_DRIVER, (uint64_t)&q.avail);
    mmio_write64(b, VMMIO_QUEUE_DEVICE, (uint64_t)&q.used);
    mmio_write(b, VMMIO_QUEUE_READY, 1);
    for (i = 0; i < VBLK_CONFIG_BYTES; i++) {
        v->config[i] = *(volatile uint8_t *)(b + VMMIO_CONFIG + i);
    }
    status |= STATUS_DRIVER_OK;
    mmio_write(b, VMMIO_STATUS, status);
    v->base = b;
    if (mmio_read(b, VMMIO_STATUS) & STATUS_NEEDS_RESET) {
        return VNET_NEEDS_RESET;
    }
    return VNET_OK;
}

/* The first transport with a block device: the command line's, else microvm's slots. */
static uint64_t setup_cpl0(void *arg)
{
    struct vblk_info *v = arg;
    unsigned n = g_vnet.nslots ? g_vnet.nslots : MICROVM_VIRTIO_SLOTS;
    enum vnet_error err = VNET_NO_DEVICE;

    v->probed = !g_vnet.nslots;
    for (unsigned i = 0; i < n; i++) {
        uint64_t b = g_vnet.nslots ? g_vnet.slot[i].base
                                   : MICROVM_VIRTIO_BASE + i * MICROVM_VIRTIO_SIZE;

        if (mmio_read(b, VMMIO_MAGIC) != VMMIO_MAGIC_VALUE ||
            mmio_read(b, VMMIO_DEVICE_ID) != VIRTIO_ID_BLOCK) {
            continue;
        }
        if (mmio_read(b, VMMIO_VERSION) != 2) {
            err = VNET_BAD_VERSION;
            continue;
        }
        return init_device(v, b);
    }
    return err;
}

/* ---- CPL3 ---- */

static uint64_t cfg_le(unsigned off, unsigned n)
{
    uint64_t x = 0;

    for (unsigned i = n; i-- > 0;) {
        x = x << 8 | g_vblk.config[off + i];
    }
    return x;
}

enum vnet_error vblk_setup(uint64_t want)
{
    enum vnet_error err;

    memset(&q, 0, sizeof(q));
    q.avail.flags = VRING_AVAIL_F_NO_INTERRUPT;
    g_vblk.want = want;
    err = (enum vnet_error)svc_call(setup_cpl0, &g_vblk);
    if (err != VNET_OK) {
        return err;
    }
    q.size = g_vblk.qsize;
    g_vblk.capacity = cfg_le(0, 8);
    g_vblk.slots = q.size / 3 < VBLK_MAX_SLOTS ? q.size / 3 : VBLK_MAX_SLOTS;
    return VNET_OK;
}

uint8_t *vblk_buf(unsigned slot)
{
    return bufs[slot];
}

/*
 * Offers slot @slot's request: @type at @sector, @len data bytes (0: no
 * data descriptor, as FLUSH has). vblk_kick() publishes it.
 */
void vblk_submit(unsigned slot, uint32_t type, uint64_t sector, uint32_t len)
{
    vblk_submit_buf(slot, type, sector, bufs[slot], len);
}

/*
 * As vblk_submit, with the data in @buf (@len bytes, one descriptor: the
 * device's seg_max limits chains, not one descriptor's length).
 */
void vblk_submit_buf(unsigned slot, uint32_t type, uint64_t sector, void *buf, uint32_t len)
{
    uint16_t h = (uint16_t)(3 * slot);
    /* Only IN and GET_ID fill the data buffer; OUT, DISCARD and WRITE_ZEROES send it. */
    bool dev_writes = type == VBLK_T_IN || type == VBLK_T_GET_ID;

    hdrs[slot] = (struct bq_hdr) { .type = type, .sector = sector };
    statuses[slot] = 0xff;
    q.desc[h] = (struct vq_desc) { (uint64_t)&hdrs[slot], sizeof(hdrs[slot]),
                                   VRING_DESC_F_NEXT, (uint16_t)(h + (len ? 1 : 2)) };
    if (len) {
        q.desc[h + 1] = (struct vq_desc) {
            (uint64_t)buf, len,
            (uint16_t)(VRING_DESC_F_NEXT | (dev_writes ? VRING_DESC_F_WRITE : 0)),
            (uint16_t)(h + 2) };
    }
    q.desc[h + 2] = (struct vq_desc) { (uint64_t)&statuses[slot], 1, VRING_DESC_F_WRITE, 0 };
    vblk_offer(h);
}

/* Puts head descriptor @head in the avail ring (the hostile cases build their own chains). */
void vblk_offer(uint16_t head)
{
    q.avail.ring[q.avail_idx % q.size] = head;
    q.avail_idx++;
}

void vblk_kick(void)
{
    if (q.avail_idx == q.published) {
        return;
    }
    __atomic_store_n(&q.avail.idx, q.avail_idx, __ATOMIC_RELEASE);
    q.published = q.avail_idx;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (!(__atomic_load_n(&q.used.flags, __ATOMIC_RELAXED) & VRING_USED_F_NO_NOTIFY)) {
        mmio_write(g_vblk.base, VMMIO_QUEUE_NOTIFY, 0);
    }
}

/*
 * The next completion: its head descriptor in *@head, the used length in
 * *@len and the status byte; false if none. The device is trusted no
 * further than that: the caller checks the head names a request of its.
 */
bool vblk_poll(uint16_t *head, uint32_t *len, uint8_t *status)
{
    uint16_t used = __atomic_load_n(&q.used.idx, __ATOMIC_ACQUIRE);
    uint32_t id;

    if (q.last_used == used) {
        return false;
    }
    id = q.used.ring[q.last_used % q.size].id;
    *len = q.used.ring[q.last_used % q.size].len;
    q.last_used++;
    *head = (uint16_t)id;
    *status = id % 3 == 0 && id / 3 < VBLK_MAX_SLOTS ? statuses[id / 3] : 0xff;
    return true;
}

struct vq_desc *vblk_desc_table(void)
{
    return q.desc;
}

uint8_t *vblk_status_byte(unsigned slot)
{
    return &statuses[slot];
}

void *vblk_hdr(unsigned slot)
{
    return &hdrs[slot];
}

uint32_t vblk_device_status(void)
{
    return mmio_read(g_vblk.base, VMMIO_STATUS);
}

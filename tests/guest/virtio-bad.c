/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mode=virtiobad case=NAME: a virtio-net driver that does one thing no
 * driver may do, then checks that the device says so (DEVICE_NEEDS_RESET in
 * Status, the queue stopped) while the VM runs on, resets the device, sets
 * it up properly and proves that it works again with an ARP exchange with
 * slirp's 10.0.2.2. What the VMM does is docs/devel/virtio.md's "The
 * hostile guest"; the lines are in docs/devel/workload-firmware.md.
 *
 * Every case first sets the device up properly (vnet_setup(), which also
 * finds it). Then, by where the device finds the fault:
 *   queue-ready   reset, and set up again with the tx queue's registers bent
 *   kick          a hostile chain in the working tx ring, and a kick
 *   frame         hostile rx buffers, and a frame for the guest (slirp's
 *                 answer to an ARP request)
 *   status        a Status write out of order
 *   features-ok   a feature the device did not offer: the one case where
 *                 the device refuses (FEATURES_OK reads back clear) and is
 *                 not broken, as the spec has it (3.1.1, step 6)
 * Register programming runs at CPL0 (SVC_CALL) as all device setup here;
 * ring writes, kicks and Status reads run at CPL3.
 */
#include "workload.h"
#include "virtio.h"

#define NEEDS_RESET_WAIT_MS     2000
#define STOPPED_WAIT_MS         50      /* how long a stopped queue must stay still */
#define ARP_WAIT_MS             3000
#define ARP_RETRY_MS            500
#define RESET_POLLS             1000
#define FAR_BEYOND_RAM          (1ULL << 40)    /* no guest of ours has RAM at 1 TiB */
#define CHAIN_LEN               (VNET_HDR_LEN + 60)     /* a header and a minimal frame */

#define ETH_MIN_FRAME           60
#define GUEST_IP                0x0a00020fu     /* 10.0.2.15, as net.c */
#define GATEWAY_IP              0x0a000202u     /* 10.0.2.2, slirp's host */

enum when { AT_QUEUE_READY, AT_KICK, AT_FRAME, AT_STATUS, AT_FEATURES_OK };

static const char *const when_names[] = {
    [AT_QUEUE_READY] = "queue-ready", [AT_KICK] = "kick", [AT_FRAME] = "frame",
    [AT_STATUS] = "status", [AT_FEATURES_OK] = "features-ok",
};

/* What a case works with: the tx rings once set up, and where RAM ends. */
struct vbad_ctx {
    struct vnet_rings r;
    uint64_t ram_end;           /* end of the highest RAM range of the memory map */
    uint64_t transport;         /* the device's registers, not RAM */
    uint16_t avail;             /* the next avail entry to fill */
};

struct vbad_case {
    const char *name;
    enum when when;
    /* AT_QUEUE_READY: the bent tx registers. AT_KICK: the features besides ours. */
    void (*bend)(struct vnet_bend *b, const struct vbad_ctx *c);
    /* The rest: the hostile act itself (chains, frames, register writes). */
    void (*plant)(struct vbad_ctx *c);
};

static int the_case = -1;

static inline void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)(v >> 16));
    put16(p + 2, (uint16_t)v);
}

static inline uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ---- CPL0: register writes ---- */

/* Status 0, then what Status reads once the device says it is done (0), or gives up. */
static uint64_t reset_cpl0(void *arg)
{
    uint64_t b = g_vnet.base;
    uint32_t st = 1;

    (void)arg;
    mmio_write(b, VMMIO_STATUS, 0);
    for (unsigned i = 0; i < RESET_POLLS && (st = mmio_read(b, VMMIO_STATUS)); i++) {
        asm volatile("pause");
    }
    return st;
}

static uint64_t tx_queue_ready_cpl0(void *arg)
{
    (void)arg;
    mmio_write(g_vnet.base, VMMIO_QUEUE_SEL, VQ_TX);
    return mmio_read(g_vnet.base, VMMIO_QUEUE_READY);
}

/* Status in the order of 3.1.1, but DRIVER_OK without FEATURES_OK. */
static uint64_t driver_ok_early_cpl0(void *arg)
{
    uint64_t b = g_vnet.base;

    (void)arg;
    mmio_write(b, VMMIO_STATUS, STATUS_ACKNOWLEDGE);
    mmio_write(b, VMMIO_STATUS, STATUS_ACKNOWLEDGE | STATUS_DRIVER);
    mmio_write(b, VMMIO_DRIVER_FEATURES_SEL, 1);
    mmio_write(b, VMMIO_DRIVER_FEATURES, (uint32_t)(VIRTIO_F_VERSION_1 >> 32));
    mmio_write(b, VMMIO_STATUS, STATUS_ACKNOWLEDGE | STATUS_DRIVER | STATUS_DRIVER_OK);
    return 0;
}

/*
 * VERSION_1 and the lowest feature bit the device does not offer, then
 * FEATURES_OK. Refused, the driver gives up as the spec says it should
 * (FAILED).
 */
static uint64_t features_unoffered_cpl0(void *arg)
{
    uint64_t b = g_vnet.base, want = VIRTIO_F_VERSION_1;
    uint32_t status = STATUS_ACKNOWLEDGE | STATUS_DRIVER;

    (void)arg;
    want |= ~g_vnet.offered & -~g_vnet.offered;
    mmio_write(b, VMMIO_STATUS, STATUS_ACKNOWLEDGE);
    mmio_write(b, VMMIO_STATUS, status);
    mmio_write(b, VMMIO_DRIVER_FEATURES_SEL, 0);
    mmio_write(b, VMMIO_DRIVER_FEATURES, (uint32_t)want);
    mmio_write(b, VMMIO_DRIVER_FEATURES_SEL, 1);
    mmio_write(b, VMMIO_DRIVER_FEATURES, (uint32_t)(want >> 32));
    mmio_write(b, VMMIO_STATUS, status | STATUS_FEATURES_OK);
    status = mmio_read(b, VMMIO_STATUS);
    if (!(status & STATUS_FEATURES_OK)) {
        mmio_write(b, VMMIO_STATUS, status | STATUS_FAILED);
    }
    return status;
}

/* ---- CPL3: the driver's own pieces ---- */

static uint32_t read_status(void)
{
    return mmio_read(g_vnet.base, VMMIO_STATUS);
}

/* A kick whatever the device said about wanting one: a hostile driver does not ask. */
static void kick_tx(void)
{
    mmio_write(g_vnet.base, VMMIO_QUEUE_NOTIFY, VQ_TX);
}

static uint64_t ram_end(void)
{
    const struct hvm_memmap_entry *m = (const void *)g_start_info->memmap_paddr;
    uint64_t end = 0;

    for (uint32_t i = 0; m && i < g_start_info->memmap_entries; i++) {
        if (m[i].type == HVM_MEMMAP_RAM && m[i].addr + m[i].size > end) {
            end = m[i].addr + m[i].size;
        }
    }
    return end;
}

/* A free tx descriptor (its buffer at desc[i].addr, header zeroed); never fails after setup. */
static uint16_t take_desc(void)
{
    uint16_t id = 0;

    vnet_tx_alloc(&id);
    return id;
}

static void put_desc(struct vbad_ctx *c, uint16_t i, uint64_t addr, uint32_t len,
                     uint16_t flags, uint16_t next)
{
    c->r.desc[i] = (struct vq_desc) { .addr = addr, .len = len, .flags = flags, .next = next };
}

/* @head into the next avail entry, and the index past it published. */
static void offer(struct vbad_ctx *c, uint16_t head)
{
    c->r.avail_ring[c->avail % c->r.size] = head;
    c->avail++;
    __atomic_store_n(c->r.avail_idx, c->avail, __ATOMIC_RELEASE);
}

/* Who has 10.0.2.2? Tell 10.0.2.15 (slirp answers for its own addresses). */
static void send_arp_request(void)
{
    uint16_t id;
    uint8_t *f = vnet_tx_alloc(&id), *a;

    if (!f) {
        return;
    }
    memset(f, 0, ETH_MIN_FRAME);
    memset(f, 0xff, 6);
    memcpy(f + 6, g_vnet.mac, 6);
    put16(f + 12, 0x0806);
    a = f + 14;
    put16(a, 1);                /* Ethernet */
    put16(a + 2, 0x0800);       /* IPv4 */
    a[4] = 6;
    a[5] = 4;
    put16(a + 6, 1);            /* request */
    memcpy(a + 8, g_vnet.mac, 6);
    put32(a + 14, GUEST_IP);
    put32(a + 24, GATEWAY_IP);
    vnet_tx_queue(id, ETH_MIN_FRAME);
    vnet_kick();
}

static bool is_gateway_arp_reply(const uint8_t *f, uint32_t len)
{
    return len >= 14 + 28 && f[12] == 0x08 && f[13] == 0x06 && f[14 + 7] == 2 &&
           get32(f + 14 + 14) == GATEWAY_IP;
}

/* ---- the bends: what the setup writes differently ---- */

/* A descriptor table whose first half is RAM's last bytes and the rest beyond. */
static void bend_desc_outside_ram(struct vnet_bend *b, const struct vbad_ctx *c)
{
    b->tx_desc = c->ram_end - g_vnet.tx_size * sizeof(struct vq_desc) / 2;
}

static void bend_avail_outside_ram(struct vnet_bend *b, const struct vbad_ctx *c)
{
    (void)c;
    b->tx_driver = FAR_BEYOND_RAM;
}

/* The used ring on the device's own registers: writing it must never reach them. */
static void bend_used_outside_ram(struct vnet_bend *b, const struct vbad_ctx *c)
{
    b->tx_device = c->transport;
}

/* The spec wants the descriptor table 16-byte aligned (2.7, Virtqueue alignment). */
static void bend_desc_misaligned(struct vnet_bend *b, const struct vbad_ctx *c)
{
    b->tx_desc = (uint64_t)c->r.desc + 8;
}

/* Split rings index modulo the size: it must be a power of two. */
static void bend_num_not_pow2(struct vnet_bend *b, const struct vbad_ctx *c)
{
    (void)c;
    b->tx_num = 3;
}

static void bend_num_above_max(struct vnet_bend *b, const struct vbad_ctx *c)
{
    (void)c;
    b->tx_num = g_vnet.num_max[VQ_TX] * 2;
}

static void bend_indirect(struct vnet_bend *b, const struct vbad_ctx *c)
{
    (void)c;
    b->features = VIRTIO_RING_F_INDIRECT_DESC;
}

/* ---- the plants: the hostile acts the device finds later ---- */

/* Two descriptors whose next fields point at each other. */
static void plant_desc_loop(struct vbad_ctx *c)
{
    uint16_t a = take_desc(), b = take_desc();

    put_desc(c, a, c->r.desc[a].addr, CHAIN_LEN, VRING_DESC_F_NEXT, b);
    put_desc(c, b, c->r.desc[b].addr, CHAIN_LEN, VRING_DESC_F_NEXT, a);
    offer(c, a);
}

static void plant_desc_oversized(struct vbad_ctx *c)
{
    uint16_t a = take_desc();

    put_desc(c, a, c->r.desc[a].addr, 0xffffffff, 0, 0);
    offer(c, a);
}

/* A buffer whose first 8 bytes are RAM's last. */
static void plant_desc_past_end(struct vbad_ctx *c)
{
    uint16_t a = take_desc();

    put_desc(c, a, c->ram_end - 8, 64, 0, 0);
    offer(c, a);
}

static void plant_next_beyond(struct vbad_ctx *c)
{
    uint16_t a = take_desc();

    put_desc(c, a, c->r.desc[a].addr, CHAIN_LEN, VRING_DESC_F_NEXT, c->r.size);
    offer(c, a);
}

/* A good chain, but the avail entry names a head past the queue. */
static void plant_index_beyond(struct vbad_ctx *c)
{
    uint16_t a = take_desc();

    put_desc(c, a, c->r.desc[a].addr, CHAIN_LEN, 0, 0);
    offer(c, c->r.size);
}

/* A good chain, but avail idx claims a queue and one more were added. */
static void plant_avail_idx_jump(struct vbad_ctx *c)
{
    uint16_t a = take_desc();

    put_desc(c, a, c->r.desc[a].addr, CHAIN_LEN, 0, 0);
    c->r.avail_ring[c->avail % c->r.size] = a;
    c->avail += c->r.size + 1;
    __atomic_store_n(c->r.avail_idx, c->avail, __ATOMIC_RELEASE);
}

/* INDIRECT_DESC negotiated, the table at 1 TiB. */
static void plant_indirect_bad(struct vbad_ctx *c)
{
    uint16_t a = take_desc();

    put_desc(c, a, FAR_BEYOND_RAM, 8 * sizeof(struct vq_desc), VRING_DESC_F_INDIRECT, 0);
    offer(c, a);
}

/* A well-formed one-entry indirect table, but the feature was not negotiated. */
static void plant_indirect_unnegotiated(struct vbad_ctx *c)
{
    uint16_t a = take_desc(), t = take_desc();
    struct vq_desc *table = (struct vq_desc *)c->r.desc[t].addr;

    table[0] = (struct vq_desc) { .addr = c->r.desc[a].addr, .len = CHAIN_LEN };
    put_desc(c, a, (uint64_t)table, sizeof(struct vq_desc), VRING_DESC_F_INDIRECT, 0);
    offer(c, a);
}

/* Shorter than the 12-byte net header: virtio-net's own check, not the ring's. */
static void plant_tx_short(struct vbad_ctx *c)
{
    uint16_t a = take_desc();

    put_desc(c, a, c->r.desc[a].addr, 4, 0, 0);
    offer(c, a);
}

/*
 * Every posted receive buffer made device-readable only, then an ARP
 * request whose answer needs one: virtio-net's receive side finds it.
 */
static void plant_rx_readonly(struct vbad_ctx *c)
{
    struct vnet_rings rx;

    (void)c;
    vnet_rings(VQ_RX, &rx);
    for (uint16_t i = 0; i < rx.size; i++) {
        __atomic_store_n(&rx.desc[i].flags, 0, __ATOMIC_RELAXED);
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    send_arp_request();
}

static void plant_driver_ok_early(struct vbad_ctx *c)
{
    (void)c;
    svc_call(reset_cpl0, NULL);
    svc_call(driver_ok_early_cpl0, NULL);
}

static void plant_features_unoffered(struct vbad_ctx *c)
{
    (void)c;
    svc_call(reset_cpl0, NULL);
    svc_call(features_unoffered_cpl0, NULL);
}

static const struct vbad_case cases[] = {
    { "desc-outside-ram", AT_QUEUE_READY, bend_desc_outside_ram, NULL },
    { "avail-outside-ram", AT_QUEUE_READY, bend_avail_outside_ram, NULL },
    { "used-outside-ram", AT_QUEUE_READY, bend_used_outside_ram, NULL },
    { "desc-misaligned", AT_QUEUE_READY, bend_desc_misaligned, NULL },
    { "queue-num-bad", AT_QUEUE_READY, bend_num_not_pow2, NULL },
    { "queue-num-big", AT_QUEUE_READY, bend_num_above_max, NULL },
    { "desc-loop", AT_KICK, NULL, plant_desc_loop },
    { "desc-oversized", AT_KICK, NULL, plant_desc_oversized },
    { "desc-past-end", AT_KICK, NULL, plant_desc_past_end },
    { "next-beyond", AT_KICK, NULL, plant_next_beyond },
    { "index-beyond", AT_KICK, NULL, plant_index_beyond },
    { "avail-idx-jump", AT_KICK, NULL, plant_avail_idx_jump },
    { "indirect-bad", AT_KICK, bend_indirect, plant_indirect_bad },
    { "indirect-unnegotiated", AT_KICK, NULL, plant_indirect_unnegotiated },
    { "tx-short", AT_KICK, NULL, plant_tx_short },
    { "rx-readonly", AT_FRAME, NULL, plant_rx_readonly },
    { "driver-ok-early", AT_STATUS, NULL, plant_driver_ok_early },
    { "features-unoffered", AT_FEATURES_OK, NULL, plant_features_unoffered },
};

#define NCASES (sizeof(cases) / sizeof(cases[0]))

enum net_param vbad_param(const char *k, size_t kn, const char *v, size_t vn)
{
    if (!mem_eq(k, kn, "case")) {
        return NET_PARAM_UNKNOWN;
    }
    for (unsigned i = 0; i < NCASES; i++) {
        if (mem_eq(v, vn, cases[i].name)) {
            the_case = (int)i;
            return NET_PARAM_OK;
        }
    }
    return NET_PARAM_UNKNOWN;   /* maybe mode=vbebad's (vbe-bad.c), which refuses the rest */
}

/* ---- the checks and the lines ---- */

static void ln_case(struct line *l, const char *word)
{
    ln_str(l, word);
    ln_str(l, " case=");
    ln_str(l, cases[the_case].name);
}

static _Noreturn void fail(struct wstat *s, const char *reason, uint32_t status)
{
    struct line l = { 0 };

    ln_case(&l, "FAIL");
    ln_str(&l, " reason=");
    ln_str(&l, reason);
    ln_str(&l, " status=");
    ln_hex(&l, status);
    ln_emit(&l);
    wl_exit(s->cpu, EXIT_VERIFY);
}

/* Status once NEEDS_RESET shows, or after NEEDS_RESET_WAIT_MS without it. */
static uint32_t wait_needs_reset(uint64_t *waited_ms)
{
    uint64_t t0 = rdtsc(), until = t0 + ms_to_tsc(NEEDS_RESET_WAIT_MS);
    uint32_t st;

    while (!((st = read_status()) & STATUS_NEEDS_RESET) && rdtsc() < until) {
        svc_sleep();
    }
    *waited_ms = tsc_to_ms(rdtsc() - t0);
    return st;
}

/*
 * A stopped queue takes nothing more: a good chain offered and kicked
 * after the break must still be in the avail ring STOPPED_WAIT_MS later.
 */
static bool tx_queue_stopped(struct vbad_ctx *c)
{
    uint16_t used = *c->r.used_idx, a = take_desc();
    uint64_t until;

    c->avail = *c->r.avail_idx;         /* the plant may have sent through the driver */
    put_desc(c, a, c->r.desc[a].addr, CHAIN_LEN, 0, 0);
    offer(c, a);
    kick_tx();
    until = rdtsc() + ms_to_tsc(STOPPED_WAIT_MS);
    while (rdtsc() < until) {
        svc_sleep();
    }
    return *c->r.used_idx == used;
}

/* The device works: an ARP request goes out and slirp's reply comes in. Its ms, or -1. */
static int64_t arp_round_trip(void)
{
    uint64_t t0 = rdtsc(), next = t0, until = t0 + ms_to_tsc(ARP_WAIT_MS);

    while (rdtsc() < until) {
        const uint8_t *f;
        uint32_t len;
        uint16_t id;

        if (rdtsc() >= next) {
            send_arp_request();
            next = rdtsc() + ms_to_tsc(ARP_RETRY_MS);
        }
        while ((f = vnet_rx_next(&len, &id))) {
            bool reply = is_gateway_arp_reply(f, len);

            vnet_rx_done(id);
            if (reply) {
                vnet_kick();
                return (int64_t)tsc_to_ms(rdtsc() - t0);
            }
        }
        vnet_tx_reclaim();
        vnet_kick();
        svc_sleep();
    }
    return -1;
}

static void print_ready(const struct vbad_case *k, const struct vbad_ctx *c)
{
    struct line l = { 0 };

    ln_str(&l, "READY mode=virtiobad case=");
    ln_str(&l, k->name);
    ln_str(&l, k->when == AT_FEATURES_OK ? " expect=refused at=" : " expect=needs-reset at=");
    ln_str(&l, when_names[k->when]);
    ln_str(&l, " transport=");
    ln_hex(&l, g_vnet.base);
    ln_str(&l, " offered=");
    ln_hex(&l, g_vnet.offered);
    ln_str(&l, " features=");
    ln_hex(&l, g_vnet.features);
    ln_str(&l, " txq_max=");
    ln_u64(&l, g_vnet.num_max[VQ_TX]);
    ln_str(&l, " ram_end=");
    ln_hex(&l, c->ram_end);
    ln_emit(&l);
}

/* The hostile act of case @k; false if the device cannot be set up for it. */
static bool do_hostile_act(const struct vbad_case *k, struct vbad_ctx *c)
{
    struct vnet_bend bend = { 0 };

    if (k->bend) {
        k->bend(&bend, c);
    }
    if (k->when == AT_QUEUE_READY || bend.features) {
        if (svc_call(reset_cpl0, NULL) != 0 || vnet_setup(&bend) != VNET_OK) {
            return false;
        }
    }
    vnet_rings(VQ_TX, &c->r);
    c->avail = *c->r.avail_idx;
    if (k->plant) {
        k->plant(c);
    }
    if (k->when == AT_QUEUE_READY || k->when == AT_KICK) {
        kick_tx();
    }
    return true;
}

_Noreturn void vbad_main(struct wstat *s)
{
    const struct vbad_case *k;
    struct vbad_ctx c = { 0 };
    struct line l = { 0 };
    enum vnet_error err;
    uint64_t ms;
    uint32_t st;
    int64_t arp_ms;

    if (the_case < 0) {
        ln_str(&l, "FAIL virtiobad reason=no-case (case=NAME)");
        ln_emit(&l);
        wl_exit(s->cpu, EXIT_PARAM);
    }
    k = &cases[the_case];
    err = vnet_setup(NULL);
    if (err != VNET_OK) {
        ln_case(&l, "FAIL");
        ln_str(&l, " reason=setup-");
        ln_str(&l, vnet_error_names[err]);
        ln_emit(&l);
        wl_exit(s->cpu, EXIT_SETUP);
    }
    c.ram_end = ram_end();
    c.transport = g_vnet.base;         /* the transport found, by cmdline or probe */
    vnet_rings(VQ_TX, &c.r);
    print_ready(k, &c);
    if (k->bend == bend_indirect && !(g_vnet.offered & VIRTIO_RING_F_INDIRECT_DESC)) {
        ln_case(&l, "SKIP");
        ln_str(&l, " reason=indirect-not-offered");
        ln_emit(&l);
        wl_exit(s->cpu, EXIT_OK);
    }

    if (!do_hostile_act(k, &c)) {
        fail(s, "bent-setup-failed", read_status());
    }
    if (k->when == AT_FEATURES_OK) {
        ms = 0;
        st = read_status();
        if (st & (STATUS_FEATURES_OK | STATUS_NEEDS_RESET)) {
            fail(s, "not-refused", st);
        }
    } else {
        st = wait_needs_reset(&ms);
        if (!(st & STATUS_NEEDS_RESET)) {
            fail(s, "no-needs-reset", st);
        }
    }
    ln_case(&l, "PASS");
    ln_str(&l, " status=");
    ln_hex(&l, st);
    if (k->when == AT_FEATURES_OK) {
        ln_str(&l, " refused=features-ok");
    } else if (k->when == AT_QUEUE_READY) {
        /* Informative: the spec has QueueReady read back what was written. */
        ln_str(&l, " queue_ready=");
        ln_u64(&l, svc_call(tx_queue_ready_cpl0, NULL));
    } else if (k->when == AT_KICK || k->when == AT_FRAME) {
        if (!tx_queue_stopped(&c)) {
            fail(s, "queue-not-stopped", read_status());
        }
        ln_str(&l, " queue_stopped=1");
    }
    ln_str(&l, " ms=");
    ln_u64(&l, ms);
    ln_emit(&l);

    /* The way back: Status 0 (read back 0, as the spec asks), then a proper setup. */
    st = (uint32_t)svc_call(reset_cpl0, NULL);
    if (st != 0) {
        fail(s, "reset-not-done", st);
    }
    err = vnet_setup(NULL);
    if (err != VNET_OK) {
        fail(s, vnet_error_names[err], read_status());
    }
    arp_ms = arp_round_trip();
    if (arp_ms < 0) {
        fail(s, "no-arp-reply", read_status());
    }
    ln_case(&l, "PASS");
    ln_str(&l, " recovered=1 status=");
    ln_hex(&l, read_status());
    ln_str(&l, " arp_ms=");
    ln_u64(&l, (uint64_t)arp_ms);
    ln_emit(&l);
    wl_exit(s->cpu, EXIT_OK);
}

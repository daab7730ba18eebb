/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * udpecho and udpstream: a tiny ARP/IPv4/UDP stack on the virtio-net
 * driver, at CPL3 (native under kvm-pvm), polling the rings.
 *
 * The guest is 10.0.2.15 on slirp's default network (what -netdev user
 * hands out first, and where hostfwd=udp::PORT-:7 delivers when the guest
 * address is left out); slirp's host is 10.0.2.2, which slirp maps to the
 * host's 127.0.0.1. Slirp learns the guest's MAC only from ARP (not from
 * IP frames): the guest asks for 10.0.2.2 at start and answers requests
 * for 10.0.2.15. Slirp's own addresses have the MAC 52:55:IP (here
 * 52:55:0a:00:02:02), which is used until the ARP reply confirms it.
 *
 * Datagrams (documented in docs/devel/workload-firmware.md):
 *   host -> guest  "c=N ..."       N the sender's own count, 1, 2, 3...
 *                                  (optional; it lets the guest count gaps)
 *   udpecho reply  "seq=M " + the datagram, M the guest's reply count
 *   udpstream      "seq=M tsc=T"   T the guest's TSC when it was sent
 */
#include "workload.h"

#define ETH_HLEN        14
#define ETH_MIN_FRAME   60      /* without FCS: shorter frames are padded */
#define ETHERTYPE_IPV4  0x0800
#define ETHERTYPE_ARP   0x0806
#define ARP_LEN         28
#define ARP_REQUEST     1
#define ARP_REPLY       2
#define IP_HLEN         20
#define IP_PROTO_UDP    17
#define IP_DF           0x4000
#define IP_FRAG_MASK    0x3fff  /* MF and the offset: a fragment */
#define UDP_HLEN        8
#define UDP_OFF         (ETH_HLEN + IP_HLEN + UDP_HLEN)
#define UDP_PAYLOAD_MAX (ETH_FRAME_MAX - UDP_OFF)       /* 1472 */

#define GUEST_IP        0x0a00020fu     /* 10.0.2.15 */
#define GATEWAY_IP      0x0a000202u     /* 10.0.2.2 */

#define ARP_RETRY_MS    1000
#define RX_BURST        64      /* frames handled before the tx side gets a turn */
#define TX_BURST        64      /* stream sends per loop iteration */
#define MAX_DEBT_MS     100     /* udpstream: further behind than this, forget it */

static const uint8_t broadcast_mac[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t slirp_host_mac[6] = { 0x52, 0x55, 0x0a, 0x00, 0x02, 0x02 };

/* Command-line keys of these modes (besides mode, rate, report_ms, seconds). */
static struct {
    uint64_t port;
    uint32_t dst_ip;
    uint16_t dst_port;          /* 0: the default, GATEWAY_IP:port */
    bool irq;                   /* irq=1: take rx interrupts through the IOAPIC (count them) */
    uint64_t irq_gsi;           /* irq=gsi:N: the line is GSI N (else found as below) */
} NP = { .port = 7 };

/*
 * Totals since start, and the period's figures that a STAT line reports
 * and resets. Only this CPU touches any of it.
 */
static struct {
    uint8_t gw_mac[6];
    bool gw_resolved;
    uint16_t ip_id;
    uint64_t next_arp;          /* TSC of the next ARP request, until resolved */
    uint64_t sent, received, lost, late, tx_full, bad, ignored;
    bool have_c;                /* a "c=N" datagram was seen */
    uint64_t last_c;            /* the highest N seen */
    uint64_t last_rx, last_tx;  /* TSC of the last datagram received / sent */
    uint64_t max_gap, max_send_gap;     /* the period's, in TSC ticks */
    uint64_t period_sent, period_received;
} N;

static inline uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

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

/* ---- command line ---- */

/* Decimal or 0x hex, with an optional K/M/G suffix when @suffix. */
static bool parse_uint(const char *s, size_t n, bool suffix, uint64_t *out)
{
    uint64_t v = 0, mul = 1;
    unsigned base = 10;
    size_t i = 0;

    if (suffix && n > 1) {
        char c = s[n - 1] | 0x20;

        mul = c == 'k' ? 1ULL << 10 : c == 'm' ? 1ULL << 20 : c == 'g' ? 1ULL << 30 : 1;
        n -= mul != 1;
    }
    if (n > 2 && s[0] == '0' && (s[1] | 0x20) == 'x') {
        base = 16;
        i = 2;
    }
    if (i == n || n - i > 16) {
        return false;
    }
    for (; i < n; i++) {
        char c = s[i] | 0x20;
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' && base == 16 ? (unsigned)(c - 'a' + 10) : 99;

        if (d >= base || v > (UINT64_MAX - d) / base) {
            return false;
        }
        v = v * base + d;
    }
    *out = v * mul;
    return true;
}

/* The length of the prefix of @s up to @stop (or all of it). */
static size_t span_to(const char *s, size_t n, char stop)
{
    size_t i = 0;

    while (i < n && s[i] != stop) {
        i++;
    }
    return i;
}

/* "SIZE@ADDR:IRQ[:ID]", as Linux's virtio_mmio.device= takes it. */
static bool parse_virtio_mmio(const char *v, size_t n, struct virtio_mmio_slot *slot)
{
    size_t at = span_to(v, n, '@'), colon, colon2;
    uint64_t irq;

    if (at == n) {
        return false;
    }
    colon = at + 1 + span_to(v + at + 1, n - at - 1, ':');
    if (colon == n) {
        return false;
    }
    colon2 = colon + 1 + span_to(v + colon + 1, n - colon - 1, ':');

    if (!parse_uint(v, at, true, &slot->size) || !slot->size ||
        !parse_uint(v + at + 1, colon - at - 1, false, &slot->base) ||
        !parse_uint(v + colon + 1, colon2 - colon - 1, false, &irq) ||
        irq > UINT32_MAX || slot->base >= 4 * GiB - slot->size) {
        return false;
    }
    slot->irq = (uint32_t)irq;
    return true;
}

/* "A.B.C.D:PORT" */
static bool parse_dst(const char *v, size_t n)
{
    uint32_t ip = 0;
    uint64_t x;
    size_t i = 0;

    for (int part = 0; part < 4; part++) {
        size_t len = span_to(v + i, n - i, part < 3 ? '.' : ':');

        if (i + len >= n || !parse_u64(v + i, len, &x) || x > 255) {
            return false;
        }
        ip = ip << 8 | (uint32_t)x;
        i += len + 1;
    }
    if (!parse_u64(v + i, n - i, &x) || x == 0 || x > 65535) {
        return false;
    }
    NP.dst_ip = ip;
    NP.dst_port = (uint16_t)x;
    return true;
}

/*
 * Keys workload.c does not know: this mode's, and the transports the VMM
 * appends (several may appear; the first VIRTIO_MMIO_MAX are kept).
 */
enum net_param net_param(const char *k, size_t kn, const char *v, size_t vn)
{
    uint64_t x;

    if (mem_eq(k, kn, "port")) {
        if (!parse_u64(v, vn, &x) || x == 0 || x > 65535) {
            return NET_PARAM_BAD;
        }
        NP.port = x;
        return NET_PARAM_OK;
    }
    if (mem_eq(k, kn, "irq")) {
        /* 0, 1, or gsi:N with N on one of microvm's two IOAPICs (0-47) */
        if (vn > 4 && mem_eq(v, 4, "gsi:")) {
            if (!parse_u64(v + 4, vn - 4, &x) || x >= 48) {
                return NET_PARAM_BAD;
            }
            NP.irq = true;
            NP.irq_gsi = x;
            return NET_PARAM_OK;
        }
        if (!parse_u64(v, vn, &x) || x > 1) {
            return NET_PARAM_BAD;
        }
        NP.irq = x;
        return NET_PARAM_OK;
    }
    if (mem_eq(k, kn, "dst")) {
        return parse_dst(v, vn) ? NET_PARAM_OK : NET_PARAM_BAD;
    }
    if (mem_eq(k, kn, "virtio_mmio.device")) {
        struct virtio_mmio_slot slot;

        if (!parse_virtio_mmio(v, vn, &slot)) {
            return NET_PARAM_BAD;
        }
        if (g_vnet.nslots < VIRTIO_MMIO_MAX) {
            g_vnet.slot[g_vnet.nslots++] = slot;
        }
        return NET_PARAM_OK;
    }
    return NET_PARAM_UNKNOWN;
}

/* ---- frames out ---- */

static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t n)
{
    for (; n > 1; p += 2, n -= 2) {
        sum += get16(p);
    }
    if (n) {
        sum += (uint32_t)p[0] << 8;
    }
    return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return (uint16_t)~sum;
}

static void send_arp(uint16_t op, const uint8_t *tha, uint32_t tpa)
{
    uint16_t id;
    uint8_t *f = vnet_tx_alloc(&id), *a;

    if (!f) {
        N.tx_full++;
        return;
    }
    memset(f, 0, ETH_MIN_FRAME);
    memcpy(f, op == ARP_REQUEST ? broadcast_mac : tha, 6);
    memcpy(f + 6, g_vnet.mac, 6);
    put16(f + 12, ETHERTYPE_ARP);
    a = f + ETH_HLEN;
    put16(a, 1);                        /* Ethernet */
    put16(a + 2, ETHERTYPE_IPV4);
    a[4] = 6;
    a[5] = 4;
    put16(a + 6, op);
    memcpy(a + 8, g_vnet.mac, 6);
    put32(a + 14, GUEST_IP);
    if (op == ARP_REPLY) {
        memcpy(a + 18, tha, 6);
    }
    put32(a + 24, tpa);
    vnet_tx_queue(id, ETH_MIN_FRAME);
}

/*
 * Fills in the Ethernet, IPv4 and UDP headers in front of the @len bytes
 * of payload already at @f + UDP_OFF, and offers the frame.
 */
static void send_udp(uint16_t id, uint8_t *f, const uint8_t *mac, uint32_t dst_ip,
                     uint16_t sport, uint16_t dport, size_t len, uint64_t now)
{
    uint8_t *ip = f + ETH_HLEN, *udp = ip + IP_HLEN;
    uint16_t ulen = (uint16_t)(UDP_HLEN + len), sum;
    size_t flen = UDP_OFF + len;

    memcpy(f, mac, 6);
    memcpy(f + 6, g_vnet.mac, 6);
    put16(f + 12, ETHERTYPE_IPV4);
    ip[0] = 0x45;                       /* version 4, 5 words */
    ip[1] = 0;
    put16(ip + 2, (uint16_t)(IP_HLEN + ulen));
    put16(ip + 4, N.ip_id++);
    put16(ip + 6, IP_DF);
    ip[8] = 64;
    ip[9] = IP_PROTO_UDP;
    put16(ip + 10, 0);
    put32(ip + 12, GUEST_IP);
    put32(ip + 16, dst_ip);
    put16(ip + 10, csum_fold(csum_add(0, ip, IP_HLEN)));
    put16(udp, sport);
    put16(udp + 2, dport);
    put16(udp + 4, ulen);
    put16(udp + 6, 0);
    /* The pseudo-header (addresses, protocol, length), then header and data. */
    sum = csum_fold(csum_add(IP_PROTO_UDP + ulen, ip + 12, 8) + csum_add(0, udp, ulen));
    put16(udp + 6, sum ? sum : 0xffff);
    if (flen < ETH_MIN_FRAME) {
        memset(f + flen, 0, ETH_MIN_FRAME - flen);
        flen = ETH_MIN_FRAME;
    }
    vnet_tx_queue(id, (uint32_t)flen);

    N.sent++;
    N.period_sent++;
    if (N.last_tx && now - N.last_tx > N.max_send_gap) {
        N.max_send_gap = now - N.last_tx;
    }
    N.last_tx = now;
}

/* "v" in decimal at @p; its length. */
static size_t put_dec(uint8_t *p, uint64_t v)
{
    char tmp[20];
    size_t i = 0, n = 0;

    do {
        tmp[i++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (i) {
        p[n++] = (uint8_t)tmp[--i];
    }
    return n;
}

static size_t put_str(uint8_t *p, const char *s)
{
    size_t n = 0;

    while (s[n]) {
        p[n] = (uint8_t)s[n];
        n++;
    }
    return n;
}

/* ---- frames in ---- */

/*
 * A sender's "c=N" at the start of a datagram: N beyond the highest seen so
 * far by more than one means the numbers in between were lost on the way;
 * N not beyond it is late (reordered or repeated). The first N seen is the
 * base: datagrams sent before the guest listened are not counted lost.
 */
static void count_client_seq(const uint8_t *d, size_t len)
{
    uint64_t c = 0;
    size_t i = 2;

    if (len < 3 || d[0] != 'c' || d[1] != '=') {
        return;
    }
    for (; i < len && i < 2 + 19 && d[i] >= '0' && d[i] <= '9'; i++) {
        c = c * 10 + (uint64_t)(d[i] - '0');
    }
    if (i == 2 || (i < len && d[i] != ' ')) {
        return;
    }
    if (!N.have_c) {
        N.have_c = true;
    } else if (c > N.last_c) {
        N.lost += c - N.last_c - 1;
    } else {
        N.late++;
        return;
    }
    N.last_c = c;
}

/* udpecho: the datagram back to its sender, "seq=M " in front (the tail cut at 1472 bytes). */
static void echo(const uint8_t *mac, uint32_t ip, uint16_t port, const uint8_t *d,
                 size_t len, uint64_t now)
{
    uint16_t id;
    uint8_t *f = vnet_tx_alloc(&id), *p;
    size_t n;

    if (!f) {
        N.tx_full++;
        return;
    }
    p = f + UDP_OFF;
    n = put_str(p, "seq=");
    n += put_dec(p + n, N.sent + 1);
    p[n++] = ' ';
    if (len > UDP_PAYLOAD_MAX - n) {
        len = UDP_PAYLOAD_MAX - n;
    }
    memcpy(p + n, d, len);
    send_udp(id, f, mac, ip, (uint16_t)NP.port, port, n + len, now);
}

static void handle_arp(const uint8_t *f, uint32_t len)
{
    const uint8_t *a = f + ETH_HLEN;
    uint32_t spa, tpa;

    if (len < ETH_HLEN + ARP_LEN || get16(a) != 1 || get16(a + 2) != ETHERTYPE_IPV4 ||
        a[4] != 6 || a[5] != 4) {
        N.bad++;
        return;
    }
    spa = get32(a + 14);
    tpa = get32(a + 24);
    if (spa == GATEWAY_IP) {
        memcpy(N.gw_mac, a + 8, 6);
        N.gw_resolved = true;
    }
    if (get16(a + 6) == ARP_REQUEST && tpa == GUEST_IP) {
        send_arp(ARP_REPLY, a + 8, spa);
    }
}

/* An IPv4 frame: a UDP datagram to 10.0.2.15:port is counted (and echoed); the rest ignored. */
static void handle_ipv4(const uint8_t *f, uint32_t len, bool stream, uint64_t now)
{
    const uint8_t *ip = f + ETH_HLEN, *udp;
    uint32_t iplen = len - ETH_HLEN, ihl, total, ulen;

    if (iplen < IP_HLEN || ip[0] >> 4 != 4) {
        N.bad++;
        return;
    }
    ihl = (ip[0] & 15) * 4u;
    total = get16(ip + 2);
    if (ihl < IP_HLEN || total < ihl || total > iplen ||
        csum_fold(csum_add(0, ip, ihl)) != 0) {
        N.bad++;
        return;
    }
    if ((get16(ip + 6) & IP_FRAG_MASK) || get32(ip + 16) != GUEST_IP ||
        ip[9] != IP_PROTO_UDP) {
        N.ignored++;
        return;
    }
    udp = ip + ihl;
    ulen = total - ihl;
    if (ulen < UDP_HLEN || get16(udp + 4) < UDP_HLEN || get16(udp + 4) > ulen) {
        N.bad++;
        return;
    }
    if (get16(udp + 2) != NP.port) {
        N.ignored++;
        return;
    }
    ulen = get16(udp + 4) - UDP_HLEN;

    N.received++;
    N.period_received++;
    if (N.last_rx && now - N.last_rx > N.max_gap) {
        N.max_gap = now - N.last_rx;
    }
    N.last_rx = now;
    count_client_seq(udp + UDP_HLEN, ulen);
    if (!stream) {
        echo(f + 6, get32(ip + 12), get16(udp), udp + UDP_HLEN, ulen, now);
    }
}

/* Up to RX_BURST frames; each buffer goes straight back to the device. */
static unsigned poll_rx(bool stream, uint64_t now)
{
    unsigned n;

    for (n = 0; n < RX_BURST; n++) {
        uint32_t len;
        uint16_t id;
        const uint8_t *f = vnet_rx_next(&len, &id);

        if (!f) {
            break;
        }
        if (len < ETH_HLEN) {
            N.bad++;
        } else if (get16(f + 12) == ETHERTYPE_ARP) {
            handle_arp(f, len);
        } else if (get16(f + 12) == ETHERTYPE_IPV4) {
            handle_ipv4(f, len, stream, now);
        } else {
            N.ignored++;        /* IPv6 (slirp's router adverts), ... */
        }
        vnet_rx_done(id);
    }
    return n;
}

/* ---- the modes ---- */

static void ln_mac(struct line *l, const uint8_t *m)
{
    for (int i = 0; i < 6; i++) {
        char b[3] = { "0123456789abcdef"[m[i] >> 4], "0123456789abcdef"[m[i] & 15],
                      i < 5 ? ':' : 0 };

        ln_str(l, b);
    }
}

static void ln_ip(struct line *l, uint32_t ip)
{
    for (int i = 3; i >= 0; i--) {
        ln_u64(l, (ip >> (8 * i)) & 0xff);
        if (i) {
            ln_str(l, ".");
        }
    }
}

static void print_ready(const struct wstat *s, bool stream, uint64_t rate)
{
    struct line l = { 0 };

    ln_str(&l, "READY mode=");
    ln_str(&l, stream ? "udpstream" : "udpecho");
    if (s->cpu >= 0) {
        ln_key(&l, " cpu=", (uint64_t)s->cpu);
    }
    ln_key(&l, " port=", NP.port);
    if (stream) {
        ln_key(&l, " rate=", rate);
        ln_str(&l, " dst=");
        ln_ip(&l, NP.dst_ip);
        ln_key(&l, ":", NP.dst_port);
    }
    ln_str(&l, " ip=");
    ln_ip(&l, GUEST_IP);
    ln_str(&l, " mac=");
    ln_mac(&l, g_vnet.mac);
    ln_str(&l, " transport=");
    ln_hex(&l, g_vnet.base);
    ln_str(&l, g_vnet.probed ? " found=probe" : " found=cmdline");
    ln_key(&l, " irq=", g_vnet.irq);
    ln_key(&l, " rxq=", g_vnet.rx_size);
    ln_key(&l, " txq=", g_vnet.tx_size);
    ln_str(&l, " features=");
    ln_hex(&l, g_vnet.features);
    ln_key(&l, " tsc_khz=", g_tsc_khz);
    ln_str(&l, " clock=");
    ln_str(&l, g_clock);
    ln_emit(&l);
}

/* Counts are totals since start; gaps, rates and max_* are the period's. */
static void net_report(struct wstat *s, bool stream, uint64_t now)
{
    struct line l = { 0 };
    uint64_t us = tsc_to_us(now - s->period_start);

    ln_tag(&l, "STAT", s->cpu);
    ln_key(&l, "t_ms=", tsc_to_ms(now - s->start));
    ln_key(&l, " sent=", N.sent);
    ln_key(&l, " received=", N.received);
    ln_key(&l, " lost=", N.lost);
    ln_key(&l, " late=", N.late);
    ln_key(&l, " max_gap_ms=", tsc_to_ms(N.max_gap));
    ln_key(&l, " max_gap_us=", tsc_to_us(N.max_gap));
    if (stream) {
        ln_key(&l, " max_send_gap_ms=", tsc_to_ms(N.max_send_gap));
    }
    ln_str(&l, " tx_pps=");
    ln_tenths(&l, us ? N.period_sent * 10000000 / us : 0);
    ln_str(&l, " rx_pps=");
    ln_tenths(&l, us ? N.period_received * 10000000 / us : 0);
    ln_key(&l, " tx_full=", N.tx_full);
    ln_key(&l, " bad=", N.bad);
    ln_key(&l, " ignored=", N.ignored);
    if (NP.irq) {
        ln_key(&l, " irqs=", g_vnet_irqs);
    }
    ln_emit(&l);

    N.max_gap = 0;
    N.max_send_gap = 0;
    N.period_sent = 0;
    N.period_received = 0;
    stat_next_period(s, now);
}

/*
 * udpstream's schedule: the k-th datagram is due at t0 + k / rate. Sends
 * what is due (at most TX_BURST at a time); further behind than
 * MAX_DEBT_MS (a paused VM, a migration's downtime) the schedule restarts
 * from now instead of bursting. rate 0: as fast as the tx queue takes them.
 * True if it sent anything.
 */
static bool stream_tick(uint64_t rate, uint64_t now, uint64_t *t0, uint64_t *k)
{
    /* TSC ticks per datagram, 16.16 fixed point */
    uint64_t tpp = rate ? (g_tsc_khz * 1000 << 16) / rate : 0;
    unsigned n;

    for (n = 0; n < TX_BURST; n++) {
        uint64_t due = *t0 + (uint64_t)(((unsigned __int128)*k * tpp) >> 16);
        uint16_t id;
        uint8_t *f, *p;
        size_t len;

        if (due > now) {
            break;
        }
        if (now - due > ms_to_tsc(MAX_DEBT_MS)) {
            *t0 = now;
            *k = 0;
        }
        f = vnet_tx_alloc(&id);
        if (!f) {
            N.tx_full++;
            break;
        }
        p = f + UDP_OFF;
        len = put_str(p, "seq=");
        len += put_dec(p + len, N.sent + 1);
        len += put_str(p + len, " tsc=");
        len += put_dec(p + len, rdtsc());
        send_udp(id, f, N.gw_mac, NP.dst_ip, (uint16_t)NP.port, NP.dst_port, len, now);
        (*k)++;
    }
    return n > 0;
}

/*
 * The packet loop. Each turn: the rx ring, udpstream's due sends, the tx
 * ring's completions, one kick per queue, the STAT line when due. With
 * nothing to do it naps until the next PIT tick (1 kHz): a datagram waits
 * at most about a millisecond for the guest, and an idle guest costs one
 * int3 and hlt per tick instead of a spinning host core. Device interrupts
 * would wake it sooner but cost CPL0 work (acknowledge, EOI) per packet.
 */
/*
 * irq=1: route the transport's line to VNET_IRQ_VECTOR on CPU 0, level,
 * through the IOAPIC that has its GSI: given (irq=gsi:N), named on the
 * command line (acpi=off), or, probed, QEMU's default layout (ACPI and the
 * second IOAPIC: GSI 24 + slot). GSIs 0-23 are KVM's IOAPIC at
 * 0xfec00000, 24-47 the second one's at 0xfec10000. CPL0 (SVC_CALL).
 */
static uint64_t vnet_irq_setup_cpl0(void *arg)
{
    uint64_t gsi = NP.irq_gsi ? NP.irq_gsi
                   : g_vnet.probed ? 24 + (g_vnet.base - 0xfeb00000ULL) / 512 : g_vnet.irq;
    uint64_t ioapic = gsi < 24 ? 0xfec00000ULL : 0xfec10000ULL;
    uint64_t pin = gsi % 24;
    volatile uint32_t *sel = (volatile uint32_t *)ioapic;
    volatile uint32_t *win = (volatile uint32_t *)(ioapic + 0x10);

    (void)arg;
    if (gsi >= 48) {
        return 1;
    }
    g_vnet_irq_base = g_vnet.base;
    g_vnet_irq_eoi = ioapic + 0x40;
    *sel = (uint32_t)(0x11 + 2 * pin);
    *win = 0;                                   /* destination: APIC ID 0 */
    *sel = (uint32_t)(0x10 + 2 * pin);
    *win = VNET_IRQ_VECTOR | 1u << 15;          /* fixed, physical, level, unmasked */
    return 0;
}

_Noreturn void net_main(struct wstat *s, bool stream, uint64_t rate)
{
    enum vnet_error err = vnet_setup(NULL);
    uint64_t t0, k = 0;

    if (err != VNET_OK) {
        struct line l = { 0 };

        ln_tag(&l, "FAIL", s->cpu);
        ln_str(&l, "virtio-net reason=");
        ln_str(&l, vnet_error_names[err]);
        ln_key(&l, " transports=", g_vnet.nslots);
        if (err == VNET_BAD_VERSION) {
            ln_key(&l, " version=", g_vnet.version);
        }
        ln_emit(&l);
        wl_exit(s->cpu, EXIT_SETUP);
    }
    if (NP.irq) {
        vnet_rx_interrupts();
        if (svc_call(vnet_irq_setup_cpl0, NULL)) {
            struct line l = { 0 };

            ln_tag(&l, "FAIL", s->cpu);
            ln_str(&l, "virtio-net reason=irq-pin");
            ln_emit(&l);
            wl_exit(s->cpu, EXIT_SETUP);
        }
    }
    if (!NP.dst_port) {
        NP.dst_ip = GATEWAY_IP;
        NP.dst_port = (uint16_t)NP.port;
    }
    memcpy(N.gw_mac, slirp_host_mac, 6);
    print_ready(s, stream, rate);
    send_arp(ARP_REQUEST, NULL, GATEWAY_IP);
    t0 = rdtsc();
    N.next_arp = t0 + ms_to_tsc(ARP_RETRY_MS);
    stat_start(s, s->cpu, tsc_to_ms(s->period), s->deadline);

    for (;;) {
        uint64_t now = rdtsc();
        bool busy = poll_rx(stream, now) > 0;

        if (stream) {
            busy |= stream_tick(rate, now, &t0, &k);
        }
        if (!N.gw_resolved && now >= N.next_arp) {
            send_arp(ARP_REQUEST, NULL, GATEWAY_IP);
            N.next_arp = now + ms_to_tsc(ARP_RETRY_MS);
        }
        vnet_tx_reclaim();
        vnet_kick();
        if (now >= s->next_report) {
            net_report(s, stream, now);
        }
        if (now >= s->deadline) {
            wl_exit(s->cpu, EXIT_OK);
        }
        if (!busy) {
            stat_nap(s);
        }
    }
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Shared declarations of the guest workload firmware. Setup runs at CPL0
 * (emulated, ~1 us per instruction under kvm-pvm); everything else runs at
 * CPL3 and reaches CPL0 only through the int3 service gate.
 */
#ifndef WORKLOAD_H
#define WORKLOAD_H

/* GDT layout, fixed in entry.S. */
#define KERNEL_CS       0x08
#define KERNEL_DS       0x10
#define USER_DS         0x1b
#define USER_CS         0x23
#define TSS_SEL         0x28    /* CPU 0's TSS */
#define KERNEL_CS32     0x38    /* the APs' way into protected mode */
#define TSS_AP_SEL0     0x40    /* CPU n >= 1: TSS_AP_SEL0 + 16 * (n - 1) */

/*
 * Up to MAX_CPUS CPUs run a workload (keys mode0..mode7); CPU n is the one
 * with APIC ID n. The AP start-up code is copied below 1 MiB, page-aligned
 * (its page number is the SIPI vector).
 */
#define MAX_CPUS        8
#define AP_TRAMP_ADDR   0x70000

/* Service gate ABI: rax = service, rdi/rsi = arguments. */
#define SVC_PRINT       0       /* rdi = bytes, rsi = length */
#define SVC_SLEEP       1       /* until the next interrupt (PIT tick) */
#define SVC_EXIT        2       /* rsi = code; never returns */
#define SVC_NAP         3       /* an AP: LAPIC one-shot of rsi counts, then hlt */
#define SVC_HALT        4       /* stop this CPU for good (another one exits) */
#define SVC_CALL        5       /* rdi = uint64_t fn(void *) to run at CPL0, rsi = its
                                   argument; rax = its result (device setup) */

/* The local APIC (xAPIC, identity-mapped uncached). */
#define LAPIC_BASE      0xfee00000
#define LAPIC_EOI       0x0b0
#define LAPIC_IRR1      0x210   /* IRR bits 32-63 */
#define LAPIC_TICR      0x380   /* timer initial count */
#define LAPIC_TIMER_VECTOR 0x30
/* virtio-net's interrupt with irq=1 (the slave 8259's IRQ 14 vector, masked there). */
#define VNET_IRQ_VECTOR 0x2e
/* The ACPI GED's power button (power.c): GSI 9, the slave 8259's IRQ 1 vector, masked there. */
#define GED_IRQ_VECTOR  0x29

#define MAX_MAP_GB      128     /* one page directory per GiB, in .noinit */
#define KSTACK_SIZE     16384
#define USTACK_SIZE     65536

#ifndef __ASSEMBLER__

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WORK_BASE       0x400000ULL
#define PAGE_SIZE       4096ULL
#define MiB             (1ULL << 20)
#define GiB             (1ULL << 30)

enum exit_code {
    EXIT_OK = 0,
    EXIT_VERIFY = 1,    /* a verify pass found a bad page */
    EXIT_PARAM = 2,     /* bad parameter or not enough RAM */
    EXIT_SETUP = 3,     /* CPU exception or unusable clock */
};

/* Xen's struct hvm_start_info (version 1) and its memory map entries. */
#define HVM_START_MAGIC 0x336ec578
#define HVM_MEMMAP_RAM  1

struct hvm_start_info {
    uint32_t magic;
    uint32_t version;
    uint32_t flags;
    uint32_t nr_modules;
    uint64_t modlist_paddr;
    uint64_t cmdline_paddr;
    uint64_t rsdp_paddr;
    uint64_t memmap_paddr;      /* version >= 1 */
    uint32_t memmap_entries;
    uint32_t reserved;
};

struct hvm_memmap_entry {
    uint64_t addr;
    uint64_t size;
    uint32_t type;
    uint32_t reserved;
};

/* Filled in at CPL0 by boot.c; CPL3 only reads them. */
extern const struct hvm_start_info *g_start_info;
extern uint64_t g_tsc_khz;
extern uint64_t g_pit_khz;      /* PIT cross-check, 0 if not measured */
extern uint64_t g_lapic_khz;    /* LAPIC timer counts per ms; 0: APs spin */
extern uint32_t g_cpus_started; /* bit n: CPU n reached CPL3 (CPU 0 always) */
extern uint64_t g_map_top;      /* end of the identity map */
extern const char *g_clock;     /* "kvmclock" or "pit" */
extern volatile uint64_t g_ticks;
/*
 * virtio-net interrupts (net.c, irq=1): the transport the handler
 * acknowledges and the IOAPIC EOI register it writes (0: none yet),
 * set at CPL0 before the IOAPIC entry is unmasked; the count it keeps.
 */
extern uint64_t g_vnet_irq_base, g_vnet_irq_eoi;
extern volatile uint64_t g_vnet_irqs;

/* entry.S */
extern char kstack_top[], ustack_top[], ap_kstacks[], ap_ustacks[];
extern char ap_tramp_start[], ap_tramp_end[];
extern uint64_t ap_boot_rsp;    /* the kernel stack of the AP being started */
/* Drops to CPL3 for good: fn(arg) on stack, interrupts off. */
_Noreturn void enter_user(void (*fn)(unsigned), void *stack, unsigned arg);

/* boot.c: CPL0 output, polling the UART (setup, fatal traps, the power button) */
void uart_write(const char *s, size_t n);

/* power.c: the ACPI GED's power button and reset (CPL0) */
void power_setup(const struct hvm_start_info *si);
void ged_irq(void);

/* lib.c: output lines and command-line parsing */
struct line {
    size_t n;
    char b[248];
};

extern void (*g_out)(const char *s, size_t n);
void ln_str(struct line *l, const char *s);
void ln_mem(struct line *l, const char *s, size_t n);
void ln_u64(struct line *l, uint64_t v);
/* @key (" name=") then @v in decimal: one field of a STAT or READY line. */
void ln_key(struct line *l, const char *key, uint64_t v);
void ln_hex(struct line *l, uint64_t v);
void ln_tenths(struct line *l, uint64_t tenths);
void ln_emit(struct line *l);
bool parse_u64(const char *s, size_t n, uint64_t *out);
bool mem_eq(const char *s, size_t n, const char *lit);
void *memset(void *d, int c, size_t n);
void *memcpy(void *d, const void *s, size_t n);

/* services.c: the CPL3 side of the gate, and time */
void svc_print(const char *s, size_t n);
void svc_sleep(void);
void ap_nap(void);
_Noreturn void svc_exit(uint32_t code);
uint64_t svc_call(uint64_t (*fn)(void *), void *arg);
_Noreturn void wl_exit(int cpu, uint32_t code);
void time_init(void);
uint64_t tsc_to_ms(uint64_t delta);
uint64_t ms_to_tsc(uint64_t ms);

/* 2^32 * 1000 / tsc_khz, so that timing a write needs no division. */
extern uint64_t g_us_mul;

static inline uint64_t tsc_to_us(uint64_t delta)
{
    if (delta >> 36) {
        return delta / g_tsc_khz * 1000;
    }
    return (delta * g_us_mul) >> 32;
}

static inline uint64_t rdtsc(void)
{
    uint32_t lo, hi;

    asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

/* Keeps the timed store between the two TSC reads. */
static inline uint64_t rdtsc_fenced(void)
{
    uint32_t lo, hi;

    asm volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi) :: "memory");
    return ((uint64_t)hi << 32) | lo;
}

/* stat.c: write-latency histogram and STAT lines */
#define HIST_LINEAR     1024
#define HIST_BUCKETS    (HIST_LINEAR + 64)

struct wstat {
    int cpu;                    /* lines say cpu=N; -1: one CPU, no tag */
    uint64_t start;             /* TSC when the workload started */
    uint64_t period_start;
    uint64_t next_report;
    uint64_t period;            /* report_ms in TSC ticks */
    uint64_t deadline;          /* seconds= limit, or UINT64_MAX */
    uint64_t writes;            /* page writes since start */
    uint64_t period_writes;
    uint64_t max_tsc;           /* slowest write of the period */
    uint64_t period_slow;       /* writes of the period that took 100 us or more */
    uint64_t wakeups;           /* naps of this CPU that returned */
    uint64_t period_wakeups;    /* wakeups at the start of the period */
    uint32_t hist[HIST_BUCKETS];
};

void stat_start(struct wstat *s, int cpu, uint64_t report_ms, uint64_t deadline);
void stat_report(struct wstat *s, uint64_t now);
void stat_report_compute(struct wstat *s, uint64_t now, uint64_t iters, uint64_t period_iters);
void stat_nap(struct wstat *s);
void stat_next_period(struct wstat *s, uint64_t now);
void stat_idle_until(struct wstat *s, uint64_t until);
/* The period's 99th percentile of what stat_write() timed, in us (a bucket's lower bound). */
uint64_t stat_p99_us(const struct wstat *s);
void ln_tag(struct line *l, const char *word, int cpu);

static inline void stat_write(struct wstat *s, uint64_t delta)
{
    uint64_t us = tsc_to_us(delta);
    unsigned b = us < HIST_LINEAR ? (unsigned)us
                 : HIST_LINEAR + 53 - (unsigned)__builtin_clzll(us);

    s->hist[b]++;
    s->period_slow += us >= 100;
    s->writes++;
    s->period_writes++;
    if (delta > s->max_tsc) {
        s->max_tsc = delta;
    }
}

/* Called after every write or wake-up: STAT when due, EXIT at seconds=. */
static inline void stat_tick(struct wstat *s, uint64_t now)
{
    if (now >= s->next_report) {
        stat_report(s, now);
    }
    if (now >= s->deadline) {
        wl_exit(s->cpu, EXIT_OK);
    }
}

/*
 * virtio-net.c: the driver. Setup (probe, features, queues) runs at CPL0
 * through SVC_CALL; the rings are driven from CPL3, which also writes
 * QueueNotify itself (the identity map is user-accessible, MMIO included).
 */
#define VIRTIO_MMIO_MAX 8       /* virtio_mmio.device= words kept */
#define VNET_QSIZE      256     /* ring capacity; QueueNum may be smaller */
#define VNET_BUF_SIZE   2048    /* one rx/tx buffer: net header + a whole frame */
#define VNET_HDR_LEN    12      /* struct virtio_net_hdr with VERSION_1 (num_buffers) */
#define ETH_FRAME_MAX   1514    /* no VLAN tag, no FCS */

enum vnet_error {
    VNET_OK,
    VNET_NO_DEVICE,             /* no transport with device ID 1 */
    VNET_BAD_VERSION,           /* a net device on a legacy (version 1) transport */
    VNET_NO_VERSION_1,          /* the device does not offer VIRTIO_F_VERSION_1 */
    VNET_FEATURES_REFUSED,      /* FEATURES_OK did not read back */
    VNET_NO_QUEUE,              /* QueueNumMax 0 for rx or tx, or a queue already live */
    VNET_NEEDS_RESET,           /* the device set DEVICE_NEEDS_RESET during setup */
};

struct vq_desc;                 /* virtio.h */

struct virtio_mmio_slot {
    uint64_t base, size;
    uint32_t irq;
};

struct vnet_info {
    /* In: the transports the command line names (none: probe microvm's slots). */
    struct virtio_mmio_slot slot[VIRTIO_MMIO_MAX];
    unsigned nslots;
    /* Out, from CPL0 setup. */
    uint64_t base;              /* the transport in use */
    uint32_t irq;               /* its GSI (0 if probed) */
    uint32_t version;           /* of a transport that was refused */
    uint64_t offered;           /* by the device */
    uint64_t features;          /* negotiated */
    uint16_t rx_size, tx_size;  /* QueueNum of queues 0 and 1 */
    uint32_t num_max[2];        /* QueueNumMax of queues 0 and 1 */
    uint8_t mac[6];
    bool probed;                /* found by probing, not from the command line */
};

extern struct vnet_info g_vnet;
extern const char *const vnet_error_names[];

/*
 * What a hostile-driver case (virtio-bad.c) makes the setup do differently:
 * more features, and the registers of the tx queue (1), the one a kick
 * makes the device read at once. A zero field keeps the driver's own
 * choice. With a bend, setup goes on to DRIVER_OK whatever the device says,
 * as a hostile driver would.
 */
struct vnet_bend {
    uint64_t features;          /* taken besides ours, if offered (INDIRECT_DESC) */
    uint32_t tx_num;            /* QueueNum */
    uint64_t tx_desc, tx_driver, tx_device;     /* the three ring addresses */
};

/* A queue's rings, raw (virtio-bad.c). */
struct vnet_rings {
    struct vq_desc *desc;       /* buffer i is at desc[i].addr */
    uint16_t *avail_ring;
    uint16_t *avail_idx;        /* the index the device reads */
    const volatile uint16_t *used_idx;
    uint16_t size;
};

/* CPL3 */
enum vnet_error vnet_setup(const struct vnet_bend *bend);        /* NULL: a proper driver */
/* After vnet_setup: the device interrupts for used rx buffers (CPL3). */
void vnet_rx_interrupts(void);
void vnet_rings(unsigned idx, struct vnet_rings *r);
const uint8_t *vnet_rx_next(uint32_t *len, uint16_t *id);
void vnet_rx_done(uint16_t id);
uint8_t *vnet_tx_alloc(uint16_t *id);
void vnet_tx_queue(uint16_t id, uint32_t frame_len);
void vnet_tx_reclaim(void);
void vnet_kick(void);

/* net.c: a tiny ARP/IPv4/UDP stack on virtio-net and the udpecho/udpstream modes. */
enum net_param { NET_PARAM_UNKNOWN, NET_PARAM_OK, NET_PARAM_BAD };
enum net_param net_param(const char *k, size_t kn, const char *v, size_t vn);
_Noreturn void net_main(struct wstat *s, bool stream, uint64_t rate);

/* virtio-bad.c: mode=virtiobad, a driver that misprograms the device on purpose. */
enum net_param vbad_param(const char *k, size_t kn, const char *v, size_t vn);
_Noreturn void vbad_main(struct wstat *s);

/* draw.c: mode=draw, a VBE mode drawn into at CPL3 (rate = frames per second). */
enum net_param draw_param(const char *k, size_t kn, const char *v, size_t vn);
_Noreturn void draw_main(struct wstat *s, uint64_t fps);

/* vbe-bad.c: mode=vbebad, a display driver that programs nonsense on purpose. */
enum net_param vbebad_param(const char *k, size_t kn, const char *v, size_t vn);
_Noreturn void vbebad_main(struct wstat *s);

/* blk.c: mode=blkverify on virtio-blk (vblk.h); blk-bad.c: mode=blkhostile. */
enum net_param blk_param(const char *k, size_t kn, const char *v, size_t vn);
void blk_print_device(void);
_Noreturn void blk_verify_main(struct wstat *s);
_Noreturn void blk_hostile_main(struct wstat *s);
/* blkbench.c: mode=blkbench, fio-like throughput (takes blkverify's depth= and iops=). */
void blk_depth_iops(uint64_t *depth, uint64_t *iops);
enum net_param blkbench_param(const char *k, size_t kn, const char *v, size_t vn);
_Noreturn void blk_bench_main(struct wstat *s);

/* cpustate.c: cpustate=LIST, vCPU states only subsections carry (with mode=verify). */
enum net_param cpustate_param(const char *k, size_t kn, const char *v, size_t vn);
bool cpustate_wanted(void);
void cpustate_setup(void);      /* CPU 0, CPL3, before the first pass */
void cpustate_check(void);      /* after each pass: FAIL and exit if a state was lost */

/*
 * workload.c: the work area, RAM from WORK_BASE on in memory-map order,
 * holes skipped, as segments (written once by CPU 0 before any CPU reads).
 */
#define MAX_SEGS        32

struct area_seg {
    uint64_t start, pages;
};

extern struct area_seg g_segs[MAX_SEGS];
extern unsigned g_nsegs;

static inline uint64_t xorshift(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* fill.c: the area's first contents; the order of fill_names in workload.c. */
enum fill { FILL_RANDOM, FILL_ZERO, FILL_TEXT, FILL_SPARSE, FILL_ZEROED };

void fill_area(enum fill fill);

/* workload.c */
_Noreturn void user_main(unsigned cpu);
_Noreturn void ap_user_main(unsigned cpu);

#endif /* __ASSEMBLER__ */
#endif /* WORKLOAD_H */

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * CPL0 setup: page tables above 4 GiB, TSS and IDT, the local APIC in
 * virtual-wire mode, the 8259 PIC, the PIT at 1 kHz and the TSC frequency;
 * the APs that have a workload (modeN=); then a one-way drop to CPL3.
 * Every instruction here costs about a microsecond under kvm-pvm, so loops
 * are kept short.
 */
#include "workload.h"
#include "portio.h"

#define PTE_P           0x001ULL
#define PTE_RW          0x002ULL
#define PTE_US          0x004ULL
#define PTE_PWT         0x008ULL
#define PTE_PCD         0x010ULL
#define PTE_PS          0x080ULL
#define PTE_TABLE       (PTE_P | PTE_RW | PTE_US)
#define PTE_LARGE       (PTE_P | PTE_RW | PTE_US | PTE_PS)

#define LAPIC_ICR_LO    0x300
#define LAPIC_ICR_HI    0x310
#define ICR_INIT        0x4500  /* INIT, level assert */
#define ICR_STARTUP     0x4600  /* start-up IPI | vector */
#define ICR_BUSY        0x1000
#define LAPIC_SVR       0xf0
#define LAPIC_LINT0     0x350
#define LAPIC_LVT_TIMER 0x320
#define LAPIC_TCCR      0x390   /* timer current count */
#define LAPIC_TDCR      0x3e0   /* timer divide configuration */
#define TDCR_DIV1       0xb
#define LAPIC_ENABLE    0x100
#define LVT_EXTINT      0x700
#define LVT_MASKED      0x10000

#define AP_START_MS     2000    /* an AP not up by then: FAIL cpu=N did not start */

#define PIC_VECTOR      0x20    /* master 0x20-0x27, slave 0x28-0x2f */
#define SPURIOUS_VECTOR 0x2f    /* low nibble must read 0xf on old APICs */
#define IDT_ENTRIES     (LAPIC_TIMER_VECTOR + 1)

#define PIT_HZ          1193182ULL
#define PIT_DIVISOR     1193ULL /* ~1000.15 Hz */
#define PIT_CAL_TICKS   48

#define MSR_KVM_SYSTEM_TIME_NEW 0x4b564d01
#define KVM_FEATURE_CLOCKSOURCE2 (1u << 3)

#define TSC_MIN_KHZ     200000ULL
#define TSC_MAX_KHZ     10000000ULL

struct idt_gate {
    uint16_t off_lo;
    uint16_t sel;
    uint8_t ist;
    uint8_t attr;
    uint16_t off_mid;
    uint32_t off_hi;
    uint32_t reserved;
};

struct tss {
    uint32_t reserved0;
    uint64_t rsp[3];
    uint64_t reserved1;
    uint64_t ist[7];
    uint64_t reserved2;
    uint16_t reserved3;
    uint16_t iomap;
} __attribute__((packed));

/* kvmclock's pvclock_vcpu_time_info, as the hypervisor writes it. */
struct pvclock {
    uint32_t version;
    uint32_t pad0;
    uint64_t tsc_timestamp;
    uint64_t system_time;
    uint32_t tsc_to_system_mul;
    int8_t tsc_shift;
    uint8_t flags;
    uint8_t pad[2];
};

struct trap_frame {
    uint64_t rdi, rsi, rbp, rbx, rdx, rcx, rax;
    uint64_t vec, err, rip, cs, rflags, rsp, ss;
};

extern uint64_t gdt[], pml4[], pdpt[], pd[][512];
extern char exc_stubs[], svc_entry[], irq0_entry[], ignore_entry[], lapic_timer_entry[],
    vnet_irq_entry[], ged_irq_entry[];

const struct hvm_start_info *g_start_info;
uint64_t g_tsc_khz;
uint64_t g_pit_khz;
uint64_t g_map_top;
const char *g_clock;
volatile uint64_t g_ticks;
uint64_t g_vnet_irq_base, g_vnet_irq_eoi;
volatile uint64_t g_vnet_irqs;
uint64_t g_lapic_khz;
uint32_t g_cpus_started = 1;
uint64_t ap_boot_rsp;

static struct idt_gate idt[IDT_ENTRIES];
static struct tss tss[MAX_CPUS];
static unsigned ap_boot_cpu;            /* the AP being started */
static volatile uint32_t ap_up;         /* set to its number by that AP */
static volatile struct pvclock pvclock __attribute__((aligned(64)));

void boot_main(const struct hvm_start_info *si);
void trap_fatal(struct trap_frame *f);

static inline void wrmsr(uint32_t msr, uint64_t v)
{
    asm volatile("wrmsr" :: "c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)));
}

static inline void cpuid(uint32_t leaf, uint32_t r[4])
{
    asm volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3])
                 : "a"(leaf), "c"(0));
}

static inline void lapic_write(unsigned reg, uint32_t v)
{
    *(volatile uint32_t *)((uintptr_t)LAPIC_BASE + reg) = v;
}

static inline uint32_t lapic_read(unsigned reg)
{
    return *(volatile uint32_t *)((uintptr_t)LAPIC_BASE + reg);
}

/* CPL0 output: the same polling loop as the service gate. */
void uart_write(const char *s, size_t n)
{
    while (n--) {
        while (!(inb(0x3fd) & 0x20)) {
        }
        outb(0x3f8, (uint8_t)*s++);
    }
}

static _Noreturn void cpl0_exit(uint32_t code)
{
    struct line l = { 0 };

    ln_str(&l, "EXIT code=");
    ln_u64(&l, code);
    ln_emit(&l);
    outl(0xf4, code);
    for (;;) {
        asm volatile("cli; hlt");
    }
}

void trap_fatal(struct trap_frame *f)
{
    struct line l = { 0 };
    uint64_t cr2;

    asm volatile("mov %%cr2, %0" : "=r"(cr2));
    g_out = uart_write;
    ln_str(&l, "FAIL exception vec=");
    ln_u64(&l, f->vec);
    ln_str(&l, " rip=");
    ln_hex(&l, f->rip);
    ln_str(&l, " err=");
    ln_hex(&l, f->err);
    ln_str(&l, " cs=");
    ln_hex(&l, f->cs);
    ln_str(&l, " rsp=");
    ln_hex(&l, f->rsp);
    ln_str(&l, " cr2=");
    ln_hex(&l, cr2);
    ln_emit(&l);
    cpl0_exit(EXIT_SETUP);
}

static bool ram_overlaps(const struct hvm_start_info *si, uint64_t s, uint64_t e)
{
    const struct hvm_memmap_entry *m;
    uint32_t i;

    if (si->version < 1) {
        return false;
    }
    m = (const void *)si->memmap_paddr;
    for (i = 0; i < si->memmap_entries; i++) {
        if (m[i].type == HVM_MEMMAP_RAM && m[i].addr < e &&
            m[i].addr + m[i].size > s) {
            return true;
        }
    }
    return false;
}

/*
 * entry.S mapped 0-4 GiB write-back. Make the 3-4 GiB device hole (LAPIC,
 * IOAPIC, ...) uncached, scanning the memmap per 2 MiB only if RAM reaches
 * into it, and extend the map to the top of RAM.
 */
static void map_memory(const struct hvm_start_info *si)
{
    const struct hvm_memmap_entry *m = (const void *)si->memmap_paddr;
    uint64_t top = 4 * GiB, ngb, gb, i;
    uint32_t n = si->version >= 1 ? si->memmap_entries : 0;

    for (i = 0; i < n; i++) {
        if (m[i].type == HVM_MEMMAP_RAM && m[i].addr + m[i].size > top) {
            top = m[i].addr + m[i].size;
        }
    }
    ngb = (top + GiB - 1) / GiB;
    if (ngb > MAX_MAP_GB) {
        ngb = MAX_MAP_GB;
    }

    if (!ram_overlaps(si, 3 * GiB, 4 * GiB)) {
        for (i = 0; i < 512; i++) {
            pd[3][i] |= PTE_PCD | PTE_PWT;
        }
    } else {
        for (i = 0; i < 512; i++) {
            uint64_t a = 3 * GiB + (i << 21);

            if (!ram_overlaps(si, a, a + (1 << 21))) {
                pd[3][i] |= PTE_PCD | PTE_PWT;
            }
        }
    }

    for (gb = 4; gb < ngb; gb++) {
        uint64_t a = gb << 30;

        for (i = 0; i < 512; i++) {
            pd[gb][i] = (a + (i << 21)) | PTE_LARGE;
        }
        pdpt[gb] = (uint64_t)pd[gb] | PTE_TABLE;
    }
    g_map_top = ngb << 30;
    asm volatile("mov %0, %%cr3" :: "r"(pml4) : "memory");
}

static void set_gate(unsigned vec, const void *fn, unsigned dpl)
{
    uint64_t a = (uint64_t)fn;

    idt[vec].off_lo = (uint16_t)a;
    idt[vec].sel = KERNEL_CS;
    idt[vec].attr = (uint8_t)(0x8e | (dpl << 5));  /* present, interrupt gate */
    idt[vec].off_mid = (uint16_t)(a >> 16);
    idt[vec].off_hi = (uint32_t)(a >> 32);
}

static void load_idt(void)
{
    struct {
        uint16_t limit;
        uint64_t base;
    } __attribute__((packed)) idtr = { sizeof(idt) - 1, (uint64_t)idt };

    asm volatile("lidt %0" :: "m"(idtr));
}

/* One TSS per CPU: rsp0 is its stack for interrupts and int3 coming from CPL3. */
static void set_tss(struct tss *t, unsigned sel, char *rsp0)
{
    uint64_t base = (uint64_t)t;

    t->rsp[0] = (uint64_t)rsp0;
    t->iomap = sizeof(*t);
    gdt[sel / 8] = (sizeof(*t) - 1) | (base & 0xffffff) << 16 |
                   0x89ULL << 40 | ((base >> 24) & 0xff) << 56;
    gdt[sel / 8 + 1] = base >> 32;
}

static unsigned tss_sel(unsigned cpu)
{
    return cpu ? TSS_AP_SEL0 + 16 * (cpu - 1) : TSS_SEL;
}

static void setup_cpu_tables(void)
{
    unsigned v;

    set_tss(&tss[0], TSS_SEL, kstack_top);
    asm volatile("ltr %w0" :: "r"(TSS_SEL));

    for (v = 0; v < 32; v++) {
        set_gate(v, exc_stubs + 16 * v, 0);
    }
    set_gate(3, svc_entry, 3);
    set_gate(PIC_VECTOR, irq0_entry, 0);
    for (v = PIC_VECTOR + 1; v < IDT_ENTRIES; v++) {
        set_gate(v, ignore_entry, 0);
    }
    set_gate(LAPIC_TIMER_VECTOR, lapic_timer_entry, 0);
    set_gate(VNET_IRQ_VECTOR, vnet_irq_entry, 0);
    set_gate(GED_IRQ_VECTOR, ged_irq_entry, 0);
    load_idt();
}

/*
 * Nothing else routes the 8259's output to the CPU on microvm: the local
 * APIC must pass it through LINT0 as ExtINT. Only IRQ0 (PIT) is unmasked.
 */
static void setup_interrupts(void)
{
    lapic_write(LAPIC_SVR, lapic_read(LAPIC_SVR) | LAPIC_ENABLE | SPURIOUS_VECTOR);
    lapic_write(LAPIC_LINT0, LVT_EXTINT);

    outb(0x20, 0x11);                   /* ICW1: edge, cascade, ICW4 */
    outb(0xa0, 0x11);
    outb(0x21, PIC_VECTOR);             /* ICW2: vector base */
    outb(0xa1, PIC_VECTOR + 8);
    outb(0x21, 0x04);                   /* ICW3: slave on IRQ2 */
    outb(0xa1, 0x02);
    outb(0x21, 0x01);                   /* ICW4: 8086 mode */
    outb(0xa1, 0x01);
    outb(0x21, 0xfe);
    outb(0xa1, 0xff);

    outb(0x43, 0x34);                   /* channel 0, lo/hi, rate generator */
    outb(0x40, PIT_DIVISOR & 0xff);
    outb(0x40, PIT_DIVISOR >> 8);
}

static uint64_t kvmclock_khz(void)
{
    uint32_t r[4], version, mul;
    int8_t shift;
    uint64_t hz;

    cpuid(0x40000000, r);
    if (r[1] != 0x4b4d564b || r[2] != 0x564b4d56 || r[3] != 0x4d) {
        return 0;
    }
    cpuid(0x40000001, r);
    if (!(r[0] & KVM_FEATURE_CLOCKSOURCE2)) {
        return 0;
    }

    wrmsr(MSR_KVM_SYSTEM_TIME_NEW, (uint64_t)&pvclock | 1);
    do {
        version = pvclock.version;
        asm volatile("" ::: "memory");
        mul = pvclock.tsc_to_system_mul;
        shift = pvclock.tsc_shift;
        asm volatile("" ::: "memory");
    } while ((version & 1) || version != pvclock.version);
    /* Only the scale was wanted; keep the hypervisor out of our memory. */
    wrmsr(MSR_KVM_SYSTEM_TIME_NEW, 0);
    if (!mul) {
        return 0;
    }

    /* ns = (tsc << shift) * mul >> 32, so Hz = 1e9 * 2^32 / mul / 2^shift */
    hz = (1000000000ULL << 32) / mul;
    hz = shift < 0 ? hz << -shift : hz >> shift;
    return hz / 1000;
}

static void wait_tick(void)
{
    uint64_t t = g_ticks;

    while (g_ticks == t) {
        asm volatile("sti; hlt; cli" ::: "memory");
    }
}

/*
 * PIT channel 0 ticks against the TSC (no port 0x61 on microvm). A tick can
 * be delivered a few hundred us late, and the next one early to catch up,
 * so average only the middle half of the sorted per-tick intervals.
 */
static uint64_t pit_khz(void)
{
    uint64_t iv[PIT_CAL_TICKS], prev, prev_ticks, sum = 0;
    unsigned i, j;

    wait_tick();
    prev = rdtsc();
    prev_ticks = g_ticks;
    for (i = 0; i < PIT_CAL_TICKS; i++) {
        uint64_t now, v;

        wait_tick();
        now = rdtsc();
        v = (now - prev) / (g_ticks - prev_ticks);
        prev = now;
        prev_ticks = g_ticks;
        for (j = i; j > 0 && iv[j - 1] > v; j--) {
            iv[j] = iv[j - 1];
        }
        iv[j] = v;
    }
    for (i = PIT_CAL_TICKS / 4; i < PIT_CAL_TICKS * 3 / 4; i++) {
        sum += iv[i];
    }
    return sum * PIT_HZ / (PIT_CAL_TICKS / 2 * PIT_DIVISOR * 1000);
}

void ap_main(void);

/*
 * An AP at CPL0 in long mode: its own TSS, the shared IDT, its LAPIC
 * software-enabled with the timer one-shot on LAPIC_TIMER_VECTOR (its naps:
 * the PIT's ExtINT reaches only CPU 0; LINT0 stays masked here), then its
 * workload at CPL3.
 */
void ap_main(void)
{
    unsigned cpu = ap_boot_cpu;

    asm volatile("ltr %w0" :: "r"(tss_sel(cpu)));
    load_idt();
    lapic_write(LAPIC_SVR, LAPIC_ENABLE | SPURIOUS_VECTOR);
    lapic_write(LAPIC_TDCR, TDCR_DIV1);
    lapic_write(LAPIC_LVT_TIMER, LAPIC_TIMER_VECTOR);
    __atomic_store_n(&ap_up, cpu, __ATOMIC_RELEASE);
    enter_user(ap_user_main, ap_ustacks + cpu * USTACK_SIZE, cpu);
}

/*
 * The CPUs named by a "modeN=" word (N = 1..MAX_CPUS-1), as a bit mask. A
 * plain scan (at CPL0, so kept short); workload.c parses the same words
 * with the same separators and checks that it got the same CPUs.
 */
static uint32_t cmdline_ap_mask(const struct hvm_start_info *si)
{
    const char *s = (const char *)si->cmdline_paddr;
    uint32_t mask = 0;

    for (size_t i = 0; s && s[i] && i < 4096; i++) {
        if ((i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t' || s[i - 1] == '\n') &&
            s[i] == 'm' && s[i + 1] == 'o' && s[i + 2] == 'd' && s[i + 3] == 'e' &&
            s[i + 4] >= '1' && s[i + 4] < '0' + MAX_CPUS && s[i + 5] == '=') {
            mask |= 1u << (s[i + 4] - '0');
        }
    }
    return mask;
}

/*
 * The APs nap on their LAPIC timer, which counts at a rate only measuring
 * tells (KVM's default is 1 GHz): count down CPU 0's, masked, over three PIT
 * ticks against the TSC. 0 (unusable) makes the APs spin instead.
 */
static void lapic_timer_khz(void)
{
    uint64_t t0, t1, c0, c1, khz;

    lapic_write(LAPIC_LVT_TIMER, LVT_MASKED | LAPIC_TIMER_VECTOR);
    lapic_write(LAPIC_TDCR, TDCR_DIV1);
    lapic_write(LAPIC_TICR, 0xffffffff);
    wait_tick();
    t0 = rdtsc();
    c0 = lapic_read(LAPIC_TCCR);
    wait_tick();
    wait_tick();
    wait_tick();
    t1 = rdtsc();
    c1 = lapic_read(LAPIC_TCCR);
    lapic_write(LAPIC_TICR, 0);
    khz = t1 > t0 && c0 > c1 ? (c0 - c1) * g_tsc_khz / (t1 - t0) : 0;
    g_lapic_khz = khz >= 1000 && khz <= 100000000 ? khz : 0;
}

static void wait_icr_idle(void)
{
    for (int i = 0; i < 1000 && (lapic_read(LAPIC_ICR_LO) & ICR_BUSY); i++) {
        asm volatile("pause");
    }
}

static void send_ipi(unsigned apic_id, uint32_t icr)
{
    lapic_write(LAPIC_ICR_HI, apic_id << 24);
    lapic_write(LAPIC_ICR_LO, icr);
    wait_icr_idle();
}

/*
 * Each AP in @mask, one at a time (they share the trampoline and
 * ap_boot_rsp): INIT, then two start-up IPIs with the trampoline's page as
 * vector, as the MP spec says; KVM's in-kernel LAPIC needs no delays
 * between them. The AP says it is up in ap_up, within AP_START_MS or the
 * guest stops with a FAIL line.
 */
static void start_aps(uint32_t mask)
{
    memcpy((void *)AP_TRAMP_ADDR, ap_tramp_start, ap_tramp_end - ap_tramp_start);
    for (unsigned cpu = 1; cpu < MAX_CPUS; cpu++) {
        uint64_t deadline;

        if (!(mask & (1u << cpu))) {
            continue;
        }
        set_tss(&tss[cpu], tss_sel(cpu), ap_kstacks + cpu * KSTACK_SIZE);
        ap_boot_cpu = cpu;
        ap_boot_rsp = (uint64_t)(ap_kstacks + cpu * KSTACK_SIZE);
        send_ipi(cpu, ICR_INIT);
        send_ipi(cpu, ICR_STARTUP | (AP_TRAMP_ADDR >> 12));
        send_ipi(cpu, ICR_STARTUP | (AP_TRAMP_ADDR >> 12));
        deadline = rdtsc() + AP_START_MS * g_tsc_khz;
        while (__atomic_load_n(&ap_up, __ATOMIC_ACQUIRE) != cpu) {
            if (rdtsc() > deadline) {
                struct line l = { 0 };

                ln_str(&l, "FAIL cpu=");
                ln_u64(&l, cpu);
                ln_str(&l, " did not start");
                ln_emit(&l);
                cpl0_exit(EXIT_SETUP);
            }
            asm volatile("pause");
        }
        g_cpus_started |= 1u << cpu;
    }
}

void boot_main(const struct hvm_start_info *si)
{
    struct line l = { 0 };
    uint32_t aps;

    g_out = uart_write;
    if (si->magic != HVM_START_MAGIC) {
        ln_str(&l, "FAIL bad-start-info magic=");
        ln_hex(&l, si->magic);
        ln_emit(&l);
        cpl0_exit(EXIT_SETUP);
    }
    g_start_info = si;
    map_memory(si);
    setup_cpu_tables();
    setup_interrupts();
    power_setup(si);

    g_pit_khz = pit_khz();
    g_tsc_khz = kvmclock_khz();
    g_clock = "kvmclock";
    if (!g_tsc_khz) {
        g_tsc_khz = g_pit_khz;
        g_clock = "pit";
    }
    if (g_tsc_khz < TSC_MIN_KHZ || g_tsc_khz > TSC_MAX_KHZ) {
        ln_str(&l, "FAIL tsc-calibration clock=");
        ln_str(&l, g_clock);
        ln_str(&l, " tsc_khz=");
        ln_u64(&l, g_tsc_khz);
        ln_str(&l, " pit_khz=");
        ln_u64(&l, g_pit_khz);
        ln_emit(&l);
        cpl0_exit(EXIT_SETUP);
    }

    aps = cmdline_ap_mask(si);
    if (aps) {
        lapic_timer_khz();
        start_aps(aps);
    }
    g_out = svc_print;
    enter_user(user_main, ustack_top, 0);
}

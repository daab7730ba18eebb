/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cpustate=LIST (with mode=verify): puts the vCPU into states that QEMU's
 * "cpu" v12 fields do not carry, so that a migration must send them in
 * subsections, and checks after every verify pass that they are still
 * there (a lost state ends the guest with a FAIL line). LIST is a comma-
 * separated list of:
 *   x87     FOP, FIP, FDP and two x87 registers loaded by XRSTOR
 *   avx512  opmask, the upper halves of ZMM0-15 and ZMM16-31 (also AVX)
 *   pkru    PKRU (CR4.PKE), where CPUID has PKU
 *   tscdl   the LVT timer in TSC-deadline mode (masked), a far deadline
 *   misc    MISC_ENABLE with bit 3 set
 *   tscadj  TSC_ADJUST
 *   spec    SPEC_CTRL (IBRS, or SSBD)
 *   pv      KVM's async-PF (INT then EN), steal time, PV EOI, poll control
 *   shadow  after each pass, 200 ms in a chain of MOV SS (interrupt shadow)
 *   all     every one of these
 * A state the vCPU lacks (CPUID) is left out and said so in the CPUSTATE line.
 * The register state is set at CPL3 by XRSTOR and read back by XSAVE: the
 * firmware is built with -mgeneral-regs-only, so nothing else touches it.
 */
#include "workload.h"

#define CS_X87      (1u << 0)
#define CS_AVX512   (1u << 1)
#define CS_PKRU     (1u << 2)
#define CS_TSCDL    (1u << 3)
#define CS_MISC     (1u << 4)
#define CS_TSCADJ   (1u << 5)
#define CS_SPEC     (1u << 6)
#define CS_PV       (1u << 7)
#define CS_SHADOW   (1u << 8)
#define CS_XSAVE    (CS_X87 | CS_AVX512 | CS_PKRU)

static const char *const cs_names[] = {
    "x87", "avx512", "pkru", "tscdl", "misc", "tscadj", "spec", "pv", "shadow", 0
};

#define MSR_FEATURE_CONTROL 0x3a
#define MSR_TSC_ADJUST      0x3b
#define MSR_SPEC_CTRL       0x48
#define MSR_MISC_ENABLE     0x1a0
#define MSR_TSC_DEADLINE    0x6e0
#define MSR_KVM_ASYNC_PF_EN 0x4b564d02
#define MSR_KVM_STEAL_TIME  0x4b564d03
#define MSR_KVM_PV_EOI_EN   0x4b564d04
#define MSR_KVM_POLL_CONTROL 0x4b564d05
#define MSR_KVM_ASYNC_PF_INT 0x4b564d06

#define LAPIC_LVT_TIMER     0x320
#define LVT_MASKED          0x10000
#define LVT_TSC_DEADLINE    (2u << 17)
#define ASYNC_PF_VECTOR     0xec        /* ignore_entry's: page-ready is never expected */

#define XSAVE_MAX       8192
#define XCR0_WANTED     (0x7ull | 0xe0ull | 0x200ull)   /* x87 SSE AVX, AVX-512, PKRU */

enum { MSR_N = 9 };
static const uint32_t msr_index[MSR_N] = {
    MSR_TSC_DEADLINE, MSR_MISC_ENABLE, MSR_TSC_ADJUST, MSR_SPEC_CTRL, MSR_KVM_ASYNC_PF_INT,
    MSR_KVM_ASYNC_PF_EN, MSR_KVM_STEAL_TIME, MSR_KVM_PV_EOI_EN, MSR_KVM_POLL_CONTROL,
};

/* Written by CPU 0 only: cpustate= runs with one CPU (mode=verify). */
static struct {
    unsigned want, have;            /* CS_* asked for; CS_* set up */
    uint64_t xcr0;
    uint32_t xsave_size;
    uint32_t off[10], len[10];      /* XSAVE standard-format components (CPUID 0xD) */
    uint64_t msr[MSR_N];            /* the values written */
    uint32_t msr_set;               /* bit i: msr_index[i] was written */
    /*
     * AMD saves FOP (and, without CPUID 0x80000008 EBX[2] XSaveErPtr, FIP
     * and FDP) only while FSW.ES says an exception is pending: seen on an
     * EPYC with XSaveErPtr, FOP read back 0 for every binary. The image
     * then loads with an unmasked PE pending (ES set), so they are saved and
     * so checked. No x87 instruction runs after it (-mgeneral-regs-only),
     * so the #MF it would raise never comes.
     */
    bool x87_ptrs_need_es;
} C;

static uint8_t xs_want[XSAVE_MAX] __attribute__((aligned(64)));
static uint8_t xs_got[XSAVE_MAX] __attribute__((aligned(64)));
static uint8_t apf_area[64] __attribute__((aligned(64)));
static uint8_t steal_area[64] __attribute__((aligned(64)));
static uint32_t pv_eoi_word __attribute__((aligned(64)));

static inline void cpuid2(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
    asm volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}

static inline void wrmsr(uint32_t msr, uint64_t v)
{
    asm volatile("wrmsr" :: "c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)) : "memory");
}

static inline uint64_t rdmsr(uint32_t msr)
{
    uint32_t lo, hi;

    asm volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
    return (uint64_t)hi << 32 | lo;
}

enum net_param cpustate_param(const char *k, size_t kn, const char *v, size_t vn)
{
    size_t i = 0;

    if (!mem_eq(k, kn, "cpustate")) {
        return NET_PARAM_UNKNOWN;
    }
    while (i < vn) {
        size_t s = i;
        unsigned j;

        while (i < vn && v[i] != ',') {
            i++;
        }
        if (mem_eq(v + s, i - s, "all")) {
            C.want |= (1u << 9) - 1;
        } else {
            for (j = 0; cs_names[j] && !mem_eq(v + s, i - s, cs_names[j]); j++) {
            }
            if (!cs_names[j]) {
                return NET_PARAM_BAD;
            }
            C.want |= 1u << j;
        }
        i++;
    }
    return NET_PARAM_OK;
}

bool cpustate_wanted(void)
{
    return C.want != 0;
}

static void msr_write(unsigned i, uint64_t v)
{
    wrmsr(msr_index[i], v);
    C.msr[i] = v;
    C.msr_set |= 1u << i;
}

/* CPL0: CR4, XCR0 and the MSRs; what CPUID lacks is left out of C.have. */
static uint64_t setup_cpl0(void *arg)
{
    uint32_t r1[4], r7[4], rk[4], rd[4];
    unsigned have = 0;
    uint64_t cr4;

    (void)arg;
    cpuid2(1, 0, r1);
    cpuid2(7, 0, r7);
    cpuid2(0x40000001, 0, rk);
    cpuid2(0, 0, rd);
    /* AuthenticAMD */
    C.x87_ptrs_need_es = rd[1] == 0x68747541 && rd[3] == 0x69746e65 && rd[2] == 0x444d4163;
    if ((C.want & CS_XSAVE) && (r1[2] >> 26 & 1)) {
        asm volatile("mov %%cr4, %0" : "=r"(cr4));
        cr4 |= 1ull << 9 | 1ull << 10 | 1ull << 18;     /* OSFXSR OSXMMEXCPT OSXSAVE */
        if ((C.want & CS_PKRU) && (r7[2] >> 3 & 1)) {
            cr4 |= 1ull << 22;                          /* PKE */
        }
        asm volatile("mov %0, %%cr4" :: "r"(cr4));
        cpuid2(0xd, 0, rd);
        C.xcr0 = (rd[0] | (uint64_t)rd[3] << 32) & XCR0_WANTED;
        if (!(cr4 >> 22 & 1)) {
            C.xcr0 &= ~0x200ull;
        }
        if (!(C.want & (CS_AVX512 | CS_PKRU))) {
            C.xcr0 &= 3;
        } else if (!(C.want & CS_AVX512)) {
            C.xcr0 &= ~0xe0ull;
        } else if (!(C.want & CS_PKRU)) {
            C.xcr0 &= ~0x200ull;
        }
        asm volatile("xsetbv" :: "c"(0), "a"((uint32_t)C.xcr0), "d"((uint32_t)(C.xcr0 >> 32)));
        cpuid2(0xd, 0, rd);
        C.xsave_size = rd[1];
        for (unsigned i = 2; i < 10; i++) {
            cpuid2(0xd, i, rd);
            C.len[i] = rd[0];
            C.off[i] = rd[1];
        }
        have |= C.want & CS_X87;
        have |= (C.want & CS_AVX512) && (C.xcr0 & 0xe0) == 0xe0 ? CS_AVX512 : 0;
        have |= (C.want & CS_PKRU) && (C.xcr0 & 0x200) ? CS_PKRU : 0;
    }
    if ((C.want & CS_TSCDL) && (r1[2] >> 24 & 1)) {
        *(volatile uint32_t *)((uintptr_t)LAPIC_BASE + LAPIC_LVT_TIMER) =
            LVT_MASKED | LVT_TSC_DEADLINE | LAPIC_TIMER_VECTOR;
        asm volatile("mfence" ::: "memory");
        msr_write(0, rdtsc() + (1ull << 52));
        have |= CS_TSCDL;
    }
    if (C.want & CS_MISC) {
        msr_write(1, rdmsr(MSR_MISC_ENABLE) | 1u << 3);
        have |= CS_MISC;
    }
    if ((C.want & CS_TSCADJ) && (r7[1] >> 1 & 1)) {
        msr_write(2, 0x10000);
        have |= CS_TSCADJ;
    }
    if ((C.want & CS_SPEC) && (r7[3] >> 26 & 1)) {
        msr_write(3, r7[3] >> 31 & 1 ? 4 : 1);          /* SSBD, else IBRS */
        have |= CS_SPEC;
    }
    if (C.want & CS_PV) {
        /* KVM's feature bits: ASYNC_PF 4, STEAL_TIME 5, PV_EOI 6, POLL_CONTROL 12, ASYNC_PF_INT 14. */
        if ((rk[0] >> 4 & 1) && (rk[0] >> 14 & 1)) {
            msr_write(4, ASYNC_PF_VECTOR);
            msr_write(5, (uint64_t)(uintptr_t)apf_area | 1 | 1u << 3);  /* enabled, as an interrupt */
        }
        if (rk[0] >> 5 & 1) {
            msr_write(6, (uint64_t)(uintptr_t)steal_area | 1);
        }
        if (rk[0] >> 6 & 1) {
            msr_write(7, (uint64_t)(uintptr_t)&pv_eoi_word | 1);
        }
        if (rk[0] >> 12 & 1) {
            msr_write(8, 0);
        }
        have |= C.msr_set >> 4 ? CS_PV : 0;
    }
    have |= C.want & CS_SHADOW;
    return have;
}

/* CPL0: the first MSR whose value is not the one written, +1; 0 if all are. */
static uint64_t check_cpl0(void *arg)
{
    uint64_t *got = arg;

    for (unsigned i = 0; i < MSR_N; i++) {
        if ((C.msr_set >> i & 1) && (*got = rdmsr(msr_index[i])) != C.msr[i]) {
            return i + 1;
        }
    }
    return 0;
}

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (uint8_t)(seed >> 56);
    }
}

static void put64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

/* The XSAVE image to load: x87 with FOP/FIP/FDP, SSE, AVX and the AVX-512 parts, PKRU. */
static void build_image(void)
{
    uint64_t bv = 0;

    memset(xs_want, 0, sizeof(xs_want));
    if (C.have & CS_X87) {
        xs_want[0] = 0x7f;                  /* FCW 0x037f */
        xs_want[1] = 0x03;
        xs_want[3] = 6 << 3;                /* FSW: TOP = 6 */
        if (C.x87_ptrs_need_es) {
            /*
             * PE pending and unmasked, so ES holds (XRSTOR recomputes it
             * from the flags and FCW's masks: a masked PE loaded ES=0).
             */
            xs_want[0] = 0x5f;              /* FCW 0x035f: PM clear */
            xs_want[2] = 0xa0;              /* FSW: ES and PE */
            xs_want[3] |= 0x80;             /* FSW: B, which follows ES */
        }
        xs_want[4] = 0xc0;                  /* physical registers 6 and 7 hold values */
        xs_want[6] = 0x23;                  /* FOP 0x123 (11 bits) */
        xs_want[7] = 0x01;
        put64(xs_want + 8, 0x401234);       /* FIP */
        put64(xs_want + 16, 0x405678);      /* FDP */
        /* ST(0) = phys 6 = 1.5 (exp 0x3fff), ST(1) = phys 7 = -2.25 (exp 0x4000). */
        put64(xs_want + 32, 0xc000000000000000ull);
        xs_want[40] = 0xff;
        xs_want[41] = 0x3f;
        put64(xs_want + 48, 0x9000000000000000ull);
        xs_want[56] = 0x00;
        xs_want[57] = 0xc0;
        bv |= 1;
    }
    xs_want[24] = 0x80;                     /* MXCSR 0x1f80 */
    xs_want[25] = 0x1f;
    fill(xs_want + 160, 256, 0x5eed0001);   /* XMM0-15 */
    bv |= 2;
    if (C.have & CS_AVX512) {
        fill(xs_want + C.off[2], C.len[2], 0x5eed0002);
        fill(xs_want + C.off[5], C.len[5], 0x5eed0005);
        fill(xs_want + C.off[6], C.len[6], 0x5eed0006);
        fill(xs_want + C.off[7], C.len[7], 0x5eed0007);
        bv |= 0xe4;
    }
    if (C.have & CS_PKRU) {
        put64(xs_want + C.off[9], 0x55555550);  /* access and write off but for key 0 and 1 */
        bv |= 0x200;
    }
    put64(xs_want + 512, bv);
}

static void xrstor(const uint8_t *p, uint64_t rfbm)
{
    asm volatile("xrstor64 %0" :: "m"(*p), "a"((uint32_t)rfbm), "d"((uint32_t)(rfbm >> 32)));
}

static void xsave(uint8_t *p, uint64_t rfbm)
{
    asm volatile("xsave64 %0" : "+m"(*p) : "a"((uint32_t)rfbm), "d"((uint32_t)(rfbm >> 32)));
}

/* Byte ranges of the image that must read back as loaded: name, offset, length. */
static const char *xs_diff(void)
{
    static const struct { const char *name; uint32_t off, len; } legacy[] = {
        { "fcw-fsw-ftw", 0, 5 }, { "fop", 6, 2 }, { "fip", 8, 8 }, { "fdp", 16, 8 },
        { "mxcsr", 24, 4 }, { "st", 32, 10 }, { "st", 48, 10 }, { "xmm", 160, 256 },
        { "xstate_bv", 512, 8 },
    };
    static const struct { const char *name; unsigned comp; } ext[] = {
        { "ymmh", 2 }, { "opmask", 5 }, { "zmm_hi256", 6 }, { "hi16_zmm", 7 }, { "pkru", 9 },
    };
    uint64_t bv;

    memcpy(&bv, xs_want + 512, 8);
    for (unsigned i = 0; i < sizeof(legacy) / sizeof(legacy[0]); i++) {
        for (uint32_t b = 0; b < legacy[i].len; b++) {
            if (xs_want[legacy[i].off + b] != xs_got[legacy[i].off + b]) {
                return legacy[i].name;
            }
        }
    }
    for (unsigned i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
        unsigned c = ext[i].comp;

        if (!(bv >> c & 1)) {
            continue;
        }
        for (uint32_t b = 0; b < C.len[c]; b++) {
            if (xs_want[C.off[c] + b] != xs_got[C.off[c] + b]) {
                return ext[i].name;
            }
        }
    }
    return 0;
}

void cpustate_setup(void)
{
    struct line l = { 0 };

    C.have = (unsigned)svc_call(setup_cpl0, 0);
    if ((C.have & CS_XSAVE) && C.xsave_size > XSAVE_MAX) {
        ln_str(&l, "FAIL cpustate xsave_size=");
        ln_u64(&l, C.xsave_size);
        ln_emit(&l);
        wl_exit(-1, EXIT_SETUP);
    }
    if (C.xcr0) {
        build_image();
        xrstor(xs_want, C.xcr0);
    }
    ln_str(&l, "CPUSTATE");
    for (unsigned j = 0; cs_names[j]; j++) {
        if (C.want >> j & 1) {
            ln_str(&l, C.have >> j & 1 ? " " : " no-");
            ln_str(&l, cs_names[j]);
        }
    }
    ln_str(&l, " xcr0=");
    ln_hex(&l, C.xcr0);
    if (C.x87_ptrs_need_es && (C.have & CS_X87)) {
        ln_str(&l, " fsw-es=1");
    }
    ln_emit(&l);
}

/* The interrupt shadow: every instruction boundary but one in 65 follows a MOV SS. */
static void shadow_spin(uint64_t ms)
{
    uint64_t until = rdtsc() + ms_to_tsc(ms);

    while (rdtsc() < until) {
        for (unsigned i = 0; i < 10; i++) {
            asm volatile(".rept 64\n\tmov %%ax, %%ss\n\t.endr" :: "a"(USER_DS));
        }
    }
}

/* After a verify pass: the states set up are still there, or FAIL and exit. */
void cpustate_check(void)
{
    struct line l = { 0 };
    const char *what = 0;
    uint64_t got = 0, idx;

    if (C.xcr0) {
        memset(xs_got, 0, 576);
        xsave(xs_got, C.xcr0);
        what = xs_diff();
    }
    if (!what && (idx = svc_call(check_cpl0, &got)) != 0) {
        ln_str(&l, "FAIL cpustate msr=");
        ln_hex(&l, msr_index[idx - 1]);
        ln_str(&l, " expected=");
        ln_hex(&l, C.msr[idx - 1]);
        ln_str(&l, " got=");
        ln_hex(&l, got);
        ln_emit(&l);
        wl_exit(-1, EXIT_VERIFY);
    }
    if (what) {
        uint64_t w = 0, g = 0;

        /* The x87 header as loaded and as read (FCW FSW FTW FOP): which bit moved. */
        memcpy(&w, xs_want, 8);
        memcpy(&g, xs_got, 8);
        ln_str(&l, "FAIL cpustate xsave=");
        ln_str(&l, what);
        ln_str(&l, " head=");
        ln_hex(&l, w);
        ln_str(&l, " got=");
        ln_hex(&l, g);
        ln_emit(&l);
        wl_exit(-1, EXIT_VERIFY);
    }
    if (C.have & CS_SHADOW) {
        shadow_spin(200);
    }
}

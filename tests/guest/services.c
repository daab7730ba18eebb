/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The CPL3 side of the service gate, and time from the TSC. Port I/O and
 * hlt fault at CPL3 under kvm-pvm (and int $0x80 / syscall do not reach
 * CPL0 there), so every service is an int3 through a DPL-3 gate.
 */
#include "workload.h"

uint64_t g_us_mul;

/* With several CPUs printing, a line goes out whole: a CPL3 spinlock around the gate. */
static volatile uint32_t print_lock;
/* The first CPU to exit wins; the others stop where they are. */
static volatile uint32_t exiting;

void svc_print(const char *s, size_t n)
{
    uint64_t a = SVC_PRINT;

    while (__atomic_exchange_n(&print_lock, 1, __ATOMIC_ACQUIRE)) {
        asm volatile("pause");
    }
    asm volatile("int3" : "+a"(a), "+D"(s), "+S"(n) :: "rdx", "memory");
    __atomic_store_n(&print_lock, 0, __ATOMIC_RELEASE);
}

/* CPU 0: returns after the next interrupt, normally the 1 kHz PIT tick. */
void svc_sleep(void)
{
    uint64_t a = SVC_SLEEP;

    asm volatile("int3" : "+a"(a) :: "memory");
}

/*
 * An AP's nap of about a millisecond. The PIT's tick reaches only CPU 0
 * (ExtINT through its LINT0), so an AP halts on its own LAPIC timer
 * instead: one int3 and a few CPL0 instructions per nap, like CPU 0's, and
 * its vCPU thread sleeps in the host meanwhile. Spinning on the TSC would
 * also keep time, but would keep the vCPU runnable all the time: on a
 * 2-core host a pacing AP would then compete with the other vCPU and the
 * migration thread, and a dirty CPU's pacing would look like CPU load. The
 * spin is only the fallback for a LAPIC timer that could not be measured.
 */
void ap_nap(void)
{
    uint64_t a = SVC_NAP, count = g_lapic_khz;

    if (count) {
        asm volatile("int3" : "+a"(a), "+S"(count) :: "rdx", "memory");
    } else {
        uint64_t until = rdtsc() + ms_to_tsc(1);

        while (rdtsc() < until) {
            asm volatile("pause");
        }
    }
}

_Noreturn void svc_exit(uint32_t code)
{
    uint64_t a = SVC_EXIT, c = code;

    asm volatile("int3" : "+a"(a), "+S"(c) :: "rdx", "memory");
    __builtin_unreachable();
}

/* @fn(@arg) at CPL0, where device setup must run; its result. */
uint64_t svc_call(uint64_t (*fn)(void *), void *arg)
{
    uint64_t a = SVC_CALL;

    asm volatile("int3" : "+a"(a), "+D"(fn), "+S"(arg) :: "rdx", "memory");
    return a;
}

/* @cpu >= 0: the guest runs a workload per CPU, and EXIT says which ended it. */
_Noreturn void wl_exit(int cpu, uint32_t code)
{
    struct line l = { 0 };
    uint64_t a = SVC_HALT;

    if (__atomic_exchange_n(&exiting, 1, __ATOMIC_ACQ_REL)) {
        asm volatile("int3" : "+a"(a) :: "rdx", "memory");
        __builtin_unreachable();
    }
    ln_str(&l, "EXIT code=");
    ln_u64(&l, code);
    if (cpu >= 0) {
        ln_str(&l, " cpu=");
        ln_u64(&l, (uint64_t)cpu);
    }
    ln_emit(&l);
    svc_exit(code);
}

void time_init(void)
{
    g_us_mul = (1000ULL << 32) / g_tsc_khz;
}

uint64_t tsc_to_ms(uint64_t delta)
{
    return delta / g_tsc_khz;
}

uint64_t ms_to_tsc(uint64_t ms)
{
    return ms * g_tsc_khz;
}

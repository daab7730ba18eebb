/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The CPL3 side of the service gate, and time from the TSC. Port I/O and
 * hlt fault at CPL3 under kvm-pvm (and int $0x80 / syscall do not reach
 * CPL0 there), so every service is an int3 through a DPL-3 gate.
 */
#include "workload.h"

uint64_t g_us_mul;
uint64_t g_wakeups;

/* With two CPUs printing, a line goes out whole: a CPL3 spinlock around the gate. */
static volatile uint32_t print_lock;

void svc_print(const char *s, size_t n)
{
    uint64_t a = SVC_PRINT;

    while (__atomic_exchange_n(&print_lock, 1, __ATOMIC_ACQUIRE)) {
        asm volatile("pause");
    }
    asm volatile("int3" : "+a"(a), "+D"(s), "+S"(n) :: "rdx", "memory");
    __atomic_store_n(&print_lock, 0, __ATOMIC_RELEASE);
}

/* Returns after the next interrupt, normally the 1 kHz PIT tick. */
void svc_sleep(void)
{
    uint64_t a = SVC_SLEEP;

    asm volatile("int3" : "+a"(a) :: "memory");
    g_wakeups++;
}

_Noreturn void svc_exit(uint32_t code)
{
    uint64_t a = SVC_EXIT, c = code;

    asm volatile("int3" : "+a"(a), "+S"(c) :: "rdx", "memory");
    __builtin_unreachable();
}

_Noreturn void wl_exit(uint32_t code)
{
    struct line l = { 0 };

    ln_str(&l, "EXIT code=");
    ln_u64(&l, code);
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

/*
 * Ticks that arrived while CPL3 ran with interrupts off are still pending
 * (the in-kernel PIT reinjects them), so one sleep may return at once:
 * always re-check the clock.
 */
void sleep_until(uint64_t deadline)
{
    while (rdtsc() < deadline) {
        svc_sleep();
    }
}

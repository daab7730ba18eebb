/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A vCPU's x86 state in and out of KVM, for the "cpu" section
 * (kvm-cpu-vmstate.c holds its QEMU layout): read with the vCPU paused
 * into an X86KvmImage, written back in the order KVM requires. A KVM
 * refusal becomes an Error, except for an MSR KVM refuses, which is
 * skipped (as it always was: e.g. an MSR a destination host lacks).
 *
 * Debug messages (MSR probing, skipped MSRs) go to the GLib log domain
 * "kvm-state"; run with G_MESSAGES_DEBUG=kvm-state to see them.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "system/kvm.h"
#include "system/cpus.h"
#include "kvm-x86.h"
#include "kvm-cpu-state.h"

#define cpu_state_debug(...) g_log("kvm-state", G_LOG_LEVEL_DEBUG, __VA_ARGS__)

/* KVM_GET_MSRS and KVM_SET_MSRS refuse 256 entries or more per call. */
#define KVM_MSR_BATCH 255

/*
 * The gap: MSRs KVM keeps that QEMU carries only in subsections of "cpu"
 * we cannot produce yet (no QEMU stream on the hosts we had showed them:
 * docs/devel/qemu-interop.md), so a migration loses them whatever their
 * value. We read them at creation and at save and warn when one has left
 * its creation value: the guest may notice (a cleared speculation
 * control, say). The migration goes on, as the brief for issue 37 decided.
 */
static const struct {
    uint32_t index;
    const char *name;
} gap_msrs[] = {
    { 0x48, "SPEC_CTRL" },
    { 0xda0, "XSS" },
    { 0xe1, "UMWAIT_CONTROL" },
    { 0x3a, "FEATURE_CONTROL" },
    { 0xc001011f, "VIRT_SSBD" },
    { 0x12, "KVM_SYSTEM_TIME (old)" },
    { 0x11, "KVM_WALL_CLOCK (old)" },
    { 0xd90, "BNDCFGS" },
};
G_STATIC_ASSERT(G_N_ELEMENTS(gap_msrs) == X86_CPU_GAP_MSRS);

/*
 * KVM_GET_MSRS or KVM_SET_MSRS over @e[0..n), in batches KVM accepts.
 * Returns how many entries were done, counting from the first, which is
 * less than @n when KVM refused entry e[ret]; or -errno.
 */
static int kvm_msrs_ioctl(CPUState *cpu, unsigned long req, struct kvm_msr_entry *e, uint32_t n)
{
    g_autofree struct kvm_msrs *m =
        g_malloc0(sizeof(*m) + MIN(n, KVM_MSR_BATCH) * sizeof(m->entries[0]));
    uint32_t done = 0;

    while (done < n) {
        uint32_t batch = MIN(n - done, KVM_MSR_BATCH);
        int ret;

        m->nmsrs = batch;
        memcpy(m->entries, e + done, batch * sizeof(*e));
        ret = kvm_vcpu_ioctl(cpu, req, m);
        if (ret < 0) {
            return ret;
        }
        ret = MIN((uint32_t)ret, batch);
        if (req == KVM_GET_MSRS) {
            memcpy(e + done, m->entries, ret * sizeof(*e));
        }
        done += ret;
        if ((uint32_t)ret < batch) {
            break;
        }
    }
    return done;
}

/*
 * Reads or writes @e[0..n) entry by entry where KVM refuses one: a refused
 * entry is reported and skipped (its data is left as it was), the rest is
 * done. False with @errp only when the ioctl itself fails.
 */
static bool kvm_msrs_skip_refused(CPUState *cpu, unsigned long req, struct kvm_msr_entry *e,
                                  uint32_t n, bool *refused, Error **errp)
{
    uint32_t pos = 0;

    while (pos < n) {
        int ret = kvm_msrs_ioctl(cpu, req, e + pos, n - pos);

        if (ret < 0) {
            error_setg_errno(errp, -ret, "cpu %d: %s failed", cpu->cpu_index,
                             req == KVM_GET_MSRS ? "KVM_GET_MSRS" : "KVM_SET_MSRS");
            return false;
        }
        pos += ret;
        if (pos < n) {
            cpu_state_debug("cpu %d: KVM refused %s MSR 0x%x (0x%llx), skipped", cpu->cpu_index,
                            req == KVM_GET_MSRS ? "reading" : "writing", e[pos].index,
                            (unsigned long long)e[pos].data);
            refused[pos] = true;
            pos++;
        }
    }
    return true;
}

static bool kvm_msr_readable(CPUState *cpu, uint32_t index, uint64_t *val)
{
    struct kvm_msr_entry e = { .index = index };

    if (kvm_msrs_ioctl(cpu, KVM_GET_MSRS, &e, 1) != 1) {
        return false;
    }
    *val = e.data;
    return true;
}

/* Is slot @i's MSR one this vCPU has at all (MCE banks and MCG_CTL depend on MCG_CAP)? */
static bool kvm_msr_slot_exists(const X86CPUCaps *c, unsigned i)
{
    uint32_t index = x86_msr_slots[i].index;

    if (index == 0x17a) {
        return c->mcg_cap != 0;
    }
    if (index == 0x17b) {
        return c->mcg_cap & X86_MCG_CTL_P;
    }
    if (index >= 0x400 && index < 0x400 + 4 * X86_MCE_BANKS_MAX) {
        return (index - 0x400) / 4 < (c->mcg_cap & 0xff);
    }
    return true;
}

/* Does the vCPU's CPUID put the AVX-512 components where x86-cpu-layout.c reads them? */
static bool kvm_cpu_avx512_offsets(const struct kvm_cpuid2 *cpuid)
{
    uint32_t ebx_of[8] = { 0 };

    for (uint32_t i = 0; cpuid && i < cpuid->nent; i++) {
        const struct kvm_cpuid_entry2 *e = &cpuid->entries[i];

        if (e->function == 0xd && e->index < 8) {
            ebx_of[e->index] = e->ebx;
        }
    }
    return x86_avx512_offsets_ok(ebx_of);
}

static uint64_t kvm_cpu_xcr0_supported(const struct kvm_cpuid2 *cpuid)
{
    for (uint32_t i = 0; cpuid && i < cpuid->nent; i++) {
        const struct kvm_cpuid_entry2 *e = &cpuid->entries[i];

        if (e->function == 0xd && e->index == 0) {
            return e->eax | (uint64_t)e->edx << 32;
        }
    }
    return X86_XSTATE_X87 | X86_XSTATE_SSE;
}

void kvm_cpu_state_init(KVMState *s, CPUState *cpu)
{
    X86CPUState *env = cpu->env;
    X86CPUCaps *c = &env->caps;
    unsigned found = 0;

    env->cpu = cpu;
    /* KVM_GET_XSAVE2 fills KVM_CAP_XSAVE2's size, KVM_GET_XSAVE 4 KiB: both hold the AVX part. */
    env->xsave_len = s->xsave_size > 0 ? (uint32_t)s->xsave_size : sizeof(struct kvm_xsave);
    env->xsave = g_malloc0(MAX(env->xsave_len, X86_XSAVE_AVX512_END));
    c->xcr0_supported = kvm_cpu_xcr0_supported(env->cpuid);
    c->avx_area = env->xsave_len >= X86_XSAVE_AVX_END && (c->xcr0_supported & X86_XSTATE_AVX);
    c->avx512_area = c->avx_area && env->xsave_len >= X86_XSAVE_AVX512_END &&
                     (c->xcr0_supported & X86_XSTATE_AVX512) == X86_XSTATE_AVX512 &&
                     kvm_cpu_avx512_offsets(env->cpuid);
    memset(c->msr_ok, 0, sizeof(c->msr_ok));
    /* Each MSR alone: a failed read stops KVM_GET_MSRS at that entry. */
    for (unsigned i = 0; i < X86_MSR_SLOTS; i++) {
        uint64_t v;

        if (kvm_msr_slot_exists(c, i) && kvm_msr_readable(cpu, x86_msr_slots[i].index, &v)) {
            c->msr_ok[i / 64] |= 1ull << (i % 64);
            found++;
            if (x86_msr_slots[i].index == X86_MSR_MISC_ENABLE) {
                /*
                 * QEMU's vCPUs start with fast strings only, KVM's with
                 * 0x1800: start as QEMU's, so that a guest reads the same
                 * on both and "cpu/msr_ia32_misc_enable" goes exactly
                 * when QEMU would send it.
                 */
                struct kvm_msr_entry e = { .index = X86_MSR_MISC_ENABLE,
                                           .data = X86_MISC_ENABLE_RESET };

                kvm_msrs_ioctl(cpu, KVM_SET_MSRS, &e, 1);
            }
        } else {
            cpu_state_debug("cpu %d: MSR 0x%x not available, sent as its default",
                            cpu->cpu_index, x86_msr_slots[i].index);
        }
    }
    env->gap_ok = 0;
    for (unsigned i = 0; i < X86_CPU_GAP_MSRS; i++) {
        if (kvm_msr_readable(cpu, gap_msrs[i].index, &env->gap_reset[i])) {
            env->gap_ok |= 1u << i;
        }
    }
    cpu_state_debug("cpu %d: %u of the layout's %u MSRs available, XCR0 mask 0x%" PRIx64,
                    cpu->cpu_index, found, X86_MSR_SLOTS, c->xcr0_supported);
}

/* ---- save ---- */

/* Warns (once per vCPU) about MSRs the layout cannot carry and that have left their reset value. */
static void kvm_cpu_check_gap(X86CPUState *env)
{
    CPUState *cpu = env->cpu;
    g_autoptr(GString) lost = g_string_new(NULL);

    if (env->gap_warned) {
        return;
    }
    for (unsigned i = 0; i < X86_CPU_GAP_MSRS; i++) {
        uint64_t v;

        if ((env->gap_ok >> i & 1) && kvm_msr_readable(cpu, gap_msrs[i].index, &v) &&
            v != env->gap_reset[i]) {
            g_string_append_printf(lost, "%s%s", lost->len ? ", " : "", gap_msrs[i].name);
        }
    }
    if (lost->len) {
        env->gap_warned = true;
        warn_report("cpu %d: MSRs not carried by the cpu section are lost: %s",
                    cpu->cpu_index, lost->str);
    }
}

/* A vCPU ioctl that must succeed, both ways (KVM_GET_* and KVM_SET_*). */
#define VCPU_IOCTL(req, arg, name)                                                     \
    do {                                                                        \
        int ret_ = kvm_vcpu_ioctl(cpu, (req), (arg));                           \
        if (ret_ < 0) {                                                         \
            error_setg_errno(errp, -ret_, "cpu %d: %s failed", cpu->cpu_index, (name)); \
            return false;                                                       \
        }                                                                       \
    } while (0)

bool kvm_cpu_get_mp_state(X86CPUState *env, Error **errp)
{
    CPUState *cpu = env->cpu;

    /*
     * KVM_GET_MP_STATE accepts pending INIT/SIPI events, which may reset
     * the vCPU and so change everything read after it: read it first.
     */
    VCPU_IOCTL(KVM_GET_MP_STATE, &env->kvm.mp_state, "KVM_GET_MP_STATE");
    return true;
}

bool kvm_cpu_get(X86CPUState *env, Error **errp)
{
    CPUState *cpu = env->cpu;
    KVMState *s = kvm_state;
    X86KvmImage *k = &env->kvm;
    struct kvm_msr_entry e[X86_MSR_SLOTS];
    bool refused[X86_MSR_SLOTS] = { false };
    uint32_t n = 0, slot_of[X86_MSR_SLOTS];
    int ret;

    if (!kvm_cpu_get_mp_state(env, errp)) {
        return false;
    }
    VCPU_IOCTL(KVM_GET_REGS, &k->regs, "KVM_GET_REGS");
    VCPU_IOCTL(KVM_GET_SREGS, &k->sregs, "KVM_GET_SREGS");
    memset(env->xsave, 0, env->xsave_len);
    if (s->xsave_size > 0) {
        VCPU_IOCTL(KVM_GET_XSAVE2, env->xsave, "KVM_GET_XSAVE2");
    } else {
        VCPU_IOCTL(KVM_GET_XSAVE, env->xsave, "KVM_GET_XSAVE");
    }
    memset(k->xsave, 0, sizeof(k->xsave));
    memcpy(k->xsave, env->xsave, MIN(sizeof(k->xsave), env->xsave_len));
    k->xcr0 = X86_XSTATE_X87;
    if (s->xcrs) {
        struct kvm_xcrs xcrs = { 0 };

        VCPU_IOCTL(KVM_GET_XCRS, &xcrs, "KVM_GET_XCRS");
        for (uint32_t i = 0; i < MIN(xcrs.nr_xcrs, KVM_MAX_XCRS); i++) {
            if (xcrs.xcrs[i].xcr == 0) {
                k->xcr0 = xcrs.xcrs[i].value;
            }
        }
    }
    for (unsigned i = 0; i < X86_MSR_SLOTS; i++) {
        k->msr[i] = 0;
        if (x86_msr_ok(&env->caps, i)) {
            slot_of[n] = i;
            e[n++] = (struct kvm_msr_entry) { .index = x86_msr_slots[i].index };
        }
    }
    if (!kvm_msrs_skip_refused(cpu, KVM_GET_MSRS, e, n, refused, errp)) {
        return false;
    }
    for (uint32_t j = 0; j < n; j++) {
        k->msr[slot_of[j]] = refused[j] ? 0 : e[j].data;
    }
    memset(&k->events, 0, sizeof(k->events));
    if (s->vcpu_events) {
        VCPU_IOCTL(KVM_GET_VCPU_EVENTS, &k->events, "KVM_GET_VCPU_EVENTS");
    }
    memset(&k->debugregs, 0, sizeof(k->debugregs));
    if (s->debugregs) {
        VCPU_IOCTL(KVM_GET_DEBUGREGS, &k->debugregs, "KVM_GET_DEBUGREGS");
    }
    /* -EIO when the host TSC is unstable: then there is no rate to carry. */
    ret = kvm_vcpu_ioctl(cpu, KVM_GET_TSC_KHZ, NULL);
    k->tsc_khz = ret > 0 ? ret : 0;
    kvm_cpu_check_gap(env);
    return true;
}

/* ---- load ---- */

bool kvm_cpu_get_sregs(X86CPUState *env, Error **errp)
{
    CPUState *cpu = env->cpu;

    VCPU_IOCTL(KVM_GET_SREGS, &env->kvm.sregs, "KVM_GET_SREGS");
    return true;
}


static void kvm_cpu_put_tsc_khz(X86CPUState *env)
{
    CPUState *cpu = env->cpu;
    static bool warned;
    int local = kvm_vcpu_ioctl(cpu, KVM_GET_TSC_KHZ, NULL);
    uint32_t khz = env->kvm.tsc_khz;

    if (local <= 0 || (uint32_t)local == khz) {
        return;
    }
    if (kvm_check_extension(kvm_state, KVM_CAP_TSC_CONTROL) &&
        kvm_vcpu_ioctl(cpu, KVM_SET_TSC_KHZ, (void *)(uintptr_t)khz) == 0) {
        return;
    }
    /*
     * Not fatal: the guest runs, but its TSC-based clock drifts. Once per
     * process (all vCPUs share the rate): the one file-scope flag here.
     */
    if (!warned) {
        warned = true;
        warn_report("TSC frequency mismatch between VM (%u kHz) and host (%d kHz), "
                    "and TSC scaling unavailable", khz, local);
    }
}

static bool kvm_cpu_put_msrs(X86CPUState *env, Error **errp)
{
    CPUState *cpu = env->cpu;
    const X86KvmImage *k = &env->kvm;
    struct kvm_msr_entry e[X86_MSR_SLOTS];
    bool refused[X86_MSR_SLOTS] = { false };
    uint32_t n = 0;

    for (unsigned i = 0; i < X86_MSR_SLOTS; i++) {
        if (i == X86_MSR_SLOT_TSC_DEADLINE) {
            continue;                   /* kvm_cpu_put_tail, after the LAPIC */
        }
        if (x86_msr_ok(&env->caps, i)) {
            e[n++] = (struct kvm_msr_entry) { .index = x86_msr_slots[i].index, .data = k->msr[i] };
        } else if (k->msr[i]) {
            cpu_state_debug("cpu %d: MSR 0x%x = 0x%llx in the stream, not available here, "
                            "skipped", cpu->cpu_index, x86_msr_slots[i].index,
                            (unsigned long long)k->msr[i]);
        }
    }
    /* A refused MSR (e.g. a bank CTL value KVM does not take) is skipped, never fatal. */
    return kvm_msrs_skip_refused(cpu, KVM_SET_MSRS, e, n, refused, errp);
}


/*
 * Writes the checked image into KVM, all but what must follow the LAPIC
 * (kvm_cpu_put_tail). The order is KVM's:
 *  - the TSC rate before the TSC MSR, so the value is taken at the new rate;
 *  - regs before the events (tail): KVM_SET_REGS drops a pending exception;
 *  - XSAVE before XCR0 is fine: KVM checks XSTATE_BV against what the
 *    vCPU's CPUID allows, not against the current XCR0;
 *  - sregs (with the APIC base KVM holds now: "apic" sets it) before the
 *    MSRs: EFER.LME and CR4 decide which MSRs and values KVM accepts.
 */
bool kvm_cpu_put(X86CPUState *env, Error **errp)
{
    CPUState *cpu = env->cpu;
    KVMState *s = kvm_state;
    X86KvmImage *k = &env->kvm;

    if (k->tsc_khz) {
        kvm_cpu_put_tsc_khz(env);
    }
    VCPU_IOCTL(KVM_SET_REGS, &k->regs, "KVM_SET_REGS");
    /* The components beyond AVX start from their init state (XSTATE_BV clear). */
    memset(env->xsave, 0, env->xsave_len);
    memcpy(env->xsave, k->xsave, MIN(sizeof(k->xsave), env->xsave_len));
    VCPU_IOCTL(KVM_SET_XSAVE, env->xsave, "KVM_SET_XSAVE");
    if (s->xcrs) {
        struct kvm_xcrs xcrs = { .nr_xcrs = 1, .xcrs[0] = { .xcr = 0, .value = k->xcr0 } };

        VCPU_IOCTL(KVM_SET_XCRS, &xcrs, "KVM_SET_XCRS");
    }
    VCPU_IOCTL(KVM_SET_SREGS, &k->sregs, "KVM_SET_SREGS");
    if (!kvm_cpu_put_msrs(env, errp)) {
        return false;
    }
    if (s->debugregs) {
        VCPU_IOCTL(KVM_SET_DEBUGREGS, &k->debugregs, "KVM_SET_DEBUGREGS");
    }
    return true;
}

/*
 * After KVM_SET_LAPIC:
 *  - the TSC-deadline MSR: KVM drops a write unless the LVT timer is
 *    already in TSC-deadline mode, which KVM_SET_LAPIC sets;
 *  - mp_state after sregs (KVM_SET_SREGS may make a BSP runnable) and after
 *    the LAPIC (a SIPI_RECEIVED state lives in the APIC's pending events);
 *  - events last: they carry the SIPI vector and re-inject what the vCPU
 *    was delivering, which KVM_SET_REGS and KVM_SET_LAPIC would drop.
 */
bool kvm_cpu_put_tail(X86CPUState *env, Error **errp)
{
    CPUState *cpu = env->cpu;
    KVMState *s = kvm_state;
    X86KvmImage *k = &env->kvm;

    env->cpu_loaded = env->apic_loaded = false;
    if (x86_msr_ok(&env->caps, X86_MSR_SLOT_TSC_DEADLINE)) {
        struct kvm_msr_entry e = { .index = X86_MSR_TSC_DEADLINE,
                                   .data = k->msr[X86_MSR_SLOT_TSC_DEADLINE] };
        bool refused = false;

        if (!kvm_msrs_skip_refused(cpu, KVM_SET_MSRS, &e, 1, &refused, errp)) {
            return false;
        }
    }
    VCPU_IOCTL(KVM_SET_MP_STATE, &k->mp_state, "KVM_SET_MP_STATE");
    if (s->vcpu_events) {
        struct kvm_vcpu_events ev = k->events;

        ev.flags = KVM_VCPUEVENT_VALID_NMI_PENDING | KVM_VCPUEVENT_VALID_SIPI_VECTOR |
                   KVM_VCPUEVENT_VALID_SHADOW;
        VCPU_IOCTL(KVM_SET_VCPU_EVENTS, &ev, "KVM_SET_VCPU_EVENTS");
    }
    return true;
}

#undef VCPU_IOCTL

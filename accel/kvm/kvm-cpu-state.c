/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The "cpu" migration section (one per vCPU, instance = cpu_index): all the
 * x86 state KVM keeps for a vCPU, read with the vCPU paused and written back
 * in the order KVM requires. The incoming stream is hostile: the field table
 * bounds every count, post_load checks what it can before touching KVM, and
 * a KVM refusal becomes an Error. An MSR KVM refuses is skipped, never fatal.
 *
 * Debug messages (MSR probing, skipped MSRs) go to the GLib log domain
 * "kvm-state"; run with G_MESSAGES_DEBUG=kvm-state to see them.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bufferiszero.h"
#include "migration/vmstate.h"
#include "system/kvm.h"
#include "system/cpus.h"
#include "kvm-x86.h"

#define cpu_state_debug(...) g_log("kvm-state", G_LOG_LEVEL_DEBUG, __VA_ARGS__)

#define MSR_IA32_TSC_DEADLINE   0x6e0
#define MSR_X2APIC_FIRST        0x800
#define MSR_X2APIC_LAST         0x8ff
#define MSR_KVM_ASYNC_PF_EN     0x4b564d02
#define MSR_KVM_ASYNC_PF_ACK    0x4b564d07
#define HV_X64_MSR_RESET        0x40000003
#define HV_X64_MSR_EOI          0x40000070
#define HV_X64_MSR_TPR          0x40000072

/* KVM_GET_MSRS and KVM_SET_MSRS refuse 256 entries or more per call. */
#define KVM_MSR_BATCH 255

/*
 * MSRs KVM lists that must not be written back blindly, so we never migrate
 * them (and ignore them in a stream):
 *  - MSR_KVM_ASYNC_PF_ACK: a doorbell (the guest acknowledges a "page
 *    ready" event), not state; it reads as 0.
 *  - HV_X64_MSR_RESET: a doorbell; writing 1 resets the VM.
 *  - HV_X64_MSR_EOI/ICR/TPR and the x2APIC range: aliases of local APIC
 *    registers (writing ICR sends an IPI, EOI retires an interrupt); the
 *    APIC travels whole through KVM_GET/SET_LAPIC.
 */
static bool kvm_msr_excluded(uint32_t index)
{
    return index == MSR_KVM_ASYNC_PF_ACK || index == HV_X64_MSR_RESET ||
           (index >= HV_X64_MSR_EOI && index <= HV_X64_MSR_TPR) ||
           (index >= MSR_X2APIC_FIRST && index <= MSR_X2APIC_LAST);
}

/*
 * When an MSR is written on load. Most MSRs are independent of each other,
 * but KVM lists two that are not:
 *  - MSR_KVM_ASYNC_PF_EN goes after the other MSRs: enabling async page
 *    faults delivers "page ready" events through the vector that
 *    MSR_KVM_ASYNC_PF_INT holds, and KVM lists EN before INT.
 *  - MSR_IA32_TSC_DEADLINE goes after KVM_SET_LAPIC: KVM ignores the write
 *    unless the LVT timer is already in TSC-deadline mode.
 */
typedef enum MsrPhase {
    MSR_PHASE_FIRST,
    MSR_PHASE_LAST,
    MSR_PHASE_AFTER_LAPIC,
} MsrPhase;

static MsrPhase kvm_msr_phase(uint32_t index)
{
    switch (index) {
    case MSR_KVM_ASYNC_PF_EN:
        return MSR_PHASE_LAST;
    case MSR_IA32_TSC_DEADLINE:
        return MSR_PHASE_AFTER_LAPIC;
    default:
        return MSR_PHASE_FIRST;
    }
}

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
 * Keep the MSRs of KVM_GET_MSR_INDEX_LIST that this vCPU can read. A failed
 * read stops KVM_GET_MSRS at that entry, so each index is tried alone.
 */
static void kvm_cpu_probe_msrs(KVMState *s, X86CPUState *env)
{
    CPUState *cpu = env->cpu;
    uint32_t listed = s->msr_list ? s->msr_list->nmsrs : 0;
    uint32_t excluded = 0, unreadable = 0;

    env->msr_index = g_new(uint32_t, MIN(listed, X86_CPU_MAX_MSRS));
    env->nr_msr_index = 0;
    for (uint32_t i = 0; i < listed; i++) {
        struct kvm_msr_entry e = { .index = s->msr_list->indices[i] };

        if (kvm_msr_excluded(e.index)) {
            excluded++;
            continue;
        }
        if (kvm_msrs_ioctl(cpu, KVM_GET_MSRS, &e, 1) != 1) {
            cpu_state_debug("cpu %d: MSR 0x%x is listed but not readable, not migrated",
                            cpu->cpu_index, e.index);
            unreadable++;
            continue;
        }
        if (env->nr_msr_index == X86_CPU_MAX_MSRS) {
            cpu_state_debug("cpu %d: more than %d MSRs, 0x%x and later not migrated",
                            cpu->cpu_index, X86_CPU_MAX_MSRS, e.index);
            break;
        }
        env->msr_index[env->nr_msr_index++] = e.index;
    }
    cpu_state_debug("cpu %d: KVM lists %u MSRs: %u migrated, %u excluded, %u unreadable",
                    cpu->cpu_index, listed, env->nr_msr_index, excluded, unreadable);
}

static bool kvm_cpu_msr_known(X86CPUState *env, uint32_t index)
{
    for (uint32_t i = 0; i < env->nr_msr_index; i++) {
        if (env->msr_index[i] == index) {
            return true;
        }
    }
    return false;
}

/* ---- save ---- */

static uint32_t kvm_xsave_len(KVMState *s)
{
    return s->xsave_size > 0 ? (uint32_t)s->xsave_size : sizeof(struct kvm_xsave);
}

static bool kvm_cpu_get_msrs(X86CPUState *env, Error **errp)
{
    CPUState *cpu = env->cpu;
    uint32_t n = env->nr_msr_index, pos = 0;

    for (uint32_t i = 0; i < n; i++) {
        env->msrs[i] = (struct kvm_msr_entry) { .index = env->msr_index[i] };
    }
    while (pos < n) {
        int ret = kvm_msrs_ioctl(cpu, KVM_GET_MSRS, env->msrs + pos, n - pos);

        if (ret < 0) {
            error_setg_errno(errp, -ret, "cpu %d: KVM_GET_MSRS failed", cpu->cpu_index);
            return false;
        }
        pos += ret;
        if (pos < n) {
            /* Readable at creation, not now: leave it out of the stream. */
            cpu_state_debug("cpu %d: MSR 0x%x no longer readable, not migrated",
                            cpu->cpu_index, env->msrs[pos].index);
            memmove(env->msrs + pos, env->msrs + pos + 1, (n - pos - 1) * sizeof(env->msrs[0]));
            n--;
        }
    }
    env->nr_msrs = n;
    return true;
}

static bool kvm_cpu_pre_save(void *opaque, Error **errp)
{
    X86CPUState *env = opaque;
    CPUState *cpu = env->cpu;
    KVMState *s = kvm_state;
    uint32_t xsave_len = kvm_xsave_len(s);
    int ret;

    if (xsave_len > X86_CPU_XSAVE_MAX) {
        error_setg(errp, "cpu %d: the XSAVE area has %u bytes, more than the %u we migrate",
                   cpu->cpu_index, xsave_len, X86_CPU_XSAVE_MAX);
        return false;
    }
    /*
     * MP state first: KVM_GET_MP_STATE accepts pending INIT/SIPI events,
     * which may reset the vCPU and so change everything read below.
     */
    if ((ret = kvm_vcpu_ioctl(cpu, KVM_GET_MP_STATE, &env->mp_state)) < 0) {
        error_setg_errno(errp, -ret, "cpu %d: KVM_GET_MP_STATE failed", cpu->cpu_index);
        return false;
    }
    if ((ret = kvm_vcpu_ioctl(cpu, KVM_GET_REGS, &env->regs)) < 0) {
        error_setg_errno(errp, -ret, "cpu %d: KVM_GET_REGS failed", cpu->cpu_index);
        return false;
    }
    if ((ret = kvm_vcpu_ioctl(cpu, KVM_GET_SREGS, &env->sregs)) < 0) {
        error_setg_errno(errp, -ret, "cpu %d: KVM_GET_SREGS failed", cpu->cpu_index);
        return false;
    }
    memset(env->xsave, 0, X86_CPU_XSAVE_MAX);
    env->xsave_len = xsave_len;
    ret = kvm_vcpu_ioctl(cpu, s->xsave_size > 0 ? KVM_GET_XSAVE2 : KVM_GET_XSAVE, env->xsave);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "cpu %d: %s failed", cpu->cpu_index,
                         s->xsave_size > 0 ? "KVM_GET_XSAVE2" : "KVM_GET_XSAVE");
        return false;
    }
    memset(&env->xcrs, 0, sizeof(env->xcrs));
    if (s->xcrs && (ret = kvm_vcpu_ioctl(cpu, KVM_GET_XCRS, &env->xcrs)) < 0) {
        error_setg_errno(errp, -ret, "cpu %d: KVM_GET_XCRS failed", cpu->cpu_index);
        return false;
    }
    env->xcrs.nr_xcrs = MIN(env->xcrs.nr_xcrs, KVM_MAX_XCRS);
    if (!kvm_cpu_get_msrs(env, errp)) {
        return false;
    }
    if ((ret = kvm_vcpu_ioctl(cpu, KVM_GET_LAPIC, &env->lapic)) < 0) {
        error_setg_errno(errp, -ret, "cpu %d: KVM_GET_LAPIC failed", cpu->cpu_index);
        return false;
    }
    memset(&env->events, 0, sizeof(env->events));
    if (s->vcpu_events && (ret = kvm_vcpu_ioctl(cpu, KVM_GET_VCPU_EVENTS, &env->events)) < 0) {
        error_setg_errno(errp, -ret, "cpu %d: KVM_GET_VCPU_EVENTS failed", cpu->cpu_index);
        return false;
    }
    memset(&env->debugregs, 0, sizeof(env->debugregs));
    if (s->debugregs && (ret = kvm_vcpu_ioctl(cpu, KVM_GET_DEBUGREGS, &env->debugregs)) < 0) {
        error_setg_errno(errp, -ret, "cpu %d: KVM_GET_DEBUGREGS failed", cpu->cpu_index);
        return false;
    }
    /* -EIO when the host TSC is unstable: then there is no rate to carry. */
    ret = kvm_vcpu_ioctl(cpu, KVM_GET_TSC_KHZ, NULL);
    env->tsc_khz = ret > 0 ? ret : 0;
    return true;
}

/* ---- load ---- */

static bool kvm_cpu_pre_load(void *opaque, Error **errp)
{
    X86CPUState *env = opaque;

    /* The VBUFFER loader writes up to X86_CPU_XSAVE_MAX bytes; a shorter area reads as zeroes. */
    memset(env->xsave, 0, X86_CPU_XSAVE_MAX);
    env->xsave_len = 0;
    env->nr_msrs = 0;
    memset(&env->xcrs, 0, sizeof(env->xcrs));
    memset(&env->events, 0, sizeof(env->events));
    memset(&env->debugregs, 0, sizeof(env->debugregs));
    env->tsc_khz = 0;
    env->have_events = env->have_xcrs = env->have_debugregs = env->have_tsc_khz = false;
    return true;
}

/* Checks the parts KVM would take on trust, before any of them reaches KVM. */
static bool kvm_cpu_validate(X86CPUState *env, Error **errp)
{
    int index = env->cpu->cpu_index;
    uint32_t local_len = kvm_xsave_len(kvm_state);

    if (env->mp_state.mp_state > KVM_MP_STATE_SIPI_RECEIVED) {
        error_setg(errp, "cpu %d: invalid MP state %u", index, env->mp_state.mp_state);
        return false;
    }
    if (env->xsave_len < sizeof(struct kvm_xsave)) {
        error_setg(errp, "cpu %d: XSAVE area of %u bytes is too short (at least %zu)", index,
                   env->xsave_len, sizeof(struct kvm_xsave));
        return false;
    }
    /* KVM reads local_len bytes; state beyond them would be silently lost. */
    if (env->xsave_len > local_len &&
        !buffer_is_zero(env->xsave + local_len, env->xsave_len - local_len)) {
        error_setg(errp, "cpu %d: XSAVE state of %u bytes does not fit the %u bytes this "
                   "host supports", index, env->xsave_len, local_len);
        return false;
    }
    if (env->have_xcrs && env->xcrs.nr_xcrs && !kvm_state->xcrs) {
        error_setg(errp, "cpu %d: the stream has XCRs but KVM lacks KVM_CAP_XCRS", index);
        return false;
    }
    if (env->have_events) {
        const struct kvm_vcpu_events *ev = &env->events;

        if (ev->flags & (KVM_VCPUEVENT_VALID_PAYLOAD | KVM_VCPUEVENT_VALID_TRIPLE_FAULT)) {
            /* We never enable KVM_CAP_EXCEPTION_PAYLOAD or TRIPLE_FAULT_EVENT. */
            error_setg(errp, "cpu %d: vCPU events carry state this VMM does not use "
                       "(flags 0x%x)", index, ev->flags);
            return false;
        }
        if ((ev->exception.injected || ev->exception.pending) && ev->exception.nr > 31) {
            error_setg(errp, "cpu %d: invalid pending exception vector %u", index,
                       ev->exception.nr);
            return false;
        }
        if (ev->sipi_vector > 0xff) {
            error_setg(errp, "cpu %d: invalid SIPI vector 0x%x", index, ev->sipi_vector);
            return false;
        }
    }
    return true;
}

static bool kvm_cpu_put_msrs(X86CPUState *env, MsrPhase phase, Error **errp)
{
    CPUState *cpu = env->cpu;
    g_autofree struct kvm_msr_entry *e = g_new0(struct kvm_msr_entry, env->nr_msrs + 1);
    uint32_t n = 0, pos = 0;

    for (uint32_t i = 0; i < env->nr_msrs; i++) {
        uint32_t index = env->msrs[i].index;

        if (kvm_msr_phase(index) != phase) {
            continue;
        }
        /* Only what we would have sent ourselves: no doorbells, no aliases. */
        if (!kvm_cpu_msr_known(env, index)) {
            cpu_state_debug("cpu %d: MSR 0x%x in the stream is not migratable here, skipped",
                            cpu->cpu_index, index);
            continue;
        }
        e[n++] = (struct kvm_msr_entry) { .index = index, .data = env->msrs[i].data };
    }
    while (pos < n) {
        int ret = kvm_msrs_ioctl(cpu, KVM_SET_MSRS, e + pos, n - pos);

        if (ret < 0) {
            error_setg_errno(errp, -ret, "cpu %d: KVM_SET_MSRS failed", cpu->cpu_index);
            return false;
        }
        pos += ret;
        if (pos < n) {
            /* E.g. MSR_IA32_ARCH_CAPABILITIES with bits this host lacks. */
            cpu_state_debug("cpu %d: KVM refused MSR 0x%x = 0x%llx, skipped", cpu->cpu_index,
                            e[pos].index, (unsigned long long)e[pos].data);
            pos++;
        }
    }
    return true;
}

static void kvm_cpu_put_tsc_khz(X86CPUState *env)
{
    CPUState *cpu = env->cpu;
    static bool warned;
    int local = kvm_vcpu_ioctl(cpu, KVM_GET_TSC_KHZ, NULL);

    if (local <= 0 || (uint32_t)local == env->tsc_khz) {
        return;
    }
    if (kvm_check_extension(kvm_state, KVM_CAP_TSC_CONTROL) &&
        kvm_vcpu_ioctl(cpu, KVM_SET_TSC_KHZ, (void *)(uintptr_t)env->tsc_khz) == 0) {
        return;
    }
    /* Not fatal: the guest runs, but its TSC-based clock drifts. */
    if (!warned) {
        warned = true;
        warn_report("TSC frequency mismatch between VM (%u kHz) and host (%d kHz), "
                    "and TSC scaling unavailable", env->tsc_khz, local);
    }
}

#define PUT(req, arg, name)                                                     \
    do {                                                                        \
        int ret_ = kvm_vcpu_ioctl(cpu, (req), (arg));                           \
        if (ret_ < 0) {                                                         \
            error_setg_errno(errp, -ret_, "cpu %d: %s failed", cpu->cpu_index, (name)); \
            return false;                                                       \
        }                                                                       \
    } while (0)

/*
 * Writes the loaded image into KVM. The order is KVM's:
 *  - the TSC rate before the TSC MSR, so the value is taken at the new rate;
 *  - regs before events: KVM_SET_REGS drops a pending exception;
 *  - sregs (which carry the APIC base) before the MSRs and before
 *    KVM_SET_LAPIC, whose APIC ID format depends on the APIC mode;
 *  - KVM_SET_LAPIC before MSR_IA32_TSC_DEADLINE (see kvm_msr_phase);
 *  - mp_state after sregs (KVM_SET_SREGS may make a BSP runnable) and after
 *    the LAPIC (a SIPI_RECEIVED state lives in the APIC's pending events);
 *  - events after mp_state and LAPIC: they carry the SIPI vector and a
 *    latched INIT, and re-inject what the vCPU was delivering.
 */
static bool kvm_cpu_put(X86CPUState *env, Error **errp)
{
    CPUState *cpu = env->cpu;
    KVMState *s = kvm_state;

    if (env->have_tsc_khz && env->tsc_khz) {
        kvm_cpu_put_tsc_khz(env);
    }
    PUT(KVM_SET_REGS, &env->regs, "KVM_SET_REGS");
    PUT(KVM_SET_XSAVE, env->xsave, "KVM_SET_XSAVE");
    if (env->have_xcrs && env->xcrs.nr_xcrs) {
        env->xcrs.flags = 0;
        for (uint32_t i = 0; i < env->xcrs.nr_xcrs; i++) {
            env->xcrs.xcrs[i].reserved = 0;
        }
        PUT(KVM_SET_XCRS, &env->xcrs, "KVM_SET_XCRS");
    }
    PUT(KVM_SET_SREGS, &env->sregs, "KVM_SET_SREGS");
    if (!kvm_cpu_put_msrs(env, MSR_PHASE_FIRST, errp) ||
        !kvm_cpu_put_msrs(env, MSR_PHASE_LAST, errp)) {
        return false;
    }
    PUT(KVM_SET_LAPIC, &env->lapic, "KVM_SET_LAPIC");
    if (!kvm_cpu_put_msrs(env, MSR_PHASE_AFTER_LAPIC, errp)) {
        return false;
    }
    PUT(KVM_SET_MP_STATE, &env->mp_state, "KVM_SET_MP_STATE");
    if (env->have_events && s->vcpu_events) {
        struct kvm_vcpu_events ev = env->events;

        ev.flags = KVM_VCPUEVENT_VALID_NMI_PENDING | KVM_VCPUEVENT_VALID_SIPI_VECTOR;
        if ((env->events.flags & KVM_VCPUEVENT_VALID_SHADOW) &&
            kvm_check_extension(s, KVM_CAP_INTR_SHADOW)) {
            ev.flags |= KVM_VCPUEVENT_VALID_SHADOW;
        }
        if ((env->events.flags & KVM_VCPUEVENT_VALID_SMM) &&
            kvm_vm_check_extension(s, KVM_CAP_X86_SMM)) {
            ev.flags |= KVM_VCPUEVENT_VALID_SMM;
        }
        memset(ev.reserved, 0, sizeof(ev.reserved));
        PUT(KVM_SET_VCPU_EVENTS, &ev, "KVM_SET_VCPU_EVENTS");
    }
    if (env->have_debugregs && s->debugregs) {
        env->debugregs.flags = 0;
        memset(env->debugregs.reserved, 0, sizeof(env->debugregs.reserved));
        PUT(KVM_SET_DEBUGREGS, &env->debugregs, "KVM_SET_DEBUGREGS");
    }
    return true;
}

#undef PUT

static bool kvm_cpu_post_load(void *opaque, int version_id, Error **errp)
{
    X86CPUState *env = opaque;

    if (!kvm_cpu_validate(env, errp) || !kvm_cpu_put(env, errp)) {
        return false;
    }
    /* KVM now holds the incoming state; nothing in env may be put over it. */
    env->cpu->vcpu_dirty = false;
    return true;
}

static bool kvm_cpu_events_pre_load(void *opaque, Error **errp)
{
    ((X86CPUState *)opaque)->have_events = true;
    return true;
}

static bool kvm_cpu_xcrs_pre_load(void *opaque, Error **errp)
{
    ((X86CPUState *)opaque)->have_xcrs = true;
    return true;
}

static bool kvm_cpu_debugregs_pre_load(void *opaque, Error **errp)
{
    ((X86CPUState *)opaque)->have_debugregs = true;
    return true;
}

static bool kvm_cpu_tsc_khz_pre_load(void *opaque, Error **errp)
{
    ((X86CPUState *)opaque)->have_tsc_khz = true;
    return true;
}

static bool kvm_cpu_events_needed(void *opaque)
{
    return kvm_state->vcpu_events;
}

static bool kvm_cpu_xcrs_needed(void *opaque)
{
    return kvm_state->xcrs;
}

static bool kvm_cpu_debugregs_needed(void *opaque)
{
    return kvm_state->debugregs;
}

static bool kvm_cpu_tsc_khz_needed(void *opaque)
{
    return ((X86CPUState *)opaque)->tsc_khz != 0;
}

/* ---- field tables ---- */

#define VMSTATE_KVM_U64(_f, _s) VMSTATE_UINT_SIZED(_f, _s, VMS_UINT64)

static const VMStateDescription vmstate_kvm_regs = {
    .name = "kvm_regs",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_KVM_U64(rax, struct kvm_regs),
        VMSTATE_KVM_U64(rbx, struct kvm_regs),
        VMSTATE_KVM_U64(rcx, struct kvm_regs),
        VMSTATE_KVM_U64(rdx, struct kvm_regs),
        VMSTATE_KVM_U64(rsi, struct kvm_regs),
        VMSTATE_KVM_U64(rdi, struct kvm_regs),
        VMSTATE_KVM_U64(rsp, struct kvm_regs),
        VMSTATE_KVM_U64(rbp, struct kvm_regs),
        VMSTATE_KVM_U64(r8, struct kvm_regs),
        VMSTATE_KVM_U64(r9, struct kvm_regs),
        VMSTATE_KVM_U64(r10, struct kvm_regs),
        VMSTATE_KVM_U64(r11, struct kvm_regs),
        VMSTATE_KVM_U64(r12, struct kvm_regs),
        VMSTATE_KVM_U64(r13, struct kvm_regs),
        VMSTATE_KVM_U64(r14, struct kvm_regs),
        VMSTATE_KVM_U64(r15, struct kvm_regs),
        VMSTATE_KVM_U64(rip, struct kvm_regs),
        VMSTATE_KVM_U64(rflags, struct kvm_regs),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_kvm_segment = {
    .name = "kvm_segment",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_KVM_U64(base, struct kvm_segment),
        VMSTATE_UINT32(limit, struct kvm_segment),
        VMSTATE_UINT16(selector, struct kvm_segment),
        VMSTATE_UINT8(type, struct kvm_segment),
        VMSTATE_UINT8(present, struct kvm_segment),
        VMSTATE_UINT8(dpl, struct kvm_segment),
        VMSTATE_UINT8(db, struct kvm_segment),
        VMSTATE_UINT8(s, struct kvm_segment),
        VMSTATE_UINT8(l, struct kvm_segment),
        VMSTATE_UINT8(g, struct kvm_segment),
        VMSTATE_UINT8(avl, struct kvm_segment),
        VMSTATE_UINT8(unusable, struct kvm_segment),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_kvm_dtable = {
    .name = "kvm_dtable",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_KVM_U64(base, struct kvm_dtable),
        VMSTATE_UINT16(limit, struct kvm_dtable),
        VMSTATE_END_OF_LIST()
    },
};

#define VMSTATE_KVM_SEGMENT(_f) \
    VMSTATE_STRUCT(_f, struct kvm_sregs, vmstate_kvm_segment, struct kvm_segment)
#define VMSTATE_KVM_DTABLE(_f) \
    VMSTATE_STRUCT(_f, struct kvm_sregs, vmstate_kvm_dtable, struct kvm_dtable)

static const VMStateDescription vmstate_kvm_sregs = {
    .name = "kvm_sregs",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_KVM_SEGMENT(cs),
        VMSTATE_KVM_SEGMENT(ds),
        VMSTATE_KVM_SEGMENT(es),
        VMSTATE_KVM_SEGMENT(fs),
        VMSTATE_KVM_SEGMENT(gs),
        VMSTATE_KVM_SEGMENT(ss),
        VMSTATE_KVM_SEGMENT(tr),
        VMSTATE_KVM_SEGMENT(ldt),
        VMSTATE_KVM_DTABLE(gdt),
        VMSTATE_KVM_DTABLE(idt),
        VMSTATE_KVM_U64(cr0, struct kvm_sregs),
        VMSTATE_KVM_U64(cr2, struct kvm_sregs),
        VMSTATE_KVM_U64(cr3, struct kvm_sregs),
        VMSTATE_KVM_U64(cr4, struct kvm_sregs),
        VMSTATE_KVM_U64(cr8, struct kvm_sregs),
        VMSTATE_KVM_U64(efer, struct kvm_sregs),
        VMSTATE_KVM_U64(apic_base, struct kvm_sregs),
        /* The vector being injected, if any (also in the events). */
        VMSTATE_UINT64_ARRAY(interrupt_bitmap, struct kvm_sregs, (KVM_NR_INTERRUPTS + 63) / 64),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_kvm_msr_entry = {
    .name = "kvm_msr_entry",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(index, struct kvm_msr_entry),
        VMSTATE_KVM_U64(data, struct kvm_msr_entry),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_kvm_xcr = {
    .name = "kvm_xcr",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(xcr, struct kvm_xcr),
        VMSTATE_KVM_U64(value, struct kvm_xcr),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_kvm_vcpu_events = {
    .name = "kvm_vcpu_events",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(exception.injected, struct kvm_vcpu_events),
        VMSTATE_UINT8(exception.nr, struct kvm_vcpu_events),
        VMSTATE_UINT8(exception.has_error_code, struct kvm_vcpu_events),
        VMSTATE_UINT8(exception.pending, struct kvm_vcpu_events),
        VMSTATE_UINT32(exception.error_code, struct kvm_vcpu_events),
        VMSTATE_UINT8(interrupt.injected, struct kvm_vcpu_events),
        VMSTATE_UINT8(interrupt.nr, struct kvm_vcpu_events),
        VMSTATE_UINT8(interrupt.soft, struct kvm_vcpu_events),
        VMSTATE_UINT8(interrupt.shadow, struct kvm_vcpu_events),
        VMSTATE_UINT8(nmi.injected, struct kvm_vcpu_events),
        VMSTATE_UINT8(nmi.pending, struct kvm_vcpu_events),
        VMSTATE_UINT8(nmi.masked, struct kvm_vcpu_events),
        VMSTATE_UINT32(sipi_vector, struct kvm_vcpu_events),
        VMSTATE_UINT32(flags, struct kvm_vcpu_events),
        VMSTATE_UINT8(smi.smm, struct kvm_vcpu_events),
        VMSTATE_UINT8(smi.pending, struct kvm_vcpu_events),
        VMSTATE_UINT8(smi.smm_inside_nmi, struct kvm_vcpu_events),
        VMSTATE_UINT8(smi.latched_init, struct kvm_vcpu_events),
        VMSTATE_UINT8(triple_fault.pending, struct kvm_vcpu_events),
        VMSTATE_UINT8(exception_has_payload, struct kvm_vcpu_events),
        VMSTATE_KVM_U64(exception_payload, struct kvm_vcpu_events),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_cpu_events = {
    .name = "cpu/events",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = kvm_cpu_events_needed,
    .pre_load = kvm_cpu_events_pre_load,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT(events, X86CPUState, vmstate_kvm_vcpu_events, struct kvm_vcpu_events),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_cpu_xcrs = {
    .name = "cpu/xcrs",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = kvm_cpu_xcrs_needed,
    .pre_load = kvm_cpu_xcrs_pre_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(xcrs.nr_xcrs, X86CPUState),
        VMSTATE_STRUCT_VARRAY_UINT32(xcrs.xcrs, X86CPUState, xcrs.nr_xcrs, KVM_MAX_XCRS,
                                     vmstate_kvm_xcr, struct kvm_xcr),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_cpu_debugregs = {
    .name = "cpu/debugregs",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = kvm_cpu_debugregs_needed,
    .pre_load = kvm_cpu_debugregs_pre_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64_ARRAY(debugregs.db, X86CPUState, 4),
        VMSTATE_KVM_U64(debugregs.dr6, X86CPUState),
        VMSTATE_KVM_U64(debugregs.dr7, X86CPUState),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_cpu_tsc_khz = {
    .name = "cpu/tsc_khz",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = kvm_cpu_tsc_khz_needed,
    .pre_load = kvm_cpu_tsc_khz_pre_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(tsc_khz, X86CPUState),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_x86_cpu = {
    .name = "cpu",
    .size = sizeof(X86CPUState),
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_save = kvm_cpu_pre_save,
    .pre_load = kvm_cpu_pre_load,
    .post_load = kvm_cpu_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT(regs, X86CPUState, vmstate_kvm_regs, struct kvm_regs),
        VMSTATE_STRUCT(sregs, X86CPUState, vmstate_kvm_sregs, struct kvm_sregs),
        VMSTATE_UINT32(xsave_len, X86CPUState),
        VMSTATE_VBUFFER_UINT32(xsave, X86CPUState, xsave_len, X86_CPU_XSAVE_MAX),
        VMSTATE_UINT32(nr_msrs, X86CPUState),
        VMSTATE_STRUCT_VARRAY_UINT32(msrs, X86CPUState, nr_msrs, X86_CPU_MAX_MSRS,
                                     vmstate_kvm_msr_entry, struct kvm_msr_entry),
        VMSTATE_BUFFER(lapic.regs, X86CPUState),
        VMSTATE_UINT32(mp_state.mp_state, X86CPUState),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription *const[]) {
        &vmstate_cpu_events,
        &vmstate_cpu_xcrs,
        &vmstate_cpu_debugregs,
        &vmstate_cpu_tsc_khz,
        NULL
    },
};

void kvm_cpu_state_init(KVMState *s, CPUState *cpu)
{
    X86CPUState *env = cpu->env;

    env->cpu = cpu;
    env->xsave = g_malloc0(X86_CPU_XSAVE_MAX);
    kvm_cpu_probe_msrs(s, env);
}

void kvm_vcpu_state_register(CPUState *cpu)
{
    vmstate_register("cpu", cpu->cpu_index, &vmstate_x86_cpu, cpu->env);
}

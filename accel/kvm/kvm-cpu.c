/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vCPU threads: creation, guest CPUID, the KVM_RUN loop with its exit
 * switch, and the PVH boot entry state. A guest can make KVM_RUN fail or
 * exit oddly; that stops the VM with a message, never aborts the process.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "system/kvm.h"
#include "system/cpus.h"
#include "system/ioport.h"
#include "system/runstate.h"
#include "system/cpu-throttle.h"
#include "kvm-x86.h"
#include "cpuid-features.h"
#include "trace.h"

#define SIG_IPI SIGUSR1

/* Features the user removed or added, applied to every vCPU's CPUID (cpuid-features.h). */
static bool cpuid_feature_clear[CPUID_FEATURES_MAX];
static bool cpuid_feature_set[CPUID_FEATURES_MAX];

/*
 * -cpu host,migratable=on|off (QEMU's property, on by default): on leaves
 * out what a destination host could not promise, the invariant TSC,
 * unless asked for by name.
 */
static bool cpu_migratable = true;

static bool is_invtsc(const CpuidFeature *f)
{
    return f->leaf == 0x80000007 && f->reg == R_EDX && f->bit == 8;
}

const char *kvm_cpu_feature_name(size_t i)
{
    const CpuidFeature *f = cpuid_feature(i);

    return f ? f->name : NULL;
}

int kvm_cpu_feature_index(const char *name)
{
    return cpuid_feature_lookup(name);
}

bool kvm_cpu_migratable(void)
{
    return cpu_migratable;
}

bool kvm_cpu_set_feature(const char *name, bool on, Error **errp)
{
    if (!strcmp(name, "migratable")) {
        cpu_migratable = on;
        return true;
    }
    int i = cpuid_feature_lookup(name);

    if (i >= 0) {
        cpuid_feature_clear[i] = !on;
        cpuid_feature_set[i] = on;
        return true;
    }
    error_setg(errp, "Property 'host-x86_64-cpu.%s' not found", name);
    return false;
}

static uint32_t *cpuid_reg(struct kvm_cpuid_entry2 *e, int reg)
{
    switch (reg) {
    case R_EAX: return &e->eax;
    case R_EBX: return &e->ebx;
    case R_ECX: return &e->ecx;
    default:    return &e->edx;
    }
}

static const char *cpuid_reg_name(int reg)
{
    static const char *const names[] = { "EAX", "EBX", "ECX", "EDX" };

    return names[reg];
}

static struct kvm_cpuid_entry2 *cpuid_find(struct kvm_cpuid2 *c, uint32_t leaf, uint32_t subleaf)
{
    for (uint32_t i = 0; i < c->nent; i++) {
        struct kvm_cpuid_entry2 *e = &c->entries[i];
        if (e->function == leaf &&
            (!(e->flags & KVM_CPUID_FLAG_SIGNIFCANT_INDEX) || e->index == subleaf)) {
            return e;
        }
    }
    return NULL;
}

/* Whether KVM's host CPU model has feature @i, before any -cpu change. */
bool kvm_cpu_host_feature(size_t i, bool migratable)
{
    const CpuidFeature *f = cpuid_feature(i);
    struct kvm_cpuid_entry2 *e;

    if (is_invtsc(f) && migratable) {
        return false;
    }
    if (f->leaf == 1 && f->reg == R_ECX && f->bit == 31) {
        return true;            /* "hypervisor": always set for the guest */
    }
    e = kvm_state && kvm_state->supported_cpuid ?
        cpuid_find(kvm_state->supported_cpuid, f->leaf, f->subleaf) : NULL;
    return e && (*cpuid_reg(e, f->reg) >> f->bit & 1);
}

/* Whether the vCPUs' CPUID has feature @i: KVM's, then what -cpu changed (as built below). */
bool kvm_cpu_feature_enabled(size_t i)
{
    if (cpuid_feature_set[i]) {
        return kvm_cpu_host_feature(i, false);     /* only what KVM can give */
    }
    if (cpuid_feature_clear[i]) {
        return false;
    }
    return kvm_cpu_host_feature(i, cpu_migratable);
}

/*
 * The host CPU's identity as KVM passes it to the guest: vendor (leaf 0),
 * family, model and stepping (leaf 1, extended fields folded in as the
 * SDM says) and the brand string (0x80000002..4, unstripped, as QEMU
 * shows it). Zeros without KVM.
 */
void kvm_cpu_host_identity(X86CpuIdentity *id)
{
    struct kvm_cpuid2 *c = kvm_state ? kvm_state->supported_cpuid : NULL;
    struct kvm_cpuid_entry2 *e;
    uint32_t *w;

    memset(id, 0, sizeof(*id));
    if (!c) {
        return;
    }
    if ((e = cpuid_find(c, 0, 0))) {
        memcpy(id->vendor, &e->ebx, 4);
        memcpy(id->vendor + 4, &e->edx, 4);
        memcpy(id->vendor + 8, &e->ecx, 4);
    }
    if ((e = cpuid_find(c, 1, 0))) {
        uint32_t fam = (e->eax >> 8) & 0xf, mod = (e->eax >> 4) & 0xf;

        if (fam == 0xf) {
            fam += (e->eax >> 20) & 0xff;
        }
        if (fam >= 6) {
            mod |= ((e->eax >> 16) & 0xf) << 4;
        }
        id->family = fam;
        id->model = mod;
        id->stepping = e->eax & 0xf;
    }
    w = (uint32_t *)id->model_id;
    for (uint32_t leaf = 0x80000002; leaf <= 0x80000004; leaf++) {
        if (!(e = cpuid_find(c, leaf, 0))) {
            id->model_id[0] = 0;
            return;
        }
        *w++ = e->eax;
        *w++ = e->ebx;
        *w++ = e->ecx;
        *w++ = e->edx;
    }
}

static struct kvm_cpuid2 *kvm_cpu_build_cpuid(KVMState *s, CPUState *cpu, int ncpus)
{
    size_t sz = sizeof(struct kvm_cpuid2) + s->supported_cpuid->nent * sizeof(struct kvm_cpuid_entry2);
    struct kvm_cpuid2 *c = g_memdup2(s->supported_cpuid, sz);
    struct kvm_cpuid_entry2 *e;

    for (uint32_t i = 0; i < c->nent; i++) {
        e = &c->entries[i];
        switch (e->function) {
        case 1:
            /* APIC id, logical processor count, and "running under a hypervisor". */
            e->ebx = (e->ebx & 0x0000ffff) | ((uint32_t)cpu->cpu_index << 24) |
                     ((uint32_t)MIN(ncpus, 255) << 16);
            e->ecx |= 1u << 31;
            break;
        case 0xb:
        case 0x1f:
            e->edx = cpu->cpu_index;
            break;
        }
    }
    for (size_t i = 0; i < cpuid_feature_count(); i++) {
        const CpuidFeature *f = cpuid_feature(i);
        uint32_t mask = 1u << f->bit | f->alias_mask;

        e = cpuid_find(c, f->leaf, f->subleaf);
        if (cpuid_feature_set[i] && !(e && (*cpuid_reg(e, f->reg) >> f->bit & 1))) {
            /* As QEMU: a feature KVM cannot give is left out, with a word. */
            if (cpu->cpu_index == 0) {
                warn_report("host doesn't support requested feature: CPUID.%02XH:%s.%s "
                            "[bit %d]", f->leaf, cpuid_reg_name(f->reg), f->name, f->bit);
            }
            continue;
        }
        if (e && (cpuid_feature_clear[i] ||
                  (is_invtsc(f) && cpu_migratable && !cpuid_feature_set[i]))) {
            *cpuid_reg(e, f->reg) &= ~mask;
        }
    }
    return c;
}

static void kvm_set_segment(struct kvm_segment *seg, uint16_t sel, uint8_t type, bool code32)
{
    *seg = (struct kvm_segment) {
        .base = 0, .limit = 0xffffffff, .selector = sel, .type = type,
        .present = 1, .dpl = 0, .db = code32, .s = 1, .l = 0, .g = 1,
    };
}

typedef struct PvhEntry {
    uint32_t entry;
    uint32_t start_info;
    Error **errp;               /* run_on_cpu waits: the caller's errp */
    bool ok;
} PvhEntry;

static void do_set_pvh_entry(CPUState *cpu, void *data)
{
    PvhEntry *pe = data;
    struct kvm_sregs sregs;
    struct kvm_regs regs = { 0 };
    struct kvm_fpu fpu = { 0 };
    struct kvm_mp_state mp = { .mp_state = KVM_MP_STATE_RUNNABLE };

    int ret = kvm_vcpu_ioctl(cpu, KVM_GET_SREGS, &sregs);

    if (ret < 0) {
        error_setg_errno(pe->errp, -ret, "KVM_GET_SREGS failed for CPU %d", cpu->cpu_index);
        return;
    }
    /* PVH ABI: 32-bit protected mode, paging off, flat segments, ebx = start_info. */
    kvm_set_segment(&sregs.cs, 0x10, 0xb, true);
    kvm_set_segment(&sregs.ds, 0x18, 0x3, true);
    sregs.es = sregs.fs = sregs.gs = sregs.ss = sregs.ds;
    sregs.tr = (struct kvm_segment) { .limit = 0x67, .type = 0xb, .present = 1, .selector = 0x20 };
    sregs.ldt = (struct kvm_segment) { .type = 0x2, .present = 1, .unusable = 1 };
    sregs.gdt.base = 0;
    sregs.gdt.limit = 0xffff;
    sregs.idt.base = 0;
    sregs.idt.limit = 0xffff;
    sregs.cr0 = 0x11;           /* PE | ET */
    sregs.cr3 = 0;
    sregs.cr4 = 0;
    sregs.efer = 0;
    regs.rip = pe->entry;
    regs.rbx = pe->start_info;
    regs.rflags = 0x2;
    fpu.fcw = 0x37f;
    fpu.mxcsr = 0x1f80;
    if ((ret = kvm_vcpu_ioctl(cpu, KVM_SET_SREGS, &sregs)) < 0 ||
        (ret = kvm_vcpu_ioctl(cpu, KVM_SET_REGS, &regs)) < 0 ||
        (ret = kvm_vcpu_ioctl(cpu, KVM_SET_FPU, &fpu)) < 0 ||
        (ret = kvm_vcpu_ioctl(cpu, KVM_SET_MP_STATE, &mp)) < 0) {
        error_setg_errno(pe->errp, -ret, "setting the PVH entry state of CPU %d failed",
                         cpu->cpu_index);
        return;
    }
    pe->ok = true;
}

bool kvm_cpu_set_pvh_entry(CPUState *cpu, uint32_t entry, uint32_t start_info, Error **errp)
{
    PvhEntry pe = { .entry = entry, .start_info = start_info, .errp = errp };

    run_on_cpu(cpu, do_set_pvh_entry, &pe);
    return pe.ok;
}

static void do_cpu_reset(CPUState *cpu, void *data)
{
    struct kvm_mp_state mp = {
        .mp_state = cpu->cpu_index ? KVM_MP_STATE_UNINITIALIZED : KVM_MP_STATE_RUNNABLE,
    };

    kvm_vcpu_ioctl(cpu, KVM_SET_LAPIC, &cpu->env->lapic_reset);
    kvm_vcpu_ioctl(cpu, KVM_SET_MP_STATE, &mp);
}

void kvm_cpus_reset(void)
{
    for (guint i = 0; i < vcpus->len; i++) {
        run_on_cpu(g_ptr_array_index(vcpus, i), do_cpu_reset, NULL);
    }
}

static void kvm_handle_io(CPUState *cpu)
{
    struct kvm_run *run = cpu->kvm_run;
    uint8_t *data = (uint8_t *)run + run->io.data_offset;
    unsigned size = run->io.size;

    /* data_offset comes from the kernel; still refuse anything outside the run page. */
    if (run->io.data_offset + (uint64_t)size * run->io.count > cpu->kvm_run_size ||
        (size != 1 && size != 2 && size != 4)) {
        return;
    }
    bql_lock();
    for (uint32_t i = 0; i < run->io.count; i++, data += size) {
        uint64_t val = 0;

        if (run->io.direction == KVM_EXIT_IO_OUT) {
            memcpy(&val, data, size);
            io_range_write(pio_table, run->io.port, size, val);
        } else {
            io_range_read(pio_table, run->io.port, size, &val);
            memcpy(data, &val, size);
        }
    }
    bql_unlock();
}

static void kvm_handle_mmio(CPUState *cpu)
{
    struct kvm_run *run = cpu->kvm_run;
    unsigned len = run->mmio.len;
    uint64_t val = 0;

    if (len > 8) {
        return;
    }
    bql_lock();
    if (run->mmio.is_write) {
        memcpy(&val, run->mmio.data, len);
        io_range_write(mmio_table, run->mmio.phys_addr, len, val);
    } else {
        io_range_read(mmio_table, run->mmio.phys_addr, len, &val);
        memcpy(run->mmio.data, &val, len);
    }
    bql_unlock();
}

static void kvm_report_guest_error(CPUState *cpu, const char *what)
{
    struct kvm_regs regs;

    if (kvm_vcpu_ioctl(cpu, KVM_GET_REGS, &regs) == 0) {
        error_report("%s (CPU %d, RIP=0x%llx RSP=0x%llx RFLAGS=0x%llx)", what, cpu->cpu_index,
                     (unsigned long long)regs.rip, (unsigned long long)regs.rsp,
                     (unsigned long long)regs.rflags);
    } else {
        error_report("%s (CPU %d)", what, cpu->cpu_index);
    }
}

typedef enum VcpuExitAction {
    VCPU_CONTINUE,              /* run the guest again */
    VCPU_STOP_VM,               /* guest error: stop the VM in internal-error */
    VCPU_SHUTDOWN,              /* guest shut itself down (triple fault) */
} VcpuExitAction;

static VcpuExitAction kvm_handle_exit(CPUState *cpu)
{
    struct kvm_run *run = cpu->kvm_run;
    char msg[128];

    switch (run->exit_reason) {
    case KVM_EXIT_IO:
        kvm_handle_io(cpu);
        return VCPU_CONTINUE;
    case KVM_EXIT_MMIO:
        kvm_handle_mmio(cpu);
        return VCPU_CONTINUE;
    case KVM_EXIT_INTR:
    case KVM_EXIT_IRQ_WINDOW_OPEN:
    case KVM_EXIT_HLT:
        return VCPU_CONTINUE;
    case KVM_EXIT_DIRTY_RING_FULL:
        /* Harvest (all rings, like QEMU) so this vCPU can run again. */
        if (kvm_dirty_log_ring_full(kvm_state) < 0 && !cpu->dirty_ring_warned) {
            /* The migration's next sync fails with the same error. */
            warn_report("CPU %d: resetting the KVM dirty rings failed", cpu->cpu_index);
            cpu->dirty_ring_warned = true;
        }
        return VCPU_CONTINUE;
    case KVM_EXIT_SHUTDOWN:
        /*
         * Triple fault: the machine resets, as a PC and QEMU's microvm do
         * (RESET guest-reset; a SHUTDOWN with that reason under -no-reboot,
         * which runstate.c applies to every guest reset).
         */
        qemu_system_reset_request(SHUTDOWN_CAUSE_GUEST_RESET);
        return VCPU_CONTINUE;
    case KVM_EXIT_SYSTEM_EVENT:
        if (run->system_event.type == KVM_SYSTEM_EVENT_RESET) {
            qemu_system_reset_request(SHUTDOWN_CAUSE_GUEST_RESET);
            return VCPU_CONTINUE;
        }
        return VCPU_SHUTDOWN;
    case KVM_EXIT_INTERNAL_ERROR:
        snprintf(msg, sizeof(msg), "KVM internal error. Suberror: %u%s",
                 run->internal.suberror,
                 run->internal.suberror == KVM_INTERNAL_ERROR_EMULATION ? " (emulation failure)" : "");
        kvm_report_guest_error(cpu, msg);
        return VCPU_STOP_VM;
    case KVM_EXIT_FAIL_ENTRY:
        snprintf(msg, sizeof(msg), "KVM: entry failed, hardware error 0x%llx",
                 (unsigned long long)run->fail_entry.hardware_entry_failure_reason);
        kvm_report_guest_error(cpu, msg);
        return VCPU_STOP_VM;
    default:
        snprintf(msg, sizeof(msg), "KVM: unhandled exit reason %u", run->exit_reason);
        kvm_report_guest_error(cpu, msg);
        return VCPU_STOP_VM;
    }
}

/* One KVM_RUN and its exit, without the BQL. */
static VcpuExitAction kvm_cpu_exec_once(CPUState *cpu)
{
    struct kvm_run *run = cpu->kvm_run;
    int ret;

    /* See system/cpus.c for why clearing immediate_exit here cannot lose a kick. */
    if (__atomic_exchange_n(&cpu->exit_request, 0, __ATOMIC_SEQ_CST)) {
        __atomic_store_n(&run->immediate_exit, 0, __ATOMIC_SEQ_CST);
        return VCPU_CONTINUE;
    }
    ret = ioctl(cpu->kvm_fd, KVM_RUN, 0);
    if (ret < 0) {
        if (errno == EINTR || errno == EAGAIN) {
            __atomic_store_n(&run->immediate_exit, 0, __ATOMIC_SEQ_CST);
            __atomic_exchange_n(&cpu->exit_request, 0, __ATOMIC_SEQ_CST);
            return VCPU_CONTINUE;
        }
        error_report("error: kvm run failed %s", g_strerror(errno));
        kvm_report_guest_error(cpu, "KVM_RUN failed");
        return VCPU_STOP_VM;
    }
    if (TRACE_EVENT_ENABLED(kvm_vcpu_exit_slow)) {
        int64_t t0 = get_clock_ns(), us;
        uint32_t reason = run->exit_reason;
        VcpuExitAction act = kvm_handle_exit(cpu);

        us = (get_clock_ns() - t0) / 1000;
        if (us >= 50) {
            trace_kvm_vcpu_exit_slow(cpu->cpu_index, reason, us);
        }
        return act;
    }
    return kvm_handle_exit(cpu);
}

static void sig_ipi_handler(int sig)
{
    /* Only interrupts KVM_RUN; the request itself is in CPUState. */
}

static void *kvm_vcpu_thread_fn(void *arg)
{
    CPUState *cpu = arg;
    sigset_t set;

    set_current_cpu(cpu);
    sigemptyset(&set);
    sigaddset(&set, SIG_IPI);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);

    bql_lock();
    cpu->thread_id = qemu_get_thread_id();
    cpu->created = true;
    g_cond_broadcast(&cpu->cond);
    for (;;) {
        VcpuExitAction action;

        cpu_handle_requests(cpu);
        if (cpu->exit_thread) {
            break;
        }
        bql_unlock();
        /*
         * Exits that need nothing of the BQL (the dirty ring filled, a
         * throttle kick, an I/O exit that took it itself) go straight back
         * into the guest: a vCPU never waits for a BQL that mig/src holds
         * unless somebody asked something of it.
         */
        do {
            action = kvm_cpu_exec_once(cpu);
            if (action == VCPU_CONTINUE) {
                cpu_throttle_vcpu_wait(cpu);
            }
        } while (action == VCPU_CONTINUE && !cpu_kicked(cpu));
        bql_lock();
        if (action != VCPU_CONTINUE) {
            /* Stop this vCPU now; the main loop stops the others. */
            cpu->stop = true;
            if (action == VCPU_SHUTDOWN) {
                qemu_system_shutdown_request(SHUTDOWN_CAUSE_GUEST_RESET);
            } else {
                qemu_system_vmstop_request(RUN_STATE_INTERNAL_ERROR);
            }
        }
    }
    cpu->stopped = true;
    cpus_signal_paused();
    bql_unlock();
    return NULL;
}

/*
 * Machine-check banks as QEMU gives its vCPUs (10 banks, MCG_CTL_P,
 * MCG_SER_P: MCG_CAP 0x100010a in QEMU's streams), limited to what KVM
 * offers, when the vCPU's CPUID has MCE and MCA: the "cpu" section carries
 * MCG_CAP and the banks, and a QEMU stream's banks need MSRs to land in.
 * Returns the MCG_CAP set, 0 for none.
 */
static uint64_t kvm_cpu_setup_mce(KVMState *s, CPUState *cpu)
{
    struct kvm_cpuid_entry2 *e = cpuid_find(cpu->env->cpuid, 1, 0);
    uint64_t supported = 0, cap;
    int banks = kvm_check_extension(s, KVM_CAP_MCE);   /* KVM's bank limit */
    int ret;

    if (!e || !(e->edx & (1u << 7)) || !(e->edx & (1u << 14)) || banks <= 0 ||
        kvm_ioctl(s, KVM_X86_GET_MCE_CAP_SUPPORTED, &supported) < 0) {
        return 0;
    }
    /* KVM_X86_GET_MCE_CAP_SUPPORTED gives the flag bits only (0x1000100 here). */
    cap = (X86_MCG_CAP_QEMU & ~0xffull & supported) | MIN(X86_MCE_BANKS_MAX, banks);
    ret = kvm_vcpu_ioctl(cpu, KVM_X86_SETUP_MCE, &cap);
    if (ret < 0) {
        /* The guest runs without MCE; a stream with banks will be refused. */
        warn_report("CPU %d: KVM_X86_SETUP_MCE failed: %s", cpu->cpu_index, strerror(-ret));
        return 0;
    }
    return cap;
}

static bool kvm_vcpu_create_one(KVMState *s, int index, int ncpus, Error **errp)
{
    CPUState *cpu = g_new0(CPUState, 1);
    int ret;

    cpu->cpu_index = index;
    cpu->env = g_new0(X86CPUState, 1);
    cpu->stop = true;           /* prelaunch: nothing runs until vm_start() */
    g_queue_init(&cpu->work);
    g_cond_init(&cpu->cond);
    g_mutex_init(&cpu->sleep_lock);
    g_cond_init(&cpu->sleep_cond);
    g_ptr_array_add(vcpus, cpu);

    ret = kvm_vm_ioctl(s, KVM_CREATE_VCPU, (void *)(uintptr_t)index);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "kvm_init_vcpu: KVM_CREATE_VCPU failed (CPU %d)", index);
        return false;
    }
    cpu->kvm_fd = ret;
    cpu->stats_fd = s->stats_fd ? ioctl(cpu->kvm_fd, KVM_GET_STATS_FD, NULL) : -1;
    cpu->kvm_run_size = s->vcpu_mmap_size;
    cpu->kvm_run = mmap(NULL, cpu->kvm_run_size, PROT_READ | PROT_WRITE, MAP_SHARED, cpu->kvm_fd, 0);
    if (cpu->kvm_run == MAP_FAILED) {
        cpu->kvm_run = NULL;
        error_setg_errno(errp, errno, "kvm_init_vcpu: mmap'ing vcpu state failed");
        return false;
    }
    cpu->env->cpuid = kvm_cpu_build_cpuid(s, cpu, ncpus);
    ret = kvm_vcpu_ioctl(cpu, KVM_SET_CPUID2, cpu->env->cpuid);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "KVM_SET_CPUID2 failed (CPU %d)", index);
        return false;
    }
    if (kvm_vcpu_ioctl(cpu, KVM_GET_LAPIC, &cpu->env->lapic_reset) < 0) {
        error_setg(errp, "KVM_GET_LAPIC failed (CPU %d)", index);
        return false;
    }
    cpu->env->caps.mcg_cap = kvm_cpu_setup_mce(s, cpu);
    kvm_cpu_state_init(s, cpu);
    if (!kvm_dirty_log_vcpu_init(s, cpu, errp)) {
        return false;
    }
    snprintf(cpu->thread_name, sizeof(cpu->thread_name), "CPU %d/KVM", index);
    ret = qemu_thread_create(&cpu->thread, cpu->thread_name, kvm_vcpu_thread_fn, cpu);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "cannot create vCPU thread");
        return false;
    }
    while (!cpu->created) {
        bql_cond_wait(&cpu->cond);
    }
    return true;
}

bool kvm_vcpus_create(KVMState *s, int ncpus, Error **errp)
{
    struct sigaction sa = { .sa_handler = sig_ipi_handler };

    if (ncpus > s->max_vcpus) {
        error_setg(errp, "Number of SMP CPUs requested (%d) exceeds max CPUs supported by "
                   "machine 'microvm' (%d)", ncpus, s->max_vcpus);
        return false;
    }
    sigaction(SIG_IPI, &sa, NULL);
    if (!vcpus) {
        vcpus = g_ptr_array_new();
    }
    for (int i = 0; i < ncpus; i++) {
        if (!kvm_vcpu_create_one(s, i, ncpus, errp)) {
            return false;
        }
    }
    return true;
}

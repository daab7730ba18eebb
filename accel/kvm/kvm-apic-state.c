/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMU's "apic" v3 section for KVM's in-kernel LAPIC, one per vCPU
 * (instance = cpu_index), registered after the vCPU's "cpu" section.
 *
 * Saving reads the register page and the APIC base MSR; loading checks
 * the incoming fields, lays them over the page KVM has now (so the
 * registers QEMU does not carry keep KVM's values), puts the APIC base
 * first (the page's meaning depends on xAPIC/x2APIC mode) and then the
 * page; KVM restarts the LAPIC timer from TMICT, so a periodic or one-shot
 * count starts over, as it does for QEMU with KVM's LAPIC.
 *
 * All hooks run with the BQL held and the vCPU paused (outside KVM_RUN).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "migration/vmstate.h"
#include "system/kvm.h"
#include "system/cpus.h"
#include "system/runstate.h"
#include "kvm-x86.h"
#include "kvm-apic-page.h"

#define MSR_IA32_APICBASE   0x1b

/* One per vCPU, allocated at registration, lives as long as the VM. */
typedef struct KVMAPICMig {
    CPUState *cpu;              /* immutable */
    /*
     * The section's image: filled by pre_save before the fields are
     * written, by the loader before post_load. Means nothing in between.
     * BQL.
     */
    APICImage img;
} KVMAPICMig;

static KVMAPICMig *kvm_apic_from(void *opaque)
{
    return container_of((APICImage *)opaque, KVMAPICMig, img);
}

/* One MSR through KVM_GET_MSRS/KVM_SET_MSRS, which return how many entries they did. */
static bool kvm_apic_base_io(CPUState *cpu, unsigned long req, uint64_t *value, Error **errp)
{
    struct {
        struct kvm_msrs hdr;
        struct kvm_msr_entry e;
    } m = { .hdr.nmsrs = 1, .e.index = MSR_IA32_APICBASE, .e.data = *value };
    int ret = kvm_vcpu_ioctl(cpu, req, &m);

    if (ret < 0) {
        error_setg_errno(errp, -ret, "cpu %d: %s of the APIC base failed", cpu->cpu_index,
                         req == KVM_GET_MSRS ? "KVM_GET_MSRS" : "KVM_SET_MSRS");
        return false;
    }
    if (ret != 1) {
        error_setg(errp, "cpu %d: KVM refused the APIC base 0x%" PRIx64, cpu->cpu_index, *value);
        return false;
    }
    *value = m.e.data;
    return true;
}

static bool kvm_apic_pre_save(void *opaque, Error **errp)
{
    KVMAPICMig *mig = kvm_apic_from(opaque);
    CPUState *cpu = mig->cpu;
    struct kvm_lapic_state page;
    uint64_t apicbase = 0;
    int ret;

    if (!kvm_apic_base_io(cpu, KVM_GET_MSRS, &apicbase, errp)) {
        return false;
    }
    ret = kvm_vcpu_ioctl(cpu, KVM_GET_LAPIC, &page);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "cpu %d: KVM_GET_LAPIC failed", cpu->cpu_index);
        return false;
    }
    /* The VM is stopped: this is the clock at the stop, as QEMU sends it. */
    apic_image_from_page(&mig->img, &page, apicbase, vm_clock_ns());
    return true;
}

static bool kvm_apic_post_load(void *opaque, int version_id, Error **errp)
{
    KVMAPICMig *mig = kvm_apic_from(opaque);
    CPUState *cpu = mig->cpu;
    X86CPUState *env = cpu->env;
    struct kvm_lapic_state page;
    uint64_t apicbase = mig->img.apicbase;
    int ret;

    if (!apic_image_check(&mig->img, cpu->cpu_index, errp)) {
        return false;
    }
    ret = kvm_vcpu_ioctl(cpu, KVM_GET_LAPIC, &page);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "cpu %d: KVM_GET_LAPIC failed", cpu->cpu_index);
        return false;
    }
    apic_image_to_page(&mig->img, &page);
    /*
     * Base first: KVM reads the page in the mode the base sets (x2APIC
     * checks the ID and derives the LDR), and switching modes afterwards
     * would reset the ID. KVM refuses bits this vCPU's CPUID lacks (EXTD).
     */
    if (!kvm_apic_base_io(cpu, KVM_SET_MSRS, &apicbase, errp)) {
        return false;
    }
    ret = kvm_vcpu_ioctl(cpu, KVM_SET_LAPIC, &page);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "cpu %d: KVM_SET_LAPIC failed", cpu->cpu_index);
        return false;
    }
    /* The "cpu" section's TSC deadline, MP state and events must follow the page. */
    env->apic_loaded = true;
    if (env->cpu_loaded) {
        return kvm_cpu_put_tail(env, errp);
    }
    return true;
}

static const VMStateDescription vmstate_kvm_apic = {
    .name = "apic",
    .size = sizeof(APICImage),
    .version_id = 3,
    .minimum_version_id = 3,
    .pre_save = kvm_apic_pre_save,
    .post_load = kvm_apic_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(apicbase, APICImage),
        VMSTATE_UINT8(id, APICImage),
        VMSTATE_UINT8(arb_id, APICImage),
        VMSTATE_UINT8(tpr, APICImage),
        VMSTATE_UINT32(spurious_vec, APICImage),
        VMSTATE_UINT8(log_dest, APICImage),
        VMSTATE_UINT8(dest_mode, APICImage),
        VMSTATE_UINT32_ARRAY(isr, APICImage, 8),
        VMSTATE_UINT32_ARRAY(tmr, APICImage, 8),
        VMSTATE_UINT32_ARRAY(irr, APICImage, 8),
        VMSTATE_UINT32_ARRAY(lvt, APICImage, APIC_LVT_NB),
        VMSTATE_UINT32(esr, APICImage),
        VMSTATE_UINT32_ARRAY(icr, APICImage, 2),
        VMSTATE_UINT32(divide_conf, APICImage),
        VMSTATE_INT32(count_shift, APICImage),
        VMSTATE_UINT32(initial_count, APICImage),
        VMSTATE_INT64(initial_count_load_time, APICImage),
        VMSTATE_INT64(next_time, APICImage),
        VMSTATE_INT64(timer_expiry, APICImage),
        VMSTATE_END_OF_LIST()
    },
};

void kvm_apic_state_register(CPUState *cpu)
{
    KVMAPICMig *mig = g_new0(KVMAPICMig, 1);

    mig->cpu = cpu;
    vmstate_register("apic", cpu->cpu_index, &vmstate_kvm_apic, &mig->img);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMU's "kvmclock" v1 section: KVM's VM-wide clock (KVM_GET_CLOCK), and
 * the subsection "kvmclock/clock_is_reliable", always sent, which says
 * whether the host's TSC is stable (KVM_CLOCK_TSC_STABLE).
 *
 * The stream carries no host real time, so the destination cannot add the
 * downtime: guest time resumes from the clock read at the source's stop
 * and loses the time the migration's last phase took, as between QEMUs.
 *
 * Hooks run with the BQL held and the VM stopped: post_load sets KVM's
 * clock before any vCPU runs again.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "migration/vmstate.h"
#include "system/kvm.h"

typedef struct ClockImage {
    uint64_t clock;             /* kvmclock ns */
    bool clock_is_reliable;     /* told on save; a destination has no use for it */
} ClockImage;

static bool kvmclock_pre_save(void *opaque, Error **errp)
{
    ClockImage *img = opaque;
    struct kvm_clock_data d = { 0 };
    int ret = kvm_vm_ioctl(kvm_state, KVM_GET_CLOCK, &d);

    if (ret < 0) {
        error_setg_errno(errp, -ret, "KVM_GET_CLOCK failed");
        return false;
    }
    img->clock = d.clock;
    img->clock_is_reliable = !!(d.flags & KVM_CLOCK_TSC_STABLE);
    return true;
}

static bool kvmclock_post_load(void *opaque, int version_id, Error **errp)
{
    const ClockImage *img = opaque;
    /* No flag: KVM_CLOCK_REALTIME would need the source's real time, which QEMU does not send. */
    struct kvm_clock_data d = { .clock = img->clock };
    int ret = kvm_vm_ioctl(kvm_state, KVM_SET_CLOCK, &d);

    if (ret < 0) {
        error_setg_errno(errp, -ret, "KVM_SET_CLOCK failed");
        return false;
    }
    return true;
}

static bool kvmclock_reliable_needed(void *opaque)
{
    return true;
}

static const VMStateDescription vmstate_kvmclock_reliable = {
    .name = "kvmclock/clock_is_reliable",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = kvmclock_reliable_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(clock_is_reliable, ClockImage),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_kvmclock = {
    .name = "kvmclock",
    .size = sizeof(ClockImage),
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_save = kvmclock_pre_save,
    .post_load = kvmclock_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(clock, ClockImage),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription *const[]) {
        &vmstate_kvmclock_reliable,
        NULL
    },
};

void kvm_clock_state_register(void)
{
    vmstate_register("kvmclock", 0, &vmstate_kvmclock, g_new0(ClockImage, 1));
}

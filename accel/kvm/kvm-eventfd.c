/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ioeventfd and irqfd: KVM signals an eventfd when the guest writes a
 * doorbell (no exit to userspace), and raises an interrupt when an eventfd
 * is written (from any thread, no ioctl). Devices fall back to MMIO exits
 * and KVM_IRQ_LINE where these report -ENOSYS.
 */
#include "qemu/osdep.h"
#include "system/kvm.h"

bool kvm_has_ioeventfd(KVMState *s)
{
    return s && kvm_vm_check_extension(s, KVM_CAP_IOEVENTFD) > 0;
}

bool kvm_has_irqfd_resample(KVMState *s)
{
    return s && kvm_vm_check_extension(s, KVM_CAP_IRQFD) > 0 &&
           kvm_vm_check_extension(s, KVM_CAP_IRQFD_RESAMPLE) > 0;
}

int kvm_mmio_ioeventfd_assign(KVMState *s, int fd, hwaddr addr, unsigned int len,
                              uint64_t datamatch, bool assign)
{
    struct kvm_ioeventfd ioe = {
        .datamatch = datamatch,
        .addr = addr,
        .len = len,
        .fd = fd,
        .flags = KVM_IOEVENTFD_FLAG_DATAMATCH | (assign ? 0 : KVM_IOEVENTFD_FLAG_DEASSIGN),
    };

    if (!kvm_has_ioeventfd(s)) {
        return -ENOSYS;
    }
    return kvm_vm_ioctl(s, KVM_IOEVENTFD, &ioe);
}

int kvm_irqfd_resample_assign(KVMState *s, int fd, int resamplefd, int gsi, bool assign)
{
    struct kvm_irqfd irqfd = {
        .fd = fd,
        .gsi = gsi,
        .flags = assign ? KVM_IRQFD_FLAG_RESAMPLE : KVM_IRQFD_FLAG_DEASSIGN,
        .resamplefd = assign ? resamplefd : 0,
    };

    if (!kvm_has_irqfd_resample(s)) {
        return -ENOSYS;
    }
    return kvm_vm_ioctl(s, KVM_IRQFD, &irqfd);
}

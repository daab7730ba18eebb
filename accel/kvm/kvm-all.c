/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * KVMState: the VM fd, capabilities probed once, and the KVMSlot table that
 * mirrors guest RAM ranges one-to-one (a RAMBlock may span several slots).
 */
#include "qemu/osdep.h"
#include <cpuid.h>
#include "qapi/error.h"
#include "system/kvm.h"
#include "system/memory.h"
#include "system/cpus.h"

KVMState *kvm_state;

int kvm_ioctl(KVMState *s, unsigned long req, void *arg)
{
    int ret = ioctl(s->fd, req, arg);

    return ret < 0 ? -errno : ret;
}

int kvm_vm_ioctl(KVMState *s, unsigned long req, void *arg)
{
    int ret = ioctl(s->vmfd, req, arg);

    return ret < 0 ? -errno : ret;
}

int kvm_vcpu_ioctl(CPUState *cpu, unsigned long req, void *arg)
{
    int ret = ioctl(cpu->kvm_fd, req, arg);

    return ret < 0 ? -errno : ret;
}

int kvm_check_extension(KVMState *s, unsigned int cap)
{
    int ret = ioctl(s->fd, KVM_CHECK_EXTENSION, (unsigned long)cap);

    return ret < 0 ? 0 : ret;
}

int kvm_vm_check_extension(KVMState *s, unsigned int cap)
{
    int ret = ioctl(s->vmfd, KVM_CHECK_EXTENSION, (unsigned long)cap);

    return ret < 0 ? kvm_check_extension(s, cap) : ret;
}

/*
 * KVM leaves the brand string (leaves 0x80000002..4) to userspace, as
 * zeros; the host CPU model shows the host's, as QEMU's -cpu host does.
 */
static void kvm_fill_host_brand(struct kvm_cpuid2 *c)
{
    for (uint32_t i = 0; i < c->nent; i++) {
        struct kvm_cpuid_entry2 *e = &c->entries[i];

        if (e->function >= 0x80000002 && e->function <= 0x80000004 &&
            !(e->eax | e->ebx | e->ecx | e->edx)) {
            __cpuid(e->function, e->eax, e->ebx, e->ecx, e->edx);
        }
    }
}

static struct kvm_cpuid2 *kvm_get_supported_cpuid(KVMState *s)
{
    int nent = 64;

    for (;;) {
        struct kvm_cpuid2 *c = g_malloc0(sizeof(*c) + nent * sizeof(c->entries[0]));
        int ret;

        c->nent = nent;
        ret = kvm_ioctl(s, KVM_GET_SUPPORTED_CPUID, c);
        if (ret == 0) {
            kvm_fill_host_brand(c);
            return c;
        }
        g_free(c);
        if (ret != -E2BIG || nent >= 4096) {
            return NULL;
        }
        nent *= 2;
    }
}

static struct kvm_msr_list *kvm_get_msr_index_list(KVMState *s)
{
    struct kvm_msr_list probe = { .nmsrs = 0 };
    struct kvm_msr_list *list;

    /* The first call fails with E2BIG and tells us how many there are. */
    if (kvm_ioctl(s, KVM_GET_MSR_INDEX_LIST, &probe) != -E2BIG || probe.nmsrs > 4096) {
        return NULL;
    }
    list = g_malloc0(sizeof(*list) + probe.nmsrs * sizeof(list->indices[0]));
    list->nmsrs = probe.nmsrs;
    if (kvm_ioctl(s, KVM_GET_MSR_INDEX_LIST, list) < 0) {
        g_free(list);
        return NULL;
    }
    return list;
}

static void kvm_probe_caps(KVMState *s)
{
    s->vcpu_mmap_size = kvm_ioctl(s, KVM_GET_VCPU_MMAP_SIZE, NULL);
    s->max_vcpus = kvm_check_extension(s, KVM_CAP_MAX_VCPUS);
    if (!s->max_vcpus) {
        s->max_vcpus = kvm_check_extension(s, KVM_CAP_NR_VCPUS) ?: 4;
    }
    s->nr_slots_max = kvm_check_extension(s, KVM_CAP_NR_MEMSLOTS) ?: 32;
    s->irqchip = kvm_check_extension(s, KVM_CAP_IRQCHIP);
    s->pit2 = kvm_check_extension(s, KVM_CAP_PIT2);
    s->immediate_exit = kvm_check_extension(s, KVM_CAP_IMMEDIATE_EXIT);
    s->vcpu_events = kvm_check_extension(s, KVM_CAP_VCPU_EVENTS);
    s->debugregs = kvm_check_extension(s, KVM_CAP_DEBUGREGS);
    s->xcrs = kvm_check_extension(s, KVM_CAP_XCRS);
    s->stats_fd = kvm_check_extension(s, KVM_CAP_BINARY_STATS_FD);
    s->clock_caps = kvm_check_extension(s, KVM_CAP_ADJUST_CLOCK);
    s->xsave_size = kvm_vm_check_extension(s, KVM_CAP_XSAVE2);
    s->manual_protect_caps = kvm_vm_check_extension(s, KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2);
    s->dirty_ring_max_bytes = kvm_vm_check_extension(s, KVM_CAP_DIRTY_LOG_RING);
    s->dirty_ring_acq_rel = kvm_vm_check_extension(s, KVM_CAP_DIRTY_LOG_RING_ACQ_REL);
}

KVMState *kvm_init(const KVMAccelOpts *opts, Error **errp)
{
    g_autofree KVMState *s = g_new0(KVMState, 1);
    int ret;

    s->vmfd = -1;
    s->fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (s->fd < 0) {
        error_setg_errno(errp, errno, "Could not access KVM kernel module");
        return NULL;
    }
    ret = kvm_ioctl(s, KVM_GET_API_VERSION, NULL);
    if (ret != KVM_API_VERSION) {
        error_setg(errp, "kvm version not supported (%d, expected %d)", ret, KVM_API_VERSION);
        goto fail;
    }
    do {
        ret = kvm_ioctl(s, KVM_CREATE_VM, 0);
    } while (ret == -EINTR);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "ioctl(KVM_CREATE_VM) failed");
        goto fail;
    }
    s->vmfd = ret;
    s->opts = *opts;
    kvm_probe_caps(s);
    if (s->vcpu_mmap_size < (int)sizeof(struct kvm_run)) {
        error_setg(errp, "KVM_GET_VCPU_MMAP_SIZE returned %d", s->vcpu_mmap_size);
        goto fail;
    }
    if (!s->irqchip || !s->pit2 || !s->immediate_exit) {
        error_setg(errp, "KVM lacks a required capability (%s)",
                   !s->irqchip ? "KVM_CAP_IRQCHIP" : !s->pit2 ? "KVM_CAP_PIT2"
                   : "KVM_CAP_IMMEDIATE_EXIT");
        goto fail;
    }
    s->supported_cpuid = kvm_get_supported_cpuid(s);
    if (!s->supported_cpuid) {
        error_setg(errp, "KVM_GET_SUPPORTED_CPUID failed");
        goto fail;
    }
    s->msr_list = kvm_get_msr_index_list(s);
    /* VMX needs a TSS for real mode; other KVMs ignore or refuse it harmlessly. */
    kvm_vm_ioctl(s, KVM_SET_TSS_ADDR, (void *)0xfffbd000UL);
    return g_steal_pointer(&s);

fail:
    if (s->vmfd >= 0) {
        close(s->vmfd);
    }
    close(s->fd);
    g_free(s->supported_cpuid);
    return NULL;
}

void kvm_cleanup(KVMState *s)
{
    if (!s) {
        return;
    }
    for (int i = 0; i < s->nr_slots; i++) {
        g_free(s->slots[i].dirty_bmap);
    }
    g_free(s->slots);
    g_free(s->supported_cpuid);
    g_free(s->msr_list);
    close(s->vmfd);
    close(s->fd);
    g_free(s);
}

static int kvm_set_user_memory_region(KVMState *s, KVMSlot *slot)
{
    struct kvm_userspace_memory_region mem = {
        .slot = slot->slot,
        .flags = slot->flags,
        .guest_phys_addr = slot->start_addr,
        .memory_size = slot->memory_size,
        .userspace_addr = (uintptr_t)slot->host,
    };

    return kvm_vm_ioctl(s, KVM_SET_USER_MEMORY_REGION, &mem);
}

/*
 * Guest RAM goes to KVM in slots of at most this much. Why: without manual
 * protection, KVM_GET_DIRTY_LOG write-protects a slot's dirty pages under
 * one hold of KVM's mmu_lock, and a vCPU that faults meanwhile waits for
 * all of it (traced 2026-12-02: 0.9 to 2.1 ms for a 1 GiB slot, the guest's
 * worst write the same). Slots of 128 MiB cut each hold eightfold; the
 * other modes do not care.
 */
#define KVM_SLOT_MAX_BYTES (128ULL << 20)

static size_t kvm_slots_needed(const GuestRAMRange *r, size_t n)
{
    size_t slots = 0;

    for (size_t i = 0; i < n; i++) {
        slots += DIV_ROUND_UP(r[i].size, KVM_SLOT_MAX_BYTES);
    }
    return slots;
}

bool kvm_memslots_init(KVMState *s, Error **errp)
{
    size_t n;
    const GuestRAMRange *r = guest_ram_ranges(&n);
    size_t nslots = kvm_slots_needed(r, n);

    if ((int)nslots > s->nr_slots_max) {
        error_setg(errp, "guest RAM needs %zu KVM memory slots, KVM offers %d", nslots,
                   s->nr_slots_max);
        return false;
    }
    s->slots = g_new0(KVMSlot, nslots);
    for (size_t i = 0; i < n; i++) {
        for (uint64_t off = 0; off < r[i].size; off += KVM_SLOT_MAX_BYTES) {
            KVMSlot *slot = &s->slots[s->nr_slots];
            int ret;

            slot->slot = s->nr_slots;
            slot->start_addr = r[i].gpa + off;
            slot->memory_size = MIN(KVM_SLOT_MAX_BYTES, r[i].size - off);
            slot->host = r[i].rb->host + r[i].offset + off;
            slot->rb = r[i].rb;
            slot->ram_offset = r[i].offset + off;
            slot->npages = slot->memory_size >> TARGET_PAGE_BITS;
            ret = kvm_set_user_memory_region(s, slot);
            if (ret < 0) {
                error_setg_errno(errp, -ret, "KVM_SET_USER_MEMORY_REGION failed for slot %d "
                                 "(gpa 0x%" HWADDR_PRIx ", size 0x%" PRIx64 ")", slot->slot,
                                 slot->start_addr, slot->memory_size);
                return false;
            }
            s->nr_slots++;
        }
    }
    return true;
}

int kvm_slot_set_flags(KVMState *s, KVMSlot *slot, uint32_t flags)
{
    uint32_t old = slot->flags;
    int ret;

    slot->flags = flags;
    ret = kvm_set_user_memory_region(s, slot);
    if (ret < 0) {
        slot->flags = old;
    }
    return ret;
}

int kvm_set_irq(KVMState *s, int irq, int level)
{
    struct kvm_irq_level event = { .irq = irq, .level = level };

    return kvm_vm_ioctl(s, KVM_IRQ_LINE, &event);
}

int kvm_signal_msi(KVMState *s, uint64_t addr, uint32_t data)
{
    struct kvm_msi msi = { .address_lo = (uint32_t)addr, .address_hi = (uint32_t)(addr >> 32),
                           .data = data };

    return kvm_vm_ioctl(s, KVM_SIGNAL_MSI, &msi);
}

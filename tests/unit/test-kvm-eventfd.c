/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * accel/kvm/kvm-eventfd.c against the real /dev/kvm (skipped without it),
 * selftests style: a VM with the in-kernel irqchip and one vCPU in flat
 * 32-bit protected mode running a few instructions we assemble by hand.
 * Checks what virtio-mmio relies on: a 4-byte write of the datamatch value
 * to QueueNotify signals the eventfd without an exit, any other value
 * still exits as MMIO, deassignment restores the exit; a write to a
 * resampling irqfd asserts the GSI at the IOAPIC and the PIC and holds it,
 * and deassigning drops it.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "system/kvm.h"
#include <sys/eventfd.h>

#define NOTIFY_ADDR 0xfeb00050u
#define CODE_GPA 0x1000
#define GUEST_SIZE (1 * MiB)

typedef struct Guest {
    KVMState *s;
    int vcpu;
    struct kvm_run *run;
    uint8_t *mem;
} Guest;

/* Flat 4 GiB code and data segments, CR0.PE: enough for mov and out. */
static void guest_enter_protected_mode(Guest *g)
{
    struct kvm_segment seg = { .base = 0, .limit = 0xffffffff, .selector = 0x10, .type = 3,
                               .present = 1, .db = 1, .s = 1, .g = 1 };
    struct kvm_regs regs = { .rip = CODE_GPA, .rflags = 2 };
    struct kvm_sregs sregs;

    g_assert_cmpint(ioctl(g->vcpu, KVM_GET_SREGS, &sregs), ==, 0);
    sregs.ds = sregs.es = sregs.fs = sregs.gs = sregs.ss = seg;
    seg.type = 11;
    seg.selector = 0x8;
    sregs.cs = seg;
    sregs.cr0 |= 1;
    g_assert_cmpint(ioctl(g->vcpu, KVM_SET_SREGS, &sregs), ==, 0);
    g_assert_cmpint(ioctl(g->vcpu, KVM_SET_REGS, &regs), ==, 0);
}

static bool guest_create(Guest *g)
{
    struct kvm_userspace_memory_region r = { .slot = 0, .memory_size = GUEST_SIZE };
    g_autoptr(Error) err = NULL;
    KVMAccelOpts opts = { 0 };
    int mmap_size;

    if (access("/dev/kvm", R_OK | W_OK)) {
        g_test_skip("no usable /dev/kvm");
        return false;
    }
    g->s = kvm_init(&opts, &err);
    if (!g->s) {
        g_test_skip(error_get_pretty(err));
        return false;
    }
    g_assert_cmpint(kvm_vm_ioctl(g->s, KVM_CREATE_IRQCHIP, NULL), ==, 0);
    g->mem = mmap(NULL, GUEST_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    g_assert_true(g->mem != MAP_FAILED);
    r.userspace_addr = (uintptr_t)g->mem;
    g_assert_cmpint(kvm_vm_ioctl(g->s, KVM_SET_USER_MEMORY_REGION, &r), ==, 0);
    g->vcpu = kvm_vm_ioctl(g->s, KVM_CREATE_VCPU, 0);
    g_assert_cmpint(g->vcpu, >=, 0);
    g_assert_cmpint(ioctl(g->vcpu, KVM_SET_CPUID2, g->s->supported_cpuid), ==, 0);
    mmap_size = kvm_ioctl(g->s, KVM_GET_VCPU_MMAP_SIZE, NULL);
    g->run = mmap(NULL, mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, g->vcpu, 0);
    g_assert_true(g->run != MAP_FAILED);
    guest_enter_protected_mode(g);
    return true;
}

static void guest_destroy(Guest *g)
{
    close(g->vcpu);
    munmap(g->mem, GUEST_SIZE);
    kvm_cleanup(g->s);
}

/* Appends "mov eax, @val; mov [NOTIFY_ADDR], eax; out 0xf4, al" at *@p. */
static uint8_t *emit_notify(uint8_t *p, uint32_t val)
{
    *p++ = 0xb8;                /* mov eax, imm32 */
    memcpy(p, &val, 4);
    p += 4;
    *p++ = 0xa3;                /* mov [moffs32], eax */
    val = NOTIFY_ADDR;
    memcpy(p, &val, 4);
    p += 4;
    *p++ = 0xe6;                /* out imm8, al: ends this step with an exit we expect */
    *p++ = 0xf4;
    return p;
}

/* Runs the guest to its next exit that is not an interrupted KVM_RUN. */
static uint32_t guest_run(Guest *g)
{
    int ret;

    do {
        ret = ioctl(g->vcpu, KVM_RUN, 0);
    } while (ret < 0 && errno == EINTR);
    g_assert_cmpint(ret, ==, 0);
    return g->run->exit_reason;
}

static uint64_t eventfd_take(int fd)
{
    uint64_t cnt = 0;

    return read(fd, &cnt, sizeof(cnt)) == sizeof(cnt) ? cnt : 0;
}

static void test_ioeventfd(void)
{
    Guest g = { 0 };
    uint8_t *p;
    int efd;

    if (!guest_create(&g)) {
        return;
    }
    if (!kvm_has_ioeventfd(g.s)) {
        g_test_skip("KVM has no KVM_CAP_IOEVENTFD");
        guest_destroy(&g);
        return;
    }
    p = g.mem + CODE_GPA;
    p = emit_notify(p, 1);      /* matches: no exit */
    p = emit_notify(p, 5);      /* does not match: MMIO exit */
    p = emit_notify(p, 1);      /* after deassignment: MMIO exit */
    efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    g_assert_cmpint(kvm_mmio_ioeventfd_assign(g.s, efd, NOTIFY_ADDR, 4, 1, true), ==, 0);
    /* KVM refuses the same assignment twice. */
    g_assert_cmpint(kvm_mmio_ioeventfd_assign(g.s, efd, NOTIFY_ADDR, 4, 1, true), ==, -EEXIST);

    g_assert_cmpuint(guest_run(&g), ==, KVM_EXIT_IO);
    g_assert_cmpuint(eventfd_take(efd), ==, 1);

    g_assert_cmpuint(guest_run(&g), ==, KVM_EXIT_MMIO);
    g_assert_cmphex(g.run->mmio.phys_addr, ==, NOTIFY_ADDR);
    g_assert_cmpuint(g.run->mmio.len, ==, 4);
    g_assert_true(g.run->mmio.is_write);
    g_assert_cmpuint(eventfd_take(efd), ==, 0);
    g_assert_cmpuint(guest_run(&g), ==, KVM_EXIT_IO);

    g_assert_cmpint(kvm_mmio_ioeventfd_assign(g.s, efd, NOTIFY_ADDR, 4, 1, false), ==, 0);
    g_assert_cmpuint(guest_run(&g), ==, KVM_EXIT_MMIO);
    g_assert_cmpuint(eventfd_take(efd), ==, 0);
    close(efd);
    guest_destroy(&g);
}

/* The IOAPIC's and the master PIC's view of line @gsi (< 8). */
static bool gsi_asserted(Guest *g, int gsi, bool *pic)
{
    struct kvm_irqchip chip = { .chip_id = KVM_IRQCHIP_IOAPIC };

    g_assert_cmpint(kvm_vm_ioctl(g->s, KVM_GET_IRQCHIP, &chip), ==, 0);
    if (pic) {
        struct kvm_irqchip master = { .chip_id = KVM_IRQCHIP_PIC_MASTER };

        g_assert_cmpint(kvm_vm_ioctl(g->s, KVM_GET_IRQCHIP, &master), ==, 0);
        *pic = master.chip.pic.irr & (1u << gsi);
    }
    return chip.chip.ioapic.irr & (1u << gsi);
}

/* KVM injects an irqfd's interrupt from a work queue: wait a little for it. */
static bool gsi_wait(Guest *g, int gsi, bool want)
{
    for (int i = 0; i < 1000; i++) {
        if (gsi_asserted(g, gsi, NULL) == want) {
            return true;
        }
        g_usleep(1000);
    }
    return false;
}

static void test_irqfd_resample(void)
{
    Guest g = { 0 };
    uint64_t one = 1;
    int irqfd, resamplefd;
    bool pic;

    if (!guest_create(&g)) {
        return;
    }
    if (!kvm_has_irqfd_resample(g.s)) {
        g_test_skip("KVM has no KVM_CAP_IRQFD_RESAMPLE");
        guest_destroy(&g);
        return;
    }
    irqfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    resamplefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    g_assert_cmpint(kvm_irqfd_resample_assign(g.s, irqfd, resamplefd, 5, true), ==, 0);
    g_assert_false(gsi_asserted(&g, 5, NULL));
    g_assert_cmpint(write(irqfd, &one, sizeof(one)), ==, sizeof(one));
    g_assert_true(gsi_wait(&g, 5, true));
    /* Held, not pulsed: still high a while later, at both chips. */
    g_usleep(20000);
    g_assert_true(gsi_asserted(&g, 5, &pic));
    g_assert_true(pic);
    /* No EOI happened, so no resample event. */
    g_assert_cmpuint(eventfd_take(resamplefd), ==, 0);
    g_assert_cmpint(kvm_irqfd_resample_assign(g.s, irqfd, resamplefd, 5, false), ==, 0);
    g_assert_true(gsi_wait(&g, 5, false));
    close(irqfd);
    close(resamplefd);
    guest_destroy(&g);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/kvm-eventfd/ioeventfd", test_ioeventfd);
    g_test_add_func("/kvm-eventfd/irqfd-resample", test_irqfd_resample);
    return g_test_run();
}

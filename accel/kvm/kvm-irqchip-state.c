/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMU's sections for the in-kernel devices the VM has beside its vCPUs,
 * in QEMU's layouts: the IOAPIC ("ioapic" 0), the two i8259 PICs ("i8259"
 * 0 = master, 1 = slave) and the PIT ("i8254" 0). The kvmclock is in
 * kvm-clock-state.c.
 *
 * Each section's opaque is an image of its fields in QEMU's names. pre_save
 * reads KVM into the image; post_load checks what KVM would take on trust,
 * lays the image over what KVM has now (so the state QEMU does not carry,
 * such as the PICs' elcr_mask and the IOAPIC's base, stays KVM's) and
 * writes it back. The instances are allocated at registration; KVM has
 * one in-kernel irqchip and PIT per VM, so there is one of each, but the
 * hooks only use what they are given. All hooks: BQL held, VM stopped.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "migration/vmstate.h"
#include "system/kvm.h"
#include "system/runstate.h"
#include "system/cpus.h"
#include "trace.h"

#define IOAPIC_BASE_ADDRESS 0xfec00000

/* ---- PIC and IOAPIC ---- */

static bool kvm_chip_get(struct kvm_irqchip *chip, Error **errp)
{
    int ret = kvm_vm_ioctl(kvm_state, KVM_GET_IRQCHIP, chip);

    if (ret < 0) {
        error_setg_errno(errp, -ret, "KVM_GET_IRQCHIP (chip %u) failed", chip->chip_id);
        return false;
    }
    return true;
}

static bool kvm_chip_put(struct kvm_irqchip *chip, Error **errp)
{
    int ret = kvm_vm_ioctl(kvm_state, KVM_SET_IRQCHIP, chip);

    if (ret < 0) {
        error_setg_errno(errp, -ret, "KVM_SET_IRQCHIP (chip %u) failed", chip->chip_id);
        return false;
    }
    return true;
}

/* The "i8259" v1 section: KVM's kvm_pic_state without elcr_mask, plus single_mode. */
typedef struct PICImage {
    uint8_t last_irr, irr, imr, isr, priority_add, irq_base, read_reg_select, poll;
    uint8_t special_mask, init_state, auto_eoi, rotate_on_auto_eoi, special_fully_nested_mode;
    uint8_t init4;
    uint8_t single_mode;        /* KVM's PIC is always cascaded: 0 */
    uint8_t elcr;
} PICImage;

typedef struct KVMPICMig {
    uint32_t chip_id;           /* KVM_IRQCHIP_PIC_MASTER or _SLAVE; immutable, never from the stream */
    PICImage img;               /* BQL; meaningful from pre_save or load to the hook after */
} KVMPICMig;

#define PIC_FIELDS(X) X(last_irr) X(irr) X(imr) X(isr) X(priority_add) X(irq_base) \
    X(read_reg_select) X(poll) X(special_mask) X(init_state) X(auto_eoi)            \
    X(rotate_on_auto_eoi) X(special_fully_nested_mode) X(init4) X(elcr)

static bool kvm_pic_pre_save(void *opaque, Error **errp)
{
    KVMPICMig *mig = container_of((PICImage *)opaque, KVMPICMig, img);
    struct kvm_irqchip chip = { .chip_id = mig->chip_id };

    if (!kvm_chip_get(&chip, errp)) {
        return false;
    }
#define PIC_GET(f) mig->img.f = chip.chip.pic.f;
    PIC_FIELDS(PIC_GET)
#undef PIC_GET
    mig->img.single_mode = 0;
    return true;
}

/* LVT LINT0 in the LAPIC page: delivery mode ExtINT, not masked. */
#define APIC_LVT0_OFFSET    0x350
#define APIC_LVT_MASKED     (1u << 16)
#define APIC_DM_EXTINT      (7u << 8)
#define APIC_DM_MASK        (7u << 8)
#define RFLAGS_IF           (1ull << 9)
#define PIC_CASCADE_IRQ     2

/*
 * An IRQ the master PIC holds in service (ISR) that the vCPU never took.
 * QEMU on this host saves one now and then (3 of 80 saves of a guest
 * halting for its PIT tick, QEMU 7.2): the PIC had handed IRQ0 to the
 * vCPU, but the stream's vCPU has no interrupt being injected, RIP is
 * still after its HLT and IF is set. Its handler never runs, never sends
 * the EOI, and the PIC holds every later tick behind that ISR bit: the
 * guest sleeps for ever, on QEMU's own destination too (2 of those 3
 * streams hung QEMU 7.2). Our own saves never showed it (0 of 80).
 *
 * The rule: with the BSP taking the PIC through LINT0 (ExtINT), not
 * injecting anything, and IF set, it is not inside that IRQ's handler,
 * since an interrupt gate clears IF until the handler's IRET; so the IRQ
 * goes back to pending (IRR) and is delivered and acknowledged again. A
 * guest whose handler sets IF again before its EOI (not Linux, which
 * EOIs the 8259 when it acknowledges) would take that IRQ twice; one
 * spurious tick is the price, against a guest that never wakes.
 * Called with the vCPU's own sections (cpu, apic) already in KVM: QEMU's
 * streams and ours put them before i8259.
 */
static void kvm_pic_requeue_lost_irq(struct kvm_pic_state *pic)
{
    CPUState *bsp = vcpus && vcpus->len ? g_ptr_array_index(vcpus, 0) : NULL;
    struct kvm_vcpu_events ev;
    struct kvm_regs regs;
    struct kvm_lapic_state lapic;
    uint32_t lvt0;
    int irq;

    if (!bsp || !pic->isr || (pic->isr & (pic->isr - 1)) ||
        (pic->isr & (1u << PIC_CASCADE_IRQ)) || (pic->isr & pic->imr)) {
        return;                 /* nothing in service, nested handlers, or the slave's */
    }
    if (kvm_vcpu_ioctl(bsp, KVM_GET_VCPU_EVENTS, &ev) < 0 ||
        kvm_vcpu_ioctl(bsp, KVM_GET_REGS, &regs) < 0 ||
        kvm_vcpu_ioctl(bsp, KVM_GET_LAPIC, &lapic) < 0) {
        return;
    }
    memcpy(&lvt0, lapic.regs + APIC_LVT0_OFFSET, sizeof(lvt0));
    if (ev.interrupt.injected || ev.exception.injected || ev.nmi.injected ||
        !(regs.rflags & RFLAGS_IF) || (lvt0 & APIC_LVT_MASKED) ||
        (lvt0 & APIC_DM_MASK) != APIC_DM_EXTINT) {
        return;
    }
    irq = __builtin_ctz(pic->isr);
    trace_kvm_pic_requeue_lost_irq(irq, pic->irq_base + irq);
    pic->isr = 0;
    pic->irr |= 1u << irq;
}

static bool kvm_pic_post_load(void *opaque, int version_id, Error **errp)
{
    KVMPICMig *mig = container_of((PICImage *)opaque, KVMPICMig, img);
    const PICImage *p = &mig->img;
    struct kvm_irqchip chip = { .chip_id = mig->chip_id };

    /* What the i8259 model itself can produce: flags are 0/1, small counters. */
    if (p->priority_add > 7 || p->init_state > 3 || p->read_reg_select > 1 || p->poll > 1 ||
        p->special_mask > 1 || p->auto_eoi > 1 || p->rotate_on_auto_eoi > 1 ||
        p->special_fully_nested_mode > 1 || p->init4 > 1) {
        error_setg(errp, "invalid PIC state (chip %u)", mig->chip_id);
        return false;
    }
    if (p->single_mode) {
        error_setg(errp, "PIC %u in single mode: KVM's PICs are always cascaded", mig->chip_id);
        return false;
    }
    /* elcr_mask is KVM's (the lines that can be level-triggered), not carried. */
    if (!kvm_chip_get(&chip, errp)) {
        return false;
    }
    if (p->elcr & ~chip.chip.pic.elcr_mask) {
        error_setg(errp, "PIC %u: ELCR 0x%x sets bits outside 0x%x", mig->chip_id, p->elcr,
                   chip.chip.pic.elcr_mask);
        return false;
    }
#define PIC_PUT(f) chip.chip.pic.f = p->f;
    PIC_FIELDS(PIC_PUT)
#undef PIC_PUT
    if (mig->chip_id == KVM_IRQCHIP_PIC_MASTER) {
        kvm_pic_requeue_lost_irq(&chip.chip.pic);
    }
    /*
     * last_irr is the input lines' levels as the source's PIC last saw
     * them; here every line is low until a device drives it again. Kept,
     * a high edge-triggered line swallows the next rising edge: QEMU's
     * streams often carry IRQ0 high, and the PIT's next tick then never
     * reached the guest while KVM waited for its acknowledgement, so a
     * guest halted for that tick slept for ever.
     */
    chip.chip.pic.last_irr = 0;
    return kvm_chip_put(&chip, errp);
}

static const VMStateDescription vmstate_kvm_i8259 = {
    .name = "i8259",
    .size = sizeof(PICImage),
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_save = kvm_pic_pre_save,
    .post_load = kvm_pic_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(last_irr, PICImage),
        VMSTATE_UINT8(irr, PICImage),
        VMSTATE_UINT8(imr, PICImage),
        VMSTATE_UINT8(isr, PICImage),
        VMSTATE_UINT8(priority_add, PICImage),
        VMSTATE_UINT8(irq_base, PICImage),
        VMSTATE_UINT8(read_reg_select, PICImage),
        VMSTATE_UINT8(poll, PICImage),
        VMSTATE_UINT8(special_mask, PICImage),
        VMSTATE_UINT8(init_state, PICImage),
        VMSTATE_UINT8(auto_eoi, PICImage),
        VMSTATE_UINT8(rotate_on_auto_eoi, PICImage),
        VMSTATE_UINT8(special_fully_nested_mode, PICImage),
        VMSTATE_UINT8(init4, PICImage),
        VMSTATE_UINT8(single_mode, PICImage),
        VMSTATE_UINT8(elcr, PICImage),
        VMSTATE_END_OF_LIST()
    },
};

/* The "ioapic" v3 section; base_address is not carried (always 0xfec00000 here). */
typedef struct IOAPICImage {
    uint8_t id;
    uint8_t ioregsel;
    uint32_t irr;
    uint64_t ioredtbl[KVM_IOAPIC_NUM_PINS];
} IOAPICImage;

static bool kvm_ioapic_pre_save(void *opaque, Error **errp)
{
    IOAPICImage *img = opaque;
    struct kvm_irqchip chip = { .chip_id = KVM_IRQCHIP_IOAPIC };
    const struct kvm_ioapic_state *io = &chip.chip.ioapic;

    if (!kvm_chip_get(&chip, errp)) {
        return false;
    }
    /* KVM keeps the 4-bit ID and the 8-bit select in u32s that hold nothing more. */
    img->id = io->id;
    img->ioregsel = io->ioregsel;
    img->irr = io->irr;
    for (int i = 0; i < KVM_IOAPIC_NUM_PINS; i++) {
        img->ioredtbl[i] = io->redirtbl[i].bits;
    }
    return true;
}

static bool kvm_ioapic_post_load(void *opaque, int version_id, Error **errp)
{
    const IOAPICImage *img = opaque;
    struct kvm_irqchip chip = { .chip_id = KVM_IRQCHIP_IOAPIC };
    struct kvm_ioapic_state *io = &chip.chip.ioapic;

    if (img->id > 0xf || img->irr >> KVM_IOAPIC_NUM_PINS) {
        error_setg(errp, "invalid IOAPIC state (ioregsel 0x%x, id %u, irr 0x%x)",
                   img->ioregsel, img->id, img->irr);
        return false;
    }
    if (!kvm_chip_get(&chip, errp)) {
        return false;
    }
    /* KVM would move its MMIO window to any base it is given. */
    io->base_address = IOAPIC_BASE_ADDRESS;
    io->id = img->id;
    io->ioregsel = img->ioregsel;
    io->irr = img->irr;
    for (int i = 0; i < KVM_IOAPIC_NUM_PINS; i++) {
        io->redirtbl[i].bits = img->ioredtbl[i];
    }
    return kvm_chip_put(&chip, errp);
}

static const VMStateDescription vmstate_kvm_ioapic = {
    .name = "ioapic",
    .size = sizeof(IOAPICImage),
    .version_id = 3,
    .minimum_version_id = 3,
    .pre_save = kvm_ioapic_pre_save,
    .post_load = kvm_ioapic_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(id, IOAPICImage),
        VMSTATE_UINT8(ioregsel, IOAPICImage),
        VMSTATE_UNUSED(8),      /* QEMU's old base address */
        VMSTATE_UINT32(irr, IOAPICImage),
        VMSTATE_UINT64_ARRAY(ioredtbl, IOAPICImage, KVM_IOAPIC_NUM_PINS),
        VMSTATE_END_OF_LIST()
    },
};

/* ---- PIT ---- */

/* One channel of the "i8254" v3 section ("pit channel" v2), in QEMU's names. */
typedef struct PITChannelImage {
    int32_t count;              /* KVM's u32 is at most 0x10000 */
    uint16_t latched_count;
    uint8_t count_latched, status_latched, status, read_state, write_state, write_latch;
    uint8_t rw_mode, mode, bcd, gate;
    int64_t count_load_time;    /* VM clock ns (KVM: host CLOCK_MONOTONIC ns) */
    int64_t next_transition_time;
    uint32_t irq_disabled;      /* channels[0]'s alone is on the wire */
} PITChannelImage;

typedef struct PITImage {
    PITChannelImage channels[3];
    /* Not on the wire: this process's PIT re-injection wait was reset (post_load). */
    bool reinject_reset;
} PITImage;

/*
 * @t on one clock to the other, given both clocks' now: @t - @from_now +
 * @to_now, wrapping (a hostile stream's time must not overflow a signed sum).
 */
static int64_t pit_rebase_time(int64_t t, int64_t from_now, int64_t to_now)
{
    return (int64_t)((uint64_t)t - (uint64_t)from_now + (uint64_t)to_now);
}

#define PIT_CHANNEL_FIELDS(X) X(latched_count) X(count_latched) X(status_latched) X(status) \
    X(read_state) X(write_state) X(write_latch) X(rw_mode) X(mode) X(bcd) X(gate)

static bool kvm_pit_pre_save(void *opaque, Error **errp)
{
    PITImage *img = opaque;
    struct kvm_pit_state2 pit;
    int64_t mono_now, vm_now;
    int ret = kvm_vm_ioctl(kvm_state, KVM_GET_PIT2, &pit);

    if (ret < 0) {
        error_setg_errno(errp, -ret, "KVM_GET_PIT2 failed");
        return false;
    }
    mono_now = get_clock_ns();
    vm_now = vm_clock_ns();
    for (int i = 0; i < 3; i++) {
        const struct kvm_pit_channel_state *k = &pit.channels[i];
        PITChannelImage *c = &img->channels[i];

        c->count = (int32_t)k->count;
#define PIT_GET(f) c->f = k->f;
        PIT_CHANNEL_FIELDS(PIT_GET)
#undef PIT_GET
        /*
         * KVM keeps channel 0's start in its hrtimer and reports 0 here:
         * send 0. A channel loaded before the VM clock started (at the
         * PIT's creation) would get a negative time: send the clock's 0.
         */
        c->count_load_time = k->count_load_time
            ? MAX(pit_rebase_time(k->count_load_time, mono_now, vm_now), 0) : 0;
        /*
         * QEMU's own PIT model arms its timer at this time; KVM has its
         * own timer and restarts every channel at KVM_SET_PIT2, so we send
         * 0 (QEMU computes it again when its model runs) and ignore it.
         */
        c->next_transition_time = 0;
        c->irq_disabled = !!(pit.flags & KVM_PIT_FLAGS_HPET_LEGACY);
    }
    return true;
}

static bool kvm_pit_post_load(void *opaque, int version_id, Error **errp)
{
    PITImage *img = opaque;
    struct kvm_pit_state2 pit;
    int64_t mono_now, vm_now;
    int ret;

    if (img->channels[0].irq_disabled > 1) {
        error_setg(errp, "invalid PIT irq_disabled %u", img->channels[0].irq_disabled);
        return false;
    }
    for (int i = 0; i < 3; i++) {
        const PITChannelImage *c = &img->channels[i];

        /* mode is 0xff until the guest programs the channel; 6 and 7 alias 2 and 3. */
        if (c->count < 0 || c->count > 0x10000 || (c->mode > 7 && c->mode != 0xff) ||
            c->rw_mode > 3 || c->read_state > 4 || c->write_state > 4 || c->count_latched > 3 ||
            c->status_latched > 1 || c->bcd > 1 || c->gate > 1) {
            error_setg(errp, "invalid PIT channel %d state", i);
            return false;
        }
    }
    /* The flags QEMU does not carry (the speaker's data line) stay KVM's. */
    ret = kvm_vm_ioctl(kvm_state, KVM_GET_PIT2, &pit);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "KVM_GET_PIT2 failed");
        return false;
    }
    /*
     * Channel 0 never armed in this process (KVM's reset mode, 0xff: no
     * timer): no tick ever waited for an acknowledgement, so there is no
     * wait to reset below. The toggle costs two SRCU grace periods, about
     * 12 ms inside every switchover into this process (a live update's
     * pause was 4x QEMU's for it); it is needed only where the PIT ticked
     * before the stream's state (a second load into a running VM).
     */
    if (pit.channels[0].mode == 0xff) {
        img->reinject_reset = true;
    }
    /* The "timer" section, loaded before this one, has set the VM clock. */
    mono_now = get_clock_ns();
    vm_now = vm_clock_ns();
    for (int i = 0; i < 3; i++) {
        const PITChannelImage *c = &img->channels[i];
        struct kvm_pit_channel_state *k = &pit.channels[i];

        k->count = (uint32_t)c->count;
#define PIT_PUT(f) k->f = c->f;
        PIT_CHANNEL_FIELDS(PIT_PUT)
#undef PIT_PUT
        /* KVM restarts each channel from its count at KVM_SET_PIT2 and resets this. */
        k->count_load_time = pit_rebase_time(c->count_load_time, vm_now, mono_now);
    }
    pit.flags &= ~KVM_PIT_FLAGS_HPET_LEGACY;
    if (img->channels[0].irq_disabled) {
        pit.flags |= KVM_PIT_FLAGS_HPET_LEGACY;
    }
    memset(pit.reserved, 0, sizeof(pit.reserved));
    ret = kvm_vm_ioctl(kvm_state, KVM_SET_PIT2, &pit);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "KVM_SET_PIT2 failed");
        return false;
    }
    /*
     * KVM re-injects PIT ticks one at a time: it holds the next until the
     * guest acknowledges IRQ0, and KVM_SET_PIT2 does not reset that wait.
     * Our PIT ticked once while this destination waited for the stream
     * (KVM's reset state arms channel 0), and the stream's PIC state then
     * erased the interrupt the guest would have acknowledged: a guest that
     * halts for its next tick (from QEMU: it programmed channel 0 there)
     * slept for ever. Turning re-injection off and on again resets the
     * wait and the pending ticks (the stream carries none). Once per
     * process: only that first tick needs it, and each toggle waits for
     * an SRCU grace period (the fuzz targets load thousands of streams).
     */
    for (int on = 0; !img->reinject_reset && on < 2; on++) {
        struct kvm_reinject_control rc = { .pit_reinject = on };

        ret = kvm_vm_ioctl(kvm_state, KVM_REINJECT_CONTROL, &rc);
        if (ret < 0) {
            error_setg_errno(errp, -ret, "KVM_REINJECT_CONTROL failed");
            return false;
        }
    }
    img->reinject_reset = true;
    return true;
}

static const VMStateDescription vmstate_kvm_pit_channel = {
    .name = "pit channel",
    .version_id = 2,
    .minimum_version_id = 2,
    .fields = (const VMStateField[]) {
        VMSTATE_INT32(count, PITChannelImage),
        VMSTATE_UINT16(latched_count, PITChannelImage),
        VMSTATE_UINT8(count_latched, PITChannelImage),
        VMSTATE_UINT8(status_latched, PITChannelImage),
        VMSTATE_UINT8(status, PITChannelImage),
        VMSTATE_UINT8(read_state, PITChannelImage),
        VMSTATE_UINT8(write_state, PITChannelImage),
        VMSTATE_UINT8(write_latch, PITChannelImage),
        VMSTATE_UINT8(rw_mode, PITChannelImage),
        VMSTATE_UINT8(mode, PITChannelImage),
        VMSTATE_UINT8(bcd, PITChannelImage),
        VMSTATE_UINT8(gate, PITChannelImage),
        VMSTATE_INT64(count_load_time, PITChannelImage),
        VMSTATE_INT64(next_transition_time, PITChannelImage),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_kvm_pit = {
    .name = "i8254",
    .size = sizeof(PITImage),
    .version_id = 3,
    .minimum_version_id = 3,
    .pre_save = kvm_pit_pre_save,
    .post_load = kvm_pit_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(channels[0].irq_disabled, PITImage),
        VMSTATE_STRUCT_ARRAY(channels, PITImage, 3, vmstate_kvm_pit_channel, PITChannelImage),
        VMSTATE_INT64(channels[0].next_transition_time, PITImage),
        VMSTATE_END_OF_LIST()
    },
};

/* ---- registration ---- */

void kvm_ioapic_state_register(void)
{
    vmstate_register("ioapic", 0, &vmstate_kvm_ioapic, g_new0(IOAPICImage, 1));
}

void kvm_pic_pit_state_register(void)
{
    KVMPICMig *pic = g_new0(KVMPICMig, 2);

    pic[0].chip_id = KVM_IRQCHIP_PIC_MASTER;
    pic[1].chip_id = KVM_IRQCHIP_PIC_SLAVE;
    vmstate_register("i8259", 0, &vmstate_kvm_i8259, &pic[0].img);
    vmstate_register("i8259", 1, &vmstate_kvm_i8259, &pic[1].img);
    vmstate_register("i8254", 0, &vmstate_kvm_pit, g_new0(PITImage, 1));
}

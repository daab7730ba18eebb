/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Migration sections of the in-kernel devices the VM has beside its vCPUs:
 * the two i8259 PICs ("kvm-i8259" 0 = master, 1 = slave), the IOAPIC
 * ("kvm-ioapic"), the PIT ("kvm-pit") and the kvmclock ("kvmclock").
 * pre_save reads each from KVM; post_load checks the incoming values that
 * KVM would take on trust and writes them back.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "migration/vmstate.h"
#include "system/kvm.h"

#define IOAPIC_BASE_ADDRESS 0xfec00000

/* One per section instance; KVM_CREATE_IRQCHIP made exactly these. */
typedef struct KVMChipState {
    struct kvm_irqchip chip;        /* chip_id is ours, never from the stream */
} KVMChipState;

static KVMChipState kvm_pic_state[2];
static KVMChipState kvm_ioapic_state;
static struct kvm_pit_state2 kvm_pit;
static struct kvm_clock_data kvm_clock;

/* ---- PIC and IOAPIC ---- */

static bool kvm_chip_get(KVMChipState *c, Error **errp)
{
    int ret = kvm_vm_ioctl(kvm_state, KVM_GET_IRQCHIP, &c->chip);

    if (ret < 0) {
        error_setg_errno(errp, -ret, "KVM_GET_IRQCHIP (chip %u) failed", c->chip.chip_id);
        return false;
    }
    return true;
}

static bool kvm_chip_put(KVMChipState *c, Error **errp)
{
    int ret = kvm_vm_ioctl(kvm_state, KVM_SET_IRQCHIP, &c->chip);

    if (ret < 0) {
        error_setg_errno(errp, -ret, "KVM_SET_IRQCHIP (chip %u) failed", c->chip.chip_id);
        return false;
    }
    return true;
}

static KVMChipState *kvm_pic_from(void *opaque)
{
    return container_of((struct kvm_pic_state *)opaque, KVMChipState, chip.chip.pic);
}

static bool kvm_pic_pre_save(void *opaque, Error **errp)
{
    return kvm_chip_get(kvm_pic_from(opaque), errp);
}

static bool kvm_pic_post_load(void *opaque, int version_id, Error **errp)
{
    KVMChipState *c = kvm_pic_from(opaque);
    const struct kvm_pic_state *p = opaque;

    assert(c->chip.chip_id == KVM_IRQCHIP_PIC_MASTER || c->chip.chip_id == KVM_IRQCHIP_PIC_SLAVE);
    /* What the i8259 model itself can produce: flags are 0/1, small counters. */
    if (p->priority_add > 7 || p->init_state > 3 || p->read_reg_select > 1 || p->poll > 1 ||
        p->special_mask > 1 || p->auto_eoi > 1 || p->rotate_on_auto_eoi > 1 ||
        p->special_fully_nested_mode > 1 || p->init4 > 1) {
        error_setg(errp, "invalid PIC state (chip %u)", c->chip.chip_id);
        return false;
    }
    return kvm_chip_put(c, errp);
}

static const VMStateDescription vmstate_kvm_i8259 = {
    .name = "kvm-i8259",
    .size = sizeof(struct kvm_pic_state),
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_save = kvm_pic_pre_save,
    .post_load = kvm_pic_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(last_irr, struct kvm_pic_state),
        VMSTATE_UINT8(irr, struct kvm_pic_state),
        VMSTATE_UINT8(imr, struct kvm_pic_state),
        VMSTATE_UINT8(isr, struct kvm_pic_state),
        VMSTATE_UINT8(priority_add, struct kvm_pic_state),
        VMSTATE_UINT8(irq_base, struct kvm_pic_state),
        VMSTATE_UINT8(read_reg_select, struct kvm_pic_state),
        VMSTATE_UINT8(poll, struct kvm_pic_state),
        VMSTATE_UINT8(special_mask, struct kvm_pic_state),
        VMSTATE_UINT8(init_state, struct kvm_pic_state),
        VMSTATE_UINT8(auto_eoi, struct kvm_pic_state),
        VMSTATE_UINT8(rotate_on_auto_eoi, struct kvm_pic_state),
        VMSTATE_UINT8(special_fully_nested_mode, struct kvm_pic_state),
        VMSTATE_UINT8(init4, struct kvm_pic_state),
        VMSTATE_UINT8(elcr, struct kvm_pic_state),
        VMSTATE_UINT8(elcr_mask, struct kvm_pic_state),
        VMSTATE_END_OF_LIST()
    },
};

static bool kvm_ioapic_pre_save(void *opaque, Error **errp)
{
    return kvm_chip_get(&kvm_ioapic_state, errp);
}

static bool kvm_ioapic_post_load(void *opaque, int version_id, Error **errp)
{
    const struct kvm_ioapic_state *io = opaque;

    assert(kvm_ioapic_state.chip.chip_id == KVM_IRQCHIP_IOAPIC);
    /* KVM would move its MMIO window to any base the stream names. */
    if (io->base_address != IOAPIC_BASE_ADDRESS) {
        error_setg(errp, "IOAPIC base address 0x%llx is not 0x%x",
                   (unsigned long long)io->base_address, IOAPIC_BASE_ADDRESS);
        return false;
    }
    if (io->ioregsel > 0xff || io->id > 0xf || io->irr >> KVM_IOAPIC_NUM_PINS) {
        error_setg(errp, "invalid IOAPIC state (ioregsel 0x%x, id %u, irr 0x%x)",
                   io->ioregsel, io->id, io->irr);
        return false;
    }
    return kvm_chip_put(&kvm_ioapic_state, errp);
}

static const VMStateDescription vmstate_kvm_ioapic = {
    .name = "kvm-ioapic",
    .size = sizeof(struct kvm_ioapic_state),
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_save = kvm_ioapic_pre_save,
    .post_load = kvm_ioapic_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT_SIZED(base_address, struct kvm_ioapic_state, VMS_UINT64),
        VMSTATE_UINT32(ioregsel, struct kvm_ioapic_state),
        VMSTATE_UINT32(id, struct kvm_ioapic_state),
        VMSTATE_UINT32(irr, struct kvm_ioapic_state),
        VMSTATE_UINT64_ARRAY(redirtbl, struct kvm_ioapic_state, KVM_IOAPIC_NUM_PINS),
        VMSTATE_END_OF_LIST()
    },
};

/* ---- PIT ---- */

static bool kvm_pit_pre_save(void *opaque, Error **errp)
{
    int ret = kvm_vm_ioctl(kvm_state, KVM_GET_PIT2, &kvm_pit);

    if (ret < 0) {
        error_setg_errno(errp, -ret, "KVM_GET_PIT2 failed");
        return false;
    }
    return true;
}

static bool kvm_pit_post_load(void *opaque, int version_id, Error **errp)
{
    struct kvm_pit_state2 *pit = &kvm_pit;
    int ret;

    if (pit->flags & ~(KVM_PIT_FLAGS_HPET_LEGACY | KVM_PIT_FLAGS_SPEAKER_DATA_ON)) {
        error_setg(errp, "invalid PIT flags 0x%x", pit->flags);
        return false;
    }
    for (int i = 0; i < 3; i++) {
        const struct kvm_pit_channel_state *c = &pit->channels[i];

        /* mode is 0xff until the guest programs the channel; 6 and 7 alias 2 and 3. */
        if (c->count > 0x10000 || (c->mode > 7 && c->mode != 0xff) || c->rw_mode > 3 ||
            c->read_state > 4 || c->write_state > 4 || c->count_latched > 3 ||
            c->status_latched > 1 || c->bcd > 1 || c->gate > 1) {
            error_setg(errp, "invalid PIT channel %d state", i);
            return false;
        }
    }
    memset(pit->reserved, 0, sizeof(pit->reserved));
    /*
     * count_load_time is the source host's clock; KVM ignores it and
     * restarts each channel from its reload value at KVM_SET_PIT2.
     */
    ret = kvm_vm_ioctl(kvm_state, KVM_SET_PIT2, pit);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "KVM_SET_PIT2 failed");
        return false;
    }
    return true;
}

static const VMStateDescription vmstate_kvm_pit_channel = {
    .name = "kvm_pit_channel_state",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(count, struct kvm_pit_channel_state),
        VMSTATE_UINT16(latched_count, struct kvm_pit_channel_state),
        VMSTATE_UINT8(count_latched, struct kvm_pit_channel_state),
        VMSTATE_UINT8(status_latched, struct kvm_pit_channel_state),
        VMSTATE_UINT8(status, struct kvm_pit_channel_state),
        VMSTATE_UINT8(read_state, struct kvm_pit_channel_state),
        VMSTATE_UINT8(write_state, struct kvm_pit_channel_state),
        VMSTATE_UINT8(write_latch, struct kvm_pit_channel_state),
        VMSTATE_UINT8(rw_mode, struct kvm_pit_channel_state),
        VMSTATE_UINT8(mode, struct kvm_pit_channel_state),
        VMSTATE_UINT8(bcd, struct kvm_pit_channel_state),
        VMSTATE_UINT8(gate, struct kvm_pit_channel_state),
        VMSTATE_UINT_SIZED(count_load_time, struct kvm_pit_channel_state, VMS_INT64),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_kvm_pit = {
    .name = "kvm-pit",
    .size = sizeof(struct kvm_pit_state2),
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_save = kvm_pit_pre_save,
    .post_load = kvm_pit_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT_ARRAY(channels, struct kvm_pit_state2, 3, vmstate_kvm_pit_channel,
                             struct kvm_pit_channel_state),
        VMSTATE_UINT32(flags, struct kvm_pit_state2),
        VMSTATE_END_OF_LIST()
    },
};

/* ---- kvmclock ---- */

static bool kvmclock_pre_save(void *opaque, Error **errp)
{
    struct kvm_clock_data *d = opaque;
    int ret;

    memset(d, 0, sizeof(*d));
    ret = kvm_vm_ioctl(kvm_state, KVM_GET_CLOCK, d);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "KVM_GET_CLOCK failed");
        return false;
    }
    return true;
}

static bool kvmclock_post_load(void *opaque, int version_id, Error **errp)
{
    const struct kvm_clock_data *in = opaque;
    struct kvm_clock_data d = { .clock = in->clock };
    int ret;

    /*
     * KVM_SET_CLOCK acts on one flag, KVM_CLOCK_REALTIME: with it, KVM adds
     * the host real time elapsed since the source read the clock, so guest
     * time does not lose the downtime. Kernels before 5.16 refuse any flag;
     * KVM_CAP_ADJUST_CLOCK lists the ones this kernel knows. The others
     * GET_CLOCK reports are informational and not passed back.
     */
    if ((in->flags & KVM_CLOCK_REALTIME) && (kvm_state->clock_caps & KVM_CLOCK_REALTIME)) {
        d.flags = KVM_CLOCK_REALTIME;
        d.realtime = in->realtime;
    }
    ret = kvm_vm_ioctl(kvm_state, KVM_SET_CLOCK, &d);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "KVM_SET_CLOCK failed");
        return false;
    }
    return true;
}

static bool kvmclock_realtime_needed(void *opaque)
{
    return ((struct kvm_clock_data *)opaque)->flags & KVM_CLOCK_REALTIME;
}

static bool kvmclock_pre_load(void *opaque, Error **errp)
{
    memset(opaque, 0, sizeof(struct kvm_clock_data));
    return true;
}

static const VMStateDescription vmstate_kvmclock_realtime = {
    .name = "kvmclock/realtime",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = kvmclock_realtime_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT_SIZED(realtime, struct kvm_clock_data, VMS_UINT64),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_kvmclock = {
    .name = "kvmclock",
    .size = sizeof(struct kvm_clock_data),
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_save = kvmclock_pre_save,
    .pre_load = kvmclock_pre_load,
    .post_load = kvmclock_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT_SIZED(clock, struct kvm_clock_data, VMS_UINT64),
        VMSTATE_UINT32(flags, struct kvm_clock_data),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription *const[]) {
        &vmstate_kvmclock_realtime,
        NULL
    },
};

void kvm_ioapic_state_register(void)
{
    kvm_ioapic_state.chip.chip_id = KVM_IRQCHIP_IOAPIC;
    vmstate_register("kvm-ioapic", 0, &vmstate_kvm_ioapic, &kvm_ioapic_state.chip.chip.ioapic);
}

void kvm_clock_state_register(void)
{
    vmstate_register("kvmclock", 0, &vmstate_kvmclock, &kvm_clock);
}

void kvm_pic_pit_state_register(void)
{
    kvm_pic_state[0].chip.chip_id = KVM_IRQCHIP_PIC_MASTER;
    kvm_pic_state[1].chip.chip_id = KVM_IRQCHIP_PIC_SLAVE;
    vmstate_register("kvm-i8259", 0, &vmstate_kvm_i8259, &kvm_pic_state[0].chip.chip.pic);
    vmstate_register("kvm-i8259", 1, &vmstate_kvm_i8259, &kvm_pic_state[1].chip.chip.pic);
    vmstate_register("kvm-pit", 0, &vmstate_kvm_pit, &kvm_pit);
}

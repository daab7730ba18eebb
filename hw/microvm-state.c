/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMU's microvm pieces that ours carries but does not emulate: the ROM
 * blocks and the sections "timer", "fw_cfg" and "kvm-tpr-opt" (the second
 * IOAPIC, "ioapic" 1, and "acpi-ged" are emulated: hw/microvm-ioapic2.c,
 * hw/acpi-ged.c), in
 * the layouts QEMU 7.2 and 10.0 send (learned from their
 * streams' vmdescs: docs/devel/qemu-vmdesc/). See include/hw/microvm-state.h.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/microvm-state.h"
#include "migration/vmstate.h"
#include "system/memory.h"
#include "system/runstate.h"

#define ROM_BLOB_SIZE   4096        /* each fw_cfg ACPI blob's block, as QEMU sizes it here */
#define BIOS_SIZE       (64 * KiB)  /* QEMU's microvm firmware block */

/* "timer" v2: QEMU's clocks at the stop; we keep the VM clock (cpu_clock_offset). */
typedef struct MicrovmTimer {
    int64_t cpu_ticks_offset;       /* QEMU's TCG tick count: carried, unused under KVM */
    int64_t cpu_clock_offset;       /* the VM clock at the stop (save/load staging) */
} MicrovmTimer;

/* "fw_cfg" v2: the guest's position in QEMU's firmware config device, and the ACPI blobs' sizes. */
typedef struct MicrovmFwCfg {
    MachineState *ms;               /* immutable */
    uint16_t cur_entry;
    uint32_t cur_offset;
    uint64_t dma_addr;
    uint64_t table_mr_size, linker_mr_size, rsdp_mr_size;
} MicrovmFwCfg;

/* "kvm-tpr-opt" v1: QEMU's TPR-access patching for old Windows; never active here. */
typedef struct TprPatchSet {
    uint32_t set_tpr, set_tpr_eax, get_tpr[8], get_tpr_stack;
} TprPatchSet;

typedef struct TprRomState {
    uint32_t vaddr, fixup_start, fixup_end, vapic_vaddr, vapic_size, vcpu_shift, real_tpr_addr;
    TprPatchSet up, mp;
} TprRomState;

typedef struct MicrovmTpr {
    TprRomState rom_state;
    uint32_t state, real_tpr_addr, rom_state_vaddr, vapic_paddr, rom_state_paddr;
} MicrovmTpr;

struct MicrovmQemuState {
    MicrovmTimer timer;
    MicrovmFwCfg fw_cfg;
    MicrovmTpr tpr;
};

static MicrovmQemuState *mqs(MachineState *ms)
{
    if (!ms->qemu_state) {
        MicrovmQemuState *s = g_new0(MicrovmQemuState, 1);

        s->fw_cfg.ms = ms;
        /* What a fresh QEMU microvm reports: the blobs' blocks whole. */
        s->fw_cfg.table_mr_size = s->fw_cfg.linker_mr_size = s->fw_cfg.rsdp_mr_size =
            ROM_BLOB_SIZE;
        ms->qemu_state = s;
    }
    return ms->qemu_state;
}

bool microvm_acpi(const MachineState *ms)
{
    return ms->acpi != ON_OFF_AUTO_OFF;
}

bool microvm_ioapic2(const MachineState *ms)
{
    /* QEMU 7.2 and 10.0 make it only with ACPI: acpi=off,ioapic2=on has one IOAPIC. */
    return microvm_acpi(ms) && ms->ioapic2 != ON_OFF_AUTO_OFF;
}

bool microvm_qemu_ram_init(MachineState *ms, bool map_isa_bios, Error **errp)
{
    /*
     * QEMU's order: the ACPI tables' blob, the firmware, then the other two
     * blobs. QEMU keeps room for the blobs to grow: the tables' block goes
     * after a 1 MiB vga.vram and before a 2 MiB one in its streams (so 2 MiB
     * here, which orders them alike: memory.h), and the loader's after
     * pc.bios (64 KiB at most; the order needs no more).
     */
    static const struct {
        const char *id;
        uint64_t size, capacity;
        bool acpi;
    } roms[] = {
        { "/rom@etc/acpi/tables", ROM_BLOB_SIZE, 2 * MiB, true },
        { "pc.bios", BIOS_SIZE, BIOS_SIZE, false },
        { "/rom@etc/table-loader", ROM_BLOB_SIZE, BIOS_SIZE, true },
        { "/rom@etc/acpi/rsdp", ROM_BLOB_SIZE, ROM_BLOB_SIZE, true },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(roms); i++) {
        RAMBackendOpts o = { .id = roms[i].id, .kind = RAM_BACKEND_ANON, .aux = true,
                             .size = roms[i].size,
                             .capacity = roms[i].capacity };
        RAMBlock *rb;

        /*
         * Zero-filled: our guests boot by PVH and never read them; a stream
         * fills them, and sends them on, for QEMU's firmware.
         */
        if (roms[i].acpi && !microvm_acpi(ms)) {
            continue;
        }
        rb = ram_block_create(&o, errp);
        if (!rb) {
            return false;
        }
        /* QEMU's firmware region itself sits below 4 GiB (x-ignore-shared sends it). */
        if (!roms[i].acpi) {
            rb->mr_addr = 4 * GiB - BIOS_SIZE;
        }
        /*
         * The firmware shows at 0xf0000, over RAM, as in QEMU (where it is
         * read-only; a guest's writes stick here). The blobs are fw_cfg
         * files, never mapped. QEMU also shows the firmware below 4 GiB,
         * for the reset vector, which a PVH boot never uses.
         */
        if (!roms[i].acpi && map_isa_bios &&
            !guest_ram_map(rb, 0, MICROVM_ISA_BIOS_BASE, BIOS_SIZE, errp)) {
            return false;
        }
    }
    return true;
}

/* ---- timer ---- */

static bool timer_pre_save(void *opaque, Error **errp)
{
    MicrovmTimer *t = opaque;

    t->cpu_clock_offset = vm_clock_ns();
    return true;
}

static bool timer_post_load(void *opaque, int version_id, Error **errp)
{
    MicrovmTimer *t = opaque;

    if (t->cpu_clock_offset < 0) {
        error_setg(errp, "invalid VM clock %" PRId64, t->cpu_clock_offset);
        return false;
    }
    if (runstate_is_running()) {
        error_setg(errp, "the VM clock cannot be loaded while the VM runs");
        return false;
    }
    vm_clock_set_ns(t->cpu_clock_offset);
    return true;
}

static const VMStateDescription vmstate_timer = {
    .name = "timer",
    .size = sizeof(MicrovmTimer),
    .version_id = 2,
    .minimum_version_id = 2,
    .pre_save = timer_pre_save,
    .post_load = timer_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_INT64(cpu_ticks_offset, MicrovmTimer),
        VMSTATE_UNUSED(8),
        VMSTATE_INT64(cpu_clock_offset, MicrovmTimer),
        VMSTATE_END_OF_LIST()
    },
};

/* ---- fw_cfg ---- */

static bool fw_cfg_acpi_needed(void *opaque)
{
    return microvm_acpi(((MicrovmFwCfg *)opaque)->ms);
}

static bool fw_cfg_acpi_post_load(void *opaque, int version_id, Error **errp)
{
    MicrovmFwCfg *f = opaque;

    if (!microvm_acpi(f->ms)) {
        error_setg(errp, "the stream has ACPI table sizes, but this machine has acpi=off");
        return false;
    }
    /* QEMU resizes the blobs' blocks to these: they must fit the blocks the RAM section named. */
    if (f->table_mr_size > ROM_BLOB_SIZE || f->linker_mr_size > ROM_BLOB_SIZE ||
        f->rsdp_mr_size > ROM_BLOB_SIZE) {
        error_setg(errp, "ACPI blob sizes %" PRIu64 "/%" PRIu64 "/%" PRIu64
                   " exceed the %d-byte ROM blocks", f->table_mr_size, f->linker_mr_size,
                   f->rsdp_mr_size, ROM_BLOB_SIZE);
        return false;
    }
    return true;
}

static const VMStateDescription vmstate_fw_cfg_dma = {
    .name = "fw_cfg/dma",
    .version_id = 0,
    .minimum_version_id = 0,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(dma_addr, MicrovmFwCfg),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_fw_cfg_acpi_mr = {
    .name = "fw_cfg/acpi_mr",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = fw_cfg_acpi_needed,
    .post_load = fw_cfg_acpi_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(table_mr_size, MicrovmFwCfg),
        VMSTATE_UINT64(linker_mr_size, MicrovmFwCfg),
        VMSTATE_UINT64(rsdp_mr_size, MicrovmFwCfg),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_fw_cfg = {
    .name = "fw_cfg",
    .size = sizeof(MicrovmFwCfg),
    .version_id = 2,
    .minimum_version_id = 2,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT16(cur_entry, MicrovmFwCfg),
        /* QEMU's vmdesc names it so (the field's second version). */
        { .name = "cur_offset[1]", .type = VMS_UINT32, .size = sizeof(uint32_t),
          .offset = offsetof(MicrovmFwCfg, cur_offset) },
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription *const[]) {
        &vmstate_fw_cfg_dma,
        &vmstate_fw_cfg_acpi_mr,
        NULL
    },
};

/* ---- kvm-tpr-opt ---- */

static const VMStateDescription vmstate_tpr_patch = {
    .name = "kvmvapic-handlers",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(set_tpr, TprPatchSet),
        VMSTATE_UINT32(set_tpr_eax, TprPatchSet),
        VMSTATE_UINT32_ARRAY(get_tpr, TprPatchSet, 8),
        VMSTATE_UINT32(get_tpr_stack, TprPatchSet),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_tpr_rom = {
    .name = "kvmvapic-guest-rom",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UNUSED(8),
        VMSTATE_UINT32(vaddr, TprRomState),
        VMSTATE_UINT32(fixup_start, TprRomState),
        VMSTATE_UINT32(fixup_end, TprRomState),
        VMSTATE_UINT32(vapic_vaddr, TprRomState),
        VMSTATE_UINT32(vapic_size, TprRomState),
        VMSTATE_UINT32(vcpu_shift, TprRomState),
        VMSTATE_UINT32(real_tpr_addr, TprRomState),
        VMSTATE_STRUCT(up, TprRomState, vmstate_tpr_patch, TprPatchSet),
        VMSTATE_STRUCT(mp, TprRomState, vmstate_tpr_patch, TprPatchSet),
        VMSTATE_END_OF_LIST()
    },
};

static bool tpr_post_load(void *opaque, int version_id, Error **errp)
{
    MicrovmTpr *t = opaque;

    /* Only QEMU's option ROM for 32-bit Windows turns it on; we have neither. */
    if (t->state) {
        error_setg(errp, "the guest uses QEMU's TPR access optimization (state %u), which "
                   "this VMM does not have", t->state);
        return false;
    }
    return true;
}

static const VMStateDescription vmstate_tpr = {
    .name = "kvm-tpr-opt",
    .size = sizeof(MicrovmTpr),
    .version_id = 1,
    .minimum_version_id = 1,
    .post_load = tpr_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT(rom_state, MicrovmTpr, vmstate_tpr_rom, TprRomState),
        VMSTATE_UINT32(state, MicrovmTpr),
        VMSTATE_UINT32(real_tpr_addr, MicrovmTpr),
        VMSTATE_UINT32(rom_state_vaddr, MicrovmTpr),
        VMSTATE_UINT32(vapic_paddr, MicrovmTpr),
        VMSTATE_UINT32(rom_state_paddr, MicrovmTpr),
        VMSTATE_END_OF_LIST()
    },
};

/* ---- registration ---- */

void microvm_qemu_register_head(MachineState *ms)
{
    MicrovmQemuState *s = mqs(ms);

    vmstate_register("timer", 0, &vmstate_timer, &s->timer);
    vmstate_register("fw_cfg", 0, &vmstate_fw_cfg, &s->fw_cfg);
}

void microvm_qemu_register_tpr(MachineState *ms)
{
    vmstate_register("kvm-tpr-opt", 0, &vmstate_tpr, &mqs(ms)->tpr);
}

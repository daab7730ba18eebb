/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The microvm machine: RAM below 3 GiB plus the rest at 4 GiB, in-kernel
 * irqchip (PIC, IOAPIC, LAPIC) and PIT, with ACPI QEMU's second IOAPIC in
 * userspace and its generic event device (the power button, the sleep and
 * reset registers: hw/acpi-ged.c), COM1, optional isa-debug-exit, and PVH
 * boot. Guest-physical layout of the boot data:
 *
 *   0x6000   struct hvm_start_info
 *   0x6100   memory map (up to 32 entries)
 *   0x6800   module list (initrd)
 *   0x20000  kernel command line (< 64 KiB)
 *   1 MiB+   the kernel's PT_LOAD segments
 *   top of low RAM: initrd
 *
 * virtio-mmio transports exist only for the devices given with -device,
 * in QEMU's microvm slots (0xfeb00000 + 512 * slot), the first device in
 * the last slot and on downwards, as QEMU 7.2 and 10.0 place them (so a
 * driver bound there finds its device at the same address and interrupt
 * after a move). Without the second IOAPIC there are 8 slots on KVM's
 * IOAPIC, GSI 5 + slot with acpi=off and 16 + slot with ACPI; with it
 * (ACPI and ioapic2, QEMU's default) 24 on its pins, GSI 24 + slot
 * (hw/microvm-ioapic2.c). Only with acpi=off
 * are they named to the kernel on its command line, in creation order, as
 * QEMU does; with ACPI QEMU describes them in its DSDT, which our PVH boot
 * does not build (docs/devel/qemu-interop.md).
 * -device isa-vga puts its VRAM at 0xe0000000 (hw/display/vga-isa.c),
 * which the memory map leaves out.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/cutils.h"
#include "hw/acpi-ged.h"
#include "hw/boards.h"
#include "hw/microvm-ioapic2.h"
#include "hw/microvm-state.h"
#include "hw/pvh.h"
#include "hw/serial.h"
#include "hw/virtio/virtio-mmio.h"
#include "hw/virtio/virtio-net.h"
#include "system/cpus.h"
#include "system/ioport.h"
#include "system/kvm.h"
#include "system/memory.h"
#include "system/runstate.h"

#define START_INFO_ADDR 0x6000
#define MEMMAP_ADDR     0x6100
#define MEMMAP_MAX      32
#define MODLIST_ADDR    0x6800
#define CMDLINE_ADDR    0x20000
#define CMDLINE_MAX     0x10000
#define COM1_BASE       0x3f8
#define COM1_IRQ        4

MachineState *current_machine;

/* Irqchip and PIT state right after creation, restored on system_reset. */
static struct kvm_irqchip irqchip_reset[3];
static struct kvm_pit_state2 pit_reset;

static bool microvm_guest_write(void *opaque, uint64_t gpa, const void *data, uint64_t len)
{
    if (!len) {
        return true;
    }
    if (data) {
        return guest_phys_rw(gpa, (void *)data, len, true);
    }
    /* Zero-fill (bss): write a page of zeroes at a time. */
    {
        static const uint8_t zero[4096];
        for (uint64_t done = 0; done < len;) {
            uint64_t n = MIN(len - done, sizeof(zero));
            if (!guest_phys_rw(gpa + done, (void *)zero, n, true)) {
                return false;
            }
            done += n;
        }
    }
    return true;
}

uint64_t microvm_lowmem_size(const MachineState *ms)
{
    uint64_t limit = MICROVM_LOWMEM_MAX;

    /* Like QEMU's x86 machines, max-ram-below-4g may only shrink the low range. */
    if (ms->max_ram_below_4g) {
        limit = MIN(limit, ms->max_ram_below_4g);
    }
    return MIN(ms->ram_size, limit);
}

static bool microvm_ram_init(MachineState *ms, Error **errp)
{
    uint64_t low, high;

    if (ms->memory_backend) {
        ms->ram = ram_block_find(ms->memory_backend);
        if (!ms->ram) {
            error_setg(errp, "Memory backend '%s' not found", ms->memory_backend);
            return false;
        }
        if (ms->ram_size_given && ms->ram_size != ms->ram->used_length) {
            error_setg(errp, "Memory size (-m %" PRIu64 ") and memory backend size (%" PRIu64
                       ") of '%s' differ", ms->ram_size, ms->ram->used_length,
                       ms->memory_backend);
            return false;
        }
        ms->ram_size = ms->ram->used_length;
    } else {
        RAMBackendOpts o = { .id = "microvm.ram", .kind = RAM_BACKEND_ANON, .size = ms->ram_size };
        ms->ram = ram_block_create(&o, errp);
        if (!ms->ram) {
            return false;
        }
    }
    low = microvm_lowmem_size(ms);
    high = ms->ram_size - low;
    if (low > 1 * MiB) {
        /*
         * As in QEMU's microvm, the firmware's last 64 KiB sit over RAM at
         * 0xf0000 (hw/microvm-state.c maps pc.bios there): the RAM below
         * stays in the block, hidden from the guest.
         */
        if (!guest_ram_map(ms->ram, 0, 0, MICROVM_ISA_BIOS_BASE, errp) ||
            !guest_ram_map(ms->ram, 1 * MiB, 1 * MiB, low - 1 * MiB, errp)) {
            return false;
        }
    } else if (!guest_ram_map(ms->ram, 0, 0, low, errp)) {
        return false;
    }
    if (high && !guest_ram_map(ms->ram, low, MICROVM_HIGHMEM_BASE, high, errp)) {
        return false;
    }
    return true;
}

static bool microvm_irqchip_init(KVMState *s, Error **errp)
{
    struct kvm_pit_config pit = { .flags = 0 };
    int ret;

    ret = kvm_vm_ioctl(s, KVM_CREATE_IRQCHIP, NULL);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "Create kernel irqchip failed");
        return false;
    }
    ret = kvm_vm_ioctl(s, KVM_CREATE_PIT2, &pit);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "Create kernel PIT state failed");
        return false;
    }
    for (int i = 0; i < 3; i++) {
        irqchip_reset[i].chip_id = i;
        kvm_vm_ioctl(s, KVM_GET_IRQCHIP, &irqchip_reset[i]);
    }
    kvm_vm_ioctl(s, KVM_GET_PIT2, &pit_reset);
    return true;
}

static uint32_t microvm_build_memmap(const RAMBlock *current_machine_ram,
                                     struct hvm_memmap_table_entry *map)
{
    size_t n;
    const GuestRAMRange *r = guest_ram_ranges(&n);
    uint32_t cnt = 0;

    for (size_t i = 0; i < n && cnt + 3 <= MEMMAP_MAX; i++) {
        if (r[i].rb != current_machine_ram) {
            continue;           /* device memory (vga.vram) is no RAM for the guest to use */
        }
        if (r[i].gpa == 0 && r[i].size > 0xa0000) {
            /* Keep the legacy VGA/BIOS window out of the RAM the guest may use. */
            map[cnt++] = (struct hvm_memmap_table_entry) { 0, 0xa0000, E820_RAM, 0 };
            map[cnt++] = (struct hvm_memmap_table_entry) { 0xa0000, 0x60000, E820_RESERVED, 0 };
        } else {
            map[cnt++] = (struct hvm_memmap_table_entry) { r[i].gpa, r[i].size, E820_RAM, 0 };
        }
    }
    return cnt;
}

/*
 * The command line the guest gets: -append, then, with acpi=off, one
 * " virtio_mmio.device=512@0xADDR:IRQ" per transport (Linux's syntax, and
 * QEMU's exact text, so guests see the same line under both).
 */
static char *microvm_kernel_cmdline(const MachineState *ms)
{
    GString *cmdline = g_string_new(ms->kernel_cmdline ? ms->kernel_cmdline : "");

    for (guint i = 0; !microvm_acpi(ms) && ms->virtio_mmio && i < ms->virtio_mmio->len; i++) {
        VirtIOMMIOState *s = g_ptr_array_index(ms->virtio_mmio, i);

        g_string_append_printf(cmdline, " virtio_mmio.device=%d@0x%" HWADDR_PRIx ":%d",
                               VIRTIO_MMIO_WINDOW_SIZE, virtio_mmio_base(s),
                               virtio_mmio_gsi(s));
    }
    return g_string_free(cmdline, FALSE);
}

/* Copies the kernel (and initrd) into RAM and writes hvm_start_info. */
static bool microvm_load_boot_data(MachineState *ms, uint32_t *entry, Error **errp)
{
    struct hvm_start_info si = { .magic = XEN_HVM_START_MAGIC_VALUE, .version = 1 };
    struct hvm_memmap_table_entry map[MEMMAP_MAX];
    PvhImageInfo info;
    g_autofree char *cmdline = microvm_kernel_cmdline(ms);
    size_t cmdlen = strlen(cmdline) + 1;

    if (!pvh_elf_load(ms->kernel_image, ms->kernel_size, microvm_guest_write, NULL, &info, errp)) {
        error_prepend(errp, "could not load kernel '%s': ", ms->kernel_filename);
        return false;
    }
    if (info.low < CMDLINE_ADDR + CMDLINE_MAX) {
        error_setg(errp, "kernel '%s' loads at 0x%" PRIx64 ", below 0x%x where boot data lives",
                   ms->kernel_filename, info.low, CMDLINE_ADDR + CMDLINE_MAX);
        return false;
    }
    if (cmdlen > CMDLINE_MAX) {
        error_setg(errp, "kernel command line too long (%zu bytes, at most %d)", cmdlen - 1,
                   CMDLINE_MAX - 1);
        return false;
    }
    if (ms->initrd_image) {
        struct hvm_modlist_entry mod = { .size = ms->initrd_size };
        uint64_t low_end = microvm_lowmem_size(ms);

        if (ms->initrd_size > low_end || low_end - ms->initrd_size < info.high) {
            error_setg(errp, "initrd '%s' does not fit in guest RAM", ms->initrd_filename);
            return false;
        }
        mod.paddr = QEMU_ALIGN_DOWN(low_end - ms->initrd_size, TARGET_PAGE_SIZE);
        if (!microvm_guest_write(NULL, mod.paddr, ms->initrd_image, ms->initrd_size) ||
            !microvm_guest_write(NULL, MODLIST_ADDR, &mod, sizeof(mod))) {
            error_setg(errp, "initrd '%s' does not fit in guest RAM", ms->initrd_filename);
            return false;
        }
        si.nr_modules = 1;
        si.modlist_paddr = MODLIST_ADDR;
    }
    si.cmdline_paddr = CMDLINE_ADDR;
    si.memmap_paddr = MEMMAP_ADDR;
    si.memmap_entries = microvm_build_memmap(ms->ram, map);
    if (!microvm_guest_write(NULL, CMDLINE_ADDR, cmdline, cmdlen) ||
        !microvm_guest_write(NULL, MEMMAP_ADDR, map, si.memmap_entries * sizeof(map[0])) ||
        !microvm_guest_write(NULL, START_INFO_ADDR, &si, sizeof(si))) {
        error_setg(errp, "guest RAM is too small for the boot data");
        return false;
    }
    *entry = info.entry;
    return true;
}

static bool microvm_read_file(const char *path, const char *what, uint8_t **data, size_t *len,
                              Error **errp)
{
    g_autoptr(GError) gerr = NULL;
    gchar *contents;
    gsize size;

    if (!g_file_get_contents(path, &contents, &size, &gerr)) {
        error_setg(errp, "could not open %s file '%s': %s", what, path,
                   g_strerror(gerr->code == G_FILE_ERROR_NOENT ? ENOENT :
                              gerr->code == G_FILE_ERROR_ACCES ? EACCES :
                              gerr->code == G_FILE_ERROR_ISDIR ? EISDIR : EIO));
        return false;
    }
    *data = (uint8_t *)contents;
    *len = size;
    return true;
}

/*
 * One transport per -device virtio-*-device, in command-line order, on
 * @ioapic2's pins if the machine has it (else on KVM's IOAPIC).
 */
static bool microvm_virtio_init(MachineState *ms, MicrovmIoapic2 *ioapic2, Error **errp)
{
    guint n = ms->virtio_devices ? ms->virtio_devices->len : 0;
    guint slots = ioapic2 ? MICROVM_VIRTIO_SLOTS_IOAPIC2 : MICROVM_VIRTIO_SLOTS;
    int gsi_base = microvm_acpi(ms) ? MICROVM_VIRTIO_IRQ_BASE_ACPI : MICROVM_VIRTIO_IRQ_BASE;

    if (n > slots) {
        error_setg(errp, "%u virtio devices given, but microvm has %u virtio-mmio slots", n,
                   slots);
        return false;
    }
    ms->virtio_mmio = g_ptr_array_new();
    for (guint i = 0; i < n; i++) {
        /* QEMU's order (seen in the command line and the DSDT its guests get): top slot down. */
        guint slot = slots - 1 - i;
        VirtIODevice *vdev = g_ptr_array_index(ms->virtio_devices, i);
        hwaddr base = MICROVM_VIRTIO_MMIO_BASE + slot * MICROVM_VIRTIO_MMIO_STRIDE;
        VirtIOMMIOState *s =
            ioapic2 ? virtio_mmio_create_on_line(vdev, base, MICROVM_IOAPIC2_GSI_BASE + slot,
                                                 microvm_ioapic2_set_irq, ioapic2, slot, errp)
                    : virtio_mmio_create(vdev, base, gsi_base + (int)slot, errp);
        if (!s) {
            return false;
        }
        g_ptr_array_add(ms->virtio_mmio, s);
    }
    return true;
}

/*
 * The device sections in the order QEMU's microvm sends them (what each
 * QEMU sends is in docs/devel/qemu-interop.md): a QEMU destination does not
 * care, but a stream in QEMU's order is one a reader can compare byte for
 * byte. The -device ones (virtio-net, isa-vga) follow in command-line
 * order, then globalstate (migration_init).
 */
static void microvm_register_sections(MachineState *ms, MicrovmIoapic2 *ioapic2, AcpiGed *ged,
                                      SerialState *serial, ISAVGAState *vga)
{
    CPUState *cpu;
    guint i;

    microvm_qemu_register_head(ms);
    CPU_FOREACH_INDEX(i, cpu) {
        kvm_vcpu_state_register(cpu);
        if (i == 0) {
            microvm_qemu_register_tpr(ms);
        }
        kvm_apic_state_register(cpu);
    }
    kvm_ioapic_state_register();
    if (ioapic2) {
        microvm_ioapic2_register(ioapic2);
    }
    kvm_clock_state_register();
    if (ged) {
        acpi_ged_register(ged);
    }
    kvm_pic_pit_state_register();
    if (serial) {
        serial_state_register(serial);
    }
    for (i = 0; i <= ms->virtio_mmio->len; i++) {
        if (vga && i == MIN(ms->vga.virtio_before, ms->virtio_mmio->len)) {
            isa_vga_state_register(vga);
        }
        if (i < ms->virtio_mmio->len) {
            VirtIOMMIOState *mmio = g_ptr_array_index(ms->virtio_mmio, i);
            VirtIODevice *vdev = g_ptr_array_index(ms->virtio_devices, i);

            /* Its section's name holds the slot's address, as QEMU's does. */
            if (vdev->ops->register_mmio_state) {
                vdev->ops->register_mmio_state(mmio);
            }
        }
    }
}

static void microvm_reset(void *opaque)
{
    MachineState *ms = opaque;
    g_autoptr(Error) err = NULL;
    uint32_t entry;

    for (int i = 0; i < 3; i++) {
        kvm_vm_ioctl(kvm_state, KVM_SET_IRQCHIP, &irqchip_reset[i]);
    }
    kvm_vm_ioctl(kvm_state, KVM_SET_PIT2, &pit_reset);
    kvm_cpus_reset();
    if (!microvm_load_boot_data(ms, &entry, &err) ||
        !kvm_cpu_set_pvh_entry(g_ptr_array_index(vcpus, 0), entry, START_INFO_ADDR, &err)) {
        error_report("system_reset: %s", error_get_pretty(err));
    }
}

bool microvm_machine_init(MachineState *ms, Error **errp)
{
    uint32_t entry;
    PvhImageInfo info;
    SerialState *serial = NULL;
    ISAVGAState *vga = NULL;
    MicrovmIoapic2 *ioapic2 = NULL;
    AcpiGed *ged = NULL;

    if (!ms->kernel_filename) {
        error_setg(errp, "no kernel given: microvm boots a PVH ELF given with -kernel");
        return false;
    }
    if (!microvm_read_file(ms->kernel_filename, "kernel", &ms->kernel_image, &ms->kernel_size, errp)) {
        return false;
    }
    /* Reject a bad kernel before we allocate gigabytes for it. */
    if (!pvh_elf_probe(ms->kernel_image, ms->kernel_size, &info, errp)) {
        error_prepend(errp, "could not load kernel '%s': ", ms->kernel_filename);
        return false;
    }
    if (ms->initrd_filename &&
        !microvm_read_file(ms->initrd_filename, "initrd", &ms->initrd_image, &ms->initrd_size, errp)) {
        return false;
    }
    if (!microvm_ram_init(ms, errp) ||
        !microvm_qemu_ram_init(ms, microvm_lowmem_size(ms) > 1 * MiB, errp)) {
        return false;
    }
    /* Before the KVM slots: the VRAM is guest RAM with a slot of its own. */
    if (ms->vga.present && !(vga = isa_vga_init(&ms->vga, errp))) {
        return false;
    }
    if (info.high > microvm_lowmem_size(ms)) {
        g_autofree char *sz = size_to_str(ms->ram_size);
        error_setg(errp, "kernel '%s' needs RAM up to 0x%" PRIx64 ", but -m is only %s",
                   ms->kernel_filename, info.high, sz);
        return false;
    }
    if (!kvm_memslots_init(kvm_state, errp) ||
        !microvm_irqchip_init(kvm_state, errp) ||
        !kvm_vcpus_create(kvm_state, ms->smp_cpus, errp)) {
        return false;
    }
    pio_table = pio_table ?: io_range_table_new();
    mmio_table = mmio_table ?: io_range_table_new();
    /* As QEMU's microvm: a UART only for a -serial backend (none with -nodefaults alone). */
    if (ms->serial) {
        serial = serial_isa_init(COM1_BASE, COM1_IRQ, ms->serial, errp);
        if (!serial) {
            return false;
        }
    }
    if (ms->debug_exit.present &&
        !debug_exit_init(ms->debug_exit.iobase, ms->debug_exit.iosize, errp)) {
        return false;
    }
    if (microvm_ioapic2(ms) && !(ioapic2 = microvm_ioapic2_create(errp))) {
        return false;
    }
    /* As in QEMU: only with ACPI (acpi=off leaves no power button, system_powerdown a no-op). */
    if (microvm_acpi(ms) && !(ged = acpi_ged_create(errp))) {
        return false;
    }
    if (!microvm_virtio_init(ms, ioapic2, errp)) {
        return false;
    }
    microvm_register_sections(ms, ioapic2, ged, serial, vga);
    /*
     * A guest that arrives by migration in memory it shares with its source
     * (a file mapped share=on, which x-ignore-shared leaves out of the
     * stream, or a live update's memory, handed over by fd) is already in
     * that memory: the kernel and boot data written there would overwrite
     * it. Elsewhere the stream overwrites them.
     */
    entry = info.entry;
    if (!(ms->incoming && (ram_block_shared_by_name(ms->ram) || ms->ram->preserved)) &&
        !microvm_load_boot_data(ms, &entry, errp)) {
        return false;
    }
    if (!kvm_cpu_set_pvh_entry(g_ptr_array_index(vcpus, 0), entry, START_INFO_ADDR, errp)) {
        return false;
    }
    qemu_register_reset(microvm_reset, ms);
    current_machine = ms;
    return true;
}

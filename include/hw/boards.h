/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The machine: what the command line asked for, and what init built from it. */
#ifndef HW_BOARDS_H
#define HW_BOARDS_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include "hw/display/vga.h"

#define MACHINE_TYPE_NAME "microvm"
/* RAM above this goes to a second range at 4 GiB (the PCI/APIC hole). */
#define MICROVM_LOWMEM_MAX (3 * GiB)
#define MICROVM_HIGHMEM_BASE (4 * GiB)
/* Where QEMU's microvm shows the firmware's last 64 KiB below 1 MiB. */
#define MICROVM_ISA_BIOS_BASE 0xf0000
/*
 * virtio-mmio transports, as QEMU's microvm places them: slot i at
 * 0xfeb00000 + i * 512, the first device in the last slot (hw/microvm.c);
 * eight slots on GSI 5 + i with acpi=off, on GSI 16 + i with ACPI but
 * ioapic2=off (QEMU's DSDT), 24 on the second IOAPIC's pins (GSI 24 + i)
 * with both.
 */
#define MICROVM_VIRTIO_MMIO_BASE   0xfeb00000ULL
#define MICROVM_VIRTIO_MMIO_STRIDE 512
#define MICROVM_VIRTIO_IRQ_BASE    5
#define MICROVM_VIRTIO_IRQ_BASE_ACPI 16
#define MICROVM_VIRTIO_SLOTS       8
#define MICROVM_VIRTIO_SLOTS_IOAPIC2 24

/* QEMU's OnOffAuto property values; zero is auto, so a zeroed config means defaults. */
typedef enum OnOffAuto {
    ON_OFF_AUTO_AUTO = 0,
    ON_OFF_AUTO_ON,
    ON_OFF_AUTO_OFF,
} OnOffAuto;

typedef struct MicrovmQemuState MicrovmQemuState;

typedef struct DebugExitConfig {
    bool present;
    uint64_t iobase;
    uint64_t iosize;
} DebugExitConfig;

struct MachineState {
    /* From the command line. */
    uint64_t ram_size;
    bool ram_size_given;
    int smp_cpus;
    char *kernel_filename;
    char *kernel_cmdline;
    char *initrd_filename;
    char *memory_backend;       /* -machine memory-backend=ID */
    uint64_t max_ram_below_4g;  /* -machine max-ram-below-4g=SIZE, 0: default */
    /* -machine acpi= and ioapic2= (auto: on; ioapic2 only with acpi, as in QEMU). */
    OnOffAuto acpi, ioapic2;
    Chardev *serial;            /* COM1; NULL: no UART (-nodefaults, -serial none) */
    DebugExitConfig debug_exit;
    ISAVGAConf vga;             /* -device isa-vga / -vga std */
    /* The drives (-drive, -blockdev): made before any device, freed at exit. */
    struct BlockLayer *block;
    /* nbd-server-start's server (nbd/), or NULL (BQL). */
    struct NbdServer *nbd;
    /* VirtIODevice *, from -device, in command-line order (may be NULL). */
    GPtrArray *virtio_devices;
    bool incoming;              /* -incoming given: the guest's memory comes from elsewhere */

    /* Built by machine init. */
    RAMBlock *ram;
    uint8_t *kernel_image;      /* kept for system_reset */
    size_t kernel_size;
    uint8_t *initrd_image;
    size_t initrd_size;
    GPtrArray *virtio_mmio;     /* VirtIOMMIOState *, slot order */
    /* What QEMU's microvm has and ours only carries (hw/microvm-state.c). */
    MicrovmQemuState *qemu_state;
};

extern MachineState *current_machine;

/* Whether the machine has QEMU's ACPI pieces (acpi-ged, the ACPI ROM blocks) and a second IOAPIC. */
bool microvm_acpi(const MachineState *ms);
bool microvm_ioapic2(const MachineState *ms);

/* Builds RAM, KVM (irqchip, PIT, vCPUs), devices, and loads the kernel. */
bool microvm_machine_init(MachineState *ms, Error **errp);
/* How much of RAM sits below 4 GiB; the rest starts at MICROVM_HIGHMEM_BASE. */
uint64_t microvm_lowmem_size(const MachineState *ms);
bool debug_exit_init(uint64_t iobase, uint64_t iosize, Error **errp);

#endif

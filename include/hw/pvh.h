/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * PVH boot: load an ELF kernel that carries a XEN_ELFNOTE_PHYS32_ENTRY note
 * and describe the machine to it with struct hvm_start_info. The image is
 * untrusted: every header, offset and size is checked before use.
 */
#ifndef HW_PVH_H
#define HW_PVH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XEN_HVM_START_MAGIC_VALUE 0x336ec578
#define XEN_ELFNOTE_PHYS32_ENTRY 18
#define E820_RAM 1
#define E820_RESERVED 2

struct hvm_start_info {
    uint32_t magic;
    uint32_t version;
    uint32_t flags;
    uint32_t nr_modules;
    uint64_t modlist_paddr;
    uint64_t cmdline_paddr;
    uint64_t rsdp_paddr;
    uint64_t memmap_paddr;
    uint32_t memmap_entries;
    uint32_t reserved;
};

struct hvm_modlist_entry {
    uint64_t paddr;
    uint64_t size;
    uint64_t cmdline_paddr;
    uint64_t reserved;
};

struct hvm_memmap_table_entry {
    uint64_t addr;
    uint64_t size;
    uint32_t type;
    uint32_t reserved;
};

/* Copies @len bytes (or zeroes when @data is NULL) to guest-physical @gpa. */
typedef bool (*PvhWriteFn)(void *opaque, uint64_t gpa, const void *data, uint64_t len);

typedef struct PvhImageInfo {
    uint32_t entry;             /* 32-bit PVH entry point */
    uint64_t low;               /* lowest and highest loaded byte + 1 */
    uint64_t high;
} PvhImageInfo;

/*
 * pvh_elf_probe: check @image is an x86 ELF with a PVH entry note and that
 * every loadable segment lies inside the file; fill @info. No writes.
 */
bool pvh_elf_probe(const uint8_t *image, size_t size, PvhImageInfo *info, Error **errp);
/* pvh_elf_load: probe, then copy the PT_LOAD segments through @write. */
bool pvh_elf_load(const uint8_t *image, size_t size, PvhWriteFn write, void *opaque,
                  PvhImageInfo *info, Error **errp);

#endif

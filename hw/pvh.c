/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * PVH ELF loader. Accepts ELF32 and ELF64 little-endian x86 images; the
 * entry point comes from the Xen PHYS32_ENTRY note, not from e_entry.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/pvh.h"
#include <elf.h>

typedef struct ElfPhdr {
    uint32_t type;
    uint64_t offset;
    uint64_t paddr;
    uint64_t filesz;
    uint64_t memsz;
} ElfPhdr;

typedef struct ElfView {
    const uint8_t *image;
    size_t size;
    bool is64;
    uint64_t phoff;
    uint16_t phentsize;
    uint16_t phnum;
} ElfView;

static bool elf_view_init(ElfView *v, const uint8_t *image, size_t size, Error **errp)
{
    uint16_t machine;

    v->image = image;
    v->size = size;
    if (size >= 0x206 && !memcmp(image + 0x202, "HdrS", 4)) {
        error_setg(errp, "Linux bzImage kernels are not supported yet; use a PVH ELF kernel");
        return false;
    }
    if (size < EI_NIDENT || memcmp(image, ELFMAG, SELFMAG)) {
        error_setg(errp, "not an ELF file");
        return false;
    }
    if (image[EI_DATA] != ELFDATA2LSB) {
        error_setg(errp, "ELF file is not little-endian");
        return false;
    }
    v->is64 = image[EI_CLASS] == ELFCLASS64;
    if (!v->is64 && image[EI_CLASS] != ELFCLASS32) {
        error_setg(errp, "invalid ELF class %u", image[EI_CLASS]);
        return false;
    }
    /* Copy the header out: @image need not be aligned (like elf_get_phdr). */
    if (v->is64) {
        Elf64_Ehdr eh;
        if (size < sizeof(eh)) {
            goto truncated;
        }
        memcpy(&eh, image, sizeof(eh));
        machine = eh.e_machine;
        v->phoff = eh.e_phoff;
        v->phentsize = eh.e_phentsize;
        v->phnum = eh.e_phnum;
        if (v->phentsize != sizeof(Elf64_Phdr)) {
            goto bad_phdr;
        }
    } else {
        Elf32_Ehdr eh;
        if (size < sizeof(eh)) {
            goto truncated;
        }
        memcpy(&eh, image, sizeof(eh));
        machine = eh.e_machine;
        v->phoff = eh.e_phoff;
        v->phentsize = eh.e_phentsize;
        v->phnum = eh.e_phnum;
        if (v->phentsize != sizeof(Elf32_Phdr)) {
            goto bad_phdr;
        }
    }
    if (machine != EM_X86_64 && machine != EM_386) {
        error_setg(errp, "ELF machine type %u is not x86", machine);
        return false;
    }
    if (!v->phnum || v->phoff > size || (uint64_t)v->phnum * v->phentsize > size - v->phoff) {
        goto bad_phdr;
    }
    return true;

truncated:
    error_setg(errp, "ELF file is truncated");
    return false;
bad_phdr:
    error_setg(errp, "ELF program headers are invalid or truncated");
    return false;
}

static void elf_get_phdr(const ElfView *v, unsigned i, ElfPhdr *ph)
{
    const uint8_t *p = v->image + v->phoff + (uint64_t)i * v->phentsize;

    if (v->is64) {
        Elf64_Phdr h;
        memcpy(&h, p, sizeof(h));
        *ph = (ElfPhdr) { h.p_type, h.p_offset, h.p_paddr, h.p_filesz, h.p_memsz };
    } else {
        Elf32_Phdr h;
        memcpy(&h, p, sizeof(h));
        *ph = (ElfPhdr) { h.p_type, h.p_offset, h.p_paddr, h.p_filesz, h.p_memsz };
    }
}

/* Walks the notes of one PT_NOTE segment looking for the PVH entry. */
static bool elf_find_pvh_note(const ElfView *v, const ElfPhdr *ph, uint32_t *entry)
{
    const uint8_t *p = v->image + ph->offset;
    uint64_t left = ph->filesz;

    while (left >= 12) {
        uint32_t namesz, descsz, type;
        uint64_t name_len, desc_len;

        memcpy(&namesz, p, 4);
        memcpy(&descsz, p + 4, 4);
        memcpy(&type, p + 8, 4);
        name_len = QEMU_ALIGN_UP((uint64_t)namesz, 4);
        desc_len = QEMU_ALIGN_UP((uint64_t)descsz, 4);
        if (name_len > left - 12 || desc_len > left - 12 - name_len) {
            return false;
        }
        if (namesz == 4 && !memcmp(p + 12, "Xen", 4) && type == XEN_ELFNOTE_PHYS32_ENTRY &&
            (descsz == 4 || descsz == 8)) {
            uint64_t e = 0;
            memcpy(&e, p + 12 + name_len, descsz);
            if (e > UINT32_MAX) {
                return false;
            }
            *entry = e;
            return true;
        }
        p += 12 + name_len + desc_len;
        left -= 12 + name_len + desc_len;
    }
    return false;
}

bool pvh_elf_probe(const uint8_t *image, size_t size, PvhImageInfo *info, Error **errp)
{
    ElfView v;
    bool have_entry = false;
    bool have_load = false;

    if (!elf_view_init(&v, image, size, errp)) {
        return false;
    }
    info->low = UINT64_MAX;
    info->high = 0;
    for (unsigned i = 0; i < v.phnum; i++) {
        ElfPhdr ph;

        elf_get_phdr(&v, i, &ph);
        if (ph.type != PT_LOAD && ph.type != PT_NOTE) {
            continue;
        }
        if (ph.offset > size || ph.filesz > size - ph.offset) {
            error_setg(errp, "ELF segment %u lies outside the file", i);
            return false;
        }
        if (ph.type == PT_NOTE) {
            have_entry = have_entry || elf_find_pvh_note(&v, &ph, &info->entry);
            continue;
        }
        if (ph.filesz > ph.memsz || ph.paddr + ph.memsz < ph.paddr) {
            error_setg(errp, "ELF segment %u has invalid sizes", i);
            return false;
        }
        if (!ph.memsz) {
            continue;
        }
        have_load = true;
        info->low = MIN(info->low, ph.paddr);
        info->high = MAX(info->high, ph.paddr + ph.memsz);
    }
    if (!have_entry) {
        error_setg(errp, "Error loading uncompressed kernel without PVH ELF Note");
        return false;
    }
    if (!have_load) {
        error_setg(errp, "ELF file has no loadable segment");
        return false;
    }
    return true;
}

bool pvh_elf_load(const uint8_t *image, size_t size, PvhWriteFn write, void *opaque,
                  PvhImageInfo *info, Error **errp)
{
    ElfView v;

    if (!pvh_elf_probe(image, size, info, errp)) {
        return false;
    }
    elf_view_init(&v, image, size, NULL);
    for (unsigned i = 0; i < v.phnum; i++) {
        ElfPhdr ph;

        elf_get_phdr(&v, i, &ph);
        if (ph.type != PT_LOAD || !ph.memsz) {
            continue;
        }
        if (!write(opaque, ph.paddr, image + ph.offset, ph.filesz) ||
            !write(opaque, ph.paddr + ph.filesz, NULL, ph.memsz - ph.filesz)) {
            error_setg(errp, "kernel segment at 0x%" PRIx64 " (size 0x%" PRIx64 ") does not fit "
                       "in guest RAM", ph.paddr, ph.memsz);
            return false;
        }
    }
    return true;
}

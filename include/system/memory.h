/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Guest RAM: RAMBlocks (host memory with a QEMU-compatible name) and the
 * guest-physical map that places parts of them at guest addresses.
 *
 * A RAMBlock is what the migration stream names ("microvm.ram" or a backend
 * id); one RAMBlock may be mapped at several guest ranges (below 3 GiB and
 * above 4 GiB), and each mapping becomes one KVM memslot.
 */
#ifndef SYSTEM_MEMORY_H
#define SYSTEM_MEMORY_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>

typedef enum RAMBackendKind {
    RAM_BACKEND_ANON,
    RAM_BACKEND_MEMFD,
    RAM_BACKEND_FILE,
} RAMBackendKind;

struct RAMBlock {
    char idstr[256];
    uint8_t *host;              /* immutable after creation */
    uint64_t used_length;       /* bytes, multiple of TARGET_PAGE_SIZE */
    uint64_t capacity;          /* QEMU's room for the block (>= used_length); immutable */
    RAMBackendKind kind;
    int fd;                     /* -1 for anonymous memory */
    bool shared;                /* MAP_SHARED */
    bool readonly;
    /*
     * The memory came from the process this one replaces (a live update's
     * cpr fd), contents and all: nothing may write it before the incoming
     * stream was loaded. Immutable after creation.
     */
    bool preserved;
    /*
     * Where QEMU places the block's own memory region (its aliases aside):
     * x-ignore-shared's block list carries it (QEMU 10.0's streams show
     * pc.bios at 4 GiB - 64 KiB, isa-vga's vga.vram at its LFB, the rest at
     * 0). Set by the block's creator at machine init; immutable after.
     */
    uint64_t mr_addr;

    /*
     * Set: the VMM itself wrote the page (loaders, device emulation; not the
     * incoming migration) since migration last merged the bitmap. Set
     * atomically by any thread while dirty logging is on; taken (read and
     * cleared atomically, a word at a time) by the migration's dirty sync.
     */
    unsigned long *vmm_dirty_bmap;
    /*
     * Set: the VMM ever wrote the page (loaders, incoming migration), or the
     * backend is a file (it may hold old data). A clear bit means the page
     * is still the kernel's zero page, which lets an incoming migration skip
     * zero pages without touching (and so allocating) them. Written by
     * machine init, then by the incoming migration thread and its multifd
     * channel threads at once (atomically: they place different pages that
     * share words).
     */
    unsigned long *vmm_written_bmap;
    /*
     * Set while the block is registered for userfaultfd missing-page faults
     * (postcopy, lazy restore): a read of an absent page then waits until a
     * fault thread places it, which may be never (a failed source or file).
     * Atomic; the incoming migration sets it before it registers the block
     * and clears it after it unregisters.
     */
    int uffd_missing;
};

/* One guest-physical mapping of (part of) a RAMBlock. Immutable once mapped. */
typedef struct GuestRAMRange {
    hwaddr gpa;
    uint64_t size;
    RAMBlock *rb;
    uint64_t offset;            /* within rb */
} GuestRAMRange;

/*
 * Whether another process can map the same memory by name: a file mapped
 * share=on (x-ignore-shared leaves such a block out). A memfd cannot be
 * opened by name, and QEMU 10.0 sends it (seen in its streams).
 */
static inline bool ram_block_shared_by_name(const RAMBlock *rb)
{
    return rb->shared && rb->kind == RAM_BACKEND_FILE;
}

/*
 * Whether a new process given this block's fd maps the same memory: shared
 * memory with an fd (a memfd, or a file mapped share=on), which a live
 * update hands over.
 */
static inline bool ram_block_fd_shared(const RAMBlock *rb)
{
    return rb->shared && rb->fd >= 0;
}

/* Host memory backend options (from -object memory-backend-*). */
typedef struct RAMBackendOpts {
    const char *id;
    RAMBackendKind kind;
    uint64_t size;
    bool share;
    bool prealloc;
    const char *mem_path;       /* file backend only */
    /*
     * The room QEMU keeps for this block, which may exceed @size (the ACPI
     * blobs, which QEMU may grow); 0 means @size. It decides the block's
     * place in ram_blocks().
     */
    uint64_t capacity;
    /*
     * A device's own RAM (firmware, VRAM, ROM blobs), not a memory backend:
     * a memfd shared with other processes under -machine aux-ram-share=on.
     */
    bool aux;
} RAMBackendOpts;

/*
 * -machine aux-ram-share: devices' RAM (RAMBackendOpts.aux) is made a
 * shared memfd from now on, so a live update can hand it over. Set by
 * machine configuration before any block is made.
 */
void ram_set_aux_share(bool on);

/*
 * ram_block_create: allocate a RAMBlock as @opts says and register it.
 * Returns NULL with @errp set on failure.
 */
RAMBlock *ram_block_create(const RAMBackendOpts *opts, Error **errp);
void ram_block_destroy(RAMBlock *rb);
/*
 * ram_block_discard_range: drop [offset, offset+len) (page-aligned, inside
 * the block): the next access finds the pages never populated (zero, or a
 * userfaultfd missing-page fault). The VMM's written bits are cleared.
 * 0 or -errno.
 */
int ram_block_discard_range(RAMBlock *rb, uint64_t offset, uint64_t len);
/* The same for @n ranges at once, in far fewer system calls. */
int ram_block_discard_ranges(RAMBlock *rb, const uint64_t *offset, const uint64_t *len,
                             size_t n);
RAMBlock *ram_block_find(const char *idstr);
/*
 * Registered blocks, the order the stream lists them: by capacity, the
 * largest first, and in creation order among equals. QEMU 7.2 and 10.0 list
 * theirs so (seen in their streams: -m 4M puts an 8 MiB vga.vram before
 * microvm.ram, and a 1 MiB one after the ACPI tables' block, a 2 MiB one
 * before it), so a stream of ours lists a machine's blocks as QEMU does.
 */
GPtrArray *ram_blocks(void);
uint64_t ram_blocks_total_bytes(void);
/* for (each registered RAMBlock @rb that is not read-only): the guest can write it. */
#define RAMBLOCK_FOREACH_WRITABLE(rb)                                           \
    for (guint rb##_i = 0; rb##_i < ram_blocks()->len; rb##_i++)                \
        if (((rb) = g_ptr_array_index(ram_blocks(), rb##_i))->readonly) {       \
        } else

/*
 * Whether some block is registered for missing-page faults (uffd_missing):
 * a read of guest RAM may then wait for a fault thread, possibly forever.
 */
bool guest_ram_reads_may_wait(void);

/*
 * Guest RAM that will never come: a lazy restore whose file failed leaves
 * pages missing for good, and a thread that waits on one of them waits
 * until the process ends (no signal ends a userfaultfd wait). Once said,
 * said for the life of the process. Any thread; guest_ram_set_lost() takes
 * no lock, so a thread that must not take the BQL may call it.
 * guest_ram_lost_fd() is an eventfd that becomes readable then and stays
 * readable (nobody reads it), for a poll() next to another fd; -1 if it
 * could not be created (the caller then cannot be told).
 */
void guest_ram_set_lost(void);
bool guest_ram_lost(void);
int guest_ram_lost_fd(void);

/* Places [offset, offset+size) of @rb at guest-physical @gpa. */
bool guest_ram_map(RAMBlock *rb, uint64_t offset, hwaddr gpa, uint64_t size, Error **errp);
/* The mappings, sorted by guest-physical address. */
const GuestRAMRange *guest_ram_ranges(size_t *count);
const GuestRAMRange *guest_ram_lookup(hwaddr gpa);
/* Host pointer for [gpa, gpa+len) if it lies inside one RAM range, else NULL. */
void *guest_phys_to_host(hwaddr gpa, uint64_t len);

/*
 * guest_phys_rw: copy between @buf and guest-physical memory, possibly
 * across ranges. Writes mark the pages in the software dirty bitmap.
 * Returns false if any byte is outside guest RAM (nothing is copied then).
 */
bool guest_phys_rw(hwaddr gpa, void *buf, uint64_t len, bool is_write);

/* Software dirty tracking of VMM writes, on while migration logs dirty pages. */
void ram_vmm_dirty_log_start(void);
void ram_vmm_dirty_log_stop(void);
void ram_block_mark_dirty(RAMBlock *rb, uint64_t offset, uint64_t len);

#endif

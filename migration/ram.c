/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The "ram" section (instance 0, version 4): QEMU's page records.
 *
 *   be64 (offset | flags) [counted-string block id unless CONTINUE] body
 *   ZERO: 1 fill byte    PAGE: 4096 bytes    MEM_SIZE: block list    EOS
 *
 * Source: find-next-bit over the migration bitmap from where the last call
 * stopped, claim the page (lazy KVM clear, test-and-clear, counter - 1),
 * zero check, send by reference. The remaining count is the tracker's
 * counter, never a scan. Destination: every block name, length and offset
 * is checked before a byte is written.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "qemu/bufferiszero.h"
#include "qemu/main-loop.h"
#include "system/kvm.h"
#include "system/memory.h"
#include "migration/qemu-file.h"
#include "migration/register.h"
#include "dirty.h"
#include "migration.h"
#include "options.h"
#include "ram.h"
#include "snapshot.h"
#include "trace.h"

#define RAM_SAVE_FLAG_FULL      0x01
#define RAM_SAVE_FLAG_ZERO      0x02
#define RAM_SAVE_FLAG_MEM_SIZE  0x04
#define RAM_SAVE_FLAG_PAGE      0x08
#define RAM_SAVE_FLAG_EOS       0x10
#define RAM_SAVE_FLAG_CONTINUE  0x20
#define RAM_SAVE_FLAG_XBZRLE    0x40
#define RAM_SAVE_FLAG_HOOK      0x80
#define RAM_SAVE_FLAG_COMPRESS_PAGE 0x100
#define RAM_SAVE_FLAG_MULTIFD_FLUSH 0x200

/* An iterate call gives the migration thread back control this often. */
#define RAM_ITERATE_MAX_NS (50 * 1000 * 1000)


/* Source side; owned by the migration thread (stats read by query-migrate). */
static RAMState ram_state;

/* Destination side; owned by the incoming thread. */
typedef struct RAMLoadState {
    RAMBlock *last_block;       /* for CONTINUE */
    bool have_sizes;            /* MEM_SIZE seen */
} RAMLoadState;

static RAMLoadState ram_load_state;

RAMState *ram_state_get(void)
{
    return &ram_state;
}

static void ram_put_page_header(QEMUFile *f, RAMState *rs, RAMBlock *rb, uint64_t offset,
                                uint64_t flags)
{
    if (rb == rs->last_sent_block) {
        flags |= RAM_SAVE_FLAG_CONTINUE;
    }
    qemu_put_be64(f, offset | flags);
    if (!(flags & RAM_SAVE_FLAG_CONTINUE)) {
        qemu_put_counted_string(f, rb->idstr);
        rs->last_sent_block = rb;
    }
}

/*
 * Sends page @page of @rb with the content at @data (NULL: a zero page),
 * guest memory itself for precopy, a private copy for the background
 * snapshot (which copies pages before it lets the guest write them again).
 * @data is referenced, not copied: it must stay valid until the next
 * qemu_fflush().
 */
void ram_save_page_copy(RAMState *rs, QEMUFile *f, RAMBlock *rb, uint64_t page,
                        const uint8_t *data)
{
    uint64_t offset = page << TARGET_PAGE_BITS;

    if (!data) {
        ram_put_page_header(f, rs, rb, offset, RAM_SAVE_FLAG_ZERO);
        qemu_put_byte(f, 0);
        rs->zero_pages++;
    } else {
        ram_put_page_header(f, rs, rb, offset, RAM_SAVE_FLAG_PAGE);
        qemu_put_buffer_async(f, data, TARGET_PAGE_SIZE);
        rs->normal_pages++;
    }
}

/* Sends one page that has just been claimed from the bitmap. */
void ram_save_page(RAMState *rs, QEMUFile *f, RAMBlock *rb, uint64_t page)
{
    uint64_t offset = page << TARGET_PAGE_BITS;
    const uint8_t *host = rb->host + offset;

    ram_save_page_copy(rs, f, rb, page, buffer_is_zero(host, TARGET_PAGE_SIZE) ? NULL : host);
    if (rs->in_downtime) {
        rs->downtime_pages++;
    }
}

/*
 * Finds the next dirty page at or after the scan position (wrapping), claims
 * and sends it. Returns false when nothing is dirty: the counter says so
 * exactly, so no scan is needed to know.
 */
static bool ram_find_and_save_page(RAMState *rs, QEMUFile *f)
{
    DirtyTracker *dt = &rs->dt;

    if (rs->bg_snapshot) {
        return snapshot_save_step(rs, f);
    }
    if (!dt->dirty_pages) {
        return false;
    }
    /* At most one full wrap: the counter guarantees a set bit exists. */
    for (int tries = 0; tries <= dt->nblocks; tries++) {
        RAMBlockDirty *b = &dt->blocks[rs->cur_block];
        uint64_t page = find_next_bit(b->send_bmap, b->npages, rs->cur_page);

        if (page < b->npages) {
            rs->cur_page = page + 1;
            if (dirty_tracker_claim_page(dt, b, page)) {
                ram_save_page(rs, f, b->rb, page);
            }
            return true;
        }
        rs->cur_block = (rs->cur_block + 1) % dt->nblocks;
        rs->cur_page = 0;
        if (rs->cur_block == 0) {
            rs->rounds++;
        }
    }
    /* Unreachable unless the counter and the bitmaps disagree: a bug. */
    error_report("migration: dirty page counter (%" PRIu64 ") does not match the bitmaps",
                 dt->dirty_pages);
    dt->dirty_pages = 0;
    return false;
}

static void ram_put_eos(QEMUFile *f)
{
    qemu_put_be64(f, RAM_SAVE_FLAG_EOS);
}

static int ram_save_setup(QEMUFile *f, void *opaque, Error **errp)
{
    RAMState *rs = opaque;
    GPtrArray *rbs = ram_blocks();

    memset(rs, 0, sizeof(*rs));
    rs->bg_snapshot = migrate_background_snapshot();
    if (!dirty_tracker_init(&rs->dt, kvm_state, !rs->bg_snapshot,
                            migrate_clear_bitmap_shift(), errp)) {
        return -EIO;
    }
    rs->tracking = true;
    /* Like QEMU: an initial sync right after logging starts is pass 1. */
    if (!rs->bg_snapshot && dirty_tracker_sync(&rs->dt) < 0) {
        error_setg(errp, "initial dirty bitmap sync failed");
        return -EIO;
    }
    migration_dirty_pass_event(rs->dt.syncs);
    qemu_put_be64(f, ram_blocks_total_bytes() | RAM_SAVE_FLAG_MEM_SIZE);
    for (guint i = 0; i < rbs->len; i++) {
        RAMBlock *rb = g_ptr_array_index(rbs, i);

        qemu_put_counted_string(f, rb->idstr);
        qemu_put_be64(f, rb->used_length);
    }
    ram_put_eos(f);
    return qemu_file_get_error(f);
}

static int ram_save_iterate(QEMUFile *f, void *opaque)
{
    RAMState *rs = opaque;
    int64_t t0 = get_clock_ns();
    uint64_t pages = 0, bytes0 = qemu_file_transferred(f);
    int done = 0;

    while (!qemu_file_rate_limit(f)) {
        if (!ram_find_and_save_page(rs, f)) {
            done = 1;
            break;
        }
        /* Check the clock every 64 pages so one call never hogs the thread. */
        if ((++pages & 63) == 0 && get_clock_ns() - t0 > RAM_ITERATE_MAX_NS) {
            break;
        }
    }
    ram_put_eos(f);
    rs->scan_ns += get_clock_ns() - t0;
    trace_ram_iterate(pages, qemu_file_transferred(f) - bytes0, (get_clock_ns() - t0) / 1000);
    return qemu_file_get_error(f) ? qemu_file_get_error(f) : done;
}

static int ram_save_complete(QEMUFile *f, void *opaque)
{
    RAMState *rs = opaque;
    int64_t t0 = get_clock_ns();

    /* VM stopped: this sync is exact, and nothing dirties pages after it. */
    if (dirty_tracker_sync(&rs->dt) < 0) {
        qemu_file_set_error_msg(f, -EIO, "final dirty bitmap sync failed");
        return -EIO;
    }
    migration_dirty_pass_event(rs->dt.syncs);
    rs->in_downtime = true;
    while (ram_find_and_save_page(rs, f)) {
        if (qemu_file_get_error(f)) {
            break;
        }
    }
    ram_put_eos(f);
    qemu_fflush(f);
    rs->scan_ns += get_clock_ns() - t0;
    return qemu_file_get_error(f);
}

static uint64_t ram_pending_estimate(void *opaque)
{
    RAMState *rs = opaque;

    return rs->dt.dirty_pages * TARGET_PAGE_SIZE;
}

static uint64_t ram_pending_exact(void *opaque)
{
    RAMState *rs = opaque;

    /* get-log and clear-log syncs need no vCPU kick, so no BQL either. */
    if (dirty_tracker_sync(&rs->dt) >= 0) {
        migration_dirty_pass_event(rs->dt.syncs);
    }
    return rs->dt.dirty_pages * TARGET_PAGE_SIZE;
}

static void ram_save_cleanup(void *opaque)
{
    RAMState *rs = opaque;

    if (rs->tracking) {
        dirty_tracker_cleanup(&rs->dt);
        rs->tracking = false;
    }
}

/* ---- incoming ---- */

static int ram_load_setup(QEMUFile *f, void *opaque, Error **errp)
{
    memset(&ram_load_state, 0, sizeof(ram_load_state));
    return 0;
}

static bool ram_load_block_list(QEMUFile *f, uint64_t total, Error **errp)
{
    uint64_t seen = 0;

    while (seen < total) {
        char id[256];
        RAMBlock *rb;
        uint64_t len;

        qemu_get_counted_string(f, id);
        len = qemu_get_be64(f);
        if (qemu_file_get_error(f)) {
            error_setg(errp, "ram: reading the block list failed: %s", qemu_file_error_msg(f));
            return false;
        }
        rb = ram_block_find(id);
        if (!rb) {
            error_setg(errp, "Unknown ramblock \"%s\", cannot accept migration", id);
            return false;
        }
        if (len != rb->used_length) {
            error_setg(errp, "Length mismatch: %s: 0x%" PRIx64 " in != 0x%" PRIx64, id, len,
                       rb->used_length);
            return false;
        }
        if (len > total - seen) {
            error_setg(errp, "ram: block list exceeds the announced total 0x%" PRIx64, total);
            return false;
        }
        seen += len;
    }
    ram_load_state.have_sizes = true;
    return true;
}

/* Block of a page record, or NULL with @errp set. */
static RAMBlock *ram_load_block(QEMUFile *f, uint64_t flags, Error **errp)
{
    char id[256];
    RAMBlock *rb;

    if (flags & RAM_SAVE_FLAG_CONTINUE) {
        if (!ram_load_state.last_block) {
            error_setg(errp, "ram: CONTINUE flag without a previous block");
        }
        return ram_load_state.last_block;
    }
    if (!qemu_get_counted_string(f, id)) {
        error_setg(errp, "ram: reading a block id failed: %s", qemu_file_error_msg(f));
        return NULL;
    }
    rb = ram_block_find(id);
    if (!rb) {
        error_setg(errp, "Can't find block %s", id);
        return NULL;
    }
    ram_load_state.last_block = rb;
    return rb;
}

static int ram_load_state_fn(QEMUFile *f, void *opaque, int version_id, Error **errp)
{
    if (version_id != 4) {
        error_setg(errp, "ram: unsupported section version %d", version_id);
        return -EINVAL;
    }
    for (;;) {
        uint64_t header = qemu_get_be64(f);
        uint64_t flags = header & ~TARGET_PAGE_MASK;
        uint64_t addr = header & TARGET_PAGE_MASK;
        RAMBlock *rb;

        if (qemu_file_get_error(f)) {
            error_setg(errp, "ram: %s", qemu_file_error_msg(f));
            return -EIO;
        }
        if (flags & RAM_SAVE_FLAG_MEM_SIZE) {
            if (flags != RAM_SAVE_FLAG_MEM_SIZE || ram_load_state.have_sizes) {
                error_setg(errp, "ram: unexpected MEM_SIZE record (flags 0x%" PRIx64 ")", flags);
                return -EINVAL;
            }
            if (!ram_load_block_list(f, addr, errp)) {
                return -EINVAL;
            }
            continue;
        }
        if (flags == RAM_SAVE_FLAG_EOS) {
            return 0;
        }
        switch (flags & ~RAM_SAVE_FLAG_CONTINUE) {
        case RAM_SAVE_FLAG_ZERO:
        case RAM_SAVE_FLAG_PAGE: {
            uint64_t page;
            uint8_t *host;

            if (!ram_load_state.have_sizes) {
                error_setg(errp, "ram: page record before the block list");
                return -EINVAL;
            }
            rb = ram_load_block(f, flags, errp);
            if (!rb) {
                return -EINVAL;
            }
            if (addr >= rb->used_length) {
                error_setg(errp, "Illegal RAM offset 0x%" PRIx64 " in block %s (length 0x%"
                           PRIx64 ")", addr, rb->idstr, rb->used_length);
                return -EINVAL;
            }
            page = addr >> TARGET_PAGE_BITS;
            host = rb->host + addr;
            if (flags & RAM_SAVE_FLAG_PAGE) {
                qemu_get_buffer(f, host, TARGET_PAGE_SIZE);
                set_bit(page, rb->vmm_written_bmap);
            } else {
                uint8_t fill = qemu_get_byte(f);
                /*
                 * QEMU's rule: a zero page that is already zero is not written,
                 * so untouched memory stays unallocated. A page nobody wrote
                 * is known zero without even reading it.
                 */
                if (fill || (test_bit(page, rb->vmm_written_bmap) &&
                             !buffer_is_zero(host, TARGET_PAGE_SIZE))) {
                    memset(host, fill, TARGET_PAGE_SIZE);
                    set_bit(page, rb->vmm_written_bmap);
                }
            }
            break;
        }
        default:
            error_setg(errp, "Unknown combination of migration flags: 0x%" PRIx64, flags);
            return -EINVAL;
        }
    }
}

static const SaveVMHandlers savevm_ram_handlers = {
    .save_setup = ram_save_setup,
    .save_iterate = ram_save_iterate,
    .save_complete = ram_save_complete,
    .pending_estimate = ram_pending_estimate,
    .pending_exact = ram_pending_exact,
    .save_cleanup = ram_save_cleanup,
    .load_setup = ram_load_setup,
    .load_state = ram_load_state_fn,
};

void ram_mig_init(void)
{
    register_savevm_live("ram", 0, 4, &savevm_ram_handlers, &ram_state);
}

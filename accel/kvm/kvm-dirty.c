/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * KVM dirty logging modes as rows of one table. The dirty-log clients
 * (kvm-dirty-clients.c) call the same hooks whatever the mode; only this
 * file knows how KVM is asked for dirty pages and how they are re-protected.
 *
 * clear-log window for one KVM_CLEAR_DIRTY_LOG (pages of one slot):
 *
 *   slot:  |0 ........ 64 ........ 128 ....... npages|
 *   ask:             [first ......... first+n)
 *   sent:            [start=first&~63 ......... end) end = 64-aligned or npages
 *   bits:  only bits already in slot->dirty_bmap, padding outside [first,
 *          first+n) zeroed, so KVM never re-protects a page we have not read.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "system/kvm.h"
#include "kvm-dirty-log.h"
#include "kvm-dirty-ring.h"
#include "trace.h"

struct KVMDirtyLogMode {
    const char *name;
    bool (*supported)(KVMState *s);
    /* Once, at VM creation (before vCPUs). 0 or -errno. */
    int (*setup)(KVMState *s);
    /* Per vCPU, at creation. NULL = nothing to do. */
    bool (*vcpu_init)(KVMState *s, CPUState *cpu, Error **errp);
    /*
     * A slot gains its first bitmap client (@on: after its dirty_bmap is
     * allocated) or loses its last (before the dirty_bmap is freed). NULL =
     * nothing to do.
     */
    void (*track_slot)(KVMState *s, KVMSlot *slot, bool on);
    /* Once per sync, before sync_slot for each slot. NULL = nothing. 0 or -errno. */
    int (*sync_prepare)(KVMState *s);
    /* slot->dirty_bmap := KVM's bits. clients_lock held (kvm-dirty-clients.c). */
    int (*sync_slot)(KVMState *s, KVMSlot *slot);
    /* NULL when syncing re-protects by itself. clients_lock held. */
    int (*clear)(KVMState *s, KVMSlot *slot, uint64_t first, uint64_t npages);
};

static bool get_log_supported(KVMState *s)
{
    return true;
}

static int get_log_sync_slot(KVMState *s, KVMSlot *slot)
{
    struct kvm_dirty_log d = { .slot = slot->slot, .dirty_bitmap = slot->dirty_bmap };
    int64_t t0 = get_clock_ns();
    int ret = kvm_vm_ioctl(s, KVM_GET_DIRTY_LOG, &d);

    trace_kvm_get_dirty_log(slot->slot, slot->npages, (get_clock_ns() - t0) / 1000);
    if (ret == -ENOENT) {
        /* No bitmap (logging not on for this slot): nothing dirty. */
        bitmap_zero(slot->dirty_bmap, slot->npages);
        return 0;
    }
    return ret;
}

#define MANUAL_PROTECT_FLAGS (KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE | KVM_DIRTY_LOG_INITIALLY_SET)

static bool clear_log_supported(KVMState *s)
{
    return (s->manual_protect_caps & MANUAL_PROTECT_FLAGS) == MANUAL_PROTECT_FLAGS;
}

static int clear_log_setup(KVMState *s)
{
    struct kvm_enable_cap cap = {
        .cap = KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2,
        .args[0] = MANUAL_PROTECT_FLAGS,
    };

    return kvm_vm_ioctl(s, KVM_ENABLE_CAP, &cap);
}

static int clear_log_clear(KVMState *s, KVMSlot *slot, uint64_t first, uint64_t npages)
{
    uint64_t start = QEMU_ALIGN_DOWN(first, BITS_PER_LONG);
    uint64_t end;
    unsigned long *bmap;
    struct kvm_clear_dirty_log c;
    int64_t t0;
    int ret;

    if (first >= slot->npages || !npages) {
        return 0;
    }
    /* Clamp before adding: npages may mean "to the end" (and overflow). */
    npages = MIN(npages, slot->npages - first);
    end = MIN(QEMU_ALIGN_UP(first + npages, BITS_PER_LONG), slot->npages);
    if (find_next_bit(slot->dirty_bmap, first + npages, first) >= first + npages) {
        return 0;               /* nothing read here since the last clear */
    }
    if (start == first && end == first + npages) {
        /* Aligned (the usual case): hand KVM our own words, no copy. */
        bmap = slot->dirty_bmap + start / BITS_PER_LONG;
    } else {
        /* The slot's scratch, not an allocation: a display clears every refresh. */
        bmap = slot->clear_bmap;
        bitmap_extract_words(bmap, slot->dirty_bmap, start, end - start);
        /* Zero the alignment padding: those pages were not asked for. */
        bitmap_clear(bmap, 0, first - start);
        bitmap_clear(bmap, first + npages - start, end - (first + npages));
    }
    c = (struct kvm_clear_dirty_log) {
        .slot = slot->slot, .num_pages = end - start, .first_page = start,
        .dirty_bitmap = bmap,
    };
    t0 = get_clock_ns();
    ret = kvm_vm_ioctl(s, KVM_CLEAR_DIRTY_LOG, &c);
    t0 = get_clock_ns() - t0;
    s->dirty_stats.clears++;
    s->dirty_stats.clear_ns += t0;
    trace_kvm_clear_dirty_log(slot->slot, start, end - start, t0 / 1000);
    if (ret < 0) {
        return ret;
    }
    bitmap_clear(slot->dirty_bmap, first, npages);
    return 0;
}

static bool ring_supported(KVMState *s)
{
    return s->opts.dirty_ring_size > 0 && s->dirty_ring_max_bytes > 0;
}

static int ring_sync_prepare(KVMState *s)
{
    return kvm_dirty_ring_reap(s);
}

static const KVMDirtyLogMode dirty_log_modes[] = {
    {
        .name = "get-log",
        .supported = get_log_supported,
        .sync_slot = get_log_sync_slot,
    },
    {
        .name = "clear-log",
        .supported = clear_log_supported,
        .setup = clear_log_setup,
        .sync_slot = get_log_sync_slot,
        .clear = clear_log_clear,
    },
    {
        /* No manual protect here: the ring needs every page protected up front. */
        .name = "dirty-ring",
        .supported = ring_supported,
        .vcpu_init = kvm_dirty_ring_vcpu_init,
        .track_slot = kvm_dirty_ring_track_slot,
        .sync_prepare = ring_sync_prepare,
        .sync_slot = kvm_dirty_ring_sync_slot,
    },
};

static const KVMDirtyLogMode *find_mode(const char *name)
{
    for (size_t i = 0; i < ARRAY_SIZE(dirty_log_modes); i++) {
        if (!strcmp(dirty_log_modes[i].name, name)) {
            return &dirty_log_modes[i];
        }
    }
    return NULL;
}

bool kvm_dirty_log_init(KVMState *s, Error **errp)
{
    const char *want = s->opts.dirty_log ? s->opts.dirty_log : "auto";
    const KVMDirtyLogMode *mode;
    int ret;

    if (s->opts.dirty_ring_size) {
        if (strcmp(want, "auto")) {
            error_setg(errp, "-accel kvm: x-dirty-log=%s and dirty-ring-size are exclusive", want);
            return false;
        }
        if (!kvm_dirty_ring_enable(s, errp)) {
            error_prepend(errp, "-accel kvm,dirty-ring-size=%u: ", s->opts.dirty_ring_size);
            return false;
        }
        s->dirty_mode = find_mode("dirty-ring");
        return true;
    }
    if (!strcmp(want, "auto")) {
        mode = find_mode("clear-log");
        if (!mode->supported(s)) {
            mode = find_mode("get-log");
        }
    } else {
        mode = find_mode(!strcmp(want, "get") ? "get-log" : "clear-log");
        if (!mode->supported(s)) {
            error_setg(errp, "-accel kvm,x-dirty-log=%s: KVM lacks %s", want,
                       "KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2");
            return false;
        }
    }
    if (mode->setup && (ret = mode->setup(s)) < 0) {
        error_setg_errno(errp, -ret, "enabling dirty log mode %s failed", mode->name);
        return false;
    }
    s->dirty_mode = mode;
    return true;
}

const char *kvm_dirty_log_mode_name(KVMState *s)
{
    return s->dirty_mode ? s->dirty_mode->name : "none";
}

bool kvm_dirty_ring_enabled(KVMState *s)
{
    return s && s->dirty_mode && !strcmp(s->dirty_mode->name, "dirty-ring");
}

int kvm_dirty_log_sync_prepare(KVMState *s)
{
    return s->dirty_mode->sync_prepare ? s->dirty_mode->sync_prepare(s) : 0;
}

int kvm_dirty_log_read_slot(KVMState *s, KVMSlot *slot)
{
    return s->dirty_mode->sync_slot(s, slot);
}

bool kvm_dirty_log_needs_clear(KVMState *s)
{
    return s->dirty_mode->clear != NULL;
}

int kvm_dirty_log_clear_slot(KVMState *s, KVMSlot *slot, uint64_t first, uint64_t npages)
{
    if (!s->dirty_mode->clear || !slot->dirty_bmap) {
        return 0;
    }
    return s->dirty_mode->clear(s, slot, first, npages);
}

void kvm_dirty_log_track_slot(KVMState *s, KVMSlot *slot, bool on)
{
    if (on) {
        slot->dirty_bmap = bitmap_new(slot->npages);
        slot->clear_bmap = bitmap_new(slot->npages);
    }
    /* Ring mode: the harvest bitmap exists before any entry for the client is harvested. */
    if (s->dirty_mode->track_slot) {
        s->dirty_mode->track_slot(s, slot, on);
    }
    if (!on) {
        g_clear_pointer(&slot->dirty_bmap, g_free);
        g_clear_pointer(&slot->clear_bmap, g_free);
    }
}

bool kvm_dirty_log_vcpu_init(KVMState *s, CPUState *cpu, Error **errp)
{
    return !s->dirty_mode->vcpu_init || s->dirty_mode->vcpu_init(s, cpu, errp);
}

int kvm_dirty_log_ring_full(KVMState *s)
{
    return kvm_dirty_ring_reap(s);
}

int kvm_dirty_ring_harvest(KVMState *s)
{
    return kvm_dirty_ring_enabled(s) ? kvm_dirty_ring_reap(s) : 0;
}

uint64_t kvm_dirty_ring_bytes(KVMState *s)
{
    return kvm_dirty_ring_enabled(s) ? (uint64_t)s->opts.dirty_ring_size * 4096 : 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test-dirty's fake world (dirty-fake.h). */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "system/kvm.h"
#include "system/kvm-dirty-client.h"
#include "system/memory.h"
#include "trace/trace.h"
#include "dirty-fake.h"

/* ---- Fake trace backend: formats every event so bad arguments show ---- */

bool trace_active;
unsigned trace_clears;

void trace_event_printf(const char *event, const char *fmt, ...)
{
    g_autofree char *line = NULL;
    va_list ap;

    va_start(ap, fmt);
    line = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    trace_clears += !strcmp(event, "dirty_clear");
}

/* ---- Layouts: RAMBlocks and the slots that map them ---- */

/* Our PC: 3.5 GiB RAM, low slot 3 GiB at 0, high slot at 3 GiB; a small block; a slotless one. */
const Layout pc_layout = {
    "pc",
    { 917504, 1000, 300 },
    { { 0, 0, 786432 }, { 0, 786432, 131072 }, { 1, 0, 1000 } },
};
/* Small enough to check every page at every step; shift 8 spans slots at 512..767. */
const Layout small_layout = {
    "small",
    { 840, 77 },
    { { 0, 0, 640 }, { 0, 640, 200 }, { 1, 0, 77 } },
};
/* Holes: pages 100..127 and 428..447 only the VMM can write. */
const Layout gaps_layout = {
    "gaps",
    { 1000 },
    { { 0, 0, 100 }, { 0, 128, 300 }, { 0, 448, 552 } },
};
/* Not ours, but allowed: a slot at a page offset that is not word aligned. */
const Layout unaligned_layout = {
    "unaligned",
    { 1000, 130 },
    { { 0, 0, 100 }, { 0, 100, 900 }, { 1, 3, 127 } },
};

/* ---- The fake RAM and KVM ---- */

DirtyFake fake;


GPtrArray *ram_blocks(void)
{
    return fake.blocks;
}

void ram_vmm_dirty_log_start(void)
{
    fake.vmm_logging = true;
}

void ram_vmm_dirty_log_stop(void)
{
    fake.vmm_logging = false;
}

bool kvm_dirty_log_needs_clear(KVMState *s)
{
    return fake.clear_mode;
}

/* The one client of the fake dirty log: the migration's. */
struct KVMDirtyClient {
    KVMState *s;
};
static KVMDirtyClient fake_client;

static KVMDirtyClient *fake_start(KVMState *s, const RAMBlock *rb, bool deferred, Error **errp)
{
    g_assert_null(rb);          /* the migration tracks every slot */
    g_assert_false(fake.kvm_logging);
    /* As dirty.c must: clear-log write-protects nothing at start anyway. */
    g_assert_true(deferred == !fake.clear_mode);
    fake.deferred = deferred;
    for (int i = 0; i < s->nr_slots; i++) {
        fake.armed[i] = !deferred;
    }
    if (fake.start_fails) {
        error_setg(errp, "enabling dirty logging on KVM slot 0 failed");
        return NULL;
    }
    fake_client.s = s;
    for (int i = 0; i < s->nr_slots; i++) {
        s->slots[i].dirty_bmap = bitmap_new(s->slots[i].npages);
        fake.kernel[i] = bitmap_new(s->slots[i].npages);
        /* KVM_DIRTY_LOG_INITIALLY_SET: every page dirty, none protected. */
        if (fake.clear_mode) {
            bitmap_fill(fake.kernel[i], s->slots[i].npages);
        }
    }
    fake.kvm_logging = true;
    return &fake_client;
}

KVMDirtyClient *kvm_dirty_client_start(KVMState *s, const char *name, const RAMBlock *rb,
                                       Error **errp)
{
    return fake_start(s, rb, false, errp);
}

KVMDirtyClient *kvm_dirty_client_start_deferred(KVMState *s, const char *name,
                                                const RAMBlock *rb, Error **errp)
{
    return fake_start(s, rb, true, errp);
}

/* A write to a slot is logged only once the slot is armed (get-log, ring). */
int kvm_dirty_client_arm(KVMDirtyClient *c, KVMSlot *slot)
{
    int i = slot - c->s->slots;

    g_assert_true(c == &fake_client && fake.kvm_logging && fake.deferred);
    g_assert_true(i >= 0 && i < c->s->nr_slots);
    g_assert_false(fake.armed[i]);      /* dirty.c arms each slot once */
    if (fake.arm_fails > 0) {
        fake.arm_fails--;
        return -EIO;
    }
    fake.armed[i] = true;
    return 0;
}

void kvm_dirty_client_stop(KVMDirtyClient *c)
{
    KVMState *s = c->s;

    g_assert_true(c == &fake_client);
    for (int i = 0; i < s->nr_slots; i++) {
        g_clear_pointer(&s->slots[i].dirty_bmap, g_free);
        g_clear_pointer(&fake.kernel[i], g_free);
    }
    fake.kvm_logging = false;
}

/* Each slot read once and handed to @take, as accel/kvm/kvm-dirty-clients.c does. */
int kvm_dirty_client_sync(KVMDirtyClient *c, KVMDirtyTakeFn *take, void *opaque)
{
    KVMState *s = c->s;

    g_assert_true(c == &fake_client && fake.kvm_logging);
    if (fake.sync_ret) {
        return fake.sync_ret;
    }
    fake.failed_since_sync = false;
    for (int i = 0; i < s->nr_slots; i++) {
        KVMSlot *slot = &s->slots[i];

        if (!fake.armed[i]) {
            continue;           /* as kvm-dirty-clients.c: not the client's yet */
        }
        bitmap_copy(slot->dirty_bmap, fake.kernel[i], slot->npages);
        if (!fake.clear_mode) {
            bitmap_zero(fake.kernel[i], slot->npages);
        }
        take(opaque, slot, slot->dirty_bmap);
        /* vCPUs keep running while we sync. */
        if (fake.race) {
            fake.race(fake.sim, -1, 0, 0);
        }
    }
    return 0;
}

/* Same contract as accel/kvm/kvm-dirty-clients.c: re-arm only what was read. */
int kvm_dirty_client_clear(KVMDirtyClient *kc, KVMSlot *slot, uint64_t first, uint64_t npages)
{
    KVMState *s = kc->s;
    int idx = slot - s->slots;
    ClearCall c = { idx, first, npages };

    g_assert_true(fake.clear_mode && fake.kvm_logging);
    g_assert_true(idx >= 0 && idx < s->nr_slots);
    g_assert_true(npages > 0 && first + npages <= slot->npages);
    g_array_append_val(fake.clears, c);
    if (fake.race) {
        fake.race(fake.sim, idx, first, npages);
    }
    if (fake.fail_clears > 0 ||
        (fake.sim && g_rand_int_range(fake.sim->r, 0, 100) < fake.clear_fail_pct)) {
        fake.fail_clears -= fake.fail_clears > 0;
        fake.failed_since_sync = true;
        return -EFAULT;
    }
    for (uint64_t p = first; p < first + npages; p++) {
        if (test_and_clear_bit(p, slot->dirty_bmap)) {
            clear_bit(p, fake.kernel[idx]);
        }
    }
    return 0;
}

DirtyTracker *setup(const Layout *l, bool clear_mode, unsigned shift)
{
    DirtyTracker *dt = g_new0(DirtyTracker, 1);
    KVMState *s = g_new0(KVMState, 1);
    int nb = 0;

    memset(&fake, 0, sizeof(fake));
    fake.blocks = g_ptr_array_new();
    fake.clears = g_array_new(false, true, sizeof(ClearCall));
    fake.clear_mode = clear_mode;
    fake.kvm = s;
    fake.layout = l;
    for (; l->block_pages[nb]; nb++) {
        RAMBlock *rb = g_new0(RAMBlock, 1);

        g_snprintf(rb->idstr, sizeof(rb->idstr), "block%d", nb);
        rb->used_length = l->block_pages[nb] << TARGET_PAGE_BITS;
        rb->vmm_dirty_bmap = bitmap_new(l->block_pages[nb]);
        /* Stale software bits from before logging must not count. */
        bitmap_fill(rb->vmm_dirty_bmap, l->block_pages[nb]);
        g_ptr_array_add(fake.blocks, rb);
    }
    while (l->slots[s->nr_slots].npages) {
        s->nr_slots++;
    }
    s->slots = g_new0(KVMSlot, s->nr_slots);
    for (int i = 0; i < s->nr_slots; i++) {
        const SlotDef *d = &l->slots[i];

        g_assert_cmpuint(d->offset + d->npages, <=, l->block_pages[d->block]);
        s->slots[i].slot = i;
        s->slots[i].rb = g_ptr_array_index(fake.blocks, d->block);
        s->slots[i].ram_offset = d->offset << TARGET_PAGE_BITS;
        s->slots[i].npages = d->npages;
        s->slots[i].memory_size = d->npages << TARGET_PAGE_BITS;
    }
    g_assert_true(dirty_tracker_init(dt, s, shift, false, &error_abort));
    return dt;
}

void teardown(DirtyTracker *dt)
{
    KVMState *s = fake.kvm;

    dirty_tracker_cleanup(dt);
    g_assert_false(fake.kvm_logging || fake.vmm_logging);
    for (guint i = 0; i < fake.blocks->len; i++) {
        RAMBlock *rb = g_ptr_array_index(fake.blocks, i);

        g_free(rb->vmm_dirty_bmap);
        g_free(rb);
    }
    g_ptr_array_free(fake.blocks, true);
    g_array_free(fake.clears, true);
    g_free(s->slots);
    g_free(s);
    g_free(dt);
}


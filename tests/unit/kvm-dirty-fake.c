/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The fake kernel of the dirty-log unit tests: see kvm-dirty-fake.h. */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "system/cpus.h"
#include "system/kvm.h"
#include "system/memory.h"
#include "trace/trace.h"
#include "accel/kvm/kvm-dirty-ring.h"
#include "kvm-dirty-fake.h"

#define MANUAL_PROTECT (KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE | KVM_DIRTY_LOG_INITIALLY_SET)

GPtrArray *vcpus;
bool trace_active;

void trace_event_printf(const char *event, const char *fmt, ...)
{
}

/*
 * Blocks and slots: "ram" in slots 0 and 1 (not word-aligned sizes),
 * "vga.vram" in slot 2, "rom" in slot 3 (one page).
 */
const uint64_t slot_pages[NSLOTS] = { 200, 130, 96, 1 };
static const int slot_block[NSLOTS] = { 0, 0, 1, 2 };

FakeKernel k;
void (*fake_on_write)(int slot, uint64_t page);

static void race(int slot, uint64_t first, uint64_t n)
{
    if (k.race && g_rand_int_range(k.race, 0, 4) == 0) {
        guest_write(slot, first + g_rand_int_range(k.race, 0, n), 0);
    }
}

static int fake_get_dirty_log(struct kvm_dirty_log *d)
{
    int i = d->slot;
    uint64_t n = slot_pages[i];

    g_assert_true(i >= 0 && i < NSLOTS && k.mode != MODE_RING);
    g_assert_true(d->dirty_bitmap == k.s->slots[i].dirty_bmap);
    if (!k.logging[i]) {
        return -ENOENT;
    }
    race(i, 0, n);
    memcpy(d->dirty_bitmap, k.dirty[i], BITS_TO_LONGS(n) * sizeof(long));
    if (k.mode == MODE_GET) {
        bitmap_or(k.wp[i], k.wp[i], k.dirty[i], n);
        bitmap_zero(k.dirty[i], n);
    }
    race(i, 0, n);
    return 0;
}

static int fake_clear_dirty_log(struct kvm_clear_dirty_log *c)
{
    int i = c->slot;
    const unsigned long *mask = c->dirty_bitmap;

    g_assert_true(i >= 0 && i < NSLOTS && k.mode == MODE_CLEAR && k.logging[i]);
    g_assert_cmpuint(c->first_page % 64, ==, 0);
    g_assert_true(c->num_pages % 64 == 0 || c->first_page + c->num_pages == slot_pages[i]);
    g_assert_cmpuint(c->first_page + c->num_pages, <=, slot_pages[i]);
    race(i, c->first_page, c->num_pages);
    if (k.clear_ret) {
        int ret = k.clear_ret;

        k.clear_ret = 0;
        return ret;
    }
    for (uint64_t b = 0; b < c->num_pages; b++) {
        uint64_t p = c->first_page + b;

        if (test_bit(b, mask) && test_and_clear_bit(p, k.dirty[i])) {
            set_bit(p, k.wp[i]);
        }
    }
    race(i, c->first_page, c->num_pages);
    return 0;
}

static void fake_reset_rings(void)
{
    for (guint v = 0; v < vcpus->len; v++) {
        CPUState *cpu = g_ptr_array_index(vcpus, v);

        for (int e = 0; e < RING_ENTRIES; e++) {
            struct kvm_dirty_gfn *g = &cpu->dirty_gfns[e];

            if (g->flags == KVM_DIRTY_GFN_F_RESET) {
                if (g->slot < NSLOTS && k.logging[g->slot]) {
                    set_bit(g->offset, k.wp[g->slot]);
                }
                g->flags = 0;
            }
        }
    }
}

int kvm_vm_ioctl(KVMState *s, unsigned long req, void *arg)
{
    g_assert(s == k.s);
    switch (req) {
    case KVM_GET_DIRTY_LOG:
        return fake_get_dirty_log(arg);
    case KVM_CLEAR_DIRTY_LOG:
        return fake_clear_dirty_log(arg);
    case KVM_RESET_DIRTY_RINGS:
        if (k.reset_ret) {
            int ret = k.reset_ret;

            k.reset_ret = 0;
            return ret;     /* nothing re-protected */
        }
        fake_reset_rings();
        return 0;
    case KVM_ENABLE_CAP:
        return 0;
    default:
        g_assert_not_reached();
    }
}

/* Logging on: get-log and the ring protect every page, clear-log's INITIALLY_SET dirties them. */
int kvm_slot_set_flags(KVMState *s, KVMSlot *slot, uint32_t flags)
{
    int i = slot - s->slots;
    uint64_t n = slot_pages[i];
    bool on = flags & KVM_MEM_LOG_DIRTY_PAGES;

    k.set_flags_calls[i]++;
    if (i == k.set_flags_fail_slot) {
        return -EBUSY;
    }
    if (on && !k.logging[i]) {
        bitmap_zero(k.dirty[i], n);
        bitmap_fill(k.wp[i], n);
        if (k.mode == MODE_CLEAR) {
            bitmap_fill(k.dirty[i], n);
            bitmap_zero(k.wp[i], n);
        }
    } else if (!on) {
        bitmap_zero(k.dirty[i], n);
        bitmap_zero(k.wp[i], n);
    }
    k.logging[i] = on;
    slot->flags = flags;
    return 0;
}

void kvm_dirty_reaper_start(KVMState *s)
{
    g_assert_false(k.reaper_running);
    k.reaper_running = true;
}

void kvm_dirty_reaper_stop(void)
{
    g_assert_true(k.reaper_running);
    k.reaper_running = false;
}

/* A vCPU writes @page of @slot; a full ring makes it harvest first, as KVM_EXIT_DIRTY_RING_FULL. */
void guest_write(int slot, uint64_t page, int vcpu)
{
    k.version[slot][page]++;
    if (fake_on_write) {
        fake_on_write(slot, page);
    }
    if (!k.logging[slot] || !test_and_clear_bit(page, k.wp[slot])) {
        return;
    }
    if (k.mode != MODE_RING) {
        set_bit(page, k.dirty[slot]);
    } else {
        CPUState *cpu = g_ptr_array_index(vcpus, vcpu);
        struct kvm_dirty_gfn *e = &cpu->dirty_gfns[k.push[vcpu] % RING_ENTRIES];

        if (e->flags) {
            g_assert_cmpint(kvm_dirty_log_ring_full(k.s), ==, 0);
            g_assert_cmpuint(e->flags, ==, 0);
        }
        e->slot = slot;
        e->offset = page;
        __atomic_store_n(&e->flags, KVM_DIRTY_GFN_F_DIRTY, __ATOMIC_RELEASE);
        k.push[vcpu]++;
    }
}

/* @out := the pages of @slot whose writes KVM would report to a later read of the slot. */
void kvm_reported(int slot, unsigned long *out)
{
    KVMSlot *ks = &k.s->slots[slot];

    if (k.mode != MODE_RING) {
        bitmap_copy(out, k.dirty[slot], slot_pages[slot]);
        return;
    }
    bitmap_zero(out, slot_pages[slot]);
    if (ks->harvest_bmap) {
        bitmap_copy(out, ks->harvest_bmap, slot_pages[slot]);
    }
    for (guint v = 0; v < vcpus->len; v++) {
        CPUState *cpu = g_ptr_array_index(vcpus, v);

        for (int e = 0; e < RING_ENTRIES; e++) {
            struct kvm_dirty_gfn *g = &cpu->dirty_gfns[e];

            if (g->flags == KVM_DIRTY_GFN_F_DIRTY && g->slot == (uint32_t)slot) {
                set_bit(g->offset, out);
            }
        }
    }
}

bool kvm_will_report(int slot, uint64_t page)
{
    g_autofree unsigned long *rep = bitmap_new(slot_pages[slot]);

    kvm_reported(slot, rep);
    return test_bit(page, rep);
}

void vm_new(FakeMode mode)
{
    static const char *const names[] = { "ram", "vga.vram", "rom" };
    KVMState *s = g_new0(KVMState, 1);

    memset(&k, 0, sizeof(k));
    k.mode = mode;
    k.s = s;
    k.set_flags_fail_slot = -1;
    for (int b = 0; b < 3; b++) {
        k.blocks[b] = g_new0(RAMBlock, 1);
        g_strlcpy(k.blocks[b]->idstr, names[b], sizeof(k.blocks[b]->idstr));
    }
    s->nr_slots = NSLOTS;
    s->slots = g_new0(KVMSlot, NSLOTS);
    for (int i = 0, off[3] = { 0 }; i < NSLOTS; i++) {
        KVMSlot *ks = &s->slots[i];

        ks->slot = i;           /* the ring names slots by index */
        ks->npages = slot_pages[i];
        ks->memory_size = ks->npages << TARGET_PAGE_BITS;
        ks->rb = k.blocks[slot_block[i]];
        ks->ram_offset = (uint64_t)off[slot_block[i]] << TARGET_PAGE_BITS;
        off[slot_block[i]] += ks->npages;
        k.dirty[i] = bitmap_new(ks->npages);
        k.wp[i] = bitmap_new(ks->npages);
        k.version[i] = g_new0(uint32_t, ks->npages);
    }
    s->manual_protect_caps = MANUAL_PROTECT;
    s->opts.dirty_log = mode == MODE_GET ? "get" : mode == MODE_CLEAR ? "clear" : NULL;
    if (mode == MODE_RING) {
        s->opts.dirty_ring_size = RING_ENTRIES;
        s->dirty_ring_max_bytes = 65536 * sizeof(struct kvm_dirty_gfn);
        s->dirty_ring_acq_rel = true;
    }
    g_assert_true(kvm_dirty_log_init(s, &error_abort));
    vcpus = g_ptr_array_new();
    for (int v = 0; v < NVCPUS; v++) {
        CPUState *cpu = g_new0(CPUState, 1);

        cpu->cpu_index = v;
        if (mode == MODE_RING) {
            cpu->dirty_gfns = g_new0(struct kvm_dirty_gfn, RING_ENTRIES);
        }
        g_ptr_array_add(vcpus, cpu);
    }
}

void vm_free(void)
{
    g_assert_null(k.s->dirty_clients);
    g_assert_false(k.reaper_running);
    for (int i = 0; i < NSLOTS; i++) {
        g_assert_false(k.logging[i]);
        g_assert_null(k.s->slots[i].dirty_bmap);
        g_assert_null(k.s->slots[i].clear_bmap);
        g_assert_null(k.s->slots[i].harvest_bmap);
        g_free(k.dirty[i]);
        g_free(k.wp[i]);
        g_free(k.version[i]);
    }
    for (guint v = 0; v < vcpus->len; v++) {
        CPUState *cpu = g_ptr_array_index(vcpus, v);

        g_free(cpu->dirty_gfns);
        g_free(cpu);
    }
    g_ptr_array_free(vcpus, true);
    vcpus = NULL;
    for (int b = 0; b < 3; b++) {
        g_free(k.blocks[b]);
    }
    g_free(k.s->slots);
    g_free(k.s);
    if (k.race) {
        g_rand_free(k.race);
    }
}


/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for accel/kvm/kvm-dirty-ring.c through the dirty-ring row of
 * kvm-dirty.c. A fake kernel pushes dirtied frames into each vCPU's ring
 * as KVM does (flags DIRTY), and on KVM_RESET_DIRTY_RINGS frees the
 * entries userspace marked RESET; a reset can be made to fail. Checked:
 * harvesting hands exactly the pushed pages to the slots' bitmaps, junk
 * entries are reset but not recorded, and a failed reset (from a sync or
 * from a vCPU whose ring filled) fails every later sync of the logging
 * session, since pages whose re-protection failed could be written again
 * without a trace. No /dev/kvm, no kvm-all.c.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "system/cpus.h"
#include "system/kvm.h"
#include "system/kvm-dirty-client.h"
#include "trace/trace.h"
#include "accel/kvm/kvm-dirty-ring.h"

#define RING_ENTRIES 64
#define NVCPUS 2

GPtrArray *vcpus;

/* Trace points on: each harvest traces the entries it took. */
bool trace_active = true;
static uint64_t traced_entries;
static int reap_traces;

void trace_event_printf(const char *event, const char *fmt, ...)
{
    char line[256];
    const char *e;
    va_list ap;

    if (strcmp(event, "kvm_dirty_ring_reap")) {
        return;
    }
    va_start(ap, fmt);
    g_vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    e = strstr(line, "entries=");
    g_assert_nonnull(e);
    traced_entries += g_ascii_strtoull(e + strlen("entries="), NULL, 10);
    reap_traces++;
}

/* ---- The fake kernel ---- */

static struct {
    KVMState *s;
    uint32_t push[NVCPUS];      /* the kernel's write index per ring */
    int resets;                 /* KVM_RESET_DIRTY_RINGS calls */
    bool reaper_running;        /* kvm_dirty_reaper_start() without a stop since */
    int reset_ret;              /* injected result of the next resets */
    int enable_caps;
    KVMDirtyClient *client;     /* the one client, tracking every slot */
} fake;

int kvm_vm_ioctl(KVMState *s, unsigned long req, void *arg)
{
    g_assert(s == fake.s);
    switch (req) {
    case KVM_ENABLE_CAP: {
        struct kvm_enable_cap *cap = arg;

        g_assert_cmpuint(cap->cap, ==, KVM_CAP_DIRTY_LOG_RING_ACQ_REL);
        g_assert_cmpuint(cap->args[0], ==, RING_ENTRIES * sizeof(struct kvm_dirty_gfn));
        fake.enable_caps++;
        return 0;
    }
    case KVM_RESET_DIRTY_RINGS:
        fake.resets++;
        if (fake.reset_ret) {
            return fake.reset_ret;
        }
        /* The kernel re-protects and frees what userspace collected. */
        for (guint i = 0; i < vcpus->len; i++) {
            CPUState *cpu = g_ptr_array_index(vcpus, i);

            for (int e = 0; e < RING_ENTRIES; e++) {
                if (cpu->dirty_gfns[e].flags == KVM_DIRTY_GFN_F_RESET) {
                    cpu->dirty_gfns[e].flags = 0;
                }
            }
        }
        return 0;
    default:
        g_assert_not_reached();
    }
}

int kvm_slot_set_flags(KVMState *s, KVMSlot *slot, uint32_t flags)
{
    slot->flags = flags;
    return 0;
}

/* The reaper thread is kvm-dirty-reaper.c's: here only whether it would run. */
void kvm_dirty_reaper_start(KVMState *s)
{
    g_assert_false(fake.reaper_running);
    fake.reaper_running = true;
}

void kvm_dirty_reaper_stop(void)
{
    g_assert_true(fake.reaper_running);
    fake.reaper_running = false;
}

/* vCPU @v writes page @offset of the slot with KVM id @slot_id: KVM pushes a ring entry. */
static void guest_write(int v, uint32_t slot_id, uint64_t offset)
{
    CPUState *cpu = g_ptr_array_index(vcpus, v);
    struct kvm_dirty_gfn *e = &cpu->dirty_gfns[fake.push[v] % RING_ENTRIES];

    g_assert_cmpuint(e->flags, ==, 0);     /* the test never overfills a ring */
    e->slot = slot_id;
    e->offset = offset;
    __atomic_store_n(&e->flags, KVM_DIRTY_GFN_F_DIRTY, __ATOMIC_RELEASE);
    fake.push[v]++;
}

/* A dirty-ring VM with two slots of @npages0 and @npages1 pages, logging on. */
static KVMState *ring_vm_new(uint64_t npages0, uint64_t npages1)
{
    KVMState *s = g_new0(KVMState, 1);
    uint64_t npages[2] = { npages0, npages1 };

    memset(&fake, 0, sizeof(fake));
    fake.s = s;
    s->nr_slots = 2;
    s->slots = g_new0(KVMSlot, 2);
    for (int i = 0; i < 2; i++) {
        s->slots[i].slot = i;
        s->slots[i].npages = npages[i];
        s->slots[i].memory_size = npages[i] << TARGET_PAGE_BITS;
    }
    s->opts.dirty_ring_size = RING_ENTRIES;
    s->dirty_ring_max_bytes = 65536 * sizeof(struct kvm_dirty_gfn);
    s->dirty_ring_acq_rel = true;
    g_assert_true(kvm_dirty_log_init(s, &error_abort));
    g_assert_cmpstr(kvm_dirty_log_mode_name(s), ==, "dirty-ring");
    g_assert_cmpint(fake.enable_caps, ==, 1);
    vcpus = g_ptr_array_new();
    for (int v = 0; v < NVCPUS; v++) {
        CPUState *cpu = g_new0(CPUState, 1);

        cpu->cpu_index = v;
        /* What kvm_dirty_ring_vcpu_init maps from the vCPU fd. */
        cpu->dirty_gfns = g_new0(struct kvm_dirty_gfn, RING_ENTRIES);
        g_ptr_array_add(vcpus, cpu);
    }
    fake.client = kvm_dirty_client_start(s, "test", NULL, &error_abort);
    g_assert_true(fake.reaper_running);
    return s;
}

static void ring_vm_free(KVMState *s)
{
    g_clear_pointer(&fake.client, kvm_dirty_client_stop);
    /* The slots stopped logging: no thread harvests any more. */
    g_assert_false(fake.reaper_running);
    for (guint i = 0; i < vcpus->len; i++) {
        CPUState *cpu = g_ptr_array_index(vcpus, i);

        g_free(cpu->dirty_gfns);
        g_free(cpu);
    }
    g_ptr_array_free(vcpus, true);
    vcpus = NULL;
    g_free(s->slots);
    g_free(s);
}

static void assert_ring_free(void)
{
    for (guint i = 0; i < vcpus->len; i++) {
        CPUState *cpu = g_ptr_array_index(vcpus, i);

        for (int e = 0; e < RING_ENTRIES; e++) {
            g_assert_cmpuint(cpu->dirty_gfns[e].flags, ==, 0);
        }
    }
}

/* ---- Tests ---- */

static void test_harvest(void)
{
    KVMState *s = ring_vm_new(200, 1000);
    KVMSlot *s0 = &s->slots[0], *s1 = &s->slots[1];

    guest_write(0, 0, 3);
    guest_write(0, 1, 999);
    guest_write(1, 0, 199);
    guest_write(1, 0, 3);       /* the same page from two vCPUs: one bit */
    traced_entries = reap_traces = 0;
    g_assert_cmpint(kvm_dirty_client_sync(fake.client, NULL, NULL), ==, 0);
    g_assert_cmpint(fake.resets, ==, 1);
    g_assert_cmpint(reap_traces, ==, 1);
    g_assert_cmpuint(traced_entries, ==, 4);
    assert_ring_free();
    g_assert_cmpuint(bitmap_count_one(s0->dirty_bmap, s0->npages), ==, 2);
    g_assert_true(test_bit(3, s0->dirty_bmap) && test_bit(199, s0->dirty_bmap));
    g_assert_cmpuint(bitmap_count_one(s1->dirty_bmap, s1->npages), ==, 1);
    g_assert_true(test_bit(999, s1->dirty_bmap));
    /* A new round: nothing written, nothing handed over, no reset asked. */
    g_assert_cmpint(kvm_dirty_client_sync(fake.client, NULL, NULL), ==, 0);
    g_assert_cmpint(fake.resets, ==, 1);
    g_assert_true(bitmap_empty(s0->dirty_bmap, s0->npages));
    g_assert_true(bitmap_empty(s1->dirty_bmap, s1->npages));
    /* The ring wraps: entries are reused after their reset. */
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < RING_ENTRIES - 1; i++) {
            guest_write(round & 1, 1, (round * 100 + i) % 1000);
        }
        g_assert_cmpint(kvm_dirty_client_sync(fake.client, NULL, NULL), ==, 0);
        g_assert_cmpuint(bitmap_count_one(s1->dirty_bmap, s1->npages), ==, RING_ENTRIES - 1);
        assert_ring_free();
    }
    ring_vm_free(s);
}

/* How full a ring is, as the reaper asks it: the Nth unharvested entry tells. */
static void test_filling(void)
{
    KVMState *s = ring_vm_new(200, 1000);

    g_assert_false(kvm_dirty_ring_filling(s, 1));
    for (int i = 0; i < 10; i++) {
        guest_write(1, 0, i);
    }
    g_assert_true(kvm_dirty_ring_filling(s, 1));
    g_assert_true(kvm_dirty_ring_filling(s, 10));
    g_assert_false(kvm_dirty_ring_filling(s, 11));
    /* More than the ring holds asks for a full ring. */
    g_assert_false(kvm_dirty_ring_filling(s, RING_ENTRIES * 2));
    g_assert_cmpint(kvm_dirty_ring_reap(s), ==, 0);
    g_assert_false(kvm_dirty_ring_filling(s, 1));
    /* After the fetch index moved on and the ring wrapped. */
    for (int i = 0; i < RING_ENTRIES - 1; i++) {
        guest_write(1, 0, i);
    }
    g_assert_true(kvm_dirty_ring_filling(s, RING_ENTRIES - 1));
    g_assert_false(kvm_dirty_ring_filling(s, RING_ENTRIES));
    ring_vm_free(s);
}

/* Entries naming no slot of ours, or a page past the slot, are reset and dropped. */
static void test_junk_entries(void)
{
    KVMState *s = ring_vm_new(200, 100);

    guest_write(0, 7, 1);               /* no such slot */
    guest_write(0, 1 << 16 | 0, 1);     /* address space 1 */
    guest_write(0, 0, 200);             /* past the slot */
    guest_write(1, 1, ~0ULL);
    guest_write(1, 1, 99);
    g_assert_cmpint(kvm_dirty_client_sync(fake.client, NULL, NULL), ==, 0);
    assert_ring_free();
    g_assert_true(bitmap_empty(s->slots[0].dirty_bmap, 200));
    g_assert_cmpuint(bitmap_count_one(s->slots[1].dirty_bmap, 100), ==, 1);
    g_assert_true(test_bit(99, s->slots[1].dirty_bmap));
    ring_vm_free(s);
}

/*
 * A failed reset leaves harvested pages writable with no ring entry to
 * come: the sync fails, and so does every later one until logging starts
 * again (which write-protects everything anew).
 */
static void test_reset_fails(void)
{
    KVMState *s = ring_vm_new(200, 100);

    guest_write(0, 0, 5);
    fake.reset_ret = -EFAULT;
    g_assert_cmpint(kvm_dirty_client_sync(fake.client, NULL, NULL), ==, -EFAULT);
    g_assert_cmpint(fake.resets, ==, 1);
    /* The kernel works again, but pages may have been lost meanwhile. */
    fake.reset_ret = 0;
    guest_write(1, 1, 7);
    g_assert_cmpint(kvm_dirty_client_sync(fake.client, NULL, NULL), ==, -EFAULT);
    g_assert_cmpint(kvm_dirty_client_sync(fake.client, NULL, NULL), ==, -EFAULT);
    /* A new logging session starts clean. */
    g_clear_pointer(&fake.client, kvm_dirty_client_stop);
    fake.client = kvm_dirty_client_start(s, "test", NULL, &error_abort);
    guest_write(0, 0, 9);
    g_assert_cmpint(kvm_dirty_client_sync(fake.client, NULL, NULL), ==, 0);
    g_assert_true(test_bit(9, s->slots[0].dirty_bmap));
    ring_vm_free(s);
}

/* A vCPU whose ring filled harvests by itself: its failure fails the next sync. */
static void test_ring_full_reset_fails(void)
{
    KVMState *s = ring_vm_new(200, 100);

    for (int i = 0; i < RING_ENTRIES; i++) {
        guest_write(1, 0, i);
    }
    fake.reset_ret = -EIO;
    g_assert_cmpint(kvm_dirty_log_ring_full(s), ==, -EIO);
    fake.reset_ret = 0;
    g_assert_cmpint(kvm_dirty_client_sync(fake.client, NULL, NULL), ==, -EIO);
    ring_vm_free(s);

    /* And when the reset works, the harvest reaches the next sync. */
    s = ring_vm_new(200, 100);
    for (int i = 0; i < RING_ENTRIES; i++) {
        guest_write(1, 0, i);
    }
    g_assert_cmpint(kvm_dirty_log_ring_full(s), ==, 0);
    assert_ring_free();
    g_assert_cmpint(kvm_dirty_client_sync(fake.client, NULL, NULL), ==, 0);
    g_assert_cmpuint(bitmap_count_one(s->slots[0].dirty_bmap, 200), ==, RING_ENTRIES);
    ring_vm_free(s);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/kvm-dirty-ring/harvest", test_harvest);
    g_test_add_func("/kvm-dirty-ring/filling", test_filling);
    g_test_add_func("/kvm-dirty-ring/junk-entries", test_junk_entries);
    g_test_add_func("/kvm-dirty-ring/reset-fails", test_reset_fails);
    g_test_add_func("/kvm-dirty-ring/ring-full-reset-fails", test_ring_full_reset_fails);
    return g_test_run();
}

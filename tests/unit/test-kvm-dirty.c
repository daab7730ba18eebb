/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for accel/kvm/kvm-dirty.c, mainly the clear-log window: every
 * KVM_CLEAR_DIRTY_LOG it issues (through one client of
 * kvm-dirty-clients.c) is recorded by a fake kvm_vm_ioctl (which also
 * refuses requests the kernel would refuse) and compared with a naive
 * reference: 64-page aligned start, 64-page multiple length unless it ends
 * at the slot end, and a bitmap holding exactly the slot bits that were
 * asked for and already read, and nothing else. Also mode selection and
 * the start/stop/sync hooks. Several clients: test-kvm-dirty-clients.c.
 * No /dev/kvm, no kvm-all.c.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "system/kvm.h"
#include "system/kvm-dirty-client.h"
#include "trace/trace.h"
#include "accel/kvm/kvm-dirty-log.h"
#include "accel/kvm/kvm-dirty-ring.h"

#define SEED 0xc1ea5109
#define MANUAL_PROTECT (KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE | KVM_DIRTY_LOG_INITIALLY_SET)
#define MAX_SLOTS 16

/* Trace points on: the clear's trace names the window KVM was asked for. */
bool trace_active = true;
static char last_clear_trace[128];
static int clear_traces;

void trace_event_printf(const char *event, const char *fmt, ...)
{
    va_list ap;

    if (strcmp(event, "kvm_clear_dirty_log")) {
        return;
    }
    va_start(ap, fmt);
    g_vsnprintf(last_clear_trace, sizeof(last_clear_trace), fmt, ap);
    va_end(ap);
    clear_traces++;
}

/* ---- The fake KVM: records requests, plays the kernel's checks ---- */

typedef struct ClearReq {
    uint32_t slot;
    uint64_t first_page;
    uint32_t num_pages;
    unsigned long *bmap;        /* copy of what the kernel would read */
} ClearReq;

static struct {
    GArray *clears;             /* ClearReq */
    int enable_caps;
    uint64_t enable_cap_args0;
    int get_logs;
    int get_log_ret;            /* injected KVM_GET_DIRTY_LOG result */
    int clear_ret;              /* injected KVM_CLEAR_DIRTY_LOG result */
    int set_flags_calls;
    int set_flags_fail_slot;    /* -1: never fail */
    unsigned long *kernel[MAX_SLOTS];  /* what GET_DIRTY_LOG returns */
    KVMState *s;
    KVMDirtyClient *client;     /* the one client, tracking every slot */
} fake;

static KVMSlot *fake_slot(uint32_t id)
{
    for (int i = 0; i < fake.s->nr_slots; i++) {
        if ((uint32_t)fake.s->slots[i].slot == id) {
            return &fake.s->slots[i];
        }
    }
    return NULL;
}

static int fake_clear_dirty_log(struct kvm_clear_dirty_log *c)
{
    KVMSlot *slot = fake_slot(c->slot);
    ClearReq r = { c->slot, c->first_page, c->num_pages, NULL };

    /* The kernel reads ALIGN(num_pages, 64) bits: copy exactly that. */
    r.bmap = g_memdup2(c->dirty_bitmap, BITS_TO_LONGS(c->num_pages) * sizeof(unsigned long));
    g_array_append_val(fake.clears, r);
    if (fake.clear_ret) {
        return fake.clear_ret;
    }
    /* kvm_clear_dirty_log_protect()'s checks. */
    if (!slot || (c->first_page & 63) ||
        ((c->num_pages & 63) && c->first_page + c->num_pages != slot->npages) ||
        c->first_page > slot->npages || c->num_pages > slot->npages - c->first_page) {
        return -EINVAL;
    }
    return 0;
}

int kvm_vm_ioctl(KVMState *s, unsigned long req, void *arg)
{
    g_assert(s == fake.s);
    switch (req) {
    case KVM_CLEAR_DIRTY_LOG:
        return fake_clear_dirty_log(arg);
    case KVM_GET_DIRTY_LOG: {
        struct kvm_dirty_log *d = arg;
        KVMSlot *slot = fake_slot(d->slot);

        g_assert(slot && d->dirty_bitmap == slot->dirty_bmap);
        fake.get_logs++;
        if (fake.get_log_ret) {
            return fake.get_log_ret;
        }
        memcpy(d->dirty_bitmap, fake.kernel[slot - s->slots],
               BITS_TO_LONGS(slot->npages) * sizeof(unsigned long));
        return 0;
    }
    case KVM_ENABLE_CAP: {
        struct kvm_enable_cap *cap = arg;

        g_assert_cmpuint(cap->cap, ==, KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2);
        fake.enable_caps++;
        fake.enable_cap_args0 = cap->args[0];
        return 0;
    }
    default:
        g_assert_not_reached();
    }
}

int kvm_slot_set_flags(KVMState *s, KVMSlot *slot, uint32_t flags)
{
    fake.set_flags_calls++;
    if (slot->slot == fake.set_flags_fail_slot) {
        return -EBUSY;
    }
    slot->flags = flags;
    return 0;
}

/* The dirty-ring row is never chosen here; kvm-dirty.c only needs the symbols. */
bool kvm_dirty_ring_enable(KVMState *s, Error **errp) { g_assert_not_reached(); }
bool kvm_dirty_ring_vcpu_init(KVMState *s, CPUState *cpu, Error **errp) { g_assert_not_reached(); }
int kvm_dirty_ring_reap(KVMState *s) { g_assert_not_reached(); }
int kvm_dirty_ring_sync_slot(KVMState *s, KVMSlot *slot) { g_assert_not_reached(); }
void kvm_dirty_ring_track_slot(KVMState *s, KVMSlot *slot, bool on) { g_assert_not_reached(); }
void kvm_dirty_ring_log_start(KVMState *s) { g_assert_not_reached(); }
void kvm_dirty_ring_log_stop(KVMState *s) { g_assert_not_reached(); }
bool kvm_dirty_ring_filling(KVMState *s, uint32_t entries) { g_assert_not_reached(); }
void kvm_dirty_reaper_start(KVMState *s) { g_assert_not_reached(); }
void kvm_dirty_reaper_stop(void) { g_assert_not_reached(); }

static void fake_reset_requests(void)
{
    for (guint i = 0; i < fake.clears->len; i++) {
        g_free(g_array_index(fake.clears, ClearReq, i).bmap);
    }
    g_array_set_size(fake.clears, 0);
}

/* A VM with one slot per entry of @npages (0-terminated), in @mode. */
static KVMState *vm_new(const uint64_t *npages, const char *mode, uint32_t caps)
{
    KVMState *s = g_new0(KVMState, 1);

    while (npages[s->nr_slots]) {
        s->nr_slots++;
    }
    g_assert_cmpint(s->nr_slots, <=, MAX_SLOTS);
    s->slots = g_new0(KVMSlot, s->nr_slots);
    for (int i = 0; i < s->nr_slots; i++) {
        /* Non-contiguous ids: the code must use slot->slot, not the index. */
        s->slots[i].slot = 10 + i;
        s->slots[i].npages = npages[i];
        s->slots[i].memory_size = npages[i] << TARGET_PAGE_BITS;
        fake.kernel[i] = bitmap_new(npages[i]);
    }
    s->opts.dirty_log = mode;
    s->manual_protect_caps = caps;
    memset(&fake, 0, offsetof(typeof(fake), kernel));
    fake.client = NULL;
    fake.clears = g_array_new(false, true, sizeof(ClearReq));
    fake.set_flags_fail_slot = -1;
    fake.s = s;
    return s;
}

static void vm_free(KVMState *s)
{
    g_clear_pointer(&fake.client, kvm_dirty_client_stop);
    g_assert_null(s->dirty_clients);
    for (int i = 0; i < s->nr_slots; i++) {
        g_clear_pointer(&fake.kernel[i], g_free);
    }
    fake_reset_requests();
    g_array_free(fake.clears, true);
    g_free(s->slots);
    g_free(s);
}

/*
 * A clear-log VM with one client tracking every slot, synced once (a
 * client clears only slots its own sync read).
 */
static KVMState *clear_vm_new(const uint64_t *npages)
{
    KVMState *s = vm_new(npages, "clear", MANUAL_PROTECT);

    g_assert_true(kvm_dirty_log_init(s, &error_abort));
    fake.client = kvm_dirty_client_start(s, "test", NULL, &error_abort);
    g_assert_cmpint(kvm_dirty_client_sync(fake.client, NULL, NULL), ==, 0);
    return s;
}

/* ---- The naive reference ---- */

static bool ref_get(const unsigned long *map, uint64_t i)
{
    return (map[i / 64] >> (i % 64)) & 1;
}

static void ref_put(unsigned long *map, uint64_t i, bool v)
{
    if (v) {
        map[i / 64] |= 1UL << (i % 64);
    } else {
        map[i / 64] &= ~(1UL << (i % 64));
    }
}

/*
 * Calls kvm_dirty_client_clear(first, npages) and checks the request and the
 * slot bitmap afterwards against a page-by-page reference.
 */
static void check_clear(KVMState *s, KVMSlot *slot, uint64_t first, uint64_t npages)
{
    uint64_t n = slot->npages, nwords = BITS_TO_LONGS(n);
    g_autofree unsigned long *before = g_memdup2(slot->dirty_bmap, nwords * sizeof(long));
    uint64_t lo = first, hi = first < n ? MIN(n, first + npages) : first;
    uint64_t want = 0, clears0 = s->dirty_stats.clears;
    int traces0 = clear_traces;
    g_autofree char *traced = NULL;
    ClearReq *r;

    for (uint64_t p = lo; p < hi; p++) {
        want += ref_get(before, p);
    }
    fake_reset_requests();
    g_assert_cmpint(kvm_dirty_client_clear(fake.client, slot, first, npages), ==, 0);

    if (!want) {
        /* Nothing read in the window: nothing to re-arm, no syscall. */
        g_assert_cmpuint(fake.clears->len, ==, 0);
        g_assert_cmpmem(slot->dirty_bmap, nwords * sizeof(long), before, nwords * sizeof(long));
        g_assert_cmpuint(s->dirty_stats.clears, ==, clears0);
        g_assert_cmpint(clear_traces, ==, traces0);
        return;
    }
    g_assert_cmpuint(fake.clears->len, ==, 1);
    g_assert_cmpuint(s->dirty_stats.clears, ==, clears0 + 1);
    r = &g_array_index(fake.clears, ClearReq, 0);
    g_assert_cmpint(clear_traces, ==, traces0 + 1);
    traced = g_strdup_printf("slot=%u first=%" PRIu64 " npages=%u us=", r->slot, r->first_page,
                             r->num_pages);
    g_assert_true(g_str_has_prefix(last_clear_trace, traced));
    g_assert_cmpuint(r->slot, ==, slot->slot);
    /* The window: the ask rounded out to 64 pages, clipped at the slot end. */
    g_assert_cmpuint(r->first_page % 64, ==, 0);
    g_assert_cmpuint(r->first_page, ==, lo & ~63ULL);
    g_assert_cmpuint(r->first_page + r->num_pages, ==, MIN(QEMU_ALIGN_UP(hi, 64), n));
    g_assert_true(r->num_pages % 64 == 0 || r->first_page + r->num_pages == n);
    /* Every bit the kernel reads, padding of the last word included. */
    for (uint64_t i = 0; i < QEMU_ALIGN_UP(r->num_pages, 64); i++) {
        uint64_t p = r->first_page + i;
        bool exp = p >= lo && p < hi && ref_get(before, p);

        if (ref_get(r->bmap, i) != exp) {
            g_error("slot of %" PRIu64 " pages, clear(%" PRIu64 ", %" PRIu64 "): request bit %"
                    PRIu64 " (page %" PRIu64 ") is %d", n, first, npages, i, p, !exp);
        }
    }
    /* Afterwards: exactly the window's bits are gone. */
    for (uint64_t p = 0; p < n; p++) {
        bool exp = ref_get(before, p) && !(p >= lo && p < hi);

        if (ref_get(slot->dirty_bmap, p) != exp) {
            g_error("slot of %" PRIu64 " pages, clear(%" PRIu64 ", %" PRIu64 "): slot bit %"
                    PRIu64 " is %d", n, first, npages, p, !exp);
        }
    }
}

static void fill_pattern(KVMSlot *slot, int pattern)
{
    bitmap_zero(slot->dirty_bmap, slot->npages);
    for (uint64_t p = 0; p < slot->npages; p++) {
        bool v;

        switch (pattern) {
        case 0: v = true; break;                    /* all read */
        case 1: v = p % 3 == 0; break;              /* sparse, crosses words */
        case 2: v = p % 64 == 63 || p % 64 == 0; break; /* word edges only */
        default: v = p == slot->npages - 1; break;  /* only the last page */
        }
        ref_put(slot->dirty_bmap, p, v);
    }
}

/* ---- Mode table and start/stop ---- */

static void test_mode_select(void)
{
    static const uint64_t np[] = { 128, 0 };
    g_autoptr(Error) err = NULL;
    KVMState *s;

    /* clear asked for but KVM lacks INITIALLY_SET: a clear error, no ioctl. */
    s = vm_new(np, "clear", KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE);
    g_assert_false(kvm_dirty_log_init(s, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "MANUAL_DIRTY_LOG_PROTECT2"));
    g_assert_cmpint(fake.enable_caps, ==, 0);
    vm_free(s);

    s = vm_new(np, "clear", MANUAL_PROTECT);
    g_assert_true(kvm_dirty_log_init(s, &error_abort));
    g_assert_cmpstr(kvm_dirty_log_mode_name(s), ==, "clear-log");
    g_assert_cmpint(fake.enable_caps, ==, 1);
    g_assert_cmpuint(fake.enable_cap_args0, ==, MANUAL_PROTECT);
    g_assert_true(kvm_dirty_log_needs_clear(s));
    vm_free(s);

    /* auto picks clear-log only when both flags are there. */
    s = vm_new(np, NULL, MANUAL_PROTECT);
    g_assert_true(kvm_dirty_log_init(s, &error_abort));
    g_assert_cmpstr(kvm_dirty_log_mode_name(s), ==, "clear-log");
    vm_free(s);
    s = vm_new(np, "auto", KVM_DIRTY_LOG_INITIALLY_SET);
    g_assert_true(kvm_dirty_log_init(s, &error_abort));
    g_assert_cmpstr(kvm_dirty_log_mode_name(s), ==, "get-log");
    g_assert_cmpint(fake.enable_caps, ==, 0);
    g_assert_false(kvm_dirty_log_needs_clear(s));
    vm_free(s);

    s = vm_new(np, "get", MANUAL_PROTECT);
    g_assert_true(kvm_dirty_log_init(s, &error_abort));
    g_assert_cmpstr(kvm_dirty_log_mode_name(s), ==, "get-log");
    vm_free(s);

    /* The ring excludes an explicit get/clear choice. */
    s = vm_new(np, "clear", MANUAL_PROTECT);
    s->opts.dirty_ring_size = 4096;
    g_assert_false(kvm_dirty_log_init(s, NULL));
    vm_free(s);
}

static void test_start_stop(void)
{
    static const uint64_t np[] = { 100, 64, 1, 0 };
    g_autoptr(Error) err = NULL;
    KVMState *s = clear_vm_new(np);

    g_assert_nonnull(fake.client);
    g_assert_cmpuint(s->dirty_clients->len, ==, 1);
    for (int i = 0; i < s->nr_slots; i++) {
        g_assert_nonnull(s->slots[i].dirty_bmap);
        g_assert_nonnull(s->slots[i].clear_bmap);
        g_assert_true(bitmap_empty(s->slots[i].dirty_bmap, s->slots[i].npages));
        g_assert_cmpuint(s->slots[i].flags & KVM_MEM_LOG_DIRTY_PAGES, !=, 0);
        g_assert_cmpint(s->slots[i].log_refs, ==, 1);
        g_assert_true(kvm_dirty_client_tracks(fake.client, &s->slots[i]));
    }
    g_clear_pointer(&fake.client, kvm_dirty_client_stop);
    g_assert_null(s->dirty_clients);
    for (int i = 0; i < s->nr_slots; i++) {
        g_assert_null(s->slots[i].dirty_bmap);
        g_assert_cmpuint(s->slots[i].flags & KVM_MEM_LOG_DIRTY_PAGES, ==, 0);
        g_assert_cmpint(s->slots[i].log_refs, ==, 0);
    }
    /* After stop there is no bitmap to take bits from: a no-op. */
    g_assert_cmpint(kvm_dirty_log_clear_slot(s, &s->slots[0], 0, 64), ==, 0);
    g_assert_cmpuint(fake.clears->len, ==, 0);

    /* A slot refusing the flag: error, and the earlier slots are rolled back. */
    fake.set_flags_fail_slot = s->slots[1].slot;
    g_assert_null(kvm_dirty_client_start(s, "test", NULL, &err));
    g_assert_nonnull(err);
    g_assert_null(s->dirty_clients);
    for (int i = 0; i < s->nr_slots; i++) {
        g_assert_null(s->slots[i].dirty_bmap);
        g_assert_cmpuint(s->slots[i].flags & KVM_MEM_LOG_DIRTY_PAGES, ==, 0);
        g_assert_cmpint(s->slots[i].log_refs, ==, 0);
    }
    vm_free(s);
}

/* KVMDirtyTakeFn of the tests: ORs what it is handed into @opaque's maps, per slot. */
static void take_into(void *opaque, KVMSlot *slot, const unsigned long *bits)
{
    unsigned long **maps = opaque;

    bitmap_or(maps[slot - fake.s->slots], maps[slot - fake.s->slots], bits, slot->npages);
}

static void test_sync(void)
{
    static const uint64_t np[] = { 130, 64, 0 };
    KVMState *s = clear_vm_new(np);
    g_autofree unsigned long *t0 = bitmap_new(130), *t1 = bitmap_new(64);
    unsigned long *taken[] = { t0, t1 };

    fake.get_logs = 0;
    bitmap_set(fake.kernel[0], 3, 70);
    ref_put(fake.kernel[1], 63, true);
    g_assert_cmpint(kvm_dirty_client_sync(fake.client, take_into, taken), ==, 0);
    g_assert_cmpint(fake.get_logs, ==, 2);
    g_assert_cmpuint(bitmap_count_one(s->slots[0].dirty_bmap, 130), ==, 70);
    g_assert_true(ref_get(s->slots[0].dirty_bmap, 72) && !ref_get(s->slots[0].dirty_bmap, 73));
    g_assert_true(ref_get(s->slots[1].dirty_bmap, 63));
    /* The client was handed exactly what KVM reported. */
    g_assert_true(bitmap_equal(t0, s->slots[0].dirty_bmap, 130));
    g_assert_true(bitmap_equal(t1, s->slots[1].dirty_bmap, 64));

    /* -ENOENT means the slot is not logging: nothing dirty, not an error. */
    fake.get_log_ret = -ENOENT;
    bitmap_zero(t0, 130);
    bitmap_zero(t1, 64);
    g_assert_cmpint(kvm_dirty_client_sync(fake.client, take_into, taken), ==, 0);
    g_assert_true(bitmap_empty(s->slots[0].dirty_bmap, 130));
    g_assert_true(bitmap_empty(s->slots[1].dirty_bmap, 64));
    g_assert_true(bitmap_empty(t0, 130) && bitmap_empty(t1, 64));
    /* Any other error stops the sync and is returned. */
    fake.get_log_ret = -EFAULT;
    fake.get_logs = 0;
    g_assert_cmpint(kvm_dirty_client_sync(fake.client, take_into, taken), ==, -EFAULT);
    g_assert_cmpint(fake.get_logs, ==, 1);
    vm_free(s);
}

/* get-log re-protects at every GET: clear is a no-op and leaves the bits. */
static void test_get_log_no_clear(void)
{
    static const uint64_t np[] = { 256, 0 };
    KVMState *s = vm_new(np, "get", 0);

    g_assert_true(kvm_dirty_log_init(s, &error_abort));
    fake.client = kvm_dirty_client_start(s, "test", NULL, &error_abort);
    g_assert_cmpint(kvm_dirty_client_sync(fake.client, NULL, NULL), ==, 0);
    bitmap_fill(s->slots[0].dirty_bmap, 256);
    g_assert_cmpint(kvm_dirty_client_clear(fake.client, &s->slots[0], 0, 256), ==, 0);
    g_assert_cmpuint(fake.clears->len, ==, 0);
    g_assert_true(bitmap_full(s->slots[0].dirty_bmap, 256));
    vm_free(s);
}

/* A client whose own sync has not read the slot yet re-arms nothing. */
static void test_clear_before_sync(void)
{
    static const uint64_t np[] = { 256, 0 };
    KVMState *s = vm_new(np, "clear", MANUAL_PROTECT);

    g_assert_true(kvm_dirty_log_init(s, &error_abort));
    fake.client = kvm_dirty_client_start(s, "test", NULL, &error_abort);
    bitmap_fill(s->slots[0].dirty_bmap, 256);
    g_assert_cmpint(kvm_dirty_client_clear(fake.client, &s->slots[0], 0, 256), ==, 0);
    g_assert_cmpuint(fake.clears->len, ==, 0);
    g_assert_true(bitmap_full(s->slots[0].dirty_bmap, 256));
    vm_free(s);
}

/* ---- The clear-log window ---- */

/* Slot sizes: multiples of 64 and not, one word and less, and big. */
static const uint64_t window_slots[] = { 64, 100, 127, 128, 129, 200, 320, 1000, 4096, 5, 0 };

typedef struct Window {
    uint64_t first, npages;
} Window;

static void run_windows(const Window *w, size_t nw, bool relative_to_end)
{
    KVMState *s = clear_vm_new(window_slots);

    for (int i = 0; i < s->nr_slots; i++) {
        KVMSlot *slot = &s->slots[i];

        for (int pattern = 0; pattern < 4; pattern++) {
            for (size_t k = 0; k < nw; k++) {
                uint64_t first = w[k].first;

                if (relative_to_end) {
                    /* first counts back from the slot end. */
                    if (first > slot->npages) {
                        continue;
                    }
                    first = slot->npages - first;
                }
                fill_pattern(slot, pattern);
                check_clear(s, slot, first, w[k].npages);
            }
        }
    }
    vm_free(s);
}

static void test_window_aligned(void)
{
    static const Window w[] = {
        { 0, 64 }, { 0, 128 }, { 64, 64 }, { 128, 64 }, { 64, 192 }, { 0, 4096 }, { 960, 64 },
    };
    run_windows(w, G_N_ELEMENTS(w), false);
}

static void test_window_unaligned_start(void)
{
    static const Window w[] = {
        { 1, 63 }, { 1, 127 }, { 63, 1 }, { 63, 65 }, { 65, 63 }, { 100, 28 }, { 3, 61 },
    };
    run_windows(w, G_N_ELEMENTS(w), false);
}

static void test_window_unaligned_end(void)
{
    static const Window w[] = {
        { 0, 1 }, { 0, 63 }, { 0, 65 }, { 64, 1 }, { 64, 100 }, { 5, 10 }, { 70, 3 }, { 1, 1 },
    };
    run_windows(w, G_N_ELEMENTS(w), false);
}

static void test_window_slot_end(void)
{
    /* { distance back from the end, npages }: windows that end on the slot end. */
    static const Window w[] = {
        { 1, 1 }, { 5, 5 }, { 36, 36 }, { 64, 64 }, { 100, 100 }, { 127, 127 }, { 129, 129 },
    };
    run_windows(w, G_N_ELEMENTS(w), true);
}

static void test_window_beyond_end(void)
{
    /* Back from the end, then far past it: clipped to the slot. */
    static const Window w[] = {
        { 1, 2 }, { 5, 64 }, { 36, 1000 }, { 64, 65 }, { 100, 1 << 20 }, { 0, 64 },
        { 129, UINT32_MAX },
    };
    run_windows(w, G_N_ELEMENTS(w), true);
}

static void test_window_empty(void)
{
    static const Window nothing[] = { { 0, 0 }, { 64, 0 }, { 3, 0 } };
    static const Window past[] = { { 0, 1 }, { 0, 64 }, { 0, 1000 } };
    KVMState *s;

    run_windows(nothing, G_N_ELEMENTS(nothing), false);
    /* first == npages (distance 0 from the end) and first > npages. */
    run_windows(past, G_N_ELEMENTS(past), true);
    s = clear_vm_new(window_slots);
    for (int i = 0; i < s->nr_slots; i++) {
        fill_pattern(&s->slots[i], 0);
        check_clear(s, &s->slots[i], s->slots[i].npages + 1, 64);
        check_clear(s, &s->slots[i], s->slots[i].npages + 64, 64);
        check_clear(s, &s->slots[i], 1 << 30, 1);
    }
    vm_free(s);
}

/* Bits outside the window, and none inside: no ioctl at all. */
static void test_window_nothing_read(void)
{
    static const uint64_t np[] = { 1000, 0 };
    KVMState *s = clear_vm_new(np);
    KVMSlot *slot = &s->slots[0];

    bitmap_set(slot->dirty_bmap, 0, 100);
    bitmap_set(slot->dirty_bmap, 200, 800);
    check_clear(s, slot, 100, 100);
    check_clear(s, slot, 128, 72);
    check_clear(s, slot, 101, 27);
    /* One bit on the edge of the window is enough to issue it. */
    check_clear(s, slot, 99, 1);
    check_clear(s, slot, 150, 51);
    vm_free(s);
}

/* A refused clear keeps the bits: the next sync will see those pages again. */
static void test_window_ioctl_fails(void)
{
    static const uint64_t np[] = { 200, 0 };
    KVMState *s = clear_vm_new(np);
    KVMSlot *slot = &s->slots[0];

    bitmap_set(slot->dirty_bmap, 10, 150);
    fake.clear_ret = -EFAULT;
    g_assert_cmpint(kvm_dirty_client_clear(fake.client, slot, 20, 100), ==, -EFAULT);
    g_assert_cmpuint(fake.clears->len, ==, 1);
    g_assert_cmpuint(bitmap_count_one(slot->dirty_bmap, 200), ==, 150);
    fake.clear_ret = 0;
    check_clear(s, slot, 20, 100);
    /* And the range's bits come back to the client at its next sync, KVM or not. */
    {
        g_autofree unsigned long *t0 = bitmap_new(200);
        unsigned long *taken[] = { t0 };

        g_assert_cmpint(kvm_dirty_client_sync(fake.client, take_into, taken), ==, 0);
        g_assert_cmpuint(bitmap_count_one(t0, 200), ==, 100);
        g_assert_cmpuint(find_first_bit(t0, 200), ==, 20);
    }
    vm_free(s);
}

static void test_window_random(void)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(SEED);
    static const uint64_t np[] = { 1, 63, 64, 65, 191, 192, 777, 2048, 3001, 0 };
    KVMState *s = clear_vm_new(np);

    g_test_message("seed 0x%x", SEED);
    for (int iter = 0; iter < 4000; iter++) {
        KVMSlot *slot = &s->slots[g_rand_int_range(r, 0, s->nr_slots)];
        uint64_t n = slot->npages;
        uint64_t first, npages;
        int density = g_rand_int_range(r, 0, 4);

        /* Refill now and then so both dense and nearly cleared maps occur. */
        if (iter % 7 == 0) {
            for (uint64_t p = 0; p < n; p++) {
                bool v = density == 3 ? true : g_rand_int_range(r, 0, 8) < density * 3;

                ref_put(slot->dirty_bmap, p, v);
            }
        }
        first = g_rand_int_range(r, 0, n + 70);
        if (g_rand_boolean(r)) {
            first &= ~63ULL;    /* aligned starts are the common case */
        }
        switch (g_rand_int_range(r, 0, 4)) {
        case 0:
            npages = g_rand_int_range(r, 0, 3) * 64;
            break;
        case 1:
            npages = first < n ? n - first : 1;
            break;
        default:
            npages = g_rand_int_range(r, 0, n + 140);
            break;
        }
        check_clear(s, slot, first, npages);
    }
    vm_free(s);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/kvm-dirty/mode/select", test_mode_select);
    g_test_add_func("/kvm-dirty/start-stop", test_start_stop);
    g_test_add_func("/kvm-dirty/sync", test_sync);
    g_test_add_func("/kvm-dirty/get-log/clear-is-noop", test_get_log_no_clear);
    g_test_add_func("/kvm-dirty/clear-log/clear-before-sync", test_clear_before_sync);
    g_test_add_func("/kvm-dirty/clear-window/aligned", test_window_aligned);
    g_test_add_func("/kvm-dirty/clear-window/unaligned-start", test_window_unaligned_start);
    g_test_add_func("/kvm-dirty/clear-window/unaligned-end", test_window_unaligned_end);
    g_test_add_func("/kvm-dirty/clear-window/slot-end", test_window_slot_end);
    g_test_add_func("/kvm-dirty/clear-window/beyond-slot-end", test_window_beyond_end);
    g_test_add_func("/kvm-dirty/clear-window/empty", test_window_empty);
    g_test_add_func("/kvm-dirty/clear-window/nothing-read", test_window_nothing_read);
    g_test_add_func("/kvm-dirty/clear-window/ioctl-fails", test_window_ioctl_fails);
    g_test_add_func("/kvm-dirty/clear-window/random", test_window_random);
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * calc-dirty-rate / query-dirty-rate: how fast the guest dirties memory,
 * measured for calc-time by a "dirtyrate" thread in one of three ways:
 *
 *   page-sampling  hash sample-pages random pages per GiB of each RAM
 *                  block, wait, hash again; the changed share of the
 *                  sample, scaled to the block, is what was dirtied
 *   dirty-ring     count the entries of every vCPU's KVM dirty ring (each
 *                  vCPU's own rate too); rings are harvested every 50 ms so
 *                  a page written again after a harvest counts again
 *   dirty-bitmap   a client of the KVM dirty log of its own (beside a
 *                  migration's, as in QEMU): the pages KVM reports dirty
 *                  in calc-time (each page once)
 *
 * Rates are MB/s with QEMU's MB (2^20 bytes). The main thread starts and
 * queries; DirtyRateState.lock guards the published result.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands.h"
#include "qemu/bitmap.h"
#include "qemu/worker-thread.h"
#include "system/cpus.h"
#include "system/kvm.h"
#include "system/kvm-dirty-client.h"
#include "system/memory.h"
#include "migration.h"

#define DR_HARVEST_NS       50000000LL
#define DR_DEFAULT_SAMPLES  512
#define DR_MAX_SAMPLES      4096

typedef struct DirtyRateState DirtyRateState;

/* One measurement: built by the command, owned and freed by the thread. */
typedef struct DirtyRateRun {
    DirtyRateState *dr;
    DirtyRateMeasureMode mode;
    int64_t calc_ms;
    uint64_t sample_pages;
    bool ring_ref;              /* dirty-ring: holds a counting reference */
    KVMDirtyClient *client;     /* dirty-bitmap: started by the command, stopped by the thread */
} DirtyRateRun;

/*
 * The measurer: one per process (calc-dirty-rate measures one thing at a
 * time). The commands run in the main thread; the "dirtyrate" thread
 * measures and publishes.
 */
struct DirtyRateState {
    /*
     * w.lock: running, quit. calc-dirty-rate starts the thread, and joins
     * the previous one first (its measurement has ended: status checked);
     * the thread reads quit in dr_wait.
     */
    WorkerThread w;
    GMutex lock;
    /*
     * lock: the result query-dirty-rate reports. calc-dirty-rate writes it
     * to MEASURING before the thread starts; the thread writes the result
     * once, at its end; query-dirty-rate reads.
     */
    DirtyRateInfo info;
    int64_t calc_ms;
    int64_t vcpu_rate[256];     /* -1 = not measured */
    guint nvcpus;
};

/* The process's one calc-dirty-rate measurement; the fields say their owners. */
static DirtyRateState dirtyrate = {
    .info = { .status = DIRTY_RATE_STATUS_UNSTARTED, .sample_pages = DR_DEFAULT_SAMPLES },
};

/*
 * Sleeps @ns in steps, harvesting the rings in dirty-ring mode; false if
 * asked to quit meanwhile. The process may exit meanwhile: the thread is
 * not joined at exit, as vCPUs are not.
 */
static bool dr_wait(const DirtyRateRun *run, int64_t ns)
{
    WorkerThread *w = &run->dr->w;
    int64_t deadline = get_clock_ns() + ns;

    for (;;) {
        int64_t left = deadline - get_clock_ns();
        bool quit;

        if (left <= 0) {
            return true;
        }
        worker_thread_lock(w);
        quit = worker_thread_wait(w, MIN(left, DR_HARVEST_NS) / 1000);
        worker_thread_unlock(w);
        if (quit) {
            return false;
        }
        if (run->mode == DIRTY_RATE_MEASURE_MODE_DIRTY_RING) {
            kvm_dirty_ring_harvest(kvm_state);
        }
    }
}

static uint64_t dr_hash_page(const uint64_t *p)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL;

    for (size_t i = 0; i < TARGET_PAGE_SIZE / 8; i++) {
        h = (h ^ __atomic_load_n(&p[i], __ATOMIC_RELAXED)) * 0x100000001b3ULL;
        h ^= h >> 29;
    }
    return h;
}

typedef struct DrSample {
    RAMBlock *rb;
    uint64_t page;
    uint64_t hash;
} DrSample;

/* Returns the rate in MB/s, or -1 if cancelled. */
static int64_t dr_measure_sampling(const DirtyRateRun *run)
{
    GPtrArray *blocks = ram_blocks();
    g_autoptr(GArray) s = g_array_new(false, false, sizeof(DrSample));
    double dirty_bytes = 0;
    int64_t t0, ms;

    for (guint i = 0; i < blocks->len; i++) {
        RAMBlock *rb = g_ptr_array_index(blocks, i);
        uint64_t npages = rb->used_length >> TARGET_PAGE_BITS;
        uint64_t n = MAX(1, run->sample_pages * rb->used_length / GiB);

        if (rb->readonly || !npages || !run->sample_pages) {
            continue;
        }
        n = MIN(n, npages);
        for (uint64_t k = 0; k < n; k++) {
            DrSample d = { .rb = rb, .page = g_random_int() % npages };

            d.page = ((uint64_t)g_random_int() << 32 | d.page) % npages;
            g_array_append_val(s, d);
        }
    }
    t0 = get_clock_ns();
    for (guint i = 0; i < s->len; i++) {
        DrSample *d = &g_array_index(s, DrSample, i);

        d->hash = dr_hash_page((const uint64_t *)(d->rb->host + (d->page << TARGET_PAGE_BITS)));
    }
    if (!dr_wait(run, run->calc_ms * 1000000LL - (get_clock_ns() - t0))) {
        return -1;
    }
    ms = (get_clock_ns() - t0) / 1000000;
    for (guint i = 0, start = 0; i <= s->len; i++) {
        DrSample *d = i < s->len ? &g_array_index(s, DrSample, i) : NULL;
        DrSample *first = start < s->len ? &g_array_index(s, DrSample, start) : NULL;

        /* A block's samples are consecutive: scale each block's share. */
        if (first && (!d || d->rb != first->rb)) {
            uint64_t changed = 0;

            for (guint k = start; k < i; k++) {
                DrSample *e = &g_array_index(s, DrSample, k);

                changed += dr_hash_page((const uint64_t *)(e->rb->host +
                                                           (e->page << TARGET_PAGE_BITS))) !=
                           e->hash;
            }
            dirty_bytes += (double)changed / (i - start) * first->rb->used_length;
            start = i;
        }
    }
    return (int64_t)(dirty_bytes / MiB * 1000 / MAX(1, ms));
}

static int64_t dr_rate(uint64_t pages, int64_t ms)
{
    return (int64_t)(pages * TARGET_PAGE_SIZE * 1000 / MiB / MAX(1, ms));
}

static int64_t dr_measure_ring(const DirtyRateRun *run, int64_t *vcpu_rate, guint n)
{
    uint64_t start[256], total = 0;
    int64_t t0, ms;

    kvm_dirty_ring_harvest(kvm_state);
    t0 = get_clock_ns();
    for (guint i = 0; i < n; i++) {
        start[i] = __atomic_load_n(&((CPUState *)g_ptr_array_index(vcpus, i))->dirty_pages,
                                   __ATOMIC_RELAXED);
    }
    if (!dr_wait(run, run->calc_ms * 1000000LL)) {
        return -1;
    }
    kvm_dirty_ring_harvest(kvm_state);
    ms = (get_clock_ns() - t0) / 1000000;
    for (guint i = 0; i < n; i++) {
        uint64_t pages = __atomic_load_n(&((CPUState *)g_ptr_array_index(vcpus, i))->dirty_pages,
                                         __ATOMIC_RELAXED) - start[i];

        vcpu_rate[i] = dr_rate(pages, ms);
        total += pages;
    }
    return dr_rate(total, ms);
}

/* KVMDirtyTakeFn: counts the pages of a slot written in the window. */
static void dr_count_slot_bits(void *opaque, KVMSlot *slot, const unsigned long *bits)
{
    uint64_t *pages = opaque;

    for (uint64_t w = 0; w < BITS_TO_LONGS(slot->npages); w++) {
        *pages += __builtin_popcountl(bits[w]);
    }
}

/* The client was started by calc-dirty-rate (BQL); this stops it. */
static int64_t dr_measure_bitmap(DirtyRateRun *run)
{
    KVMState *s = kvm_state;
    uint64_t pages = 0;
    int64_t t0, ms, rate = -1;

    /* The first sync hands over what predates the window (clear-log: every page): dropped. */
    if (kvm_dirty_client_sync(run->client, NULL, NULL) < 0) {
        goto out;
    }
    for (int i = 0; i < s->nr_slots; i++) {
        kvm_dirty_client_clear(run->client, &s->slots[i], 0, s->slots[i].npages);
    }
    t0 = get_clock_ns();
    if (!dr_wait(run, run->calc_ms * 1000000LL) ||
        kvm_dirty_client_sync(run->client, dr_count_slot_bits, &pages) < 0) {
        goto out;
    }
    ms = (get_clock_ns() - t0) / 1000000;
    rate = dr_rate(pages, ms);
out:
    g_clear_pointer(&run->client, kvm_dirty_client_stop);
    return rate;
}

static void *dirtyrate_thread_fn(void *opaque)
{
    DirtyRateRun *run = opaque;
    DirtyRateState *dr = run->dr;
    int64_t vcpu_rate[256];
    guint n = MIN(vcpus ? vcpus->len : 0, G_N_ELEMENTS(vcpu_rate));
    int64_t rate;

    switch (run->mode) {
    case DIRTY_RATE_MEASURE_MODE_DIRTY_RING:
        rate = dr_measure_ring(run, vcpu_rate, n);
        break;
    case DIRTY_RATE_MEASURE_MODE_DIRTY_BITMAP:
        rate = dr_measure_bitmap(run);
        break;
    default:
        rate = dr_measure_sampling(run);
        break;
    }
    if (run->ring_ref) {
        kvm_dirty_ring_count_stop(kvm_state);
    }
    g_mutex_lock(&dr->lock);
    dr->info.status = DIRTY_RATE_STATUS_MEASURED;
    dr->info.has_dirty_rate = rate >= 0;
    dr->info.dirty_rate = rate;
    dr->nvcpus = run->mode == DIRTY_RATE_MEASURE_MODE_DIRTY_RING && rate >= 0 ? n : 0;
    memcpy(dr->vcpu_rate, vcpu_rate, dr->nvcpus * sizeof(vcpu_rate[0]));
    g_mutex_unlock(&dr->lock);
    g_free(run);
    return NULL;
}

static DirtyRateStatus dr_status(DirtyRateState *dr)
{
    DirtyRateStatus st;

    g_mutex_lock(&dr->lock);
    st = dr->info.status;
    g_mutex_unlock(&dr->lock);
    return st;
}

bool qmp_calc_dirty_rate(int64_t calc_time, bool has_calc_time_unit, TimeUnit calc_time_unit,
                         bool has_sample_pages, int64_t sample_pages, bool has_mode,
                         DirtyRateMeasureMode mode, Error **errp)
{
    DirtyRateState *dr = &dirtyrate;
    bool ms_unit = has_calc_time_unit && calc_time_unit == TIME_UNIT_MILLISECOND;
    int64_t calc_ms;
    DirtyRateRun *run;
    Error *err = NULL;
    int ret;

    if (!has_mode) {
        mode = DIRTY_RATE_MEASURE_MODE_PAGE_SAMPLING;
    }
    if (dr_status(dr) == DIRTY_RATE_STATUS_MEASURING) {
        error_setg(errp, "the dirty rate is already being measured");
        return false;
    }
    if (calc_time < (ms_unit ? 50 : 1) || calc_time > (ms_unit ? 60000 : 60)) {
        error_setg(errp, "Parameter 'calc-time' expects %s", ms_unit
                   ? "a value between 50 and 60000 milliseconds"
                   : "a value between 1 and 60 seconds");
        return false;
    }
    /* Only now: seconds * 1000 overflowed int64 for a calc-time above 9.2e15. */
    calc_ms = ms_unit ? calc_time : calc_time * 1000;
    if (has_sample_pages && mode != DIRTY_RATE_MEASURE_MODE_PAGE_SAMPLING) {
        error_setg(errp, "Parameter 'sample-pages' is only used in page-sampling mode");
        return false;
    }
    if (has_sample_pages && (sample_pages < 0 || sample_pages > DR_MAX_SAMPLES)) {
        error_setg(errp, "Parameter 'sample-pages' expects a value between 0 and %d",
                   DR_MAX_SAMPLES);
        return false;
    }
    if ((mode == DIRTY_RATE_MEASURE_MODE_DIRTY_RING) != kvm_dirty_ring_enabled(kvm_state) &&
        mode != DIRTY_RATE_MEASURE_MODE_PAGE_SAMPLING) {
        error_setg(errp, "mode %s is not enabled, use other method instead.",
                   DirtyRateMeasureMode_str(mode));
        return false;
    }
    run = g_new0(DirtyRateRun, 1);
    run->dr = dr;
    run->mode = mode;
    run->calc_ms = calc_ms;
    run->sample_pages = has_sample_pages ? sample_pages : DR_DEFAULT_SAMPLES;
    if (mode == DIRTY_RATE_MEASURE_MODE_DIRTY_RING) {
        run->ring_ref = kvm_dirty_ring_count_start(kvm_state, &err);
    } else if (mode == DIRTY_RATE_MEASURE_MODE_DIRTY_BITMAP) {
        run->client = kvm_dirty_client_start(kvm_state, "calc-dirty-rate", NULL, &err);
    }
    if (err) {
        error_prepend(&err, "calc-dirty-rate: ");
        error_propagate(errp, err);
        g_free(run);
        return false;
    }
    /* The last measurement has published its result (status): its thread is ending. */
    worker_thread_stop(&dr->w);
    g_mutex_lock(&dr->lock);
    dr->info.status = DIRTY_RATE_STATUS_MEASURING;
    dr->info.has_dirty_rate = false;
    dr->info.start_time = g_get_monotonic_time() / G_USEC_PER_SEC;
    dr->info.calc_time_unit = ms_unit ? TIME_UNIT_MILLISECOND : TIME_UNIT_SECOND;
    dr->info.sample_pages = mode == DIRTY_RATE_MEASURE_MODE_PAGE_SAMPLING ? run->sample_pages : 0;
    dr->info.mode = mode;
    dr->calc_ms = calc_ms;
    dr->nvcpus = 0;
    g_mutex_unlock(&dr->lock);
    ret = worker_thread_start(&dr->w, "dirtyrate", dirtyrate_thread_fn, run);
    if (ret) {
        /* Nothing measures: give back what the measurement held. */
        if (run->ring_ref) {
            kvm_dirty_ring_count_stop(kvm_state);
        }
        kvm_dirty_client_stop(run->client);
        g_free(run);
        g_mutex_lock(&dr->lock);
        dr->info.status = DIRTY_RATE_STATUS_UNSTARTED;
        g_mutex_unlock(&dr->lock);
        error_setg_errno(errp, -ret, "calc-dirty-rate: cannot create the measuring thread");
        return false;
    }
    return true;
}

DirtyRateInfo *qmp_query_dirty_rate(bool has_calc_time_unit, TimeUnit calc_time_unit,
                                    Error **errp)
{
    DirtyRateState *dr = &dirtyrate;
    DirtyRateInfo *info;
    DirtyRateVcpuList **tail;

    g_mutex_lock(&dr->lock);
    info = g_memdup2(&dr->info, sizeof(dr->info));
    info->vcpu_dirty_rate = NULL;
    info->calc_time_unit = has_calc_time_unit ? calc_time_unit : TIME_UNIT_SECOND;
    info->calc_time = info->calc_time_unit == TIME_UNIT_MILLISECOND ? dr->calc_ms
                                                                    : dr->calc_ms / 1000;
    tail = &info->vcpu_dirty_rate;
    for (guint i = 0; i < dr->nvcpus; i++) {
        DirtyRateVcpuList *e = g_new0(DirtyRateVcpuList, 1);

        e->value = g_new0(DirtyRateVcpu, 1);
        e->value->id = i;
        e->value->dirty_rate = dr->vcpu_rate[i];
        *tail = e;
        tail = &e->next;
    }
    g_mutex_unlock(&dr->lock);
    return info;
}

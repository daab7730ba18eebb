/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for migration/outgoing/snapshot-ram.c, the background snapshot's claim
 * protocol: the saver (mig/src, snapshot_ram_source.send_next) and a fault
 * thread (mig/uffd, snapshot_ram_handle_fault) claim the same 2 MiB regions
 * while fake vCPU threads write guest RAM. A fake userfaultfd keeps a
 * write-protect bit per page: a vCPU writing a protected page queues a
 * fault and blocks until the page is unprotected; unprotects are randomly
 * slowed to widen the races. The stream is loaded back with the real codec
 * and must equal RAM at snapshot start, every page exactly once. Seeded
 * access patterns; the thread interleavings are the machine's.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "qemu/thread.h"
#include "qemu/userfaultfd.h"
#include "system/memory.h"
#include "trace/trace.h"
#include "migration/qemu-file.h"
#include "migration/transport/ram-codec.h"
#include "migration/transport/ram-source.h"
#include "migration/core/options.h"
#include "migration/outgoing/snapshot-ram.h"

#define SEED 0x5a9c1a1
#define FAKE_UFFD 4242
#define NBLOCKS 3
#define NVCPUS 2
#define REGION_PAGES 512
/*
 * Blocks in scan order: a small writable one, a read-only one (never
 * protected), then the big one the vCPUs write most: the end of the scan
 * is where the saver and the fault thread race for the last regions.
 */
#define RO_BLOCK 1
#define HOT_BLOCK 2

/*
 * ---- Fake trace backend ----
 * The trace points sit between steps of the protocol (a fault's copy is
 * counted, then queued for the writer): pausing in them now and then
 * widens those windows.
 */

bool trace_active = true;
static int trace_pauses;        /* atomic */
/* Runs inside the fault's trace point, when set: another thread's step at that instant. */
static void (*fault_trace_hook)(void);
/* The source under test: what the snapshot mode would embed in its state. */
static SnapRam sram;

void trace_event_printf(const char *event, const char *fmt, ...)
{
    int n = __atomic_add_fetch(&trace_pauses, 1, __ATOMIC_RELAXED);

    if (fault_trace_hook && !strcmp(event, "bg_snapshot_fault")) {
        fault_trace_hook();
    } else if (n % 3 == 0) {
        g_usleep(n % 7 * 30);
    }
}

/* ---- Fake RAM: source blocks, their snapshot-start copy, destination blocks ---- */

typedef struct FakeBlock {
    RAMBlock src;
    RAMBlock dst;
    uint8_t *golden;            /* the content when protection started */
    uint64_t npages;
} FakeBlock;

static struct {
    FakeBlock blocks[NBLOCKS];
    GPtrArray *src_list;
    bool loading;               /* ram_block_find() answers with destination blocks */
    uint64_t buffer_size;       /* x-background-snapshot-buffer-size */
} ram;

GPtrArray *ram_blocks(void)
{
    return ram.src_list;
}

uint64_t ram_blocks_total_bytes(void)
{
    uint64_t total = 0;

    for (int i = 0; i < NBLOCKS; i++) {
        total += ram.blocks[i].src.used_length;
    }
    return total;
}

RAMBlock *ram_block_find(const char *idstr)
{
    for (int i = 0; i < NBLOCKS; i++) {
        if (!strcmp(ram.blocks[i].src.idstr, idstr)) {
            return ram.loading ? &ram.blocks[i].dst : &ram.blocks[i].src;
        }
    }
    return NULL;
}

uint64_t migrate_background_snapshot_buffer_size(void)
{
    return ram.buffer_size;
}

/* ---- Fake userfaultfd and guest ---- */

typedef struct Scenario {
    const char *name;
    uint64_t pages[NBLOCKS];    /* block sizes, in scan order (see HOT_BLOCK) */
    uint64_t buffer_size;
    int hot_regions;            /* vCPUs write mostly in this many regions */
    int unprotect_fail_at;      /* the Nth unprotect fails (0: never) */
    int cancel_after;           /* the saver stops after this many steps (0: never) */
    int rounds;                 /* snapshots, each with its own seed and pacing */
} Scenario;

/* pthread's, not GLib's: ThreadSanitizer sees these (see qemu/tsan.h). */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;        /* a page became writable, or release_all */
    unsigned long *wp[NBLOCKS]; /* lock: set = write-protected */
    bool release_all;           /* lock: the snapshot ended, nobody blocks any more */
    GAsyncQueue *faults;        /* host addresses of blocked writes, 1 = stop */
    int unprotects;             /* lock */
    int unprotect_fail_at;      /* lock */
    GRand *delay;               /* lock */
    int stop_vcpus;             /* atomic */
    uint64_t vcpu_writes[NVCPUS];
    uint64_t vcpu_faults[NVCPUS];
    uint64_t outcomes[3];       /* fault thread: SnapFaultOutcome counts */
    uint64_t saver_page;        /* atomic: end of the saver's last unprotect in HOT_BLOCK */
} uf;

static __thread bool is_saver;

static FakeBlock *fake_block_of(uint8_t *host, uint64_t *page)
{
    for (int i = 0; i < NBLOCKS; i++) {
        RAMBlock *rb = &ram.blocks[i].src;

        if (host >= rb->host && host < rb->host + rb->used_length) {
            *page = (host - rb->host) >> TARGET_PAGE_BITS;
            return &ram.blocks[i];
        }
    }
    return NULL;
}

int uffd_change_protection(int fd, void *start, uint64_t len, bool wp)
{
    uint64_t first;
    FakeBlock *b = fake_block_of(start, &first);
    uint64_t delay_us;
    int bi;

    g_assert_cmpint(fd, ==, FAKE_UFFD);
    g_assert_false(wp);         /* the source only ever unprotects */
    g_assert_nonnull(b);
    g_assert_false(b->src.readonly);    /* never registered */
    g_assert_cmpuint(len % TARGET_PAGE_SIZE, ==, 0);
    g_assert_cmpuint(first + len / TARGET_PAGE_SIZE, <=, b->npages);
    bi = b - ram.blocks;
    pthread_mutex_lock(&uf.lock);
    delay_us = g_rand_int_range(uf.delay, 0, 4) == 0 ? g_rand_int_range(uf.delay, 0, 200) : 0;
    if (++uf.unprotects == uf.unprotect_fail_at) {
        pthread_mutex_unlock(&uf.lock);
        return -EIO;
    }
    pthread_mutex_unlock(&uf.lock);
    /* A slow ioctl: the other thread races on meanwhile. */
    g_usleep(delay_us);
    pthread_mutex_lock(&uf.lock);
    bitmap_clear(uf.wp[bi], first, len / TARGET_PAGE_SIZE);
    pthread_cond_broadcast(&uf.cond);
    pthread_mutex_unlock(&uf.lock);
    if (is_saver && bi == HOT_BLOCK) {
        __atomic_store_n(&uf.saver_page, first + len / TARGET_PAGE_SIZE, __ATOMIC_RELAXED);
    }
    return 0;
}

/* What the end of a snapshot does: everything writable, every waiter woken. */
static void fake_unprotect_all(void)
{
    pthread_mutex_lock(&uf.lock);
    uf.release_all = true;
    for (int i = 0; i < NBLOCKS; i++) {
        bitmap_zero(uf.wp[i], ram.blocks[i].npages);
    }
    pthread_cond_broadcast(&uf.cond);
    pthread_mutex_unlock(&uf.lock);
}

static const Scenario *scn;
static uint32_t round_seed;     /* the current round's */

/*
 * A page for vCPU writes, in HOT_BLOCK mostly: just ahead of the saver's
 * linear scan (where it and the fault thread race for the same claims),
 * in a few hot regions (faulted again and again: small copies hand them
 * back), and now and then anywhere in a writable block.
 */
static uint64_t pick_page(GRand *r, int *bi)
{
    FakeBlock *b = &ram.blocks[HOT_BLOCK];
    uint64_t nregions = DIV_ROUND_UP(b->npages, REGION_PAGES);
    int dice = g_rand_int_range(r, 0, 32);

    *bi = HOT_BLOCK;
    if (dice < 24) {
        uint64_t p = __atomic_load_n(&uf.saver_page, __ATOMIC_RELAXED) +
                     g_rand_int_range(r, 0, 3 * REGION_PAGES);

        return MIN(p, b->npages - 1);
    }
    if (dice < 31) {
        return MIN(g_rand_int_range(r, 0, scn->hot_regions) * (nregions / scn->hot_regions) *
                   REGION_PAGES + g_rand_int_range(r, 0, REGION_PAGES), b->npages - 1);
    }
    *bi = g_rand_boolean(r) ? 0 : HOT_BLOCK;
    return g_rand_int_range(r, 0, ram.blocks[*bi].npages);
}

/* A vCPU: writes pages of the writable blocks, blocking on protected ones like KVM. */
static void *fake_vcpu(void *opaque)
{
    int v = GPOINTER_TO_INT(opaque);
    g_autoptr(GRand) r = g_rand_new_with_seed(round_seed + v);
    int pause = g_rand_int_range(r, 1, 16);

    while (!__atomic_load_n(&uf.stop_vcpus, __ATOMIC_ACQUIRE)) {
        int bi;
        uint64_t page = pick_page(r, &bi);
        FakeBlock *b = &ram.blocks[bi];
        uint8_t *host = b->src.host + (page << TARGET_PAGE_BITS);
        uint64_t word = ((uint64_t)v << 56) | uf.vcpu_writes[v];

        pthread_mutex_lock(&uf.lock);
        if (test_bit(page, uf.wp[bi]) && !uf.release_all) {
            /* The fault carries the written address, not the page start. */
            g_async_queue_push(uf.faults, host + 8 * g_rand_int_range(r, 0, 512));
            uf.vcpu_faults[v]++;
            while (test_bit(page, uf.wp[bi]) && !uf.release_all) {
                pthread_cond_wait(&uf.cond, &uf.lock);
            }
        }
        pthread_mutex_unlock(&uf.lock);
        /* Atomic: two vCPUs may write the same word, as guests do. */
        __atomic_store_n((uint64_t *)(host + 8 * g_rand_int_range(r, 0, 512)), word,
                         __ATOMIC_RELAXED);
        uf.vcpu_writes[v]++;
        if (g_rand_int_range(r, 0, pause) == 0) {
            g_usleep(g_rand_int_range(r, 0, 100));
        }
    }
    return NULL;
}

/* mig/uffd's loop without poll: one fault at a time from the fake queue. */
static void *fake_fault_thread(void *opaque)
{
    for (;;) {
        gpointer addr = g_async_queue_pop(uf.faults);

        if (GPOINTER_TO_SIZE(addr) == 1) {
            return NULL;
        }
        uf.outcomes[snapshot_ram_handle_fault(&sram, GPOINTER_TO_SIZE(addr), get_clock_ns())]++;
    }
}

/* ---- Setup, one snapshot, checks ---- */

static void fake_ram_new(const Scenario *sc)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(round_seed);

    memset(&ram, 0, sizeof(ram));
    memset(&uf, 0, sizeof(uf));
    pthread_mutex_init(&uf.lock, NULL);
    pthread_cond_init(&uf.cond, NULL);
    ram.buffer_size = sc->buffer_size;
    ram.src_list = g_ptr_array_new();
    for (int i = 0; i < NBLOCKS; i++) {
        FakeBlock *b = &ram.blocks[i];
        uint64_t len = sc->pages[i] << TARGET_PAGE_BITS;

        b->npages = sc->pages[i];
        g_snprintf(b->src.idstr, sizeof(b->src.idstr), "block%d", i);
        b->src.used_length = b->dst.used_length = len;
        b->src.readonly = i == RO_BLOCK;
        b->src.host = g_malloc(len);
        b->dst.host = g_malloc0(len);
        memcpy(b->dst.idstr, b->src.idstr, sizeof(b->dst.idstr));
        b->dst.vmm_written_bmap = bitmap_new(b->npages);
        /* Random pages, with runs of zero pages (the ZERO records). */
        for (uint64_t p = 0; p < b->npages; p++) {
            uint8_t *page = b->src.host + (p << TARGET_PAGE_BITS);

            if (g_rand_int_range(r, 0, 8) == 0) {
                memset(page, 0, TARGET_PAGE_SIZE);
            } else {
                for (int w = 0; w < TARGET_PAGE_SIZE / 4; w++) {
                    ((uint32_t *)page)[w] = g_rand_int(r);
                }
            }
        }
        uf.wp[i] = bitmap_new(b->npages);
        g_ptr_array_add(ram.src_list, &b->src);
    }
    uf.faults = g_async_queue_new();
    uf.delay = g_rand_new_with_seed(round_seed ^ 0xde1a);
    uf.unprotect_fail_at = sc->unprotect_fail_at;
    scn = sc;
}

static void fake_ram_free(void)
{
    for (int i = 0; i < NBLOCKS; i++) {
        g_free(ram.blocks[i].src.host);
        g_free(ram.blocks[i].dst.host);
        g_free(ram.blocks[i].dst.vmm_written_bmap);
        g_free(ram.blocks[i].golden);
        g_free(uf.wp[i]);
    }
    g_ptr_array_free(ram.src_list, true);
    g_async_queue_unref(uf.faults);
    g_rand_free(uf.delay);
    pthread_mutex_destroy(&uf.lock);
    pthread_cond_destroy(&uf.cond);
}

/* What snapshot.c's freeze does, with the VM stopped: remember RAM, protect it. */
static void fake_freeze(void)
{
    for (int i = 0; i < NBLOCKS; i++) {
        FakeBlock *b = &ram.blocks[i];

        b->golden = g_memdup2(b->src.host, b->src.used_length);
        if (!b->src.readonly) {
            bitmap_fill(uf.wp[i], b->npages);
        }
    }
    snapshot_ram_start(&sram, FAKE_UFFD);
}

/* The stream, loaded with the real parser, is RAM as it was at the freeze. */
static void check_stream(QEMUFile *out, const RAMPageWriter *w)
{
    uint64_t total = 0;
    RAMSinkCounts c;
    const uint8_t *data;
    size_t len;
    QEMUFile *in;
    RAMPageReader r = { 0 };
    Error *err = NULL;

    for (int i = 0; i < NBLOCKS; i++) {
        total += ram.blocks[i].npages;
    }
    /* Every page exactly once: a page sent twice would count twice. */
    w->ops->counts(w->sink, &c);
    g_assert_cmpuint(c.pages, ==, total);
    data = qemu_file_buffer_data(out, &len);
    in = qemu_file_new_buffer_input(data, len);
    ram_reader_reset(&r);
    ram.loading = true;
    g_assert_cmpint(ram_load_records(&r, in, &err), ==, 0);     /* the block list */
    g_assert_cmpint(ram_load_records(&r, in, &err), ==, 0);     /* the pages */
    g_assert_null(err);
    g_assert_cmpint(qemu_peek_byte(in, 0), ==, -1);
    ram.loading = false;
    qemu_fclose(in);
    for (int i = 0; i < NBLOCKS; i++) {
        FakeBlock *b = &ram.blocks[i];

        for (uint64_t p = 0; p < b->npages; p++) {
            uint64_t off = p << TARGET_PAGE_BITS;

            if (memcmp(b->dst.host + off, b->golden + off, TARGET_PAGE_SIZE)) {
                g_error("block %d page %" PRIu64 ": the snapshot does not hold the page as it "
                        "was at the freeze", i, p);
            }
        }
    }
}

static void run_snapshot(const Scenario *sc, int round)
{
    g_autoptr(GRand) pace = g_rand_new_with_seed(SEED + round);
    int saver_delay_us = g_rand_int_range(pace, 0, 3) * 150;
    QemuThread vcpu[NVCPUS], fault;
    RAMPageWriter w;
    RAMSinkCounts c;
    QEMUFile *out = qemu_file_new_buffer_output();
    Error *err = NULL;
    uint64_t faults = 0;
    int steps = 0;

    round_seed = SEED + round * 7919;
    fake_ram_new(sc);
    ram_writer_init_records(&w, NULL);
    /* ram.c's save_setup: the source's setup, then the block list. */
    g_assert_true(snapshot_ram_source.setup(&sram, out, &error_abort));
    ram_put_block_list(out);
    g_assert_true(snapshot_ram_prepare(&sram, &error_abort));
    g_assert_cmpuint(snapshot_ram_source.pending(&sram, out, false), ==,
                     ram_blocks_total_bytes());
    fake_freeze();
    is_saver = true;
    qemu_thread_create(&fault, "fake/uffd", fake_fault_thread, NULL);
    for (int v = 0; v < NVCPUS; v++) {
        qemu_thread_create(&vcpu[v], "fake/vcpu", fake_vcpu, GINT_TO_POINTER(v));
    }
    /*
     * One vCPU fault at least before the scan starts: on a busy host (a
     * build beside) the scan alone could send every page before any vCPU
     * ran, and what this tests is faults overtaking the scan.
     */
    for (int waited_ms = 0;; waited_ms++) {
        uint64_t seen = 0;

        pthread_mutex_lock(&uf.lock);
        for (int v = 0; v < NVCPUS; v++) {
            seen += uf.vcpu_faults[v];
        }
        pthread_mutex_unlock(&uf.lock);
        if (seen || sc->cancel_after || sc->unprotect_fail_at) {
            break;
        }
        g_assert_cmpint(waited_ms, <, 20000);
        g_usleep(1000);
    }
    /* The "ram" section's loop, slowed now and then so that faults overtake the scan. */
    while (!qemu_file_get_error(out) && snapshot_ram_source.send_next(&sram, out, &w)) {
        if (++steps == sc->cancel_after) {
            break;
        }
        if (saver_delay_us && steps % 3 == 0) {
            g_usleep(saver_delay_us);
        }
    }
    ram_put_eos(out);
    is_saver = false;
    /* The end, as snapshot.c does it: waits give up, mig/uffd ends, RAM is unprotected. */
    snapshot_ram_stopping(&sram);
    g_async_queue_push(uf.faults, GSIZE_TO_POINTER(1));
    qemu_thread_join(&fault);
    fake_unprotect_all();
    __atomic_store_n(&uf.stop_vcpus, 1, __ATOMIC_RELEASE);
    for (int v = 0; v < NVCPUS; v++) {
        qemu_thread_join(&vcpu[v]);
        faults += uf.vcpu_faults[v];
    }
    w.ops->counts(w.sink, &c);
    g_test_message("%s round %d (seed 0x%x, saver pause %d us): %d steps, %" PRIu64 " vCPU "
                   "faults; fault thread: %" PRIu64 " saved, %" PRIu64 " waited, %" PRIu64
                   " ignored; %" PRIu64 " pages, %" PRIu64 " of them with data", sc->name, round,
                   round_seed, saver_delay_us, steps, faults, uf.outcomes[SNAP_FAULT_SAVED],
                   uf.outcomes[SNAP_FAULT_WAITED], uf.outcomes[SNAP_FAULT_IGNORED],
                   c.pages, c.data_pages);
    if (sc->unprotect_fail_at) {
        g_assert_cmpint(qemu_file_get_error(out), ==, -EIO);
        g_assert_nonnull(strstr(qemu_file_error_msg(out), "write-unprotecting guest RAM failed"));
    } else if (sc->cancel_after) {
        /* Whatever was left (the faults may have saved it all): no error, no hang, no leak. */
        g_assert_cmpint(qemu_file_get_error(out), ==, 0);
    } else {
        g_assert_cmpint(qemu_file_get_error(out), ==, 0);
        g_assert_cmpuint(snapshot_ram_source.pending(&sram, out, false), ==, 0);
        g_assert_cmpuint(faults, >, 0);
        check_stream(out, &w);
    }
    /* The stats survive the cleanup; everything else is freed (LeakSanitizer). */
    snapshot_ram_source.cleanup(&sram);
    ram_sink_free(&w);
    qemu_fclose(out);
    fake_ram_free();
    error_free(err);
}

static void test_snapshot(gconstpointer opaque)
{
    const Scenario *sc = opaque;
    int rounds = sc->rounds;

#if defined(__SANITIZE_THREAD__)
    /* TSan makes each round ten times slower; half of them stay within the timeout. */
    rounds = MAX(1, rounds / 2);
#endif
    for (int round = 0; round < rounds; round++) {
        run_snapshot(sc, round);
    }
}

/*
 * The end rule, one interleaving made deterministic: a fault has copied the
 * last region (every region now counts as done) but not yet queued its
 * copy for the writer. A saver step at that instant must not end the
 * snapshot, or that region never reaches the stream.
 */
static QEMUFile *end_rule_out;
static RAMPageWriter end_rule_writer;
static bool end_rule_saver_went_on;

static void end_rule_saver_step(void)
{
    end_rule_saver_went_on = snapshot_ram_source.send_next(&sram, end_rule_out, &end_rule_writer);
}

static void test_end_rule(void)
{
    static const Scenario sc = { "end-rule", { 1, 1, 1024 }, 1ULL << 30, 1, 0, 0, 1 };
    RAMBlock *hot = &ram.blocks[HOT_BLOCK].src;
    int steps = 0;

    round_seed = SEED;
    fake_ram_new(&sc);
    end_rule_out = qemu_file_new_buffer_output();
    ram_writer_init_records(&end_rule_writer, NULL);
    g_assert_true(snapshot_ram_source.setup(&sram, end_rule_out, &error_abort));
    ram_put_block_list(end_rule_out);
    g_assert_true(snapshot_ram_prepare(&sram, &error_abort));
    fake_freeze();
    /* The saver takes every region but the hot block's second. */
    while (steps < 3 && snapshot_ram_source.send_next(&sram, end_rule_out, &end_rule_writer)) {
        steps++;
    }
    g_assert_cmpint(steps, ==, 3);
    g_assert_cmpuint(snapshot_ram_source.pending(&sram, end_rule_out, false), ==,
                     REGION_PAGES * TARGET_PAGE_SIZE);
    /* A vCPU writes that region; the saver steps between the fault's copy and its queueing. */
    fault_trace_hook = end_rule_saver_step;
    g_assert_cmpint(snapshot_ram_handle_fault(&sram, (uintptr_t)hot->host + (REGION_PAGES + 3) *
                                              TARGET_PAGE_SIZE + 16, get_clock_ns()),
                    ==, SNAP_FAULT_SAVED);
    fault_trace_hook = NULL;
    g_assert_true(end_rule_saver_went_on);
    g_assert_cmpuint(snapshot_ram_source.pending(&sram, end_rule_out, false), ==, 0);
    /* Now the copy is queued: the next steps write it, then the snapshot ends. */
    while (snapshot_ram_source.send_next(&sram, end_rule_out, &end_rule_writer)) {
        g_assert_cmpint(++steps, <, 10);
    }
    ram_put_eos(end_rule_out);
    g_assert_cmpint(qemu_file_get_error(end_rule_out), ==, 0);
    check_stream(end_rule_out, &end_rule_writer);
    snapshot_ram_source.cleanup(&sram);
    ram_sink_free(&end_rule_writer);
    qemu_fclose(end_rule_out);
    fake_ram_free();
}

static const Scenario scenarios[] = {
    /* The buffer holds one region: nearly every fault takes a small copy. */
    { "one-run-buffer", { 700, 300, 16384 }, 2 << 20, 4, 0, 0, 6 },
    { "one-run-buffer-hot1", { 700, 300, 16384 }, 2 << 20, 1, 0, 0, 4 },
    /* Room for every region: faults copy whole regions. */
    { "big-buffer", { 700, 300, 16384 }, 1ULL << 30, 4, 0, 0, 6 },
    { "big-buffer-hot8", { 513, 1, 16384 }, 1ULL << 30, 8, 0, 0, 4 },
    { "four-run-buffer", { 1, 512, 16384 }, 8 << 20, 2, 0, 0, 6 },
    /* An unprotect fails: the stream fails, nothing hangs. */
    { "unprotect-fails", { 700, 300, 16384 }, 2 << 20, 4, 40, 0, 2 },
    /* Cancelled early: waits give up, everything is released. */
    { "cancel", { 700, 300, 16384 }, 4 << 20, 4, 0, 2, 3 },
};

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/snapshot-ram/end-rule", test_end_rule);
    for (size_t i = 0; i < G_N_ELEMENTS(scenarios); i++) {
        g_autofree char *path = g_strdup_printf("/snapshot-ram/%s", scenarios[i].name);

        g_test_add_data_func(path, &scenarios[i], test_snapshot);
    }
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The multifd round protocol, end to end: the real sender
 * (migration/transport/multifd-send.c) and receiver (multifd-recv.c) on their worker
 * pools, with fake RAMBlocks (a source RAM and a destination RAM), fake
 * options, the main stream over a socketpair and every channel through a
 * relay thread that, driven by a seeded RNG, stalls channels, moves their
 * bytes in random pieces and lets one run ahead of another: the
 * interleavings vary with the seed.
 *
 * The invariant under test is the one at the top of multifd-send.c: no
 * page's older copy lands after a newer one. A page's content is its
 * version, a byte repeated over the page; the guest (mig/src's thread)
 * writes new versions into random source pages while rounds are in flight.
 * Each round: a dirty "sync" claims the written pages (recording each
 * one's version at its claim), queues them in random order across three
 * RAMBlocks (so batches break at random), then multifd_send_sync(). Checked:
 *
 *  - a watcher thread scans the destination every 50 us: no page's
 *    version ever decreases (the smallest byte of a page is its version,
 *    so a page caught half placed never reads as newer than it is);
 *  - mig/dst, in each MULTIFD_FLUSH once every channel reached its SYNC
 *    (a round hook of the receiver): every page sent in that round or
 *    before holds at least the version it had at its last claim (the
 *    destination is the source as of that sync, or newer), and no page
 *    holds less than at the flush before;
 *  - at the end (the guest stopped, a last round sent and waited for):
 *    the destination equals the source, byte for byte.
 *
 * Each rule of the invariant (multifd-send.c has the argument) is needed,
 * and this test shows it when one is taken out (as measured when it was
 * written, ten runs of the 32 seeds each):
 *  - the partial batch not handed out before the SYNCs: the flush check,
 *    at the first seed (a page of the round is missing at its flush);
 *  - no SYNC packets at all: no flush completes (the bounded wait);
 *  - the sender not waiting for idle channels before the SYNCs: 8 runs in
 *    10, by the watcher or the check against the flush before (a page read
 *    for round K+1 before a stalled channel read it for round K lands last);
 *  - a receiving channel not waiting at its SYNC: every run, by the
 *    watcher, the flush check and the final comparison;
 *  - mig/dst not waiting for the channels at a flush: the flush check, at
 *    the first seed.
 */
#include "qemu/osdep.h"
#include <sys/socket.h>
#include "qapi/error.h"
#include "qemu/thread.h"
#include "qemu/tsan.h"
#include "io/channel.h"
#include "migration/transport/channel.h"
#include "migration/core/options.h"
#include "migration/transport/multifd.h"
#include "migration/transport/multifd-send.h"
#include "migration/incoming/multifd-recv.h"
#include "ram-codec-test-util.h"

#define NCH 3                   /* multifd channels */
#define SEEDS 32                /* runs, each with its own seed */
#define ROUNDS 40               /* rounds with guest writes, then a last one */
#define HOT_PAGES 6
#define STALL_MAX_US 2000       /* the longest a channel stalls at a time */
#define MAX_VERSION 250         /* a page's version is one byte */
#define END_MARK 0x5e5e5e5e5e5e5e5eULL
#define TIMEOUT_US (10 * G_USEC_PER_SEC)

/* ---- fakes ---- */

int migrate_multifd_channels(void)
{
    return NCH;
}

MultiFDCompression migrate_multifd_compression(void)
{
    /* None: the pages go from guest RAM to the socket by the kernel, as the guest writes. */
    return MULTIFD_COMPRESSION_NONE;
}

int migrate_multifd_zlib_level(void)
{
    return 1;
}

int migrate_multifd_zstd_level(void)
{
    return 1;
}

ZeroPageDetection migrate_zero_page_detection(void)
{
    /* The channels would read guest RAM themselves (a race the real guest has too). */
    return ZERO_PAGE_DETECTION_LEGACY;
}

Channel *mig_channel_connect(const char *uri, Error **errp)
{
    g_assert_not_reached();
}

int mig_channel_unsent_bytes(Channel *ch)
{
    return 0;
}

void ram_put_multifd_flush(QEMUFile *f)
{
    qemu_put_be64(f, RAM_SAVE_FLAG_MULTIFD_FLUSH);
}

/* The sink's main-stream records (multifd-send.c's page hooks): this test queues pages directly. */
void ram_put_record(RAMRecordWriter *w, QEMUFile *f, RAMBlock *rb, uint64_t page,
                    const uint8_t *data)
{
    g_assert_not_reached();
}

void ram_put_zero_page(RAMRecordWriter *w, QEMUFile *f, RAMBlock *rb, uint64_t page)
{
    g_assert_not_reached();
}

static const BlockDef blocks[] = {
    { "pc.ram", 40 },
    { "/rom@etc/acpi/tables", 8 },
    { "0000:00:02.0/vga.vram", 16 },
    { NULL, 0 },
};
#define NBLOCKS 3
#define NPAGES (40 + 8 + 16)

/* ---- The run ---- */

typedef struct Run {
    uint32_t seed;
    FakeRAM *src, *dst;
    RAMBlock *src_rb[NPAGES], *dst_rb[NPAGES];  /* page i's block */
    uint64_t pg[NPAGES];        /* page i's index in its block */

    /* mig/src's own: the guest's versions and what it wrote since the last claim. */
    uint8_t version[NPAGES];
    bool dirty[NPAGES];
    GRand *src_rand;
    uint64_t queued;            /* pages queued in all */

    /* lock: need[r][i], what page i must hold at least after flush r (written by mig/src). */
    GMutex lock;
    GCond cond;                 /* lock: a thread finished */
    uint8_t need[ROUNDS + 2][NPAGES];
    int src_done, dst_done;     /* lock */
    int flushes;                /* lock: flushes mig/dst passed */
    uint8_t at_flush[NPAGES];   /* mig/dst's: each page's version at the last flush */
    /* lock: the first violation, for the message; counts by check. */
    char *what;
    int bad_watch, bad_flush, bad_end;

    MultifdSender *ms;
    MultifdReceiver *mr;
    QEMUFile *out, *in;         /* the main stream: mig/src's and mig/dst's */

    /* The relay: channel i's sender end sfd[i][0], the receiver's end rfd[i][1]. */
    int sfd[NCH][2], rfd[NCH][2];
    bool stop;                  /* atomic: the relay and the watcher end */
} Run;

static void run_bad(Run *r, int *count, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static void run_bad(Run *r, int *count, const char *fmt, ...)
{
    va_list ap;

    tsan_g_mutex_lock(&r->lock);
    ++*count;
    if (!r->what) {
        va_start(ap, fmt);
        r->what = g_strdup_vprintf(fmt, ap);
        va_end(ap);
    }
    tsan_g_mutex_unlock(&r->lock);
}

/*
 * The watcher reads pages while a channel's recvmsg() may write them, on
 * purpose (the smallest byte rule below): not a race of the code under
 * test, so TSan is told to look away.
 */
#if defined(__SANITIZE_THREAD__)
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);
#define racy_reads_begin() __tsan_ignore_thread_begin()
#define racy_reads_end() __tsan_ignore_thread_end()
#else
#define racy_reads_begin() do { } while (0)
#define racy_reads_end() do { } while (0)
#endif

/* The smallest byte of page i of @rb: its version, or older if caught being placed. */
static uint8_t page_version(RAMBlock *rb, uint64_t page)
{
    const uint8_t *p = page_ptr(rb, page);
    uint8_t v = 255;

    for (size_t i = 0; i < TARGET_PAGE_SIZE; i++) {
        v = MIN(v, p[i]);
    }
    return v;
}

/*
 * mig/src: the guest writes a new version into a page: half of the time
 * one of a few hot ones, as guests do, so one page is often queued in two
 * rounds in a row while channels still work on the first.
 */
static void guest_write(Run *r)
{
    int i = g_rand_int_range(r->src_rand, 0, 2) ? g_rand_int_range(r->src_rand, 0, HOT_PAGES)
                                                 : g_rand_int_range(r->src_rand, 0, NPAGES);

    if (r->version[i] >= MAX_VERSION) {
        return;
    }
    r->version[i]++;
    memset(page_ptr(r->src_rb[i], r->pg[i]), r->version[i], TARGET_PAGE_SIZE);
    r->dirty[i] = true;
}

/*
 * mig/src: round @round: claim what was written (all of it in round 1),
 * queue it in random order with guest writes and settles in between, end
 * the round.
 */
static void src_round(Run *r, int round, bool guest, bool wait)
{
    int order[NPAGES], n = 0;

    tsan_g_mutex_lock(&r->lock);
    memcpy(r->need[round], r->need[round - 1], NPAGES);
    for (int i = 0; i < NPAGES; i++) {
        if (round == 1 || r->dirty[i]) {
            r->dirty[i] = false;
            r->need[round][i] = r->version[i];
            order[n++] = i;
        }
    }
    tsan_g_mutex_unlock(&r->lock);
    for (int i = n - 1; i > 0; i--) {
        int j = g_rand_int_range(r->src_rand, 0, i + 1), t = order[i];

        order[i] = order[j];
        order[j] = t;
    }
    for (int k = 0; k < n; k++) {
        multifd_send_queue_page(r->ms, r->out, r->src_rb[order[k]], r->pg[order[k]]);
        r->queued++;
        while (guest && g_rand_int_range(r->src_rand, 0, 4) == 0) {
            guest_write(r);
        }
        /* A switchover check mid-round: the pages in flight go out, the round goes on. */
        if (g_rand_int_range(r->src_rand, 0, 64) == 0) {
            g_assert_true(multifd_send_settle(r->ms, r->out));
        }
    }
    g_assert_true(multifd_send_sync(r->ms, r->out, wait));
    g_assert_cmpint(qemu_file_get_error(r->out), ==, 0);
}

static void *src_thread(void *opaque)
{
    Run *r = opaque;

    for (int round = 1; round <= ROUNDS; round++) {
        src_round(r, round, true, false);
    }
    /* The guest stopped: the last round, waited for, as at completion. */
    src_round(r, ROUNDS + 1, false, true);
    qemu_put_be64(r->out, END_MARK);
    qemu_fflush(r->out);
    tsan_g_mutex_lock(&r->lock);
    r->src_done = 1;
    g_cond_broadcast(&r->cond);
    tsan_g_mutex_unlock(&r->lock);
    return NULL;
}

/*
 * mig/dst, in the flush of round @round (multifd_receiver_set_round_hook):
 * every channel waits at its SYNC, so the destination holds rounds 1..@round
 * and nothing later. Every page holds at least the version of its last
 * claim, and no less than at the flush before: a page whose older copy
 * landed last shows here even if no scan of the watcher saw it happen.
 */
static void check_round(void *opaque, uint64_t round)
{
    Run *r = opaque;

    g_assert_cmpuint(round, <=, ROUNDS + 1);
    for (int i = 0; i < NPAGES; i++) {
        uint8_t v = page_version(r->dst_rb[i], r->pg[i]), need;

        tsan_g_mutex_lock(&r->lock);
        need = r->need[round][i];
        tsan_g_mutex_unlock(&r->lock);
        if (v < need) {
            run_bad(r, &r->bad_flush, "at flush %" PRIu64 " page %d holds version %u, "
                    "sent with %u", round, i, v, need);
        }
        if (v < r->at_flush[i]) {
            run_bad(r, &r->bad_flush, "at flush %" PRIu64 " page %d holds version %u, "
                    "%u at the flush before", round, i, v, r->at_flush[i]);
        }
        r->at_flush[i] = MAX(v, r->at_flush[i]);
    }
}

/* mig/dst: meets the channels at every flush (check_round looks at the pages). */
static void *dst_thread(void *opaque)
{
    Run *r = opaque;

    for (;;) {
        uint64_t rec = qemu_get_be64(r->in);
        Error *err = NULL;

        if (rec == END_MARK || qemu_file_get_error(r->in)) {
            break;
        }
        g_assert_cmphex(rec, ==, RAM_SAVE_FLAG_MULTIFD_FLUSH);
        if (!multifd_receiver_flush(r->mr, &err)) {
            run_bad(r, &r->bad_flush, "flush failed: %s", error_get_pretty(err));
            error_free(err);
            break;
        }
        tsan_g_mutex_lock(&r->lock);
        r->flushes++;
        tsan_g_mutex_unlock(&r->lock);
    }
    tsan_g_mutex_lock(&r->lock);
    r->dst_done = 1;
    g_cond_broadcast(&r->cond);
    tsan_g_mutex_unlock(&r->lock);
    return NULL;
}

/* Scans the destination while pages land: a version never goes down. */
static void *watch_thread(void *opaque)
{
    Run *r = opaque;
    uint8_t seen[NPAGES] = { 0 };

    racy_reads_begin();

    while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
        for (int i = 0; i < NPAGES; i++) {
            uint8_t v = page_version(r->dst_rb[i], r->pg[i]);

            if (v < seen[i]) {
                run_bad(r, &r->bad_watch, "page %d went from version %u back to %u",
                        i, seen[i], v);
            }
            seen[i] = MAX(seen[i], v);
        }
        g_usleep(50);
    }
    racy_reads_end();
    return NULL;
}

/*
 * Moves each channel's bytes from the sender's socket to the receiver's,
 * in random pieces, each channel stalled now and then for a random while:
 * so one channel runs ahead of another as the seed decides.
 */
static void *relay_thread(void *opaque)
{
    Run *r = opaque;
    GRand *rand = g_rand_new_with_seed(r->seed ^ 0x5a5a5a5a);
    static const size_t cap = 64 * 1024;
    uint8_t *buf[NCH];
    size_t len[NCH] = { 0 }, off[NCH] = { 0 };
    gint64 stall_until[NCH] = { 0 };

    for (int c = 0; c < NCH; c++) {
        buf[c] = g_malloc(cap);
    }
    while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
        int c = g_rand_int_range(rand, 0, NCH);
        ssize_t n;

        if (g_get_monotonic_time() < stall_until[c]) {
            /* Stalled: its bytes wait, its sending worker blocks once the buffers fill. */
        } else if (g_rand_int_range(rand, 0, 32) == 0) {
            stall_until[c] = g_get_monotonic_time() + g_rand_int_range(rand, 1, STALL_MAX_US);
        } else if (off[c] < len[c]) {
            size_t want = g_rand_int_range(rand, 1, len[c] - off[c] + 1);

            n = send(r->rfd[c][0], buf[c] + off[c], want, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (n > 0) {
                off[c] += n;
            }
        } else {
            n = recv(r->sfd[c][1], buf[c], g_rand_int_range(rand, 1, cap + 1), MSG_DONTWAIT);
            len[c] = MAX(n, 0);
            off[c] = 0;
        }
        if (g_rand_int_range(rand, 0, 8) == 0) {
            g_usleep(g_rand_int_range(rand, 0, 30));
        }
    }
    for (int c = 0; c < NCH; c++) {
        g_free(buf[c]);
    }
    g_rand_free(rand);
    return NULL;
}

/*
 * Small buffers: a channel's writes block while the relay stalls it, so the
 * relay decides which channel's worker runs ahead, on both sides.
 */
static void socketpair_or_die(int sv[2])
{
    int size = 8192;

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
    for (int i = 0; i < 2; i++) {
        g_assert_cmpint(setsockopt(sv[i], SOL_SOCKET, SO_SNDBUF, &size, sizeof(size)), ==, 0);
        g_assert_cmpint(setsockopt(sv[i], SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)), ==, 0);
    }
}

/* Waits (bounded) until *@flag is set; false on timeout. */
static bool run_wait(Run *r, int *flag)
{
    gint64 deadline = g_get_monotonic_time() + TIMEOUT_US;
    bool ok = true;

    tsan_g_mutex_lock(&r->lock);
    while (!*flag && ok) {
        ok = tsan_g_cond_wait_until(&r->cond, &r->lock, deadline);
    }
    ok = *flag;
    tsan_g_mutex_unlock(&r->lock);
    return ok;
}

static void test_rounds(gconstpointer data)
{
    Run *r = g_new0(Run, 1);
    int m[2], p = 0;
    QemuThread src, dst, watch, relay;
    MultifdSendStats st;

    r->seed = GPOINTER_TO_UINT(data);
    r->src_rand = g_rand_new_with_seed(r->seed);
    g_mutex_init(&r->lock);
    g_cond_init(&r->cond);
    r->src = fake_ram_new(blocks);
    r->dst = fake_ram_new(blocks);  /* ram_block_find() looks here: the receiver's */
    for (int b = 0; b < NBLOCKS; b++) {
        for (uint64_t i = 0; i < blocks[b].pages; i++, p++) {
            r->src_rb[p] = fake_block(r->src, b);
            r->dst_rb[p] = fake_block(r->dst, b);
            r->pg[p] = i;
        }
    }
    g_assert_cmpint(p, ==, NPAGES);

    socketpair_or_die(m);
    r->out = qemu_file_new_output(channel_socket_new(m[0]), "main");
    r->in = qemu_file_new_input(channel_socket_new(m[1]), "main");
    r->ms = multifd_sender_new(&error_abort);
    r->mr = multifd_receiver_new();
    multifd_receiver_set_round_hook(r->mr, check_round, r);
    multifd_receiver_set_main(r->mr, r->in);
    for (int c = 0; c < NCH; c++) {
        socketpair_or_die(r->sfd[c]);
        socketpair_or_die(r->rfd[c]);
        g_assert_true(multifd_receiver_add_channel(r->mr, channel_socket_new(r->rfd[c][1]),
                                                   &error_abort));
        g_assert_true(multifd_sender_start_channel(r->ms, c, channel_socket_new(r->sfd[c][0]),
                                                   &error_abort));
    }
    qemu_thread_create(&relay, "relay", relay_thread, r);
    qemu_thread_create(&watch, "watch", watch_thread, r);
    qemu_thread_create(&dst, "mig/dst", dst_thread, r);
    qemu_thread_create(&src, "mig/src", src_thread, r);

    if (!run_wait(r, &r->src_done) || !run_wait(r, &r->dst_done)) {
        g_test_message("seed 0x%x: a round never completed (flushes passed: %d)", r->seed,
                       r->flushes);
        g_assert_not_reached();
    }
    __atomic_store_n(&r->stop, true, __ATOMIC_RELEASE);
    qemu_thread_join(&src);
    qemu_thread_join(&dst);
    qemu_thread_join(&watch);
    qemu_thread_join(&relay);

    for (int i = 0; i < NPAGES; i++) {
        if (memcmp(page_ptr(r->src_rb[i], r->pg[i]), page_ptr(r->dst_rb[i], r->pg[i]),
                   TARGET_PAGE_SIZE)) {
            run_bad(r, &r->bad_end, "at the end page %d differs: version %u, source %u", i,
                    page_version(r->dst_rb[i], r->pg[i]), r->version[i]);
        }
    }
    if (r->what) {
        g_test_message("seed 0x%x: %d by the watcher, %d at a flush, %d at the end; first: %s",
                       r->seed, r->bad_watch, r->bad_flush, r->bad_end, r->what);
    }
    g_assert_cmpint(r->bad_watch + r->bad_flush + r->bad_end, ==, 0);
    g_assert_cmpint(r->flushes, ==, ROUNDS + 1);
    multifd_sender_stats(r->ms, &st);
    g_assert_cmpuint(st.normal_pages, ==, r->queued);
    g_assert_cmpuint(st.zero_pages, ==, 0);
    g_assert_false(multifd_receiver_failed(r->mr, NULL));

    multifd_sender_free(r->ms);
    multifd_receiver_free(r->mr);
    for (int c = 0; c < NCH; c++) {
        close(r->sfd[c][1]);
        close(r->rfd[c][0]);
    }
    qemu_fclose(r->out);
    qemu_fclose(r->in);
    fake_ram_free(r->dst);
    fake_ram_free(r->src);
    g_rand_free(r->src_rand);
    g_mutex_clear(&r->lock);
    g_cond_clear(&r->cond);
    g_free(r->what);
    g_free(r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    for (uint32_t i = 0; i < SEEDS; i++) {
        /* Spread over 32 bits: neighbouring seeds of GRand are as different as any. */
        uint32_t seed = 0x5eed + i * 0x9e3779b9u;
        g_autofree char *name = g_strdup_printf("/multifd-rounds/seed-%08x", seed);

        g_test_add_data_func(name, GUINT_TO_POINTER(seed), test_rounds);
    }
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The source's end of the return path (return-path.h): "mig/src-rp" reads
 * and checks the destination's messages; page requests wait in a bounded
 * queue for mig/src.
 */
#include "qemu/osdep.h"
#include "qemu/tsan.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "qemu/bswap.h"
#include "qemu/thread.h"
#include "system/memory.h"
#include "migration/core/latency-hist.h"
#include "migration/stream/postcopy.h"
#include "return-path.h"
#include "io/channel.h"

/* A destination that asks for more pages than this at once is not one we serve. */
#define RP_MAX_QUEUED (256 * 1024)

typedef struct PageRequest {
    RAMBlock *rb;
    uint64_t page;
    int64_t received_ns;
} PageRequest;

typedef struct ReturnPath {
    /* rp_src_start (mig/src) to rp_src_stop (main thread, mig/src joined). */
    QemuThread thread;
    bool running;
    Channel *ch;                /* our reference to the main stream's channel; read by the thread */
    RPUrgentPage *urgent;

    /* lock: mig/src-rp produces, mig/src consumes. */
    GMutex lock;
    GCond cond;
    GQueue queue;               /* of PageRequest */
    bool ended;                 /* the thread is done reading */
    bool got_shut;
    uint32_t shut_value;
    bool peer_confirms;         /* our destination accepted the confirmation (PONG) */
    bool peer_answered;         /* a PONG answered the offer: accepted, or echoed (QEMU) */
    bool peer_vmdesc_damaged;   /* it says the trailing vmdesc did not arrive whole */
    bool got_resume_ack;
    GHashTable *bitmaps;        /* recovery: RAMBlock -> the pages the destination has */
    Error *error;               /* why it ended, if not by SHUT or stop */

    uint64_t queued;            /* atomic: queue length, lock-free peek */
    uint64_t requests;          /* mig/src-rp; query-migrate reads it */
    LatencyHist served;         /* lock: request received to page sent */
} ReturnPath;

/* The source's one return path (mig/src-rp and its users); each field says its owner. */
static ReturnPath rp;

static bool rp_read_full(uint8_t *buf, size_t len)
{
    return channel_read_all(rp.ch, buf, len) == 0;
}

/* A request for [offset, offset+len) of @rb: whole pages inside the block. */
static bool rp_queue_request(RAMBlock *rb, uint64_t offset, uint32_t len, Error **errp)
{
    int64_t now = get_clock_ns();
    uint64_t npages;

    if (!rb) {
        error_setg(errp, "the destination asked for pages without naming a block first");
        return false;
    }
    if (!len || !QEMU_IS_ALIGNED(offset | len, TARGET_PAGE_SIZE) || offset >= rb->used_length ||
        len > rb->used_length - offset) {
        error_setg(errp, "the destination asked for 0x%" PRIx64 "+0x%x of block %s (length "
                   "0x%" PRIx64 "), which is not whole pages inside it", offset, len, rb->idstr,
                   rb->used_length);
        return false;
    }
    npages = len >> TARGET_PAGE_BITS;
    __atomic_store_n(&rp.requests, rp.requests + 1, __ATOMIC_RELAXED);
    if (rp.urgent && npages == 1 && rp.urgent(rb, offset >> TARGET_PAGE_BITS, now)) {
        return true;
    }
    tsan_g_mutex_lock(&rp.lock);
    if (rp.queue.length + npages > RP_MAX_QUEUED) {
        tsan_g_mutex_unlock(&rp.lock);
        error_setg(errp, "the destination asked for more than %d pages at once", RP_MAX_QUEUED);
        return false;
    }
    for (uint64_t i = 0; i < npages; i++) {
        PageRequest *r = g_new(PageRequest, 1);

        r->rb = rb;
        r->page = (offset >> TARGET_PAGE_BITS) + i;
        r->received_ns = now;
        g_queue_push_tail(&rp.queue, r);
    }
    __atomic_store_n(&rp.queued, rp.queue.length, __ATOMIC_RELEASE);
    g_cond_broadcast(&rp.cond);
    tsan_g_mutex_unlock(&rp.lock);
    return true;
}

#define RECV_BITMAP_ENDING 0x0123456789abcdefULL

/*
 * RECV_BITMAP: after the message (the block's name) come a be64 size, the
 * bitmap in little-endian words and a be64 end marker; all checked.
 */
static bool rp_recv_bitmap(const uint8_t *buf, uint16_t len, Error **errp)
{
    uint64_t want, size, end;
    uint8_t word[8];
    unsigned long *bmap;
    char name[256];
    RAMBlock *rb;

    if (len < 1 || len != 1 + buf[0]) {
        error_setg(errp, "Received a RECV_BITMAP message with bad length 0x%04x", len);
        return false;
    }
    memcpy(name, buf + 1, buf[0]);
    name[buf[0]] = '\0';
    rb = ram_block_find(name);
    if (!rb) {
        g_autofree char *safe = g_strescape(name, NULL);

        error_setg(errp, "the destination sent the bitmap of unknown RAM block \"%s\"", safe);
        return false;
    }
    want = BITS_TO_LONGS(rb->used_length >> TARGET_PAGE_BITS) * sizeof(unsigned long);
    if (!rp_read_full(word, 8)) {
        error_setg(errp, "the return path closed in the bitmap of %s", name);
        return false;
    }
    size = ldq_be_p(word);
    if (size != want) {
        error_setg(errp, "the destination's bitmap of %s has %" PRIu64 " bytes, not %" PRIu64,
                   name, size, want);
        return false;
    }
    bmap = g_malloc(size);
    if (!rp_read_full((uint8_t *)bmap, size) || !rp_read_full(word, 8)) {
        g_free(bmap);
        error_setg(errp, "the return path closed in the bitmap of %s", name);
        return false;
    }
    end = ldq_be_p(word);
    if (end != RECV_BITMAP_ENDING) {
        g_free(bmap);
        error_setg(errp, "the destination's bitmap of %s ends with 0x%" PRIx64 ", not the "
                   "marker", name, end);
        return false;
    }
    tsan_g_mutex_lock(&rp.lock);
    g_hash_table_replace(rp.bitmaps, rb, bmap);
    g_cond_broadcast(&rp.cond);
    tsan_g_mutex_unlock(&rp.lock);
    return true;
}

/* One message whose header was read. False to stop (SHUT, or an error in @errp). */
static bool rp_handle_message(uint16_t type, const uint8_t *buf, uint16_t len, RAMBlock **last,
                              Error **errp)
{
    char name[256];

    switch (type) {
    case MIG_RP_MSG_SHUT:
    case MIG_RP_MSG_PONG:
        if (len != 4) {
            break;
        }
        if (type == MIG_RP_MSG_PONG) {
            /* Any other value (QEMU echoing our offer, say) is only an answer. */
            tsan_g_mutex_lock(&rp.lock);
            rp.peer_confirms |= ldl_be_p(buf) == MIG_PONG_CONFIRM_ACCEPT;
            rp.peer_answered |= ldl_be_p(buf) == MIG_PONG_CONFIRM_ACCEPT ||
                                ldl_be_p(buf) == MIG_PING_CONFIRM_OFFER;
            g_cond_broadcast(&rp.cond);
            rp.peer_vmdesc_damaged |= ldl_be_p(buf) == MIG_PONG_VMDESC_DAMAGED;
            tsan_g_mutex_unlock(&rp.lock);
            return true;
        }
        tsan_g_mutex_lock(&rp.lock);
        rp.got_shut = true;
        rp.shut_value = ldl_be_p(buf);
        tsan_g_mutex_unlock(&rp.lock);
        return false;
    case MIG_RP_MSG_REQ_PAGES_ID:
        if (len < 13 || len != 13 + buf[12]) {
            break;
        }
        memcpy(name, buf + 13, buf[12]);
        name[buf[12]] = '\0';
        *last = ram_block_find(name);
        if (!*last) {
            g_autofree char *safe = g_strescape(name, NULL);

            error_setg(errp, "the destination asked for a page of unknown RAM block \"%s\"",
                       safe);
            return false;
        }
        return rp_queue_request(*last, ldq_be_p(buf), ldl_be_p(buf + 8), errp);
    case MIG_RP_MSG_REQ_PAGES:
        if (len != 12) {
            break;
        }
        return rp_queue_request(*last, ldq_be_p(buf), ldl_be_p(buf + 8), errp);
    case MIG_RP_MSG_RECV_BITMAP:
        return rp_recv_bitmap(buf, len, errp);
    case MIG_RP_MSG_RESUME_ACK:
        if (len != 4 || ldl_be_p(buf) != 1) {
            error_setg(errp, "Received an invalid RESUME_ACK on the return path");
            return false;
        }
        tsan_g_mutex_lock(&rp.lock);
        rp.got_resume_ack = true;
        g_cond_broadcast(&rp.cond);
        tsan_g_mutex_unlock(&rp.lock);
        return true;
    default:
        error_setg(errp, "Received an invalid message 0x%04x length 0x%04x on the return path",
                   type, len);
        return false;
    }
    error_setg(errp, "Received a message 0x%04x with bad length 0x%04x on the return path",
               type, len);
    return false;
}

static void *rp_thread(void *opaque)
{
    RAMBlock *last = NULL;
    Error *err = NULL;

    for (;;) {
        uint8_t hdr[4], buf[RP_MSG_MAX_LEN];
        uint16_t type, len;

        if (!rp_read_full(hdr, sizeof(hdr))) {
            error_setg(&err, "the return path from the destination closed");
            break;
        }
        type = hdr[0] << 8 | hdr[1];
        len = hdr[2] << 8 | hdr[3];
        if (len > RP_MSG_MAX_LEN) {
            error_setg(&err, "Received an invalid message 0x%04x length 0x%04x on the return "
                       "path", type, len);
            break;
        }
        if (!rp_read_full(buf, len)) {
            error_setg(&err, "the return path from the destination closed mid-message");
            break;
        }
        if (!rp_handle_message(type, buf, len, &last, &err)) {
            break;
        }
    }
    tsan_g_mutex_lock(&rp.lock);
    rp.ended = true;
    rp.error = err;
    g_cond_broadcast(&rp.cond);
    tsan_g_mutex_unlock(&rp.lock);
    return NULL;
}

bool rp_src_start(Channel *ch, RPUrgentPage *urgent, Error **errp)
{
    int ret;

    assert(!rp.running);
    if (!channel_has_feature(ch, CHANNEL_FEATURE_DUPLEX)) {
        error_setg(errp, "Unable to open return-path for postcopy (the URI must be tcp: or "
                   "unix:)");
        return false;
    }
    /* The stream keeps writing its own direction: a second reference, not a second fd. */
    rp.ch = channel_ref(ch);
    rp.urgent = urgent;
    rp.ended = rp.got_shut = rp.got_resume_ack = false;
    rp.peer_confirms = rp.peer_answered = rp.peer_vmdesc_damaged = false;
    if (!rp.bitmaps) {
        rp.bitmaps = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    }
    g_hash_table_remove_all(rp.bitmaps);
    rp.shut_value = 0;
    g_clear_pointer(&rp.error, error_free);
    rp.queued = 0;
    ret = qemu_thread_create(&rp.thread, "mig/src-rp", rp_thread, NULL);
    if (ret < 0) {
        channel_unref(rp.ch);
        rp.ch = NULL;
        error_setg_errno(errp, -ret, "cannot create the return path thread");
        return false;
    }
    rp.running = true;
    return true;
}

void rp_src_stop(void)
{
    if (!rp.running) {
        return;
    }
    /* Ends a blocked read without touching the stream's own direction. */
    channel_shutdown(rp.ch, CHANNEL_SHUT_READ);
    qemu_thread_join(&rp.thread);
    rp.running = false;
    channel_unref(rp.ch);
    rp.ch = NULL;
    tsan_g_mutex_lock(&rp.lock);
    g_queue_clear_full(&rp.queue, g_free);
    __atomic_store_n(&rp.queued, 0, __ATOMIC_RELEASE);
    tsan_g_mutex_unlock(&rp.lock);
}

bool rp_src_pop_request(RAMBlock **rb, uint64_t *page, int64_t *received_ns)
{
    PageRequest *r;

    if (!rp_src_has_request()) {
        return false;
    }
    tsan_g_mutex_lock(&rp.lock);
    r = g_queue_pop_head(&rp.queue);
    __atomic_store_n(&rp.queued, rp.queue.length, __ATOMIC_RELEASE);
    tsan_g_mutex_unlock(&rp.lock);
    if (!r) {
        return false;
    }
    *rb = r->rb;
    *page = r->page;
    *received_ns = r->received_ns;
    g_free(r);
    return true;
}

bool rp_src_has_request(void)
{
    return __atomic_load_n(&rp.queued, __ATOMIC_ACQUIRE) != 0;
}

void rp_src_wait(int64_t deadline_ns)
{
    tsan_g_mutex_lock(&rp.lock);
    while (!rp.queue.length && !rp.ended && get_clock_ns() < deadline_ns) {
        gint64 end = g_get_monotonic_time() + (deadline_ns - get_clock_ns()) / 1000;

        tsan_g_cond_wait_until(&rp.cond, &rp.lock, end);
    }
    tsan_g_mutex_unlock(&rp.lock);
}

bool rp_src_wait_shut(int64_t timeout_ms, Error **errp)
{
    gint64 end = timeout_ms < 0 ? G_MAXINT64 : g_get_monotonic_time() + timeout_ms * 1000;
    bool ok;

    tsan_g_mutex_lock(&rp.lock);
    while (!rp.ended && g_get_monotonic_time() < end) {
        tsan_g_cond_wait_until(&rp.cond, &rp.lock, end);
    }
    ok = rp.got_shut && rp.shut_value == 0;
    if (!rp.ended) {
        error_setg(errp, "the destination did not say within %" PRId64 " s whether it loaded "
                   "the stream", timeout_ms / 1000);
    } else if (!rp.got_shut) {
        error_setg(errp, "%s before it said the load ended",
                   rp.error ? error_get_pretty(rp.error) : "the return path ended");
    } else if (rp.shut_value) {
        error_setg(errp, "Sibling indicated error %u (the destination failed to load)",
                   rp.shut_value);
    }
    tsan_g_mutex_unlock(&rp.lock);
    return ok;
}

bool rp_src_running(void)
{
    return rp.running;
}

bool rp_src_wait_offer_answer(int64_t timeout_ms)
{
    gint64 end = g_get_monotonic_time() + timeout_ms * 1000;
    bool answered;

    tsan_g_mutex_lock(&rp.lock);
    while (!rp.ended && !rp.peer_answered && g_get_monotonic_time() < end) {
        tsan_g_cond_wait_until(&rp.cond, &rp.lock, end);
    }
    answered = rp.peer_answered;
    tsan_g_mutex_unlock(&rp.lock);
    return answered;
}

bool rp_src_peer_confirms(void)
{
    bool on;

    tsan_g_mutex_lock(&rp.lock);
    on = rp.peer_confirms;
    tsan_g_mutex_unlock(&rp.lock);
    return on;
}

bool rp_src_ended(void)
{
    bool ended;

    tsan_g_mutex_lock(&rp.lock);
    ended = rp.ended;
    tsan_g_mutex_unlock(&rp.lock);
    return ended;
}

bool rp_src_peer_vmdesc_damaged(void)
{
    bool damaged;

    tsan_g_mutex_lock(&rp.lock);
    damaged = rp.peer_vmdesc_damaged;
    tsan_g_mutex_unlock(&rp.lock);
    return damaged;
}

/* lock held: why the return path ended, for a wait that it cut short. */
static void rp_ended_error(Error **errp, const char *waiting_for)
{
    error_setg(errp, "%s while waiting for %s",
               rp.error ? error_get_pretty(rp.error) : "the return path ended", waiting_for);
}

unsigned long *rp_src_wait_bitmap(RAMBlock *rb, Error **errp)
{
    unsigned long *bmap = NULL;

    tsan_g_mutex_lock(&rp.lock);
    while (!rp.ended && !g_hash_table_contains(rp.bitmaps, rb)) {
        tsan_g_cond_wait(&rp.cond, &rp.lock);
    }
    if (!g_hash_table_steal_extended(rp.bitmaps, rb, NULL, (gpointer *)&bmap)) {
        rp_ended_error(errp, "the destination's received bitmap");
    }
    tsan_g_mutex_unlock(&rp.lock);
    return bmap;
}

bool rp_src_wait_resume_ack(Error **errp)
{
    bool ok;

    tsan_g_mutex_lock(&rp.lock);
    while (!rp.ended && !rp.got_resume_ack) {
        tsan_g_cond_wait(&rp.cond, &rp.lock);
    }
    ok = rp.got_resume_ack;
    if (!ok) {
        rp_ended_error(errp, "the destination's RESUME_ACK");
    }
    tsan_g_mutex_unlock(&rp.lock);
    return ok;
}

bool rp_src_failed(Error **errp)
{
    bool failed;

    tsan_g_mutex_lock(&rp.lock);
    failed = rp.ended && !rp.got_shut;
    if (failed) {
        error_setg(errp, "%s", rp.error ? error_get_pretty(rp.error) : "the return path ended");
    }
    tsan_g_mutex_unlock(&rp.lock);
    return failed;
}

void rp_src_reset_stats(void)
{
    assert(!rp.running);
    rp.requests = 0;
    tsan_g_mutex_lock(&rp.lock);
    memset(&rp.served, 0, sizeof(rp.served));
    tsan_g_mutex_unlock(&rp.lock);
}

void rp_src_request_served(int64_t received_ns)
{
    int64_t now = get_clock_ns();

    tsan_g_mutex_lock(&rp.lock);
    latency_hist_record_ns(&rp.served, now - received_ns);
    tsan_g_mutex_unlock(&rp.lock);
}

XPostcopyInfo *rp_src_info(void)
{
    XPostcopyInfo *x = g_new0(XPostcopyInfo, 1);

    x->page_requests = rp_src_requests();
    tsan_g_mutex_lock(&rp.lock);
    x->requests_answered = rp.served.count;
    x->request_latency_histogram = latency_hist_buckets(&rp.served);
    x->request_latency_sum_ns = latency_hist_sum_ns(&rp.served);
    x->request_latency_p50_us = latency_hist_percentile_us(&rp.served, 50);
    x->request_latency_p99_us = latency_hist_percentile_us(&rp.served, 99);
    x->request_latency_max_us = rp.served.max_us;
    tsan_g_mutex_unlock(&rp.lock);
    return x;
}

uint64_t rp_src_requests(void)
{
    return __atomic_load_n(&rp.requests, __ATOMIC_RELAXED);
}

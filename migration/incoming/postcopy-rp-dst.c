/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The destination's end of the return path (postcopy-rp-dst.h). */
#include "qemu/osdep.h"
#include "qemu/tsan.h"
#include "qemu/bswap.h"
#include "qemu/thread.h"
#include "system/memory.h"
#include "migration/qemu-file.h"
#include "migration/stream/postcopy.h"
#include "postcopy-rp-dst.h"
#include "io/channel.h"

#define RECV_BITMAP_ENDING 0x0123456789abcdefULL

typedef struct DstReturnPath {
    GMutex lock;
    bool open;                  /* lock: OPEN_RETURN_PATH came (whether or not it can answer) */
    /* lock: our reference to the incoming stream's channel, if it leads back to the source */
    Channel *ch;
    bool broken;                /* lock: a write failed, or there is no way back */
    RAMBlock *last_block;       /* lock: block of the last page request */
    /*
     * lock: the source offered our switchover confirmation and we took it:
     * the guest runs here only on its go. Outlives the close (SHUT).
     */
    bool confirming;
} DstReturnPath;

/* The destination's one return path; each field says its owner. */
static DstReturnPath rpd;

/* lock held: @len bytes as they are. */
static bool rp_write_locked(const uint8_t *data, size_t len)
{
    bool ok = rpd.ch && !rpd.broken && channel_write_all(rpd.ch, data, len) == 0;

    if (!ok) {
        rpd.broken = true;
    }
    return ok;
}

/* lock held: one message. */
static bool rp_send_locked(uint16_t type, const uint8_t *data, uint16_t len)
{
    uint8_t msg[4 + RP_MSG_MAX_LEN];

    assert(len <= RP_MSG_MAX_LEN);
    msg[0] = type >> 8;
    msg[1] = type;
    msg[2] = len >> 8;
    msg[3] = len;
    memcpy(msg + 4, data, len);
    return rp_write_locked(msg, 4 + len);
}

bool rp_dst_open(QEMUFile *f)
{
    /*
     * A memory buffer has no way back; mig/dst reads @f, we only write the
     * channel. Only a channel to the same peer (a socket) leads back to the
     * source: written anyway, a file read through fd: would have our
     * messages written into the stream it holds, and a FIFO opened for
     * both would hand them to mig/dst as stream bytes. Such a return path
     * is open but broken, as a failed write would leave it.
     */
    Channel *sc = qemu_file_channel(f);
    Channel *ch = sc && channel_has_feature(sc, CHANNEL_FEATURE_DUPLEX) ? channel_ref(sc) : NULL;

    tsan_g_mutex_lock(&rpd.lock);
    channel_unref(rpd.ch);
    rpd.open = sc != NULL;
    rpd.ch = ch;
    rpd.broken = !ch;
    rpd.last_block = NULL;
    rpd.confirming = false;
    tsan_g_mutex_unlock(&rpd.lock);
    return sc != NULL;
}

bool rp_dst_is_open(void)
{
    bool open;

    tsan_g_mutex_lock(&rpd.lock);
    open = rpd.open;
    tsan_g_mutex_unlock(&rpd.lock);
    return open;
}

void rp_dst_set_confirming(void)
{
    tsan_g_mutex_lock(&rpd.lock);
    rpd.confirming = true;
    tsan_g_mutex_unlock(&rpd.lock);
}

bool rp_dst_confirming(void)
{
    bool on;

    tsan_g_mutex_lock(&rpd.lock);
    on = rpd.confirming;
    tsan_g_mutex_unlock(&rpd.lock);
    return on;
}

void rp_dst_close(void)
{
    tsan_g_mutex_lock(&rpd.lock);
    channel_unref(rpd.ch);
    rpd.ch = NULL;
    rpd.open = false;
    tsan_g_mutex_unlock(&rpd.lock);
}

bool rp_dst_send(uint16_t type, const uint8_t *data, uint16_t len)
{
    bool ok;

    tsan_g_mutex_lock(&rpd.lock);
    ok = rp_send_locked(type, data, len);
    tsan_g_mutex_unlock(&rpd.lock);
    return ok;
}

bool rp_dst_send_be32(uint16_t type, uint32_t value)
{
    uint8_t buf[4];

    stl_be_p(buf, value);
    return rp_dst_send(type, buf, sizeof(buf));
}

bool rp_dst_request_page(RAMBlock *rb, uint64_t offset)
{
    uint8_t buf[12 + 1 + 255];
    size_t name_len = strlen(rb->idstr);
    bool ok;

    stq_be_p(buf, offset);
    stl_be_p(buf + 8, TARGET_PAGE_SIZE);
    /* The decision and the message in one hold: "the previous block" must stay true. */
    tsan_g_mutex_lock(&rpd.lock);
    if (rb == rpd.last_block) {
        ok = rp_send_locked(MIG_RP_MSG_REQ_PAGES, buf, 12);
    } else {
        buf[12] = name_len;
        memcpy(buf + 13, rb->idstr, name_len);
        ok = rp_send_locked(MIG_RP_MSG_REQ_PAGES_ID, buf, 13 + name_len);
        rpd.last_block = ok ? rb : NULL;
    }
    tsan_g_mutex_unlock(&rpd.lock);
    return ok;
}

bool rp_dst_send_bitmap(RAMBlock *rb, const unsigned long *bmap, uint64_t nwords)
{
    uint8_t msg[1 + 255], word[8];
    size_t n = strlen(rb->idstr);
    uint64_t bytes = nwords * sizeof(unsigned long);
    bool ok;

    msg[0] = n;
    memcpy(msg + 1, rb->idstr, n);
    tsan_g_mutex_lock(&rpd.lock);
    ok = rp_send_locked(MIG_RP_MSG_RECV_BITMAP, msg, 1 + n);
    stq_be_p(word, bytes);
    ok = ok && rp_write_locked(word, 8);
    /* Little-endian words, as QEMU sends them: this host's own layout. */
    ok = ok && rp_write_locked((const uint8_t *)bmap, bytes);
    stq_be_p(word, RECV_BITMAP_ENDING);
    ok = ok && rp_write_locked(word, 8);
    tsan_g_mutex_unlock(&rpd.lock);
    return ok;
}

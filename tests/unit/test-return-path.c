/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for the source's end of the return path (migration/
 * return-path.c) over a real socketpair, with two fake RAMBlocks: page
 * requests are queued in order with their block, SHUT and RESUME_ACK are
 * seen, a received bitmap arrives whole; and every hostile message (bad
 * lengths, unknown types and blocks, ranges outside a block, a request
 * before any block was named, a bitmap of the wrong size or without its
 * end marker) ends the return path with an error saying what was wrong.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "qemu/bswap.h"
#include "system/memory.h"
#include "migration/stream/postcopy.h"
#include "migration/outgoing/return-path.h"
#include "io/channel.h"
#include <sys/socket.h>

/* ---- two fake blocks for ram_block_find() ---- */

static RAMBlock blocks[2] = {
    { .idstr = "pc.ram", .used_length = 64 * 4096 },
    { .idstr = "extra", .used_length = 8 * 4096 },
};

RAMBlock *ram_block_find(const char *idstr)
{
    for (size_t i = 0; i < G_N_ELEMENTS(blocks); i++) {
        if (!strcmp(blocks[i].idstr, idstr)) {
            return &blocks[i];
        }
    }
    return NULL;
}

/* ---- the destination's side: raw messages ---- */

static int start(void)
{
    int sv[2];
    Error *err = NULL;
    Channel *ch;

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
    rp_src_reset_stats();
    ch = channel_socket_new(sv[0]);
    g_assert_true(rp_src_start(ch, NULL, &err));
    channel_unref(ch);          /* the return path holds a reference of its own */
    return sv[1];
}

static void put_msg(int fd, uint16_t type, const void *body, uint16_t len)
{
    uint8_t hdr[4] = { type >> 8, type, len >> 8, len };

    g_assert_cmpint(write(fd, hdr, 4), ==, 4);
    if (len) {
        g_assert_cmpint(write(fd, body, len), ==, len);
    }
}

static void put_req(int fd, const char *block, uint64_t offset, uint32_t len)
{
    uint8_t buf[13 + 255];

    stq_be_p(buf, offset);
    stl_be_p(buf + 8, len);
    if (!block) {
        put_msg(fd, MIG_RP_MSG_REQ_PAGES, buf, 12);
        return;
    }
    buf[12] = strlen(block);
    memcpy(buf + 13, block, buf[12]);
    put_msg(fd, MIG_RP_MSG_REQ_PAGES_ID, buf, 13 + buf[12]);
}

static void put_be32_msg(int fd, uint16_t type, uint32_t v)
{
    uint8_t buf[4];

    stl_be_p(buf, v);
    put_msg(fd, type, buf, 4);
}

/*
 * The return path ended (the peer's end closed) with an error containing
 * @msg; @failed: by a failure (not a SHUT carrying one).
 */
static void assert_ended_with(int fd, const char *msg, bool failed)
{
    Error *err = NULL;

    close(fd);
    g_assert_false(rp_src_wait_shut(-1, &err));
    g_assert_nonnull(err);
    if (!strstr(error_get_pretty(err), msg)) {
        g_printerr("error '%s' lacks '%s'\n", error_get_pretty(err), msg);
    }
    g_assert_nonnull(strstr(error_get_pretty(err), msg));
    error_free(err);
    g_assert_true(rp_src_failed(NULL) == failed);
    rp_src_stop();
}

static void test_requests_in_order(void)
{
    int fd = start();
    RAMBlock *rb;
    uint64_t page;
    int64_t t;
    Error *err = NULL;

    put_req(fd, "pc.ram", 5 * 4096, 4096);
    put_req(fd, NULL, 9 * 4096, 2 * 4096);         /* same block, two pages */
    put_req(fd, "extra", 7 * 4096, 4096);
    put_be32_msg(fd, MIG_RP_MSG_PONG, 3);
    put_be32_msg(fd, MIG_RP_MSG_SHUT, 0);
    g_assert_true(rp_src_wait_shut(-1, &err));
    g_assert_null(err);
    g_assert_cmpuint(rp_src_requests(), ==, 3);
    g_assert_true(rp_src_pop_request(&rb, &page, &t) && rb == &blocks[0] && page == 5);
    g_assert_true(rp_src_pop_request(&rb, &page, &t) && rb == &blocks[0] && page == 9);
    g_assert_true(rp_src_pop_request(&rb, &page, &t) && rb == &blocks[0] && page == 10);
    g_assert_true(rp_src_pop_request(&rb, &page, &t) && rb == &blocks[1] && page == 7);
    g_assert_false(rp_src_pop_request(&rb, &page, &t));
    g_assert_false(rp_src_failed(NULL));
    close(fd);
    rp_src_stop();
}

/*
 * Our destination's PONGs: it accepted the confirmation, and it says the
 * vmdesc arrived damaged; a QEMU destination's echo of the offer is only
 * an answer. A destination that stays quiet is given up on at the timeout.
 */
static void test_confirmation(void)
{
    int fd = start();
    Error *err = NULL;

    /* No answer yet: the wait ends at its timeout, unanswered. */
    g_assert_true(rp_src_running());
    g_assert_false(rp_src_wait_offer_answer(100));
    /* QEMU echoes the offer: an answer, not an acceptance. */
    put_be32_msg(fd, MIG_RP_MSG_PONG, MIG_PING_CONFIRM_OFFER);
    g_assert_true(rp_src_wait_offer_answer(60000));
    g_assert_false(rp_src_peer_confirms());
    g_assert_false(rp_src_wait_shut(200, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "did not say within"));
    g_clear_pointer(&err, error_free);
    g_assert_false(rp_src_peer_confirms());
    g_assert_false(rp_src_failed(NULL));
    put_be32_msg(fd, MIG_RP_MSG_PONG, MIG_PONG_CONFIRM_ACCEPT);
    put_be32_msg(fd, MIG_RP_MSG_PONG, MIG_PONG_VMDESC_DAMAGED);
    put_be32_msg(fd, MIG_RP_MSG_SHUT, 0);
    g_assert_true(rp_src_wait_shut(-1, &err));
    g_assert_true(rp_src_peer_confirms());
    g_assert_true(rp_src_peer_vmdesc_damaged());
    close(fd);
    rp_src_stop();
    g_assert_false(rp_src_running());

    /* A new migration starts without them. */
    fd = start();
    put_be32_msg(fd, MIG_RP_MSG_SHUT, 0);
    g_assert_true(rp_src_wait_shut(-1, &err));
    g_assert_false(rp_src_peer_confirms());
    g_assert_false(rp_src_peer_vmdesc_damaged());
    /* Ended without an answer: the wait returns at once, unanswered. */
    g_assert_false(rp_src_wait_offer_answer(60000));
    close(fd);
    rp_src_stop();
}

static void test_shut_with_error(void)
{
    int fd = start();

    put_be32_msg(fd, MIG_RP_MSG_SHUT, 1);
    assert_ended_with(fd, "Sibling indicated error 1", false);
}

static void test_bitmap_and_resume_ack(void)
{
    int fd = start();
    uint8_t name[1 + 5] = { 5, 'e', 'x', 't', 'r', 'a' }, word[8];
    unsigned long bmap = 0x81;      /* pages 0 and 7 of "extra" */
    g_autofree unsigned long *got = NULL;
    Error *err = NULL;

    put_msg(fd, MIG_RP_MSG_RECV_BITMAP, name, sizeof(name));
    stq_be_p(word, sizeof(bmap));
    g_assert_cmpint(write(fd, word, 8), ==, 8);
    g_assert_cmpint(write(fd, &bmap, sizeof(bmap)), ==, sizeof(bmap));
    stq_be_p(word, 0x0123456789abcdefULL);
    g_assert_cmpint(write(fd, word, 8), ==, 8);
    put_be32_msg(fd, MIG_RP_MSG_RESUME_ACK, 1);
    got = rp_src_wait_bitmap(&blocks[1], &err);
    g_assert_nonnull(got);
    g_assert_cmphex(*got, ==, 0x81);
    g_assert_true(rp_src_wait_resume_ack(&err));
    g_assert_null(err);
    close(fd);
    rp_src_stop();
}

typedef enum Hostile {
    H_UNKNOWN_TYPE, H_TOO_LONG, H_SHUT_LEN, H_REQ_LEN, H_REQ_ID_LEN, H_UNKNOWN_BLOCK,
    H_NO_BLOCK_YET, H_PAST_END, H_UNALIGNED, H_ZERO_LEN, H_BITMAP_SIZE, H_BITMAP_MARKER,
    H_BITMAP_BLOCK, H_RESUME_ACK_VALUE, H_CUT_MID_MESSAGE,
} Hostile;

static const struct {
    Hostile kind;
    const char *msg;
} hostile[] = {
    { H_UNKNOWN_TYPE, "Received an invalid message 0x0009" },
    { H_TOO_LONG, "length 0x0201" },
    { H_SHUT_LEN, "with bad length 0x0003" },
    { H_REQ_LEN, "message 0x0004 with bad length 0x000b" },
    { H_REQ_ID_LEN, "message 0x0003 with bad length" },
    { H_UNKNOWN_BLOCK, "unknown RAM block \"nope\"" },
    { H_NO_BLOCK_YET, "without naming a block first" },
    { H_PAST_END, "not whole pages inside it" },
    { H_UNALIGNED, "not whole pages inside it" },
    { H_ZERO_LEN, "not whole pages inside it" },
    { H_BITMAP_SIZE, "has 16 bytes, not 8" },
    { H_BITMAP_MARKER, "not the marker" },
    { H_BITMAP_BLOCK, "bitmap of unknown RAM block" },
    { H_RESUME_ACK_VALUE, "invalid RESUME_ACK" },
    { H_CUT_MID_MESSAGE, "closed mid-message" },
};

static void test_hostile(void)
{
    for (size_t i = 0; i < G_N_ELEMENTS(hostile); i++) {
        int fd = start();
        uint8_t buf[600] = { 0 }, word[8];
        uint8_t extra[] = { 5, 'e', 'x', 't', 'r', 'a' }, nope[] = { 4, 'n', 'o', 'p', 'e' };

        switch (hostile[i].kind) {
        case H_UNKNOWN_TYPE:
            put_msg(fd, 9, buf, 0);
            break;
        case H_TOO_LONG:
            put_msg(fd, MIG_RP_MSG_PONG, buf, 513);
            break;
        case H_SHUT_LEN:
            put_msg(fd, MIG_RP_MSG_SHUT, buf, 3);
            break;
        case H_REQ_LEN:
            put_msg(fd, MIG_RP_MSG_REQ_PAGES, buf, 11);
            break;
        case H_REQ_ID_LEN:
            buf[12] = 200;          /* a name longer than the message */
            put_msg(fd, MIG_RP_MSG_REQ_PAGES_ID, buf, 20);
            break;
        case H_UNKNOWN_BLOCK:
            put_req(fd, "nope", 0, 4096);
            break;
        case H_NO_BLOCK_YET:
            put_req(fd, NULL, 0, 4096);
            break;
        case H_PAST_END:
            put_req(fd, "extra", 7 * 4096, 2 * 4096);
            break;
        case H_UNALIGNED:
            put_req(fd, "extra", 100, 4096);
            break;
        case H_ZERO_LEN:
            put_req(fd, "extra", 0, 0);
            break;
        case H_BITMAP_SIZE:
        case H_BITMAP_MARKER:
            put_msg(fd, MIG_RP_MSG_RECV_BITMAP, extra, sizeof(extra));
            stq_be_p(word, hostile[i].kind == H_BITMAP_SIZE ? 16 : 8);
            g_assert_cmpint(write(fd, word, 8), ==, 8);
            g_assert_cmpint(write(fd, buf, 8), ==, 8);
            g_assert_cmpint(write(fd, buf, 8), ==, 8);     /* a zero "marker" */
            break;
        case H_BITMAP_BLOCK:
            put_msg(fd, MIG_RP_MSG_RECV_BITMAP, nope, sizeof(nope));
            break;
        case H_RESUME_ACK_VALUE:
            put_be32_msg(fd, MIG_RP_MSG_RESUME_ACK, 2);
            break;
        case H_CUT_MID_MESSAGE: {
            uint8_t hdr[4] = { 0, MIG_RP_MSG_PONG, 0, 4 };

            g_assert_cmpint(write(fd, hdr, 4), ==, 4);
            g_assert_cmpint(write(fd, buf, 2), ==, 2);
            break;
        }
        }
        assert_ended_with(fd, hostile[i].msg, true);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/return-path/requests-in-order", test_requests_in_order);
    g_test_add_func("/return-path/shut-with-error", test_shut_with_error);
    g_test_add_func("/return-path/confirmation", test_confirmation);
    g_test_add_func("/return-path/bitmap-and-resume-ack", test_bitmap_and_resume_ack);
    g_test_add_func("/return-path/hostile", test_hostile);
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for hw/virtio/virtqueue-state.c over real guest RAM
 * (system/memory.c): a queue a fake driver used is saved, and copies of its
 * state, or of the rings the stream's RAM would carry, are changed one
 * field at a time. A bad stream field must be refused by
 * virtqueue_check_state() with the field in the message; a ring the guest
 * wrote must pass that (the stream is fine) and be found by
 * virtqueue_check_rings(), whose caller breaks the device rather than
 * refusing the stream. Either leaves guest RAM and the live queue as they
 * were, and the good one must resume where the source stopped.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/virtio/virtqueue.h"
#include "system/memory.h"
#include <linux/virtio_ring.h>

#define RAM_SIZE (2 * MiB)
#define QSIZE 16
#define DESC_GPA  0x10000
#define AVAIL_GPA 0x11000
#define USED_GPA  0x12000
#define BUF_GPA   0x20000

static RAMBlock *ram;

static uint8_t *gpa_ptr(uint64_t gpa)
{
    uint8_t *p = guest_phys_to_host(gpa, 1);

    g_assert_nonnull(p);
    return p;
}

static void put16(uint64_t gpa, uint16_t v)
{
    v = GUINT16_TO_LE(v);
    memcpy(gpa_ptr(gpa), &v, 2);
}

static uint16_t get16(uint64_t gpa)
{
    uint16_t v;

    memcpy(&v, gpa_ptr(gpa), 2);
    return GUINT16_FROM_LE(v);
}

static void put_desc(unsigned int i, uint64_t addr, uint32_t len, uint16_t flags,
                     uint16_t next)
{
    uint8_t raw[16];
    uint64_t a = GUINT64_TO_LE(addr);
    uint32_t l = GUINT32_TO_LE(len);
    uint16_t f = GUINT16_TO_LE(flags), n = GUINT16_TO_LE(next);

    memcpy(raw, &a, 8);
    memcpy(raw + 8, &l, 4);
    memcpy(raw + 12, &f, 2);
    memcpy(raw + 14, &n, 2);
    memcpy(gpa_ptr(DESC_GPA + 16 * i), raw, 16);
}

static void on_error(void *opaque, VirtQueue *vq, const char *msg)
{
    g_test_message("queue broken: %s", msg);
    (*(unsigned int *)opaque)++;
}

/* A driver offers chain (2i, 2i+1) at avail slot i: a readable and a writable buffer. */
static void offer(uint16_t *avail_idx, unsigned int i)
{
    put_desc(2 * i, BUF_GPA + i * 0x200, 0x10, VRING_DESC_F_NEXT, 2 * i + 1);
    put_desc(2 * i + 1, BUF_GPA + i * 0x200 + 0x100, 0x100, VRING_DESC_F_WRITE, 0);
    put16(AVAIL_GPA + 4 + 2 * (*avail_idx % QSIZE), 2 * i);
    put16(AVAIL_GPA + 2, ++*avail_idx);
}

/*
 * The source: three chains offered, two taken and returned, one taken and
 * held when it stops (rewound by the save), one more offered after: the
 * state it saves, with the rings in RAM as the stream carries them.
 */
static VirtQueueState source_state(void)
{
    unsigned int errors = 0;
    uint16_t avail_idx = 0;
    VirtQueueState st;
    VirtQueue *vq = g_new0(VirtQueue, 1);
    VirtQueueElement *e;

    memset(gpa_ptr(0), 0, RAM_SIZE);
    virtqueue_init(vq, 0, QSIZE, on_error, &errors);
    vq->num = QSIZE;
    vq->desc_addr = DESC_GPA;
    vq->avail_addr = AVAIL_GPA;
    vq->used_addr = USED_GPA;
    g_assert_true(virtqueue_enable(vq, true, false));
    for (unsigned int i = 0; i < 3; i++) {
        offer(&avail_idx, i);
    }
    for (unsigned int i = 0; i < 2; i++) {
        e = virtqueue_pop(vq);
        g_assert_nonnull(e);
        virtqueue_push(vq, e, 4);
        g_free(e);
    }
    g_assert_true(virtqueue_should_notify(vq));
    e = virtqueue_pop(vq);              /* held across the stop */
    g_assert_nonnull(e);
    g_free(e);
    offer(&avail_idx, 3);
    virtqueue_get_state(vq, &st);
    g_assert_cmpuint(errors, ==, 0);
    g_assert_cmpuint(st.last_avail_idx, ==, 2);
    g_assert_cmpuint(st.used_idx, ==, 2);
    g_assert_cmpuint(get16(USED_GPA + 2), ==, 2);
    g_free(vq);
    return st;
}

/* A fresh destination queue, as a device has it before the load. */
static VirtQueue *dest_queue(unsigned int *errors)
{
    VirtQueue *vq = g_new0(VirtQueue, 1);

    *errors = 0;
    virtqueue_init(vq, 0, QSIZE, on_error, errors);
    return vq;
}

/*
 * A stream field of @st is wrong: virtqueue_check_state refuses it with
 * @needle in the message (@rings false), or the stream is consistent and
 * the rings in RAM disagree (@rings true): virtqueue_check_state takes it
 * and virtqueue_check_rings, which breaks the device at load, finds it.
 * RAM and the live queue untouched either way.
 */
static void expect_found(const VirtQueueState *st, bool indirect, bool rings,
                         const char *needle)
{
    g_autofree uint8_t *before = g_memdup2(gpa_ptr(0), RAM_SIZE);
    unsigned int errors;
    g_autofree VirtQueue *vq = dest_queue(&errors);
    Error *err = NULL;

    if (rings) {
        g_assert_true(virtqueue_check_state(vq, st, ERRP_ABORT));
        g_assert_false(virtqueue_check_rings(vq, st, indirect, &err));
    } else {
        g_assert_false(virtqueue_check_state(vq, st, &err));
    }
    g_test_message("%s: %s", rings ? "rings disagree" : "refused", error_get_pretty(err));
    g_assert_nonnull(strstr(error_get_pretty(err), needle));
    error_free(err);
    g_assert_cmpmem(before, RAM_SIZE, gpa_ptr(0), RAM_SIZE);
    g_assert_false(vq->ready);
    g_assert_false(virtqueue_is_broken(vq));
    g_assert_cmpuint(errors, ==, 0);
}

static void expect_refused(const VirtQueueState *st, const char *needle)
{
    expect_found(st, false, false, needle);
}

/* What the guest wrote: the device is loaded broken (virtio_device_set_state). */
static void expect_rings_disagree(const VirtQueueState *st, bool indirect, const char *needle)
{
    expect_found(st, indirect, true, needle);
}

static void test_round_trip(void)
{
    VirtQueueState st = source_state();
    unsigned int errors;
    g_autofree VirtQueue *vq = dest_queue(&errors);
    VirtQueueElement *e;

    /* The source had signalled at used idx 2: nothing new to say, by its count. */
    st.signalled_used = st.used_idx;
    st.signalled_used_valid = true;
    g_assert_true(virtqueue_check_state(vq, &st, ERRP_ABORT));
    g_assert_true(virtqueue_check_rings(vq, &st, false, ERRP_ABORT));
    virtqueue_set_state(vq, &st, true, false);
    /* The held chain comes again, then the one offered after the stop. */
    e = virtqueue_pop(vq);
    g_assert_nonnull(e);
    g_assert_cmpuint(e->index, ==, 4);
    virtqueue_push(vq, e, 1);
    g_free(e);
    /*
     * The loaded signalled_used is not trusted: the first used buffer after
     * the load interrupts even where the driver's used_event says it already
     * had one (a wrong index there could lose the interrupt for good).
     */
    put16(AVAIL_GPA + 4 + 2 * QSIZE, 0);
    g_assert_true(virtqueue_should_notify(vq));
    e = virtqueue_pop(vq);
    g_assert_nonnull(e);
    g_assert_cmpuint(e->index, ==, 6);
    g_free(e);
    g_assert_cmpuint(errors, ==, 0);
}

static void test_in_flight(void)
{
    VirtQueueState st = source_state();

    /* One more taken than returned: a stream of ours rewinds those. */
    st.last_avail_idx++;
    expect_refused(&st, "queue 0: last_avail_idx 3 is 1 past used_idx 2, but 0 chains in "
                   "use come with the device");
    st.last_avail_idx -= 2;
    expect_refused(&st, "queue 0: last_avail_idx 1 is 65535 past used_idx 2");
    /* ... unless the device's state carries it (virtio-blk's held requests): then exactly. */
    st.last_avail_idx = 3;
    st.inuse = 1;
    {
        unsigned int errors;
        g_autofree VirtQueue *vq = dest_queue(&errors);

        g_assert_true(virtqueue_check_state(vq, &st, ERRP_ABORT));
        virtqueue_set_state(vq, &st, false, false);
        g_assert_cmpuint(vq->inuse, ==, 1);
        g_assert_cmpuint(vq->last_avail_idx, ==, 3);
        virtqueue_disable(vq);
    }
    st.inuse = 2;
    expect_refused(&st, "last_avail_idx 3 is 1 past used_idx 2, but 2 chains in use");
    st.inuse = QSIZE + 1;
    st.last_avail_idx = st.used_idx + QSIZE + 1;
    expect_refused(&st, "but 17 chains in use");
}

/* A chain a stream names: checked as a pop checks descriptors, mapped, no RAM read. */
static void test_elem_load(void)
{
    const uint64_t addr[3] = { BUF_GPA, BUF_GPA + 0x100, BUF_GPA + 0x1000 };
    const uint64_t len[3] = { 16, 512, 1 };
    uint64_t bad[3];
    VirtQueueElement *e;
    Error *err = NULL;

    e = virtqueue_elem_load(QSIZE, 5, 2, 1, addr, len, ERRP_ABORT);
    g_assert_cmpuint(e->index, ==, 5);
    g_assert_cmpuint(e->out_len, ==, 528);
    g_assert_cmpuint(e->in_len, ==, 1);
    g_assert_true(e->out_sg[1].iov_base == gpa_ptr(BUF_GPA + 0x100));
    g_assert_true(e->in_sg[0].iov_base == gpa_ptr(BUF_GPA + 0x1000));
    g_assert_cmpuint(e->in_addr[0], ==, BUF_GPA + 0x1000);
    g_assert_cmpuint(e->out_addr[1], ==, BUF_GPA + 0x100);
    g_free(e);
    g_assert_null(virtqueue_elem_load(QSIZE, QSIZE, 2, 1, addr, len, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "head 16 is beyond the queue size 16"));
    error_free(err);
    err = NULL;
    g_assert_null(virtqueue_elem_load(QSIZE, 0, 1024, 1, addr, len, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "1024 buffers out and 1 in"));
    error_free(err);
    err = NULL;
    memcpy(bad, addr, sizeof(bad));
    bad[2] = RAM_SIZE - 1;
    g_assert_null(virtqueue_elem_load(QSIZE, 0, 2, 1, bad, (const uint64_t[]) { 16, 512, 2 },
                                      &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "buffer 2 (0x1fffff+0x2) is outside guest RAM"));
    error_free(err);
    err = NULL;
    bad[2] = UINT64_MAX;
    g_assert_null(virtqueue_elem_load(QSIZE, 0, 2, 1, bad, len, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "outside guest RAM"));
    error_free(err);
    err = NULL;
    g_assert_null(virtqueue_elem_load(QSIZE, 0, 2, 1, addr, (const uint64_t[]) { 16, 0, 1 },
                                      &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "not a descriptor's length"));
    error_free(err);
}

static void test_used_idx_against_ram(void)
{
    VirtQueueState st = source_state();

    /* The guest wrote the device ring's idx: the stream is not wrong, the device breaks. */
    put16(USED_GPA + 2, 9);
    expect_rings_disagree(&st, false, "queue 0: used_idx 2, but the device ring at 0x12000 "
                          "in guest RAM says 9");
    /*
     * Both indices moved together in the stream: consistent with each
     * other, so the stream alone cannot tell; to the destination it is the
     * same as the guest writing the ring.
     */
    st = source_state();
    st.last_avail_idx = st.used_idx = 3;
    expect_rings_disagree(&st, false, "queue 0: used_idx 3, but the device ring at 0x12000 in "
                          "guest RAM says 2");
    st = source_state();
    st.last_avail_idx = st.used_idx = 0;
    expect_rings_disagree(&st, false, "used_idx 0, but the device ring");
    /* The device ring moved to another good place in RAM (the driver ring's idx is 4). */
    st = source_state();
    st.used_addr = AVAIL_GPA;
    expect_rings_disagree(&st, false, "used_idx 2, but the device ring at 0x11000 in guest "
                          "RAM says 4");
}

static void test_avail_against_ram(void)
{
    VirtQueueState st = source_state();

    /* The driver ring's idx more than a queue ahead of where the device stands. */
    put16(AVAIL_GPA + 2, 2 + QSIZE + 1);
    expect_rings_disagree(&st, false, "queue 0: avail idx 19 is 17 ahead of 2, more than the "
                          "queue size 16");
    /* Behind: wraps to 65535 ahead. */
    st = source_state();
    put16(AVAIL_GPA + 2, 1);
    expect_rings_disagree(&st, false, "avail idx 1 is 65535 ahead of 2");
    /* An offered slot names a head beyond the queue. */
    st = source_state();
    put16(AVAIL_GPA + 4 + 2 * 3, QSIZE);
    expect_rings_disagree(&st, false, "queue 0: avail ring names head 16, beyond the queue "
                          "size 16");
}

static void test_offered_chains(void)
{
    VirtQueueState st = source_state();

    /* Each offered chain walks as the device would walk it at the first kick. */
    put_desc(6, BUF_GPA, 0x10, VRING_DESC_F_NEXT, QSIZE);
    expect_rings_disagree(&st, false, "queue 0: descriptor 6 has next 16, beyond 16");
    st = source_state();
    put_desc(7, RAM_SIZE - 8, 0x40, VRING_DESC_F_WRITE, 0);
    expect_rings_disagree(&st, false, "queue 0: descriptor 7 buffer 0x1ffff8+0x40 is outside "
                          "guest RAM");
    st = source_state();
    put_desc(5, BUF_GPA, 0x10, VRING_DESC_F_NEXT, 4);       /* 4 -> 5 -> 4 ... */
    expect_rings_disagree(&st, false, "descriptor chain from 4 is longer than 16 (a loop)");
    st = source_state();
    put_desc(4, BUF_GPA, 0x18, VRING_DESC_F_INDIRECT, 0);
    expect_rings_disagree(&st, false, "queue 0: descriptor 4 is indirect, but "
                          "VIRTIO_RING_F_INDIRECT_DESC was not negotiated");
    /* With the feature, the table itself is walked. */
    expect_rings_disagree(&st, true, "queue 0: indirect table of descriptor 4 has bad length");
}

int main(int argc, char **argv)
{
    RAMBackendOpts o = { .id = "test.ram", .kind = RAM_BACKEND_ANON, .size = RAM_SIZE };

    g_test_init(&argc, &argv, NULL);
    ram = ram_block_create(&o, ERRP_ABORT);
    guest_ram_map(ram, 0, 0, RAM_SIZE, ERRP_ABORT);

    g_test_add_func("/virtqueue-state/round-trip", test_round_trip);
    g_test_add_func("/virtqueue-state/in-flight", test_in_flight);
    g_test_add_func("/virtqueue-state/elem-load", test_elem_load);
    g_test_add_func("/virtqueue-state/used-idx-against-ram", test_used_idx_against_ram);
    g_test_add_func("/virtqueue-state/avail-against-ram", test_avail_against_ram);
    g_test_add_func("/virtqueue-state/offered-chains", test_offered_chains);
    return g_test_run();
}

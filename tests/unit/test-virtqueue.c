/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for hw/virtio/virtqueue.c over real guest RAM (system/memory.c:
 * 2 MiB at 0 and 2 MiB at 4 GiB, a hole between): a fake driver lays out
 * rings and chains; pop/push, indirect tables, notification suppression
 * (flags and event idx), dirty marking, 16-bit index wrap. Hostile drivers:
 * rings outside RAM or misaligned, bad sizes, heads and nexts beyond the
 * queue, loops, buffers outside RAM or overflowing, avail idx running
 * ahead, bad indirect tables, writable-then-readable chains, and seeded
 * random garbage in every ring, where every iovec must lie inside RAM.
 * Each must break the queue with exactly one report.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bitmap.h"
#include "hw/virtio/virtqueue.h"
#include "system/memory.h"
#include <linux/virtio_ring.h>

#define SEED 0x71e7c0de
#define LOW_SIZE (2 * MiB)
#define HIGH_BASE (4 * GiB)
#define HIGH_SIZE (2 * MiB)
#define QSIZE 16

#define DESC_GPA  0x10000
#define AVAIL_GPA 0x11000
#define USED_GPA  0x12000
#define BUF_GPA   0x20000       /* buffers from here on */
#define TABLE_GPA 0x18000       /* indirect tables */

static RAMBlock *ram;

/* ---- The fake driver ---- */

typedef struct Driver {
    VirtQueue vq;
    unsigned int errors;        /* reports through the callback */
    char *last_error;
    bool quiet;                 /* do not log each report (random rounds) */
    uint16_t avail_idx;
} Driver;

static void on_error(void *opaque, VirtQueue *vq, const char *msg)
{
    Driver *d = opaque;

    d->errors++;
    g_free(d->last_error);
    d->last_error = g_strdup(msg);
    if (!d->quiet) {
        g_test_message("queue broken: %s", msg);
    }
}

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

static uint32_t get32(uint64_t gpa)
{
    uint32_t v;

    memcpy(&v, gpa_ptr(gpa), 4);
    return GUINT32_FROM_LE(v);
}

static void put_desc_at(uint64_t table, unsigned int i, uint64_t addr, uint32_t len,
                        uint16_t flags, uint16_t next)
{
    uint8_t raw[16];
    uint64_t a = GUINT64_TO_LE(addr);
    uint32_t l = GUINT32_TO_LE(len);
    uint16_t f = GUINT16_TO_LE(flags), n = GUINT16_TO_LE(next);

    memcpy(raw, &a, 8);
    memcpy(raw + 8, &l, 4);
    memcpy(raw + 12, &f, 2);
    memcpy(raw + 14, &n, 2);
    memcpy(gpa_ptr(table + 16 * i), raw, 16);
}

static void put_desc(unsigned int i, uint64_t addr, uint32_t len, uint16_t flags,
                     uint16_t next)
{
    put_desc_at(DESC_GPA, i, addr, len, flags, next);
}

/* Makes @head available: ring entry, then the index (what a driver does). */
static void publish(Driver *d, uint16_t head)
{
    put16(AVAIL_GPA + 4 + 2 * (d->avail_idx % QSIZE), head);
    d->avail_idx++;
    put16(AVAIL_GPA + 2, d->avail_idx);
}

static void driver_setup(Driver *d, uint16_t num, bool event_idx, bool indirect)
{
    memset(d, 0, sizeof(*d));
    memset(gpa_ptr(DESC_GPA), 0, 0x3000);
    virtqueue_init(&d->vq, 0, QSIZE, on_error, d);
    d->vq.num = num;
    d->vq.desc_addr = DESC_GPA;
    d->vq.avail_addr = AVAIL_GPA;
    d->vq.used_addr = USED_GPA;
    g_assert_true(virtqueue_enable(&d->vq, event_idx, indirect));
    g_assert_cmpuint(d->errors, ==, 0);
}

static void driver_teardown(Driver *d)
{
    g_free(d->last_error);
}

/* The queue is broken, reported once, and gives nothing more. */
static void assert_broken_once(Driver *d, const char *needle)
{
    g_assert_true(virtqueue_is_broken(&d->vq));
    g_assert_cmpuint(d->errors, ==, 1);
    g_assert_nonnull(strstr(d->last_error, needle));
    g_assert_null(virtqueue_pop(&d->vq));
    g_assert_true(virtqueue_empty(&d->vq));
    g_assert_cmpuint(d->errors, ==, 1);
}

/* Pops expecting failure with @needle in the message. */
static void pop_expect_broken(Driver *d, const char *needle)
{
    g_assert_null(virtqueue_pop(&d->vq));
    assert_broken_once(d, needle);
}

/* One descriptor a hostile test writes, into @table (DESC_GPA or TABLE_GPA). */
typedef struct DescSpec {
    uint64_t table;
    unsigned int i;
    uint64_t addr;
    uint32_t len;
    uint16_t flags;
    uint16_t next;
} DescSpec;

/*
 * A fresh queue of QSIZE (indirect negotiated or not) holding @descs, with
 * @head published: the first pop must break the queue with @needle.
 */
static void chain_expect_broken(bool indirect, const DescSpec *descs, size_t n,
                                uint16_t head, const char *needle)
{
    Driver d;

    driver_setup(&d, QSIZE, false, indirect);
    for (size_t k = 0; k < n; k++) {
        put_desc_at(descs[k].table, descs[k].i, descs[k].addr, descs[k].len,
                    descs[k].flags, descs[k].next);
    }
    publish(&d, head);
    pop_expect_broken(&d, needle);
    driver_teardown(&d);
}

#define CHAIN_EXPECT_BROKEN(indirect, head, needle, ...) do {                 \
        const DescSpec descs_[] = { __VA_ARGS__ };                          \
        chain_expect_broken(indirect, descs_, G_N_ELEMENTS(descs_), head,   \
                            needle);                                        \
    } while (0)

/* ---- Normal operation ---- */

static void test_pop_push(void)
{
    Driver d;
    VirtQueueElement *e;
    uint8_t *out = gpa_ptr(BUF_GPA), *in = gpa_ptr(BUF_GPA + 0x1000);

    driver_setup(&d, QSIZE, false, false);
    g_assert_true(virtqueue_empty(&d.vq));
    g_assert_null(virtqueue_pop(&d.vq));
    memset(out, 0x5a, 100);
    put_desc(3, BUF_GPA, 100, VRING_DESC_F_NEXT, 7);
    put_desc(7, BUF_GPA + 0x1000, 200, VRING_DESC_F_WRITE, 0);
    publish(&d, 3);
    g_assert_false(virtqueue_empty(&d.vq));
    e = virtqueue_pop(&d.vq);
    g_assert_nonnull(e);
    g_assert_cmpuint(e->index, ==, 3);
    g_assert_cmpuint(e->out_num, ==, 1);
    g_assert_cmpuint(e->in_num, ==, 1);
    g_assert_cmpuint(e->out_len, ==, 100);
    g_assert_cmpuint(e->in_len, ==, 200);
    g_assert_true(e->out_sg[0].iov_base == out);
    g_assert_true(e->in_sg[0].iov_base == in);
    g_assert_cmpuint(e->in_addr[0], ==, BUF_GPA + 0x1000);
    g_assert_cmpuint(d.vq.inuse, ==, 1);
    g_assert_null(virtqueue_pop(&d.vq));

    /* The copy helpers honour offsets and element bounds. */
    {
        uint8_t buf[300];

        g_assert_cmpuint(virtqueue_elem_read(e, 90, buf, sizeof(buf)), ==, 10);
        g_assert_cmpuint(buf[0], ==, 0x5a);
        memset(buf, 0xc3, sizeof(buf));
        g_assert_cmpuint(virtqueue_elem_write(e, 150, buf, sizeof(buf)), ==, 50);
        g_assert_cmpuint(in[199], ==, 0xc3);
        g_assert_cmpuint(in[149], !=, 0xc3);
    }
    /* More than the element holds is reported as what it holds. */
    virtqueue_push(&d.vq, e, 5000);
    g_assert_cmpuint(get16(USED_GPA + 2), ==, 1);
    g_assert_cmpuint(get32(USED_GPA + 4), ==, 3);
    g_assert_cmpuint(get32(USED_GPA + 8), ==, 200);
    g_assert_cmpuint(d.vq.inuse, ==, 0);
    g_free(e);
    g_assert_cmpuint(d.errors, ==, 0);
    driver_teardown(&d);
}

static void test_unpop_and_batch(void)
{
    Driver d;
    VirtQueueElement *e[3];

    driver_setup(&d, QSIZE, false, false);
    for (int i = 0; i < 3; i++) {
        put_desc(i, BUF_GPA + i * 0x100, 0x100, VRING_DESC_F_WRITE, 0);
        publish(&d, i);
    }
    e[0] = virtqueue_pop(&d.vq);
    virtqueue_unpop(&d.vq, e[0]);
    g_free(e[0]);
    for (int i = 0; i < 3; i++) {
        e[i] = virtqueue_pop(&d.vq);
        g_assert_cmpuint(e[i]->index, ==, i);
    }
    for (int i = 0; i < 3; i++) {
        virtqueue_fill(&d.vq, e[i], 10 + i, i);
    }
    /* Nothing is visible before the flush. */
    g_assert_cmpuint(get16(USED_GPA + 2), ==, 0);
    virtqueue_flush(&d.vq, 3);
    g_assert_cmpuint(get16(USED_GPA + 2), ==, 3);
    for (int i = 0; i < 3; i++) {
        g_assert_cmpuint(get32(USED_GPA + 4 + 8 * i), ==, i);
        g_assert_cmpuint(get32(USED_GPA + 8 + 8 * i), ==, 10 + i);
        g_free(e[i]);
    }
    driver_teardown(&d);
}

static void test_indirect(void)
{
    Driver d;
    VirtQueueElement *e;

    driver_setup(&d, QSIZE, false, true);
    /* Table entries: 0 -> 2 -> 1, readable, readable, writable. */
    put_desc_at(TABLE_GPA, 0, BUF_GPA, 10, VRING_DESC_F_NEXT, 2);
    put_desc_at(TABLE_GPA, 2, BUF_GPA + 0x100, 20, VRING_DESC_F_NEXT, 1);
    put_desc_at(TABLE_GPA, 1, BUF_GPA + 0x200, 30, VRING_DESC_F_WRITE, 0);
    put_desc(5, TABLE_GPA, 3 * 16, VRING_DESC_F_INDIRECT, 0);
    publish(&d, 5);
    e = virtqueue_pop(&d.vq);
    g_assert_nonnull(e);
    g_assert_cmpuint(e->index, ==, 5);
    g_assert_cmpuint(e->out_num, ==, 2);
    g_assert_cmpuint(e->in_num, ==, 1);
    g_assert_cmpuint(e->out_len, ==, 30);
    g_assert_cmpuint(e->in_len, ==, 30);
    g_assert_cmpuint(e->in_addr[0], ==, BUF_GPA + 0x200);
    virtqueue_push(&d.vq, e, 30);
    g_free(e);
    g_assert_cmpuint(d.errors, ==, 0);
    driver_teardown(&d);
}

/* The used ring and the written buffer pages get marked for migration. */
static void test_dirty(void)
{
    Driver d;
    VirtQueueElement *e;
    uint64_t buf = BUF_GPA + 0x3000 - 8;      /* 16 bytes across a page boundary */

    driver_setup(&d, QSIZE, false, false);
    put_desc(0, buf, 16, VRING_DESC_F_WRITE, 0);
    publish(&d, 0);
    e = virtqueue_pop(&d.vq);
    bitmap_clear(ram->vmm_dirty_bmap, 0, ram->used_length >> TARGET_PAGE_BITS);
    ram_vmm_dirty_log_start();
    virtqueue_push(&d.vq, e, 4);
    ram_vmm_dirty_log_stop();
    g_assert_true(test_bit(USED_GPA >> TARGET_PAGE_BITS, ram->vmm_dirty_bmap));
    g_assert_true(test_bit(buf >> TARGET_PAGE_BITS, ram->vmm_dirty_bmap));
    /* Only 4 bytes were written: the next page is untouched. */
    g_assert_false(test_bit((buf + 8) >> TARGET_PAGE_BITS, ram->vmm_dirty_bmap));
    g_free(e);
    driver_teardown(&d);
}

/* 16-bit indices wrap many times over a small ring. */
static void test_wrap(void)
{
    Driver d;

    driver_setup(&d, 4, false, false);
    for (unsigned int n = 0; n < 70000; n++) {
        VirtQueueElement *e;

        put_desc(n % 4, BUF_GPA, 8, 0, 0);
        put16(AVAIL_GPA + 4 + 2 * (d.avail_idx % 4), n % 4);
        d.avail_idx++;
        put16(AVAIL_GPA + 2, d.avail_idx);
        e = virtqueue_pop(&d.vq);
        g_assert_nonnull(e);
        g_assert_cmpuint(e->index, ==, n % 4);
        virtqueue_push(&d.vq, e, 0);
        g_free(e);
    }
    g_assert_cmpuint(get16(USED_GPA + 2), ==, (uint16_t)70000);
    g_assert_cmpuint(d.errors, ==, 0);
    driver_teardown(&d);
}

static void test_notify_flags(void)
{
    Driver d;
    VirtQueueElement *e;

    driver_setup(&d, QSIZE, false, false);
    put_desc(0, BUF_GPA, 8, 0, 0);
    publish(&d, 0);
    e = virtqueue_pop(&d.vq);
    virtqueue_push(&d.vq, e, 0);
    g_assert_true(virtqueue_should_notify(&d.vq));
    put16(AVAIL_GPA, VRING_AVAIL_F_NO_INTERRUPT);
    g_assert_false(virtqueue_should_notify(&d.vq));
    virtqueue_set_notification(&d.vq, false);
    g_assert_cmpuint(get16(USED_GPA), ==, VRING_USED_F_NO_NOTIFY);
    virtqueue_set_notification(&d.vq, true);
    g_assert_cmpuint(get16(USED_GPA), ==, 0);
    g_free(e);
    driver_teardown(&d);
}

static void test_notify_event_idx(void)
{
    Driver d;
    VirtQueueElement *e;
    uint64_t used_event = AVAIL_GPA + 4 + 2 * QSIZE;
    uint64_t avail_event = USED_GPA + 4 + 8 * QSIZE;

    driver_setup(&d, QSIZE, true, false);
    for (int i = 0; i < 4; i++) {
        put_desc(i, BUF_GPA, 8, 0, 0);
        publish(&d, i);
    }
    /* The driver wants an interrupt once used idx passes 2 (i.e. reaches 3). */
    put16(used_event, 2);
    e = virtqueue_pop(&d.vq);
    g_assert_cmpuint(get16(avail_event), ==, 1);     /* kick me past what I took */
    virtqueue_push(&d.vq, e, 0);
    g_free(e);
    g_assert_true(virtqueue_should_notify(&d.vq));     /* first one: never signalled */
    e = virtqueue_pop(&d.vq);
    virtqueue_push(&d.vq, e, 0);
    g_free(e);
    g_assert_false(virtqueue_should_notify(&d.vq));    /* used idx 2: not past 2 */
    e = virtqueue_pop(&d.vq);
    virtqueue_push(&d.vq, e, 0);
    g_free(e);
    g_assert_true(virtqueue_should_notify(&d.vq));     /* used idx 3 */
    /* Disabled kicks: avail_event stays behind while we pop. */
    virtqueue_set_notification(&d.vq, false);
    e = virtqueue_pop(&d.vq);
    g_assert_cmpuint(get16(avail_event), ==, 3);
    virtqueue_set_notification(&d.vq, true);
    g_assert_cmpuint(get16(avail_event), ==, 4);     /* the driver's current idx */
    virtqueue_push(&d.vq, e, 0);
    g_free(e);
    driver_teardown(&d);
}

/* ---- Hostile drivers: ring setup ---- */

static void enable_expect_fail(uint16_t num, uint64_t desc, uint64_t avail, uint64_t used,
                               const char *needle)
{
    Driver d = { 0 };

    virtqueue_init(&d.vq, 0, QSIZE, on_error, &d);
    d.vq.num = num;
    d.vq.desc_addr = desc;
    d.vq.avail_addr = avail;
    d.vq.used_addr = used;
    g_assert_false(virtqueue_enable(&d.vq, false, false));
    g_assert_false(d.vq.ready);
    assert_broken_once(&d, needle);
    /* Reset makes it usable again. */
    virtqueue_reset(&d.vq);
    g_assert_false(virtqueue_is_broken(&d.vq));
    driver_teardown(&d);
}

static void test_bad_rings(void)
{
    enable_expect_fail(0, DESC_GPA, AVAIL_GPA, USED_GPA, "power of two");
    enable_expect_fail(12, DESC_GPA, AVAIL_GPA, USED_GPA, "power of two");
    enable_expect_fail(QSIZE * 2, DESC_GPA, AVAIL_GPA, USED_GPA, "above the maximum");
    enable_expect_fail(QSIZE, DESC_GPA + 8, AVAIL_GPA, USED_GPA, "aligned");
    enable_expect_fail(QSIZE, DESC_GPA, AVAIL_GPA + 1, USED_GPA, "aligned");
    enable_expect_fail(QSIZE, DESC_GPA, AVAIL_GPA, USED_GPA + 2, "aligned");
    /* In the hole, past the end, straddling the end of low RAM, far away. */
    enable_expect_fail(QSIZE, 3 * GiB, AVAIL_GPA, USED_GPA, "outside guest RAM");
    enable_expect_fail(QSIZE, DESC_GPA, LOW_SIZE - 16, USED_GPA, "outside guest RAM");
    enable_expect_fail(QSIZE, DESC_GPA, AVAIL_GPA, HIGH_BASE + HIGH_SIZE - 64,
                       "outside guest RAM");
    enable_expect_fail(QSIZE, 0xfffffffffffffff0ULL, AVAIL_GPA, USED_GPA,
                       "outside guest RAM");
}

/* Rings in high RAM work like any other. */
static void test_high_rings(void)
{
    Driver d = { 0 };

    virtqueue_init(&d.vq, 0, QSIZE, on_error, &d);
    d.vq.num = QSIZE;
    d.vq.desc_addr = HIGH_BASE;
    d.vq.avail_addr = HIGH_BASE + 0x1000;
    d.vq.used_addr = HIGH_BASE + HIGH_SIZE - (6 + 8 * QSIZE) - 2;
    g_assert_true(virtqueue_enable(&d.vq, false, false));
    g_assert_true(virtqueue_empty(&d.vq));
    driver_teardown(&d);
}

/* ---- Hostile drivers: chains ---- */

static void test_head_beyond_size(void)
{
    Driver d;

    driver_setup(&d, QSIZE, false, false);
    publish(&d, QSIZE);
    pop_expect_broken(&d, "beyond the queue size");
    driver_teardown(&d);
    /* The queue is smaller than QueueNumMax: the driver's size is the bound. */
    driver_setup(&d, 4, false, false);
    put16(AVAIL_GPA + 4, 4);
    put16(AVAIL_GPA + 2, 1);
    pop_expect_broken(&d, "beyond the queue size");
    driver_teardown(&d);
}

static void test_next_beyond_size(void)
{
    CHAIN_EXPECT_BROKEN(false, 0, "next 65535",
                        { DESC_GPA, 0, BUF_GPA, 8, VRING_DESC_F_NEXT, 0xffff });
}

static void test_loops(void)
{
    Driver d;

    /* A self-loop. */
    CHAIN_EXPECT_BROKEN(false, 2, "a loop",
                        { DESC_GPA, 2, BUF_GPA, 8, VRING_DESC_F_NEXT, 2 });
    /* A cycle of three behind a tail. */
    CHAIN_EXPECT_BROKEN(false, 0, "a loop",
                        { DESC_GPA, 0, BUF_GPA, 8, VRING_DESC_F_NEXT, 1 },
                        { DESC_GPA, 1, BUF_GPA, 8, VRING_DESC_F_NEXT, 2 },
                        { DESC_GPA, 2, BUF_GPA, 8, VRING_DESC_F_NEXT, 3 },
                        { DESC_GPA, 3, BUF_GPA, 8, VRING_DESC_F_NEXT, 1 });
    /* A chain of exactly the queue size is fine, one more is not possible. */
    driver_setup(&d, QSIZE, false, false);
    for (int i = 0; i < QSIZE; i++) {
        put_desc(i, BUF_GPA, 8, i < QSIZE - 1 ? VRING_DESC_F_NEXT : 0, i + 1);
    }
    publish(&d, 0);
    g_free(virtqueue_pop(&d.vq));
    g_assert_cmpuint(d.errors, ==, 0);
    driver_teardown(&d);
}

static void test_bad_buffers(void)
{
    static const struct { uint64_t addr; uint32_t len; } bad[] = {
        { LOW_SIZE, 1 },                        /* just past low RAM */
        { LOW_SIZE - 8, 16 },                   /* reaching past it */
        { 3 * GiB, 64 },                        /* in the hole */
        { HIGH_BASE - 8, 64 },                  /* from the hole into high RAM */
        { HIGH_BASE + HIGH_SIZE - 1, 2 },       /* past high RAM */
        { 0xffffffffffffff00ULL, 0x200 },       /* wrapping around */
        { 0, 0xffffffff },                      /* longer than RAM */
    };

    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        CHAIN_EXPECT_BROKEN(false, 0, "outside guest RAM",
                            { DESC_GPA, 0, BUF_GPA, 8, VRING_DESC_F_NEXT, 1 },
                            { DESC_GPA, 1, bad[i].addr, bad[i].len, VRING_DESC_F_WRITE, 0 });
    }
}

static void test_write_then_read(void)
{
    CHAIN_EXPECT_BROKEN(false, 0, "readable after",
                        { DESC_GPA, 0, BUF_GPA, 8, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 1 },
                        { DESC_GPA, 1, BUF_GPA + 8, 8, 0, 0 });
}

static void test_avail_idx_ahead(void)
{
    Driver d;

    /* Exactly a queue's worth ahead is legal. */
    driver_setup(&d, QSIZE, false, false);
    for (int i = 0; i < QSIZE; i++) {
        put_desc(i, BUF_GPA, 8, 0, 0);
        publish(&d, i);
    }
    g_assert_false(virtqueue_empty(&d.vq));
    g_assert_cmpuint(d.errors, ==, 0);
    /* One more is not. */
    put16(AVAIL_GPA + 2, QSIZE + 1);
    pop_expect_broken(&d, "ahead");
    driver_teardown(&d);
    /* Nor is a jump backwards (ahead by almost 65536). */
    driver_setup(&d, QSIZE, false, false);
    put16(AVAIL_GPA + 2, 0xffff);
    g_assert_true(virtqueue_empty(&d.vq));
    assert_broken_once(&d, "ahead");
    driver_teardown(&d);
}

/* The driver reuses heads we have not returned: more in use than it holds. */
static void test_too_many_in_use(void)
{
    Driver d;
    GPtrArray *held = g_ptr_array_new_with_free_func(g_free);

    driver_setup(&d, 4, false, false);
    for (int i = 0; i < 4; i++) {
        put_desc(i, BUF_GPA, 8, 0, 0);
    }
    for (int i = 0; i < 4; i++) {
        put16(AVAIL_GPA + 4 + 2 * i, i);
    }
    put16(AVAIL_GPA + 2, 4);
    for (int i = 0; i < 4; i++) {
        g_ptr_array_add(held, virtqueue_pop(&d.vq));
    }
    put16(AVAIL_GPA + 2, 5);
    pop_expect_broken(&d, "in use");
    g_ptr_array_free(held, TRUE);
    driver_teardown(&d);
}

static void test_bad_indirect(void)
{
    static const struct { uint32_t len; uint64_t addr; uint16_t flags; const char *needle; }
    bad[] = {
        { 0, TABLE_GPA, VRING_DESC_F_INDIRECT, "bad length" },
        { 24, TABLE_GPA, VRING_DESC_F_INDIRECT, "bad length" },
        { 16 * (VIRTQUEUE_MAX_SIZE + 1), TABLE_GPA, VRING_DESC_F_INDIRECT, "bad length" },
        { 32, 3 * GiB, VRING_DESC_F_INDIRECT, "outside guest RAM" },
        { 32, LOW_SIZE - 16, VRING_DESC_F_INDIRECT, "outside guest RAM" },
        { 32, TABLE_GPA, VRING_DESC_F_INDIRECT | VRING_DESC_F_NEXT, "also has NEXT" },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        CHAIN_EXPECT_BROKEN(true, 0, bad[i].needle,
                            { TABLE_GPA, 0, BUF_GPA, 8, 0, 0 },
                            { DESC_GPA, 0, bad[i].addr, bad[i].len, bad[i].flags, 1 });
    }
    /* Not negotiated. */
    CHAIN_EXPECT_BROKEN(false, 0, "not negotiated",
                        { DESC_GPA, 0, TABLE_GPA, 16, VRING_DESC_F_INDIRECT, 0 });
    /* Nested table. */
    CHAIN_EXPECT_BROKEN(true, 0, "nested",
                        { TABLE_GPA, 0, TABLE_GPA, 16, VRING_DESC_F_INDIRECT, 0 },
                        { DESC_GPA, 0, TABLE_GPA, 16, VRING_DESC_F_INDIRECT, 0 });
    /* Indirect in the middle of a direct chain. */
    CHAIN_EXPECT_BROKEN(true, 0, "not the head",
                        { DESC_GPA, 0, BUF_GPA, 8, VRING_DESC_F_NEXT, 1 },
                        { DESC_GPA, 1, TABLE_GPA, 16, VRING_DESC_F_INDIRECT, 0 });
    /* A loop inside the table, and a next beyond the table (not the queue). */
    CHAIN_EXPECT_BROKEN(true, 0, "a loop",
                        { TABLE_GPA, 0, BUF_GPA, 8, VRING_DESC_F_NEXT, 1 },
                        { TABLE_GPA, 1, BUF_GPA, 8, VRING_DESC_F_NEXT, 0 },
                        { DESC_GPA, 0, TABLE_GPA, 32, VRING_DESC_F_INDIRECT, 0 });
    CHAIN_EXPECT_BROKEN(true, 0, "beyond 2",
                        { TABLE_GPA, 0, BUF_GPA, 8, VRING_DESC_F_NEXT, 2 },
                        { DESC_GPA, 0, TABLE_GPA, 32, VRING_DESC_F_INDIRECT, 0 });
}

/* A broken queue ignores pushes and notifications; reset brings it back. */
static void test_broken_then_reset(void)
{
    Driver d;
    VirtQueueElement *e;

    driver_setup(&d, QSIZE, false, false);
    put_desc(0, BUF_GPA, 8, 0, 0);
    publish(&d, 0);
    e = virtqueue_pop(&d.vq);
    publish(&d, QSIZE + 3);
    pop_expect_broken(&d, "beyond");
    virtqueue_push(&d.vq, e, 0);
    g_assert_cmpuint(get16(USED_GPA + 2), ==, 0);
    g_assert_false(virtqueue_should_notify(&d.vq));
    virtqueue_error(&d.vq, "again");
    g_assert_cmpuint(d.errors, ==, 1);
    g_free(e);
    virtqueue_reset(&d.vq);
    g_assert_false(virtqueue_is_broken(&d.vq));
    g_assert_false(d.vq.ready);
    g_assert_null(virtqueue_pop(&d.vq));
    driver_teardown(&d);
}

/* ---- Random garbage: never outside RAM, never a crash ---- */

static bool iov_inside_ram(const struct iovec *iov)
{
    uint8_t *p = iov->iov_base;

    return p >= ram->host && p + iov->iov_len <= ram->host + ram->used_length &&
           p + iov->iov_len >= p;
}

static uint64_t random_addr(GRand *r)
{
    switch (g_rand_int_range(r, 0, 10)) {
    case 0:
        return g_rand_int_range(r, 0, LOW_SIZE + 0x1000);
    case 1:
        return HIGH_BASE - 0x1000 + g_rand_int_range(r, 0, HIGH_SIZE + 0x2000);
    case 2:
        return ((uint64_t)g_rand_int(r) << 32) | g_rand_int(r);
    default:
        return BUF_GPA + g_rand_int_range(r, 0, 0x10000);
    }
}

/* Mostly plausible values, sometimes anything: both paths get exercised. */
static uint32_t random_len(GRand *r)
{
    return g_rand_int_range(r, 0, 10) < 8 ? g_rand_int_range(r, 0, 0x2000) : g_rand_int(r);
}

static uint16_t random_flags(GRand *r)
{
    static const uint16_t likely_flags[] = {
        0, VRING_DESC_F_NEXT, VRING_DESC_F_WRITE, VRING_DESC_F_NEXT | VRING_DESC_F_WRITE,
    };

    return g_rand_int_range(r, 0, 10) < 8 ? likely_flags[g_rand_int_range(r, 0, 4)]
                                          : g_rand_int_range(r, 0, 8);
}

static uint16_t random_index(GRand *r, unsigned int bound)
{
    return g_rand_int_range(r, 0, 100) < 95 ? g_rand_int_range(r, 0, bound) : g_rand_int(r);
}

static void test_random_garbage(void)
{
    GRand *r = g_rand_new_with_seed(SEED);
    unsigned int pops = 0, breaks = 0, iovs = 0;

    for (int round = 0; round < 3000; round++) {
        Driver d;

        driver_setup(&d, QSIZE, g_rand_boolean(r), g_rand_boolean(r));
        d.quiet = true;
        for (int i = 0; i < QSIZE; i++) {
            put_desc(i, random_addr(r), random_len(r), random_flags(r),
                     random_index(r, QSIZE));
            put_desc_at(TABLE_GPA, i, random_addr(r), random_len(r), random_flags(r),
                        random_index(r, QSIZE + 2));
        }
        if (g_rand_boolean(r)) {
            put_desc(random_index(r, QSIZE), TABLE_GPA, 16 * g_rand_int_range(r, 1, QSIZE + 1),
                     VRING_DESC_F_INDIRECT, 0);
        }
        for (int i = 0; i < QSIZE; i++) {
            put16(AVAIL_GPA + 4 + 2 * i, random_index(r, QSIZE));
        }
        put16(AVAIL_GPA + 2, random_index(r, QSIZE + 1));
        for (int i = 0; i < QSIZE + 2; i++) {
            VirtQueueElement *e = virtqueue_pop(&d.vq);

            if (!e) {
                break;
            }
            pops++;
            g_assert_cmpuint(e->index, <, QSIZE);
            for (unsigned int k = 0; k < e->out_num + e->in_num; k++) {
                g_assert_true(iov_inside_ram(&e->out_sg[k]));
                iovs++;
            }
            virtqueue_push(&d.vq, e, g_rand_int(r));
            g_free(e);
        }
        g_assert_cmpuint(d.errors, <=, 1);
        breaks += d.errors;
        driver_teardown(&d);
    }
    g_test_message("%u chains popped (%u buffers), %u queues broken", pops, iovs, breaks);
    g_assert_cmpuint(pops, >, 1000);
    g_assert_cmpuint(breaks, >, 1000);
    g_rand_free(r);
}

int main(int argc, char **argv)
{
    RAMBackendOpts o = { .id = "test.ram", .kind = RAM_BACKEND_ANON,
                         .size = LOW_SIZE + HIGH_SIZE };

    g_test_init(&argc, &argv, NULL);
    ram = ram_block_create(&o, ERRP_ABORT);
    guest_ram_map(ram, 0, 0, LOW_SIZE, ERRP_ABORT);
    guest_ram_map(ram, LOW_SIZE, HIGH_BASE, HIGH_SIZE, ERRP_ABORT);

    g_test_add_func("/virtqueue/pop-push", test_pop_push);
    g_test_add_func("/virtqueue/unpop-and-batch", test_unpop_and_batch);
    g_test_add_func("/virtqueue/indirect", test_indirect);
    g_test_add_func("/virtqueue/dirty", test_dirty);
    g_test_add_func("/virtqueue/wrap", test_wrap);
    g_test_add_func("/virtqueue/notify-flags", test_notify_flags);
    g_test_add_func("/virtqueue/notify-event-idx", test_notify_event_idx);
    g_test_add_func("/virtqueue/high-rings", test_high_rings);
    g_test_add_func("/virtqueue/hostile/bad-rings", test_bad_rings);
    g_test_add_func("/virtqueue/hostile/head-beyond-size", test_head_beyond_size);
    g_test_add_func("/virtqueue/hostile/next-beyond-size", test_next_beyond_size);
    g_test_add_func("/virtqueue/hostile/loops", test_loops);
    g_test_add_func("/virtqueue/hostile/bad-buffers", test_bad_buffers);
    g_test_add_func("/virtqueue/hostile/write-then-read", test_write_then_read);
    g_test_add_func("/virtqueue/hostile/avail-idx-ahead", test_avail_idx_ahead);
    g_test_add_func("/virtqueue/hostile/too-many-in-use", test_too_many_in_use);
    g_test_add_func("/virtqueue/hostile/bad-indirect", test_bad_indirect);
    g_test_add_func("/virtqueue/hostile/broken-then-reset", test_broken_then_reset);
    g_test_add_func("/virtqueue/hostile/random-garbage", test_random_garbage);
    return g_test_run();
}

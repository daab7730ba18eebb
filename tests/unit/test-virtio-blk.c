/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for hw/virtio/virtio-blk.c on the bench of virtio-blk-test.h
 * (the virtio bench with a fake block layer; the merging of adjacent
 * requests has its own, test-virtio-blk-merge.c).
 *
 * The random test is the invariant check: with many requests in flight on
 * disjoint sectors and VM stops at random moments, (1) every request
 * completes exactly once with the right status, (2) a read returns what
 * the last acknowledged write of each sector put there, and (3) once a VM
 * stop has returned, nothing is in flight and no worker runs (the drain
 * that makes a saved state complete).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "hw/virtio/virtio-mmio.h"
#include "system/ioport.h"
#include "virtio-blk-test.h"
#include <linux/virtio_blk.h>
#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>
#include <linux/virtio_ring.h>

/* ---- Tests ---- */

static void test_identity(void)
{
    Fixture f;
    uint64_t v, features;

    fixture_setup(&f);
    g_assert_cmphex(rd(VIRTIO_MMIO_DEVICE_ID), ==, VIRTIO_ID_BLOCK);
    wr(VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
    features = rd(VIRTIO_MMIO_DEVICE_FEATURES);
    wr(VIRTIO_MMIO_DEVICE_FEATURES_SEL, 1);
    features |= (uint64_t)rd(VIRTIO_MMIO_DEVICE_FEATURES) << 32;
    /* QEMU 7.2's virtio-blk-device without VIRTIO_F_RING_RESET. */
    g_assert_cmphex(features, ==, 0x130006e54ULL);
    g_assert_true(io_range_read(mmio_table, BASE + VIRTIO_MMIO_CONFIG, 4, &v));
    g_assert_cmpuint(v, ==, DISK_SECTORS);
    g_assert_true(io_range_read(mmio_table, BASE + VIRTIO_MMIO_CONFIG + 12, 4, &v));
    g_assert_cmpuint(v, ==, 254);
    g_assert_true(io_range_read(mmio_table, BASE + VIRTIO_MMIO_CONFIG + 20, 4, &v));
    g_assert_cmpuint(v, ==, 512);
    g_assert_true(io_range_read(mmio_table, BASE + VIRTIO_MMIO_CONFIG + 36, 4, &v));
    g_assert_cmpuint(v, ==, VIRTIO_BLK_MAX_DISCARD_SECTORS);
    fixture_teardown(&f);
}

static void test_rw(void)
{
    Fixture f;

    fixture_setup(&f);
    driver_init(&f);
    memset(data_of(0), 0x5a, 1024);
    g_assert_cmpuint(do_req(&f, 0, VIRTIO_BLK_T_OUT, 10, 1024), ==, VIRTIO_BLK_S_OK);
    g_assert_cmphex(disk.data[10 * 512], ==, 0x5a);
    g_assert_cmphex(disk.data[12 * 512 - 1], ==, 0x5a);
    g_assert_cmphex(disk.data[12 * 512], ==, 0);
    memset(data_of(1), 0, 1024);
    g_assert_cmpuint(do_req(&f, 1, VIRTIO_BLK_T_IN, 11, 512), ==, VIRTIO_BLK_S_OK);
    g_assert_cmphex(data_of(1)[511], ==, 0x5a);
    g_assert_cmpuint(do_req(&f, 2, VIRTIO_BLK_T_FLUSH, 0, 0), ==, VIRTIO_BLK_S_OK);
    g_assert_cmpuint(disk.flushes, >=, 1);
    g_assert_cmpuint(do_req(&f, 3, VIRTIO_BLK_T_GET_ID, 0, 512), ==, VIRTIO_BLK_S_OK);
    g_assert_cmpmem(data_of(3), 20, "serial-0123456789abc", 20);
    /* WRITE_ZEROES over the first of the two sectors, with the unmap flag. */
    {
        uint64_t seg[2] = { 10, 1 | (uint64_t)VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP << 32 };

        memcpy(data_of(4), seg, 16);
        g_assert_cmpuint(do_req(&f, 4, VIRTIO_BLK_T_WRITE_ZEROES, 0, 16), ==,
                         VIRTIO_BLK_S_OK);
        g_assert_cmphex(disk.data[10 * 512], ==, 0);
        g_assert_cmphex(disk.data[11 * 512], ==, 0x5a);
        seg[1] = 8;
        memcpy(data_of(5), seg, 16);
        g_assert_cmpuint(do_req(&f, 5, VIRTIO_BLK_T_DISCARD, 0, 16), ==, VIRTIO_BLK_S_OK);
    }
    g_assert_false(broken());
    fixture_teardown(&f);
}

/*
 * A driver without VIRTIO_BLK_F_FLUSH cannot make its writes durable
 * later: each must be at completion (FUA), whatever the drive's cache
 * mode. With FLUSH, writeback.
 */
static void test_writethrough_without_flush(void)
{
    Fixture f;

    fixture_setup(&f);
    driver_init_features(&f, BLK_FEATURES & ~(1ULL << VIRTIO_BLK_F_FLUSH));
    memset(data_of(0), 0x11, 512);
    g_assert_cmpuint(do_req(&f, 0, VIRTIO_BLK_T_OUT, 3, 512), ==, VIRTIO_BLK_S_OK);
    g_assert_cmpint(disk.last_write_flags & BDRV_REQ_FUA, ==, BDRV_REQ_FUA);
    fixture_teardown(&f);

    fixture_setup(&f);
    driver_init(&f);
    g_assert_cmpuint(do_req(&f, 0, VIRTIO_BLK_T_OUT, 3, 512), ==, VIRTIO_BLK_S_OK);
    g_assert_cmpint(disk.last_write_flags & BDRV_REQ_FUA, ==, 0);
    fixture_teardown(&f);
}

/* Well-formed requests the device must refuse, and go on working. */
static void test_bad_requests(void)
{
    Fixture f;
    uint64_t seg[4] = { DISK_SECTORS - 1, 8, 0, 1 };

    fixture_setup(&f);
    driver_init(&f);
    g_assert_cmpuint(do_req(&f, 0, VIRTIO_BLK_T_IN, DISK_SECTORS, 512), ==, VIRTIO_BLK_S_IOERR);
    g_assert_cmpuint(do_req(&f, 1, VIRTIO_BLK_T_OUT, DISK_SECTORS - 1, 1024), ==,
                     VIRTIO_BLK_S_IOERR);
    g_assert_cmpuint(do_req(&f, 2, VIRTIO_BLK_T_OUT, UINT64_MAX / 256, 512), ==,
                     VIRTIO_BLK_S_IOERR);
    g_assert_cmpuint(do_req(&f, 3, VIRTIO_BLK_T_OUT, 0, 100), ==, VIRTIO_BLK_S_IOERR);
    g_assert_cmpuint(do_req(&f, 4, 99, 0, 512), ==, VIRTIO_BLK_S_UNSUPP);
    memcpy(data_of(5), seg, 16);
    g_assert_cmpuint(do_req(&f, 5, VIRTIO_BLK_T_WRITE_ZEROES, 0, 16), ==, VIRTIO_BLK_S_IOERR);
    memcpy(data_of(6), seg, 32);
    g_assert_cmpuint(do_req(&f, 6, VIRTIO_BLK_T_DISCARD, 0, 32), ==, VIRTIO_BLK_S_UNSUPP);
    g_assert_false(broken());
    /* Nothing was written past the end, or anywhere. */
    for (size_t i = 0; i < sizeof(disk.data); i++) {
        g_assert_cmphex(disk.data[i], ==, 0);
    }
    g_assert_cmpuint(do_req(&f, 7, VIRTIO_BLK_T_IN, 0, 512), ==, VIRTIO_BLK_S_OK);
    fixture_teardown(&f);
}

/* Chains that are no request: the device breaks (NEEDS_RESET), and a reset mends it. */
static void test_hostile(void)
{
    Fixture f;

    fixture_setup(&f);
    for (int c = 0; c < 3; c++) {
        driver_init(&f);
        if (c == 0) {           /* no status byte */
            vtest_put_desc(&f.q, 0, HDRS, 16, VRING_DESC_F_NEXT, 1);
            vtest_put_desc(&f.q, 1, DATA, 512, 0, 0);
        } else if (c == 1) {    /* the header in a buffer the device would write */
            vtest_put_desc(&f.q, 0, HDRS, 16, VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, 1);
            vtest_put_desc(&f.q, 1, STATUSES, 1, VRING_DESC_F_WRITE, 0);
        } else {                /* a short header */
            vtest_put_desc(&f.q, 0, HDRS, 8, VRING_DESC_F_NEXT, 1);
            vtest_put_desc(&f.q, 1, STATUSES, 1, VRING_DESC_F_WRITE, 0);
        }
        vtest_publish(&f.q, 0);
        wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
        pump_for(20);
        g_assert_true(broken());
        wr(VIRTIO_MMIO_STATUS, 0);
        g_assert_false(broken());
    }
    driver_init(&f);
    g_assert_cmpuint(do_req(&f, 0, VIRTIO_BLK_T_IN, 0, 512), ==, VIRTIO_BLK_S_OK);
    fixture_teardown(&f);
}

/* werror=report: IOERR and one event; werror=stop: held, retried when the VM runs again. */
static void test_werror(void)
{
    Fixture f;

    fixture_setup(&f);
    driver_init(&f);
    disk.fail_err = EIO;
    disk.fail_count = 1;
    disk.action = BLOCK_ERROR_ACTION_REPORT;
    g_assert_cmpuint(do_req(&f, 0, VIRTIO_BLK_T_OUT, 0, 512), ==, VIRTIO_BLK_S_IOERR);
    pump_for(10);
    g_assert_cmpuint(disk.events[BLOCK_ERROR_ACTION_REPORT], ==, 1);

    disk.fail_count = 1;
    disk.action = BLOCK_ERROR_ACTION_STOP;
    memset(data_of(1), 0x77, 512);
    submit(&f, 1, VIRTIO_BLK_T_OUT, 3, 512, true);
    pump_for(50);
    g_assert_cmpuint(disk.events[BLOCK_ERROR_ACTION_STOP], ==, 1);
    g_assert_cmpuint(vtest_used_idx(&f.q), ==, f.completed);    /* held, not completed */
    /* The main loop stops the VM (blk_error_action's job, faked here). */
    vtest_vm_set_running(false);
    vtest_vm_set_running(true);
    wait_used(&f, ++f.completed);
    g_assert_cmpuint(status_of(1), ==, VIRTIO_BLK_S_OK);
    g_assert_cmphex(disk.data[3 * 512], ==, 0x77);
    fixture_teardown(&f);
}

/*
 * Held requests in the section (QEMU's list, virtio-blk-held.c): the head,
 * up to the 18 bytes of the one queue, is 103 bytes; each request is a 1,
 * then a 49168-byte record (index, out_num, in_num, padding, 1024 in and
 * 1024 out addresses, 1024 in and 1024 out iovecs of base and length).
 */
#define HELD_LIST       103
#define REC_LEN         49168
#define REC_OUT_ADDR    (16 + 8 * 1024)
#define REC_OUT_SG      (16 + 16 * 1024 + 16 * 1024)

static void put_le32_at(uint8_t *p, uint32_t v)
{
    v = htole32(v);
    memcpy(p, &v, 4);
}

static void put_le64_at(uint8_t *p, uint64_t v)
{
    v = htole64(v);
    memcpy(p, &v, 8);
}

/* Requests 1 (sector 3, 512 bytes) and 2 (sector 8, 1024 bytes) held by werror=stop; the VM stopped. */
static uint8_t *held_section(Fixture *f, size_t *len)
{
    uint8_t *sec;

    fixture_setup(f);
    driver_init(f);
    disk.fail_err = ENOSPC;
    disk.fail_count = 2;
    disk.action = BLOCK_ERROR_ACTION_STOP;
    memset(data_of(1), 0x71, 512);
    memset(data_of(2), 0x72, 1024);
    submit(f, 1, VIRTIO_BLK_T_OUT, 3, 512, false);
    submit(f, 2, VIRTIO_BLK_T_OUT, 8, 1024, true);
    pump_for(50);
    g_assert_cmpuint(disk.events[BLOCK_ERROR_ACTION_STOP], ==, 2);
    g_assert_cmpuint(vtest_used_idx(&f->q), ==, f->completed);
    vtest_vm_set_running(false);
    sec = vtest_section_save_named(SECTION, len);
    g_assert_cmpuint(*len, >, HELD_LIST + 2 * (1 + REC_LEN) + 1);
    g_assert_cmpuint(sec[HELD_LIST], ==, 1);
    g_assert_cmpuint(sec[HELD_LIST + 1 + REC_LEN], ==, 1);
    g_assert_cmpuint(sec[HELD_LIST + 2 * (1 + REC_LEN)], ==, 0);
    return sec;
}

/* Saved held, loaded into a new device: retried there once as the VM runs, none lost. */
static void test_migrate_held(void)
{
    g_autofree uint8_t *sec = NULL, *again = NULL;
    size_t len, len2;
    uint32_t counts;
    Fixture f;

    sec = held_section(&f, &len);
    /* Request 1's chain: header and data out, status in (heads 3 and 6, in either order). */
    memcpy(&counts, sec + HELD_LIST + 1 + 4, 4);
    g_assert_cmpuint(le32toh(counts), ==, 2);
    device_destroy(&f);
    device_create(&f);
    g_assert_true(vtest_section_load_named(SECTION, 0, sec, len, ERRP_ABORT));
    /* Loaded, not yet run: a second save carries them unchanged. */
    again = vtest_section_save_named(SECTION, &len2);
    g_assert_cmpmem(again, len2, sec, len);
    vtest_vm_set_running(true);
    f.completed += 2;
    wait_used(&f, f.completed);
    g_assert_cmpuint(status_of(1), ==, VIRTIO_BLK_S_OK);
    g_assert_cmpuint(status_of(2), ==, VIRTIO_BLK_S_OK);
    g_assert_cmphex(disk.data[3 * 512], ==, 0x71);
    g_assert_cmphex(disk.data[10 * 512 - 1], ==, 0x72);
    pump_for(20);
    g_assert_cmpuint(vtest_used_idx(&f.q), ==, f.completed);    /* each once */
    g_assert_cmpuint(do_req(&f, 4, VIRTIO_BLK_T_IN, 3, 512), ==, VIRTIO_BLK_S_OK);
    g_assert_cmphex(data_of(4)[0], ==, 0x71);
    fixture_teardown(&f);
}

/* Each bad value of a record fails the load, naming it; the good stream still loads after. */
static void test_migrate_held_corrupt(void)
{
    static const struct {
        const char *what;
        long off;               /* in the first record, after its 1 (-1: the 1) */
        int width;              /* 1, 4 or 8 bytes; 0: the record removed */
        uint64_t val;
        const char *want;
    } cases[] = {
        { "marker", -1, 1, 2, "marker 0x2" },
        { "head", 0, 4, QNUM, "head 256 is beyond the queue size 256" },
        { "out_num", 4, 4, 2000, "2000 buffers out and 1 in, more than a record holds" },
        { "no buffers", 4, 8, 0, "0 buffers out and 0 in" },
        { "address", REC_OUT_ADDR, 8, 0x7ffffffff000ULL, "is outside guest RAM" },
        { "empty buffer", REC_OUT_SG + 8, 8, 0, "not a descriptor's length" },
        { "no status", 8, 4, 0, "no room for the 16-byte header and the status byte" },
        { "twice", 0, 0, 0, "is in flight twice" },
        { "missing", 0, 0, 1, "1 requests in flight in the stream, but last_avail_idx" },
    };
    g_autofree uint8_t *sec = NULL;
    size_t len;
    Fixture f;

    sec = held_section(&f, &len);
    for (unsigned int i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree uint8_t *bad = g_memdup2(sec, len);
        uint8_t *rec = bad + HELD_LIST + 1 + cases[i].off;
        size_t bad_len = len;
        Error *err = NULL;

        if (cases[i].width == 1) {
            *rec = cases[i].val;
        } else if (cases[i].width == 4) {
            put_le32_at(rec, cases[i].val);
        } else if (cases[i].width == 8) {
            put_le64_at(rec, cases[i].val);
        } else if (!cases[i].val) {
            /* The second record names the first one's head. */
            memcpy(rec + 1 + REC_LEN, rec, 4);
        } else {
            memmove(rec - 1, rec + REC_LEN, len - (rec + REC_LEN - bad));
            bad_len -= 1 + REC_LEN;
        }
        device_destroy(&f);
        device_create(&f);
        g_assert_false(vtest_section_load_named(SECTION, 0, bad, bad_len, &err));
        g_test_message("%s: %s", cases[i].what, error_get_pretty(err));
        g_assert_nonnull(strstr(error_get_pretty(err), cases[i].want));
        error_free(err);
    }
    /* Cut inside a record: a truncated stream, refused too. */
    device_destroy(&f);
    device_create(&f);
    g_assert_false(vtest_section_load_named(SECTION, 0, sec, HELD_LIST + 100, NULL));
    g_assert_true(vtest_section_load_named(SECTION, 0, sec, len, ERRP_ABORT));
    vtest_vm_set_running(true);
    f.completed += 2;
    wait_used(&f, f.completed);
    g_assert_cmphex(disk.data[8 * 512], ==, 0x72);
    fixture_teardown(&f);
}

/*
 * The invariant check: random reads and writes on disjoint sectors, many
 * in flight, workers slowed at random, VM stops at random. See the top.
 */
static void test_random(void)
{
    enum { SLOTS = 32, ROUNDS = 3000 };
    Fixture f;
    uint8_t model[64];              /* sector i holds bytes model[i] (0: never written) */
    struct { bool busy, write; unsigned int sector; uint8_t val; } slot[SLOTS] = { 0 };
    GRand *rng = g_rand_new_with_seed(0x5eed);
    unsigned int issued = 0, done = 0;

    memset(model, 0, sizeof(model));
    fixture_setup(&f);
    driver_init(&f);
    disk.delay_us = 300;
    for (unsigned int round = 0; round < ROUNDS || done < issued; round++) {
        uint16_t used = vtest_used_idx(&f.q);

        while (f.completed != used) {
            uint32_t id, len;

            vtest_used_elem(&f.q, f.completed, &id, &len);
            f.completed++;
            g_assert_cmpuint(id % 3, ==, 0);
            id /= 3;
            g_assert_true(slot[id].busy);
            g_assert_cmpuint(status_of(id), ==, VIRTIO_BLK_S_OK);
            if (slot[id].write) {
                model[slot[id].sector] = slot[id].val;
                g_assert_cmpuint(len, ==, 1);
            } else {
                g_assert_cmpuint(len, ==, 513);
                g_assert_cmphex(data_of(id)[0], ==, model[slot[id].sector]);
                g_assert_cmphex(data_of(id)[511], ==, model[slot[id].sector]);
            }
            slot[id].busy = false;
            done++;
        }
        if (round < ROUNDS) {
            unsigned int id = g_rand_int_range(rng, 0, SLOTS);
            unsigned int sector = g_rand_int_range(rng, 0, sizeof(model));
            bool clash = false;

            for (unsigned int i = 0; i < SLOTS; i++) {
                clash |= slot[i].busy && slot[i].sector == sector;
            }
            if (!slot[id].busy && !clash) {
                slot[id].busy = true;
                slot[id].sector = sector;
                slot[id].write = g_rand_boolean(rng);
                slot[id].val = (uint8_t)g_rand_int_range(rng, 1, 256);
                if (slot[id].write) {
                    memset(data_of(id), slot[id].val, 512);
                }
                submit(&f, id, slot[id].write ? VIRTIO_BLK_T_OUT : VIRTIO_BLK_T_IN, sector, 512,
                       g_rand_int_range(rng, 0, 4) == 0);
                issued++;
            }
        } else {
            wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
        }
        if (g_rand_int_range(rng, 0, 200) == 0) {
            vtest_vm_set_running(false);
            /* The drain: nothing in flight, no worker inside the block layer. */
            g_assert_cmpuint(__atomic_load_n(&f.b->in_flight, __ATOMIC_SEQ_CST), ==, 0);
            g_assert_cmpuint(__atomic_load_n(&disk.running, __ATOMIC_SEQ_CST), ==, 0);
            vtest_vm_set_running(true);
        }
        g_main_context_iteration(NULL, FALSE);
        g_usleep(50);
    }
    g_assert_false(broken());
    g_rand_free(rng);
    fixture_teardown(&f);
}

/* The section: saved after I/O, loaded into a new device that carries on. */
static void test_migrate_round_trip(void)
{
    g_autofree uint8_t *sec = NULL, *again = NULL;
    size_t len, len2;
    Fixture f;

    fixture_setup(&f);
    driver_init(&f);
    memset(data_of(0), 0x42, 512);
    g_assert_cmpuint(do_req(&f, 0, VIRTIO_BLK_T_OUT, 5, 512), ==, VIRTIO_BLK_S_OK);
    vtest_vm_set_running(false);
    sec = vtest_section_save_named(SECTION, &len);
    device_destroy(&f);
    device_create(&f);
    g_assert_true(vtest_section_load_named(SECTION, 0, sec, len, ERRP_ABORT));
    again = vtest_section_save_named(SECTION, &len2);
    g_assert_cmpmem(again, len2, sec, len);
    vtest_vm_set_running(true);
    memset(data_of(1), 0, 512);
    g_assert_cmpuint(do_req(&f, 1, VIRTIO_BLK_T_IN, 5, 512), ==, VIRTIO_BLK_S_OK);
    g_assert_cmphex(data_of(1)[0], ==, 0x42);
    fixture_teardown(&f);
}

int main(int argc, char **argv)
{
    int ret;

    g_test_init(&argc, &argv, NULL);
    blk_bench_init();
    g_test_add_func("/virtio-blk/identity", test_identity);
    g_test_add_func("/virtio-blk/rw", test_rw);
    g_test_add_func("/virtio-blk/bad-requests", test_bad_requests);
    g_test_add_func("/virtio-blk/hostile", test_hostile);
    g_test_add_func("/virtio-blk/werror", test_werror);
    g_test_add_func("/virtio-blk/writethrough-without-flush", test_writethrough_without_flush);
    g_test_add_func("/virtio-blk/random", test_random);
    g_test_add_func("/virtio-blk/migrate/round-trip", test_migrate_round_trip);
    g_test_add_func("/virtio-blk/migrate/held", test_migrate_held);
    g_test_add_func("/virtio-blk/migrate/held-corrupt", test_migrate_held_corrupt);
    ret = g_test_run();
    vtest_cleanup();
    return ret;
}

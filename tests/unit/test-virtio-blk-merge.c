/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for hw/virtio/virtio-blk-merge.c on the bench of
 * virtio-blk-test.h: requests offered together and kicked once are taken
 * in one pass, so what may merge does, and the fake block layer's log of
 * host requests shows how. Adjacent reads and writes become one host
 * request within the bounds; a gap, a descending offset, a change of type
 * and a FLUSH (or another request that never merges) end a run; a failed
 * merged write gives each member its own status and error action; the
 * counters count guest requests, and the merged ones as merged.
 *
 * The random test is the invariant check of test-virtio-blk's with runs
 * that merge: mostly sequential reads and writes, disjoint while in
 * flight, VM stops at random: (1) every request completes once, OK,
 * (2) a read returns the last acknowledged write of each sector, (3) after
 * a stop nothing is in flight and no worker runs, (4) query-blockstats
 * counts exactly the guest requests.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "virtio-blk-test.h"
#include <linux/virtio_blk.h>
#include <linux/virtio_mmio.h>

#define KIB 1024

/* Requests @first .. @first + @n - 1: @type, @len bytes each, from @sector on, back to back. */
static void offer_seq(Fixture *f, unsigned int first, unsigned int n, uint32_t type,
                      uint64_t sector, uint32_t len)
{
    for (unsigned int i = 0; i < n; i++) {
        if (type == VIRTIO_BLK_T_OUT && len <= 4 * KIB) {
            memset(data_of(first + i), 0x10 + first + i, len);
        }
        submit(f, first + i, type, sector + (uint64_t)i * (len / 512), len, false);
    }
}

/* Kicks once and waits for @n more completions. */
static void kick_and_wait(Fixture *f, unsigned int n)
{
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
    f->completed += n;
    wait_used(f, f->completed);
}

static void assert_host(unsigned int i, char op, uint64_t offset, uint64_t bytes)
{
    HostReq h = host_log(i);

    g_assert_cmpint(h.op, ==, op);
    g_assert_cmpuint(h.offset, ==, offset);
    g_assert_cmpuint(h.bytes, ==, bytes);
}

static void test_adjacent(void)
{
    Fixture f;

    fixture_setup(&f);
    driver_init(&f);
    offer_seq(&f, 0, 8, VIRTIO_BLK_T_OUT, 0, 4 * KIB);
    kick_and_wait(&f, 8);
    g_assert_cmpuint(host_log_len(), ==, 1);
    assert_host(0, 'w', 0, 32 * KIB);
    g_assert_cmpint(host_log(0).niov, ==, 8);
    for (unsigned int i = 0; i < 8; i++) {
        g_assert_cmpuint(status_of(i), ==, VIRTIO_BLK_S_OK);
        g_assert_cmphex(disk.data[i * 4 * KIB], ==, 0x10 + i);
        g_assert_cmphex(disk.data[(i + 1) * 4 * KIB - 1], ==, 0x10 + i);
    }
    /* Read back into other buffers, adjacent too. */
    offer_seq(&f, 8, 8, VIRTIO_BLK_T_IN, 0, 4 * KIB);
    kick_and_wait(&f, 8);
    g_assert_cmpuint(host_log_len(), ==, 2);
    assert_host(1, 'r', 0, 32 * KIB);
    for (unsigned int i = 0; i < 8; i++) {
        uint32_t id, len;

        g_assert_cmpuint(status_of(8 + i), ==, VIRTIO_BLK_S_OK);
        g_assert_cmphex(data_of(8 + i)[0], ==, 0x10 + i);
        g_assert_cmphex(data_of(8 + i)[4 * KIB - 1], ==, 0x10 + i);
        vtest_used_elem(&f.q, 8 + i, &id, &len);
        g_assert_cmpuint(len, ==, 4 * KIB + 1);
    }
    /* Each guest request counted once; the seven riding on each host request as merged. */
    g_assert_cmpuint(disk.ops[BLOCK_ACCT_WRITE], ==, 8);
    g_assert_cmpuint(disk.merged[BLOCK_ACCT_WRITE], ==, 7);
    g_assert_cmpuint(disk.bytes[BLOCK_ACCT_WRITE], ==, 32 * KIB);
    g_assert_cmpuint(disk.ops[BLOCK_ACCT_READ], ==, 8);
    g_assert_cmpuint(disk.merged[BLOCK_ACCT_READ], ==, 7);
    g_assert_cmpuint(f.b->writes, ==, 8);
    g_assert_cmpuint(f.b->reads, ==, 8);
    fixture_teardown(&f);
}

/* A gap, a step back, a change of type: a new run each time. */
static void test_not_adjacent(void)
{
    static const struct { uint32_t type; uint64_t sector; } reqs[] = {
        { VIRTIO_BLK_T_OUT, 0 },
        { VIRTIO_BLK_T_OUT, 16 },       /* a gap: new run */
        { VIRTIO_BLK_T_OUT, 24 },       /* extends it */
        { VIRTIO_BLK_T_OUT, 8 },        /* below its end: new run (no sort) */
        { VIRTIO_BLK_T_IN, 16 },        /* adjacent, but a read */
        { VIRTIO_BLK_T_OUT, 24 },       /* a write again */
    };
    unsigned int n = G_N_ELEMENTS(reqs);
    Fixture f;

    fixture_setup(&f);
    driver_init(&f);
    for (unsigned int i = 0; i < n; i++) {
        memset(data_of(i), 0x20 + i, 4 * KIB);
        submit(&f, i, reqs[i].type, reqs[i].sector, 4 * KIB, false);
    }
    kick_and_wait(&f, n);
    g_assert_cmpuint(host_log_len(), ==, 5);
    for (unsigned int i = 0; i < n; i++) {
        g_assert_cmpuint(status_of(i), ==, VIRTIO_BLK_S_OK);
    }
    g_assert_cmpuint(disk.ops[BLOCK_ACCT_WRITE], ==, 5);
    g_assert_cmpuint(disk.merged[BLOCK_ACCT_WRITE], ==, 1);
    g_assert_cmpuint(disk.ops[BLOCK_ACCT_READ], ==, 1);
    g_assert_cmpuint(disk.merged[BLOCK_ACCT_READ], ==, 0);
    g_assert_cmphex(disk.data[0], ==, 0x20);
    g_assert_cmphex(disk.data[8 * 512], ==, 0x23);
    g_assert_cmphex(disk.data[16 * 512], ==, 0x21);
    fixture_teardown(&f);
}

/*
 * FLUSH, WRITE_ZEROES and DISCARD never merge and end the run before them:
 * the writes on either side stay apart, although adjacent.
 */
static void test_barriers(void)
{
    static const uint32_t between[] = {
        VIRTIO_BLK_T_FLUSH, VIRTIO_BLK_T_WRITE_ZEROES, VIRTIO_BLK_T_DISCARD,
    };
    Fixture f;

    fixture_setup(&f);
    driver_init(&f);
    for (unsigned int k = 0; k < G_N_ELEMENTS(between); k++) {
        uint64_t base = k * 64;         /* sectors */
        uint64_t seg[2] = { base + 48, 8 };
        unsigned int nlog = host_log_len();

        offer_seq(&f, 0, 2, VIRTIO_BLK_T_OUT, base, 4 * KIB);
        memcpy(data_of(2), seg, sizeof(seg));
        submit(&f, 2, between[k], 0, between[k] == VIRTIO_BLK_T_FLUSH ? 0 : 16, false);
        offer_seq(&f, 3, 2, VIRTIO_BLK_T_OUT, base + 16, 4 * KIB);
        kick_and_wait(&f, 5);
        for (unsigned int i = 0; i < 5; i++) {
            g_assert_cmpuint(status_of(i), ==, VIRTIO_BLK_S_OK);
        }
        /* Two writes of 8 KiB and the one in between, in whatever order the workers ran. */
        g_assert_cmpuint(host_log_len(), ==, nlog + 3);
        for (unsigned int i = nlog; i < nlog + 3; i++) {
            HostReq h = host_log(i);

            if (h.op == 'w') {
                g_assert_cmpuint(h.bytes, ==, 8 * KIB);
                g_assert_true(h.offset == base * 512 || h.offset == (base + 16) * 512);
            } else {
                g_assert_cmpint(h.op, ==, "fzd"[k]);
            }
        }
    }
    g_assert_cmpuint(disk.merged[BLOCK_ACCT_WRITE], ==, 6);
    fixture_teardown(&f);
}

/* 20 writes of 64 KiB: 16 fill one host request of 1 MiB, 4 the next. */
static void test_bound(void)
{
    unsigned int first;
    Fixture f;

    fixture_setup(&f);
    driver_init(&f);
    offer_seq(&f, 0, 20, VIRTIO_BLK_T_OUT, 0, 64 * KIB);
    kick_and_wait(&f, 20);
    g_assert_cmpuint(host_log_len(), ==, 2);
    /* Two workers: either may start first. */
    first = host_log(0).offset ? 1 : 0;
    assert_host(first, 'w', 0, 1024 * KIB);
    assert_host(!first, 'w', 1024 * KIB, 256 * KIB);
    g_assert_cmpuint(disk.ops[BLOCK_ACCT_WRITE], ==, 20);
    g_assert_cmpuint(disk.merged[BLOCK_ACCT_WRITE], ==, 18);
    fixture_teardown(&f);
}

/*
 * Four adjacent writes, the third on a bad range. The merged write fails;
 * each runs again alone: only the third fails, with one event (REPORT),
 * or is held alone and retried when the VM runs again (STOP).
 */
static void test_failure(void)
{
    for (int stop = 0; stop < 2; stop++) {
        Fixture f;

        fixture_setup(&f);
        driver_init(&f);
        disk.fail_err = EIO;
        disk.action = stop ? BLOCK_ERROR_ACTION_STOP : BLOCK_ERROR_ACTION_REPORT;
        g_mutex_lock(&disk.lock);
        disk.fail_lo = 8 * KIB + 512;
        disk.fail_hi = 8 * KIB + 1024;
        g_mutex_unlock(&disk.lock);
        offer_seq(&f, 0, 4, VIRTIO_BLK_T_OUT, 0, 4 * KIB);
        kick_and_wait(&f, stop ? 3 : 4);
        pump_for(20);
        g_assert_cmpuint(disk.events[disk.action], ==, 1);
        g_assert_cmpuint(host_log_len(), ==, 5);       /* the merged one, then each alone */
        assert_host(0, 'w', 0, 16 * KIB);
        for (unsigned int i = 0; i < 4; i++) {
            if (i == 2) {
                g_assert_cmpuint(status_of(i), ==, stop ? 0xff : VIRTIO_BLK_S_IOERR);
                g_assert_cmphex(disk.data[i * 4 * KIB], ==, 0);
            } else {
                g_assert_cmpuint(status_of(i), ==, VIRTIO_BLK_S_OK);
                g_assert_cmphex(disk.data[i * 4 * KIB], ==, 0x10 + i);
            }
        }
        /* The guest's writes: three done, one failed; the merged attempt one failed host write. */
        g_assert_cmpuint(disk.ops[BLOCK_ACCT_WRITE], ==, 3);
        g_assert_cmpuint(disk.failed[BLOCK_ACCT_WRITE], ==, 2);
        g_assert_cmpuint(disk.merged[BLOCK_ACCT_WRITE], ==, 0);
        g_assert_cmpuint(f.b->writes, ==, 4);
        g_assert_cmpuint(f.b->errors, ==, 1);
        if (stop) {
            g_assert_cmpuint(vtest_used_idx(&f.q), ==, f.completed);
            g_mutex_lock(&disk.lock);
            disk.fail_lo = disk.fail_hi = 0;
            g_mutex_unlock(&disk.lock);
            vtest_vm_set_running(false);
            vtest_vm_set_running(true);
            wait_used(&f, ++f.completed);
            g_assert_cmpuint(status_of(2), ==, VIRTIO_BLK_S_OK);
            g_assert_cmphex(disk.data[2 * 4 * KIB], ==, 0x12);
            assert_host(5, 'w', 8 * KIB, 4 * KIB);
        }
        fixture_teardown(&f);
    }
}

/* The invariant check (see the top): runs that merge, slowed workers, VM stops. */
static void test_random(void)
{
    enum { SLOTS = 32, ROUNDS = 3000, SECTORS = 128 };
    Fixture f;
    uint8_t model[SECTORS];         /* sector i holds bytes model[i] (0: never written) */
    struct { bool busy, write; unsigned int sector; uint8_t val; } slot[SLOTS] = { 0 };
    GRand *rng = g_rand_new_with_seed(0x3e76e);
    unsigned int issued = 0, done = 0, next_sector = 0;

    memset(model, 0, sizeof(model));
    fixture_setup(&f);
    driver_init(&f);
    disk.delay_us = 200;
    for (unsigned int round = 0; round < ROUNDS || done < issued; round++) {
        uint16_t used = vtest_used_idx(&f.q);

        while (f.completed != used) {
            uint32_t id, len;

            vtest_used_elem(&f.q, f.completed, &id, &len);
            f.completed++;
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
            /* Mostly the sector after the last one: sequential streams, which merge. */
            unsigned int sector = g_rand_int_range(rng, 0, 4) ? next_sector % SECTORS
                                                              : g_rand_int_range(rng, 0, SECTORS);
            bool clash = false;

            for (unsigned int i = 0; i < SLOTS; i++) {
                clash |= slot[i].busy && slot[i].sector == sector;
            }
            if (!slot[id].busy && !clash) {
                slot[id].busy = true;
                slot[id].sector = sector;
                slot[id].write = g_rand_int_range(rng, 0, 8) < 5;
                slot[id].val = (uint8_t)g_rand_int_range(rng, 1, 256);
                if (slot[id].write) {
                    memset(data_of(id), slot[id].val, 512);
                }
                submit(&f, id, slot[id].write ? VIRTIO_BLK_T_OUT : VIRTIO_BLK_T_IN, sector, 512,
                       g_rand_int_range(rng, 0, 6) == 0);
                next_sector = sector + 1;
                issued++;
            }
        } else {
            wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
        }
        if (g_rand_int_range(rng, 0, 200) == 0) {
            vtest_vm_set_running(false);
            g_assert_cmpuint(__atomic_load_n(&f.b->in_flight, __ATOMIC_SEQ_CST), ==, 0);
            g_assert_cmpuint(__atomic_load_n(&disk.running, __ATOMIC_SEQ_CST), ==, 0);
            vtest_vm_set_running(true);
        }
        g_main_context_iteration(NULL, FALSE);
        g_usleep(50);
    }
    g_assert_false(broken());
    g_assert_cmpuint(disk.ops[BLOCK_ACCT_READ] + disk.ops[BLOCK_ACCT_WRITE], ==, issued);
    g_assert_cmpuint(disk.ops[BLOCK_ACCT_READ] + disk.ops[BLOCK_ACCT_WRITE], ==,
                     host_log_len() + disk.merged[BLOCK_ACCT_READ] +
                     disk.merged[BLOCK_ACCT_WRITE]);
    g_assert_cmpuint(disk.merged[BLOCK_ACCT_READ] + disk.merged[BLOCK_ACCT_WRITE], >, 0);
    g_test_message("%u requests, %u host requests", issued, host_log_len());
    g_rand_free(rng);
    fixture_teardown(&f);
}

int main(int argc, char **argv)
{
    int ret;

    g_test_init(&argc, &argv, NULL);
    blk_bench_init();
    g_test_add_func("/virtio-blk/merge/adjacent", test_adjacent);
    g_test_add_func("/virtio-blk/merge/not-adjacent", test_not_adjacent);
    g_test_add_func("/virtio-blk/merge/barriers", test_barriers);
    g_test_add_func("/virtio-blk/merge/bound", test_bound);
    g_test_add_func("/virtio-blk/merge/failure", test_failure);
    g_test_add_func("/virtio-blk/merge/random", test_random);
    ret = g_test_run();
    vtest_cleanup();
    return ret;
}

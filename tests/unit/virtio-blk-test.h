/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The bench of test-virtio-blk and test-virtio-blk-merge: the virtio bench
 * (virtio-test.h: real guest RAM, fake KVM and run state, a fake driver on
 * the virtio-mmio transport) with a fake block layer, the blk_* calls of
 * block.h over one drive "d0" in memory, with random delays (so the
 * workers finish out of order), failures on demand, a log of the host
 * requests and query-blockstats' counters kept as block/backend.c keeps
 * them (each blk_* call one operation). The device thread and the workers
 * are real; the test thread holds the BQL and runs the main loop, as the
 * main thread does.
 *
 * Request @id uses descriptors 3 * id .. 3 * id + 2, its header at HDRS +
 * 16 * id, its status byte at STATUSES + id and its data at DATA + 4 KiB *
 * id (a longer request overlaps the next ids' data).
 */
#ifndef TESTS_UNIT_VIRTIO_BLK_TEST_H
#define TESTS_UNIT_VIRTIO_BLK_TEST_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include "hw/virtio/virtio-blk.h"
#include "virtio-test.h"

#define BASE            0xfeb00000ULL
#define GSI             5
#define QNUM            256
#define QDESC           0x10000
#define HDRS            0x20000         /* 16 bytes per request id */
#define STATUSES        0x30000         /* 1 byte per request id */
#define DATA            0x40000         /* 4 KiB per request id */
#define DISK_SECTORS    4096
#define SECTION         "virtio-mmio@00000000feb00000/virtio-blk"
#define BLK_FEATURES    ((1ULL << VIRTIO_F_VERSION_1) | (1ULL << VIRTIO_BLK_F_FLUSH))
#define HOST_LOG_MAX    256

/* One blk_* call the device made, in the order they started. */
typedef struct HostReq {
    char op;                    /* 'r' preadv, 'w' pwritev, 'f' flush, 'z' zeroes, 'd' discard */
    uint64_t offset, bytes;
    int niov;
} HostReq;

typedef struct FakeDisk {
    GMutex lock;
    uint8_t data[DISK_SECTORS * 512];   /* lock */
    bool attached;
    unsigned int delay_us;      /* each request sleeps up to this */
    int fail_err;               /* the next fail_count writes fail with -fail_err */
    unsigned int fail_count;
    /* Writes that overlap [fail_lo, fail_hi) bytes fail with -fail_err (lock). */
    uint64_t fail_lo, fail_hi;
    BlockErrorAction action;    /* what werror says for them */
    unsigned int running;       /* requests inside the fake now (atomic) */
    unsigned int events[3];     /* blk_error_action calls by action (BQL) */
    unsigned int flushes;
    int last_write_flags;       /* blk_pwritev's @flags, last call (atomic) */
    HostReq log[HOST_LOG_MAX];  /* lock */
    unsigned int nlog;          /* lock; counts past HOST_LOG_MAX too */
    /* query-blockstats' counters, as block/backend.c keeps them (lock). */
    uint64_t ops[BLOCK_ACCT__MAX], failed[BLOCK_ACCT__MAX], merged[BLOCK_ACCT__MAX];
    uint64_t bytes[BLOCK_ACCT__MAX];
} FakeDisk;

extern FakeDisk disk;

typedef struct Fixture {
    VirtIOBlock *b;
    VirtIOMMIOState *mmio;
    VirtIOTestQueue q;
    uint16_t completed;         /* used entries the test has taken */
} Fixture;

/* Once in main(), after g_test_init: the disk's lock, the main loop, the bench. */
void blk_bench_init(void);

void device_create(Fixture *f);
void device_destroy(Fixture *f);
/* A fresh disk of zeroes (no delay, no failure, empty log and counters) and device. */
void fixture_setup(Fixture *f);
void fixture_teardown(Fixture *f);

uint32_t rd(uint64_t off);
void wr(uint64_t off, uint32_t val);
bool broken(void);
void driver_init_features(Fixture *f, uint64_t features);
void driver_init(Fixture *f);

uint8_t *data_of(unsigned int id);
uint8_t status_of(unsigned int id);
/* Request @id: @type at @sector with @len data bytes (0: none), offered; kicked if @kick. */
void submit(Fixture *f, unsigned int id, uint32_t type, uint64_t sector, uint32_t len,
            bool kick);
/* Runs the main loop until the used ring reaches @want. */
void wait_used(Fixture *f, uint16_t want);
/* One request, waited for: its status. */
uint8_t do_req(Fixture *f, unsigned int id, uint32_t type, uint64_t sector, uint32_t len);
void pump_for(unsigned int ms);

/* Host requests logged so far; a copy of entry @i. */
unsigned int host_log_len(void);
HostReq host_log(unsigned int i);

#endif

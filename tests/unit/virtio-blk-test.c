/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The bench of virtio-blk-test.h: a fake block layer, the fixture, a fake driver. */
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

/* ---- A fake block layer: one drive "d0" in memory ---- */

FakeDisk disk;

struct BlockBackend {
    FakeDisk *d;
};

static BlockBackend the_blk = { &disk };

BlockBackend *blk_attach(BlockLayer *bl, const char *drive, const char *dev_name,
                         unsigned perm, Error **errp)
{
    if (strcmp(drive, "d0")) {
        error_setg(errp, "Property 'virtio-blk-device.drive' can't find value '%s'", drive);
        return NULL;
    }
    if (disk.attached) {
        error_setg(errp, "Drive '%s' is already in use by another device", drive);
        return NULL;
    }
    disk.attached = true;
    return &the_blk;
}

void blk_detach(BlockBackend *blk)
{
    blk->d->attached = false;
}

static void fake_delay(void)
{
    if (disk.delay_us) {
        g_usleep(g_random_int_range(0, disk.delay_us));
    }
}

/* Logs one host request and counts it as block/backend.c does (lock held). */
static void fake_log(char op, uint64_t offset, uint64_t bytes, int niov)
{
    if (disk.nlog < HOST_LOG_MAX) {
        disk.log[disk.nlog] = (HostReq) { .op = op, .offset = offset, .bytes = bytes,
                                          .niov = niov };
    }
    disk.nlog++;
}

static void fake_account(BlockAcctType type, uint64_t bytes, int ret)
{
    if (ret < 0) {
        disk.failed[type]++;
    } else {
        disk.ops[type]++;
        disk.bytes[type] += bytes;
    }
}

static int fake_io(uint64_t offset, const struct iovec *iov, int niov, bool write)
{
    uint64_t bytes = 0;
    int ret = 0;

    __atomic_fetch_add(&disk.running, 1, __ATOMIC_SEQ_CST);
    fake_delay();
    g_mutex_lock(&disk.lock);
    for (int i = 0; i < niov; i++) {
        bytes += iov[i].iov_len;
    }
    fake_log(write ? 'w' : 'r', offset, bytes, niov);
    if (write && disk.fail_count) {
        disk.fail_count--;
        ret = -disk.fail_err;
    }
    if (write && offset < disk.fail_hi && offset + bytes > disk.fail_lo) {
        ret = -disk.fail_err;
    }
    for (int i = 0; i < niov && !ret; i++) {
        g_assert_cmpuint(offset + iov[i].iov_len, <=, sizeof(disk.data));
        if (write) {
            memcpy(disk.data + offset, iov[i].iov_base, iov[i].iov_len);
        } else {
            memcpy(iov[i].iov_base, disk.data + offset, iov[i].iov_len);
        }
        offset += iov[i].iov_len;
    }
    fake_account(write ? BLOCK_ACCT_WRITE : BLOCK_ACCT_READ, bytes, ret);
    g_mutex_unlock(&disk.lock);
    __atomic_fetch_sub(&disk.running, 1, __ATOMIC_SEQ_CST);
    return ret;
}

int blk_preadv(BlockBackend *blk, uint64_t offset, const struct iovec *iov, int niov)
{
    return fake_io(offset, iov, niov, false);
}

int blk_pwritev(BlockBackend *blk, uint64_t offset, const struct iovec *iov, int niov, int flags)
{
    __atomic_store_n(&disk.last_write_flags, flags, __ATOMIC_SEQ_CST);
    return fake_io(offset, iov, niov, true);
}

int blk_pwrite_zeroes(BlockBackend *blk, uint64_t offset, uint64_t bytes, int flags)
{
    g_assert_cmpuint(offset + bytes, <=, sizeof(disk.data));
    g_mutex_lock(&disk.lock);
    fake_log('z', offset, bytes, 0);
    memset(disk.data + offset, 0, bytes);
    fake_account(BLOCK_ACCT_WRITE, bytes, 0);
    g_mutex_unlock(&disk.lock);
    return 0;
}

int blk_pdiscard(BlockBackend *blk, uint64_t offset, uint64_t bytes)
{
    g_assert_cmpuint(offset + bytes, <=, sizeof(disk.data));
    g_mutex_lock(&disk.lock);
    fake_log('d', offset, bytes, 0);
    fake_account(BLOCK_ACCT_DISCARD, bytes, 0);
    g_mutex_unlock(&disk.lock);
    return 0;
}

int blk_flush(BlockBackend *blk)
{
    __atomic_fetch_add(&disk.flushes, 1, __ATOMIC_SEQ_CST);
    g_mutex_lock(&disk.lock);
    fake_log('f', 0, 0, 0);
    fake_account(BLOCK_ACCT_FLUSH, 0, 0);
    g_mutex_unlock(&disk.lock);
    return 0;
}

int64_t blk_getlength(BlockBackend *blk)
{
    return sizeof(disk.data);
}

bool blk_is_read_only(BlockBackend *blk)
{
    return false;
}

bool blk_enable_write_cache(BlockBackend *blk)
{
    return true;
}

BlockErrorAction blk_get_error_action(BlockBackend *blk, bool is_read, int err)
{
    return disk.action;
}

void blk_error_action(BlockBackend *blk, BlockErrorAction action, bool is_read, int err)
{
    g_assert_true(bql_locked());
    disk.events[action]++;
}

/* The device counts in the block layer only what it merged (the blk_* calls count themselves). */
void blk_account(BlockBackend *blk, BlockAcctType type, uint64_t bytes, uint64_t ns, bool failed)
{
    g_assert_not_reached();
}

void blk_account_merged(BlockBackend *blk, BlockAcctType type, unsigned int n, uint64_t ns)
{
    g_mutex_lock(&disk.lock);
    disk.ops[type] += n;
    disk.merged[type] += n;
    g_mutex_unlock(&disk.lock);
}

unsigned int host_log_len(void)
{
    unsigned int n;

    g_mutex_lock(&disk.lock);
    n = disk.nlog;
    g_mutex_unlock(&disk.lock);
    return n;
}

HostReq host_log(unsigned int i)
{
    HostReq h;

    g_assert_cmpuint(i, <, HOST_LOG_MAX);
    g_mutex_lock(&disk.lock);
    h = disk.log[i];
    g_mutex_unlock(&disk.lock);
    return h;
}

/* ---- The fixture and the fake driver ---- */

void device_create(Fixture *f)
{
    VirtIOBlkConf conf = { .drive = (char *)"d0", .serial = (char *)"serial-0123456789abcdef",
                           .logical_block_size = 512, .physical_block_size = 512,
                           .num_queues = 1 };

    f->b = virtio_blk_create(NULL, &conf, ERRP_ABORT);
    f->mmio = virtio_mmio_create(&f->b->vdev, BASE, GSI, ERRP_ABORT);
    virtio_blk_mmio_state_register(f->mmio);
}

void device_destroy(Fixture *f)
{
    virtio_mmio_destroy(f->mmio);
    virtio_blk_destroy(f->b);
    io_range_table_free(mmio_table);
    mmio_table = io_range_table_new();
}

void fixture_setup(Fixture *f)
{
    memset(f, 0, sizeof(*f));
    g_mutex_lock(&disk.lock);
    memset(disk.data, 0, sizeof(disk.data));
    disk.fail_lo = disk.fail_hi = 0;
    disk.nlog = 0;
    memset(disk.ops, 0, sizeof(disk.ops));
    memset(disk.failed, 0, sizeof(disk.failed));
    memset(disk.merged, 0, sizeof(disk.merged));
    memset(disk.bytes, 0, sizeof(disk.bytes));
    g_mutex_unlock(&disk.lock);
    disk.delay_us = 0;
    disk.fail_count = 0;
    memset(disk.events, 0, sizeof(disk.events));
    vtest_fakes_reset(false, false);
    vtest_vm_set_running(true);
    device_create(f);
}

void fixture_teardown(Fixture *f)
{
    device_destroy(f);
    vtest_vm_set_running(true);
}

uint32_t rd(uint64_t off)
{
    return vtest_read(BASE, off);
}

void wr(uint64_t off, uint32_t val)
{
    vtest_write(BASE, off, val);
}

bool broken(void)
{
    return rd(VIRTIO_MMIO_STATUS) & VIRTIO_CONFIG_S_NEEDS_RESET;
}

void driver_init_features(Fixture *f, uint64_t features)
{
    uint32_t ok = VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
                  VIRTIO_CONFIG_S_FEATURES_OK;

    f->q = (VirtIOTestQueue) { .index = 0, .num = QNUM, .desc = QDESC,
                               .avail = QDESC + 0x1000, .used = QDESC + 0x2000 };
    f->completed = 0;
    vtest_negotiate(BASE, features);
    vtest_queue_setup(BASE, &f->q);
    wr(VIRTIO_MMIO_STATUS, ok | VIRTIO_CONFIG_S_DRIVER_OK);
    g_assert_cmpuint(rd(VIRTIO_MMIO_STATUS), ==, ok | VIRTIO_CONFIG_S_DRIVER_OK);
}

void driver_init(Fixture *f)
{
    driver_init_features(f, BLK_FEATURES);
}

uint8_t *data_of(unsigned int id)
{
    return vtest_gpa(DATA + (uint64_t)id * 4096);
}

uint8_t status_of(unsigned int id)
{
    return *vtest_gpa(STATUSES + id);
}

/*
 * Request @id (descriptors 3 * id .. 3 * id + 2): @type at @sector with
 * @len data bytes (0: none), offered and kicked.
 */
void submit(Fixture *f, unsigned int id, uint32_t type, uint64_t sector, uint32_t len,
            bool kick)
{
    uint8_t *h = vtest_gpa(HDRS + id * 16);
    uint16_t d = (uint16_t)(3 * id);
    bool dev_writes = type == VIRTIO_BLK_T_IN || type == VIRTIO_BLK_T_GET_ID;

    memset(h, 0, 16);
    memcpy(h, &type, 4);
    memcpy(h + 8, &sector, 8);
    *vtest_gpa(STATUSES + id) = 0xff;
    vtest_put_desc(&f->q, d, HDRS + id * 16, 16, VRING_DESC_F_NEXT, len ? d + 1 : d + 2);
    if (len) {
        vtest_put_desc(&f->q, d + 1, DATA + (uint64_t)id * 4096, len,
                       VRING_DESC_F_NEXT | (dev_writes ? VRING_DESC_F_WRITE : 0), d + 2);
    }
    vtest_put_desc(&f->q, d + 2, STATUSES + id, 1, VRING_DESC_F_WRITE, 0);
    vtest_publish(&f->q, d);
    if (kick) {
        wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
    }
}

static Fixture *pump_f;
static uint16_t pump_want;

static bool used_enough(void *opaque)
{
    return (uint16_t)(vtest_used_idx(&pump_f->q) - pump_want) < 0x8000;
}

/* Runs the main loop until the used ring reaches @want. */
void wait_used(Fixture *f, uint16_t want)
{
    gint64 end = g_get_monotonic_time() + VTEST_WAIT_US;

    pump_f = f;
    pump_want = want;
    while (!used_enough(NULL)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_main_context_iteration(NULL, FALSE);
        g_usleep(100);
    }
}

/* One request, waited for: its status. */
uint8_t do_req(Fixture *f, unsigned int id, uint32_t type, uint64_t sector, uint32_t len)
{
    submit(f, id, type, sector, len, true);
    wait_used(f, ++f->completed);
    return status_of(id);
}

void pump_for(unsigned int ms)
{
    gint64 end = g_get_monotonic_time() + ms * 1000;

    while (g_get_monotonic_time() < end) {
        g_main_context_iteration(NULL, FALSE);
        g_usleep(200);
    }
}

void blk_bench_init(void)
{
    g_mutex_init(&disk.lock);
    qemu_main_loop_init();
    vtest_init();
}

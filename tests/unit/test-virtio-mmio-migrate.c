/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of what the virtio-mmio transport migrates (its device's
 * queues with it; virtio-mmio-mig.h) on the bench of virtio-echo-test.h: a
 * round trip, hostile states refused before anything acts on them, rings
 * the guest moved, rings never read at load, and a device thread left
 * behind on guest RAM a lazy restore lost.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "system/ioport.h"
#include "system/memory.h"
#include "qemu/thread.h"
#include "qemu/userfaultfd.h"
#include "virtio-echo-test.h"
#include "../../hw/virtio/virtio-mmio-mig.h"
#include <poll.h>
#include <sys/mman.h>

/* ---- Migration: what the transport saves and takes ---- */

/*
 * The stream layout is virtio-net-mmio-state.c's (QEMU's, tested in
 * test-virtio-net and test-virtio-state.py); underneath it, the transport
 * hands over and checks plain values (virtio-mmio-mig.h), tested here with
 * the echo device.
 */

/*
 * A source that echoed one chain and then stopped with a second chain
 * offered but not kicked; the state it saves.
 */
static VirtIOMMIOMigState *save_source(bool ioeventfd)
{
    VirtIOMMIOMigState *m = g_new0(VirtIOMMIOMigState, 1);
    Fixture f;

    fixture_setup(&f, ioeventfd, false);
    driver_init(&f, true);
    driver_send(&f, 0, "before");
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
    g_assert_true(vtest_wait_used(&f.q, 1));
    vtest_vm_set_running(false);
    driver_send(&f, 1, "across");
    wr(VIRTIO_MMIO_QUEUE_SEL, 1);
    virtio_mmio_mig_save(f.mmio, m);
    g_assert_cmpuint(m->num_queues, ==, 2);
    /*
     * The source goes away before it runs again: its guest RAM stays, as the
     * stream carried it at the stop (the load checks the rings in it).
     */
    virtio_mmio_destroy(f.mmio);
    virtio_device_cleanup(&f.dev.vdev);
    vtest_vm_set_running(true);
    io_range_table_free(mmio_table);
    mmio_table = io_range_table_new();
    return m;
}

static void test_migrate_round_trip(void)
{
    g_autofree VirtIOMMIOMigState *m = save_source(true);
    Fixture f;

    /* The destination: a fresh device, VM stopped while the state comes in. */
    fixture_setup(&f, true, false);
    vtest_vm_set_running(false);
    g_assert_true(virtio_mmio_mig_load(f.mmio, m, ERRP_ABORT));
    g_assert_cmpuint(rd(VIRTIO_MMIO_STATUS), ==, STATUS_FEATURES_DONE |
                     VIRTIO_CONFIG_S_DRIVER_OK);
    g_assert_true(virtio_has_feature(&f.dev.vdev, VIRTIO_RING_F_EVENT_IDX));
    g_assert_cmphex(rd(VIRTIO_MMIO_INTERRUPT_STATUS), ==, VIRTIO_ISR_VRING);
    g_assert_cmpint(vtest_fake.line_level, ==, 1);
    g_assert_cmpuint(rd(VIRTIO_MMIO_QUEUE_READY), ==, 0);      /* QueueSel was 1 */
    wr(VIRTIO_MMIO_QUEUE_SEL, 0);
    g_assert_cmpuint(rd(VIRTIO_MMIO_QUEUE_READY), ==, 1);
    g_assert_cmphex(rd(VIRTIO_MMIO_QUEUE_USED_LOW), ==, USED_GPA);
    g_assert_cmpint(vtest_fake.ioeventfd_fd[0], >=, 0);
    g_assert_false(f.dev.vdev.thread_running);
    /* The VM runs: the chain offered before the stop is served without a kick. */
    vtest_vm_set_running(true);
    g_assert_true(vtest_wait_used(&f.q, 2));
    g_assert_cmpstr((char *)vtest_gpa(BUF_GPA + 0x200 + 0x100), ==, "across");
    /* The driver carries on where it was. */
    f.q.avail_idx = 2;
    driver_send(&f, 2, "after");
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
    g_assert_true(vtest_wait_used(&f.q, 3));
    fixture_teardown(&f);
}

/* @bad (a changed copy of a good state) is refused with @needle; nothing reaches the device. */
static void load_expect_refused(const VirtIOMMIOMigState *bad, const char *needle)
{
    Error *err = NULL;
    Fixture f;

    fixture_setup(&f, true, false);
    vtest_vm_set_running(false);
    g_assert_false(virtio_mmio_mig_load(f.mmio, bad, &err));
    g_test_message("refused: %s", error_get_pretty(err));
    g_assert_nonnull(strstr(error_get_pretty(err), needle));
    error_free(err);
    g_assert_cmpuint(rd(VIRTIO_MMIO_STATUS), ==, 0);
    g_assert_cmpuint(rd(VIRTIO_MMIO_QUEUE_READY), ==, 0);
    g_assert_cmpuint(rd(VIRTIO_MMIO_INTERRUPT_STATUS), ==, 0);
    g_assert_cmpint(vtest_fake.ioeventfd_fd[0], ==, -1);
    vtest_vm_set_running(true);
    fixture_teardown(&f);
}

#define REFUSED(good, field, val, needle) do {                                  \
        VirtIOMMIOMigState bad_ = *(good);                                      \
        bad_.field = (val);                                                     \
        load_expect_refused(&bad_, (needle));                                   \
    } while (0)

static void test_migrate_hostile(void)
{
    g_autofree VirtIOMMIOMigState *good = save_source(false);

    REFUSED(good, vq[0].desc_addr, 0x100000000000ULL, "outside guest RAM");
    REFUSED(good, vq[0].desc_addr, DESC_GPA + 8, "aligned");
    REFUSED(good, vq[0].num, 12, "power of two");
    REFUSED(good, vq[0].num, 2 * QSIZE, "above the maximum");
    REFUSED(good, vq[0].last_avail_idx, 100, "past used_idx 1, but 0 chains in use");
    REFUSED(good, num_queues, 3, "3 queues in the stream");
    REFUSED(good, num_queues, 17, "17 queues in the stream");
    REFUSED(good, dev.status, 0x1f, "invalid status");
    REFUSED(good, dev.status, VIRTIO_CONFIG_S_DRIVER_OK, "DRIVER_OK without FEATURES_OK");
    REFUSED(good, dev.guest_features, (1ULL << VIRTIO_F_VERSION_1) | (1 << 7),
            "does not offer");
    REFUSED(good, dev.guest_features, 1ULL << DEV_FEATURE_BIT, "without VIRTIO_F_VERSION_1");
    REFUSED(good, isr, 4, "invalid InterruptStatus");
}

/*
 * @m loads; @broken: with the device broken (NEEDS_RESET), its thread not
 * started when the VM runs.
 */
static void load_expect_loaded(const VirtIOMMIOMigState *m, bool broken)
{
    Fixture f;

    fixture_setup(&f, true, false);
    vtest_vm_set_running(false);
    g_assert_true(virtio_mmio_mig_load(f.mmio, m, ERRP_ABORT));
    g_assert_cmpint(virtio_device_is_broken(&f.dev.vdev), ==, broken);
    vtest_vm_set_running(true);
    if (broken) {
        g_assert_false(f.dev.vdev.thread_running);
        assert_needs_reset(&f);
        g_assert_cmpuint(f.dev.notifies, ==, 0);
    }
    fixture_teardown(&f);
}

/*
 * The rings in guest RAM are the guest's to write: where they disagree with
 * the stream the device loads broken, as the first kick would have broken
 * it on the source, instead of the guest blocking its own migration.
 */
static void test_migrate_guest_rings(void)
{
    g_autofree VirtIOMMIOMigState *good = save_source(false);
    VirtIOMMIOMigState moved = *good;
    VirtIOTestQueue q = { .index = 0, .num = QSIZE, .desc = DESC_GPA, .avail = AVAIL_GPA,
                          .used = USED_GPA };
    uint16_t used_idx;

    /* The guest wrote the device ring's idx. */
    memcpy(&used_idx, vtest_gpa(USED_GPA + 2), 2);
    memcpy(vtest_gpa(USED_GPA + 2), &(uint16_t){ 7 }, 2);
    load_expect_loaded(good, true);
    memcpy(vtest_gpa(USED_GPA + 2), &used_idx, 2);
    /* The guest offered a looping chain and never kicked (descriptors 2 -> 3 -> 2). */
    vtest_put_desc(&q, 3, BUF_GPA + 0x200 + 0x100, 0x100, VRING_DESC_F_NEXT, 2);
    load_expect_loaded(good, true);
    vtest_put_desc(&q, 3, BUF_GPA + 0x200 + 0x100, 0x100, VRING_DESC_F_WRITE, 0);
    /*
     * The device ring moved in the state to another good place in RAM,
     * whose idx (the two chains offered) is not used_idx: the state is
     * consistent in itself, and to the destination this is the guest's
     * write above.
     */
    moved.vq[0].used_addr = AVAIL_GPA;
    load_expect_loaded(&moved, true);
    /* Put back, the rings agree again and the device runs. */
    load_expect_loaded(good, false);
}

/*
 * The rings are read only for a device that will run them, and only when
 * guest RAM is all here: a device the guest broke on the source migrates
 * broken, one before DRIVER_OK has rings the driver may still be writing,
 * and under postcopy or lazy restore a read could wait forever.
 */
static void test_migrate_rings_not_read(void)
{
    g_autofree VirtIOMMIOMigState *m = save_source(false);
    VirtIOMMIOMigState v;
    GPtrArray *rbs = ram_blocks();

    /* Each with the device ring moved where test_migrate_guest_rings breaks the device. */
    m->vq[0].used_addr = AVAIL_GPA;
    /* Broken on the source: broken here, without a second warning. */
    v = *m;
    v.dev.broken = true;
    load_expect_loaded(&v, true);
    v = *m;
    v.dev.status = STATUS_FEATURES_DONE;
    load_expect_loaded(&v, false);
    for (guint i = 0; i < rbs->len; i++) {
        ((RAMBlock *)g_ptr_array_index(rbs, i))->uffd_missing = 1;
    }
    load_expect_loaded(m, false);
    for (guint i = 0; i < rbs->len; i++) {
        ((RAMBlock *)g_ptr_array_index(rbs, i))->uffd_missing = 0;
    }
}

static unsigned int lost_stop_done;    /* atomic */

static void *lost_stopper(void *opaque)
{
    vtest_vm_set_running(false);
    __atomic_store_n(&lost_stop_done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/*
 * Guest RAM lost (a lazy restore whose file failed) while the device
 * thread waits on a missing page of it, as virtio-net's does when a frame
 * comes for a buffer the restore never brought: the VM stop under the BQL
 * must not join that thread, which would wait forever. The device is left
 * broken, its thread behind; cleanup leaves it what it may still use, and
 * joins it once it did return. Runs last: the loss is for the process.
 */
static void test_lost_ram_thread_left_behind(void)
{
    int uffd = uffd_create(0);
    struct pollfd pfd = { .fd = uffd, .events = POLLIN };
    QemuThread stopper;
    Fixture f;

    if (uffd < 0) {
        g_test_skip("userfaultfd is not usable here");
        return;
    }
    fixture_setup(&f, false, false);
    driver_init(&f, false);
    g_assert_cmpint(madvise(vtest_gpa(MISSING_GPA), 4096, MADV_DONTNEED), ==, 0);
    g_assert_cmpint(uffd_register_missing(uffd, vtest_gpa(MISSING_GPA), 4096), ==, 0);
    vtest_put_desc(&f.q, 0, MISSING_GPA, 8, VRING_DESC_F_NEXT, 1);
    vtest_put_desc(&f.q, 1, BUF_GPA + 0x100, 0x100, VRING_DESC_F_WRITE, 0);
    vtest_publish(&f.q, 0);
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
    /* The thread's read of the chain's buffer is a fault that nobody answers. */
    g_assert_cmpint(poll(&pfd, 1, 5000), ==, 1);
    /*
     * The stop, in a thread of its own so that one that hangs fails the
     * test instead. While the page may still come it waits for the thread;
     * the loss, coming while it waits, releases it.
     */
    qemu_thread_create(&stopper, "lost-stopper", lost_stopper, NULL);
    g_usleep(100000);
    g_assert_cmpuint(__atomic_load_n(&lost_stop_done, __ATOMIC_SEQ_CST), ==, 0);
    guest_ram_set_lost();
    g_assert_true(vtest_wait_uint(&lost_stop_done, 1));
    qemu_thread_join(&stopper);
    g_assert_false(f.dev.vdev.thread_running);
    g_assert_true(f.dev.vdev.thread_abandoned);
    assert_needs_reset(&f);
    /* stop's flush would touch guest RAM under the BQL, maybe beside the thread. */
    g_assert_cmpuint(f.dev.stops, ==, 0);
    /* Never restarted. */
    vtest_vm_set_running(true);
    g_assert_false(f.dev.vdev.thread_running);
    vtest_vm_set_running(false);
    /* Cleanup does not wait either, and frees nothing the thread holds. */
    virtio_device_cleanup(&f.dev.vdev);
    g_assert_true(f.dev.vdev.thread_abandoned);
    g_assert_nonnull(f.dev.vdev.vq);
    g_assert_cmpuint(vtest_used_idx(&f.q), ==, 0);
    /*
     * Here only, the page comes after all (the range unregistered wakes the
     * thread, which reads zeros): the thread returns, and cleanup joins it.
     */
    g_assert_cmpint(uffd_unregister(uffd, vtest_gpa(MISSING_GPA), 4096), ==, 0);
    pfd = (struct pollfd) { .fd = f.dev.vdev.exit_fd, .events = POLLIN };
    g_assert_cmpint(poll(&pfd, 1, 5000), ==, 1);
    vtest_vm_set_running(true);
    close(uffd);
    fixture_teardown(&f);

    /*
     * A thread that was not waiting returns and is joined; stop is still
     * skipped (virtio-net's would write frames into guest RAM, with the BQL).
     */
    fixture_setup(&f, false, false);
    driver_init(&f, false);
    vtest_vm_set_running(false);
    g_assert_false(f.dev.vdev.thread_running);
    g_assert_false(f.dev.vdev.thread_abandoned);
    g_assert_false(virtio_device_is_broken(&f.dev.vdev));
    g_assert_cmpuint(f.dev.stops, ==, 0);
    vtest_vm_set_running(true);
    fixture_teardown(&f);
}

int main(int argc, char **argv)
{
    int ret;

    g_test_init(&argc, &argv, NULL);
    vtest_init();
    g_test_add_func("/virtio-mmio/migrate/round-trip", test_migrate_round_trip);
    g_test_add_func("/virtio-mmio/migrate/hostile", test_migrate_hostile);
    g_test_add_func("/virtio-mmio/migrate/guest-rings", test_migrate_guest_rings);
    g_test_add_func("/virtio-mmio/migrate/rings-not-read", test_migrate_rings_not_read);
    g_test_add_func("/virtio-mmio/lost-ram/thread-left-behind",
                    test_lost_ram_thread_left_behind);
    ret = g_test_run();
    vtest_cleanup();
    return ret;
}

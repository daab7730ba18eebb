/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for hw/virtio/virtio-mmio.c and hw/virtio/virtio.c on the
 * bench of virtio-test.c: a fake driver programs the transport through its
 * registers over real guest RAM, a small echo device runs in the real
 * device thread, and a fake KVM records ioeventfd/irqfd assignments and
 * line levels, with the capabilities on or off per test so both the
 * eventfd and the exit/KVM_IRQ_LINE paths run. Hostile drivers: ring addresses
 * outside RAM, loops found by the device thread, DRIVER_OK without
 * FEATURES_OK, features without VERSION_1, registers written while a
 * queue is live; each marks the device NEEDS_RESET (one warning), and a
 * reset through Status brings it back. The transport's migration section
 * is tested in test-virtio-mmio-migrate.c, on the same bench
 * (virtio-echo-test.h).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/virtio/virtio.h"
#include "hw/virtio/virtio-mmio.h"
#include "system/ioport.h"
#include "system/memory.h"
#include "qemu/thread.h"
#include "qemu/userfaultfd.h"
#include "virtio-echo-test.h"
#include <poll.h>
#include <sys/mman.h>
#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>
#include <linux/virtio_ring.h>

/* ---- Registers ---- */

static void test_identity(void)
{
    Fixture f;
    uint64_t v;

    fixture_setup(&f, false, false);
    g_assert_cmphex(rd(VIRTIO_MMIO_MAGIC_VALUE), ==, 0x74726976);
    g_assert_cmpuint(rd(VIRTIO_MMIO_VERSION), ==, 2);
    g_assert_cmpuint(rd(VIRTIO_MMIO_DEVICE_ID), ==, 42);
    g_assert_cmphex(rd(VIRTIO_MMIO_VENDOR_ID), ==, 0x554d4551);
    g_assert_cmpuint(rd(VIRTIO_MMIO_STATUS), ==, 0);
    /* Control registers are 32-bit only. */
    g_assert_true(io_range_read(mmio_table, BASE + VIRTIO_MMIO_MAGIC_VALUE, 2, &v));
    g_assert_cmpuint(v, ==, 0);
    g_assert_true(io_range_read(mmio_table, BASE + 2, 4, &v));
    g_assert_cmpuint(v, ==, 0);
    /* Queues that do not exist have QueueNumMax 0. */
    wr(VIRTIO_MMIO_QUEUE_SEL, 1);
    g_assert_cmpuint(rd(VIRTIO_MMIO_QUEUE_NUM_MAX), ==, QSIZE);
    wr(VIRTIO_MMIO_QUEUE_SEL, 2);
    g_assert_cmpuint(rd(VIRTIO_MMIO_QUEUE_NUM_MAX), ==, 0);
    wr(VIRTIO_MMIO_QUEUE_READY, 1);     /* no such queue: nothing happens */
    g_assert_cmpuint(rd(VIRTIO_MMIO_QUEUE_READY), ==, 0);
    wr(VIRTIO_MMIO_QUEUE_SEL, 0xffffffff);
    g_assert_cmpuint(rd(VIRTIO_MMIO_QUEUE_NUM_MAX), ==, 0);
    /* No shared memory regions: length -1. */
    g_assert_cmphex(rd(VIRTIO_MMIO_SHM_LEN_LOW), ==, 0xffffffff);
    g_assert_cmphex(rd(VIRTIO_MMIO_SHM_LEN_HIGH), ==, 0xffffffff);
    /* Past the config space, and past the window. */
    g_assert_true(io_range_read(mmio_table, BASE + VIRTIO_MMIO_CONFIG + 8, 1, &v));
    g_assert_cmpuint(v, ==, 0);
    g_assert_false(io_range_read(mmio_table, BASE + VIRTIO_MMIO_WINDOW_SIZE, 4, &v));
    /* The window is taken: a second transport there is refused. */
    {
        Error *err = NULL;

        g_assert_null(virtio_mmio_create(&f.dev.vdev, BASE + 0x100, GSI + 1, &err));
        g_assert_nonnull(strstr(error_get_pretty(err), "already in use"));
        error_free(err);
    }
    fixture_teardown(&f);
}

static void test_features(void)
{
    Fixture f;

    fixture_setup(&f, false, false);
    wr(VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
    g_assert_cmphex(rd(VIRTIO_MMIO_DEVICE_FEATURES), ==,
                    (1u << DEV_FEATURE_BIT) | (1u << VIRTIO_RING_F_INDIRECT_DESC) |
                    (1u << VIRTIO_RING_F_EVENT_IDX));
    wr(VIRTIO_MMIO_DEVICE_FEATURES_SEL, 1);
    g_assert_cmphex(rd(VIRTIO_MMIO_DEVICE_FEATURES), ==, 1u << (VIRTIO_F_VERSION_1 - 32));
    wr(VIRTIO_MMIO_DEVICE_FEATURES_SEL, 2);
    g_assert_cmphex(rd(VIRTIO_MMIO_DEVICE_FEATURES), ==, 0);

    /* A legacy driver (no VERSION_1) is refused: FEATURES_OK reads back clear. */
    vtest_negotiate(BASE, 1ULL << DEV_FEATURE_BIT);
    g_assert_cmpuint(rd(VIRTIO_MMIO_STATUS), ==,
                     VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER);
    /* So is one that takes a feature we never offered. */
    vtest_negotiate(BASE, (1ULL << VIRTIO_F_VERSION_1) | (1ULL << 7));
    g_assert_cmpuint(rd(VIRTIO_MMIO_STATUS) & VIRTIO_CONFIG_S_FEATURES_OK, ==, 0);
    /* A proper one is accepted, and cannot change its mind afterwards. */
    vtest_negotiate(BASE, (1ULL << VIRTIO_F_VERSION_1) | (1ULL << DEV_FEATURE_BIT));
    g_assert_cmpuint(rd(VIRTIO_MMIO_STATUS), ==, STATUS_FEATURES_DONE);
    wr(VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
    wr(VIRTIO_MMIO_DRIVER_FEATURES, 0);
    g_assert_true(virtio_has_feature(&f.dev.vdev, DEV_FEATURE_BIT));
    g_assert_true(virtio_has_feature(&f.dev.vdev, VIRTIO_F_VERSION_1));
    /* Reset forgets it all. */
    wr(VIRTIO_MMIO_STATUS, 0);
    g_assert_false(virtio_has_feature(&f.dev.vdev, VIRTIO_F_VERSION_1));
    g_assert_cmpuint(rd(VIRTIO_MMIO_STATUS), ==, 0);
    fixture_teardown(&f);
}

static void test_config_space(void)
{
    Fixture f;
    uint64_t v;
    uint32_t gen;

    fixture_setup(&f, false, false);
    memcpy(f.dev.config, "\x11\x22\x33\x44\x55\x66\x77\x88", 8);
    g_assert_true(io_range_read(mmio_table, BASE + VIRTIO_MMIO_CONFIG + 1, 1, &v));
    g_assert_cmphex(v, ==, 0x22);
    g_assert_true(io_range_read(mmio_table, BASE + VIRTIO_MMIO_CONFIG + 4, 4, &v));
    g_assert_cmphex(v, ==, 0x88776655);
    g_assert_true(io_range_read(mmio_table, BASE + VIRTIO_MMIO_CONFIG, 8, &v));
    g_assert_cmphex(v, ==, 0x8877665544332211ULL);
    /* A read reaching past the config space gets nothing. */
    g_assert_true(io_range_read(mmio_table, BASE + VIRTIO_MMIO_CONFIG + 6, 4, &v));
    g_assert_cmphex(v, ==, 0);
    g_assert_true(io_range_write(mmio_table, BASE + VIRTIO_MMIO_CONFIG, 2, 0xbeef));
    g_assert_cmphex(f.dev.config[0], ==, 0xef);
    g_assert_cmphex(f.dev.config[1], ==, 0xbe);
    g_assert_true(io_range_write(mmio_table, BASE + VIRTIO_MMIO_CONFIG + 7, 2, 0xffff));
    g_assert_cmphex(f.dev.config[7], ==, 0x88);
    gen = rd(VIRTIO_MMIO_CONFIG_GENERATION);
    virtio_notify_config(&f.dev.vdev);
    g_assert_cmpuint(rd(VIRTIO_MMIO_CONFIG_GENERATION), ==, gen + 1);
    /* Before DRIVER_OK, no config interrupt. */
    g_assert_cmpuint(rd(VIRTIO_MMIO_INTERRUPT_STATUS), ==, 0);
    fixture_teardown(&f);
}

/* ---- The data path, on both notification and both interrupt paths ---- */

static void run_echo(bool ioeventfd, bool irqfd)
{
    Fixture f;
    const char *msg = "ping through the ring";
    unsigned int resets;
    uint64_t cnt;

    fixture_setup(&f, ioeventfd, irqfd);
    g_assert_cmpint(virtio_mmio_uses_ioeventfd(f.mmio), ==, ioeventfd);
    g_assert_cmpint(virtio_mmio_uses_irqfd(f.mmio), ==, irqfd);
    if (irqfd) {
        g_assert_cmpint(vtest_fake.irqfd_gsi, ==, GSI);
    }
    driver_init(&f, false);
    g_assert_cmpuint(f.dev.starts, ==, 1);
    if (ioeventfd) {
        g_assert_cmpint(vtest_fake.ioeventfd_fd[0], >=, 0);
        g_assert_cmpint(vtest_fake.ioeventfd_fd[1], ==, -1);      /* queue 1 never ready */
        g_assert_cmphex(vtest_fake.ioeventfd_addr, ==, BASE + VIRTIO_MMIO_QUEUE_NOTIFY);
        g_assert_cmpuint(vtest_fake.ioeventfd_len, ==, 4);
    }
    driver_send(&f, 0, msg);
    if (ioeventfd) {
        /* What KVM does for the guest's 4-byte write of 0: no exit. */
        uint64_t one = 1;

        g_assert_cmpint(write(vtest_fake.ioeventfd_fd[0], &one, 8), ==, 8);
    } else {
        wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
    }
    g_assert_true(vtest_wait_used(&f.q, 1));
    g_assert_cmpstr((char *)vtest_gpa(BUF_GPA + 0x100), ==, msg);
    g_assert_cmphex(rd(VIRTIO_MMIO_INTERRUPT_STATUS), ==, VIRTIO_ISR_VRING);
    if (irqfd) {
        g_assert_cmpint(read(vtest_fake.irq_fd, &cnt, 8), ==, 8);
        g_assert_cmpuint(cnt, ==, 1);
        /* Still pending at the guest's EOI: asserted again. */
        cnt = 1;
        g_assert_cmpint(write(vtest_fake.resample_fd, &cnt, 8), ==, 8);
        while (g_main_context_iteration(NULL, FALSE)) {
        }
        g_assert_cmpint(read(vtest_fake.irq_fd, &cnt, 8), ==, 8);
        /* Acknowledged, then EOI: stays low. */
        wr(VIRTIO_MMIO_INTERRUPT_ACK, VIRTIO_ISR_VRING);
        cnt = 1;
        g_assert_cmpint(write(vtest_fake.resample_fd, &cnt, 8), ==, 8);
        while (g_main_context_iteration(NULL, FALSE)) {
        }
        g_assert_cmpint(read(vtest_fake.irq_fd, &cnt, 8), ==, -1);
        g_assert_cmpint(errno, ==, EAGAIN);
        g_assert_cmpuint(vtest_fake.line_calls, ==, 0);
    } else {
        g_assert_cmpint(__atomic_load_n(&vtest_fake.line_level, __ATOMIC_SEQ_CST), ==, 1);
        wr(VIRTIO_MMIO_INTERRUPT_ACK, VIRTIO_ISR_VRING);
        g_assert_cmpint(vtest_fake.line_level, ==, 0);
    }
    g_assert_cmphex(rd(VIRTIO_MMIO_INTERRUPT_STATUS), ==, 0);

    /* A second round trip, then the driver suppresses interrupts. */
    driver_send(&f, 1, "second");
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);        /* the exit path works with ioeventfd too */
    g_assert_true(vtest_wait_used(&f.q, 2));
    wr(VIRTIO_MMIO_INTERRUPT_ACK, VIRTIO_ISR_VRING);
    vtest_put16(AVAIL_GPA, VRING_AVAIL_F_NO_INTERRUPT);
    driver_send(&f, 2, "quiet");
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
    g_assert_true(vtest_wait_used(&f.q, 3));
    g_assert_true(vtest_wait_uint(&f.dev.notifies, 3));
    g_assert_cmphex(rd(VIRTIO_MMIO_INTERRUPT_STATUS), ==, 0);

    /* Reset: thread joined, ioeventfds gone, line low. */
    resets = f.dev.resets;
    wr(VIRTIO_MMIO_STATUS, 0);
    g_assert_cmpuint(f.dev.stops, ==, 1);
    g_assert_cmpuint(f.dev.resets, ==, resets + 1);
    g_assert_cmpint(vtest_fake.ioeventfd_fd[0], ==, -1);
    g_assert_cmpuint(rd(VIRTIO_MMIO_QUEUE_READY), ==, 0);
    fixture_teardown(&f);
}

static void test_echo_exits(void)
{
    run_echo(false, false);
}

/* A line to a controller outside KVM (QEMU microvm's second IOAPIC). */
typedef struct LineRecord {
    int level;                  /* the last level handed over (atomic) */
    unsigned int calls;         /* atomic */
    unsigned int pin;           /* atomic */
} LineRecord;

static void record_line(void *opaque, unsigned int pin, bool level)
{
    LineRecord *r = opaque;

    __atomic_store_n(&r->pin, pin, __ATOMIC_SEQ_CST);
    __atomic_store_n(&r->level, level, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&r->calls, 1, __ATOMIC_SEQ_CST);
}

static void test_echo_line(void)
{
    LineRecord r = { .level = -1 };
    Fixture f;

    /* KVM offers irqfd, but the line is the controller's: no irqfd, no KVM_IRQ_LINE. */
    memset(&f, 0, sizeof(f));
    f.q = (VirtIOTestQueue) { .index = 0, .num = QSIZE, .desc = DESC_GPA,
                              .avail = AVAIL_GPA, .used = USED_GPA };
    vtest_fakes_reset(true, true);
    g_assert_true(virtio_device_init(&f.dev.vdev, &echo_ops, ERRP_ABORT));
    f.mmio = virtio_mmio_create_on_line(&f.dev.vdev, BASE, 47, record_line, &r, 23,
                                        ERRP_ABORT);
    g_assert_false(virtio_mmio_uses_irqfd(f.mmio));
    g_assert_cmpint(virtio_mmio_gsi(f.mmio), ==, 47);
    driver_init(&f, false);
    driver_send(&f, 0, "line");
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
    g_assert_true(vtest_wait_used(&f.q, 1));
    g_assert_cmphex(rd(VIRTIO_MMIO_INTERRUPT_STATUS), ==, VIRTIO_ISR_VRING);
    g_assert_cmpint(__atomic_load_n(&r.level, __ATOMIC_SEQ_CST), ==, 1);
    g_assert_cmpuint(__atomic_load_n(&r.pin, __ATOMIC_SEQ_CST), ==, 23);
    /* Only changes are handed over: a second completion while high adds no call. */
    driver_send(&f, 1, "again");
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
    g_assert_true(vtest_wait_used(&f.q, 2));
    g_assert_cmpuint(__atomic_load_n(&r.calls, __ATOMIC_SEQ_CST), ==, 1);
    wr(VIRTIO_MMIO_INTERRUPT_ACK, VIRTIO_ISR_VRING);
    g_assert_cmpint(r.level, ==, 0);
    g_assert_cmpuint(r.calls, ==, 2);
    g_assert_cmpint(vtest_fake.irq_fd, ==, -1);
    g_assert_cmpuint(vtest_fake.line_calls, ==, 0);
    fixture_teardown(&f);
}

static void test_echo_eventfds(void)
{
    run_echo(true, true);
}

/* Kicks while the VM is stopped wait; the thread is gone meanwhile. */
static void test_vm_stop(void)
{
    Fixture f;

    fixture_setup(&f, true, false);
    driver_init(&f, true);
    vtest_vm_set_running(false);
    g_assert_false(f.dev.vdev.thread_running);
    g_assert_cmpuint(f.dev.stops, ==, 1);
    driver_send(&f, 0, "while stopped");
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
    g_usleep(20000);
    g_assert_cmpuint(vtest_used_idx(&f.q), ==, 0);
    vtest_vm_set_running(true);
    g_assert_cmpuint(f.dev.starts, ==, 2);
    g_assert_true(vtest_wait_used(&f.q, 1));
    /* A chain offered, never kicked, before a stop is seen at the next start. */
    vtest_vm_set_running(false);
    driver_send(&f, 1, "never kicked");
    vtest_vm_set_running(true);
    g_assert_true(vtest_wait_used(&f.q, 2));
    fixture_teardown(&f);
}

/* ---- Hostile drivers ---- */

static void test_ring_outside_ram(void)
{
    Fixture f;

    fixture_setup(&f, true, false);
    vtest_negotiate(BASE, (1ULL << VIRTIO_F_VERSION_1));
    driver_queue_setup(&f, QSIZE, 0x100000000000ULL, AVAIL_GPA, USED_GPA);
    g_assert_cmpuint(rd(VIRTIO_MMIO_QUEUE_READY), ==, 0);
    g_assert_cmpint(vtest_fake.ioeventfd_fd[0], ==, -1);
    assert_needs_reset(&f);
    /* The driver cannot clear NEEDS_RESET by writing status... */
    wr(VIRTIO_MMIO_STATUS, STATUS_FEATURES_DONE | VIRTIO_CONFIG_S_DRIVER_OK);
    assert_needs_reset(&f);
    g_assert_false(f.dev.vdev.thread_running);
    /* ... only by a reset, after which the queue works again. */
    wr(VIRTIO_MMIO_STATUS, 0);
    g_assert_cmpuint(rd(VIRTIO_MMIO_STATUS), ==, 0);
    driver_init(&f, false);
    driver_send(&f, 0, "after reset");
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
    g_assert_true(vtest_wait_used(&f.q, 1));
    fixture_teardown(&f);
}

static void test_bad_queue_size(void)
{
    Fixture f;

    fixture_setup(&f, false, false);
    vtest_negotiate(BASE, (1ULL << VIRTIO_F_VERSION_1));
    /* Beyond 16 bits: must not wrap around to a valid 16. */
    driver_queue_setup(&f, 0x10010, DESC_GPA, AVAIL_GPA, USED_GPA);
    g_assert_cmpuint(rd(VIRTIO_MMIO_QUEUE_READY), ==, 0);
    assert_needs_reset(&f);
    fixture_teardown(&f);
}

/*
 * Until the interrupt status has @bit. virtio_error marks the device broken
 * first (its once-only guard), then warns and raises the interrupt: a test
 * that saw "broken" may read the status a warning's write before the raise
 * (make check caught it reading 0).
 */
static bool wait_isr(uint32_t bit)
{
    gint64 end = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;

    while (!(rd(VIRTIO_MMIO_INTERRUPT_STATUS) & bit)) {
        if (g_get_monotonic_time() > end) {
            return false;
        }
        g_usleep(1000);
    }
    return true;
}

/* The device thread finds a loop: broken, config interrupt, one warning. */
static void test_loop_in_thread(void)
{
    Fixture f;

    fixture_setup(&f, false, false);
    driver_init(&f, false);
    vtest_put_desc(&f.q, 0, BUF_GPA, 8, VRING_DESC_F_NEXT, 1);
    vtest_put_desc(&f.q, 1, BUF_GPA, 8, VRING_DESC_F_NEXT, 0);
    vtest_publish(&f.q, 0);
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
    g_assert_true(vtest_wait_uint(&f.dev.notifies, 1));
    g_assert_true(vtest_wait_uint((unsigned int *)&f.dev.vdev.broken, 1));
    assert_needs_reset(&f);
    g_assert_true(wait_isr(VIRTIO_ISR_CONFIG));
    g_assert_cmpuint(f.dev.echoed, ==, 0);
    /* Further kicks do nothing; the queue is stopped. */
    driver_send(&f, 1, "ignored");
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
    g_usleep(20000);
    g_assert_cmpuint(vtest_used_idx(&f.q), ==, 0);
    /* A VM stop/start does not revive it. */
    vtest_vm_set_running(false);
    vtest_vm_set_running(true);
    g_assert_false(f.dev.vdev.thread_running);
    wr(VIRTIO_MMIO_STATUS, 0);
    g_assert_cmpuint(rd(VIRTIO_MMIO_STATUS), ==, 0);
    g_assert_cmpuint(rd(VIRTIO_MMIO_INTERRUPT_STATUS), ==, 0);
    fixture_teardown(&f);
}

static void test_driver_ok_without_features_ok(void)
{
    Fixture f;

    fixture_setup(&f, false, false);
    wr(VIRTIO_MMIO_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER);
    wr(VIRTIO_MMIO_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
                           VIRTIO_CONFIG_S_DRIVER_OK);
    assert_needs_reset(&f);
    g_assert_cmpuint(rd(VIRTIO_MMIO_STATUS) & VIRTIO_CONFIG_S_DRIVER_OK, ==, 0);
    g_assert_false(f.dev.vdev.thread_running);
    fixture_teardown(&f);
    /* Refused features, then DRIVER_OK anyway. */
    fixture_setup(&f, false, false);
    vtest_negotiate(BASE, 1ULL << DEV_FEATURE_BIT);
    wr(VIRTIO_MMIO_STATUS, STATUS_FEATURES_DONE | VIRTIO_CONFIG_S_DRIVER_OK);
    assert_needs_reset(&f);
    g_assert_false(f.dev.vdev.thread_running);
    fixture_teardown(&f);
}

/* Queue registers are frozen while the queue is live. */
static void test_live_queue_registers(void)
{
    Fixture f;

    fixture_setup(&f, false, false);
    driver_init(&f, false);
    wr(VIRTIO_MMIO_QUEUE_SEL, 0);
    wr(VIRTIO_MMIO_QUEUE_NUM, 2);
    wr(VIRTIO_MMIO_QUEUE_DESC_LOW, 0xdead0000);
    wr(VIRTIO_MMIO_QUEUE_USED_HIGH, 0xffffffff);
    g_assert_cmphex(rd(VIRTIO_MMIO_QUEUE_DESC_LOW), ==, DESC_GPA);
    g_assert_cmphex(rd(VIRTIO_MMIO_QUEUE_USED_HIGH), ==, 0);
    g_assert_cmpuint(virtio_get_queue(&f.dev.vdev, 0)->num, ==, QSIZE);
    driver_send(&f, 0, "still fine");
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
    g_assert_true(vtest_wait_used(&f.q, 1));
    /* Kicks for queues that do not exist or are not ready are dropped. */
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 1);
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 7);
    wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0xffffffff);
    /* QueueReady = 0 while running stops the queue (the thread is restarted). */
    wr(VIRTIO_MMIO_QUEUE_READY, 0);
    g_assert_cmpuint(rd(VIRTIO_MMIO_QUEUE_READY), ==, 0);
    g_assert_true(f.dev.vdev.thread_running);
    g_assert_false(virtio_device_is_broken(&f.dev.vdev));
    fixture_teardown(&f);
}

/* The warning goes to stderr once per device, however often it breaks. */
static void test_warn_once(void)
{
    if (g_test_subprocess()) {
        Fixture f;

        fixture_setup(&f, false, false);
        for (int i = 0; i < 3; i++) {
            vtest_negotiate(BASE, (1ULL << VIRTIO_F_VERSION_1));
            driver_queue_setup(&f, QSIZE, DESC_GPA, 3 * GiB, USED_GPA);
            assert_needs_reset(&f);
            wr(VIRTIO_MMIO_STATUS, 0);
        }
        fixture_teardown(&f);
        return;
    }
    g_test_trap_subprocess(NULL, 0, 0);
    g_test_trap_assert_passed();
    g_test_trap_assert_stderr("*warning: virtio-echo-device at 0xfeb00000: queue 0: driver "
                              "ring 0xc0000000+0x26 is outside guest RAM; device marked "
                              "broken until the driver resets it\n");
    g_test_trap_assert_stderr_unmatched("*warning*warning*");
}

int main(int argc, char **argv)
{
    int ret;

    g_test_init(&argc, &argv, NULL);
    vtest_init();
    g_test_add_func("/virtio-mmio/identity", test_identity);
    g_test_add_func("/virtio-mmio/features", test_features);
    g_test_add_func("/virtio-mmio/config-space", test_config_space);
    g_test_add_func("/virtio-mmio/echo/exits", test_echo_exits);
    g_test_add_func("/virtio-mmio/echo/eventfds", test_echo_eventfds);
    g_test_add_func("/virtio-mmio/echo/line", test_echo_line);
    g_test_add_func("/virtio-mmio/vm-stop", test_vm_stop);
    g_test_add_func("/virtio-mmio/hostile/ring-outside-ram", test_ring_outside_ram);
    g_test_add_func("/virtio-mmio/hostile/bad-queue-size", test_bad_queue_size);
    g_test_add_func("/virtio-mmio/hostile/loop-in-thread", test_loop_in_thread);
    g_test_add_func("/virtio-mmio/hostile/driver-ok-without-features-ok",
                    test_driver_ok_without_features_ok);
    g_test_add_func("/virtio-mmio/hostile/live-queue-registers", test_live_queue_registers);
    g_test_add_func("/virtio-mmio/hostile/warn-once", test_warn_once);
    ret = g_test_run();
    vtest_cleanup();
    return ret;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * util/userfaultfd.c's missing-page half against the real kernel (what a
 * postcopy destination needs): a thread touching a page never populated
 * blocks until the page is placed, sees it whole, and a page placed twice
 * is refused. The write-protect half is exercised by the snapshot tests.
 */
#include "qemu/osdep.h"
#include "qemu/thread.h"
#include "qemu/userfaultfd.h"
#include <poll.h>
#include <sys/mman.h>

#define NPAGES 8

typedef struct Toucher {
    int tid;                    /* the toucher's kernel thread id, once it runs */
    volatile uint64_t *addr;
    uint64_t seen;
} Toucher;

static gpointer touch_thread(gpointer opaque)
{
    Toucher *t = opaque;

    __atomic_store_n(&t->tid, qemu_get_thread_id(), __ATOMIC_RELEASE);
    t->seen = *t->addr;         /* blocks until the page is placed */
    return NULL;
}

static int uffd_or_skip(void)
{
    int fd = uffd_create(0);

    if (fd < 0) {
        g_test_skip("userfaultfd is not usable here");
    }
    return fd;
}

/* Waits for one missing fault and returns its page address (and its thread in @tid). */
static uint64_t wait_fault_tid(int fd, uint32_t *tid)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    uint64_t addr = 0;

    for (int tries = 0; tries < 100; tries++) {
        g_assert_cmpint(poll(&p, 1, 100), >=, 0);
        if (uffd_read_missing_faults(fd, &addr, tid, 1) == 1) {
            return addr & TARGET_PAGE_MASK;
        }
    }
    g_assert_not_reached();
}

static uint64_t wait_fault(int fd)
{
    return wait_fault_tid(fd, NULL);
}

/* With UFFD_FEATURE_THREAD_ID a fault names its thread (postcopy-blocktime's vCPU). */
static void test_thread_id(void)
{
    int fd = uffd_create(UFFD_FEATURE_THREAD_ID);
    uint8_t *area;
    uint32_t tid = 0;
    Toucher t;
    GThread *th;

    if (fd < 0) {
        g_test_skip("userfaultfd with UFFD_FEATURE_THREAD_ID is not usable here");
        return;
    }
    area = mmap(NULL, TARGET_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                -1, 0);
    g_assert_true(area != MAP_FAILED);
    g_assert_cmpint(uffd_register_missing(fd, area, TARGET_PAGE_SIZE), ==, 0);
    t = (Toucher) { .addr = (uint64_t *)area };
    th = g_thread_new("touch", touch_thread, &t);
    g_assert_cmphex(wait_fault_tid(fd, &tid), ==, (uintptr_t)area);
    g_assert_cmpint(tid, ==, __atomic_load_n(&t.tid, __ATOMIC_ACQUIRE));
    g_assert_cmpint(uffd_zeropage(fd, area, TARGET_PAGE_SIZE, false), ==, 0);
    g_thread_join(th);
    munmap(area, TARGET_PAGE_SIZE);
    close(fd);
}

static void test_copy_and_zero(void)
{
    int fd = uffd_or_skip();
    uint8_t *area, *src;
    Toucher t1, t2;
    GThread *th;

    if (fd < 0) {
        return;
    }
    area = mmap(NULL, NPAGES * TARGET_PAGE_SIZE, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    g_assert_true(area != MAP_FAILED);
    g_assert_cmpint(uffd_register_missing(fd, area, NPAGES * TARGET_PAGE_SIZE), ==, 0);

    /* A page placed by copy: the toucher sees the source's bytes. */
    src = g_malloc(TARGET_PAGE_SIZE);
    memset(src, 0x5a, TARGET_PAGE_SIZE);
    t1 = (Toucher) { .addr = (uint64_t *)(area + 3 * TARGET_PAGE_SIZE + 64) };
    th = g_thread_new("touch", touch_thread, &t1);
    g_assert_cmphex(wait_fault(fd), ==, (uintptr_t)(area + 3 * TARGET_PAGE_SIZE));
    g_assert_cmpint(uffd_copy(fd, area + 3 * TARGET_PAGE_SIZE, src, TARGET_PAGE_SIZE, false),
                    ==, 0);
    g_thread_join(th);
    g_assert_cmphex(t1.seen, ==, 0x5a5a5a5a5a5a5a5aULL);

    /* A zero page, placed without waking, then woken. */
    t2 = (Toucher) { .addr = (uint64_t *)(area + 5 * TARGET_PAGE_SIZE) };
    th = g_thread_new("touch", touch_thread, &t2);
    g_assert_cmphex(wait_fault(fd), ==, (uintptr_t)(area + 5 * TARGET_PAGE_SIZE));
    g_assert_cmpint(uffd_zeropage(fd, area + 5 * TARGET_PAGE_SIZE, TARGET_PAGE_SIZE, true),
                    ==, 0);
    g_assert_cmpint(uffd_wake(fd, area + 5 * TARGET_PAGE_SIZE, TARGET_PAGE_SIZE), ==, 0);
    g_thread_join(th);
    g_assert_cmphex(t2.seen, ==, 0);

    /* Placed already: refused, the page untouched. */
    memset(src, 0x11, TARGET_PAGE_SIZE);
    g_assert_cmpint(uffd_copy(fd, area + 3 * TARGET_PAGE_SIZE, src, TARGET_PAGE_SIZE, false),
                    ==, -EEXIST);
    g_assert_cmpint(area[3 * TARGET_PAGE_SIZE], ==, 0x5a);
    g_assert_cmpint(uffd_zeropage(fd, area + 5 * TARGET_PAGE_SIZE, TARGET_PAGE_SIZE, false),
                    ==, -EEXIST);

    /* Several pages in one call, not page aligned: refused. */
    g_assert_cmpint(uffd_copy(fd, area + 1, src, TARGET_PAGE_SIZE, false), ==, -EINVAL);
    g_free(src);
    src = g_malloc0(2 * TARGET_PAGE_SIZE);
    src[0] = 1;
    src[TARGET_PAGE_SIZE] = 2;
    g_assert_cmpint(uffd_copy(fd, area + 6 * TARGET_PAGE_SIZE, src, 2 * TARGET_PAGE_SIZE, false),
                    ==, 0);
    g_assert_cmpint(area[6 * TARGET_PAGE_SIZE] + area[7 * TARGET_PAGE_SIZE], ==, 3);

    /* Unregistered: an access no longer waits. */
    g_assert_cmpint(uffd_unregister(fd, area, NPAGES * TARGET_PAGE_SIZE), ==, 0);
    g_assert_cmpint(area[0], ==, 0);
    g_free(src);
    munmap(area, NPAGES * TARGET_PAGE_SIZE);
    close(fd);
}

/* A run placed in one go, pages already there skipped and left alone, zero runs too. */
static void test_place_pages(void)
{
    int fd = uffd_or_skip();
    uint8_t *area, *src;

    if (fd < 0) {
        return;
    }
    area = mmap(NULL, NPAGES * TARGET_PAGE_SIZE, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    g_assert_true(area != MAP_FAILED);
    g_assert_cmpint(uffd_register_missing(fd, area, NPAGES * TARGET_PAGE_SIZE), ==, 0);
    src = g_malloc(NPAGES * TARGET_PAGE_SIZE);
    memset(src, 0x77, NPAGES * TARGET_PAGE_SIZE);
    /* Pages 2 and 5 are there first, with other bytes. */
    memset(src, 0x22, TARGET_PAGE_SIZE);
    g_assert_cmpint(uffd_copy(fd, area + 2 * TARGET_PAGE_SIZE, src, TARGET_PAGE_SIZE, false), ==,
                    0);
    g_assert_cmpint(uffd_copy(fd, area + 5 * TARGET_PAGE_SIZE, src, TARGET_PAGE_SIZE, false), ==,
                    0);
    memset(src, 0x77, TARGET_PAGE_SIZE);
    /* 0..6 placed whole: two skipped. */
    g_assert_cmpint(uffd_place_pages(fd, area, src, 7, TARGET_PAGE_SIZE), ==, 5);
    for (int i = 0; i < 7; i++) {
        uint8_t want = i == 2 || i == 5 ? 0x22 : 0x77;

        g_assert_cmpint(area[i * TARGET_PAGE_SIZE], ==, want);
        g_assert_cmpint(area[i * TARGET_PAGE_SIZE + TARGET_PAGE_SIZE - 1], ==, want);
    }
    /* Everything there: nothing placed, no error. */
    g_assert_cmpint(uffd_place_pages(fd, area, src, 7, TARGET_PAGE_SIZE), ==, 0);
    /* A zero run over one page there and one missing. */
    g_assert_cmpint(uffd_place_pages(fd, area + 6 * TARGET_PAGE_SIZE, NULL, 2, TARGET_PAGE_SIZE),
                    ==, 1);
    g_assert_cmpint(area[7 * TARGET_PAGE_SIZE], ==, 0);
    g_assert_cmpint(area[6 * TARGET_PAGE_SIZE], ==, 0x77);
    g_free(src);
    munmap(area, NPAGES * TARGET_PAGE_SIZE);
    close(fd);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/userfaultfd/missing/copy-and-zero", test_copy_and_zero);
    g_test_add_func("/userfaultfd/missing/thread-id", test_thread_id);
    g_test_add_func("/userfaultfd/missing/place-pages", test_place_pages);
    return g_test_run();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qemu_pagemap_data_pages() against the real kernel: written pages may hold
 * data, untouched, read-only-touched (the zero page) and discarded ones
 * read as zero; a page written again after the scan is not the scan's
 * business (migration's dirty log is), but a fresh scan sees it.
 */
#include "qemu/osdep.h"
#include "qemu/bitmap.h"
#include "qemu/pagemap.h"
#include <sys/mman.h>

#define NPAGES 64

static uint8_t *map_pages(void)
{
    uint8_t *p = mmap(NULL, NPAGES * TARGET_PAGE_SIZE, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    g_assert_true(p != MAP_FAILED);
    /* Small pages only, so each page's state is its own. */
    madvise(p, NPAGES * TARGET_PAGE_SIZE, MADV_NOHUGEPAGE);
    return p;
}

static void test_categories(void)
{
    uint8_t *p = map_pages();
    unsigned long bmap[BITS_TO_LONGS(NPAGES)];
    volatile uint8_t sink;

    p[3 * TARGET_PAGE_SIZE] = 1;
    memset(p + 10 * TARGET_PAGE_SIZE, 0x5a, 3 * TARGET_PAGE_SIZE);
    p[40 * TARGET_PAGE_SIZE + 100] = 0;         /* written, but with zeroes */
    sink = p[20 * TARGET_PAGE_SIZE];            /* read only: the zero page */
    (void)sink;
    madvise(p + 11 * TARGET_PAGE_SIZE, TARGET_PAGE_SIZE, MADV_DONTNEED);

    if (!qemu_pagemap_data_pages(p, NPAGES, bmap)) {
        g_test_skip("PAGEMAP_SCAN is not available (Linux 6.7+)");
        munmap(p, NPAGES * TARGET_PAGE_SIZE);
        return;
    }
    for (int i = 0; i < NPAGES; i++) {
        /* A written page holds data to the kernel even if it is all zero. */
        bool want = i == 3 || i == 10 || i == 12 || i == 40;
        g_assert_cmpint(test_bit(i, bmap), ==, want);
    }
    p[20 * TARGET_PAGE_SIZE] = 7;               /* the zero page replaced by a real one */
    g_assert_true(qemu_pagemap_data_pages(p, NPAGES, bmap));
    g_assert_true(test_bit(20, bmap));
    munmap(p, NPAGES * TARGET_PAGE_SIZE);
}

/* More regions than one ioctl returns: every other page written. */
static void test_many_regions(void)
{
    size_t n = 4096;
    uint8_t *p = mmap(NULL, n * TARGET_PAGE_SIZE, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned long *bmap = bitmap_new(n);

    g_assert_true(p != MAP_FAILED);
    madvise(p, n * TARGET_PAGE_SIZE, MADV_NOHUGEPAGE);
    for (size_t i = 0; i < n; i += 2) {
        p[i * TARGET_PAGE_SIZE] = 1;
    }
    if (!qemu_pagemap_data_pages(p, n, bmap)) {
        g_test_skip("PAGEMAP_SCAN is not available (Linux 6.7+)");
    } else {
        for (size_t i = 0; i < n; i++) {
            g_assert_cmpint(test_bit(i, bmap), ==, i % 2 == 0);
        }
    }
    g_free(bmap);
    munmap(p, n * TARGET_PAGE_SIZE);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/pagemap/categories", test_categories);
    g_test_add_func("/pagemap/many-regions", test_many_regions);
    return g_test_run();
}

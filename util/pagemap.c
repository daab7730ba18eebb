/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Pages that hold data, from PAGEMAP_SCAN (see include/qemu/pagemap.h). */
#include "qemu/osdep.h"
#include "qemu/bitmap.h"
#include "qemu/pagemap.h"
#include <sys/ioctl.h>

/* The kernel's ABI (linux/fs.h of 6.7+; Debian 12's headers predate it). */
#ifndef PAGEMAP_SCAN
struct page_region {
    uint64_t start;
    uint64_t end;
    uint64_t categories;
};

struct pm_scan_arg {
    uint64_t size;
    uint64_t flags;
    uint64_t start;
    uint64_t end;
    uint64_t walk_end;
    uint64_t vec;
    uint64_t vec_len;
    uint64_t max_pages;
    uint64_t category_inverted;
    uint64_t category_mask;
    uint64_t category_anyof_mask;
    uint64_t return_mask;
};

#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#define PAGE_IS_PRESENT (1 << 3)
#define PAGE_IS_SWAPPED (1 << 4)
#define PAGE_IS_PFNZERO (1 << 5)
#endif

#define SCAN_REGIONS 256

bool qemu_pagemap_data_pages(void *host, size_t npages, unsigned long *bmap)
{
    struct page_region vec[SCAN_REGIONS];
    uint64_t start = (uintptr_t)host, end = start + npages * TARGET_PAGE_SIZE;
    int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);

    bitmap_zero(bmap, npages);
    if (fd < 0) {
        bitmap_fill(bmap, npages);
        return false;
    }
    while (start < end) {
        struct pm_scan_arg arg = {
            .size = sizeof(arg), .start = start, .end = end,
            .vec = (uintptr_t)vec, .vec_len = SCAN_REGIONS,
            /* Only pages in one of these categories are reported ... */
            .category_anyof_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
            /* ... split where these differ. */
            .return_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED | PAGE_IS_PFNZERO,
        };
        int n = ioctl(fd, PAGEMAP_SCAN, &arg);

        if (n < 0 || arg.walk_end <= start || arg.walk_end > end) {
            /* An older kernel (ENOTTY), or an answer we do not understand. */
            bitmap_fill(bmap, npages);
            close(fd);
            return false;
        }
        for (int i = 0; i < n; i++) {
            uint64_t lo = MAX(vec[i].start, (uintptr_t)host);
            uint64_t hi = MIN(vec[i].end, end);

            /* Present on the shared zero page and not swapped: reads as zero. */
            if (lo < hi && ((vec[i].categories & PAGE_IS_SWAPPED) ||
                            !(vec[i].categories & PAGE_IS_PFNZERO))) {
                bitmap_set(bmap, (lo - (uintptr_t)host) / TARGET_PAGE_SIZE,
                           (hi - lo) / TARGET_PAGE_SIZE);
            }
        }
        start = arg.walk_end;
    }
    close(fd);
    return true;
}

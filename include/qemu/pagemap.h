/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Which pages of a private anonymous mapping hold data, from the kernel's
 * page tables (PAGEMAP_SCAN on /proc/self/pagemap, Linux 6.7+). A page
 * that was never populated, or that maps the shared zero page, reads as
 * zero without being touched: migration sends it as a zero page without
 * faulting it in.
 */
#ifndef QEMU_PAGEMAP_H
#define QEMU_PAGEMAP_H

#include <stdbool.h>
#include <stddef.h>

/*
 * qemu_pagemap_data_pages: for the @npages pages at @host (page aligned),
 * sets bit i of @bmap when page i may hold data (present with a real
 * frame, or swapped out) and clears it when the page reads as zero. Only
 * true for private anonymous memory: a shared or file page can hold data
 * this mapping never mapped. False (and every bit set: "may hold data")
 * when the kernel cannot tell.
 */
bool qemu_pagemap_data_pages(void *host, size_t npages, unsigned long *bmap);

#endif

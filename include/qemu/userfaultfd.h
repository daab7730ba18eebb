/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Thin userfaultfd wrapper: write-protect tracking (the background
 * snapshot) and missing-page faults with atomic placement (the postcopy
 * destination). Every function returns 0 (or a count) on success and
 * -errno on failure.
 */
#ifndef QEMU_USERFAULTFD_H
#define QEMU_USERFAULTFD_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/userfaultfd.h>

#ifndef UFFD_FEATURE_WP_UNPOPULATED
/* Linux 6.4: write-protect also marks never-populated PTEs. */
#define UFFD_FEATURE_WP_UNPOPULATED (1ULL << 13)
#endif

/* Features this kernel's userfaultfd offers (0 if userfaultfd is unusable). */
uint64_t uffd_query_features(void);
/* A non-blocking userfaultfd with @features enabled: fd or -errno. */
int uffd_create(uint64_t features);
/* Register [start, start+len) in write-protect mode; checks WRITEPROTECT is allowed. */
int uffd_register_wp(int fd, void *start, uint64_t len);
int uffd_unregister(int fd, void *start, uint64_t len);
/* Protect (@wp) or unprotect and wake waiters (!@wp) a range. */
int uffd_change_protection(int fd, void *start, uint64_t len, bool wp);


/*
 * Register [start, start+len) in missing mode: the first access to a page
 * never populated blocks its thread until UFFDIO_COPY or UFFDIO_ZEROPAGE
 * places it. Checks that both are allowed on the range.
 */
int uffd_register_missing(int fd, void *start, uint64_t len);
/*
 * Places @len bytes (whole pages) from @src at @dst in one step: no thread
 * ever sees the page partly written. Wakes the threads waiting on it
 * unless @dontwake. -EEXIST if a page of the range is already there.
 */
int uffd_copy(int fd, void *dst, const void *src, uint64_t len, bool dontwake);
/* The same with zero pages. */
int uffd_zeropage(int fd, void *dst, uint64_t len, bool dontwake);
/*
 * Places @npages pages of @page_size at @dst from @src (zero pages if
 * @src is NULL), waking their waiters, in as few calls as the kernel
 * allows; pages already there are left as they are. Returns how many it
 * placed, or -errno.
 */
int uffd_place_pages(int fd, void *dst, const void *src, uint64_t npages, uint64_t page_size);
/* Wakes the threads waiting on [start, start+len) (after a @dontwake placement). */
int uffd_wake(int fd, void *start, uint64_t len);
/*
 * Reads up to @max pending missing-page fault addresses into @addrs
 * without blocking; @tids (may be NULL) gets each faulting thread's id
 * when the fd has UFFD_FEATURE_THREAD_ID. Returns how many (0 if none),
 * or -errno. The fault threads read with migration/uffd-server.c.
 */
int uffd_read_missing_faults(int fd, uint64_t *addrs, uint32_t *tids, int max);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Helpers for iovec arrays that a writev/readv loop consumes piece by piece. */
#ifndef QEMU_IOV_H
#define QEMU_IOV_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/*
 * iov_advance: @n bytes of the @*cnt entries at @*iov were transferred:
 * drop the entries done whole, trim the one done in part.
 */
static inline void iov_advance(struct iovec **iov, int *cnt, size_t n)
{
    while (*cnt > 0 && n >= (*iov)->iov_len) {
        n -= (*iov)->iov_len;
        (*iov)++;
        (*cnt)--;
    }
    if (*cnt > 0) {
        (*iov)->iov_base = (uint8_t *)(*iov)->iov_base + n;
        (*iov)->iov_len -= n;
    }
}

/* The bytes the @cnt entries at @iov hold. */
static inline size_t iov_size(const struct iovec *iov, int cnt)
{
    size_t n = 0;

    for (int i = 0; i < cnt; i++) {
        n += iov[i].iov_len;
    }
    return n;
}

#endif

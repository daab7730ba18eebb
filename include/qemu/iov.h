/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Helpers for iovec arrays that a writev/readv loop consumes piece by piece. */
#ifndef QEMU_IOV_H
#define QEMU_IOV_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
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

/*
 * Copy @len bytes between @buf and the iovec's bytes from @skip on (@to_iov:
 * into the iovec); the iovec holds them (the caller sized it).
 */
static inline void iov_copy_buf(const struct iovec *iov, int cnt, size_t skip, void *buf,
                                size_t len, int to_iov)
{
    uint8_t *p = buf;

    for (int i = 0; i < cnt && len; i++) {
        size_t take;

        if (skip >= iov[i].iov_len) {
            skip -= iov[i].iov_len;
            continue;
        }
        take = iov[i].iov_len - skip < len ? iov[i].iov_len - skip : len;
        if (to_iov) {
            memcpy((uint8_t *)iov[i].iov_base + skip, p, take);
        } else {
            memcpy(p, (uint8_t *)iov[i].iov_base + skip, take);
        }
        p += take;
        len -= take;
        skip = 0;
    }
}

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* userfaultfd helpers: write-protect (background snapshot), missing pages (postcopy). */
#include "qemu/osdep.h"
#include "qemu/userfaultfd.h"
#include <sys/syscall.h>

static int uffd_open_raw(void)
{
    int fd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

    return fd < 0 ? -errno : fd;
}

uint64_t uffd_query_features(void)
{
    struct uffdio_api api = { .api = UFFD_API, .features = 0 };
    int fd = uffd_open_raw();
    uint64_t features = 0;

    if (fd < 0) {
        return 0;
    }
    /* With features = 0 the kernel answers with everything it supports. */
    if (ioctl(fd, UFFDIO_API, &api) == 0) {
        features = api.features;
    }
    close(fd);
    return features;
}

int uffd_create(uint64_t features)
{
    struct uffdio_api api = { .api = UFFD_API, .features = features };
    int fd = uffd_open_raw();

    if (fd < 0) {
        return fd;
    }
    if (ioctl(fd, UFFDIO_API, &api) < 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    if ((api.features & features) != features) {
        close(fd);
        return -ENOTSUP;
    }
    return fd;
}

int uffd_register_wp(int fd, void *start, uint64_t len)
{
    struct uffdio_register reg = {
        .range = { .start = (uintptr_t)start, .len = len },
        .mode = UFFDIO_REGISTER_MODE_WP,
    };

    if (ioctl(fd, UFFDIO_REGISTER, &reg) < 0) {
        return -errno;
    }
    if (!(reg.ioctls & (1ULL << _UFFDIO_WRITEPROTECT))) {
        uffd_unregister(fd, start, len);
        return -ENOTSUP;
    }
    return 0;
}

int uffd_unregister(int fd, void *start, uint64_t len)
{
    struct uffdio_range r = { .start = (uintptr_t)start, .len = len };

    return ioctl(fd, UFFDIO_UNREGISTER, &r) < 0 ? -errno : 0;
}

int uffd_change_protection(int fd, void *start, uint64_t len, bool wp)
{
    struct uffdio_writeprotect w = {
        .range = { .start = (uintptr_t)start, .len = len },
        .mode = wp ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
    };

    for (;;) {
        if (ioctl(fd, UFFDIO_WRITEPROTECT, &w) == 0) {
            return 0;
        }
        /* The kernel may report -EAGAIN while the mm is changing; retry. */
        if (errno != EAGAIN && errno != EINTR) {
            return -errno;
        }
    }
}

int uffd_read_missing_faults(int fd, uint64_t *addrs, uint32_t *tids, int max)
{
    struct uffd_msg msgs[64];
    int n = 0;

    max = MIN(max, (int)ARRAY_SIZE(msgs));
    for (;;) {
        ssize_t r = read(fd, msgs, max * sizeof(msgs[0]));

        if (r < 0) {
            if (errno == EINTR) {
                continue;
            }
            return errno == EAGAIN ? 0 : -errno;
        }
        for (size_t i = 0; i < r / sizeof(msgs[0]); i++) {
            if (msgs[i].event == UFFD_EVENT_PAGEFAULT &&
                !(msgs[i].arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP)) {
                if (tids) {
                    tids[n] = msgs[i].arg.pagefault.feat.ptid;
                }
                addrs[n++] = msgs[i].arg.pagefault.address;
            }
        }
        return n;
    }
}

int uffd_register_missing(int fd, void *start, uint64_t len)
{
    struct uffdio_register reg = {
        .range = { .start = (uintptr_t)start, .len = len },
        .mode = UFFDIO_REGISTER_MODE_MISSING,
    };
    uint64_t need = (1ULL << _UFFDIO_COPY) | (1ULL << _UFFDIO_ZEROPAGE) | (1ULL << _UFFDIO_WAKE);

    if (ioctl(fd, UFFDIO_REGISTER, &reg) < 0) {
        return -errno;
    }
    if ((reg.ioctls & need) != need) {
        uffd_unregister(fd, start, len);
        return -ENOTSUP;
    }
    return 0;
}

/*
 * The placement ioctls may place part of a range and fail with -EAGAIN
 * (the mm changed meanwhile), saying in their result field how much was
 * placed: go on after it.
 */
int uffd_copy(int fd, void *dst, const void *src, uint64_t len, bool dontwake)
{
    struct uffdio_copy c = {
        .dst = (uintptr_t)dst, .src = (uintptr_t)src, .len = len,
        .mode = dontwake ? UFFDIO_COPY_MODE_DONTWAKE : 0,
    };

    for (;;) {
        c.copy = 0;
        if (ioctl(fd, UFFDIO_COPY, &c) == 0) {
            return 0;
        }
        if (errno != EAGAIN && errno != EINTR) {
            return -errno;
        }
        if (c.copy > 0) {
            c.src += c.copy;
            c.dst += c.copy;
            c.len -= c.copy;
        }
    }
}

int uffd_zeropage(int fd, void *dst, uint64_t len, bool dontwake)
{
    struct uffdio_zeropage z = {
        .range = { .start = (uintptr_t)dst, .len = len },
        .mode = dontwake ? UFFDIO_ZEROPAGE_MODE_DONTWAKE : 0,
    };

    for (;;) {
        z.zeropage = 0;
        if (ioctl(fd, UFFDIO_ZEROPAGE, &z) == 0) {
            return 0;
        }
        if (errno != EAGAIN && errno != EINTR) {
            return -errno;
        }
        if (z.zeropage > 0) {
            z.range.start += z.zeropage;
            z.range.len -= z.zeropage;
        }
    }
}

int uffd_wake(int fd, void *start, uint64_t len)
{
    struct uffdio_range r = { .start = (uintptr_t)start, .len = len };

    return ioctl(fd, UFFDIO_WAKE, &r) < 0 ? -errno : 0;
}

int uffd_place_pages(int fd, void *dst, const void *src, uint64_t npages, uint64_t page_size)
{
    uint64_t done = 0;          /* pages placed here or found already there */
    int placed = 0;

    while (done < npages) {
        uintptr_t d = (uintptr_t)dst + done * page_size;
        uint64_t len = (npages - done) * page_size;
        int64_t got;            /* bytes this call placed, or -errno */
        int err = 0;

        if (src) {
            struct uffdio_copy c = { .dst = d, .src = (uintptr_t)src + done * page_size,
                                     .len = len };

            if (ioctl(fd, UFFDIO_COPY, &c) < 0) {
                err = errno;
            }
            got = c.copy;
        } else {
            struct uffdio_zeropage z = { .range = { .start = d, .len = len } };

            if (ioctl(fd, UFFDIO_ZEROPAGE, &z) < 0) {
                err = errno;
            }
            got = z.zeropage;
        }
        if (!err) {
            return placed + (npages - done);
        }
        if (got > 0) {
            /* Part of the range (the kernel says -EAGAIN then): go on after it. */
            done += got / page_size;
            placed += got / page_size;
        } else if (err == EEXIST) {
            /* Nothing placed: the range's first page is there already. */
            done++;
        } else if (err != EAGAIN && err != EINTR) {
            return -err;
        }
    }
    return placed;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Host probes for the userfaultfd users (uffd-probe.h): asked by the
 * postcopy rows of both sides, so it lives below both.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/userfaultfd.h"
#include "system/memory.h"
#include "uffd-probe.h"

/* The kernel must let us register this memory in missing mode (anonymous or shmem). */
bool postcopy_ram_supported(Error **errp)
{
    int fd = uffd_create(0);
    GPtrArray *rbs = ram_blocks();

    if (fd < 0) {
        error_setg_errno(errp, -fd, "Postcopy is not supported: userfaultfd");
        return false;
    }
    for (guint i = 0; i < rbs->len; i++) {
        RAMBlock *rb = g_ptr_array_index(rbs, i);
        int ret = uffd_register_missing(fd, rb->host, rb->used_length);

        if (ret < 0) {
            close(fd);
            error_setg_errno(errp, -ret, "Postcopy is not supported for RAM block %s "
                             "(its backend must be anonymous memory or memfd/tmpfs)",
                             rb->idstr);
            return false;
        }
        uffd_unregister(fd, rb->host, rb->used_length);
    }
    close(fd);
    return true;
}

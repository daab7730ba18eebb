/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to migration/: whether this host's userfaultfd can serve guest RAM. */
#ifndef MIGRATION_CORE_UFFD_PROBE_H
#define MIGRATION_CORE_UFFD_PROBE_H

#include <stdbool.h>
#include "qemu/typedefs.h"

/*
 * The kernel takes missing-page faults on all of guest RAM (anonymous or
 * memfd/tmpfs memory): asked on both sides, as QEMU does, by
 * migrate-set-capabilities on the source and at ADVISE on the destination
 * (the host probe of the postcopy rows, beside the fault servers they run).
 */
bool postcopy_ram_supported(Error **errp);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to migration/: reading the stream envelope (loadvm.c), hostile input. */
#ifndef MIGRATION_LOADVM_H
#define MIGRATION_LOADVM_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"

/* Loads a whole stream; true only at EOF with every device section seen. */
bool qemu_loadvm_state(QEMUFile *f, Error **errp);
/*
 * After qemu_loadvm_state() returned: get_clock_ns() of the stream's first
 * SECTION_END and of the first SECTION_FULL after it (0 where none came).
 */
void qemu_loadvm_switchover_times(int64_t *end_ns, int64_t *devices_ns);
/*
 * After a successful qemu_loadvm_state: why the trailing vmdesc did not
 * arrive whole (the load stood without it, with a warning), or NULL.
 */
const char *qemu_loadvm_vmdesc_damage(void);

#endif

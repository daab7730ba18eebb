/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: what the rest of migration/ (the HMP commands)
 * asks of the outgoing side. The state itself and the modes are in
 * outgoing.h, for migration.c and the mode rows only.
 */
#ifndef MIGRATION_MIGRATION_H
#define MIGRATION_MIGRATION_H

#include <stdbool.h>

/* An outgoing migration owns the VM: from migrate until its cleanup ran. BQL. */
bool migration_is_running(void);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to migration/: the incoming side, as query-migrate sees it. */
#ifndef MIGRATION_INCOMING_H
#define MIGRATION_INCOMING_H

#include "qapi/qapi-types.h"

/* query-migrate on a destination: fills @info (status, time) and returns it. BQL. */
MigrationInfo *migration_incoming_info(MigrationInfo *info);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to migration/: writing the stream envelope (incoming/loadvm.h reads it). */
#ifndef MIGRATION_SAVEVM_H
#define MIGRATION_SAVEVM_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"

/* The stream's first word ("QEVM"); the incoming side tells streams from multifd channels by it. */
#define QEMU_VM_FILE_MAGIC          0x5145564d

/* The machine type the configuration section carries and the loader expects. Init. */
void savevm_set_machine_type(const char *name);
void qemu_savevm_state_header(QEMUFile *f);
/* START sections of the live handlers. BQL held. 0 or -errno. */
int qemu_savevm_state_setup(QEMUFile *f, Error **errp);
/* One PART per live handler. 1 = all done for now, 0 = more, <0 error. */
int qemu_savevm_state_iterate(QEMUFile *f);
/* END sections (VM stopped). 0 or -errno. */
int qemu_savevm_state_complete_live(QEMUFile *f);
/*
 * FULL device sections, EOF and the vmdesc. VM stopped, BQL held. On
 * failure, *@state_whole (if not NULL) says whether everything up to the
 * EOF went out and only the vmdesc failed.
 */
bool qemu_savevm_state_devices(QEMUFile *f, bool *state_whole, Error **errp);
/* Postcopy's package: the FULL device sections only (no EOF, no vmdesc). BQL held. */
bool qemu_savevm_state_devices_postcopy(QEMUFile *f, Error **errp);
/* Postcopy's end: the END sections and EOF, flushed. 0 or -errno. */
int qemu_savevm_state_complete_postcopy(QEMUFile *f);
uint64_t qemu_savevm_pending(bool exact);
void qemu_savevm_state_cleanup(void);

#endif

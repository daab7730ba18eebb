/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to savevm.c (the registry, writing) and loadvm.c (reading): the envelope's records. */
#ifndef MIGRATION_SAVEVM_INT_H
#define MIGRATION_SAVEVM_INT_H

#include <glib.h>
#include "migration/register.h"
#include "migration/vmstate.h"

#define QEMU_VM_FILE_VERSION_COMPAT 0x00000002
#define QEMU_VM_FILE_VERSION        0x00000003

#define QEMU_VM_EOF                 0x00
#define QEMU_VM_SECTION_START       0x01
#define QEMU_VM_SECTION_PART        0x02
#define QEMU_VM_SECTION_END         0x03
#define QEMU_VM_SECTION_FULL        0x04
#define QEMU_VM_SUBSECTION          0x05
#define QEMU_VM_VMDESCRIPTION       0x06
#define QEMU_VM_CONFIGURATION       0x07
#define QEMU_VM_SECTION_FOOTER      0x7e

/* The configuration's subsection listing capabilities both sides must agree on (QEMU 9.0). */
#define SAVEVM_CAPS_SUBSECTION "configuration/capabilities"
#define SAVEVM_CAP_MAPPED_RAM "mapped-ram"
#define SAVEVM_CAP_IGNORE_SHARED "x-ignore-shared"

/* A vmdesc bigger than this is not ours to read. */
#define VMDESC_MAX_LEN (16 * MiB)

typedef struct SaveStateEntry {
    char idstr[256];
    uint32_t instance_id;
    int version_id;
    uint32_t section_id;                /* ours, in streams we write; a load keeps the stream's apart */
    const SaveVMHandlers *ops;          /* live sections */
    const VMStateDescription *vmsd;     /* device sections */
    void *opaque;
    bool loaded;                        /* incoming: section seen */
} SaveStateEntry;

/* The registered sections (savevm.c): filled during init, read-only afterwards. */
GPtrArray *savevm_entries(void);
/* The configuration section's machine type ("" if none was set). */
const char *savevm_machine_type(void);

#define FOREACH_SE(i, se) \
    for (guint i = 0; savevm_entries() && i < savevm_entries()->len && \
         ((se) = g_ptr_array_index(savevm_entries(), i)); i++)

#endif

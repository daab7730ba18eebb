/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Forward declarations of the project's main types, so headers need not include each other. */
#ifndef QEMU_TYPEDEFS_H
#define QEMU_TYPEDEFS_H

typedef struct Error Error;
typedef struct KVMState KVMState;
typedef struct KVMSlot KVMSlot;
typedef struct RAMBlock RAMBlock;
typedef struct MemoryRegion MemoryRegion;
typedef struct MachineState MachineState;
typedef struct CPUState CPUState;
typedef struct Chardev Chardev;
typedef struct Monitor Monitor;
typedef struct QEMUFile QEMUFile;
typedef struct Channel Channel;
typedef struct MigrationState MigrationState;
typedef struct MigTLS MigTLS;
typedef struct IORangeTable IORangeTable;
typedef struct QemuOpts QemuOpts;

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to system/control/: the Config the command line is parsed into,
 * and its life (vl-config.c). It sits below every file that uses it: the
 * parsers (vl-parse.c, vl-devices.c) fill it, vl.c drives them and builds
 * the machine from it, and vl-config.c calls none of them. So the parsers
 * need nothing of vl.c, and no file of this folder reaches back up to it.
 */
#ifndef SYSTEM_CONTROL_VL_CONFIG_H
#define SYSTEM_CONTROL_VL_CONFIG_H

#include "hw/boards.h"
#include "system/kvm.h"

typedef struct MonitorConfig {
    char *spec;                 /* chardev spec, or NULL with chardev_id */
    char *chardev_id;
    bool qmp;
    bool pretty;
} MonitorConfig;

/*
 * Everything the command line asked for, before anything is created.
 * Main thread only, inside qemu_init(): vl.c, vl-parse.c and vl-devices.c
 * write it while parsing; qemu_init() reads it while creating, then frees
 * it with vl_config_free() (the machine keeps its own copy of @machine).
 */
typedef struct Config {
    MachineState machine;
    /* -machine none: no RAM, no vCPUs, no devices; a monitor to probe the binary with. */
    bool machine_none;
    char *machine_accel;        /* the first of -machine accel=A:B, or NULL */
    KVMAccelOpts accel;
    char *serial_spec;
    bool nographic;
    bool display_none;          /* -display none or -nographic: no refresh timer */
    bool nodefaults;
    bool start_paused;
    bool daemonize;
    bool mem_lock;              /* -overcommit mem-lock=on: mlockall once RAM exists */
    char *pidfile;
    char *incoming;
    char *cpr_incoming;         /* -incoming's cpr channel (JSON), a live update's */
    GPtrArray *chardev_opts;    /* QemuOpts of -chardev */
    GPtrArray *chardev_args;    /* each -chardev as given (its errors name it), same order */
    GPtrArray *object_opts;     /* QemuOpts of -object */
    GPtrArray *monitors;        /* MonitorConfig */
    GPtrArray *netdevs;         /* -netdev and -nic, checked (net_client_parse) */
    GPtrArray *drive_args;      /* char *: -drive, in order, opened after parsing */
    GPtrArray *blockdev_args;   /* char *: -blockdev, in order */
    GPtrArray *nic_devices;     /* VirtIONetConf *: -device virtio-net-device, in order */
    GPtrArray *blk_devices;     /* VirtIOBlkConf *: -device virtio-blk-device, in order */
    /*
     * The -device virtio-*-device kinds in command-line order ('n' net,
     * 'b' blk): microvm gives virtio-mmio slots in this order, as QEMU does.
     */
    GString *virtio_order;
} Config;

/* An empty Config: every list allocated, nothing asked for yet. */
void vl_config_init(Config *cfg);
/* Frees what only init needed; the MachineState copy keeps the machine's strings. */
void vl_config_free(Config *cfg);

#endif

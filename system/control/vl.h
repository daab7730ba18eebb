/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to system/vl*.c: what the command line asked for, before anything is created. */
#ifndef SYSTEM_VL_H
#define SYSTEM_VL_H

#include "hw/boards.h"
#include "system/kvm.h"

typedef struct MonitorConfig {
    char *spec;                 /* chardev spec, or NULL with chardev_id */
    char *chardev_id;
    bool qmp;
    bool pretty;
} MonitorConfig;

/* Everything the command line asked for, before anything is created. */
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
    GPtrArray *chardev_opts;    /* QemuOpts of -chardev */
    GPtrArray *object_opts;     /* QemuOpts of -object */
    GPtrArray *monitors;        /* MonitorConfig */
    GPtrArray *netdevs;         /* -netdev and -nic, checked (net_client_parse) */
    GPtrArray *nic_devices;     /* VirtIONetConf *: -device virtio-net-device, in order */
} Config;

/*
 * vl-parse.c: the options that take parameters, into @cfg (false with
 * @errp set for what is refused).
 */
bool vl_parse_machine(Config *cfg, const char *arg, Error **errp);
bool vl_parse_accel(Config *cfg, const char *arg, Error **errp);
bool vl_parse_cpu(const char *arg, Error **errp);
bool vl_parse_memory_size(Config *cfg, const char *arg, Error **errp);
bool vl_parse_smp(Config *cfg, const char *arg, Error **errp);
bool vl_parse_uuid(Config *cfg, const char *arg, Error **errp);
bool vl_parse_overcommit(Config *cfg, const char *arg, Error **errp);
bool vl_parse_rtc(const char *arg, Error **errp);
bool vl_parse_boot(const char *arg, Error **errp);
bool vl_parse_msg(const char *arg, Error **errp);
bool vl_parse_audiodev(const char *arg, Error **errp);
bool vl_parse_name(const char *arg, Error **errp);
bool vl_parse_display(Config *cfg, const char *arg, Error **errp);
bool vl_parse_global(const char *arg, Error **errp);

/*
 * vl-devices.c: @arg as QemuOpts, from key=value (with @implied_key for a
 * leading bare value) or, if it starts with '{', a JSON object of scalars
 * (libvirt's -object/-device/-audiodev syntax): strings as they are,
 * numbers in decimal, booleans as on/off.
 */
QemuOpts *vl_opts_parse_json_or_keyval(const char *arg, const char *implied_key, Error **errp);
/* vl-devices.c: -device and -object, parsed into @cfg (nothing created yet). */
bool vl_parse_device(Config *cfg, const char *arg, Error **errp);
bool vl_parse_object(Config *cfg, const char *arg, Error **errp);
/* qemu_init(), in its order: one -object memory-backend-*, then the NICs. */
bool vl_create_memory_backend(QemuOpts *opts, Error **errp);
void vl_create_virtio_net_devices(Config *cfg);
void vl_virtio_net_conf_destroy(gpointer p);

#endif

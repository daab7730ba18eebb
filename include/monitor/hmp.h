/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * HMP command handlers. Each is a thin skin over a qmp_* function: parse
 * the human arguments, call QMP, print. The table is monitor/hmp-commands.c.
 */
#ifndef MONITOR_HMP_H
#define MONITOR_HMP_H

#include <stdbool.h>
#include <stdint.h>
#include "qemu/typedefs.h"

#define HMP_MAX_ARGS 8

typedef struct HMPArg {
    const char *name;
    char *str;                  /* 's', 'S', 'F', '/' */
    int64_t i;                  /* 'i', 'o' */
    bool b;                     /* 'b' and flags */
    bool present;
} HMPArg;

typedef struct HMPArgs {
    HMPArg args[HMP_MAX_ARGS];
    int n;
} HMPArgs;

const char *hmp_arg_str(const HMPArgs *a, const char *name);
int64_t hmp_arg_int(const HMPArgs *a, const char *name, int64_t def);
bool hmp_arg_bool(const HMPArgs *a, const char *name, bool def);
bool hmp_arg_has(const HMPArgs *a, const char *name);

/* Prints "Error: ..." and frees @err if set (QEMU's hmp_handle_error). */
void hmp_handle_error(Monitor *mon, Error *err);

typedef void HMPHandler(Monitor *mon, const HMPArgs *args);

/* system/ */
HMPHandler hmp_info_status, hmp_info_version, hmp_info_kvm, hmp_info_name, hmp_info_cpus;
HMPHandler hmp_stop, hmp_cont, hmp_quit, hmp_system_reset, hmp_system_powerdown, hmp_xp,
    hmp_pmemsave;
HMPHandler hmp_object_add, hmp_object_del;
/* migration/ */
HMPHandler hmp_migrate, hmp_migrate_incoming, hmp_migrate_cancel, hmp_migrate_set_capability;
HMPHandler hmp_migrate_continue;
HMPHandler hmp_migrate_start_postcopy, hmp_migrate_recover;
HMPHandler hmp_migrate_set_parameter, hmp_info_migrate, hmp_info_migrate_capabilities;
HMPHandler hmp_info_migrate_parameters;
HMPHandler hmp_calc_dirty_rate, hmp_info_dirty_rate, hmp_set_vcpu_dirty_limit;
HMPHandler hmp_cancel_vcpu_dirty_limit, hmp_info_vcpu_dirty_limit;
/* stats */
HMPHandler hmp_info_stats;
/* block/ */
HMPHandler hmp_info_block;
HMPHandler hmp_info_block_jobs;
/* net/ */
HMPHandler hmp_info_network, hmp_info_usernet, hmp_hostfwd_add, hmp_hostfwd_remove;
/* ui/ */
HMPHandler hmp_screendump;

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The HMP command table: one row per command, handlers live with their subsystem. */
#include "qemu/osdep.h"
#include "hmp-commands.h"

const HMPCommand hmp_info_cmds[] = {
    { "status", "", "", "show the current VM status (running|paused)", hmp_info_status },
    { "version", "", "", "show the version of QEMU", hmp_info_version },
    { "kvm", "", "", "show KVM information", hmp_info_kvm },
    { "name", "", "", "show the current VM name", hmp_info_name },
    { "cpus", "", "", "show infos for each CPU", hmp_info_cpus },
    { "migrate", "", "", "show migration status", hmp_info_migrate },
    { "migrate_capabilities", "", "", "show current migration capabilities",
      hmp_info_migrate_capabilities },
    { "migrate_parameters", "", "", "show current migration parameters",
      hmp_info_migrate_parameters },
    { "dirty_rate", "", "", "show dirty rate information", hmp_info_dirty_rate },
    { "vcpu_dirty_limit", "", "", "show dirty page limit information of all vCPU",
      hmp_info_vcpu_dirty_limit },
    { "stats", "target:s,names:s?", "target [names]",
      "show statistics (target: vm or vcpu; names: comma-separated)", hmp_info_stats },
    { "block", "", "", "show the block devices", hmp_info_block },
    { "network", "", "", "show the network state", hmp_info_network },
    { "usernet", "", "", "show user network stack connection states", hmp_info_usernet },
    { NULL },
};

const HMPCommand hmp_cmds[] = {
    { "help|?", "name:S?", "[cmd]", "show the help", hmp_help_cmd },
    { "info", "", "[subcommand]", "show various information about the system state",
      hmp_info, hmp_info_cmds },
    { "stop", "", "", "stop emulation", hmp_stop },
    { "cont|c", "", "", "resume emulation", hmp_cont },
    { "quit|q", "", "", "quit the emulator", hmp_quit },
    { "system_reset", "", "", "reset the system", hmp_system_reset },
    { "xp", "fmt:/,addr:i", "/fmt addr", "physical memory dump starting at 'addr'", hmp_xp },
    { "pmemsave", "val:i,size:i,filename:s", "addr size file",
      "save to disk physical memory dump starting at 'addr' of size 'size'", hmp_pmemsave },
    { "screendump", "filename:F,device:s?,head:i?", "filename [device [head]]",
      "save screen from head 'head' of display device 'device' into PPM image 'filename'",
      hmp_screendump },
    { "migrate", "detach:-d,blk:-b,inc:-i,resume:-r,uri:s", "[-d] [-b] [-i] [-r] uri",
      "migrate to URI (using -d to not wait for completion)\n\t\t\t -r to resume a paused "
      "postcopy migration", hmp_migrate },
    { "migrate_incoming", "uri:s", "uri",
      "Continue an incoming migration from an -incoming defer", hmp_migrate_incoming },
    { "migrate_cancel", "", "", "cancel the current VM migration", hmp_migrate_cancel },
    { "migrate_recover", "uri:s", "uri",
      "Continue a paused incoming postcopy migration", hmp_migrate_recover },
    { "migrate_start_postcopy", "", "",
      "Followup to a migration command to switch the migration to postcopy mode. The "
      "postcopy-ram capability must be set on both source and destination before the "
      "original migration command.", hmp_migrate_start_postcopy },
    { "migrate_set_capability", "capability:s,state:b", "capability state",
      "Enable/Disable the usage of a capability for migration", hmp_migrate_set_capability },
    { "migrate_set_parameter", "parameter:s,value:S", "parameter value",
      "Set the parameter for migration", hmp_migrate_set_parameter },
    { "calc_dirty_rate", "dirty_ring:-r,dirty_bitmap:-b,second:i,sample_pages_per_GB:i?",
      "[-r] [-b] second [sample_pages_per_GB]",
      "start a round of guest dirty rate measurement (using -r to\n\t\t\t specify dirty "
      "ring as the method of calculation and\n\t\t\t -b to specify dirty bitmap as method "
      "of calculation)", hmp_calc_dirty_rate },
    { "set_vcpu_dirty_limit", "dirty_rate:i,cpu_index:i?", "dirty_rate [cpu_index]",
      "set dirty page rate limit, use cpu_index to set limit on a specified virtual cpu",
      hmp_set_vcpu_dirty_limit },
    { "cancel_vcpu_dirty_limit", "cpu_index:i?", "[cpu_index]",
      "cancel dirty page rate limit, use cpu_index to cancel limit on a specified virtual cpu",
      hmp_cancel_vcpu_dirty_limit },
    { "object_add", "object:S", "[qom-type=]type,id=str[,prop=value][,...]",
      "create QOM object", hmp_object_add },
    { "object_del", "id:s", "id", "destroy QOM object", hmp_object_del },
    { "hostfwd_add", "arg1:s,arg2:s?",
      "[netdev_id] [tcp|udp]:[hostaddr]:hostport-[guestaddr]:guestport",
      "redirect TCP or UDP connections from host to guest (requires -net user)",
      hmp_hostfwd_add },
    { "hostfwd_remove", "arg1:s,arg2:s?", "[netdev_id] [tcp|udp]:[hostaddr]:hostport",
      "remove host-to-guest TCP or UDP redirection", hmp_hostfwd_remove },
    { NULL },
};

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to migration/: capabilities and parameters, QEMU 7.2's names and
 * defaults. Written by monitor commands (BQL held), read by the migration
 * threads; every value is a single aligned word, so readers need no lock.
 * The bottom of migration/: getters and validation, nothing that calls up.
 */
#ifndef MIGRATION_OPTIONS_H
#define MIGRATION_OPTIONS_H

#include "qapi/qapi-types.h"

#define DEFAULT_MIGRATE_MAX_BANDWIDTH (128 * MiB)
#define DEFAULT_MIGRATE_DOWNTIME_LIMIT 300
#define DEFAULT_MIGRATE_CLEAR_BITMAP_SHIFT 12
/*
 * 1 GiB: enough for a guest writing 150 MB/s at random over 2 GiB to keep
 * ~90% of its write rate during a snapshot on this machine (the sweep is in
 * docs/benchmarks.md); 64 MiB kept 39%.
 */
#define DEFAULT_BG_SNAPSHOT_BUFFER_SIZE (1ULL << 30)
#define MIN_CLEAR_BITMAP_SHIFT 6
#define MAX_CLEAR_BITMAP_SHIFT 31

void migration_options_init(void);
bool migrate_cap(MigrationCapability cap);
bool migrate_events(void);
bool migrate_pause_before_switchover(void);
bool migrate_background_snapshot(void);
bool migrate_xbzrle(void);
uint64_t migrate_xbzrle_cache_size(void);
bool migrate_multifd(void);
bool migrate_mapped_ram(void);
/* x-ignore-shared: RAM the two processes share is neither tracked nor sent. */
bool migrate_ignore_shared(void);
/*
 * The stream leaves shared RAM out and names each block's address: the
 * x-ignore-shared capability, or a cpr mode (which implies it).
 */
bool migrate_ram_ignore_shared(void);
/*
 * @rb is one such RAM block: x-ignore-shared and a file another process
 * maps by name (ram_block_shared_by_name), or a cpr mode and any shared
 * memory with a file descriptor (ram_block_fd_shared), which crosses with
 * the cpr state.
 */
bool migrate_ram_is_ignored(const RAMBlock *rb);
/* The mode parameter; cpr: cpr-transfer or cpr-exec. */
MigMode migrate_mode(void);
bool migrate_mode_is_cpr(void);
/* cpr-exec-command (NULL: not set); the caller must not keep it past a migrate-set-parameters. */
const strList *migrate_cpr_exec_command(void);
/*
 * A destination's mode, from the cpr state it received (QEMU's destination
 * takes it from there too: no parameter is set on it before).
 */
void migrate_set_mode(MigMode mode);
/* x-lazy-restore (destination): the guest runs before its RAM was read. */
bool migrate_lazy_restore(void);
/* direct-io: mapped-ram pages written with O_DIRECT. */
bool migrate_direct_io(void);
/* x-mapped-ram-integrity: write the integrity record; refuse a file without one. */
bool migrate_mapped_ram_integrity(void);
bool migrate_postcopy_preempt(void);
int migrate_multifd_channels(void);
MultiFDCompression migrate_multifd_compression(void);
int migrate_multifd_zlib_level(void);
int migrate_multifd_zstd_level(void);
ZeroPageDetection migrate_zero_page_detection(void);
uint64_t migrate_max_bandwidth(void);
/* Bytes per second once the guest runs on the destination; 0 = unlimited. */
uint64_t migrate_max_postcopy_bandwidth(void);
uint64_t migrate_downtime_limit(void);
bool migrate_max_bandwidth_user_set(void);
int migrate_clear_bitmap_shift(void);
/* Bounce buffer for background-snapshot write faults, bytes. */
uint64_t migrate_background_snapshot_buffer_size(void);

/* auto-converge's parameters (QEMU's). */
int migrate_throttle_trigger_threshold(void);
int migrate_cpu_throttle_initial(void);
int migrate_cpu_throttle_increment(void);
bool migrate_cpu_throttle_tailslow(void);
int migrate_max_cpu_throttle(void);
/* dirty-limit: MB/s per vCPU, and the rate period in ms. */
uint64_t migrate_vcpu_dirty_limit(void);
uint64_t migrate_vcpu_dirty_limit_period(void);
/* Bytes per second the switchover may assume; 0 = measured. */
uint64_t migrate_avail_switchover_bandwidth(void);
/* x-switchover-rule: when a precopy stops the guest. */
XSwitchoverRule migrate_switchover_rule(void);
/* x-converge-policy's default: throttle a migration stalled for 5 s. */
#define DEFAULT_CONVERGE_POLICY "auto-converge:5"
/* x-converge-policy's words (NULL: none); BQL. Read when migrate starts. */
const strList *migrate_converge_policy(void);
/* x-completion-timeout: seconds per GiB of guest RAM; 0: no budget. */
uint64_t migrate_completion_timeout(void);

/* tls-creds, tls-hostname, tls-authz ("" when unset); BQL. */
const char *migrate_tls_creds(void);
const char *migrate_tls_hostname(void);
const char *migrate_tls_authz(void);

/* The capabilities now (MIGRATION_CAPABILITY__MAX entries). */
const bool *migrate_caps(void);
/* Combinations QEMU refuses (background-snapshot with postcopy, ...). */
bool migrate_caps_check_compat(const bool *new_caps, Error **errp);
/* Capabilities turned on that this build does not implement. */
bool migrate_caps_check_supported(const bool *old_caps, const bool *new_caps, Error **errp);
/* @return_path_named: the request named return-path (the user's word now stands). */
void migrate_caps_set(const bool *new_caps, bool return_path_named);
/*
 * Whether a precopy migration to @uri opens the return path: as the user
 * set return-path (*@user_set true), or, until they did, for tcp: and unix:
 * (the transports that can carry the destination's answer back).
 * query-migrate-capabilities shows only the user's setting (false until
 * set), as QEMU and libvirt expect.
 */
bool migrate_return_path_for(const char *uri, bool *user_set);
/* QEMU's range checks of migrate-set-parameters. */
bool migrate_params_check(const MigrationParameters *p, Error **errp);
/* Stores the parameters @p has. Checked first; running-migration rules are the caller's. */
void migrate_params_apply(const MigrationParameters *p);

#endif

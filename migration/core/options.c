/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Migration capabilities and parameters: QEMU 7.2's names, defaults and
 * validation rules and messages, the getters every other file reads them
 * through, and their queries. The bottom of migration/: nothing here calls
 * up. Changing them (migrate-set-*) lives in migration.c, which knows
 * whether a migration runs; checks that must probe the kernel are hooks of
 * the outgoing mode that needs them.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands.h"
#include "migration/misc.h"
#include "system/kvm.h"
#include "system/memory.h"
#include "options.h"

/* Written by the main thread (BQL), read by any thread: single words. */
static bool caps[MIGRATION_CAPABILITY__MAX];
/*
 * migrate-set-capabilities named return-path (on or off): the user's word
 * then stands; until then a tcp: or unix: migration opens it anyway.
 */
static bool return_path_user_set;
/* max-bandwidth was set explicitly (a background snapshot then honours it). */
static bool max_bandwidth_user_set;
/* The parameters: the main thread (BQL) writes them, any thread reads single fields. */
static MigrationParameters *params;

void migration_options_init(void)
{
    params = g_new0(MigrationParameters, 1);
    params->has_announce_initial = true;
    params->announce_initial = 50;
    params->has_announce_max = true;
    params->announce_max = 550;
    params->has_announce_rounds = true;
    params->announce_rounds = 5;
    params->has_announce_step = true;
    params->announce_step = 100;
    params->has_compress_level = true;
    params->compress_level = 1;
    params->has_compress_threads = true;
    params->compress_threads = 8;
    params->has_compress_wait_thread = true;
    params->compress_wait_thread = true;
    params->has_decompress_threads = true;
    params->decompress_threads = 2;
    params->has_throttle_trigger_threshold = true;
    params->throttle_trigger_threshold = 50;
    params->has_cpu_throttle_initial = true;
    params->cpu_throttle_initial = 20;
    params->has_cpu_throttle_increment = true;
    params->cpu_throttle_increment = 10;
    params->has_cpu_throttle_tailslow = true;
    params->tls_creds = g_strdup("");
    params->tls_hostname = g_strdup("");
    params->tls_authz = g_strdup("");
    params->has_max_bandwidth = true;
    params->max_bandwidth = DEFAULT_MIGRATE_MAX_BANDWIDTH;
    params->has_downtime_limit = true;
    params->downtime_limit = DEFAULT_MIGRATE_DOWNTIME_LIMIT;
    params->has_x_checkpoint_delay = true;
    params->x_checkpoint_delay = 20000;
    params->has_block_incremental = true;
    params->has_multifd_channels = true;
    params->multifd_channels = 2;
    params->has_xbzrle_cache_size = true;
    params->xbzrle_cache_size = 64 * MiB;
    params->has_max_postcopy_bandwidth = true;
    params->has_max_cpu_throttle = true;
    params->max_cpu_throttle = 99;
    params->has_multifd_zlib_level = true;
    params->multifd_zlib_level = 1;
    params->has_multifd_zstd_level = true;
    params->multifd_zstd_level = 1;
    params->has_multifd_compression = true;
    params->multifd_compression = MULTIFD_COMPRESSION_NONE;
    params->has_zero_page_detection = true;
    params->zero_page_detection = ZERO_PAGE_DETECTION_MULTIFD;
    params->has_x_clear_bitmap_shift = true;
    params->x_clear_bitmap_shift = DEFAULT_MIGRATE_CLEAR_BITMAP_SHIFT;
    params->has_x_background_snapshot_buffer_size = true;
    params->x_background_snapshot_buffer_size = DEFAULT_BG_SNAPSHOT_BUFFER_SIZE;
    params->has_direct_io = true;
    params->has_x_mapped_ram_integrity = true;
    params->has_avail_switchover_bandwidth = true;
    params->has_x_vcpu_dirty_limit_period = true;
    params->x_vcpu_dirty_limit_period = 1000;
    params->has_vcpu_dirty_limit = true;
    params->vcpu_dirty_limit = 1;
    params->has_mode = true;
    params->mode = MIG_MODE_NORMAL;
    params->has_x_switchover_rule = true;
    params->x_switchover_rule = X_SWITCHOVER_RULE_PREDICTED;
    params->has_x_completion_timeout = true;
    /*
     * A migration the guest outruns is throttled once it stalls, rather
     * than left to run for ever as QEMU's would (issue 41): our dirty
     * tracking slows a guest less than QEMU's, so it outruns a link that
     * QEMU's guest does not. ["none"] restores QEMU's behaviour.
     */
    params->x_converge_policy = g_new0(strList, 1);
    params->x_converge_policy->value = g_strdup(DEFAULT_CONVERGE_POLICY);
}

XSwitchoverRule migrate_switchover_rule(void)
{
    return __atomic_load_n(&params->x_switchover_rule, __ATOMIC_RELAXED);
}

/* migrate reads it (BQL), as migrate-set-parameters writes it. */
const strList *migrate_converge_policy(void)
{
    return params->x_converge_policy;
}

uint64_t migrate_completion_timeout(void)
{
    return params->x_completion_timeout;
}

int migrate_throttle_trigger_threshold(void)
{
    return params->throttle_trigger_threshold;
}

int migrate_cpu_throttle_initial(void)
{
    return params->cpu_throttle_initial;
}

int migrate_cpu_throttle_increment(void)
{
    return params->cpu_throttle_increment;
}

bool migrate_cpu_throttle_tailslow(void)
{
    return params->cpu_throttle_tailslow;
}

int migrate_max_cpu_throttle(void)
{
    return params->max_cpu_throttle;
}

uint64_t migrate_vcpu_dirty_limit(void)
{
    return params->vcpu_dirty_limit;
}

uint64_t migrate_vcpu_dirty_limit_period(void)
{
    return params->x_vcpu_dirty_limit_period;
}

uint64_t migrate_avail_switchover_bandwidth(void)
{
    return __atomic_load_n(&params->avail_switchover_bandwidth, __ATOMIC_RELAXED);
}

bool migrate_cap(MigrationCapability cap)
{
    return caps[cap];
}

bool migrate_events(void)
{
    return caps[MIGRATION_CAPABILITY_EVENTS];
}

bool migrate_pause_before_switchover(void)
{
    return caps[MIGRATION_CAPABILITY_PAUSE_BEFORE_SWITCHOVER];
}

bool migrate_background_snapshot(void)
{
    return caps[MIGRATION_CAPABILITY_BACKGROUND_SNAPSHOT];
}

uint64_t migrate_max_postcopy_bandwidth(void)
{
    return __atomic_load_n(&params->max_postcopy_bandwidth, __ATOMIC_RELAXED);
}

uint64_t migrate_max_bandwidth(void)
{
    return __atomic_load_n(&params->max_bandwidth, __ATOMIC_RELAXED);
}

bool migrate_max_bandwidth_user_set(void)
{
    return max_bandwidth_user_set;
}

uint64_t migrate_downtime_limit(void)
{
    return __atomic_load_n(&params->downtime_limit, __ATOMIC_RELAXED);
}

int migrate_clear_bitmap_shift(void)
{
    return params->x_clear_bitmap_shift;
}

bool migrate_xbzrle(void)
{
    return caps[MIGRATION_CAPABILITY_XBZRLE];
}

uint64_t migrate_xbzrle_cache_size(void)
{
    return params->xbzrle_cache_size;
}

bool migrate_postcopy_preempt(void)
{
    return caps[MIGRATION_CAPABILITY_POSTCOPY_PREEMPT];
}

bool migrate_mapped_ram(void)
{
    return caps[MIGRATION_CAPABILITY_MAPPED_RAM];
}

bool migrate_ignore_shared(void)
{
    return caps[MIGRATION_CAPABILITY_X_IGNORE_SHARED];
}

bool migrate_ram_ignore_shared(void)
{
    return migrate_ignore_shared() || migrate_mode_is_cpr();
}

bool migrate_ram_is_ignored(const RAMBlock *rb)
{
    return (migrate_ignore_shared() && ram_block_shared_by_name(rb)) ||
           (migrate_mode_is_cpr() && ram_block_fd_shared(rb));
}

MigMode migrate_mode(void)
{
    return params->mode;
}

bool migrate_mode_is_cpr(void)
{
    return params->mode != MIG_MODE_NORMAL;
}

void migrate_set_mode(MigMode mode)
{
    params->mode = mode;
}

const strList *migrate_cpr_exec_command(void)
{
    return params->cpr_exec_command;
}

bool migrate_lazy_restore(void)
{
    return caps[MIGRATION_CAPABILITY_X_LAZY_RESTORE];
}

bool migrate_direct_io(void)
{
    return params->direct_io;
}

bool migrate_mapped_ram_integrity(void)
{
    return params->x_mapped_ram_integrity;
}

/* BQL: the strings are replaced by migrate-set-parameters, which holds it too. */
const char *migrate_tls_creds(void)
{
    return params->tls_creds;
}

const char *migrate_tls_hostname(void)
{
    return params->tls_hostname;
}

const char *migrate_tls_authz(void)
{
    return params->tls_authz;
}

bool migrate_multifd(void)
{
    return caps[MIGRATION_CAPABILITY_MULTIFD];
}

int migrate_multifd_channels(void)
{
    return params->multifd_channels;
}

MultiFDCompression migrate_multifd_compression(void)
{
    return params->multifd_compression;
}

int migrate_multifd_zlib_level(void)
{
    return params->multifd_zlib_level;
}

int migrate_multifd_zstd_level(void)
{
    return params->multifd_zstd_level;
}

ZeroPageDetection migrate_zero_page_detection(void)
{
    return params->zero_page_detection;
}

uint64_t migrate_background_snapshot_buffer_size(void)
{
    return params->x_background_snapshot_buffer_size;
}

const bool *migrate_caps(void)
{
    return caps;
}

/* Whether this build implements @cap; the kernel may still lack what it needs. */
static bool migrate_cap_supported(MigrationCapability cap)
{
    switch (cap) {
    case MIGRATION_CAPABILITY_EVENTS:
    case MIGRATION_CAPABILITY_PAUSE_BEFORE_SWITCHOVER:
    case MIGRATION_CAPABILITY_BACKGROUND_SNAPSHOT:
    case MIGRATION_CAPABILITY_XBZRLE:
    case MIGRATION_CAPABILITY_MULTIFD:
    case MIGRATION_CAPABILITY_POSTCOPY_RAM:
    case MIGRATION_CAPABILITY_POSTCOPY_PREEMPT:
    case MIGRATION_CAPABILITY_POSTCOPY_BLOCKTIME:
    case MIGRATION_CAPABILITY_MAPPED_RAM:
    case MIGRATION_CAPABILITY_X_LAZY_RESTORE:
    case MIGRATION_CAPABILITY_AUTO_CONVERGE:
    case MIGRATION_CAPABILITY_DIRTY_LIMIT:
    case MIGRATION_CAPABILITY_RETURN_PATH:
    case MIGRATION_CAPABILITY_X_IGNORE_SHARED:
        return true;
    default:
        return false;
    }
}

/* The capabilities QEMU refuses together with background-snapshot. */
static const MigrationCapability bg_snapshot_incompatible[] = {
    MIGRATION_CAPABILITY_POSTCOPY_RAM, MIGRATION_CAPABILITY_DIRTY_BITMAPS,
    MIGRATION_CAPABILITY_POSTCOPY_BLOCKTIME, MIGRATION_CAPABILITY_LATE_BLOCK_ACTIVATE,
    MIGRATION_CAPABILITY_RETURN_PATH, MIGRATION_CAPABILITY_MULTIFD,
    MIGRATION_CAPABILITY_PAUSE_BEFORE_SWITCHOVER, MIGRATION_CAPABILITY_AUTO_CONVERGE,
    MIGRATION_CAPABILITY_RELEASE_RAM, MIGRATION_CAPABILITY_RDMA_PIN_ALL,
    MIGRATION_CAPABILITY_COMPRESS, MIGRATION_CAPABILITY_XBZRLE, MIGRATION_CAPABILITY_X_COLO,
    MIGRATION_CAPABILITY_VALIDATE_UUID, MIGRATION_CAPABILITY_ZERO_COPY_SEND,
};

/* The capabilities QEMU 9.0 refuses together with mapped-ram. */
static const struct {
    MigrationCapability cap;
    const char *msg;
} mapped_ram_incompatible[] = {
    { MIGRATION_CAPABILITY_XBZRLE, "Mapped-ram migration is incompatible with xbzrle" },
    { MIGRATION_CAPABILITY_COMPRESS, "Mapped-ram migration is incompatible with compression" },
    { MIGRATION_CAPABILITY_POSTCOPY_RAM, "Mapped-ram migration is incompatible with postcopy" },
    { MIGRATION_CAPABILITY_X_COLO, "Mapped-ram migration is incompatible with x-colo" },
};

bool migrate_caps_check_compat(const bool *new_caps, Error **errp)
{
    if (new_caps[MIGRATION_CAPABILITY_DIRTY_LIMIT]) {
        if (new_caps[MIGRATION_CAPABILITY_AUTO_CONVERGE]) {
            error_setg(errp, "dirty-limit conflicts with auto-converge either of then "
                       "available currently");
            return false;
        }
        if (!kvm_dirty_ring_enabled(kvm_state)) {
            error_setg(errp, "dirty-limit requires KVM with accelerator property "
                       "'dirty-ring-size' set");
            return false;
        }
    }
    /*
     * Those modes list and send guest RAM without the dirty tracker, so
     * they would still send what x-ignore-shared leaves out (not yet).
     */
    if (new_caps[MIGRATION_CAPABILITY_X_IGNORE_SHARED] &&
        (new_caps[MIGRATION_CAPABILITY_MAPPED_RAM] ||
         new_caps[MIGRATION_CAPABILITY_BACKGROUND_SNAPSHOT] ||
         new_caps[MIGRATION_CAPABILITY_X_LAZY_RESTORE])) {
        error_setg(errp, "x-ignore-shared is not supported with mapped-ram, "
                   "background-snapshot or x-lazy-restore yet");
        return false;
    }
    if (new_caps[MIGRATION_CAPABILITY_MAPPED_RAM]) {
        for (size_t i = 0; i < ARRAY_SIZE(mapped_ram_incompatible); i++) {
            if (new_caps[mapped_ram_incompatible[i].cap]) {
                error_setg(errp, "%s", mapped_ram_incompatible[i].msg);
                return false;
            }
        }
    }
    if (new_caps[MIGRATION_CAPABILITY_BACKGROUND_SNAPSHOT]) {
        for (size_t i = 0; i < ARRAY_SIZE(bg_snapshot_incompatible); i++) {
            /* Writers in place: a page written out of order costs nothing (ours). */
            if (bg_snapshot_incompatible[i] == MIGRATION_CAPABILITY_MULTIFD &&
                new_caps[MIGRATION_CAPABILITY_MAPPED_RAM]) {
                continue;
            }
            if (new_caps[bg_snapshot_incompatible[i]]) {
                error_setg(errp, "Background-snapshot is not compatible with %s",
                           MigrationCapability_str(bg_snapshot_incompatible[i]));
                return false;
            }
        }
    }
    if (new_caps[MIGRATION_CAPABILITY_ZERO_COPY_SEND] && params->tls_creds && *params->tls_creds) {
        error_setg(errp, "Zero copy only available for non-compressed non-TLS multifd migration");
        return false;
    }
    return true;
}

bool migrate_caps_check_supported(const bool *old_caps, const bool *new_caps, Error **errp)
{
    for (int c = 0; c < MIGRATION_CAPABILITY__MAX; c++) {
        if (new_caps[c] && !old_caps[c] && !migrate_cap_supported(c)) {
            error_setg(errp, "Migration capability '%s' is not supported by this build",
                       MigrationCapability_str(c));
            return false;
        }
    }
    return true;
}

void migrate_caps_set(const bool *new_caps, bool return_path_named)
{
    memcpy(caps, new_caps, sizeof(caps));
    return_path_user_set |= return_path_named;
}

bool migrate_return_path_for(const char *uri, bool *user_set)
{
    *user_set = return_path_user_set;
    if (return_path_user_set) {
        return caps[MIGRATION_CAPABILITY_RETURN_PATH];
    }
    return g_str_has_prefix(uri, "tcp:") || g_str_has_prefix(uri, "unix:");
}

/*
 * Only the capabilities this build implements: management software turns
 * on what it is shown (libvirt enables return-path for every live
 * migration when listed), so a listed capability must work.
 */
MigrationCapabilityStatusList *qmp_query_migrate_capabilities(Error **errp)
{
    MigrationCapabilityStatusList *head = NULL, **tail = &head;

    for (int c = 0; c < MIGRATION_CAPABILITY__MAX; c++) {
        MigrationCapabilityStatusList *e;

        if (!migrate_cap_supported(c) && !caps[c]) {
            continue;
        }
        e = g_new0(MigrationCapabilityStatusList, 1);

        e->value = g_new0(MigrationCapabilityStatus, 1);
        e->value->capability = c;
        e->value->state = caps[c];
        *tail = e;
        tail = &e->next;
    }
    return head;
}

static bool out_of_range(uint64_t v, uint64_t lo, uint64_t hi)
{
    return v < lo || v > hi;
}

#define CHECK_RANGE(p, field, name, lo, hi, what)                                   \
    if ((p)->has_##field && out_of_range((p)->field, (lo), (hi))) {                 \
        error_setg(errp, "Parameter '%s' expects %s", name, what);                  \
        return false;                                                               \
    }

bool migrate_params_check(const MigrationParameters *p, Error **errp)
{
    CHECK_RANGE(p, compress_level, "compress_level", 0, 9, "a value between 0 and 9");
    CHECK_RANGE(p, compress_threads, "compress_threads", 1, 255, "a value between 1 and 255");
    CHECK_RANGE(p, decompress_threads, "decompress_threads", 1, 255,
                "a value between 1 and 255");
    CHECK_RANGE(p, throttle_trigger_threshold, "throttle_trigger_threshold", 1, 100,
                "an integer in the range of 1 to 100");
    CHECK_RANGE(p, cpu_throttle_initial, "cpu_throttle_initial", 1, 99,
                "an integer in the range of 1 to 99");
    CHECK_RANGE(p, cpu_throttle_increment, "cpu_throttle_increment", 1, 99,
                "an integer in the range of 1 to 99");
    CHECK_RANGE(p, max_cpu_throttle, "max_cpu_throttle", 1, 99,
                "an integer in the range of 1 to 99");
    CHECK_RANGE(p, downtime_limit, "downtime_limit", 0, 2000000,
                "an integer in the range of 0 to 2000 seconds");
    CHECK_RANGE(p, multifd_channels, "multifd_channels", 1, 255, "a value between 1 and 255");
    CHECK_RANGE(p, multifd_zlib_level, "multifd_zlib_level", 0, 9, "a value between 0 and 9");
    CHECK_RANGE(p, multifd_zstd_level, "multifd_zstd_level", 0, 20,
                "a value between 0 and 20");
    CHECK_RANGE(p, announce_initial, "announce_initial", 1, 100000,
                "a value between 1 and 100000");
    CHECK_RANGE(p, announce_max, "announce_max", 1, 100000, "a value between 1 and 100000");
    CHECK_RANGE(p, announce_rounds, "announce_rounds", 1, 1000, "a value between 1 and 1000");
    CHECK_RANGE(p, announce_step, "announce_step", 1, 10000, "a value between 1 and 10000");
    CHECK_RANGE(p, x_vcpu_dirty_limit_period, "x-vcpu-dirty-limit-period", 1, 1000,
                "a value between 1 and 1000");
    CHECK_RANGE(p, vcpu_dirty_limit, "vcpu_dirty_limit", 1, UINT64_MAX,
                "a value greater than or equal to 1");
    CHECK_RANGE(p, x_clear_bitmap_shift, "x-clear-bitmap-shift", MIN_CLEAR_BITMAP_SHIFT,
                MAX_CLEAR_BITMAP_SHIFT, "a value between 6 and 31");
    if (p->has_x_background_snapshot_buffer_size &&
        p->x_background_snapshot_buffer_size < 2 * MiB) {
        error_setg(errp, "Parameter 'x-background-snapshot-buffer-size' expects a size of "
                   "at least 2 MiB");
        return false;
    }
    if (p->has_xbzrle_cache_size &&
        (p->xbzrle_cache_size < TARGET_PAGE_SIZE ||
         (p->xbzrle_cache_size & (p->xbzrle_cache_size - 1)))) {
        error_setg(errp, "Parameter 'xbzrle_cache_size' expects a power of two no less than "
                   "the target page size");
        return false;
    }
    if (p->tls_creds && *p->tls_creds && caps[MIGRATION_CAPABILITY_ZERO_COPY_SEND]) {
        error_setg(errp, "Zero copy only available for non-compressed non-TLS multifd migration");
        return false;
    }
    return true;
}

#define APPLY(p, field) if ((p)->has_##field) { params->field = (p)->field; }
#define APPLY_STR(p, field) if ((p)->field) { g_free(params->field); params->field = g_strdup((p)->field); }

void migrate_params_apply(const MigrationParameters *p)
{
    APPLY(p, announce_initial);
    APPLY(p, announce_max);
    APPLY(p, announce_rounds);
    APPLY(p, announce_step);
    APPLY(p, compress_level);
    APPLY(p, compress_threads);
    APPLY(p, compress_wait_thread);
    APPLY(p, decompress_threads);
    APPLY(p, throttle_trigger_threshold);
    APPLY(p, cpu_throttle_initial);
    APPLY(p, cpu_throttle_increment);
    APPLY(p, cpu_throttle_tailslow);
    APPLY_STR(p, tls_creds);
    APPLY_STR(p, tls_hostname);
    APPLY_STR(p, tls_authz);
    if (p->has_max_bandwidth) {
        __atomic_store_n(&params->max_bandwidth, p->max_bandwidth, __ATOMIC_RELAXED);
        max_bandwidth_user_set = true;
    }
    if (p->has_downtime_limit) {
        __atomic_store_n(&params->downtime_limit, p->downtime_limit, __ATOMIC_RELAXED);
    }
    APPLY(p, x_checkpoint_delay);
    APPLY(p, block_incremental);
    APPLY(p, multifd_channels);
    APPLY(p, xbzrle_cache_size);
    APPLY(p, max_postcopy_bandwidth);
    APPLY(p, max_cpu_throttle);
    APPLY(p, multifd_zlib_level);
    APPLY(p, multifd_zstd_level);
    APPLY(p, multifd_compression);
    APPLY(p, zero_page_detection);
    APPLY(p, x_clear_bitmap_shift);
    APPLY(p, x_background_snapshot_buffer_size);
    APPLY(p, direct_io);
    APPLY(p, x_mapped_ram_integrity);
    if (p->has_avail_switchover_bandwidth) {
        __atomic_store_n(&params->avail_switchover_bandwidth, p->avail_switchover_bandwidth,
                         __ATOMIC_RELAXED);
    }
    APPLY(p, x_vcpu_dirty_limit_period);
    APPLY(p, vcpu_dirty_limit);
    APPLY(p, mode);
    if (p->cpr_exec_command) {
        qapi_free_strList(params->cpr_exec_command);
        params->cpr_exec_command = qapi_strList_clone(p->cpr_exec_command);
    }
    if (p->has_x_switchover_rule) {
        __atomic_store_n(&params->x_switchover_rule, p->x_switchover_rule, __ATOMIC_RELAXED);
    }
    if (p->x_converge_policy) {
        qapi_free_strList(params->x_converge_policy);
        params->x_converge_policy = qapi_strList_clone(p->x_converge_policy);
    }
    APPLY(p, x_completion_timeout);
}

MigrationParameters *qmp_query_migrate_parameters(Error **errp)
{
    return qapi_MigrationParameters_clone(params);
}

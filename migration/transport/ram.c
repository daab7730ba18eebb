/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The "ram" section (instance 0, version 4). Source: the block list, then
 * pages from the page source (ram-source.h) until the stream's rate limit
 * or the time budget says stop; the source alone knows which page is next
 * and how many are left. Destination: the codec's hostile-input parser.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "system/memory.h"
#include "migration/qemu-file.h"
#include "migration/register.h"
#include "ram.h"
#include "migration/core/options.h"
#include "ram-codec.h"
#include "ram-sink.h"
#include "ram-source.h"
#include "migration/trace.h"

/* An iterate call gives the migration thread back control this often. */
#define RAM_ITERATE_MAX_NS (50 * 1000 * 1000)

typedef struct RAMState {
    /*
     * Set by ram_select_source() (the mode's init, BQL) before mig/src
     * starts; read-only while it runs. @src_state is the mode's, and
     * outlives the migration until the next one selects again.
     */
    const RAMPageSource *src;
    void *src_state;
    /* mig/src between save_setup and save_cleanup. */
    QEMUFile *f;
    /*
     * The page transport of the migration that runs or ran last: set by
     * ram_transport_select() (qmp_migrate, BQL) before mig/src starts,
     * read-only until the next one; any thread reads it.
     */
    const RAMSinkOps *transport;
    /*
     * The page sink (ram-sink.h): opened at setup and freed at the next
     * setup (both mig/src with the BQL, as query-migrate), so its counters
     * outlive the migration. Pages go through it in mig/src.
     */
    RAMPageWriter writer;
    uint64_t scan_ns;           /* mig/src; query-migrate reads it */
    /* mig/src: the last save_complete's final sync; the downtime breakdown reads it after. */
    int64_t final_sync_ns;
} RAMState;

/* The "ram" section's source side, registered once with it; the fields say their owners. */
static RAMState ram_state;

/* Destination side; owned by the incoming thread (mig/dst). */
static RAMPageReader ram_reader;
/*
 * What a MULTIFD_FLUSH record waits for (the multifd channels), or NULL
 * if the incoming migration has none: set by the incoming side (main
 * thread) before mig/dst starts, read by each load's setup.
 */
static bool (*ram_load_flush)(Error **errp);

void ram_select_source(const RAMPageSource *src, void *src_state)
{
    ram_state.src = src;
    ram_state.src_state = src_state;
}

/* ---- the page transport (ram-sink.h's rows), for migration.c ---- */

bool ram_transport_check_uri(const char *uri, Error **errp)
{
    return ram_sink_check_uri(uri, errp);
}

void ram_transport_select(void)
{
    ram_state.transport = ram_sink_select();
}

bool ram_transport_connect(const char *uri, MigTLS *tls, QEMUFile *f, Error **errp)
{
    const RAMSinkOps *t = ram_state.transport;

    return !t->connect || t->connect(uri, tls, f, errp);
}

bool ram_transport_finishes(void)
{
    return ram_state.transport->finish != NULL;
}

bool ram_transport_finish(QEMUFile *f, Error **errp)
{
    const RAMSinkOps *t = ram_state.transport;

    return !t->finish || t->finish(f, errp);
}

void ram_transport_shutdown(void)
{
    const RAMSinkOps *t = ram_state.transport;

    if (t && t->shutdown) {
        t->shutdown();
    }
}

void ram_transport_disconnect(void)
{
    const RAMSinkOps *t = ram_state.transport;

    if (t && t->disconnect) {
        t->disconnect();
    }
}

uint64_t ram_transport_unsent_bytes(void)
{
    const RAMSinkOps *t = ram_state.transport;

    return t && t->unsent_bytes ? t->unsent_bytes() : 0;
}

bool ram_transport_drains_faster(void)
{
    const RAMSinkOps *t = ram_state.transport;

    return t && t->drains_faster && t->drains_faster();
}

static RAMSinkCounts ram_sink_counts(RAMState *rs)
{
    RAMSinkCounts c = { 0 };

    if (rs->writer.sink) {
        rs->writer.ops->counts(rs->writer.sink, &c);
    }
    return c;
}

uint64_t ram_pages_sent(void)
{
    return ram_sink_counts(&ram_state).pages;
}

uint64_t ram_data_pages_sent(void)
{
    return ram_sink_counts(&ram_state).data_pages;
}

/* The guest RAM this migration sends: x-ignore-shared's blocks are not (QEMU counts so). */
static uint64_t ram_migrated_bytes(void)
{
    GPtrArray *rbs = ram_blocks();
    uint64_t total = 0;

    for (guint i = 0; i < rbs->len; i++) {
        RAMBlock *rb = g_ptr_array_index(rbs, i);

        total += migrate_ram_is_ignored(rb) ? 0 : rb->used_length;
    }
    return total;
}

void ram_fill_info(MigrationInfo *info)
{
    RAMState *rs = &ram_state;

    info->ram->total = ram_migrated_bytes();
    info->ram->page_size = TARGET_PAGE_SIZE;
    if (rs->writer.sink) {
        rs->writer.ops->fill_info(rs->writer.sink, info);
    }
    if (rs->src) {
        rs->src->fill_info(rs->src_state, info);
    }
    if (info->x_dirty_log) {
        /* Measured here, around the source's sends, not per page. */
        info->x_dirty_log->scan_time_us_total = __atomic_load_n(&rs->scan_ns, __ATOMIC_RELAXED) /
                                                1000;
    }
}

static void ram_add_scan_time(RAMState *rs, int64_t t0)
{
    __atomic_store_n(&rs->scan_ns, rs->scan_ns + (get_clock_ns() - t0), __ATOMIC_RELAXED);
}

/*
 * xbzrle-cache-size, but no bigger than the guest's RAM rounded up to a
 * power of two: a slot per guest page is all a direct-mapped cache can use.
 */
static uint64_t ram_xbzrle_cache_size(void)
{
    uint64_t ram = ram_migrated_bytes(), fit = TARGET_PAGE_SIZE;

    while (fit < ram) {
        fit <<= 1;
    }
    return MIN(migrate_xbzrle_cache_size(), fit);
}

static int ram_save_setup(QEMUFile *f, void *opaque, Error **errp)
{
    RAMState *rs = opaque;
    RAMSinkConfig cfg = {
        .xbzrle_cache_size = migrate_xbzrle() ? ram_xbzrle_cache_size() : 0,
    };

    /* The mode's init selected a source (migration.c asks every mode for one). */
    assert(rs->src);
    /* The last migration's sink stayed for its counters: freed here. */
    if (!ram_sink_open(&rs->writer, rs->transport, f, &cfg, errp)) {
        return -ENOMEM;
    }
    rs->scan_ns = 0;
    rs->f = f;
    if (!rs->src->setup(rs->src_state, f, errp)) {
        return -EIO;
    }
    ram_put_block_list_sink(&rs->writer, f, migrate_ram_ignore_shared());
    return qemu_file_get_error(f);
}

static int ram_save_iterate(QEMUFile *f, void *opaque)
{
    RAMState *rs = opaque;
    int64_t t0 = get_clock_ns();
    uint64_t pages = 0, bytes0 = qemu_file_transferred(f);
    int done = 0;

    /* Past the rate limit only what must not wait goes (postcopy's page requests). */
    while (!qemu_file_rate_limit(f) ||
           (rs->src->has_urgent && rs->src->has_urgent(rs->src_state))) {
        if (!rs->src->send_next(rs->src_state, f, &rs->writer)) {
            done = 1;
            break;
        }
        /* Check the clock every 64 sends so one call never hogs the thread. */
        if ((++pages & 63) == 0 && get_clock_ns() - t0 > RAM_ITERATE_MAX_NS) {
            break;
        }
    }
    ram_put_eos(f);
    ram_add_scan_time(rs, t0);
    trace_ram_iterate(pages, qemu_file_transferred(f) - bytes0, (get_clock_ns() - t0) / 1000);
    return qemu_file_get_error(f) ? qemu_file_get_error(f) : done;
}

int64_t ram_last_final_sync_ns(void)
{
    return ram_state.final_sync_ns;
}

static int ram_save_complete(QEMUFile *f, void *opaque)
{
    RAMState *rs = opaque;
    int64_t t0 = get_clock_ns();

    rs->final_sync_ns = 0;
    if (rs->src->final_sync && rs->src->final_sync(rs->src_state, f) < 0) {
        return qemu_file_get_error(f) ?: -EIO;
    }
    rs->final_sync_ns = get_clock_ns() - t0;
    while (rs->src->send_next(rs->src_state, f, &rs->writer)) {
        if (qemu_file_get_error(f)) {
            break;
        }
    }
    /* Every page the sink holds must be placed before the device state loads. */
    if (rs->writer.ops->drain && !qemu_file_get_error(f)) {
        rs->writer.ops->drain(rs->writer.sink, f);
    }
    ram_put_eos(f);
    qemu_fflush(f);
    ram_add_scan_time(rs, t0);
    return qemu_file_get_error(f);
}

static uint64_t ram_pending_estimate(void *opaque)
{
    RAMState *rs = opaque;

    return rs->src->pending(rs->src_state, rs->f, false);
}

static uint64_t ram_pending_exact(void *opaque)
{
    RAMState *rs = opaque;

    /*
     * A switchover may follow: what the sink still encodes or writes would
     * otherwise be waited for with the guest stopped (multifd's channels
     * compressing their last batches cost an idle guest 2 ms of downtime).
     */
    if (rs->writer.ops && rs->writer.ops->settle && !qemu_file_get_error(rs->f)) {
        rs->writer.ops->settle(rs->writer.sink, rs->f);
    }
    return rs->src->pending(rs->src_state, rs->f, true);
}

static void ram_save_cleanup(void *opaque)
{
    RAMState *rs = opaque;

    rs->src->cleanup(rs->src_state);
    if (rs->writer.sink) {
        rs->writer.ops->close(rs->writer.sink);
    }
    rs->f = NULL;
}

void ram_save_enter_postcopy(void)
{
    RAMState *rs = &ram_state;

    if (rs->writer.sink && rs->writer.ops->enter_postcopy) {
        rs->writer.ops->enter_postcopy(rs->writer.sink);
    }
}

int ram_save_resume_prepare(QEMUFile *f, Error **errp)
{
    RAMState *rs = &ram_state;

    if (!rs->src->resume) {
        error_setg(errp, "the %s page source cannot resume", rs->src->name);
        return -ENOTSUP;
    }
    /* A new connection: its records cannot continue the old one's block. */
    if (rs->writer.sink && rs->writer.ops->restart) {
        rs->writer.ops->restart(rs->writer.sink);
    }
    rs->f = f;
    return rs->src->resume(rs->src_state, f, errp) ? 0 : -EIO;
}

void ram_load_postcopy_resumed(void)
{
    ram_reader.last_block = NULL;
}

void ram_load_set_map_zero(bool on)
{
    ram_reader.map_zero = on;
}

void ram_load_set_placer(bool (*place)(void *opaque, RAMBlock *rb, uint64_t first, unsigned n,
                                       const uint8_t *data, Error **errp),
                         void *opaque)
{
    ram_reader.place = place;
    ram_reader.place_opaque = opaque;
}

void ram_load_set_map(bool (*map_block)(QEMUFile *f, RAMBlock *rb, void *opaque, Error **errp),
                      void *opaque)
{
    ram_reader.map_block = map_block;
    ram_reader.map_opaque = opaque;
}

void ram_load_set_flush(bool (*flush)(Error **errp))
{
    ram_load_flush = flush;
}

static int ram_load_setup(QEMUFile *f, void *opaque, Error **errp)
{
    ram_reader_reset(&ram_reader);
    ram_reader.multifd_flush = ram_load_flush;
    ram_reader.ignore_shared = migrate_ram_ignore_shared();
    ram_reader.cpr = migrate_mode_is_cpr();
    return 0;
}

static void ram_load_cleanup(void *opaque)
{
    ram_reader_reset(&ram_reader);
}

static int ram_load_complete(void *opaque, Error **errp)
{
    return ram_load_check_ignored(&ram_reader, errp) ? 0 : -EINVAL;
}

static int ram_load(QEMUFile *f, void *opaque, int version_id, Error **errp)
{
    if (version_id != 4) {
        error_setg(errp, "ram: unsupported section version %d", version_id);
        return -EINVAL;
    }
    return ram_load_records(&ram_reader, f, errp);
}

static const SaveVMHandlers savevm_ram_handlers = {
    .save_setup = ram_save_setup,
    .save_iterate = ram_save_iterate,
    .save_complete = ram_save_complete,
    .pending_estimate = ram_pending_estimate,
    .pending_exact = ram_pending_exact,
    .save_cleanup = ram_save_cleanup,
    .load_setup = ram_load_setup,
    .load_cleanup = ram_load_cleanup,
    .load_state = ram_load,
    .load_complete = ram_load_complete,
};

void ram_mig_init(void)
{
    register_savevm_live("ram", 0, 4, &savevm_ram_handlers, &ram_state);
}

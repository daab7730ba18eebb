/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The stream envelope, reading side. The loader treats the stream as
 * hostile: every section must name a registered handler, carry a version
 * we understand and end with the right footer; commands are checked by
 * loadvm-cmd.c; and the load only succeeds at EOF with every device
 * section seen.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "migration/qemu-file.h"
#include "qemu/xxh64.h"
#include "qapi/qapi-types.h"
#include "mapped-ram-in.h"
#include "migration/stream/postcopy.h"
#include "postcopy-dst.h"
#include "postcopy-rp-dst.h"
#include "migration/transport/ram.h"
#include "migration/core/options.h"
#include "migration/stream/savevm.h"
#include "loadvm.h"
#include "migration/stream/savevm-int.h"
#include "loadvm-cmd.h"
#include "migration/stream/savevm-cmd.h"
#include "migration/trace.h"

/* The load in progress (mig/dst): what the stream's configuration said. */
static bool stream_mapped_ram;
static bool stream_ignore_shared;
/* ...and its integrity record (mapped-ram-integrity.h), or NULL; freed when the load ends. */
static MappedRamIntegrity *stream_integrity;
/*
 * ...and where its stream must end, right after the vmdesc: the record's
 * start, or the trailer's without one (mapped_ram_in_check_file).
 */
static int64_t stream_mapped_ram_end;
/*
 * ...and, with a record, the XXH64 of every stream byte the loader
 * consumed (qemu_file_hash_consumed): the record's stream hash was checked
 * on one read of the file, before the load; the bytes loaded come from a
 * second read, and a file rewritten in between (shared storage) must not
 * load state that was not checked. Compared after the vmdesc, before the
 * load can succeed and so before the guest can run.
 */
static Xxh64State stream_consumed;

/*
 * The load in progress (mig/dst; read by the main thread after joining it):
 * when the switchover's records began to arrive, get_clock_ns(), 0 = not yet.
 * A precopy source sends SECTION_PART while its guest runs and the first
 * SECTION_END once it has stopped it; the devices' SECTION_FULL follow.
 */
static int64_t switchover_end_ns, switchover_devices_ns;

void qemu_loadvm_switchover_times(int64_t *end_ns, int64_t *devices_ns)
{
    *end_ns = switchover_end_ns;
    *devices_ns = switchover_devices_ns;
}

/*
 * QEMU 9.0's configuration/capabilities: the capabilities the stream needs
 * the reader to know. Only mapped-ram is one we read; anything else is refused.
 */
static bool loadvm_config_caps(QEMUFile *f, Error **errp)
{
    char name[256];
    uint32_t version, count;

    if (!qemu_get_counted_string(f, name) || strcmp(name, SAVEVM_CAPS_SUBSECTION)) {
        g_autofree char *safe = g_strescape(name, NULL);

        error_setg(errp, "unknown configuration subsection '%s'", safe);
        return false;
    }
    version = qemu_get_be32(f);
    count = qemu_get_be32(f);
    if (qemu_file_get_error(f) || version != 1 || count > MIGRATION_CAPABILITY__MAX) {
        error_setg(errp, "bad %s subsection (version %u, %u capabilities)", name, version,
                   count);
        return false;
    }
    for (uint32_t i = 0; i < count; i++) {
        if (!qemu_get_counted_string(f, name)) {
            error_setg(errp, "reading the stream's capabilities failed: %s",
                       qemu_file_error_msg(f));
            return false;
        }
        if (!strcmp(name, SAVEVM_CAP_IGNORE_SHARED)) {
            stream_ignore_shared = true;
            continue;
        }
        if (strcmp(name, SAVEVM_CAP_MAPPED_RAM)) {
            g_autofree char *safe = g_strescape(name, NULL);

            error_setg(errp, "Received unknown capability %s", safe);
            return false;
        }
        stream_mapped_ram = true;
    }
    return true;
}

static SaveStateEntry *find_se(const char *idstr, uint32_t instance_id)
{
    SaveStateEntry *se;

    FOREACH_SE(i, se) {
        if (!strcmp(se->idstr, idstr) && se->instance_id == instance_id) {
            return se;
        }
    }
    return NULL;
}

static bool loadvm_check_header(QEMUFile *f, int64_t stream_start, Error **errp)
{
    uint32_t magic = qemu_get_be32(f);
    uint32_t version = qemu_get_be32(f);
    char machine[256];
    uint32_t len;

    if (qemu_file_get_error(f)) {
        error_setg(errp, "reading the stream header failed: %s", qemu_file_error_msg(f));
        return false;
    }
    if (magic != QEMU_VM_FILE_MAGIC) {
        error_setg(errp, "Not a migration stream (bad magic 0x%08x)", magic);
        /* A TLS record header: handshake (22), version 3.x. */
        if ((magic >> 16) == 0x1603) {
            error_append_hint(errp, "The source speaks TLS: set tls-creds on this destination "
                              "too\n");
        }
        return false;
    }
    if (version == QEMU_VM_FILE_VERSION_COMPAT) {
        error_setg(errp, "SaveVM v2 format is obsolete and don't work anymore");
        return false;
    }
    if (version != QEMU_VM_FILE_VERSION) {
        error_setg(errp, "Unsupported migration stream version %u", version);
        return false;
    }
    if (qemu_get_byte(f) != QEMU_VM_CONFIGURATION) {
        error_setg(errp, "Configuration section missing");
        return false;
    }
    len = qemu_get_be32(f);
    if (len >= sizeof(machine)) {
        error_setg(errp, "Machine type name in the stream is too long (%u bytes)", len);
        return false;
    }
    qemu_get_buffer(f, machine, len);
    machine[len] = '\0';
    if (qemu_file_get_error(f)) {
        error_setg(errp, "reading the configuration failed: %s", qemu_file_error_msg(f));
        return false;
    }
    if (strcmp(machine, savevm_machine_type())) {
        g_autofree char *safe = g_strescape(machine, NULL);

        error_setg(errp, "Machine type received is '%s' and local is '%s'", safe,
                   savevm_machine_type());
        return false;
    }
    while (qemu_peek_byte(f, 0) == QEMU_VM_SUBSECTION) {
        qemu_file_skip(f, 1);
        if (!loadvm_config_caps(f, errp)) {
            return false;
        }
    }
    /* Both ends must agree: the block list's layout depends on it. */
    if (stream_ignore_shared != migrate_ram_ignore_shared()) {
        error_setg(errp, "Capability %s is %s, but received capability is %s",
                   SAVEVM_CAP_IGNORE_SHARED, migrate_ram_ignore_shared() ? "on" : "off",
                   stream_ignore_shared ? "on" : "off");
        return false;
    }
    if (!stream_mapped_ram) {
        return true;
    }
    /* Before a byte of RAM is read: a file whose writer did not finish is refused. */
    if (!mapped_ram_in_check_file(f, stream_start, &stream_integrity, &stream_mapped_ram_end,
                                  errp)) {
        return false;
    }
    /* The "ram" section finds its pages in the file, checked against the record if any. */
    ram_load_set_map(mapped_ram_in_block, stream_integrity);
    return true;
}

/* The footer must name @section_id, the id the stream gave the section. */
static bool loadvm_check_footer(QEMUFile *f, SaveStateEntry *se, uint32_t section_id,
                                Error **errp)
{
    uint8_t b = qemu_get_byte(f);
    uint32_t id;

    if (qemu_file_get_error(f)) {
        error_setg(errp, "reading the footer of section '%s' failed: %s", se->idstr,
                   qemu_file_error_msg(f));
        return false;
    }
    if (b != QEMU_VM_SECTION_FOOTER) {
        error_setg(errp, "Missing section footer for %s (got 0x%02x)", se->idstr, b);
        return false;
    }
    id = qemu_get_be32(f);
    if (id != section_id) {
        error_setg(errp, "Mismatched section id in footer for %s -- read 0x%x expected 0x%x",
                   se->idstr, id, section_id);
        return false;
    }
    return true;
}

/*
 * One device section. Fields land in the live struct, and post_load
 * validates them before it hands anything to KVM; if the section fails
 * anywhere, the struct gets its old bytes back before the BQL is released.
 * Nobody else reads device state without the BQL, so no one ever sees a
 * struct with unvalidated fields (vCPUs are not running while we load).
 * The load works in place, not on a separate copy, because post_load hooks
 * find their device from the struct's address (container_of).
 */
static bool loadvm_device_section(QEMUFile *f, SaveStateEntry *se, uint32_t version_id,
                                  Error **errp)
{
    void *before;
    bool ok;

    /* Device state touches KVM and devices: take the BQL like the main loop. */
    bql_lock();
    before = g_memdup2(se->opaque, se->vmsd->size);
    ok = vmstate_load_state(f, se->vmsd, se->opaque, version_id, errp);
    if (!ok) {
        memcpy(se->opaque, before, se->vmsd->size);
    }
    bql_unlock();
    g_free(before);
    return ok;
}

static bool loadvm_section_start_full(QEMUFile *f, uint8_t type, GHashTable *ids, Error **errp)
{
    uint32_t section_id = qemu_get_be32(f);
    char idstr[256];
    uint32_t instance_id, version_id;
    SaveStateEntry *se, *other;

    qemu_get_counted_string(f, idstr);
    instance_id = qemu_get_be32(f);
    version_id = qemu_get_be32(f);
    if (qemu_file_get_error(f)) {
        error_setg(errp, "reading a section header failed: %s", qemu_file_error_msg(f));
        return false;
    }
    se = find_se(idstr, instance_id);
    if (!se) {
        g_autofree char *safe = g_strescape(idstr, NULL);

        error_setg(errp, "Unknown savevm section or instance '%s' %u", safe, instance_id);
        return false;
    }
    if ((type == QEMU_VM_SECTION_FULL) != (se->vmsd != NULL)) {
        error_setg(errp, "Section '%s' has the wrong kind (type 0x%x)", se->idstr, type);
        return false;
    }
    /* Unsigned: a version of 2^31 or more must not pass as negative. */
    if (version_id > (uint32_t)se->version_id) {
        error_setg(errp, "savevm: unsupported version %u for '%s' v%d", version_id, se->idstr,
                   se->version_id);
        return false;
    }
    /*
     * Remember the stream's id so PART/END and the footer find this handler.
     * Only in this load's table: our own ids are what we send, and a hostile
     * stream must not change them (nor give one id to two sections).
     */
    other = g_hash_table_lookup(ids, GUINT_TO_POINTER(section_id));
    if (other && other != se) {
        error_setg(errp, "Section id %u of '%s' is already used by '%s'", section_id, se->idstr,
                   other->idstr);
        return false;
    }
    g_hash_table_insert(ids, GUINT_TO_POINTER(section_id), se);
    if (se->vmsd) {
        int64_t t0 = get_clock_ns();

        if (!loadvm_device_section(f, se, version_id, errp)) {
            error_prepend(errp, "error while loading state for instance 0x%x of device '%s': ",
                          instance_id, se->idstr);
            return false;
        }
        trace_savevm_device_load(se->idstr, se->instance_id, (get_clock_ns() - t0) / 1000);
    } else if (se->ops->load_state(f, se->opaque, version_id, errp) < 0) {
        return false;
    }
    se->loaded = true;
    return loadvm_check_footer(f, se, section_id, errp);
}

static bool loadvm_section_part_end(QEMUFile *f, GHashTable *ids, Error **errp)
{
    uint32_t section_id = qemu_get_be32(f);
    SaveStateEntry *se;

    if (qemu_file_get_error(f)) {
        error_setg(errp, "reading a section header failed: %s", qemu_file_error_msg(f));
        return false;
    }
    se = g_hash_table_lookup(ids, GUINT_TO_POINTER(section_id));
    if (!se || !se->ops) {
        error_setg(errp, "Unknown savevm section %u", section_id);
        return false;
    }
    if (se->ops->load_state(f, se->opaque, se->version_id, errp) < 0) {
        return false;
    }
    return loadvm_check_footer(f, se, section_id, errp);
}

/*
 * The load in progress (mig/dst; read after it returned): why the vmdesc
 * after the EOF did not arrive whole, NULL if it did.
 */
static char *vmdesc_damage;

const char *qemu_loadvm_vmdesc_damage(void)
{
    return vmdesc_damage;
}

/*
 * After EOF: the vmdesc, which we read and discard. QEMU treats it as
 * optional; our sources always write it, so it is also what tells a
 * complete stream from one cut right after the EOF byte.
 */
static bool loadvm_skip_vmdesc(QEMUFile *f, Error **errp)
{
    uint32_t len;

    if (qemu_get_byte(f) != QEMU_VM_VMDESCRIPTION || qemu_file_get_error(f)) {
        error_setg(errp, "the stream ends at EOF without its vmdesc (truncated?)");
        return false;
    }
    len = qemu_get_be32(f);
    if (len > VMDESC_MAX_LEN) {
        error_setg(errp, "vmdesc of %u bytes is too big", len);
        return false;
    }
    qemu_file_skip(f, len);
    if (qemu_file_get_error(f)) {
        error_setg(errp, "reading the vmdesc failed: %s", qemu_file_error_msg(f));
        return false;
    }
    return true;
}

/*
 * The vmdesc after a whole device state and EOF. Damaged, the load still
 * stands where the source cannot take its guest back on our word: it has
 * stopped for good (a file, exec:, no return path), or it waits for our
 * confirmation and decides (PING CONFIRM_OFFER, postcopy.h). Only a
 * source with QEMU's plain return path, whose own write of that vmdesc
 * failed and which resumes its guest on SHUT 1, must hear a refusal.
 */
static bool loadvm_vmdesc(QEMUFile *f, Error **errp)
{
    Error *err = NULL;
    int64_t pos;

    if (stream_mapped_ram) {
        /*
         * A mapped-ram file is ours, whole (its trailer says so): its
         * stream must end exactly where its integrity record, or without
         * one its trailer, begins. Otherwise a damaged record footer
         * would make the file read as one without a record, and load
         * unverified: the bytes left over are what refuses it.
         */
        if (!loadvm_skip_vmdesc(f, errp)) {
            error_prepend(errp, "the mapped-ram file is corrupted: ");
            return false;
        }
        pos = qemu_file_tell(f);
        if (pos != stream_mapped_ram_end) {
            error_setg(errp, "the mapped-ram file is corrupted: its stream ends at 0x%" PRIx64
                       " but %s begins at 0x%" PRIx64 " (a damaged integrity record, or "
                       "bytes this QEMU did not write)", pos,
                       stream_integrity ? "its integrity record" : "its trailer",
                       stream_mapped_ram_end);
            return false;
        }
        if (stream_integrity &&
            xxh64_digest(&stream_consumed) != stream_integrity->stream_hash) {
            error_setg(errp, "the mapped-ram file changed while it was loaded: the device "
                       "state, block list or block headers loaded do not match its "
                       "integrity record, which matched them when the load began");
            return false;
        }
        return true;
    }
    if (loadvm_skip_vmdesc(f, &err)) {
        return true;
    }
    if (rp_dst_is_open() && !rp_dst_confirming()) {
        error_propagate(errp, err);
        return false;
    }
    vmdesc_damage = g_strdup(error_get_pretty(err));
    warn_report("the device state loaded whole; the stream's trailing description is "
                "damaged: %s", vmdesc_damage);
    error_free(err);
    return true;
}

static bool loadvm_check_complete(Error **errp)
{
    SaveStateEntry *se;

    FOREACH_SE(i, se) {
        if (se->vmsd && !se->loaded) {
            error_setg(errp, "stream ended without section '%s' instance %u", se->idstr,
                       se->instance_id);
            return false;
        }
        if (se->ops && se->ops->load_complete && se->ops->load_complete(se->opaque, errp) < 0) {
            return false;
        }
    }
    return true;
}

typedef enum LoadVMEnd {
    LOADVM_END_ERROR,
    LOADVM_END_EOF,             /* the stream's EOF, checks passed */
    LOADVM_END_QUIT,            /* a package's RUN */
} LoadVMEnd;

static LoadVMEnd loadvm_main(QEMUFile *f, GHashTable *ids, bool in_package, Error **errp);

/*
 * PACKAGED: the device state (and LISTEN, PING, RUN) in one blob, read
 * whole, so that the guest starts only once all of it arrived; it must
 * end with RUN.
 */
static bool loadvm_packaged(QEMUFile *f, GHashTable *ids, bool in_package, Error **errp)
{
    uint32_t len = qemu_get_be32(f);
    g_autofree uint8_t *blob = NULL;
    QEMUFile *pkg;
    LoadVMEnd end;
    int64_t t0;

    if (qemu_file_get_error(f)) {
        error_setg(errp, "reading CMD_PACKAGED failed: %s", qemu_file_error_msg(f));
        return false;
    }
    if (in_package) {
        error_setg(errp, "CMD_PACKAGED inside a package");
        return false;
    }
    if (len > MAX_VM_CMD_PACKAGED_SIZE) {
        error_setg(errp, "Unreasonably large packaged state: %u", len);
        return false;
    }
    blob = g_malloc(len);
    qemu_get_buffer(f, blob, len);
    if (qemu_file_get_error(f)) {
        error_setg(errp, "reading the packaged state (%u bytes) failed: %s", len,
                   qemu_file_error_msg(f));
        return false;
    }
    pkg = qemu_file_new_buffer_input(blob, len);
    t0 = get_clock_ns();
    end = loadvm_main(pkg, ids, true, errp);
    trace_postcopy_dst_step("package", (get_clock_ns() - t0) / 1000);
    qemu_fclose(pkg);
    if (end == LOADVM_END_EOF) {
        error_setg(errp, "the packaged state ended without CMD_POSTCOPY_RUN");
    }
    return end == LOADVM_END_QUIT;
}

static bool loadvm_command(QEMUFile *f, GHashTable *ids, bool in_package, bool *quit,
                           Error **errp)
{
    uint16_t cmd = qemu_get_be16(f);
    uint16_t len = qemu_get_be16(f);
    LoadVMCmdResult r;

    if (qemu_file_get_error(f)) {
        error_setg(errp, "reading a command failed: %s", qemu_file_error_msg(f));
        return false;
    }
    if (cmd == MIG_CMD_PACKAGED) {
        if (len != 4) {
            error_setg(errp, "CMD_PACKAGED received with bad length - expecting 4, got %u", len);
            return false;
        }
        return loadvm_packaged(f, ids, in_package, errp);
    }
    r = loadvm_handle_command(f, cmd, len, in_package, errp);
    *quit = r == LOADVM_CMD_QUIT;
    return r != LOADVM_CMD_ERROR;
}

/*
 * Postcopy, the stream broke (an I/O error, not a bad record): pause until
 * migrate-recover brings a new connection, and go on reading it at a
 * record boundary, where the resumed source starts.
 */
static bool loadvm_postcopy_recover(QEMUFile **f, bool in_package, Error **errp)
{
    QEMUFile *nf;

    if (in_package || !postcopy_dst_listening() || !qemu_file_get_error(*f)) {
        return false;
    }
    nf = postcopy_dst_pause(*f, *errp);
    if (!nf) {
        return false;
    }
    error_free(*errp);
    *errp = NULL;
    *f = nf;
    return true;
}

static LoadVMEnd loadvm_main(QEMUFile *f, GHashTable *ids, bool in_package, Error **errp)
{
    for (;;) {
        uint8_t type;
        bool quit = false, ok = true;

        /* A package is a buffer read whole: its end is where the blob ends. */
        if (in_package && !qemu_file_input_buffered(f)) {
            return LOADVM_END_EOF;
        }
        type = qemu_get_byte(f);
        if (qemu_file_get_error(f)) {
            error_setg(errp, "%s", qemu_file_error_msg(f));
            if (loadvm_postcopy_recover(&f, in_package, errp)) {
                continue;
            }
            return LOADVM_END_ERROR;
        }
        switch (type) {
        case QEMU_VM_EOF:
            if (in_package) {
                error_setg(errp, "EOF inside the packaged state");
                return LOADVM_END_ERROR;
            }
            if (!loadvm_check_complete(errp)) {
                return LOADVM_END_ERROR;
            }
            /* A postcopy stream ends at EOF: QEMU sends no vmdesc after it. */
            if (!postcopy_dst_listening() && !loadvm_vmdesc(f, errp)) {
                return LOADVM_END_ERROR;
            }
            return LOADVM_END_EOF;
        case QEMU_VM_SECTION_START:
        case QEMU_VM_SECTION_FULL:
            if (type == QEMU_VM_SECTION_FULL && switchover_end_ns && !switchover_devices_ns) {
                switchover_devices_ns = get_clock_ns();
            }
            ok = loadvm_section_start_full(f, type, ids, errp);
            break;
        case QEMU_VM_SECTION_PART:
        case QEMU_VM_SECTION_END:
            if (type == QEMU_VM_SECTION_END && !switchover_end_ns) {
                switchover_end_ns = get_clock_ns();
            }
            ok = loadvm_section_part_end(f, ids, errp);
            break;
        case QEMU_VM_COMMAND:
            ok = loadvm_command(f, ids, in_package, &quit, errp);
            if (ok && quit) {
                return LOADVM_END_QUIT;
            }
            break;
        default:
            error_setg(errp, "Unknown savevm section type %d", type);
            return LOADVM_END_ERROR;
        }
        if (!ok && !loadvm_postcopy_recover(&f, in_package, errp)) {
            return LOADVM_END_ERROR;
        }
    }
}

bool qemu_loadvm_state(QEMUFile *f, Error **errp)
{
    g_autoptr(GHashTable) ids = g_hash_table_new(NULL, NULL);
    int64_t stream_start = qemu_file_tell(f);  /* < 0: not a file */
    /*
     * Only a file's QEMUFile is ever given the hash, and only it is told to
     * drop it: a postcopy that recovered on a new channel has freed the
     * QEMUFile this call began with by the time the call returns (ASan:
     * the destination died at "out:" below, and the source paused again).
     */
    bool hashing = stream_start >= 0;
    SaveStateEntry *se;
    bool ok = false;

    FOREACH_SE(i, se) {
        se->loaded = false;
        if (se->ops && se->ops->load_setup && se->ops->load_setup(f, se->opaque, errp) < 0) {
            goto out;
        }
    }
    stream_mapped_ram = stream_ignore_shared = false;
    switchover_end_ns = switchover_devices_ns = 0;
    g_clear_pointer(&vmdesc_damage, g_free);
    if (hashing) {
        /* From the first byte: whether it is mapped-ram is known only after the header. */
        xxh64_init(&stream_consumed, 0);
        qemu_file_hash_consumed(f, &stream_consumed);
    }
    if (!loadvm_check_header(f, stream_start, errp)) {
        goto out;
    }
    if (hashing && !stream_integrity) {
        qemu_file_hash_consumed(f, NULL);
        hashing = false;
    }
    switch (loadvm_main(f, ids, false, errp)) {
    case LOADVM_END_EOF:
        ok = true;
        break;
    case LOADVM_END_QUIT:
        error_setg(errp, "CMD_POSTCOPY_RUN outside the packaged device state");
        break;
    case LOADVM_END_ERROR:
        break;
    }
    if (ok && stream_integrity && stream_integrity->next_block != stream_integrity->nblocks) {
        error_setg(errp, "the mapped-ram file is corrupted: its stream has %u RAM blocks, its "
                   "integrity record %u", stream_integrity->next_block, stream_integrity->nblocks);
        ok = false;
    }
out:
    if (hashing) {
        qemu_file_hash_consumed(f, NULL);
    }
    g_clear_pointer(&stream_integrity, mri_free);
    FOREACH_SE(i, se) {
        if (se->ops && se->ops->load_cleanup) {
            se->ops->load_cleanup(se->opaque);
        }
    }
    return ok;
}

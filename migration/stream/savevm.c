/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The stream envelope, writing side: the registry of sections, then the
 * header, configuration, live sections (START, PART, END) and device
 * sections (FULL), each closed by a footer, then EOF and the JSON vmdesc.
 * loadvm.c reads it.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "migration/qemu-file.h"
#include "migration/register.h"
#include "migration/vmstate.h"
#include "migration/core/options.h"
#include "savevm.h"
#include "savevm-int.h"
#include "migration/trace.h"

/*
 * The registry of sections: filled during init by the main thread,
 * read-only afterwards (the entries' @loaded flags are the loading
 * thread's). loadvm.c reads it through savevm_entries().
 */
static struct {
    GPtrArray *entries;
    uint32_t next_section_id;
    /* The configuration section's machine type, handed in by the machine at init. */
    char *machine_type;
} registry;

void savevm_set_machine_type(const char *name)
{
    g_free(registry.machine_type);
    registry.machine_type = g_strdup(name);
}

const char *savevm_machine_type(void)
{
    return registry.machine_type ? registry.machine_type : "";
}

GPtrArray *savevm_entries(void)
{
    return registry.entries;
}

static SaveStateEntry *savevm_add(const char *idstr, uint32_t instance_id, int version_id)
{
    SaveStateEntry *se = g_new0(SaveStateEntry, 1);

    assert(strlen(idstr) < sizeof(se->idstr));
    g_strlcpy(se->idstr, idstr, sizeof(se->idstr));
    se->instance_id = instance_id;
    se->version_id = version_id;
    se->section_id = registry.next_section_id++;
    if (!registry.entries) {
        registry.entries = g_ptr_array_new();
    }
    g_ptr_array_add(registry.entries, se);
    return se;
}

void register_savevm_live(const char *idstr, uint32_t instance_id, int version_id,
                          const SaveVMHandlers *ops, void *opaque)
{
    SaveStateEntry *se = savevm_add(idstr, instance_id, version_id);

    se->ops = ops;
    se->opaque = opaque;
}

void vmstate_register(const char *idstr, uint32_t instance_id,
                      const VMStateDescription *vmsd, void *opaque)
{
    SaveStateEntry *se;

    /* The loader puts a refused section back from a copy of this many bytes. */
    assert(vmsd->size);
    se = savevm_add(idstr, instance_id, vmsd->version_id);

    se->vmsd = vmsd;
    se->opaque = opaque;
}

void vmstate_unregister(const VMStateDescription *vmsd, void *opaque)
{
    for (guint i = 0; registry.entries && i < registry.entries->len; i++) {
        SaveStateEntry *se = g_ptr_array_index(registry.entries, i);

        if (se->vmsd == vmsd && se->opaque == opaque) {
            g_ptr_array_remove_index(registry.entries, i);
            g_free(se);
            return;
        }
    }
}

/* ---- outgoing ---- */

static void save_section_header(QEMUFile *f, SaveStateEntry *se, uint8_t type)
{
    qemu_put_byte(f, type);
    qemu_put_be32(f, se->section_id);
    if (type == QEMU_VM_SECTION_START || type == QEMU_VM_SECTION_FULL) {
        qemu_put_counted_string(f, se->idstr);
        qemu_put_be32(f, se->instance_id);
        qemu_put_be32(f, se->version_id);
    }
}

static void save_section_footer(QEMUFile *f, SaveStateEntry *se)
{
    qemu_put_byte(f, QEMU_VM_SECTION_FOOTER);
    qemu_put_be32(f, se->section_id);
}

void qemu_savevm_state_header(QEMUFile *f)
{
    const char *machine = savevm_machine_type();

    qemu_put_be32(f, QEMU_VM_FILE_MAGIC);
    qemu_put_be32(f, QEMU_VM_FILE_VERSION);
    /* Configuration: the machine type, as QEMU's vmstate_configuration lays it out. */
    qemu_put_byte(f, QEMU_VM_CONFIGURATION);
    qemu_put_be32(f, strlen(machine));
    qemu_put_buffer(f, machine, strlen(machine));
    if (migrate_ram_ignore_shared() || migrate_mapped_ram()) {
        /*
         * QEMU's configuration/capabilities subsection (x-ignore-shared
         * since 4.0, mapped-ram 9.0): the capabilities that change what
         * the stream holds, which the destination must have on as well.
         * QEMU lists them in its capability order.
         */
        qemu_put_byte(f, QEMU_VM_SUBSECTION);
        qemu_put_counted_string(f, SAVEVM_CAPS_SUBSECTION);
        qemu_put_be32(f, 1);
        qemu_put_be32(f, migrate_ram_ignore_shared() + migrate_mapped_ram());
        if (migrate_ram_ignore_shared()) {
            qemu_put_counted_string(f, SAVEVM_CAP_IGNORE_SHARED);
        }
        if (migrate_mapped_ram()) {
            qemu_put_counted_string(f, SAVEVM_CAP_MAPPED_RAM);
        }
    }
}

int qemu_savevm_state_setup(QEMUFile *f, Error **errp)
{
    SaveStateEntry *se;

    FOREACH_SE(i, se) {
        int ret;

        if (!se->ops || !se->ops->save_setup) {
            continue;
        }
        save_section_header(f, se, QEMU_VM_SECTION_START);
        ret = se->ops->save_setup(f, se->opaque, errp);
        save_section_footer(f, se);
        if (ret < 0) {
            return ret;
        }
    }
    return qemu_file_get_error(f);
}

int qemu_savevm_state_iterate(QEMUFile *f)
{
    SaveStateEntry *se;
    int all_done = 1;

    FOREACH_SE(i, se) {
        int ret;

        if (!se->ops || !se->ops->save_iterate) {
            continue;
        }
        save_section_header(f, se, QEMU_VM_SECTION_PART);
        ret = se->ops->save_iterate(f, se->opaque);
        save_section_footer(f, se);
        if (ret < 0) {
            qemu_file_set_error(f, ret);
            return ret;
        }
        if (ret == 0) {
            all_done = 0;
        }
    }
    return qemu_file_get_error(f) ? qemu_file_get_error(f) : all_done;
}

int qemu_savevm_state_complete_live(QEMUFile *f)
{
    SaveStateEntry *se;

    FOREACH_SE(i, se) {
        int ret;

        if (!se->ops || !se->ops->save_complete) {
            continue;
        }
        save_section_header(f, se, QEMU_VM_SECTION_END);
        ret = se->ops->save_complete(f, se->opaque);
        save_section_footer(f, se);
        if (ret < 0) {
            qemu_file_set_error(f, ret);
            return ret;
        }
    }
    return qemu_file_get_error(f);
}

/* The FULL sections of every device, described into @vmdesc (may be NULL). */
static bool savevm_put_device_sections(QEMUFile *f, VMDescWriter *vmdesc, Error **errp)
{
    SaveStateEntry *se;

    FOREACH_SE(i, se) {
        int64_t t0;

        if (!se->vmsd) {
            continue;
        }
        t0 = get_clock_ns();
        if (vmdesc) {
            vmdesc_begin_object(vmdesc);
            vmdesc_set_member_name(vmdesc, "name");
            vmdesc_add_string_value(vmdesc, se->idstr);
            vmdesc_set_member_name(vmdesc, "instance_id");
            vmdesc_add_int_value(vmdesc, se->instance_id);
        }
        save_section_header(f, se, QEMU_VM_SECTION_FULL);
        if (!vmstate_save_state(f, se->vmsd, se->opaque, vmdesc, errp)) {
            error_prepend(errp, "saving section '%s' (instance %u): ", se->idstr, se->instance_id);
            return false;
        }
        save_section_footer(f, se);
        if (vmdesc) {
            vmdesc_end_object(vmdesc);
        }
        trace_savevm_device_save(se->idstr, se->instance_id, (get_clock_ns() - t0) / 1000);
    }
    return true;
}

bool qemu_savevm_state_devices(QEMUFile *f, bool *state_whole, Error **errp)
{
    g_autoptr(VMDescWriter) vmdesc = vmdesc_new();
    const char *json;
    size_t len;

    if (state_whole) {
        *state_whole = false;
    }
    vmdesc_begin_object(vmdesc);
    vmdesc_set_member_name(vmdesc, "page_size");
    vmdesc_add_int_value(vmdesc, TARGET_PAGE_SIZE);
    vmdesc_set_member_name(vmdesc, "devices");
    vmdesc_begin_array(vmdesc);
    if (!savevm_put_device_sections(f, vmdesc, errp)) {
        return false;
    }
    vmdesc_end_array(vmdesc);
    vmdesc_end_object(vmdesc);

    /*
     * The device state and EOF are flushed on their own, so that a failure
     * in the vmdesc alone is told apart: the destination may then have
     * loaded everything (docs/devel/migration.md, "Who runs the guest").
     */
    qemu_put_byte(f, QEMU_VM_EOF);
    qemu_fflush(f);
    if (qemu_file_get_error(f)) {
        error_setg(errp, "%s", qemu_file_error_msg(f));
        return false;
    }
    if (state_whole) {
        *state_whole = true;
    }
    json = vmdesc_get_data(vmdesc, &len);
    qemu_put_byte(f, QEMU_VM_VMDESCRIPTION);
    qemu_put_be32(f, len);
    qemu_put_buffer(f, json, len);
    qemu_fflush(f);
    if (qemu_file_get_error(f)) {
        error_setg(errp, "%s", qemu_file_error_msg(f));
        return false;
    }
    return true;
}

bool qemu_savevm_state_devices_postcopy(QEMUFile *f, Error **errp)
{
    /* QEMU sends no vmdesc in postcopy: none is written. */
    return savevm_put_device_sections(f, NULL, errp);
}

int qemu_savevm_state_complete_postcopy(QEMUFile *f)
{
    int ret = qemu_savevm_state_complete_live(f);

    if (ret == 0) {
        qemu_put_byte(f, QEMU_VM_EOF);
        qemu_fflush(f);
        ret = qemu_file_get_error(f);
    }
    return ret;
}

uint64_t qemu_savevm_pending(bool exact)
{
    SaveStateEntry *se;
    uint64_t total = 0;

    FOREACH_SE(i, se) {
        if (!se->ops) {
            continue;
        }
        if (exact && se->ops->pending_exact) {
            total += se->ops->pending_exact(se->opaque);
        } else if (se->ops->pending_estimate) {
            total += se->ops->pending_estimate(se->opaque);
        }
    }
    return total;
}

void qemu_savevm_state_cleanup(void)
{
    SaveStateEntry *se;

    FOREACH_SE(i, se) {
        if (se->ops && se->ops->save_cleanup) {
            se->ops->save_cleanup(se->opaque);
        }
    }
}


/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * VMState engine: walk a field table to save (with its vmdesc) and to load.
 * The loader trusts nothing: versions are checked against ours, every
 * variable count against its declared bound, and stream errors stop it at
 * the field where they happen.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "migration/qemu-file.h"
#include "migration/vmstate.h"

#define QEMU_VM_SUBSECTION 0x05

static const char *vmstate_type_name(const VMStateField *field)
{
    if (field->equal) {
        /* Only VMSTATE_UINT8_EQUAL makes one. */
        return "uint8 equal";
    }
    switch (field->type) {
    case VMS_UINT8:  return "uint8";
    case VMS_UINT16: return "uint16";
    case VMS_UINT32: return "uint32";
    case VMS_UINT64: return "uint64";
    case VMS_INT32:  return "int32";
    case VMS_INT64:  return "int64";
    case VMS_BOOL:   return "bool";
    case VMS_BUFFER:
    case VMS_VBUFFER:
    case VMS_CUSTOM: return "buffer";
    case VMS_STRUCT: return "struct";
    case VMS_TMP:    return "tmp";
    case VMS_UNUSED: return "unused_buffer";
    }
    return "unknown";
}

/* Elements of @field in @opaque and the base address of the first one. */
static uint32_t vmstate_n_elems(const VMStateField *field, void *opaque)
{
    if (field->varray) {
        return *(uint32_t *)((uint8_t *)opaque + field->num_offset);
    }
    if (field->type == VMS_BUFFER || field->type == VMS_UNUSED || field->type == VMS_CUSTOM) {
        return 1;
    }
    return field->num ? field->num : 1;
}

static uint8_t *vmstate_base(const VMStateField *field, void *opaque)
{
    uint8_t *p = (uint8_t *)opaque + field->offset;

    if (field->type == VMS_VBUFFER) {
        return *(uint8_t **)p;
    }
    return p;
}

static void vmstate_put_scalar(QEMUFile *f, VMStateType t, const void *p)
{
    switch (t) {
    case VMS_UINT8:
        qemu_put_byte(f, *(const uint8_t *)p);
        break;
    case VMS_BOOL:
        qemu_put_byte(f, *(const bool *)p ? 1 : 0);
        break;
    case VMS_UINT16:
        qemu_put_be16(f, *(const uint16_t *)p);
        break;
    case VMS_UINT32:
    case VMS_INT32:
        qemu_put_be32(f, *(const uint32_t *)p);
        break;
    case VMS_UINT64:
    case VMS_INT64:
        qemu_put_be64(f, *(const uint64_t *)p);
        break;
    default:
        g_assert_not_reached();
    }
}

static void vmstate_get_scalar(QEMUFile *f, VMStateType t, void *p)
{
    switch (t) {
    case VMS_UINT8:
        *(uint8_t *)p = qemu_get_byte(f);
        break;
    case VMS_BOOL:
        *(bool *)p = qemu_get_byte(f) != 0;
        break;
    case VMS_UINT16:
        *(uint16_t *)p = qemu_get_be16(f);
        break;
    case VMS_UINT32:
    case VMS_INT32:
        *(uint32_t *)p = qemu_get_be32(f);
        break;
    case VMS_UINT64:
    case VMS_INT64:
        *(uint64_t *)p = qemu_get_be64(f);
        break;
    default:
        g_assert_not_reached();
    }
}

/* Opens a field object; the caller adds "struct" if any, then "size" and closes it. */
/*
 * Opens the vmdesc entry of one field. As in QEMU's vmdesc, an array of
 * scalars is one entry with "array_len" (the reader repeats "size" bytes
 * that many times), while each element of an array of structs gets its own
 * entry with "index".
 */
static void vmdesc_field(VMDescWriter *vmdesc, const VMStateField *field, int64_t index,
                         int64_t array_len)
{
    vmdesc_set_member_name(vmdesc, "name");
    vmdesc_add_string_value(vmdesc, field->name);
    if (array_len >= 0) {
        vmdesc_set_member_name(vmdesc, "array_len");
        vmdesc_add_int_value(vmdesc, array_len);
    }
    if (index >= 0) {
        vmdesc_set_member_name(vmdesc, "index");
        vmdesc_add_int_value(vmdesc, index);
    }
    vmdesc_set_member_name(vmdesc, "type");
    vmdesc_add_string_value(vmdesc, vmstate_type_name(field));
}

static void vmdesc_field_end(VMDescWriter *vmdesc, uint64_t size)
{
    vmdesc_set_member_name(vmdesc, "size");
    vmdesc_add_int_value(vmdesc, size);
    vmdesc_end_object(vmdesc);
}

static bool vmstate_save_fields(QEMUFile *f, const VMStateDescription *vmsd, void *opaque,
                                VMDescWriter *vmdesc, Error **errp)
{
    if (vmdesc) {
        vmdesc_set_member_name(vmdesc, "fields");
        vmdesc_begin_array(vmdesc);
    }
    for (const VMStateField *field = vmsd->fields; field->name; field++) {
        uint32_t n = vmstate_n_elems(field, opaque);
        uint8_t *base = vmstate_base(field, opaque);

        if (field->varray) {
            assert(n <= field->max);
        }
        if (field->type == VMS_UNUSED) {
            static const uint8_t zero[256];

            if (vmdesc) {
                vmdesc_begin_object(vmdesc);
                vmdesc_field(vmdesc, field, -1, -1);
                vmdesc_field_end(vmdesc, field->size);
            }
            for (size_t done = 0; done < field->size; done += MIN(sizeof(zero), field->size - done)) {
                qemu_put_buffer(f, zero, MIN(sizeof(zero), field->size - done));
            }
            continue;
        }
        if (field->type == VMS_CUSTOM) {
            uint64_t start = qemu_file_transferred(f);

            if (vmdesc) {
                vmdesc_begin_object(vmdesc);
                vmdesc_field(vmdesc, field, -1, -1);
            }
            if (!field->custom->put(f, base, errp)) {
                error_prepend(errp, "%s: field '%s': ", vmsd->name, field->name);
                return false;
            }
            if (vmdesc) {
                vmdesc_field_end(vmdesc, qemu_file_transferred(f) - start);
            }
            continue;
        }
        if (field->type == VMS_BUFFER || field->type == VMS_VBUFFER) {
            uint64_t len = field->type == VMS_BUFFER ? field->size : n;
            if (vmdesc) {
                vmdesc_begin_object(vmdesc);
                vmdesc_field(vmdesc, field, -1, -1);
                vmdesc_field_end(vmdesc, len);
            }
            qemu_put_buffer(f, base, len);
            continue;
        }
        if (vmdesc && field->type != VMS_STRUCT && field->type != VMS_TMP && n &&
            (field->num > 1 || field->varray)) {
            vmdesc_begin_object(vmdesc);
            vmdesc_field(vmdesc, field, -1, n);
            vmdesc_field_end(vmdesc, field->size);
        }
        for (uint32_t i = 0; i < n; i++) {
            uint8_t *p = base + (uint64_t)i * field->size;
            uint64_t start = qemu_file_transferred(f);
            bool array = field->num > 1 || field->varray;
            /*
             * As QEMU 7.2 and 10.0 write it, an array of structs whose
             * elements all look alike (no subsections that one may carry
             * and another not) is one entry with "array_len", described by
             * its first element; otherwise each element has an entry with
             * its "index".
             */
            bool nested = field->type == VMS_STRUCT || field->type == VMS_TMP;
            bool alike = nested && array && !field->vmsd->subsections;
            bool desc = vmdesc && (nested ? !alike || i == 0 : !array);

            if (desc) {
                vmdesc_begin_object(vmdesc);
                vmdesc_field(vmdesc, field, array && !alike ? (int64_t)i : -1,
                             alike ? (int64_t)n : -1);
            }
            if (nested) {
                /* A "tmp" field's vmsd_name, version and fields sit in its own entry. */
                bool wrap = desc && field->type == VMS_STRUCT;

                if (wrap) {
                    vmdesc_set_member_name(vmdesc, "struct");
                    vmdesc_begin_object(vmdesc);
                }
                if (!vmstate_save_state(f, field->vmsd, p, desc ? vmdesc : NULL, errp)) {
                    return false;
                }
                if (wrap) {
                    vmdesc_end_object(vmdesc);
                }
            } else {
                vmstate_put_scalar(f, field->type, p);
            }
            if (desc) {
                /* As QEMU's vmdesc: the bytes this element took in the stream. */
                vmdesc_field_end(vmdesc, nested ? qemu_file_transferred(f) - start : field->size);
            }
        }
    }
    if (vmdesc) {
        vmdesc_end_array(vmdesc);
    }
    return true;
}

bool vmstate_save_state(QEMUFile *f, const VMStateDescription *vmsd, void *opaque,
                        VMDescWriter *vmdesc, Error **errp)
{
    bool any_sub = false;

    if (vmsd->pre_save && !vmsd->pre_save(opaque, errp)) {
        error_prepend(errp, "%s: ", vmsd->name);
        return false;
    }
    if (vmdesc) {
        vmdesc_set_member_name(vmdesc, "vmsd_name");
        vmdesc_add_string_value(vmdesc, vmsd->name);
        vmdesc_set_member_name(vmdesc, "version");
        vmdesc_add_int_value(vmdesc, vmsd->version_id);
    }
    if (!vmstate_save_fields(f, vmsd, opaque, vmdesc, errp)) {
        return false;
    }
    for (int i = 0; vmsd->subsections && vmsd->subsections[i]; i++) {
        const VMStateDescription *sub = vmsd->subsections[i];

        if (sub->needed && !sub->needed(opaque)) {
            continue;
        }
        if (vmdesc && !any_sub) {
            vmdesc_set_member_name(vmdesc, "subsections");
            vmdesc_begin_array(vmdesc);
        }
        any_sub = true;
        qemu_put_byte(f, QEMU_VM_SUBSECTION);
        qemu_put_counted_string(f, sub->name);
        qemu_put_be32(f, sub->version_id);
        if (vmdesc) {
            vmdesc_begin_object(vmdesc);
        }
        if (!vmstate_save_state(f, sub, opaque, vmdesc, errp)) {
            return false;
        }
        if (vmdesc) {
            vmdesc_end_object(vmdesc);
        }
    }
    if (vmdesc && any_sub) {
        vmdesc_end_array(vmdesc);
    }
    return true;
}

static bool vmstate_load_fields(QEMUFile *f, const VMStateDescription *vmsd, void *opaque,
                                int version_id, Error **errp)
{
    for (const VMStateField *field = vmsd->fields; field->name; field++) {
        uint32_t n;
        uint8_t *base;

        if (field->version_id > version_id) {
            continue;
        }
        n = vmstate_n_elems(field, opaque);
        if (field->varray && n > field->max) {
            error_setg(errp, "%s: field '%s' count %u exceeds the maximum %u", vmsd->name,
                       field->name, n, field->max);
            return false;
        }
        base = vmstate_base(field, opaque);
        if (!base) {
            error_setg(errp, "%s: no buffer for field '%s'", vmsd->name, field->name);
            return false;
        }
        if (field->type == VMS_UNUSED) {
            qemu_file_skip(f, field->size);
        } else if (field->type == VMS_CUSTOM) {
            Error *err = NULL;

            if (!field->custom->get(f, base, &err)) {
                /* A truncated stream is reported below, as for any field. */
                if (qemu_file_get_error(f)) {
                    error_free(err);
                } else {
                    error_propagate(errp, err);
                    error_prepend(errp, "%s: field '%s': ", vmsd->name, field->name);
                    return false;
                }
            }
        } else if (field->type == VMS_BUFFER || field->type == VMS_VBUFFER) {
            qemu_get_buffer(f, base, field->type == VMS_BUFFER ? field->size : n);
        } else {
            for (uint32_t i = 0; i < n; i++) {
                uint8_t *p = base + (uint64_t)i * field->size;
                if (field->type == VMS_STRUCT || field->type == VMS_TMP) {
                    if (!vmstate_load_state(f, field->vmsd, p, field->vmsd->version_id, errp)) {
                        error_prepend(errp, "%s: ", vmsd->name);
                        return false;
                    }
                } else if (field->equal) {
                    uint8_t got = qemu_get_byte(f);

                    /* A truncated stream's error is reported below, not as a mismatch. */
                    if (!qemu_file_get_error(f) && got != *p) {
                        error_setg(errp, "Failed to load %s:%s: %x != %x", vmsd->name,
                                   field->name, *p, got);
                        return false;
                    }
                } else {
                    vmstate_get_scalar(f, field->type, p);
                }
            }
        }
        if (qemu_file_get_error(f)) {
            error_setg(errp, "%s: field '%s': %s", vmsd->name, field->name,
                       qemu_file_error_msg(f));
            return false;
        }
    }
    return true;
}

static const VMStateDescription *vmstate_find_subsection(const VMStateDescription *vmsd,
                                                         const char *name)
{
    for (int i = 0; vmsd->subsections && vmsd->subsections[i]; i++) {
        if (!strcmp(vmsd->subsections[i]->name, name)) {
            return vmsd->subsections[i];
        }
    }
    return NULL;
}

static bool vmstate_load_subsections(QEMUFile *f, const VMStateDescription *vmsd, void *opaque,
                                     Error **errp)
{
    while (qemu_peek_byte(f, 0) == QEMU_VM_SUBSECTION) {
        char name[256];
        int len = qemu_peek_byte(f, 1);
        const VMStateDescription *sub;
        uint32_t version;

        /* A subsection marker at the end of the stream is a truncated stream. */
        if (len < 0) {
            error_setg(errp, "%s: truncated subsection header", vmsd->name);
            return false;
        }
        /* Only a subsection named "<parent>/..." belongs to us; else it is the parent's. */
        if ((size_t)len <= strlen(vmsd->name)) {
            break;
        }
        for (int i = 0; i < len; i++) {
            int c = qemu_peek_byte(f, 2 + i);
            if (c < 0) {
                error_setg(errp, "%s: truncated subsection header", vmsd->name);
                return false;
            }
            name[i] = c;
        }
        name[len] = '\0';
        if (strncmp(name, vmsd->name, strlen(vmsd->name)) || name[strlen(vmsd->name)] != '/') {
            break;
        }
        sub = vmstate_find_subsection(vmsd, name);
        if (!sub) {
            g_autofree char *safe = g_strescape(name, NULL);

            error_setg(errp, "%s: unknown subsection '%s'", vmsd->name, safe);
            return false;
        }
        qemu_file_skip(f, 2 + len);
        version = qemu_get_be32(f);
        if (!vmstate_load_state(f, sub, opaque, version, errp)) {
            return false;
        }
    }
    return true;
}

bool vmstate_load_state(QEMUFile *f, const VMStateDescription *vmsd, void *opaque,
                        int version_id, Error **errp)
{
    if (version_id > vmsd->version_id) {
        error_setg(errp, "%s: incoming version %d is newer than ours (%d)", vmsd->name,
                   version_id, vmsd->version_id);
        return false;
    }
    if (version_id < vmsd->minimum_version_id) {
        error_setg(errp, "%s: incoming version %d is older than the oldest we accept (%d)",
                   vmsd->name, version_id, vmsd->minimum_version_id);
        return false;
    }
    if (vmsd->pre_load && !vmsd->pre_load(opaque, errp)) {
        error_prepend(errp, "%s: ", vmsd->name);
        return false;
    }
    if (!vmstate_load_fields(f, vmsd, opaque, version_id, errp) ||
        !vmstate_load_subsections(f, vmsd, opaque, errp)) {
        return false;
    }
    if (qemu_file_get_error(f)) {
        error_setg(errp, "%s: %s", vmsd->name, qemu_file_error_msg(f));
        return false;
    }
    if (vmsd->post_load && !vmsd->post_load(opaque, version_id, errp)) {
        error_prepend(errp, "%s: ", vmsd->name);
        return false;
    }
    return true;
}

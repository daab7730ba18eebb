/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Declarative device state: a VMStateDescription lists fields (offset,
 * type, count) that are written big-endian in order, followed by optional
 * subsections (0x05, name, version, fields) whose needed() says whether to
 * send them. The same table produces the vmdesc JSON that stream analyzers
 * read, and drives the loader, which checks every count against its bound.
 */
#ifndef MIGRATION_VMSTATE_H
#define MIGRATION_VMSTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "migration/vmdesc.h"
#include "qemu/typedefs.h"

typedef enum VMStateType {
    VMS_UINT8,
    VMS_UINT16,
    VMS_UINT32,
    VMS_UINT64,
    VMS_INT32,
    VMS_INT64,
    VMS_BOOL,
    VMS_BUFFER,                 /* fixed-size bytes */
    VMS_VBUFFER,                /* bytes at a pointer, length in a uint32 field */
    VMS_STRUCT,                 /* nested description */
    VMS_TMP,                    /* nested description, inline in the vmdesc (QEMU's "tmp") */
    VMS_UNUSED,                 /* bytes QEMU's layout keeps: zeroes out, skipped in */
    VMS_CUSTOM,                 /* bytes its owner reads and writes (VMStateCustom) */
} VMStateType;

typedef struct VMStateDescription VMStateDescription;

/*
 * A field no table can say: a length known only by reading it (QEMU's
 * lists of records, each after a 1 byte, ended by a 0). Both hooks get the
 * member's address. put returns false (errp set) if the state cannot be
 * written; get returns false (errp set) on a value it refuses, and leaves
 * stream errors (a truncated stream) to the engine, which checks the file
 * after it.
 */
typedef struct VMStateCustom {
    bool (*put)(QEMUFile *f, void *p, Error **errp);
    bool (*get)(QEMUFile *f, void *p, Error **errp);
} VMStateCustom;

typedef struct VMStateField {
    const char *name;
    VMStateType type;
    size_t offset;
    size_t size;                /* bytes per element (buffer: whole size) */
    uint32_t num;               /* fixed element count (arrays), 0 = scalar */
    bool varray;                /* count is the uint32 at num_offset ... */
    size_t num_offset;
    uint32_t max;               /* ... and must not exceed max */
    const VMStateDescription *vmsd;     /* VMS_STRUCT */
    const VMStateCustom *custom;        /* VMS_CUSTOM */
    int version_id;             /* field exists since this version */
    bool equal;                 /* scalar: the loaded value must be the one in memory */
} VMStateField;

struct VMStateDescription {
    const char *name;
    int version_id;
    int minimum_version_id;
    /*
     * Top-level sections (vmstate_register) only: the bytes at opaque that
     * the fields and post_load may change. A load that fails puts them back
     * (savevm.c), so a refused section leaves the device as it was.
     */
    size_t size;
    /* Before save: gather state (e.g. from KVM). */
    bool (*pre_save)(void *opaque, Error **errp);
    /* Before load: prepare (e.g. size a buffer). */
    bool (*pre_load)(void *opaque, Error **errp);
    /* After load: validate and apply (e.g. to KVM). */
    bool (*post_load)(void *opaque, int version_id, Error **errp);
    /* Subsections only: send it? */
    bool (*needed)(void *opaque);
    const VMStateField *fields;                 /* ends with VMSTATE_END_OF_LIST() */
    const VMStateDescription *const *subsections;  /* NULL-terminated, may be NULL */
};

#define VMSTATE_SIZEOF(state, field) sizeof(((state *)0)->field)

#define VMSTATE_SCALAR(_f, _state, _type, _ctype) {                             \
    .name = #_f, .type = (_type), .offset = offsetof(_state, _f),             \
    .size = sizeof(_ctype) +                                                    \
        0 * sizeof(char[__builtin_types_compatible_p(typeof(((_state *)0)->_f), _ctype) ? 1 : -1]) }

#define VMSTATE_UINT8(_f, _s)  VMSTATE_SCALAR(_f, _s, VMS_UINT8, uint8_t)
/*
 * QEMU's "uint8 equal": a byte that must come in as the device already
 * holds it (a layout's marker with one valid value). Sent as is; a load
 * with another value fails, naming both.
 */
#define VMSTATE_UINT8_EQUAL(_f, _s) {                                           \
    .name = #_f, .type = VMS_UINT8, .offset = offsetof(_s, _f), .equal = true, \
    .size = sizeof(uint8_t) +                                                   \
        0 * sizeof(char[__builtin_types_compatible_p(typeof(((_s *)0)->_f), uint8_t) ? 1 : -1]) }
#define VMSTATE_UINT16(_f, _s) VMSTATE_SCALAR(_f, _s, VMS_UINT16, uint16_t)
#define VMSTATE_UINT32(_f, _s) VMSTATE_SCALAR(_f, _s, VMS_UINT32, uint32_t)
#define VMSTATE_UINT64(_f, _s) VMSTATE_SCALAR(_f, _s, VMS_UINT64, uint64_t)
#define VMSTATE_INT32(_f, _s)  VMSTATE_SCALAR(_f, _s, VMS_INT32, int32_t)
#define VMSTATE_INT64(_f, _s)  VMSTATE_SCALAR(_f, _s, VMS_INT64, int64_t)
#define VMSTATE_BOOL(_f, _s)   VMSTATE_SCALAR(_f, _s, VMS_BOOL, bool)

/* Bytes on the wire (and in memory) of one scalar of type _t. */
#define VMSTATE_TYPE_SIZE(_t)                                                   \
    ((_t) == VMS_UINT8 || (_t) == VMS_BOOL ? 1 :                                \
     (_t) == VMS_UINT16 ? 2 :                                                   \
     (_t) == VMS_UINT32 || (_t) == VMS_INT32 ? 4 : 8)

/*
 * Same as the scalars, for fields whose C type is a kernel __u64 etc.; the
 * member's size must match the wire type (checked at compile time).
 */
#define VMSTATE_UINT_SIZED(_f, _s, _type) {                                     \
    .name = #_f, .type = (_type), .offset = offsetof(_s, _f),                   \
    .size = VMSTATE_SIZEOF(_s, _f) +                                            \
        0 * sizeof(char[VMSTATE_SIZEOF(_s, _f) == VMSTATE_TYPE_SIZE(_type) ? 1 : -1]) }

#define VMSTATE_ARRAY(_f, _s, _n, _type, _ctype) {                              \
    .name = #_f, .type = (_type), .offset = offsetof(_s, _f),                   \
    .size = sizeof(_ctype), .num = (_n) +                                       \
        0 * sizeof(char[VMSTATE_SIZEOF(_s, _f) == (_n) * sizeof(_ctype) ? 1 : -1]) }

#define VMSTATE_UINT8_ARRAY(_f, _s, _n)  VMSTATE_ARRAY(_f, _s, _n, VMS_UINT8, uint8_t)
#define VMSTATE_UINT16_ARRAY(_f, _s, _n) VMSTATE_ARRAY(_f, _s, _n, VMS_UINT16, uint16_t)
#define VMSTATE_UINT32_ARRAY(_f, _s, _n) VMSTATE_ARRAY(_f, _s, _n, VMS_UINT32, uint32_t)
#define VMSTATE_UINT64_ARRAY(_f, _s, _n) VMSTATE_ARRAY(_f, _s, _n, VMS_UINT64, uint64_t)

/* Raw bytes of a fixed-size member (kernel structs we do not interpret). */
#define VMSTATE_BUFFER(_f, _s) {                                                \
    .name = #_f, .type = VMS_BUFFER, .offset = offsetof(_s, _f),               \
    .size = VMSTATE_SIZEOF(_s, _f) }

/*
 * Bytes at the pointer member _f; length in uint32 member _len (loaded by an
 * earlier field), at most _max. The loader writes through the pointer, so
 * it must point at _max bytes (allocate them at init or in pre_load). A
 * failed load puts back only the struct, not what the pointer points at:
 * use it for staging buffers whose contents mean nothing between loads.
 */
#define VMSTATE_VBUFFER_UINT32(_f, _s, _len, _max) {                            \
    .name = #_f, .type = VMS_VBUFFER, .offset = offsetof(_s, _f), .size = 1,   \
    .varray = true, .num_offset = offsetof(_s, _len),                           \
    .max = (_max) + 0 * sizeof(char[VMSTATE_SIZEOF(_s, _len) == sizeof(uint32_t) ? 1 : -1]) }

#define VMSTATE_STRUCT(_f, _s, _vmsd, _type) {                                  \
    .name = #_f, .type = VMS_STRUCT, .offset = offsetof(_s, _f),               \
    .size = sizeof(_type), .vmsd = &(_vmsd) }

#define VMSTATE_STRUCT_ARRAY(_f, _s, _n, _vmsd, _type) {                        \
    .name = #_f, .type = VMS_STRUCT, .offset = offsetof(_s, _f),               \
    .size = sizeof(_type), .num = (_n), .vmsd = &(_vmsd) }

/*
 * Inline array member _f of up to _max structs, count in uint32 member _cnt
 * (loaded by an earlier field). The array must hold _max elements and the
 * count must be a uint32_t (both checked at compile time).
 */
#define VMSTATE_STRUCT_VARRAY_UINT32(_f, _s, _cnt, _max, _vmsd, _type) {        \
    .name = #_f, .type = VMS_STRUCT, .offset = offsetof(_s, _f),               \
    .size = sizeof(_type), .varray = true, .num_offset = offsetof(_s, _cnt),   \
    .max = (_max) +                                                             \
        0 * sizeof(char[(_max) * sizeof(_type) <= VMSTATE_SIZEOF(_s, _f) &&     \
                        VMSTATE_SIZEOF(_s, _cnt) == sizeof(uint32_t) ? 1 : -1]), \
    .vmsd = &(_vmsd) }

/*
 * A member _f of type _type described by _vmsd, written exactly like
 * VMSTATE_STRUCT but described as QEMU describes its "tmp" fields: type
 * "tmp", with the nested vmsd_name, version and fields inline in the
 * field's entry rather than under "struct". Only for a layout that must
 * match a QEMU vmdesc of that shape (the x86 "cpu" section's fpregs).
 */
#define VMSTATE_TMP(_f, _s, _vmsd, _type) {                                     \
    .name = #_f, .type = VMS_TMP, .offset = offsetof(_s, _f),                  \
    .size = sizeof(_type) +                                                     \
        0 * sizeof(char[VMSTATE_SIZEOF(_s, _f) == sizeof(_type) ? 1 : -1]),     \
    .vmsd = &(_vmsd) }

/*
 * @_size bytes a QEMU layout still carries for a field it dropped (vmdesc
 * type "unused_buffer"): we write zeroes and skip what comes in.
 */
#define VMSTATE_UNUSED(_size) { .name = "unused", .type = VMS_UNUSED, .size = (_size) }

/* Member _f, read and written by _custom's hooks; our vmdesc says "buffer" of the bytes put wrote. */
#define VMSTATE_CUSTOM(_f, _s, _custom) {                                       \
    .name = #_f, .type = VMS_CUSTOM, .offset = offsetof(_s, _f),               \
    .size = VMSTATE_SIZEOF(_s, _f), .custom = &(_custom) }

#define VMSTATE_END_OF_LIST() { .name = NULL }

/*
 * vmstate_save_state: write @opaque's fields and needed subsections.
 * @vmdesc (may be NULL) receives the JSON description of what was written
 * (QEMU's vmdesc shape). Returns false with @errp if pre_save failed; stream
 * errors are left in @f.
 */
bool vmstate_save_state(QEMUFile *f, const VMStateDescription *vmsd, void *opaque,
                        VMDescWriter *vmdesc, Error **errp);
/* Loads what vmstate_save_state wrote for stream version @version_id. */
bool vmstate_load_state(QEMUFile *f, const VMStateDescription *vmsd, void *opaque,
                        int version_id, Error **errp);

/* Registers a device state section @idstr/@instance_id (savevm.c). */
void vmstate_register(const char *idstr, uint32_t instance_id,
                      const VMStateDescription *vmsd, void *opaque);
/*
 * Removes the section registered for @vmsd and @opaque (a device that
 * goes away: tests that make one per case). Main thread, no migration.
 */
void vmstate_unregister(const VMStateDescription *vmsd, void *opaque);

#endif
